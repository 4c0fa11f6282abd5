"""Bot commands: /start and /help, /pending, /skip (also addressed `@<bot>` in groups),
and the command menu."""

from __future__ import annotations

import json

import pytest

from tests.integration.telegram.fake_bot_api import Msg
from tests.support.telegram import ADA, GROUP, PRIVATE, Harness
from tests.support.waiting import eventually

OTHER_BOT = "/skip@some_other_bot"


async def seen(tg: Harness, qid: str) -> Msg:
    """The prompt once the worker has recorded it: it reaches the platform a moment
    before, and a person reads it before typing /pending."""
    prompt = await tg.prompt()
    await tg.delivered(qid)
    return prompt


def with_language(user: dict[str, object], code: str | None) -> dict[str, object]:
    return {**user, "language_code": code} if code else dict(user)


@pytest.mark.parametrize(
    ("code", "intro"),
    [
        (None, "askgate shows your agent's questions in this chat."),
        ("tr", "askgate, ajanınızın sorularını bu sohbette gösterir."),
        ("hi-IN", "askgate आपके एजेंट के प्रश्न इस चैट में दिखाता है।"),
        ("pt-br", "askgate shows your agent's questions in this chat."),
    ],
)
async def test_start_answers_with_the_chat_id_in_the_persons_language(
    tg: Harness, code: str | None, intro: str
) -> None:
    """/start replies with the chat id and the target to ask with, in the person's
    language when askgate speaks it, else en."""
    await tg.post(tg.fake.text(PRIVATE, "/start", with_language(ADA, code)))
    [reply] = tg.bot_messages()
    assert reply.text.startswith(intro)
    assert reply.styled("code") == [
        str(PRIVATE),
        json.dumps({"channel": "telegram", "chat_id": str(PRIVATE)}),
    ]


async def test_help_in_a_group_addressed_to_the_bot_says_to_reply(tg: Harness) -> None:
    """`/help@<bot>` in a group answers with the group's id and says the bot sees only
    replies there."""
    await tg.post(tg.fake.text(GROUP, "/help@askgate_bot", ADA))
    [reply] = tg.bot_messages(GROUP)
    assert reply.styled("code")[0] == str(GROUP)
    assert "the bot sees only replies to its messages and commands" in reply.text


async def test_start_for_another_bot_is_not_answered(tg: Harness) -> None:
    """`/start@<another bot>` in a group is not ours: no reply."""
    await tg.post(tg.fake.text(GROUP, "/start@some_other_bot", ADA))
    assert tg.fake.sent() == []


async def test_pending_with_nothing_waiting_says_so(tg: Harness) -> None:
    """/pending with no question waiting in the chat says there is none."""
    await tg.post(tg.fake.text(PRIVATE, "/pending", with_language(ADA, "tr")))
    assert tg.said() == ["Cevap bekleyen bir soru yok."]


async def test_pending_shows_the_question_again_with_its_keyboard(tg: Harness) -> None:
    """/pending sends the waiting question again, with the same text and buttons."""
    q = await tg.ask()
    prompt = await seen(tg, q["id"])
    await tg.post(tg.fake.text(PRIVATE, "/pending", ADA))
    copy = await tg.prompt(n=2)
    assert copy.buttons == prompt.buttons
    assert copy.text.split("⏳")[0] == prompt.text.split("⏳")[0]


async def test_pending_leaves_the_ledger_and_both_become_the_summary(tg: Harness) -> None:
    """A prompt shown again is not a delivery (the ledger keeps the first message), and
    when the question ends both messages turn into the summary."""
    q = await tg.ask()
    prompt = await seen(tg, q["id"])
    await tg.post(tg.fake.text(PRIVATE, "/pending", ADA))
    copy = await tg.prompt(n=2)
    delivery = await tg.delivered(q["id"])
    assert delivery["ref"]["message_id"] == prompt.message_id
    await tg.post(tg.fake.tap(copy, copy.buttons[1][0]["callback_data"], ADA))
    # The prompt is edited by the ledger's ref (a tap on the copy did not replace it),
    # the copy as an extra message.
    assert await tg.summary(prompt) == "Answered: Production"
    assert await tg.summary(copy) == "Answered: Production"
    [delivery] = (await tg.question(q["id"]))["deliveries"]
    assert delivery["status"] == "delivered"


async def test_reply_to_the_copy_answers(tg: Harness) -> None:
    """A reply to the prompt shown again answers like a reply to the prompt."""
    q = await tg.ask()
    await seen(tg, q["id"])
    await tg.post(tg.fake.text(PRIVATE, "/pending", ADA))
    copy = await tg.prompt(n=2)
    await tg.post(tg.fake.text(PRIVATE, "staging", ADA, reply_to=copy))
    body = await tg.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["Staging (Recommended)"]}


async def test_pending_keeps_the_ticks_made_so_far(tg: Harness) -> None:
    """A multi-select question shown again shows the options ticked so far."""
    q = await tg.ask(
        questions=[
            {
                "id": "areas",
                "header": "Areas",
                "question": "Which?",
                "options": [{"label": "Auth"}, {"label": "Billing"}],
                "multiSelect": True,
            }
        ]
    )
    prompt = await seen(tg, q["id"])
    await tg.post(tg.fake.tap(prompt, f"ag:{q['id']}:0:t1", ADA))
    await tg.post(tg.fake.text(PRIVATE, "/pending", ADA))
    copy = await tg.prompt(n=2)
    assert [row[0]["text"] for row in copy.buttons[:2]] == ["Auth", "✓ Billing"]


async def test_skip_addressed_to_the_bot_skips(tg: Harness) -> None:
    """`/skip@<bot>` (a command picked from a group's menu) skips the waiting question."""
    q = await tg.ask(chat_id=GROUP)
    prompt = await tg.prompt(GROUP)
    await tg.post(tg.fake.text(GROUP, "/skip@askgate_bot", ADA, reply_to=prompt))
    body = await tg.wait_result(q["id"])
    assert (body["result"], body["reason"]) == ({"status": "no_answer"}, "skipped")


async def test_skip_addressed_to_another_bot_is_no_answer(tg: Harness) -> None:
    """`/skip@<another bot>` neither skips nor becomes a free-text answer."""
    q = await tg.ask()
    await tg.prompt()
    await tg.post(tg.fake.text(PRIVATE, OTHER_BOT, ADA))
    await tg.post(tg.fake.text(PRIVATE, "2", ADA))
    body = await tg.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}


async def test_the_bot_menu_lists_the_commands_in_each_language(tg: Harness) -> None:
    """At start the bot's command menu is set in en (default), tr and hi."""
    await eventually(lambda: len(tg.fake.menus) == 3, "three command menus")
    assert [c["command"] for c in tg.fake.menus[None]] == ["pending", "skip", "help"]
    assert tg.fake.menus["tr"][1]["description"] == "Bekleyen soruyu atla"


async def test_skip_command_in_reply_to_other_request_skips(tg: Harness) -> None:
    """/skip sent as the reply to the "Type your answer:" request skips; it is not the
    free-text answer "/skip"."""
    q = await tg.ask()
    prompt = await tg.prompt()
    await tg.post(tg.fake.tap(prompt, prompt.buttons[-1][0]["callback_data"], ADA))
    [request] = [m for m in tg.bot_messages() if m.text == "Type your answer:"]
    await tg.post(tg.fake.text(PRIVATE, "/skip", ADA, reply_to=request))
    assert (await tg.wait_result(q["id"]))["reason"] == "skipped"
