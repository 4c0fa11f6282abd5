"""Questions in Redis: create, read, answer, end, list, sweep.

Every state change is one Lua script from `scripts.py`; this module builds its keys and
arguments and turns its replies into records or askgate errors. Redis errors propagate
(the API turns connection failures into 503).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.commands.core import AsyncScript

from askgate.domain.answers import canonical_answers, ended_message, late_message
from askgate.domain.errors import (
    AlreadyFinal,
    IncompleteAnswer,
    NotFound,
    RateLimited,
    SessionBusy,
    Unavailable,
    ValidationFailed,
)
from askgate.domain.models import FREE_TEXT_MAX, QuestionCreate, Remind, Responder
from askgate.domain.parser import ParsedReply, parse_reply
from askgate.domain.status import Reason, Status
from askgate.domain.timeutil import iso, now_ms
from askgate.settings import Settings
from askgate.store import conn, keys, scripts
from askgate.store.doc import doc_fields, encode_doc
from askgate.store.followup import FollowUp
from askgate.store.ledger import Ledger, watch_member
from askgate.store.queries import Queries
from askgate.store.record import (
    NO_ANSWER,
    Record,
    new_question_id,
    result_json,
)
from askgate.store.timers import plan

# How many batches of sweep_batch one sweep step of a shard takes at once (sweep_shard).
SWEEP_AHEAD = 4


class Store(Queries):
    def __init__(self, redis: Redis, settings: Settings) -> None:
        self.redis = redis
        self.settings = settings
        self.keep_ms = settings.result_ttl_s * 1000
        self.history_ms = settings.session_history_s * 1000
        self.maxlen = settings.stream_maxlen
        self.grace_ms = settings.channel_grace_s * 1000
        self._create: AsyncScript = redis.register_script(scripts.CREATE)
        self._resolve: AsyncScript = redis.register_script(scripts.RESOLVE)
        self._sweep: AsyncScript = redis.register_script(scripts.SWEEP)
        self._abort: AsyncScript = redis.register_script(scripts.ABORT_RUN)
        self._watchdog: AsyncScript = redis.register_script(scripts.WATCHDOG)
        self.ledger = Ledger(redis, settings)
        self.followup = FollowUp(redis, settings)
        self._reserve: AsyncScript = redis.register_script(scripts.RESERVE)
        self._node_clients: dict[str, Redis] = {}
        self._fields: AsyncScript = redis.register_script(scripts.FIELDS)

    # -- the ask -----------------------------------------------------------------------

    def clamp_timeout(self, timeout_s: int | None) -> int:
        s = self.settings
        value = s.timeout_default_s if timeout_s is None else timeout_s
        return max(s.timeout_min_s, min(s.timeout_max_s, value))

    async def create(
        self,
        tenant: str,
        body: QuestionCreate,
        *,
        max_pending: int | None = None,
        asks_per_s: int | None = None,
        dead_channels: frozenset[str] = frozenset(),
        default_remind: Remind | None = None,
    ) -> tuple[Record, bool]:
        """Store and publish an ask. Returns (record, created); created is False for an
        idempotent replay of the same tool_call_id. Chat targets must be shown within
        channel_grace_s while no worker of their channel is live, at once for the
        `dead_channels` (see scripts.WATCHDOG); an escalation step's targets, from when
        the step starts. Reminders follow `body.remind`, else `default_remind` (the
        tenant's)."""
        timeout_s = self.clamp_timeout(body.timeoutSeconds)
        problems = body.timing_problems(timeout_s)
        if problems:
            raise ValidationFailed("; ".join(problems), problems)
        remind = body.remind if "remind" in body.model_fields_set else default_remind
        if remind is not None and remind.max == 0 and remind.final_warning_s is None:
            remind = None
        now = now_ms()
        expires = now + timeout_s * 1000
        qid = new_question_id(tenant, body.session, body.run_id, body.tool_call_id)
        shard = keys.shard_for(tenant, body.session)

        verdict = await self._reserve(
            keys=[keys.tenant_pending(tenant), keys.tenant_rate(tenant)],
            args=[
                now,
                qid,
                expires,
                max_pending or self.settings.tenant_max_pending,
                asks_per_s or self.settings.tenant_asks_per_s,
            ],
        )
        if verdict[0] == b"rate":
            raise RateLimited(
                "too many asks per second for this tenant; retry after the Retry-After delay",
                retry_after_s=max(1, -(-int(verdict[1]) // 1000)),
            )
        if verdict[0] == b"pending":
            raise RateLimited(
                "this tenant has too many pending questions; wait for some to end",
                retry_after_s=max(1, min(30, -(-int(verdict[1]) // 1000))),
            )

        targets = [tg.model_dump(mode="json", exclude_none=True) for _, tg in body.all_targets()]
        # Every channel with a target in any step gets the question's end; only those
        # of the ask's own targets get question.created (a step's get question.escalate).
        channels = ["web", *sorted({tg["channel"] for tg in targets} - {"web"})]
        shown_now: list[str] = ["web", *sorted({tg.channel for tg in body.targets} - {"web"})]
        if body.callback_url is not None:
            channels.append("webhook")
            shown_now.append("webhook")
        # The hash keeps what the scripts read and what changes; the timeout is
        # expires - created, an `en` locale is the default, and the agent and tool-call
        # ids, only ever shown, travel in the doc.
        fields: dict[str, str | int] = {
            "tenant": tenant,
            "session": body.session,
            "status": Status.PENDING.value,
            "created": now,
            "expires": expires,
            "channels": ",".join(channels),
            "ntargets": len(targets),
        }
        if body.locale != "en":
            fields["locale"] = body.locale
        # Stored without defaults (multiSelect false, no description); the record and
        # decode_doc restore the full shape.
        questions = [q.model_dump(mode="json", exclude_defaults=True) for q in body.questions]
        callback = str(body.callback_url) if body.callback_url else None
        watch: list[str | int] = []
        for i, tg in enumerate(targets[: len(body.targets)]):
            if tg["channel"] == "web":
                fields[f"ds:{i}"] = "delivered"  # the Control UI can always show it
            else:
                show_by = now if tg["channel"] in dead_channels else now + self.grace_ms
                watch += [show_by, watch_member(qid, i, tg["channel"])]
        if body.run_id:
            fields["run"] = body.run_id
        ids = {"agent": body.agent_id, "tcid": body.tool_call_id}
        flat: list[str | int | bytes] = []
        for k, v in fields.items():
            flat += [k, v]
        remind_doc = remind.model_dump(exclude_none=True) if remind is not None else None
        steps_doc = [{"after_s": st.after_s, "targets": len(st.targets)} for st in body.escalate]
        doc = encode_doc(questions, targets, callback, remind_doc, steps_doc, ids=ids)
        for k, chunk in doc_fields(doc):
            flat += [k, chunk]
        timers: list[str | int] = []
        for due, timer in plan(qid, now, expires, remind, body.escalate):
            timers += [due, timer.member]
        try:
            reply = await self._stored(
                keys=[
                    keys.question(qid),
                    keys.session(shard, tenant, body.session),
                    keys.due(shard),
                    keys.undelivered(shard),
                    keys.timers(shard),
                    *[keys.events(shard, ch) for ch in shown_now],
                ],
                args=[
                    qid,
                    expires,
                    now,
                    expires - now + self.keep_ms,
                    self.maxlen,
                    tenant,
                    body.session,
                    expires - now + self.history_ms,
                    len(watch) // 2,
                    *watch,
                    len(timers) // 2,
                    *timers,
                    *flat,
                ],
            )
        except BaseException:
            await self._release(tenant, qid)
            raise
        if reply[0] == b"unreplicated":
            raise Unavailable(
                f"the ask {qid} was stored but not copied to "
                f"{self.settings.redis_wait_replicas} Redis replica(s) in time; retry it with "
                "the same tool_call_id (a retry finds it) or shortly",
                retry_after_s=1,
            )
        if reply[0] == b"busy":
            await self._release(tenant, qid)
            pending_id = reply[1].decode()
            raise SessionBusy(
                f"session {body.session!r} already has a pending question ({pending_id}); "
                f"wait for it (GET /v1/questions/{pending_id}/wait) or cancel it first",
                pending_id=pending_id,
            )
        if reply[0] == b"replay":
            rec = await self.get(tenant, qid)
            if rec.status != Status.PENDING:
                await self._release(tenant, qid)
            return rec, False
        record = {k: str(v) for k, v in fields.items()}
        record.update((k, v) for k, v in ids.items() if v)
        for q in questions:
            q.setdefault("multiSelect", False)
        record["doc"] = orjson.dumps(questions).decode()
        record["targets"] = orjson.dumps(targets).decode()
        if callback:
            record["callback"] = callback
        if remind_doc:
            record["remind"] = orjson.dumps(remind_doc).decode()
        if steps_doc:
            record["steps"] = orjson.dumps(steps_doc).decode()
        return Record(qid, record), True

    async def _stored(self, keys: list[str], args: list[Any]) -> list[bytes]:
        """Run CREATE; with redis_wait_replicas, then WAIT on the same connection (WAIT
        counts only that connection's writes), and reply ['unreplicated'] when fewer
        replicas than asked acknowledged it in time. On a cluster the pipeline goes to
        the node of the question's slot through a plain client of that node."""
        n = self.settings.redis_wait_replicas
        if not n:
            return list(await self._create(keys=keys, args=args))
        client: Redis = self.redis
        if isinstance(self.redis, RedisCluster):
            await self.redis.initialize()
            node = self.redis.get_node_from_key(keys[0])
            client = self._node_clients.get(node.name) or self._node_client(node.host, node.port)
            self._node_clients[node.name] = client
        async with client.pipeline(transaction=False) as pipe:
            await self._create(keys=keys, args=args, client=pipe)
            pipe.wait(n, self.settings.redis_wait_timeout_ms)
            reply, acked = await pipe.execute()
        if reply[0] == b"created" and int(acked) < n:
            return [b"unreplicated"]
        return list(reply)

    @staticmethod
    def _node_client(host: str, port: int) -> Redis:
        return conn.node_client(host, int(port), max_connections=32, socket_timeout_s=None)

    async def aclose(self) -> None:
        """Close the clients the store opened itself (the WAIT path's, per cluster node);
        the client it was given is its owner's to close."""
        clients, self._node_clients = list(self._node_clients.values()), {}
        for client in clients:
            await client.aclose()

    async def _release(self, tenant: str, qid: str) -> None:
        try:
            await self.redis.zrem(keys.tenant_pending(tenant), qid)
        except Exception:  # the entry leaves by its score (the deadline) anyway
            pass

    # -- final transitions -------------------------------------------------------------

    async def _finish(
        self,
        rec: Record,
        status: Status,
        reason: Reason | None,
        result: bytes,
        responder: Responder | None,
        target: int | None = None,
        answers: dict[str, list[str]] | None = None,
    ) -> Record:
        """The final transition. `target`: the index of the target the answer came
        through (kept with the responder, for the audit); `answers`: kept as a late answer
        when the question ended without one first."""
        now = now_ms()
        responder_json = _responder_json(responder, target)
        shard = keys.shard_of(rec.id)
        reply = await self._resolve(
            keys=[keys.metrics(shard), keys.due(shard), *rec.script_keys()],
            args=[
                rec.id,
                status.value,
                reason.value if reason else "",
                result,
                responder_json,
                now,
                self.keep_ms,
                self.maxlen,
            ],
        )
        if reply[0] == b"final":
            cur, cur_reason = reply[1].decode(), reply[2].decode() or None
            if answers is not None:
                rec.f.update(status=cur, reason=cur_reason or "")
                await self._late(rec, answers, responder, target)
            raise AlreadyFinal(ended_message(cur, cur_reason, rec.locale), cur, cur_reason)
        if reply[0] == b"missing":
            raise NotFound(f"question {rec.id} not found")
        await self._release(rec.tenant, rec.id)
        rec.f.update(
            status=status.value,
            reason=reason.value if reason else "",
            responder=responder_json,
            resolved=str(now),
        )
        if status == Status.ANSWERED:
            rec.f["result"] = result.decode()
        return rec

    def _check_pending(self, rec: Record) -> None:
        if rec.status != Status.PENDING:
            raise AlreadyFinal(
                ended_message(rec.f["status"], rec.f.get("reason"), rec.locale),
                rec.f["status"],
                rec.f.get("reason") or None,
            )

    async def _late(
        self,
        rec: Record,
        answers: dict[str, list[str]],
        responder: Responder | None,
        target: int | None,
    ) -> None:
        """An answer to a question that had ended: kept as its late answer when it ended
        without one (the result does not change), then refused all the same."""
        if rec.status == Status.NO_ANSWER and await self.followup.keep_late(
            rec, answers, responder, target
        ):
            raise AlreadyFinal(
                late_message(rec.f.get("reason"), rec.locale),
                rec.f["status"],
                rec.f.get("reason") or None,
                late=True,
            )
        self._check_pending(rec)

    async def answer(
        self,
        tenant: str,
        question_id: str,
        answers: Mapping[str, list[str] | str],
        responder: Responder | None = None,
        *,
        target: int | None = None,
    ) -> Record:
        """Answer with labels or free text per question id. After the end the answer is
        checked all the same and, if the question ended without one, kept as late."""
        rec = await self.get(tenant, question_id)
        return await self.apply_answer(rec, answers, responder, target=target)

    async def apply_answer(
        self,
        rec: Record,
        answers: Mapping[str, list[str] | str],
        responder: Responder | None = None,
        *,
        target: int | None = None,
    ) -> Record:
        """`answer` to a question already read (a chat worker has it from the tap): the
        final transition's script still decides, so one that ended since is refused (and
        its answer kept as late) as there."""
        if rec.status != Status.PENDING:
            try:
                late = canonical_answers(rec.questions, answers, rec.locale)
            except (IncompleteAnswer, ValidationFailed):
                late = None  # not an answer: the person hears only that it ended
            if late is not None:
                await self._late(rec, late, responder, target)
            self._check_pending(rec)
        canonical = canonical_answers(rec.questions, answers, rec.locale)
        return await self._finish(
            rec, Status.ANSWERED, None, result_json(canonical), responder, target, canonical
        )

    async def apply_reply(
        self,
        rec: Record,
        text: str,
        responder: Responder | None = None,
        *,
        target: int | None = None,
    ) -> tuple[Record, ParsedReply]:
        """Read a plain-text message as the answer to `rec` (README "Plain-text replies");
        after the end, one that reads as answers is kept as late (see answer). Every
        channel's replies come through here, so the one free-text limit holds for all."""
        if len(text) > FREE_TEXT_MAX:
            raise ValidationFailed(f"text must be at most {FREE_TEXT_MAX} characters; shorten it")
        parsed = parse_reply(rec.questions, text, rec.locale)
        if rec.status != Status.PENDING:
            if parsed.kind == "answers":
                await self._late(rec, parsed.answers, responder, target)
            self._check_pending(rec)
        if parsed.kind == "skip":
            rec = await self._finish(
                rec, Status.NO_ANSWER, Reason.SKIPPED, NO_ANSWER, responder, target
            )
        elif parsed.kind == "answers":
            rec = await self._finish(
                rec,
                Status.ANSWERED,
                None,
                result_json(parsed.answers),
                responder,
                target,
                parsed.answers,
            )
        return rec, parsed

    async def reply(
        self, tenant: str, question_id: str, text: str, responder: Responder | None = None
    ) -> tuple[Record, ParsedReply]:
        return await self.apply_reply(await self.get(tenant, question_id), text, responder)

    async def end(
        self,
        tenant: str,
        question_id: str,
        reason: Reason,
        responder: Responder | None = None,
        *,
        target: int | None = None,
    ) -> Record:
        """Skip or cancel: the question ends as no_answer with `reason`."""
        rec = await self.get(tenant, question_id)
        self._check_pending(rec)
        return await self._finish(rec, Status.NO_ANSWER, reason, NO_ANSWER, responder, target)

    async def abort_run(self, tenant: str, run_id: str) -> list[str]:
        """End the run's pending questions in every shard as no_answer/run_aborted. They
        are found by the tenant's pending set (its quota: every question not known to be
        final) and each one's `run` field, read in one pipeline, so no per-run index is
        kept for each ask; then one script per shard that has any (a script runs in one
        slot, so they are not pipelined). The cost is one small read per pending question
        of the tenant, once per abort."""
        now = now_ms()
        pending = _ids(await self.redis.zrange(keys.tenant_pending(tenant), 0, -1))
        async with self.redis.pipeline(transaction=False) as pipe:
            for qid in pending:
                pipe.hget(keys.question(qid), "run")
            runs = await pipe.execute() if pending else []
        by_shard: dict[int, list[str]] = {}
        for qid, run in zip(pending, runs, strict=True):
            if run is not None and run.decode() == run_id:
                by_shard.setdefault(keys.shard_of(qid), []).append(qid)
        replies = await asyncio.gather(
            *(self._abort_shard(shard, run_id, ids, now) for shard, ids in by_shard.items())
        )
        ended = [qid for reply in replies for qid in reply]
        if ended:
            await self.redis.zrem(keys.tenant_pending(tenant), *ended)
        return ended

    async def _abort_shard(self, shard: int, run_id: str, ids: list[str], now: int) -> list[str]:
        groups = await self.question_keys(ids)
        reply = await self._abort(
            keys=[keys.metrics(shard), keys.due(shard), *_flat(groups)],
            args=[now, self.keep_ms, self.maxlen, NO_ANSWER, run_id, *_counted(ids, groups)],
        )
        return [qid.decode() for qid in reply]

    async def question_keys(self, ids: Sequence[str]) -> list[list[str]]:
        """The script keys of each question of one shard (keys.question_keys), named from
        its stored fields (one FIELDS call for the batch); a question that is gone gets
        names that its script never touches."""
        flat = await self._fields(keys=[keys.question(qid) for qid in ids])
        values = [v.decode() for v in flat]
        return [keys.question_keys(qid, *values[4 * n : 4 * n + 4]) for n, qid in enumerate(ids)]

    async def sweep_shard(self, shard: int, now: int | None = None) -> tuple[int, int]:
        """End up to SWEEP_AHEAD batches of sweep_batch overdue questions of one shard as
        no_answer/timeout. Returns (ended, taken): taken >= sweep_batch means more may be
        due.

        The batches are swept concurrently, each its own FIELDS and SWEEP call, so the
        client packs one batch while Redis runs another (one at a time: a script blocks
        Redis for its batch, a few ms, and other clients' commands run in between)."""
        now = now or now_ms()
        due = keys.due(shard)
        batch = self.settings.sweep_batch
        ids = _ids(await self.redis.zrangebyscore(due, "-inf", now, 0, batch * SWEEP_AHEAD))
        # Every batch runs to its end before a failure is raised: none is left running.
        replies = await asyncio.gather(
            *(self._sweep_batch(shard, ids[i : i + batch], now) for i in range(0, len(ids), batch)),
            return_exceptions=True,
        )
        for reply in replies:
            if isinstance(reply, BaseException):
                raise reply
        return sum(r for r in replies if isinstance(r, int)), len(ids)

    async def _sweep_batch(self, shard: int, ids: list[str], now: int) -> int:
        groups = await self.question_keys(ids)
        ended, _ = await self._sweep(
            keys=[keys.due(shard), keys.metrics(shard), *_flat(groups)],
            args=[now, self.keep_ms, self.maxlen, NO_ANSWER, *_counted(ids, groups)],
        )
        return int(ended)

    async def sweep_undelivered(
        self, shard: int, live: set[str] | frozenset[str], now: int | None = None
    ) -> tuple[int, int, int]:
        """Fail the targets of one shard that were due to be shown and whose channel has
        no live worker (`live`: the channels that have one). Returns (failed, questions
        ended, entries taken): taken == sweep_batch means more may be due."""
        now = now or now_ms()
        key = keys.undelivered(shard)
        members = _ids(
            await self.redis.zrangebyscore(key, "-inf", now, 0, self.settings.sweep_batch)
        )
        if not members:
            return 0, 0, 0
        ids = list(dict.fromkeys(m.split("|", 1)[0] for m in members))
        by_id = dict(zip(ids, await self.question_keys(ids), strict=True))
        groups = [by_id[m.split("|", 1)[0]] for m in members]
        failed, ended, _ = await self._watchdog(
            keys=[key, keys.metrics(shard), keys.due(shard), *_flat(groups)],
            args=[
                now,
                self.grace_ms,
                "," + ",".join(sorted(live)) + ",",
                self.keep_ms,
                self.maxlen,
                NO_ANSWER,
                iso(now),
                *_counted(members, groups),
            ],
        )
        return int(failed), int(ended), len(members)


def _ids(raw: Sequence[bytes]) -> list[str]:
    return [m.decode() for m in raw]


def _flat(groups: Sequence[Sequence[str]]) -> list[str]:
    return [k for g in groups for k in g]


def _counted(names: Sequence[str], groups: Sequence[Sequence[str]]) -> list[str | int]:
    """Per entry of a batch script: its name, and how many event streams its keys name."""
    out: list[str | int] = []
    for name, group in zip(names, groups, strict=True):
        out += [name, len(group) - keys.QUESTION_KEYS_FIXED]
    return out


def _responder_json(responder: Responder | None, target: int | None) -> str:
    """The responder as stored: its fields, and the index of the target the answer came
    through (the audit's `target`)."""
    if responder is None and target is None:
        return ""
    doc = responder.model_dump(exclude_none=True) if responder else {}
    if target is not None:
        doc["target"] = target
    return orjson.dumps(doc).decode()
