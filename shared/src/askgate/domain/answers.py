"""Answers given through the API: canonical labels, and what a late answer is told."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from askgate.domain.errors import IncompleteAnswer, ValidationFailed
from askgate.domain.i18n import t
from askgate.domain.models import FREE_TEXT_MAX, QuestionIn, show
from askgate.domain.parser import match_label
from askgate.domain.status import Reason, Status


def canonical_answers(
    questions: Sequence[QuestionIn], given: Mapping[str, list[str] | str], locale: str = "en"
) -> dict[str, list[str]]:
    """Answers keyed by question id in declared order, values as the declared labels
    (matched ignoring case and the Recommended suffix) or trimmed free text.

    Linear in the input: a question takes at most its options plus one free text, so a
    longer list is refused before any value is looked at."""
    ids = [q.id for q in questions]
    for key in given:
        if key not in ids:
            raise ValidationFailed(
                f"answers.{show(key)[1:-1]} is not a question of this ask; answer with the "
                f"ids {', '.join(ids)}"
            )
    out: dict[str, list[str]] = {}
    for q in questions:
        raw = given.get(q.id)
        values_in = [raw] if isinstance(raw, str) else list(raw or [])
        if len(values_in) > len(q.options) + 1:
            raise ValidationFailed(_too_many(q, len(values_in)))
        values: dict[str, None] = {}  # ordered and O(1) to test: duplicates dropped
        free: list[str] = []
        for v in values_in:
            v = v.strip()  # trimmed like a typed reply; inner spacing is the human's
            if not v:
                continue
            if len(v) > FREE_TEXT_MAX:
                raise ValidationFailed(
                    f"answers.{q.id} values must be at most {FREE_TEXT_MAX} characters "
                    f"(got {len(v)}); shorten the free text"
                )
            label = match_label(q, v)
            if label is None and v not in values:
                free.append(v)
            values[label or v] = None
        if len(values) > 1 and not q.multiSelect:
            raise ValidationFailed(
                f"answers.{q.id} takes one answer (the question is single-select); "
                "send a list with one value"
            )
        if len(free) > 1:
            raise ValidationFailed(
                f"answers.{q.id} takes at most one free-text value besides its options "
                f"(got {len(free)}: {', '.join(show(v) for v in free[:3])}); "
                "join them into one text"
            )
        if values:
            out[q.id] = list(values)
    missing = [q for q in questions if q.id not in out]
    if missing:
        named = " / ".join(f"{q.header}: {q.question}" for q in missing)
        raise IncompleteAnswer(
            f"answers.{missing[0].id} is missing; all questions of an ask are answered "
            f"together. {t(locale, 'missing', questions=named)}",
            missing=[q.id for q in missing],
        )
    return out


def _too_many(q: QuestionIn, count: int) -> str:
    if not q.multiSelect:
        return (
            f"answers.{q.id} takes one answer (the question is single-select; got "
            f"{count} values); send a list with one value"
        )
    return (
        f"answers.{q.id} takes at most {len(q.options) + 1} values (its "
        f"{len(q.options)} options and one free text; got {count}); send each option "
        "once"
    )


def late_message(reason: str | None, locale: str = "en") -> str:
    """What a person whose answer came after the end is told: it was kept, and the
    agent went on without it."""
    return t(locale, "late_expired" if reason == Reason.TIMEOUT else "late_ended")


def ended_message(status: str, reason: str | None, locale: str = "en") -> str:
    if status == Status.ANSWERED:
        return t(locale, "already_answered")
    if reason == Reason.TIMEOUT:
        return t(locale, "expired")
    if reason == Reason.SKIPPED:
        return t(locale, "ended") + f" ({reason})"
    return t(locale, "ended") + (f" ({reason})" if reason else "")
