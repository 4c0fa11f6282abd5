"""JSON responses and the one mapping of askgate errors to HTTP."""

from __future__ import annotations

from typing import Any

import orjson
from askgate.domain.errors import (
    AlreadyFinal,
    AskgateError,
    IncompleteAnswer,
    RateLimited,
    SessionBusy,
    Unavailable,
)
from askgate.domain.signing import session_link
from askgate.settings import Settings
from askgate.store.record import Record
from fastapi.responses import Response

from askgate_api.metrics import REJECTED


def redis_unavailable() -> Unavailable:
    """What every endpoint answers when Redis cannot be reached (503, Retry-After)."""
    return Unavailable("Redis is unreachable; nothing was changed. Retry shortly.", 1)


def resource(settings: Settings, rec: Record) -> dict[str, Any]:
    """The question resource with the signed Control UI link of its session."""
    url = session_link(
        settings.web_base_url, settings.secret_key, rec.tenant, rec.session, settings.web_link_ttl_s
    )
    return rec.public_dict(web_url=url, fragments=True)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status, headers, media_type="application/json")


def error_response(exc: AskgateError) -> Response:
    body: dict[str, Any] = {"code": exc.code, "message": exc.message}
    headers: dict[str, str] = {}
    if isinstance(exc, SessionBusy):
        body["pending_question_id"] = exc.pending_id
    elif isinstance(exc, AlreadyFinal):
        body["status"] = exc.status
        body["reason"] = exc.reason
        # The answer came after the end and was kept as the question's late answer.
        body["late_answer_recorded"] = exc.late
    elif isinstance(exc, IncompleteAnswer):
        body["missing"] = exc.missing
    elif isinstance(exc, RateLimited | Unavailable):
        headers["Retry-After"] = str(exc.retry_after_s)
    errors = getattr(exc, "errors", None)
    if errors and len(errors) > 1:
        body["errors"] = errors
    REJECTED.labels(exc.code).inc()
    return json_response({"error": body}, exc.http_status, headers)
