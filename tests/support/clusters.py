"""Redis Clusters launched ahead of the tests that take one of their own (`own_cluster`).

A cluster master says the cluster is ok no sooner than 2 s after it started (Redis's
CLUSTER_WRITABLE_DELAY, not a setting), so each new cluster made its test wait 2 s.
`Spares` keeps the next few launched, so that their 2 s pass during the tests before.
"""

from __future__ import annotations

import contextlib
from collections import deque

from askgate.dev.redis_server import RedisClusterProcess
from redis.exceptions import RedisError

# Clusters launched beyond the one taken: a few tests' worth of 2 s. An idle one costs
# its three redis-servers about 5 ms of CPU a second.
AHEAD = 2


class Spares:
    """`take()` a 3-master cluster that is ok (yours to kill nodes of, and to stop).
    Nothing is launched before `launch_first()` or the first `take()`."""

    def __init__(self) -> None:
        self._launched: deque[RedisClusterProcess] = deque()

    def launch_first(self) -> None:
        """Launch the cluster the first `take()` gets, so that its 2 s pass meanwhile."""
        self._launch(1)

    def take(self) -> RedisClusterProcess:
        cluster = self._launched.popleft() if self._launched else RedisClusterProcess().launch()
        self._launch(AHEAD)
        try:
            cluster.wait_ok()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _launch(self, ahead: int) -> None:
        with contextlib.suppress(RedisError, RuntimeError, OSError):
            # A spare that fails to launch (a port taken meanwhile) is not this test's
            # failure: the next take() launches another.
            while len(self._launched) < ahead:
                self._launched.append(RedisClusterProcess().launch())

    def close(self) -> None:
        while self._launched:
            self._launched.popleft().stop()
