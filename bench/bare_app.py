"""The baselines: askgate's Redis work for an ask and nothing else, in two frames.

`POST /ask` reads the body as a plain dict (no auth, no validation; the tenant is
BARE_TENANT) and runs the same tenant RESERVE and CREATE scripts with the same keys and
arguments as the API's `Store.create` (`bench.sample.AskTemplate`: recorded from
`Store.create` itself the first time a question list is seen; per request only the
session, question id, shard tag and times differ), then answers a small JSON.

- BARE_KIND=fastapi: one FastAPI route (routing, `Request`, a `Response`).
- BARE_KIND=asgi: a plain ASGI callable, the frame askgate's own ask is served in
  (`askgate_api.fastpath`): the leanest Python server code can be.

`GET /naive-wait/{id}` (FastAPI only) is the naive long-poll: it just sleeps
(`await asyncio.sleep(timeout_s)`). `GET /count` says how many of those are waiting.

Run: `python -m bench.bare_app` with REDIS_URL, BARE_PORT, BARE_TENANT and BARE_KIND in
the environment. Same uvicorn options as `python -m askgate_api`: one worker, uvloop,
httptools, no access log, start-up objects frozen out of the GC.
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import uvicorn
from askgate.settings import Settings
from askgate.store.conn import connect
from askgate.store.store import Store
from fastapi import FastAPI, Request
from fastapi.responses import Response

from bench.sample import AskTemplate

TIMEOUT_S = 900
BIG = 100_000_000


class Work:
    """The Redis work of one ask, shared by both frames."""

    def __init__(self, redis_url: str, tenant: str) -> None:
        self.redis_url = redis_url
        self.tenant = tenant
        self.templates: dict[bytes, AskTemplate] = {}
        self.store: Store | None = None
        self.waiting = 0

    async def start(self) -> None:
        redis = connect(self.redis_url, max_connections=256, connect_timeout_s=1.0)
        self.store = Store(
            redis,
            Settings(
                redis_url=self.redis_url,
                tenant_max_pending=BIG,
                tenant_asks_per_s=BIG,
                timeout_default_s=TIMEOUT_S,
            ),
        )

    async def stop(self) -> None:
        if self.store is not None:
            await self.store.redis.aclose()

    async def ask(self, raw: bytes) -> bytes:
        body: dict[str, Any] = orjson.loads(raw)
        store = self.store
        assert store is not None
        key = orjson.dumps(body["questions"])
        tmpl = self.templates.get(key)
        if tmpl is None:
            tmpl = self.templates[key] = await AskTemplate.record(
                store,
                self.tenant,
                {"questions": body["questions"], "session": "x", "timeoutSeconds": TIMEOUT_S},
            )
        qid, calls = tmpl.calls(body["session"])
        scripts = {"reserve": store._reserve, "create": store._create}
        for kind, ks, args in calls:
            await scripts[kind](keys=ks, args=args)
        return orjson.dumps({"id": qid, "status": "pending"})


def fastapi_app(work: Work) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await work.start()
        try:
            yield
        finally:
            await work.stop()

    app = FastAPI(lifespan=lifespan)

    @app.post("/ask")
    async def ask(request: Request) -> Response:
        return Response(await work.ask(await request.body()), 201, media_type="application/json")

    @app.get("/naive-wait/{question_id}")
    async def naive_wait(question_id: str, timeout_s: float = 30) -> Response:
        work.waiting += 1
        try:
            await asyncio.sleep(min(timeout_s, 60))
        finally:
            work.waiting -= 1
        return Response(
            orjson.dumps({"id": question_id, "status": "pending"}), media_type="application/json"
        )

    @app.get("/count")
    async def count() -> Response:
        return Response(orjson.dumps({"waiting": work.waiting}), media_type="application/json")

    return app


Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def asgi_app(work: Work) -> Callable[[dict[str, Any], Receive, Send], Awaitable[None]]:
    async def respond(send: Send, status: int, body: bytes) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await work.start()
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await work.stop()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["method"] == "POST" and scope["path"] == "/ask":
            chunks = []
            while True:
                message = await receive()
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    break
            return await respond(send, 201, await work.ask(b"".join(chunks)))
        if scope["path"] == "/count":
            return await respond(send, 200, b'{"waiting":0}')
        await respond(send, 404, b"{}")

    return app


def main() -> None:
    work = Work(os.environ["REDIS_URL"], os.environ.get("BARE_TENANT", "tbare"))
    kind = os.environ.get("BARE_KIND", "fastapi")
    app: Any = fastapi_app(work) if kind == "fastapi" else asgi_app(work)
    gc.collect()
    gc.freeze()  # as askgate_api.__main__ does
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(os.environ["BARE_PORT"]),
        access_log=False,
        log_level="warning",
        loop="uvloop",
        http="httptools",
        timeout_graceful_shutdown=1,
    )


if __name__ == "__main__":
    main()
