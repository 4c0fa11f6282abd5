"""After warm-up, askgate's clients send every command to the node that serves its slot:
no node answers MOVED, ASK or CROSSSLOT (each master's `INFO errorstats` counts every
error reply it sent, so this sees what a MONITOR of each node would)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import redis as redis_sync
from askgate.dev.redis_server import RedisClusterProcess
from askgate.runtime.consumer import Event, StreamConsumer
from askgate.store.conn import warm
from askgate.store.tenants import create_tenant
from askgate_sweeper.__main__ import sweep_once, timers_once, watch_once

from tests.support.asks import ask_body, make_settings
from tests.support.waiting import eventually

ROUTING_ERRORS = ("MOVED", "ASK", "CROSSSLOT", "TRYAGAIN")


def node_info(cluster: RedisClusterProcess, section: str) -> dict[int, dict[str, Any]]:
    """`INFO <section>` of every node, by port."""
    out = {}
    for node in cluster.nodes:
        client = redis_sync.Redis(host="127.0.0.1", port=node.port)
        try:
            out[node.port] = client.info(section)
        finally:
            client.close()
    return out


def routing_errors(cluster: RedisClusterProcess) -> dict[str, int]:
    """Routing error replies sent so far, per `<port>:<error>`."""
    return {
        f"{port}:{name}": int(stats.get(f"errorstat_{name}", {}).get("count", 0))
        for port, stats in node_info(cluster, "errorstats").items()
        for name in ROUTING_ERRORS
    }


async def test_no_moved_or_crossslot_after_warm_up(redis_cluster: RedisClusterProcess) -> None:
    """Asks, waits, answers, a run's abort, sweeps, timers, the watchdog, metrics and a
    channel's stream reads on the shards of every node: no routing error after warm-up."""
    from askgate_api.app import create_app

    redis_cluster.flush()
    settings = make_settings(redis_cluster.url, redis_cluster=True)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        store = app.state.store
        redis = store.redis
        await warm(redis)
        _, api_key = await create_tenant(redis, "routing")
        h = {"Authorization": f"Bearer {api_key}"}
        transport = httpx.ASGITransport(app=app)
        seen: list[Event] = []

        async def handle(event: Event) -> None:
            seen.append(event)

        consumer = StreamConsumer(redis, "web", "c1", handle, block_ms=100)
        stop = asyncio.Event()
        reader = asyncio.create_task(consumer.run(stop))
        async with httpx.AsyncClient(transport=transport, base_url="http://askgate") as api:

            async def round_trip(n: int) -> None:
                ids = []
                for i in range(12):  # sessions over every node's shards
                    body = ask_body(f"r{n}-{i}", run_id=f"run-{n}" if i % 3 == 0 else None)
                    made = await api.post("/v1/questions", json=body, headers=h)
                    assert made.status_code == 201, made.text
                    ids.append(made.json()["id"])
                waiter = asyncio.create_task(
                    api.get(f"/v1/questions/{ids[1]}/wait?timeout_s=30", headers=h)
                )
                await eventually(lambda: app.state.waiters.waiting(ids[1]), "the waiter")
                for qid in ids[1:6]:
                    r = await api.post(f"/v1/questions/{qid}/reply", json={"text": "2"}, headers=h)
                    assert r.status_code == 200, r.text
                assert (await waiter).json()["status"] == "answered"
                r = await api.post(f"/v1/runs/run-{n}/abort", headers=h)
                assert r.status_code == 200, r.text
                await sweep_once(store, now=10**13)
                await timers_once(store, now=10**13)
                await watch_once(store, now=10**13)
                assert (await api.get("/metrics")).status_code == 200
                assert (await api.get("/readyz")).status_code == 200
                await eventually(lambda: len(seen) >= 24 * (n + 1), "the stream entries", 30)

            await round_trip(0)  # warm-up: the clients learn the slot map
            before = routing_errors(redis_cluster)
            await round_trip(1)
            after = routing_errors(redis_cluster)
        stop.set()
        await asyncio.wait_for(reader, 15)
    grew = {k: after[k] - before[k] for k in after if after[k] != before[k]}
    assert not grew, f"routing errors after warm-up: {grew}"


def command_calls(cluster: RedisClusterProcess, *names: str) -> dict[str, int]:
    """Calls of each command so far, summed over the nodes (`INFO commandstats`)."""
    nodes = node_info(cluster, "commandstats").values()
    return {
        name: sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for stats in nodes)
        for name in names
    }


async def test_a_consumers_reads_ask_no_node_for_their_keys(
    redis_cluster: RedisClusterProcess,
) -> None:
    """A stream consumer's blocking reads go straight to their shard's node: none costs a
    `COMMAND GETKEYS` round trip first (redis-py's way to find the keys of XREADGROUP,
    all of them to one node), and every shard's entries are still read."""
    from askgate.store import keys
    from askgate.store.conn import connect

    redis_cluster.flush()
    redis = connect(redis_cluster.url, cluster=True)
    seen: set[str] = set()

    async def handle(event: Event) -> None:
        seen.add(event.question_id)

    # A consumer may be called "streams": the keys are those after the STREAMS option.
    consumer = StreamConsumer(redis, "web", "streams", handle, block_ms=50)
    stop = asyncio.Event()
    reader = asyncio.create_task(consumer.run(stop))
    try:
        before = command_calls(redis_cluster, "xreadgroup", "command|getkeys")
        ids = {f"q{shard:02x}{shard:016x}" for shard in range(keys.SHARDS)}
        for qid in ids:
            entry = {"type": "question.resolved", "id": qid}
            await redis.xadd(keys.events(keys.shard_of(qid), "web"), entry)
        await eventually(lambda: ids <= seen, "every shard's entry read", 30)
        after = command_calls(redis_cluster, "xreadgroup", "command|getkeys")
    finally:
        stop.set()
        await asyncio.wait_for(reader, 15)
        await redis.aclose()
    assert after["xreadgroup"] - before["xreadgroup"] >= keys.SHARDS
    assert after["command|getkeys"] == before["command|getkeys"]
