"""What the benchmarks ask, and askgate's Redis writes for it, recorded once and replayed.

`QUESTIONS` is a realistic verbose ask (3 questions, 4 options each with a description,
about 1.8 KB of text). `AskTemplate` runs `Store.create` once against recorders of its
RESERVE and CREATE script calls; `calls()` then gives the same calls for another session
(id, shard tag, session, run, tool call id substituted, times moved; the tool call id
inside the deflated doc stays the recorded one), so fixtures of 100,000
questions are written exactly as the API writes them, pipelined, and the baselines in
`bare_app` do byte for byte the API's Redis work. A storage-layout change in `Store`
reaches both without touching this file.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from askgate.domain.models import QuestionCreate
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.conn import connect
from askgate.store.record import new_question_id
from askgate.store.store import Store
from redis.asyncio import Redis

SECRET = "bench-secret-" + "x" * 40
BIG = 100_000_000  # quotas that never interfere

QUESTIONS: list[dict[str, Any]] = [
    {
        "id": "deploy_target",
        "header": "Deploy",
        "question": "Where should I deploy the new billing service once the integration "
        "tests pass?",
        "options": [
            {
                "label": "Staging (Recommended)",
                "description": "Deploy to staging first and run the smoke suite against the "
                "sandbox payment provider.",
            },
            {
                "label": "Production canary",
                "description": "Roll out to 5% of production traffic behind the billing_v2 "
                "feature flag.",
            },
            {
                "label": "Production, all regions",
                "description": "Full rollout in eu-west-1 and us-east-1 during tonight's "
                "maintenance window.",
            },
            {
                "label": "Hold the release",
                "description": "Keep the branch open; I will write up the remaining risks "
                "instead of deploying.",
            },
        ],
    },
    {
        "id": "db_migration",
        "header": "Migration",
        "question": "How should the schema change to the invoices table be applied?",
        "options": [
            {
                "label": "Online migration",
                "description": "Add the new columns nullable, backfill in batches of 10k rows, "
                "then switch reads.",
            },
            {
                "label": "Maintenance window",
                "description": "Lock the table for about four minutes and migrate in one "
                "transaction.",
            },
            {
                "label": "Shadow table",
                "description": "Write to both tables for a day, compare, then swap names.",
            },
            {
                "label": "Skip for now",
                "description": "Ship the code without the new columns; the feature stays off.",
            },
        ],
    },
    {
        "id": "notify",
        "header": "Notify",
        "question": "Who should I tell when the rollout is finished?",
        "multiSelect": True,
        "options": [
            {
                "label": "Billing team",
                "description": "Post a summary with the dashboard link in #billing-eng.",
            },
            {
                "label": "Support leads",
                "description": "Email the support leads the customer-facing changes.",
            },
            {
                "label": "Finance",
                "description": "Tell finance that invoice numbering starts a new sequence.",
            },
            {
                "label": "Nobody",
                "description": "No announcement; the change is invisible to users.",
            },
        ],
    },
]
ANSWERS: dict[str, list[str]] = {
    "deploy_target": ["Staging"],
    "db_migration": ["Online migration"],
    "notify": ["Billing team", "Finance"],
}


def ask_body(questions: list[dict[str, Any]], session: str, **extra: Any) -> dict[str, Any]:
    return {"questions": questions, "session": session, **extra}


def make_redis(url: str, max_connections: int = 64) -> Redis:
    # Generous timeouts: the machine may be busy with other work; this is not under test.
    return connect(
        url,
        max_connections=max_connections,
        pool_timeout_s=60.0,
        connect_timeout_s=10.0,
        socket_timeout_s=60.0,
    )


def make_settings(url: str, **over: Any) -> Settings:
    values: dict[str, Any] = {
        "redis_url": url,
        "secret_key": SECRET,
        "tenant_max_pending": BIG,
        "tenant_asks_per_s": BIG,
        "timeout_min_s": 1,
        **over,
    }
    return Settings(**values)


async def used_memory(redis: Redis) -> int:
    return int((await redis.info("memory"))["used_memory"])


def server_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    v = re.search(r"v=(\S+)", out)
    m = re.search(r"malloc=(\S+)", out)
    return f"{v.group(1) if v else '?'} ({m.group(1) if m else '?'})"


# -- Store.create, recorded once ------------------------------------------------------------

_SESSION = "tmpl-session-7f3a9c"
_RUN = "tmpl-run-51d0e2"
_TCID = "tmpl-tcid-c4b8aa"

_WEEK_MS = 7 * 86_400_000
Call = tuple[str, list[Any], list[Any]]  # (script: "reserve" | "create", keys, args)


@dataclass
class AskTemplate:
    """Store.create's RESERVE and CREATE calls for one ask, and what differs per ask."""

    tenant: str
    timeout_s: int
    run: bool
    tcid: bool
    recorded: list[Call] = field(default_factory=list)
    qid: str = ""
    tag: str = ""
    now: int = 0

    @classmethod
    async def record(cls, store: Store, tenant: str, body: dict[str, Any]) -> AskTemplate:
        """Run Store.create once for `body` (its session, run_id and tool_call_id are
        replaced by markers) with both scripts swapped for recorders."""
        body = {**body, "session": _SESSION}
        if body.get("run_id"):
            body["run_id"] = _RUN
        if body.get("tool_call_id"):
            body["tool_call_id"] = _TCID
        ask = QuestionCreate.model_validate(body)
        tmpl = cls(
            tenant,
            store.clamp_timeout(ask.timeoutSeconds),
            bool(ask.run_id),
            bool(ask.tool_call_id),
        )
        dry = Store(store.redis, store.settings)

        def recorder(kind: str, reply: list[bytes]) -> Any:
            async def call(keys: Any = None, args: Any = None, client: Any = None) -> Any:
                tmpl.recorded.append((kind, list(keys), list(args)))
                return reply

            return call

        dry._reserve = recorder("reserve", [b"ok"])
        dry._create = recorder("create", [b"created"])
        rec, _ = await dry.create(tenant, ask)
        tmpl.qid = rec.id
        tmpl.tag = keys.tag(keys.shard_of(rec.id))
        tmpl.now = int(rec.f["created"])
        return tmpl

    def calls(
        self, session: str, run: str = "", tcid: str = "", now_ms: int | None = None
    ) -> tuple[str, list[Call]]:
        """(question id, the RESERVE and CREATE calls) for an ask in `session`."""
        qid = new_question_id(self.tenant, session, run or None, tcid or None)
        swap = {
            _SESSION: session,
            self.qid: qid,
            self.tag: keys.tag(keys.shard_for(self.tenant, session)),
        }
        if self.run:
            swap[_RUN] = run
        if self.tcid:
            swap[_TCID] = tcid
        now = int(time.time() * 1000) if now_ms is None else now_ms
        shift = now - self.now

        def sub(value: Any) -> Any:
            if isinstance(value, str):
                for old, new in swap.items():
                    if old in value:
                        value = value.replace(old, new)
                return value
            # A time (ms since the epoch) near the recording moves with `now`: creation,
            # expiry, a chat target's show-by deadline. Durations and counts are small.
            if isinstance(value, int) and abs(value - self.now) < _WEEK_MS:
                return value + shift
            return value

        return qid, [
            (kind, [sub(k) for k in ks], [sub(a) for a in args]) for kind, ks, args in self.recorded
        ]


async def bulk_create(
    store: Store, tmpl: AskTemplate, n: int, prefix: str, *, chunk: int = 1000
) -> list[str]:
    """n pending questions, as Store.create writes them, `chunk` asks per round trip.
    Ask i has session `{prefix}-{i}` (and run `{prefix}-run-{i}` if the template has a
    run)."""
    scripts = {"reserve": store._reserve, "create": store._create}
    ids: list[str] = []
    for start in range(0, n, chunk):
        async with store.redis.pipeline(transaction=False) as pipe:
            for i in range(start, min(n, start + chunk)):
                qid, calls = tmpl.calls(
                    f"{prefix}-{i}", run=f"{prefix}-run-{i}", tcid=f"{prefix}-call-{i}"
                )
                ids.append(qid)
                for kind, ks, args in calls:
                    await scripts[kind](keys=ks, args=args, client=pipe)
            replies = await pipe.execute()
        bad = [r for r in replies if r[0] not in (b"ok", b"created")]
        if bad:
            raise RuntimeError(f"bulk create failed: {bad[:3]}")
    return ids
