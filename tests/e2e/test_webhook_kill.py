"""kill -9 of the webhook workers mid-POST: the real `askgate-webhooks` service (stream
consumer, reaper, two RQ worker processes) against a slow local receiver. Both workers
die while their POSTs hang; the service restarts them, the reaper finds the abandoned
attempts, and every delivery ends delivered once, its attempts listed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from askgate.settings import Settings

from tests.integration.http_receiver import Receiver
from tests.support.asks import Tenant, ask_body, make_settings
from tests.support.waiting import eventually

LOCAL = "127.0.0.0/8"
ENV = {
    "ASKGATE_OUTBOUND_ALLOW": LOCAL,
    "ASKGATE_WEBHOOK_WORKERS": "2",
    # Long enough that a held POST is still waiting when its worker is killed; the
    # attempt's lease (RQ's job timeout + slack) follows from it.
    "ASKGATE_WEBHOOK_TIMEOUT_S": "2",
    "ASKGATE_WEBHOOK_BACKOFF_S": "0.05",
    "ASKGATE_CONSUMER_BLOCK_MS": "100",
    "ASKGATE_LOG_LEVEL": "warning",
}


@pytest.fixture
def settings(redis_url: str) -> Settings:
    return make_settings(redis_url, outbound_allow=LOCAL)


@pytest.fixture
def webhooks(redis_url: str) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "askgate_webhooks"],
        env={**os.environ, "REDIS_URL": redis_url, **ENV},
    )
    yield proc
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def children(pid: int) -> list[int]:
    """The live child processes of `pid` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


async def test_killed_workers_mid_post_end_delivered_once(
    app_client: httpx.AsyncClient, tenant: Tenant, webhooks: subprocess.Popen[bytes]
) -> None:
    """Both RQ workers killed (-9) during slow POSTs: each delivery is retried as attempt 2,
    ends delivered exactly once, and lists the interrupted attempt 1."""
    gate = threading.Event()
    with Receiver(gate=gate) as receiver:
        await eventually(lambda: _ready(webhooks.pid), "two RQ workers", 45)
        qids = []
        for session in ("k1", "k2"):
            r = await app_client.post(
                "/v1/questions",
                headers=tenant.headers,
                json=ask_body(session=session, callback_url=receiver.url),
            )
            qids.append(r.json()["id"])
            await app_client.post(f"/v1/questions/{qids[-1]}/skip", headers=tenant.headers)
        await receiver.wait_for(2)  # both attempts 1 are held mid-POST
        workers = children(webhooks.pid)
        assert len(workers) == 2
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        gate.set()  # from now on the receiver answers (the held ones answer dead sockets)

        async def settled() -> bool:
            hooks = [await _hook(app_client, tenant, q) for q in qids]
            return all(h and h["status"] != "pending" for h in hooks)

        await eventually(settled, "both deliveries to settle", 45)
        assert not set(workers) & set(children(webhooks.pid))  # the workers were replaced
        for qid in qids:
            h = await _hook(app_client, tenant, qid)
            assert h is not None and h["status"] == "delivered"
            assert [a.get("error") or a.get("status_code") for a in h["attempts"]] == [
                "interrupted",
                200,
            ]
            sent = [
                r.headers["x-askgate-attempt"]
                for r in receiver.received
                if r.json()["question_id"] == qid
            ]
            assert sent == ["1", "2"]


async def _ready(pid: int) -> bool:
    return len(children(pid)) == 2


async def _hook(client: httpx.AsyncClient, tenant: Tenant, qid: str) -> dict[str, Any] | None:
    r = await client.get(f"/v1/questions/{qid}", headers=tenant.headers)
    hook = r.json()["webhook"]
    return dict(hook) if hook else None
