"""End-to-end channel latency: the real API and a channel's real worker process against
the channel's fake platform, at a steady ask rate, measured as black boxes.

    python -m bench --only channel [--quick]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from askgate.dev.redis_server import free_port
from askgate.store.tenants import create_tenant

from bench.channels import CHANNELS, load
from bench.channels.base import ChannelSpec, Worker
from bench.context import Context
from bench.loadgen import read_response
from bench.memory import breakdown, describe
from bench.procs import (
    PY,
    Proc,
    askgate_env,
    cpu_s,
    machine_times,
    self_cpu_s,
    start_api,
    steal_share,
)
from bench.report import STEAL, Figure, pct
from bench.sample import BIG, QUESTIONS, make_redis, used_memory

CHUNK = 80  # prompts queued at once when timing a worker's rate
CHUNK_WAIT_S = 10.0
IDLE_WAIT_S = 45.0  # past one reclaim cycle (30 s) of the worker's consumer
# How long one big queue may take to drain: past one reclaim cycle of the worker's
# consumer (30 s), so an entry that failed once is seen retried.
BIG_WAIT_S = 35.0
TITLE = "Channels end to end: ask → prompt, tap → the agent has its answer"
METHOD = """
per channel: redis-server, `python -m askgate_api`, the channel's real worker process
(Telegram: `python -m askgate_telegram` in polling mode, `ASKGATE_TELEGRAM_API_BASE`
pointing at the fake; Slack: `python -m askgate_slack` in HTTP mode; Discord:
`python -m askgate_discord`; logging at info as JSON, as deployed) and the fake platform
in its own process (`bench/channels/platform.py`; the tests' fakes: Telegram's Bot API
`tests/integration/telegram/fake_bot_api.py`, Slack's Web API
`tests/integration/slack/fake_slack.py`, Discord's REST API
`tests/integration/discord/fake_discord.py`), which plays the human: it answers each
prompt with its first option {think_ms:g} ms after the prompt arrived (Telegram: a tap on
the first button, handed to the worker's pending getUpdates; Slack: a signed
block_actions POST to the worker's interactivity endpoint; Discord: an Ed25519-signed
component interaction POST to the worker). Each channel starts from an empty Redis.
The agent side runs in the benchmark's own process: open-loop, one ask every 1/rate s
(each a 1-question ask with 4 options, its own session and its own chat), each followed
at once by
GET /v1/questions/{{id}}/wait?timeout_s=60 until final, over keep-alive connections; first
at a light {light_rate:g} asks/s for {light_s:g} s, then at the goal's {rate:g} asks/s for
{duration:g} s. An ask that has not ended answered 20 s after the last one was sent
counts as lost (it shows in "what arrived", not in the percentiles).
**ask → prompt**: from the agent reading the 201 to the fake receiving the request that
shows the prompt (Telegram: sendMessage with the keyboard, Slack: chat.postMessage with
the buttons, Discord: the message create with components; before the body is parsed).
**tap → answer**: from the fake handing the tap to the platform (Telegram: the update
put in the worker's long poll; Slack, Discord: the signed POST to the worker going out,
at most 64 in flight from the fake, the rest waiting in the fake) to the agent reading the
/wait response, which must be `answered` with the first option. Times are
CLOCK_MONOTONIC, shared by all processes. **prompts/s** (answering off): the worker is
stopped (SIGSTOP), asks are made through the API, the worker is resumed (SIGCONT) and
its prompts timed from the resumption to the last one received, after the goal phase
(once the worker has gone idle, up to 45 s): {rounds} queues of {chunk}, then one queue
of {burst:,}. CPU is each process's user +
system seconds over a phase; divided by the phase's asks and summed over the processes,
what one question's round trip costs the machine (at the light rate the processes'
idle upkeep weighs in), and summed as cores busy, how much of the 2 cores the phase used. Memory:
INFO used_memory before the light phase and after every question of it has ended and
its prompt been turned into its summary, / asks; the breakdown is MEMORY USAGE per key
type of everything in Redis then, / questions in Redis, as in the memory figure.

What bounds the goal's rate here: a worker is one process, so one core is its ceiling,
and each question costs it a prompt, a tap and a summary (the notes give its CPU per
question and how much of its core it kept busy). Once that CPU times the rate nears a
core, prompts and taps wait behind each other, and the latencies above are that queue:
they grow through the phase while every ask still ends answered. A deployment runs more
replicas of the worker (they share the consumer group) on more cores; on this machine
they would share the same 2 cores with the API, Redis, the fake platform and the agent
(the notes: cores busy, all processes together). The light rate shows the same round trip
without the queue: a chain of hops from process to process (agent, API, Redis, worker,
fake platform, and back for the tap), each waiting for the one before, so its latency is
what such a hop costs on this machine at that hour (the wake figure's round trips from
idle; the steal beside each phase's CPU) more than the CPU any process spends.
"""


class PlatformProc:
    """The fake platform's process and its JSON-line conversation."""

    def __init__(self, ctx: Context, channel: str, think_ms: float, worker: Worker) -> None:
        argv = [PY, "-m", "bench.channels.platform", channel, "--think-ms", str(think_ms)]
        argv += ["--worker-port", str(worker.port), "--tenant", worker.tenant]
        self.proc: Proc = ctx.procs.start(
            f"platform-{channel}",
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.base: str = self.expect("base", 60)["base"]

    def expect(self, key: str, timeout_s: float) -> dict[str, Any]:
        out = self.proc.proc.stdout
        assert out is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = out.readline()
            if not line:
                raise RuntimeError(f"the fake platform stopped:\n{self.proc.tail()}")
            msg: dict[str, Any] = json.loads(line)
            if key in msg:
                return msg
        raise RuntimeError(f"no {key!r} from the fake platform in {timeout_s} s")

    def send(self, cmd: dict[str, Any], reply: str) -> dict[str, Any]:
        assert self.proc.proc.stdin is not None
        self.proc.proc.stdin.write(json.dumps(cmd).encode() + b"\n")
        self.proc.proc.stdin.flush()
        return self.expect(reply, 30)


class Pool:
    """Keep-alive HTTP/1.1 connections to the API, opened as needed."""

    # uvicorn closes a keep-alive connection idle for 5 s: never reuse one near that.
    MAX_IDLE_S = 2.0

    def __init__(self, port: int, api_key: str) -> None:
        self.port = port
        self.auth = f"host: x\r\nauthorization: Bearer {api_key}\r\n"
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []

    async def _conn(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        while self.idle:
            reader, writer, since = self.idle.pop()
            if time.monotonic() - since < self.MAX_IDLE_S and not reader.at_eof():
                return reader, writer
            writer.close()
        return await asyncio.open_connection("127.0.0.1", self.port)

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        reader, writer = await self._conn()
        head = f"{method} {path} HTTP/1.1\r\n{self.auth}"
        if body:
            head += f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
        writer.write(head.encode() + b"\r\n" + body)
        try:
            status, data = await read_response(reader)
        except BaseException:
            writer.close()
            raise
        self.idle.append((reader, writer, time.monotonic()))
        return status, data

    def close(self) -> None:
        for _, w, _ in self.idle:
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
    try:
        await _ask_one(pool, spec, a, prefix, wait)
    except (OSError, asyncio.IncompleteReadError) as exc:  # counted as not answered
        a.status = f"error: {exc!r}"


async def _ask_one(pool: Pool, spec: ChannelSpec, a: Ask, prefix: str, wait: bool) -> None:
    body = orjson.dumps(
        {
            "questions": QUESTIONS[:1],
            "session": f"{prefix}-{a.i}",
            "timeoutSeconds": 900,
            "targets": [spec.target(a.i)],
        }
    )
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


async def steady(
    pool: Pool,
    spec: ChannelSpec,
    rate: float,
    duration: float,
    start: int,
    prefix: str,
    wait: bool = True,
    settle_s: float = 60.0,
) -> list[Ask]:
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


def run(ctx: Context) -> None:
    for name in CHANNELS:
        run_channel(ctx, name)


def run_channel(ctx: Context, name: str) -> None:
    spec = load(name)
    rate, duration = ctx.size(200.0, 50.0), ctx.size(30.0, 3.0)
    light_rate, light_s = ctx.size(20.0, 10.0), ctx.size(10.0, 2.0)
    think_ms, burst = 500.0, 300
    fig = ctx.report.figure(
        f"channel-{name}",
        f"{TITLE} ({name})",
        METHOD.format(
            think_ms=think_ms,
            rate=rate,
            duration=duration,
            burst=burst,
            chunk=CHUNK,
            rounds=ctx.size(3, 2),
            light_rate=light_rate,
            light_s=light_s,
        ),
    )
    ctx.flush()

    async def setup() -> tuple[str, str]:
        redis = make_redis(ctx.redis_url)
        try:
            # Each channel's figures (memory breakdown included) start from an empty Redis.
            await redis.flushdb()
            tenant, key = await create_tenant(redis, "chan", max_pending=BIG, asks_per_s=BIG)
            await spec.configure(redis, tenant.id)
            return tenant.id, key
        finally:
            await redis.aclose()

    tenant_id, api_key = ctx.run(setup())
    port = free_port()
    api = start_api(ctx.procs, ctx.redis_url, port)
    at = Worker(free_port(), tenant_id)
    platform = PlatformProc(ctx, name, think_ms, at)
    argv, env = spec.worker(platform.base, at)
    worker = ctx.procs.start(f"worker-{name}", argv, askgate_env(ctx.redis_url, **env))
    platform.expect("ready", 120)
    pool = Pool(port, api_key)
    procs = [api, worker, platform.proc]
    try:
        warm = ctx.run(steady(pool, spec, 20, 1.0, 0, "warm"))
        if not all(a.status == "answered" for a in warm):
            raise RuntimeError(
                f"warm-up asks did not all end answered: "
                f"{[a.status for a in warm]}\n{worker.tail()}"
            )
        # The phases that stop the worker (SIGSTOP) come last.
        result = {
            "light": measure_steady(
                ctx,
                fig,
                pool,
                spec,
                platform,
                procs,
                light_rate,
                light_s,
                10_000,
                memory=True,
            ),
            "goal": measure_steady(
                ctx, fig, pool, spec, platform, procs, rate, duration, 100_000, memory=False
            ),
        }
        result["rate"] = measure_rate(ctx, fig, pool, spec, platform, worker, ctx.size(3, 2))
        result["burst"] = measure_burst(ctx, fig, pool, spec, platform, worker, burst)
    finally:
        pool.close()
        # The next channel starts from a flushed Redis on idle cores: this channel's
        # processes (a worker may still be working off the 200/s backlog) stop here.
        for p in (worker, platform.proc, api):
            ctx.procs.stop(p)
    fig.data.update(result)


def measure_steady(
    ctx: Context,
    fig: Figure,
    pool: Pool,
    spec: ChannelSpec,
    platform: PlatformProc,
    procs: list[Proc],
    rate: float,
    duration: float,
    start: int,
    memory: bool,
    label: str = "",
) -> dict[str, Any]:
    """One open-loop phase; with memory=True also Redis memory per finished question."""
    api, worker, fake = procs
    label = f"{spec.name} at {rate:g} asks/s for {duration:g} s" + (f", {label}" if label else "")
    redis = make_redis(ctx.redis_url)
    before = ctx.run(used_memory(redis))
    summaries0 = platform.send({"cmd": "count"}, "summaries")["summaries"]
    errors0 = len(error_lines(worker))
    pids = {
        "API": api.pid,
        "worker": worker.pid,
        "fake platform": fake.pid,
        "redis-server": ctx.redis_pid,
    }
    cpu0 = {k: cpu_s(p) for k, p in pids.items()}
    self0, t0, times0 = self_cpu_s(), time.monotonic(), machine_times()
    asks = ctx.run(steady(pool, spec, rate, duration, start, f"ch{start}", settle_s=20.0))
    wall = time.monotonic() - t0
    steal = steal_share(times0, machine_times())
    cpu = {k: (cpu_s(p) - cpu0[k]) / wall for k, p in pids.items()}
    cpu["agent (this process)"] = (self_cpu_s() - self0) / wall
    accepted = [a for a in asks if a.qid]
    deadline = time.monotonic() + (15 if memory else 5)
    while (
        platform.send({"cmd": "count"}, "summaries")["summaries"] < summaries0 + len(accepted)
    ) and time.monotonic() < deadline:
        time.sleep(0.2)
    errors = error_lines(worker)[errors0:]
    rec = dump(platform, ctx.workdir / f"platform-{start}.json")

    first = QUESTIONS[0]["options"][0]["label"]
    prompt_ms, prompt_sent_ms, tap_ms, summary_ms, post_ms, lag_ms = [], [], [], [], [], []
    for a in accepted:
        conv = spec.conv(a.i)
        times = rec["prompts"].get(conv)
        if not times:
            continue
        prompt_ms.append((times[0] - a.accepted) * 1000)
        prompt_sent_ms.append((times[0] - a.sent) * 1000)
        tapped = rec["answered"].get(conv)
        if tapped is None or a.status != "answered" or a.answer != first:
            continue
        tap_ms.append((a.woke - tapped) * 1000)
        if conv in rec["summaries"]:
            summary_ms.append((rec["summaries"][conv] - tapped) * 1000)
    for a in asks:
        post_ms.append((a.accepted - a.sent) * 1000)
        lag_ms.append((a.sent - a.at) * 1000)
    span = max(a.sent for a in asks) - min(a.sent for a in asks)
    complete = len(prompt_ms) == len(tap_ms) == len(asks)
    p99 = pct(prompt_ms, 0.99)
    fig.add(
        f"{label}: ask accepted → prompt received by the fake, p50 / p99",
        f"{pct(prompt_ms, 0.5):.1f} / {p99:.1f} ms",
        "p99 ≤ 20 ms",
        p99 <= 20 and complete,
    )
    p99 = pct(tap_ms, 0.99)
    fig.add(
        f"{label}: tap sent → agent's wait returns, p50 / p99",
        f"{pct(tap_ms, 0.5):.1f} / {p99:.1f} ms",
        "p99 ≤ 10 ms",
        p99 <= 10 and complete,
    )
    fig.add(
        f"{label}: what arrived",
        f"{len(asks):,} asks sent in {span:.1f} s ({len(asks) / max(span, 1e-9):,.0f}/s), "
        f"{len(accepted):,} accepted, {len(prompt_ms):,} prompts received, "
        f"{len(tap_ms):,} agents answered with the tapped option within 20 s of the "
        "last ask",
        "all",
        complete,
    )
    fig.note(
        f"{label}: the ask itself (POST sent → 201 read) p50 / p99 "
        f"{pct(post_ms, 0.5):.1f} / {pct(post_ms, 0.99):.1f} ms; POST sent → prompt "
        f"p50 / p99 {pct(prompt_sent_ms, 0.5):.1f} / {pct(prompt_sent_ms, 0.99):.1f} ms; "
        f"tap → prompt edited into its summary p50 / p99 {pct(summary_ms, 0.5):.1f} / "
        f"{pct(summary_ms, 0.99):.1f} ms; the agent sent each ask p99 "
        f"{pct(lag_ms, 0.99):.1f} ms after its schedule (max {max(lag_ms):.1f} ms)"
    )
    fig.note(
        f"{label}: CPU (cores busy, of 2): "
        + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items())
        + f"; {STEAL.format(steal * 100)}"
    )
    per_q_ms = {k: v * wall / max(1, len(accepted)) * 1000 for k, v in cpu.items()}
    if accepted:
        fig.note(
            f"{label}: CPU per question, every process of the round trip (idle upkeep over "
            f"the phase included): {sum(per_q_ms.values()):.1f} ms ("
            + ", ".join(f"{k} {v:.1f}" for k, v in per_q_ms.items())
            + f"); all processes together kept {sum(cpu.values()):.2f} of the 2 cores busy"
        )
    if accepted and not memory:  # at the light rate idle upkeep dominates CPU per question
        own_ms = sum(per_q_ms[k] for k in ("API", "worker", "redis-server"))
        fig.note(
            f"{label}: what bounds it: the worker kept {cpu['worker']:.2f} of its one core "
            f"busy at {per_q_ms['worker']:.1f} ms of CPU per question (so one worker process "
            f"tops out near {1000 / max(per_q_ms['worker'], 1e-9):,.0f} round trips/s); "
            f"askgate's own processes (API, worker, redis-server) took {own_ms:.1f} ms per "
            f"question, {own_ms * rate / 1000:.2f} of the 2 cores at this rate"
        )
    if errors:
        kinds = Counter(f"{e.get('event')}: {e.get('error')}" for e in errors)
        fig.note(
            f"{label}: the worker logged {len(errors)} errors: "
            + "; ".join(f"{k} ×{v}" for k, v in kinds.most_common(3))
        )
    out: dict[str, Any] = {
        "rate": rate,
        "duration_s": duration,
        "prompt_ms": prompt_ms,
        "tap_ms": tap_ms,
        "summary_ms": summary_ms,
        "post_ms": post_ms,
        "lag_ms": lag_ms,
        "cpu": cpu,
        "cpu_per_question_ms": per_q_ms,
        "asks": len(asks),
        "accepted": len(accepted),
        "errors": len(errors),
    }
    if memory:
        per = (ctx.run(used_memory(redis)) - before) / max(1, len(accepted))
        parts = ctx.run(breakdown(redis, "", 1))
        questions = parts.get("q:{id}", {}).get("keys", 1)
        for v in parts.values():
            v["per_question"] = v["bytes"] / questions
        fig.add(
            f"{spec.name}: Redis memory per question after a real round trip (ask, "
            "prompt, tap, summary), stream entries included",
            f"{per:,.0f} B",
        )
        fig.note(
            f"{spec.name}: after the round trips, by key type per question "
            f"(MEMORY USAGE of everything in Redis / its {questions} questions): "
            + describe(parts, None, min_b=5)
        )
        out.update(retained_b=per, parts=parts)
    ctx.run(redis.aclose())
    return out


def queue_and_drain(
    ctx: Context,
    pool: Pool,
    spec: ChannelSpec,
    platform: PlatformProc,
    worker: Proc,
    n: int,
    start: int,
    timeout_s: float,
) -> dict[str, Any]:
    """Stop the worker, make n asks, resume it: when each prompt arrived, and its CPU."""
    worker.signal(signal.SIGSTOP)
    try:
        asks = ctx.run(steady(pool, spec, 2000, n / 2000, start, f"q{start}", wait=False))
        accepted = [a for a in asks if a.qid]
        convs = [spec.conv(a.i) for a in accepted]
        time.sleep(0.2)
    finally:
        c0, t0 = cpu_s(worker.pid), time.monotonic()
        worker.signal(signal.SIGCONT)
    deadline = t0 + timeout_s
    got = 0
    while time.monotonic() < deadline:
        got = platform.send({"cmd": "count", "convs": convs}, "prompts")["prompts"]
        if got >= len(convs):
            break
        time.sleep(0.05)
    used = cpu_s(worker.pid) - c0
    rec = dump(platform, ctx.workdir / f"platform-{start}.json")
    times = sorted(rec["prompts"][c][0] for c in convs if c in rec["prompts"])
    return {
        "queued": len(convs),
        "sent": len(times),
        "t0": t0,
        "times": times,
        "cpu_s": used,
        "drain_s": (times[-1] - t0) if times else float("nan"),
    }


def measure_rate(
    ctx: Context,
    fig: Figure,
    pool: Pool,
    spec: ChannelSpec,
    platform: PlatformProc,
    worker: Proc,
    rounds: int,
) -> dict[str, Any]:
    """Prompts/s of one worker: queues of CHUNK prompts, each drained on its own."""
    platform.send({"cmd": "answer", "on": False}, "answering")
    idle_after = wait_idle(worker)
    if idle_after is None:
        fig.note(
            f"{spec.name}: the worker was still busy with the goal phase "
            f"{IDLE_WAIT_S:g} s later; the rate below shares its CPU with that"
        )
    chunks = [
        queue_and_drain(
            ctx, pool, spec, platform, worker, CHUNK, 2_000_000 + 1000 * r, CHUNK_WAIT_S
        )
        for r in range(rounds)
    ]
    sent = sum(c["sent"] for c in chunks)
    drain = sum(c["drain_s"] for c in chunks)
    cpu = sum(c["cpu_s"] for c in chunks)
    fig.add(
        f"{spec.name}: prompts/s one worker process sends, {rounds} queues of {CHUNK}",
        f"{sent / drain:,.0f} prompts/s ({sent:,} of {rounds * CHUNK:,} sent within "
        f"{CHUNK_WAIT_S:g} s of each resumption, in {drain:.2f} s in all; worker CPU "
        f"{cpu / max(1, sent) * 1e6:,.0f} µs per prompt)",
    )
    platform.send({"cmd": "answer", "on": True}, "answering")
    return {"chunks": chunks, "chunk_rate": sent / drain}


def measure_burst(
    ctx: Context,
    fig: Figure,
    pool: Pool,
    spec: ChannelSpec,
    platform: PlatformProc,
    worker: Proc,
    big: int,
) -> dict[str, Any]:
    """One queue of `big` prompts at once."""
    platform.send({"cmd": "answer", "on": False}, "answering")
    errors0 = len(error_lines(worker))
    one = queue_and_drain(ctx, pool, spec, platform, worker, big, 3_000_000, BIG_WAIT_S)
    errors = error_lines(worker)[errors0:]
    times = one["times"]
    # The best one-second window: what the worker does while nothing goes wrong.
    peak = max((sum(1 for u in times[k:] if u < t + 1.0) for k, t in enumerate(times)), default=0)
    fig.add(
        f"{spec.name}: one queue of {big:,} prompts at once",
        f"{one['sent']:,} sent in {one['drain_s']:.1f} s (waited up to {BIG_WAIT_S:g} s), "
        f"{peak:,} in the best second",
        f"all within {big / 100:g} s",
        one["sent"] == big and one["drain_s"] <= big / 100,
    )
    if errors:
        kinds = Counter(f"{e.get('event')}: {e.get('error')}" for e in errors)
        fig.note(
            f"{spec.name}: the worker logged {len(errors)} errors while it drained the "
            f"queue of {big:,}: " + "; ".join(f"{k} ×{v}" for k, v in kinds.most_common(3))
        )
    return {"big": one, "peak_1s": peak, "errors": len(errors)}


def wait_idle(p: Proc, max_s: float = 0.0) -> float | None:
    """Seconds until the process used under 5% of a core for a whole second (None if it
    did not within IDLE_WAIT_S): a backlog of the phase before must not count."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < (max_s or IDLE_WAIT_S):
        c0 = cpu_s(p.pid)
        time.sleep(1.0)
        if cpu_s(p.pid) - c0 < 0.05:
            return time.monotonic() - t0
    return None


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
