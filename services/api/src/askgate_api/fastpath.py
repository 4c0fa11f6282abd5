"""The hot endpoints served as plain ASGI, ahead of FastAPI's routing.

- GET /v1/questions/{id}/wait: a long-poll spends its life suspended. Through FastAPI each
  suspended request holds ~15 nested coroutines, exit stacks and exception layers (about
  12 KB); here it holds one small coroutine and a future, so one process keeps tens of
  thousands of waiters.
- POST /v1/questions: the ask. FastAPI's body dependency, parameter solving and
  exception layers cost more per request than validating the ask itself.
- POST /v1/questions/{id}/answer and /reply: the answer a waiting agent is woken by; its
  response is on the same path as the wake.

Behaviour and errors are the same as the FastAPI routes in routes.py, which stay for the
OpenAPI document (and serve anything the fast path does not match).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs

import orjson
from askgate.domain.asgi import parse_json
from askgate.domain.errors import (
    AskgateError,
    IncompleteAnswer,
    NotPrimary,
    Unauthorized,
    ValidationFailed,
)
from askgate.domain.models import (
    AnswerBody,
    QuestionCreate,
    ReplyBody,
    Responder,
    validation_message,
)
from askgate.store.record import Record
from askgate.store.store import Store
from askgate.store.tenants import Tenant
from pydantic import ValidationError
from redis.exceptions import RedisError

from askgate_api.liveness import Liveness
from askgate_api.metrics import ASKS, FINALS, WAITERS
from askgate_api.outbound import OutboundCheck
from askgate_api.responses import error_response, redis_unavailable, resource
from askgate_api.waiters import WAIT_MAX_S, wait_final

WAIT_PATH = re.compile(r"^/v1/questions/([^/]+)/wait$")
ANSWER_PATH = re.compile(r"^/v1/questions/([^/]+)/(answer|reply)$")
ASK_PATH = "/v1/questions"
DEFAULT_TIMEOUT_S = 30.0
_JSON = (b"content-type", b"application/json")

Scope = dict[str, Any]
Send = Any
Receive = Any


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


async def _body(receive: Receive) -> bytes:
    """The whole body (askgate.domain.asgi.BodyLimit in front bounds its size)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _respond(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    if not any(name == b"content-length" for name, _ in headers):
        headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _fail(send: Send, exc: AskgateError) -> None:
    response = error_response(exc)
    await _respond(send, response.status_code, response.raw_headers, bytes(response.body))


async def serve_wait(app: Any, scope: Scope, send: Send, question_id: str) -> None:
    state = app.state
    WAITERS.inc()
    try:
        tenant = await state.tenants.resolve(_bearer(scope))
        rec = await wait_final(
            state.store, state.waiters, tenant.id, question_id, _timeout(scope["query_string"])
        )
        body = orjson.dumps(resource(state.settings, rec))
    except AskgateError as exc:
        return await _fail(send, exc)
    except (RedisError, OSError):
        return await _fail(send, redis_unavailable())
    finally:
        WAITERS.dec()
    await _respond(send, 200, [_JSON], body)


async def serve_ask(app: Any, scope: Scope, receive: Receive, send: Send) -> None:
    state = app.state
    try:
        tenant = await state.tenants.resolve(_bearer(scope))
        data = parse_json(await _body(receive))
        try:
            ask = QuestionCreate.model_validate(data)
        except ValidationError as exc:
            lines = validation_message(exc)
            raise ValidationFailed("; ".join(lines), lines) from None
        rec, created = await create_ask(state.store, tenant, ask, state.liveness, state.outbound)
        body = orjson.dumps(resource(state.settings, rec))
    except AskgateError as exc:
        return await _fail(send, exc)
    except (RedisError, OSError):
        return await _fail(send, redis_unavailable())
    await _respond(send, 201 if created else 200, [_JSON], body)


def _json_body(scope: Scope, raw: bytes) -> Any:
    """The body as FastAPI reads it for a model: required, JSON when the content type
    says JSON or says nothing (anything else is not an object)."""
    if not raw:
        raise ValidationFailed("body is required")
    for name, value in scope["headers"]:
        if name == b"content-type":
            kind = value.decode("latin-1").split(";", 1)[0].strip().lower()
            if kind != "application/json" and not (
                kind.startswith("application/") and kind.endswith("+json")
            ):
                raise ValidationFailed("body must be an object")
    return parse_json(raw)


async def serve_answer(
    app: Any, scope: Scope, receive: Receive, send: Send, question_id: str, kind: str
) -> None:
    """POST /v1/questions/{id}/answer (`kind` "answer") or /reply ("reply")."""
    state = app.state
    try:
        tenant = await state.tenants.resolve(_bearer(scope))
        data = _json_body(scope, await _body(receive))
        try:
            body = (AnswerBody if kind == "answer" else ReplyBody).model_validate(data)
        except ValidationError as exc:
            lines = validation_message(exc)
            raise ValidationFailed("; ".join(lines), lines) from None
        responder = body.responder or Responder(channel="api")
        if isinstance(body, AnswerBody):
            rec = await state.store.answer(tenant.id, question_id, body.answers, responder)
        else:
            rec, parsed = await state.store.reply(tenant.id, question_id, body.text, responder)
            if parsed.kind == "incomplete":
                raise IncompleteAnswer(parsed.message or "incomplete reply", parsed.missing)
        FINALS.labels(rec.status.value, rec.reason.value if rec.reason else "").inc()
        out = orjson.dumps(resource(state.settings, rec))
    except AskgateError as exc:
        return await _fail(send, exc)
    except (RedisError, OSError):
        return await _fail(send, redis_unavailable())
    await _respond(send, 200, [_JSON], out)


async def create_ask(
    store: Store, tenant: Tenant, ask: QuestionCreate, liveness: Liveness, outbound: OutboundCheck
) -> tuple[Record, bool]:
    """The ask's rules beyond its shape (primary only, outbound URLs, someone able to
    show it, quotas), then the store."""
    if not ask.primary:
        ASKS.labels("not_primary").inc()
        raise NotPrimary(
            "asks from subagents or other non-primary runs are refused; only the main "
            "session may ask the user (send primary: true from the main session)"
        )
    await outbound.check_ask(tenant, ask)
    dead = await dead_channels(ask, liveness)
    rec, created = await store.create(
        tenant.id,
        ask,
        max_pending=tenant.max_pending,
        asks_per_s=tenant.asks_per_s,
        dead_channels=dead,
        default_remind=tenant.remind,
    )
    ASKS.labels("created" if created else "replay").inc()
    return rec, created


async def dead_channels(ask: QuestionCreate, liveness: Liveness) -> frozenset[str]:
    """The target channels with no live worker; refused when no target, in any
    escalation step, could show the ask (the agent would wait for its timeout for
    nothing)."""
    every = ask.all_targets()
    chat = [(path, tg.channel) for path, tg in every if tg.channel != "web"]
    if not chat:
        return frozenset()
    live = await liveness.live()
    dead = frozenset(ch for _, ch in chat if ch not in live)
    if dead and len(chat) == len(every) and dead >= {ch for _, ch in chat}:
        path, ch = chat[0]
        ASKS.labels("no_live_worker").inc()
        raise ValidationFailed(
            f"{path}.channel {ch!r} has no live askgate-{ch} worker, so nobody would "
            f"see the question; start the {ch} worker (see README, Channels) or add "
            '{"channel": "web"} to targets'
        )
    return dead
