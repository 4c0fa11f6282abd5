"""What the text channel POSTs (pure): a question → its prompt, a final one → its summary."""

from __future__ import annotations

from typing import Any

from askgate.record import Record
from askgate.render import prompt_text, summary_text
from askgate.timeutil import iso


def question_payload(rec: Record) -> dict[str, Any]:
    return {
        "type": "question",
        "question_id": rec.id,
        "session": rec.session,
        "text": prompt_text(rec.questions, rec.locale),
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
