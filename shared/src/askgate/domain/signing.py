"""HMAC signatures askgate makes and checks: Control UI links and outgoing webhooks."""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import quote


def _mac(secret: str, message: str) -> str:
    return hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()


def session_link_sig(secret: str, tenant: str, session: str, exp: int) -> str:
    return _mac(secret, f"web\n{tenant}\n{session}\n{exp}")[:32]


def session_link(base_url: str, secret: str, tenant: str, session: str, ttl_s: int) -> str:
    """The signed Control UI link for one session, valid for ttl_s seconds."""
    # Rounded to the hour so every ask of a session within the hour returns one link.
    exp = (int(time.time()) // 3600 + 1) * 3600 + ttl_s
    sig = session_link_sig(secret, tenant, session, exp)
    return f"{base_url.rstrip('/')}/s/{tenant}/{quote(session, safe='')}?exp={exp}&sig={sig}"


def verify_session_link(secret: str, tenant: str, session: str, exp: str, sig: str) -> bool:
    # isdigit() is true for "²", which int() refuses; and a 5,000-digit exp is not a time.
    if not (exp.isascii() and exp.isdigit()) or len(exp) > 12 or int(exp) < time.time():
        return False
    return hmac.compare_digest(session_link_sig(secret, tenant, session, int(exp)), sig)


def operator_link_sig(secret: str, tenant: str, exp: int) -> str:
    return _mac(secret, f"operator\n{tenant}\n{exp}")[:32]


def operator_link(base_url: str, secret: str, tenant: str, ttl_s: int) -> str:
    """The signed link to a tenant's operator page (every pending question, live), valid
    for ttl_s seconds. It shows every session of the tenant: hand it to operators only."""
    exp = int(time.time()) + ttl_s
    sig = operator_link_sig(secret, tenant, exp)
    return f"{base_url.rstrip('/')}/t/{quote(tenant, safe='')}?exp={exp}&sig={sig}"


def verify_operator_link(secret: str, tenant: str, exp: str, sig: str) -> bool:
    if not exp.isdigit() or int(exp) < time.time():
        return False
    return hmac.compare_digest(operator_link_sig(secret, tenant, int(exp)), sig)


def webhook_signature(secret: str, timestamp: int, body: bytes) -> str:
    """`X-Askgate-Signature`: v1= hex HMAC-SHA256 over b"<timestamp>." + body."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()
