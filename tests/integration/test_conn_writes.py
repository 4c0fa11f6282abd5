"""askgate's Redis connections write each command under the socket timeout (without a
task per send, `askgate.store.conn`): a Redis that stops reading fails the write with
redis-py's TimeoutError, and the client works again once Redis does."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from askgate.dev.redis_server import RedisProcess
from askgate.store.conn import connect
from redis.exceptions import TimeoutError as RedisTimeoutError

from tests.support.databases import start_redis


@pytest.fixture
def own_redis() -> Iterator[tuple[RedisProcess, int]]:
    """A redis-server of this test's own, to pause (SIGSTOP), and its pid."""
    server = start_redis()
    assert server.proc is not None
    yield server, server.proc.pid
    os.kill(server.proc.pid, signal.SIGCONT)
    server.stop()


async def test_a_write_to_a_redis_that_stopped_reading_times_out(
    own_redis: tuple[RedisProcess, int],
) -> None:
    """A write that cannot go out within the socket timeout fails as redis-py's
    TimeoutError and drops its connection; the next command gets a new one."""
    server, pid = own_redis
    client = connect(server.url, socket_timeout_s=0.5)
    try:
        await client.set("before", "1")
        os.kill(pid, signal.SIGSTOP)  # hangs: reads nothing, answers nothing
        # Larger than the socket buffers on both sides, so the write itself waits.
        with pytest.raises(RedisTimeoutError, match="writing"):
            await client.set("big", b"x" * (64 << 20))
        os.kill(pid, signal.SIGCONT)
        assert await client.get("before") == b"1"  # on a new connection
        assert await client.exists("big") == 0
    finally:
        os.kill(pid, signal.SIGCONT)
        await client.aclose()
