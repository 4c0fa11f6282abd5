"""Local fake receivers the stack POSTs to: one for webhooks, one per chat platform.
Each records every request (threads of a stdlib server) and answers 200, or now and then
503 so that retries happen too."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
from askgate.dev.redis_server import free_port


@dataclass(frozen=True)
class Hit:
    at: float
    headers: dict[str, str]
    body: dict[str, Any]
    status: int  # what the receiver answered


class Receiver:
    def __init__(
        self, name: str, error_rate: float = 0.0, seed: int = 0, latency_s: float = 0.0
    ) -> None:
        """`latency_s`: each answer waits up to this long, so a kill lands mid-POST too."""
        self.name = name
        self.hits: list[Hit] = []
        self.taken: set[tuple[str, str]] = set()  # (question_id, type) answered 200
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    status = 503 if receiver._random.random() < error_rate else 200
                    delay = receiver._random.uniform(0, latency_s)
                time.sleep(delay)
                body = orjson.loads(raw)
                with receiver._lock:
                    receiver.hits.append(
                        Hit(
                            time.time(),
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                            status,
                        )
                    )
                    if status == 200:
                        receiver.taken.add((str(body.get("question_id")), str(body.get("type"))))
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                except OSError:  # the sender was killed mid-request
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        # serve_forever looks for shutdown() every poll_interval (0.5 s by default): each
        # close waited that long.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{self.name}"

    def snapshot(self) -> list[Hit]:
        with self._lock:
            return list(self.hits)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
