"""The stack as processes the driver can kill -9 and start again, and Redis with an
append-only log that fsyncs every write (so a kill -9 of Redis loses nothing that was
acknowledged)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from askgate.dev.launcher import Forked, Launcher
from askgate.dev.redis_server import RedisClusterProcess, RedisProcess
from askgate.store import keys
from askgate.store.conn import connect_sync

from tests.support.http import TLS

# Every service the driver starts, forked from one process that imported them all while
# Redis started: a restart under chaos costs a fork, not an interpreter importing aiogram
# (~4 s of CPU per Telegram worker). tests/e2e keeps real `python -m` starts.
SERVICES = [
    "askgate_api.__main__",
    "askgate_sweeper.__main__",
    "askgate_webhooks.__main__",
    "askgate_text.__main__",
    "askgate_telegram.service",
    "askgate_slack.service",
    "askgate_discord.service",
]
LAUNCHER = Launcher(preload=SERVICES)


def wait_live(redis_url: str, channel: str, timeout_s: float = 30.0, cluster: bool = False) -> None:
    """Until a worker of `channel` says it is live (the key the API checks asks against)."""
    client = connect_sync(redis_url, cluster=cluster)
    try:
        deadline = time.monotonic() + timeout_s
        while not client.exists(keys.channel_live(channel)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"no live {channel} worker after {timeout_s} s")
            time.sleep(0.05)
    finally:
        client.close()


def children(pid: int) -> list[int]:
    """The live child processes of `pid` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


@dataclass
class Component:
    """One service process (`python -m <module>`, forked by LAUNCHER) with its own
    environment."""

    name: str
    module: str
    env: dict[str, str]
    log_dir: Path
    ready_url: str | None = None  # GET it until 200 after a start
    proc: Forked | None = None
    kills: int = 0
    restarts: int = 0
    pids: list[int] = field(default_factory=list)

    def start(self, timeout_s: float = 30.0) -> None:
        self.proc = LAUNCHER.start(
            self.module, {**os.environ, **self.env}, self.log_dir / f"{self.name}.log"
        )
        self.pids.append(self.proc.pid)
        if self.ready_url:
            deadline = time.monotonic() + timeout_s
            # One client for every poll, on the tests' one TLS context (a new one loads the
            # CA bundle: ~30 ms of CPU).
            with httpx.Client(timeout=1.0, verify=TLS) as http:
                while time.monotonic() < deadline and self.proc.poll() is None:
                    with contextlib.suppress(httpx.HTTPError):
                        if http.get(self.ready_url).status_code == 200:
                            return
                    time.sleep(0.05)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """kill -9 of the process itself (children it supervises are left to notice)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
            self.kills += 1

    def restart(self) -> None:
        self.start()
        self.restarts += 1

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@dataclass
class ChildVictim:
    """A process another component supervises (the webhooks' RQ workers): killed -9, and
    restarted by its supervisor, not by the driver."""

    name: str
    parent: Component
    kills: int = 0
    restarts: int = 0

    def kill(self) -> None:
        if not self.parent.proc:
            return
        kids = children(self.parent.proc.pid)
        if kids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(kids[0], signal.SIGKILL)
                self.kills += 1
                self.restarts += 1  # its supervisor starts another

    def restart(self) -> None:
        pass


@dataclass
class RedisVictim:
    """Redis itself: kill -9 and start again on the same port and data directory."""

    server: RedisProcess
    name: str = "redis"
    kills: int = 0
    restarts: int = 0

    def kill(self) -> None:
        self.server.stop(graceful=False)
        self.kills += 1

    def restart(self) -> None:
        self.server.start()
        self.restarts += 1


@dataclass
class ClusterNodeVictim:
    """A master of the Redis Cluster: kill -9, then started again on the same port, its
    cluster identity and its append-only file (its shards are away meanwhile)."""

    cluster: RedisClusterProcess
    index: int
    name: str = "redis"
    kills: int = 0
    restarts: int = 0

    def kill(self) -> None:
        self.cluster.kill(self.index)
        self.kills += 1

    def restart(self) -> None:
        self.cluster.restart(self.index, timeout_s=60.0)
        self.restarts += 1


Victim = Component | ChildVictim | RedisVictim | ClusterNodeVictim
Ready = Callable[[], bool]
