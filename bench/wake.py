"""Answer → waiter wake-up: `Store.answer()` to a waiting future in-process, and
POST /answer to the GET /wait response over HTTP with the API as a real process."""

from __future__ import annotations

import asyncio
import gc
import time

import orjson
from askgate.dev.redis_server import free_port
from askgate.domain.answers import canonical_answers
from askgate.domain.models import QuestionCreate
from askgate.domain.status import Status
from askgate.store.record import result_json
from askgate.store.store import Store
from askgate.store.tenants import create_tenant

from bench.context import Context
from bench.loadgen import read_response
from bench.procs import machine_times, start_api, steal_share
from bench.report import Figure, pct
from bench.sample import ANSWERS, BIG, QUESTIONS, ask_body, make_redis, make_settings

TITLE = "Wake latency: an answer to the waiting agent"
METHOD = """
**In-process**: the API's `Waiters` (`askgate_api.waiters`: one subscription shared by
every waiter, on this Redis 7 to the shards' done channels, which RESOLVE publishes each
ended id on) and a `Store` in one uvloop process, on separate Redis connections as in the
API. For each of {n_inproc} pending 3-question asks a future is registered and a task
awaits it; the clock runs from calling `Store.answer()` (it reads the question, checks the
answers, runs RESOLVE, which publishes the result) until the waiting task resumes. Every
other question is instead ended by issuing the RESOLVE script alone (`Store._finish`),
which splits the time into "read and check" and "script and notification". The parts
row times `Store.get` and `canonical_answers` on their own for the same asks. **Over
HTTP**: `python -m askgate_api` as its own process; for each of {n_http} asks (made through
`Store.create`), a GET /v1/questions/{{id}}/wait is sent on one keep-alive connection,
10 ms later (the waiter is registered) POST /v1/questions/{{id}}/answer on another; the
clock runs from sending the POST until the whole /wait response is read. The POST's own
response time and a GET /wait on an already answered question (no waiting) are timed
alongside. **Round trips from idle**: {n_idle} times, this process waits 10 ms (as the
HTTP rounds do) and then sends three PINGs to Redis one after another, each timed; the
same number of PINGs back to back are the warm case.
"""


async def inprocess(url: str, n: int, fig: Figure) -> None:
    from askgate_api.waiters import Waiters

    redis = make_redis(url)
    pubsub_redis = make_redis(url, max_connections=4)
    waiters = Waiters(pubsub_redis)
    try:
        store = Store(redis, make_settings(url))
        tenant, _ = await create_tenant(redis, "wake", max_pending=BIG, asks_per_s=BIG)
        await waiters.start()
        assert waiters.ready.is_set(), "waiters did not subscribe"
        base = QuestionCreate.model_validate(ask_body(QUESTIONS, "s"))
        loop = asyncio.get_running_loop()
        gc.collect()
        gc.freeze()
        via_answer: list[float] = []
        via_script: list[float] = []
        load: list[float] = []
        check: list[float] = []
        for i in range(n):
            rec, _ = await store.create(tenant.id, base.model_copy(update={"session": f"w{i}"}))
            fut = waiters.register(rec.id)
            woke: asyncio.Future[float] = loop.create_future()

            async def waiter(
                f: asyncio.Future[bool] = fut, w: asyncio.Future[float] = woke
            ) -> None:
                await f
                w.set_result(time.perf_counter())

            task = asyncio.create_task(waiter())
            await asyncio.sleep(0)
            if i % 2 == 0:
                t0 = time.perf_counter()
                await store.answer(tenant.id, rec.id, ANSWERS)
                via_answer.append(await woke - t0)
            else:
                t0 = time.perf_counter()
                fresh = await store.get(tenant.id, rec.id)
                t1 = time.perf_counter()
                canonical_answers(fresh.questions, ANSWERS, fresh.locale)
                t2 = time.perf_counter()
                load.append(t1 - t0)
                check.append(t2 - t1)
                t0 = time.perf_counter()
                await store._finish(fresh, Status.ANSWERED, None, result_json(ANSWERS), None)
                via_script.append(await woke - t0)
            await task
            waiters.unregister(rec.id, fut)
        gc.unfreeze()
    finally:
        await waiters.stop()
        await redis.aclose()
        await pubsub_redis.aclose()
    ms = {
        k: [x * 1000 for x in v]
        for k, v in {
            "answer": via_answer,
            "script": via_script,
            "load": load,
            "check": check,
        }.items()
    }
    p50, p99 = pct(ms["answer"], 0.5), pct(ms["answer"], 0.99)
    fig.add(
        "Wake p50, in-process: Store.answer() → waiter wakes", f"{p50:.2f} ms", "≤ 1 ms", p50 <= 1.0
    )
    fig.add(
        "Wake p99, in-process: Store.answer() → waiter wakes", f"{p99:.2f} ms", "≤ 5 ms", p99 <= 5.0
    )
    fig.add(
        "Wake p50 / p99, in-process: RESOLVE script issued → waiter wakes",
        f"{pct(ms['script'], 0.5):.2f} / {pct(ms['script'], 0.99):.2f} ms",
    )
    fig.add(
        "Parts of Store.answer(), p50: read the question (Store.get) / check the answers",
        f"{pct(ms['load'], 0.5):.2f} / {pct(ms['check'], 0.5):.2f} ms",
    )
    fig.data["inprocess_ms"] = ms


async def over_http(
    url: str, port: int, api_key: str, tenant: str, n: int, fig: Figure
) -> dict[str, list[float]]:
    redis = make_redis(url)
    try:
        store = Store(redis, make_settings(url))
        base = QuestionCreate.model_validate(ask_body(QUESTIONS, "s"))
        auth = f"authorization: Bearer {api_key}\r\nhost: x\r\n"
        answer = orjson.dumps({"answers": ANSWERS})
        r1, w1 = await asyncio.open_connection("127.0.0.1", port)
        r2, w2 = await asyncio.open_connection("127.0.0.1", port)
        wake: list[float] = []
        post: list[float] = []
        final: list[float] = []
        try:
            for i in range(n):
                rec, _ = await store.create(tenant, base.model_copy(update={"session": f"h{i}"}))
                wait_req = (
                    f"GET /v1/questions/{rec.id}/wait?timeout_s=30 HTTP/1.1\r\n{auth}\r\n"
                ).encode()
                w1.write(wait_req)
                await asyncio.sleep(0.01)  # the waiter is registered and blocked
                t0 = time.perf_counter()
                w2.write(
                    f"POST /v1/questions/{rec.id}/answer HTTP/1.1\r\n{auth}"
                    f"content-type: application/json\r\ncontent-length: {len(answer)}"
                    f"\r\n\r\n".encode()
                    + answer
                )
                status, body = await read_response(r1)
                wake.append(time.perf_counter() - t0)
                s2, _ = await read_response(r2)
                post.append(time.perf_counter() - t0)
                if status != 200 or s2 != 200 or b'"answered"' not in body:
                    raise RuntimeError(f"HTTP wake failed: {status} {s2} {body[:200]!r}")
                t0 = time.perf_counter()
                w1.write(wait_req)
                await read_response(r1)
                final.append(time.perf_counter() - t0)
        finally:
            w1.close()
            w2.close()
    finally:
        await redis.aclose()
    ms = {k: [x * 1000 for x in v] for k, v in {"wake": wake, "post": post, "final": final}.items()}
    p50, p99 = pct(ms["wake"], 0.5), pct(ms["wake"], 0.99)
    fig.add(
        "Wake p50, over HTTP: POST /answer sent → GET /wait response read",
        f"{p50:.2f} ms",
        "≤ 2 ms",
        p50 <= 2.0,
    )
    fig.add(
        "Wake p99, over HTTP: POST /answer sent → GET /wait response read",
        f"{p99:.2f} ms",
        "≤ 5 ms",
        p99 <= 5.0,
    )
    fig.add(
        "Alongside, p50 / p99: the POST /answer response; a GET /wait on an answered question",
        f"{pct(ms['post'], 0.5):.2f} / {pct(ms['post'], 0.99):.2f} ms; "
        f"{pct(ms['final'], 0.5):.2f} / {pct(ms['final'], 0.99):.2f} ms",
    )
    fig.data["http_ms"] = ms
    return ms


async def round_trips(url: str, n: int, fig: Figure) -> dict[str, list[float]]:
    """PING round trips after 10 ms of idleness (1st, 2nd, 3rd) and back to back, in ms."""
    redis = make_redis(url)
    ms: dict[str, list[float]] = {"warm": [], "idle1": [], "idle2": [], "idle3": []}
    try:
        await redis.ping()
        for _ in range(n):
            await asyncio.sleep(0.01)
            for name in ("idle1", "idle2", "idle3"):
                t0 = time.perf_counter()
                await redis.ping()
                ms[name].append((time.perf_counter() - t0) * 1000)
        for _ in range(n):
            t0 = time.perf_counter()
            await redis.ping()
            ms["warm"].append((time.perf_counter() - t0) * 1000)
    finally:
        await redis.aclose()
    p50 = {k: pct(v, 0.5) for k, v in ms.items()}
    fig.add(
        "Redis PING round trip, p50: back to back; the 1st / 2nd / 3rd after 10 ms idle",
        f"{p50['warm']:.2f}; {p50['idle1']:.2f} / {p50['idle2']:.2f} / {p50['idle3']:.2f} ms",
    )
    fig.data["round_trip_ms"] = ms
    return ms


def bound(http: dict[str, list[float]], rt: dict[str, list[float]], steal: float) -> str:
    """What bounds the wake over HTTP, in this run's numbers."""
    p50 = {k: pct(v, 0.5) for k, v in {**http, **rt}.items()}
    return f"""What bounds the wake over HTTP on this machine: it is a chain of hops between three
processes, each waiting for the one before: the POST to the API; three round trips from
the API to Redis, one after another (read the question; RESOLVE, which ends it and
publishes its id to the API's own subscription; the woken waiter's read of the ended
question); the response to the client. Every round begins after 10 ms in which nothing
ran (the waiter must be parked before the answer is sent), and on this virtual machine a
round trip to a process whose core has gone idle costs several times one to a busy one:
a PING 10 ms after the last took {p50["idle1"]:.2f} ms p50, the next one
{p50["idle2"]:.2f} and the third {p50["idle3"]:.2f}, against {p50["warm"]:.2f} back to
back. So the wake pays its first hops from cold whatever askgate does in them; a GET /wait
on a question already answered (one request, two Redis reads) took {p50["final"]:.2f} ms.
During the HTTP rounds the hypervisor held back {steal * 100:.0f}% of the CPU time this
machine wanted (steal in /proc/stat), which lengthens the hops further. A server busy
with other requests does not idle between them; this figure, one answer at a time on a
machine otherwise quiet, pays the cold hops on every round. In process the asks follow
one another without a pause, so the hops stay warm: `Store.answer()` → wake is two round
trips (the read, then RESOLVE) and the notification's way back, and the parts row gives
the read's share."""


def run(ctx: Context) -> None:
    n_inproc, n_http, n_idle = ctx.size(2000, 200), ctx.size(1000, 100), ctx.size(500, 50)
    fig = ctx.report.figure(
        "wake", TITLE, METHOD.format(n_inproc=n_inproc, n_http=n_http, n_idle=n_idle)
    )
    ctx.flush()
    ctx.run(inprocess(ctx.redis_url, n_inproc, fig))

    async def tenant() -> tuple[str, str]:
        redis = make_redis(ctx.redis_url)
        try:
            t, key = await create_tenant(redis, "wake-http", max_pending=BIG, asks_per_s=BIG)
            return t.id, key
        finally:
            await redis.aclose()

    tenant_id, api_key = ctx.run(tenant())
    port = free_port()
    api = start_api(ctx.procs, ctx.redis_url, port)
    try:
        before = machine_times()
        http = ctx.run(over_http(ctx.redis_url, port, api_key, tenant_id, n_http, fig))
        steal = steal_share(before, machine_times())
    finally:
        ctx.procs.stop(api)
    fig.block(bound(http, ctx.run(round_trips(ctx.redis_url, n_idle, fig)), steal))
