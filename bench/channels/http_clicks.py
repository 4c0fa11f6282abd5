"""What the Slack and Discord fakes share: their platform calls the worker (a signed
click), so the human's answer is an HTTP POST to the worker, sent without waiting for
it, and the fake says it is ready once the worker's HTTP server answers /healthz.

At most CONNECTIONS clicks are in flight; the rest wait their turn here. The clicks go
out through aiohttp (the fakes' own server library): with httpx, whose pool (httpcore)
checks every kept connection on each request and matches every queued request against
every connection each time one frees, the clicker took three quarters of the fake's CPU
at 200 asks/s (py-spy), and on 2 cores the fake's work is taken from the worker's."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from typing import Any

import aiohttp

from bench.channels.base import Hooks, Worker

CONNECTIONS = 64
# A click that reaches no worker, or is cut off, is tried again (a person taps again).
_FAILED = (aiohttp.ClientError, asyncio.TimeoutError, OSError)


class Clicker:
    def __init__(self, hooks: Hooks, worker: Worker) -> None:
        self.hooks = hooks
        self.worker = worker
        self.http: aiohttp.ClientSession | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._turns = asyncio.Semaphore(CONNECTIONS)

    def start(self) -> None:
        self.http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=CONNECTIONS),
            timeout=aiohttp.ClientTimeout(total=30),
        )
        self._spawn(self._wait_ready())

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.http is not None:
            await self.http.close()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _wait_ready(self) -> None:
        assert self.http is not None
        while True:
            with contextlib.suppress(*_FAILED):
                async with self.http.get(f"http://127.0.0.1:{self.worker.port}/healthz") as r:
                    if r.status == 200:
                        self.hooks.ready()
                        return
            await asyncio.sleep(0.1)

    def click(
        self, conv: str, path: str, build: Callable[[], tuple[bytes, dict[str, str]]]
    ) -> None:
        """POST a signed body to the worker's `path` (its tenant filled in), telling the
        hooks when the first try went out (its turn among CONNECTIONS taken: a click
        waiting here is the fake's backlog, not the worker's). A click that fails is
        clicked again, as a person would."""
        body, headers = build()
        url = f"http://127.0.0.1:{self.worker.port}{path.format(tenant=self.worker.tenant)}"

        async def post() -> None:
            assert self.http is not None
            for attempt in range(3):
                with contextlib.suppress(*_FAILED):
                    async with self._turns:
                        if attempt == 0:
                            self.hooks.answered(conv, time.monotonic())
                        async with self.http.post(url, data=body, headers=headers) as r:
                            await r.read()
                            if r.status == 200:
                                return
                await asyncio.sleep(0.5)

        self._spawn(post())
