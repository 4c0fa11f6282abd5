"""The admin command (`askgate`, `python -m askgate.dev.cli`) run as a process, the way an
operator runs it."""

from __future__ import annotations

import os
import subprocess
import sys


def askgate_cli(redis_url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`askgate <args>` against `redis_url`, with `env` on top of this process's
    environment without its ASKGATE_* settings; its exit code and output (text)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ASKGATE_")}
    return subprocess.run(
        [sys.executable, "-m", "askgate.dev.cli", *args],
        capture_output=True,
        text=True,
        env={**environ, "REDIS_URL": redis_url, **env},
        timeout=60,
        check=False,
    )
