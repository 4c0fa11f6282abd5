"""HTTP clients the tests open to local servers (the services' ports, the fakes): plain
HTTP, so they share one TLS context instead of each building its own (~34 ms of CPU to
load the CA certificates: more than many a test)."""

from __future__ import annotations

from typing import Any

import httpx

# Built once per pytest process; never used for a handshake (every URL is http://).
TLS = httpx.create_ssl_context()


def local_client(base_url: str, **options: Any) -> httpx.AsyncClient:
    """An AsyncClient for a local http:// server, on the shared TLS context."""
    return httpx.AsyncClient(base_url=base_url, verify=TLS, **options)
