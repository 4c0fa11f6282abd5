"""The Control UI's answers after the end: kept as late, the page is told so."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
from askgate.settings import Settings
from askgate.store.store import Store
from askgate_sweeper.__main__ import sweep_once
from redis.asyncio import Redis

from tests.support.asks import Tenant, ask_body


async def test_a_page_answer_after_the_timeout_is_kept_as_late(
    app_client: httpx.AsyncClient,
    web_client: httpx.AsyncClient,
    tenant: Tenant,
    redis: Redis,
    settings: Settings,
) -> None:
    """409 with the late message; the resource has it, through the web target."""
    q = (
        await app_client.post(
            "/v1/questions", json=ask_body(targets=[{"channel": "web"}]), headers=tenant.headers
        )
    ).json()
    rec = await Store(redis, settings).load(q["id"])
    assert rec is not None
    await sweep_once(Store(redis, settings), rec.expires_ms + 1)
    link = urlsplit(q["web_url"])
    params = {k: v[0] for k, v in parse_qs(link.query).items()}
    params.update(tenant=tenant.id, session="s1")
    r = await web_client.post(
        "/api/answer",
        params=params,
        json={"question_id": q["id"], "answers": {"deploy_target": ["Production"]}},
    )
    assert r.status_code == 409
    assert r.json()["message"] == (
        "This question has expired; your answer was recorded but the agent went on without it."
    )
    res = (await app_client.get(f"/v1/questions/{q['id']}", headers=tenant.headers)).json()
    assert res["late_answer"]["responder"] == {"channel": "web"}
    assert res["late_answer"]["target"] == 0
