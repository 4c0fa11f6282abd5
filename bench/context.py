"""What every figure gets: the Redis under test, the process list, the report, sizes."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import redis as redis_sync

from bench.procs import Procs
from bench.report import Report

T = TypeVar("T")


@dataclass
class Context:
    quick: bool
    redis_url: str
    redis_pid: int
    redis_binary: str
    procs: Procs
    workdir: Path
    report: Report
    runner: asyncio.Runner

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the benchmark's own (uvloop) event loop."""
        return self.runner.run(coro)

    def size(self, full: T, quick: T) -> T:
        return quick if self.quick else full

    def flush(self) -> None:
        """An empty Redis (and fresh command statistics) for the next figure."""
        r = redis_sync.Redis.from_url(self.redis_url)
        try:
            r.flushall()
            r.config_resetstat()
        finally:
            r.close()
