"""Redis Cluster: asks/s and answers/s on a 1-master and a 3-master local cluster in one
run, each master's share of the Redis work, and how the shards spread over the slots."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import redis as redis_sync
from askgate.dev.redis_server import RedisClusterProcess
from askgate.domain.models import QuestionCreate
from askgate.store import keys
from askgate.store.conn import connect
from askgate.store.store import Store
from askgate.store.tenants import create_tenant
from redis.crc import key_slot

from bench.context import Context
from bench.report import Figure
from bench.sample import BIG, QUESTIONS, ask_body, make_settings

TITLE = "Redis Cluster: 1 node vs 3 nodes"
METHOD = """
A local Redis Cluster (`askgate.dev.redis_server.RedisClusterProcess`: redis-server
processes on loopback, slots split evenly, no replicas) of 1 master, then of 3. Against
each, one uvloop process with a `RedisCluster` client (`ASKGATE_REDIS_CLUSTER=true`) makes
{n} asks of a 3-question ask through `Store.create` ({c} at a time, each its own session,
so they spread over the shards), then answers each through `Store.answer`; asks/s and
answers/s are those counts over the wall time of each phase. Each master's Redis CPU
(`INFO cpu`, user + system) is read before and after. On this 2-core machine the one
client process is the bottleneck, not Redis: the figure shows that the same code runs on
a cluster and that the Redis work spreads over the masters as the shards do; throughput
scales with masters only while clients have cores to spare. The slot spread row counts the
shards new asks go to per master, for Redis's even slot ranges (`keys.spread`).
"""


def _cpu(port: int) -> float:
    client = redis_sync.Redis(host="127.0.0.1", port=port)
    try:
        info = client.info("cpu")
    finally:
        client.close()
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


async def _load(cluster: RedisClusterProcess, n: int, concurrency: int) -> dict[str, Any]:
    client = connect(cluster.url, cluster=True, max_connections=concurrency + 8)
    try:
        store = Store(client, make_settings(cluster.url, redis_cluster=True))
        tenant, _ = await create_tenant(client, "bench-cluster", max_pending=BIG, asks_per_s=BIG)
        base = ask_body(QUESTIONS, "s", timeoutSeconds=900)
        answers = {q["id"]: [q["options"][0]["label"]] for q in QUESTIONS}
        gate = asyncio.Semaphore(concurrency)
        ids: list[str] = []

        async def ask(i: int) -> None:
            async with gate:
                rec, _ = await store.create(
                    tenant.id, QuestionCreate.model_validate({**base, "session": f"c-{i}"})
                )
                ids.append(rec.id)

        async def answer(qid: str) -> None:
            async with gate:
                await store.answer(tenant.id, qid, answers)

        ports = [node.port for node in cluster.nodes]
        cpu0 = [_cpu(p) for p in ports]
        t0 = time.perf_counter()
        await asyncio.gather(*(ask(i) for i in range(n)))
        t1 = time.perf_counter()
        await asyncio.gather(*(answer(qid) for qid in ids))
        t2 = time.perf_counter()
        cpu = [_cpu(p) - c for p, c in zip(ports, cpu0, strict=True)]
        return {"asks_s": n / (t1 - t0), "answers_s": n / (t2 - t1), "redis_cpu_s": cpu}
    finally:
        await client.aclose()


def _shards_per_master(cluster: RedisClusterProcess) -> list[int]:
    served = [0] * len(cluster.nodes)
    for shard in range(keys.LEGACY_SHARDS, keys.SHARDS):
        served[cluster.owner(key_slot(keys.tag(shard).encode()))] += 1
    return served


def run(ctx: Context) -> None:
    n, concurrency = ctx.size(4000, 300), 64
    fig: Figure = ctx.report.figure("cluster", TITLE, METHOD.format(n=n, c=concurrency))
    results: dict[int, dict[str, Any]] = {}
    for masters in (1, 3):
        with RedisClusterProcess(masters=masters) as cluster:
            results[masters] = ctx.run(_load(cluster, n, concurrency))
            if masters == 3:
                results[3]["shards"] = _shards_per_master(cluster)
    one, three = results[1], results[3]
    fig.add(
        "Asks/s, 1 node / 3 nodes (one client process)",
        f"{one['asks_s']:.0f} / {three['asks_s']:.0f}",
    )
    fig.add(
        "Answers/s, 1 node / 3 nodes (one client process)",
        f"{one['answers_s']:.0f} / {three['answers_s']:.0f}",
    )
    per_q = [sum(r["redis_cpu_s"]) / n * 1e6 for r in (one, three)]
    fig.add(
        "Redis CPU per question (ask + answer), 1 node / 3 nodes summed",
        f"{per_q[0]:.0f} / {per_q[1]:.0f} µs",
    )
    total = sum(three["redis_cpu_s"]) or 1.0
    shares = " / ".join(f"{100 * c / total:.0f} %" for c in three["redis_cpu_s"])
    fig.add(
        "3 nodes: new shards per master; each master's share of the Redis CPU",
        f"{' / '.join(map(str, three['shards']))}; {shares}",
        "even (±1 shard)",
        max(three["shards"]) - min(three["shards"]) <= 1,
    )
    spread = {nodes: keys.spread(nodes) for nodes in (3, 10, 16, 48)}
    fig.add(
        "Slot spread: fewest–most new shards per master at 3 / 10 / 16 / 48 masters",
        " / ".join(f"{min(s)}–{max(s)}" for s in spread.values()),
        "differ by ≤ 1",
        all(max(s) - min(s) <= 1 for s in spread.values()),
    )
    fig.data["cluster"] = {"results": results, "spread": spread}
