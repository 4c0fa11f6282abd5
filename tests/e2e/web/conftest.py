"""Fixtures for the web Control UI tests: the web service as real processes and one
headless Debian Chromium for the whole session, driven by Playwright.

The browser is Debian's (`make browser` installs it); Playwright never downloads one.
Set ASKGATE_SCREENSHOTS=docs/screenshots to refresh the README's screenshots.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from askgate.settings import Settings
from playwright.async_api import Browser, Page, ViewportSize, async_playwright

from tests.support.asks import make_settings
from tests.support.processes import WebProcess

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP: ViewportSize = {"width": 900, "height": 640}
PHONE: ViewportSize = {"width": 375, "height": 667}


@pytest.fixture(scope="session")
def web_server(shared_redis_url: str) -> Iterator[WebProcess]:
    """One web replica for the session; per-test Redis flushes do not disturb it."""
    web = WebProcess(shared_redis_url).start()
    yield web
    web.stop()


@pytest.fixture
def settings(redis_url: str, web_server: WebProcess) -> Settings:
    """The API's settings, with ask links pointing at the web replica."""
    return make_settings(redis_url, web_base_url=web_server.url)


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run `make browser` (Debian's chromium)")
    async with async_playwright() as pw:
        b = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        await b.close()


async def _open(browser: Browser, **context: Any) -> AsyncIterator[Page]:
    ctx = await browser.new_context(**context)
    ctx.set_default_timeout(10_000)
    page = await ctx.new_page()
    try:
        yield page
    finally:
        await ctx.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A fresh desktop-sized browser context and page."""
    async for p in _open(browser, viewport=DESKTOP, locale="en-US"):
        yield p


@pytest.fixture
async def browser_page_tr(browser: Browser) -> AsyncIterator[Page]:
    """A desktop page whose browser asks for Turkish (Accept-Language: tr)."""
    async for p in _open(browser, viewport=DESKTOP, locale="tr-TR"):
        yield p


@pytest.fixture
async def phone(browser: Browser) -> AsyncIterator[Page]:
    """A fresh phone-sized, touch browser context and page."""
    async for p in _open(
        browser,
        viewport=PHONE,
        is_mobile=True,
        has_touch=True,
        device_scale_factor=1,
        locale="en-US",
    ):
        yield p


Shot = Callable[[Page, str], Awaitable[None]]


@pytest.fixture
def shot() -> Shot:
    """Save a screenshot for the README when ASKGATE_SCREENSHOTS names a folder."""
    folder = os.environ.get("ASKGATE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)

    async def take(page: Page, name: str) -> None:
        if folder:
            await page.screenshot(path=str(Path(folder) / f"{name}.png"))

    return take


# -- helpers the tests share ---------------------------------------------------------------

MULTI_ASK: list[dict[str, Any]] = [
    {
        "id": "deploy_target",
        "header": "Deploy",
        "question": "Where should I deploy this build?",
        "options": [
            {"label": "Production"},
            {"label": "Staging (Recommended)", "description": "Safe, reversible"},
        ],
    },
    {
        "id": "checks",
        "header": "Checks",
        "question": "Which checks should run first?",
        "multiSelect": True,
        "options": [
            {"label": "Unit tests", "description": "Fast"},
            {"label": "Lint"},
            {"label": "Load test", "description": "Slow"},
        ],
    },
    {
        "id": "notify",
        "header": "Notify",
        "question": "Whom should I tell when it is done?",
        "options": [{"label": "The team channel"}, {"label": "Nobody"}],
    },
]


async def ask(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    """Ask through the real API; returns the question resource (with its web_url)."""
    from tests.support.asks import ask_body

    r = await client.post("/v1/questions", json=ask_body(**body), headers=headers)
    assert r.status_code == 201, r.text
    resource: dict[str, Any] = r.json()
    return resource


async def wait_final(
    client: httpx.AsyncClient, headers: dict[str, str], qid: str
) -> dict[str, Any]:
    """The agent's long-poll: the resource once final (fails if still pending)."""
    r = await client.get(f"/v1/questions/{qid}/wait", params={"timeout_s": 15}, headers=headers)
    assert r.status_code == 200, r.text
    resource: dict[str, Any] = r.json()
    assert resource["status"] != "pending", resource
    return resource
