"""Plain-text rendering shared by every channel: the prompt with numbered options and
reply guidance, and the one-line summary a prompt becomes when its question ends."""

from __future__ import annotations

from collections.abc import Sequence

from askgate.domain.i18n import t
from askgate.domain.models import QuestionIn
from askgate.domain.status import Status
from askgate.store.record import Record


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
        stripped = [
            q.model_copy(
                update={"options": [o.model_copy(update={"description": None}) for o in q.options]}
            )
            for q in questions
        ]
        text = prompt_text(stripped, locale, limit=10**9)
        text = text[: limit - 1] + "…" if len(text) > limit else text
    return text


def summary_text(rec: Record, *, echo_free_text: bool = True, locale: str | None = None) -> str:
    """What a prompt becomes when its question ends, in the ask's locale: `Answered:
    <labels>` (with several questions, `Answered: Region: EU · Size: Large`), `Expired`,
    `Cancelled`, `Skipped`…

    With echo_free_text=False (group chats) an answer that is not a declared label is
    shown as a placeholder, so what a person typed is not repeated to the room. `locale`
    overrides the ask's (a page shown in another language)."""
    result = rec.result
    locale = locale or rec.locale
    if rec.status == Status.ANSWERED and result:
        answers = result.get("answers", {}).get("answers", {})
        parts: list[str] = []
        for q in rec.questions:
            declared = {o.label for o in q.options}
            values = [
                v if echo_free_text or v in declared else t(locale, "free_text")
                for v in answers.get(q.id, [])
            ]
            parts.append(", ".join(values))
        if len(rec.questions) > 1:
            parts = [f"{q.header}: {part}" for q, part in zip(rec.questions, parts, strict=True)]
        return t(locale, "answered", labels=" · ".join(parts))
    reason = rec.reason.value if rec.reason else "timeout"
    return t(locale, f"summary_{reason}")


def duration(ms: int, locale: str) -> str:
    """A time left as people say it: `45 s` under a minute, else whole minutes."""
    left_s = max(0, ms // 1000)
    if left_s < 60:
        return t(locale, "seconds_short", n=left_s)
    return t(locale, "minutes_short", n=(left_s + 30) // 60)


def reminder_text(locale: str, left_ms: int, *, final: bool = False) -> str:
    """A reminder's words: `Still waiting for your answer — 10 min left.`, or the final
    warning `Last call: this question expires in 2 min.`"""
    return t(locale, "final_warning" if final else "reminder", left=duration(left_ms, locale))
