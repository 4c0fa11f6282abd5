"""`askgate-text`: the plain-text channel. Consumes `events:text` and POSTs each prompt
(numbered options, reply guidance, in the ask's locale) and, when the question ends, its
one-line summary to the target's url, signed like webhooks. The platform (WhatsApp, SMS,
e-mail, a custom chat) sends the human's messages back to the API:
`POST /v1/sessions/{session}/messages`. Any number of replicas share one consumer group.
`--check` is the liveness probe.
"""

from __future__ import annotations

import asyncio

from askgate.channels import ChannelService
from askgate.runtime.runner import worker_main

from askgate_text.adapter import TextAdapter
from askgate_text.client import TextClient
from askgate_text.config import TextSettings

SERVICE = "text"


async def serve(settings: TextSettings, stop: asyncio.Event) -> None:
    service = ChannelService(SERVICE, settings)
    client = TextClient(settings, service.redis)
    service.use(TextAdapter(service.redis, client))
    await service.start()
    try:
        await stop.wait()
    finally:
        await service.close()
        await client.aclose()


def main(argv: list[str] | None = None) -> None:
    worker_main("askgate-text", SERVICE, TextSettings, serve, argv, __doc__)


if __name__ == "__main__":
    main()
