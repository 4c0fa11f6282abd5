"""Long-poll waiters one API process holds, and the RSS each costs (vs a naive long-poll)."""

from __future__ import annotations

import contextlib
import gc
import json
import re
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from askgate.dev.redis_server import free_port
from askgate.store.store import Store
from askgate.store.tenants import create_tenant

from bench.context import Context
from bench.procs import PY, Proc, Procs, rss_kb, start_api, start_bare
from bench.sample import (
    BIG,
    QUESTIONS,
    AskTemplate,
    ask_body,
    bulk_create,
    make_redis,
    make_settings,
)

TITLE = "Long-poll waiters held by one API process"
METHOD = """
a fresh `python -m askgate_api` process, warmed with {warm} sequential requests, then
`bench/loadgen.py hold` opens one connection per pending question and sends
GET /v1/questions/{{id}}/wait?timeout_s=60 (paced by the server's `askgate_waiters` gauge so
the accept queue never overflows). The server's RSS (/proc VmRSS) is read before and
once every waiter is registered; KB per waiter = the difference / waiters. The naive
comparison is the FastAPI baseline's GET /naive-wait/{{id}}?timeout_s=60, which does
`await asyncio.sleep(timeout_s)`.
"""
WARM = 300


def hold(
    procs: Procs,
    proc: Proc,
    port: int,
    name: str,
    path_template: str,
    ids_file: Path,
    headers: list[str],
    count_path: str,
    count_regex: str,
    warm: Callable[[], None],
) -> dict[str, Any]:
    warm()
    gc.collect()
    time.sleep(1.0)
    before = rss_kb(proc.pid)
    argv = [
        PY,
        "-m",
        "bench.loadgen",
        "hold",
        "--port",
        str(port),
        "--path-template",
        path_template,
        "--ids-file",
        str(ids_file),
        "--count-path",
        count_path,
        "--count-regex",
        count_regex,
    ]
    for h in headers:
        argv += ["--header", h]
    lg = procs.start(f"loadgen-hold-{name}", argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert lg.proc.stdout is not None and lg.proc.stdin is not None
    ready: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            line = lg.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"loadgen hold ended early:\n{lg.tail()}")
            msg = json.loads(line)
            if msg.get("ready"):
                ready = msg
                break
        time.sleep(0.5)
        after = rss_kb(proc.pid)
        alive = proc.proc.poll() is None
    finally:
        with contextlib.suppress(BrokenPipeError):
            lg.proc.stdin.close()
        try:
            lg.proc.wait(20)
        except subprocess.TimeoutExpired:
            pass
        procs.stop(lg)
    return {**ready, "before_kb": before, "after_kb": after, "alive": alive}


def warm_requests(port: int, paths: list[str], headers: list[str]) -> None:
    hdr = "".join(f"{h}\r\n" for h in headers)
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        f = s.makefile("rb")
        for path in paths:
            s.sendall(f"GET {path} HTTP/1.1\r\nhost: x\r\n{hdr}\r\n".encode())
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                head += f.readline()
            m = re.search(rb"(?i)content-length:\s*(\d+)", head)
            f.read(int(m.group(1)) if m else 0)


def run(ctx: Context) -> None:
    n = ctx.size(10_000, 1000)
    fig = ctx.report.figure("waiters", TITLE, METHOD.format(warm=WARM))
    ctx.flush()

    async def prepare() -> tuple[str, list[str]]:
        redis = make_redis(ctx.redis_url)
        try:
            tenant, api_key = await create_tenant(redis, "wait", max_pending=BIG, asks_per_s=BIG)
            store = Store(redis, make_settings(ctx.redis_url))
            tmpl = await AskTemplate.record(
                store, tenant.id, ask_body(QUESTIONS, "x", timeoutSeconds=900)
            )
            return api_key, await bulk_create(store, tmpl, n + WARM, "waiter")
        finally:
            await redis.aclose()

    api_key, ids = ctx.run(prepare())
    warm_ids, hold_ids = ids[:WARM], ids[WARM:]
    ids_file = ctx.workdir / "wait-ids.txt"
    ids_file.write_text("\n".join(hold_ids))
    auth = [f"authorization: Bearer {api_key}"]

    port = free_port()
    api = start_api(ctx.procs, ctx.redis_url, port)
    try:
        res = hold(
            ctx.procs,
            api,
            port,
            "askgate",
            "/v1/questions/{id}/wait?timeout_s=60",
            ids_file,
            auth,
            "/metrics",
            r"^askgate_waiters (\S+)",
            lambda: warm_requests(
                port, [f"/v1/questions/{q}/wait?timeout_s=0" for q in warm_ids], auth
            ),
        )
    finally:
        ctx.procs.stop(api)
    port = free_port()
    bare = start_bare(ctx.procs, ctx.redis_url, port, "fastapi", "tbare")
    try:
        naive = hold(
            ctx.procs,
            bare,
            port,
            "naive",
            "/naive-wait/{id}?timeout_s=60",
            ids_file,
            [],
            "/count",
            r'"waiting":(\d+)',
            lambda: warm_requests(port, [f"/naive-wait/{q}?timeout_s=0" for q in warm_ids], []),
        )
    finally:
        ctx.procs.stop(bare)

    for label, r in (("askgate GET /wait", res), ("naive FastAPI sleep long-poll", naive)):
        held = int(r.get("registered", 0))
        per = (r["after_kb"] - r["before_kb"]) / max(1, held)
        early = r.get("early") or {}
        mb = f"({r['before_kb'] / 1024:.0f} → {r['after_kb'] / 1024:.0f} MB)"
        if label.startswith("askgate"):
            fig.add(
                f"Long-poll waiters held by one API process, {label}",
                f"{held:,}",
                f"{n:,}",
                held >= n and not early and r["alive"],
            )
            fig.add(f"RSS per waiter, {label}", f"{per:.1f} KB {mb}", "≤ 12 KB", per <= 12)
        else:
            fig.add(f"RSS per waiter, {label} ({held:,} held)", f"{per:.1f} KB {mb}")
        fig.note(
            f"{label}: {held:,} registered in {r.get('open_s', 0):.1f} s "
            f"({held / max(1e-9, r.get('open_s', 1)):,.0f}/s); early responses "
            f"{early or 'none'}; connect failures {r.get('failed', 0)}"
        )
    fig.data.update(askgate=res, naive=naive)
