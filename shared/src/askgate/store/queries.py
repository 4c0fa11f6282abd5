"""Reading questions: one by id, a session's, a tenant's pending ones across sessions
(the operator's view), and every shard's counters. `Store` is one of these; the methods
only read, so they need nothing but the client and the settings."""

from __future__ import annotations

from redis.asyncio import Redis

from askgate.domain.errors import NotFound, ValidationFailed
from askgate.domain.status import Status
from askgate.domain.timeutil import now_ms
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.record import READS, Record, decode_hash, queue_reads, record_from


class Queries:
    redis: Redis
    settings: Settings

    async def load(self, question_id: str) -> Record | None:
        try:
            keys.shard_of(question_id)
        except ValueError:
            return None  # not a question id
        async with self.redis.pipeline(transaction=False) as pipe:
            queue_reads(pipe, question_id)
            rows = await pipe.execute()
        return record_from(question_id, *rows)

    async def get(self, tenant: str, question_id: str) -> Record:
        rec = await self.load(question_id)
        # Another tenant's question is indistinguishable from a missing one.
        if rec is None or rec.tenant != tenant:
            raise NotFound(f"question {question_id} not found")
        return rec

    async def status_of(self, tenant: str, question_id: str) -> str:
        """Just the status (one small read): what a waiter re-checks while it waits."""
        try:
            key = keys.question(question_id)
        except ValueError:
            raise NotFound(f"question {question_id} not found") from None
        owner, status = await self.redis.hmget(key, "tenant", "status")
        if owner is None or owner.decode() != tenant:
            raise NotFound(f"question {question_id} not found")
        return str(status.decode())

    async def list_session(
        self, tenant: str, session: str, status: Status | None = None, limit: int = 50
    ) -> list[Record]:
        shard = keys.shard_for(tenant, session)
        fields = decode_hash(await self.redis.hgetall(keys.session(shard, tenant, session)))
        created = {k: int(v) for k, v in fields.items() if not k.startswith("p:")}
        ids = sorted(created, key=created.__getitem__, reverse=True)[:limit]
        if not ids:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for qid in ids:
                queue_reads(pipe, qid)
            rows = await pipe.execute()
        out = []
        for i, qid in enumerate(ids):
            rec = record_from(qid, *rows[READS * i : READS * (i + 1)])
            if rec is not None and (status is None or rec.status == status):
                out.append(rec)
        return out

    async def list_pending(
        self, tenant: str, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[Record], str | None]:
        """The tenant's pending questions across sessions, newest first: a page of at most
        `limit` after `cursor` (from the previous page), and the next page's cursor (None
        on the last). Read from the tenant's pending quota set, so it costs one small read
        per pending question."""
        after: tuple[int, str] | None = None
        if cursor is not None:
            created, sep, qid = cursor.partition(".")
            if not (sep and created.isdigit() and qid):
                raise ValidationFailed(
                    "cursor must be the next_cursor of an earlier page; "
                    "leave it out for the first page"
                )
            after = (int(created), qid)
        ids = [
            m.decode()
            for m in await self.redis.zrangebyscore(keys.tenant_pending(tenant), now_ms(), "+inf")
        ]
        async with self.redis.pipeline(transaction=False) as pipe:
            for qid in ids:
                pipe.hmget(keys.question(qid), "created", "status", "tenant")
            rows = await pipe.execute() if ids else []
        order = sorted(
            (
                (int(c), qid)
                for qid, (c, st, t) in zip(ids, rows, strict=True)
                if c is not None and st == b"pending" and t == tenant.encode()
            ),
            reverse=True,
        )
        if after is not None:
            order = [row for row in order if row < after]
        page = order[:limit]
        async with self.redis.pipeline(transaction=False) as pipe:
            for _, qid in page:
                queue_reads(pipe, qid)
            loaded = await pipe.execute() if page else []
        recs = [
            rec
            for n, (_, qid) in enumerate(page)
            if (rec := record_from(qid, *loaded[READS * n : READS * (n + 1)])) is not None
        ]
        more = len(order) > limit
        return recs, f"{page[-1][0]}.{page[-1][1]}" if more and page else None

    async def ended_lately(self, tenant: str, session: str) -> Record | None:
        """The session's newest question when it ended without an answer within
        late_answer_window_s: what a message with nothing pending may be late for."""
        window_ms = self.settings.late_answer_window_s * 1000
        newest = await self.list_session(tenant, session, limit=1)
        if not window_ms or not newest or newest[0].status != Status.NO_ANSWER:
            return None
        rec = newest[0]
        return rec if int(rec.f.get("resolved") or 0) + window_ms >= now_ms() else None

    async def counters(self) -> list[dict[bytes, bytes]]:
        """Every shard's metrics hash (see askgate.store.metrics), for /metrics."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for shard in range(keys.SHARDS):
                pipe.hgetall(keys.metrics(shard))
            return list(await pipe.execute())

    async def pending_for(self, tenant: str, session: str) -> Record | None:
        shard = keys.shard_for(tenant, session)
        fields = await self.redis.hkeys(keys.session(shard, tenant, session))
        pending = [f.decode()[2:] for f in fields if f.startswith(b"p:")]
        if not pending:
            return None
        rec = await self.load(pending[0])
        return rec if rec is not None and rec.status == Status.PENDING else None
