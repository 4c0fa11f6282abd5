"""Settings of the webhooks service (`ASKGATE_WEBHOOK_*`), on top of askgate's own."""

from __future__ import annotations

from askgate.settings import Settings
from pydantic import Field


class WebhookSettings(Settings):
    # Attempts in all, the first included; after the last one the delivery is a dead letter.
    webhook_max_attempts: int = Field(6, ge=1, le=50)
    # Attempt n+1 waits backoff_s * 2**(n-1), capped at backoff_max_s (Retry-After too).
    webhook_backoff_s: float = Field(1.0, ge=0)
    webhook_backoff_max_s: float = Field(3600.0, ge=0)
    webhook_timeout_s: float = Field(10.0, gt=0)
    # RQ worker processes the service supervises (each runs one job at a time).
    webhook_workers: int = Field(2, ge=0, le=64)
    # Dead letters kept per shard stream (approximate trim, oldest go first).
    webhook_dead_maxlen: int = Field(10_000, ge=100)
    consumer_block_ms: int = Field(2000, ge=10)
    consumer_claim_idle_ms: int = Field(30_000, ge=100)
