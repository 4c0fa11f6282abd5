"""The chaos driver (`make chaos`) in miniature, so it keeps working: a few seconds of
kill -9 and restarts under load on every channel (text, Telegram, Slack, Discord against
their fake platforms), and every figure that must be zero is; on one Redis, and on the
3-master cluster with two processes of every worker (issue 9's replicas run)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

CHANNELS = ["text", "telegram", "slack", "discord"]


def chaos(*args: str) -> str:
    """`python -m chaos` with 4 agents asking with timeouts of 2-3 s; its report. A
    duration of 1 s kills only the driver's firsts (one process of each kind the test
    names), each once, under load: each further kill is one more process started."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "chaos",
            "--agents",
            "4",
            "--seed",
            "11",
            "--max-timeout-s",
            "3",
            "--duration",
            "1",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=380,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "Verdict: **PASS**" in run.stdout
    return run.stdout


def kills(report: str, kind: str) -> tuple[int, int]:
    found = re.search(rf"^\| {kind} \| (\d+) \| (\d+) \|$", report, re.M)
    assert found is not None, kind
    return int(found[1]), int(found[2])


@pytest.mark.timeout(400)
def test_short_chaos_run_loses_and_doubles_nothing_on_any_channel() -> None:
    """`python -m chaos` with 4 agents kills every channel worker once and exits 0:
    nothing lost, nothing doubled, no prompt missing or posted twice on any platform."""
    report = chaos("--sweepers", "1", "--webhook-workers", "1")
    for channel in CHANNELS:
        assert f"| {channel}: targets |" in report, channel
        killed, restarted = kills(report, f"{channel} worker")
        assert killed >= 1, channel
        assert killed == restarted, f"{channel}: every kill was followed by a restart"


@pytest.mark.timeout(400)
def test_replicas_on_a_cluster_lose_and_double_nothing() -> None:
    """On the 3-master cluster, 2 API processes, 2 sweepers and 2 processes of each
    channel worker, one of each kind killed -9 mid-run: every question rendered once per
    target, resolved once, each waiter told once (the driver exits 0)."""
    report = chaos("--cluster", "--replicas", "2", "--webhook-workers", "1")
    assert "a 3-master Redis Cluster" in report and "2 process(es) of each channel" in report
    for kind in ["API processes", "sweepers", *(f"{c} worker" for c in CHANNELS)]:
        killed, restarted = kills(report, kind)
        assert killed >= 1, kind
        assert killed == restarted, f"{kind}: every kill was followed by a restart"
    for channel in CHANNELS:
        assert f"| {channel}: targets |" in report, channel
