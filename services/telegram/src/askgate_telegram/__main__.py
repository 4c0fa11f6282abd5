"""`askgate-telegram` (`python -m askgate_telegram`): the Telegram channel worker.

Any number of replicas may run: they share the `askgate:telegram` consumer group, and a
prompt is claimed in Redis before it is sent. `--check` is the liveness probe.
"""

from __future__ import annotations

from askgate.runtime.runner import worker_main

from askgate_telegram.config import SERVICE, TelegramSettings


def main(argv: list[str] | None = None) -> None:
    worker_main(
        "askgate-telegram", SERVICE, TelegramSettings, "askgate_telegram.service", argv, __doc__
    )


if __name__ == "__main__":
    main()
