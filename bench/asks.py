"""Asks/s through the API against two baselines doing the same Redis work, in one run."""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path
from typing import Any

import orjson
from askgate.dev.redis_server import free_port
from askgate.store.tenants import create_tenant

from bench import ask_parts
from bench.context import Context
from bench.procs import PY, Proc, Procs, cpu_s, start_api, start_bare
from bench.sample import BIG, QUESTIONS, ask_body, make_redis

TITLE = "Asks/s: the API against a plain-ASGI and a FastAPI baseline"
METHOD = """
`python -m askgate_api` (one uvicorn worker, uvloop, httptools, no access log, logging at
info, quotas set high) and two baselines from `bench/bare_app.py` with the same uvicorn
options, each reading the body as a plain dict and running the same RESERVE and CREATE
scripts with the same keys and arguments as `Store.create` (recorded from it; only
session, id, shard and times substituted): no auth, no validation, no argument building,
a small response. **plain ASGI** is a bare ASGI callable (the frame askgate's ask is
served in); **FastAPI** is one FastAPI route. Load: `bench/loadgen.py rate`, raw asyncio
keep-alive connections on uvloop, {concurrency} concurrent, {warmup:g} s warm-up then
{duration:g} s counted, every request a new session (no 409). {rounds} rounds; in each
round every server is measured once, in a rotated order; a round's ratio compares the
servers measured in that round. The headline ratio is of the mean requests/s; the median
of the rounds' ratios is beside it. The
3-question ask is the verbose ask of the memory figure; the 1-question ask is its first
question. Cross-check: each server process's CPU seconds (user + system) over a run
divided by every response it sent (warm-up included), which CPU taken by other
processes does not inflate.
"""

SERVERS = ("askgate", "asgi", "fastapi")
LABEL = {"askgate": "askgate", "asgi": "plain ASGI", "fastapi": "FastAPI"}
CONCURRENCY = 64


def run_rate(
    procs: Procs,
    ports: list[int],
    path: str,
    body_file: Path,
    headers: list[str],
    tag: str,
    duration: float,
    warmup: float,
) -> dict[str, Any]:
    """One `loadgen rate` run; its JSON result."""
    argv = [
        PY,
        "-m",
        "bench.loadgen",
        "rate",
        "--path",
        path,
        "--body-file",
        str(body_file),
        "--concurrency",
        str(CONCURRENCY),
        "--duration",
        str(duration),
        "--warmup",
        str(warmup),
        "--tag",
        tag,
    ]
    for port in ports:
        argv += ["--port", str(port)]
    for h in headers:
        argv += ["--header", h]
    p = procs.start("loadgen-rate", argv, stdout=subprocess.PIPE)
    out, _ = p.proc.communicate(timeout=duration + warmup + 60)
    procs.stop(p)
    if p.proc.returncode != 0:
        raise RuntimeError(f"loadgen failed:\n{p.tail()}")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    result["loadgen_pid"] = p.pid
    return result


def write_bodies(workdir: Path) -> dict[int, Path]:
    files = {}
    for nq in (3, 1):
        files[nq] = workdir / f"ask{nq}.json"
        files[nq].write_bytes(orjson.dumps(ask_body(QUESTIONS[:nq], "@N@", timeoutSeconds=900)))
    return files


async def load_tenant_key(url: str, name: str) -> str:
    redis = make_redis(url)
    try:
        _, api_key = await create_tenant(redis, name, max_pending=BIG, asks_per_s=BIG)
        return api_key
    finally:
        await redis.aclose()


def run(ctx: Context) -> None:
    # Many short rounds: a burst of other work on the machine then hits one round of one
    # server, and the per-round ratios show it, instead of skewing a long run.
    rounds = ctx.size(6, 1)
    duration, warmup = ctx.size(1.5, 1.5), 0.5
    fig = ctx.report.figure(
        "asks",
        TITLE,
        METHOD.format(concurrency=CONCURRENCY, warmup=warmup, duration=duration, rounds=rounds)
        + ask_parts.METHOD,
    )
    ctx.flush()
    api_key = ctx.run(load_tenant_key(ctx.redis_url, "load"))
    ports = {name: free_port() for name in SERVERS}
    servers: dict[str, Proc] = {
        "askgate": start_api(ctx.procs, ctx.redis_url, ports["askgate"]),
        "asgi": start_bare(ctx.procs, ctx.redis_url, ports["asgi"], "asgi", "tbare-asgi"),
        "fastapi": start_bare(
            ctx.procs, ctx.redis_url, ports["fastapi"], "fastapi", "tbare-fastapi"
        ),
    }
    targets = {
        "askgate": ("/v1/questions", [f"authorization: Bearer {api_key}"]),
        "asgi": ("/ask", []),
        "fastapi": ("/ask", []),
    }
    bodies = write_bodies(ctx.workdir)
    rps: dict[int, dict[str, list[float]]] = {}
    cpu: dict[int, dict[str, list[float]]] = {}
    bad: list[str] = []
    for nq in (3, 1):
        rps[nq] = {s: [] for s in SERVERS}
        cpu[nq] = {s: [] for s in SERVERS}
        for r in range(rounds):
            order = SERVERS[r % 3 :] + SERVERS[: r % 3]
            for name in order:
                path, headers = targets[name]
                c0 = cpu_s(servers[name].pid)
                res = run_rate(
                    ctx.procs,
                    [ports[name]],
                    path,
                    bodies[nq],
                    headers,
                    f"{name}{nq}r{r}",
                    duration,
                    warmup,
                )
                used = cpu_s(servers[name].pid) - c0
                rps[nq][name].append(res["rps"])
                cpu[nq][name].append(used / max(1, res["all_requests"]) * 1e6)
                non2xx = {k: v for k, v in res["statuses"].items() if not k.startswith("2")}
                if non2xx or res["errors"]:
                    bad.append(f"{name} {nq}q round {r + 1}: {non2xx} {res['errors']}")
                print(
                    f"    {nq}-question ask, {LABEL[name]}, round {r + 1}: "
                    f"{res['rps']:,.0f} req/s (p50 {res['p50_ms']:.1f} ms, p99 "
                    f"{res['p99_ms']:.1f} ms), server CPU {cpu[nq][name][-1]:,.0f} µs/ask",
                    flush=True,
                )
    for name in SERVERS:
        ctx.procs.stop(servers[name])
    report_rows(fig, rps, cpu)
    for b in bad:
        fig.note(f"non-2xx or errors during the ask load: {b}")
    fig.data.update(rps=rps, cpu_us_per_ask=cpu, rounds=rounds, duration_s=duration)
    ask_parts.run(ctx.redis_url, fig, ctx.run)


def report_rows(
    fig: Any, rps: dict[int, dict[str, list[float]]], cpu: dict[int, dict[str, list[float]]]
) -> None:
    for nq in (3, 1):
        per = rps[nq]
        mean = {s: statistics.mean(per[s]) for s in SERVERS}
        for base, goal in (("asgi", True), ("fastapi", False)):
            ratio = mean["askgate"] / mean[base]
            each = [a / b for a, b in zip(per["askgate"], per[base], strict=True)]
            fig.add(
                f"Asks/s, {nq}-question ask: askgate / {LABEL[base]} baseline",
                f"{mean['askgate']:,.0f} / {mean[base]:,.0f} req/s = **{ratio:.2f}** "
                f"(median of rounds {statistics.median(each):.2f}; rounds: "
                + ", ".join(f"{x:.2f}" for x in each)
                + ")",
                "≥ 0.8" if goal else "",
                (ratio >= 0.8) if goal else None,
            )
        by_round = "; ".join(
            f"round {r + 1}: " + " / ".join(f"{per[s][r]:,.0f}" for s in SERVERS)
            for r in range(len(per["askgate"]))
        )
        fig.add(
            f"Asks/s each round, {nq}-question ask: askgate / plain ASGI / FastAPI",
            by_round + " req/s",
        )
        c = {s: statistics.mean(cpu[nq][s]) for s in SERVERS}
        fig.add(
            f"Server CPU per ask, {nq}-question ask: askgate / plain ASGI / FastAPI (cross-check)",
            f"{c['askgate']:,.0f} / {c['asgi']:,.0f} / {c['fastapi']:,.0f} µs; plain "
            f"ASGI / askgate = **{c['asgi'] / c['askgate']:.2f}**",
        )
