"""Pure rendering: a question → a Discord message (content and components), its summary,
the "Other…" modal and the interaction responses.

- One single-select question: a row of option buttons in declared order (the
  ` (Recommended)` one primary), then a row with Other… and Skip.
- One multi-select question: a string select with `min_values`/`max_values` (Discord's
  own multi-select), then Other… and Skip.
- Several questions: one select per question, then Submit, Other… and Skip (≤ 4 rows).

Every component's `custom_id` is a `Tap`: the askgate question id, the target index and
the action with the declared option or question index, ≤ 30 characters and unique in
its message. Discord's limits: 5 rows, 5 buttons or one select per row, labels ≤ 80,
select options ≤ 25 with descriptions ≤ 100, content ≤ 2000, modal and text-input
labels ≤ 45.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from askgate.channels.render import summary_text
from askgate.domain.i18n import t
from askgate.domain.models import FREE_TEXT_MAX, RECOMMENDED, QuestionIn
from askgate.store.record import Record

CONTENT_MAX = 2000
SELECT_DESCRIPTION_MAX = 100
MODAL_LABEL_MAX = 45
PLACEHOLDER_MAX = 100

# Component and interaction-response types (Discord API v10).
ACTION_ROW, BUTTON, STRING_SELECT, TEXT_INPUT = 1, 2, 3, 4
PRIMARY, SECONDARY = 1, 2
SHORT, PARAGRAPH = 1, 2
PONG, MESSAGE, DEFERRED_UPDATE, UPDATE_MESSAGE, MODAL = 1, 4, 6, 7, 9
EPHEMERAL = 64


@dataclass(frozen=True)
class Tap:
    """`ag:<question id>:<target index>:<action>`. Actions: `o<i>` picks option i (one
    single-select question), `m<k>` is question k's select, `d` Submit, `x` Other… (the
    modal), `f` the modal's submit, `s` Skip."""

    q: str
    t: int
    a: str

    def pack(self) -> str:
        return f"ag:{self.q}:{self.t}:{self.a}"

    @classmethod
    def unpack(cls, raw: str) -> Tap | None:
        parts = raw.split(":")
        if len(parts) != 4 or parts[0] != "ag" or not parts[2].isdigit() or not parts[3]:
            return None
        return cls(parts[1], int(parts[2]), parts[3])


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def content(questions: Sequence[QuestionIn], locale: str, *, descriptions: bool = True) -> str:
    """The questions with their options and descriptions (the buttons carry the labels)."""
    many = len(questions) > 1
    blocks: list[str] = []
    for n, q in enumerate(questions, 1):
        head = f"**{n}. [{q.header}] {q.question}**" if many else f"**[{q.header}] {q.question}**"
        if q.multiSelect:
            head += " " + t(locale, "choose_many")
        lines = [head]
        for i, opt in enumerate(q.options, 1):
            detail = f" — {opt.description}" if descriptions and opt.description else ""
            lines.append(f"{i}) {opt.label}{detail}")
        blocks.append("\n".join(lines))
    if many:
        blocks.append(t(locale, "choose_then_submit"))
    text = "\n\n".join(blocks)
    if len(text) > CONTENT_MAX and descriptions:
        return content(questions, locale, descriptions=False)
    return cut(text, CONTENT_MAX)


def _button(label: str, tap: Tap, style: int = SECONDARY) -> dict[str, Any]:
    return {"type": BUTTON, "style": style, "label": label, "custom_id": tap.pack()}


def _select(q: QuestionIn, tap: Tap, locale: str, picked: set[int]) -> dict[str, Any]:
    options = []
    for i, opt in enumerate(q.options):
        option: dict[str, Any] = {"label": opt.label, "value": str(i)}
        if opt.description:
            option["description"] = cut(opt.description, SELECT_DESCRIPTION_MAX)
        if i in picked:
            option["default"] = True
        options.append(option)
    return {
        "type": STRING_SELECT,
        "custom_id": tap.pack(),
        "options": options,
        "placeholder": cut(f"{q.header}: {t(locale, 'choose')}", PLACEHOLDER_MAX),
        "min_values": 1,
        "max_values": len(q.options) if q.multiSelect else 1,
    }


def _row(*components: dict[str, Any]) -> dict[str, Any]:
    return {"type": ACTION_ROW, "components": list(components)}


def components(
    questions: Sequence[QuestionIn],
    locale: str,
    qid: str,
    target: int,
    picked: Mapping[int, set[int]] | None = None,
) -> list[dict[str, Any]]:
    picked = picked or {}

    def tap(action: str) -> Tap:
        return Tap(qid, target, action)

    other = _button(t(locale, "other"), tap("x"))
    skip = _button(t(locale, "skip"), tap("s"))
    if len(questions) == 1 and not questions[0].multiSelect:
        buttons = [
            _button(o.label, tap(f"o{i}"), PRIMARY if o.label.endswith(RECOMMENDED) else SECONDARY)
            for i, o in enumerate(questions[0].options)
        ]
        return [_row(*buttons), _row(other, skip)]
    rows = [
        _row(_select(q, tap(f"m{k}"), locale, picked.get(k, set())))
        for k, q in enumerate(questions)
    ]
    if len(questions) == 1:
        return [*rows, _row(other, skip)]
    return [*rows, _row(_button(t(locale, "submit"), tap("d"), PRIMARY), other, skip)]


def prompt(rec: Record, index: int) -> dict[str, Any]:
    """The message body of a prompt (nonce and mentions are the adapter's)."""
    return {
        "content": content(rec.questions, rec.locale),
        "components": components(rec.questions, rec.locale, rec.id, index),
    }


def summary(rec: Record) -> dict[str, Any]:
    """What a prompt becomes when its question ends: its summary, no components. Free
    text is not repeated: a channel is shared."""
    return {"content": cut(summary_text(rec, echo_free_text=False), CONTENT_MAX), "components": []}


def modal(rec: Record, index: int) -> dict[str, Any]:
    """The "Other…" modal: one text input per question (optional with several: a
    question left empty keeps what its select picked)."""
    many = len(rec.questions) > 1
    inputs = [
        _row(
            {
                "type": TEXT_INPUT,
                "custom_id": str(k),
                "style": PARAGRAPH if not many else SHORT,
                "label": cut(f"{q.header}: {q.question}", MODAL_LABEL_MAX),
                "required": not many,
                "max_length": FREE_TEXT_MAX,
                "placeholder": cut(t(rec.locale, "other_prompt"), PLACEHOLDER_MAX),
            }
        )
        for k, q in enumerate(rec.questions)
    ]
    return {
        "type": MODAL,
        "data": {
            "custom_id": Tap(rec.id, index, "f").pack(),
            "title": cut(t(rec.locale, "other"), MODAL_LABEL_MAX),
            "components": inputs,
        },
    }


def ephemeral(text: str) -> dict[str, Any]:
    """A reply only the person who clicked sees."""
    return {
        "type": MESSAGE,
        "data": {
            "content": cut(text, CONTENT_MAX),
            "flags": EPHEMERAL,
            "allowed_mentions": {"parse": []},
        },
    }
