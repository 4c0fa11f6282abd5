"""The Python client's connection pools share one TLS context per process: building one
loads the CA bundle, which costs more CPU than an ask, and an agent may open a client
per task."""

from __future__ import annotations

import ssl
from typing import Any

import pytest
from askgate_client import Askgate, AsyncAskgate
from askgate_client import _protocol as p


async def test_clients_load_the_ca_bundle_once_per_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[ssl.SSLContext] = []
    make = ssl.create_default_context

    def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        built.append(make(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    p.tls.cache_clear()
    clients = [AsyncAskgate("https://askgate.example", "k") for _ in range(3)]
    with Askgate("https://askgate.example", "k"), Askgate("http://127.0.0.1:9", "k"):
        pass
    for client in clients:
        await client.aclose()
    assert len(built) == 1
    # It is the default one: the certificates are checked, against the host name.
    assert built[0].verify_mode == ssl.CERT_REQUIRED and built[0].check_hostname
    p.tls.cache_clear()
