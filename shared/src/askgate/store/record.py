"""A question as stored: the Record read from its hash and doc, ids, the result's bytes,
and the doc codec. Pure: no Redis calls here (store.py makes them)."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import orjson
from pydantic import TypeAdapter

from askgate.domain.models import QuestionIn, Remind, Responder, Target
from askgate.domain.resource import Delivery, QuestionPublic
from askgate.domain.status import DeliveryState, Reason, Status
from askgate.domain.timeutil import iso
from askgate.store import keys
from askgate.store.doc import decode_doc, split_doc

NO_ANSWER = orjson.dumps({"status": "no_answer"})
TARGETS: TypeAdapter[list[Target]] = TypeAdapter(list[Target])


def result_json(answers: Mapping[str, list[str]]) -> bytes:
    """The contract's result, byte for byte: {"status":"answered","answers":{"answers":{…}}}."""
    return orjson.dumps({"status": "answered", "answers": {"answers": dict(answers)}})


def new_question_id(tenant: str, session: str, run_id: str | None, tool_call_id: str | None) -> str:
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


@dataclass(frozen=True)
class Step:
    """One escalation step as stored: step k (from 1) is the ask's `escalate[k-1]`; its
    targets are `targets[first:first + count]`."""

    number: int
    after_s: int
    first: int
    count: int

    @property
    def indexes(self) -> range:
        return range(self.first, self.first + self.count)


@dataclass(frozen=True)
class DeliveryInfo:
    """One target's delivery as the ledger recorded it (see askgate.store.ledger)."""

    index: int
    target: Target
    state: DeliveryState
    error: str | None
    ref: dict[str, Any]
    at: str | None
    attempts: int
    summary: str | None  # set once the prompt was turned into its summary
    lease_until_ms: int = 0  # while sending: when the sender's claim runs out


@dataclass
class Record:
    """A question as stored, parsed once: typed properties over the stored fields `f`.

    Only the store layer (store.py, ledger.py, this module) reads `f`; services use the
    properties."""

    id: str
    f: dict[str, str]

    @property
    def tenant(self) -> str:
        return self.f["tenant"]

    def script_keys(self) -> list[str]:
        """The keys a script that may end this question touches (keys.question_keys),
        named from its stored fields."""
        f = self.f
        return keys.question_keys(
            self.id, f.get("tenant", ""), f.get("session", ""), f.get("run"), f.get("channels", "")
        )

    @property
    def session(self) -> str:
        return self.f["session"]

    @property
    def status(self) -> Status:
        return Status(self.f["status"])

    @property
    def pending(self) -> bool:
        return self.f["status"] == Status.PENDING

    @property
    def reason(self) -> Reason | None:
        return Reason(self.f["reason"]) if self.f.get("reason") else None

    @property
    def locale(self) -> str:
        return self.f.get("locale") or "en"

    @property
    def run_id(self) -> str | None:
        return self.f.get("run") or None

    @property
    def created_ms(self) -> int:
        return int(self.f["created"])

    @property
    def expires_ms(self) -> int:
        return int(self.f["expires"])

    @property
    def timeout_s(self) -> int:
        """The ask's timeout after clamping: expires - created (a question stored before
        also kept it as `timeout`)."""
        return (self.expires_ms - self.created_ms) // 1000

    @property
    def resolved_ms(self) -> int | None:
        return int(self.f["resolved"]) if self.f.get("resolved") else None

    @property
    def callback_url(self) -> str | None:
        return self.f.get("callback") or None

    def webhook_doc(self, late: int | None = None) -> dict[str, Any]:
        """The delivery of the result (late None) or of late answer n to the callback_url,
        as the resource shows it; {} before it began."""
        raw = self.f.get("webhook" if late is None else f"webhook:late:{late}")
        return dict(orjson.loads(raw)) if raw else {}

    @cached_property
    def questions(self) -> list[QuestionIn]:
        return [QuestionIn.model_validate(q) for q in orjson.loads(self.f["doc"])]

    @cached_property
    def targets(self) -> list[Target]:
        return TARGETS.validate_json(self.f.get("targets") or "[]")

    def targets_of(self, channel: str, step: int | None = None) -> list[tuple[int, Target]]:
        """(index, target) of every target on `channel`, in declared order; with `step`,
        only that escalation step's (0: the ask's own targets)."""
        return [
            (i, tg)
            for i, tg in enumerate(self.targets)
            if tg.channel == channel and (step is None or self.step_of(i) == step)
        ]

    @cached_property
    def remind(self) -> Remind | None:
        raw = self.f.get("remind")
        return Remind.model_validate_json(raw) if raw else None

    @cached_property
    def steps(self) -> list[Step]:
        out: list[Step] = []
        first = len(self.targets) - sum(int(s["targets"]) for s in self._steps_doc)
        for k, doc in enumerate(self._steps_doc, 1):
            out.append(Step(k, int(doc["after_s"]), first, int(doc["targets"])))
            first += int(doc["targets"])
        return out

    @cached_property
    def _steps_doc(self) -> list[dict[str, Any]]:
        return list(orjson.loads(self.f["steps"])) if self.f.get("steps") else []

    def step_of(self, index: int) -> int:
        """The escalation step target `index` belongs to (0: the ask's own targets)."""
        for step in self.steps:
            if index in step.indexes:
                return step.number
        return 0

    def step_started_ms(self, number: int) -> int | None:
        """When escalation step `number` started (None: not yet, or never)."""
        raw = self.f.get(f"esc:{number}")
        return int(raw) if raw else None

    def reminders_sent(self, index: int) -> int:
        """Reminders sent to target `index`: claimed one by one while pending, counted
        (`rc:<i>`) when the question ended."""
        prefix = f"r:{index}:"
        claims = sum(1 for k, v in self.f.items() if k.startswith(prefix) and v == "sent")
        return claims + int(self.f.get(f"rc:{index}") or 0)

    @property
    def responder_doc(self) -> dict[str, Any] | None:
        """Who answered, as stored (with the target it came through): the short `by*`
        fields (scripts.py `responder_fields`), or the JSON a question that ended before
        kept as `responder`."""
        f = self.f
        if f.get("responder"):
            return dict(orjson.loads(f["responder"]))
        if "by" not in f:
            return None
        doc: dict[str, Any] = {"channel": f["by"] or None}
        for name, field in (("user_id", "by_id"), ("name", "by_name")):
            if field in f:
                doc[name] = f[field]
        if f.get("by_target"):
            doc["target"] = int(f["by_target"])
        return {k: v for k, v in doc.items() if v is not None}

    @property
    def responder(self) -> Responder | None:
        doc = self.responder_doc
        if doc is None:
            return None
        doc.pop("target", None)  # stored beside the responder for the audit
        return Responder.model_validate(doc)

    def audit_dict(self) -> dict[str, Any] | None:
        """Who ended the question, through which channel and target (index into
        `deliveries`), and how long after the ask; None while pending."""
        f = self.f
        if not f.get("resolved"):
            return None
        r = self.responder_doc or {}
        return {
            "channel": r.get("channel"),
            "target": r.get("target"),
            "user_id": r.get("user_id"),
            "name": r.get("name"),
            "after_s": (int(f["resolved"]) - int(f["created"])) / 1000,
        }

    def late_answers(self) -> list[dict[str, Any]]:
        """Answers that came after the question ended without one, oldest first, each
        with its webhook delivery (None without a callback_url, or before it began)."""
        out = []
        for k in range(int(self.f.get("late:n") or 0)):
            raw = self.f.get(f"late:{k}")
            if raw:
                hook = self.f.get(f"webhook:late:{k}")
                out.append({**orjson.loads(raw), "webhook": orjson.loads(hook) if hook else None})
        return out

    @property
    def result(self) -> dict[str, Any] | None:
        raw = self.f.get("result")
        if raw:
            return dict(orjson.loads(raw))
        return {"status": "no_answer"} if self.f.get("status") == Status.NO_ANSWER else None

    def delivery(self, index: int) -> DeliveryInfo:
        f = self.f
        raw = f.get(f"d:{index}")
        d = orjson.loads(raw) if raw else {}
        return DeliveryInfo(
            index=index,
            target=self.targets[index],
            state=DeliveryState(f.get(f"ds:{index}", "pending")),
            error=d.get("error"),
            ref=dict(d.get("ref") or {}),
            at=d.get("at"),
            attempts=int(f.get(f"n:{index}") or 0),
            summary=f.get(f"s:{index}") or None,
            lease_until_ms=int((f.get(f"l:{index}") or "0").split(":", 1)[0] or 0),
        )

    def delivery_dicts(self) -> list[dict[str, Any]]:
        out = []
        for i, target in enumerate(orjson.loads(self.f.get("targets") or "[]")):
            raw = self.f.get(f"d:{i}")
            d = orjson.loads(raw) if raw else {"status": self.f.get(f"ds:{i}", "pending")}
            out.append(
                {
                    "target": target,
                    "status": d.get("status", "pending"),
                    "error": d.get("error"),
                    "ref": d.get("ref"),
                    "at": d.get("at"),
                    "step": self.step_of(i),
                    "reminders": self.reminders_sent(i),
                }
            )
        return out

    def remind_dict(self) -> dict[str, Any] | None:
        remind = self.remind
        if remind is None:
            return None
        return {**remind.model_dump(), "sent": int(self.f.get("rn") or 0)}

    def escalation_dicts(self) -> list[dict[str, Any]]:
        """Each escalation step: when it is due, when it started (null: not yet, or the
        question ended first) and its targets' indexes in `deliveries`."""
        created = self.created_ms
        return [
            {
                "step": st.number,
                "after_s": st.after_s,
                "due_at": iso(created + st.after_s * 1000),
                "started_at": iso(self.step_started_ms(st.number)),
                "targets": list(st.indexes),
            }
            for st in self.steps
        ]

    def deliveries(self) -> list[Delivery]:
        return [Delivery.model_validate(d) for d in self.delivery_dicts()]

    def public_dict(self, web_url: str | None = None, *, fragments: bool = False) -> dict[str, Any]:
        """The question resource as JSON-ready data, built straight from the hash (the hot
        path of every endpoint); `public()` is the same, validated as QuestionPublic.
        With fragments=True the stored JSON (questions, result) is embedded unparsed, for
        orjson.dumps only."""
        f = self.f
        raw = orjson.Fragment if fragments else orjson.loads
        late = self.late_answers()
        responder = None
        if (r := self.responder_doc) is not None:
            responder = {
                "channel": r.get("channel"),
                "user_id": r.get("user_id"),
                "name": r.get("name"),
            }
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
            "timeout_s": self.timeout_s,
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
            "remind": self.remind_dict(),
            "escalation": self.escalation_dicts(),
            "audit": self.audit_dict(),
            "late_answer": late[0] if late else None,
            "late_answers": late,
        }

    def public(self, web_url: str | None = None) -> QuestionPublic:
        return QuestionPublic.model_validate(self.public_dict(web_url))


def decode_hash(raw: Mapping[bytes, bytes]) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in raw.items()}


class Reads(Protocol):
    """A pipeline (redis-py's, sync or async) that the reads of a Record are queued on."""

    def hgetall(self, name: str) -> Any: ...
    def get(self, name: str) -> Any: ...


# How many replies queue_reads adds: record_from takes them in this order.
READS = 4


def queue_reads(pipe: Reads, question_id: str) -> None:
    """Queue the reads of one question: its hash (with its doc), the doc a question
    stored before kept apart, its deliveries and public result."""
    pipe.hgetall(keys.question(question_id))
    pipe.get(keys.doc(question_id))
    pipe.hgetall(keys.deliveries(question_id))
    pipe.get(keys.result_key(question_id))


def record_from(
    question_id: str,
    raw: Mapping[bytes, bytes],
    blob: bytes | None,
    deliveries: Mapping[bytes, bytes] | None = None,
    result: bytes | None = None,
) -> Record | None:
    """A Record from the question hash, the doc key (`blob`: where a question stored
    before its hash kept its doc has it), its deliveries hash and its result key as read
    from Redis (None if gone). The deliveries' `d:<i>` fields join the record's fields.
    An answered question's result is read from its public result key; a question
    answered before the hash stopped keeping a copy has it in the hash, used as it is."""
    if not raw:
        return None
    raw, kept = split_doc(raw)
    if kept is not None:
        blob = kept
    if blob is None:
        return None
    fields = {**decode_hash(raw), **decode_doc(blob), **decode_hash(deliveries or {})}
    if result is not None and "result" not in fields and fields.get("status") == Status.ANSWERED:
        fields["result"] = result.decode()
    return Record(question_id, fields)
