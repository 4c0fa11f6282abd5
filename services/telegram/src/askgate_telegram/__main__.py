"""`askgate-telegram` (`python -m askgate_telegram`): the Telegram channel worker.

Any number of replicas may run: they share the `askgate:telegram` consumer group, and a
prompt is claimed in Redis before it is sent. `--check` is the liveness probe.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from askgate import health
from askgate.errors import ConfigError
from askgate.logs import configure_logging
from askgate.runner import run_service
from askgate.settings import load

from askgate_telegram.config import TelegramSettings
from askgate_telegram.worker import SERVICE, serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="askgate-telegram", description=__doc__)
    parser.add_argument("--check", action="store_true", help="liveness probe: exit 0 if alive")
    args = parser.parse_args(argv)
    try:
        settings = load(TelegramSettings)
    except ConfigError as exc:
        print(f"askgate-telegram: {exc.message}", file=sys.stderr)
        raise SystemExit(2) from None
    if args.check:
        raise SystemExit(asyncio.run(health.check(settings.redis_url, SERVICE)))
    configure_logging(settings.log_level, settings.log_json)
    run_service(SERVICE, lambda stop: serve(settings, stop))


if __name__ == "__main__":
    main()
