"""How the ask rate scales from 1 to 2 API processes on this machine's 2 cores."""

from __future__ import annotations

import resource
import statistics
import time

from askgate.dev.redis_server import free_port

from bench.asks import CONCURRENCY, load_tenant_key, run_rate, write_bodies
from bench.context import Context
from bench.procs import cpu_s, start_api


def children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


TITLE = "Scaling: the ask rate of 1 and 2 API processes"
METHOD = """
two `python -m askgate_api` processes on two ports (as two replicas behind a load
balancer). `bench/loadgen.py rate` with the 3-question ask, {concurrency} connections in
all: against one process, then spread evenly over both, {rounds} rounds alternating which
goes first, {warmup:g} s warm-up and {duration:g} s counted each. The CPU shares are
CPU seconds per second of wall time during the counted runs (1.0 = one core busy) of the
API processes, redis-server and the load generator (its process start included): on 2
cores they show what the second process competes with.
"""


def run(ctx: Context) -> None:
    rounds = ctx.size(2, 1)
    duration, warmup = ctx.size(3.0, 1.5), ctx.size(1.0, 0.5)
    fig = ctx.report.figure(
        "scaling",
        TITLE,
        METHOD.format(concurrency=CONCURRENCY, rounds=rounds, duration=duration, warmup=warmup),
    )
    ctx.flush()
    api_key = ctx.run(load_tenant_key(ctx.redis_url, "scale"))
    ports = [free_port(), free_port()]
    apis = [start_api(ctx.procs, ctx.redis_url, p) for p in ports]
    body = write_bodies(ctx.workdir)[3]
    headers = [f"authorization: Bearer {api_key}"]
    rps: dict[int, list[float]] = {1: [], 2: []}
    share: dict[int, dict[str, list[float]]] = {1: {}, 2: {}}
    for r in range(rounds):
        for n in (1, 2) if r % 2 == 0 else (2, 1):
            pids = {"api": [a.pid for a in apis[:n]], "redis": [ctx.redis_pid]}
            c0 = {k: sum(cpu_s(p) for p in v) for k, v in pids.items()}
            kids0, t0 = children_cpu_s(), time.perf_counter()
            res = run_rate(
                ctx.procs,
                ports[:n],
                "/v1/questions",
                body,
                headers,
                f"scale{n}r{r}",
                duration,
                warmup,
            )
            wall = time.perf_counter() - t0
            for k, v in pids.items():
                used = sum(cpu_s(p) for p in v) - c0[k]
                share[n].setdefault(k, []).append(used / wall)
            # The load generator is the only child that exits meanwhile.
            share[n].setdefault("loadgen", []).append((children_cpu_s() - kids0) / wall)
            rps[n].append(res["rps"])
            print(f"    {n} API process(es), round {r + 1}: {res['rps']:,.0f} asks/s", flush=True)
    one, two = statistics.mean(rps[1]), statistics.mean(rps[2])
    fig.add(
        "Asks/s, 3-question ask: 1 API process → 2 API processes",
        f"{one:,.0f} → {two:,.0f} = **{two / one:.2f}×** (rounds: "
        + ", ".join(f"{a:,.0f} → {b:,.0f}" for a, b in zip(rps[1], rps[2], strict=True))
        + ")",
    )
    for n in (1, 2):
        s = {k: statistics.mean(v) for k, v in share[n].items()}
        fig.add(
            f"CPU share with {n} API process(es): API / redis-server / load generator (cores busy)",
            f"{s['api']:.2f} / {s['redis']:.2f} / {s['loadgen']:.2f} of 2",
        )
    fig.data.update(rps=rps, cpu_share=share)
