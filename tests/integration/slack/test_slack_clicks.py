"""Clicks: answers through the backbone, the clicker told privately, prompts finalised."""

from __future__ import annotations

from tests.support.slack import ADA, BOB, DM, ROOM, Harness
from tests.support.waiting import eventually


async def test_click_gives_the_agent_the_exact_result(sl: Harness) -> None:
    """Clicking an option answers the question; the agent's wait gets exactly that label."""
    q = await sl.ask()
    prompt = await sl.prompt()
    r = await sl.interact(sl.fake.click(prompt, "o0", ADA))
    assert r.status_code == 200
    body = await sl.wait_result(q["id"])
    assert body["result"] == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}},
    }


async def test_clicker_is_told_privately_that_the_answer_counted(sl: Harness) -> None:
    """The clicker gets an ephemeral "Answer submitted."; nobody else is told anything."""
    await sl.ask()
    prompt = await sl.prompt()
    await sl.interact(sl.fake.click(prompt, "o1", ADA))
    assert await sl.told(ADA) == ["Answer submitted."]
    assert [e["channel"] for e in sl.fake.ephemeral] == [ROOM]


async def test_clicked_prompt_becomes_its_summary_without_controls(sl: Harness) -> None:
    """After a click chat.update turns the prompt into "Answered: …" with no actions."""
    await sl.ask()
    prompt = await sl.prompt()
    await sl.interact(sl.fake.click(prompt, "o1", ADA))
    assert await sl.summary(prompt) == "Answered: Production"
    assert all(b["type"] != "actions" for b in prompt.blocks)


async def test_double_click_is_told_already_answered(sl: Harness) -> None:
    """A second click on an answered question changes nothing and says so, privately."""
    q = await sl.ask()
    prompt = await sl.prompt()
    # Both clicks on the prompt as shown: the first one's summary may replace it before
    # the second is sent.
    first, second = (sl.fake.click(prompt, option, ADA) for option in ("o0", "o1"))
    await sl.interact(first)
    await sl.interact(second)
    assert await sl.told(ADA, 2) == ["Answer submitted.", "This question was already answered."]
    assert (await sl.question(q["id"]))["result"]["answers"]["answers"] == {
        "deploy_target": ["Staging (Recommended)"]
    }


async def test_replayed_interaction_changes_nothing(sl: Harness) -> None:
    """The same interaction delivered twice (one trigger_id) is handled once."""
    await sl.ask()
    prompt = await sl.prompt()
    click = sl.fake.click(prompt, "o0", ADA)
    assert (await sl.interact(click)).status_code == 200
    assert (await sl.interact(click)).status_code == 200
    await sl.told(ADA)
    await sl.summary(prompt)
    assert sl.fake.told(ADA) == ["Answer submitted."]


async def test_skip_button_ends_the_question_as_skipped(sl: Harness) -> None:
    """Skip ends the ask as no_answer/skipped and the prompt says "Skipped"."""
    q = await sl.ask()
    prompt = await sl.prompt()
    await sl.interact(sl.fake.click(prompt, "s", ADA))
    body = await sl.wait_result(q["id"])
    assert (body["result"], body["reason"]) == ({"status": "no_answer"}, "skipped")
    assert await sl.summary(prompt) == "Skipped"


async def test_refused_user_is_told_why_privately(sl: Harness) -> None:
    """In a channel, a user outside the allow-list is told privately; nothing changes."""
    q = await sl.ask()
    prompt = await sl.prompt()
    await sl.interact(sl.fake.click(prompt, "o0", BOB))
    assert await sl.told(BOB) == ["You are not allowed to answer this question."]
    assert (await sl.question(q["id"]))["status"] == "pending"
    assert prompt.edits == []


async def test_anyone_in_the_dm_may_answer(sl: Harness) -> None:
    """In a direct message the person is the chat: the click answers without a list."""
    q = await sl.ask(channel_id=DM)
    prompt = await sl.prompt(DM)
    await sl.interact(sl.fake.click(prompt, "o1", "U0SOMEONE"))
    assert (await sl.wait_result(q["id"]))["status"] == "answered"


async def test_target_allow_list_overrides_the_tenant_list(sl: Harness) -> None:
    """A target's allowed_user_ids is enforced even for a user the tenant allows."""
    q = await sl.ask(target={"allowed_user_ids": [BOB]})
    prompt = await sl.prompt()
    await sl.interact(sl.fake.click(prompt, "o0", ADA))
    assert await sl.told(ADA) == ["You are not allowed to answer this question."]
    assert (await sl.question(q["id"]))["status"] == "pending"


async def test_answer_from_api_updates_the_prompt(sl: Harness) -> None:
    """An answer through the API while the prompt is shown turns it into "Answered: …"."""
    q = await sl.ask()
    prompt = await sl.prompt()
    r = await sl.api.post(
        f"/v1/questions/{q['id']}/answer",
        json={"answers": {"deploy_target": ["Production"]}},
        headers=sl.tenant.headers,
    )
    assert r.status_code == 200, r.text
    assert await sl.summary(prompt) == "Answered: Production"


async def test_timeout_turns_the_prompt_into_expired(sl: Harness) -> None:
    """A question past its deadline, swept, is edited into "Expired"."""
    from askgate_sweeper.__main__ import sweep_once

    q = await sl.ask(timeoutSeconds=1)
    prompt = await sl.prompt()
    store = sl.api.app.state.store  # type: ignore[attr-defined]
    await sweep_once(store, now=(await store.load(q["id"])).expires_ms + 1)
    assert (await sl.question(q["id"]))["reason"] == "timeout"
    assert await sl.summary(prompt) == "Expired"


async def test_click_after_expiry_is_kept_as_a_late_answer(sl: Harness) -> None:
    """A click on an option of a stale prompt after the timeout is kept as the late answer;
    the clicker is told so."""
    from askgate_sweeper.__main__ import sweep_once

    q = await sl.ask(timeoutSeconds=1)
    prompt = await sl.prompt()
    click = sl.fake.click(prompt, "o0", ADA)
    store = sl.api.app.state.store  # type: ignore[attr-defined]
    await sweep_once(store, now=(await store.load(q["id"])).expires_ms + 1)
    await eventually(lambda: prompt.edits, "the prompt finalised")
    await sl.interact(click)
    assert await sl.told(ADA) == [
        "This question has expired; your answer was recorded but the agent went on without it."
    ]
    assert (await sl.question(q["id"]))["late_answer"]["responder"]["user_id"] == ADA
