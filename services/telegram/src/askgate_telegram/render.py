"""Pure rendering: a question → the Telegram message text and inline keyboard.

One single-select question gets one full-width button per option in declared order,
then "Other…" and "Skip". One multi-select question gets toggle buttons (✓ when ticked)
and "Done". Several questions are numbered text with reply guidance and a Skip button.
Every button's callback data is a `Tap`: the askgate question id, the target index and
the action with the option's declared index, always within Telegram's 64 bytes.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from aiogram.filters.callback_data import CallbackData
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup, MessageEntity, User
from askgate.i18n import t
from askgate.models import QuestionIn
from askgate.record import Record
from askgate.render import prompt_text, summary_text

TEXT_LIMIT = 4096  # Telegram's message text limit, in characters
CHECK = "✓ "

Kind = Literal["single", "multi", "text"]


class Tap(CallbackData, prefix="ag"):
    """Callback data of every askgate button: `ag:<question id>:<target>:<action>`.

    Actions: `o<i>` picks option i (0-based, declared order), `t<i>` toggles option i of
    a multi-select prompt, `d` is Done, `x` is Other…, `s` is Skip."""

    q: str
    t: int
    a: str


@dataclass(frozen=True)
class Prompt:
    text: str
    markup: InlineKeyboardMarkup


def kind_of(questions: Sequence[QuestionIn]) -> Kind:
    if len(questions) != 1:
        return "text"
    return "multi" if questions[0].multiSelect else "single"


def _button(text: str, qid: str, target: int, action: str) -> InlineKeyboardButton:
    return InlineKeyboardButton(text=text, callback_data=Tap(q=qid, t=target, a=action).pack())


def keyboard(
    questions: Sequence[QuestionIn],
    locale: str,
    qid: str,
    target: int,
    selected: Collection[int] = (),
) -> InlineKeyboardMarkup:
    kind = kind_of(questions)
    rows: list[list[InlineKeyboardButton]] = []
    if kind == "single":
        for i, opt in enumerate(questions[0].options):
            rows.append([_button(opt.label, qid, target, f"o{i}")])
    elif kind == "multi":
        for i, opt in enumerate(questions[0].options):
            label = CHECK + opt.label if i in selected else opt.label
            rows.append([_button(label, qid, target, f"t{i}")])
        rows.append([_button(t(locale, "done"), qid, target, "d")])
    last = [_button(t(locale, "skip"), qid, target, "s")]
    if kind != "text":
        last.insert(0, _button(t(locale, "other"), qid, target, "x"))
    rows.append(last)
    return InlineKeyboardMarkup(inline_keyboard=rows)


def prompt(
    questions: Sequence[QuestionIn],
    locale: str,
    qid: str,
    target: int,
    selected: Collection[int] = (),
) -> Prompt:
    """The prompt message: numbered text (so typed replies work everywhere) and buttons."""
    text = prompt_text(questions, locale, limit=TEXT_LIMIT)
    if kind_of(questions) == "multi":
        hint = "\n" + t(locale, "select_then_done")
        if len(text) + len(hint) <= TEXT_LIMIT:
            text += hint
    return Prompt(text, keyboard(questions, locale, qid, target, selected))


def summary(rec: Record, *, private_chat: bool) -> str:
    """What a prompt becomes when its question ends; free text stays out of groups."""
    text = summary_text(rec, echo_free_text=private_chat)
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"


def utf16_len(text: str) -> int:
    """Telegram measures entity offsets and lengths in UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def other_prompt(
    locale: str, user: User | None, *, private_chat: bool
) -> tuple[str, list[MessageEntity]]:
    """The "Other…" ForceReply text; in groups it mentions the user so that `selective`
    shows the reply field to that user only."""
    ask = t(locale, "other_prompt")
    if private_chat or user is None:
        return ask, []
    if user.username:
        return f"@{user.username} {ask}", []
    name = user.full_name or str(user.id)
    entity = MessageEntity(type="text_mention", offset=0, length=utf16_len(name), user=user)
    return f"{name} {ask}", [entity]
