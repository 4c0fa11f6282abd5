"""End-to-end channel latency: the real API and a channel's real worker process against
the channel's fake platform, at a steady ask rate, measured as black boxes.

    python -m bench --only channel [--quick]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from askgate.redis_server import free_port
from askgate.tenants import create_tenant

from bench.channels import CHANNELS, load
from bench.channels.base import ChannelSpec
from bench.context import Context
from bench.loadgen import read_response
from bench.memory import breakdown, describe
from bench.procs import PY, Proc, askgate_env, cpu_s, start_api
from bench.report import Figure, pct
from bench.sample import BIG, QUESTIONS, make_redis, used_memory

TITLE = "Channels end to end: ask → prompt, tap → the agent has its answer"
METHOD = """
per channel: redis-server, `python -m askgate_api`, the channel's real worker process
(Telegram: `python -m askgate_telegram` in polling mode, `ASKGATE_TELEGRAM_API_BASE`
pointing at the fake; logging at info as JSON, as deployed) and the fake platform in its
own process (`bench/channels/platform.py`; Telegram: the tests' fake Bot API,
`tests/integration/telegram/fake_bot_api.py`), which plays the human: it answers each
prompt with its first option {think_ms:g} ms after the prompt arrived (Telegram: a tap on
the first button, handed to the worker's pending getUpdates). The agent side runs in the
benchmark's own process: open-loop, one ask every 1/{rate:g} s for {duration:g} s (each a
1-question ask with 4 options, its own session and its own chat), each followed at once by
GET /v1/questions/{{id}}/wait?timeout_s=60 until final, over keep-alive connections.
**ask → prompt**: from the agent reading the 201 to the fake receiving the request that
shows the prompt (Telegram: sendMessage with the keyboard, before its form is parsed).
**tap → answer**: from the fake handing the tap to the platform to the agent reading the
/wait response, which must be `answered` with the first option. Times are
CLOCK_MONOTONIC, shared by all processes. **prompts/s**: the worker is stopped (SIGSTOP),
{burst:,} asks are made through the API with answering off, the worker is resumed and
the prompts counted from its resumption to the last one received. CPU is each process's
user + system seconds over the steady run. Retained memory: INFO used_memory before the
steady run and after every question has ended and its prompt been turned into its
summary, / asks; the breakdown is MEMORY USAGE per key type, as in the memory figure.
"""


class PlatformProc:
    """The fake platform's process and its JSON-line conversation."""

    def __init__(self, ctx: Context, channel: str, think_ms: float) -> None:
        self.proc: Proc = ctx.procs.start(
            f"platform-{channel}", [PY, "-m", "bench.channels.platform", channel,
                                    "--think-ms", str(think_ms)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.base = self.expect("base", 60)

    def expect(self, key: str, timeout_s: float) -> Any:
        out = self.proc.proc.stdout
        assert out is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = out.readline()
            if not line:
                raise RuntimeError(f"the fake platform stopped:\n{self.proc.tail()}")
            msg = json.loads(line)
            if key in msg:
                return msg[key] if len(msg) == 1 else msg
        raise RuntimeError(f"no {key!r} from the fake platform in {timeout_s} s")

    def send(self, cmd: dict[str, Any], reply: str) -> Any:
        assert self.proc.proc.stdin is not None
        self.proc.proc.stdin.write(json.dumps(cmd).encode() + b"\n")
        self.proc.proc.stdin.flush()
        return self.expect(reply, 30)


class Pool:
    """Keep-alive HTTP/1.1 connections to the API, opened as needed."""

    def __init__(self, port: int, api_key: str) -> None:
        self.port = port
        self.auth = f"host: x\r\nauthorization: Bearer {api_key}\r\n"
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        conn = self.idle.pop() if self.idle else await asyncio.open_connection(
            "127.0.0.1", self.port)
        head = f"{method} {path} HTTP/1.1\r\n{self.auth}"
        if body:
            head += f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
        conn[1].write(head.encode() + b"\r\n" + body)
        try:
            status, data = await read_response(conn[0])
        except BaseException:
            conn[1].close()
            raise
        self.idle.append(conn)
        return status, data

    def close(self) -> None:
        for _, w in self.idle:
            w.close()


@dataclass
class Ask:
    i: int
    at: float  # when the open-loop schedule wanted it sent
    sent: float = 0.0
    accepted: float = 0.0
    woke: float = 0.0
    qid: str = ""
    status: str = ""
    answer: str = ""


async def ask_one(pool: Pool, spec: ChannelSpec, a: Ask, prefix: str, wait: bool) -> None:
    body = orjson.dumps({"questions": QUESTIONS[:1], "session": f"{prefix}-{a.i}",
                         "timeoutSeconds": 900, "targets": [spec.target(a.i)]})
    a.sent = time.monotonic()
    status, resp = await pool.request("POST", "/v1/questions", body)
    a.accepted = time.monotonic()
    if status != 201:
        a.status = f"ask answered {status}"
        return
    a.qid = orjson.loads(resp)["id"]
    while wait:
        status, resp = await pool.request("GET", f"/v1/questions/{a.qid}/wait?timeout_s=60")
        doc = orjson.loads(resp)
        if status != 200 or doc["status"] != "pending":
            a.woke = time.monotonic()
            a.status = doc.get("status", f"wait answered {status}")
            answers = ((doc.get("result") or {}).get("answers") or {}).get("answers") or {}
            a.answer = ",".join(v for vs in answers.values() for v in vs)
            return


async def steady(pool: Pool, spec: ChannelSpec, rate: float, duration: float, start: int,
                 prefix: str, wait: bool = True, settle_s: float = 60.0) -> list[Ask]:
    """Open loop: ask i is sent at t0 + i/rate whatever the earlier ones are doing."""
    n = max(1, int(rate * duration))
    t0 = time.monotonic() + 0.05
    asks = [Ask(start + k, t0 + k / rate) for k in range(n)]
    tasks = []
    for a in asks:
        delay = a.at - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(ask_one(pool, spec, a, prefix, wait)))
    done, pending = await asyncio.wait(tasks, timeout=settle_s)
    for t in pending:
        t.cancel()
    for t in done:
        if t.exception() is not None:
            raise RuntimeError(f"an ask failed: {t.exception()!r}")
    return asks


def self_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def run(ctx: Context) -> None:
    for name in CHANNELS:
        run_channel(ctx, name)


def run_channel(ctx: Context, name: str) -> None:
    spec = load(name)
    rate, duration = ctx.size(200.0, 50.0), ctx.size(30.0, 3.0)
    think_ms, burst = 500.0, ctx.size(3000, 300)
    fig = ctx.report.figure(f"channel-{name}", f"{TITLE} ({name})", METHOD.format(
        think_ms=think_ms, rate=rate, duration=duration, burst=burst))
    ctx.flush()

    async def setup() -> str:
        redis = make_redis(ctx.redis_url)
        try:
            tenant, key = await create_tenant(redis, "chan", max_pending=BIG, asks_per_s=BIG)
            await spec.configure(redis, tenant.id)
            return key
        finally:
            await redis.aclose()

    api_key = ctx.run(setup())
    port = free_port()
    api = start_api(ctx.procs, ctx.redis_url, port)
    platform = PlatformProc(ctx, name, think_ms)
    argv, env = spec.worker(ctx.redis_url, platform.base)
    worker = ctx.procs.start(f"worker-{name}", argv, askgate_env(ctx.redis_url, **env))
    platform.expect("ready", 120)
    pool = Pool(port, api_key)
    try:
        warm = ctx.run(steady(pool, spec, 20, 1.0, 0, "warm"))
        if not all(a.status == "answered" for a in warm):
            raise RuntimeError(f"warm-up asks did not all end answered: "
                               f"{[a.status for a in warm]}\n{worker.tail()}")
        result = measure_steady(ctx, fig, pool, spec, platform, [api, worker, platform.proc],
                                rate, duration)
        result["burst"] = measure_burst(ctx, fig, pool, spec, platform, worker, burst,
                                        start=len(warm) + int(rate * duration))
    finally:
        pool.close()
    fig.data.update(result)


def measure_steady(ctx: Context, fig: Figure, pool: Pool, spec: ChannelSpec,
                   platform: PlatformProc, procs: list[Proc], rate: float,
                   duration: float) -> dict[str, Any]:
    api, worker, fake = procs
    redis = make_redis(ctx.redis_url)
    before = ctx.run(used_memory(redis))
    pids = {"API": api.pid, "worker": worker.pid, "fake platform": fake.pid,
            "redis-server": ctx.redis_pid}
    cpu0 = {k: cpu_s(p) for k, p in pids.items()}
    self0, t0 = self_cpu_s(), time.monotonic()
    asks = ctx.run(steady(pool, spec, rate, duration, 1000, "ch"))
    wall = time.monotonic() - t0
    cpu = {k: (cpu_s(p) - cpu0[k]) / wall for k, p in pids.items()}
    cpu["agent (this process)"] = (self_cpu_s() - self0) / wall
    accepted = [a for a in asks if a.qid]
    deadline = time.monotonic() + 30
    while platform.send({"cmd": "count"}, "summaries")["summaries"] < len(accepted) + 20:
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    after = ctx.run(used_memory(redis))
    parts = ctx.run(breakdown(redis, "", max(1, len(accepted))))
    ctx.run(redis.aclose())
    path = ctx.workdir / "platform-steady.json"
    rec = dump(platform, path)

    first = QUESTIONS[0]["options"][0]["label"]
    prompt_ms, prompt_sent_ms, tap_ms, summary_ms, post_ms, lag_ms = [], [], [], [], [], []
    missing = {"prompt": 0, "answer": 0}
    for a in accepted:
        conv = spec.conv(a.i)
        times = rec["prompts"].get(conv)
        if not times:
            missing["prompt"] += 1
            continue
        prompt_ms.append((times[0] - a.accepted) * 1000)
        prompt_sent_ms.append((times[0] - a.sent) * 1000)
        tapped = rec["answered"].get(conv)
        if tapped is None or a.status != "answered" or a.answer != first:
            missing["answer"] += 1
            continue
        tap_ms.append((a.woke - tapped) * 1000)
        if conv in rec["summaries"]:
            summary_ms.append((rec["summaries"][conv] - tapped) * 1000)
    for a in asks:
        post_ms.append((a.accepted - a.sent) * 1000)
        lag_ms.append((a.sent - a.at) * 1000)
    span = max(a.sent for a in asks) - min(a.sent for a in asks)
    ok_all = not missing["prompt"] and not missing["answer"] and len(accepted) == len(asks)
    p99 = pct(prompt_ms, 0.99)
    fig.add(f"{spec.name}: ask accepted → prompt received by the fake, p50 / p99 "
            f"({rate:g} asks/s for {duration:g} s)",
            f"{pct(prompt_ms, 0.5):.1f} / {p99:.1f} ms", "p99 ≤ 20 ms", p99 <= 20 and ok_all)
    p99 = pct(tap_ms, 0.99)
    fig.add(f"{spec.name}: tap sent → agent's wait returns, p50 / p99",
            f"{pct(tap_ms, 0.5):.1f} / {p99:.1f} ms", "p99 ≤ 10 ms", p99 <= 10 and ok_all)
    fig.add(f"{spec.name}: steady load delivered",
            f"{len(asks):,} asks in {span:.1f} s ({len(asks) / max(span, 1e-9):,.0f}/s), "
            f"{len(accepted):,} accepted, {len(prompt_ms):,} prompted, {len(tap_ms):,} "
            f"answered with the tapped option")
    fig.note(f"{spec.name}: the ask itself (POST sent → 201 read) p50 / p99 "
             f"{pct(post_ms, 0.5):.1f} / {pct(post_ms, 0.99):.1f} ms; POST sent → prompt "
             f"p50 / p99 {pct(prompt_sent_ms, 0.5):.1f} / {pct(prompt_sent_ms, 0.99):.1f} ms; "
             f"tap → prompt edited into its summary p50 / p99 {pct(summary_ms, 0.5):.1f} / "
             f"{pct(summary_ms, 0.99):.1f} ms; the agent sent each ask p99 "
             f"{pct(lag_ms, 0.99):.1f} ms after its schedule (max {max(lag_ms):.1f} ms)")
    fig.note(f"{spec.name}: CPU during the steady run (cores busy, of 2): "
             + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items()))
    per = (after - before) / max(1, len(accepted))
    fig.add(f"{spec.name}: Redis memory per question after a real round trip (ask, "
            "prompt, tap, summary), stream entries included", f"{per:,.0f} B")
    fig.note(f"{spec.name}: after the steady run, by key type per question: "
             + describe(parts, per, min_b=5))
    return {"prompt_ms": prompt_ms, "tap_ms": tap_ms, "summary_ms": summary_ms,
            "post_ms": post_ms, "lag_ms": lag_ms, "missing": missing, "cpu": cpu,
            "retained_b": per, "parts": parts, "asks": len(asks), "accepted": len(accepted)}


def measure_burst(ctx: Context, fig: Figure, pool: Pool, spec: ChannelSpec,
                  platform: PlatformProc, worker: Proc, n: int, start: int) -> dict[str, Any]:
    platform.send({"cmd": "answer", "on": False}, "answering")
    have = platform.send({"cmd": "count"}, "prompts")["prompts"]
    errors0 = len(error_lines(worker))
    worker.signal(signal.SIGSTOP)
    try:
        asks = ctx.run(steady(pool, spec, 2000, n / 2000, start, "burst", wait=False))
    finally:
        time.sleep(0.3)
        c0, t0 = cpu_s(worker.pid), time.monotonic()
        worker.signal(signal.SIGCONT)
    accepted = [a for a in asks if a.qid]
    deadline = time.monotonic() + 120
    while platform.send({"cmd": "count"}, "prompts")["prompts"] < have + len(accepted):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the worker did not send {len(accepted)} prompts in 120 s")
        time.sleep(0.05)
    used = cpu_s(worker.pid) - c0
    path = ctx.workdir / "platform-burst.json"
    rec = dump(platform, path)
    times = sorted(rec["prompts"][spec.conv(a.i)][0] for a in accepted)
    last = times[-1]
    rate = len(accepted) / (last - t0)
    # The best one-second window: what the worker does while nothing goes wrong.
    peak = max(sum(1 for u in times[k:] if u < t + 1.0) for k, t in enumerate(times))
    errors = error_lines(worker)[errors0:]
    fig.add(f"{spec.name}: prompts/s one worker process sustains, {len(accepted):,} queued "
            "at once", f"{rate:,.0f} prompts/s over all of them ({last - t0:.2f} s), "
            f"{peak:,} in its best second; worker CPU {used / len(accepted) * 1e6:,.0f} µs "
            "per prompt")
    if errors:
        kinds = Counter(f"{e.get('event')}: {e.get('error')}" for e in errors)
        fig.note(f"{spec.name}: the worker logged {len(errors)} errors while it drained the "
                 "queue: " + "; ".join(f"{k} ×{v}" for k, v in kinds.most_common(3)))
    return {"n": len(accepted), "seconds": last - t0, "rate": rate, "peak_1s": peak,
            "cpu_s": used, "errors": len(errors)}


def dump(platform: PlatformProc, path: Path) -> dict[str, Any]:
    """The fake platform's records so far."""
    platform.send({"cmd": "dump", "path": str(path)}, "dumped")
    records: dict[str, Any] = json.loads(path.read_text())
    return records


def error_lines(p: Proc) -> list[dict[str, Any]]:
    """The process's JSON log lines at level error."""
    out = []
    for line in p.log.read_text(errors="replace").splitlines():
        if '"level": "error"' in line:
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
    return out
