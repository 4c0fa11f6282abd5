"""GET /v1/questions/{id}/wait served as plain ASGI, ahead of FastAPI's routing.

A long-poll spends almost all its life suspended. Through FastAPI each suspended request
holds ~15 nested coroutines, exit stacks and exception layers (about 12 KB); served here
it holds one small coroutine and a future, so one process keeps tens of thousands of
waiters. Behaviour is the same as the FastAPI route (which stays for OpenAPI and HEAD).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs

import orjson
from askgate.errors import AskgateError, Unauthorized, Unavailable, ValidationFailed
from redis.exceptions import RedisError

from askgate_api.metrics import WAITERS
from askgate_api.responses import error_response, resource
from askgate_api.waiters import WAIT_MAX_S, wait_final

WAIT_PATH = re.compile(r"^/v1/questions/([^/]+)/wait$")
DEFAULT_TIMEOUT_S = 30.0
_JSON = (b"content-type", b"application/json")

Scope = dict[str, Any]


def _bearer(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return str(token.strip())
    raise Unauthorized("missing API key; send Authorization: Bearer <api key>")


def _timeout(query: bytes) -> float:
    values = parse_qs(query.decode("latin-1")).get("timeout_s")
    if not values:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(values[-1])
    except ValueError:
        value = -1.0
    if not value >= 0:  # also refuses NaN
        raise ValidationFailed(
            f"timeout_s must be a number of seconds from 0 to {WAIT_MAX_S} "
            f"(got {values[-1]!r}); larger values wait {WAIT_MAX_S} s"
        )
    return value


async def serve_wait(app: Any, scope: Scope, send: Any, question_id: str) -> None:
    state = app.state
    WAITERS.inc()
    try:
        tenant = await state.tenants.resolve(_bearer(scope))
        rec = await wait_final(state.store, state.hub, tenant.id, question_id,
                               _timeout(scope["query_string"]))
        status, headers = 200, [_JSON]
        body = orjson.dumps(resource(state.settings, rec))
    except AskgateError as exc:
        response = error_response(exc)
        status, headers, body = response.status_code, response.raw_headers, bytes(response.body)
    except (RedisError, OSError):
        response = error_response(Unavailable("Redis is unreachable; nothing was changed. "
                                              "Retry shortly.", 1))
        status, headers, body = response.status_code, response.raw_headers, bytes(response.body)
    finally:
        WAITERS.dec()
    if not any(name == b"content-length" for name, _ in headers):
        headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
