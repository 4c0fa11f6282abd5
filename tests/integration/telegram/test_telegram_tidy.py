"""What stays in the chat: helper messages go when their question ends (the prompt
becomes the summary), an answer that counted gets a 👍, and with two questions waiting a
plain message asks which one it answers."""

from __future__ import annotations

from typing import Any

from tests.support.questions import THREE, answers
from tests.support.telegram import ADA, BOB, GROUP, PRIVATE, Harness
from tests.support.waiting import eventually

REGION = {
    "id": "region",
    "header": "Region",
    "question": "Which region?",
    "options": [{"label": "EU"}, {"label": "US"}],
}


async def left(tg: Harness, expected: list[str], chat_id: int = PRIVATE) -> None:
    """Wait until the bot's messages in the chat are exactly `expected`."""
    await eventually(
        lambda: tg.said(chat_id) == expected,
        f"the bot's messages to be {expected} (now {tg.said(chat_id)})",
    )


async def test_other_request_goes_when_the_question_ends(tg: Harness) -> None:
    """The "Type your answer:" request is deleted once its reply answered the question."""
    await tg.ask()
    prompt = await tg.prompt()
    await tg.post(tg.fake.tap(prompt, prompt.buttons[-1][0]["callback_data"], ADA))
    [request] = [m for m in tg.bot_messages() if m.text == "Type your answer:"]
    await tg.post(tg.fake.text(PRIVATE, "blue-green", ADA, reply_to=request))
    await left(tg, ["Answered: blue-green"])
    assert (PRIVATE, request.message_id) in tg.fake.deleted


async def test_correction_goes_when_the_question_ends(tg: Harness) -> None:
    """A correction for a partial reply stays while it helps, then goes with the question."""
    q = await tg.ask(questions=THREE)
    prompt = await tg.prompt()
    await tg.post(tg.fake.text(PRIVATE, "env: 1", ADA, reply_to=prompt))
    correction = "Please also answer: Areas: Which areas changed? / Notify: Who should be told?"
    await left(tg, [prompt.text, correction])
    await tg.post(tg.fake.text(PRIVATE, "1\n1\n2", ADA, reply_to=prompt))
    await tg.wait_result(q["id"])
    await left(tg, ["Answered: Env: Staging · Areas: Auth · Notify: Nobody"])


async def test_answer_that_counted_gets_a_thumbs_up_and_no_message(tg: Harness) -> None:
    """A typed answer that counts is marked 👍; the only bot message is the summary."""
    await tg.ask()
    await tg.prompt()
    update = tg.fake.text(PRIVATE, "2", ADA)
    await tg.post(update)
    assert tg.own(update).reactions == ["👍"]
    await left(tg, ["Answered: Production"])


async def test_without_reactions_the_person_is_told_in_words(tg: Harness) -> None:
    """In a chat with reactions turned off, an answer that counted is confirmed in words."""
    tg.fake.no_reactions.add(PRIVATE)
    await tg.ask()
    prompt = await tg.prompt()
    await tg.post(tg.fake.text(PRIVATE, "2", ADA, reply_to=prompt))
    await left(tg, ["Answered: Production", "Answer submitted."])


async def two_waiting(tg: Harness, chat_id: int = PRIVATE) -> tuple[dict[str, Any], ...]:
    first = await tg.ask(session="a", chat_id=chat_id)
    await tg.prompt(chat_id)
    second = await tg.ask(session="b", chat_id=chat_id, questions=[REGION])
    await tg.prompt(chat_id, n=2)
    return first, second


async def test_plain_message_with_two_waiting_asks_which(tg: Harness) -> None:
    """With two questions waiting, a plain message answers neither: a note names both and
    asks for a reply to the one meant."""
    first, second = await two_waiting(tg)
    await tg.post(tg.fake.text(PRIVATE, "1", ADA))
    note = tg.bot_messages()[-1]
    assert note.text.startswith("More than one question is waiting here.")
    assert note.styled("bold") == ["Region", "Deploy"]
    assert "Where should I deploy this build?" in note.text
    for q in (first, second):
        assert (await tg.question(q["id"]))["status"] == "pending"


async def test_reply_to_a_prompt_answers_that_question_only(tg: Harness) -> None:
    """With two questions waiting, a reply to the older prompt answers the older one."""
    first, second = await two_waiting(tg)
    older = await tg.prompt(n=1)
    await tg.post(tg.fake.text(PRIVATE, "2", ADA, reply_to=older))
    assert answers(await tg.wait_result(first["id"])) == {"deploy_target": ["Production"]}
    assert (await tg.question(second["id"]))["status"] == "pending"


async def test_which_note_goes_once_one_of_them_ends(tg: Harness) -> None:
    """The "which one?" note is deleted when one of the questions it names ends."""
    first, _ = await two_waiting(tg)
    await tg.post(tg.fake.text(PRIVATE, "1", ADA))
    note = tg.bot_messages()[-1]
    older = await tg.prompt(n=1)
    await tg.post(tg.fake.text(PRIVATE, "1", ADA, reply_to=older))
    await tg.wait_result(first["id"])
    await eventually(lambda: (PRIVATE, note.message_id) in tg.fake.deleted, "the note deleted")


async def test_a_question_the_person_may_not_answer_does_not_count(tg: Harness) -> None:
    """In a group, when only one of the waiting questions lets the person answer, a plain
    message answers that one."""
    first = await tg.ask(session="a", chat_id=GROUP, target={"allowed_user_ids": [BOB["id"]]})
    await tg.prompt(GROUP)
    second = await tg.ask(session="b", chat_id=GROUP, questions=[REGION])
    await tg.prompt(GROUP, n=2)
    await tg.post(tg.fake.text(GROUP, "US", ADA))
    assert answers(await tg.wait_result(second["id"])) == {"region": ["US"]}
    assert (await tg.question(first["id"]))["status"] == "pending"
