from __future__ import annotations

import time
from datetime import UTC, datetime


def now_ms() -> int:
    return int(time.time() * 1000)


def iso(ms: int | str | None) -> str | None:
    if ms in (None, ""):
        return None
    dt = datetime.fromtimestamp(int(ms) / 1000, UTC)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")
