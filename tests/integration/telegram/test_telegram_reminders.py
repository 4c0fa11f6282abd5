"""Reminders and escalation in Telegram: a reminder replies to the prompt in the ask's
language and goes when the question ends; a step shows the question in another chat,
and the answer there ends it everywhere."""

from __future__ import annotations

from tests.support.telegram import ADA, GROUP, PRIVATE, Harness
from tests.support.timers import created_ms, fire_timers
from tests.support.waiting import eventually


async def test_a_reminder_replies_to_the_prompt(tg: Harness) -> None:
    """Reminder 1 is a reply to the prompt, in the ask's locale, with the time left."""
    q = await tg.ask(locale="tr", timeoutSeconds=900, remind={"every_s": 300})
    prompt = await tg.prompt()
    await tg.delivered(q["id"])
    assert await fire_timers(tg.redis, created_ms(q) + 300_000) == 1
    reminder = await eventually(lambda: _reminders(tg), "the reminder")
    (msg,) = reminder
    assert msg.text == "Hâlâ cevabınızı bekliyoruz — 10 dk kaldı."
    assert msg.raw["reply_to_message"]["message_id"] == prompt.message_id


async def test_the_reminder_goes_when_the_question_ends(tg: Harness) -> None:
    """Once answered, the chat keeps only the summary: the reminder is deleted."""
    q = await tg.ask(remind={"every_s": 300})
    prompt = await tg.prompt()
    await tg.delivered(q["id"])
    await fire_timers(tg.redis, created_ms(q) + 300_000)
    (reminder,) = await eventually(lambda: _reminders(tg), "the reminder")
    await tg.post(tg.fake.text(PRIVATE, "2", ADA, reply_to=prompt))
    await eventually(
        lambda: tg.said() == ["Answered: Production"], f"only the summary left (now {tg.said()})"
    )
    assert (PRIVATE, reminder.message_id) in tg.fake.deleted
    assert (await tg.question(q["id"]))["deliveries"][0]["reminders"] == 1


async def test_an_escalation_step_shows_the_question_in_another_chat(tg: Harness) -> None:
    """At after_s the group gets the prompt too; an answer there ends it in both chats."""
    q = await tg.ask(
        escalate=[{"after_s": 600, "targets": [{"channel": "telegram", "chat_id": str(GROUP)}]}]
    )
    first = await tg.prompt()
    assert not tg.bot_messages(GROUP)
    await fire_timers(tg.redis, created_ms(q) + 600_000)
    second = await tg.prompt(GROUP)
    await tg.post(tg.fake.tap(second, second.buttons[1][0]["callback_data"], ADA))
    assert (await tg.wait_result(q["id"]))["result"]["answers"]["answers"] == {
        "deploy_target": ["Production"]
    }
    assert await tg.summary(first) == "Answered: Production"
    assert await tg.summary(second) == "Answered: Production"
    res = await tg.question(q["id"])
    step = res["escalation"][0]
    assert step["started_at"] is not None and step["targets"] == [1]
    assert (res["audit"]["channel"], res["audit"]["target"]) == ("telegram", 1)


async def test_a_reply_after_the_timeout_is_kept_as_late(tg: Harness) -> None:
    """A reply to an expired prompt: the person is told, in the ask's language, that it
    was recorded; the result stays no_answer."""
    from askgate_sweeper.__main__ import sweep_once

    q = await tg.ask(locale="tr")
    prompt = await tg.prompt()
    store = tg.api.app.state.store  # type: ignore[attr-defined]
    await sweep_once(store, (await store.load(q["id"])).expires_ms + 1)
    await tg.summary(prompt)
    await tg.post(tg.fake.text(PRIVATE, "kendi cevabım", ADA, reply_to=prompt))
    await eventually(
        lambda: (
            "Bu sorunun süresi doldu; cevabınız kaydedildi ama ajan onsuz devam etti." in tg.said()
        ),
        f"the late reply (now {tg.said()})",
    )
    res = await tg.question(q["id"])
    assert res["result"] == {"status": "no_answer"}
    assert res["late_answer"]["answers"] == {"deploy_target": ["kendi cevabım"]}


def _reminders(tg: Harness) -> list[object]:
    return [
        m
        for m in tg.bot_messages()
        if m.raw.get("reply_to_message") and not m.raw.get("reply_markup")
    ]
