"""structlog set-up shared by every service: one event per lifecycle step.

What the libraries log through the standard `logging` module (uvicorn, aiohttp, aiogram,
slack_sdk, httpx) goes through the same renderer, so with `ASKGATE_LOG_JSON` every line
of a service is one JSON object. The clients' per-request lines (httpx's "HTTP Request:
…", aiogram's "Update id=… is handled") are kept for `ASKGATE_LOG_LEVEL=debug`: at
info they cost a line per platform call and say nothing structlog's events do not.
"""

from __future__ import annotations

import logging
import sys

import structlog

# Loggers that speak once per request or update at info.
PER_REQUEST = ("httpx", "httpcore", "aiogram.event", "aiohttp.access", "uvicorn.access")


def configure_logging(level: str = "info", json: bool = False) -> None:
    lvl = getattr(logging, level.upper(), logging.INFO)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    stamp = structlog.processors.TimeStamper(fmt="iso", utc=True)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                stamp,
            ],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(lvl)
    quiet = lvl if lvl <= logging.DEBUG else max(lvl, logging.WARNING)
    for name in PER_REQUEST:
        logging.getLogger(name).setLevel(quiet)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            stamp,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
