"""What an agent platform's process pays to hold many waits in one `AsyncAskgate`."""

from __future__ import annotations

import asyncio

import httpx
import orjson
from askgate.dev.redis_server import free_port
from askgate_client import AsyncAskgate

from bench.asks import load_tenant_key
from bench.context import Context
from bench.loadgen import read_response
from bench.procs import self_cpu_s, start_api
from bench.report import Figure
from bench.sample import ANSWERS, QUESTIONS

TITLE = "The Python client holding many waits"
METHOD = """
one `python -m askgate_api`; in the benchmark's own process one `AsyncAskgate` starts N
3-question asks at once (`start()`, each its own session), then waits on all N at once
(`wait()`, each a long-poll on its own connection), until the API holds N waiters (its
`askgate_waiters` gauge); then every question is answered over one raw keep-alive
connection (POST /answer, a few µs of this process's CPU each) and the waits return.
CPU is this process's user + system seconds from the first ask to the last result, per
question. Side by side, in each round: the client as shipped, and the same client on an
httpx pool that keeps every idle connection for its keep-alive (the shipped client's
pool before it kept at most `KEEPALIVE` idle ones: httpcore recounts the pool for each
idle connection on every request and response). {rounds} rounds, alternating which goes
first.
"""


async def one_round(url: str, port: int, key: str, n: int, keep_all: bool, tag: str) -> float:
    """CPU seconds per question for n asks and waits held at once by one client."""
    http = None
    if keep_all:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        http = httpx.AsyncClient(limits=limits)
    auth = f"authorization: Bearer {key}\r\nhost: x\r\n"
    answer = orjson.dumps({"answers": ANSWERS})
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        async with AsyncAskgate(url, key, http=http) as ag:
            c0 = self_cpu_s()
            asked = await asyncio.gather(
                *(ag.start(QUESTIONS, session=f"{tag}-{i}", timeout_s=600) for i in range(n))
            )
            waits = [asyncio.create_task(ag.wait(q.id)) for q in asked]
            # The gauge is another process's: polled, nothing to await here.
            while await held(reader, writer) < n:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            for q in asked:
                writer.write(
                    f"POST /v1/questions/{q.id}/answer HTTP/1.1\r\n{auth}"
                    f"content-type: application/json\r\ncontent-length: {len(answer)}"
                    "\r\n\r\n".encode()
                    + answer
                )
                status, body = await read_response(reader)
                if status != 200:
                    raise RuntimeError(f"answer failed: {status} {body[:200]!r}")
            results = await asyncio.gather(*waits)
            used = self_cpu_s() - c0
        if any(r.status != "answered" for r in results):
            raise RuntimeError("a wait did not return answered")
    finally:
        writer.close()
        if http is not None:
            await http.aclose()
    return used / n


async def held(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
    """The API's waiter gauge."""
    writer.write(b"GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n")
    _, body = await read_response(reader)
    line = next(x for x in body.decode().splitlines() if x.startswith("askgate_waiters "))
    return int(float(line.split()[1]))


def run(ctx: Context) -> None:
    sizes, rounds = ctx.size((100, 400), (50,)), ctx.size(2, 1)
    fig: Figure = ctx.report.figure("client", TITLE, METHOD.format(rounds=rounds))
    ctx.flush()
    key = ctx.run(load_tenant_key(ctx.redis_url, "client"))
    port = free_port()
    api = start_api(ctx.procs, ctx.redis_url, port)
    url = f"http://127.0.0.1:{port}"
    try:
        for n in sizes:
            ms: dict[bool, list[float]] = {False: [], True: []}
            for r in range(rounds):
                for keep_all in (False, True) if r % 2 == 0 else (True, False):
                    tag = f"c{n}r{r}{'k' if keep_all else 's'}"
                    per = ctx.run(one_round(url, port, key, n, keep_all, tag))
                    ms[keep_all].append(per * 1000)
            shipped, kept = (sum(v) / len(v) for v in (ms[False], ms[True]))
            fig.add(
                f"Client CPU per question, {n} asks and waits held at once by one "
                "AsyncAskgate: as shipped / every idle connection kept",
                f"{shipped:.1f} / {kept:.1f} ms (rounds: "
                + ", ".join(f"{a:.1f} / {b:.1f}" for a, b in zip(ms[False], ms[True], strict=True))
                + ")",
            )
            fig.data[f"n{n}"] = {"shipped_ms": ms[False], "keep_all_ms": ms[True]}
    finally:
        ctx.procs.stop(api)
