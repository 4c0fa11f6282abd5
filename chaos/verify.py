"""What must hold after the chaos, read from the API, Redis and the fake receivers: every
accepted question ended once, with the state its one winner wrote; every waiter and
every webhook was told that state; nothing accepted was lost, nothing decided twice; a
late answer is kept on the resource, POSTed as its own event, and changes nothing."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import httpx
from askgate.store import keys
from askgate.store.conn import connect
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisError

from chaos.channels import Asked, Channel
from chaos.platforms import Receiver
from chaos.report import MUST_BE_ZERO
from chaos.workload import EXPECTED


async def fetch(
    http: httpx.AsyncClient, urls: list[str], headers: dict[str, str], qid: str
) -> dict[str, Any] | None:
    for attempt in range(50):
        try:
            r = await http.get(f"{urls[attempt % len(urls)]}/v1/questions/{qid}", headers=headers)
        except httpx.TransportError:
            await asyncio.sleep(0.2)
            continue
        if r.status_code == 200:
            return dict(r.json())
        if r.status_code == 404:
            return None
        await asyncio.sleep(0.2)
    return None


def settled(q: dict[str, Any], channels: list[Channel]) -> bool:
    """Nothing more is owed: final, webhook done, every shown prompt summarised."""
    if q["status"] == "pending":
        return False
    if q["webhook"] is None or q["webhook"]["status"] == "pending":
        return False
    # A late answer's delivery is owed from the moment it is kept: it shows no webhook
    # until the webhooks service (perhaps restarting) has begun its chain.
    if any(
        late.get("webhook") is None or late["webhook"]["status"] == "pending"
        for late in q["late_answers"]
    ):
        return False
    return not any(ch.owed(q) for ch in channels)


async def settle(
    http: httpx.AsyncClient,
    urls: list[str],
    headers: dict[str, str],
    ids: list[str],
    channels: list[Channel],
    timeout_s: float,
) -> tuple[dict[str, dict[str, Any]], float]:
    """Every question as it ends up, waiting (bounded) for what is still owed."""
    start = time.monotonic()
    seen: dict[str, dict[str, Any]] = {}
    todo = list(ids)
    slots = asyncio.Semaphore(16)  # hundreds of GETs queued in one pool crawl

    async def one(qid: str) -> dict[str, Any] | None:
        async with slots:
            return await fetch(http, urls, headers, qid)

    while todo and time.monotonic() - start < timeout_s:
        found = await asyncio.gather(*(one(q) for q in todo))
        later = []
        for qid, q in zip(todo, found, strict=True):
            if q is not None:
                seen[qid] = q
            if q is None or not settled(q, channels):
                later.append(qid)
        todo = later
        if todo:
            await asyncio.sleep(1.0)
    return seen, time.monotonic() - start


async def resolved_events(redis_url: str, cluster: bool = False) -> Counter[str]:
    """`question.resolved` entries per question in the web streams (each question's one
    notification log), read with a fresh connection, retried while Redis settles."""
    for _ in range(20):
        redis = connect(redis_url, cluster=cluster)
        try:
            return await _resolved(redis)
        except (RedisError, OSError):
            await asyncio.sleep(0.5)
        finally:
            await redis.aclose()
    raise RuntimeError("Redis did not answer to read the resolved events")


async def _resolved(redis: Redis | RedisCluster) -> Counter[str]:
    counts: Counter[str] = Counter()
    for stream in keys.all_events("web"):
        last = "-"
        while True:
            batch = await redis.xrange(stream, min=last, count=5000)
            for _, fields in batch:
                if fields[b"type"] == b"question.resolved":
                    counts[fields[b"id"].decode()] += 1
            if len(batch) < 5000:
                break
            last = "(" + batch[-1][0].decode()
    return counts


class Tally:
    """Counts by figure, and which questions made each count (for the report)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.examples: dict[str, list[str]] = {}
        self.lateness: dict[str, float] = {}  # a timed-out question's waiter: s past it

    def add(self, name: str, qid: str = "", when: bool = True, n: int = 1) -> None:
        if not when:
            return
        self.counts[name] += n
        if qid:
            self.examples.setdefault(name, []).append(qid)


def check(
    asked: dict[str, Asked],
    final: dict[str, dict[str, Any]],
    resolved: Counter[str],
    hooks: Receiver,
    channels: list[Channel],
) -> tuple[dict[str, Any], Tally]:
    t = Tally()
    lateness: list[float] = []
    webhook_bodies: dict[str, list[Any]] = {}
    late_bodies: dict[str, list[Any]] = {}
    for hit in hooks.snapshot():
        late = hit.headers.get("x-askgate-event") == "question.late_answer"
        (late_bodies if late else webhook_bodies).setdefault(hit.body["question_id"], []).append(
            hit
        )
    for qid, a in asked.items():
        t.add("questions accepted")
        q = final.get(qid)
        if q is None or q["status"] == "pending":
            t.add("lost (not final)", qid)
            continue
        t.add(f"ended {q['status']}" + (f" ({q['reason']})" if q["reason"] else ""))
        t.add("doubled (resolved more than once)", qid, resolved[qid] > 1)
        t.add("lost (never resolved)", qid, resolved[qid] == 0)
        t.add("doubled (two answers accepted)", qid, len(a.human_wins) > 1)
        if len(a.human_wins) == 1:
            # A channel's human replies '2', the same Production as an API answer.
            expected = EXPECTED.get(a.human_wins[0], EXPECTED["api"])
            t.add("doubled (result is not the winner's)", qid, q["result"] != expected)
        else:
            t.add(
                "answers whose 200 was lost to a kill",
                qid,
                q["status"] == "answered" or q["reason"] == "skipped",
            )
        t.add("answers refused as already final", n=a.told_final, when=a.told_final > 0)
        if a.result is None:
            t.add("waiters never told", qid)
        else:
            t.add("waiters told")
            t.add("waiters told a wrong result", qid, a.result != q["result"])
            if q["reason"] == "timeout" and a.returned_at is not None:
                lateness.append(a.returned_at - a.expires_at)
                t.lateness[qid] = a.returned_at - a.expires_at
        hook = q["webhook"] or {}
        t.add(f"webhook {hook.get('status', 'missing')}", qid)
        interrupted = sum(1 for x in hook.get("attempts", []) if x.get("error") == "interrupted")
        t.add("webhook attempts interrupted by a kill", qid, interrupted > 0, interrupted)
        hits = webhook_bodies.get(qid, [])
        ok = [h for h in hits if h.status == 200]
        t.add("webhook POSTs received", n=len(hits), when=bool(hits))
        t.add("webhooks never received", qid, not ok)
        t.add("webhooks received twice with 200 (at least once)", qid, len(ok) > 1)
        t.add(
            "webhooks told a wrong result", qid, any(h.body["result"] != q["result"] for h in hits)
        )
        late_answers(t, qid, a, q, late_bodies.get(qid, []))
    for channel in channels:
        for name, value in channel.verify(final).items():
            t.add(f"{channel.name}: {name}", n=value, when=value > 0)
        for name, ids in channel.examples.items():
            t.examples[f"{channel.name}: {name}"] = ids
    out: dict[str, Any] = {**dict.fromkeys(must_be_zero(channels), 0), **t.counts}
    out["max seconds a waiter waited past its deadline"] = round(max(lateness, default=0.0), 2)
    ordered = sorted(lateness) or [0.0]
    out["median seconds a waiter waited past its deadline"] = round(ordered[len(ordered) // 2], 2)
    return out, t


def must_be_zero(channels: list[Channel]) -> list[str]:
    return [*MUST_BE_ZERO, *(f"{ch.name}: {name}" for ch in channels for name in ch.must_be_zero)]


def late_answers(t: Tally, qid: str, a: Asked, q: dict[str, Any], hits: list[Any]) -> None:
    """Every late answer someone was told was kept is on the resource, the result is
    still the one it ended with, and each kept one was POSTed once as its own event."""
    kept = q["late_answers"]
    t.add("late answers told kept", n=len(a.late_kept), when=bool(a.late_kept))
    t.add("late answers on the resources", n=len(kept), when=bool(kept))
    t.add("late answers told kept, not on the resource", qid, len(kept) < len(a.late_kept))
    t.add("late answers kept twice (a request tried again)", qid, len(kept) > len(a.late_kept))
    if a.late_kept or kept:
        t.add("late answers that changed the result", qid, q["status"] == "answered")
    received = {h.body.get("n") for h in hits if h.status == 200}
    for n, late in enumerate(kept):
        t.add(f"late answer webhook {(late.get('webhook') or {}).get('status', 'missing')}", qid)
        t.add("late answer webhooks never received", qid, n not in received)
        t.add(
            "late answer webhooks with a wrong body",
            qid,
            any(
                h.body.get("n") == n and h.body["late_answer"]["answers"] != late["answers"]
                for h in hits
            )
            or any(h.body["result"] != q["result"] for h in hits),
        )


def per_channel(asked: dict[str, Asked], t: Tally, channels: list[str]) -> list[dict[str, Any]]:
    """The headline figures split by the channels a question was shown on (every question
    has the web target; most have one or two chat channels besides)."""
    lost = {q for name, qs in t.examples.items() if name.startswith("lost") for q in qs}
    doubled = {q for name, qs in t.examples.items() if name.startswith("doubled") for q in qs}
    rows = []
    for name in ["web", *channels]:
        ids = [q for q, a in asked.items() if any(tg["channel"] == name for tg in a.targets)]
        late = [t.lateness[q] for q in ids if q in t.lateness]
        rows.append(
            {
                "channel": name,
                "questions": len(ids),
                "answered through it": sum(1 for q in ids if name in asked[q].human_wins),
                "lost": len(lost.intersection(ids)),
                "doubled": len(doubled.intersection(ids)),
                "max s past deadline": round(max(late, default=0.0), 2),
            }
        )
    return rows
