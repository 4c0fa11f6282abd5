"""The question resource as the HTTP API returns it (`GET /v1/questions/{id}`): the
model behind the OpenAPI document. `Record.public_dict` builds the same shape straight
from Redis; `Record.public` validates it as `QuestionPublic`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from askgate.domain.models import Locale, QuestionIn, Remind, Responder
from askgate.domain.status import Reason, Status


class Delivery(BaseModel):
    target: dict[str, Any]
    status: Literal["pending", "sending", "delivered", "failed"] = "pending"
    error: str | None = None
    ref: dict[str, Any] | None = None
    at: str | None = None
    step: int = 0  # the escalation step the target belongs to (0: the ask's own)
    reminders: int = 0  # reminders sent to it


class RemindState(Remind):
    sent: int = 0  # reminders the question has had (each to every delivered target)


class EscalationState(BaseModel):
    step: int  # step n is the ask's escalate[n-1]
    after_s: int
    due_at: str
    started_at: str | None = None  # null: not yet, or the question ended first
    targets: list[int]  # indexes into deliveries


class Audit(BaseModel):
    """Who ended a final question, where, and how long after the ask."""

    channel: str | None = None
    target: int | None = None  # the index into deliveries the answer came through
    user_id: str | None = None
    name: str | None = None
    after_s: float


class LateAnswer(BaseModel):
    """An answer that came after the question ended without one: kept, never the result."""

    answers: dict[str, list[str]]
    responder: Responder | None = None
    target: int | None = None
    at: str
    webhook: dict[str, Any] | None = None  # its delivery to the callback_url, as `webhook`


class QuestionPublic(BaseModel):
    """The question resource returned by the HTTP API."""

    id: str
    status: Status
    result: dict[str, Any] | None
    reason: Reason | None
    questions: list[QuestionIn]
    session: str
    run_id: str | None = None
    agent_id: str | None = None
    tool_call_id: str | None = None
    locale: Locale = "en"
    timeout_s: int
    created_at: str
    expires_at: str
    resolved_at: str | None = None
    responder: Responder | None = None
    result_key: str
    result_channel: str
    web_url: str | None = None
    callback_url: str | None = None
    deliveries: list[Delivery] = Field(default_factory=list)
    webhook: dict[str, Any] | None = None
    remind: RemindState | None = None
    escalation: list[EscalationState] = Field(default_factory=list)
    audit: Audit | None = None
    late_answer: LateAnswer | None = None  # the first of late_answers
    late_answers: list[LateAnswer] = Field(default_factory=list)
