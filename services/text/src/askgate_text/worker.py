"""Consume `events:text`: POST each prompt to its target's url, then the summary.

Per target the delivery state is a compare-and-set (`Store.set_delivery`): a prompt is
claimed pending → sending, then delivered or failed, so a re-processed entry never posts
the same prompt twice. A 4xx from the platform is permanent (failed; when every target
failed the question ends as delivery_failed). A 5xx, 429, timeout or connection error is
retried a few times at once (`TextClient.post`); if it still fails, the target goes back
to pending and the handler raises, so the entry stays unacknowledged and the consumer
reclaims it later (`consumer_claim_idle_ms`). After `text_rounds` such rounds the target
is failed. Why not retry forever: a platform that stays down should end the question
(delivery_failed) rather than leave the agent waiting for a human who never saw it.

The human's replies do not come through here: the platform POSTs them to the API
(`POST /v1/sessions/{session}/messages`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
import structlog
from askgate.consumer import Event, RetryLater
from askgate.outbound import Outcome
from askgate.record import Record
from askgate.status import Status
from askgate.store import Store
from askgate.tenants import load_tenant
from askgate.timeutil import now_ms

from askgate_text.client import TextClient
from askgate_text.config import TextSettings
from askgate_text.render import question_payload, summary_payload

log = structlog.get_logger("askgate.text")
CHANNEL = "text"


def text_targets(rec: Record) -> list[tuple[int, str]]:
    return [(i, str(tg["url"])) for i, tg in enumerate(rec.targets) if tg["channel"] == CHANNEL]


def delivery_doc(rec: Record, index: int) -> dict[str, Any]:
    raw = rec.f.get(f"d:{index}")
    return dict(orjson.loads(raw)) if raw else {}


class TextWorker:
    def __init__(self, store: Store, client: TextClient, settings: TextSettings) -> None:
        self.store = store
        self.client = client
        self.settings = settings
        # A 'sending' claim older than the longest handling was left by a dead worker.
        self.stale_ms = int(
            (settings.text_timeout_s + settings.text_backoff_max_s) * settings.text_attempts
            * 1000 + 5000
        )

    async def handle(self, event: Event) -> None:
        rec = await self.store.load(event.question_id)
        if rec is None:
            return  # past its retention: nothing left to show
        if event.type == "question.created":
            await self.deliver_prompts(rec)
        elif event.type == "question.resolved":
            await self.send_summaries(rec)

    async def _secret(self, tenant_id: str) -> str | None:
        tenant = await load_tenant(self.store.redis, tenant_id)
        return tenant.webhook_secret if tenant else None

    async def deliver_prompts(self, rec: Record) -> None:
        if rec.status != Status.PENDING:
            return  # ended before it could be shown (a retry that came too late)
        targets = text_targets(rec)
        if not targets:
            return
        secret = await self._secret(rec.tenant)
        later = [i for i, url in targets if not await self.deliver_prompt(rec, i, url, secret)]
        if later:
            raise RetryLater(f"{rec.id}: text targets {later} will be retried")

    async def _claim(self, rec: Record, index: int, ref: dict[str, Any]) -> str:
        """'ok' when this worker may send, 'done' when another handling finished it,
        'busy' when a live worker is sending it."""
        state, cur = await self.store.set_delivery(rec.id, index, "sending", expect="pending",
                                                   ref=ref)
        if state == "ok":
            return "ok"
        if state == "missing" or cur in ("delivered", "failed"):
            return "done"
        at = delivery_doc(rec, index).get("at")
        claimed_ms = int(datetime.fromisoformat(at).timestamp() * 1000) if at else 0
        if now_ms() - claimed_ms < self.stale_ms:
            return "busy"
        state, _ = await self.store.set_delivery(rec.id, index, "sending", expect="sending",
                                                 ref=ref)
        return "ok" if state == "ok" else "busy"

    async def deliver_prompt(self, rec: Record, index: int, url: str, secret: str | None) -> bool:
        """True when the target is settled (delivered or failed), False to retry later."""
        bound = log.bind(question_id=rec.id, tenant=rec.tenant, channel=CHANNEL, target=index)
        rounds = int((delivery_doc(rec, index).get("ref") or {}).get("rounds", 0))
        claim = await self._claim(rec, index, {"rounds": rounds})
        if claim != "ok":
            return claim == "done"
        if secret is None:
            outcome = Outcome(ok=False, retry=False, error="tenant not found")
        else:
            outcome = await self.client.post(url, secret, question_payload(rec),
                                             f"{rec.id}:{index}:question")
        if outcome.ok:
            await self.store.set_delivery(rec.id, index, "delivered", expect="sending",
                                          ref={"status_code": outcome.status_code})
            bound.info("text.delivered")
            return True
        rounds += 1
        if outcome.retry and rounds < self.settings.text_rounds:
            await self.store.set_delivery(rec.id, index, "pending", expect="sending",
                                          error=outcome.describe(), ref={"rounds": rounds})
            bound.warning("text.retry_later", error=outcome.describe(), rounds=rounds)
            return False
        _, ended = await self.store.set_delivery(rec.id, index, "failed", expect="sending",
                                                 error=outcome.describe())
        bound.warning("text.failed", error=outcome.describe(), question_ended=ended == "1")
        return True

    async def send_summaries(self, rec: Record) -> None:
        sent = [(i, url) for i, url in text_targets(rec) if rec.f.get(f"ds:{i}") == "delivered"]
        if not sent:
            return
        secret = await self._secret(rec.tenant)
        later = []
        for index, url in sent:
            ref = dict(delivery_doc(rec, index).get("ref") or {})
            if ref.get("summary") or secret is None:
                continue  # already sent (a re-processed entry), or nobody to sign for
            outcome = await self.client.post(url, secret, summary_payload(rec),
                                             f"{rec.id}:{index}:summary")
            if not outcome.ok and outcome.retry:
                later.append(index)
                continue
            ref["summary"] = "sent" if outcome.ok else "failed"
            await self.store.set_delivery(rec.id, index, "delivered", expect="delivered",
                                          error=None if outcome.ok else outcome.describe(),
                                          ref=ref)
            log.info("text.summary", question_id=rec.id, target=index, outcome=ref["summary"])
        if later:
            raise RetryLater(f"{rec.id}: summaries for targets {later} will be retried")
