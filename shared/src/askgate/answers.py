"""Answers given through the API: canonical labels, and what a late answer is told."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from askgate.errors import IncompleteAnswer, ValidationFailed
from askgate.i18n import t
from askgate.models import QuestionIn
from askgate.parser import match_label
from askgate.status import Reason, Status

FREE_TEXT_MAX = 2000


def canonical_answers(
    questions: Sequence[QuestionIn], given: Mapping[str, list[str] | str], locale: str = "en"
) -> dict[str, list[str]]:
    """Answers keyed by question id in declared order, values as the declared labels
    (matched ignoring case and the Recommended suffix) or trimmed free text."""
    ids = [q.id for q in questions]
    for key in given:
        if key not in ids:
            raise ValidationFailed(
                f"answers.{key} is not a question of this ask; answer with the ids "
                f"{', '.join(ids)}"
            )
    out: dict[str, list[str]] = {}
    for q in questions:
        raw = given.get(q.id)
        values_in = [raw] if isinstance(raw, str) else list(raw or [])
        values: list[str] = []
        for v in values_in:
            v = v.strip()  # trimmed like a typed reply; inner spacing is the human's
            if not v:
                continue
            if len(v) > FREE_TEXT_MAX:
                raise ValidationFailed(
                    f"answers.{q.id} values must be at most {FREE_TEXT_MAX} characters"
                )
            v = match_label(q, v) or v
            if v not in values:
                values.append(v)
        if len(values) > 1 and not q.multiSelect:
            raise ValidationFailed(
                f"answers.{q.id} takes one answer (the question is single-select); "
                "send a list with one value"
            )
        if values:
            out[q.id] = values
    missing = [q for q in questions if q.id not in out]
    if missing:
        named = " / ".join(f"{q.header}: {q.question}" for q in missing)
        raise IncompleteAnswer(
            f"answers.{missing[0].id} is missing; all questions of an ask are answered "
            f"together. {t(locale, 'missing', questions=named)}",
            missing=[q.id for q in missing],
        )
    return out


def ended_message(status: str, reason: str | None, locale: str = "en") -> str:
    if status == Status.ANSWERED:
        return t(locale, "already_answered")
    if reason == Reason.TIMEOUT:
        return t(locale, "expired")
    if reason == Reason.SKIPPED:
        return t(locale, "ended") + f" ({reason})"
    return t(locale, "ended") + (f" ({reason})" if reason else "")
