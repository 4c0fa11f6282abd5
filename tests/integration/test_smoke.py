"""The ask → answer → result round trip through the real API and Redis."""

from __future__ import annotations

import httpx

from tests.support.asks import Tenant, ask_body


async def test_ask_answer_result_roundtrip(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """An answered ask yields exactly the contract's result on the resource and result key."""
    r = await app_client.post("/v1/questions", json=ask_body(), headers=tenant.headers)
    assert r.status_code == 201, r.text
    q = r.json()
    assert q["status"] == "pending" and q["result"] is None
    r = await app_client.post(
        f"/v1/questions/{q['id']}/answer",
        json={"answers": {"deploy_target": ["staging (recommended)"]}},
        headers=tenant.headers,
    )
    assert r.status_code == 200, r.text
    assert r.json()["result"] == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}},
    }
    redis = app_client.app.state.redis  # type: ignore[attr-defined]
    raw = await redis.get(q["result_key"])
    assert raw == (
        b'{"status":"answered","answers":{"answers":{"deploy_target":["Staging (Recommended)"]}}}'
    )
