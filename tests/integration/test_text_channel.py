"""The plain-text channel: the real `askgate-text` worker (in-process, real Redis) POSTs
prompts and summaries to a local platform endpoint; the platform answers through the
API's session messages."""

from __future__ import annotations

import hashlib
import hmac

import httpx
import pytest
from askgate.settings import Settings
from askgate.store import keys
from redis.asyncio import Redis

from tests.integration.http_receiver import Receiver, Reply
from tests.support.asks import Tenant, ask_body, make_settings, question
from tests.support.text import LOCAL, StartWorker
from tests.support.waiting import eventually

TWO_QUESTIONS = [
    {
        "id": "deploy_target",
        "header": "Deploy",
        "question": "Where should I deploy this build?",
        "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}],
    },
    {
        "id": "notify",
        "header": "Notify",
        "question": "Who should I tell?",
        "options": [{"label": "Team"}, {"label": "Nobody"}],
    },
]


@pytest.fixture
def settings(redis_url: str) -> Settings:
    """The API's settings with the local platform's range opened."""
    return make_settings(redis_url, outbound_allow=LOCAL)


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    timestamp = headers["x-askgate-timestamp"]
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest("v1=" + mac.hexdigest(), headers["x-askgate-signature"])


async def test_round_trip_with_partial_reply_and_summary(
    app_client: httpx.AsyncClient, tenant: Tenant, receiver: Receiver, text_worker: StartWorker
) -> None:
    """Prompt POSTed, a partial reply corrected, the full reply answers, summary POSTed."""
    await text_worker()
    body = ask_body("chat-1", targets=[{"channel": "text", "url": receiver.url}])
    body["questions"] = TWO_QUESTIONS
    r = await app_client.post("/v1/questions", json=body, headers=tenant.headers)
    qid = r.json()["id"]

    (prompt,) = await receiver.wait_for(1)
    assert verify(tenant.webhook_secret, prompt.headers, prompt.body)
    sent = prompt.json()
    assert (sent["type"], sent["question_id"], sent["session"], sent["locale"]) == (
        "question",
        qid,
        "chat-1",
        "en",
    )
    assert sent["expires_at"] == r.json()["expires_at"]
    assert "1. [Deploy] Where should I deploy this build?" in sent["text"]
    assert "   2) Production" in sent["text"]
    assert "one line per question" in sent["text"]
    await eventually(lambda: _delivered(app_client, tenant, qid), "delivered", 30)

    r = await app_client.post(
        "/v1/sessions/chat-1/messages", json={"text": "2"}, headers=tenant.headers
    )
    partial = r.json()
    assert partial["consumed"] is False and partial["question"]["status"] == "pending"
    assert "Who should I tell?" in partial["message"]

    r = await app_client.post(
        "/v1/sessions/chat-1/messages", json={"text": "2\nTeam"}, headers=tenant.headers
    )
    assert r.json()["consumed"] is True
    assert r.json()["question"]["result"] == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"], "notify": ["Team"]}},
    }

    _, summary = await receiver.wait_for(2)
    assert verify(tenant.webhook_secret, summary.headers, summary.body)
    assert summary.json() == {
        "type": "summary",
        "question_id": qid,
        "session": "chat-1",
        "text": "Answered: Deploy: Production · Notify: Team",
    }


async def _delivered(client: httpx.AsyncClient, tenant: Tenant, qid: str) -> bool:
    return bool((await question(client, tenant, qid))["deliveries"][0]["status"] == "delivered")


async def test_prompt_is_in_the_ask_locale(
    app_client: httpx.AsyncClient, tenant: Tenant, receiver: Receiver, text_worker: StartWorker
) -> None:
    """A Turkish ask is prompted with Turkish guidance and its expired summary in Turkish."""
    await text_worker()
    body = ask_body(locale="tr", targets=[{"channel": "text", "url": receiver.url}])
    qid = (await app_client.post("/v1/questions", json=body, headers=tenant.headers)).json()["id"]
    (prompt,) = await receiver.wait_for(1)
    assert prompt.json()["locale"] == "tr" and "'atla'" in prompt.json()["text"]
    await eventually(lambda: _delivered(app_client, tenant, qid), "delivered", 30)
    await app_client.post(f"/v1/questions/{qid}/skip", headers=tenant.headers)
    _, summary = await receiver.wait_for(2)
    assert summary.json()["text"] == "Atlandı"


async def test_server_errors_are_retried(
    app_client: httpx.AsyncClient, tenant: Tenant, text_worker: StartWorker
) -> None:
    """5xx answers are retried until the prompt is delivered, and it is posted once."""
    await text_worker()
    with Receiver([Reply(503), Reply(502)]) as receiver:
        body = ask_body(targets=[{"channel": "text", "url": receiver.url}])
        r = await app_client.post("/v1/questions", json=body, headers=tenant.headers)
        qid = r.json()["id"]
        await eventually(lambda: _delivered(app_client, tenant, qid), "delivered", 30)
        assert len(receiver.received) == 3
    assert (await question(app_client, tenant, qid))["status"] == "pending"


async def test_unacked_entry_is_retried_later(
    app_client: httpx.AsyncClient, tenant: Tenant, text_worker: StartWorker
) -> None:
    """A prompt that still fails after the quick retries is delivered on a later round."""
    await text_worker(delivery_retries=0, consumer_claim_idle_ms=200, consumer_claim_every_s=0.1)
    with Receiver([Reply(500)]) as receiver:
        body = ask_body(targets=[{"channel": "text", "url": receiver.url}])
        qid = (await app_client.post("/v1/questions", json=body, headers=tenant.headers)).json()[
            "id"
        ]
        await eventually(lambda: _delivered(app_client, tenant, qid), "delivered", 30)
        assert len(receiver.received) == 2


async def test_client_error_fails_the_delivery(
    app_client: httpx.AsyncClient, tenant: Tenant, text_worker: StartWorker
) -> None:
    """A 4xx is not retried: the only target failed, so the question ends delivery_failed."""
    await text_worker()
    with Receiver(default=Reply(404)) as receiver:
        body = ask_body(targets=[{"channel": "text", "url": receiver.url}])
        qid = (await app_client.post("/v1/questions", json=body, headers=tenant.headers)).json()[
            "id"
        ]

        async def ended() -> bool:
            return bool((await question(app_client, tenant, qid))["status"] != "pending")

        await eventually(ended, "the question to end", 30)
        assert len(receiver.received) == 1
    q = await question(app_client, tenant, qid)
    assert (q["status"], q["reason"], q["result"]) == (
        "no_answer",
        "delivery_failed",
        {"status": "no_answer"},
    )
    assert q["deliveries"][0]["status"] == "failed" and q["deliveries"][0]["error"] == "HTTP 404"


async def test_reprocessed_event_posts_once(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    receiver: Receiver,
    redis: Redis,
    text_worker: StartWorker,
) -> None:
    """The same question.created entry handled twice posts the prompt once."""
    await text_worker()
    body = ask_body(targets=[{"channel": "text", "url": receiver.url}])
    qid = (await app_client.post("/v1/questions", json=body, headers=tenant.headers)).json()["id"]
    await eventually(lambda: _delivered(app_client, tenant, qid), "delivered", 30)
    stream = keys.events(keys.shard_of(qid), "text")
    again = (await redis.xadd(stream, {"type": "question.created", "id": qid})).decode()

    async def acked() -> bool:
        groups = {g["name"].decode(): g for g in await redis.xinfo_groups(stream)}
        group = groups[keys.group("text")]
        return bool(group["last-delivered-id"].decode() == again and group["pending"] == 0)

    await eventually(acked, "the duplicate entry to be handled", 30)
    assert len(receiver.received) == 1
