"""Redis clients for askgate's processes.

A blocking pool: when every connection is busy a command waits (up to pool_timeout_s)
for one instead of failing, so a burst of requests queues rather than errors.
"""

from __future__ import annotations

from redis.asyncio import BlockingConnectionPool, Redis


def connect(
    url: str,
    *,
    max_connections: int = 128,
    pool_timeout_s: float = 5.0,
    connect_timeout_s: float = 1.0,
    socket_timeout_s: float | None = 5.0,
) -> Redis:
    pool = BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=pool_timeout_s,
        socket_connect_timeout=connect_timeout_s,
        socket_timeout=socket_timeout_s,
    )
    return Redis.from_pool(pool)  # the client owns the pool: aclose() closes it
