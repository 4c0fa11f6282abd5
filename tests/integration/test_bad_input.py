"""Bad input never gets a 500 and always gets the error shape: oversized bodies and texts,
lone surrogates, invalid UTF-8, deep nesting, unknown routes and wrong methods (API), and
the same in the web Control UI's own shape."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import orjson
import pytest
from askgate.domain.models import FREE_TEXT_MAX, RESPONDER_FIELD_MAX

from tests.support.asks import Tenant, ask_body

LIMIT = 128 * 1024  # Settings.body_max_bytes' default
MULTI = {
    "id": "areas",
    "header": "Areas",
    "question": "Which areas need tests?",
    "multiSelect": True,
    "options": [{"label": "Auth"}, {"label": "Billing"}],
}


def error_of(r: httpx.Response, status: int) -> dict[str, Any]:
    """The {"error": {"code", "message"}} body of a response with `status`."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"} and {"code", "message"} <= set(body["error"])
    return dict(body["error"])


async def pending(client: httpx.AsyncClient, tenant: Tenant, **extra: Any) -> str:
    r = await client.post("/v1/questions", json=ask_body(**extra), headers=tenant.headers)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def post_raw(
    client: httpx.AsyncClient, path: str, body: bytes, headers: dict[str, str]
) -> httpx.Response:
    return await client.post(
        path, content=body, headers={**headers, "content-type": "application/json"}
    )


# -- sizes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/v1/questions",
        "/v1/questions/q00aaaaaaaaaaaaaaaa/reply",
        "/v1/sessions/s1/messages",
        "/v1/nowhere",
    ],
)
async def test_body_over_the_limit_is_413(
    app_client: httpx.AsyncClient, tenant: Tenant, path: str
) -> None:
    """Any endpoint refuses a body over the limit with 413, before reading it."""
    body = b'{"text": "' + b"x" * LIMIT + b'"}'
    err = error_of(await post_raw(app_client, path, body, tenant.headers), 413)
    assert err["code"] == "body_too_large" and str(LIMIT) in err["message"]


async def test_wait_with_a_body_over_the_limit_is_413(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A GET /wait that sends a body is refused over the limit like any other request."""
    qid = await pending(app_client, tenant, session="wait-body")
    r = await app_client.request(
        "GET",
        f"/v1/questions/{qid}/wait?timeout_s=0",
        content=b"x" * (LIMIT + 1),
        headers=tenant.headers,
    )
    assert error_of(r, 413)["code"] == "body_too_large"


async def test_chunked_body_over_the_limit_is_413(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A body without Content-Length is counted as it arrives and refused past the limit."""

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"text": "'
        for _ in range(LIMIT // 1024 + 1):
            yield b"x" * 1024
        yield b'"}'

    r = await app_client.post(
        "/v1/sessions/s1/messages",
        content=chunks(),
        headers={**tenant.headers, "content-type": "application/json"},
    )
    assert error_of(r, 413)["code"] == "body_too_large"


async def test_chunked_body_under_the_limit_is_read(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A chunked body under the limit reaches the endpoint whole."""
    qid = await pending(app_client, tenant, session="chunk")

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"text": '
        yield b'"2"}'

    r = await app_client.post(
        f"/v1/questions/{qid}/reply",
        content=chunks(),
        headers={**tenant.headers, "content-type": "application/json"},
    )
    assert r.status_code == 200 and r.json()["status"] == "answered"


@pytest.mark.parametrize("path", ["reply", "messages"])
async def test_text_over_the_free_text_limit_is_422(
    app_client: httpx.AsyncClient, tenant: Tenant, path: str
) -> None:
    """/reply and session messages share the one free-text limit; nothing is stored."""
    qid = await pending(app_client, tenant, session="big")
    url = f"/v1/questions/{qid}/reply" if path == "reply" else "/v1/sessions/big/messages"
    r = await app_client.post(url, json={"text": "x" * (FREE_TEXT_MAX + 1)}, headers=tenant.headers)
    err = error_of(r, 422)
    assert err["message"] == f"text must be at most {FREE_TEXT_MAX} characters; shorten it"
    q = await app_client.get(f"/v1/questions/{qid}", headers=tenant.headers)
    assert q.json()["status"] == "pending"


async def test_text_at_the_limit_is_taken(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """A reply of exactly the limit is an answer (free text)."""
    qid = await pending(app_client, tenant, session="edge")
    r = await app_client.post(
        f"/v1/questions/{qid}/reply", json={"text": "y" * FREE_TEXT_MAX}, headers=tenant.headers
    )
    assert r.json()["result"]["answers"]["answers"]["deploy_target"] == ["y" * FREE_TEXT_MAX]


@pytest.mark.parametrize("field", ["channel", "user_id", "name"])
async def test_responder_field_over_its_limit_is_422(
    app_client: httpx.AsyncClient, tenant: Tenant, field: str
) -> None:
    """Each responder field is bounded; the message names it."""
    qid = await pending(app_client, tenant, session=f"resp-{field}")
    r = await app_client.post(
        f"/v1/questions/{qid}/answer",
        json={
            "answers": {"deploy_target": "Production"},
            "responder": {field: "r" * (RESPONDER_FIELD_MAX + 1)},
        },
        headers=tenant.headers,
    )
    assert error_of(r, 422)["message"] == (
        f"responder.{field} must be at most {RESPONDER_FIELD_MAX} characters; shorten it"
    )


async def test_many_answer_values_get_the_bound(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A multi-select answer with 1,000 values is a 422 that states the bound."""
    qid = await pending(app_client, tenant, session="many")
    r = await app_client.post(
        f"/v1/questions/{qid}/answer",
        json={"answers": {"deploy_target": ["x"] * 1000}},
        headers=tenant.headers,
    )
    assert "takes one answer" in error_of(r, 422)["message"]
    body = ask_body(session="many-multi")
    body["questions"] = [MULTI]
    r = await app_client.post("/v1/questions", json=body, headers=tenant.headers)
    r = await app_client.post(
        f"/v1/questions/{r.json()['id']}/answer",
        json={"answers": {"areas": [f"v{i}" for i in range(1000)]}},
        headers=tenant.headers,
    )
    assert error_of(r, 422)["message"] == (
        "answers.areas takes at most 3 values (its 2 options and one free text; got 1000); "
        "send each option once"
    )


async def test_100000_answer_values_are_refused_by_size(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """100,000 values never reach the answer code: the body limit answers first."""
    qid = await pending(app_client, tenant, session="huge")
    body = orjson.dumps({"answers": {"deploy_target": [f"v{i}" for i in range(100_000)]}})
    r = await post_raw(app_client, f"/v1/questions/{qid}/answer", body, tenant.headers)
    assert error_of(r, 413)["code"] == "body_too_large"


# -- malformed bodies --------------------------------------------------------------------

SURROGATE = b'"\\ud800"'


def with_surrogate(kind: str) -> tuple[str, bytes]:
    """(endpoint suffix, body) with a lone surrogate in one field of that endpoint."""
    return {
        "reply": ("reply", b'{"text": ' + SURROGATE + b"}"),
        "answer": ("answer", b'{"answers": {"deploy_target": [' + SURROGATE + b"]}}"),
        "responder": (
            "answer",
            b'{"answers": {"deploy_target": ["1"]}, "responder": {"name": ' + SURROGATE + b"}}",
        ),
        "skip-responder": ("skip", b'{"responder": {"user_id": ' + SURROGATE + b"}}"),
    }[kind]


@pytest.mark.parametrize("kind", ["reply", "answer", "responder", "skip-responder"])
async def test_lone_surrogate_is_422(
    app_client: httpx.AsyncClient, tenant: Tenant, kind: str
) -> None:
    """A lone surrogate anywhere in a body is a 422 saying the JSON is invalid."""
    qid = await pending(app_client, tenant, session=f"sur-{kind}")
    suffix, body = with_surrogate(kind)
    r = await post_raw(app_client, f"/v1/questions/{qid}/{suffix}", body, tenant.headers)
    err = error_of(r, 422)
    assert err["message"].startswith("body is not valid JSON") and "surrogate" in err["message"]


@pytest.mark.parametrize("path", ["/v1/questions", "/v1/sessions/sur/messages"])
async def test_lone_surrogate_in_ask_and_message_is_422(
    app_client: httpx.AsyncClient, tenant: Tenant, path: str
) -> None:
    """The ask (served apart from FastAPI) and session messages refuse it the same way."""
    body = (
        orjson.dumps(ask_body(session="sur")).replace(b'"s', b'"\\ud800s', 1)
        if path == "/v1/questions"
        else b'{"text": ' + SURROGATE + b"}"
    )
    r = await post_raw(app_client, path, body, tenant.headers)
    assert error_of(r, 422)["message"].startswith("body is not valid JSON")


@pytest.mark.parametrize("path", ["/v1/questions", "/v1/sessions/utf/messages"])
async def test_invalid_utf8_is_422(
    app_client: httpx.AsyncClient, tenant: Tenant, path: str
) -> None:
    """Bytes that are not UTF-8 are a 422 in the error shape."""
    r = await post_raw(app_client, path, b'{"text": "\xff\xfe"}', tenant.headers)
    assert error_of(r, 422)["code"] == "validation_error"


@pytest.mark.parametrize("depth", [1000, 5000])
@pytest.mark.parametrize("path", ["/v1/questions", "/v1/sessions/deep/messages"])
async def test_deep_nesting_is_422(
    app_client: httpx.AsyncClient, tenant: Tenant, path: str, depth: int
) -> None:
    """JSON nested thousands deep is a 422 in the error shape, never a crash."""
    body = b'{"text": ' + b"[" * depth + b"]" * depth + b"}"
    assert error_of(await post_raw(app_client, path, body, tenant.headers), 422)


# -- routes ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/nowhere", "/v1/questions/", "/v1/questions/x/y/z"])
async def test_unknown_route_is_404_in_the_shape(
    app_client: httpx.AsyncClient, tenant: Tenant, path: str
) -> None:
    """An unknown path is a 404 with code not_found (no redirect for a trailing slash)."""
    assert error_of(await app_client.get(path, headers=tenant.headers), 404)["code"] == "not_found"


async def test_wrong_method_is_405_in_the_shape(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A wrong method is a 405 with code method_not_allowed and the Allow header."""
    r = await app_client.delete("/v1/questions", headers=tenant.headers)
    err = error_of(r, 405)
    assert err["code"] == "method_not_allowed" and "Allow" in r.headers


# -- the web Control UI ------------------------------------------------------------------


def web_error(r: httpx.Response, status: int) -> str:
    """The Control UI API's {"ok": false, "message"} body of a response with `status`."""
    assert r.status_code == status, r.text
    body = r.json()
    assert body["ok"] is False and isinstance(body["message"], str)
    return str(body["message"])


async def signed(app_client: httpx.AsyncClient, tenant: Tenant, session: str) -> dict[str, str]:
    """The Control UI API query (tenant, session, exp, sig) of a session with a question."""
    r = await app_client.post(
        "/v1/questions", json=ask_body(session=session), headers=tenant.headers
    )
    link = urlsplit(r.json()["web_url"])
    return {"tenant": tenant.id, "session": session, **dict(parse_qsl(link.query))}


@pytest.mark.parametrize("exp", ["²", "٣", "9" * 5000, "-1", ""])
async def test_web_odd_exp_is_403(
    app_client: httpx.AsyncClient, web_client: httpx.AsyncClient, tenant: Tenant, exp: str
) -> None:
    """A link whose exp is not plain ASCII digits (or absurdly long) is refused, not a 500."""
    query = {**await signed(app_client, tenant, "exp"), "exp": exp}
    assert (await web_client.get("/s/x/exp", params=query)).status_code == 403
    assert web_error(await web_client.get("/api/view", params=query), 403)


async def test_web_reply_with_lone_surrogate_is_422(
    app_client: httpx.AsyncClient, web_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The composer's reply API refuses a lone surrogate in its own error shape."""
    query = await signed(app_client, tenant, "web-sur")
    r = await web_client.post(
        "/api/reply",
        params=query,
        content=b'{"text": ' + SURROGATE + b"}",
        headers={"content-type": "application/json"},
    )
    assert web_error(r, 422).startswith("body is not valid JSON")


async def test_web_reply_over_the_free_text_limit_is_422(
    app_client: httpx.AsyncClient, web_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The composer's reply shares the one free-text limit."""
    query = await signed(app_client, tenant, "web-big")
    r = await web_client.post("/api/reply", params=query, json={"text": "x" * (FREE_TEXT_MAX + 1)})
    assert f"at most {FREE_TEXT_MAX} characters" in web_error(r, 422)


async def test_web_body_over_the_limit_is_413(
    app_client: httpx.AsyncClient, web_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The Control UI refuses an oversized body with 413 in its shape."""
    query = await signed(app_client, tenant, "web-413")
    r = await web_client.post(
        "/api/reply",
        params=query,
        content=b"x" * (LIMIT + 1),
        headers={"content-type": "application/json"},
    )
    assert str(LIMIT) in web_error(r, 413)


@pytest.mark.parametrize("path", ["/api/nowhere", "/api/view/x"])
async def test_web_unknown_api_route_is_404_in_its_shape(
    web_client: httpx.AsyncClient, path: str
) -> None:
    """Unknown /api/ paths answer in the Control UI API's JSON shape."""
    assert web_error(await web_client.get(path), 404) == "not found"


async def test_web_wrong_method_is_405_in_its_shape(web_client: httpx.AsyncClient) -> None:
    """A wrong method on an /api/ route is a 405 in its shape."""
    assert web_error(await web_client.delete("/api/reply"), 405)


async def test_every_channels_reply_has_the_free_text_limit(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Any, settings: Any
) -> None:
    """Store.apply_reply, which every channel's plain-text replies go through, refuses a
    text over the limit and the question stays pending."""
    from askgate.domain.errors import ValidationFailed
    from askgate.store.store import Store

    qid = await pending(app_client, tenant, session="store-limit")
    store = Store(redis, settings)
    rec = await store.load(qid)
    assert rec is not None
    with pytest.raises(ValidationFailed, match=f"at most {FREE_TEXT_MAX} characters"):
        await store.apply_reply(rec, "z" * (FREE_TEXT_MAX + 1))
    assert (await store.load(qid)).status == "pending"  # type: ignore[union-attr]
