"""Several questions on one prompt: a row of buttons per question, picks kept per
question, Submit once each has one, and a summary that names each answer's question."""

from __future__ import annotations

from tests.integration.telegram.fake_bot_api import Msg
from tests.support.questions import THREE, answers
from tests.support.telegram import ADA, PRIVATE, Harness


def button(prompt: Msg, data_end: str) -> str:
    """The callback data of the prompt's button whose action is `data_end`."""
    found = [
        b["callback_data"]
        for row in prompt.buttons
        for b in row
        if b["callback_data"].endswith(":" + data_end)
    ]
    assert len(found) == 1, (data_end, prompt.buttons)
    return str(found[0])


async def tap(tg: Harness, prompt: Msg, *actions: str) -> None:
    for action in actions:
        await tg.post(tg.fake.tap(prompt, button(prompt, action), ADA))


async def test_a_pick_ticks_that_questions_option_only(tg: Harness) -> None:
    """Tapping an option ticks it in its question's row; a second pick on a single-select
    question replaces the first."""
    await tg.ask(questions=THREE)
    prompt = await tg.prompt()
    await tap(tg, prompt, "p0.0", "p0.1", "p1.2")
    assert [[b["text"] for b in row] for row in prompt.buttons[:3]] == [
        ["Staging", "✓ Production"],
        ["Auth", "Billing", "✓ Search"],
        ["Team", "Nobody"],
    ]


async def test_submit_appears_once_every_question_has_an_answer(tg: Harness) -> None:
    """Skip alone until each question has a pick; then Submit beside it."""
    await tg.ask(questions=THREE)
    prompt = await tg.prompt()
    await tap(tg, prompt, "p0.1", "p1.0")
    assert [b["text"] for b in prompt.buttons[-1]] == ["Skip"]
    await tap(tg, prompt, "p2.1")
    assert [b["text"] for b in prompt.buttons[-1]] == ["Submit", "Skip"]


async def test_submit_answers_every_question_and_the_summary_names_them(tg: Harness) -> None:
    """Submit answers with each question's picks (ticks kept for multi-select), and the
    prompt becomes `Env: … · Areas: … · Notify: …`."""
    q = await tg.ask(questions=THREE)
    prompt = await tg.prompt()
    await tap(tg, prompt, "p0.1", "p1.2", "p1.0", "p2.0", "g")
    assert answers(await tg.wait_result(q["id"])) == {
        "env": ["Production"],
        "areas": ["Auth", "Search"],
        "notify": ["Team"],
    }
    assert await tg.summary(prompt) == (
        "Answered: Env: Production · Areas: Auth, Search · Notify: Team"
    )
    assert tg.fake.sent("answerCallbackQuery")[-1].params["text"] == "Answer submitted."


async def test_unticking_the_last_option_takes_submit_away(tg: Harness) -> None:
    """A multi-select question whose only tick is undone has no answer again."""
    q = await tg.ask(questions=THREE)
    prompt = await tg.prompt()
    await tap(tg, prompt, "p0.0", "p1.1", "p2.0", "p1.1")
    assert [b["text"] for b in prompt.buttons[-1]] == ["Skip"]
    assert (await tg.question(q["id"]))["status"] == "pending"


async def test_keyed_lines_still_answer_after_some_picks(tg: Harness) -> None:
    """Typed keyed lines answer the ask whatever was tapped before."""
    q = await tg.ask(questions=THREE)
    prompt = await tg.prompt()
    await tap(tg, prompt, "p0.0")
    await tg.post(tg.fake.text(PRIVATE, "env: 2\nareas: 1\nnotify: 1", ADA))
    assert answers(await tg.wait_result(q["id"])) == {
        "env": ["Production"],
        "areas": ["Auth"],
        "notify": ["Team"],
    }


async def test_long_labels_get_number_buttons_and_full_labels_in_the_text(tg: Harness) -> None:
    """With a label too long for a phone's button, the buttons show numbers and the text
    lists every label in full; a number button answers with its label."""
    long_label = "Roll out to every region at once, tonight"
    q = await tg.ask(
        questions=[
            {
                "id": "plan",
                "header": "Plan",
                "question": "How?",
                "options": [{"label": "Canary"}, {"label": long_label}],
            }
        ]
    )
    prompt = await tg.prompt()
    assert [b["text"] for b in prompt.buttons[0]] == ["1", "2"]
    assert f"2) {long_label}" in prompt.text
    await tg.post(tg.fake.tap(prompt, prompt.buttons[0][1]["callback_data"], ADA))
    assert answers(await tg.wait_result(q["id"])) == {"plan": [long_label]}
