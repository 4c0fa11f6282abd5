"""Fixtures for the web Control UI tests: the web service as real processes and one
headless Debian Chromium for the whole session, driven by Playwright (the browser's
settings and the helpers the tests share: tests/support/web.py).

The browser is Debian's (`make browser` installs it); Playwright never downloads one.
Set ASKGATE_SCREENSHOTS=docs/screenshots to refresh the README's screenshots.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from askgate.settings import Settings
from playwright.async_api import Browser, Page, async_playwright

from tests.support.asks import make_settings
from tests.support.processes import WebProcess
from tests.support.web import (
    CHROMIUM,
    CHROMIUM_ARGS,
    DESKTOP,
    PHONE,
    Shot,
    open_page,
)


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


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A fresh desktop-sized browser context and page."""
    async for p in open_page(browser, viewport=DESKTOP, locale="en-US"):
        yield p


@pytest.fixture
async def browser_page_tr(browser: Browser) -> AsyncIterator[Page]:
    """A desktop page whose browser asks for Turkish (Accept-Language: tr)."""
    async for p in open_page(browser, viewport=DESKTOP, locale="tr-TR"):
        yield p


@pytest.fixture
async def phone(browser: Browser) -> AsyncIterator[Page]:
    """A fresh phone-sized, touch browser context and page."""
    async for p in open_page(
        browser,
        viewport=PHONE,
        is_mobile=True,
        has_touch=True,
        device_scale_factor=1,
        locale="en-US",
    ):
        yield p


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
