"""`askgate-telegram` (`python -m askgate_telegram`): the Telegram channel worker.

Any number of replicas may run: they share the `askgate:telegram` consumer group, and a
prompt is claimed in Redis before it is sent. `--check` is the liveness probe.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from askgate.runtime.runner import worker_main

from askgate_telegram.config import SERVICE, TelegramSettings


def load_serve() -> Callable[[TelegramSettings, asyncio.Event], Awaitable[None]]:
    """The worker itself, imported only to serve (not for --check)."""
    from askgate_telegram.service import serve

    return serve


def main(argv: list[str] | None = None) -> None:
    worker_main("askgate-telegram", SERVICE, TelegramSettings, load_serve, argv, __doc__)


if __name__ == "__main__":
    main()
