"""An ask to a channel nobody serves never waits for its timeout: refused at ask time
when nothing else could show it, else its target fails within the grace."""

from __future__ import annotations

import httpx
from askgate.domain.timeutil import now_ms
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.store import Store
from askgate_sweeper.__main__ import watch_once
from redis.asyncio import Redis

from tests.support.asks import Tenant, ask_body

SLACK = {"channel": "slack", "channel_id": "C1"}


async def test_ask_only_to_a_dead_channel_is_refused(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Every target on a channel without a live worker: 422 naming the target and fix."""
    r = await app_client.post(
        "/v1/questions", json=ask_body(targets=[SLACK]), headers=tenant.headers
    )
    assert r.status_code == 422
    message = r.json()["error"]["message"]
    assert message.startswith("targets[0].channel 'slack' has no live askgate-slack worker")
    assert '{"channel": "web"}' in message


async def test_ask_to_a_live_channel_is_accepted(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Redis
) -> None:
    """With a worker beating for the channel, the same ask is accepted."""
    await redis.set(keys.channel_live("slack"), now_ms(), px=15_000)
    r = await app_client.post(
        "/v1/questions", json=ask_body(targets=[SLACK]), headers=tenant.headers
    )
    assert r.status_code == 201


async def test_dead_channel_beside_web_fails_on_the_next_watch(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Redis, settings: Settings
) -> None:
    """A dead channel's target beside a web one is accepted, then failed by the sweeper's
    watchdog at once, while the web target keeps the question pending."""
    body = ask_body(targets=[SLACK, {"channel": "web"}])
    qid = (await app_client.post("/v1/questions", json=body, headers=tenant.headers)).json()["id"]
    assert await watch_once(Store(redis, settings)) == 1
    q = (await app_client.get(f"/v1/questions/{qid}", headers=tenant.headers)).json()
    assert q["status"] == "pending"
    assert (q["deliveries"][0]["status"], q["deliveries"][0]["error"]) == (
        "failed",
        "no live askgate-slack worker",
    )


async def test_worker_that_disappears_fails_its_target_within_the_grace(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Redis, settings: Settings
) -> None:
    """Live at ask time, gone before showing it: after the grace the ask ends
    delivery_failed instead of waiting for its timeout."""
    await redis.set(keys.channel_live("slack"), now_ms(), px=15_000)
    qid = (
        await app_client.post(
            "/v1/questions", json=ask_body(targets=[SLACK]), headers=tenant.headers
        )
    ).json()["id"]
    await redis.delete(keys.channel_live("slack"))  # its last beat expired
    store = Store(redis, settings)
    assert await watch_once(store) == 0  # still within the grace
    assert await watch_once(store, now=now_ms() + settings.channel_grace_s * 1000 + 1) == 1
    q = (await app_client.get(f"/v1/questions/{qid}", headers=tenant.headers)).json()
    assert (q["status"], q["reason"]) == ("no_answer", "delivery_failed")
