"""Typed answers: "Other…" via ForceReply, and text replies parsed by the shared parser."""

from __future__ import annotations

import time

from tests.support.questions import THREE, answers
from tests.support.telegram import ADA, BOB, GROUP, PRIVATE, Harness
from tests.support.waiting import eventually


async def test_other_asks_for_free_text_with_force_reply(tg: Harness) -> None:
    """ "Other…" sends a selective ForceReply asking the user to type the answer."""
    await tg.ask()
    prompt = await tg.prompt()
    await tg.post(tg.fake.tap(prompt, prompt.buttons[-1][0]["callback_data"], ADA))
    ask = tg.fake.sent()[-1].params
    assert ask["reply_markup"] == {"force_reply": True, "selective": True}
    assert ask["text"] == "Type your answer:"


async def test_reply_to_other_prompt_is_the_free_text_answer(tg: Harness) -> None:
    """The reply to the ForceReply becomes the answer, literally (even "1")."""
    q = await tg.ask()
    prompt = await tg.prompt()
    await tg.delivered(q["id"])  # the chat knows its pending question once confirmed
    await tg.post(tg.fake.tap(prompt, prompt.buttons[-1][0]["callback_data"], ADA))
    force = tg.fake.messages(PRIVATE)[-1]
    await tg.post(tg.fake.text(PRIVATE, "1", ADA, reply_to=force))
    assert answers(await tg.wait_result(q["id"])) == {"deploy_target": ["1"]}


async def test_other_in_group_mentions_the_user(tg: Harness) -> None:
    """In a group the ForceReply mentions the tapping user, so only they get the reply field."""
    await tg.ask(chat_id=GROUP)
    prompt = await tg.prompt(GROUP)
    await tg.post(tg.fake.tap(prompt, prompt.buttons[-1][0]["callback_data"], ADA))
    assert tg.fake.sent()[-1].params["text"] == "@ada Type your answer:"


async def test_free_text_is_not_echoed_in_group_summary(tg: Harness) -> None:
    """A free-text answer in a group is summarised without repeating the text."""
    q = await tg.ask(chat_id=GROUP)
    prompt = await tg.prompt(GROUP)
    await tg.post(tg.fake.tap(prompt, prompt.buttons[-1][0]["callback_data"], ADA))
    force = tg.fake.messages(GROUP)[-1]
    await tg.post(tg.fake.text(GROUP, "the secret canary box", ADA, reply_to=force))
    assert answers(await tg.wait_result(q["id"])) == {"deploy_target": ["the secret canary box"]}
    assert await tg.summary(prompt) == "Answered: (your answer)"


async def test_number_reply_picks_the_option(tg: Harness) -> None:
    """The chat's next message "2" answers with option 2."""
    q = await tg.ask()
    await tg.prompt()
    await tg.delivered(q["id"])  # the chat knows its pending question once confirmed
    await tg.post(tg.fake.text(PRIVATE, "2", ADA))
    assert answers(await tg.wait_result(q["id"])) == {"deploy_target": ["Production"]}


async def test_label_reply_picks_the_option(tg: Harness) -> None:
    """A reply to the prompt naming a label (any case) picks that label."""
    q = await tg.ask()
    prompt = await tg.prompt()
    await tg.delivered(q["id"])  # the chat knows its pending question once confirmed
    await tg.post(tg.fake.text(PRIVATE, "staging", ADA, reply_to=prompt))
    assert answers(await tg.wait_result(q["id"])) == {"deploy_target": ["Staging (Recommended)"]}


async def test_other_text_reply_is_free_text(tg: Harness) -> None:
    """Text that is neither a number nor a label is the free-text answer."""
    q = await tg.ask()
    await tg.prompt()
    await tg.delivered(q["id"])  # the chat knows its pending question once confirmed
    await tg.post(tg.fake.text(PRIVATE, "  a canary first  ", ADA))
    assert answers(await tg.wait_result(q["id"])) == {"deploy_target": ["a canary first"]}


async def test_comma_list_answers_multi_select(tg: Harness) -> None:
    """ "1,3" answers a multi-select question with options 1 and 3."""
    q = await tg.ask(questions=[THREE[1]])
    await tg.prompt()
    await tg.delivered(q["id"])  # the chat knows its pending question once confirmed
    await tg.post(tg.fake.text(PRIVATE, "1,3", ADA))
    assert answers(await tg.wait_result(q["id"])) == {"areas": ["Auth", "Search"]}


async def test_keyed_lines_answer_several_questions(tg: Harness) -> None:
    """Keyed lines answer every question of a three-question ask."""
    q = await tg.ask(questions=THREE)
    await tg.prompt()
    await tg.delivered(q["id"])  # the chat knows its pending question once confirmed
    text = "notify: nobody\nenv = 2\nAreas: auth, billing"
    await tg.post(tg.fake.text(PRIVATE, text, ADA))
    assert answers(await tg.wait_result(q["id"])) == {
        "env": ["Production"],
        "areas": ["Auth", "Billing"],
        "notify": ["Nobody"],
    }


async def test_partial_reply_gets_the_correction(tg: Harness) -> None:
    """A reply that leaves a question out is refused with the message naming it."""
    q = await tg.ask(questions=THREE)
    await tg.prompt()
    await tg.delivered(q["id"])  # the chat knows its pending question once confirmed
    await tg.post(tg.fake.text(PRIVATE, "env: 1\nareas: 2", ADA))
    reply = await eventually(
        lambda: [c for c in tg.fake.sent() if "reply_parameters" in c.params],
        "the correction message",
    )
    assert reply[-1].params["text"] == "Please also answer: Notify: Who should be told?"
    assert (await tg.question(q["id"]))["status"] == "pending"


async def test_group_chatter_from_others_is_ignored(tg: Harness) -> None:
    """In a group, a message from a user who may not answer leaves the question pending."""
    q = await tg.ask(chat_id=GROUP)
    await tg.prompt(GROUP)
    await tg.post(tg.fake.text(GROUP, "1", BOB))
    await tg.post(tg.fake.text(GROUP, "2", ADA))
    assert answers(await tg.wait_result(q["id"])) == {"deploy_target": ["Production"]}


async def test_skip_word_skips(tg: Harness) -> None:
    """The locale's skip word ("atla") skips a Turkish ask."""
    q = await tg.ask(locale="tr")
    await tg.prompt()
    await tg.delivered(q["id"])  # the chat knows its pending question once confirmed
    await tg.post(tg.fake.text(PRIVATE, "atla", ADA))
    body = await tg.wait_result(q["id"])
    assert body["reason"] == "skipped"


async def test_edited_reply_counts_while_the_question_is_pending(tg: Harness) -> None:
    """A partial reply, edited into a whole one before the question ends, answers it."""
    q = await tg.ask(questions=THREE)
    prompt = await tg.prompt()
    await tg.delivered(q["id"])  # the chat knows its pending question once confirmed
    update = tg.fake.text(PRIVATE, "env: 2", ADA, reply_to=prompt)
    await tg.post(update)
    await tg.post(tg.fake.edit(tg.own(update), "env: 2\nareas: 3\nnotify: 1"))
    assert answers(await tg.wait_result(q["id"])) == {
        "env": ["Production"],
        "areas": ["Search"],
        "notify": ["Team"],
    }
    assert tg.own(update).reactions == ["👍"]


async def test_edit_of_a_message_older_than_the_question_is_no_answer(tg: Harness) -> None:
    """Editing a message written before the question was asked does not answer it."""
    old = tg.fake.text(PRIVATE, "hello", ADA, date=int(time.time()) - 3600)
    q = await tg.ask()
    await tg.prompt()
    await tg.delivered(q["id"])  # the chat knows its pending question once confirmed
    await tg.post(tg.fake.edit(tg.own(old), "2"))
    await tg.post(tg.fake.text(PRIVATE, "1", ADA))
    assert answers(await tg.wait_result(q["id"])) == {"deploy_target": ["Staging (Recommended)"]}


async def test_edit_after_the_answer_is_told_it_came_too_late(tg: Harness) -> None:
    """An edit of a reply to a prompt whose question already ended is told so, and changes
    nothing."""
    q = await tg.ask()
    prompt = await tg.prompt()
    await tg.delivered(q["id"])  # the chat knows its pending question once confirmed
    update = tg.fake.text(PRIVATE, "1", ADA, reply_to=prompt)
    await tg.post(update)
    await tg.wait_result(q["id"])
    await tg.post(tg.fake.edit(tg.own(update), "2"))
    assert tg.fake.sent()[-1].params["text"] == "This question was already answered."
    assert answers(await tg.wait_result(q["id"])) == {"deploy_target": ["Staging (Recommended)"]}


async def test_reply_before_the_worker_recorded_the_prompt_answers(tg: Harness) -> None:
    """A person who replies to the prompt before the worker has heard back from
    Telegram (so before it recorded which message the prompt is) still answers it: the
    prompt's buttons name the question."""
    tg.fake.hold_send.clear()  # Telegram shows the prompt; its answer to the worker waits
    q = await tg.ask()
    prompt = await tg.prompt()
    assert (await tg.question(q["id"]))["deliveries"][0]["status"] == "sending"
    await tg.post(tg.fake.text(PRIVATE, "2", ADA, reply_to=prompt))
    body = await tg.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}
    tg.fake.hold_send.set()
    await tg.delivered(q["id"])
    assert await tg.summary(prompt) == "Answered: Production"
