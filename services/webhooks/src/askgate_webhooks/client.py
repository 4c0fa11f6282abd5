"""The signed POST and what its outcome means for a retry (sync: it runs in RQ jobs)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

import httpx

from askgate.signing import webhook_signature

USER_AGENT = "askgate-webhooks/0.1"


@dataclass(frozen=True)
class Outcome:
    """One attempt: `ok` (2xx), else `retry` says whether another attempt may succeed."""

    ok: bool
    retry: bool
    status_code: int | None = None
    error: str | None = None
    retry_after_s: float | None = None


def signed_headers(secret: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    ts = int(time.time()) if timestamp is None else timestamp
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
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


def classify(response: httpx.Response) -> Outcome:
    code = response.status_code
    if 200 <= code < 300:
        return Outcome(ok=True, retry=False, status_code=code)
    if code == 429:
        return Outcome(ok=False, retry=True, status_code=code,
                       retry_after_s=retry_after_s(response.headers.get("Retry-After")))
    # 5xx is the receiver's trouble and may pass; any other answer (3xx, 4xx) is a
    # decision that repeating the same request will not change.
    return Outcome(ok=False, retry=code >= 500, status_code=code)


def post(client: httpx.Client, url: str, secret: str, body: bytes,
         extra_headers: dict[str, str] | None = None) -> Outcome:
    headers = {**signed_headers(secret, body), **(extra_headers or {})}
    try:
        response = client.post(url, content=body, headers=headers)
    except httpx.TimeoutException as exc:
        return Outcome(ok=False, retry=True, error=f"timeout: {type(exc).__name__}")
    except httpx.TransportError as exc:
        return Outcome(ok=False, retry=True,
                       error=f"connection error: {exc or type(exc).__name__}")
    return classify(response)
