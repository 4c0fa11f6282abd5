"""Process lifecycle for workers: signals, a stop flag, bounded grace, hard stop.

The first SIGINT/SIGTERM sets `stop`: loops finish what they hold and exit. A second
signal is a hard stop (arq's and rq's warm/cold shutdown).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog

from askgate.domain.errors import ConfigError
from askgate.runtime import health
from askgate.runtime.logs import configure_logging
from askgate.settings import Settings, load
from askgate.store.conn import check_redis

S = TypeVar("S", bound=Settings)

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


def worker_main(
    prog: str,
    service: str,
    settings_cls: type[S],
    serve: Callable[[S, asyncio.Event], Awaitable[None]] | str,
    argv: list[str] | None = None,
    doc: str | None = None,
) -> None:
    """The command line every long-running worker shares: settings from the environment
    (exit 2 with the message on a bad one), `--check` as the liveness probe, logging,
    then `serve(settings, stop)` until a signal. `serve` may be given as the name of the
    module that defines it, imported only to serve: a chat worker imports its platform's
    library then, not for the probe, which runs every few seconds (aiogram alone takes
    2 s of CPU to import), nor for a bad setting."""
    parser = argparse.ArgumentParser(prog=prog, description=doc)
    parser.add_argument("--check", action="store_true", help="liveness probe: exit 0 if alive")
    args = parser.parse_args(argv)
    try:
        settings = load(settings_cls)
        if args.check:
            raise SystemExit(
                asyncio.run(
                    health.check(settings.redis_url, service, cluster=settings.redis_cluster)
                )
            )
        check_redis(settings)
    except ConfigError as exc:
        print(f"{prog}: {exc.message}", file=sys.stderr)
        raise SystemExit(2) from None
    configure_logging(settings.log_level, settings.log_json)
    run: Callable[[S, asyncio.Event], Awaitable[None]] = (
        importlib.import_module(serve).serve if isinstance(serve, str) else serve
    )
    # Everything imported so far lives as long as the process: keep it out of the
    # collector's way (a full collection over aiogram's or slack_sdk's objects took
    # 0.2-0.8 s here, stalling every prompt and tap in flight).
    gc.collect()
    gc.freeze()
    run_service(service, lambda stop: run(settings, stop))
