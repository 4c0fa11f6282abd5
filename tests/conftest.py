"""Fixtures shared by every test layer.

Redis is always a real `redis-server` started here on a free port (never the machine's
6379); each test gets it flushed. The API runs in-process with its lifespan, reached with
httpx; e2e tests start the services as processes instead (tests/e2e/conftest.py).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from askgate.dev.redis_server import RedisClusterProcess, RedisProcess
from askgate.settings import Settings
from askgate.store.conn import connect
from askgate.store.tenants import create_tenant
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

SECRET = "test-secret-" + "x" * 32


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for layer in ("unit", "integration", "e2e"):
            if f"tests/{layer}/" in str(item.path).replace("\\", "/"):
                item.add_marker(getattr(pytest.mark, layer))


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisProcess]:
    with RedisProcess() as server:
        yield server


@pytest.fixture
async def redis(redis_server: RedisProcess) -> AsyncIterator[Redis]:
    client = connect(redis_server.url, max_connections=64)
    await client.flushall()
    yield client
    await client.aclose()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisClusterProcess]:
    """A 3-master Redis Cluster shared by the session (tests that kill a node start
    their own: `own_cluster`)."""
    with RedisClusterProcess() as cluster:
        yield cluster


@pytest.fixture
def own_cluster() -> Iterator[RedisClusterProcess]:
    """A 3-master Redis Cluster for this test alone, to kill and restart nodes of."""
    with RedisClusterProcess() as cluster:
        yield cluster


@pytest.fixture
async def cluster_redis(redis_cluster: RedisClusterProcess) -> AsyncIterator[RedisCluster]:
    """A RedisCluster client of the emptied session cluster."""
    redis_cluster.flush()
    client = connect(redis_cluster.url, cluster=True, max_connections=64)
    assert isinstance(client, RedisCluster)
    yield client
    await client.aclose()


def make_settings(url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "redis_url": url,
        "secret_key": SECRET,
        "timeout_min_s": 1,
        "timeout_default_s": 900,
        "timeout_max_s": 3600,
        "sweep_interval_ms": 50,
        **overrides,
    }
    return Settings(**values)


@pytest.fixture
def settings(redis_server: RedisProcess) -> Settings:
    return make_settings(redis_server.url)


class Tenant:
    def __init__(self, tenant_id: str, api_key: str, webhook_secret: str) -> None:
        self.id = tenant_id
        self.api_key = api_key
        self.webhook_secret = webhook_secret
        self.headers = {"Authorization": f"Bearer {api_key}"}


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


def ask_body(session: str = "s1", **extra: Any) -> dict[str, Any]:
    """The README "The ask" example ask, with the context beside it."""
    return {
        "questions": [
            {
                "id": "deploy_target",
                "header": "Deploy",
                "question": "Where should I deploy this build?",
                "options": [
                    {"label": "Staging (Recommended)", "description": "Safe, reversible"},
                    {"label": "Production"},
                ],
                "multiSelect": False,
            }
        ],
        "timeoutSeconds": 900,
        "session": session,
        **extra,
    }
