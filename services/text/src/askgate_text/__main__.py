"""`askgate-text`: the plain-text channel. Consumes `events:text` and POSTs each prompt
(numbered options, reply guidance, in the ask's locale) and, when the question ends, its
one-line summary to the target's url, signed like webhooks. The platform (WhatsApp, SMS,
e-mail, a custom chat) sends the human's messages back to the API:
`POST /v1/sessions/{session}/messages`. Any number of replicas share one consumer group.
`--check` is the liveness probe.
"""

from __future__ import annotations

import asyncio
import os

import structlog
from askgate import health
from askgate.conn import connect
from askgate.consumer import StreamConsumer
from askgate.runner import worker_main
from askgate.store import Store

from askgate_text.client import TextClient
from askgate_text.config import TextSettings
from askgate_text.worker import CHANNEL, TextWorker

SERVICE = "text"
log = structlog.get_logger("askgate.text")


async def serve(settings: TextSettings, stop: asyncio.Event) -> None:
    redis = connect(settings.redis_url, socket_timeout_s=settings.consumer_block_ms / 1000 + 5)
    client = TextClient(settings)
    worker = TextWorker(Store(redis, settings), client, settings)
    consumer = StreamConsumer(
        redis, CHANNEL, f"{health.instance_name()}:{os.getpid()}", worker.handle,
        block_ms=settings.consumer_block_ms, claim_idle_ms=settings.consumer_claim_idle_ms,
        claim_every_s=min(5.0, settings.consumer_claim_idle_ms / 1000),
    )
    log.info("text.started")
    try:
        await asyncio.gather(consumer.run(stop), health.beat_forever(redis, SERVICE, stop))
    finally:
        await client.aclose()
        await redis.aclose()
        log.info("text.stopped")


def main(argv: list[str] | None = None) -> None:
    worker_main("askgate-text", SERVICE, TextSettings, serve, argv, __doc__)


if __name__ == "__main__":
    main()
