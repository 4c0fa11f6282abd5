"""A local HTTP endpoint for outgoing-POST tests: records every request and answers from
a script (status, headers), then with a default. Runs a stdlib server in a thread on a
free port; stop it with `close()` or use it as a context manager."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
from askgate.dev.redis_server import free_port

from tests.support.waiting import eventually


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


class Receiver:
    """`gate`: while it is not set, every request is recorded and then held unanswered (a
    slow receiver); setting it answers them."""

    def __init__(
        self,
        script: list[Reply] | None = None,
        default: Reply | None = None,
        gate: threading.Event | None = None,
    ) -> None:
        self.script = list(script or [])
        self.default = default or Reply()
        self.gate = gate
        self.received: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.received.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    reply = receiver.script.pop(0) if receiver.script else receiver.default
                if receiver.gate is not None:
                    receiver.gate.wait(60)
                try:
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                except OSError:  # the sender is gone (killed mid-request)
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
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    async def wait_for(self, n: int, timeout_s: float = 30.0) -> list[Received]:
        """The first n requests, once they have arrived (bounded wait, not a timing check)."""
        await eventually(lambda: len(self.received) >= n, f"{n} requests", timeout_s)
        return self.received[:n]

    def close(self) -> None:
        if self.gate is not None:
            self.gate.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
