"""Where an ask's CPU goes: the API's ASGI app driven in-process (no HTTP server, real
Redis), whole and with one part taken away at a time, against the plain-ASGI baseline.

A diagnostic of the asks figure: it swaps `askgate_api.fastpath`'s validation and
response building for trivial stand-ins, so it follows that module's names; if they
change it reports that it could not run instead of failing the figure.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import orjson
from askgate.domain.models import QuestionCreate
from askgate.store.tenants import create_tenant

from bench.report import Figure
from bench.sample import BIG, QUESTIONS, ask_body, make_redis, make_settings

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
_SEQ = itertools.count()
N = 2000
CONCURRENCY = 32


async def drive(app: App, path: str, headers: list[tuple[bytes, bytes]], nq: int, n: int) -> None:
    """n asks through `app` as an ASGI server would call it, CONCURRENCY at a time."""
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one() -> None:
        body = orjson.dumps(ask_body(QUESTIONS[:nq], f"parts-{next(_SEQ)}", timeoutSeconds=900))
        messages = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            return messages.pop()

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 300:
                raise RuntimeError(f"the ask was answered {message['status']}")

        async with sem:
            await app(
                {
                    "type": "http",
                    "method": "POST",
                    "path": path,
                    "headers": headers,
                    "query_string": b"",
                },
                receive,
                send,
            )

    await asyncio.gather(*(one() for _ in range(n)))


class Prevalidated:
    """Stands in for QuestionCreate in the fast path: the ask validated once, copied."""

    cache: ClassVar[dict[bytes, QuestionCreate]] = {}

    @classmethod
    def model_validate(cls, data: dict[str, Any]) -> QuestionCreate:
        key = orjson.dumps(data["questions"])
        if key not in cls.cache:
            cls.cache[key] = QuestionCreate.model_validate(data)
        return cls.cache[key].model_copy(update={"session": data["session"]})


async def cpu_per_ask(app: App, path: str, headers: list[tuple[bytes, bytes]], nq: int) -> float:
    await drive(app, path, headers, nq, 200)
    gc.collect()
    best = float("inf")
    for _ in range(3):  # the least disturbed of three
        t0 = time.process_time()
        await drive(app, path, headers, nq, N)
        best = min(best, (time.process_time() - t0) / N * 1e6)
    return best


async def measure(url: str) -> dict[int, dict[str, float]]:
    import askgate_api.fastpath as fastpath
    from askgate_api.app import create_app

    from bench.bare_app import Work, asgi_app

    redis = make_redis(url)
    _, key = await create_tenant(redis, "parts", max_pending=BIG, asks_per_s=BIG)
    await redis.aclose()
    app = create_app(make_settings(url))
    work = Work(url, "tparts")
    await work.start()
    bare = asgi_app(work)
    auth = [(b"authorization", f"Bearer {key}".encode())]
    names = vars(fastpath)  # the fast path's globals, swapped and put back
    real = {name: names[name] for name in ("QuestionCreate", "resource")}
    out: dict[int, dict[str, float]] = {}
    try:
        async with app.router.lifespan_context(app):
            for nq in (3, 1):
                row = out[nq] = {}
                row["askgate"] = await cpu_per_ask(app, "/v1/questions", auth, nq)
                names["QuestionCreate"] = Prevalidated
                row["no validation"] = await cpu_per_ask(app, "/v1/questions", auth, nq)
                names["resource"] = lambda settings, rec: {"id": rec.id}
                row["no validation, small response"] = await cpu_per_ask(
                    app, "/v1/questions", auth, nq
                )
                names.update(real)
                row["plain ASGI baseline"] = await cpu_per_ask(bare, "/ask", [], nq)
    finally:
        names.update(real)
        await work.stop()
    return out


METHOD = f"""
**Where an ask's CPU goes** (`bench/ask_parts.py`): the API's ASGI app driven in the
benchmark's own process, without an HTTP server, against the same Redis, {CONCURRENCY} asks
at a time; CPU seconds of the process (Redis client included) / asks, the least of three
runs of {N:,}: the whole ask, then with validation replaced by a copy of an ask validated
once, then also with the response cut to `{{"id": …}}`, and the plain-ASGI baseline's
callable the same way. What the steps leave between the last askgate row and the
baseline is the rest of the ask's own Python: argument building in `Store.create`
(deflating the doc, dumping the questions), auth, metrics, and the garbage it makes.

What bounds the ratio: the baselines are an ask's Redis work and nothing else (the two
scripts through redis-py, request and reply), so 0.8× the plain-ASGI baseline leaves
askgate a quarter of that work's CPU for everything of its own. The notes put numbers on
both for this run, and on how far askgate's own work would have to shrink: to a share
that no one hot spot moved away reaches, and neither validation nor the resource can go
without changing what the API checks or answers.
"""


def run(url: str, fig: Figure, loop_run: Callable[[Any], Any]) -> None:
    try:
        rows: dict[int, dict[str, float]] = loop_run(measure(url))
    except Exception as exc:  # a diagnostic: the figure stands without it
        fig.note(f"where an ask's CPU goes: could not run ({exc!r})")
        return
    for nq, row in rows.items():
        fig.add(
            f"Where a {nq}-question ask's CPU goes, in-process: " + " / ".join(row),
            " / ".join(f"{v:,.0f}" for v in row.values()) + " µs",
        )
        base = row["plain ASGI baseline"]
        budget = base / 0.8 - base
        validation = row["askgate"] - row["no validation"]
        response = row["no validation"] - row["no validation, small response"]
        rest = row["no validation, small response"] - base
        own = validation + response + rest
        fig.note(
            f"{nq}-question ask, in-process: at 0.8× the baseline an ask may cost "
            f"{budget:,.0f} µs more than its Redis work ({base:,.0f} µs); askgate's own "
            f"work is {own:,.0f} µs: validating the ask "
            f"{validation:,.0f}, the resource it answers with {response:,.0f}, the rest "
            f"(auth, quotas, building the stored question, metrics) {rest:,.0f}; "
            + (
                f"the goal needs that cut to {budget / own:.0%} of it"
                if own > budget
                else "within what the goal allows"
            )
        )
    fig.data["parts_us"] = rows
