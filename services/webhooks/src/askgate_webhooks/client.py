"""The signed POST of one attempt (sync: it runs in RQ jobs)."""

from __future__ import annotations

import httpx
from askgate.outbound import Outcome, classify, signed_headers, timed_out, unreachable

USER_AGENT = "askgate-webhooks/0.1"


def post(client: httpx.Client, url: str, secret: str, body: bytes,
         extra_headers: dict[str, str] | None = None) -> Outcome:
    headers = {**signed_headers(secret, body, USER_AGENT), **(extra_headers or {})}
    try:
        response = client.post(url, content=body, headers=headers)
    except httpx.TimeoutException as exc:
        return timed_out(exc)
    except httpx.TransportError as exc:
        return unreachable(exc)
    return classify(response.status_code, response.headers.get("Retry-After"))
