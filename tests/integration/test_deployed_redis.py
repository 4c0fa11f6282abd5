"""The Redis the deployment files run keeps accepted questions across a crash: a
redis-server started with exactly the arguments of deploy/compose.yml (and of the k8s dev
overlay), its data directory standing in for the volume, is killed, started again on the
same directory and read back."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml
from askgate.dev.redis_server import RedisProcess, newest_redis_server
from askgate.domain.models import QuestionCreate
from askgate.store.conn import connect
from askgate.store.store import Store
from askgate.store.tenants import create_tenant

from tests.support.asks import ask_body, make_settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def compose_args() -> list[str]:
    compose: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yml").read_text())
    return list(compose["services"]["redis"]["command"])


def k8s_dev_args() -> list[str]:
    docs = yaml.safe_load_all((DEPLOY / "k8s" / "overlays" / "dev" / "redis.yaml").read_text())
    (deployment,) = [d for d in docs if d and d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


@pytest.mark.parametrize("deployed", [compose_args, k8s_dev_args], ids=["compose", "k8s-dev"])
async def test_accepted_question_survives_a_redis_crash(tmp_path: Path, deployed: Any) -> None:
    """Asked, then Redis is killed (SIGKILL: no shutdown save) and started again: the
    question is still there, pending, with its questions. (Without the AOF the deployed
    Redis would keep only its last RDB snapshot and lose it.)"""
    argv = deployed()
    assert argv[0] == "redis-server", argv
    # The deployed arguments come last, so they win over RedisProcess's test defaults.
    server = RedisProcess(data_dir=str(tmp_path), binary=newest_redis_server(), extra_args=argv[1:])
    server.start()
    try:
        settings = make_settings(server.url)
        redis = connect(server.url)
        tenant, _ = await create_tenant(redis, "persist-" + secrets.token_hex(3))
        rec, created = await Store(redis, settings).create(
            tenant.id, QuestionCreate.model_validate(ask_body(session="kept"))
        )
        assert created
        await redis.aclose()

        server.stop()  # SIGKILL
        server.start()

        redis = connect(server.url)
        back = await Store(redis, settings).load(rec.id)
        await redis.aclose()
        assert back is not None, "the question was lost across the restart"
        assert back.status == "pending"
        assert back.f["doc"] == rec.f["doc"]
    finally:
        server.stop()
