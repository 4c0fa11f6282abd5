"""The state machine on real Redis: races, the sweeper, delivery failure, the keyspace."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import orjson
import pytest
from askgate.domain.errors import AlreadyFinal
from askgate.domain.models import QuestionCreate, Responder
from askgate.domain.timeutil import now_ms
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.conn import connect
from askgate.store.doc import encode_doc
from askgate.store.store import Store
from askgate_sweeper.__main__ import sweep_once
from redis.asyncio import Redis

from tests.support.asks import Tenant, ask_body
from tests.support.clock import FakeClock
from tests.support.notices import Notifications

FUTURE_MS = 10**9 * 1000 * 3  # far past any deadline


async def create_many(store: Store, tenant: str, n: int, prefix: str, **extra: Any) -> list[str]:
    ids = []
    for i in range(n):
        rec, created = await store.create(
            tenant,
            QuestionCreate.model_validate(ask_body(session=f"{prefix}-{i}", **extra)),
            max_pending=10**6,
            asks_per_s=10**6,
        )
        assert created
        ids.append(rec.id)
    return ids


async def test_answer_vs_expiry_races(
    redis: Redis, redis_url: str, settings: Settings, tenant: Tenant
) -> None:
    """1,000 answers racing the sweeper end in exactly one final state and one notice each."""
    store = Store(redis, settings)
    ids = await create_many(store, tenant.id, 1000, "race")
    answered: set[str] = set()
    lost: set[str] = set()

    # As many answers in flight as the client's pool has connections: the race is
    # between answers and sweeps, not for a connection (a loaded machine would time out
    # waiting for one).
    in_flight = asyncio.Semaphore(64)

    async def answer(qid: str) -> None:
        async with in_flight:
            try:
                await store.answer(tenant.id, qid, {"deploy_target": ["Production"]})
                answered.add(qid)
            except AlreadyFinal as exc:
                # The answer that lost to the timeout is kept as the question's late answer.
                assert exc.late
                assert exc.message.startswith("This question has expired; your answer")
                lost.add(qid)

    async def sweeper() -> None:
        replica = Store(connect(redis_url), settings)
        try:
            for _ in range(3):
                for shard in range(keys.SHARDS):
                    await replica.sweep_shard(shard, now=FUTURE_MS)
                await asyncio.sleep(0)
        finally:
            await replica.redis.aclose()

    async with Notifications(connect(redis_url)) as notes:
        await asyncio.gather(*(answer(q) for q in ids), *(sweeper() for _ in range(3)))
        await notes.settle(len(ids))
    # (Which side wins each race depends on the scheduler; what must hold is below.)
    assert answered | lost == set(ids) and not answered & lost
    assert set(notes.counts) == set(ids) and set(notes.counts.values()) == {1}
    for qid in ids:
        rec = await store.load(qid)
        assert rec is not None
        if qid in answered:
            assert rec.status == "answered" and notes.payloads[qid].startswith(b'{"status":"ans')
        else:
            assert (rec.status, rec.reason) == ("no_answer", "timeout")
            assert notes.payloads[qid] == b'{"status":"no_answer"}'
            assert len(rec.late_answers()) == 1
        assert await redis.get(keys.result_key(qid)) == notes.payloads[qid]
    resolved: Counter[str] = Counter()
    for stream in keys.all_events("web"):
        for _, f in await redis.xrange(stream):
            if f[b"type"] == b"question.resolved":
                resolved[f[b"id"].decode()] += 1
    assert resolved == Counter(dict.fromkeys(ids, 1))


async def test_two_channels_answer_once(redis: Redis, settings: Settings, tenant: Tenant) -> None:
    """Two answers arriving together from two channels: one wins, the other is told."""
    store = Store(redis, settings)
    (qid,) = await create_many(store, tenant.id, 1, "two")
    results = await asyncio.gather(
        store.answer(tenant.id, qid, {"deploy_target": ["Production"]}),
        store.apply_reply((await store.load(qid)), "1"),  # type: ignore[arg-type]
        return_exceptions=True,
    )
    errors = [r for r in results if isinstance(r, AlreadyFinal)]
    assert len(errors) == 1 and errors[0].message == "This question was already answered."


async def test_sweeper_expires_overdue_once(
    redis: Redis, redis_url: str, settings: Settings, tenant: Tenant
) -> None:
    """Two sweeper replicas together end every overdue question once, as no_answer/timeout."""
    store = Store(redis, settings.model_copy(update={"sweep_batch": 50}))
    due = await create_many(store, tenant.id, 300, "sw", timeoutSeconds=1)
    keep = await create_many(store, tenant.id, 5, "keep", timeoutSeconds=600)
    last_due = await store.load(due[-1])
    assert last_due is not None
    # The sweep runs when the 1 s questions are overdue and the 600 s ones are not.
    at = FakeClock().past(last_due.expires_ms)
    replicas = [Store(connect(redis_url), store.settings) for _ in range(2)]
    try:
        async with Notifications(connect(redis_url)) as notes:
            counts = await asyncio.gather(*(sweep_once(r, now=at) for r in replicas))
            await notes.settle(len(due))
    finally:
        for r in replicas:
            await r.redis.aclose()
    assert sum(counts) == len(due)
    assert set(notes.counts) == set(due) and set(notes.counts.values()) == {1}
    for qid in keep:
        rec = await store.load(qid)
        assert rec is not None and rec.status == "pending"
    rec = await store.load(due[0])
    assert rec is not None and (rec.status, rec.reason) == ("no_answer", "timeout")
    # Quota entries are scored by the deadline: the expired ones no longer count.
    assert await redis.zcount(keys.tenant_pending(tenant.id), at, "+inf") == len(keep)


async def test_keyspace_after_full_lifecycle(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """After ask → answer exactly these keys exist, and every per-question key expires."""
    store = Store(redis, settings)
    before = {k.decode() for k in await redis.keys("*")}
    (qid,) = await create_many(
        store, tenant.id, 1, "ks", run_id="run-1", targets=[{"channel": "telegram", "chat_id": "9"}]
    )
    shard = keys.shard_of(qid)
    await store.answer(tenant.id, qid, {"deploy_target": ["Production"]})
    after = {k.decode() for k in await redis.keys("*")} - before
    assert after == {
        keys.question(qid),  # its doc among its fields
        keys.result_key(qid),
        keys.session(shard, tenant.id, "ks-0"),
        keys.events(shard, "web"),
        keys.events(shard, "telegram"),
        keys.undelivered(shard),  # the telegram target, until the watchdog drops it
        keys.metrics(shard),  # the shard's counters (the answer's latency)
        keys.tenant_rate(tenant.id),
    }
    keep_ms = settings.result_ttl_s * 1000
    for key in (keys.question(qid), keys.result_key(qid)):
        ttl = await redis.pttl(key)
        assert keep_ms - 60_000 < ttl <= keep_ms
    # The session's index is kept for the session history after the deadline (900 s),
    # not for the retention period.
    session = keys.session(shard, tenant.id, "ks-0")
    session_created = await redis.hget(keys.question(qid), "created")
    history_ms = settings.session_history_s * 1000
    assert history_ms < await redis.pttl(session) <= history_ms + 900_000
    assert await redis.hgetall(session) == {qid.encode(): session_created}  # no longer pending
    assert 0 < await redis.pttl(keys.tenant_rate(tenant.id)) <= 1000
    # Streams are capped by MAXLEN instead of a TTL: consumers may be down for a while.
    assert await redis.pttl(keys.events(shard, "web")) == -1


async def test_keyspace_while_pending(redis: Redis, settings: Settings, tenant: Tenant) -> None:
    """A pending ask holds its hash (its doc among its fields), the session pointer,
    deadline and quota entries (no per-run index: a run's questions are found by their
    `run` field)."""
    store = Store(redis, settings)
    before = {k.decode() for k in await redis.keys("*")}
    (qid,) = await create_many(store, tenant.id, 1, "kp", run_id="r")
    shard = keys.shard_of(qid)
    after = {k.decode() for k in await redis.keys("*")} - before
    assert after == {
        keys.question(qid),
        keys.session(shard, tenant.id, "kp-0"),
        keys.due(shard),
        keys.events(shard, "web"),
        keys.tenant_pending(tenant.id),
        keys.tenant_rate(tenant.id),
    }
    session = await redis.hgetall(keys.session(shard, tenant.id, "kp-0"))
    assert set(session) == {f"p:{qid}".encode(), qid.encode()}
    # Every value in the question hash stays short, so Redis keeps it as a listpack.
    assert await redis.object("encoding", keys.question(qid)) in (b"listpack", b"ziplist")
    for key in after - {keys.due(shard), keys.events(shard, "web")}:
        assert await redis.pttl(key) > 0, key
    assert await redis.zscore(keys.due(shard), qid) == pytest.approx(now_ms() + 900_000, abs=5_000)


async def test_keys_share_the_question_hash_tag(tenant: Tenant) -> None:
    """Every key one script touches carries the question's shard hash tag."""
    from askgate.store.record import new_question_id

    qid = new_question_id(tenant.id, "sess", None, None)
    shard = keys.shard_of(qid)
    tag = keys.tag(shard)
    for key in (
        keys.question(qid),
        keys.result_key(qid),
        keys.due(shard),
        keys.doc(qid),
        keys.session(shard, tenant.id, "sess"),
        keys.run(shard, tenant.id, "r"),
        keys.events(shard, "web"),
    ):
        assert tag in key
    assert shard == keys.shard_for(tenant.id, "sess")


async def test_abort_after_a_timeout_in_the_run(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A run whose earlier question timed out aborts only what is still pending."""
    store = Store(redis, settings)
    (expired,) = await create_many(store, tenant.id, 1, "ra", run_id="run-x", timeoutSeconds=1)
    for shard in range(keys.SHARDS):
        await store.sweep_shard(shard, now=FUTURE_MS)
    (pending,) = await create_many(store, tenant.id, 1, "rb", run_id="run-x")
    assert await store.abort_run(tenant.id, "run-x") == [pending]
    rec = await store.load(expired)
    assert rec is not None and rec.reason == "timeout"


async def test_an_answered_question_keeps_its_result_once_in_the_result_key(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """The result is stored once, in the public result key; the hash holds only short
    values (Redis keeps it a compact listpack), and the question still shows its result."""
    store = Store(redis, settings)
    (qid,) = await create_many(store, tenant.id, 1, "once")
    await store.answer(tenant.id, qid, {"deploy_target": ["Production"]})
    assert not await redis.hexists(keys.question(qid), "result")
    assert await redis.object("encoding", keys.question(qid)) in (b"listpack", b"ziplist")
    rec = await store.get(tenant.id, qid)
    assert rec.result == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }
    assert rec.public_dict()["result"] == rec.result
    (listed,) = await store.list_session(tenant.id, "once-0")
    assert listed.result == rec.result


async def test_an_answer_through_a_chat_target_keeps_the_hash_compact(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """Who answered and through which target is kept in short fields (a chat user's
    JSON passes the 64 bytes a listpack value may have) and reads back whole."""
    store = Store(redis, settings)
    (qid,) = await create_many(
        store, tenant.id, 1, "who", targets=[{"channel": "telegram", "chat_id": "-1001234567890"}]
    )
    who = Responder(channel="telegram", user_id="7000004242", name="Ada King, Countess Lovelace")
    await store.answer(tenant.id, qid, {"deploy_target": ["Production"]}, who, target=0)
    assert await redis.object("encoding", keys.question(qid)) in (b"listpack", b"ziplist")
    rec = await store.get(tenant.id, qid)
    assert rec.responder == who
    assert rec.responder_doc == {**who.model_dump(), "target": 0}
    audit = rec.public_dict()["audit"]
    assert (audit["channel"], audit["target"], audit["user_id"]) == ("telegram", 0, "7000004242")


async def test_a_question_answered_before_still_shows_the_result_its_hash_kept(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A question answered when the hash kept a copy of the result reads as before."""
    store = Store(redis, settings)
    (qid,) = await create_many(store, tenant.id, 1, "old")
    await store.answer(tenant.id, qid, {"deploy_target": ["Staging (Recommended)"]})
    kept = await redis.get(keys.result_key(qid))
    await redis.hset(keys.question(qid), "result", kept)  # as RESOLVE wrote it then
    await redis.delete(keys.result_key(qid))
    rec = await store.get(tenant.id, qid)
    assert rec.result == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}},
    }


async def test_a_question_stored_with_its_doc_apart_reads_and_ends_as_before(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A question stored in the layout before (its doc in its own key, written with the
    first dictionary; timeout, locale, agent and tool-call ids in its hash) shows the same
    resource, and is listed and answered as before, its doc kept as long."""
    store = Store(redis, settings)
    (qid,) = await create_many(
        store, tenant.id, 1, "apart", agent_id="claude-code", tool_call_id="toolu_01abc"
    )
    rec = await store.get(tenant.id, qid)
    shown = rec.public_dict()
    chunks = [f for f in await redis.hkeys(keys.question(qid)) if f.startswith(b"z")]
    assert chunks
    await redis.hdel(keys.question(qid), *chunks)
    old_fields = {"timeout": 900, "locale": "en", "agent": "claude-code", "tcid": "toolu_01abc"}
    await redis.hset(keys.question(qid), mapping=old_fields)
    blob = encode_doc(orjson.loads(rec.f["doc"]), orjson.loads(rec.f["targets"]), None, version=1)
    await redis.set(keys.doc(qid), blob, px=await redis.pttl(keys.question(qid)))
    old = await store.get(tenant.id, qid)
    assert old.public_dict() == shown
    await store.answer(tenant.id, qid, {"deploy_target": ["Production"]})
    (listed,) = await store.list_session(tenant.id, "apart-0")
    assert listed.status == "answered" and listed.questions == rec.questions
    keep_ms = settings.result_ttl_s * 1000
    assert keep_ms - 60_000 < await redis.pttl(keys.doc(qid)) <= keep_ms


async def test_the_hash_keeps_only_what_changes_or_scripts_read(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """The agent and tool-call ids travel in the doc, the timeout is expires - created,
    an `en` locale is the default, the target count goes at the end; the resource shows
    them all the same."""
    store = Store(redis, settings)
    (qid,) = await create_many(
        store, tenant.id, 1, "lean", run_id="r-1", agent_id="claude-code", tool_call_id="toolu_9"
    )
    fields = set(await redis.hkeys(keys.question(qid)))
    assert not fields & {b"agent", b"tcid", b"timeout", b"locale"} and b"ntargets" in fields
    await store.answer(tenant.id, qid, {"deploy_target": ["Production"]})
    assert b"ntargets" not in set(await redis.hkeys(keys.question(qid)))
    shown = (await store.get(tenant.id, qid)).public_dict()
    assert (shown["run_id"], shown["agent_id"], shown["tool_call_id"]) == (
        "r-1",
        "claude-code",
        "toolu_9",
    )
    assert (shown["timeout_s"], shown["locale"]) == (900, "en")


async def test_a_question_outlives_its_sessions_index(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """Once a session's index has expired (deleted here, as its TTL does), its ended
    question is still read by id with its result, the session lists nothing, and the
    session can ask again."""
    store = Store(redis, settings)
    (qid,) = await create_many(store, tenant.id, 1, "gone")
    await store.answer(tenant.id, qid, {"deploy_target": ["Production"]})
    shard = keys.shard_of(qid)
    assert (
        0
        < await redis.pttl(keys.session(shard, tenant.id, "gone-0"))
        < await redis.pttl(keys.question(qid))
    )
    await redis.delete(keys.session(shard, tenant.id, "gone-0"))
    rec = await store.get(tenant.id, qid)
    assert rec.result == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }
    assert await store.list_session(tenant.id, "gone-0") == []
    rec, created = await store.create(
        tenant.id, QuestionCreate.model_validate(ask_body(session="gone-0"))
    )
    assert created and [r.id for r in await store.list_session(tenant.id, "gone-0")] == [rec.id]
