"""The web service's event reader against real Redis: a broadcast read that wakes the
pages of the question's own session, on every replica."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from askgate.domain.models import QuestionCreate
from askgate.domain.status import Reason
from askgate.settings import Settings
from askgate.store.store import Store
from askgate_web.feed import Change, PageFeed
from redis.asyncio import Redis

from tests.support.asks import ask_body

pytestmark = pytest.mark.both_redis


@pytest.fixture
async def feeds(redis: Redis) -> AsyncIterator[list[PageFeed]]:
    """Two replicas' feeds, reading the web streams until the test ends."""
    pair = [PageFeed(), PageFeed()]
    tasks = [asyncio.create_task(h.run(redis)) for h in pair]
    for h in pair:
        await asyncio.wait_for(h.ready.wait(), 30)  # a bound, not a timing
    yield pair
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_every_replica_gets_every_event(
    redis: Redis, settings: Settings, feeds: list[PageFeed]
) -> None:
    """Both feeds wake their page of the session: no consumer group splits the events."""
    queues = [h.subscribe("acme", "s1") for h in feeds]
    rec, _ = await Store(redis, settings).create("acme", QuestionCreate(**ask_body("s1")))
    for queue in queues:
        change = await asyncio.wait_for(queue.get(), 5)
        assert change is not None
        assert (change.type, change.question_id) == ("question.created", rec.id)


async def test_only_the_questions_session_is_woken(
    redis: Redis, settings: Settings, feeds: list[PageFeed]
) -> None:
    """A page of another session (or tenant) hears nothing of this question."""
    feed = feeds[0]
    mine, other_session, other_tenant = (
        feed.subscribe("acme", "s1"),
        feed.subscribe("acme", "s2"),
        feed.subscribe("globex", "s1"),
    )
    store = Store(redis, settings)
    rec, _ = await store.create("acme", QuestionCreate(**ask_body("s1")))
    await store.end("acme", rec.id, Reason.CANCELLED)
    seen = [await asyncio.wait_for(mine.get(), 5) for _ in range(2)]
    assert [(c.type, c.status, c.reason) for c in seen if c] == [
        ("question.created", "", ""),
        ("question.resolved", "no_answer", "cancelled"),
    ]
    assert other_session.empty() and other_tenant.empty()


async def test_close_ends_every_open_stream() -> None:
    """On stop each open stream gets its end marker, even with a full backlog."""
    feed = PageFeed()
    queue = feed.subscribe("acme", "s1")
    while not queue.full():
        queue.put_nowait(Change("question.created", "q00abc"))
    feed.close()
    items = [queue.get_nowait() for _ in range(queue.qsize())]
    assert items[-1] is None
    assert feed.subscribe("acme", "s2").get_nowait() is None


async def test_an_operator_page_hears_every_session_of_its_tenant(
    redis: Redis, settings: Settings, feeds: list[PageFeed]
) -> None:
    """The tenant-wide subscription wakes for asks in any session, and for an escalation
    step starting; another tenant's operator page hears none of it."""
    from askgate_sweeper.__main__ import timers_once

    feed = feeds[0]
    operator, stranger = feed.subscribe("acme", ""), feed.subscribe("globex", "")
    store = Store(redis, settings)
    rec, _ = await store.create(
        "acme",
        QuestionCreate(
            **ask_body(
                "s9",
                escalate=[
                    {"after_s": 60, "targets": [{"channel": "text", "url": "https://x.example/"}]}
                ],
            )
        ),
    )
    await store.create("acme", QuestionCreate(**ask_body("s8")))
    await timers_once(store, rec.created_ms + 60_000)
    seen = [await asyncio.wait_for(operator.get(), 5) for _ in range(3)]
    assert sorted(c.type for c in seen if c is not None) == [
        "question.created",
        "question.created",
        "question.escalate",
    ]
    assert stranger.empty()
