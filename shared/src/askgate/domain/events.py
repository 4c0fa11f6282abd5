"""What the channel streams carry: typed question events.

The Lua scripts append the entries (`scripts.py`); consumers turn them into these types
with `parse_event`. Every entry names its question, tenant and session, so a consumer
can route it without loading the question. Wire format (fields of a stream entry):
`type id tenant session` plus `status reason` for a resolved question, `n final left_ms`
for a reminder, `step` for an escalation step and `n` for a late answer. Fields are only
ever added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from askgate.domain.status import Reason, Status


class EventType(StrEnum):
    CREATED = "question.created"
    RESOLVED = "question.resolved"
    REMIND = "question.remind"  # a reminder is due (to the chat channels of the question)
    ESCALATE = "question.escalate"  # an escalation step starts (its targets' channels)
    LATE_ANSWER = "question.late_answer"  # an answer after the end (to `webhook`)


@dataclass(frozen=True)
class QuestionCreated:
    question_id: str
    tenant: str
    session: str


@dataclass(frozen=True)
class QuestionResolved:
    question_id: str
    tenant: str
    session: str
    status: Status
    reason: Reason | None


@dataclass(frozen=True)
class QuestionRemind:
    question_id: str
    tenant: str
    session: str
    n: int  # the reminder's number: each delivered target gets it once
    final: bool  # the final warning before the deadline
    left_ms: int  # time left when it fell due


@dataclass(frozen=True)
class QuestionEscalate:
    question_id: str
    tenant: str
    session: str
    step: int  # from 1: the ask's escalate[step-1]


@dataclass(frozen=True)
class QuestionLateAnswer:
    question_id: str
    tenant: str
    session: str
    n: int  # which late answer (from 0) of the question


QuestionEvent = (
    QuestionCreated | QuestionResolved | QuestionRemind | QuestionEscalate | QuestionLateAnswer
)


def _int(fields: Mapping[str, str], name: str) -> int:
    raw = fields.get(name, "")
    return int(raw) if raw.lstrip("-").isdigit() else 0


def parse_event(fields: Mapping[str, str]) -> QuestionEvent | None:
    """The typed event of a stream entry; None for a type this version does not know
    (a newer writer's), which consumers skip."""
    qid = fields.get("id", "")
    tenant, session = fields.get("tenant", ""), fields.get("session", "")
    kind = fields.get("type")
    if kind == EventType.CREATED:
        return QuestionCreated(qid, tenant, session)
    if kind == EventType.RESOLVED:
        reason = fields.get("reason") or None
        return QuestionResolved(
            qid,
            tenant,
            session,
            Status(fields.get("status", "no_answer")),
            Reason(reason) if reason else None,
        )
    if kind == EventType.REMIND:
        return QuestionRemind(
            qid,
            tenant,
            session,
            _int(fields, "n"),
            fields.get("final") == "1",
            _int(fields, "left_ms"),
        )
    if kind == EventType.ESCALATE:
        return QuestionEscalate(qid, tenant, session, _int(fields, "step"))
    if kind == EventType.LATE_ANSWER:
        return QuestionLateAnswer(qid, tenant, session, _int(fields, "n"))
    return None
