"""The baseline for the benchmarks: a bare FastAPI app doing askgate's Redis work only.

`POST /ask` reads the body as a plain dict (no auth, no validation; the tenant is
BARE_TENANT) and runs the same
tenant RESERVE script and the same CREATE script with the same keys and arguments that
`askgate.store.Store.create` builds, then returns a small JSON. `GET /naive-wait/{id}`
is the naive long-poll: every request just sleeps (`await asyncio.sleep(timeout_s)`).

Run: `python bench/bare_app.py` with REDIS_URL, BARE_PORT and BARE_TENANT in the
environment. Same uvicorn options as `python -m askgate_api`: one worker, uvloop,
httptools, no access log.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response
from redis.asyncio import Redis

from askgate import keys, scripts
from askgate.store import new_question_id

try:  # the API's own client factory when this checkout has it
    from askgate.conn import connect as _connect
except ImportError:  # pragma: no cover - older checkouts
    _connect = None

KEEP_MS = 86_400 * 1000
MAXLEN = 100_000
MAX_PENDING = 100_000_000
ASKS_PER_S = 100_000_000
TIMEOUT_S = 900


def make_redis(url: str) -> Redis:
    if _connect is not None:
        return _connect(url, max_connections=256)
    return Redis.from_url(url, max_connections=256)


def create_app(redis_url: str, tenant: str) -> FastAPI:
    state: dict[str, Any] = {"waiting": 0}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis = make_redis(redis_url)
        state["redis"] = redis
        state["reserve"] = redis.register_script(scripts.RESERVE)
        state["create"] = redis.register_script(scripts.CREATE)
        try:
            yield
        finally:
            await redis.aclose()

    app = FastAPI(lifespan=lifespan)

    @app.post("/ask")
    async def ask(request: Request) -> Response:
        body: dict[str, Any] = orjson.loads(await request.body())
        session = body["session"]
        now = int(time.time() * 1000)
        expires = now + TIMEOUT_S * 1000
        qid = new_question_id(tenant, session, None, None)
        shard = keys.shard_for(tenant, session)
        await state["reserve"](
            keys=[keys.tenant_pending(tenant), keys.tenant_rate(tenant)],
            args=[now, qid, expires, MAX_PENDING, ASKS_PER_S],
        )
        fields = [
            "tenant", tenant, "session", session, "status", "pending", "locale", "en",
            "created", now, "expires", expires, "timeout", TIMEOUT_S,
            "doc", orjson.dumps(body["questions"]).decode(), "channels", "web",
            "ntargets", 0,
        ]
        await state["create"](
            keys=[
                keys.question(qid),
                keys.pending(shard, tenant, session),
                keys.due(shard),
                keys.session_index(shard, tenant, session),
                keys.question(qid),
                keys.events(shard, "web"),
            ],
            args=[qid, expires, now, expires - now + KEEP_MS, MAXLEN, "0", *fields],
        )
        return Response(orjson.dumps({"id": qid, "status": "pending"}), 201,
                        media_type="application/json")

    @app.get("/naive-wait/{question_id}")
    async def naive_wait(question_id: str, timeout_s: float = 30) -> Response:
        state["waiting"] += 1
        try:
            await asyncio.sleep(min(timeout_s, 60))
        finally:
            state["waiting"] -= 1
        return Response(orjson.dumps({"id": question_id, "status": "pending"}),
                        media_type="application/json")

    @app.get("/count")
    async def count() -> Response:
        return Response(orjson.dumps({"waiting": state["waiting"]}),
                        media_type="application/json")

    return app


def main() -> None:
    app = create_app(os.environ["REDIS_URL"], os.environ.get("BARE_TENANT", "tbare"))
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
