"""The platform side: one signed JSON POST to a target's url, its answer as the kit's
errors (4xx: permanent; 5xx, 429, timeouts, dropped connections: transient)."""

from __future__ import annotations

import httpx
import orjson
from askgate.errors import PermanentError, ThrottledError, TransientError
from askgate.outbound import classify, signed_headers

from askgate_text.config import TextSettings

USER_AGENT = "askgate-text/0.1"


class TextClient:
    def __init__(self, settings: TextSettings) -> None:
        self.http = httpx.AsyncClient(timeout=settings.text_timeout_s, follow_redirects=False)

    async def post(self, url: str, secret: str, payload: dict[str, object],
                   delivery_id: str) -> int:
        """POST once; the status code, or the kit's error for the answer."""
        body = orjson.dumps(payload)
        headers = {**signed_headers(secret, body, USER_AGENT), "X-Askgate-Delivery": delivery_id}
        try:
            response = await self.http.post(url, content=body, headers=headers)
        except httpx.TimeoutException as exc:
            # The platform may have the message: it dedupes by X-Askgate-Delivery.
            raise TransientError(f"timeout: {type(exc).__name__}", maybe_sent=True) from exc
        except httpx.TransportError as exc:
            raise TransientError(f"connection error: {str(exc) or type(exc).__name__}",
                                 maybe_sent=True) from exc
        outcome = classify(response.status_code, response.headers.get("Retry-After"))
        if outcome.ok:
            return response.status_code
        if outcome.status_code == 429:
            raise ThrottledError(outcome.describe(), outcome.retry_after_s or 1.0)
        if outcome.retry:
            raise TransientError(outcome.describe())
        raise PermanentError(outcome.describe())

    async def aclose(self) -> None:
        await self.http.aclose()
