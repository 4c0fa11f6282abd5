"""What the client sends and returns: the tool input as TypedDicts, the outcome of an ask
(`AskResult`, which carries the seed's result dict verbatim) and the question resource."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict


class OptionSpec(TypedDict):
    """One option of a question: `label` (recommended first, ending in ` (Recommended)`)."""

    label: str
    description: NotRequired[str]


class QuestionSpec(TypedDict):
    """One question of the `ask_user` tool input (SPEC §1)."""

    id: str
    header: str
    question: str
    options: list[OptionSpec]
    multiSelect: NotRequired[bool]


Status = Literal["pending", "answered", "no_answer"]
FinalStatus = Literal["answered", "no_answer"]


@dataclass(frozen=True, slots=True)
class AskResult:
    """The outcome of an ask.

    `tool_result` is exactly the seed contract's tool result, ready to hand back to a
    model: `{"status": "answered", "answers": {"answers": {...}}}` or
    `{"status": "no_answer"}`. `reason` says why there is no answer (`timeout`,
    `skipped`, `cancelled`, `run_aborted`, `delivery_failed`); it is None when answered.
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


@dataclass(frozen=True, slots=True)
class Question:
    """The question resource (`GET /v1/questions/{id}`); `raw` is the whole JSON body."""

    id: str
    status: Status
    session: str
    reason: str | None
    result: dict[str, Any] | None
    expires_at: str
    web_url: str | None
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_resource(cls, body: dict[str, Any]) -> Question:
        return cls(
            id=body["id"],
            status=body["status"],
            session=body["session"],
            reason=body.get("reason"),
            result=body.get("result"),
            expires_at=body["expires_at"],
            web_url=body.get("web_url"),
            raw=body,
        )

    @property
    def final(self) -> bool:
        return self.status != "pending" and self.result is not None

    def outcome(self) -> AskResult | None:
        """The `AskResult` once the question is final, else None."""
        if not self.final or self.result is None:
            return None
        return AskResult.from_result(self.id, self.result, self.reason)
