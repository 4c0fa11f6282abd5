"""Questions in Redis: create, read, answer, end, list, sweep.

Every state change is one Lua script from `scripts.py`; this module builds its keys and
arguments and turns its replies into records or askgate errors. Redis errors propagate
(the API turns connection failures into 503).
"""

from __future__ import annotations

import base64
import hashlib
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from redis.asyncio import Redis
from redis.commands.core import AsyncScript

from askgate import keys, scripts
from askgate.errors import (
    AlreadyFinal,
    IncompleteAnswer,
    NotFound,
    RateLimited,
    SessionBusy,
    ValidationFailed,
)
from askgate.i18n import t
from askgate.models import (
    Delivery,
    QuestionCreate,
    QuestionIn,
    QuestionPublic,
    Responder,
)
from askgate.parser import ParsedReply, match_label, parse_reply
from askgate.settings import Settings
from askgate.status import Reason, Status
from askgate.timeutil import iso, now_ms

NO_ANSWER = orjson.dumps({"status": "no_answer"})
FREE_TEXT_MAX = 2000


def result_json(answers: Mapping[str, list[str]]) -> bytes:
    """The seed's result, byte for byte: {"status":"answered","answers":{"answers":{…}}}."""
    return orjson.dumps({"status": "answered", "answers": {"answers": dict(answers)}})


def new_question_id(
    tenant: str, session: str, run_id: str | None, tool_call_id: str | None
) -> str:
    """`q` + the session's shard in hex + 16 base32 chars (80 bits). With a tool_call_id the id is
    derived from (tenant, run or session, tool_call_id), so a retried ask finds itself."""
    shard = keys.shard_for(tenant, session)
    if tool_call_id:
        seed = f"{tenant}\x00{run_id or session}\x00{tool_call_id}".encode()
        raw = hashlib.sha256(seed).digest()
    else:
        raw = os.urandom(10)
    token = base64.b32encode(raw).decode().lower()[:16]
    return f"q{shard:02x}{token}"


@dataclass
class Record:
    """A question as stored: the hash's fields, decoded."""

    id: str
    f: dict[str, str]

    @property
    def tenant(self) -> str:
        return self.f["tenant"]

    @property
    def session(self) -> str:
        return self.f["session"]

    @property
    def status(self) -> Status:
        return Status(self.f["status"])

    @property
    def reason(self) -> Reason | None:
        return Reason(self.f["reason"]) if self.f.get("reason") else None

    @property
    def locale(self) -> str:
        return self.f.get("locale") or "en"

    @property
    def questions(self) -> list[QuestionIn]:
        return [QuestionIn.model_validate(q) for q in orjson.loads(self.f["doc"])]

    @property
    def targets(self) -> list[dict[str, Any]]:
        return list(orjson.loads(self.f.get("targets") or "[]"))

    @property
    def result(self) -> dict[str, Any] | None:
        raw = self.f.get("result")
        if raw:
            return dict(orjson.loads(raw))
        return {"status": "no_answer"} if self.f.get("status") == Status.NO_ANSWER else None

    def delivery_dicts(self) -> list[dict[str, Any]]:
        out = []
        for i, target in enumerate(self.targets):
            raw = self.f.get(f"d:{i}")
            d = orjson.loads(raw) if raw else {"status": self.f.get(f"ds:{i}", "pending")}
            out.append({"target": target, "status": d.get("status", "pending"),
                        "error": d.get("error"), "ref": d.get("ref"), "at": d.get("at")})
        return out

    def deliveries(self) -> list[Delivery]:
        return [Delivery.model_validate(d) for d in self.delivery_dicts()]

    def public_dict(self, web_url: str | None = None, *, fragments: bool = False
                    ) -> dict[str, Any]:
        """The question resource as JSON-ready data, built straight from the hash (the hot
        path of every endpoint); `public()` is the same, validated as QuestionPublic.
        With fragments=True the stored JSON (questions, result) is embedded unparsed, for
        orjson.dumps only."""
        f = self.f
        raw = orjson.Fragment if fragments else orjson.loads
        responder = None
        if f.get("responder"):
            r = orjson.loads(f["responder"])
            responder = {"channel": r.get("channel"), "user_id": r.get("user_id"),
                         "name": r.get("name")}
        return {
            "id": self.id,
            "status": f["status"],
            "result": raw(f["result"]) if f.get("result") else self.result,
            "reason": f.get("reason") or None,
            "questions": raw(f["doc"]),
            "session": f["session"],
            "run_id": f.get("run") or None,
            "agent_id": f.get("agent") or None,
            "tool_call_id": f.get("tcid") or None,
            "locale": self.locale,
            "timeout_s": int(f["timeout"]),
            "created_at": iso(f["created"]),
            "expires_at": iso(f["expires"]),
            "resolved_at": iso(f.get("resolved")),
            "responder": responder,
            "result_key": keys.result_key(self.id),
            "result_channel": keys.result_channel(self.id),
            "web_url": web_url,
            "callback_url": f.get("callback") or None,
            "deliveries": self.delivery_dicts(),
            "webhook": orjson.loads(f["webhook"]) if f.get("webhook") else None,
        }

    def public(self, web_url: str | None = None) -> QuestionPublic:
        return QuestionPublic.model_validate(self.public_dict(web_url))


def _decode(raw: Mapping[bytes, bytes]) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in raw.items()}


# A question's static part (questions, targets, callback) is stored apart from its hash,
# deflated with a preset dictionary of the ask's JSON shape: the hash keeps only short
# values, so Redis stores it as a compact listpack, and the text takes ~40% of its size.
DOC_VERSION = b"\x01"
_ZDICT = (
    b'{"questions":[{"id":"","header":"","question":"","options":[{"label":" (Recommended)",'
    b'"description":""},{"label":"","description":""}],"multiSelect":false}],"targets":'
    b'[{"channel":"telegram","chat_id":""},{"channel":"web"}],"callback":"https://"}'
)


def encode_doc(questions: list[Any], targets: list[Any], callback: str | None) -> bytes:
    doc: dict[str, Any] = {"questions": questions, "targets": targets}
    if callback:
        doc["callback"] = callback
    c = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, _ZDICT)
    return DOC_VERSION + c.compress(orjson.dumps(doc)) + c.flush()


def decode_doc(blob: bytes) -> dict[str, str]:
    """The doc as the record fields `doc`, `targets`, `callback` (JSON / text)."""
    if blob[:1] != DOC_VERSION:
        raise ValueError("unknown question doc version")
    d = zlib.decompressobj(-15, _ZDICT)
    doc = orjson.loads(d.decompress(blob[1:]) + d.flush())
    for q in doc["questions"]:
        q.setdefault("multiSelect", False)
    out = {"doc": orjson.dumps(doc["questions"]).decode(),
           "targets": orjson.dumps(doc["targets"]).decode()}
    if doc.get("callback"):
        out["callback"] = doc["callback"]
    return out


def record_from(question_id: str, raw: Mapping[bytes, bytes], blob: bytes | None) -> Record | None:
    """A Record from the question hash and its doc as read from Redis (None if gone)."""
    if not raw or blob is None:
        return None
    return Record(question_id, {**_decode(raw), **decode_doc(blob)})


def canonical_answers(
    questions: Sequence[QuestionIn], given: Mapping[str, list[str] | str], locale: str = "en"
) -> dict[str, list[str]]:
    """Answers keyed by question id in declared order, values as the declared labels
    (matched ignoring case and the Recommended suffix) or trimmed free text."""
    ids = [q.id for q in questions]
    for key in given:
        if key not in ids:
            raise ValidationFailed(
                f"answers.{key} is not a question of this ask; answer with the ids "
                f"{', '.join(ids)}"
            )
    out: dict[str, list[str]] = {}
    for q in questions:
        raw = given.get(q.id)
        values_in = [raw] if isinstance(raw, str) else list(raw or [])
        values: list[str] = []
        for v in values_in:
            v = v.strip()  # trimmed like a typed reply; inner spacing is the human's
            if not v:
                continue
            if len(v) > FREE_TEXT_MAX:
                raise ValidationFailed(
                    f"answers.{q.id} values must be at most {FREE_TEXT_MAX} characters"
                )
            v = match_label(q, v) or v
            if v not in values:
                values.append(v)
        if len(values) > 1 and not q.multiSelect:
            raise ValidationFailed(
                f"answers.{q.id} takes one answer (the question is single-select); "
                "send a list with one value"
            )
        if values:
            out[q.id] = values
    missing = [q for q in questions if q.id not in out]
    if missing:
        named = " / ".join(f"{q.header}: {q.question}" for q in missing)
        raise IncompleteAnswer(
            f"answers.{missing[0].id} is missing; all questions of an ask are answered "
            f"together. {t(locale, 'missing', questions=named)}",
            missing=[q.id for q in missing],
        )
    return out


def ended_message(status: str, reason: str | None, locale: str = "en") -> str:
    if status == Status.ANSWERED:
        return t(locale, "already_answered")
    if reason == Reason.TIMEOUT:
        return t(locale, "expired")
    if reason == Reason.SKIPPED:
        return t(locale, "ended") + f" ({reason})"
    return t(locale, "ended") + (f" ({reason})" if reason else "")


class Store:
    def __init__(self, redis: Redis, settings: Settings) -> None:
        self.redis = redis
        self.settings = settings
        self.keep_ms = settings.result_ttl_s * 1000
        self.maxlen = settings.stream_maxlen
        self._create: AsyncScript = redis.register_script(scripts.CREATE)
        self._resolve: AsyncScript = redis.register_script(scripts.RESOLVE)
        self._sweep: AsyncScript = redis.register_script(scripts.SWEEP)
        self._abort: AsyncScript = redis.register_script(scripts.ABORT_RUN)
        self._delivery: AsyncScript = redis.register_script(scripts.DELIVERY)
        self._reserve: AsyncScript = redis.register_script(scripts.RESERVE)

    # -- reading -----------------------------------------------------------------------

    async def load(self, question_id: str) -> Record | None:
        try:
            key = keys.question(question_id)
        except ValueError:
            return None
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(key)
            pipe.get(keys.doc(question_id))
            raw, blob = await pipe.execute()
        return record_from(question_id, raw, blob)

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
        fields = _decode(await self.redis.hgetall(keys.session(shard, tenant, session)))
        created = {k: int(v) for k, v in fields.items() if not k.startswith("p:")}
        ids = sorted(created, key=created.__getitem__, reverse=True)[:limit]
        if not ids:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for qid in ids:
                pipe.hgetall(keys.question(qid))
                pipe.get(keys.doc(qid))
            rows = await pipe.execute()
        out = []
        for i, qid in enumerate(ids):
            rec = record_from(qid, rows[2 * i], rows[2 * i + 1])
            if rec is not None and (status is None or rec.status == status):
                out.append(rec)
        return out

    async def pending_for(self, tenant: str, session: str) -> Record | None:
        shard = keys.shard_for(tenant, session)
        fields = await self.redis.hkeys(keys.session(shard, tenant, session))
        pending = [f.decode()[2:] for f in fields if f.startswith(b"p:")]
        if not pending:
            return None
        rec = await self.load(pending[0])
        return rec if rec is not None and rec.status == Status.PENDING else None

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
    ) -> tuple[Record, bool]:
        """Store and publish an ask. Returns (record, created); created is False for an
        idempotent replay of the same tool_call_id."""
        timeout_s = self.clamp_timeout(body.timeoutSeconds)
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

        targets = [tg.model_dump(mode="json", exclude_none=True) for tg in body.targets]
        channels = ["web", *sorted({tg["channel"] for tg in targets} - {"web"})]
        if body.callback_url is not None:
            channels.append("webhook")
        fields: dict[str, str | int] = {
            "tenant": tenant,
            "session": body.session,
            "status": Status.PENDING.value,
            "locale": body.locale,
            "created": now,
            "expires": expires,
            "timeout": timeout_s,
            "channels": ",".join(channels),
            "ntargets": len(targets),
        }
        # Stored without defaults (multiSelect false, no description); the record and
        # decode_doc restore the full shape.
        questions = [q.model_dump(mode="json", exclude_defaults=True) for q in body.questions]
        callback = str(body.callback_url) if body.callback_url else None
        for i, tg in enumerate(targets):
            if tg["channel"] == "web":
                fields[f"ds:{i}"] = "delivered"  # the Control UI can always show it
        for name, value in (
            ("run", body.run_id),
            ("agent", body.agent_id),
            ("tcid", body.tool_call_id),
        ):
            if value:
                fields[name] = value
        flat: list[str | int] = []
        for k, v in fields.items():
            flat += [k, v]
        run_key = keys.run(shard, tenant, body.run_id) if body.run_id else keys.due(shard)
        try:
            reply = await self._create(
                keys=[
                    keys.question(qid),
                    keys.session(shard, tenant, body.session),
                    keys.due(shard),
                    run_key,
                    keys.doc(qid),
                    *[keys.events(shard, ch) for ch in channels],
                ],
                args=[qid, expires, now, expires - now + self.keep_ms, self.maxlen,
                      "1" if body.run_id else "0", encode_doc(questions, targets, callback),
                      *flat],
            )
        except BaseException:
            await self._release(tenant, qid)
            raise
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
        for q in questions:
            q.setdefault("multiSelect", False)
        record["doc"] = orjson.dumps(questions).decode()
        record["targets"] = orjson.dumps(targets).decode()
        if callback:
            record["callback"] = callback
        return Record(qid, record), True

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
    ) -> Record:
        now = now_ms()
        responder_json = responder.model_dump_json(exclude_none=True) if responder else ""
        reply = await self._resolve(
            keys=[keys.question(rec.id)],
            args=[rec.id, status.value, reason.value if reason else "", result,
                  responder_json, now, self.keep_ms, self.maxlen],
        )
        if reply[0] == b"final":
            cur, cur_reason = reply[1].decode(), reply[2].decode() or None
            raise AlreadyFinal(ended_message(cur, cur_reason, rec.locale), cur, cur_reason)
        if reply[0] == b"missing":
            raise NotFound(f"question {rec.id} not found")
        await self._release(rec.tenant, rec.id)
        rec.f.update(status=status.value, reason=reason.value if reason else "",
                     responder=responder_json, resolved=str(now))
        if status == Status.ANSWERED:
            rec.f["result"] = result.decode()
        return rec

    def _check_pending(self, rec: Record) -> None:
        if rec.status != Status.PENDING:
            raise AlreadyFinal(ended_message(rec.f["status"], rec.f.get("reason"), rec.locale),
                               rec.f["status"], rec.f.get("reason") or None)

    async def answer(
        self,
        tenant: str,
        question_id: str,
        answers: Mapping[str, list[str] | str],
        responder: Responder | None = None,
    ) -> Record:
        rec = await self.get(tenant, question_id)
        self._check_pending(rec)
        canonical = canonical_answers(rec.questions, answers, rec.locale)
        return await self._finish(rec, Status.ANSWERED, None, result_json(canonical), responder)

    async def apply_reply(
        self, rec: Record, text: str, responder: Responder | None = None
    ) -> tuple[Record, ParsedReply]:
        """Read a plain-text message as the answer to `rec` (SPEC §5)."""
        self._check_pending(rec)
        parsed = parse_reply(rec.questions, text, rec.locale)
        if parsed.kind == "skip":
            rec = await self._finish(rec, Status.NO_ANSWER, Reason.SKIPPED, NO_ANSWER, responder)
        elif parsed.kind == "answers":
            rec = await self._finish(
                rec, Status.ANSWERED, None, result_json(parsed.answers), responder
            )
        return rec, parsed

    async def reply(
        self, tenant: str, question_id: str, text: str, responder: Responder | None = None
    ) -> tuple[Record, ParsedReply]:
        return await self.apply_reply(await self.get(tenant, question_id), text, responder)

    async def end(
        self, tenant: str, question_id: str, reason: Reason, responder: Responder | None = None
    ) -> Record:
        """Skip or cancel: the question ends as no_answer with `reason`."""
        rec = await self.get(tenant, question_id)
        self._check_pending(rec)
        return await self._finish(rec, Status.NO_ANSWER, reason, NO_ANSWER, responder)

    async def abort_run(self, tenant: str, run_id: str) -> list[str]:
        now = now_ms()
        async with self.redis.pipeline(transaction=False) as pipe:
            for shard in range(keys.SHARDS):
                await self._abort(
                    keys=[keys.run(shard, tenant, run_id)],
                    args=[now, self.keep_ms, self.maxlen, NO_ANSWER],
                    client=pipe,
                )
            replies = await pipe.execute()
        ended = [qid.decode() for reply in replies for qid in reply]
        if ended:
            await self.redis.zrem(keys.tenant_pending(tenant), *ended)
        return ended

    async def sweep_shard(self, shard: int, now: int | None = None) -> tuple[int, int]:
        """End up to sweep_batch overdue questions of one shard as no_answer/timeout.
        Returns (ended, taken): taken == sweep_batch means more may be due."""
        ended, taken = await self._sweep(
            keys=[keys.due(shard)],
            args=[now or now_ms(), self.settings.sweep_batch, self.keep_ms, self.maxlen,
                  NO_ANSWER],
        )
        return int(ended), int(taken)

    async def set_delivery(
        self,
        question_id: str,
        index: int,
        state: str,
        *,
        expect: str = "",
        error: str | None = None,
        ref: dict[str, Any] | None = None,
    ) -> tuple[str, str]:
        """Record a target's delivery state (compare-and-set on `expect` when given).
        Returns ('ok', '1' if the question ended as delivery_failed else '0'),
        ('conflict', current_state) or ('missing', '')."""
        now = now_ms()
        doc = orjson.dumps({"status": state, "error": error, "ref": ref, "at": iso(now)})
        reply = await self._delivery(
            keys=[keys.question(question_id)],
            args=[question_id, index, state, doc, expect, now, self.keep_ms, self.maxlen,
                  NO_ANSWER],
        )
        return reply[0].decode(), (reply[1].decode() if len(reply) > 1 else "")
