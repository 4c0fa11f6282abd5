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
    f = rec.f
    result = rec.result
    body: dict[str, Any] = {
        "question_id": rec.id,
        "status": f["status"],
        "reason": f.get("reason") or None,
        "result": result,
    }
    if result and result.get("status") == "answered":
        body["answers"] = result["answers"]["answers"]
    body.update(
        responder=orjson.loads(f["responder"]) if f.get("responder") else None,
        created_at=iso(f.get("created")),
        resolved_at=iso(f.get("resolved")),
        session=f.get("session"),
        run_id=f.get("run") or None,
    )
    return orjson.dumps(body)


def late_body(rec: Record, n: int, late: dict[str, Any]) -> bytes:
    """`{"event": "question.late_answer", "question_id", "status", "reason", "result",
    "late_answer": {"answers", "responder", "target", "at"}, "n", "session", "run_id",
    "created_at", "resolved_at"}`: an answer that came after the question ended without
    one. `result` is still the question's (no_answer): the late answer never replaces it."""
    f = rec.f
    return orjson.dumps(
        {
            "event": "question.late_answer",
            "question_id": rec.id,
            "status": f["status"],
            "reason": f.get("reason") or None,
            "result": rec.result,
            "late_answer": late,
            "n": n,
            "session": f.get("session"),
            "run_id": f.get("run") or None,
            "created_at": iso(f.get("created")),
            "resolved_at": iso(f.get("resolved")),
        }
    )
