"""Button taps: answers through the backbone, acknowledged at once, prompts finalised."""

from __future__ import annotations

from askgate.channels.inbound import IN_HAND
from askgate.store import keys

from tests.support.clock import FakeClock
from tests.support.telegram import ADA, BOB, GROUP, TOKEN, Harness


async def test_tap_gives_the_agent_the_exact_result(tg: Harness) -> None:
    """Tapping an option answers the question; the agent's wait gets exactly that label."""
    q = await tg.ask()
    prompt = await tg.prompt()
    data = prompt.buttons[0][0]["callback_data"]
    r = await tg.post(tg.fake.tap(prompt, data, ADA))
    assert r.status_code == 200
    body = await tg.wait_result(q["id"])
    assert body["result"] == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}},
    }


async def test_tap_is_acknowledged_with_submitted(tg: Harness) -> None:
    """A tap is answered with answerCallbackQuery "Answer submitted."."""
    await tg.ask()
    prompt = await tg.prompt()
    await tg.post(tg.fake.tap(prompt, prompt.buttons[1][0]["callback_data"], ADA))
    acks = tg.fake.sent("answerCallbackQuery")
    assert [a.params.get("text") for a in acks] == ["Answer submitted."]


async def test_tapped_prompt_becomes_its_summary_without_keyboard(tg: Harness) -> None:
    """After a tap the prompt is edited into "Answered: …" and loses its keyboard."""
    await tg.ask()
    prompt = await tg.prompt()
    await tg.post(tg.fake.tap(prompt, prompt.buttons[1][0]["callback_data"], ADA))
    assert await tg.summary(prompt) == "Answered: Production"


async def test_second_tap_is_told_already_answered(tg: Harness) -> None:
    """A tap on an answered question changes nothing and says it was already answered."""
    q = await tg.ask()
    prompt = await tg.prompt()
    first = tg.fake.tap(prompt, prompt.buttons[0][0]["callback_data"], ADA)
    second = tg.fake.tap(prompt, prompt.buttons[1][0]["callback_data"], ADA)
    await tg.post(first)
    await tg.post(second)
    acks = [a.params.get("text") for a in tg.fake.sent("answerCallbackQuery")]
    assert acks == ["Answer submitted.", "This question was already answered."]
    assert (await tg.question(q["id"]))["result"]["answers"]["answers"] == {
        "deploy_target": ["Staging (Recommended)"]
    }


async def test_replayed_update_changes_nothing(tg: Harness) -> None:
    """The same update delivered twice (Telegram's retry) is handled once."""
    await tg.ask()
    prompt = await tg.prompt()
    update = tg.fake.tap(prompt, prompt.buttons[0][0]["callback_data"], ADA)
    assert (await tg.post(update)).status_code == 200
    assert (await tg.post(update)).status_code == 200
    assert len(tg.fake.sent("answerCallbackQuery")) == 1


async def test_update_of_a_worker_killed_mid_way_is_handled_by_telegrams_retry(
    tg: Harness,
) -> None:
    """A worker killed (-9) while it handled a tap left the update marked in hand; the
    retry Telegram sends answers the question once that mark's lease runs out (it used
    to be taken for a duplicate and dropped)."""
    q = await tg.ask()
    prompt = await tg.prompt()
    update = tg.fake.tap(prompt, prompt.buttons[0][0]["callback_data"], ADA)
    bot_id = TOKEN.split(":")[0]
    # What the killed worker left: the update in hand, its lease running out.
    mark = keys.inbound_seen("telegram", bot_id, str(update["update_id"]))
    await tg.redis.set(mark, f"{IN_HAND}killed".encode(), px=300)
    assert (await tg.post(update)).status_code == 200
    body = await tg.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["Staging (Recommended)"]}
    assert len(tg.fake.sent("answerCallbackQuery")) == 1


async def test_skip_button_ends_the_question_as_skipped(tg: Harness) -> None:
    """The Skip button ends the ask as no_answer/skipped and the prompt says "Skipped"."""
    q = await tg.ask()
    prompt = await tg.prompt()
    await tg.post(tg.fake.tap(prompt, prompt.buttons[-1][-1]["callback_data"], ADA))
    body = await tg.wait_result(q["id"])
    assert (body["result"], body["reason"]) == ({"status": "no_answer"}, "skipped")
    assert await tg.summary(prompt) == "Skipped"


async def test_group_user_not_allowed_is_told_why(tg: Harness) -> None:
    """In a group, a user outside the allowed list is refused with an alert; nothing changes."""
    q = await tg.ask(chat_id=GROUP)
    prompt = await tg.prompt(GROUP)
    await tg.post(tg.fake.tap(prompt, prompt.buttons[0][0]["callback_data"], BOB))
    ack = tg.fake.sent("answerCallbackQuery")[0].params
    assert (ack.get("text"), ack.get("show_alert")) == (
        "You are not allowed to answer this question.",
        "true",
    )
    assert (await tg.question(q["id"]))["status"] == "pending"


async def test_target_allow_list_overrides_private_default(tg: Harness) -> None:
    """A target's allowed_user_ids is enforced even in a private chat."""
    q = await tg.ask(target={"allowed_user_ids": [1]})
    prompt = await tg.prompt()
    await tg.post(tg.fake.tap(prompt, prompt.buttons[0][0]["callback_data"], ADA))
    assert (await tg.question(q["id"]))["status"] == "pending"


async def test_answer_from_api_edits_prompt(tg: Harness) -> None:
    """An answer through the API while the prompt is shown turns it into "Answered: …"."""
    q = await tg.ask()
    prompt = await tg.prompt()
    r = await tg.api.post(
        f"/v1/questions/{q['id']}/answer",
        json={"answers": {"deploy_target": ["Production"]}},
        headers=tg.tenant.headers,
    )
    assert r.status_code == 200, r.text
    assert await tg.summary(prompt) == "Answered: Production"


async def test_timeout_edits_prompt_to_expired(tg: Harness) -> None:
    """A question that times out is edited into "Expired"."""
    from askgate_sweeper.__main__ import sweep_once

    q = await tg.ask(timeoutSeconds=1)
    prompt = await tg.prompt()
    store = tg.api.app.state.store  # type: ignore[attr-defined]
    rec = await store.load(q["id"])
    await sweep_once(store, now=FakeClock().past(rec.expires_ms))
    assert (await tg.question(q["id"]))["reason"] == "timeout"
    assert await tg.summary(prompt) == "Expired"


async def test_tap_after_expiry_is_kept_as_a_late_answer(tg: Harness) -> None:
    """A tap on an option of a stale keyboard after the timeout is kept as the late answer,
    and the person is told the agent went on without it."""
    from askgate_sweeper.__main__ import sweep_once

    q = await tg.ask(timeoutSeconds=1)
    prompt = await tg.prompt()
    data = prompt.buttons[0][0]["callback_data"]
    store = tg.api.app.state.store  # type: ignore[attr-defined]
    rec = await store.load(q["id"])
    await sweep_once(store, now=FakeClock().past(rec.expires_ms))
    assert (await tg.question(q["id"]))["reason"] == "timeout"
    await tg.post(tg.fake.tap(prompt, data, ADA))
    assert tg.fake.sent("answerCallbackQuery")[0].params.get("text") == (
        "This question has expired; your answer was recorded but the agent went on without it."
    )
    late = (await tg.question(q["id"]))["late_answer"]
    assert late["answers"] == {"deploy_target": ["Staging (Recommended)"]}
    assert (late["responder"]["user_id"], late["target"]) == (str(ADA["id"]), 0)
