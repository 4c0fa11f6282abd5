"""`python -m chaos [--duration S] [--seed N] [--agents N] [--cluster] [--replicas N]
[--report PATH]` (`make chaos`).

Starts Redis and the stack as processes on free ports, runs the workload while killing
and restarting processes at random, lets everything settle, checks it (verify.py) and
writes docs/reliability.md. Exits 1 when a figure that must be zero is not. Everything
it starts, it stops.

`--cluster` runs the stack on a local 3-master Redis Cluster (`ASKGATE_REDIS_CLUSTER`,
with a plain Redis for the webhook jobs) and kills a master now and then instead of the
one Redis; `--replicas N` runs N processes of each channel worker (Telegram then takes
webhooks instead of long polling).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import secrets
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import httpx
import orjson
from askgate.dev.redis_server import RedisClusterProcess, RedisProcess, free_port
from askgate.runtime.logs import configure_logging
from askgate.store.conn import connect
from askgate.store.tenants import create_tenant, set_outbound_allow

from chaos import report, verify
from chaos.channels import Channel, Stack, TextChannel
from chaos.discord import DiscordChannel
from chaos.platforms import Receiver
from chaos.processes import (
    LAUNCHER,
    ChildVictim,
    ClusterNodeVictim,
    Component,
    RedisVictim,
    Victim,
)
from chaos.slack import SlackChannel
from chaos.telegram import TelegramChannel
from chaos.workload import Workload

SECRET = "chaos-" + "k" * 40
# How often each kind of process is picked to be killed.
WEIGHTS = {"api": 3, "sweeper": 2, "webhooks": 2, "webhooks-worker": 3, "channel": 6}
# Every chat channel's plug-in: its fake platform, its worker, its human, its checks.
CHANNELS: list[type[TextChannel | TelegramChannel | SlackChannel | DiscordChannel]] = [
    TextChannel,
    TelegramChannel,
    SlackChannel,
    DiscordChannel,
]
# Redis goes down on its own schedule, this often: it takes the whole stack with it.
REDIS_EVERY_S = (15.0, 30.0)


def base_env(redis_url: str, jobs_url: str = "") -> dict[str, str]:
    """The settings every process gets; with `jobs_url`, REDIS_URL names a cluster node
    and the webhook jobs (RQ) go to that plain Redis."""
    cluster = {"ASKGATE_REDIS_CLUSTER": "true", "ASKGATE_JOBS_REDIS_URL": jobs_url}
    return {
        "REDIS_URL": redis_url,
        "ASKGATE_SECRET_KEY": SECRET,
        "ASKGATE_TIMEOUT_MIN_S": "1",
        "ASKGATE_LOG_LEVEL": "warning",
        "ASKGATE_SWEEP_INTERVAL_MS": "100",
        **(cluster if jobs_url else {}),
    }


def stack_components(
    env: dict[str, str], log_dir: Path, apis: int = 2, sweepers: int = 2, webhook_workers: int = 2
) -> tuple[list[Component], list[str]]:
    """The APIs, sweepers and webhooks service (not started yet) and the APIs' URLs."""
    procs: list[Component] = []
    urls = []
    for i in range(apis):
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        urls.append(url)
        procs.append(
            Component(
                f"api{i}",
                "askgate_api",
                {**env, "ASKGATE_API_PORT": str(port)},
                log_dir,
                ready_url=url + "/readyz",
            )
        )
    for i in range(sweepers):
        procs.append(Component(f"sweeper{i}", "askgate_sweeper", env, log_dir))
    procs.append(
        Component(
            "webhooks",
            "askgate_webhooks",
            {
                **env,
                "ASKGATE_WEBHOOK_WORKERS": str(webhook_workers),
                "ASKGATE_WEBHOOK_TIMEOUT_S": "2",
                "ASKGATE_WEBHOOK_BACKOFF_S": "0.2",
                "ASKGATE_WEBHOOK_BACKOFF_MAX_S": "2",
                "ASKGATE_WEBHOOK_MAX_ATTEMPTS": "20",
                "ASKGATE_CONSUMER_CLAIM_IDLE_MS": "3000",
                "ASKGATE_CONSUMER_BLOCK_MS": "500",
            },
            log_dir,
        )
    )
    return procs, urls


def firsts(victims: dict[str, list[Victim]], rnd: random.Random) -> list[Victim]:
    """Who is killed first, so that a short run kills them all: one process of each
    channel worker, and with replicas one of each kind that has them (an API process, a
    sweeper) too."""
    groups: dict[str, list[Victim]] = {}
    for victim in victims["channel"]:
        groups.setdefault(victim.name.partition("#")[0], []).append(victim)
    replicated = any(len(g) > 1 for g in groups.values())
    if replicated:
        groups |= {"api": victims["api"], "sweeper": victims["sweeper"]}
    first = [rnd.choice(g) for g in groups.values()]
    return rnd.sample(first, len(first))


async def chaos(victims: dict[str, list[Victim]], stop: asyncio.Event, rnd: random.Random) -> None:
    """The `firsts` first, once each (even past stop), each killed 0.2-0.5 s after the one
    before, so that their downtimes overlap; then until stop: pick a victim, kill -9, wait
    a moment, start it again."""
    kinds = list(WEIGHTS)
    delay = 0.0
    bounces = []
    for victim in firsts(victims, rnd):
        delay += rnd.uniform(0.2, 0.5)
        bounces.append(bounce(victim, delay, rnd.uniform(0.2, 1.5)))
    await asyncio.gather(*bounces)
    while not stop.is_set():
        victim = rnd.choice(victims[rnd.choices(kinds, [WEIGHTS[k] for k in kinds])[0]])
        await bounce(victim, rnd.uniform(0.5, 2.0), rnd.uniform(0.2, 1.5))


async def bounce(victim: Victim, after_s: float, down_s: float) -> None:
    """In `after_s`: kill -9 `victim`, and `down_s` later start it again."""
    await asyncio.sleep(after_s)
    await asyncio.to_thread(victim.kill)
    journal(victim.name, "kill -9")
    await asyncio.sleep(down_s)
    await asyncio.to_thread(victim.restart)
    journal(victim.name, "restarted")


def journal(name: str, what: str) -> None:
    """What the driver did when, beside the services' logs (driver.log)."""
    if JOURNAL is not None:
        with JOURNAL.open("a") as out:
            out.write(
                f"{time.strftime('%H:%M:%S')}.{int(time.time() * 1000) % 1000:03d} {name} {what}\n"
            )


JOURNAL: Path | None = None


async def redis_chaos(
    redises: list[RedisVictim | ClusterNodeVictim], stop: asyncio.Event, rnd: random.Random
) -> None:
    """Until stop: now and then, kill -9 Redis (a cluster's master) and start it again on
    its data."""
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), rnd.uniform(*REDIS_EVERY_S))
        if stop.is_set():
            return
        redis = rnd.choice(redises)
        await asyncio.to_thread(redis.kill)
        journal("redis", "kill -9")
        await asyncio.sleep(rnd.uniform(0.2, 1.0))
        await asyncio.to_thread(redis.restart)
        journal("redis", "restarted")


async def run(args: argparse.Namespace) -> int:
    LAUNCHER.open()  # imports every service while Redis starts
    rnd = random.Random(args.seed)
    log_dir = Path(tempfile.mkdtemp(prefix="askgate-chaos-"))
    global JOURNAL
    JOURNAL = log_dir / "driver.log"
    cluster: RedisClusterProcess | None = None
    if args.cluster:
        # Every acknowledged write survives a master's kill -9, as on one Redis here.
        cluster = RedisClusterProcess(persist=True, fsync="always").start()
        redis = RedisProcess(data_dir=str(log_dir / "jobs-redis"), persist=True, fsync="always")
        redis.start()
        env = base_env(cluster.url, redis.url)
        redises: list[RedisVictim | ClusterNodeVictim] = [
            ClusterNodeVictim(cluster, i) for i in range(cluster.masters)
        ]
    else:
        redis = RedisProcess(data_dir=str(log_dir / "redis"), persist=True, fsync="always")
        redis.start()
        env = base_env(redis.url)
        redises = [RedisVictim(redis)]
    hooks = Receiver("hooks", error_rate=0.05, seed=args.seed, latency_s=0.3)
    procs: list[Component] = []
    channel_procs: list[Component] = []
    channels: list[Channel] = [cls() for cls in CHANNELS]
    try:
        client = connect(env["REDIS_URL"], cluster=args.cluster)
        tenant, key = await create_tenant(client, "chaos", max_pending=10**6, asks_per_s=10**6)
        # The receivers are local: this tenant's own allow-list opens loopback for it.
        await set_outbound_allow(client, tenant.id, "127.0.0.0/8")
        procs, urls = stack_components(env, log_dir, args.apis, args.sweepers, args.webhook_workers)
        stack = Stack(
            env,
            log_dir,
            urls,
            {"Authorization": f"Bearer {key}"},
            args.seed,
            tenant.id,
            tenant.webhook_secret,
            args.cluster,
            args.replicas,
        )
        # Everything at once: a start is mostly an interpreter importing its service.
        _, workers = await asyncio.gather(
            asyncio.gather(*(asyncio.to_thread(p.start) for p in procs)),
            asyncio.gather(*(ch.start(stack) for ch in channels)),
        )
        for worker_procs in workers:
            channel_procs += worker_procs
        webhooks = next(p for p in procs if p.name == "webhooks")
        victims: dict[str, list[Victim]] = {
            "api": [p for p in procs if p.name.startswith("api")],
            "sweeper": [p for p in procs if p.name.startswith("sweeper")],
            "webhooks": [webhooks],
            "webhooks-worker": [ChildVictim("webhooks-worker", webhooks)],
            "channel": list(channel_procs),
        }
        workload = Workload(stack, key, channels, hooks.url, rnd, args.agents, args.max_timeout_s)
        stop_chaos = asyncio.Event()
        started = time.monotonic()
        load = asyncio.create_task(workload.run())
        monkeys = [
            asyncio.create_task(chaos(victims, stop_chaos, rnd)),
            asyncio.create_task(redis_chaos(redises, stop_chaos, rnd)),
        ]
        await asyncio.sleep(args.duration)
        stop_chaos.set()
        await asyncio.gather(*monkeys)
        workload.stop.set()
        await asyncio.wait_for(load, 600)
        elapsed = time.monotonic() - started
        for p in [*procs, *channel_procs]:  # anything the last kill left down comes back
            if not p.alive():
                await asyncio.to_thread(p.restart)
        async with httpx.AsyncClient(timeout=10.0) as http:
            final, settle_s = await verify.settle(
                http, urls, stack.headers, list(workload.asked), channels, 180.0
            )
        (log_dir / "questions.json").write_bytes(orjson.dumps(final))
        await client.aclose()  # its connections predate the Redis restarts
        resolved = await verify.resolved_events(env["REDIS_URL"], args.cluster)
        figures, tally = verify.check(workload.asked, final, resolved, hooks, channels)
        figures.update({f"human {k}": v for k, v in workload.humans.items()})
        figures.update({f"ask refused {k}": v for k, v in workload.refused.items()})
        kills = {v.name: (v.kills, v.restarts) for vs in victims.values() for v in vs}
        kills["redis"] = (sum(r.kills for r in redises), sum(r.restarts for r in redises))
        zero = verify.must_be_zero(channels)
        text = report.render(
            figures,
            zero,
            kills,
            verify.per_channel(workload.asked, tally, [ch.name for ch in channels]),
            {**vars(args), "log_dir": str(log_dir)},
            elapsed,
            settle_s,
            tally.examples,
        )
        print(text)
        if args.report:
            report.write(Path(args.report), text)
        print(f"logs: {log_dir}", file=sys.stderr)
        return 1 if report.failures(figures, zero) else 0
    except BaseException:
        # A run that broke off explains itself in its log directory, not only on stderr.
        journal("driver", "failed:\n" + traceback.format_exc())
        print(f"logs: {log_dir}", file=sys.stderr)
        raise
    finally:
        # All at once: each stop is a SIGTERM and a wait of up to a second or two.
        await asyncio.gather(*(asyncio.to_thread(p.stop) for p in [*procs, *channel_procs]))
        for ch in channels:
            await ch.stop()
        hooks.close()
        redis.stop(graceful=True)
        if cluster is not None:
            cluster.stop()
        LAUNCHER.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m chaos",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of chaos")
    parser.add_argument("--seed", type=int, default=secrets.randbelow(10**6))
    parser.add_argument("--agents", type=int, default=12, help="concurrent asking agents")
    parser.add_argument(
        "--max-timeout-s",
        type=int,
        default=12,
        help="longest timeoutSeconds an agent asks with (2 to 12)",
    )
    parser.add_argument("--cluster", action="store_true", help="on a local 3-master Redis Cluster")
    parser.add_argument("--replicas", type=int, default=1, help="processes per channel worker")
    parser.add_argument("--apis", type=int, default=2, help="API processes")
    parser.add_argument("--sweepers", type=int, default=2, help="sweeper processes")
    parser.add_argument(
        "--webhook-workers", type=int, default=2, help="the webhooks service's RQ workers"
    )
    parser.add_argument("--report", default="", help="write the report there (markdown)")
    args: Any = parser.parse_args(argv)
    configure_logging("warning", False)
    raise SystemExit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
