"""`POST /v1/sessions/{session}/messages`: a human's plain-text message from any channel
answers the session's pending question as README "Plain-text replies" says."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.asks import Tenant, ask_body

pytestmark = pytest.mark.both_redis

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


async def ask(client: httpx.AsyncClient, tenant: Tenant, **extra: Any) -> str:
    r = await client.post("/v1/questions", json=ask_body("chat", **extra), headers=tenant.headers)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def message(
    client: httpx.AsyncClient, tenant: Tenant, text: str, session: str = "chat"
) -> dict[str, Any]:
    r = await client.post(
        f"/v1/sessions/{session}/messages", json={"text": text}, headers=tenant.headers
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_message_without_pending_question_is_not_consumed(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """With nothing pending the message is left to the platform: consumed false, no question."""
    reply = await message(app_client, tenant, "hello")
    assert reply["consumed"] is False and reply["question"] is None


async def test_number_picks_the_option(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """`2` answers a single question with its second option's label."""
    qid = await ask(app_client, tenant)
    reply = await message(app_client, tenant, " 2 ")
    assert reply["consumed"] is True and reply["question"]["id"] == qid
    assert reply["question"]["result"] == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }


async def test_out_of_range_number_is_free_text(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """`7` with two options is the free text `7`."""
    await ask(app_client, tenant)
    reply = await message(app_client, tenant, "7")
    assert reply["question"]["result"]["answers"]["answers"] == {"deploy_target": ["7"]}


async def test_partial_reply_is_corrected_and_stays_pending(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A reply that leaves a question out gets a correction naming it; still pending."""
    qid = await ask(app_client, tenant, questions=TWO_QUESTIONS)
    reply = await message(app_client, tenant, "deploy_target: 1")
    assert reply["consumed"] is False
    assert reply["question"]["status"] == "pending" and reply["missing"] == ["notify"]
    assert "Who should I tell?" in reply["message"]
    r = await app_client.get(f"/v1/questions/{qid}", headers=tenant.headers)
    assert r.json()["status"] == "pending"


async def test_keyed_lines_answer_several_questions(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """`key: value` lines (header or position as key) answer every question together."""
    await ask(app_client, tenant, questions=TWO_QUESTIONS)
    reply = await message(app_client, tenant, "notify = nobody\nDeploy: staging (recommended)")
    assert reply["consumed"] is True
    assert reply["question"]["result"]["answers"]["answers"] == {
        "deploy_target": ["Staging (Recommended)"],
        "notify": ["Nobody"],
    }


async def test_skip_word_of_the_locale_skips(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """`atla` in a Turkish ask skips it: no_answer, reason skipped."""
    await ask(app_client, tenant, locale="tr")
    reply = await message(app_client, tenant, "Atla")
    assert reply["consumed"] is True
    assert (reply["question"]["status"], reply["question"]["reason"]) == ("no_answer", "skipped")


async def test_message_after_the_answer_is_not_consumed(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Once the question is answered, the next message finds nothing pending."""
    await ask(app_client, tenant)
    await message(app_client, tenant, "1")
    reply = await message(app_client, tenant, "2")
    assert reply["consumed"] is False and reply["question"] is None


async def test_other_sessions_question_is_untouched(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A message in one session never answers another session's question."""
    qid = await ask(app_client, tenant)
    reply = await message(app_client, tenant, "1", session="elsewhere")
    assert reply["consumed"] is False and reply["question"] is None
    r = await app_client.get(f"/v1/questions/{qid}", headers=tenant.headers)
    assert r.json()["status"] == "pending"


async def test_other_tenants_session_is_untouched(
    app_client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    """The same session name under another tenant is another session."""
    qid = await ask(app_client, tenant)
    reply = await message(app_client, other_tenant, "1")
    assert reply["consumed"] is False and reply["question"] is None
    r = await app_client.get(f"/v1/questions/{qid}", headers=tenant.headers)
    assert r.json()["status"] == "pending"
