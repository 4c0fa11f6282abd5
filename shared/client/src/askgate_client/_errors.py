"""Errors the client raises, all under `ClientError`. An `ApiError` carries the API's
stable `code` and its `message` (which names the field and the fix)."""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """The root of every error the client raises; `message` is for humans and models."""

    code = "client_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ApiError(ClientError):
    """The API refused the call (a 4xx, or a 5xx that is not worth retrying)."""

    def __init__(self, status_code: int, code: str, message: str, body: dict[str, Any]) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.body = body

    def __str__(self) -> str:
        return f"{self.status_code} {self.code}: {self.message}"


class InvalidAsk(ApiError):
    """422: the ask breaks the contract; `message` names the field and how to fix it."""


class SessionBusyError(ApiError):
    """409: the session already has a pending question (`pending_question_id`)."""

    @property
    def pending_question_id(self) -> str | None:
        value = self.body.get("pending_question_id")
        return str(value) if value else None


class QuestionNotFound(ApiError):
    """404: no such question for this tenant."""


class ApiUnavailable(ClientError):
    """The API stayed unreachable (or kept answering 503/429) for longer than the
    client's `retry_for_s`; the question, if any, is still there."""

    code = "unavailable"


class UnexpectedResponse(ClientError):
    """A 2xx whose body is not what the API documents (a proxy's page, a wrong URL)."""

    code = "unexpected_response"


def api_error(status_code: int, body: Any) -> ApiError:
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        err = {"code": "http_error", "message": f"HTTP {status_code}"}
        body = {"error": err}
    code = str(err.get("code", "http_error"))
    message = str(err.get("message", f"HTTP {status_code}"))
    detail = {k: v for k, v in err.items() if k not in ("code", "message")}
    if status_code == 422:
        return InvalidAsk(status_code, code, message, detail)
    if status_code == 409 and code == "session_busy":
        return SessionBusyError(status_code, code, message, detail)
    if status_code == 404:
        return QuestionNotFound(status_code, code, message, detail)
    return ApiError(status_code, code, message, detail)
