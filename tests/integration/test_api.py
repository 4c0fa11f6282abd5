"""The HTTP API against a real Redis: the ask, its context rules, answers, ends, listing."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from askgate.settings import Settings

from tests.support.asks import Tenant, ask_body, make_settings
from tests.support.waiting import eventually

pytestmark = pytest.mark.both_redis

THREE = [
    {
        "id": "env",
        "header": "Env",
        "question": "Which environment?",
        "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}],
    },
    {
        "id": "features",
        "header": "Features",
        "question": "Which features?",
        "multiSelect": True,
        "options": [{"label": "Auth"}, {"label": "Billing"}, {"label": "Search"}],
    },
    {
        "id": "db",
        "header": "DB",
        "question": "Which database?",
        "options": [{"label": "Postgres"}, {"label": "MySQL"}],
    },
]


async def ask(client: httpx.AsyncClient, tenant: Tenant, **kw: Any) -> httpx.Response:
    return await client.post("/v1/questions", json=ask_body(**kw), headers=tenant.headers)


async def test_ask_returns_resource(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """A new ask is a 201 with the normalised questions, times, result key and links."""
    r = await ask(app_client, tenant, session="s-res", targets=[{"channel": "web"}])
    assert r.status_code == 201
    q = r.json()
    assert q["status"] == "pending" and q["reason"] is None and q["result"] is None
    assert q["questions"][0]["options"][0] == {
        "label": "Staging (Recommended)",
        "description": "Safe, reversible",
    }
    assert q["created_at"].endswith("Z") and q["expires_at"] > q["created_at"]
    assert q["timeout_s"] == 900
    assert q["result_key"] == q["result_channel"] and q["result_key"].endswith(q["id"])
    assert "/s/" in q["web_url"] and "sig=" in q["web_url"]
    assert q["deliveries"] == [
        {
            "target": {"channel": "web"},
            "status": "delivered",
            "error": None,
            "ref": None,
            "at": None,
            "step": 0,
            "reminders": 0,
        }
    ]
    assert q["remind"] is None and q["escalation"] == []


async def test_missing_api_key_is_401(app_client: httpx.AsyncClient) -> None:
    """Without a bearer key the API answers 401 with a stable code."""
    r = await app_client.post("/v1/questions", json=ask_body())
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"


async def test_validation_error_names_field(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """A bad ask is a 422 whose message names the field path and the fix."""
    body = ask_body()
    body["questions"][0]["id"] = "DeployTarget"
    body["questions"][0]["options"] = body["questions"][0]["options"][:1]
    r = await app_client.post("/v1/questions", json=body, headers=tenant.headers)
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "validation_error"
    assert err["errors"] == [
        "questions[0].id must be snake_case, for example deploy_target",
        "questions[0].options must contain 2 to 4 options (got 1)",
    ]


async def test_float_timeout_is_422(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """timeoutSeconds 45.5 is refused, not rounded."""
    r = await ask(app_client, tenant, timeoutSeconds=45.5)
    assert r.status_code == 422
    assert "timeoutSeconds must be a whole number" in r.json()["error"]["message"]


@pytest.mark.parametrize(("given", "expected"), [(5, 30), (100, 100), (99999, 3600), (None, 900)])
async def test_timeout_is_clamped(
    redis_url: str, redis: Any, tenant: Tenant, given: int | None, expected: int
) -> None:
    """timeoutSeconds is clamped to [min, max] and defaults to the setting."""
    from askgate_api.app import create_app

    app = create_app(make_settings(redis_url, timeout_min_s=30))
    async with app.router.lifespan_context(app):
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://a")
        body = ask_body(session=f"clamp-{given}")
        if given is None:
            body.pop("timeoutSeconds")
        else:
            body["timeoutSeconds"] = given
        r = await client.post("/v1/questions", json=body, headers=tenant.headers)
        await client.aclose()
    assert r.status_code == 201
    assert r.json()["timeout_s"] == expected


async def test_second_ask_in_session_is_409(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """While a question is pending, another ask in the session is a 409 naming it."""
    first = (await ask(app_client, tenant, session="busy")).json()
    r = await ask(app_client, tenant, session="busy")
    assert r.status_code == 409
    err = r.json()["error"]
    assert err["code"] == "session_busy"
    assert err["pending_question_id"] == first["id"] and first["id"] in err["message"]


async def test_session_free_after_answer(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """Once the pending question ends, the session can ask again."""
    first = (await ask(app_client, tenant, session="again")).json()
    await app_client.post(f"/v1/questions/{first['id']}/skip", headers=tenant.headers)
    assert (await ask(app_client, tenant, session="again")).status_code == 201


async def test_non_primary_is_403(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """A subagent's ask (primary: false) is refused with 403 and nothing is stored."""
    r = await ask(app_client, tenant, session="sub", primary=False)
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "not_primary"
    listed = await app_client.get(
        "/v1/questions", params={"session": "sub"}, headers=tenant.headers
    )
    assert listed.json()["questions"] == []


async def test_tool_call_id_replay_returns_same(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A retried ask with the same tool_call_id returns the same question with 200."""
    a = await ask(app_client, tenant, session="idem", tool_call_id="call_1")
    b = await ask(app_client, tenant, session="idem", tool_call_id="call_1")
    assert (a.status_code, b.status_code) == (201, 200)
    assert a.json()["id"] == b.json()["id"]


async def test_concurrent_retries_create_one(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Any
) -> None:
    """Twenty concurrent retries of one ask create exactly one question and one event."""
    rs = await asyncio.gather(
        *[ask(app_client, tenant, session="idem-c", tool_call_id="call_x") for _ in range(20)]
    )
    assert sorted(r.status_code for r in rs) == [200] * 19 + [201]
    assert len({r.json()["id"] for r in rs}) == 1
    qid = rs[0].json()["id"]
    from askgate.store import keys

    entries = await redis.xrange(keys.events(keys.shard_of(qid), "web"))
    assert [e[1][b"type"] for e in entries if e[1][b"id"] == qid.encode()] == [b"question.created"]


async def test_replay_after_answer_returns_final(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A retried ask after the answer returns the answered question, not a new one."""
    a = (await ask(app_client, tenant, session="idem-f", tool_call_id="c9")).json()
    await app_client.post(
        f"/v1/questions/{a['id']}/reply", json={"text": "2"}, headers=tenant.headers
    )
    b = await ask(app_client, tenant, session="idem-f", tool_call_id="c9")
    assert b.status_code == 200
    assert b.json()["status"] == "answered" and b.json()["id"] == a["id"]


async def test_other_tenant_gets_404(
    app_client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    """Another tenant's question is a 404 on read, wait, answer and cancel; nothing changes."""
    q = (await ask(app_client, tenant, session="private")).json()
    h = other_tenant.headers
    for r in [
        await app_client.get(f"/v1/questions/{q['id']}", headers=h),
        await app_client.get(f"/v1/questions/{q['id']}/wait?timeout_s=0", headers=h),
        await app_client.post(
            f"/v1/questions/{q['id']}/answer",
            json={"answers": {"deploy_target": ["Production"]}},
            headers=h,
        ),
        await app_client.post(f"/v1/questions/{q['id']}/cancel", headers=h),
    ]:
        assert r.status_code == 404
        assert r.json()["error"]["code"] == "not_found"
    mine = await app_client.get(f"/v1/questions/{q['id']}", headers=tenant.headers)
    assert mine.json()["status"] == "pending"


async def test_same_session_name_is_per_tenant(
    app_client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    """Two tenants may each have a pending question in a session of the same name."""
    assert (await ask(app_client, tenant, session="shared-name")).status_code == 201
    assert (await ask(app_client, other_tenant, session="shared-name")).status_code == 201


async def test_unknown_question_is_404(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """An id askgate never issued is a 404, not a 500."""
    for qid in ("nope", "qzz1234", "q0aaaaaaaaaaaaaaaaaaaaa"):
        r = await app_client.get(f"/v1/questions/{qid}", headers=tenant.headers)
        assert r.status_code == 404


async def test_incomplete_answer_names_missing(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """An answer that leaves a question out is refused naming it; the ask stays pending."""
    q = (
        await app_client.post(
            "/v1/questions",
            json={**ask_body(session="inc"), "questions": THREE},
            headers=tenant.headers,
        )
    ).json()
    r = await app_client.post(
        f"/v1/questions/{q['id']}/answer",
        json={"answers": {"env": "production", "features": ["Auth"]}},
        headers=tenant.headers,
    )
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "incomplete_answer" and err["missing"] == ["db"]
    assert "Which database?" in err["message"]
    again = await app_client.get(f"/v1/questions/{q['id']}", headers=tenant.headers)
    assert again.json()["status"] == "pending"


async def test_answer_canonicalises(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """Answers map to declared labels (any case), free text is trimmed, order is declared."""
    q = (
        await app_client.post(
            "/v1/questions",
            json={**ask_body(session="canon"), "questions": THREE},
            headers=tenant.headers,
        )
    ).json()
    r = await app_client.post(
        f"/v1/questions/{q['id']}/answer",
        json={
            "answers": {
                "db": ["  my own db  "],
                "features": ["search", "AUTH", "search"],
                "env": "staging",
            },
            "responder": {"channel": "api", "user_id": 7},
        },
        headers=tenant.headers,
    )
    assert r.status_code == 200
    assert r.json()["result"] == {
        "status": "answered",
        "answers": {
            "answers": {
                "env": ["Staging (Recommended)"],
                "features": ["Search", "Auth"],
                "db": ["my own db"],
            }
        },
    }
    assert r.json()["responder"] == {"channel": "api", "user_id": "7", "name": None}


async def test_reply_partial_then_complete(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """A partial plain-text reply gets the correction; a full one answers."""
    q = (
        await app_client.post(
            "/v1/questions",
            json={**ask_body(session="rep"), "questions": THREE},
            headers=tenant.headers,
        )
    ).json()
    url = f"/v1/questions/{q['id']}/reply"
    r = await app_client.post(url, json={"text": "2\n1,3"}, headers=tenant.headers)
    assert r.status_code == 422
    assert r.json()["error"]["message"] == "Please also answer: DB: Which database?"
    r = await app_client.post(
        url, json={"text": "db: mysql\nenv: 2\nfeatures: 1, 3"}, headers=tenant.headers
    )
    assert r.json()["result"]["answers"]["answers"] == {
        "env": ["Production"],
        "features": ["Auth", "Search"],
        "db": ["MySQL"],
    }


@pytest.mark.parametrize(("path", "reason"), [("skip", "skipped"), ("cancel", "cancelled")])
async def test_skip_and_cancel(
    app_client: httpx.AsyncClient, tenant: Tenant, path: str, reason: str
) -> None:
    """Skip and cancel end the question as no_answer with their reason."""
    q = (await ask(app_client, tenant, session=f"end-{path}")).json()
    r = await app_client.post(f"/v1/questions/{q['id']}/{path}", headers=tenant.headers)
    assert r.status_code == 200
    assert r.json()["result"] == {"status": "no_answer"}
    assert r.json()["reason"] == reason


async def test_reply_skip_word_in_locale(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """The Turkish skip word skips a Turkish ask."""
    q = (await ask(app_client, tenant, session="tr", locale="tr")).json()
    r = await app_client.post(
        f"/v1/questions/{q['id']}/reply", json={"text": "Atla"}, headers=tenant.headers
    )
    assert r.json()["reason"] == "skipped"


async def test_late_answer_told_already_answered(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The loser of two answers gets 409 'This question was already answered.'."""
    q = (await ask(app_client, tenant, session="late")).json()
    url = f"/v1/questions/{q['id']}/answer"
    body = {"answers": {"deploy_target": ["Production"]}}
    assert (await app_client.post(url, json=body, headers=tenant.headers)).status_code == 200
    r = await app_client.post(
        url, json={"answers": {"deploy_target": ["Staging"]}}, headers=tenant.headers
    )
    assert r.status_code == 409
    assert r.json()["error"]["message"] == "This question was already answered."
    final = await app_client.get(f"/v1/questions/{q['id']}", headers=tenant.headers)
    assert final.json()["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}


async def test_late_answer_after_cancel_in_locale(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """An answer after a skip is refused with the ended message, the reason kept."""
    q = (await ask(app_client, tenant, session="late-hi", locale="hi")).json()
    await app_client.post(f"/v1/questions/{q['id']}/skip", headers=tenant.headers)
    r = await app_client.post(
        f"/v1/questions/{q['id']}/reply", json={"text": "1"}, headers=tenant.headers
    )
    assert r.status_code == 409
    assert r.json()["error"]["reason"] == "skipped"
    assert r.json()["error"]["message"].startswith("यह प्रश्न समाप्त हो गया है")


async def test_run_abort_ends_run_in_every_shard(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Aborting a run ends its pending questions across sessions and shards, only those."""
    from askgate.store import keys

    ids = []
    for i in range(12):
        r = await ask(app_client, tenant, session=f"run-s{i}", run_id="run-7")
        ids.append(r.json()["id"])
    other = (await ask(app_client, tenant, session="run-other", run_id="run-8")).json()["id"]
    assert len({keys.shard_of(i) for i in ids}) > 1
    r = await app_client.post("/v1/runs/run-7/abort", headers=tenant.headers)
    assert sorted(r.json()["ended"]) == sorted(ids)
    for qid in ids:
        got = (await app_client.get(f"/v1/questions/{qid}", headers=tenant.headers)).json()
        assert (got["status"], got["reason"]) == ("no_answer", "run_aborted")
    got = (await app_client.get(f"/v1/questions/{other}", headers=tenant.headers)).json()
    assert got["status"] == "pending"


async def test_run_abort_of_other_tenant_changes_nothing(
    app_client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    """Another tenant aborting a run with the same id ends none of this tenant's questions."""
    q = (await ask(app_client, tenant, session="r-iso", run_id="shared-run")).json()
    r = await app_client.post("/v1/runs/shared-run/abort", headers=other_tenant.headers)
    assert r.json()["ended"] == []
    got = (await app_client.get(f"/v1/questions/{q['id']}", headers=tenant.headers)).json()
    assert got["status"] == "pending"


async def test_list_by_session_and_status(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """Listing returns a session's questions newest first, filtered by status."""
    a = (await ask(app_client, tenant, session="lst")).json()
    await app_client.post(f"/v1/questions/{a['id']}/cancel", headers=tenant.headers)
    b = (await ask(app_client, tenant, session="lst")).json()
    h = tenant.headers
    all_ = (await app_client.get("/v1/questions", params={"session": "lst"}, headers=h)).json()
    assert [q["id"] for q in all_["questions"]] == [b["id"], a["id"]]
    pend = (
        await app_client.get(
            "/v1/questions", params={"session": "lst", "status": "pending"}, headers=h
        )
    ).json()
    assert [q["id"] for q in pend["questions"]] == [b["id"]]


async def test_wait_returns_at_once_when_final(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """wait on a final question returns it immediately with its result."""
    q = (await ask(app_client, tenant, session="w1")).json()
    await app_client.post(f"/v1/questions/{q['id']}/skip", headers=tenant.headers)
    r = await app_client.get(f"/v1/questions/{q['id']}/wait?timeout_s=30", headers=tenant.headers)
    assert r.json()["status"] == "no_answer" and r.json()["reason"] == "skipped"


async def test_wait_times_out_pending(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """wait returns the pending resource when its window passes without an answer."""
    q = (await ask(app_client, tenant, session="w2")).json()
    r = await app_client.get(f"/v1/questions/{q['id']}/wait?timeout_s=0.2", headers=tenant.headers)
    assert r.status_code == 200 and r.json()["status"] == "pending"


async def test_wait_wakes_on_answer(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """A waiter blocked on wait gets the answer as soon as it is given."""
    q = (await ask(app_client, tenant, session="w3")).json()
    waiter = asyncio.create_task(
        app_client.get(f"/v1/questions/{q['id']}/wait?timeout_s=30", headers=tenant.headers)
    )
    waiters = app_client.app.state.waiters  # type: ignore[attr-defined]
    await eventually(lambda: waiters.count, "the waiter to park")
    await app_client.post(
        f"/v1/questions/{q['id']}/reply", json={"text": "production"}, headers=tenant.headers
    )
    r = await asyncio.wait_for(waiter, 10)
    assert r.json()["result"] == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }


async def test_session_message_answers_pending(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A session message answers its pending question; with none it is not consumed."""
    h = tenant.headers
    r = await app_client.post("/v1/sessions/msg/messages", json={"text": "1"}, headers=h)
    assert r.json() == {"consumed": False, "question": None, "message": None}
    q = (await ask(app_client, tenant, session="msg")).json()
    r = await app_client.post("/v1/sessions/msg/messages", json={"text": "1"}, headers=h)
    assert r.json()["consumed"] is True
    assert r.json()["question"]["id"] == q["id"]
    assert r.json()["question"]["result"]["answers"]["answers"] == {
        "deploy_target": ["Staging (Recommended)"]
    }


async def test_rate_limit_is_429_with_retry_after(redis: Any, redis_url: str) -> None:
    """Asks beyond the tenant's per-second rate get 429 with Retry-After."""
    from askgate.store.tenants import create_tenant
    from askgate_api.app import create_app

    _t, key = await create_tenant(redis, "rl", asks_per_s=3)
    app = create_app(make_settings(redis_url))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://a"
        ) as c:
            codes = []
            for i in range(5):
                r = await c.post(
                    "/v1/questions",
                    json=ask_body(session=f"rl{i}"),
                    headers={"Authorization": f"Bearer {key}"},
                )
                codes.append(r.status_code)
    assert codes[:3] == [201, 201, 201] and 429 in codes[3:]
    assert int(r.headers["Retry-After"]) >= 1
    assert r.json()["error"]["code"] == "rate_limited"


async def test_pending_quota_is_429_until_one_ends(redis: Any, settings: Settings) -> None:
    """A tenant at its pending limit gets 429; ending one frees a slot."""
    from askgate.store.tenants import create_tenant
    from askgate_api.app import create_app

    _t, key = await create_tenant(redis, "pq", max_pending=2)
    h = {"Authorization": f"Bearer {key}"}
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://a"
        ) as c:
            a = (await c.post("/v1/questions", json=ask_body(session="p1"), headers=h)).json()
            await c.post("/v1/questions", json=ask_body(session="p2"), headers=h)
            r = await c.post("/v1/questions", json=ask_body(session="p3"), headers=h)
            assert r.status_code == 429 and "Retry-After" in r.headers
            await c.post(f"/v1/questions/{a['id']}/cancel", headers=h)
            r = await c.post("/v1/questions", json=ask_body(session="p3"), headers=h)
            assert r.status_code == 201


async def test_health_ready_metrics_openapi(app_client: httpx.AsyncClient) -> None:
    """healthz, readyz, metrics and the OpenAPI document are served."""
    assert (await app_client.get("/healthz")).status_code == 200
    assert (await app_client.get("/readyz")).json() == {"status": "ready"}
    assert "askgate_asks_total" in (await app_client.get("/metrics")).text
    spec = (await app_client.get("/openapi.json")).json()
    assert "/v1/questions/{question_id}/wait" in spec["paths"]


async def test_wait_errors_are_json(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """wait answers a missing key, a bad timeout and an unknown id with the error JSON."""
    q = (await ask(app_client, tenant, session="w-err")).json()
    r = await app_client.get(f"/v1/questions/{q['id']}/wait")
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    r = await app_client.get(f"/v1/questions/{q['id']}/wait?timeout_s=soon", headers=tenant.headers)
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith("timeout_s must be a number of seconds")
    r = await app_client.get("/v1/questions/q00nothere/wait?timeout_s=1", headers=tenant.headers)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
