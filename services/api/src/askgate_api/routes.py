"""HTTP endpoints (README "HTTP API"). Handlers validate, call the store, and shape responses."""

from __future__ import annotations

from typing import Annotated, Any

import structlog
from askgate.domain.errors import AlreadyFinal, IncompleteAnswer, ValidationFailed
from askgate.domain.models import (
    AnswerBody,
    MessageBody,
    QuestionCreate,
    ReplyBody,
    Responder,
    name_problem,
)
from askgate.domain.resource import QuestionPublic
from askgate.domain.status import Reason, Status
from askgate.runtime.http import StrictJsonRoute
from askgate.store.conn import reach_all
from askgate.store.metrics import render as render_counters
from askgate.store.record import Record
from askgate.store.store import Store
from askgate.store.tenants import Tenant
from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from redis.exceptions import RedisError
from starlette.convertors import PathConvertor, register_url_convertor

from askgate_api.auth import current_tenant
from askgate_api.fastpath import create_ask
from askgate_api.metrics import FINALS, REGISTRY, WAITERS
from askgate_api.responses import json_response, redis_unavailable, resource
from askgate_api.waiters import Waiters, wait_final


class AnyNameConvertor(PathConvertor):
    """A session or run name in a path, whatever it holds ('/', line breaks): the route
    always matches, so a bad name gets the name rule's 422 instead of a bare 404."""

    regex = r"[\s\S]+"


register_url_convertor("anyname", AnyNameConvertor())
router = APIRouter(route_class=StrictJsonRoute)
TenantDep = Annotated[Tenant, Depends(current_tenant)]
log = structlog.get_logger("askgate.api")

RESOURCE = {"model": QuestionPublic}
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"description": desc}
    for code, desc in {
        401: "Missing or unknown API key",
        404: "No such question for this tenant",
        409: "Session busy, or the question already ended",
        422: "Invalid input: the message names the field and the fix",
        429: "Tenant quota exceeded (Retry-After)",
        503: "Redis unreachable (Retry-After); nothing was changed",
    }.items()
}


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def _public(request: Request, rec: Record) -> dict[str, Any]:
    return resource(request.app.state.settings, rec)


def _resource(request: Request, rec: Record, status: int = 200) -> Response:
    return json_response(_public(request, rec), status)


def _check_name(field: str, value: str) -> str:
    """A session or run name from a path or query: the ask's own rule, the same 422."""
    problem = name_problem(value)
    if problem:
        raise ValidationFailed(f"{field} {problem}")
    return value


def _count_final(rec: Record) -> None:
    FINALS.labels(rec.status.value, rec.reason.value if rec.reason else "").inc()


@router.post(
    "/v1/questions",
    status_code=201,
    responses={201: RESOURCE, 200: {**RESOURCE, "description": "Idempotent replay"}, **ERRORS},
    summary="Ask the human 1-3 questions",
)
async def ask(request: Request, tenant: TenantDep, body: QuestionCreate) -> Response:
    # Served by fastpath.serve_ask; this route documents it and serves any stray match.
    rec, created = await create_ask(
        _store(request), tenant, body, request.app.state.liveness, request.app.state.outbound
    )
    return _resource(request, rec, 201 if created else 200)


@router.get(
    "/v1/questions",
    responses=ERRORS,
    summary="A session's questions, or (status=pending without session) the "
    "tenant's pending questions across sessions, paged",
)
async def list_questions(
    request: Request,
    tenant: TenantDep,
    session: Annotated[
        str | None,
        Query(
            description="the session's name: its recent questions, newest first (its index "
            "is kept ASKGATE_SESSION_HISTORY_S, 1 h by default, after the deadline of its "
            "newest question; each question stays readable by id for ASKGATE_RESULT_TTL_S); "
            "without it, status=pending lists every session's"
        ),
    ] = None,
    status: Status | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=100)] = None,
) -> Response:
    store = _store(request)
    if session is not None:
        _check_name("session", session)
        recs = await store.list_session(tenant.id, session, status, limit)
        return json_response({"questions": [_public(request, r) for r in recs]})
    if status != Status.PENDING:
        raise ValidationFailed(
            "session is required, unless status=pending lists the "
            "tenant's pending questions across sessions"
        )
    recs, next_cursor = await store.list_pending(tenant.id, limit, cursor)
    return json_response(
        {"questions": [_public(request, r) for r in recs], "next_cursor": next_cursor}
    )


@router.get("/v1/questions/{question_id}", responses={200: RESOURCE, **ERRORS})
async def get_question(request: Request, tenant: TenantDep, question_id: str) -> Response:
    return _resource(request, await _store(request).get(tenant.id, question_id))


@router.get(
    "/v1/questions/{question_id}/wait",
    responses={200: RESOURCE, **ERRORS},
    summary="Long-poll until the question is final, or timeout_s passes (status pending)",
)
async def wait_question(
    request: Request,
    tenant: TenantDep,
    question_id: str,
    timeout_s: Annotated[float, Query(ge=0)] = 30,
) -> Response:
    waiters: Waiters = request.app.state.waiters
    WAITERS.inc()
    try:
        rec = await wait_final(_store(request), waiters, tenant.id, question_id, timeout_s)
    finally:
        WAITERS.dec()
    return _resource(request, rec)


@router.post("/v1/questions/{question_id}/answer", responses={200: RESOURCE, **ERRORS})
async def answer(
    request: Request, tenant: TenantDep, question_id: str, body: AnswerBody
) -> Response:
    # Served by fastpath.serve_answer; this route documents it and serves any stray match.
    rec = await _store(request).answer(
        tenant.id, question_id, body.answers, body.responder or Responder(channel="api")
    )
    _count_final(rec)
    return _resource(request, rec)


@router.post(
    "/v1/questions/{question_id}/reply",
    responses={200: RESOURCE, **ERRORS},
    summary="Answer with plain text, parsed like a chat reply",
)
async def reply(request: Request, tenant: TenantDep, question_id: str, body: ReplyBody) -> Response:
    # Served by fastpath.serve_answer, like answer.
    rec, parsed = await _store(request).reply(
        tenant.id, question_id, body.text, body.responder or Responder(channel="api")
    )
    if parsed.kind == "incomplete":
        raise IncompleteAnswer(parsed.message or "incomplete reply", parsed.missing)
    _count_final(rec)
    return _resource(request, rec)


async def _end(
    request: Request, tenant: Tenant, question_id: str, reason: Reason, responder: Responder | None
) -> Response:
    rec = await _store(request).end(
        tenant.id, question_id, reason, responder or Responder(channel="api")
    )
    _count_final(rec)
    return _resource(request, rec)


OptionalResponder = Annotated[Responder | None, Body(embed=True)]


@router.post("/v1/questions/{question_id}/skip", responses={200: RESOURCE, **ERRORS})
async def skip(
    request: Request, tenant: TenantDep, question_id: str, responder: OptionalResponder = None
) -> Response:
    return await _end(request, tenant, question_id, Reason.SKIPPED, responder)


@router.post("/v1/questions/{question_id}/cancel", responses={200: RESOURCE, **ERRORS})
async def cancel(
    request: Request, tenant: TenantDep, question_id: str, responder: OptionalResponder = None
) -> Response:
    return await _end(request, tenant, question_id, Reason.CANCELLED, responder)


@router.post(
    "/v1/runs/{run_id:anyname}/abort",
    responses=ERRORS,
    summary="End every pending question of a run (run_aborted)",
)
async def abort_run(request: Request, tenant: TenantDep, run_id: str) -> Response:
    _check_name("run_id", run_id)
    ended = await _store(request).abort_run(tenant.id, run_id)
    FINALS.labels("no_answer", "run_aborted").inc(len(ended))
    return json_response({"run_id": run_id, "ended": ended})


@router.post(
    "/v1/sessions/{session:anyname}/messages",
    responses=ERRORS,
    summary="A human's plain-text message in a session: answers its pending question",
)
async def session_message(
    request: Request, tenant: TenantDep, session: str, body: MessageBody
) -> Response:
    _check_name("session", session)
    store = _store(request)
    rec = await store.pending_for(tenant.id, session)
    responder = body.responder or Responder(channel="text")
    if rec is None:
        return await _late_message(request, store, tenant, session, body.text, responder)
    rec, parsed = await store.apply_reply(rec, body.text, responder)
    if parsed.kind == "incomplete":
        return json_response(
            {
                "consumed": False,
                "question": _public(request, rec),
                "message": parsed.message,
                "missing": parsed.missing,
            }
        )
    _count_final(rec)
    return json_response({"consumed": True, "question": _public(request, rec), "message": None})


async def _late_message(
    request: Request, store: Store, tenant: Tenant, session: str, text: str, responder: Responder
) -> Response:
    """Nothing pending: an answer to the session's question that just ended without one
    is kept as its late answer (`late`: true, `message` says so); else the message is
    the platform's."""
    ended = await store.ended_lately(tenant.id, session)
    if ended is not None:
        try:
            await store.apply_reply(ended, text, responder)
        except AlreadyFinal as exc:
            if exc.late:
                rec = await store.get(tenant.id, ended.id)
                return json_response(
                    {
                        "consumed": True,
                        "late": True,
                        "question": _public(request, rec),
                        "message": exc.message,
                    }
                )
    return json_response({"consumed": False, "question": None, "message": None})


@router.get("/healthz", include_in_schema=False)
async def healthz() -> Response:
    return Response(b'{"status":"ok"}', media_type="application/json")


@router.get("/readyz", include_in_schema=False)
async def readyz(request: Request) -> Response:
    try:
        await reach_all(request.app.state.redis)  # on a cluster: every shard's node
    except (RedisError, OSError) as exc:  # a cluster's errors are not all connection errors
        log.warning("api.not_ready", error=str(exc))
        raise redis_unavailable() from None
    waiters: Waiters = request.app.state.waiters
    if not waiters.ready.is_set():
        return json_response(
            {"status": "degraded", "subscription": False}, 503, {"Retry-After": "1"}
        )
    return json_response({"status": "ready"})


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """This process's own metrics, then the counters every process keeps in Redis (answer
    latency, no_answer reasons, delivery failures, reminders, escalations, late answers),
    summed over every shard: any replica shows the same totals."""
    shared = render_counters(await _store(request).counters())
    return Response(generate_latest(REGISTRY) + shared.encode(), media_type=CONTENT_TYPE_LATEST)
