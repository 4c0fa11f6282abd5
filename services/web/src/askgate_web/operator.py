"""The operator page: every pending question of a tenant across its sessions, live, with
its age, its time left and where it was delivered.

Reached through the tenant's signed operator link (`askgate tenant operator-link TENANT`:
tenant, exp, sig) or, for the JSON view and the event stream, the tenant's API key as a
bearer token. It shows every session of the tenant, so the link is for operators only.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode, urlsplit

import orjson
from askgate.channels.render import duration
from askgate.domain.i18n import t
from askgate.domain.models import Target
from askgate.domain.signing import verify_operator_link
from askgate.domain.timeutil import now_ms
from askgate.store.record import Record
from askgate.store.store import Store
from askgate.store.tenants import tenant_for_key
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response

from askgate_web.config import negotiate_locale
from askgate_web.render import render_template
from askgate_web.routes import PAGE, PRIVATE, LinkRefused, change_stream

router = APIRouter()
# The page lists at most this many (newest first); the API pages through all of them.
OPERATOR_LIMIT = 200


class OperatorLink:
    """A verified operator link (or API key) for one tenant."""

    def __init__(self, tenant: str, query: str) -> None:
        self.tenant = tenant
        self.query = query


async def _check(request: Request, tenant: str, exp: str, sig: str) -> OperatorLink:
    secret: str = request.app.state.settings.secret_key
    if verify_operator_link(secret, tenant, exp, sig):
        return OperatorLink(tenant, urlencode({"tenant": tenant, "exp": exp, "sig": sig}))
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        store: Store = request.app.state.store
        owner = await tenant_for_key(store.redis, token.strip())
        if owner is not None and owner.id == tenant:
            return OperatorLink(tenant, urlencode({"tenant": tenant}))
    raise LinkRefused(negotiate_locale(request.headers.get("accept-language")))


async def page_link(request: Request, tenant: str, exp: str = "", sig: str = "") -> OperatorLink:
    return await _check(request, tenant, exp, sig)


async def api_link(
    request: Request,
    tenant: Annotated[str, Query()] = "",
    exp: Annotated[str, Query()] = "",
    sig: Annotated[str, Query()] = "",
) -> OperatorLink:
    return await _check(request, tenant, exp, sig)


PageLink = Annotated[OperatorLink, Depends(page_link)]
ApiLink = Annotated[OperatorLink, Depends(api_link)]


def destination(target: Target) -> str:
    """Where a target shows the question, in a few characters."""
    raw = target.model_dump(mode="json")
    if target.channel == "text":
        return urlsplit(str(raw["url"])).netloc
    return str(raw.get("chat_id") or raw.get("channel_id") or "")


def entry(rec: Record, locale: str, now: int) -> dict[str, Any]:
    deliveries: list[dict[str, Any]] = []
    for d in rec.delivery_dicts():
        i = len(deliveries)
        deliveries.append(
            {
                "channel": d["target"]["channel"],
                "where": destination(rec.targets[i]),
                "state": d["status"],
                "status": t(locale, f"delivery_{d['status']}"),
                "error": d["error"],
                "step": d["step"],
                "reminders": d["reminders"],
            }
        )
    return {
        "id": rec.id,
        "session": rec.session,
        "questions": [(q.header, q.question) for q in rec.questions],
        "asked": t(locale, "asked_ago", age=duration(now - rec.created_ms, locale)),
        "left": t(locale, "left", left=duration(rec.expires_ms - now, locale)),
        "deliveries": deliveries,
    }


async def _view(request: Request, link: OperatorLink) -> tuple[dict[str, Any], str]:
    store: Store = request.app.state.store
    recs, _ = await store.list_pending(link.tenant, OPERATOR_LIMIT)
    locale = negotiate_locale(request.headers.get("accept-language"))
    now = now_ms()
    html = render_template(
        "operator_list.html", entries=[entry(r, locale, now) for r in recs], locale=locale, t=t
    )
    return {"count": len(recs), "list": html}, locale


@router.get("/t/{tenant}", response_class=HTMLResponse)
async def page(request: Request, link: PageLink) -> Response:
    view, locale = await _view(request, link)
    html = render_template(
        "operator.html", view=view, link_query=link.query, locale=locale, tenant=link.tenant, t=t
    )
    return HTMLResponse(html, headers=PAGE)


@router.get("/api/operator/view")
async def view(request: Request, link: ApiLink) -> Response:
    body, _ = await _view(request, link)
    return Response(orjson.dumps(body), media_type="application/json", headers=PRIVATE)


@router.get("/api/operator/events")
async def events(request: Request, link: ApiLink) -> Response:
    """A `change` for any question of the tenant (asked, escalated, ended): the page
    re-reads its view."""
    return change_stream(request.app.state.feed, link.tenant, "")
