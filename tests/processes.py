"""askgate services as real processes, for tests that need a real HTTP server: long-polls
that are not buffered, and an API that can be killed and started again on the same port.

    with ApiProcess(redis_url) as api:      # python -m askgate_api on a free port
        api.url                             # http://127.0.0.1:<port>
        api.kill(); api.start()             # a crash and a restart, same port

The `api_process` fixture in tests/e2e/conftest.py yields one per test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from askgate.dev.redis_server import free_port

from tests.support.asks import SECRET


class ApiProcess:
    """`python -m askgate_api` as a child process; output goes to a log file that is
    shown when it fails to start."""

    def __init__(self, redis_url: str, port: int | None = None, **env: Any) -> None:
        self.redis_url = redis_url
        self.port = port or free_port()
        self.env = {
            "REDIS_URL": redis_url,
            "ASKGATE_SECRET_KEY": SECRET,
            "ASKGATE_API_PORT": str(self.port),
            "ASKGATE_TIMEOUT_MIN_S": "1",
            "ASKGATE_LOG_LEVEL": "warning",
            **{k: str(v) for k, v in env.items()},
        }
        self.log_path = Path(tempfile.mkdtemp(prefix="askgate-api-")) / "api.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> ApiProcess:
        """Start the API and return once /readyz says it is ready (Redis and pub/sub)."""
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "askgate_api"],
                env={**os.environ, **self.env},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/readyz", timeout=1.0).status_code == 200:
                    return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"askgate API did not start on {self.url}:\n{self.log_tail()}")

    def stop(self) -> None:
        """Stop gracefully (SIGTERM), killing it if it does not exit in time."""
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """A crash: SIGKILL, no graceful shutdown, open connections just drop."""
        self._signal(signal.SIGKILL)

    def _signal(self, sig: signal.Signals) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""

    def __enter__(self) -> ApiProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
