"""Pure rendering: records → the session page, the timeline and the docked panel (HTML).

Everything a person reads is rendered here on the server, in the ask's locale, so the
page's JavaScript only shows, hides and sends; it never needs a word of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from askgate.channels.render import summary_text
from askgate.domain.i18n import t
from askgate.domain.models import FREE_TEXT_MAX, RECOMMENDED, QuestionIn
from askgate.domain.status import Status
from askgate.store.record import Record
from jinja2 import Environment, PackageLoader, select_autoescape

ENV = Environment(
    loader=PackageLoader("askgate_web", "templates"),
    autoescape=select_autoescape(default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
# The composer and every "Other…" box stop where the server would refuse (one limit).
ENV.globals["free_text_max"] = FREE_TEXT_MAX


@dataclass(frozen=True)
class OptionView:
    label: str  # exactly as declared: this is the answer value
    text: str  # the label without the ` (Recommended)` suffix, shown with a badge instead
    description: str | None
    recommended: bool


@dataclass(frozen=True)
class QuestionView:
    id: str
    header: str
    question: str
    multi: bool
    options: list[OptionView]
    answer: list[str] | None = None


@dataclass(frozen=True)
class EntryView:
    id: str
    status: str
    questions: list[QuestionView]
    summary: str


def options_of(q: QuestionIn) -> list[OptionView]:
    """The options with the recommended one first (stable otherwise)."""
    views = []
    for opt in q.options:
        recommended = opt.label.casefold().endswith(RECOMMENDED.casefold())
        text = opt.label[: -len(RECOMMENDED)].rstrip() if recommended else opt.label
        views.append(OptionView(opt.label, text, opt.description, recommended))
    return sorted(views, key=lambda v: not v.recommended)


def question_views(rec: Record) -> list[QuestionView]:
    answers: dict[str, list[str]] = {}
    result = rec.result
    if rec.status == Status.ANSWERED and result:
        answers = result.get("answers", {}).get("answers", {})
    return [
        QuestionView(q.id, q.header, q.question, q.multiSelect, options_of(q), answers.get(q.id))
        for q in rec.questions
    ]


def entry(rec: Record, locale: str) -> EntryView:
    if rec.status == Status.PENDING:
        summary = t(locale, "waiting")
    else:
        summary = summary_text(rec, locale=locale)
    return EntryView(rec.id, rec.status.value, question_views(rec), summary)


def page_locale(records: Sequence[Record], fallback: str) -> str:
    """The pending ask's locale, else the newest ask's, else the browser's."""
    for rec in records:
        if rec.status == Status.PENDING:
            return rec.locale
    return records[0].locale if records else fallback


def render_template(name: str, **context: Any) -> str:
    return ENV.get_template(name).render(**context)


_render = render_template


def timeline_html(records: Sequence[Record], locale: str) -> str:
    """The session's questions oldest first (records come newest first)."""
    entries = [entry(rec, locale) for rec in reversed(records)]
    return _render("timeline.html", entries=entries, locale=locale, t=t)


def panel_html(rec: Record | None, locale: str, now_ms: int) -> str:
    if rec is None or rec.status != Status.PENDING:
        return ""
    questions = question_views(rec)
    return _render(
        "panel.html",
        qid=rec.id,
        questions=questions,
        remaining_ms=max(0, rec.expires_ms - now_ms),
        # One single-select question: a tap on an option is the answer (native buttons).
        instant=len(questions) == 1 and not questions[0].multi,
        locale=locale,
        t=t,
    )


def view(records: Sequence[Record], locale: str, now_ms: int) -> dict[str, Any]:
    """What a page needs to show the session now: the JSON of GET /api/view."""
    pending = next((r for r in records if r.status == Status.PENDING), None)
    return {
        "pending": pending.id if pending else None,
        "locale": locale,
        "timeline": timeline_html(records, locale),
        "panel": panel_html(pending, locale, now_ms),
    }


def page_html(
    records: Sequence[Record], locale: str, now_ms: int, *, session: str, link_query: str
) -> str:
    return _render(
        "page.html",
        view=view(records, locale, now_ms),
        session=session,
        link_query=link_query,
        locale=locale,
        t=t,
    )


def invalid_html(locale: str) -> str:
    return _render("invalid.html", locale=locale, t=t)
