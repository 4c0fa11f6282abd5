"""/metrics: the counters every process keeps in its shards' metrics hashes (answer
latency per channel, no_answer per reason, delivery failures per channel and error,
reminders, escalations, late answers), summed by any API replica."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from askgate.domain.errors import AlreadyFinal
from askgate.domain.models import QuestionCreate, Responder
from askgate.domain.status import Reason
from askgate.settings import Settings
from askgate.store.record import Record
from askgate.store.store import Store
from askgate_sweeper.__main__ import sweep_once, timers_once, watch_once
from prometheus_client.parser import text_string_to_metric_families
from redis.asyncio import Redis

from tests.support.asks import Tenant, ask_body

pytestmark = pytest.mark.both_redis


async def ask(store: Store, tenant: Tenant, session: str, **extra: Any) -> Record:
    body = QuestionCreate.model_validate(ask_body(session, **extra))
    rec, _ = await store.create(tenant.id, body, max_pending=10**6, asks_per_s=10**6)
    return rec


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


async def test_metrics_count_what_happened_in_every_process(
    app_client: httpx.AsyncClient, redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """Answers by channel, ends by reason, failures by channel and class, timers, late."""
    store = Store(redis, settings)
    web = [{"channel": "web"}]
    a = await ask(store, tenant, "a", targets=web)
    await store.answer(
        tenant.id, a.id, {"deploy_target": "1"}, Responder(channel="telegram", user_id="1")
    )
    b = await ask(store, tenant, "b", targets=web)
    await store.answer(
        tenant.id, b.id, {"deploy_target": "1"}, Responder(channel="made-up", user_id="1")
    )
    c = await ask(store, tenant, "c", targets=web)
    await store.end(tenant.id, c.id, Reason.CANCELLED)
    d = await ask(
        store,
        tenant,
        "d",
        targets=[{"channel": "slack", "channel_id": "C1"}],
        remind={"every_s": 60},
        escalate=[{"after_s": 120, "targets": [{"channel": "text", "url": "https://x.example/"}]}],
    )
    await timers_once(store, d.created_ms + 120_000)  # reminder 1, then step 1
    await watch_once(store, d.created_ms + 120_000 + settings.channel_grace_s * 1000 + 1)
    e = await ask(store, tenant, "e", targets=web)
    await sweep_once(store, e.expires_ms + 1)
    with pytest.raises(AlreadyFinal):
        await store.answer(tenant.id, e.id, {"deploy_target": "2"})

    text = (await app_client.get("/metrics")).text
    got = samples(text)
    lat = "askgate_answer_latency_seconds"
    assert got[(f"{lat}_count", (("channel", "telegram"),))] == 1
    assert got[(f"{lat}_bucket", (("channel", "telegram"), ("le", "5.0")))] == 1
    assert got[(f"{lat}_count", (("channel", "other"),))] == 1
    assert got[("askgate_no_answer_total", (("reason", "cancelled"),))] == 1
    assert got[("askgate_no_answer_total", (("reason", "timeout"),))] == 1
    assert got[("askgate_no_answer_total", (("reason", "delivery_failed"),))] == 1
    for channel in ("slack", "text"):
        key = ("askgate_delivery_failures_total", (("channel", channel), ("error", "no_worker")))
        assert got[key] == 1
    assert got[("askgate_escalations_total", ())] == 1
    assert got[("askgate_late_answers_total", ())] == 1
    assert "askgate_asks_total" in text  # the process's own metrics are still there


async def test_any_replica_renders_the_same_totals(
    app_client: httpx.AsyncClient, redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """The counters live in Redis: another API process sees them too."""
    from askgate_api.app import create_app

    store = Store(redis, settings)
    rec = await ask(store, tenant, "r", targets=[{"channel": "web"}])
    await store.end(tenant.id, rec.id, Reason.SKIPPED)
    other = create_app(settings)
    async with other.router.lifespan_context(other):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=other), base_url="http://other"
        ) as client:
            text = (await client.get("/metrics")).text
    assert samples(text)[("askgate_no_answer_total", (("reason", "skipped"),))] == 1
