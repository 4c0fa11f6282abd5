"""Live updates without polling: questions appear and close on the open page as they
happen anywhere, a reload restores what is pending, late answers change nothing."""

from __future__ import annotations

import re

import httpx
import pytest
from askgate.domain.signing import session_link
from askgate.store import keys
from playwright.async_api import Browser, Page, expect

from tests.support.asks import SECRET, Tenant
from tests.support.processes import WebProcess
from tests.support.web import DESKTOP, MULTI_ASK, ask


async def test_new_question_appears_on_an_open_page(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant, web_server: WebProcess
) -> None:
    """A page opened before the ask shows the question as soon as it is asked."""
    await page.goto(session_link(web_server.url, SECRET, tenant.id, "s1", 3600))
    await expect(page.get_by_text("No questions yet.")).to_be_visible()
    await ask(app_client, tenant.headers)
    await expect(page.get_by_role("region", name="Your agent asks")).to_be_visible()
    await expect(page.get_by_role("button", name="Staging")).to_be_visible()


async def test_answer_on_the_api_closes_the_panel_with_its_summary(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """An answer from another channel closes the open panel and shows "Answered: …"."""
    q = await ask(app_client, tenant.headers)
    await page.goto(q["web_url"])
    panel = page.get_by_role("region", name="Your agent asks")
    await expect(panel).to_be_visible()
    r = await app_client.post(
        f"/v1/questions/{q['id']}/answer",
        headers=tenant.headers,
        json={"answers": {"deploy_target": ["Production"]}},
    )
    assert r.status_code == 200, r.text
    await expect(panel).to_be_hidden()
    await expect(page.locator(f'[data-qid="{q["id"]}"] .summary')).to_have_text(
        "Answered: Production"
    )
    await expect(page.get_by_role("status")).to_have_text("Answered: Production")


@pytest.mark.parametrize(
    ("how", "shown"),
    [("timeout", "Expired"), ("cancel", "Cancelled"), ("abort", "Cancelled")],
)
async def test_question_ending_elsewhere_closes_the_panel(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant, how: str, shown: str
) -> None:
    """A timeout, a cancel or a run abort closes the open panel with its summary."""
    q = await ask(app_client, tenant.headers, run_id="run-1")
    await page.goto(q["web_url"])
    panel = page.get_by_role("region", name="Your agent asks")
    await expect(panel).to_be_visible()
    if how == "timeout":
        store = app_client.app.state.store  # type: ignore[attr-defined]
        await store.sweep_shard(keys.shard_of(q["id"]), now=2**42)
    elif how == "cancel":
        r = await app_client.post(f"/v1/questions/{q['id']}/cancel", headers=tenant.headers)
        assert r.status_code == 200, r.text
    else:
        r = await app_client.post("/v1/runs/run-1/abort", headers=tenant.headers)
        assert r.json()["ended"] == [q["id"]]
    await expect(panel).to_be_hidden()
    await expect(page.locator(f'[data-qid="{q["id"]}"] .summary')).to_have_text(shown)


async def test_reload_restores_the_pending_question_and_picks(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """After a reload the pending question is back, on the same step, with what was picked."""
    q = await ask(app_client, tenant.headers, questions=MULTI_ASK)
    await page.goto(q["web_url"])
    panel = page.get_by_role("region", name="Your agent asks")
    await panel.get_by_role("button", name="Production").click()
    await panel.get_by_role("button", name="Next").click()
    await panel.get_by_role("button", name="Lint").click()
    await page.reload()
    await expect(panel.locator(".step:visible")).to_have_text("2 of 3")
    await expect(panel.get_by_role("button", name="Lint")).to_have_attribute("aria-pressed", "true")
    await expect(panel.locator(".clock").first).to_have_text(re.compile(r"^1[45]:\d\d$"))


async def test_late_answer_after_the_end_changes_nothing(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A tap on a question that already ended says so, and the first answer stands."""
    q = await ask(app_client, tenant.headers)
    # No event stream: the page cannot learn that the question ended before the tap.
    await page.route("**/api/events?*", lambda route: route.abort())
    await page.goto(q["web_url"])
    await app_client.post(
        f"/v1/questions/{q['id']}/answer",
        headers=tenant.headers,
        json={"answers": {"deploy_target": ["Production"]}},
    )
    await page.get_by_role("button", name="Staging").click()
    await expect(page.locator("#alert")).to_have_text("This question was already answered.")
    await expect(page.get_by_role("region", name="Your agent asks")).to_be_hidden()
    r = await app_client.get(f"/v1/questions/{q['id']}", headers=tenant.headers)
    assert r.json()["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}


async def test_every_replica_tells_its_pages(
    browser: Browser,
    page: Page,
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    redis_url: str,
    web_server: WebProcess,
) -> None:
    """Pages on two web replicas of one session both close when the question is answered."""
    second = WebProcess(redis_url).start()
    other = await (await browser.new_context(viewport=DESKTOP)).new_page()
    try:
        q = await ask(app_client, tenant.headers)
        await page.goto(q["web_url"])
        await other.goto(q["web_url"].replace(web_server.url, second.url))
        for p in (page, other):
            await expect(p.get_by_role("region", name="Your agent asks")).to_be_visible()
        await other.get_by_role("button", name="Production").click()
        for p in (page, other):
            await expect(p.get_by_role("region", name="Your agent asks")).to_be_hidden()
            await expect(p.locator(f'[data-qid="{q["id"]}"] .summary')).to_have_text(
                "Answered: Production"
            )
    finally:
        await other.context.close()
        second.stop()
