"""What the client returns: the outcome of an ask (`AskResult`, which carries the tool
result verbatim) and the question resource (`Question`), read leniently so that fields a
newer server adds never break an older client."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from askgate_client._errors import UnexpectedResponse

Status = Literal["pending", "answered", "no_answer"]
FinalStatus = Literal["answered", "no_answer"]


@dataclass(frozen=True, slots=True)
class AskResult:
    """The outcome of an ask.

    `tool_result` is exactly the `ask_user` tool result, ready to hand back to a model:
    `{"status": "answered", "answers": {"answers": {...}}}` or `{"status": "no_answer"}`.
    `reason` says why there is no answer (`timeout`, `skipped`, `cancelled`,
    `run_aborted`, `delivery_failed`); it is None when answered.
    """

    question_id: str
    status: FinalStatus
    answers: Mapping[str, list[str]]
    reason: str | None
    tool_result: dict[str, Any]

    @property
    def answered(self) -> bool:
        return self.status == "answered"

    @classmethod
    def from_result(cls, question_id: str, result: dict[str, Any], reason: str | None) -> AskResult:
        status: FinalStatus = "answered" if result.get("status") == "answered" else "no_answer"
        answers = result.get("answers", {}).get("answers", {}) if status == "answered" else {}
        return cls(question_id, status, answers, None if status == "answered" else reason, result)


class Question(BaseModel):
    """The question resource (`GET /v1/questions/{id}`).

    The fields an agent acts on are typed; `raw` is the whole JSON body (deliveries'
    details, `audit`, `late_answers`, ...). `remind` and `escalation` are as the server
    reports them: the settings with `sent`, and per step `due_at` / `started_at`.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    status: Status
    session: str
    reason: str | None = None
    result: dict[str, Any] | None = None
    questions: list[dict[str, Any]] = Field(default_factory=list)
    created_at: str
    expires_at: str
    result_key: str
    result_channel: str
    web_url: str | None = None
    deliveries: list[dict[str, Any]] = Field(default_factory=list)
    remind: dict[str, Any] | None = None
    escalation: list[dict[str, Any]] = Field(default_factory=list)
    raw: dict[str, Any] = Field(default_factory=dict, repr=False)

    @classmethod
    def from_resource(cls, body: dict[str, Any]) -> Question:
        try:
            return cls.model_validate({**body, "raw": body})
        except ValidationError as exc:
            raise UnexpectedResponse(
                f"the API's answer is not a question resource: {exc.error_count()} "
                f"problem(s), first {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}"
            ) from None

    @property
    def final(self) -> bool:
        return self.status != "pending" and self.result is not None

    def outcome(self) -> AskResult | None:
        """The `AskResult` once the question is final, else None."""
        if not self.final or self.result is None:
            return None
        return AskResult.from_result(self.id, self.result, self.reason)
