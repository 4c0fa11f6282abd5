"""The Telegram worker's pure rendering: keyboards, callback data, text and its entities,
limits."""

from __future__ import annotations

from typing import Any

import pytest
from aiogram.types import User
from askgate.domain.models import QuestionIn
from askgate.store.record import new_question_id
from askgate_telegram import compose, render
from askgate_telegram.render import Tap

from tests.support.records import record_of

CREATED_MS = 1764500000000  # record_of's creation time; it expires 900 s later


def question(multi: bool = False, n: int = 4, label_len: int = 10, **extra: Any) -> QuestionIn:
    return QuestionIn.model_validate(
        {
            "id": "deploy_target",
            "header": "Deploy",
            "question": "Where to?",
            "options": [{"label": f"{i}" + "x" * (label_len - 1)} for i in range(n)],
            "multiSelect": multi,
            **extra,
        }
    )


def datas(markup: object) -> list[str]:
    rows = markup.inline_keyboard  # type: ignore[attr-defined]
    return [b.callback_data for row in rows for b in row]


def texts(markup: object) -> list[list[str]]:
    return [[b.text for b in row] for row in markup.inline_keyboard]  # type: ignore[attr-defined]


def styled(body: compose.Body, kind: str) -> list[str]:
    units = body.text.encode("utf-16-le")
    return [
        units[2 * e.offset : 2 * (e.offset + e.length)].decode("utf-16-le")
        for e in body.entities
        if e.type == kind
    ]


@pytest.mark.parametrize("multi", [False, True])
def test_callback_data_fits_64_bytes_for_any_question_id(multi: bool) -> None:
    """Every button's callback data stays within 64 bytes for the longest ids askgate makes."""
    qid = new_question_id("t" * 13, "s" * 200, "r" * 200, "c" * 200)
    several = [question(multi), question(multi), question(multi)]
    for qs in ([question(multi)], several):
        markup = render.keyboard(qs, "hi", qid, 9, {0: {3}, 1: {3}, 2: {3}})
        assert max(len(d.encode()) for d in datas(markup)) <= 64


def test_single_select_callback_data_carries_declared_index() -> None:
    """Option buttons carry the question id and the option's declared index, in order."""
    markup = render.keyboard([question()], "en", "q0aabcdefghijklmnopqrst", 0)
    assert [Tap.unpack(d).a for d in datas(markup)] == ["o0", "o1", "o2", "o3", "x", "s"]
    assert {Tap.unpack(d).q for d in datas(markup)} == {"q0aabcdefghijklmnopqrst"}


def test_multi_select_marks_ticked_options() -> None:
    """A multi-select keyboard shows ✓ on ticked options and ends with Done, Other…, Skip."""
    markup = render.keyboard([question(multi=True, n=3)], "en", "q00", 0, {0: {1}})
    assert texts(markup) == [
        ["0xxxxxxxxx"],
        ["✓ 1xxxxxxxxx"],
        ["2xxxxxxxxx"],
        ["Done"],
        ["Other…", "Skip"],
    ]


def test_long_label_turns_the_buttons_into_numbers() -> None:
    """One label past a phone button's ~30 characters: number buttons in one row."""
    q = QuestionIn.model_validate(
        {
            "id": "pick",
            "header": "Pick",
            "question": "Which?",
            "options": [{"label": "Short"}, {"label": "A label that is far too long for a phone"}],
        }
    )
    markup = render.keyboard([q], "en", "q00", 0)
    assert texts(markup) == [["1", "2"], ["Other…", "Skip"]]
    assert [Tap.unpack(d).a for d in datas(markup)][:2] == ["o0", "o1"]


def test_label_of_thirty_characters_stays_a_button() -> None:
    """A label of exactly 30 characters still gets its own full-width button."""
    markup = render.keyboard([question(label_len=30, n=2)], "en", "q00", 0)
    assert texts(markup)[0] == ["0" + "x" * 29]


def test_several_questions_show_submit_once_every_question_has_a_pick() -> None:
    """Picks are ticked per question; Submit joins Skip only when every question has one."""
    qs = [question(n=2, label_len=5), question(n=2, label_len=5, multiSelect=True)]
    partial = render.keyboard(qs, "en", "q00", 0, {0: {1}})
    assert texts(partial) == [["0xxxx", "✓ 1xxxx"], ["0xxxx", "1xxxx"], ["Skip"]]
    full = render.keyboard(qs, "tr", "q00", 0, {0: {1}, 1: {0, 1}})
    assert texts(full)[-1] == ["Gönder", "Atla"]
    assert Tap.unpack(datas(full)[-2]).a == "g"


def test_several_questions_with_long_labels_show_option_numbers() -> None:
    """A question whose labels do not fit its row shows option numbers in that row."""
    qs = [question(n=4, label_len=6), question(n=2, label_len=5)]
    assert texts(render.keyboard(qs, "en", "q00", 0))[:2] == [
        ["1", "2", "3", "4"],
        ["0xxxx", "1xxxx"],
    ]


def test_prompt_header_is_bold_and_descriptions_italic_on_their_own_line() -> None:
    """The header is a bold entity, each description an italic line under its option."""
    q = QuestionIn.model_validate(
        {
            "id": "deploy_target",
            "header": "Deploy",
            "question": "Where to?",
            "options": [
                {"label": "Staging", "description": "Safe, reversible"},
                {"label": "Production"},
            ],
        }
    )
    body = compose.prompt(record_of([q]), CREATED_MS, link=None, group=False)
    assert styled(body, "bold") == ["Deploy"]
    assert styled(body, "italic") == ["Safe, reversible"]
    assert "1) Staging\n     Safe, reversible\n2) Production" in body.text


def test_user_text_is_never_markup() -> None:
    """Markup-looking text in a label arrives literally, with no entity made from it."""
    q = QuestionIn.model_validate(
        {
            "id": "x",
            "header": "<b>H</b>",
            "question": "Use <i>&amp;</i>?",
            "options": [{"label": "<a href='x'>A</a>"}, {"label": "B & C"}],
        }
    )
    body = compose.prompt(record_of([q]), CREATED_MS, link=None, group=False)
    assert "<a href='x'>A</a>" in body.text and "Use <i>&amp;</i>?" in body.text
    assert styled(body, "bold") == ["<b>H</b>"]


@pytest.mark.parametrize(
    ("locale", "left_ms", "shown"),
    [
        ("en", 900_000, "⏳ 15 min"),
        ("tr", 899_400, "⏳ 15 dk"),
        ("hi", 45_000, "⏳ 45 सेकंड"),
    ],
)
def test_time_left_is_a_date_entity_on_the_expiry(locale: str, left_ms: int, shown: str) -> None:
    """The time left reads in the locale, as a date entity carrying the expiry time."""
    rec = record_of([question()], locale=locale)
    body = compose.prompt(rec, CREATED_MS + 900_000 - left_ms, link=None, group=False)
    assert shown in body.text
    [entity] = [e for e in body.entities if e.type == "date_time"]
    assert (entity.unix_time, entity.date_time_format) == (rec.expires_ms // 1000, "r")


def test_group_prompt_asks_for_a_reply_to_the_message() -> None:
    """In a group the guidance says to reply to this message (privacy mode)."""
    body = compose.prompt(record_of([question()]), CREATED_MS, link=None, group=True)
    assert "reply to this message" in body.text
    private = compose.prompt(record_of([question()]), CREATED_MS, link=None, group=False)
    assert "reply to this message" not in private.text


def test_prompt_text_never_exceeds_4096() -> None:
    """Text is cut to Telegram's 4096 characters however long the ask is, labels whole."""
    qs = [
        QuestionIn.model_validate(
            {
                "id": f"q{i}",
                "header": "H",
                "question": "Q" * 1000,
                "options": [
                    {"label": f"{j}" + "L" * 63, "description": "d" * 300} for j in range(4)
                ],
                "multiSelect": True,
            }
        )
        for i in range(3)
    ]
    body = compose.prompt(
        record_of(qs, locale="hi"), CREATED_MS, link="https://x.example/s", group=True
    )
    assert len(body.text) <= render.TEXT_LIMIT
    assert body.text.count("L" * 63) == 12 and "…" in body.text


def test_other_prompt_mentions_user_without_username_by_entity() -> None:
    """In a group, a user without @username is mentioned with a text_mention entity."""
    user = User(id=7, is_bot=False, first_name="Ayşe")
    body = compose.other_prompt("tr", user, private_chat=False)
    assert body.text == "Ayşe Cevabınızı yazın:"
    entity = body.entities[0]
    assert (entity.type, entity.offset, entity.length) == ("text_mention", 0, 4)


def test_group_summary_hides_free_text() -> None:
    """A group summary shows declared labels but not the human's own words."""
    result = {"status": "answered", "answers": {"answers": {"deploy_target": ["my own"]}}}
    rec = record_of([question()], status="answered", result=result)
    text = render.summary(rec, private_chat=False)
    assert text == "Answered: (your answer)"
