"""The docked panel in a real browser: picking, the stepper, Other…, Skip, collapse."""

from __future__ import annotations

import asyncio

import httpx
from playwright.async_api import Page, expect

from tests.support.asks import Tenant
from tests.support.web import MULTI_ASK, Shot, ask, wait_final


async def test_single_select_click_returns_exact_result(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant, shot: Shot
) -> None:
    """One tap on an option of a single-select ask is the agent's exact result."""
    q = await ask(app_client, tenant.headers)
    await page.goto(q["web_url"])
    panel = page.get_by_role("region", name="Your agent asks")
    await expect(panel).to_be_visible()
    await shot(page, "panel")
    waiter = asyncio.create_task(wait_final(app_client, tenant.headers, q["id"]))
    await panel.get_by_role("button", name="Staging").click()
    final = await waiter
    assert final["result"] == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}},
    }
    await expect(panel).to_be_hidden()
    await expect(page.locator(f'[data-qid="{q["id"]}"] .summary')).to_have_text(
        "Answered: Staging (Recommended)"
    )
    await shot(page, "answered")


async def test_recommended_option_is_shown_first(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The ` (Recommended)` option comes first, with a badge, whatever its declared place."""
    q = await ask(app_client, tenant.headers, questions=MULTI_ASK[:1])
    await page.goto(q["web_url"])
    first = page.locator("#panel .opt").first
    await expect(first).to_have_attribute("data-label", "Staging (Recommended)")
    await expect(first.locator(".badge")).to_have_text("Recommended")
    await expect(first).to_contain_text("Safe, reversible")


async def test_stepper_keeps_picks_and_submits_every_answer(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant, shot: Shot
) -> None:
    """Three questions: stepping back and forth keeps picks, multi-select and Other… count."""
    q = await ask(app_client, tenant.headers, questions=MULTI_ASK)
    await page.goto(q["web_url"])
    panel = page.get_by_role("region", name="Your agent asks")
    await expect(panel.locator(".step:visible")).to_have_text("1 of 3")
    await panel.get_by_role("button", name="Production").click()
    await panel.get_by_role("button", name="Next").click()

    await expect(panel.locator(".step:visible")).to_have_text("2 of 3")
    await panel.get_by_role("button", name="Unit tests").click()
    await panel.get_by_role("button", name="Load test").click()
    await panel.get_by_role("textbox", name="Other…").fill("Smoke test")
    await shot(page, "stepper")
    await panel.get_by_role("button", name="Next").click()

    await panel.get_by_role("textbox", name="Other…").fill("Only me")
    await panel.get_by_role("button", name="Back").click()
    await panel.get_by_role("button", name="Back").click()
    await expect(panel.get_by_role("button", name="Production")).to_have_attribute(
        "aria-pressed", "true"
    )
    waiter = asyncio.create_task(wait_final(app_client, tenant.headers, q["id"]))
    await panel.get_by_role("button", name="Submit").click()
    assert (await waiter)["result"] == {
        "status": "answered",
        "answers": {
            "answers": {
                "deploy_target": ["Production"],
                "checks": ["Unit tests", "Load test", "Smoke test"],
                "notify": ["Only me"],
            }
        },
    }


async def test_submit_points_out_the_missing_question(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Submit with a question unanswered shows that question and says so; nothing is sent."""
    q = await ask(app_client, tenant.headers, questions=MULTI_ASK[:2])
    await page.goto(q["web_url"])
    panel = page.get_by_role("region", name="Your agent asks")
    await panel.get_by_role("button", name="Production").click()
    await panel.get_by_role("button", name="Submit").click()
    await expect(panel.locator(".step:visible")).to_have_text("2 of 2")
    await expect(panel.get_by_role("alert")).to_have_text("Answer this question first.")
    r = await app_client.get(f"/v1/questions/{q['id']}", headers=tenant.headers)
    assert r.json()["status"] == "pending"


async def test_skip_ends_the_ask_as_skipped(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Skip gives the agent no_answer with reason skipped, and the timeline says Skipped."""
    q = await ask(app_client, tenant.headers, questions=MULTI_ASK)
    await page.goto(q["web_url"])
    waiter = asyncio.create_task(wait_final(app_client, tenant.headers, q["id"]))
    await page.get_by_role("button", name="Skip").click()
    final = await waiter
    assert (final["result"], final["reason"]) == ({"status": "no_answer"}, "skipped")
    await expect(page.locator(f'[data-qid="{q["id"]}"] .summary')).to_have_text("Skipped")


async def test_collapse_gives_the_composer_back_and_expand_restores(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant, shot: Shot
) -> None:
    """Collapse folds the panel into a question bar with the composer; one click reopens it."""
    q = await ask(app_client, tenant.headers, questions=MULTI_ASK)
    await page.goto(q["web_url"])
    panel = page.get_by_role("region", name="Your agent asks")
    composer = page.get_by_role("textbox", name="Type a reply…")
    await expect(composer).to_be_hidden()
    await panel.get_by_role("button", name="Production").click()
    await panel.get_by_role("button", name="Collapse").click()
    await expect(panel).to_be_hidden()
    await expect(composer).to_be_visible()
    bar = page.locator("#qbar")
    await expect(bar).to_contain_text("Where should I deploy this build?")
    await shot(page, "collapsed")
    await bar.click()
    await expect(panel).to_be_visible()
    await expect(panel.get_by_role("button", name="Production")).to_have_attribute(
        "aria-pressed", "true"
    )


async def test_composer_reply_answers_through_the_parser(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A plain-text "2" typed in the composer picks option 2, as on every channel."""
    q = await ask(app_client, tenant.headers)
    await page.goto(q["web_url"])
    await page.get_by_role("button", name="Collapse").click()
    waiter = asyncio.create_task(wait_final(app_client, tenant.headers, q["id"]))
    await page.get_by_role("textbox", name="Type a reply…").fill("2")
    await page.get_by_role("button", name="Send").click()
    assert (await waiter)["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}


async def test_composer_incomplete_reply_shows_the_correction(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A reply that leaves a question out gets the parser's correction; the ask stays open."""
    q = await ask(app_client, tenant.headers, questions=MULTI_ASK)
    await page.goto(q["web_url"])
    await page.get_by_role("button", name="Collapse").click()
    await page.get_by_role("textbox", name="Type a reply…").fill("deploy_target: 1")
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("alert").filter(has_text="Checks")).to_be_visible()
    r = await app_client.get(f"/v1/questions/{q['id']}", headers=tenant.headers)
    assert r.json()["status"] == "pending"
