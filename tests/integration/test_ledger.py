"""The delivery ledger on real Redis: claims with leases, who may settle, counted tries,
the end of an ask nobody can be shown, and the watchdog for channels without a worker."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from askgate.domain.models import QuestionCreate
from askgate.domain.status import Reason
from askgate.domain.timeutil import now_ms
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.ledger import StalePolicy
from askgate.store.record import Record
from askgate.store.store import Store
from redis.asyncio import Redis

from tests.support.asks import Tenant, ask_body
from tests.support.clock import FakeClock

pytestmark = pytest.mark.both_redis

TG = {"channel": "telegram", "chat_id": "1"}
SLACK = {"channel": "slack", "channel_id": "C1"}
LEASE_MS = 60_000


async def ask(
    store: Store, tenant: Tenant, targets: list[dict[str, Any]], session: str = "s", **kwargs: Any
) -> Record:
    body = QuestionCreate.model_validate(ask_body(session, targets=targets))
    rec, _ = await store.create(tenant.id, body, **kwargs)
    loaded = await store.load(rec.id)
    assert loaded is not None
    return loaded


async def test_every_target_failed_ends_the_question(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """When every target fails for good the question ends as delivery_failed, at the last."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG, SLACK])
    first = await store.ledger.fail(rec, 0, error="bot was blocked")
    assert (first.ok, first.question_ended) == (True, False)
    assert (await store.load(rec.id)).status == "pending"  # type: ignore[union-attr]
    last = await store.ledger.fail(rec, 1, error="channel_not_found")
    assert last.question_ended
    done = await store.load(rec.id)
    assert done is not None and (done.status, done.reason) == ("no_answer", "delivery_failed")
    assert [d.error for d in done.deliveries()] == ["bot was blocked", "channel_not_found"]


async def test_web_target_keeps_the_question_showable(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """With a web target, a failed chat target leaves the question pending."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG, {"channel": "web"}])
    assert not (await store.ledger.fail(rec, 0, error="chat not found")).question_ended
    assert (await store.load(rec.id)).status == "pending"  # type: ignore[union-attr]


async def test_two_claims_one_wins(redis: Redis, settings: Settings, tenant: Tenant) -> None:
    """Two workers claiming one target at once: one gets it, the other sees it busy."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG])
    a, b = await asyncio.gather(
        *(
            store.ledger.claim(rec, 0, owner=o, lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND)
            for o in ("a", "b")
        )
    )
    assert sorted([a.outcome, b.outcome]) == ["busy", "claimed"]


async def test_only_the_claim_holder_settles(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A worker whose claim was taken over cannot confirm it; the holder can."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG])
    await store.ledger.claim(rec, 0, owner="a", lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND)
    assert not (await store.ledger.confirm(rec, 0, owner="b", ref={"m": 1})).ok
    assert (await store.ledger.confirm(rec, 0, owner="a", ref={"m": 1})).ok
    delivery = (await store.load(rec.id)).delivery(0)  # type: ignore[union-attr]
    assert (delivery.state, delivery.ref, delivery.attempts) == ("delivered", {"m": 1}, 1)


@pytest.mark.parametrize(
    ("policy", "outcome", "state"),
    [
        (StalePolicy.RESEND, "claimed", "sending"),
        (StalePolicy.ASSUME_SHOWN, "assumed", "delivered"),
    ],
)
async def test_a_dead_workers_claim_follows_the_policy(
    redis: Redis,
    settings: Settings,
    tenant: Tenant,
    policy: StalePolicy,
    outcome: str,
    state: str,
) -> None:
    """A claim whose lease ran out is taken over (resend) or counted as shown (assume)."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG])
    clock = FakeClock()
    await store.ledger.claim(rec, 0, owner="dead", lease_ms=LEASE_MS, on_stale=policy, now=clock.ms)
    clock.advance(LEASE_MS / 1000 + 1)  # the dead owner's lease has run out
    claim = await store.ledger.claim(
        rec, 0, owner="next", lease_ms=LEASE_MS, on_stale=policy, now=clock.ms
    )
    assert claim.outcome == outcome
    delivery = (await store.load(rec.id)).delivery(0)  # type: ignore[union-attr]
    assert delivery.state == state
    if policy == StalePolicy.ASSUME_SHOWN:
        assert delivery.ref == {"unconfirmed": True}
    else:
        assert claim.attempt == 2


async def test_counted_tries_run_out_and_fail_the_target(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """Each transient failure uses up a try; after the last the target fails."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG, {"channel": "web"}])
    states = []
    for _ in range(3):
        await store.ledger.claim(rec, 0, owner="w", lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND)
        settled = await store.ledger.release(rec, 0, owner="w", error="HTTP 502", max_claims=3)
        states.append(settled.state)
    assert states == ["pending", "pending", "failed"]
    delivery = (await store.load(rec.id)).delivery(0)  # type: ignore[union-attr]
    assert (delivery.state, delivery.error) == ("failed", "HTTP 502")


async def test_a_429_never_uses_up_a_try(redis: Redis, settings: Settings, tenant: Tenant) -> None:
    """Hand-backs that do not count (the platform said later) leave the target pending."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG])
    for _ in range(5):
        await store.ledger.claim(rec, 0, owner="w", lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND)
        settled = await store.ledger.release(
            rec, 0, owner="w", error="429", max_claims=2, counted=False
        )
        assert settled.state == "pending"


async def test_claim_of_a_settled_or_ended_question_is_refused(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A delivered target is done; a target of an ended question is never sent."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG, TG])
    await store.ledger.claim(rec, 0, owner="w", lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND)
    await store.ledger.confirm(rec, 0, owner="w", ref={})
    claim = await store.ledger.claim(
        rec, 0, owner="w", lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND
    )
    assert (claim.outcome, claim.state) == ("done", "delivered")
    await store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    claim = await store.ledger.claim(
        rec, 1, owner="w", lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND
    )
    assert (claim.outcome, claim.state) == ("ended", "answered")


async def test_summary_is_marked_once(redis: Redis, settings: Settings, tenant: Tenant) -> None:
    """The first finaliser marks the summary; a replay learns it was done."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG])
    assert await store.ledger.mark_summary(rec, 0) is True
    assert await store.ledger.mark_summary(rec, 0) is False
    assert (await store.load(rec.id)).delivery(0).summary == "done"  # type: ignore[union-attr]


async def test_delivery_details_stay_beside_a_compact_hash(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A delivery's details go beside the question hash, which stays a listpack, and
    expire with the question."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [{"channel": "telegram", "chat_id": "-1001234567890"}])
    await store.ledger.claim(rec, 0, owner="w", lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND)
    ref = {"chat_id": "-1001234567890", "message_id": 4242, "bot": "123456789"}
    assert (await store.ledger.confirm(rec, 0, owner="w", ref=ref)).ok
    assert await redis.object("encoding", keys.question(rec.id)) in (b"listpack", b"ziplist")
    assert (await store.load(rec.id)).deliveries()[0].ref == ref  # type: ignore[union-attr]
    # The same deadline as the question (read one after the other: allow a few ms).
    gap = abs(await redis.pttl(keys.deliveries(rec.id)) - await redis.pttl(keys.question(rec.id)))
    assert gap < 1000
    await store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    keep_ms = settings.result_ttl_s * 1000
    assert keep_ms - 60_000 < await redis.pttl(keys.deliveries(rec.id)) <= keep_ms


async def test_an_ended_questions_shown_prompt_keeps_its_ref_until_its_summary(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """At the end the claim count goes but the shown prompt's ref stays for the worker
    that edits it into its summary; once marked, the deliveries hash is gone and the
    question reads the same apart from the delivery details."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG, {"channel": "web"}])
    await store.ledger.claim(rec, 0, owner="w", lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND)
    ref = {"chat_id": "1", "message_id": 4242}
    await store.ledger.confirm(rec, 0, owner="w", ref=ref)
    await store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    ended = await store.load(rec.id)
    assert ended is not None and ended.delivery(0).ref == ref
    assert set(await redis.hkeys(keys.deliveries(rec.id))) == {b"d:0"}  # no claim count
    assert await store.ledger.mark_summary(ended, 0) is True
    assert await redis.exists(keys.deliveries(rec.id)) == 0
    assert await redis.object("encoding", keys.question(rec.id)) in (b"listpack", b"ziplist")
    final = await store.load(rec.id)
    assert final is not None
    assert (final.delivery(0).state, final.delivery(0).summary) == ("delivered", "done")
    assert [d.status for d in final.deliveries()] == ["delivered", "delivered"]
    assert final.result == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }
    assert await store.ledger.mark_summary(final, 0) is False  # a replayed resolved event


async def test_a_failed_target_keeps_its_error_after_the_end(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """Why a target was never shown stays readable; a target never shown keeps nothing."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG, TG, {"channel": "web"}])
    await store.ledger.claim(rec, 0, owner="w", lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND)
    await store.ledger.fail(rec, 0, error="Forbidden: bot was blocked by the user", owner="w")
    await store.ledger.claim(rec, 1, owner="w", lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND)
    await store.ledger.release(rec, 1, owner="w", error="HTTP 502", max_claims=3)
    await store.end(tenant.id, rec.id, Reason.CANCELLED)
    assert set(await redis.hkeys(keys.deliveries(rec.id))) == {b"d:0"}
    ended = await store.load(rec.id)
    assert ended is not None
    assert (ended.delivery(0).state, ended.delivery(0).error) == (
        "failed",
        "Forbidden: bot was blocked by the user",
    )
    assert (ended.delivery(1).state, ended.delivery(1).error) == ("pending", None)


# -- the watchdog: chat targets on channels with no live worker ---------------------------


async def test_target_without_a_live_worker_fails_after_the_grace(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """Past the grace, a target whose channel has no live worker fails and, with nothing
    else to show the ask, it ends as delivery_failed."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [SLACK])
    shard = keys.shard_of(rec.id)
    assert await store.sweep_undelivered(shard, set()) == (0, 0, 0)  # not due yet
    later = now_ms() + settings.channel_grace_s * 1000 + 1
    assert await store.sweep_undelivered(shard, set(), now=later) == (1, 1, 1)
    done = await store.load(rec.id)
    assert done is not None and (done.status, done.reason) == ("no_answer", "delivery_failed")
    assert done.deliveries()[0].error == "no live askgate-slack worker"
    assert await redis.zcard(keys.undelivered(shard)) == 0


async def test_live_worker_gets_more_time(redis: Redis, settings: Settings, tenant: Tenant) -> None:
    """A due target whose channel has a live worker (maybe waiting out a 429) is kept."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG])
    shard = keys.shard_of(rec.id)
    later = now_ms() + settings.channel_grace_s * 1000 + 1
    assert await store.sweep_undelivered(shard, {"telegram"}, now=later) == (0, 0, 1)
    assert (await store.load(rec.id)).status == "pending"  # type: ignore[union-attr]
    score = await redis.zscore(keys.undelivered(shard), f"{rec.id}|0|telegram")
    assert score is not None and score > later


async def test_dead_channel_at_ask_time_is_due_at_once(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A target whose channel was known dead when asked fails on the next watchdog pass."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [SLACK, {"channel": "web"}], dead_channels=frozenset({"slack"}))
    assert await store.sweep_undelivered(keys.shard_of(rec.id), set()) == (1, 0, 1)
    done = await store.load(rec.id)
    assert done is not None and done.status == "pending"  # the web target still shows it
    doc = orjson.loads(await redis.hget(keys.deliveries(rec.id), "d:0") or b"{}")
    assert doc["status"] == "failed"


async def test_target_a_worker_is_sending_is_not_failed_under_it(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A due target that a worker has claimed (its lease still runs) is being shown, even
    while its channel's live key is missing (a restart, a Redis blip): the watchdog
    leaves it, so the worker's confirm lands and the prompt later gets its summary.
    Once the lease has run out with no confirm, the target fails as before."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [SLACK, {"channel": "web"}], dead_channels=frozenset({"slack"}))
    claim = await store.ledger.claim(
        rec, 0, owner="w1", lease_ms=LEASE_MS, on_stale=StalePolicy.LOOK_UP
    )
    assert claim.outcome == "claimed"
    shard = keys.shard_of(rec.id)
    assert await store.sweep_undelivered(shard, set()) == (0, 0, 1)
    confirmed = await store.ledger.confirm(rec, 0, owner="w1", ref={"ts": "1.2"})
    assert confirmed.ok
    shown = await store.load(rec.id)
    assert shown is not None and shown.delivery(0).state == "delivered"

    other = await ask(
        store, tenant, [SLACK, {"channel": "web"}], "s2", dead_channels=frozenset({"slack"})
    )
    await store.ledger.claim(other, 0, owner="w2", lease_ms=LEASE_MS, on_stale=StalePolicy.LOOK_UP)
    later = now_ms() + LEASE_MS + 1
    assert await store.sweep_undelivered(keys.shard_of(other.id), set(), now=later) == (1, 0, 1)
    failed = await store.load(other.id)
    assert failed is not None and failed.delivery(0).state == "failed"


async def test_shown_target_leaves_the_watch(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """Once a prompt is shown its target is no longer watched."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG])
    await store.ledger.claim(rec, 0, owner="w", lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND)
    await store.ledger.confirm(rec, 0, owner="w", ref={})
    assert await redis.zcard(keys.undelivered(keys.shard_of(rec.id))) == 0


async def test_reminders_sent_stay_counted_after_the_end(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """The resource still says how many reminders a target got once their claims are gone."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, [TG])
    await store.ledger.claim(rec, 0, owner="w", lease_ms=LEASE_MS, on_stale=StalePolicy.RESEND)
    await store.ledger.confirm(rec, 0, owner="w", ref={"message_id": 1})
    for n in (1, 2):
        assert await store.ledger.claim_reminder(rec, 0, n)
        await store.ledger.reminder_done(rec, 0, n, "sent")
    await store.end(tenant.id, rec.id, Reason.SKIPPED)
    ended = await store.load(rec.id)
    assert ended is not None and ended.delivery_dicts()[0]["reminders"] == 2
    await store.ledger.mark_summary(ended, 0)
    final = await store.load(rec.id)
    assert final is not None and final.delivery_dicts()[0]["reminders"] == 2
    assert await redis.exists(keys.deliveries(rec.id)) == 0
