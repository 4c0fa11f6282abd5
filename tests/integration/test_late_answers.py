"""Late answers on real Redis: an answer after the question ended without one is kept on
the resource (and told to the callback_url's stream), the person is told the agent went
on without it, and the result never changes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from askgate.domain.errors import AlreadyFinal
from askgate.domain.events import QuestionLateAnswer, parse_event
from askgate.domain.models import QuestionCreate, Responder
from askgate.domain.status import Reason
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.followup import LATE_MAX
from askgate.store.record import Record
from askgate.store.store import Store
from askgate_sweeper.__main__ import sweep_once
from redis.asyncio import Redis

from tests.support.asks import Tenant, ask_body

pytestmark = pytest.mark.both_redis

EXPIRED = "This question has expired; your answer was recorded but the agent went on without it."
ADA = Responder(channel="telegram", user_id="42", name="Ada")


async def expired(store: Store, tenant: Tenant, **extra: Any) -> Record:
    body = QuestionCreate.model_validate(ask_body(targets=[{"channel": "web"}], **extra))
    rec, _ = await store.create(tenant.id, body, max_pending=10**6, asks_per_s=10**6)
    await sweep_once(store, rec.expires_ms + 1)
    done = await store.load(rec.id)
    assert done is not None and done.reason == Reason.TIMEOUT
    return done


async def test_an_answer_after_the_timeout_is_kept_not_the_result(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """The late answer is on the resource with its responder, target and time; the result
    stays no_answer."""
    store = Store(redis, settings)
    rec = await expired(store, tenant)
    with pytest.raises(AlreadyFinal) as exc:
        await store.answer(tenant.id, rec.id, {"deploy_target": "production"}, ADA, target=0)
    assert exc.value.late and exc.value.message == EXPIRED
    now = await store.get(tenant.id, rec.id)
    assert now.result == {"status": "no_answer"} and now.reason == Reason.TIMEOUT
    (late,) = now.late_answers()
    assert late["answers"] == {"deploy_target": ["Production"]}
    assert late["responder"] == {"channel": "telegram", "user_id": "42", "name": "Ada"}
    assert late["target"] == 0 and late["at"].endswith("Z")
    assert now.public_dict()["late_answer"] == late


async def test_a_second_answer_to_an_answered_question_is_not_kept(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """Someone already answered: the loser is told so and nothing is kept (the agent has
    its answer)."""
    store = Store(redis, settings)
    body = QuestionCreate.model_validate(ask_body(targets=[{"channel": "web"}]))
    rec, _ = await store.create(tenant.id, body)
    await store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    with pytest.raises(AlreadyFinal) as exc:
        await store.answer(tenant.id, rec.id, {"deploy_target": ["Staging (Recommended)"]})
    assert not exc.value.late and exc.value.message == "This question was already answered."
    assert (await store.get(tenant.id, rec.id)).late_answers() == []


async def test_the_answer_that_loses_to_the_timeout_is_kept(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """Read while pending, resolved after the sweeper ended it: kept as late."""
    store = Store(redis, settings)
    body = QuestionCreate.model_validate(ask_body(targets=[{"channel": "web"}]))
    rec, _ = await store.create(tenant.id, body, max_pending=10**6, asks_per_s=10**6)
    stale = await store.load(rec.id)
    assert stale is not None and stale.pending
    await sweep_once(store, rec.expires_ms + 1)
    with pytest.raises(AlreadyFinal) as exc:
        await store.apply_reply(stale, "2", ADA)
    assert exc.value.late
    assert [a["answers"] for a in (await store.get(tenant.id, rec.id)).late_answers()] == [
        {"deploy_target": ["Production"]}
    ]


async def test_late_answers_are_bounded(redis: Redis, settings: Settings, tenant: Tenant) -> None:
    """At most LATE_MAX are kept; the next is told only that the question expired."""
    store = Store(redis, settings)
    rec = await expired(store, tenant)
    for _ in range(LATE_MAX):
        with pytest.raises(AlreadyFinal):
            await store.answer(tenant.id, rec.id, {"deploy_target": "1"})
    with pytest.raises(AlreadyFinal) as exc:
        await store.answer(tenant.id, rec.id, {"deploy_target": "1"})
    assert not exc.value.late and exc.value.message == "This question has expired."
    assert len((await store.get(tenant.id, rec.id)).late_answers()) == LATE_MAX


async def test_a_skip_after_the_end_is_not_an_answer(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """`skip` typed after the end is told it expired, and nothing is kept."""
    store = Store(redis, settings)
    rec = await expired(store, tenant, locale="tr")
    with pytest.raises(AlreadyFinal) as exc:
        await store.apply_reply(rec, "atla")
    assert not exc.value.late and exc.value.message == "Bu sorunun süresi doldu."


async def test_a_late_answer_goes_to_the_webhook_stream(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """With a callback_url, question.late_answer (its number) joins the webhook stream."""
    store = Store(redis, settings)
    rec = await expired(store, tenant, callback_url="https://example.com/hook")
    with pytest.raises(AlreadyFinal):
        await store.answer(tenant.id, rec.id, {"deploy_target": "2"})
    rows = await redis.xrange(keys.events(keys.shard_of(rec.id), "webhook"))
    events = [parse_event({k.decode(): v.decode() for k, v in f.items()}) for _, f in rows]
    late = [e for e in events if isinstance(e, QuestionLateAnswer)]
    assert [(e.question_id, e.n) for e in late] == [(rec.id, 0)]


async def test_after_a_cancel_the_person_hears_it_ended(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A question the agent cancelled says "ended", in the ask's language."""
    store = Store(redis, settings)
    body = QuestionCreate.model_validate(ask_body(targets=[{"channel": "web"}], locale="hi"))
    rec, _ = await store.create(tenant.id, body)
    await store.end(tenant.id, rec.id, Reason.CANCELLED)
    with pytest.raises(AlreadyFinal) as exc:
        await store.answer(tenant.id, rec.id, {"deploy_target": "1"})
    assert exc.value.late and exc.value.message.startswith("यह प्रश्न समाप्त हो गया है;")


# -- through the API ---------------------------------------------------------------------


async def late_api_question(
    client: httpx.AsyncClient, tenant: Tenant, redis: Redis, settings: Settings, session: str = "s1"
) -> str:
    r = await client.post(
        "/v1/questions",
        json=ask_body(session, targets=[{"channel": "web"}]),
        headers=tenant.headers,
    )
    qid = str(r.json()["id"])
    rec = await Store(redis, settings).load(qid)
    assert rec is not None
    await sweep_once(Store(redis, settings), rec.expires_ms + 1)
    return qid


async def test_api_answer_after_the_end_is_a_409_that_says_it_was_kept(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Redis, settings: Settings
) -> None:
    """409 already_final with late_answer_recorded; the resource shows the late answer."""
    qid = await late_api_question(app_client, tenant, redis, settings)
    r = await app_client.post(
        f"/v1/questions/{qid}/answer",
        headers=tenant.headers,
        json={"answers": {"deploy_target": ["Production"]}},
    )
    assert r.status_code == 409
    error = r.json()["error"]
    assert (error["code"], error["message"], error["late_answer_recorded"]) == (
        "already_final",
        EXPIRED,
        True,
    )
    q = (await app_client.get(f"/v1/questions/{qid}", headers=tenant.headers)).json()
    assert q["late_answer"]["answers"] == {"deploy_target": ["Production"]}
    assert q["late_answer"]["responder"] == {"channel": "api"}
    assert q["result"] == {"status": "no_answer"}


async def test_a_session_message_just_after_the_end_is_kept_as_late(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Redis, settings: Settings
) -> None:
    """Nothing pending, the newest question just expired: consumed as its late answer."""
    qid = await late_api_question(app_client, tenant, redis, settings, "chat")
    r = await app_client.post(
        "/v1/sessions/chat/messages", json={"text": "2"}, headers=tenant.headers
    )
    body = r.json()
    assert (body["consumed"], body["late"], body["message"]) == (True, True, EXPIRED)
    assert body["question"]["id"] == qid
    assert body["question"]["late_answers"][0]["answers"] == {"deploy_target": ["Production"]}


async def test_outside_the_window_a_session_message_is_the_platforms(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Redis, settings: Settings
) -> None:
    """With the window closed (0) a message after the end is not consumed."""
    await late_api_question(app_client, tenant, redis, settings, "chat")
    app_client.app.state.store.settings = settings.model_copy(  # type: ignore[attr-defined]
        update={"late_answer_window_s": 0}
    )
    r = await app_client.post(
        "/v1/sessions/chat/messages", json={"text": "2"}, headers=tenant.headers
    )
    assert r.json() == {"consumed": False, "question": None, "message": None}
