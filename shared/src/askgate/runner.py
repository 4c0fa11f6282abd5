"""Process lifecycle for workers: signals, a stop flag, bounded grace, hard stop.

The first SIGINT/SIGTERM sets `stop`: loops finish what they hold and exit. A second
signal is a hard stop (arq's and rq's warm/cold shutdown).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable

import structlog

log = structlog.get_logger("askgate.runner")


def install_signals(stop: asyncio.Event, service: str) -> None:
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if stop.is_set():
            log.warning("service.hard_stop", service=service, signal=signum)
            sys.stderr.flush()
            os._exit(1)
        log.info("service.stopping", service=service, signal=signum)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)


def run_service(service: str, body: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    """Run `body(stop)` on uvloop until it returns after a signal."""

    async def main() -> None:
        stop = asyncio.Event()
        install_signals(stop, service)
        await body(stop)

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:  # pragma: no cover - uvloop is a dependency, but stay runnable
        asyncio.run(main())
