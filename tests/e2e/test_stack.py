"""The stack as processes: the CLI makes a tenant, the API and a sweeper serve an agent
(on one Redis, and on the 3-master cluster for the first test)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from askgate.runtime import health
from askgate.settings import Settings
from askgate.store import keys
from askgate_sweeper.__main__ import SERVICE
from redis.asyncio import Redis

from tests.support.asks import ask_body
from tests.support.cli import askgate_cli
from tests.support.http import TLS
from tests.support.processes import ApiProcess
from tests.support.waiting import eventually


def _env(redis_url: str, cluster: bool = False, **extra: str) -> dict[str, str]:
    mode = {"ASKGATE_REDIS_CLUSTER": "true"} if cluster else {}
    return {**os.environ, "REDIS_URL": redis_url, "ASKGATE_LOG_LEVEL": "warning", **mode, **extra}


@pytest.fixture
def sweeper(settings: Settings) -> Iterator[subprocess.Popen[bytes]]:
    """`askgate-sweeper` as a process ticking every 50 ms."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "askgate_sweeper"],
        env=_env(settings.redis_url, settings.redis_cluster, ASKGATE_SWEEP_INTERVAL_MS="50"),
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


def check(redis_url: str) -> int:
    return subprocess.run(
        [sys.executable, "-m", "askgate_sweeper", "--check"],
        env=_env(redis_url),
        capture_output=True,
        timeout=60,
        check=False,
    ).returncode


@pytest.mark.both_redis
def test_stack_answers_and_expires(
    settings: Settings, api_process: ApiProcess, sweeper: subprocess.Popen[bytes]
) -> None:
    """A tenant from the CLI asks twice: one answered by reply, one expired by the sweeper."""
    mode = {"ASKGATE_REDIS_CLUSTER": "true"} if settings.redis_cluster else {}
    made = askgate_cli(settings.redis_url, "tenant", "create", "e2e", **mode)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert key.startswith("ag_") and "only its hash is stored" in made.stderr
    h = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=api_process.url, headers=h, timeout=30, verify=TLS) as c:
        q = c.post("/v1/questions", json=ask_body(session="e2e-1")).json()
        assert c.post(f"/v1/questions/{q['id']}/reply", json={"text": "2"}).status_code == 200
        done = c.get(f"/v1/questions/{q['id']}/wait", params={"timeout_s": 10}).json()
        assert done["result"] == {
            "status": "answered",
            "answers": {"answers": {"deploy_target": ["Production"]}},
        }

        q = c.post("/v1/questions", json=ask_body(session="e2e-2", timeoutSeconds=1)).json()
        done = c.get(f"/v1/questions/{q['id']}/wait", params={"timeout_s": 20}).json()
        assert done["result"] == {"status": "no_answer"}
        assert done["reason"] == "timeout"


async def test_sweeper_health_and_graceful_stop(
    redis_url: str, redis: Redis, sweeper: subprocess.Popen[bytes]
) -> None:
    """--check passes while the sweeper runs; SIGTERM stops it cleanly and --check fails."""
    # Its health key is what --check reads: waiting for it costs no interpreter per poll.
    alive = keys.health(SERVICE, health.instance_name())
    await eventually(lambda: redis.exists(alive), "the sweeper's health key", 30)
    assert await asyncio.to_thread(check, redis_url) == 0
    sweeper.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(sweeper.wait, 20) == 0
    assert await asyncio.to_thread(check, redis_url) == 1


def test_bad_config_is_refused_with_message(redis_url: str) -> None:
    """A bad setting stops the service at start-up with a message naming the variable."""
    proc = subprocess.run(
        [sys.executable, "-m", "askgate_sweeper"],
        env=_env(redis_url, ASKGATE_TIMEOUT_MIN_S="100", ASKGATE_TIMEOUT_DEFAULT_S="50"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "ASKGATE_TIMEOUT_MIN_S <= ASKGATE_TIMEOUT_DEFAULT_S" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "askgate_api"],
        env=_env(redis_url, ASKGATE_SECRET_KEY="short"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and "ASKGATE_SECRET_KEY must be set" in proc.stderr
