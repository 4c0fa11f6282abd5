"""Fixtures of the integration tests that more than one module uses: a local receiver of
outgoing POSTs, and the plain-text channel worker in-process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from askgate.settings import Settings
from askgate.store import keys
from askgate_text.__main__ import serve
from askgate_text.config import TextSettings
from redis.asyncio import Redis

from tests.integration.http_receiver import Receiver
from tests.support.asks import SECRET
from tests.support.text import LOCAL, StartWorker
from tests.support.waiting import eventually


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


@pytest.fixture
async def text_worker(redis_url: str, redis: Redis) -> AsyncIterator[StartWorker]:
    """Starts the text worker's `serve` with test settings; stops it after the test."""
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []

    async def start(**overrides: Any) -> None:
        values: dict[str, Any] = {
            "redis_url": redis_url,
            "secret_key": SECRET,
            "timeout_min_s": 1,
            "outbound_allow": LOCAL,
            "delivery_backoff_s": 0.01,
            "consumer_block_ms": 50,
            **overrides,
        }
        tasks.append(asyncio.create_task(serve(TextSettings(**values), stop)))
        # Asks to the text channel are refused until a worker is live.
        await eventually(lambda: redis.exists(keys.channel_live("text")), "the text worker", 30)

    yield start
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 15)


@pytest.fixture
async def web_client(settings: Settings, redis: Redis) -> AsyncIterator[httpx.AsyncClient]:
    """The real web Control UI app (lifespan included) behind an in-process client."""
    from askgate_web.app import create_app

    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://web") as client:
            client.app = app  # type: ignore[attr-defined]
            yield client
