"""docs/reliability.md: the figures of one chaos run, and what they mean."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any

WORDS = {1: "one", 2: "two", 3: "three"}


def many(n: int, one: str, more: str) -> str:
    """`many(2, "sweeper", "sweepers")` is "two sweepers"."""
    return f"{WORDS.get(n, str(n))} {one if n == 1 else more}"


# The figures that must be zero for the run to pass.
MUST_BE_ZERO = [
    "lost (not final)",
    "lost (never resolved)",
    "doubled (resolved more than once)",
    "doubled (two answers accepted)",
    "doubled (result is not the winner's)",
    "waiters never told",
    "waiters told a wrong result",
    "webhook pending",
    "webhook missing",
    "webhooks never received",
    "webhooks told a wrong result",
    "late answers told kept, not on the resource",
    "late answers that changed the result",
    "late answer webhook pending",
    "late answer webhook missing",
    "late answer webhooks never received",
    "late answer webhooks with a wrong body",
]


def failures(figures: dict[str, Any], zero: list[str]) -> list[str]:
    return [name for name in zero if figures.get(name, 0)]


KINDS = [
    ("API processes", "api"),
    ("sweepers", "sweeper"),
    ("webhooks service", "webhooks"),
    ("webhooks' RQ workers", "webhooks-worker"),
    ("Redis (AOF; on a cluster, a master)", "redis"),
]


def by_kind(kills: dict[str, tuple[int, int]], channels: list[str]) -> list[tuple[str, int, int]]:
    """Kills and restarts summed per kind of process (channel workers one by one)."""
    rows = []
    for label, prefix in [*KINDS, *[(f"{c} worker", c) for c in channels]]:
        mine = [
            v
            for name, v in kills.items()
            if name == prefix
            or name.startswith(prefix + "#")  # a replica
            or (prefix in ("api", "sweeper") and name.startswith(prefix))
        ]
        rows.append((label, sum(k for k, _ in mine), sum(r for _, r in mine)))
    return rows


def render(
    figures: dict[str, Any],
    zero: list[str],
    kills: dict[str, tuple[int, int]],
    channels: list[dict[str, Any]],
    args: dict[str, Any],
    elapsed_s: float,
    settle_s: float,
    examples: dict[str, list[str]],
) -> str:
    lost = sum(v for k, v in figures.items() if k.startswith("lost"))
    doubled = sum(v for k, v in figures.items() if k.startswith("doubled")) + sum(
        v for k, v in figures.items() if k.endswith(": prompts posted twice")
    )
    missing = sum(
        v
        for k, v in figures.items()
        if k.endswith(": prompts missing at the platform") or k.endswith(": summaries missing")
    )
    rows = [
        ("questions accepted", figures.get("questions accepted", 0)),
        ("kill -9 in all", sum(k for k, _ in kills.values())),
        ("restarts in all (by the driver or a supervisor)", sum(r for _, r in kills.values())),
        ("lost", lost),
        ("doubled (decided twice, or a prompt posted twice)", doubled),
        ("prompts or summaries missing at a platform", missing),
        (
            "late answers kept (the result unchanged)",
            figures.get("late answers on the resources", 0),
        ),
        (
            "max seconds a waiter waited past its deadline",
            figures["max seconds a waiter waited past its deadline"],
        ),
        (
            "median seconds a waiter waited past its deadline (timeouts)",
            figures["median seconds a waiter waited past its deadline"],
        ),
    ]
    names = [c["channel"] for c in channels if c["channel"] != "web"]
    failed = failures(figures, zero)
    verdict = "PASS" if not failed else "FAIL: " + ", ".join(failed)
    columns = list(channels[0]) if channels else []
    lines = [
        "# askgate under chaos",
        "",
        "Written by `make chaos` (`python -m chaos`); rerun it to refresh this page. It",
        "runs on one Redis (docs/reliability.md) and on a local 3-master Redis Cluster with",
        "two processes of each channel worker (`--cluster --replicas 2`,",
        "docs/reliability-cluster.md: a master is killed instead of the one Redis, and",
        "Telegram's workers take webhooks, as replicas must).",
        "",
        "A mixed workload runs against the whole stack as processes ("
        + f"{many(args.get('apis', 2), 'API process', 'API processes')}, "
        + f"{many(args.get('sweepers', 2), 'sweeper', 'sweepers')}, the webhooks service with "
        + f"{many(args.get('webhook_workers', 2), 'RQ worker', 'RQ workers')},",
        "the text, Telegram, Slack and Discord channel workers, Redis with",
        "`appendfsync always`) while a driver kills with SIGKILL first one process of each",
        "channel worker (with replicas, also an API process and a sweeper), 0.2-0.5 s apart",
        "and each down for 0.2-1.5 s, then one of them at random, waits a moment and",
        "starts it again (the webhooks'",
        "RQ workers are restarted by their own supervisor); Redis is killed and restarted",
        "on its append-only file every 15-30 s. Each service process is forked, and then",
        "runs as `python -m <module>` would, from one that imported the services once",
        "(`askgate.dev.launcher`), so a restart is not an interpreter importing its",
        "platform library again. Each chat worker talks to the tests' fake",
        "of its platform (tests/integration/{telegram,slack,discord}): Telegram by long",
        "polling a fake Bot API that keeps an update until a later getUpdates confirms it,",
        "Slack and Discord by signed HTTP requests to the worker, as the platforms send them.",
        "",
        "Agents ask through the Python client and wait. For each question a human answers",
        "through the API, replies in plain text, answers on the text platform, taps the",
        "prompt's button on Telegram, Slack or Discord (tapping again when nothing comes",
        "back), skips, sends two answers at once, or lets it expire and then, half the time,",
        "answers late. Afterwards every accepted question is checked: it ended once (one",
        "`question.resolved` event), with the state its one accepted answer wrote; its waiter",
        "got that result; its webhook was delivered with that result; every late answer its",
        "human was told was kept is on the resource, POSTed as `question.late_answer`, and",
        "the result did not change; on each platform its prompt shows once per target and",
        "became its summary.",
        "",
        f"- Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {elapsed_s:.0f} s of "
        f"chaos, {settle_s:.0f} s to settle; seed {args['seed']}, {args['agents']} agents",
        "- Redis: "
        + (
            "a 3-master Redis Cluster (a master killed instead of the one Redis; the webhook "
            "jobs on a plain Redis)"
            if args.get("cluster")
            else "one Redis"
        )
        + f"; {args.get('replicas', 1)} process(es) of each channel worker",
        f"- Machine: Python {platform.python_version()}, {platform.system()} "
        f"{platform.release()}, {os.cpu_count()} CPUs, load average "
        f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1 / 5 / 15 min) at the end",
        f"- Verdict: **{verdict}**",
        "",
        "| figure | value |",
        "|---|---|",
        *[f"| {name} | {value} |" for name, value in rows],
        "",
        "A waiter is late past its question's deadline when its API process was down: the",
        "Python client backs off up to 5 s between retries, and an API process takes a",
        "second or two to start (many more on a loaded machine); with the sweepers and the",
        "API up, a timeout reaches its waiter within the sweep interval (100 ms here).",
        "",
        "'Prompts failed' below are chat targets whose channel had no live worker (no",
        "heartbeat in 15 s) when the question was asked: the ask is not refused, because",
        "the Control UI can show it, but that target fails at once instead of leaving the",
        "agent waiting on a worker that may not come back (README, Every chat channel).",
        "A worker killed and restarted within seconds keeps its channel live; one starved",
        "on a loaded machine, or cut off from Redis across a restart, does not.",
        "",
        "## Per channel",
        "",
        "A question counts under every channel it had a target on (all have the web one).",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *["| " + " | ".join(str(c[k]) for k in columns) + " |" for c in channels],
        "",
        "| channel | prompts shown | posted twice | missing | summaries missing |",
        "|---|---|---|---|---|",
        *[
            f"| {n} | {figures.get(f'{n}: prompts delivered', 0)} "
            f"| {figures.get(f'{n}: prompts posted twice', '-')} "
            f"| {figures.get(f'{n}: prompts missing at the platform', 0)} "
            f"| {figures.get(f'{n}: summaries missing', 0)} |"
            for n in names
        ],
        "",
        "The text platform is told to drop a second POST of the same `X-Askgate-Delivery`",
        "(a prompt whose worker was killed before it recorded the 200 is sent again), so",
        "it has no 'posted twice' figure; see 'prompts received twice' below.",
        "",
        "## Kills and restarts",
        "",
        "| kind | kill -9 | restarts |",
        "|---|---|---|",
        *[f"| {label} | {k} | {r} |" for label, k, r in by_kind(kills, names)],
        "",
        "## Every figure",
        "",
        "Those marked ✱ must be 0. 'At least once' counts are duplicates the receiver can",
        "drop by id (a POST that was answered but whose sender was killed before it could",
        "record it is sent again; `X-Askgate-Attempt` / `X-Askgate-Delivery` say which).",
        "",
        "| figure | value |",
        "|---|---|",
        *[
            f"| {name}{' ✱' if name in zero else ''} | {value} |"
            for name, value in sorted(figures.items())
        ],
        "",
    ]
    if failed:
        lines += [
            "## What failed",
            "",
            *[f"- {name}: {', '.join(examples.get(name, [])[:10])}" for name in failed],
            f"- logs and Redis data: {args.get('log_dir', '')}",
            "",
        ]
    return "\n".join(lines)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
