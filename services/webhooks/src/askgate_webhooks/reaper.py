"""Deliveries a dead worker abandoned: retried, counted, and ended delivered or dead.

A worker killed mid-POST (kill -9, a lost host) leaves its attempt claimed with a lease
that nobody renews, and its RQ job in RQ's started registry, where RQ alone would not run
it again. A delivery whose next attempt was scheduled but whose job is gone (a worker
died between recording the outcome and scheduling the retry) waits for nobody. Both
stay in the shard's due set past their score (state.py), and this reaper, run by the
webhooks service beside its stream consumer, takes them up:

- a running attempt whose lease ran out is recorded as `interrupted` (an attempt like
  any other: it counts toward webhook_max_attempts and is listed), and attempt n+1 is
  queued at once, or the delivery is a dead letter when it was the last;
- a delivery whose next attempt never started gets that attempt's job enqueued again,
  under a fresh id when the old job is stuck; the claim's compare-and-set keeps a
  second job for the same attempt from posting.
"""

from __future__ import annotations

import asyncio

import structlog
from askgate.domain.timeutil import now_ms
from askgate.runtime.outbound import Outcome
from askgate.store import keys
from askgate.store.conn import SyncClient
from askgate.store.webhooks import WebhookState, parse_delivery
from redis import Redis
from rq import Queue

from askgate_webhooks import jobs
from askgate_webhooks.config import WebhookSettings

log = structlog.get_logger("askgate.webhooks")

# What the tenant sees for an attempt whose worker stopped before it got an answer.
INTERRUPTED = "interrupted"
# How often the reaper looks; an abandoned attempt waits its lease plus at most this.
REAP_EVERY_S = 1.0


def reap_once(
    redis: SyncClient,
    s: WebhookSettings,
    now: int | None = None,
    *,
    jobs_redis: Redis | None = None,
) -> dict[str, int]:
    """Take up every overdue delivery of every shard once; counts by what was done.
    `redis` holds the questions, `jobs_redis` (default: the same) RQ's queue."""
    now = now_ms() if now is None else now
    state = WebhookState(redis, s.webhook_dead_maxlen)
    rq_redis = jobs_redis if jobs_redis is not None else redis
    done: dict[str, int] = {}
    for shard in range(keys.SHARDS):
        for delivery in state.overdue(shard, now):
            what = reap(redis, s, state, delivery, now, rq_redis)
            done[what] = done.get(what, 0) + 1
    return done


def reap(
    redis: SyncClient,
    s: WebhookSettings,
    state: WebhookState,
    delivery: str,
    now: int,
    jobs_redis: Redis,
) -> str:
    """One overdue delivery (a question's result, or one of its late answers)."""
    cur = state.read(delivery)
    if cur is None or cur.doc.get("status") != "pending":
        # Gone past its retention, or finished: nothing is owed.
        state.forget(delivery)
        return "finished"
    if cur.lease:
        if cur.lease_deadline_ms > now:
            return "running"
        return _interrupted(redis, s, state, delivery, cur.claimed, cur.lease, cur.doc, jobs_redis)
    next_attempt = cur.claimed + 1
    if state.reschedule(delivery, cur.claimed, now + jobs.lease_ms(s)) != "ok":
        return "raced"  # an attempt was claimed meanwhile: it is running after all
    if not _ensure_job(jobs_redis, s, delivery, next_attempt):
        return "waiting"  # its job is queued or scheduled: no worker has taken it yet
    log.warning("webhook.reenqueued", delivery=delivery, attempt=next_attempt)
    return "reenqueued"


def _interrupted(
    redis: SyncClient,
    s: WebhookSettings,
    state: WebhookState,
    delivery: str,
    attempt: int,
    lease: str,
    prior: dict[str, object],
    jobs_redis: Redis,
) -> str:
    question_id, _ = parse_delivery(delivery)
    rec = state.load(question_id)
    tenant = rec.tenant if rec else ""
    url = (rec.callback_url or "") if rec else ""
    log.warning("webhook.interrupted", question_id=question_id, attempt=attempt)
    # Retried at once: the receiver did nothing wrong, and a queued job needs no scheduler.
    outcome = Outcome(ok=False, retry=True, error=INTERRUPTED, retry_after_s=0.0)
    verdict = jobs.conclude(
        redis,
        s,
        state,
        delivery,
        attempt,
        lease,
        dict(prior),
        outcome,
        tenant,
        url,
        jobs_redis=jobs_redis,
    )
    return "dead" if verdict == "failed" else "interrupted"


def _ensure_job(redis: Redis, s: WebhookSettings, delivery: str, attempt: int) -> bool:
    """Attempt n's job will run: it waits in the queue for a free worker (False), or a job
    for it is enqueued now (True).

    Only a place in the queue's list counts as waiting. A job whose status says queued
    may have been taken by a worker that died before it started (RQ keeps it in that
    worker's intermediate queue), and a scheduled one is a lease past its time, so its
    scheduler is gone (RQ's scheduler lock outlives a killed scheduler by minutes)."""
    if jobs.enqueue(redis, s, delivery, attempt):
        return True
    queue = Queue(keys.WEBHOOK_QUEUE, connection=redis)
    if queue.get_job_position(jobs.job_id(delivery, attempt)) is not None:
        return False
    return jobs.enqueue(redis, s, delivery, attempt, fresh_id=True)


async def reap_forever(
    redis: SyncClient, s: WebhookSettings, stop: asyncio.Event, *, jobs_redis: Redis | None = None
) -> None:
    """reap_once every REAP_EVERY_S until stop (in a thread: RQ and the client are sync)."""
    while not stop.is_set():
        try:
            done = await asyncio.to_thread(lambda: reap_once(redis, s, jobs_redis=jobs_redis))
            if set(done) - {"running", "waiting"}:
                log.info("webhook.reaped", **done)
        except Exception as exc:  # Redis away: the next round tries again
            log.warning("webhook.reap_failed", error=str(exc))
        try:
            await asyncio.wait_for(stop.wait(), REAP_EVERY_S)
        except TimeoutError:
            pass
