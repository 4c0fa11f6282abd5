"""A question's webhook deliveries, as the webhooks service reads and writes them (owned
here, like every other key and field): the record a delivery POSTs, one compare-and-set
script on the attempt counter and the claim's lease, and the shard's due set the reaper
reads.

The hash field `webhook` holds what the API shows as the question's `webhook`:
`{"status": "pending|delivered|failed", "attempts": [{"at", "status_code"|"error"}],
"next_attempt_at"}`. Beside it `wh:n` counts the attempts claimed, and `wh:lease` holds
the running attempt's lease (`<deadline ms>:<token>`) until its outcome is recorded.
Every write is a compare-and-set on both, so a stream entry processed twice, or a job
that RQ runs twice, cannot start a second chain or post the same attempt twice; and an
attempt whose worker died (its lease ran out) is closed by the reaper as `interrupted`,
after which attempt n+1 claims as usual.

`askgate:{ag:NN}:webhooks:due` (keys.webhook_due) scores each unfinished delivery by the
moment its next step is overdue: the lease's end while an attempt runs, the scheduled
start of the next attempt (plus a lease) while it waits. Delivered and failed leave it.

A question's late answers are delivered the same way, each its own chain: delivery
`<id>|late:<n>` (`delivery_key`) keeps `wh:late:<n>:n`, `wh:late:<n>:lease` and
`webhook:late:<n>` beside the result's fields, and is its own member of the due set.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import orjson
from redis import Redis
from redis.asyncio import Redis as AsyncRedis

from askgate.store import keys
from askgate.store.record import Record, queue_reads, record_from

WRITE = """
-- KEYS[1] question hash   KEYS[2] the shard's webhook dead-letter stream
-- KEYS[3] the shard's webhook due zset
-- ARGV[1] expected wh:n ('' = never set)   ARGV[2] expected wh:lease ('' = none)
-- ARGV[3] new wh:n   ARGV[4] new wh:lease ('' = none)   ARGV[5] the webhook JSON ('' =
-- leave it)   ARGV[6] due score ('' = leave the due set alone, '-' = leave the set)
-- ARGV[7] the delivery (its due-set member)   ARGV[8] dead-letter stream maxlen
-- ARGV[9] ARGV[10] ARGV[11] the delivery's fields: its counter (wh:n), lease (wh:lease)
-- and JSON (webhook)   ARGV[12..] the dead letter's field/value pairs (none = none)
-- Writes only while the question exists (HSET would otherwise make a stray hash).
-- Returns 'ok' | 'conflict' | 'missing'
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[3], ARGV[7])
  return 'missing'
end
local f = redis.call('HMGET', KEYS[1], ARGV[9], ARGV[10])
if (f[1] or '') ~= ARGV[1] or (f[2] or '') ~= ARGV[2] then return 'conflict' end
redis.call('HSET', KEYS[1], ARGV[9], ARGV[3])
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], ARGV[10], ARGV[4])
elseif f[2] then
  redis.call('HDEL', KEYS[1], ARGV[10])
end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], ARGV[11], ARGV[5]) end
if ARGV[6] == '-' then
  redis.call('ZREM', KEYS[3], ARGV[7])
elseif ARGV[6] ~= '' then
  redis.call('ZADD', KEYS[3], ARGV[6], ARGV[7])
end
if #ARGV > 11 then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[8], '*', unpack(ARGV, 12))
end
return 'ok'
"""

_LATE = "|late:"


def delivery_key(question_id: str, late: int | None = None) -> str:
    """A delivery chain's name: the question id for its result, `<id>|late:<n>` for its
    late answer n (the due set's member, and what the RQ job delivers)."""
    return question_id if late is None else f"{question_id}{_LATE}{late}"


def parse_delivery(delivery: str) -> tuple[str, int | None]:
    """(question id, late answer number or None for the result) of a delivery."""
    qid, sep, n = delivery.partition(_LATE)
    return qid, int(n) if sep and n.isdigit() else None


def fields(delivery: str) -> tuple[str, str, str]:
    """The hash fields of a delivery chain: attempt counter, lease, JSON."""
    _, late = parse_delivery(delivery)
    if late is None:
        return "wh:n", "wh:lease", "webhook"
    return f"wh:late:{late}:n", f"wh:late:{late}:lease", f"webhook:late:{late}"


@dataclass(frozen=True)
class Current:
    """What the reaper reads of one delivery."""

    claimed: int  # wh:n, -1 when the delivery never began
    lease: str  # '' when no attempt is running
    doc: dict[str, Any]

    @property
    def lease_deadline_ms(self) -> int:
        return int(self.lease.split(":", 1)[0]) if self.lease else 0


def new_lease(deadline_ms: int) -> str:
    return f"{deadline_ms}:{secrets.token_hex(4)}"


class WebhookState:
    def __init__(self, redis: Redis, dead_maxlen: int = 10_000) -> None:
        self.redis = redis
        self.dead_maxlen = dead_maxlen
        self._write = redis.register_script(WRITE)

    def write(
        self,
        delivery: str,
        expect: tuple[str, str],
        counter: str,
        lease: str = "",
        doc: dict[str, Any] | None = None,
        due: str = "",
        dead: dict[str, str] | None = None,
    ) -> str:
        flat: list[str] = []
        for k, v in (dead or {}).items():
            flat += [k, v]
        question_id, _ = parse_delivery(delivery)
        shard = keys.shard_of(question_id)
        reply = self._write(
            keys=[keys.question(question_id), keys.webhook_dead(shard), keys.webhook_due(shard)],
            args=[
                expect[0],
                expect[1],
                counter,
                lease,
                orjson.dumps(doc).decode() if doc else "",
                due,
                delivery,
                self.dead_maxlen,
                *fields(delivery),
                *flat,
            ],
        )
        return reply.decode() if isinstance(reply, bytes) else str(reply)

    def begin(self, delivery: str, doc: dict[str, Any], due_ms: int) -> str:
        """The first write: the delivery is pending, no attempt claimed yet."""
        return self.write(delivery, ("", ""), "0", doc=doc, due=str(due_ms))

    def claim(self, delivery: str, attempt: int, lease: str, due_ms: int) -> bool:
        """Attempt n may run only once, only after attempt n-1 was recorded, and holds
        `lease` until its outcome is."""
        return (
            self.write(delivery, (str(attempt - 1), ""), str(attempt), lease, due=str(due_ms))
            == "ok"
        )

    def record(
        self,
        delivery: str,
        attempt: int,
        lease: str,
        doc: dict[str, Any],
        due_ms: int | None,
        dead: dict[str, str] | None = None,
    ) -> str:
        """Attempt n's outcome, if it still holds its lease; due_ms None: finished."""
        return self.write(
            delivery,
            (str(attempt), lease),
            str(attempt),
            doc=doc,
            due="-" if due_ms is None else str(due_ms),
            dead=dead,
        )

    def reschedule(self, delivery: str, claimed: int, due_ms: int) -> str:
        """Push the reaper's next look at a delivery whose next attempt was re-enqueued."""
        return self.write(delivery, (str(claimed), ""), str(claimed), due=str(due_ms))

    def wants_webhook(self, question_id: str) -> bool:
        """The question exists and its ask gave a callback_url."""
        channels = self.redis.hget(keys.question(question_id), "channels") or b""
        return b"webhook" in channels.split(b",")

    def claimed(self, delivery: str) -> int | None:
        """Attempts claimed so far (0: begun, none claimed; None: never begun)."""
        question_id, _ = parse_delivery(delivery)
        n = self.redis.hget(keys.question(question_id), fields(delivery)[0])
        return int(n) if n is not None else None

    def load(self, question_id: str) -> Record | None:
        """The whole question as the API shows it (None once it is gone)."""
        pipe = self.redis.pipeline(transaction=False)
        queue_reads(pipe, question_id)
        return record_from(question_id, *pipe.execute())

    def read(self, delivery: str) -> Current | None:
        question_id, _ = parse_delivery(delivery)
        n, lease, doc = self.redis.hmget(keys.question(question_id), list(fields(delivery)))
        if doc is None:
            return None
        return Current(
            int(n) if n is not None else -1,
            lease.decode() if lease is not None else "",
            orjson.loads(doc),
        )

    def forget(self, delivery: str) -> None:
        """Take a delivery that is finished or gone out of the due set."""
        question_id, _ = parse_delivery(delivery)
        self.redis.zrem(keys.webhook_due(keys.shard_of(question_id)), delivery)

    def overdue(self, shard: int, now_ms: int, limit: int = 100) -> list[str]:
        ids = self.redis.zrangebyscore(keys.webhook_due(shard), "-inf", now_ms, 0, limit)
        return [i.decode() for i in ids]


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


async def list_dead(
    redis: AsyncRedis, tenant: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    """Dead letters (deliveries that gave up) across every shard, newest first; only
    `tenant`'s when given (`askgate-webhooks dead`)."""
    rows: list[dict[str, Any]] = []
    for stream in keys.all_webhook_dead():
        # Each shard's newest `limit` matching entries are enough for the merged top.
        last = "+"
        found = 0
        while found < limit:
            batch = await redis.xrevrange(stream, max=last, min="-", count=max(limit, 100))
            if not batch:
                break
            for entry_id, fields in batch:
                row = {k.decode(): v.decode() for k, v in fields.items()}
                if tenant is None or row.get("tenant") == tenant:
                    row["id"] = entry_id.decode()
                    row["last"] = orjson.loads(row["last"]) if row.get("last") else None
                    row["attempts"] = int(row.get("attempts", "0"))
                    rows.append(row)
                    found += 1
            last = "(" + batch[-1][0].decode()
            if len(batch) < max(limit, 100):
                break
    rows.sort(key=lambda r: _id_key(r["id"]), reverse=True)
    return rows[:limit]
