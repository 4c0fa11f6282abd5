"""Free text and several answers at once: the "Other…" modal, checkboxes + Submit, and
three questions in one message with one Submit."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.questions import AREAS, DEPLOY_AREAS_NOTIFY
from tests.support.slack import ADA, BOB, Harness
from tests.support.waiting import eventually


async def open_modal(
    sl: Harness, ticks: dict[str, list[int]] | None = None, **ask: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    q = await sl.ask(**ask)
    prompt = await sl.prompt()
    await sl.interact(sl.fake.click(prompt, "x", ADA, ticks))
    await eventually(lambda: sl.fake.views, "views.open")
    return q, sl.fake.views[0]


async def test_other_opens_a_modal_with_a_text_input(sl: Harness) -> None:
    """Other… opens a modal (with the click's trigger_id) holding one text input."""
    _, view = await open_modal(sl, locale="tr")
    assert view["title"]["text"] == "Diğer…"
    assert [b["type"] for b in view["blocks"]] == ["input"]
    assert sl.fake.sent("views.open")[0].params["trigger_id"].endswith(".trigger")


async def test_modal_submission_is_the_free_text_answer(sl: Harness) -> None:
    """Text typed into the modal answers the question as free text, exactly."""
    q, view = await open_modal(sl)
    r = await sl.interact(sl.fake.submit(view, ADA, "  Canary first  "))
    assert r.status_code == 200 and r.content == b""
    body = await sl.wait_result(str(q["id"]))
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["Canary first"]}


async def test_free_text_is_not_echoed_in_a_channel(sl: Harness) -> None:
    """The summary in a shared channel shows a placeholder instead of the typed text."""
    _, view = await open_modal(sl)
    await sl.interact(sl.fake.submit(view, ADA, "my secret plan"))
    prompt = await sl.prompt()
    assert await sl.summary(prompt) == "Answered: (your answer)"


async def test_modal_on_an_answered_question_shows_the_error_in_the_modal(sl: Harness) -> None:
    """Submitting after the question was answered keeps the modal open with the reason."""
    q, view = await open_modal(sl)
    await sl.api.post(
        f"/v1/questions/{q['id']}/answer",
        json={"answers": {"deploy_target": ["Production"]}},
        headers=sl.tenant.headers,
    )
    r = await sl.interact(sl.fake.submit(view, ADA, "too late"))
    assert r.json() == {
        "response_action": "errors",
        "errors": {"ag_other": "This question was already answered."},
    }


async def test_modal_from_a_refused_user_changes_nothing(sl: Harness) -> None:
    """A submission from someone not allowed is refused in the modal; still pending."""
    q, view = await open_modal(sl)
    r = await sl.interact(sl.fake.submit(view, BOB, "mine"))
    assert r.json()["errors"]["ag_other"] == "You are not allowed to answer this question."
    assert (await sl.question(str(q["id"])))["status"] == "pending"


async def test_checkboxes_then_submit_answer_with_the_ticked_options(sl: Harness) -> None:
    """A multi-select prompt has native checkboxes; Submit answers with what is ticked."""
    q = await sl.ask(questions=[AREAS])
    prompt = await sl.prompt()
    assert [e["type"] for e in prompt.actions] == ["checkboxes", "button", "button", "button"]
    await sl.interact(sl.fake.click(prompt, "d", ADA, {"q0": [2, 0]}))
    body = await sl.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"areas": ["Auth", "Search"]}


async def test_submit_with_nothing_ticked_asks_to_choose(sl: Harness) -> None:
    """Submit before ticking anything is told to choose; the question stays pending."""
    q = await sl.ask(questions=[AREAS])
    prompt = await sl.prompt()
    await sl.interact(sl.fake.click(prompt, "d", ADA))
    assert await sl.told(ADA) == ["Answer this question first."]
    assert (await sl.question(q["id"]))["status"] == "pending"


async def test_ticked_options_and_modal_text_answer_together(sl: Harness) -> None:
    """Ticks made before Other… are kept: the answer is the ticked labels plus the text."""
    q, view = await open_modal(sl, {"q0": [1]}, questions=[AREAS])
    await sl.interact(sl.fake.submit(view, ADA, "Docs"))
    body = await sl.wait_result(str(q["id"]))
    assert body["result"]["answers"]["answers"] == {"areas": ["Billing", "Docs"]}


async def test_three_questions_are_one_message_with_one_submit(sl: Harness) -> None:
    """Three questions: radio buttons or checkboxes per question and a single Submit."""
    await sl.ask(questions=DEPLOY_AREAS_NOTIFY)
    prompt = await sl.prompt()
    kinds = [e["type"] for e in prompt.actions]
    assert kinds == ["radio_buttons", "checkboxes", "radio_buttons", "button", "button"]
    assert len(sl.fake.sent()) == 1


async def test_three_questions_submitted_give_every_answer(sl: Harness) -> None:
    """Submit with a choice for each question answers all three at once."""
    q = await sl.ask(questions=DEPLOY_AREAS_NOTIFY)
    prompt = await sl.prompt()
    await sl.interact(sl.fake.click(prompt, "d", ADA, {"q0": [1], "q1": [0, 1], "q2": [0]}))
    body = await sl.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {
        "deploy_target": ["Production"],
        "areas": ["Auth", "Billing"],
        "notify": ["Yes"],
    }
    assert await sl.summary(prompt) == (
        "Answered: Deploy: Production · Areas: Auth, Billing · Notify: Yes"
    )


async def test_three_questions_partly_submitted_name_what_is_missing(sl: Harness) -> None:
    """Submit with a question left open is told which one; nothing is stored."""
    q = await sl.ask(questions=DEPLOY_AREAS_NOTIFY)
    prompt = await sl.prompt()
    await sl.interact(sl.fake.click(prompt, "d", ADA, {"q0": [0], "q1": [2]}))
    told = await sl.told(ADA)
    assert told[0].startswith("Please also answer:") and "Notify" in told[0]
    assert (await sl.question(q["id"]))["status"] == "pending"


@pytest.mark.parametrize(
    ("locale", "submit", "skip"),
    [("en", "Submit", "Skip"), ("tr", "Gönder", "Atla"), ("hi", "भेजें", "छोड़ें")],
)
async def test_controls_speak_the_ask_locale(
    sl: Harness, locale: str, submit: str, skip: str
) -> None:
    """Button texts follow the ask's locale."""
    await sl.ask(questions=DEPLOY_AREAS_NOTIFY, locale=locale)
    prompt = await sl.prompt()
    assert [e["text"]["text"] for e in prompt.actions if e["type"] == "button"] == [submit, skip]
