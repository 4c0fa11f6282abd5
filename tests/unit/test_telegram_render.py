"""The Telegram worker's pure rendering: keyboards, callback data, text limits."""

from __future__ import annotations

import pytest
from aiogram.types import User
from askgate.models import QuestionIn
from askgate.record import new_question_id
from askgate_telegram import render
from askgate_telegram.render import Tap

from tests.support.records import record_of


def question(multi: bool = False, n: int = 4, label_len: int = 10) -> QuestionIn:
    return QuestionIn.model_validate({
        "id": "deploy_target", "header": "Deploy", "question": "Where to?",
        "options": [{"label": f"{i}" + "x" * (label_len - 1)} for i in range(n)],
        "multiSelect": multi,
    })


def datas(markup: object) -> list[str]:
    rows = markup.inline_keyboard  # type: ignore[attr-defined]
    return [b.callback_data for row in rows for b in row]


@pytest.mark.parametrize("multi", [False, True])
def test_callback_data_fits_64_bytes_for_any_question_id(multi: bool) -> None:
    """Every button's callback data stays within 64 bytes for the longest ids askgate makes."""
    qid = new_question_id("t" * 13, "s" * 200, "r" * 200, "c" * 200)
    p = render.prompt([question(multi)], "hi", qid, 9)
    assert max(len(d.encode()) for d in datas(p.markup)) <= 64


def test_single_select_callback_data_carries_declared_index() -> None:
    """Option buttons carry the question id and the option's declared index, in order."""
    p = render.prompt([question()], "en", "q0aabcdefghijklmnopqrst", 0)
    assert [Tap.unpack(d).a for d in datas(p.markup)] == ["o0", "o1", "o2", "o3", "x", "s"]
    assert {Tap.unpack(d).q for d in datas(p.markup)} == {"q0aabcdefghijklmnopqrst"}


def test_multi_select_marks_ticked_options() -> None:
    """A multi-select keyboard shows ✓ on ticked options and ends with Done, Other…, Skip."""
    p = render.prompt([question(multi=True, n=3)], "en", "q00", 0, selected={1})
    texts = [b.text for row in p.markup.inline_keyboard for b in row]
    assert texts == ["0xxxxxxxxx", "✓ 1xxxxxxxxx", "2xxxxxxxxx", "Done", "Other…", "Skip"]


def test_prompt_text_never_exceeds_4096() -> None:
    """Text is cut to Telegram's 4096 characters however long the ask is."""
    qs = [QuestionIn.model_validate({
        "id": f"q{i}", "header": "H", "question": "Q" * 1000,
        "options": [{"label": f"{j}" + "L" * 63, "description": "d" * 300} for j in range(4)],
        "multiSelect": True}) for i in range(3)]
    assert len(render.prompt(qs, "hi", "q00", 0).text) <= render.TEXT_LIMIT


def test_other_prompt_mentions_user_without_username_by_entity() -> None:
    """In a group, a user without @username is mentioned with a text_mention entity."""
    user = User(id=7, is_bot=False, first_name="Ayşe")
    text, entities = render.other_prompt("tr", user, private_chat=False)
    assert text == "Ayşe Cevabınızı yazın:"
    assert (entities[0].type, entities[0].offset, entities[0].length) == ("text_mention", 0, 4)


def test_group_summary_hides_free_text() -> None:
    """A group summary shows declared labels but not the human's own words."""
    result = {"status": "answered", "answers": {"answers": {"deploy_target": ["my own"]}}}
    rec = record_of([question()], status="answered", result=result)
    text = render.summary(rec, private_chat=False)
    assert text == "Answered: (your answer)"
