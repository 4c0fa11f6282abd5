"""Who sees a session page (signed, expiring links, one session each) and how it is
reached by keyboard and assistive technology."""

from __future__ import annotations

import time

import httpx
from askgate.domain.signing import session_link_sig
from playwright.async_api import Page, expect

from tests.support.asks import SECRET, Tenant
from tests.support.http import local_client
from tests.support.processes import WebProcess
from tests.support.web import MULTI_ASK, Shot, ask, wait_final

REFUSED = "This link is invalid or has expired. Ask the agent for a new one."


async def test_forged_link_is_refused_with_a_readable_page(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant, shot: Shot
) -> None:
    """A link whose signature was tampered with gets a 403 page that says why."""
    q = await ask(app_client, tenant.headers)
    forged = q["web_url"][:-4] + "0000"
    response = await page.goto(forged)
    assert response is not None and response.status == 403
    await expect(page.get_by_role("alert")).to_have_text(REFUSED)
    await expect(page.get_by_role("button")).to_have_count(0)
    await shot(page, "link-refused")


async def test_expired_link_is_refused(page: Page, tenant: Tenant, web_server: WebProcess) -> None:
    """A correctly signed link past its expiry is refused."""
    exp = int(time.time()) - 5
    sig = session_link_sig(SECRET, tenant.id, "s1", exp)
    response = await page.goto(f"{web_server.url}/s/{tenant.id}/s1?exp={exp}&sig={sig}")
    assert response is not None and response.status == 403
    await expect(page.get_by_role("alert")).to_have_text(REFUSED)


async def test_refusal_speaks_the_browsers_language(
    browser_page_tr: Page, web_server: WebProcess
) -> None:
    """With no ask to take the locale from, the refusal follows Accept-Language."""
    await browser_page_tr.goto(f"{web_server.url}/s/acme/s1?exp=1&sig=x")
    await expect(browser_page_tr.get_by_role("alert")).to_contain_text("Bu bağlantı geçersiz")


async def test_a_link_opens_its_own_session_only(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Session A's link shows A's question, and refuses when pointed at session B."""
    a = await ask(app_client, tenant.headers, session="alpha")
    b = await ask(app_client, tenant.headers, session="bravo", questions=[{**MULTI_ASK[2]}])
    await page.goto(a["web_url"])
    await expect(page.locator("#timeline .entry")).to_have_count(1)
    await expect(page.locator(f'#timeline [data-qid="{a["id"]}"]')).to_be_visible()
    await expect(page.get_by_text(b["questions"][0]["question"])).to_have_count(0)
    response = await page.goto(a["web_url"].replace("/alpha?", "/bravo?"))
    assert response is not None and response.status == 403


async def test_another_sessions_question_cannot_be_answered_through_a_link(
    app_client: httpx.AsyncClient, tenant: Tenant, web_server: WebProcess
) -> None:
    """Answering B's question with A's link is a 404 and B stays pending."""
    a = await ask(app_client, tenant.headers, session="alpha")
    b = await ask(app_client, tenant.headers, session="bravo")
    query = a["web_url"].split("?", 1)[1]
    async with local_client(web_server.url) as web:
        r = await web.post(
            f"/api/answer?tenant={tenant.id}&session=alpha&{query}",
            json={"question_id": b["id"], "answers": {"deploy_target": ["Production"]}},
        )
    assert r.status_code == 404
    r = await app_client.get(f"/v1/questions/{b['id']}", headers=tenant.headers)
    assert r.json()["status"] == "pending"


async def test_keyboard_alone_answers_in_focus_order(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Tab reaches Collapse, then the first option; Enter on it answers."""
    q = await ask(app_client, tenant.headers)
    await page.goto(q["web_url"])
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Collapse")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Staging")).to_be_focused()
    await page.keyboard.press("Enter")
    final = await wait_final(app_client, tenant.headers, q["id"])
    assert final["result"]["answers"]["answers"] == {"deploy_target": ["Staging (Recommended)"]}


async def test_escape_collapses_and_focuses_the_composer(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Escape inside the panel folds it and puts the focus in the composer."""
    q = await ask(app_client, tenant.headers)
    await page.goto(q["web_url"])
    await page.get_by_role("button", name="Production").focus()
    await page.keyboard.press("Escape")
    await expect(page.get_by_role("textbox", name="Type a reply…")).to_be_focused()
    await expect(page.get_by_role("button", name="Collapse")).to_be_hidden()


async def test_controls_have_roles_and_names(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Every control of the panel is found by its role and its visible name."""
    q = await ask(app_client, tenant.headers, questions=MULTI_ASK)
    await page.goto(q["web_url"])
    panel = page.get_by_role("region", name="Your agent asks")
    deploy = panel.get_by_role("group", name="Where should I deploy this build?")
    await expect(deploy).to_be_visible()
    await expect(panel.get_by_role("textbox", name="Other…")).to_be_visible()
    await expect(panel.get_by_role("timer", name="Time left")).to_be_visible()
    for name in ("Collapse", "Next", "Submit", "Skip"):
        await expect(panel.get_by_role("button", name=name, exact=True)).to_be_visible()
    await expect(page.get_by_role("list", name="Questions from your agent")).to_be_visible()
