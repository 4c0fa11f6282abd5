"""The stream side: `question.resolved` (and each `question.late_answer`) on the
`webhook` channel → the first RQ job of that delivery.

An entry is acknowledged (by the consumer loop) only after the job is enqueued. A
re-processed entry finds the delivery already begun (`wh:n` set) and the job id taken,
so it enqueues nothing twice.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from askgate.domain.events import QuestionLateAnswer, QuestionResolved
from askgate.domain.timeutil import iso, now_ms
from askgate.runtime.consumer import Event
from askgate.store.webhooks import WebhookState, delivery_key, parse_delivery
from redis import Redis

from askgate_webhooks import jobs
from askgate_webhooks.config import WebhookSettings

log = structlog.get_logger("askgate.webhooks")
CHANNEL = "webhook"


class WebhookEnqueuer:
    """`handle(event)` for the StreamConsumer. RQ is synchronous, so the Redis round trips
    of one enqueue run in a thread with their own (sync) clients: `sync_redis` for the
    question, `jobs_redis` for RQ's queue (the same Redis unless clustered)."""

    def __init__(
        self, sync_redis: Redis, settings: WebhookSettings, jobs_redis: Redis | None = None
    ) -> None:
        self.redis = sync_redis
        self.jobs_redis = jobs_redis if jobs_redis is not None else sync_redis
        self.settings = settings
        self.state = WebhookState(sync_redis, settings.webhook_dead_maxlen)

    async def handle(self, event: Event) -> None:
        payload = event.payload
        if isinstance(payload, QuestionResolved):
            await asyncio.to_thread(self.start, delivery_key(event.question_id))
        elif isinstance(payload, QuestionLateAnswer):
            await asyncio.to_thread(self.start, delivery_key(event.question_id, payload.n))
        # Nothing else is delivered.

    def start(self, delivery: str) -> None:
        """Begin one delivery chain: a question's result, or one of its late answers."""
        question_id, _ = parse_delivery(delivery)
        if not self.state.wants_webhook(question_id):
            return  # the question is gone (past its retention) or has no callback_url
        doc: dict[str, Any] = {
            "status": "pending",
            "attempts": [],
            "next_attempt_at": iso(now_ms()),
        }
        began = self.state.begin(delivery, doc, now_ms() + jobs.lease_ms(self.settings))
        # Attempt 1 not claimed yet: this is the first processing, or a crash came
        # between `begin` and the enqueue. Either way the unique job id decides.
        if self.state.claimed(delivery) == 0 and jobs.enqueue(
            self.jobs_redis, self.settings, delivery, 1
        ):
            log.info("webhook.enqueued", delivery=delivery, first=began == "ok")
