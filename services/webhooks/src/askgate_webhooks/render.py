"""The webhook body (pure): a final question → the JSON POSTed to its callback_url."""

from __future__ import annotations

from typing import Any

import orjson
from askgate.domain.timeutil import iso
from askgate.store.record import Record


def result_body(rec: Record) -> bytes:
    """`{"question_id", "status", "reason", "result", "answers"?, "responder", "created_at",
    "resolved_at", "session", "run_id"}`; `result` is the contract's result exactly, and
    `answers` (only when answered) is its id → values map, for convenience."""
    result = rec.result
    body: dict[str, Any] = {
        "question_id": rec.id,
        "status": rec.status.value,
        "reason": rec.reason.value if rec.reason else None,
        "result": result,
    }
    if result and result.get("status") == "answered":
        body["answers"] = result["answers"]["answers"]
    body.update(
        responder=rec.responder_doc,
        created_at=iso(rec.created_ms),
        resolved_at=iso(rec.resolved_ms),
        session=rec.session,
        run_id=rec.run_id,
    )
    return orjson.dumps(body)


def late_body(rec: Record, n: int, late: dict[str, Any]) -> bytes:
    """`{"event": "question.late_answer", "question_id", "status", "reason", "result",
    "late_answer": {"answers", "responder", "target", "at"}, "n", "session", "run_id",
    "created_at", "resolved_at"}`: an answer that came after the question ended without
    one. `result` is still the question's (no_answer): the late answer never replaces it."""
    return orjson.dumps(
        {
            "event": "question.late_answer",
            "question_id": rec.id,
            "status": rec.status.value,
            "reason": rec.reason.value if rec.reason else None,
            "result": rec.result,
            "late_answer": late,
            "n": n,
            "session": rec.session,
            "run_id": rec.run_id,
            "created_at": iso(rec.created_ms),
            "resolved_at": iso(rec.resolved_ms),
        }
    )
