"""Reminders and escalation through the API and the CLI: what the resource shows, the
422 for timing the timeout never reaches, and the tenant's default reminders."""

from __future__ import annotations

import httpx
from askgate.store.tenants import load_tenant
from redis.asyncio import Redis

from tests.support.asks import Tenant, ask_body
from tests.support.cli import askgate_cli
from tests.support.timers import created_ms, fire_timers

TG = {"channel": "telegram", "chat_id": "1"}


async def test_the_resource_shows_reminders_and_steps(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Redis
) -> None:
    """remind (with how many were sent) and each step (due, started, its targets)."""
    body = ask_body(
        targets=[{"channel": "web"}],
        timeoutSeconds=900,
        remind={"every_s": 300, "final_warning_s": 60},
        escalate=[{"after_s": 450, "targets": [TG]}],
    )
    q = (await app_client.post("/v1/questions", json=body, headers=tenant.headers)).json()
    assert q["remind"] == {"every_s": 300, "max": 3, "final_warning_s": 60, "sent": 0}
    (step,) = q["escalation"]
    assert (step["step"], step["after_s"], step["started_at"], step["targets"]) == (
        1,
        450,
        None,
        [1],
    )
    assert [d["step"] for d in q["deliveries"]] == [0, 1]
    await fire_timers(redis, created_ms(q) + 600_000)
    r = await app_client.get(f"/v1/questions/{q['id']}", headers=tenant.headers)
    now = r.json()
    assert now["remind"]["sent"] == 2 and now["escalation"][0]["started_at"] is not None


async def test_a_step_after_the_timeout_is_a_422(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A step the (clamped) timeout never reaches is refused, naming both numbers."""
    body = ask_body(
        targets=[{"channel": "web"}],
        timeoutSeconds=300,
        escalate=[{"after_s": 300, "targets": [TG]}],
    )
    r = await app_client.post("/v1/questions", json=body, headers=tenant.headers)
    assert r.status_code == 422
    assert r.json()["error"]["message"] == (
        "escalate[0].after_s (300) must be shorter than the question's timeout (300 s), "
        "or the step never runs"
    )


async def test_an_ask_only_to_dead_channels_names_a_step_target(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """No target in any step has a live worker: refused, naming the first."""
    body = ask_body(
        targets=[TG],
        escalate=[{"after_s": 60, "targets": [{"channel": "slack", "channel_id": "C1"}]}],
    )
    r = await app_client.post("/v1/questions", json=body, headers=tenant.headers)
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith(
        "targets[0].channel 'telegram' has no live askgate-telegram worker"
    )


async def test_tenant_default_reminders_from_the_cli(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Redis, redis_url: str
) -> None:
    """`askgate tenant remind` sets what asks without `remind` get; `off` clears it."""
    done = askgate_cli(redis_url, "tenant", "remind", tenant.id, "every_s=120", "max=2")
    assert done.returncode == 0, done.stderr
    loaded = await load_tenant(redis, tenant.id)
    assert loaded is not None and loaded.remind is not None
    assert (loaded.remind.every_s, loaded.remind.max) == (120, 2)
    app_client.app.state.tenants._cache.clear()  # type: ignore[attr-defined]
    body = ask_body(targets=[{"channel": "web"}])
    q = (await app_client.post("/v1/questions", json=body, headers=tenant.headers)).json()
    assert q["remind"] == {"every_s": 120, "max": 2, "final_warning_s": None, "sent": 0}
    assert askgate_cli(redis_url, "tenant", "remind", tenant.id, "off").returncode == 0
    cleared = await load_tenant(redis, tenant.id)
    assert cleared is not None and cleared.remind is None


def test_a_bad_default_is_refused_by_the_cli(redis_url: str) -> None:
    """The CLI names the bad value and the fix, like the API."""
    done = askgate_cli(redis_url, "tenant", "remind", "tnone", "every_s=5")
    assert done.returncode == 2
    assert "remind.every_s must be from 60 to 3600 seconds (got 5)" in done.stderr
