"""askgate services as real processes, for tests that need a real HTTP server: long-polls
that are not buffered, a service that can be killed and started again on the same port,
several replicas.

    with ApiProcess(redis_url) as api:      # python -m askgate_api on a free port
        api.url                             # http://127.0.0.1:<port>
        api.kill(); api.start()             # a crash and a restart, same port

`ServiceProcess` is the one harness; `ApiProcess` and `WebProcess` name a service's
module, port variable and readiness check. The API is forked from a process that has
imported it already (`askgate.dev.launcher`: a start costs a tenth of the CPU); the web
service starts as `python -m`, and so does the API in tests/e2e/test_stack.py, so each
service's real start stays tested. The `api_server` / `api_process` fixtures
(tests/e2e/conftest.py) and `web_server` (tests/e2e/web/conftest.py) yield them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Self

import httpx
from askgate.dev.launcher import Forked, Launcher
from askgate.dev.redis_server import free_port

from tests.support.asks import SECRET
from tests.support.http import TLS

LAUNCHER = Launcher()  # one per test process; its server starts with the first fork
atexit.register(LAUNCHER.close)


class ServiceProcess:
    """`python -m <module>` as a child process on a free port, ready once GET `/readyz`
    answers 200; its output goes to a log file that is shown when it fails to start."""

    module = ""
    port_variable = ""
    fork = True  # from LAUNCHER, else `python -m`

    def __init__(self, redis_url: str, port: int | None = None, **env: Any) -> None:
        self.redis_url = redis_url
        self.port = port or free_port()
        self.env = {
            "REDIS_URL": redis_url,
            "ASKGATE_SECRET_KEY": SECRET,
            self.port_variable: str(self.port),
            "ASKGATE_LOG_LEVEL": "warning",
            **self.service_env(),
            **{k: str(v) for k, v in env.items()},
        }
        self.log_path = Path(tempfile.mkdtemp(prefix=f"{self.module}-")) / "service.log"
        self.proc: subprocess.Popen[bytes] | Forked | None = None

    def service_env(self) -> dict[str, str]:
        """What this service needs besides Redis, the secret and its port."""
        return {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> Self:
        """Start it and return once /readyz says it is ready."""
        env = {**os.environ, **self.env}
        if self.fork:
            self.proc = LAUNCHER.start(self.module, env, self.log_path)
        else:
            with self.log_path.open("ab") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", self.module],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        deadline = time.monotonic() + timeout_s
        # One client for every poll, on the shared TLS context (a new one loads the CA
        # bundle: ~30 ms of CPU, more than the poll interval).
        with httpx.Client(timeout=1.0, verify=TLS) as http:
            while time.monotonic() < deadline and self.proc.poll() is None:
                with contextlib.suppress(httpx.HTTPError):
                    if http.get(self.url + "/readyz").status_code == 200:
                        return self
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.module} did not start on {self.url}:\n{self.log_tail()}")

    def stop(self) -> int | None:
        """Stop gracefully (SIGTERM), killing it if it does not exit in time; the exit
        code (None when it was not running)."""
        return self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """A crash: SIGKILL, no graceful shutdown, open connections just drop."""
        self._signal(signal.SIGKILL)

    def _signal(self, sig: signal.Signals) -> int | None:
        if self.proc is None:
            return None
        code = self.proc.poll()
        if code is None:
            self.proc.send_signal(sig)
            try:
                code = self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                code = self.proc.wait(10)
        self.proc = None
        return code

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ApiProcess(ServiceProcess):
    """The HTTP API (`askgate_api`); /readyz once Redis and its pub/sub are up."""

    module = "askgate_api"
    port_variable = "ASKGATE_API_PORT"

    def service_env(self) -> dict[str, str]:
        return {"ASKGATE_TIMEOUT_MIN_S": "1"}


class WebProcess(ServiceProcess):
    """The web Control UI (`askgate_web`); /readyz once its event reader runs."""

    module = "askgate_web"
    port_variable = "ASKGATE_WEB_PORT"
    fork = False

    def service_env(self) -> dict[str, str]:
        return {"ASKGATE_WEB_BASE_URL": self.url, "ASKGATE_INSTANCE": f"web-test-{self.port}"}
