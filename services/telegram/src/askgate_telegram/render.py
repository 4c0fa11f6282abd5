"""Pure rendering: a question → its inline keyboard; a final question → its summary.

One single-select question gets one full-width button per option in declared order,
then "Other…" and "Skip". One multi-select question gets toggle buttons (✓ when ticked)
and "Done". Several questions get one row per question: a tap picks that question's
option (ticks it, for a multi-select question), and "Submit" appears once every
question has an answer. A label too long for a phone's button is listed in the text
(compose.py) and its button shows the option's number. Every button's callback data is a
`Tap`: the askgate question id, the target index and the action with the option's
declared index, always within Telegram's 64 bytes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Literal

from aiogram.filters.callback_data import CallbackData
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup
from askgate.channels.render import summary_text
from askgate.domain.i18n import t
from askgate.domain.models import QuestionIn
from askgate.store.record import Record

TEXT_LIMIT = 4096  # Telegram's message text limit, in characters
CHECK = "✓ "
# A full-width inline button on a phone 360 points wide (the most common width) shows
# about 30 Latin characters before Telegram cuts the label with "…"; a row of n buttons
# shares that width. Past it the buttons show numbers and the text carries the labels.
BUTTON_CHARS = 30

Kind = Literal["single", "multi", "several"]
Picks = Mapping[int, Collection[int]]  # question position → option indexes picked


class Tap(CallbackData, prefix="ag"):
    """Callback data of every askgate button: `ag:<question id>:<target>:<action>`.

    Actions: `o<i>` picks option i (0-based, declared order) of a one-question ask, `t<i>`
    ticks option i of a multi-select one and `d` is its Done; `p<q>.<i>` picks (or ticks)
    option i of question q of several and `g` submits them; `x` is Other…, `s` is Skip."""

    q: str
    t: int
    a: str


def kind_of(questions: Sequence[QuestionIn]) -> Kind:
    if len(questions) != 1:
        return "several"
    return "multi" if questions[0].multiSelect else "single"


def fits(labels: Sequence[str], per_row: int) -> bool:
    """Every label shows in full when `per_row` buttons share a row on a phone."""
    width = BUTTON_CHARS if per_row == 1 else BUTTON_CHARS // per_row - 2
    return all(len(label) <= width for label in labels)


def numbered(question: QuestionIn) -> bool:
    """The one question of an ask shows number buttons (its labels are too long)."""
    return not fits([o.label for o in question.options], 1)


def _button(text: str, qid: str, target: int, action: str) -> InlineKeyboardButton:
    return InlineKeyboardButton(text=text, callback_data=Tap(q=qid, t=target, a=action).pack())


def _face(label: str, number: int, *, short: bool, ticked: bool) -> str:
    text = str(number) if short else label
    return CHECK + text if ticked else text


def keyboard(
    questions: Sequence[QuestionIn],
    locale: str,
    qid: str,
    target: int,
    picks: Picks | None = None,
) -> InlineKeyboardMarkup:
    picks = picks or {}
    kind = kind_of(questions)
    rows: list[list[InlineKeyboardButton]] = []
    if kind == "several":
        for qi, q in enumerate(questions):
            short = not fits([o.label for o in q.options], len(q.options))
            chosen = picks.get(qi, ())
            rows.append(
                [
                    _button(
                        _face(o.label, oi + 1, short=short, ticked=oi in chosen),
                        qid,
                        target,
                        f"p{qi}.{oi}",
                    )
                    for oi, o in enumerate(q.options)
                ]
            )
        last = [_button(t(locale, "skip"), qid, target, "s")]
        if all(picks.get(qi) for qi in range(len(questions))):
            last.insert(0, _button(t(locale, "submit"), qid, target, "g"))
        rows.append(last)
        return InlineKeyboardMarkup(inline_keyboard=rows)
    q = questions[0]
    short = numbered(q)
    action = "o" if kind == "single" else "t"
    chosen = picks.get(0, ())
    buttons = [
        _button(_face(o.label, i + 1, short=short, ticked=i in chosen), qid, target, f"{action}{i}")
        for i, o in enumerate(q.options)
    ]
    # Number buttons share one row; labels get a full-width row each.
    rows.extend([buttons] if short else [[b] for b in buttons])
    if kind == "multi":
        rows.append([_button(t(locale, "done"), qid, target, "d")])
    rows.append(
        [
            _button(t(locale, "other"), qid, target, "x"),
            _button(t(locale, "skip"), qid, target, "s"),
        ]
    )
    return InlineKeyboardMarkup(inline_keyboard=rows)


def summary(rec: Record, *, private_chat: bool) -> str:
    """What a prompt becomes when its question ends (`Region: EU · Size: Large` for
    several questions); free text stays out of groups."""
    text = summary_text(rec, echo_free_text=private_chat)
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"


def private_chat(chat_id: str) -> bool:
    """A private chat's id is its user's id, a positive number; groups and channels are
    negative or an @name."""
    return chat_id.isdigit()
