"""Reminders in Discord: a reply that references the prompt, sent once."""

from __future__ import annotations

from tests.support.discord import CHANNEL, Harness
from tests.support.timers import created_ms, fire_timers
from tests.support.waiting import eventually


async def test_a_reminder_references_the_prompt(dc: Harness) -> None:
    """Reminder 1 is a message in the prompt's channel that replies to the prompt."""
    q = await dc.ask(remind={"every_s": 300})
    prompt = await dc.prompt()
    await dc.delivered(q["id"])
    assert await fire_timers(dc.redis, created_ms(q) + 300_000) == 1
    await eventually(lambda: len(dc.fake.messages(CHANNEL)) == 2, "the reminder")
    call = dc.fake.creates()[-1]
    assert call.body["content"] == "Still waiting for your answer — 10 min left."
    assert call.body["message_reference"]["message_id"] == prompt.id
    assert call.body["allowed_mentions"] == {"parse": []}


async def test_the_reminder_goes_when_the_question_ends(dc: Harness) -> None:
    """Once answered, the reminder is deleted and the prompt shows the summary."""
    q = await dc.ask(remind={"every_s": 300})
    prompt = await dc.prompt()
    await dc.delivered(q["id"])
    await fire_timers(dc.redis, created_ms(q) + 300_000)
    await eventually(lambda: len(dc.fake.messages(CHANNEL)) == 2, "the reminder")
    reminder = dc.fake.messages(CHANNEL)[1]
    await dc.click(prompt, prompt.custom_ids()[1])
    assert await dc.summary(prompt) == "Answered: Production"
    await eventually(lambda: dc.fake.deleted == [(CHANNEL, reminder.id)], "the reminder deleted")


async def test_a_click_after_the_end_is_kept_as_late(dc: Harness) -> None:
    """An option clicked on an ended question is kept as late; the clicker is told so."""
    from askgate_sweeper.__main__ import sweep_once

    q = await dc.ask()
    prompt = await dc.prompt()
    production = prompt.custom_ids()[1]
    store = dc.api.app.state.store  # type: ignore[attr-defined]
    await sweep_once(store, (await store.load(q["id"])).expires_ms + 1)
    await dc.summary(prompt)
    reply = await dc.click(prompt, production)
    assert reply["data"]["content"] == (
        "This question has expired; your answer was recorded but the agent went on without it."
    )
    late = (await dc.question(q["id"]))["late_answer"]
    assert late["answers"] == {"deploy_target": ["Production"]}
    assert late["responder"]["channel"] == "discord"
