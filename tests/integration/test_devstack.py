"""`make run`'s embedded Redis: it never uses a Redis it did not start. Another Redis (or
anything else) on the wanted port moves it to a free port and says so; an earlier run's
Redis still serving askgate's own data directory is refused, naming how to stop it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from askgate.dev.devstack import RedisInUse, start_embedded_redis
from askgate.dev.redis_server import (
    CLUSTER_BUS_OFFSET,
    RedisProcess,
    ephemeral_ports_from,
    free_cluster_port,
    free_port,
    port_owner,
)


@pytest.fixture
def foreign(tmp_path: Path) -> Iterator[RedisProcess]:
    """Someone else's Redis on some port, with its own data."""
    with RedisProcess(data_dir=str(tmp_path / "foreign")) as server:
        yield server


def test_free_port_is_used(tmp_path: Path) -> None:
    """With the port free, the embedded Redis takes it and has nothing to say."""
    port = free_port()
    server, note = start_embedded_redis(tmp_path / "redis", port)
    try:
        assert (server.port, note) == (port, None)
        owner = port_owner(port)
        assert owner is not None and server.proc is not None and owner.pid == server.proc.pid
    finally:
        server.stop()


def test_foreign_redis_moves_it_to_another_port(tmp_path: Path, foreign: RedisProcess) -> None:
    """Another Redis on the port: askgate starts its own elsewhere and says where."""
    server, note = start_embedded_redis(tmp_path / "redis", foreign.port)
    try:
        assert server.port != foreign.port
        assert note == (
            f"port {foreign.port} is taken by another Redis (pid "
            f"{foreign.proc.pid if foreign.proc else '?'}, data in {foreign.dir}); "
            f"askgate's embedded Redis uses port {server.port} instead"
        )
        owner = port_owner(server.port)
        assert owner is not None and owner.dir == str((tmp_path / "redis").resolve())
    finally:
        server.stop()


def test_non_redis_listener_moves_it_too(tmp_path: Path) -> None:
    """A port held by something that is not Redis is left alone the same way."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        server, note = start_embedded_redis(tmp_path / "redis", port)
        try:
            assert server.port != port
            assert note is not None and "a process that is not Redis" in note
        finally:
            server.stop()


def test_earlier_runs_redis_on_the_same_data_is_refused(tmp_path: Path) -> None:
    """A Redis already serving askgate's data directory is neither reused silently nor
    doubled (two servers on one append-only log): the message says how to stop it."""
    data = tmp_path / "redis"
    with RedisProcess(data_dir=str(data), persist=True) as earlier:
        with pytest.raises(RedisInUse, match=f"redis-cli -p {earlier.port} shutdown"):
            start_embedded_redis(data, earlier.port)


def test_free_ports_are_outside_the_range_outgoing_connections_take() -> None:
    """A port handed out for a server (and a cluster node's bus port) is below the kernel's
    ephemeral range, where no outgoing connection can take it before the server binds it,
    and is free to bind."""
    ephemeral = ephemeral_ports_from()
    for port in [free_port() for _ in range(20)]:
        assert port < ephemeral
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
    for port in [free_cluster_port() for _ in range(5)]:
        assert port + CLUSTER_BUS_OFFSET < ephemeral
