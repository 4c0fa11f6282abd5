"""The sweeper as deployed: its process ending 100,000 questions due at once while four
API processes hold their pub/sub subscription, on a Redis with AOF as compose runs it."""

from __future__ import annotations

import asyncio
import shutil
import signal
import time
from typing import Any

from askgate.dev.redis_server import RedisProcess, free_port
from askgate.store import keys
from askgate.store.store import Store
from redis.asyncio import Redis

from bench.context import Context
from bench.procs import PY, Proc, askgate_env, cpu_s, start_api
from bench.report import Figure
from bench.sample import QUESTIONS, AskTemplate, ask_body, bulk_create, make_redis, make_settings

TITLE = "Sweeper: 100,000 questions due at once, as deployed"
METHOD = """
a redis-server with AOF on (`appendfsync everysec`, as `deploy/compose.yml` runs it), four
`python -m askgate_api` processes (each holds its one subscription: on this Redis 7 an
SSUBSCRIBE to the 64 shards' done channels, which each SWEEP call publishes its batch's
ids on in one message; checked in CLIENT LIST) and one `python -m askgate_sweeper` process (logging
at info as JSON, as deployed: one line per SWEEP batch, not per question). The sweeper is
started, then stopped (SIGSTOP) while the fixture is written: N pending 3-question asks
written as `Store.create` writes them (recorded once, replayed in pipelines of 1000), each
with its own session and run id and a Telegram target (so every event goes to the `web`
and `telegram` streams), all due 1 s after creation; the AOF is rewritten and every
deadline has passed before the sweeper is resumed (SIGCONT). The clock runs from SIGCONT
until no shard's due set holds anything (polled every 2 ms), i.e. until every question
is final: its state, its two `question.resolved` stream entries and its result
published are one SWEEP script step, so all three are done together. "Notifications
delivered" is when Redis has written every published message to all four subscribers
(their output buffers empty in CLIENT LIST). Redis-side time is INFO commandstats of the
scripts; CPU is each process's user + system seconds over the sweep. The second row
repeats the sweep for a fifth as many questions with the API processes stopped (no
subscribers), to show what the subscriptions cost.

What bounds it: Redis runs every script on one thread, so its CPU during the sweep is a
floor under the wall time whatever the other processes do. Counted as instructions,
which load on the machine does not change (redis-server under `valgrind --tool=callgrind
--instr-atstart=no`, collection switched on with `callgrind_control -i on` for a sweep
of 3,000 questions of this fixture; counted once by hand on 2026-12-01, `make bench`
does not rerun it): redis-server executes about 210,000
instructions per expiry with the AOF on and 150,000 with it off. The AOF's share (about
29%) is the script's effects written out as commands, about 52 arguments per question
(its HSET, SET, HDEL and two XADDs); the FIELDS call that reads the fields naming each
question's keys, so that SWEEP can declare every key it touches, is about 14%; the rest
is SWEEP's seven commands per question (HMGET, HSET, SET, HDEL, two XADDs, the public
PUBLISH) and Lua's work around them. The notes above give this run's Redis CPU per
expiry and the floor it puts under the wall time: the 2 s goal needs 20 µs or less per
expiry of the one Redis thread, so a faster core, no AOF, or fewer writes per expiry
(each of the five is part of what a user can read: state, result, session, the two
channels' events).
"""
INSTANCE = "bench-sweeper"


async def fixture(url: str, n: int, prefix: str) -> None:
    redis = make_redis(url)
    try:
        await redis.flushall()
        store = Store(redis, make_settings(url))
        tmpl = await AskTemplate.record(
            store,
            "tsweep",
            ask_body(
                QUESTIONS,
                "x",
                run_id="r",
                timeoutSeconds=1,
                targets=[{"channel": "telegram", "chat_id": "123456789"}],
            ),
        )
        await bulk_create(store, tmpl, n, prefix)
        # A rewrite of the AOF running during the sweep would be this fixture's cost:
        # rewrite it now (Redis may have started one by itself) and wait for the end.
        await aof_settled(redis)
        await redis.bgrewriteaof()
        await aof_settled(redis)
        await asyncio.sleep(1.1)  # every deadline has passed
        due = sum([await redis.zcard(keys.due(s)) for s in range(keys.SHARDS)])
        assert due == n, due
        await redis.config_resetstat()
    finally:
        await redis.aclose()


async def aof_settled(redis: Redis) -> None:
    while True:
        info = await redis.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            return
        await asyncio.sleep(0.2)


async def watch(url: str, sweeper: Proc, n_subscribers: int) -> dict[str, float]:
    """Resume the sweeper; seconds until nothing is due, and until every subscriber's
    output buffer is empty."""
    redis = make_redis(url)
    try:
        t0 = time.perf_counter()
        sweeper.signal(signal.SIGCONT)
        ended = drained = 0.0
        while not ended or not drained:
            await asyncio.sleep(0.002)
            now = time.perf_counter() - t0
            if not ended:
                async with redis.pipeline(transaction=False) as pipe:
                    for s in range(keys.SHARDS):
                        pipe.zcard(keys.due(s))
                    if sum(await pipe.execute()) == 0:
                        ended = now
            if ended and not drained:
                subs = [c for c in await redis.client_list() if "P" in c["flags"]]
                assert len(subs) == n_subscribers, subs
                if all(int(c["omem"]) == 0 for c in subs):
                    drained = now
            if now > 120:
                raise RuntimeError("the sweep did not finish in 120 s")
        return {"ended_s": ended, "drained_s": drained}
    finally:
        await redis.aclose()


async def stats(url: str) -> dict[str, Any]:
    redis: Redis = make_redis(url)
    try:
        cmd = await redis.info("commandstats")
        scripts = [v for k, v in cmd.items() if k.startswith(("cmdstat_evalsha", "cmdstat_eval"))]
        out = {
            "script_s": sum(int(v["usec"]) for v in scripts) / 1e6,
            "script_calls": sum(int(v["calls"]) for v in scripts),
            "publish": int(cmd.get("cmdstat_publish", {}).get("calls", 0)),
            "spublish": int(cmd.get("cmdstat_spublish", {}).get("calls", 0)),
            "xadd": int(cmd.get("cmdstat_xadd", {}).get("calls", 0)),
            "subscribers": sum(
                1
                for c in await redis.client_list()
                if int(c["psub"]) > 0 or int(c.get("ssub", 0)) > 0
            ),
        }
        sample = [k async for k in redis.scan_iter(match="askgate:*:q:*", count=1000)][:200]
        statuses = [await redis.hmget(k, "status", "reason") for k in sample]
        out["sample_final"] = sum(1 for s, r in statuses if s == b"no_answer" and r == b"timeout")
        out["sample"] = len(sample)
        return out
    finally:
        await redis.aclose()


def sweep_once(
    ctx: Context, url: str, sweeper: Proc, n: int, apis: list[Proc], prefix: str, redis_pid: int
) -> dict[str, Any]:
    ctx.run(fixture(url, n, prefix))
    lines0 = sweeper.log.read_text().count("sweeper.expired")
    cpu0 = {
        "apis": sum(cpu_s(a.pid) for a in apis),
        "sweeper": cpu_s(sweeper.pid),
        "redis": cpu_s(redis_pid),
    }
    times = ctx.run(watch(url, sweeper, len(apis)))
    time.sleep(0.5)  # let the sweeper write its last lines
    res: dict[str, Any] = {**times, **ctx.run(stats(url)), "n": n}
    res["cpu_s"] = {
        "apis": sum(cpu_s(a.pid) for a in apis) - cpu0["apis"],
        "sweeper": cpu_s(sweeper.pid) - cpu0["sweeper"],
        "redis": cpu_s(redis_pid) - cpu0["redis"],
    }
    res["log_lines"] = sweeper.log.read_text().count("sweeper.expired") - lines0
    sweeper.signal(signal.SIGSTOP)
    return res


def run(ctx: Context) -> None:
    n = ctx.size(100_000, 10_000)
    fig = ctx.report.figure("sweep", TITLE, METHOD)
    server = RedisProcess(binary=ctx.redis_binary, persist=True, fsync="everysec").start()
    assert server.proc is not None
    try:
        url = server.url
        apis = [start_api(ctx.procs, url, free_port()) for _ in range(4)]
        sweeper = ctx.procs.start(
            "sweeper", [PY, "-m", "askgate_sweeper"], askgate_env(url, ASKGATE_INSTANCE=INSTANCE)
        )
        ctx.run(wait_alive(url))
        sweeper.signal(signal.SIGSTOP)
        full = sweep_once(ctx, url, sweeper, n, apis, "sweep", server.proc.pid)
        for api in apis:
            ctx.procs.stop(api)
        bare = sweep_once(ctx, url, sweeper, max(1000, n // 5), [], "bare", server.proc.pid)
    finally:
        ctx.procs.stop_all()
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)
    report_rows(fig, full, bare)
    fig.data.update(subscribed=full, unsubscribed=bare)


async def wait_alive(url: str) -> None:
    redis = make_redis(url)
    try:
        for _ in range(600):
            if await redis.exists(keys.health("sweeper", INSTANCE)):
                return
            await asyncio.sleep(0.05)
        raise RuntimeError("the sweeper did not start")
    finally:
        await redis.aclose()


def report_rows(fig: Figure, full: dict[str, Any], bare: dict[str, Any]) -> None:
    n = full["n"]
    ok = (
        full["ended_s"] <= 2.0
        and full["publish"] == n
        and full["xadd"] == 2 * n
        and full["subscribers"] == 4
        and full["sample_final"] == full["sample"]
    )
    fig.add(
        f"Sweeper: {n:,} due at once, 4 subscribed API processes, run ids, 2 streams: "
        "all ended (state + events + notification)",
        f"{full['ended_s']:.2f} s",
        "≤ 2 s",
        ok,
    )
    per = full["script_s"] / n * 1e6
    per_bare = bare["script_s"] / bare["n"] * 1e6
    fig.add(
        "Redis time inside SWEEP per question: 4 subscribers / none",
        f"{per:.1f} / {per_bare:.1f} µs (all ended in {full['ended_s']:.2f} s / "
        f"{bare['ended_s']:.2f} s for {bare['n']:,})",
    )
    fig.add(
        "Notifications delivered to all 4 subscribers (their Redis output buffers empty)",
        f"{full['drained_s']:.2f} s after the sweep started",
    )
    c = full["cpu_s"]
    fig.note(
        f"sweep: {full['publish']:,} results published, {full['xadd']:,} stream "
        f"entries added, {full['script_calls']:,} SWEEP calls in "
        f"{full['script_s']:.2f} s of Redis time, {full['log_lines']} log lines; "
        f"{full['sample_final']}/{full['sample']} sampled questions no_answer/timeout; "
        f"{full['spublish']:,} done messages to the API processes' subscription; "
        f"{full['subscribers']} clients held a subscription"
    )
    fig.note(
        f"redis-server CPU per question ended: {c['redis'] / n * 1e6:.1f} µs, so "
        f"{c['redis']:.2f} s of its one thread for these {n:,} (a floor under the wall time)"
    )
    total = c["redis"] + c["sweeper"] + c["apis"]
    fig.note(
        f"CPU during the sweep: redis-server {c['redis']:.2f} s, the sweeper "
        f"{c['sweeper']:.2f} s, the 4 API processes reading the notifications "
        f"{c['apis']:.2f} s in all ({c['apis'] / 4 / n * 1e6:.1f} µs per question ended "
        f"per process): {total:.1f} CPU-seconds, so on these 2 cores (shared with "
        f"other work) no less than {total / 2:.1f} s of wall time"
    )
