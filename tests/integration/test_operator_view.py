"""The operator's view: a tenant's pending questions across sessions (the API, paged,
newest first) and the Control UI's tenant page behind a signed operator link or the
tenant's API key."""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from askgate.domain.signing import operator_link

from tests.support.asks import SECRET, Tenant, ask_body
from tests.support.cli import askgate_cli


async def asked(client: httpx.AsyncClient, tenant: Tenant, session: str, **extra: Any) -> str:
    r = await client.post("/v1/questions", json=ask_body(session, **extra), headers=tenant.headers)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def pending(client: httpx.AsyncClient, tenant: Tenant, **params: Any) -> dict[str, Any]:
    r = await client.get(
        "/v1/questions", params={"status": "pending", **params}, headers=tenant.headers
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_pending_across_sessions_newest_first_in_pages(
    app_client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    """Every page is newest first; the cursor walks them all; answered and other tenants'
    questions are not listed."""
    made = []
    for i in range(5):
        r = await app_client.post(
            "/v1/questions",
            headers=tenant.headers,
            json=ask_body(f"s{i}", targets=[{"channel": "web"}]),
        )
        made.append((r.json()["created_at"], r.json()["id"]))
    answered = made.pop(2)[1]
    await app_client.post(
        f"/v1/questions/{answered}/answer",
        headers=tenant.headers,
        json={"answers": {"deploy_target": ["Production"]}},
    )
    await asked(app_client, other_tenant, "s0", targets=[{"channel": "web"}])
    newest_first = [qid for _, qid in sorted(made, reverse=True)]  # ties: by id
    first = await pending(app_client, tenant, limit=2)
    assert [q["id"] for q in first["questions"]] == newest_first[:2]
    second = await pending(app_client, tenant, limit=2, cursor=first["next_cursor"])
    assert [q["id"] for q in second["questions"]] == newest_first[2:]
    assert second["next_cursor"] is None


async def test_the_list_carries_delivery_states(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Each listed question has its deliveries (where it was shown, and how far)."""
    await asked(app_client, tenant, "d", targets=[{"channel": "web"}])
    (q,) = (await pending(app_client, tenant))["questions"]
    assert q["deliveries"][0]["status"] == "delivered"


async def test_listing_without_session_needs_status_pending(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Without a session only the pending list is offered; a made-up cursor is a 422."""
    r = await app_client.get("/v1/questions", headers=tenant.headers)
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith("session is required, unless status=pending")
    r = await app_client.get(
        "/v1/questions", params={"status": "pending", "cursor": "x"}, headers=tenant.headers
    )
    assert r.status_code == 422 and "cursor must be the next_cursor" in r.text


def link_params(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


async def test_the_operator_page_lists_every_session(
    app_client: httpx.AsyncClient, web_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The signed link opens a page with each pending question, its session, age and
    deliveries."""
    await asked(app_client, tenant, "alpha", targets=[{"channel": "web"}])
    await asked(app_client, tenant, "beta", targets=[{"channel": "web"}], locale="tr")
    url = operator_link("http://web", SECRET, tenant.id, 3600)
    r = await web_client.get(urlsplit(url).path, params=link_params(url))
    assert r.status_code == 200
    assert "alpha" in r.text and "beta" in r.text
    assert r.text.count('class="op-entry"') == 2
    assert "web</span>:" in r.text and "shown" in r.text
    # The age counts from each ask (seconds here; how long depends on the machine's load).
    assert len(re.findall(r"asked \d+ s ago", r.text)) == 2


async def test_a_forged_or_expired_operator_link_is_refused(
    web_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Another tenant's signature, or an expired link, gets the refusal page."""
    forged = operator_link("http://web", "another-secret-" + "y" * 32, tenant.id, 3600)
    r = await web_client.get(f"/t/{tenant.id}", params=link_params(forged))
    assert r.status_code == 403
    params = link_params(operator_link("http://web", SECRET, tenant.id, 3600))
    params["exp"] = str(int(time.time()) - 1)
    r = await web_client.get("/api/operator/view", params={"tenant": tenant.id, **params})
    assert r.status_code == 403


async def test_the_api_key_opens_the_operator_view(
    app_client: httpx.AsyncClient,
    web_client: httpx.AsyncClient,
    tenant: Tenant,
    other_tenant: Tenant,
) -> None:
    """The tenant's own key reads its view; another tenant's key is refused."""
    await asked(app_client, tenant, "k", targets=[{"channel": "web"}])
    r = await web_client.get(
        "/api/operator/view", params={"tenant": tenant.id}, headers=tenant.headers
    )
    assert r.status_code == 200 and r.json()["count"] == 1
    r = await web_client.get(
        "/api/operator/view", params={"tenant": tenant.id}, headers=other_tenant.headers
    )
    assert r.status_code == 403


def test_the_cli_prints_a_working_operator_link(redis_url: str, tenant: Tenant) -> None:
    """`askgate tenant operator-link` signs with the secret the Control UI checks."""
    from askgate.domain.signing import verify_operator_link

    done = askgate_cli(
        redis_url,
        "tenant",
        "operator-link",
        tenant.id,
        ASKGATE_SECRET_KEY=SECRET,
        ASKGATE_WEB_BASE_URL="https://ui.example",
    )
    assert done.returncode == 0, done.stderr
    url = done.stdout.strip()
    assert url.startswith(f"https://ui.example/t/{tenant.id}?")
    params = link_params(url)
    assert verify_operator_link(SECRET, tenant.id, params["exp"], params["sig"])
