"""A service's log is one JSON object per line with ASKGATE_LOG_JSON, whoever logs
(structlog events, uvicorn, the platform clients through `logging`), and the clients'
per-request lines are kept for debug."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import logging, sys
import structlog
from askgate.runtime.logs import configure_logging

configure_logging(sys.argv[1], json=True)
structlog.get_logger("askgate.test").info("prompt.sent", question_id="q1")
logging.getLogger("uvicorn.error").info("Uvicorn running on http://127.0.0.1:1")
logging.getLogger("slack_sdk").warning("a library's warning")
logging.getLogger("httpx").info('HTTP Request: POST http://x/api "HTTP/1.1 200 OK"')
logging.getLogger("aiogram.event").info("Update id=1 is handled. Duration 3 ms")
"""


def log_lines(level: str) -> list[dict[str, object]]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, level], capture_output=True, text=True, check=True
    )
    return [json.loads(line) for line in out.stderr.splitlines() if line.strip()]


def test_every_line_is_json_and_per_request_lines_wait_for_debug() -> None:
    lines = log_lines("info")
    assert [line["event"] for line in lines] == [
        "prompt.sent",
        "Uvicorn running on http://127.0.0.1:1",
        "a library's warning",
    ]
    assert lines[0]["question_id"] == "q1" and lines[0]["level"] == "info"
    assert (lines[1]["logger"], lines[1]["level"]) == ("uvicorn.error", "info")
    assert all("timestamp" in line for line in lines)


def test_debug_keeps_the_per_request_lines() -> None:
    events = [line["event"] for line in log_lines("debug")]
    assert 'HTTP Request: POST http://x/api "HTTP/1.1 200 OK"' in events
    assert "Update id=1 is handled. Duration 3 ms" in events
