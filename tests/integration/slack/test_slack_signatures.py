"""The endpoints trust only requests Slack signed: the signature over the raw body with
the tenant's signing secret, at most five minutes old; anything else is 401 and changes
nothing."""

from __future__ import annotations

import orjson
from askgate.domain.timeutil import now_ms

from tests.support.slack import ADA, Harness, signed


async def test_wrong_signature_is_401_and_changes_nothing(sl: Harness) -> None:
    """A click signed with another secret is refused; the question stays pending."""
    q = await sl.ask()
    prompt = await sl.prompt()
    r = await sl.interact(sl.fake.click(prompt, "o0", ADA), secret="not-the-secret")
    assert r.status_code == 401
    assert (await sl.question(q["id"]))["status"] == "pending"
    assert sl.fake.ephemeral == [] and prompt.edits == []


async def test_stale_timestamp_is_401_and_changes_nothing(sl: Harness) -> None:
    """A correctly signed click more than five minutes old (a replay) is refused."""
    q = await sl.ask()
    prompt = await sl.prompt()
    # The fake signs with the real time: the service's clock is over five minutes past it.
    sl.clock.past(now_ms() + 310_000)
    r = await sl.interact(sl.fake.click(prompt, "o0", ADA))
    assert r.status_code == 401
    assert (await sl.question(q["id"]))["status"] == "pending"


async def test_timestamp_within_the_window_is_accepted(sl: Harness) -> None:
    """A signature four minutes old still counts (Slack's clock may drift)."""
    q = await sl.ask()
    prompt = await sl.prompt()
    sl.clock.past(now_ms() + 240_000)  # the signature is four minutes old to the service
    assert (await sl.interact(sl.fake.click(prompt, "o0", ADA))).status_code == 200
    assert (await sl.wait_result(q["id"]))["status"] == "answered"


async def test_tampered_body_is_401(sl: Harness) -> None:
    """A body changed after signing fails the check, before it is parsed."""
    body = orjson.dumps(sl.fake.message("C0ROOM", ADA, "1"))
    headers = {"Content-Type": "application/json", **signed(body)}
    r = await sl.http.post(f"/slack/{sl.tenant.id}/events", content=body + b" ", headers=headers)
    assert r.status_code == 401


async def test_unsigned_event_is_401(sl: Harness) -> None:
    """An events request without Slack's headers is refused."""
    r = await sl.http.post(
        f"/slack/{sl.tenant.id}/events", json={"type": "url_verification", "challenge": "x"}
    )
    assert r.status_code == 401


async def test_unknown_tenant_is_401(sl: Harness) -> None:
    """A tenant without Slack settings answers 401 like a bad signature (no probing)."""
    body = b'{"type":"url_verification","challenge":"x"}'
    r = await sl.http.post("/slack/nobody/events", content=body, headers=signed(body))
    assert r.status_code == 401


async def test_url_verification_echoes_the_challenge(sl: Harness) -> None:
    """Slack's url_verification, signed, gets its challenge back."""
    r = await sl.event({"type": "url_verification", "challenge": "3eZbrw1aBm2rZgRNFdxV"})
    assert (r.status_code, r.json()) == (200, {"challenge": "3eZbrw1aBm2rZgRNFdxV"})


async def test_healthz_answers(sl: Harness) -> None:
    """The HTTP server's /healthz answers 200 for load balancers."""
    assert (await sl.http.get("/healthz")).json() == {"ok": True}
