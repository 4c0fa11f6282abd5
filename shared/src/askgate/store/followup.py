"""What follows an ask in Redis: firing the due reminders and escalation steps, and
keeping answers that come after the end. `Store` owns one (`store.followup`); the
sweeper calls `fire_timers`, the store's answer paths `keep_late`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import orjson
from redis.asyncio import Redis
from redis.commands.core import AsyncScript

from askgate.domain.models import Responder
from askgate.domain.timeutil import iso, now_ms
from askgate.settings import Settings
from askgate.store import followup_scripts, keys
from askgate.store.ledger import watch_member
from askgate.store.record import Record, record_from
from askgate.store.timers import Timer, TimerKind

# At most this many late answers are kept per question (the first is what matters; a
# few more show that several people tried).
LATE_MAX = 5


class FollowUp:
    def __init__(self, redis: Redis, settings: Settings) -> None:
        self.redis = redis
        self.settings = settings
        self.maxlen = settings.stream_maxlen
        self.grace_ms = settings.channel_grace_s * 1000
        self._timers: AsyncScript = redis.register_script(followup_scripts.TIMERS)
        self._late: AsyncScript = redis.register_script(followup_scripts.LATE_ANSWER)

    # -- timers --------------------------------------------------------------------------

    async def fire_timers(self, shard: int, now: int | None = None) -> tuple[int, int]:
        """Fire up to sweep_batch of the shard's due timers whose question is still
        pending. Returns (fired, taken): taken == sweep_batch means more may be due."""
        now = now or now_ms()
        key = keys.timers(shard)
        raw = await self.redis.zrangebyscore(
            key, "-inf", now, start=0, num=self.settings.sweep_batch
        )
        if not raw:
            return 0, 0
        timers = [(m, Timer.parse(m.decode())) for m in raw]
        records = await self._load([t.question_id for _, t in timers if t is not None])
        live: list[tuple[Timer, Record]] = []
        drop = []
        for member, timer in timers:
            rec = records.get(timer.question_id) if timer is not None else None
            if timer is None or rec is None or not rec.pending:
                drop.append(member)  # an ended question's timer: nothing to fire
            else:
                live.append((timer, rec))
        if drop:
            await self.redis.zrem(key, *drop)
        outcomes = await asyncio.gather(*(self._fire(shard, t, rec, now) for t, rec in live))
        return sum(1 for out in outcomes if out == "fired"), len(raw)

    async def _load(self, ids: Sequence[str]) -> dict[str, Record]:
        unique = list(dict.fromkeys(ids))
        async with self.redis.pipeline(transaction=False) as pipe:
            for qid in unique:
                pipe.hgetall(keys.question(qid))
                pipe.get(keys.doc(qid))
            rows = await pipe.execute()
        out = {}
        for n, qid in enumerate(unique):
            rec = record_from(qid, rows[2 * n], rows[2 * n + 1])
            if rec is not None:
                out[qid] = rec
        return out

    async def _fire(self, shard: int, timer: Timer, rec: Record, now: int) -> str:
        watch: list[str | int] = []
        if timer.kind == TimerKind.ESCALATE:
            if not 1 <= timer.n <= len(rec.steps):
                channels: list[str] = []
            else:
                step = rec.steps[timer.n - 1]
                chat = [(i, rec.targets[i].channel) for i in step.indexes]
                for i, ch in chat:
                    watch += [now + self.grace_ms, watch_member(rec.id, i, ch)]
                # The Control UI re-reads its view (the deliveries grew).
                channels = ["web", *sorted({ch for _, ch in chat})]
        else:
            # Each chat channel's worker reminds its targets whose prompt is shown.
            channels = sorted({tg.channel for tg in rec.targets if tg.channel != "web"})
        reply = await self._timers(
            keys=[
                keys.timers(shard),
                keys.question(rec.id),
                keys.undelivered(shard),
                keys.metrics(shard),
                *(keys.events(shard, ch) for ch in channels),
            ],
            args=[
                timer.member,
                rec.id,
                timer.kind.value,
                timer.n,
                now,
                self.maxlen,
                len(watch) // 2,
                *watch,
            ],
        )
        return reply.decode() if isinstance(reply, bytes) else str(reply)

    # -- late answers --------------------------------------------------------------------

    async def keep_late(
        self,
        rec: Record,
        answers: dict[str, list[str]],
        responder: Responder | None,
        target: int | None = None,
    ) -> bool:
        """Keep an answer that came after `rec` ended without one (the result does not
        change) and tell the callback_url. False when it was not kept: the question was
        answered, or already has LATE_MAX late answers."""
        entry: dict[str, Any] = {"answers": answers, "at": iso(now_ms())}
        entry["responder"] = responder.model_dump(exclude_none=True) if responder else None
        if target is not None:
            entry["target"] = target
        shard = keys.shard_of(rec.id)
        names = [keys.question(rec.id), keys.deliveries(rec.id), keys.metrics(shard)]
        if rec.callback_url:
            names.append(keys.events(shard, "webhook"))
        reply = await self._late(
            keys=names, args=[rec.id, orjson.dumps(entry), LATE_MAX, self.maxlen]
        )
        return bool(reply[0] == b"kept")
