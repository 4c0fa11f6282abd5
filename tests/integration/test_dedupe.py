"""The kit's dedupe on real Redis: a platform's copy of an event is handled once, and an
event whose handler died mid-way (kill -9) is handled by its copy, never dropped."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap

import pytest
from askgate.channels import Dedupe, InHandElsewhere
from askgate.store import keys
from redis.asyncio import Redis

from tests.support.waiting import eventually

SCOPE = "bot-1"


async def handled(dedupe: Dedupe, event_id: str) -> bool:
    """Whether `once` lets this copy of the event through (and it is then handled)."""
    async with dedupe.once(SCOPE, event_id) as new:
        return new


async def test_a_copy_of_a_handled_event_is_a_duplicate(redis: Redis) -> None:
    dedupe = Dedupe(redis, "kit")
    assert await handled(dedupe, "e1") is True
    assert await handled(dedupe, "e1") is False
    assert await handled(dedupe, "e2") is True


async def test_a_failed_handler_leaves_the_event_to_the_retry(redis: Redis) -> None:
    dedupe = Dedupe(redis, "kit")
    with pytest.raises(RuntimeError):
        async with dedupe.once(SCOPE, "e1") as new:
            assert new
            raise RuntimeError("the platform was down")
    assert await handled(dedupe, "e1") is True  # the retry runs it
    assert await handled(dedupe, "e1") is False


async def test_a_copy_arriving_while_the_event_is_in_hand_is_a_duplicate(redis: Redis) -> None:
    dedupe = Dedupe(redis, "kit", lease_s=5)
    release = asyncio.Event()
    runs: list[str] = []

    async def first() -> None:
        async with dedupe.once(SCOPE, "e1") as new:
            assert new
            runs.append("first")
            await release.wait()

    holder = asyncio.create_task(first())
    await eventually(lambda: runs == ["first"], "the first copy in hand")
    copy = asyncio.create_task(handled(dedupe, "e1"))
    await asyncio.sleep(0.1)  # the copy finds the event in hand (or done: same outcome)
    release.set()
    await holder
    assert await copy is False
    assert runs == ["first"]


async def test_a_live_handler_keeps_its_event_past_the_lease(redis: Redis) -> None:
    """The handler renews its mark while it works: a copy waiting twice the lease does
    not take the event over (it gives up for a later retry), however long the first
    takes."""
    dedupe = Dedupe(redis, "kit", lease_s=0.3)
    gave_up = asyncio.Event()

    async def first() -> None:
        async with dedupe.once(SCOPE, "e1") as new:
            assert new
            await gave_up.wait()

    holder = asyncio.create_task(first())
    mark = keys.inbound_seen("kit", SCOPE, "e1")

    async def in_hand() -> bool:
        return bool(await redis.exists(mark))

    await eventually(in_hand, "the first copy in hand")
    with pytest.raises(InHandElsewhere):
        await handled(dedupe, "e1")
    gave_up.set()
    await holder
    assert await handled(dedupe, "e1") is False


async def test_an_event_whose_handler_was_killed_is_handled_by_its_copy(
    redis: Redis, redis_url: str
) -> None:
    """A worker killed (-9) with the event in hand cannot forget its mark: once the lease
    runs out, the platform's copy is handled."""
    code = textwrap.dedent(
        f"""
        import asyncio, sys
        from redis.asyncio import Redis
        from askgate.channels import Dedupe

        async def main():
            redis = Redis.from_url({redis_url!r})
            async with Dedupe(redis, "kit", lease_s=0.5).once({SCOPE!r}, "e1") as new:
                print("in hand" if new else "duplicate", flush=True)
                await asyncio.sleep(3600)

        asyncio.run(main())
        """
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE, env=os.environ.copy()
    )
    try:
        assert proc.stdout is not None
        assert (await proc.stdout.readline()).strip() == b"in hand"
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    assert await handled(Dedupe(redis, "kit", lease_s=0.5), "e1") is True


async def test_a_mark_from_before_the_lease_counts_as_done(redis: Redis) -> None:
    """Marks written by earlier versions ("1") still make copies duplicates."""
    await redis.set(keys.inbound_seen("kit", SCOPE, "old"), b"1", ex=60)
    assert await handled(Dedupe(redis, "kit"), "old") is False
