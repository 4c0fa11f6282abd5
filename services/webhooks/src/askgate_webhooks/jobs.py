"""The RQ job: one delivery attempt of a final result (or of a late answer: a delivery
`<id>|late:<n>`, see askgate.store.webhooks.delivery_key) to its callback_url.

Attempt n claims itself on the question with a lease (`WebhookState.claim`),
POSTs the signed body, records the outcome in the question's `webhook` field, and then
either stops (delivered; or a permanent failure / the last attempt, which is also written
to the dead-letter stream) or schedules attempt n+1 after the backoff with RQ's
scheduler. Job ids are deterministic (`webhook-<question id>-<n>`) and enqueued unique,
so one attempt is one job; the reaper (reaper.py) enqueues a job again only when the one
that should have run is gone, and the claim keeps any duplicate from posting.

RQ stops a job after `job_timeout_s`; the lease outlives that by LEASE_SLACK_S, so a
lease that runs out means the worker is gone (killed, lost its host), not slow.
"""

from __future__ import annotations

import math
import secrets
from datetime import timedelta
from typing import Any

import httpx
import orjson
import structlog
from askgate.domain import netguard
from askgate.domain.timeutil import iso, now_ms
from askgate.runtime.outbound import Outcome
from askgate.settings import load
from askgate.store import keys
from askgate.store.conn import SyncClient, connect_sync
from askgate.store.record import Record
from askgate.store.tenants import webhook_settings
from askgate.store.webhooks import WebhookState, new_lease, parse_delivery
from redis import Redis
from rq import Queue, get_current_job
from rq.exceptions import DuplicateJobError

from askgate_webhooks.client import post
from askgate_webhooks.config import WebhookSettings
from askgate_webhooks.render import late_body, result_body

log = structlog.get_logger("askgate.webhooks")

_settings: WebhookSettings | None = None
# One HTTP client per worker process: building its TLS context costs more than a POST.
_client: httpx.Client | None = None
# The questions' Redis when it is not RQ's own (a cluster): one client per process and URL.
_stores: dict[str, SyncClient] = {}
_resolver: netguard.SyncResolver = netguard.system_resolver_sync


def configure(
    settings: WebhookSettings, resolver: netguard.SyncResolver = netguard.system_resolver_sync
) -> None:
    """The worker process sets its settings once; a bare `rq worker` loads them lazily."""
    global _settings, _resolver
    _settings = settings
    _resolver = resolver


def settings() -> WebhookSettings:
    global _settings
    if _settings is None:
        _settings = load(WebhookSettings)
    return _settings


def http_client(s: WebhookSettings) -> httpx.Client:
    global _client
    if _client is None:
        _client = httpx.Client(timeout=s.webhook_timeout_s, follow_redirects=False)
    return _client


def store_redis(s: WebhookSettings, jobs_redis: Redis) -> SyncClient:
    """Where the questions live: RQ's own connection when that is REDIS_URL, else a
    client of REDIS_URL (a cluster's, when clustered)."""
    if not s.redis_cluster and s.jobs_redis() == s.redis_url:
        return jobs_redis
    if s.redis_url not in _stores:
        _stores[s.redis_url] = connect_sync(s.redis_url, cluster=s.redis_cluster)
    return _stores[s.redis_url]


def close_stores() -> None:
    """Close the clients store_redis() opened (a worker on its way out, tests)."""
    while _stores:
        _stores.popitem()[1].close()


# Beyond RQ's job timeout, how long a claimed attempt's lease lasts before the reaper
# treats its worker as dead (Redis round trips, a clock a little off between hosts).
LEASE_SLACK_S = 3


def job_id(delivery: str, attempt: int) -> str:
    # RQ takes letters, digits, _ and - only: late answer n is spelled `late<n>`.
    question_id, late = parse_delivery(delivery)
    if late is None:
        return f"webhook-{question_id}-{attempt}"
    return f"webhook-{question_id}-late{late}-{attempt}"


def job_timeout_s(s: WebhookSettings) -> int:
    """How long RQ lets one attempt run: resolve, connect, send and read each get up to
    webhook_timeout_s from httpx; twice that plus a little covers a slow but honest one."""
    return math.ceil(s.webhook_timeout_s * 2) + 2


def lease_ms(s: WebhookSettings) -> int:
    return (job_timeout_s(s) + LEASE_SLACK_S) * 1000


def backoff_s(s: WebhookSettings, attempt: int, outcome: Outcome) -> float:
    """The wait before attempt+1: Retry-After when the receiver gave one, else doubling."""
    if outcome.retry_after_s is not None:
        return min(s.webhook_backoff_max_s, outcome.retry_after_s)
    return min(s.webhook_backoff_max_s, s.webhook_backoff_s * 2.0 ** (attempt - 1))


def enqueue(
    redis: Redis,
    s: WebhookSettings,
    delivery: str,
    attempt: int,
    delay_s: float = 0.0,
    *,
    fresh_id: bool = False,
) -> bool:
    """Enqueue attempt n of a delivery (after delay_s) on RQ's Redis; False when that job
    already exists. fresh_id: under a new id, for when the job of that id is stuck (its
    worker died with it)."""
    queue = Queue(keys.WEBHOOK_QUEUE, connection=redis)
    jid = job_id(delivery, attempt)
    opts: dict[str, Any] = {
        "job_id": f"{jid}-{secrets.token_hex(4)}" if fresh_id else jid,
        "unique": True,
        "job_timeout": job_timeout_s(s),
        "result_ttl": 3600,
        "failure_ttl": 7 * 86400,
        "description": f"webhook {delivery} attempt {attempt}",
    }
    try:
        if delay_s > 0:
            queue.enqueue_in(timedelta(seconds=delay_s), deliver, delivery, attempt, **opts)
        else:
            queue.enqueue(deliver, delivery, attempt, **opts)
    except DuplicateJobError:
        return False
    return True


def deliver(delivery: str, attempt: int) -> str:
    """The job RQ runs. Returns what happened, for RQ's job result."""
    job = get_current_job()
    assert job is not None, "deliver runs as an RQ job"
    s = settings()
    return attempt_delivery(
        store_redis(s, job.connection), s, delivery, attempt, jobs_redis=job.connection
    )


def body_of(rec: Record, late: int | None) -> tuple[bytes, str] | None:
    """What a delivery POSTs, and its event: the result, or late answer n (None when it
    is not there)."""
    if late is None:
        return result_body(rec), "question.resolved"
    answers = rec.late_answers()
    if late >= len(answers):
        return None
    answer = {k: v for k, v in answers[late].items() if k != "webhook"}
    return late_body(rec, late, answer), "question.late_answer"


def attempt_delivery(
    redis: SyncClient,
    s: WebhookSettings,
    delivery: str,
    attempt: int,
    *,
    jobs_redis: Redis | None = None,
    resolver: netguard.SyncResolver | None = None,
) -> str:
    """Run attempt n of a delivery (a question id: its result; `<id>|late:<n>`: a late
    answer): `redis` holds the question, `jobs_redis` (default: the same) RQ's queue for
    the retry; `resolver` looks up the callback's host (the machine's)."""
    state = WebhookState(redis, s.webhook_dead_maxlen)
    question_id, late = parse_delivery(delivery)
    bound = log.bind(question_id=question_id, attempt=attempt, late=late)
    until = now_ms() + lease_ms(s)
    lease = new_lease(until)
    if not state.claim(delivery, attempt, lease, until):
        bound.info("webhook.skipped", why="already attempted or question gone")
        return "skipped"
    rec = state.load(question_id)
    what = body_of(rec, late) if rec is not None else None
    if rec is None or what is None:  # expired between the claim and now
        return "skipped"
    body, event = what
    bound = bound.bind(tenant=rec.tenant)
    url = rec.callback_url or ""
    secret, allow = webhook_settings(redis, rec.tenant)
    if secret is None:
        outcome = Outcome(ok=False, retry=False, error="tenant not found")
    else:
        policy = s.outbound_policy().with_allowed(netguard.parse_cidrs(allow))
        outcome = post(
            http_client(s),
            url,
            secret,
            body,
            {"X-Askgate-Attempt": str(attempt), "X-Askgate-Event": event},
            policy=policy,
            resolver=resolver or _resolver,
        )

    prior = rec.webhook_doc(late)
    return conclude(
        redis,
        s,
        state,
        delivery,
        attempt,
        lease,
        prior,
        outcome,
        rec.tenant,
        url,
        jobs_redis=jobs_redis,
    )


def conclude(
    redis: SyncClient,
    s: WebhookSettings,
    state: WebhookState,
    delivery: str,
    attempt: int,
    lease: str,
    prior: dict[str, Any],
    outcome: Outcome,
    tenant: str,
    url: str,
    *,
    jobs_redis: Redis | None = None,
) -> str:
    """Record attempt n's outcome, if it still holds `lease`, then the next step: done,
    a dead letter, or attempt n+1 after the backoff (on `jobs_redis`, default `redis`).
    Returns the verdict."""
    question_id, late = parse_delivery(delivery)
    bound = log.bind(question_id=question_id, attempt=attempt, tenant=tenant, late=late)
    entry: dict[str, Any] = {"at": iso(now_ms())}
    if outcome.status_code is not None:
        entry["status_code"] = outcome.status_code
    if outcome.error is not None:
        entry["error"] = outcome.error
    attempts = [*prior.get("attempts", []), entry]
    last = attempt >= s.webhook_max_attempts
    due: int | None = None
    delay = 0.0
    if outcome.ok:
        doc = {"status": "delivered", "attempts": attempts, "next_attempt_at": None}
        verdict = "delivered"
    elif outcome.retry and not last:
        delay = backoff_s(s, attempt, outcome)
        next_at = now_ms() + int(delay * 1000)
        doc = {"status": "pending", "attempts": attempts, "next_attempt_at": iso(next_at)}
        due = next_at + lease_ms(s)
        verdict = "retry"
    else:
        doc = {"status": "failed", "attempts": attempts, "next_attempt_at": None}
        verdict = "failed"

    dead = None
    if verdict == "failed":
        dead = {
            "question_id": question_id,
            "event": "question.resolved" if late is None else "question.late_answer",
            "tenant": tenant,
            "url": url,
            "attempts": str(attempt),
            "last": orjson.dumps(entry).decode(),
            "at": entry["at"],
        }
    if state.record(delivery, attempt, lease, doc, due, dead) != "ok":
        bound.warning("webhook.record_lost", outcome=verdict)
        return "lost"
    if verdict == "retry":
        enqueue(jobs_redis if jobs_redis is not None else redis, s, delivery, attempt + 1, delay)
        bound.info(
            "webhook.retry", status_code=outcome.status_code, error=outcome.error, delay_s=delay
        )
    elif verdict == "delivered":
        bound.info("webhook.delivered", status_code=outcome.status_code)
    else:
        bound.warning("webhook.dead_letter", status_code=outcome.status_code, error=outcome.error)
    return verdict
