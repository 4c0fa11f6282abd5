"""The one way tests wait for something another task or process makes true."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

DEFAULT_TIMEOUT_S = 10.0


async def eventually(
    check: Callable[[], Awaitable[Any] | Any], what: str, timeout_s: float = DEFAULT_TIMEOUT_S
) -> Any:
    """Poll `check` until it returns something truthy and return that; fail naming `what`
    after `timeout_s` (a bound on a condition, not a timing assertion)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")
        await asyncio.sleep(0.01)
