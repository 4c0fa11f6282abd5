"""A stream consumer on a 3-master Redis Cluster while masters are killed -9 and started
again: it goes on reading every shard's stream. (The webhooks service is one consumer
for all shards: a reader that stopped there left its shard's webhooks undelivered.)"""

from __future__ import annotations

import asyncio
import secrets

import pytest
from askgate.dev.redis_server import RedisClusterProcess
from askgate.runtime.consumer import Event, StreamConsumer
from askgate.store import keys
from askgate.store.conn import Client, connect

from tests.support.waiting import eventually

CHANNEL = "webhook"


async def resolved_on_every_shard(client: Client) -> set[str]:
    """One `question.resolved` entry in each shard's stream; the ids written."""
    ids = set()
    for shard in range(keys.SHARDS):
        qid = f"q{shard:02x}{secrets.token_hex(8)}"
        await client.xadd(keys.events(shard, CHANNEL), {"type": "question.resolved", "id": qid})
        ids.add(qid)
    return ids


# redis-py's cluster client may leave a refused connection to the dead node for the
# garbage collector (an unclosed StreamWriter): its warning, not a failure of ours.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_every_shard_is_still_read_after_masters_were_killed(
    own_cluster: RedisClusterProcess,
) -> None:
    """Two masters killed and restarted in turn under a consumer of every shard's stream:
    afterwards an event on any shard is handled."""
    reader = connect(own_cluster.url, cluster=True)
    writer = connect(own_cluster.url, cluster=True)
    handled: set[str] = set()

    async def handle(event: Event) -> None:
        handled.add(event.question_id)

    # A read whose reply a kill cut off leaves its entries pending: reclaimed soon here.
    consumer = StreamConsumer(
        reader, CHANNEL, "webhooks:1", handle, block_ms=200, claim_idle_ms=500, claim_every_s=0.5
    )
    stop = asyncio.Event()
    running = asyncio.create_task(consumer.run(stop))
    try:
        before = await resolved_on_every_shard(writer)
        await eventually(lambda: before <= handled, "every shard read once", 30)
        for node in (1, 2):
            own_cluster.kill(node)
            await asyncio.to_thread(own_cluster.restart, node, 60.0)
        after = await resolved_on_every_shard(writer)
        # A bound, not a timing: on a loaded machine redis-py's cluster client can go on
        # dropping connections for tens of seconds after a kill (each error on a node
        # disconnects the idle connections other reads are just taking).
        await eventually(lambda: after <= handled, "every shard read after the kills", 120)
    finally:
        stop.set()
        await running
        await reader.aclose()
        await writer.aclose()
