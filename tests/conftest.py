"""Fixtures shared by every test layer.

Redis is always a real `redis-server` started here on a free port (never the machine's
6379), one per pytest process: `make test` runs the suite in pytest-xdist workers, each
with its own server. Every test gets a database of that server to itself (`redis_url`
ends in `/<n>`, a number no other test of the run uses), so a task a test leaves behind
cannot touch the next test's keys. Tests that use a service process shared by the
session (`api_server`, `web_server`) share its database 0 instead, emptied before each.
The API runs in-process with its lifespan, reached with httpx; e2e tests start the
services as processes instead (tests/e2e/conftest.py).
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import secrets
from collections.abc import AsyncIterator, Generator, Iterator
from typing import Any

import httpx
import pytest
from askgate.dev.redis_server import RedisClusterProcess, RedisProcess
from askgate.settings import Settings
from askgate.store.conn import connect, warm
from askgate.store.tenants import create_tenant
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from tests.support.asks import Tenant, make_settings
from tests.support.clusters import Spares
from tests.support.databases import DATABASES, SHARED_DB, own_database, start_redis
from tests.support.lanes import lanes

# Fixtures whose processes live for the whole session on SHARED_DB.
SESSION_SERVICES = frozenset({"api_server", "web_server"})


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Collection imports every service and its platform library (aiogram builds ~1,300
    pydantic models): without the cyclic collector it takes a quarter less CPU in each
    worker. What it imported is then frozen, as a service freezes its imports
    (askgate.runtime.runner): a full collection over that heap took 0.4-0.5 s on an idle
    core, and on busy ones it can outlast a connect's 1 s timeout (the likely cause of a
    Telegram test's "Timeout connecting to server" to its own local Redis)."""
    gc.disable()
    try:
        return (yield)
    finally:
        gc.freeze()
        gc.enable()


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    """After each test, the young garbage it left is collected (0.6 CPU-seconds over the
    whole suite), so what it left unclosed is reported on it (ResourceWarning, an error
    here) rather than on whichever test a later collection happens to run in. (A full
    collection after each test found more, but cost 27 CPU-seconds.)"""
    try:
        return (yield)
    finally:
        gc.collect(1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for layer in ("unit", "integration", "e2e"):
            if f"tests/{layer}/" in str(item.path).replace("\\", "/"):
                item.add_marker(getattr(pytest.mark, layer))
    # Every xdist worker collects and orders the same way (tests/support/lanes.py).
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    items[:] = lanes(items, int(workers), SESSION_SERVICES)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisProcess]:
    """This pytest process's redis-server (one per xdist worker)."""
    server = start_redis(extra_args=["--databases", str(DATABASES)])
    yield server
    server.stop()


@pytest.fixture(scope="session")
def shared_redis_url(redis_server: RedisProcess) -> str:
    """REDIS_URL for the session's service processes (SESSION_SERVICES)."""
    return f"redis://127.0.0.1:{redis_server.port}/{SHARED_DB}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module or test marked `both_redis` runs once on one Redis and once on the
    3-master cluster: its `redis`, `settings` (and what builds on them: `tenant`, the
    in-process apps) follow `redis_mode`."""
    # (A test that asks for redis_server or redis_url itself builds its own clients or
    # settings for one server.)
    own = set(inspect.signature(metafunc.function).parameters)
    if (
        metafunc.definition.get_closest_marker("both_redis")
        and "redis_mode" in metafunc.fixturenames
        and not own & {"redis_server", "redis_url"}
    ):
        metafunc.parametrize("redis_mode", ["one", "cluster"], indirect=True)


@pytest.fixture
def redis_mode(request: pytest.FixtureRequest) -> str:
    """'one' (a single redis-server) unless the test is marked both_redis."""
    return str(getattr(request, "param", "one"))


@pytest.fixture
def redis_url(request: pytest.FixtureRequest, redis_mode: str) -> str:
    """REDIS_URL for this test: the worker's server, a database of the test's own (or
    SHARED_DB when the test uses one of the session's service processes); the worker's
    3-master cluster when `redis_mode` says so."""
    if redis_mode == "cluster":
        cluster: RedisClusterProcess = request.getfixturevalue("redis_cluster")
        return cluster.url
    if SESSION_SERVICES & set(request.fixturenames):
        return request.getfixturevalue("shared_redis_url")  # type: ignore[no-any-return]
    return own_database(request.getfixturevalue("redis_server"))


@pytest.fixture
async def redis(
    request: pytest.FixtureRequest, redis_url: str, redis_mode: str
) -> AsyncIterator[Redis]:
    if redis_mode == "cluster":
        request.getfixturevalue("redis_cluster").flush()
        cluster = connect(redis_url, cluster=True, max_connections=256, connect_timeout_s=10)
        await warm(cluster)
        yield cluster
        await cluster.aclose()
        return
    # A generous connect timeout: a loaded machine can take seconds to accept a connection.
    client = connect(redis_url, max_connections=64, connect_timeout_s=10)
    await client.flushdb()
    yield client
    await client.aclose()


# The session's clusters (`redis_cluster`, `own_cluster`), launched ahead of the tests.
SPARES = Spares()


def pytest_sessionstart(session: pytest.Session) -> None:
    """In an xdist worker (`make test`), the first cluster is launched before the tests are
    collected, so that its masters' 2 s before they say ok pass during the collection (each
    worker's first cluster test waited them out)."""
    if hasattr(session.config, "workerinput"):
        SPARES.launch_first()


def pytest_sessionfinish(session: pytest.Session) -> None:
    SPARES.close()


@pytest.fixture(scope="session")
def spare_clusters() -> Spares:
    return SPARES


@pytest.fixture(scope="session")
def redis_cluster(spare_clusters: Spares) -> Iterator[RedisClusterProcess]:
    """A 3-master Redis Cluster shared by the session (tests that kill a node take
    their own: `own_cluster`)."""
    cluster = spare_clusters.take()
    yield cluster
    cluster.stop()


@pytest.fixture
def own_cluster(spare_clusters: Spares) -> Iterator[RedisClusterProcess]:
    """A 3-master Redis Cluster for this test alone, to kill and restart nodes of
    (formed while the test before it ran)."""
    cluster = spare_clusters.take()
    yield cluster
    cluster.stop()


@pytest.fixture
async def cluster_redis(redis_cluster: RedisClusterProcess) -> AsyncIterator[RedisCluster]:
    """A RedisCluster client of the emptied session cluster."""
    redis_cluster.flush()
    client = connect(redis_cluster.url, cluster=True, max_connections=256)
    assert isinstance(client, RedisCluster)
    yield client
    await client.aclose()


@pytest.fixture
def settings(redis_url: str, redis_mode: str) -> Settings:
    return make_settings(redis_url, redis_cluster=redis_mode == "cluster")


@pytest.fixture
async def tenant(redis: Redis) -> Tenant:
    t, key = await create_tenant(redis, "acme-" + secrets.token_hex(3))
    return Tenant(t.id, key, t.webhook_secret)


@pytest.fixture
async def other_tenant(redis: Redis) -> Tenant:
    t, key = await create_tenant(redis, "globex-" + secrets.token_hex(3))
    return Tenant(t.id, key, t.webhook_secret)


@pytest.fixture
async def app_client(settings: Settings, redis: Redis) -> AsyncIterator[httpx.AsyncClient]:
    """The real API app (lifespan included) behind an in-process httpx client."""
    from askgate_api.app import create_app

    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://askgate") as client:
            client.app = app  # type: ignore[attr-defined]
            yield client


@pytest.fixture
async def web_client(settings: Settings, redis: Redis) -> AsyncIterator[httpx.AsyncClient]:
    """The real web Control UI app (lifespan included) behind an in-process httpx client."""
    from askgate_web.app import create_app

    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://web") as client:
            yield client


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


CALL_FAILED = pytest.StashKey[bool]()
# Tasks a library makes for its caller, cancelled with the rest but not named as left:
# redis-py writes a command in a task of its own (asyncio.wait_for in
# send_packed_command), which a cluster client closed at a test's end was once found
# still finishing; a caller of ours that ran on would be named itself.
NOT_OURS = frozenset({"AbstractConnection._send_packed_command"})


def _task_name(task: asyncio.Task[object]) -> str:
    return str(getattr(task.get_coro(), "__qualname__", repr(task)))


@pytest.fixture(autouse=True)
async def no_task_left_behind(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """Tasks a test started and did not end are cancelled once its fixtures are torn
    down, so they cannot run on into the next test (which shares this worker's event
    loop); a test that passed while leaving some that nobody had cancelled fails, naming
    them. (Tasks the code under test cancelled on closing may still be on their way out.)"""
    before = asyncio.all_tasks()
    yield
    left = [t for t in asyncio.all_tasks() - before - {asyncio.current_task()} if not t.done()]
    if not left:
        return
    leaked = [t for t in left if not t.cancelling() and _task_name(t) not in NOT_OURS]
    for task in left:
        task.cancel()
    await asyncio.wait(left, timeout=10)
    if leaked and not request.node.stash.get(CALL_FAILED, True):
        names = sorted({_task_name(t) for t in leaked})
        pytest.fail(f"the test left {len(leaked)} task(s) running: {', '.join(names)}")


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> Any:
    """Every test's event loop is uvloop's, as in every askgate service (the runner, and
    uvicorn's `loop="uvloop"`): the in-process services run on the loop they are deployed
    on, for less CPU than asyncio's own (the Telegram, Slack and API tests in one process:
    33.3-35.8 -> 32.5-32.7 CPU-seconds, alternated). An agent's side keeps asyncio's
    default loop where it runs as a process: the MCP server over stdio, the client in a
    fresh interpreter. One factory, so the test ids stay as they are."""
    import uvloop

    return {"uvloop": uvloop.new_event_loop}
