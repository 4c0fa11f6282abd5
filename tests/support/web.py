"""What the web Control UI tests share: Debian's Chromium and how it is started, the page
sizes, a browser page's set-up, the three-question ask, and asking and waiting through
the API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
from playwright.async_api import Browser, Page, ViewportSize

CHROMIUM = "/usr/bin/chromium"
# Playwright's own `--disable-features` list (its launch arguments, Playwright 1.65):
# Chromium takes the last `--disable-features` it is given, so a list of ours replaces
# Playwright's and has to repeat it.
PLAYWRIGHT_DISABLED_FEATURES = [
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
]
# Debian's Chromium 15x renders its omnibox popups as WebUI and starts them with every
# window, headless too: a renderer process more for each browser context a test opens.
# Without them the web tests took 20 CPU-seconds instead of 31-35 (13.2 s instead of
# 16.7-18.8 s for tests/e2e/web alone, 2026-12-01).
NO_BROWSER_WEBUI = ["WebUIOmniboxPopup", "WebUIOmniboxAimPopup"]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-features=" + ",".join(PLAYWRIGHT_DISABLED_FEATURES + NO_BROWSER_WEBUI),
]
DESKTOP: ViewportSize = {"width": 900, "height": 640}
PHONE: ViewportSize = {"width": 375, "height": 667}


async def open_page(browser: Browser, **context: Any) -> AsyncIterator[Page]:
    """A page in a browser context of its own (closed after), with a 10 s default timeout."""
    ctx = await browser.new_context(**context)
    ctx.set_default_timeout(10_000)
    page = await ctx.new_page()
    try:
        yield page
    finally:
        await ctx.close()


Shot = Callable[[Page, str], Awaitable[None]]

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
