"""What the channel streams carry: typed question events.

The Lua scripts append the entries (`scripts.py`); consumers turn them into these types
with `parse_event`. Every entry names its question, tenant and session, so a consumer
can route it without loading the question. Wire format (fields of a stream entry):
`type id tenant session` plus `status reason` for a resolved question. Fields are only
ever added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from askgate.status import Reason, Status


class EventType(StrEnum):
    CREATED = "question.created"
    RESOLVED = "question.resolved"


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


QuestionEvent = QuestionCreated | QuestionResolved


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
        return QuestionResolved(qid, tenant, session, Status(fields.get("status", "no_answer")),
                                Reason(reason) if reason else None)
    return None
