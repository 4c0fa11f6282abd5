"""Reminders in Slack: a reply in the prompt's thread, in the ask's language."""

from __future__ import annotations

from tests.support.slack import ADA, ROOM, Harness
from tests.support.timers import created_ms, fire_timers
from tests.support.waiting import eventually


async def test_a_reminder_is_a_reply_in_the_prompts_thread(sl: Harness) -> None:
    """Reminder 1 goes to the prompt's thread, once, with the time left."""
    q = await sl.ask(timeoutSeconds=600, remind={"every_s": 120})
    prompt = await sl.prompt()
    await sl.delivered(q["id"])
    at = created_ms(q) + 120_000
    assert await fire_timers(sl.redis, at) == 1
    assert await sl.said(ROOM, prompt.ts) == ["Still waiting for your answer — 8 min left."]
    assert await fire_timers(sl.redis, at) == 0


async def test_the_reminder_goes_from_the_thread_at_the_end(sl: Harness) -> None:
    """Once answered, the reminder is deleted; the prompt shows the summary."""
    q = await sl.ask(remind={"every_s": 120})
    prompt = await sl.prompt()
    await sl.delivered(q["id"])
    await fire_timers(sl.redis, created_ms(q) + 120_000)
    await sl.said(ROOM, prompt.ts)
    await sl.interact(sl.fake.click(prompt, "o1", ADA))
    assert await sl.summary(prompt) == "Answered: Production"
    await eventually(lambda: sl.fake.deleted, "the reminder deleted")
    assert [m.text for m in sl.fake.messages(ROOM) if m.thread_ts == prompt.ts] == []


async def test_a_final_warning_in_hindi(sl: Harness) -> None:
    """The final warning speaks the ask's language."""
    q = await sl.ask(locale="hi", timeoutSeconds=600, remind={"max": 0, "final_warning_s": 45})
    prompt = await sl.prompt()
    await sl.delivered(q["id"])
    await fire_timers(sl.redis, created_ms(q) + 555_000)
    assert await sl.said(ROOM, prompt.ts) == ["अंतिम सूचना: यह प्रश्न 45 सेकंड में समाप्त हो जाएगा।"]


async def test_a_thread_reply_after_the_end_is_kept_as_late(sl: Harness) -> None:
    """A reply in an ended prompt's thread is the late answer; the thread says so."""
    from askgate_sweeper.__main__ import sweep_once

    q = await sl.ask()
    prompt = await sl.prompt()
    store = sl.api.app.state.store  # type: ignore[attr-defined]
    await sweep_once(store, (await store.load(q["id"])).expires_ms + 1)
    await sl.summary(prompt)
    await sl.event(sl.fake.message(ROOM, ADA, "2", thread_ts=prompt.ts))
    assert await sl.said(ROOM, prompt.ts) == [
        "This question has expired; your answer was recorded but the agent went on without it."
    ]
    late = (await sl.question(q["id"]))["late_answer"]
    assert (late["answers"], late["target"]) == ({"deploy_target": ["Production"]}, 0)
