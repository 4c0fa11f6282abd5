"""Interactions: signatures, clicks, selects, the modal, who may answer, replays."""

from __future__ import annotations

import time

import orjson
import pytest
from askgate.store import keys
from nacl.signing import SigningKey

from tests.support.discord import (
    ADA,
    BOB,
    OPS_ROLE,
    THREE,
    Harness,
    configure,
)


async def test_ping_is_answered_with_pong(dc: Harness) -> None:
    """Discord's endpoint check (type 1) gets type 1 back."""
    r = await dc.send({"id": "1", "type": 1, "application_id": "1"})
    assert (r.status_code, r.json()) == (200, {"type": 1})


async def test_click_gives_the_agent_the_exact_result(dc: Harness) -> None:
    """A click on Production answers the question; the agent's wait gets exactly that."""
    q = await dc.ask()
    prompt = await dc.prompt()
    response = await dc.click(prompt, f"ag:{q['id']}:0:o1")
    assert response == {
        "type": 4,
        "data": {"content": "Answer submitted.", "flags": 64, "allowed_mentions": {"parse": []}},
    }
    body = await dc.wait_result(q["id"])
    assert body["result"] == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }
    assert body["responder"] == {"channel": "discord", "user_id": ADA["id"], "name": "Ada"}
    assert await dc.summary(prompt) == "Answered: Production"


async def test_multi_select_answers_with_every_picked_label(dc: Harness) -> None:
    """One multi-select question: the select's values are the answer, in declared order."""
    q = await dc.ask(questions=[THREE[1]])
    prompt = await dc.prompt()
    await dc.click(prompt, f"ag:{q['id']}:0:m0", values=["2", "0"])
    body = await dc.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"areas": ["Auth", "Search"]}


async def test_other_opens_a_modal_whose_text_is_the_answer(dc: Harness) -> None:
    """Other… opens a modal (type 9); its text is the free-text answer, not echoed back."""
    q = await dc.ask()
    prompt = await dc.prompt()
    modal = await dc.click(prompt, f"ag:{q['id']}:0:x")
    assert modal["type"] == 9
    [row] = modal["data"]["components"]
    assert row["components"][0]["custom_id"] == "0" and row["components"][0]["required"]
    r = await dc.send(
        dc.modal_submit(prompt, modal["data"]["custom_id"], {"0": "  canary in eu-west  "})
    )
    assert r.json()["data"]["content"] == "Answer submitted."
    body = await dc.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["canary in eu-west"]}
    assert await dc.summary(prompt) == "Answered: (your answer)"


async def test_three_questions_are_picked_then_submitted(dc: Harness) -> None:
    """Each select keeps its pick on the prompt; Submit with one missing names it."""
    q = await dc.ask(questions=THREE)
    prompt, qid = await dc.prompt(), q["id"]
    kept = await dc.click(prompt, f"ag:{qid}:0:m0", values=["1"])
    assert kept["type"] == 7
    await dc.click(prompt, f"ag:{qid}:0:m1", values=["0", "1"])
    refused = await dc.click(prompt, f"ag:{qid}:0:d")
    assert refused["data"]["content"] == "Please also answer: Notify: Whom should I notify?"
    kept = await dc.click(prompt, f"ag:{qid}:0:m2", values=["1"])
    selects = [row["components"][0] for row in kept["data"]["components"][:3]]
    assert [[o["label"] for o in s["options"] if o.get("default")] for s in selects] == [
        ["Production"],
        ["Auth", "Billing"],
        ["The team"],
    ]
    await dc.click(prompt, f"ag:{qid}:0:d")
    body = await dc.wait_result(qid)
    assert body["result"]["answers"]["answers"] == {
        "deploy_target": ["Production"],
        "areas": ["Auth", "Billing"],
        "notify": ["The team"],
    }


async def test_three_questions_modal_fills_what_the_selects_left(dc: Harness) -> None:
    """With several questions, the modal's text answers its question; others keep picks."""
    q = await dc.ask(questions=THREE)
    prompt, qid = await dc.prompt(), q["id"]
    await dc.click(prompt, f"ag:{qid}:0:m0", values=["0"])
    await dc.click(prompt, f"ag:{qid}:0:m1", values=["2"])
    await dc.send(dc.modal_submit(prompt, f"ag:{qid}:0:f", {"0": "", "1": "", "2": "Only me"}))
    body = await dc.wait_result(qid)
    assert body["result"]["answers"]["answers"] == {
        "deploy_target": ["Staging (Recommended)"],
        "areas": ["Search"],
        "notify": ["Only me"],
    }


async def test_skip_ends_the_question_as_skipped(dc: Harness) -> None:
    """Skip ends it as no_answer/skipped and the prompt says Skipped."""
    q = await dc.ask(locale="tr")
    prompt = await dc.prompt()
    assert (await dc.click(prompt, f"ag:{q['id']}:0:s"))["data"]["content"] == "Atlandı"
    body = await dc.wait_result(q["id"])
    assert (body["status"], body["reason"]) == ("no_answer", "skipped")
    assert await dc.summary(prompt) == "Atlandı"


@pytest.mark.parametrize("fault", ["forged", "tampered", "stale", "unsigned"])
async def test_bad_signature_is_401_and_changes_nothing(dc: Harness, fault: str) -> None:
    """A forged, tampered, stale or missing signature is refused before anything is read."""
    q = await dc.ask()
    prompt = await dc.prompt()
    raw = orjson.dumps(dc.interaction(prompt, f"ag:{q['id']}:0:o1"))
    headers = {
        "forged": dc.signed(raw, key=SigningKey.generate()),
        "tampered": dc.signed(raw.replace(b":o1", b":o0")),
        "stale": dc.signed(raw, timestamp=int(time.time()) - 3600),
        "unsigned": {"Content-Type": "application/json"},
    }[fault]
    r = await dc.send({}, raw=raw, headers=headers)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"
    assert (await dc.question(q["id"]))["status"] == "pending"
    assert not await dc.redis.keys(keys.inbound_seen("discord", "*", "*"))


async def test_refused_user_is_told_privately(dc: Harness) -> None:
    """Someone not on the target's allow-list is told why, ephemerally; nothing changes."""
    q = await dc.ask(target={"allowed_user_ids": [ADA["id"]]})
    prompt = await dc.prompt()
    response = await dc.click(prompt, f"ag:{q['id']}:0:o1", BOB)
    assert response["data"] == {
        "content": "You are not allowed to answer this question.",
        "flags": 64,
        "allowed_mentions": {"parse": []},
    }
    assert (await dc.question(q["id"]))["status"] == "pending"


async def test_role_on_the_target_lets_its_holders_answer(dc: Harness) -> None:
    """With allowed_role_ids, a member holding the role answers and one without is refused."""
    q = await dc.ask(target={"allowed_role_ids": [OPS_ROLE]})
    prompt = await dc.prompt()
    refused = await dc.click(prompt, f"ag:{q['id']}:0:o1", BOB, roles=["999"])
    assert refused["data"]["content"] == "You are not allowed to answer this question."
    await dc.click(prompt, f"ag:{q['id']}:0:o1", BOB, roles=[OPS_ROLE])
    assert (await dc.wait_result(q["id"]))["responder"]["user_id"] == BOB["id"]


async def test_tenant_roles_apply_in_a_guild_channel(dc: Harness) -> None:
    """The tenant's allowed_role_ids decide in a shared channel when the target has none."""
    await configure(dc.redis, dc.tenant.id, dc.key, allowed_role_ids=OPS_ROLE)
    await dc.service.apps.refresh()
    q = await dc.ask()
    prompt = await dc.prompt()
    refused = await dc.click(prompt, f"ag:{q['id']}:0:o0", BOB)
    assert refused["data"]["content"] == "You are not allowed to answer this question."
    await dc.click(prompt, f"ag:{q['id']}:0:o0", BOB, roles=[OPS_ROLE])
    assert (await dc.wait_result(q["id"]))["status"] == "answered"


async def test_replayed_interaction_changes_nothing(dc: Harness) -> None:
    """The same interaction again (same id) is acknowledged and changes nothing."""
    q = await dc.ask(questions=THREE)
    prompt, qid = await dc.prompt(), q["id"]
    first = dc.interaction(prompt, f"ag:{qid}:0:m0", values=["0"])
    await dc.send(first)
    await dc.click(prompt, f"ag:{qid}:0:m0", values=["1"])
    replay = await dc.send(first)
    assert replay.json() == {"type": 6}
    kept = await dc.click(prompt, f"ag:{qid}:0:m1", values=["0"])
    first_select = kept["data"]["components"][0]["components"][0]
    assert [o["label"] for o in first_select["options"] if o.get("default")] == ["Production"]


async def test_answer_elsewhere_edits_the_prompt(dc: Harness) -> None:
    """An answer through the API turns the Discord prompt into its summary."""
    q = await dc.ask()
    prompt = await dc.prompt()
    r = await dc.api.post(
        f"/v1/questions/{q['id']}/answer",
        headers=dc.tenant.headers,
        json={"answers": {"deploy_target": ["Staging (Recommended)"]}},
    )
    assert r.status_code == 200, r.text
    assert await dc.summary(prompt) == "Answered: Staging (Recommended)"


async def test_timeout_edits_the_prompt_to_expired(dc: Harness) -> None:
    """A question nobody answered ends at its deadline and the prompt says Expired."""
    q = await dc.ask(timeoutSeconds=30, locale="hi")
    prompt = await dc.prompt()
    store = dc.service.channel.store
    rec = await store.load(q["id"])
    assert rec is not None
    await store.sweep_shard(keys.shard_of(q["id"]), now=rec.expires_ms + 1)
    assert await dc.summary(prompt) == "समय समाप्त"


async def test_click_after_the_end_is_told_so(dc: Harness) -> None:
    """A click on an ended question's prompt is told it ended; the result stays."""
    q = await dc.ask()
    prompt = await dc.prompt()
    await dc.click(prompt, f"ag:{q['id']}:0:o0")
    late = await dc.click(prompt, f"ag:{q['id']}:0:o1")
    assert late["data"]["content"] == "This question was already answered."
    body = await dc.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["Staging (Recommended)"]}


async def test_click_from_another_channel_is_refused(dc: Harness) -> None:
    """A click whose channel is not the target's does not answer (a forwarded prompt)."""
    q = await dc.ask()
    prompt = await dc.prompt()
    body = dc.interaction(prompt, f"ag:{q['id']}:0:o1")
    body["channel_id"] = "1399999999999999999"
    r = await dc.send(body)
    assert r.json()["data"]["content"] == "You are not allowed to answer this question."
    assert (await dc.question(q["id"]))["status"] == "pending"
