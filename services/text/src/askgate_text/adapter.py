"""The plain-text channel as a kit adapter: a signed POST of the prompt to the target's
url, and one of the summary when the question ends. Resending after a crash is safe:
every POST carries `X-Askgate-Delivery: <question>:<target>:<kind>`, by which the
platform drops a repeat.

The human's replies do not come through here: the platform POSTs them to the API
(`POST /v1/sessions/{session}/messages`).
"""

from __future__ import annotations

from typing import Any

from askgate.channels import PermanentError, SentPrompt, StalePolicy
from askgate.domain.models import Target, TextTarget
from askgate.store.record import Record
from askgate.store.tenants import load_tenant
from redis.asyncio import Redis

from askgate_text.client import TextClient
from askgate_text.render import question_payload, reminder_payload, summary_payload

CHANNEL = "text"


class TextAdapter:
    channel = CHANNEL
    stale_policy = StalePolicy.RESEND

    def __init__(self, redis: Redis, client: TextClient) -> None:
        self.redis = redis
        self.client = client

    def destination(self, rec: Record, target: Target) -> str:
        assert isinstance(target, TextTarget)
        return str(target.url)

    async def _secret(self, tenant_id: str) -> str:
        tenant = await load_tenant(self.redis, tenant_id)
        if tenant is None:
            raise PermanentError("tenant not found")
        return tenant.webhook_secret

    async def send_prompt(self, rec: Record, index: int, target: Target) -> SentPrompt:
        url = self.destination(rec, target)
        status = await self.client.post(
            url,
            await self._secret(rec.tenant),
            question_payload(rec),
            f"{rec.id}:{index}:question",
            tenant=rec.tenant,
        )
        return SentPrompt(ref={"status_code": status})

    async def finalise(self, rec: Record, index: int, target: Target, ref: dict[str, Any]) -> None:
        await self.client.post(
            self.destination(rec, target),
            await self._secret(rec.tenant),
            summary_payload(rec),
            f"{rec.id}:{index}:summary",
            tenant=rec.tenant,
        )

    async def send_reminder(
        self, rec: Record, index: int, target: Target, ref: dict[str, Any], text: str, n: int
    ) -> SentPrompt | None:
        await self.client.post(
            self.destination(rec, target),
            await self._secret(rec.tenant),
            reminder_payload(rec, text, n),
            f"{rec.id}:{index}:reminder:{n}",
            tenant=rec.tenant,
        )
        return None  # nothing to tidy: the platform shows what it was sent
