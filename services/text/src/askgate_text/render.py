"""What the text channel POSTs (pure): a question → its prompt, a final one → its summary."""

from __future__ import annotations

from typing import Any

from askgate.channels.render import prompt_text, summary_text
from askgate.domain.timeutil import iso
from askgate.store.record import Record


def question_payload(rec: Record) -> dict[str, Any]:
    return {
        "type": "question",
        "question_id": rec.id,
        "session": rec.session,
        "text": prompt_text(rec.questions, rec.locale),
        "locale": rec.locale,
        "expires_at": iso(rec.expires_ms),
    }


def reminder_payload(rec: Record, text: str, n: int) -> dict[str, Any]:
    """Reminder n: `[Deploy] Still waiting for your answer — 10 min left.` (the headers
    say which question: a text platform has no reply-to)."""
    headers = " · ".join(q.header for q in rec.questions)
    return {
        "type": "reminder",
        "question_id": rec.id,
        "session": rec.session,
        "n": n,
        "text": f"[{headers}] {text}",
        "locale": rec.locale,
        "expires_at": iso(rec.expires_ms),
    }


def summary_payload(rec: Record) -> dict[str, Any]:
    return {
        "type": "summary",
        "question_id": rec.id,
        "session": rec.session,
        "text": summary_text(rec),
    }
