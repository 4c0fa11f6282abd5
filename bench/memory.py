"""Redis memory per pending ask and per retained final question, by key type, and what
else would lower a retained question (measured, storage unchanged)."""

from __future__ import annotations

import asyncio
import gc
import re
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from askgate.dev.redis_server import RedisProcess, redis_server_binary
from askgate.domain.models import QuestionCreate, Responder
from askgate.store import keys
from askgate.store.doc import decode_doc, doc_fields, encode_doc, split_doc
from askgate.store.ledger import Ledger, StalePolicy
from askgate.store.store import Store
from askgate.store.tenants import create_tenant
from redis.asyncio import Redis

from bench.context import Context
from bench.report import Figure
from bench.sample import (
    ANSWERS,
    BIG,
    QUESTIONS,
    ask_body,
    make_redis,
    make_settings,
    server_version,
    used_memory,
)

TITLE = "Redis memory per pending ask and per retained final question"
METHOD = """
INFO `used_memory` before and after N asks through `Store.create` (RESERVE + CREATE),
then again after each of them is final: every question's Telegram target recorded as
delivered the way a chat worker records it (`askgate.store.ledger.Ledger`: claim, then
confirm with the message reference), then answered through `Store.answer()` with a
Telegram responder and the target it answered through (as the Telegram worker answers),
then its prompt marked as turned into its summary, as the worker marks it once it has
edited the prompt after the end (`Ledger.mark_summary`). The difference / N includes
every key, hash field, stream entry and keyspace entry the question leaves. The ask is
the verbose 3-question ask (3 × 4 options with descriptions, about 1.8 KB of text) with
one Telegram target (so `web` and `telegram` stream entries), run_id, agent_id and
tool_call_id and its own session; the retained figure is repeated with its first
question alone (1 question, 4 options). The breakdown is MEMORY USAGE (SAMPLES 0) of
every key, grouped by key type (ids, sessions and runs replaced by placeholders) and
divided by N; "keyspace" is what used_memory adds beyond the keys' own MEMORY USAGE (the
key dictionary and expiry entries, allocator rounding). The headline retained figure is
what stays for `ASKGATE_RESULT_TTL_S` (24 h): measured right after the end (a row of its
own), then again once every key that expires sooner has gone, deleted here as its TTL
would delete it (the session index: `ASKGATE_SESSION_HISTORY_S`, 1 h after the deadline;
the tenant's pending set, empty by then). It leaves out stream entries too: streams are
trimmed by length (`ASKGATE_STREAM_MAXLEN` per shard and channel), not kept for
`ASKGATE_RESULT_TTL_S`, so at a steady rate they are a fixed cost, not a per-question
one. The Telegram worker's own keys (a prompt's message mapping, a tap's update marker)
are not in this figure: the channel figure measures them after a real round trip. The
options are measured on the same N retained questions, each applied on top of the
previous one, as the fall in used_memory / N.
"""

# As the Telegram worker answers: a 10-digit user id, and the index of the target the
# answer came through (kept with the responder, for the audit).
RESPONDER = Responder(channel="telegram", user_id="7000004242", name="Ada Lovelace")
# The names the benchmarks give: question ids, shard tags, tenant ids, sessions
# (`<prefix>-session-<n>` here, `<prefix>-<n>` in the channel figure), runs, numbers.
_PLACEHOLDERS = [
    (re.compile(r"q[0-9a-f]{2}[a-z2-7]{16}"), "{id}"),
    (re.compile(r"\{ag:[0-9.]+\}"), "{ag:NN}"),
    (re.compile(r"(?<=[:{])t[0-9a-f]{12}(?=[:}])"), "{tenant}"),
    (re.compile(r"(?<=:)[a-z0-9]+-run-\d+"), "{run}"),
    (re.compile(r"(?<=:)[a-z0-9]+-(session-)?\d+$"), "{session}"),
    (re.compile(r"(?<=:)\d+(?=:|$)"), "{n}"),
    (re.compile(r"(?<=:)[0-9a-f]{64}$"), "{hash}"),
]


def key_type(name: str, tenant: str = "") -> str:
    if tenant:
        name = name.replace(tenant, "{tenant}")
    for pattern, sub in _PLACEHOLDERS:
        name = pattern.sub(sub, name)
    return name.removeprefix("askgate:").removeprefix("{ag:NN}:")


async def breakdown(redis: Redis, tenant: str, n: int) -> dict[str, dict[str, Any]]:
    """MEMORY USAGE per key type, summed, with a sample key's type/encoding and count."""
    out: dict[str, dict[str, Any]] = {}
    async for raw in redis.scan_iter(count=5000):
        kind = key_type(raw.decode(), tenant)
        size = int(await redis.memory_usage(raw, samples=0) or 0)
        row = out.get(kind)
        if row is None:
            enc = (await redis.object("encoding", raw) or b"?").decode()
            row = out[kind] = {
                "type": (await redis.type(raw)).decode(),
                "encoding": enc,
                "keys": 0,
                "bytes": 0,
            }
        row["keys"] += 1
        row["bytes"] += size
    for row in out.values():
        row["per_question"] = row["bytes"] / n
    return out


def describe(parts: dict[str, dict[str, Any]], per: float | None, min_b: float = 1.0) -> str:
    """The key types by size per question; with `per` (used_memory / N) also the
    keyspace remainder."""
    rows = sorted(parts.items(), key=lambda kv: -kv[1]["per_question"])
    shown = [
        f"`{k}` {v['type']}/{v['encoding']} {v['per_question']:,.0f} B"
        + (f" ({v['keys']:,} keys)" if v["keys"] > 1 and v["keys"] < 1000 else "")
        for k, v in rows
        if v["per_question"] >= min_b
    ]
    own = sum(v["per_question"] for v in parts.values())
    return ", ".join(shown) + ("" if per is None else f", keyspace {per - own:,.0f} B")


def is_stream(kind: str, parts: dict[str, dict[str, Any]]) -> bool:
    return bool(parts[kind]["type"] == "stream")


class Questions:
    """N asks of one shape through the real Store, then made final."""

    def __init__(
        self, redis: Redis, url: str, questions: list[dict[str, Any]], n: int, prefix: str
    ) -> None:
        self.redis = redis
        self.store = Store(redis, make_settings(url))
        self.questions = questions
        self.n = n
        self.prefix = prefix
        self.ids: list[str] = []
        self.tenant = ""

    async def _each(self, fn: Callable[[int], Awaitable[None]]) -> None:
        sem = asyncio.Semaphore(32)

        async def one(i: int) -> None:
            async with sem:
                await fn(i)

        await asyncio.gather(*(one(i) for i in range(self.n)))

    async def warm_up(self) -> None:
        """The tenant, the scripts loaded and every pooled connection open (their buffers
        are not the questions' memory)."""
        tenant, _ = await create_tenant(self.redis, "mem", max_pending=BIG, asks_per_s=BIG)
        self.tenant = tenant.id
        await asyncio.gather(*(self.redis.ping() for _ in range(40)))
        for script in (self.store._create, self.store._resolve, self.store._reserve):
            await self.redis.script_load(script.script)

    async def create(self) -> None:
        base = QuestionCreate.model_validate(
            ask_body(
                self.questions,
                "s",
                run_id="r",
                agent_id="claude-code",
                tool_call_id="t",
                targets=[{"channel": "telegram", "chat_id": 123456789}],
            )
        )
        self.ids = [""] * self.n

        async def one(i: int) -> None:
            body = base.model_copy(
                update={
                    "session": f"{self.prefix}-session-{i:06d}",
                    "run_id": f"{self.prefix}-run-{i}",
                    "tool_call_id": f"toolu_01{i:022d}",
                }
            )
            rec, created = await self.store.create(self.tenant, body)
            assert created
            self.ids[i] = rec.id

        await self._each(one)

    async def finish(self) -> None:
        ledger = Ledger(self.redis, self.store.settings)

        async def one(i: int) -> None:
            rec = await self.store.load(self.ids[i])
            assert rec is not None
            # As a chat worker does: claim the target, send, confirm with the message ref.
            claim = await ledger.claim(
                rec, 0, owner="vm-4242", lease_ms=60_000, on_stale=StalePolicy.ASSUME_SHOWN
            )
            assert claim.outcome == "claimed", claim
            ref = {
                "chat_id": "123456789",
                "message_id": 100000 + i,
                "bot": 7000000001,
                "chat_type": "private",
            }
            await ledger.confirm(rec, 0, owner="vm-4242", ref=ref)
            await self.store.answer(
                self.tenant,
                rec.id,
                {q["id"]: ANSWERS.get(q["id"], [q["options"][0]["label"]]) for q in self.questions},
                RESPONDER,
                target=0,
            )
            ended = await self.store.load(rec.id)
            assert ended is not None
            await ledger.mark_summary(ended, 0)

        await self._each(one)


async def measure(
    url: str,
    n: int,
    fig: Figure,
    questions: list[dict[str, Any]],
    label: str,
    pending_goal: bool,
    options: bool,
) -> dict[str, Any]:
    redis = make_redis(url)
    try:
        await redis.flushall()
        qs = Questions(redis, url, questions, n, "mem" if options else "mem1")
        await qs.warm_up()
        gc.collect()
        before = await used_memory(redis)
        await qs.create()
        pending = (await used_memory(redis) - before) / n
        pending_parts = await breakdown(redis, qs.tenant, n)
        await qs.finish()
        ended_all = (await used_memory(redis) - before) / n
        ended_parts = await breakdown(redis, qs.tenant, n)
        streams = sum(
            v["per_question"] for k, v in ended_parts.items() if is_stream(k, ended_parts)
        )
        ended = ended_all - streams
        gone = await expire_sooner(redis, qs.store.keep_ms, qs.tenant)
        retained_all = (await used_memory(redis) - before) / n
        parts = await breakdown(redis, qs.tenant, n)
        retained = retained_all - streams
        if pending_goal:
            fig.add(
                f"Memory per pending ask, {label}",
                f"{pending:,.0f} B",
                "≤ 2 KB (2,048 B)",
                pending <= 2048,
            )
        fig.add(
            f"Memory per retained final question for `ASKGATE_RESULT_TTL_S`, {label} "
            "(stream entries apart)",
            f"{retained:,.0f} B (+ {streams:,.0f} B of stream entries)",
            "≤ 1 KB (1,024 B)",
            retained <= 1024,
        )
        fig.add(
            f"The same right after the end, with the session index (kept "
            f"`ASKGATE_SESSION_HISTORY_S`, 1 h after the deadline), {label}",
            f"{ended:,.0f} B",
        )
        fig.note(f"{label}, pending, by key type per ask: " + describe(pending_parts, pending))
        fig.note(
            f"{label}, right after the end, by key type per question: "
            + describe(ended_parts, ended_all)
        )
        fig.note(
            f"{label}, for the retention period (gone before: {', '.join(gone) or 'nothing'}), "
            "by key type per question: " + describe(parts, retained_all)
        )
        out: dict[str, Any] = {
            "pending": pending,
            "retained": retained,
            "retained_with_streams": retained_all,
            "ended": ended,
            "expire_sooner": gone,
            "pending_parts": pending_parts,
            "ended_parts": ended_parts,
            "retained_parts": parts,
        }
        if options:
            out["options"] = await measure_options(redis, qs, retained)
        return out
    finally:
        await redis.aclose()


async def expire_sooner(redis: Redis, keep_ms: int, tenant: str) -> list[str]:
    """Delete every key whose TTL runs out well before the retention period (as its TTL
    will); returns their key types."""
    names: list[bytes] = [raw async for raw in redis.scan_iter(count=5000)]
    gone: set[str] = set()
    for start in range(0, len(names), 1000):
        chunk = names[start : start + 1000]
        async with redis.pipeline(transaction=False) as pipe:
            for name in chunk:
                pipe.pttl(name)
            ttls = await pipe.execute()
        soon = [n for n, ttl in zip(chunk, ttls, strict=True) if 0 < ttl < keep_ms - 3_600_000]
        if soon:
            await redis.delete(*soon)
            gone.update(key_type(n.decode(), tenant) for n in soon)
    return sorted(f"`{k}`" for k in gone)


async def rewrite(
    redis: Redis, ids: list[str], change: Callable[[dict[bytes, bytes]], None]
) -> None:
    """Write each question hash anew with `change` applied to its fields, so it gets the
    encoding a fresh write would (Redis never turns a hashtable back into a listpack)."""
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        async with redis.pipeline(transaction=False) as pipe:
            for qid in chunk:
                pipe.hgetall(keys.question(qid))
                pipe.pttl(keys.question(qid))
            rows = await pipe.execute()
        async with redis.pipeline(transaction=False) as pipe:
            for i, qid in enumerate(chunk):
                fields, ttl = rows[2 * i], rows[2 * i + 1]
                change(fields)
                pipe.delete(keys.question(qid))
                pipe.hset(keys.question(qid), mapping=fields)
                pipe.pexpire(keys.question(qid), ttl)
            await pipe.execute()


def drop(*names: str) -> Callable[[dict[bytes, bytes]], None]:
    def change(fields: dict[bytes, bytes]) -> None:
        for name in names:
            fields.pop(name.encode(), None)

    return change


def without_descriptions(fields: dict[bytes, bytes]) -> None:
    """The doc with its options' descriptions left out."""
    rest, blob = split_doc(fields)
    assert blob is not None
    doc = decode_doc(blob)
    questions = orjson.loads(doc["doc"])
    for q in questions:
        for option in q["options"]:
            option.pop("description", None)
    new = encode_doc(questions, orjson.loads(doc["targets"]), doc.get("callback"))
    fields.clear()
    fields.update(rest)
    fields.update((k.encode(), v) for k, v in doc_fields(new))


async def measure_options(redis: Redis, qs: Questions, retained: float) -> list[dict[str, Any]]:
    """Each option applied to the N retained questions on top of the previous ones; the
    fall in used_memory / N."""
    steps: list[tuple[str, Callable[[dict[bytes, bytes]], None]]] = [
        (
            "drop the run id and the channel list from the hash",
            drop("run", "channels"),
        ),
        ("drop the options' descriptions from the doc once final", without_descriptions),
    ]
    out = []
    level = retained
    for label, change in steps:
        before = await used_memory(redis)
        await rewrite(redis, qs.ids, change)
        saved = (before - await used_memory(redis)) / qs.n
        level -= saved
        out.append({"option": label, "saved": saved, "after": level})
    return out


def options_block(three: dict[str, Any], one: dict[str, Any]) -> str:
    def row(kind: str, d: dict[str, Any]) -> str:
        return f"`{kind}` {d['per_question']:,.0f} B"

    rows3 = three["retained_parts"]
    result = next(v["per_question"] for k, v in rows3.items() if k.startswith("result:"))
    targets = [{"channel": "telegram", "chat_id": "123456789"}]
    raw = len(orjson.dumps({"questions": QUESTIONS, "targets": targets}))
    doc = len(encode_doc(QUESTIONS, targets, None))
    what = ", ".join(
        row(k, v)
        for k, v in sorted(rows3.items(), key=lambda kv: -kv[1]["per_question"])
        if not is_stream(k, rows3) and v["per_question"] >= 1
    )
    lines = [
        "### What stays for the retention period, and what would lower it",
        "",
        f"What stays of the 3-question ask for `ASKGATE_RESULT_TTL_S` ({three['retained']:,.0f} B, "
        f"stream entries apart): {what}. The result key is the public contract (the "
        "result JSON, as it is); the question hash holds the status, times, ids, responder, "
        "each target's state and summary mark, and the questions themselves (the doc: "
        "questions, targets, callback), deflated with a preset dictionary of common English "
        "and software words and the ask's JSON shape, in `z<n>` fields short enough for a "
        "listpack. Already gone: delivery bookkeeping (at the final transition, and a shown "
        "prompt's message reference once its summary is shown), the session index (kept "
        "`ASKGATE_SESSION_HISTORY_S` after the deadline), and no run index is written.",
        "",
        f"The text is the floor: this verbose ask's doc ({raw:,} B of JSON) deflates to "
        f"{doc:,} B, and its result key takes {result:,.0f} B: {doc + result:,.0f} B before "
        "the hash's other fields (about 300 B: status, times, ids, responder, target "
        "states) and the two keys' own overhead, so the 3-question ask cannot reach 1 KB "
        "while GET /v1/questions/{id} shows what was asked; the 1-question ask shows where "
        "an ordinary ask lands. A listpack is allocated in jemalloc's size classes (steps of "
        "128 B up to 1 KB, 256 B up to 2 KB), so a hash a few bytes past a step costs the "
        "whole step: the savings below come in such steps. Measured on this run's retained "
        "questions, each option on top of the one above it (neither is in askgate's "
        "storage: both change what the resource shows):",
        "",
        "| option | saves (3 q / 1 q) | retained after, 3-question ask | "
        "retained after, 1-question ask |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {a['option']} | {a['saved']:,.0f} / {b['saved']:,.0f} B | "
        f"{a['after']:,.0f} B | {b['after']:,.0f} B |"
        for a, b in zip(three["options"], one["options"], strict=True)
    ]
    return "\n".join(lines)


def run(ctx: Context) -> None:
    n = ctx.size(10_000, 2000)
    fig = ctx.report.figure("memory", TITLE, METHOD)
    ctx.flush()
    three = ctx.run(measure(ctx.redis_url, n, fig, QUESTIONS, "3-question ask", True, True))
    one = ctx.run(measure(ctx.redis_url, n, fig, QUESTIONS[:1], "1-question ask", False, True))
    fig.block(options_block(three, one))
    fig.data.update(n=n, three=three, one=one)
    embedded = redis_server_binary()
    if server_version(embedded) != server_version(ctx.redis_binary):
        server = RedisProcess(binary=embedded).start()
        try:
            other = ctx.run(
                measure(
                    server.url,
                    min(n, 2000),
                    Figure("x", "", "", quiet=True),
                    QUESTIONS,
                    "3-question ask, embedded redis-server",
                    True,
                    False,
                )
            )
        finally:
            server.stop()
        fig.add(
            f"Memory per pending 3-question ask on redis-server "
            f"{server_version(embedded)} (what `make run` embeds)",
            f"{other['pending']:,.0f} B",
        )
        fig.data["embedded"] = other
