"""An ASGI app served by a real uvicorn on a free port, in a thread of the test process:
real HTTP (for clients that cannot use an in-process transport), while the test still
builds the app (an injected resolver, its own settings).

    with Served(create_app(settings, resolver=dns)) as served:
        requests.get(served.url + "/healthz")
"""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn
from askgate.dev.redis_server import free_port


class Served:
    def __init__(self, app: Any) -> None:
        self.port = free_port()
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="on",
            loop="asyncio",
            access_log=False,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="served-app", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the served app did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(15)
