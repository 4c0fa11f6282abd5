"""The baseline for the benchmarks: a bare FastAPI app doing askgate's Redis work only.

`POST /ask` reads the body as a plain dict (no auth, no validation; the tenant is
BARE_TENANT) and runs the same tenant RESERVE and CREATE scripts with the same keys and
arguments as the API's `Store.create`. Those are recorded once at start-up from
`Store.create` itself (its scripts swapped for recorders), so the baseline follows any
storage-layout change; per request only the session, question id, shard tag and times
are substituted. It returns a small JSON. A template is recorded the first time a
question list is seen (the load sends the same questions every time; only the session
differs), so the stored doc is byte for byte the API's.
`GET /naive-wait/{id}` is the naive long-poll: every request just sleeps
(`await asyncio.sleep(timeout_s)`).

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
from askgate import keys
from askgate.models import QuestionCreate
from askgate.record import new_question_id
from askgate.settings import Settings
from askgate.store import Store
from fastapi import FastAPI, Request
from fastapi.responses import Response
from redis.asyncio import Redis

try:  # the API's own client factory when this checkout has it
    from askgate.conn import connect as _connect
except ImportError:  # pragma: no cover - older checkouts
    _connect = None

MAX_PENDING = 100_000_000
ASKS_PER_S = 100_000_000
TIMEOUT_S = 900


def make_redis(url: str) -> Redis:
    if _connect is not None:
        return _connect(url, max_connections=256)
    return Redis.from_url(url, max_connections=256)


TEMPLATE_SESSION = "bare-template-session-7f3a9c"


class Calls:
    """Store.create's RESERVE and CREATE calls for one template ask, and the values in
    them that differ per ask."""

    def __init__(self) -> None:
        self.reserve: tuple[list[Any], list[Any]] = ([], [])
        self.create: tuple[list[Any], list[Any]] = ([], [])
        self.qid = ""
        self.tag = ""
        self.now = 0
        self.expires = 0


async def record_create(store: Store, tenant: str, questions: list[Any]) -> Calls:
    """Run Store.create once with its two scripts replaced by recorders."""
    calls = Calls()
    dry = Store(store.redis, store.settings)

    async def reserve(keys: Any = None, args: Any = None, client: Any = None) -> Any:
        calls.reserve = (list(keys), list(args))
        calls.now, calls.expires = args[0], args[2]
        return [b"ok"]

    async def create(keys: Any = None, args: Any = None, client: Any = None) -> Any:
        calls.create = (list(keys), list(args))
        return [b"created"]

    dry._reserve = reserve  # type: ignore[assignment]
    dry._create = create  # type: ignore[assignment]
    body = QuestionCreate.model_validate(
        {"session": TEMPLATE_SESSION, "timeoutSeconds": TIMEOUT_S, "questions": questions})
    rec, _ = await dry.create(tenant, body)
    calls.qid = rec.id
    calls.tag = keys.tag(keys.shard_of(rec.id))
    return calls


def _sub(value: Any, swap: dict[str, str], ints: dict[int, int]) -> Any:
    if isinstance(value, str):
        for old, new in swap.items():
            if old in value:
                value = value.replace(old, new)
        return value
    if isinstance(value, int) and value in ints:
        return ints[value]
    return value


def create_app(redis_url: str, tenant: str) -> FastAPI:
    state: dict[str, Any] = {"waiting": 0}
    # One recorded template per distinct question list (validated once, when first seen).
    templates: dict[bytes, Calls] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis = make_redis(redis_url)
        store = Store(redis, Settings(
            redis_url=redis_url, tenant_max_pending=MAX_PENDING, tenant_asks_per_s=ASKS_PER_S,
            timeout_default_s=TIMEOUT_S))
        state["store"] = store
        try:
            yield
        finally:
            await redis.aclose()

    app = FastAPI(lifespan=lifespan)

    @app.post("/ask")
    async def ask(request: Request) -> Response:
        body: dict[str, Any] = orjson.loads(await request.body())
        session = body["session"]
        store: Store = state["store"]
        qkey = orjson.dumps(body["questions"])
        calls = templates.get(qkey)
        if calls is None:
            calls = templates[qkey] = await record_create(store, tenant, body["questions"])
        qid = new_question_id(tenant, session, None, None)
        swap = {
            TEMPLATE_SESSION: session,
            calls.qid: qid,
            calls.tag: keys.tag(keys.shard_for(tenant, session)),
        }
        now = int(time.time() * 1000)
        ints = {calls.now: now, calls.expires: now + TIMEOUT_S * 1000}
        for script, k, a in ((store._reserve, *calls.reserve),
                             (store._create, *calls.create)):
            await script(keys=[_sub(x, swap, ints) for x in k],
                         args=[_sub(x, swap, ints) for x in a])
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
