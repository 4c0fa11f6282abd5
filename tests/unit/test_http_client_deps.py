"""The HTTP clients askgate uses (httpx for the Discord worker, webhooks, the text channel
and the Python client agents install) find their event loop without a failed import on
every request."""

from __future__ import annotations

import asyncio
import sys

from httpcore._synchronization import current_async_library


def test_httpcore_names_the_event_loop_through_an_installed_sniffio() -> None:
    """httpcore imports sniffio for every lock it sets up (each request); with sniffio
    missing that is a failed import, a search of sys.path, every time (measured 0.3-1 ms
    a request). askgate and askgate-client depend on it, so it is there."""

    async def which() -> str:
        return current_async_library()

    assert asyncio.run(which()) == "asyncio"
    assert "sniffio" in sys.modules
