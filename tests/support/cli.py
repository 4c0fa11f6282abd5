"""The admin command (`askgate`, `python -m askgate.dev.cli`) run as a process, the way an
operator runs it: forked from the test process's launcher (tests/support/processes.py),
which runs its `__main__` as `python -m` does, with its own environment, argv, output and
exit code, without a new interpreter importing askgate first (0.5 CPU-seconds a run)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from tests.support.processes import LAUNCHER

MODULE = "askgate.dev.cli"


def askgate_cli(redis_url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`askgate <args>` against `redis_url`, with `env` on top of this process's
    environment without its ASKGATE_* settings; its exit code and output (text)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ASKGATE_")}
    with tempfile.TemporaryDirectory(prefix="askgate-cli-") as tmp:
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        proc = LAUNCHER.start(
            MODULE, {**environ, "REDIS_URL": redis_url, **env}, out, argv=args, err_path=err
        )
        try:
            code = proc.wait(60)
        finally:
            proc.kill()  # only if it is still running: a run past 60 s fails the test
        return subprocess.CompletedProcess(
            ["askgate", *args], code, out.read_text(), err.read_text()
        )
