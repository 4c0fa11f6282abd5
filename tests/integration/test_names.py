"""Session and run names: one alphabet, checked with the same 422 on every endpoint that
takes one, and every accepted name usable everywhere (API paths, the Control UI link)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from tests.support.asks import Tenant, ask_body

RULE = "must be 1 to 200 characters of A-Z a-z 0-9 . _ ~ : @ -"
# The names that were accepted but unusable: a path separator, a line break, the dot
# segments, and spaces that were trimmed in one place and not in another.
ODD = ["a/b", "a\nb", ".", "..", " spaced ", "", "x" * 201, "naïve", "a%2Fb", "a b"]
ODD_IDS = [
    "slash",
    "newline",
    "dot",
    "dotdot",
    "spaced",
    "empty",
    "too-long",
    "non-ascii",
    "percent",
    "inner-space",
]
# Accepted, and unusual enough to trip a path, a query string or a link.
FINE = ["a.b:c@d~e-f_g", "...", "-", "~", "a..b", "x" * 200, "user@example.com", "8:30"]


def encoded(name: str) -> str:
    """Every byte percent-encoded, so no client rewrites it ('.' and '..' included)."""
    return "".join(f"%{b:02X}" for b in name.encode())


@pytest.mark.parametrize("name", ODD, ids=ODD_IDS)
async def test_ask_refuses_odd_session(
    app_client: httpx.AsyncClient, tenant: Tenant, name: str
) -> None:
    """An ask whose session is outside the alphabet is a 422 naming session and the rule."""
    r = await app_client.post("/v1/questions", json=ask_body(session=name), headers=tenant.headers)
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith(f"session {RULE}")


@pytest.mark.parametrize("name", ODD, ids=ODD_IDS)
async def test_ask_refuses_odd_run_id(
    app_client: httpx.AsyncClient, tenant: Tenant, name: str
) -> None:
    """The run id keeps to the same alphabet, with the same message."""
    r = await app_client.post("/v1/questions", json=ask_body(run_id=name), headers=tenant.headers)
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith(f"run_id {RULE}")


@pytest.mark.parametrize("name", [n for n in ODD if n], ids=ODD_IDS[:5] + ODD_IDS[6:])
async def test_list_refuses_odd_session(
    app_client: httpx.AsyncClient, tenant: Tenant, name: str
) -> None:
    """Listing a session outside the alphabet is the same 422, not an empty list."""
    r = await app_client.get("/v1/questions", params={"session": name}, headers=tenant.headers)
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith(f"session {RULE}")


@pytest.mark.parametrize("name", [n for n in ODD if n], ids=ODD_IDS[:5] + ODD_IDS[6:])
async def test_messages_path_refuses_odd_session(
    app_client: httpx.AsyncClient, tenant: Tenant, name: str
) -> None:
    """A message to a session outside the alphabet is a 422, not a 404 or a 307."""
    r = await app_client.post(
        f"/v1/sessions/{encoded(name)}/messages", json={"text": "1"}, headers=tenant.headers
    )
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith(f"session {RULE}")


@pytest.mark.parametrize("name", [n for n in ODD if n], ids=ODD_IDS[:5] + ODD_IDS[6:])
async def test_run_abort_refuses_odd_run_id(
    app_client: httpx.AsyncClient, tenant: Tenant, name: str
) -> None:
    """Aborting a run outside the alphabet is a 422 naming run_id."""
    r = await app_client.post(f"/v1/runs/{encoded(name)}/abort", headers=tenant.headers)
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith(f"run_id {RULE}")


@pytest.mark.parametrize("name", FINE)
async def test_accepted_name_works_on_every_endpoint(
    app_client: httpx.AsyncClient, web_client: httpx.AsyncClient, tenant: Tenant, name: str
) -> None:
    """Ask, list, the Control UI link, a session message and a run abort all find it."""
    r = await app_client.post(
        "/v1/questions", json=ask_body(session=name, run_id=name), headers=tenant.headers
    )
    assert r.status_code == 201, r.text
    q = r.json()
    assert q["session"] == name and q["run_id"] == name

    listed = await app_client.get("/v1/questions", params={"session": name}, headers=tenant.headers)
    assert [x["id"] for x in listed.json()["questions"]] == [q["id"]]

    link = urlsplit(q["web_url"])
    page = await web_client.get(f"{link.path}?{link.query}")
    assert page.status_code == 200 and q["id"] in page.text
    signed = dict(parse_qsl(link.query))
    view = await web_client.get(
        "/api/view", params={"tenant": tenant.id, "session": name, **signed}
    )
    assert view.status_code == 200 and view.json()["pending"] == q["id"]

    r = await app_client.post(
        f"/v1/sessions/{encoded(name)}/messages", json={"text": "2"}, headers=tenant.headers
    )
    assert r.json()["consumed"] is True
    assert r.json()["question"]["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}

    again = await app_client.post(
        "/v1/questions", json=ask_body(session=name, run_id=name), headers=tenant.headers
    )
    aborted = await app_client.post(f"/v1/runs/{encoded(name)}/abort", headers=tenant.headers)
    assert aborted.status_code == 200
    assert aborted.json() == {"run_id": name, "ended": [again.json()["id"]]}
