"""POST answer and reply, served as plain ASGI: the same auth, body rules and errors as
every endpoint."""

from __future__ import annotations

import httpx

from tests.support.asks import Tenant, ask_body


async def _ask(client: httpx.AsyncClient, tenant: Tenant, session: str) -> str:
    r = await client.post("/v1/questions", json=ask_body(session=session), headers=tenant.headers)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def test_answer_and_reply_bodies_are_read_like_every_endpoint(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """answer and reply refuse a missing body, a non-JSON body, bad JSON and a bad shape
    with the same 422s as the other endpoints, and change nothing."""
    qid = await _ask(app_client, tenant, "wb1")
    h = tenant.headers
    for kind in ("answer", "reply"):
        url = f"/v1/questions/{qid}/{kind}"
        empty = await app_client.post(url, headers=h)
        assert empty.status_code == 422 and empty.json()["error"]["message"] == "body is required"
        text = await app_client.post(url, content=b"1", headers={**h, "content-type": "text/plain"})
        assert text.json()["error"]["message"] == "body must be an object"
        bad = await app_client.post(
            url, content=b"{", headers={**h, "content-type": "application/json"}
        )
        assert bad.status_code == 422 and "body is not valid JSON" in bad.json()["error"]["message"]
        shape = await app_client.post(url, json={"nope": 1}, headers=h)
        assert shape.status_code == 422 and "nope is not a known field" in shape.text
    r = await app_client.get(f"/v1/questions/{qid}", headers=h)
    assert r.json()["status"] == "pending"


async def test_an_answer_without_a_key_is_401_and_to_another_tenant_404(
    app_client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    """answer needs the tenant's key, and another tenant's question is not found."""
    qid = await _ask(app_client, tenant, "wb2")
    body = {"answers": {"deploy_target": ["Production"]}}
    r = await app_client.post(f"/v1/questions/{qid}/answer", json=body)
    assert r.status_code == 401
    r = await app_client.post(
        f"/v1/questions/{qid}/answer", json=body, headers=other_tenant.headers
    )
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = await app_client.post(f"/v1/questions/{qid}/answer", json=body, headers=tenant.headers)
    assert r.status_code == 200 and r.json()["status"] == "answered"
    assert r.json()["responder"] == {"channel": "api", "user_id": None, "name": None}
