"""Prometheus metrics of the API process."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

REGISTRY = CollectorRegistry(auto_describe=True)

ASKS = Counter("askgate_asks_total", "Asks by outcome", ["outcome"], registry=REGISTRY)
FINALS = Counter(
    "askgate_final_total",
    "Final transitions made through the API",
    ["status", "reason"],
    registry=REGISTRY,
)
REJECTED = Counter("askgate_errors_total", "Error responses by code", ["code"], registry=REGISTRY)
WAITERS = Gauge("askgate_waiters", "Long-poll waiters in this process", registry=REGISTRY)
