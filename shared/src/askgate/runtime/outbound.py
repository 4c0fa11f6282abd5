"""Outgoing signed POSTs (webhooks, the plain-text channel): the headers, the POST to a
checked address (askgate.domain.netguard), and what an answer means for a retry. The HTTP
client itself belongs to each service (sync in RQ jobs, async in stream workers) and
never follows redirects.

Signature: `X-Askgate-Signature: v1=<hex HMAC-SHA256(secret, f"{timestamp}." + body)>`
with `X-Askgate-Timestamp: <unix seconds>` (`askgate.domain.signing.webhook_signature`).

A tenant sees only a coarse class of failure (`timeout`, `connection failed`, `HTTP 503`,
`refused: address not allowed`) in `webhook.attempts` and `deliveries`: the raw error
would tell what answers inside the network. The raw error goes to the service's log.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

import httpx
import structlog

from askgate.domain import netguard
from askgate.domain.signing import webhook_signature

log = structlog.get_logger("askgate.outbound")
TIMEOUT = "timeout"
CONNECTION_FAILED = "connection failed"


@dataclass(frozen=True)
class Outcome:
    """One attempt: `ok` (2xx); otherwise `retry` says whether another may succeed."""

    ok: bool
    retry: bool
    status_code: int | None = None
    error: str | None = None
    retry_after_s: float | None = None

    def describe(self) -> str:
        return self.error or f"HTTP {self.status_code}"


def signed_headers(
    secret: str, body: bytes, user_agent: str, timestamp: int | None = None
) -> dict[str, str]:
    ts = int(time.time()) if timestamp is None else timestamp
    return {
        "Content-Type": "application/json",
        "User-Agent": user_agent,
        "X-Askgate-Timestamp": str(ts),
        "X-Askgate-Signature": webhook_signature(secret, ts, body),
    }


def retry_after_s(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def classify(status_code: int, retry_after: str | None = None) -> Outcome:
    if 200 <= status_code < 300:
        return Outcome(ok=True, retry=False, status_code=status_code)
    if status_code == 429:
        return Outcome(
            ok=False, retry=True, status_code=status_code, retry_after_s=retry_after_s(retry_after)
        )
    # 5xx is the receiver's trouble and may pass; any other answer (3xx, 4xx) is a
    # decision that sending the same request again will not change.
    return Outcome(ok=False, retry=status_code >= 500, status_code=status_code)


def timed_out(exc: Exception) -> Outcome:
    return Outcome(ok=False, retry=True, error=TIMEOUT)


def unreachable(exc: Exception) -> Outcome:
    return Outcome(ok=False, retry=True, error=CONNECTION_FAILED)


def refused() -> Outcome:
    """The URL's host is (now) an address the policy refuses: not worth a retry."""
    return Outcome(ok=False, retry=False, error=netguard.REFUSED)


def _failed(url: str, exc: Exception) -> Outcome:
    log.info(
        "outbound.failed", host=httpx.URL(url).host, error_type=type(exc).__name__, error=str(exc)
    )
    return timed_out(exc) if isinstance(exc, httpx.TimeoutException) else unreachable(exc)


def _refused(url: str, exc: netguard.Refused) -> Outcome:
    log.warning("outbound.refused", host=httpx.URL(url).host, detail=exc.detail)
    return refused()


def post_sync(
    client: httpx.Client,
    url: str,
    headers: dict[str, str],
    body: bytes,
    policy: netguard.Policy,
    resolver: netguard.SyncResolver,
) -> Outcome:
    """POST to `url`, re-checked now and connected to a checked address (the next one
    when a connection fails); the outcome of the last try."""
    try:
        target = netguard.check_sync(url, policy, resolver)
    except netguard.Refused as exc:
        return _refused(url, exc)
    except netguard.Unresolved as exc:
        return _failed(url, exc)
    outcome = Outcome(ok=False, retry=True, error=CONNECTION_FAILED)
    for address in target.addresses:
        pinned, host, extensions = target.pinned(address)
        try:
            response = client.post(
                pinned, content=body, headers={**headers, **host}, extensions=extensions
            )
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            outcome = _failed(url, exc)
            continue
        except httpx.TransportError as exc:
            return _failed(url, exc)
        return classify(response.status_code, response.headers.get("Retry-After"))
    return outcome


async def post_async(
    client: httpx.AsyncClient,
    url: str,
    headers: dict[str, str],
    body: bytes,
    policy: netguard.Policy,
    resolver: netguard.Resolver,
) -> Outcome:
    """`post_sync` for asyncio code (the channel workers)."""
    try:
        target = await netguard.check(url, policy, resolver)
    except netguard.Refused as exc:
        return _refused(url, exc)
    except netguard.Unresolved as exc:
        return _failed(url, exc)
    outcome = Outcome(ok=False, retry=True, error=CONNECTION_FAILED)
    for address in target.addresses:
        pinned, host, extensions = target.pinned(address)
        try:
            response = await client.post(
                pinned, content=body, headers={**headers, **host}, extensions=extensions
            )
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            outcome = _failed(url, exc)
            continue
        except httpx.TransportError as exc:
            return _failed(url, exc)
        return classify(response.status_code, response.headers.get("Retry-After"))
    return outcome
