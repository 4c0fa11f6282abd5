"""Checking a webhook askgate POSTed to your `callback_url` before trusting its body."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping


def verify_webhook(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    tolerance_s: int = 300,
    now: float | None = None,
) -> bool:
    """True when `body` was signed with your tenant's webhook secret no more than
    `tolerance_s` ago: `X-Askgate-Signature: v1=<hex HMAC-SHA256(secret, "<ts>." + body)>`
    over `X-Askgate-Timestamp: <ts>`. Pass the raw body, before any JSON parsing; header
    names are matched without regard to case."""
    lower = {k.lower(): v for k, v in headers.items()}
    timestamp = lower.get("x-askgate-timestamp", "")
    signature = lower.get("x-askgate-signature", "")
    if not timestamp.isdigit() or not signature:
        return False
    clock = time.time() if now is None else now
    if abs(clock - int(timestamp)) > tolerance_s:
        return False
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest("v1=" + mac.hexdigest(), signature)
