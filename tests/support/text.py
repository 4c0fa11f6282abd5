"""What the plain-text channel's tests share: the `text_worker` fixture's starter
(tests/integration/conftest.py) and the address range the local receivers listen on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

# `await text_worker(**settings)`: the worker's `serve` runs, live, until the test ends.
StartWorker = Callable[..., Awaitable[None]]
# The local receivers listen on 127.0.0.1, which the outbound policy refuses unless opened.
LOCAL = "127.0.0.0/8"
