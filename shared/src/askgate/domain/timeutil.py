from __future__ import annotations

import time


def now_ms() -> int:
    return int(time.time() * 1000)


def iso(ms: int | str | None) -> str | None:
    if ms in (None, ""):
        return None
    seconds, millis = divmod(int(ms), 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"
