"""The channel kit on real Redis, with a recording adapter at the seam (the platform):
claims, retries, 429s, permanent failures, crash recovery, finalisation, and one slow
destination never holding the others."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from askgate.channels import (
    ChannelService,
    ChannelSettings,
    ChannelWorker,
    ExtraMessage,
    PermanentError,
    SentPrompt,
    StalePolicy,
    ThrottledError,
    TransientError,
)
from askgate.domain.models import QuestionCreate, SlackTarget, Target
from askgate.store import keys
from askgate.store.record import Record
from askgate.store.store import Store
from redis.asyncio import BlockingConnectionPool, Redis

from tests.support.asks import SECRET, Tenant, ask_body
from tests.support.waiting import eventually

Script = Callable[[str], Exception | None]  # destination → what the platform does now


@dataclass
class Platform:
    """A chat platform as the adapter sees it: it records every prompt and summary, and
    fails calls as each destination's script says."""

    scripts: dict[str, list[Exception | None]] = field(default_factory=dict)
    prompts: list[tuple[str, str]] = field(default_factory=list)  # (question id, dest)
    summaries: list[tuple[str, str]] = field(default_factory=list)
    reminders: list[tuple[str, int, str]] = field(default_factory=list)  # (id, n, text)
    tidied: list[tuple[str, str, str]] = field(default_factory=list)  # (id, kind, message)
    hold: dict[str, asyncio.Event] = field(default_factory=dict)

    async def call(self, dest: str) -> None:
        if dest in self.hold:
            await self.hold[dest].wait()
        script = self.scripts.get(dest)
        if script:
            exc = script.pop(0)
            if exc is not None:
                raise exc


class RecordingAdapter:
    channel = "slack"

    def __init__(self, platform: Platform, policy: StalePolicy = StalePolicy.RESEND) -> None:
        self.platform = platform
        self.stale_policy = policy

    def destination(self, rec: Record, target: Target) -> str:
        assert isinstance(target, SlackTarget)
        return target.channel_id

    async def send_prompt(self, rec: Record, index: int, target: Target) -> SentPrompt:
        dest = self.destination(rec, target)
        await self.platform.call(dest)
        self.platform.prompts.append((rec.id, dest))
        return SentPrompt(
            ref={"ts": str(len(self.platform.prompts))}, message=str(len(self.platform.prompts))
        )

    async def finalise(self, rec: Record, index: int, target: Target, ref: dict[str, Any]) -> None:
        self.platform.summaries.append((rec.id, self.destination(rec, target)))

    async def send_reminder(
        self, rec: Record, index: int, target: Target, ref: dict[str, Any], text: str, n: int
    ) -> SentPrompt | None:
        dest = self.destination(rec, target)
        await self.platform.call(dest)
        self.platform.reminders.append((rec.id, n, text))
        return None


class TidyingAdapter(RecordingAdapter):
    """Also finalises the extra messages tracked for a question."""

    async def finalise_message(self, rec: Record, target: Target, extra: ExtraMessage) -> None:
        await self.platform.call(extra.destination)
        self.platform.tidied.append((rec.id, extra.kind, extra.message))


class LookingAdapter(RecordingAdapter):
    """A platform that keeps a prompt even when its answer to the sender is lost, and
    can be asked for it (StalePolicy.LOOK_UP)."""

    def __init__(self, platform: Platform, policy: StalePolicy = StalePolicy.LOOK_UP) -> None:
        super().__init__(platform, StalePolicy.LOOK_UP)
        self.lookups = 0

    async def send_prompt(self, rec: Record, index: int, target: Target) -> SentPrompt:
        dest = self.destination(rec, target)
        self.platform.prompts.append((rec.id, dest))
        await self.platform.call(dest)
        return SentPrompt(ref={"ts": str(len(self.platform.prompts))})

    async def find_prompt(self, rec: Record, index: int, target: Target) -> SentPrompt | None:
        self.lookups += 1
        for n, (qid, dest) in enumerate(self.platform.prompts, 1):
            if (qid, dest) == (rec.id, self.destination(rec, target)):
                return SentPrompt(ref={"ts": str(n), "found": True})
        return None


def looking(service: ChannelService) -> LookingAdapter:
    assert service.worker is not None and isinstance(service.worker.adapter, LookingAdapter)
    return service.worker.adapter


def settings(url: str, **overrides: Any) -> ChannelSettings:
    values: dict[str, Any] = {
        "redis_url": url,
        "secret_key": SECRET,
        "timeout_min_s": 1,
        "consumer_block_ms": 50,
        "consumer_claim_every_s": 0.1,
        "consumer_claim_idle_ms": 200,
        "delivery_backoff_s": 0.01,
        **overrides,
    }
    return ChannelSettings(**values)


@pytest.fixture
async def services(redis_url: str, redis: Redis) -> AsyncIterator[Callable[..., Any]]:
    started: list[ChannelService] = []

    async def start(
        platform: Platform,
        policy: StalePolicy = StalePolicy.RESEND,
        adapter: type[RecordingAdapter] = RecordingAdapter,
        **overrides: Any,
    ) -> ChannelService:
        service = ChannelService("slack", settings(redis_url, **overrides))
        service.use(adapter(platform, policy))
        await service.start()
        started.append(service)
        return service

    yield start
    for service in started:
        await service.close()


async def ask(store: Store, tenant: Tenant, *channels: str, session: str = "s") -> Record:
    targets = [{"channel": "slack", "channel_id": c} for c in channels]
    rec, _ = await store.create(
        tenant.id,
        QuestionCreate.model_validate(ask_body(session, targets=targets)),
        max_pending=10**6,
        asks_per_s=10**6,
    )
    return rec


async def delivered(store: Store, qid: str, index: int = 0) -> bool:
    rec = await store.load(qid)
    assert rec is not None
    return rec.delivery(index).state == "delivered"


async def test_transient_failures_are_retried_into_one_prompt(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """Two 502s, then success: exactly one prompt, delivered after the quick retries."""
    platform = Platform(scripts={"C1": [TransientError("HTTP 502"), TransientError("reset")]})
    await services(platform)
    rec = await ask(settings_store, tenant, "C1")
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    assert platform.prompts == [(rec.id, "C1")]
    delivery = (await settings_store.load(rec.id)).delivery(0)  # type: ignore[union-attr]
    assert delivery.attempts == 3


async def test_a_reminder_that_fails_for_now_is_sent_once_later(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """Three 502s use up a handling's quick tries: the claim goes back, a later round
    sends reminder 1 once, and the ledger says sent."""
    from askgate.store import keys
    from askgate_sweeper.__main__ import timers_once

    platform = Platform()
    await services(platform, delivery_retries=2)
    rec, _ = await settings_store.create(
        tenant.id,
        QuestionCreate.model_validate(
            ask_body(
                "s", targets=[{"channel": "slack", "channel_id": "C1"}], remind={"every_s": 60}
            )
        ),
        max_pending=10**6,
        asks_per_s=10**6,
    )
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    platform.scripts["C1"] = [TransientError("HTTP 502")] * 3
    await timers_once(settings_store, rec.created_ms + 60_000)
    await eventually(lambda: platform.reminders, "the reminder on a later round")
    assert platform.reminders == [(rec.id, 1, "Still waiting for your answer — 14 min left.")]
    mark = await settings_store.redis.hget(keys.deliveries(rec.id), "r:0:1")
    assert mark == b"sent"


async def test_permanent_failure_ends_an_ask_nobody_can_see(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """channel_not_found on the only target: failed at once, the ask delivery_failed."""
    await services(Platform(scripts={"C1": [PermanentError("channel_not_found")]}))
    rec = await ask(settings_store, tenant, "C1")

    async def ended() -> bool:
        loaded = await settings_store.load(rec.id)
        return loaded is not None and loaded.reason == "delivery_failed"

    await eventually(ended, "delivery_failed")
    done = await settings_store.load(rec.id)
    assert done is not None and done.delivery(0).error == "channel_not_found"


async def test_a_429_waits_and_posts_once(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """A 429 holds its destination for retry_after, then one prompt; no try is used up."""
    platform = Platform(scripts={"C1": [ThrottledError("ratelimited", 0.2)]})
    await services(platform, delivery_max_claims=1)
    rec = await ask(settings_store, tenant, "C1")
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    assert platform.prompts == [(rec.id, "C1")]


async def test_slow_destination_does_not_hold_the_others(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """While one destination hangs, prompts for other destinations go out."""
    platform = Platform(hold={"SLOW": asyncio.Event()})
    await services(platform)
    slow = await ask(settings_store, tenant, "SLOW", session="a")

    async def sending() -> bool:
        rec = await settings_store.load(slow.id)
        return rec is not None and rec.delivery(0).state == "sending"

    await eventually(sending, "the slow prompt in flight")
    fast = [await ask(settings_store, tenant, f"C{i}", session=f"b{i}") for i in range(3)]
    await eventually(lambda: len(platform.prompts) == 3, "the three other prompts")
    assert {q for q, _ in platform.prompts} == {r.id for r in fast}
    platform.hold["SLOW"].set()
    await eventually(lambda: delivered(settings_store, slow.id), "the slow one")


async def test_ended_question_finalises_each_prompt_once(
    services: Any, settings_store: Store, tenant: Tenant, redis: Redis
) -> None:
    """When the question ends every prompt becomes its summary once, even if the
    resolved event is handled again."""
    platform = Platform()
    await services(platform)
    rec = await ask(settings_store, tenant, "C1", "C2")
    await eventually(lambda: len(platform.prompts) == 2, "two prompts")
    await eventually(lambda: delivered(settings_store, rec.id, 1), "confirmed")
    await settings_store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    await eventually(lambda: len(platform.summaries) == 2, "two summaries")
    stream = keys.events(keys.shard_of(rec.id), "slack")
    await redis.xadd(
        stream, {"type": "question.resolved", "id": rec.id, "status": "answered", "reason": ""}
    )
    marker = await redis.xadd(stream, {"type": "question.created", "id": rec.id})

    async def handled() -> bool:
        groups = {g["name"].decode(): g for g in await redis.xinfo_groups(stream)}
        group = groups[keys.group("slack")]
        return bool(group["last-delivered-id"] == marker and group["pending"] == 0)

    await eventually(handled, "the replayed entries")
    assert sorted(platform.summaries) == sorted([(rec.id, "C1"), (rec.id, "C2")])
    assert len(platform.prompts) == 2


async def test_claim_left_by_a_dead_worker_is_resent_once(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """A worker that died mid-send leaves a claim; after its lease the next worker sends
    the prompt (resend policy) exactly once."""
    rec = await ask(settings_store, tenant, "C1")
    loaded = await settings_store.load(rec.id)
    assert loaded is not None
    await settings_store.ledger.claim(
        loaded, 0, owner="dead-worker", lease_ms=300, on_stale=StalePolicy.RESEND
    )
    platform = Platform()
    await services(platform)
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    assert platform.prompts == [(rec.id, "C1")]


async def test_prompt_whose_sender_died_before_confirming_gets_its_summary(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """A worker that died after the platform took its prompt and before confirming it
    leaves the target sending; when the question ends, the prompt still becomes its
    summary once its claim runs out (RESEND: sent again, which the platform drops, for
    the ref of the one it shows)."""
    rec = await ask(settings_store, tenant, "C1")
    loaded = await settings_store.load(rec.id)
    assert loaded is not None
    await settings_store.ledger.claim(
        loaded, 0, owner="dead-worker", lease_ms=300, on_stale=StalePolicy.RESEND
    )
    await settings_store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    platform = Platform(prompts=[(rec.id, "C1")])  # it took the dead worker's prompt
    await services(platform)
    await eventually(lambda: platform.summaries == [(rec.id, "C1")], "the summary")
    done = await settings_store.load(rec.id)
    assert done is not None and done.delivery(0).summary == "done"
    assert platform.prompts == [(rec.id, "C1"), (rec.id, "C1")]  # the resend, to drop


async def test_look_up_finds_an_unconfirmed_prompt_to_summarise(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """LOOK_UP: the prompt a dead worker posted but never confirmed is found when the
    question ends and edited into its summary with the ref the platform gives."""
    rec = await ask(settings_store, tenant, "C1")
    loaded = await settings_store.load(rec.id)
    assert loaded is not None
    await settings_store.ledger.claim(
        loaded, 0, owner="dead-worker", lease_ms=300, on_stale=StalePolicy.LOOK_UP
    )
    await settings_store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    platform = Platform(prompts=[(rec.id, "C1")])
    adapter = looking(await services(platform, adapter=LookingAdapter))
    await eventually(lambda: platform.summaries == [(rec.id, "C1")], "the summary")
    assert adapter.lookups == 1 and platform.prompts == [(rec.id, "C1")]


async def test_maybe_sent_is_assumed_shown_where_a_resend_could_double(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """A timeout after sending, on a platform without idempotency: counted as shown,
    never sent twice."""
    platform = Platform(scripts={"C1": [TransientError("read timeout", maybe_sent=True)]})
    await services(platform, StalePolicy.ASSUME_SHOWN)
    rec = await ask(settings_store, tenant, "C1")
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    delivery = (await settings_store.load(rec.id)).delivery(0)  # type: ignore[union-attr]
    assert delivery.ref == {"unconfirmed": True} and platform.prompts == []


async def test_look_up_finds_the_prompt_a_dead_worker_posted(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """LOOK_UP: a claim left by a worker that died after the platform took the prompt is
    confirmed with the prompt found there; nothing is posted again."""
    rec = await ask(settings_store, tenant, "C1")
    loaded = await settings_store.load(rec.id)
    assert loaded is not None
    await settings_store.ledger.claim(
        loaded, 0, owner="dead-worker", lease_ms=300, on_stale=StalePolicy.LOOK_UP
    )
    platform = Platform(prompts=[(rec.id, "C1")])
    adapter = looking(await services(platform, adapter=LookingAdapter))
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    delivery = (await settings_store.load(rec.id)).delivery(0)  # type: ignore[union-attr]
    assert delivery.ref == {"ts": "1", "found": True}
    assert platform.prompts == [(rec.id, "C1")] and adapter.lookups == 1


async def test_look_up_sends_when_the_dead_worker_posted_nothing(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """LOOK_UP: a stale claim whose prompt the platform never got is sent, once."""
    rec = await ask(settings_store, tenant, "C1")
    loaded = await settings_store.load(rec.id)
    assert loaded is not None
    await settings_store.ledger.claim(
        loaded, 0, owner="dead-worker", lease_ms=300, on_stale=StalePolicy.LOOK_UP
    )
    platform = Platform()
    adapter = looking(await services(platform, adapter=LookingAdapter))
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    assert platform.prompts == [(rec.id, "C1")] and adapter.lookups == 1


async def test_look_up_after_a_lost_answer_keeps_one_prompt(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """LOOK_UP: a timeout after the platform took the prompt is retried as a look-up that
    finds it: one prompt, confirmed with its ref."""
    platform = Platform(scripts={"C1": [TransientError("read timeout", maybe_sent=True)]})
    await services(platform, adapter=LookingAdapter)
    rec = await ask(settings_store, tenant, "C1")
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    delivery = (await settings_store.load(rec.id)).delivery(0)  # type: ignore[union-attr]
    assert platform.prompts == [(rec.id, "C1")] and delivery.ref["found"] is True


async def test_first_try_never_looks_up(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """LOOK_UP costs nothing on the common path: a first try just sends."""
    platform = Platform()
    adapter = looking(await services(platform, adapter=LookingAdapter))
    rec = await ask(settings_store, tenant, "C1")
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    assert adapter.lookups == 0


def test_look_up_without_find_prompt_is_refused(settings_store: Store) -> None:
    """An adapter declaring LOOK_UP without find_prompt fails at wiring, not mid-send."""
    with pytest.raises(TypeError, match="find_prompt"):
        ChannelWorker(RecordingAdapter(Platform(), StalePolicy.LOOK_UP), settings_store, owner="w")


async def test_channel_is_live_while_a_worker_runs(services: Any, redis: Redis) -> None:
    """A started worker marks its channel live; the mark goes when it is not renewed."""
    service = await services(Platform())
    assert await redis.exists(keys.channel_live("slack"))
    await service.close()
    assert 0 < await redis.pttl(keys.channel_live("slack")) <= 15_000


async def test_tracked_messages_are_finalised_once_when_the_question_ends(
    services: Any, settings_store: Store, tenant: Tenant, redis: Redis
) -> None:
    """Messages tracked beside a prompt reach finalise_message once each when the question
    ends, and a replayed resolved event finalises none of them again."""
    platform = Platform()
    service = await services(platform, adapter=TidyingAdapter)
    rec = await ask(settings_store, tenant, "C1")
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    worker = service.worker
    await worker.track(rec, 0, "C1", "7", "copy")
    await worker.track(rec, 0, "C1", "8", "note")
    await settings_store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    await eventually(lambda: len(platform.tidied) == 2, "both extra messages finalised")
    await redis.xadd(
        keys.events(keys.shard_of(rec.id), "slack"),
        {"type": "question.resolved", "id": rec.id, "status": "answered", "reason": ""},
    )
    await eventually(lambda: platform.summaries, "the prompt's summary")
    assert sorted(platform.tidied) == [(rec.id, "copy", "7"), (rec.id, "note", "8")]
    assert not await redis.exists(keys.prompt_extras("slack", rec.id))


async def test_tracking_after_the_end_finalises_at_once(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """A message tracked after its question ended (a race with the end) is finalised
    right away instead of staying for good."""
    platform = Platform()
    service = await services(platform, adapter=TidyingAdapter)
    rec = await ask(settings_store, tenant, "C1")
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    await settings_store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    await eventually(lambda: platform.summaries, "the prompt's summary")
    await service.worker.track(rec, 0, "C1", "9", "note")
    assert platform.tidied == [(rec.id, "note", "9")]


async def test_extra_message_left_for_later_when_the_platform_is_down(
    services: Any, settings_store: Store, tenant: Tenant
) -> None:
    """A tracked message whose finalisation keeps failing transiently is kept and finalised
    on a later round, once."""
    platform = Platform()
    service = await services(platform, adapter=TidyingAdapter, delivery_retries=0)
    rec = await ask(settings_store, tenant, "C1")
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    await service.worker.track(rec, 0, "C9", "5", "note")
    platform.scripts["C9"] = [TransientError("HTTP 502")]
    await settings_store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    await eventually(lambda: platform.tidied, "the note finalised on a later round")
    assert platform.tidied == [(rec.id, "note", "5")]


async def test_adapter_without_finaliser_forgets_extra_messages(
    services: Any, settings_store: Store, tenant: Tenant, redis: Redis
) -> None:
    """With an adapter that does not finalise extra messages, the kit only forgets them."""
    platform = Platform()
    service = await services(platform)
    rec = await ask(settings_store, tenant, "C1")
    await eventually(lambda: delivered(settings_store, rec.id), "delivered")
    await service.worker.track(rec, 0, "C1", "7", "note")
    await settings_store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    await eventually(lambda: platform.summaries, "the prompt's summary")
    await eventually(lambda: _gone(redis, keys.prompt_extras("slack", rec.id)), "forgotten")


async def _gone(redis: Redis, key: str) -> bool:
    return not await redis.exists(key)


@pytest.fixture
def settings_store(redis: Redis, redis_url: str) -> Store:
    return Store(redis, settings(redis_url))


async def test_a_call_for_a_person_waits_out_a_429_and_then_goes_once(
    settings_store: Store,
) -> None:
    """An ack or outcome message throttled once is sent after the Retry-After, once; a
    platform error is logged and gives None instead of raising into the answer path."""
    worker = ChannelWorker(RecordingAdapter(Platform()), settings_store, owner="w")
    calls: list[str] = []

    async def ack() -> str:
        calls.append("ack")
        if len(calls) == 1:
            raise ThrottledError("slow down", 0.05)
        return "sent"

    assert await worker.call_for_person("C1", ack) == "sent"
    assert calls == ["ack", "ack"]

    async def refused() -> str:
        raise PermanentError("channel_not_found")

    assert await worker.call_for_person("C2", refused) is None


async def test_a_call_for_a_person_is_dropped_when_the_wait_is_too_long(
    settings_store: Store,
) -> None:
    """A destination held longer than the policy's max wait is not called at all."""
    worker = ChannelWorker(RecordingAdapter(Platform()), settings_store, owner="w")
    worker.gate.block("C1", worker.policy.max_wait_s + 60)
    calls: list[str] = []

    async def ack() -> str:
        calls.append("ack")
        return "sent"

    assert await worker.call_for_person("C1", ack) is None
    assert calls == []


async def test_a_handler_waits_its_turn_for_a_redis_connection(redis_url: str) -> None:
    """A worker behind on its work has more handlers than connections: a command waits
    for one to come back, without a deadline, instead of failing the handler ("No
    connection available") and sending its entry round again a lease later."""
    service = ChannelService("slack", settings(redis_url))
    try:
        pool = service.redis.connection_pool
        assert isinstance(pool, BlockingConnectionPool) and pool.timeout is None
        pool.max_connections = 1  # every connection busy: the one there is
        held = asyncio.create_task(service.redis.blpop(["nothing-comes"], timeout=1))
        await asyncio.sleep(0.1)  # the BLPOP holds the one connection for a second
        await service.redis.set("k", "v")  # waits behind it
        assert held.done() and await held is None
        assert await service.redis.get("k") == b"v"
    finally:
        await service.close()
