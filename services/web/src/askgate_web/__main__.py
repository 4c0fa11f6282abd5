"""`askgate-web`: serve the web Control UI with uvicorn.

Any number of replicas may run behind a load balancer: each one reads every event
(`feed.PageFeed`) and serves any page. `--check` is the liveness probe.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import uvicorn
from askgate.domain.errors import ConfigError
from askgate.runtime import health
from askgate.runtime.logs import configure_logging
from askgate.settings import Settings, load
from askgate.store.conn import check_redis

from askgate_web.app import create_app
from askgate_web.config import SERVICE
from askgate_web.feed import PageFeed


class Server(uvicorn.Server):
    """uvicorn that ends the open event streams once it starts stopping: a browser's
    EventSource never closes by itself, so it would hold the graceful shutdown."""

    def __init__(self, config: uvicorn.Config, feed: PageFeed) -> None:
        super().__init__(config)
        self.feed = feed

    async def on_tick(self, counter: int) -> bool:
        should_exit = await super().on_tick(counter)
        if should_exit:
            self.feed.close()
        return should_exit


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="askgate-web", description=__doc__)
    parser.add_argument("--check", action="store_true", help="liveness probe: exit 0 if alive")
    args = parser.parse_args(argv)
    try:
        settings = load(Settings)
        if args.check:
            raise SystemExit(
                asyncio.run(
                    health.check(settings.redis_url, SERVICE, cluster=settings.redis_cluster)
                )
            )
        check_redis(settings)
        app = create_app(settings)
    except ConfigError as exc:
        print(f"askgate-web: {exc.message}", file=sys.stderr)
        raise SystemExit(2) from None
    configure_logging(settings.log_level, settings.log_json)
    config = uvicorn.Config(
        app,
        host=settings.web_host,
        port=settings.web_port,
        access_log=False,
        log_level=settings.log_level.lower(),
        log_config=None,  # uvicorn's lines go through configure_logging's renderer
        loop="uvloop",
        http="httptools",
        timeout_graceful_shutdown=5,
    )
    Server(config, app.state.feed).run()


if __name__ == "__main__":
    main()
