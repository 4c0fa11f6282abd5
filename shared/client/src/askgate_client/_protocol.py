"""What the sync and async clients share: the ask body, response parsing, and the retry
policy. No I/O here, so both clients behave the same by construction."""

from __future__ import annotations

import functools
import json
import os
import random
import ssl
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from askgate_client._errors import ApiUnavailable, api_error

# The API caps one long-poll at 60 s (tool-call time limits); the client re-waits.
WAIT_WINDOW_S = 60.0
# Read timeout beyond the window: a long-poll answers by then or the connection is dead.
READ_SLACK_S = 15.0
# 429/503 say "come back"; 502/504 are proxies in front of an API that is restarting.
RETRY_STATUSES = frozenset({429, 502, 503, 504})
BACKOFF_FIRST_S = 0.1
BACKOFF_MAX_S = 5.0
# How long an outage may last before the client gives up (the result stays readable
# for a day, so a caller that catches ApiUnavailable can wait() again later).
RETRY_FOR_S = 600.0
# A cancel on the way out (the caller was cancelled) gets this long, then is abandoned.
CANCEL_GRACE_S = 5.0


def base_url_from_env(base_url: str | None) -> str:
    url = base_url or os.environ.get("ASKGATE_URL", "")
    if not url:
        raise ValueError("no askgate URL: pass base_url or set ASKGATE_URL")
    return url.rstrip("/")


def api_key_from_env(api_key: str | None) -> str:
    key = api_key or os.environ.get("ASKGATE_API_KEY", "")
    if not key:
        raise ValueError("no askgate API key: pass api_key or set ASKGATE_API_KEY")
    return key


def new_tool_call_id() -> str:
    return "askgate-client-" + uuid.uuid4().hex


def ask_body(
    questions: Sequence[Mapping[str, Any]],
    *,
    session: str,
    timeout_s: int | None,
    tool_call_id: str,
    targets: Sequence[Mapping[str, Any]] | None,
    run_id: str | None,
    agent_id: str | None,
    locale: str | None,
    callback_url: str | None,
    remind: Mapping[str, Any] | None,
    escalate: Sequence[Mapping[str, Any]] | None,
    primary: bool,
) -> dict[str, Any]:
    """The POST /v1/questions body: the tool input with the context beside it. What is
    None is left out, so the server's default applies (for `remind`, the tenant's)."""
    body: dict[str, Any] = {
        # Anything that is not an object is passed on for the API to name in its 422.
        "questions": [dict(q) if isinstance(q, Mapping) else q for q in questions],
        "session": session,
        "tool_call_id": tool_call_id,
    }
    optional: dict[str, Any] = {
        "timeoutSeconds": timeout_s,
        "targets": [dict(t) for t in targets] if targets else None,
        "run_id": run_id,
        "agent_id": agent_id,
        "locale": locale,
        "callback_url": callback_url,
        "remind": dict(remind) if remind is not None else None,
        "escalate": [dict(step) for step in escalate] if escalate else None,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    if not primary:
        body["primary"] = False
    return body


def parse(resp: httpx.Response) -> dict[str, Any]:
    """The JSON body of a 2xx response; any other status raises the mapped ApiError."""
    try:
        body = json.loads(resp.content) if resp.content else {}
    except ValueError:  # not JSON, or not UTF-8
        body = None
    if resp.is_success and isinstance(body, dict):
        return body
    raise api_error(resp.status_code, body)


def retry_after_s(resp: httpx.Response) -> float | None:
    """Retry-After as seconds (delta-seconds or an HTTP date), None when absent or bad."""
    value = resp.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class Retrier:
    """Exponential backoff with jitter over one streak of failures, honouring
    Retry-After; raises ApiUnavailable once the streak outlasts `retry_for_s`."""

    def __init__(self, retry_for_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.retry_for_s = retry_for_s
        self.clock = clock
        self.attempt = 0
        self.since: float | None = None

    def delay_after(self, failure: httpx.Response | Exception) -> float:
        now = self.clock()
        if self.since is None:
            self.since = now
        elapsed = now - self.since
        if elapsed >= self.retry_for_s:
            what = (
                f"HTTP {failure.status_code}"
                if isinstance(failure, httpx.Response)
                else f"{type(failure).__name__}: {failure}"
            )
            raise ApiUnavailable(
                f"askgate API unavailable for {elapsed:.0f}s (last: {what}); giving up"
            )
        backoff = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2.0**self.attempt)
        self.attempt += 1
        delay = backoff * (0.5 + random.random() / 2)
        if isinstance(failure, httpx.Response):
            hinted = retry_after_s(failure)
            if hinted is not None:
                delay = hinted
        return min(delay, max(0.0, self.retry_for_s - elapsed))


def http_timeout(read_s: float) -> httpx.Timeout:
    # No pool timeout: with a bounded pool a call waits for a free connection (held by
    # long-polls) rather than failing with PoolTimeout and retrying as if the API were down.
    return httpx.Timeout(10.0, read=read_s, pool=None)


# Idle connections kept for reuse; beyond them an idle connection closes at once. httpcore
# recounts the whole pool for each idle connection on every request and response, so 100
# idle ones (left by 100 asks or waits that ended together) made it quadratic: a client
# holding 100 waits spent 2.5 CPU-seconds on a round of them, 0.33 with 20 kept.
KEEPALIVE = 20


@functools.cache
def tls() -> ssl.SSLContext:
    """The TLS context every client that builds its own pool shares, made at its first
    use: building one loads the CA bundle (~20-30 ms of CPU, more than an ask costs), so
    an agent that opens a client per task pays that once per process, not per client.
    It is httpx's default (certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR as they were
    then); pass `http=` for any other."""
    return httpx.create_ssl_context()


def pool_limits(max_connections: int | None) -> httpx.Limits:
    """A long-poll holds its connection for up to a minute, so one client holds as many
    connections as it has waits: none are capped unless the caller asks (httpx's default
    of 100 would quietly queue the 101st wait). Up to KEEPALIVE idle ones are kept."""
    return httpx.Limits(
        max_connections=max_connections,
        max_keepalive_connections=KEEPALIVE,
        keepalive_expiry=5.0,
    )
