"""The Python client against the API as a real process: ask → answer → result, across
restarts and outages, and cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from askgate.dev.redis_server import RedisProcess
from askgate.store.tenants import create_tenant
from askgate_client import Askgate, AskResult, AsyncAskgate, InvalidAsk

from tests.support.agents import answer_production, pending_question
from tests.support.asks import Tenant, ask_body
from tests.support.http import local_client
from tests.support.processes import ApiProcess
from tests.support.waiting import eventually

QUESTIONS: list[Any] = ask_body()["questions"]
SEED_ANSWERED = {"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}}


async def answer(api: ApiProcess, tenant: Tenant, question_id: str) -> None:
    await answer_production(api, tenant.headers, question_id)


async def session_questions(api: ApiProcess, tenant: Tenant, session: str) -> list[Any]:
    async with local_client(api.url, headers=tenant.headers) as http:
        r = await http.get("/v1/questions", params={"session": session})
        assert r.status_code == 200, r.text
        questions: list[Any] = r.json()["questions"]
        return questions


async def test_ask_returns_seed_result(api_server: ApiProcess, tenant: Tenant) -> None:
    """ask() blocks until the human answers and returns exactly the contract's result."""
    async with AsyncAskgate(api_server.url, tenant.api_key, session="s1") as ag:
        task = asyncio.create_task(ag.ask(QUESTIONS, timeout_s=300))
        question = await pending_question(api_server, tenant.headers, "s1")
        await answer(api_server, tenant, question["id"])
        result = await task
    assert result.tool_result == SEED_ANSWERED
    assert (result.status, result.answers, result.reason) == (
        "answered",
        {"deploy_target": ["Production"]},
        None,
    )


async def test_sync_ask_returns_seed_result(api_server: ApiProcess, tenant: Tenant) -> None:
    """The blocking client's ask() returns the same seed result."""

    def blocking_ask() -> AskResult:
        with Askgate(api_server.url, tenant.api_key) as ag:
            return ag.ask(QUESTIONS, session="s1", timeout_s=300)

    task = asyncio.create_task(asyncio.to_thread(blocking_ask))
    question = await pending_question(api_server, tenant.headers, "s1")
    await answer(api_server, tenant, question["id"])
    assert (await task).tool_result == SEED_ANSWERED


@pytest.mark.both_redis
async def test_ask_survives_api_restart(api_process: ApiProcess, tenant: Tenant) -> None:
    """An API crash and restart during the wait: the client still gets the answer,
    and the question was asked once."""
    async with AsyncAskgate(api_process.url, tenant.api_key, session="s1") as ag:
        task = asyncio.create_task(ag.ask(QUESTIONS, timeout_s=300))
        question = await pending_question(api_process, tenant.headers, "s1")
        await asyncio.to_thread(api_process.kill)
        await asyncio.to_thread(api_process.start)
        await answer(api_process, tenant, question["id"])
        result = await task
    assert result.tool_result == SEED_ANSWERED
    assert [q["id"] for q in await session_questions(api_process, tenant, "s1")] == [question["id"]]


async def test_ask_waits_for_api_that_is_down(api_process: ApiProcess, tenant: Tenant) -> None:
    """An ask made while the API is down is retried until it is back, and asked once."""
    await asyncio.to_thread(api_process.stop)
    async with AsyncAskgate(api_process.url, tenant.api_key, session="s1") as ag:
        task = asyncio.create_task(ag.ask(QUESTIONS, timeout_s=300))
        await asyncio.sleep(0.5)  # let it fail to connect a few times
        assert not task.done()
        await asyncio.to_thread(api_process.start)
        question = await pending_question(api_process, tenant.headers, "s1")
        await answer(api_process, tenant, question["id"])
        assert (await task).tool_result == SEED_ANSWERED
    assert len(await session_questions(api_process, tenant, "s1")) == 1


async def test_ask_retries_503_during_redis_outage(tenant: Tenant) -> None:
    """While Redis is down the API answers 503 + Retry-After; the client retries and
    asks once Redis is back."""
    with RedisProcess(persist=True) as redis_server, ApiProcess(redis_server.url) as api:
        from redis.asyncio import Redis

        async with Redis.from_url(redis_server.url) as redis:
            _, key = await create_tenant(redis, "outage")
        own = Tenant("t", key, "")
        redis_server.stop(graceful=True)  # flushes the AOF: the tenant survives
        async with local_client(api.url, headers=own.headers) as http:
            r = await http.post("/v1/questions", json=ask_body())
            assert r.status_code == 503 and "retry-after" in r.headers
        async with AsyncAskgate(api.url, key, session="s1") as ag:
            task = asyncio.create_task(ag.ask(QUESTIONS, timeout_s=300))
            await asyncio.sleep(0.5)
            assert not task.done()
            redis_server.start()
            question = await pending_question(api, own.headers, "s1")
            await answer(api, own, question["id"])
            assert (await task).tool_result == SEED_ANSWERED


async def test_cancelling_ask_cancels_question(api_server: ApiProcess, tenant: Tenant) -> None:
    """Cancelling the task that awaits ask() cancels the question (no_answer, cancelled)."""
    async with AsyncAskgate(api_server.url, tenant.api_key, session="s1") as ag:
        task = asyncio.create_task(ag.ask(QUESTIONS, timeout_s=300))
        question = await pending_question(api_server, tenant.headers, "s1")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        final = await ag.get(question["id"])
    assert (final.status, final.reason, final.result) == (
        "no_answer",
        "cancelled",
        {"status": "no_answer"},
    )


async def test_skip_gives_no_answer_with_reason(api_server: ApiProcess, tenant: Tenant) -> None:
    """A skipped question gives the contract's no_answer result and reason skipped."""
    async with AsyncAskgate(api_server.url, tenant.api_key, session="s1") as ag:
        task = asyncio.create_task(ag.ask(QUESTIONS, timeout_s=300))
        question = await pending_question(api_server, tenant.headers, "s1")
        async with local_client(api_server.url, headers=tenant.headers) as http:
            assert (await http.post(f"/v1/questions/{question['id']}/skip")).status_code == 200
        result = await task
    assert (result.tool_result, result.status, result.reason, result.answers) == (
        {"status": "no_answer"},
        "no_answer",
        "skipped",
        {},
    )


async def test_start_then_wait_with_timeout(api_server: ApiProcess, tenant: Tenant) -> None:
    """start() returns the pending question; wait(timeout_s) is None while it is pending
    and the result once answered."""
    async with AsyncAskgate(api_server.url, tenant.api_key, session="s1") as ag:
        question = await ag.start(QUESTIONS, timeout_s=300)
        assert question.status == "pending" and question.outcome() is None
        assert await ag.wait(question.id, timeout_s=0.2) is None
        await answer(api_server, tenant, question.id)
        result = await ag.wait(question.id, timeout_s=30)
    assert result is not None and result.tool_result == SEED_ANSWERED


async def test_retried_start_returns_same_question(api_server: ApiProcess, tenant: Tenant) -> None:
    """Two starts with the same tool_call_id are one question (the idempotent replay)."""
    async with AsyncAskgate(api_server.url, tenant.api_key, session="s1") as ag:
        first = await ag.start(QUESTIONS, tool_call_id="call-1")
        again = await ag.start(QUESTIONS, tool_call_id="call-1")
    assert again.id == first.id


async def test_invalid_ask_raises_with_field_message(
    api_server: ApiProcess, tenant: Tenant
) -> None:
    """A 422 raises InvalidAsk whose message names the field and the fix."""
    bad = [{**QUESTIONS[0], "id": "Deploy Target"}]
    async with AsyncAskgate(api_server.url, tenant.api_key, session="s1") as ag:
        with pytest.raises(InvalidAsk) as caught:
            await ag.ask(bad)
    assert caught.value.status_code == 422
    assert caught.value.message == "questions[0].id must be snake_case, for example deploy_target"


WAITS = 101  # one more than httpx's default pool of 100


async def waiters_held(http: httpx.AsyncClient) -> int:
    """The API process's long-poll waiter gauge (`http` on the API: one client for every
    poll, a new one builds a TLS context each time)."""
    text = (await http.get("/metrics")).text
    line = next(x for x in text.splitlines() if x.startswith("askgate_waiters "))
    return int(float(line.split()[1]))


async def test_one_client_holds_more_than_100_waits(api_server: ApiProcess, redis: Any) -> None:
    """101 concurrent waits from one client (one more than httpx's default pool) are all
    held by the API at once (none queued behind a connection pool), and each gets its
    answer."""
    tenant_rec, key = await create_tenant(redis, "many-waits", asks_per_s=1000)
    headers = {"Authorization": f"Bearer {key}"}
    async with AsyncAskgate(api_server.url, key) as ag:
        questions = await asyncio.gather(
            *(ag.start(QUESTIONS, session=f"w{i}", timeout_s=300) for i in range(WAITS))
        )
        waits = [asyncio.create_task(ag.wait(q.id)) for q in questions]
        async with local_client(api_server.url, headers=headers) as http:

            async def all_parked() -> bool:
                return await waiters_held(http) == WAITS

            await eventually(all_parked, f"{WAITS} parked waiters", 30)
            for q in questions:
                r = await http.post(
                    f"/v1/questions/{q.id}/answer",
                    json={"answers": {"deploy_target": ["Production"]}},
                )
                assert r.status_code == 200
        results = await asyncio.gather(*waits)
    assert [r.tool_result for r in results] == [SEED_ANSWERED] * WAITS
    assert tenant_rec.id


TELEGRAM_STEP = {"after_s": 600, "targets": [{"channel": "telegram", "chat_id": "42"}]}


async def test_ask_carries_remind_and_escalate(api_server: ApiProcess, tenant: Tenant) -> None:
    """remind and escalate given to start() are the question's reminders and steps."""
    async with AsyncAskgate(api_server.url, tenant.api_key, session="s1") as ag:
        question = await ag.start(
            QUESTIONS,
            timeout_s=900,
            targets=[{"channel": "web"}],
            remind={"every_s": 300, "max": 2, "final_warning_s": 60},
            escalate=[TELEGRAM_STEP],
        )
        await ag.cancel(question.id)
    assert question.remind == {"every_s": 300, "max": 2, "final_warning_s": 60, "sent": 0}
    assert [(s["step"], s["after_s"]) for s in question.escalation] == [(1, 600)]


async def test_client_defaults_remind_and_escalate(api_server: ApiProcess, tenant: Tenant) -> None:
    """The client's remind and escalate apply to every ask; an ask's own remind
    replaces the default."""
    async with AsyncAskgate(
        api_server.url,
        tenant.api_key,
        session="s1",
        targets=[{"channel": "web"}],
        remind={"every_s": 120, "max": 1},
        escalate=[TELEGRAM_STEP],
    ) as ag:
        defaulted = await ag.start(QUESTIONS, timeout_s=900)
        await ag.cancel(defaulted.id)
        own = await ag.start(QUESTIONS, timeout_s=900, remind={"every_s": 600, "max": 2})
        await ag.cancel(own.id)
    assert [(q.remind or {}).get("every_s") for q in (defaulted, own)] == [120, 600]
    assert [len(q.escalation) for q in (defaulted, own)] == [1, 1]
