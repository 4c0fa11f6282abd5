"""ASKGATE_REDIS_WAIT_REPLICAS: an ask is answered 201 only once the replicas of its
node have it, so a failover (a replica promoted) loses no ask the agent was told about."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from askgate.dev.redis_server import RedisClusterProcess, RedisProcess
from askgate.domain.errors import Unavailable
from askgate.domain.models import QuestionCreate
from askgate.store import keys
from askgate.store.conn import connect
from askgate.store.store import Store
from askgate.store.tenants import create_tenant
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import RedisError

from tests.support.asks import ask_body, make_settings
from tests.support.waiting import eventually


@pytest.fixture
def replicated_cluster() -> Iterator[RedisClusterProcess]:
    """3 masters with a replica each, to kill a master of."""
    with RedisClusterProcess(replicas=1) as cluster:
        yield cluster


# redis-py may leave its refused connections to the dead master for the collector.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_a_failover_keeps_every_accepted_ask(
    replicated_cluster: RedisClusterProcess,
) -> None:
    """Asks accepted with WAIT 1 on every master are all there after one master is
    killed and its replica has taken over."""
    cluster = replicated_cluster
    settings = make_settings(cluster.url, redis_cluster=True, redis_wait_replicas=1)
    client = connect(cluster.url, cluster=True, connect_timeout_s=0.5)
    assert isinstance(client, RedisCluster)
    store = Store(client, settings)
    try:
        tenant, _ = await create_tenant(client, "acme")
        ids = []
        for i in range(60):  # over the shards of every master
            rec, created = await store.create(
                tenant.id,
                QuestionCreate.model_validate(ask_body(f"s{i}")),
                max_pending=1000,
                asks_per_s=1000,
            )
            assert created
            ids.append(rec.id)
        slot = key_slot(keys.tag(keys.shard_of(ids[0])).encode())
        victim = cluster.owner(slot)
        cluster.kill(victim)
        await eventually(lambda: cluster.owner(slot) != victim, "a replica taking over", 30)

        async def found() -> bool:
            try:
                return all([await store.load(qid) is not None for qid in ids])
            except (RedisError, OSError):
                return False  # the client is still learning the new primary

        await eventually(found, "every accepted ask", 30)
    finally:
        await store.aclose()
        await client.aclose()


async def test_an_ask_no_replica_has_is_not_accepted(redis_server: RedisProcess) -> None:
    """With WAIT 1 and no replica, the ask is answered 503 naming the retry, not 201."""
    settings = make_settings(redis_server.url, redis_wait_replicas=1, redis_wait_timeout_ms=50)
    client = connect(redis_server.url)
    store = Store(client, settings)
    try:
        tenant, _ = await create_tenant(client, "acme")
        body = QuestionCreate.model_validate(ask_body("s", tool_call_id="call-1"))
        with pytest.raises(Unavailable, match="not copied to 1 Redis replica"):
            await store.create(tenant.id, body)
    finally:
        await client.aclose()
