"""The platform side: a signed JSON POST to the target's url, with quick retries."""

from __future__ import annotations

import asyncio

import httpx
import orjson
from askgate.outbound import Outcome, classify, signed_headers, timed_out, unreachable

from askgate_text.config import TextSettings

USER_AGENT = "askgate-text/0.1"


class TextClient:
    def __init__(self, settings: TextSettings) -> None:
        self.settings = settings
        self.http = httpx.AsyncClient(timeout=settings.text_timeout_s, follow_redirects=False)

    async def post_once(self, url: str, secret: str, payload: dict[str, object],
                        delivery_id: str) -> Outcome:
        body = orjson.dumps(payload)
        headers = {**signed_headers(secret, body, USER_AGENT), "X-Askgate-Delivery": delivery_id}
        try:
            response = await self.http.post(url, content=body, headers=headers)
        except httpx.TimeoutException as exc:
            return timed_out(exc)
        except httpx.TransportError as exc:
            return unreachable(exc)
        return classify(response.status_code, response.headers.get("Retry-After"))

    async def post(self, url: str, secret: str, payload: dict[str, object],
                   delivery_id: str) -> Outcome:
        """Up to text_attempts POSTs while the answer says another may succeed."""
        s = self.settings
        outcome = await self.post_once(url, secret, payload, delivery_id)
        for n in range(1, s.text_attempts):
            if outcome.ok or not outcome.retry:
                break
            delay = s.text_backoff_s * 2 ** (n - 1)
            if outcome.retry_after_s is not None:
                if outcome.retry_after_s > s.text_backoff_max_s:
                    break  # longer than a worker should hold an event: the next round
                delay = outcome.retry_after_s
            await asyncio.sleep(min(delay, s.text_backoff_max_s))
            outcome = await self.post_once(url, secret, payload, delivery_id)
        return outcome

    async def aclose(self) -> None:
        await self.http.aclose()
