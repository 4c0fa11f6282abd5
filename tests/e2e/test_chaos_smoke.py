"""The chaos driver (`make chaos`) in miniature, so it keeps working: a few seconds of
kill -9 and restarts under load, and every figure that must be zero is."""

from __future__ import annotations

import subprocess
import sys


def test_short_chaos_run_loses_and_doubles_nothing() -> None:
    """`python -m chaos` for 3 s with 4 agents exits 0 (nothing lost, nothing doubled)."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "chaos",
            "--duration",
            "3",
            "--agents",
            "4",
            "--seed",
            "11",
            "--max-timeout-s",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "Verdict: **PASS**" in run.stdout
