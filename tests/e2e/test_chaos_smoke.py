"""The chaos driver (`make chaos`) in miniature, so it keeps working: a few seconds of
kill -9 and restarts under load on every channel (text, Telegram, Slack, Discord against
their fake platforms), and every figure that must be zero is."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

CHANNELS = ["text", "telegram", "slack", "discord"]


@pytest.mark.timeout(400)
def test_short_chaos_run_loses_and_doubles_nothing_on_any_channel() -> None:
    """`python -m chaos` for 4 s with 4 agents kills every channel worker once and exits
    0: nothing lost, nothing doubled, no prompt missing or posted twice on any platform."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "chaos",
            "--duration",
            "4",
            "--agents",
            "4",
            "--seed",
            "11",
            "--max-timeout-s",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=380,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "Verdict: **PASS**" in run.stdout
    for channel in CHANNELS:
        assert f"| {channel}: targets |" in run.stdout, channel
        killed = re.search(rf"^\| {channel} worker \| (\d+) \| (\d+) \|$", run.stdout, re.M)
        assert killed is not None and int(killed[1]) >= 1, channel
        assert killed[1] == killed[2], f"{channel}: every kill was followed by a restart"
