"""Plain-text rendering shared by every channel: the prompt with numbered options and
reply guidance, and the one-line summary a prompt becomes when its question ends."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from askgate.i18n import t
from askgate.models import QuestionIn


def guidance(questions: Sequence[QuestionIn], locale: str) -> str:
    if len(questions) > 1:
        return t(locale, "guide_many")
    return t(locale, "guide_multi" if questions[0].multiSelect else "guide_single")


def prompt_text(questions: Sequence[QuestionIn], locale: str, *, limit: int = 4000) -> str:
    """The question(s) as readable text: numbered options, Other…, then how to reply."""
    blocks: list[str] = []
    many = len(questions) > 1
    for qi, q in enumerate(questions, 1):
        head = f"{qi}. [{q.header}] {q.question}" if many else f"[{q.header}] {q.question}"
        if q.multiSelect:
            head += " " + t(locale, "choose_many")
        lines = [head]
        for oi, opt in enumerate(q.options, 1):
            line = f"   {oi}) {opt.label}" if many else f"{oi}) {opt.label}"
            if opt.description:
                line += f" — {opt.description}"
            lines.append(line)
        blocks.append("\n".join(lines))
    text = "\n\n".join(blocks) + "\n\n" + guidance(questions, locale)
    if len(text) > limit:
        # Descriptions are the only unbounded-ish part; drop them before cutting.
        stripped = [q.model_copy(update={"options": [o.model_copy(update={"description": None})
                                                     for o in q.options]}) for q in questions]
        text = prompt_text(stripped, locale, limit=10**9)
        text = text[: limit - 1] + "…" if len(text) > limit else text
    return text


def summary_text(
    status: str,
    reason: str | None,
    result: Mapping[str, Any] | None,
    locale: str,
    *,
    echo_free_text: bool = True,
    questions: Sequence[QuestionIn] = (),
) -> str:
    """`Answered: <labels>`, `Expired`, `Cancelled`, `Skipped`… in the ask's locale.

    With echo_free_text=False (group chats) an answer that is not a declared label is
    shown as a placeholder, so what a person typed is not repeated to the room."""
    if status == "answered" and result:
        declared = {o.label for q in questions for o in q.options}
        labels: list[str] = []
        for values in result.get("answers", {}).get("answers", {}).values():
            for v in values:
                if echo_free_text or v in declared:
                    labels.append(v)
                else:
                    labels.append(t(locale, "free_text"))
        return t(locale, "answered", labels=", ".join(labels))
    return t(locale, f"summary_{reason or 'timeout'}")
