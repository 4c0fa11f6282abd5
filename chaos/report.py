"""docs/reliability.md: the figures of one chaos run, and what they mean."""

from __future__ import annotations

import platform
import time
from pathlib import Path
from typing import Any

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
    "text: prompts missing at the platform",
    "text: summaries missing",
]


def failures(figures: dict[str, Any]) -> list[str]:
    return [name for name in MUST_BE_ZERO if figures.get(name, 0)]


def render(
    figures: dict[str, Any],
    kills: dict[str, tuple[int, int]],
    args: dict[str, Any],
    elapsed_s: float,
    settle_s: float,
    examples: dict[str, list[str]],
) -> str:
    lost = sum(v for k, v in figures.items() if k.startswith("lost"))
    doubled = sum(v for k, v in figures.items() if k.startswith("doubled"))
    rows = [
        ("questions accepted", figures.get("questions accepted", 0)),
        ("kill -9 in all", sum(k for k, _ in kills.values())),
        ("restarts in all (by the driver or a supervisor)", sum(r for _, r in kills.values())),
        ("lost", lost),
        ("doubled", doubled),
        (
            "max seconds a waiter waited past its deadline",
            figures["max seconds a waiter waited past its deadline"],
        ),
        (
            "median seconds a waiter waited past its deadline (timeouts)",
            figures["median seconds a waiter waited past its deadline"],
        ),
    ]
    verdict = "PASS" if not failures(figures) else "FAIL: " + ", ".join(failures(figures))
    lines = [
        "# askgate under chaos",
        "",
        "Written by `make chaos` (`python -m chaos`); rerun it to refresh this page.",
        "",
        "A mixed workload runs against the whole stack as processes (two API processes, two",
        "sweepers, the webhooks service with two RQ workers, the text channel worker, Redis",
        "with `appendfsync always`) while a driver kills one of them with SIGKILL at random,",
        "waits a moment and starts it again (the webhooks' RQ workers are restarted by their",
        "own supervisor). Agents ask through the Python client and wait; for each question a",
        "human answers through the API, replies in plain text, answers through the text",
        "platform, skips, sends two answers at once, or lets it expire. Afterwards every",
        "accepted question is checked: it ended once (one `question.resolved` event), with the",
        "state its one accepted answer wrote; its waiter got that result; its webhook was",
        "delivered with that result; its text prompt and summary reached the platform.",
        "",
        f"- Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {elapsed_s:.0f} s of "
        f"chaos, {settle_s:.0f} s to settle; seed {args['seed']}, {args['agents']} agents",
        f"- Machine: Python {platform.python_version()}, {platform.system()} {platform.release()}",
        f"- Verdict: **{verdict}**",
        "",
        "| figure | value |",
        "|---|---|",
        *[f"| {name} | {value} |" for name, value in rows],
        "",
        "A waiter is late past its question's deadline when its API process was down: the",
        "Python client backs off up to 5 s between retries, and an API process takes a",
        "second or two to start; with the sweepers and the API up, a timeout reaches its",
        "waiter within the sweep interval (100 ms here).",
        "",
        "## Kills and restarts",
        "",
        "| process | kill -9 | restarts |",
        "|---|---|---|",
        *[f"| {name} | {k} | {r} |" for name, (k, r) in sorted(kills.items())],
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
            f"| {name}{' ✱' if name in MUST_BE_ZERO else ''} | {value} |"
            for name, value in sorted(figures.items())
        ],
        "",
    ]
    failed = failures(figures)
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
