"""One exception tree for askgate. Each leaf carries what a caller needs to react,
and the HTTP layer maps `code`/`http_status` to responses in one place."""

from __future__ import annotations

from typing import ClassVar


class AskgateError(Exception):
    code = "error"
    http_status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ValidationFailed(AskgateError):
    """Input that breaks the contract; `message` names the field and the fix."""

    code = "validation_error"
    http_status = 422

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or [message]


class Unauthorized(AskgateError):
    code = "unauthorized"
    http_status = 401


class NotFound(AskgateError):
    code = "not_found"
    http_status = 404


class NotPrimary(AskgateError):
    code = "not_primary"
    http_status = 403


class SessionBusy(AskgateError):
    code = "session_busy"
    http_status = 409

    def __init__(self, message: str, pending_id: str) -> None:
        super().__init__(message)
        self.pending_id = pending_id


class AlreadyFinal(AskgateError):
    """The question ended before this answer arrived; the loser of a race is told so."""

    code = "already_final"
    http_status = 409

    def __init__(self, message: str, status: str, reason: str | None, late: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.late = late  # the answer was kept as the question's late answer


class IncompleteAnswer(AskgateError):
    code = "incomplete_answer"
    http_status = 422

    def __init__(self, message: str, missing: list[str]) -> None:
        super().__init__(message)
        self.missing = missing


class RateLimited(AskgateError):
    code = "rate_limited"
    http_status = 429

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Unavailable(AskgateError):
    code = "unavailable"
    http_status = 503

    def __init__(self, message: str, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class HttpError(AskgateError):
    """An HTTP-level refusal that is not one of askgate's own (unknown route, wrong method,
    body too large, …), answered in the same error shape."""

    CODES: ClassVar[dict[int, str]] = {
        400: "bad_request",
        404: "not_found",
        405: "method_not_allowed",
        413: "body_too_large",
        415: "unsupported_media_type",
        500: "internal",
    }

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.http_status = status
        self.code = self.code_for(status)

    @classmethod
    def code_for(cls, status: int) -> str:
        return cls.CODES.get(status, f"http_{status}")


class ConfigError(AskgateError):
    code = "config_error"


# -- chat platforms (raised by channel adapters, handled by askgate.channels) ------------


class PlatformError(AskgateError):
    """A chat platform refused or failed a call."""

    code = "platform_error"
    http_status = 502


class PermanentError(PlatformError):
    """Retrying the same call cannot succeed (chat not found, bot removed, bad token):
    the target fails."""


class TransientError(PlatformError):
    """May pass later (5xx, an HTML error page, a dropped connection, a timeout).
    `maybe_sent`: the request may have reached the platform before it failed."""

    def __init__(
        self, message: str, *, maybe_sent: bool = False, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.maybe_sent = maybe_sent
        self.retry_after_s = retry_after_s


class ThrottledError(TransientError):
    """The platform said to wait `retry_after_s` (a 429): nothing happened."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message, retry_after_s=retry_after_s)
        self.retry_after_s = retry_after_s
