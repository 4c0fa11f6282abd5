"""askgate on a 3-master Redis Cluster: REDIS_URL names one node and
ASKGATE_REDIS_CLUSTER=true makes every client a RedisCluster. Each test works on the
shards of every node (asks, answers, sweeps, timers, aborts, stream reads, waiters) or
takes a node away (readiness, the sweeper), or moves a slot under a waiter."""

from __future__ import annotations

import asyncio
import importlib
import itertools
import os
import secrets
from collections import Counter
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import httpx
import pytest
from askgate.dev.redis_server import CLUSTER_SLOTS, RedisClusterProcess, free_port
from askgate.domain.errors import ConfigError
from askgate.domain.models import QuestionCreate
from askgate.domain.timeutil import now_ms
from askgate.runtime.consumer import Event, StreamConsumer
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.conn import check_mode, connect, connect_sync, node_groups, warm
from askgate.store.store import Store
from askgate.store.tenants import create_tenant, tenant_for_key
from askgate_sweeper.__main__ import redis_client as sweeper_client
from askgate_sweeper.__main__ import sweep_once
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from tests.integration.http_receiver import Receiver
from tests.support.asks import Tenant, ask_body, make_settings
from tests.support.cli import askgate_cli
from tests.support.waiting import eventually

FUTURE_MS = 10**13  # past every deadline


def node_of(client: RedisCluster, shard: int) -> int:
    return int(client.get_node_from_key(keys.tag(shard)).port)


def port_of(client: RedisCluster, tenant: str, session: str) -> int:
    return node_of(client, keys.shard_for(tenant, session))


async def sessions_on_every_node(client: RedisCluster, tenant: str, each: int = 1) -> list[str]:
    """`each` session names per cluster node (a node's together), each hashing to a shard
    that node serves."""
    await client.initialize()
    found: dict[int, list[str]] = {}
    nodes = len(client.get_primaries())
    for i in range(1000):
        session = f"s{i}"
        on = found.setdefault(node_of(client, keys.shard_for(tenant, session)), [])
        if len(on) < each:
            on.append(session)
        if len(found) == nodes and all(len(s) == each for s in found.values()):
            return [s for sessions in found.values() for s in sessions]
    raise AssertionError("no session found for some node")


async def ask(store: Store, tenant: str, session: str, **extra: Any) -> str:
    rec, created = await store.create(
        tenant, QuestionCreate.model_validate(ask_body(session=session, **extra))
    )
    assert created
    return rec.id


@pytest.fixture
async def cluster_tenant(cluster_redis: RedisCluster) -> Tenant:
    t, key = await create_tenant(cluster_redis, "acme-" + secrets.token_hex(3))
    return Tenant(t.id, key, t.webhook_secret)


@pytest.fixture
def cluster_settings(redis_cluster: RedisClusterProcess) -> Settings:
    return make_settings(redis_cluster.url, redis_cluster=True)


def test_fixture_is_three_masters_sharing_every_slot(redis_cluster: RedisClusterProcess) -> None:
    """The fixture's cluster has three masters whose slot ranges cover all 16384 slots."""
    ranges = redis_cluster.slot_ranges()
    assert len(ranges) == 3 and ranges[0][0] == 0 and ranges[-1][1] == CLUSTER_SLOTS - 1
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(ranges))
    assert all(node.port + 10000 <= 65535 for node in redis_cluster.nodes)


def test_new_shards_spread_evenly_over_the_three_masters(
    redis_cluster: RedisClusterProcess,
) -> None:
    """Each master of the fixture serves 16 of the 48 shards new asks go to."""
    served = Counter(
        redis_cluster.owner(key_slot(keys.tag(shard).encode()))
        for shard in range(keys.LEGACY_SHARDS, keys.SHARDS)
    )
    assert sorted(served.values()) == [16, 16, 16]


def test_connect_gives_a_cluster_client_when_clustered(redis_cluster: RedisClusterProcess) -> None:
    """connect(cluster=True) is redis-py's RedisCluster, with the URL as startup node."""
    client = connect(redis_cluster.url, cluster=True)
    assert isinstance(client, RedisCluster)  # nothing is connected until a command


def test_plain_client_refuses_a_cluster_node(redis_cluster: RedisClusterProcess) -> None:
    """The start-up check stops a plain client on a cluster node, saying what to set."""
    with pytest.raises(ConfigError, match="set ASKGATE_REDIS_CLUSTER=true"):
        check_mode(redis_cluster.url, cluster=False)


def test_jobs_redis_on_a_cluster_node_is_refused(redis_cluster: RedisClusterProcess) -> None:
    """A jobs Redis (RQ) that is a cluster node is refused, naming ASKGATE_JOBS_REDIS_URL."""
    with pytest.raises(ConfigError, match=r"ASKGATE_JOBS_REDIS_URL .* is a Redis Cluster node"):
        check_mode(redis_cluster.url, cluster=False, url_var="ASKGATE_JOBS_REDIS_URL")


def test_cluster_client_refuses_a_plain_redis(redis_url: str) -> None:
    """ASKGATE_REDIS_CLUSTER=true against a plain Redis is refused too."""
    with pytest.raises(ConfigError, match="unset ASKGATE_REDIS_CLUSTER"):
        check_mode(redis_url, cluster=True)


def test_start_up_check_passes_an_unreachable_redis() -> None:
    """A Redis that cannot be reached is not judged: services ride out the outage."""
    assert check_mode(f"redis://127.0.0.1:{free_port()}/0", cluster=False) is None


async def test_tenant_is_created_and_found_on_a_cluster(cluster_redis: RedisCluster) -> None:
    """create_tenant is no cross-slot transaction: it works, and its API key finds it."""
    tenant, api_key = await create_tenant(cluster_redis, "acme")
    found = await tenant_for_key(cluster_redis, api_key)
    assert found is not None and found.id == tenant.id
    assert cluster_redis.keyslot(keys.tenant(tenant.id)) == cluster_redis.keyslot(
        keys.tenant_api_keys(tenant.id)
    )


async def test_store_asks_answers_and_sweeps_on_every_node(
    cluster_redis: RedisCluster, cluster_settings: Settings, cluster_tenant: Tenant
) -> None:
    """On shards of each of the three nodes a question is created, answered or swept."""
    store = Store(cluster_redis, cluster_settings)
    sessions = await sessions_on_every_node(cluster_redis, cluster_tenant.id)
    answered = [await ask(store, cluster_tenant.id, s + "-a") for s in sessions]
    expiring = [await ask(store, cluster_tenant.id, s, timeoutSeconds=1) for s in sessions]
    for qid in answered:
        rec = await store.answer(cluster_tenant.id, qid, {"deploy_target": ["Production"]})
        assert rec.status == "answered"
    assert await sweep_once(store, now=FUTURE_MS) == len(expiring)
    for qid in expiring:
        rec = await store.get(cluster_tenant.id, qid)
        assert (rec.status, rec.reason) == ("no_answer", "timeout")
        assert await cluster_redis.get(keys.result_key(qid)) is not None


async def test_timers_late_answers_and_metrics_on_every_node(
    cluster_redis: RedisCluster, cluster_settings: Settings, cluster_tenant: Tenant
) -> None:
    """Reminders and steps fire, late answers are kept and every shard's counters are read
    on shards of each node (every key of those scripts is declared, in one slot)."""
    from askgate.domain.errors import AlreadyFinal
    from askgate.store.metrics import render
    from askgate_sweeper.__main__ import timers_once

    store = Store(cluster_redis, cluster_settings)
    sessions = await sessions_on_every_node(cluster_redis, cluster_tenant.id)
    tg = {"channel": "telegram", "chat_id": "1"}
    ids = [
        await ask(
            store,
            cluster_tenant.id,
            s,
            targets=[tg],
            remind={"every_s": 60, "max": 1},
            escalate=[{"after_s": 90, "targets": [tg]}],
        )
        for s in sessions
    ]
    assert await timers_once(store, now=FUTURE_MS) == 2 * len(ids)
    assert await sweep_once(store, now=FUTURE_MS) == len(ids)
    for qid in ids:
        with pytest.raises(AlreadyFinal) as exc:
            await store.answer(cluster_tenant.id, qid, {"deploy_target": "1"})
        assert exc.value.late
    assert f"askgate_late_answers_total {len(ids)}" in render(await store.counters())


async def test_abort_run_on_a_cluster(
    cluster_redis: RedisCluster, cluster_settings: Settings, cluster_tenant: Tenant
) -> None:
    """A run's pending questions on every node end as run_aborted."""
    store = Store(cluster_redis, cluster_settings)
    sessions = await sessions_on_every_node(cluster_redis, cluster_tenant.id)
    ids = [await ask(store, cluster_tenant.id, s, run_id="r1") for s in sessions]
    assert sorted(await store.abort_run(cluster_tenant.id, "r1")) == sorted(ids)


async def test_stream_consumer_reads_events_on_a_cluster(
    cluster_redis: RedisCluster, cluster_settings: Settings, cluster_tenant: Tenant
) -> None:
    """A channel's consumer group receives the question.created event of an ask on a
    shard of each node (one blocking read per shard stream)."""
    store = Store(cluster_redis, cluster_settings)
    seen: list[Event] = []

    async def handle(event: Event) -> None:
        seen.append(event)

    consumer = StreamConsumer(cluster_redis, "web", "c1", handle, block_ms=100)
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.run(stop))
    sessions = await sessions_on_every_node(cluster_redis, cluster_tenant.id)
    ids = [await ask(store, cluster_tenant.id, s) for s in sessions]
    await eventually(lambda: len(seen) >= len(ids) or task.done(), "every event")
    stop.set()
    await asyncio.wait_for(task, 15)
    assert sorted(e.question_id for e in seen) == sorted(ids)


async def test_a_pipeline_group_is_a_node_or_else_a_slot(
    redis_cluster: RedisClusterProcess,
) -> None:
    """A reclaim pipelines the streams of each master together (three groups for the 64
    streams here); a client that has not learnt the slot map yet groups them by slot."""
    streams = keys.all_events("web")
    unlearnt = connect(redis_cluster.url, cluster=True)
    try:
        assert sorted(map(len, node_groups(unlearnt, streams))) == [1] * len(streams)
        await warm(unlearnt)
        groups = node_groups(unlearnt, streams)
        assert len(groups) == redis_cluster.masters
        assert sorted(s for g in groups for s in g) == sorted(streams)
    finally:
        await unlearnt.aclose()


async def test_a_dead_consumers_entries_are_reclaimed_on_a_cluster(
    cluster_redis: RedisCluster, cluster_settings: Settings, cluster_tenant: Tenant
) -> None:
    """Entries one consumer read and never acknowledged (it died) are handled by another
    consumer of the group, on every node's shards."""
    store = Store(cluster_redis, cluster_settings)
    dead = StreamConsumer(
        cluster_redis, "web", "dead", handler=lambda e: asyncio.sleep(0), block_ms=10
    )
    await dead.ensure_groups()
    sessions = await sessions_on_every_node(cluster_redis, cluster_tenant.id)
    ids = [await ask(store, cluster_tenant.id, s) for s in sessions]
    taken: list[Event] = []
    # Read, never acknowledged: the streams of the asked sessions' shards (an empty one
    # would hold its read for the block, which Redis ends on its 100 ms clock, not 10 ms).
    for shard in sorted({keys.shard_for(cluster_tenant.id, s) for s in sessions}):
        taken += await dead.read(streams=[keys.events(shard, "web")])
    assert sorted(e.question_id for e in taken) == sorted(ids)
    seen: list[Event] = []

    async def handle(event: Event) -> None:
        seen.append(event)

    alive = StreamConsumer(
        cluster_redis, "web", "alive", handle, block_ms=100, claim_idle_ms=0, claim_every_s=0.1
    )
    stop = asyncio.Event()
    task = asyncio.create_task(alive.run(stop))
    await eventually(lambda: len(seen) >= len(ids) or task.done(), "the reclaimed entries")
    stop.set()
    await asyncio.wait_for(task, 15)
    assert sorted(e.question_id for e in seen) == sorted(ids)


async def test_control_ui_reader_hears_every_node_on_a_cluster(
    redis_cluster: RedisClusterProcess,
    cluster_redis: RedisCluster,
    cluster_settings: Settings,
    cluster_tenant: Tenant,
) -> None:
    """The web service's broadcast read wakes the page of a session on each node."""
    from askgate_web.feed import PageFeed

    # Its own client, as in the web service: its blocking reads (one per shard) hold
    # their connections, which the asks below must not have to share.
    reader = connect(redis_cluster.url, cluster=True)
    feed = PageFeed()
    task = asyncio.create_task(feed.run(reader))
    try:
        await asyncio.wait_for(feed.ready.wait(), 15)
        store = Store(cluster_redis, cluster_settings)
        for session in await sessions_on_every_node(cluster_redis, cluster_tenant.id):
            page = feed.subscribe(cluster_tenant.id, session)
            qid = await ask(store, cluster_tenant.id, session)
            change = await asyncio.wait_for(page.get(), 15)
            assert change is not None and change.question_id == qid
    finally:
        feed.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await reader.aclose()


@pytest.fixture
async def cluster_api(
    cluster_settings: Settings, cluster_redis: RedisCluster
) -> AsyncIterator[httpx.AsyncClient]:
    """The real API app on the cluster, behind an in-process httpx client."""
    from askgate_api.app import create_app

    app = create_app(cluster_settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://askgate") as client:
            client.app = app  # type: ignore[attr-defined]
            yield client


async def test_api_asks_and_wakes_a_waiter_on_every_node(
    cluster_api: httpx.AsyncClient, cluster_redis: RedisCluster, cluster_tenant: Tenant
) -> None:
    """Through the HTTP API each node's shards take an ask, and a waiter gets the answer."""
    h = cluster_tenant.headers
    assert (await cluster_api.get("/readyz")).status_code == 200
    waiters = cluster_api.app.state.waiters  # type: ignore[attr-defined]
    for session in await sessions_on_every_node(cluster_redis, cluster_tenant.id):
        made = await cluster_api.post("/v1/questions", json=ask_body(session=session), headers=h)
        assert made.status_code == 201, made.text
        qid = made.json()["id"]
        waiter = asyncio.create_task(
            cluster_api.get(f"/v1/questions/{qid}/wait?timeout_s=30", headers=h)
        )
        await eventually(partial(waiters.waiting, qid), "the waiter parked before the answer")
        answer = await cluster_api.post(f"/v1/questions/{qid}/reply", json={"text": "2"}, headers=h)
        assert answer.status_code == 200, answer.text
        done = await asyncio.wait_for(waiter, 30)
        assert done.json()["status"] == "answered"


async def test_a_waiter_is_woken_after_its_slot_moved(own_cluster: RedisClusterProcess) -> None:
    """A long-poll waiter whose question's slot moves to another node while it waits is
    still told the answer: the API's sharded listener follows the slot to its new node
    (the wait does not fall back to polling: the waiters is ready when the answer comes)."""
    from askgate_api.app import create_app
    from askgate_api.waiters import ShardedWaiters

    app = create_app(make_settings(own_cluster.url, redis_cluster=True))
    async with app.router.lifespan_context(app):
        waiters = app.state.waiters
        assert isinstance(waiters, ShardedWaiters)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://askgate") as api:
            _, api_key = await create_tenant(app.state.redis, "acme")
            h = {"Authorization": f"Bearer {api_key}"}
            made = await api.post("/v1/questions", json=ask_body(session="moving"), headers=h)
            qid = made.json()["id"]
            shard = keys.shard_of(qid)
            waiter = asyncio.create_task(
                api.get(f"/v1/questions/{qid}/wait?timeout_s=60", headers=h)
            )
            await eventually(lambda: waiters.waiting(qid), "the waiter")
            slot = key_slot(keys.done_channel(shard).encode())
            to = (own_cluster.owner(slot) + 1) % len(own_cluster.nodes)
            own_cluster.migrate_slot(slot, to)
            new_node = ("127.0.0.1", own_cluster.nodes[to].port)

            def rearmed() -> bool:
                return waiters.ready.is_set() and shard in waiters.listening().get(new_node, ())

            await eventually(rearmed, "the listener on the slot's new node", 30)
            await eventually(lambda: waiters.waiting(qid), "the waiter parked again")
            answer = await api.post(f"/v1/questions/{qid}/reply", json={"text": "2"}, headers=h)
            assert answer.status_code == 200, answer.text
            assert waiters.ready.is_set()
            done = await asyncio.wait_for(waiter, 90)
            assert done.json()["status"] == "answered"


async def test_readyz_only_while_every_master_is_reachable(
    own_cluster: RedisClusterProcess,
) -> None:
    """/readyz is 503 while one master is down, and 200 again once it is back."""
    from askgate_api.app import create_app

    app = create_app(make_settings(own_cluster.url, redis_cluster=True))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://askgate") as api:
            assert (await api.get("/readyz")).status_code == 200
            own_cluster.kill(2)  # not the startup node, which the result subscription uses
            down = await api.get("/readyz")
            assert down.status_code == 503 and down.headers["retry-after"]
            own_cluster.restart(2)

            async def ready() -> bool:  # the client re-learns the topology on its next command
                return (await api.get("/readyz")).status_code == 200

            await eventually(ready, "/readyz 200 with every master back", 30)


# redis-py's cluster client may leave a refused connection to the dead node for the
# garbage collector (an unclosed StreamWriter): its warning, not a failure of ours.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("down", [0, 1, 2])
async def test_sweeper_goes_on_past_a_node_that_is_down(
    own_cluster: RedisClusterProcess, down: int
) -> None:
    """With one master down (the startup node and the master of slot 0 too), a pass still
    sweeps every overdue question on the other two, and so does the next pass."""
    settings = make_settings(own_cluster.url, redis_cluster=True)
    client = sweeper_client(settings)
    assert isinstance(client, RedisCluster)
    try:
        store = Store(client, settings)
        t, _ = await create_tenant(client, "acme")
        gone = own_cluster.nodes[down].port
        live = [
            s
            for s in await sessions_on_every_node(client, t.id, 2)
            if port_of(client, t.id, s) != gone
        ]
        soon = [await ask(store, t.id, s, timeoutSeconds=60) for s in live[::2]]
        later = [await ask(store, t.id, s, timeoutSeconds=3600) for s in live[1::2]]
        own_cluster.kill(down)
        assert await sweep_once(store, now=now_ms() + 600_000) == len(soon) == 2
        assert await sweep_once(store, now=FUTURE_MS) == len(later) == 2
        for qid in soon + later:
            rec = await store.load(qid)
            assert rec is not None and rec.status == "no_answer"
    finally:
        await client.aclose()


async def test_a_client_started_while_the_slot_0_master_is_down_serves_the_others(
    own_cluster: RedisClusterProcess,
) -> None:
    """A process that starts while the master of slot 0 is down (redis-py asks it first)
    still reads and writes the shards of the other masters."""
    own_cluster.kill(0)
    client = connect(own_cluster.nodes[1].url, cluster=True)
    assert isinstance(client, RedisCluster)
    try:
        await client.initialize()
        live = [s for s in range(keys.SHARDS) if node_of(client, s) != own_cluster.nodes[0].port]
        assert live
        for shard in live:
            await client.set(keys.tag(shard) + ":probe", "ok")
        assert await client.get(keys.tag(live[-1]) + ":probe") == b"ok"
    finally:
        await client.aclose()


def test_webhook_job_runs_on_the_jobs_redis(
    redis_cluster: RedisClusterProcess, redis_url: str
) -> None:
    """The first webhook job is queued on ASKGATE_JOBS_REDIS_URL (RQ cannot use the
    cluster) and an RQ worker there delivers it, recording it on the clustered question."""
    from askgate_webhooks import jobs
    from askgate_webhooks.config import WebhookSettings
    from askgate_webhooks.worker import WebhookEnqueuer
    from rq import Queue, SimpleWorker

    # The receiver is local: the outbound policy refuses loopback unless it is opened.
    settings = WebhookSettings(
        redis_url=redis_cluster.url,
        redis_cluster=True,
        jobs_redis_url=redis_url,
        secret_key="x" * 32,
        outbound_allow="127.0.0.0/8",
    )
    store_sync = connect_sync(redis_cluster.url, cluster=True)
    jobs_sync = connect_sync(redis_url)
    jobs_sync.flushdb()
    redis_cluster.flush()

    async def ask_and_answer(url: str) -> str:
        store = Store(connect(redis_cluster.url, cluster=True), settings)
        tenant, _ = await create_tenant(store.redis, "hooks")
        qid = await ask(store, tenant.id, "hooked", callback_url=url)
        await store.answer(tenant.id, qid, {"deploy_target": ["Production"]})
        await store.redis.aclose()
        return qid

    try:
        with Receiver() as receiver:
            qid = asyncio.run(ask_and_answer(receiver.url))
            WebhookEnqueuer(store_sync, settings, jobs_redis=jobs_sync).start(qid)
            queue = Queue(keys.WEBHOOK_QUEUE, connection=jobs_sync)
            assert queue.get_job_ids() == [f"webhook-{qid}-1"]
            jobs.configure(settings)
            SimpleWorker([queue], connection=jobs_sync).work(burst=True)
            assert [r.json()["question_id"] for r in receiver.received] == [qid]
        hook = store_sync.hget(keys.question(qid), "webhook")
        assert hook is not None and b'"delivered"' in hook
    finally:
        jobs.close_stores()
        store_sync.close()
        jobs_sync.close()


def test_cli_creates_a_tenant_on_a_cluster(redis_cluster: RedisClusterProcess) -> None:
    """`askgate tenant create` with ASKGATE_REDIS_CLUSTER=true prints a working key."""
    done = askgate_cli(redis_cluster.url, "tenant", "create", "acme", ASKGATE_REDIS_CLUSTER="true")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("ag_")


def test_cli_without_the_cluster_flag_says_what_to_set(
    redis_cluster: RedisClusterProcess,
) -> None:
    """Without the flag the CLI refuses (exit 2) and names ASKGATE_REDIS_CLUSTER."""
    done = askgate_cli(redis_cluster.url, "tenant", "list")
    assert done.returncode == 2
    assert "set ASKGATE_REDIS_CLUSTER=true" in done.stderr


def start_service(
    module: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], **env: str
) -> tuple[object, str]:
    """`python -m <module>`'s entry point run here with only `env` set (no other
    ASKGATE_ variable): its exit code and what it printed on stderr. (In this process:
    a new interpreter per service cost seconds, aiogram's import alone; the `-m` start
    itself is what the e2e tests' service processes do.)"""
    for name in os.environ:
        if name.startswith("ASKGATE_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    main = importlib.import_module(f"{module}.__main__").main
    with pytest.raises(SystemExit) as exited:
        if module == "askgate_api":
            main()  # the API takes no arguments
        else:
            main([])
    return exited.value.code, capsys.readouterr().err


@pytest.mark.parametrize(
    "module",
    ["askgate_api", "askgate_sweeper", "askgate_webhooks", "askgate_text", "askgate_telegram"],
)
def test_service_refuses_a_cluster_node_without_the_flag(
    redis_cluster: RedisClusterProcess,
    module: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each service's start-up check exits 2 on a cluster node, naming the setting."""
    code, err = start_service(
        module,
        monkeypatch,
        capsys,
        REDIS_URL=redis_cluster.url,
        ASKGATE_SECRET_KEY="k" * 32,
    )
    assert code == 2, err
    assert "set ASKGATE_REDIS_CLUSTER=true" in err


def test_webhooks_on_a_cluster_needs_a_jobs_redis(
    redis_cluster: RedisClusterProcess,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Clustered, the webhook service refuses to start until ASKGATE_JOBS_REDIS_URL is set."""
    code, err = start_service(
        "askgate_webhooks",
        monkeypatch,
        capsys,
        REDIS_URL=redis_cluster.url,
        ASKGATE_REDIS_CLUSTER="true",
    )
    assert code == 2, err
    assert "ASKGATE_JOBS_REDIS_URL must be set" in err


async def test_a_process_reads_the_command_table_once(redis_cluster: RedisClusterProcess) -> None:
    """redis-py's cluster client reads the command table (COMMAND) to find a command's
    keys; askgate's clients of one process read it once, and find keys with it."""

    async def command_calls(client: RedisCluster) -> int:
        stats = await client.info("commandstats", target_nodes=RedisCluster.ALL_NODES)
        return sum(int(node.get("cmdstat_command", {}).get("calls", 0)) for node in stats.values())

    first = connect(redis_cluster.url, cluster=True)
    second = connect(redis_cluster.url, cluster=True)
    assert isinstance(first, RedisCluster) and isinstance(second, RedisCluster)
    try:
        await first.initialize()
        before = await command_calls(first)
        await second.initialize()
        for n in range(20):  # keys on every node
            await second.set(f"k{n}", n)
        assert [await second.get(f"k{n}") for n in range(20)] == [b"%d" % n for n in range(20)]
        assert await command_calls(first) == before
    finally:
        await first.aclose()
        await second.aclose()
