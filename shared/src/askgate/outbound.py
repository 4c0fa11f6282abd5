"""Outgoing signed POSTs (webhooks, the plain-text channel): the headers, and what an
answer means for a retry. The HTTP client itself belongs to each service (sync in RQ
jobs, async in stream workers).

Signature: `X-Askgate-Signature: v1=<hex HMAC-SHA256(secret, f"{timestamp}." + body)>`
with `X-Askgate-Timestamp: <unix seconds>` (`askgate.signing.webhook_signature`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from askgate.signing import webhook_signature


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


def signed_headers(secret: str, body: bytes, user_agent: str,
                   timestamp: int | None = None) -> dict[str, str]:
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
        return Outcome(ok=False, retry=True, status_code=status_code,
                       retry_after_s=retry_after_s(retry_after))
    # 5xx is the receiver's trouble and may pass; any other answer (3xx, 4xx) is a
    # decision that sending the same request again will not change.
    return Outcome(ok=False, retry=status_code >= 500, status_code=status_code)


def timed_out(exc: Exception) -> Outcome:
    return Outcome(ok=False, retry=True, error=f"timeout: {type(exc).__name__}")


def unreachable(exc: Exception) -> Outcome:
    return Outcome(ok=False, retry=True,
                   error=f"connection error: {str(exc) or type(exc).__name__}")
