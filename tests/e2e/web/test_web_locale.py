"""The page in the ask's language (tr, hi) and on a phone-sized screen."""

from __future__ import annotations

import asyncio

import httpx
from playwright.async_api import Page, expect

from tests.support.asks import Tenant
from tests.support.web import MULTI_ASK, Shot, ask, wait_final


async def test_turkish_ask_renders_every_word_in_turkish(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant, shot: Shot
) -> None:
    """A tr ask shows Turkish controls, and its summary is Turkish too."""
    q = await ask(app_client, tenant.headers, locale="tr")
    await page.goto(q["web_url"])
    await expect(page.locator("html")).to_have_attribute("lang", "tr")
    panel = page.get_by_role("region", name="Ajanınız soruyor")
    for name in ("Atla", "Gönder", "Küçült"):
        await expect(panel.get_by_role("button", name=name, exact=True)).to_be_visible()
    await expect(panel.get_by_role("textbox", name="Diğer…")).to_be_visible()
    await expect(panel.get_by_role("timer", name="Kalan süre")).to_be_visible()
    await expect(panel.locator(".badge")).to_have_text("Önerilen")
    await shot(page, "panel-tr")
    await panel.get_by_role("button", name="Production").click()
    await expect(page.locator(f'[data-qid="{q["id"]}"] .summary')).to_have_text(
        "Cevaplandı: Production"
    )


async def test_hindi_ask_renders_every_word_in_hindi(
    page: Page, app_client: httpx.AsyncClient, tenant: Tenant, shot: Shot
) -> None:
    """A hi ask shows Hindi controls and a Hindi stepper; Skip reads छोड़ें."""
    q = await ask(app_client, tenant.headers, locale="hi", questions=MULTI_ASK)
    await page.goto(q["web_url"])
    await expect(page.locator("html")).to_have_attribute("lang", "hi")
    panel = page.get_by_role("region", name="आपका एजेंट पूछ रहा है")
    await expect(panel.locator(".step:visible")).to_have_text("3 में से 1")
    for name in ("छोड़ें", "आगे", "भेजें", "छोटा करें"):
        await expect(panel.get_by_role("button", name=name, exact=True)).to_be_visible()
    await expect(panel.get_by_role("textbox", name="अन्य…")).to_be_visible()
    await shot(page, "panel-hi")
    await panel.get_by_role("button", name="छोड़ें").click()
    await expect(page.locator(f'[data-qid="{q["id"]}"] .summary')).to_have_text("छोड़ दिया गया")


async def test_phone_screen_fits_and_answers_by_touch(
    phone: Page, app_client: httpx.AsyncClient, tenant: Tenant, shot: Shot
) -> None:
    """On a 375px touch screen nothing scrolls sideways, the controls are on screen, and
    taps answer a multi-question ask."""
    q = await ask(app_client, tenant.headers, questions=MULTI_ASK[:2])
    await phone.goto(q["web_url"])
    panel = phone.get_by_role("region", name="Your agent asks")
    await expect(panel).to_be_visible()
    assert await phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    for name in ("Skip", "Submit", "Next", "Collapse"):
        await expect(panel.get_by_role("button", name=name, exact=True)).to_be_in_viewport()
    await shot(phone, "phone")
    await panel.get_by_role("button", name="Production").tap()
    await panel.get_by_role("button", name="Next").tap()
    await panel.get_by_role("button", name="Lint").tap()
    waiter = asyncio.create_task(wait_final(app_client, tenant.headers, q["id"]))
    await panel.get_by_role("button", name="Submit").tap()
    assert (await waiter)["result"]["answers"]["answers"] == {
        "deploy_target": ["Production"],
        "checks": ["Lint"],
    }
