"""Message bodies with their formatting: the prompt (bold headers, descriptions on their
own line, the time left, the question's web page, how to answer), /start and /help, the
"which question?" note and the "Other…" request.

Formatting travels as Telegram entities beside plain text (aiogram's formatting nodes),
never as markup inside the text: nothing an agent or a person wrote can break or forge
it, and the text's length is exactly what Telegram counts against its limit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiogram.types import MessageEntity, User
from aiogram.utils.formatting import (
    Bold,
    Code,
    DateTime,
    Italic,
    Text,
    TextLink,
    TextMention,
)
from askgate.channels.render import guidance
from askgate.domain.i18n import t
from askgate.domain.models import QuestionIn
from askgate.store.record import Record

from askgate_telegram.render import TEXT_LIMIT, kind_of

# How long a question's text may be in the "which question?" note.
NOTE_QUESTION_CHARS = 120


@dataclass(frozen=True)
class Body:
    text: str
    entities: list[MessageEntity]

    @classmethod
    def of(cls, *parts: Any) -> Body:
        text, entities = Text(*parts).render()
        return cls(text, entities)

    def kwargs(self) -> dict[str, Any]:
        """sendMessage's text and entities (no parse_mode: the entities say it all)."""
        return {"text": self.text, "entities": self.entities or None}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def time_left(expires_ms: int, now_ms: int, locale: str) -> str:
    left_s = max(0, (expires_ms - now_ms) // 1000)
    if left_s < 60:
        return t(locale, "seconds_short", n=left_s)
    return t(locale, "minutes_short", n=(left_s + 30) // 60)


def _question(
    pos: int, q: QuestionIn, locale: str, *, many: bool, descriptions: bool, question_chars: int
) -> list[Any]:
    head = f"{pos}. {q.header}" if many else q.header
    line = _cut(q.question, question_chars)
    if q.multiSelect:
        line += " " + t(locale, "choose_many")
    parts: list[Any] = [Bold(head), "\n", line]
    indent = "   " if many else ""
    for oi, opt in enumerate(q.options, 1):
        parts += ["\n", f"{indent}{oi}) {opt.label}"]
        if descriptions and opt.description:
            parts += ["\n", f"{indent}     ", Italic(opt.description)]
    return parts


def prompt(rec: Record, now_ms: int, *, link: str | None, group: bool) -> Body:
    """The prompt: every question with numbered options (typed replies work for every
    ask), the time left (a date entity, which clients that know it show relative to now)
    and the web page's link, then how to answer. Descriptions go first and then
    question text is cut when Telegram's 4096 characters would not hold it all."""
    questions, locale = rec.questions, rec.locale
    footer: list[Any] = [
        "⏳ ",
        DateTime(
            time_left(rec.expires_ms, now_ms, locale),
            unix_time=rec.expires_ms // 1000,
            date_time_format="r",
        ),
    ]
    if link:
        footer += [" · ", TextLink(t(locale, "open_web"), url=link)]
    kind = kind_of(questions)
    hint = {"several": "choose_then_submit", "multi": "select_then_done"}.get(kind)
    if hint:
        footer += ["\n", t(locale, hint)]
    if group:
        footer += ["\n", t(locale, "group_reply")]
    footer += ["\n", guidance(questions, locale)]

    def build(descriptions: bool, question_chars: int) -> Body:
        blocks: list[Any] = []
        for pos, q in enumerate(questions, 1):
            if blocks:
                blocks.append("\n\n")
            blocks += _question(
                pos,
                q,
                locale,
                many=len(questions) > 1,
                descriptions=descriptions,
                question_chars=question_chars,
            )
        return Body.of(*blocks, "\n\n", *footer)

    longest = max(len(q.question) for q in questions)
    body = build(True, longest)
    if len(body.text) > TEXT_LIMIT:
        body = build(False, longest)
    cap = longest
    while len(body.text) > TEXT_LIMIT and cap > 1:
        # Labels are never cut (they are the answers); the longest questions are.
        cap = max(1, cap - (len(body.text) - TEXT_LIMIT))
        body = build(False, cap)
    return body


def help_text(chat_id: str, locale: str, *, group: bool) -> Body:
    """/start and /help: what the bot is for, this chat's id and the target to ask with."""
    target = json.dumps({"channel": "telegram", "chat_id": chat_id})
    parts: list[Any] = [
        t(locale, "help_intro"),
        "\n\n",
        t(locale, "help_chat_id"),
        " ",
        Code(chat_id),
        "\n",
        t(locale, "help_target"),
        " ",
        Code(target),
        "\n\n",
        t(locale, "help_answer"),
    ]
    if group:
        parts += [" ", t(locale, "help_group")]
    parts += ["\n", t(locale, "help_commands")]
    return Body.of(*parts)


def which(questions: Sequence[Record]) -> Body:
    """The note for a plain message while several questions wait in the chat: it names
    each, and asks for a reply to the prompt of the one meant."""
    locale = questions[0].locale
    parts: list[Any] = [t(locale, "which")]
    for rec in questions:
        for q in rec.questions[:1]:
            extra = f" (+{len(rec.questions) - 1})" if len(rec.questions) > 1 else ""
            parts += ["\n• ", Bold(q.header), f": {_cut(q.question, NOTE_QUESTION_CHARS)}{extra}"]
    parts += ["\n", t(locale, "which_again")]
    return Body.of(*parts)


def other_prompt(locale: str, user: User | None, *, private_chat: bool) -> Body:
    """The "Other…" ForceReply text; in groups it mentions the user so that `selective`
    shows the reply field to that user only."""
    ask = t(locale, "other_prompt")
    if private_chat or user is None:
        return Body.of(ask)
    if user.username:
        return Body.of(f"@{user.username} {ask}")
    return Body.of(TextMention(user.full_name or str(user.id), user=user), " ", ask)
