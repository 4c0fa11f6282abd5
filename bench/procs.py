"""Child processes of the benchmark: askgate's services, the baselines, the load
generator. Each runs in its own process group with its output in a log file, and every
one the benchmark starts is stopped on the way out."""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.sample import BIG, SECRET

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


@dataclass
class Proc:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        self.signal(signal.SIGCONT)  # a stopped process cannot handle SIGTERM
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.proc.wait(5)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""


class Procs:
    """Every process the benchmark starts, stopped in reverse order on the way out."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.all: list[Proc] = []
        self.started = itertools.count()  # log names stay unique across stop_all()

    def start(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str] | None = None,
        stdin: int | None = subprocess.DEVNULL,
        stdout: int | None = None,
    ) -> Proc:
        log = self.workdir / f"{next(self.started):02d}-{name}.log"
        with open(log, "wb") as fh:
            proc = subprocess.Popen(
                argv,
                env={**os.environ, **(env or {})},
                cwd=ROOT,
                stdin=stdin,
                stdout=stdout if stdout is not None else fh,
                stderr=fh,
                start_new_session=True,
                preexec_fn=raise_nofile,
            )
        p = Proc(name, proc, log)
        self.all.append(p)
        return p

    def stop(self, p: Proc) -> None:
        p.stop()
        if p in self.all:
            self.all.remove(p)

    def stop_all(self) -> None:
        for p in reversed(self.all):
            p.stop()
        self.all.clear()


def http_get(port: int, path: str, timeout: float = 2.0) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head[9:12]), body


def wait_ready(p: Proc, port: int, path: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if p.proc.poll() is not None:
            raise RuntimeError(f"{p.name} exited ({p.proc.returncode}):\n{p.tail()}")
        with contextlib.suppress(OSError, ValueError):
            if http_get(port, path)[0] == 200:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{p.name} not ready on :{port}{path}:\n{p.tail()}")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used so far (children not included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def self_cpu_s() -> float:
    """User + system CPU seconds this process has used so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def machine_times(stat: str | None = None) -> tuple[int, int]:
    """The machine's CPU time so far (clock ticks, all cores), from /proc/stat's first
    line: (run: what its processes and the kernel ran, steal: what the hypervisor ran
    instead while this machine had work for the core)."""
    text = Path("/proc/stat").read_text() if stat is None else stat
    user, nice, system, _idle, _iowait, irq, softirq, steal = (
        int(x) for x in text.split("\n", 1)[0].split()[1:9]
    )
    return user + nice + system + irq + softirq, steal


def steal_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Of the CPU time the machine wanted between two machine_times(), the share the
    hypervisor gave to someone else (0 on a machine of its own)."""
    run, steal = after[0] - before[0], after[1] - before[1]
    return steal / (run + steal) if run + steal > 0 else 0.0


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def askgate_env(redis_url: str, **extra: str) -> dict[str, str]:
    """The environment of an askgate service under the benchmark: quotas that never
    interfere, logging at info (the deployed default) unless told otherwise."""
    return {
        "REDIS_URL": redis_url,
        "ASKGATE_SECRET_KEY": SECRET,
        "ASKGATE_TENANT_ASKS_PER_S": str(BIG),
        "ASKGATE_TENANT_MAX_PENDING": str(BIG),
        "ASKGATE_TIMEOUT_MIN_S": "1",
        "ASKGATE_LOG_LEVEL": "info",
        "ASKGATE_LOG_JSON": "true",
        **extra,
    }


def start_api(procs: Procs, redis_url: str, port: int, **env: str) -> Proc:
    """`python -m askgate_api` (one uvicorn worker, as deployed), ready (Redis and its
    pub/sub subscription) when this returns."""
    p = procs.start(
        "api", [PY, "-m", "askgate_api"], askgate_env(redis_url, ASKGATE_API_PORT=str(port), **env)
    )
    wait_ready(p, port, "/readyz")
    return p


def start_bare(procs: Procs, redis_url: str, port: int, kind: str, tenant: str) -> Proc:
    """A baseline of `bench.bare_app`: kind is "fastapi" or "asgi"."""
    env = {"REDIS_URL": redis_url, "BARE_PORT": str(port), "BARE_TENANT": tenant, "BARE_KIND": kind}
    p = procs.start(f"bare-{kind}", [PY, "-m", "bench.bare_app"], env)
    wait_ready(p, port, "/count")
    return p
