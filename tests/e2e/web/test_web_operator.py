"""The operator page in a real browser: a tenant's pending questions across sessions,
live, with where each was delivered."""

from __future__ import annotations

import httpx
from askgate.domain.signing import operator_link
from playwright.async_api import Page, expect

from tests.support.asks import SECRET, Tenant
from tests.support.processes import WebProcess
from tests.support.web import ask


async def test_questions_come_and_go_live(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant, web_server: WebProcess
) -> None:
    """Asks in two sessions appear without a reload, newest first; an answered one goes."""
    await page.goto(operator_link(web_server.url, SECRET, tenant.id, 3600))
    await expect(page.get_by_text("No question is waiting for an answer.")).to_be_visible()
    first = await ask(app_client, tenant.headers, session="alpha")
    await ask(app_client, tenant.headers, session="beta", targets=[{"channel": "web"}])
    entries = page.locator(".op-entry")
    await expect(entries).to_have_count(2)
    await expect(entries.first.locator(".op-session")).to_have_text("beta")
    await expect(entries.first.locator(".op-delivery")).to_have_text("web: shown")
    await expect(page.locator("#count")).to_have_text("2")
    await app_client.post(
        f"/v1/questions/{first['id']}/answer",
        headers=tenant.headers,
        json={"answers": {"deploy_target": ["Production"]}},
    )
    await expect(entries).to_have_count(1)
    await expect(entries.first.locator(".op-session")).to_have_text("beta")


async def test_a_forged_operator_link_is_refused(
    page: Page, tenant: Tenant, web_server: WebProcess
) -> None:
    """A link signed with another key shows the refusal, not the tenant's questions."""
    forged = operator_link(web_server.url, "not-the-key-" + "z" * 32, tenant.id, 3600)
    response = await page.goto(forged)
    assert response is not None and response.status == 403
    await expect(page.get_by_role("alert")).to_contain_text("invalid or has expired")
