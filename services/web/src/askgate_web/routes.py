"""HTTP: the session page, its view and event stream, and what a person sends from it.

Every route is reached through the session's signed link (tenant, session, exp, sig); a
link opens that one session only. The page calls `/api/*` with the same four values in
its query string.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any
from urllib.parse import urlencode

import orjson
import structlog
from askgate.domain.errors import AlreadyFinal, IncompleteAnswer, NotFound, ValidationFailed
from askgate.domain.i18n import t
from askgate.domain.models import FREE_TEXT_MAX
from askgate.domain.signing import verify_session_link
from askgate.domain.status import Reason
from askgate.domain.timeutil import now_ms
from askgate.runtime.http import StrictJsonRoute
from askgate.store.record import Record
from askgate.store.store import Store
from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse

from askgate_web import render
from askgate_web.config import (
    HEARTBEAT_S,
    RESPONDER,
    SSE_RETRY_MS,
    TIMELINE_LIMIT,
    negotiate_locale,
)
from askgate_web.feed import PageFeed

log = structlog.get_logger("askgate.web")
router = APIRouter(route_class=StrictJsonRoute)

# The link is a bearer capability: keep it out of caches and Referer headers.
PRIVATE = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}
# Pages load only their own script and sheet, and talk only to this origin.
PAGE = {
    **PRIVATE,
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "connect-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'",
}


class LinkRefused(Exception):
    """A forged, expired or mismatched session link."""

    def __init__(self, locale: str) -> None:
        super().__init__("invalid session link")
        self.locale = locale


class Link:
    """A verified session link."""

    def __init__(self, tenant: str, session: str, exp: str, sig: str) -> None:
        self.tenant = tenant
        self.session = session
        self.query = urlencode({"tenant": tenant, "session": session, "exp": exp, "sig": sig})


def _check(request: Request, tenant: str, session: str, exp: str, sig: str) -> Link:
    secret: str = request.app.state.settings.secret_key
    if not verify_session_link(secret, tenant, session, exp, sig):
        raise LinkRefused(negotiate_locale(request.headers.get("accept-language")))
    return Link(tenant, session, exp, sig)


def page_link(request: Request, tenant: str, session: str, exp: str = "", sig: str = "") -> Link:
    return _check(request, tenant, session, exp, sig)


def api_link(
    request: Request,
    tenant: Annotated[str, Query()] = "",
    session: Annotated[str, Query()] = "",
    exp: Annotated[str, Query()] = "",
    sig: Annotated[str, Query()] = "",
) -> Link:
    return _check(request, tenant, session, exp, sig)


PageLink = Annotated[Link, Depends(page_link)]
ApiLink = Annotated[Link, Depends(api_link)]


def web_target(rec: Record) -> int | None:
    """The index of the ask's web target, the one a page's answer comes through (for the
    audit); None when the ask named none (a page shows its session's questions anyway)."""
    return next((i for i, tg in enumerate(rec.targets) if tg.channel == "web"), None)


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


async def _records(request: Request, link: Link) -> list[Record]:
    return await _store(request).list_session(link.tenant, link.session, limit=TIMELINE_LIMIT)


async def _view(request: Request, link: Link) -> tuple[dict[str, Any], str]:
    records = await _records(request, link)
    locale = render.page_locale(records, negotiate_locale(request.headers.get("accept-language")))
    return render.view(records, locale, now_ms()), locale


def _json(body: dict[str, Any], status: int = 200) -> Response:
    return Response(orjson.dumps(body), status, media_type="application/json", headers=PRIVATE)


@router.get("/s/{tenant}/{session:path}", response_class=HTMLResponse)
async def page(request: Request, link: PageLink) -> Response:
    records = await _records(request, link)
    locale = render.page_locale(records, negotiate_locale(request.headers.get("accept-language")))
    html = render.page_html(records, locale, now_ms(), session=link.session, link_query=link.query)
    return HTMLResponse(html, headers=PAGE)


@router.get("/api/view")
async def view(request: Request, link: ApiLink) -> Response:
    body, _ = await _view(request, link)
    return _json(body)


@router.get("/api/events")
async def events(request: Request, link: ApiLink) -> Response:
    return change_stream(request.app.state.feed, link.tenant, link.session)


def change_stream(feed: PageFeed, tenant: str, session: str) -> StreamingResponse:
    """Server-sent events for a page: `hello` first, then a `change` each time the feed
    has one for (tenant, session) ("" = every session of the tenant), keep-alives between."""
    queue = feed.subscribe(tenant, session)

    async def stream() -> AsyncIterator[str]:
        try:
            # The page re-reads its view on every hello, so nothing between its load
            # (or a dropped connection) and this subscription is missed.
            yield f"retry: {SSE_RETRY_MS}\nevent: hello\ndata: {{}}\n\n"
            while True:
                try:
                    change = await asyncio.wait_for(queue.get(), HEARTBEAT_S)
                except TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                if change is None:
                    return
                yield f"event: change\ndata: {change.json()}\n\n"
        finally:
            feed.unsubscribe(tenant, session, queue)

    headers = {**PRIVATE, "X-Accel-Buffering": "no"}  # nginx: do not buffer the stream
    return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)


async def _own(request: Request, link: Link, question_id: str) -> Record:
    """The question, if it belongs to the link's session (else NotFound)."""
    rec = await _store(request).get(link.tenant, question_id)
    if rec.session != link.session:
        raise NotFound(f"question {question_id} not found")
    return rec


async def _reply(request: Request, link: Link, message: str | None, status: int) -> Response:
    body, _ = await _view(request, link)
    return _json({"ok": status == 200, "message": message, "view": body}, status)


@router.post("/api/answer")
async def answer(
    request: Request,
    link: ApiLink,
    question_id: Annotated[str, Body()],
    answers: Annotated[dict[str, list[str]], Body()],
) -> Response:
    rec = await _own(request, link, question_id)
    try:
        await _store(request).answer(
            link.tenant, rec.id, answers, RESPONDER, target=web_target(rec)
        )
    except AlreadyFinal as exc:  # after the end: maybe kept as late, and the message says
        return await _reply(request, link, exc.message, 409)
    except IncompleteAnswer:
        return await _reply(request, link, t(rec.locale, "pick_missing"), 422)
    except ValidationFailed as exc:
        return await _reply(request, link, exc.message, 422)
    log.info("question.answered", question_id=rec.id, tenant=link.tenant, channel="web")
    return await _reply(request, link, None, 200)


@router.post("/api/skip")
async def skip(
    request: Request, link: ApiLink, question_id: Annotated[str, Body(embed=True)]
) -> Response:
    rec = await _own(request, link, question_id)
    try:
        await _store(request).end(
            link.tenant, rec.id, Reason.SKIPPED, RESPONDER, target=web_target(rec)
        )
    except AlreadyFinal as exc:
        return await _reply(request, link, exc.message, 409)
    log.info("question.skipped", question_id=rec.id, tenant=link.tenant, channel="web")
    return await _reply(request, link, None, 200)


@router.post("/api/reply")
async def reply(
    request: Request,
    link: ApiLink,
    text: Annotated[str, Body(embed=True, max_length=FREE_TEXT_MAX)],
) -> Response:
    """The composer: a plain-text reply, read by the same parser as every channel."""
    store = _store(request)
    rec = await store.pending_for(link.tenant, link.session)
    if rec is None:
        _, locale = await _view(request, link)
        return await _reply(request, link, t(locale, "no_pending"), 409)
    try:
        rec, parsed = await store.apply_reply(rec, text, RESPONDER, target=web_target(rec))
    except AlreadyFinal as exc:
        return await _reply(request, link, exc.message, 409)
    if parsed.kind == "incomplete":
        return await _reply(request, link, parsed.message, 422)
    log.info(
        "question.replied", question_id=rec.id, tenant=link.tenant, channel="web", kind=parsed.kind
    )
    return await _reply(request, link, None, 200)


@router.get("/healthz", include_in_schema=False)
async def healthz() -> Response:
    return Response(b'{"status":"ok"}', media_type="application/json")


@router.get("/readyz", include_in_schema=False)
async def readyz(request: Request) -> Response:
    feed: PageFeed = request.app.state.feed
    ready = feed.ready.is_set()
    return _json(
        {"status": "ready" if ready else "degraded", "connections": feed.connections},
        200 if ready else 503,
    )
