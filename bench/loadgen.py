"""A small HTTP/1.1 load generator for the benchmarks (run as its own process).

Raw asyncio sockets on uvloop, keep-alive connections, pre-built request bytes: it costs
far less CPU per request than an HTTP client library, so on a 2-core machine most of the
CPU stays with the server under test.

    loadgen.py rate --port P [--port P2 …] --path /v1/questions --body-file F
               [--header 'K: V'] [--concurrency 64] [--warmup 1] [--duration 5] [--tag x]
        Each connection sends requests back to back; with several ports the connections
        are spread over them evenly (a load balancer in front of several servers). The
        body file holds the marker @N@, replaced per request by a unique token (so every
        ask has its own session).
        Prints one JSON line: requests/s in the measured window, status counts, latency.

    loadgen.py hold --port P --path-template '/v1/questions/{id}/wait?timeout_s=60'
               --ids-file F --count-path /metrics --count-regex 'askgate_waiters (\\S+)'
        Opens one connection per id and sends one GET on each, never reading further.
        Paced by the server: opens a batch, then polls count-path until the server
        reports the waiters registered. Prints JSON progress lines, then {"ready": …};
        waits for EOF on stdin, closes everything and prints {"done": …}.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import re
import resource
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, cast

import orjson


def raise_nofile() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(orjson.dumps(obj).decode() + "\n")
    sys.stdout.flush()


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    lower = head.lower()
    i = lower.find(b"content-length:")
    length = int(lower[i + 15 : lower.index(b"\r\n", i)]) if i >= 0 else 0
    body = await reader.readexactly(length) if length else b""
    return status, body


async def get(port: int, path: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n".encode())
        _, body = await read_response(reader)
        return body
    finally:
        writer.close()


# -- rate -------------------------------------------------------------------------------


async def rate(args: argparse.Namespace) -> None:
    body_template = Path(args.body_file).read_bytes()  # noqa: ASYNC240 - before the load
    pre, _, post = body_template.partition(b"@N@")
    headers = "".join(f"{h}\r\n" for h in args.header)
    head = (
        f"{args.method} {args.path} HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        f"content-type: application/json\r\n{headers}"
    ).encode()
    statuses: Counter[int] = Counter()
    latencies: list[float] = []
    measuring = False
    stop = False
    done_all = [0]  # every response, warm-up included (for CPU per request)

    async def worker(w: int) -> None:
        port = args.port[w % len(args.port)]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        n = 0
        try:
            while not stop:
                token = f"{args.tag}-{w}-{n}".encode()
                n += 1
                body = pre + token + post
                t0 = time.perf_counter()
                writer.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
                status, _ = await read_response(reader)
                done_all[0] += 1
                if measuring and not stop:
                    statuses[status] += 1
                    latencies.append(time.perf_counter() - t0)
        finally:
            writer.close()

    tasks = [asyncio.create_task(worker(w)) for w in range(args.concurrency)]
    await asyncio.sleep(args.warmup)
    measuring = True
    t0 = time.perf_counter()
    await asyncio.sleep(args.duration)
    elapsed = time.perf_counter() - t0
    stop = True
    measuring = False
    done, _ = await asyncio.wait(tasks, timeout=5)
    errors = [str(t.exception()) for t in done if t.exception() is not None]
    for t in tasks:
        t.cancel()
    latencies.sort()
    total = sum(statuses.values())

    def pct(p: float) -> float:
        if not latencies:
            return 0.0
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    emit(
        {
            "rps": total / elapsed,
            "requests": total,
            "all_requests": done_all[0],
            "statuses": {str(k): v for k, v in statuses.items()},
            "p50_ms": pct(0.50),
            "p99_ms": pct(0.99),
            "errors": errors[:3],
        }
    )


# -- hold -------------------------------------------------------------------------------


class Hold(asyncio.Protocol):
    """One long-poll: send the request, then only note whether anything came back."""

    def __init__(self, request: bytes, early: Counter[str]) -> None:
        self.request = request
        self.early = early
        self.transport: asyncio.Transport | None = None
        self.answered = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        if not self.answered:
            self.answered = True
            self.early[data[9:12].decode(errors="replace")] += 1

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.answered:
            self.answered = True
            self.early["closed"] += 1


async def hold(args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    ids = Path(args.ids_file).read_text().split()  # noqa: ASYNC240 - before the load
    count_re = re.compile(args.count_regex.encode(), re.M)
    headers = "".join(f"{h}\r\n" for h in args.header)
    early: Counter[str] = Counter()
    protos: list[Hold] = []
    failed = 0

    async def server_count() -> int:
        m = count_re.search(await get(args.port, args.count_path))
        return int(float(m.group(1))) if m else -1

    t0 = time.perf_counter()
    registered = 0
    for start in range(0, len(ids), args.batch):
        batch = ids[start : start + args.batch]
        reqs = [
            f"GET {args.path_template.format(id=qid)} HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            f"{headers}\r\n".encode()
            for qid in batch
        ]
        results = await asyncio.gather(
            *(
                loop.create_connection(functools.partial(Hold, r, early), "127.0.0.1", args.port)
                for r in reqs
            ),
            return_exceptions=True,
        )
        for res in results:
            if isinstance(res, BaseException):
                failed += 1
            else:
                protos.append(res[1])
        # Let the server catch up: at most `window` requests in flight unregistered.
        want = len(protos) - sum(early.values()) - args.window
        deadline = time.perf_counter() + 30
        while time.perf_counter() < deadline:
            registered = await server_count()
            if registered >= want:
                break
            await asyncio.sleep(0.02)
        emit({"opened": len(protos), "registered": registered, "failed": failed})
    want = len(protos) - sum(early.values())
    deadline = time.perf_counter() + 60
    while time.perf_counter() < deadline:
        registered = await server_count()
        if registered >= want:
            break
        await asyncio.sleep(0.05)
    emit(
        {
            "ready": True,
            "opened": len(protos),
            "registered": registered,
            "failed": failed,
            "early": dict(early),
            "open_s": time.perf_counter() - t0,
        }
    )
    await loop.run_in_executor(None, sys.stdin.read)
    for p in protos:
        if p.transport is not None:
            p.transport.abort()
    emit({"done": True, "early": dict(early)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("rate")
    r.add_argument("--port", type=int, action="append", required=True)
    r.add_argument("--method", default="POST")
    r.add_argument("--path", required=True)
    r.add_argument("--body-file", required=True)
    r.add_argument("--header", action="append", default=[])
    r.add_argument("--concurrency", type=int, default=64)
    r.add_argument("--warmup", type=float, default=1.0)
    r.add_argument("--duration", type=float, default=5.0)
    r.add_argument("--tag", default="lg")
    h = sub.add_parser("hold")
    h.add_argument("--port", type=int, required=True)
    h.add_argument("--path-template", required=True)
    h.add_argument("--ids-file", required=True)
    h.add_argument("--header", action="append", default=[])
    h.add_argument("--count-path", required=True)
    h.add_argument("--count-regex", required=True)
    h.add_argument("--batch", type=int, default=250)
    h.add_argument("--window", type=int, default=250)
    args = parser.parse_args()
    raise_nofile()
    body = rate if args.mode == "rate" else hold
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover
        runner = asyncio.Runner()
    with runner, contextlib.suppress(KeyboardInterrupt):
        runner.run(body(args))


if __name__ == "__main__":
    main()
