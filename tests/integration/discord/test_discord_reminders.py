"""Reminders in Discord: a reply that references the prompt, sent once."""

from __future__ import annotations

from tests.integration.discord.conftest import CHANNEL, Harness, eventually
from tests.support.timers import created_ms, fire_timers


async def test_a_reminder_references_the_prompt(dc: Harness) -> None:
    """Reminder 1 is a message in the prompt's channel that replies to the prompt."""
    q = await dc.ask(remind={"every_s": 300})
    prompt = await dc.prompt()
    await eventually(lambda: _delivered(dc, q["id"]), "the prompt confirmed")
    assert await fire_timers(dc.redis, created_ms(q) + 300_000) == 1
    await eventually(lambda: len(dc.fake.messages(CHANNEL)) == 2, "the reminder")
    call = dc.fake.creates()[-1]
    assert call.body["content"] == "Still waiting for your answer — 10 min left."
    assert call.body["message_reference"]["message_id"] == prompt.id
    assert call.body["allowed_mentions"] == {"parse": []}


async def _delivered(dc: Harness, qid: str) -> bool:
    return bool((await dc.question(qid))["deliveries"][0]["status"] == "delivered")
