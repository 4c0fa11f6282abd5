"""Redis clients for askgate's processes: one Redis, or a Redis Cluster.

`ASKGATE_REDIS_CLUSTER=true` makes every client redis-py's `RedisCluster`, with
`REDIS_URL` naming any node (a startup node: the client learns the others from it).
Otherwise a plain client with a blocking pool: when every connection is busy a command
waits (up to pool_timeout_s; None: for as long as it takes) for one instead of failing,
so a burst queues rather than errors. (`RedisCluster` keeps a pool per node of
max_connections each and raises `MaxConnectionsError`, a `ConnectionError`, when one is
exhausted.)

`check_mode()` is the start-up check every service runs: a plain client pointed at a
cluster node would answer only for the slots that node holds, so it refuses to start.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import socket
import weakref
from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias
from urllib.parse import urlsplit

import hiredis
import redis as redis_sync
from redis._parsers.commands import AsyncCommandsParser
from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster as SyncRedisCluster
from redis.commands.core import AsyncScript
from redis.connection import HiredisRespSerializer
from redis.crc import key_slot
from redis.driver_info import DriverInfo
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisClusterException, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.typing import EncodableT, KeyT, ScriptTextT
from redis.utils import HIREDIS_AVAILABLE

import askgate
from askgate.domain.errors import ConfigError
from askgate.settings import Settings
from askgate.store import keys

# What every connection tells Redis it is (CLIENT SETINFO; CLIENT LIST shows
# `lib-name=redis-py(askgate_v0.1.0)`), built once: left to redis-py, each new
# connection asks importlib.metadata for redis-py's version (~0.3 ms of CPU each).
DRIVER = DriverInfo(lib_version=redis_sync.__version__).add_upstream_driver(
    "askgate", askgate.__version__
)

# What askgate's code holds: either client answers the same commands for keys that
# share one hash tag.
Client: TypeAlias = Redis | RedisCluster
SyncClient: TypeAlias = redis_sync.Redis | SyncRedisCluster


class _HiredisPacking:
    """Packs each command with hiredis (C), as redis-py's blocking client does; its
    asyncio connection packs argument by argument in Python: about 4x the CPU, which a
    batch script with thousands of keys (a sweep's) and every other command pay."""

    _serializer = HiredisRespSerializer()

    def pack_command(self, *args: Any) -> list[bytes]:
        # A command name with a space ("CONFIG GET") is split by the serializer, which also
        # turns memoryviews into bytes and a bad argument into DataError.
        if isinstance(args[0], str) and " " not in args[0]:
            with contextlib.suppress(TypeError):
                return [hiredis.pack_command(args)]
        packed: list[bytes] = self._serializer.pack(*args)
        return packed


class _TornDownIsConnectionError:
    """A write on a connection that was torn down under it raises ConnectionError, as a
    write on a closed socket does, instead of uvloop's RuntimeError ("the handler is
    closed") or an AttributeError (its writer already None).

    redis-py's cluster client disconnects a node's idle connections after an error on
    that node while other commands are taking them (a master killed): the commands caught
    there failed with those errors, which neither redis-py's retries nor askgate's
    handlers of Redis errors expected. An API request then got a 500, and a stream
    consumer's reader stopped for good (every other reader of that consumer too), so the
    webhooks service never read the events of those shards again."""

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        try:
            await super().send_packed_command(command, check_health)  # type: ignore[misc]
        except (RuntimeError, AttributeError) as exc:
            raise RedisConnectionError(f"connection closed while writing: {exc}") from exc


class _SendUnderATimeout:
    """Sends a command as redis-py does (the same checks, errors and disconnects), bounded
    by the socket timeout under `asyncio.timeout` rather than redis-py's
    `asyncio.wait_for`, which on Python 3.11 runs each send in a task of its own: a task
    made, scheduled and finished for every command and pipeline of every askgate process
    (20-40 µs of CPU each on these machines, a tenth to a fifth of a GET's)."""

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        conn: Any = self
        if not conn.is_connected:
            await conn.connect_check_health(check_health=False)
        if check_health:
            await conn.check_health()
        if isinstance(command, str):
            command = command.encode()
        if isinstance(command, bytes):
            command = [command]
        try:
            conn._writer.writelines(command)
            async with asyncio.timeout(conn.socket_timeout or None):
                await conn._writer.drain()
        except TimeoutError:
            await conn.disconnect(nowait=True)
            raise RedisTimeoutError("Timeout writing to socket") from None
        except OSError as exc:
            await conn.disconnect(nowait=True)
            err, message = ("UNKNOWN", exc.args[0]) if len(exc.args) == 1 else exc.args[:2]
            raise RedisConnectionError(f"Error {err} while writing to socket. {message}.") from exc
        except BaseException:
            await conn.disconnect(nowait=True)
            raise


_CLASSES: dict[tuple[type, ...], type] = {}


def _connection_class(base: type, *mixins: type) -> type:
    """`base` (TCP, TLS, unix socket) with `mixins` first, made once per combination."""
    if issubclass(base, _TornDownIsConnectionError):
        return base
    bases = (*mixins, _TornDownIsConnectionError, _SendUnderATimeout, base)
    if bases not in _CLASSES:
        _CLASSES[bases] = type(f"Askgate{base.__name__}", bases, {})
    return _CLASSES[bases]


def _pack_with_hiredis(pool: ConnectionPool) -> None:
    """Make the pool's connections pack commands with hiredis (when it is installed; it is
    a dependency) and fail a write on a torn-down connection as a ConnectionError. The
    pool's own connection class (TCP, TLS, unix socket) is kept."""
    mixins = (_HiredisPacking,) if HIREDIS_AVAILABLE else ()
    pool.connection_class = _connection_class(pool.connection_class, *mixins)


# The command table (COMMAND) redis-py's cluster client reads from a node at every
# (re)initialisation, to find the keys of a command: shared by the clients of a process.
_COMMANDS: dict[str, Any] = {}


class _SharedCommandTable(AsyncCommandsParser):  # type: ignore[misc]
    """redis-py's parser of command keys, whose table (~240 commands; parsing it was most
    of a cluster client's start, and again after every reset of a failover) is read from
    a node once per process. Asked for a command the table lacks, it reads it again."""

    async def initialize(self, node: Any = None) -> None:
        if node is not None and _COMMANDS:
            self.node = node
            self.commands = _COMMANDS
            return
        await super().initialize(node)
        _COMMANDS.update(self.commands)


# redis-py's classes read as Any to mypy (their bases come from untyped modules).
class ClusterClient(RedisCluster):  # type: ignore[misc]
    """redis-py's `RedisCluster`, made to go on serving the shards of the nodes that are
    up while one master is down (its own retries cover a failover, not a node that stays
    away).

    - (Re)initialising, redis-py sends `COMMAND` to its default node, the first primary
      it knows (on a fresh client: the master of slot 0), and gives up when that one is
      down. It moves a failed node to the back only after a single command failed on it,
      not after a failed pipeline, nor on a fresh start: until the node came back, every
      command then failed with that node's connection error, also for the shards of the
      nodes that are up. Here the next primary is tried instead.
    - A script a node has not cached is sent with `EVAL` to the node of its keys (which
      caches it there), instead of redis-py's `SCRIPT LOAD` on every primary, which fails
      while any of them is down.
    - The streams of an `XREAD` or `XREADGROUP` are found in the command itself. redis-py
      asks its default node (`COMMAND GETKEYS`) for the keys of every command whose keys
      move: one more round trip for every blocking read of every stream consumer, all of
      them to one node, and while that node was down every read failed, also those of
      the shards on the nodes that were up.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Every node's connections, those of the startup nodes and of the nodes learnt
        # later (built from the manager's connection_kwargs).
        params = self.nodes_manager.connection_kwargs
        params["connection_class"] = _connection_class(params["connection_class"])
        for node in self.nodes_manager.startup_nodes.values():
            node.connection_class = _connection_class(node.connection_class)
        self.commands_parser = _SharedCommandTable()

    async def initialize(
        self,
        additional_startup_nodes_info: list[tuple[str, int]] | None = None,
        last_failed_node_name: str | None = None,
    ) -> ClusterClient:
        tried: set[str] = set()
        while True:
            try:
                await super().initialize(additional_startup_nodes_info, last_failed_node_name)
                return self
            except (RedisConnectionError, RedisTimeoutError):
                primaries = self.get_primaries()
                if len(primaries) < 2 or primaries[0].name in tried:
                    raise
                tried.add(primaries[0].name)
                self.nodes_manager.move_node_to_end_of_cached_nodes(primaries[0].name)

    def register_script(self, script: ScriptTextT) -> AsyncScript:
        return _NodeScript(self, script)

    async def _determine_slot(self, command: str, *args: Any) -> int:
        streams = _read_streams(command, args)
        if streams is None:
            return int(await super()._determine_slot(command, *args))
        slots: set[int] = {self.keyslot(name) for name in streams}
        if len(slots) != 1:
            raise RedisClusterException(f"{command} - all keys must map to the same key slot")
        return slots.pop()


def _read_streams(command: str, args: Sequence[Any]) -> Sequence[Any] | None:
    """The stream names of an XREAD or XREADGROUP (`... STREAMS k1 k2 id1 id2`), its
    options read as Redis reads them (a group or consumer may be called "streams"); None
    for any other command, or one whose arguments are not understood (redis-py then asks
    a node, and Redis refuses what it does not understand)."""
    if str(command).upper() not in ("XREAD", "XREADGROUP"):
        return None
    i = 0
    while i < len(args):
        token = args[i].decode() if isinstance(args[i], bytes) else args[i]
        option = token.upper() if isinstance(token, str) else ""
        if option == "STREAMS":
            rest = args[i + 1 :]
            return rest[: len(rest) // 2] if rest and len(rest) % 2 == 0 else None
        i += _READ_OPTION_ARGS.get(option, 0) + 1
    return None


# The options before STREAMS that take arguments, and how many.
_READ_OPTION_ARGS = {"GROUP": 2, "COUNT": 1, "BLOCK": 1}


class _NodeScript(AsyncScript):  # type: ignore[misc]
    """A script that, when its node does not know it yet, is run with EVAL there."""

    async def __call__(
        self,
        keys: Sequence[KeyT] | None = None,
        args: Iterable[EncodableT] | None = None,
        client: Redis | RedisCluster | None = None,
    ) -> Any:
        if isinstance(client, Pipeline):
            return await super().__call__(keys, args, client)
        keys = list(keys or [])
        args = [*keys, *(args or [])]
        target = client or self.registered_client
        try:
            return await target.evalsha(self.sha, len(keys), *args)
        except NoScriptError:
            return await target.eval(self.script, len(keys), *args)


def connect(
    url: str,
    *,
    cluster: bool = False,
    max_connections: int = 128,
    pool_timeout_s: float | None = 5.0,
    connect_timeout_s: float = 1.0,
    socket_timeout_s: float | None = 5.0,
    cluster_retries: int | None = None,
) -> Client:
    """An asyncio client: `RedisCluster` when `cluster`, else one Redis behind a blocking
    pool. max_connections is per node on a cluster. cluster_retries: how many times the
    cluster client tries a command again after a connection error, each time after a
    fresh look at the cluster's layout (default redis-py's 3, which rides out a failover;
    0 for a caller that tries again soon anyway)."""
    if cluster:
        retry = {} if cluster_retries is None else {"retry": Retry(NoBackoff(), cluster_retries)}
        return ClusterClient.from_url(
            url,
            max_connections=max_connections,
            socket_connect_timeout=connect_timeout_s,
            socket_timeout=socket_timeout_s,
            driver_info=DRIVER,
            **retry,
        )
    pool = BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=pool_timeout_s,
        socket_connect_timeout=connect_timeout_s,
        socket_timeout=socket_timeout_s,
        driver_info=DRIVER,
    )
    _pack_with_hiredis(pool)
    return Redis.from_pool(pool)  # the client owns the pool: aclose() closes it


def consumer_client(url: str, *, cluster: bool, block_ms: int) -> Client:
    """The asyncio client of a process that consumes streams (`askgate.runtime.consumer`:
    the channel workers, the webhooks service). Its blocking reads hold a connection for
    `block_ms`, so the socket timeout allows for them. Its handlers wait their turn for a
    connection, however long: when the process is behind (more handlers in flight than
    connections, each held longer while the loop is busy), failing after a few seconds only
    sent the entry round again a lease later (at 200 asks/s on 2 cores: ~550 "No
    connection available" per 30 s and 420 of 6,000 prompts not shown 20 s after the last
    ask). Every command is bounded by the socket timeout, so a connection always comes
    back. Its connections carry a name of their own, by which a stopping consumer finds
    its blocking reads (`unblock_reads`)."""
    name = f"askgate-reader-{socket.gethostname()}-{os.getpid()}-{next(_reader_numbers)}"
    client = connect(
        url, cluster=cluster, socket_timeout_s=block_ms / 1000 + 10, pool_timeout_s=None
    )
    _name_connections(client, name)
    _reader_names[client] = name
    return client


class _ReaderName:
    """Names a consumer client's connection (CLIENT SETNAME) once it is up, where the
    server allows it, so that a stopping consumer finds its blocking reads in CLIENT LIST.
    Not redis-py's own client_name, which fails the connection when SETNAME is refused:
    Redis 6 files all of CLIENT under @admin, and a user without it must still consume."""

    reader_name = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register_connect_callback(self._name_itself)  # type: ignore[attr-defined]

    async def _name_itself(self, connection: Any) -> None:
        with contextlib.suppress(ResponseError):
            await connection.send_command("CLIENT", "SETNAME", self.reader_name)
            await connection.read_response()


def _name_connections(client: Client, name: str) -> None:
    def named(base: type) -> type:
        return type(base.__name__, (_ReaderName, base), {"reader_name": name})

    if isinstance(client, RedisCluster):
        params = client.nodes_manager.connection_kwargs
        params["connection_class"] = named(params["connection_class"])
        for node in client.nodes_manager.startup_nodes.values():
            node.connection_class = named(node.connection_class)
    else:
        client.connection_pool.connection_class = named(client.connection_pool.connection_class)


# The clients of `consumer_client`, and the name their connections have on the server.
_reader_names: weakref.WeakKeyDictionary[Client, str] = weakref.WeakKeyDictionary()
_reader_numbers = itertools.count()


async def unblock_reads(client: Client) -> int:
    """End the blocking reads (XREAD or XREADGROUP with BLOCK) that connections of
    `client`, a `consumer_client`, wait in, as if their block had run out (`CLIENT
    UNBLOCK`): a stopping consumer need not wait out a block of seconds. Redis serves a
    read or unblocks it, never both, so no entry is handed to a read that was ended. How
    many were ended (0 for any other client). Raises RedisError when the server refuses
    `CLIENT LIST` or `CLIENT UNBLOCK` (an ACL without them): the reads then end with their
    block. On a cluster, a master that cannot be reached is passed over."""
    name = _reader_names.get(client)
    if name is None:
        return 0
    if not isinstance(client, RedisCluster):
        return await _unblock_named(client, name, {})
    ended = 0
    for node in client.get_primaries():
        try:
            ended += await _unblock_named(client, name, {"target_nodes": node})
        except (RedisConnectionError, RedisTimeoutError, OSError):
            continue  # its reads end with their block, or with the node
    return ended


async def _unblock_named(client: Client, name: str, target: dict[str, Any]) -> int:
    ended = 0
    for row in await client.client_list(**target):
        if row.get("name") == name and "b" in row.get("flags", ""):
            ended += bool(await client.client_unblock(int(row["id"]), **target))
    return ended


def connect_sync(
    url: str,
    *,
    cluster: bool = False,
    connect_timeout_s: float = 2.0,
    socket_timeout_s: float | None = 10.0,
) -> SyncClient:
    """A blocking client (RQ's jobs, the webhook state they write)."""
    if cluster:
        return SyncRedisCluster.from_url(
            url,
            socket_connect_timeout=connect_timeout_s,
            socket_timeout=socket_timeout_s,
            driver_info=DRIVER,
        )
    return redis_sync.Redis.from_url(
        url,
        socket_connect_timeout=connect_timeout_s,
        socket_timeout=socket_timeout_s,
        driver_info=DRIVER,
    )


# For a subscriber: when its connection drops, redis-py reconnects once inside the read
# and subscribes again; with retries it would then read on as if nothing had happened,
# and whatever was published while it was away would be missed without a word. With none
# the drop reaches the subscriber's owner, who knows what to re-read (the API's waiters).
SUBSCRIBER_RETRY = Retry(NoBackoff(), 0)


def connect_pubsub(url: str, *, socket_timeout_s: float | None = None) -> Redis:
    """A plain client for classic pub/sub on the node `url` names. On a cluster too: a
    `PUBLISH` on any node reaches the subscribers of every node over the cluster bus.
    A dropped connection is raised to the subscriber (SUBSCRIBER_RETRY)."""
    client = Redis.from_url(
        url,
        socket_connect_timeout=1.0,
        socket_timeout=socket_timeout_s,
        max_connections=4,
        driver_info=DRIVER,
        retry=SUBSCRIBER_RETRY,
    )
    _pack_with_hiredis(client.connection_pool)
    return client


def node_client(
    host: str,
    port: int,
    *,
    max_connections: int,
    socket_timeout_s: float | None = 5.0,
    subscriber: bool = False,
) -> Redis:
    """A plain client of one cluster node (WAIT after a write on it, SSUBSCRIBE to its
    shards' channels), with the connection class every other client has. A `subscriber`'s
    dropped connection is raised to it (SUBSCRIBER_RETRY; redis-py would otherwise
    subscribe again to all its shard channels in one SSUBSCRIBE, which a cluster refuses
    across slots: the drop then surfaced as a misleading CROSSSLOT error)."""
    retry = {"retry": SUBSCRIBER_RETRY} if subscriber else {}
    client = Redis(
        host=host,
        port=port,
        socket_connect_timeout=1.0,
        socket_timeout=socket_timeout_s,
        max_connections=max_connections,
        driver_info=DRIVER,
        **retry,
    )
    _pack_with_hiredis(client.connection_pool)
    return client


def cluster_enabled(url: str, *, timeout_s: float = 2.0) -> bool | None:
    """Whether the Redis at `url` runs in cluster mode; None when it cannot be reached."""
    client = redis_sync.Redis.from_url(
        url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s
    )
    try:
        info = client.info("cluster")
    except (RedisError, OSError):
        return None
    finally:
        client.close()
    return bool(int(info.get("cluster_enabled", 0)))


def check_mode(url: str, *, cluster: bool, url_var: str = "REDIS_URL") -> bool | None:
    """Refuse (ConfigError) a client mode that does not match the server's: a plain
    client on a cluster node, or a cluster client on a plain Redis. A Redis that cannot
    be reached now passes (services ride out an outage), and the result is None."""
    enabled = cluster_enabled(url)
    if enabled is None:
        return None
    where = urlsplit(url).netloc.rpartition("@")[2]
    if enabled and not cluster:
        if url_var == "REDIS_URL":
            fix = (
                "set ASKGATE_REDIS_CLUSTER=true (and ASKGATE_JOBS_REDIS_URL to a "
                "non-cluster Redis for the webhook jobs)"
            )
        else:
            fix = f"point {url_var} at a Redis that is not part of a cluster"
        raise ConfigError(f"{url_var} ({where}) is a Redis Cluster node (cluster_enabled:1): {fix}")
    if cluster and not enabled:
        raise ConfigError(
            f"ASKGATE_REDIS_CLUSTER=true but {url_var} ({where}) is not a "
            "cluster node (cluster_enabled:0): unset ASKGATE_REDIS_CLUSTER or "
            "point REDIS_URL at a node of the cluster"
        )
    return enabled


async def reach_all(redis: Client) -> None:
    """PING the node that serves each shard (every master holding askgate's data);
    raises the first failure. On one Redis this is one PING."""
    if not isinstance(redis, RedisCluster):
        await redis.ping()
        return
    await redis.initialize()
    nodes = {}
    for shard in range(keys.SHARDS):
        node = redis.get_node_from_key(keys.tag(shard))
        nodes[node.name] = node
    for node in nodes.values():
        await redis.ping(target_nodes=node)


def node_of(redis: Client, shard: int) -> str:
    """The name of the node that serves `shard` as far as the client knows ("" on one
    Redis, or on a cluster whose slot map the client has not learnt)."""
    if not isinstance(redis, RedisCluster):
        return ""
    try:
        return str(redis.get_node_from_key(keys.tag(shard)).name)
    except RedisError:
        return ""


async def warm(redis: Client) -> None:
    """Learn a cluster's slot map once, before concurrent use: redis-py's RedisCluster
    can fail commands that race its first, lazy initialisation (AttributeError on a
    connection not yet open). A no-op on one Redis, and on a cluster not reached yet
    (the first command then tries again)."""
    if isinstance(redis, RedisCluster):
        with contextlib.suppress(RedisError, OSError):
            await redis.initialize()


def read_groups(redis: Client, names: Iterable[str]) -> list[list[str]]:
    """The streams that one blocking read (XREAD, XREADGROUP) may cover together: all of
    them on one Redis; on a cluster those of one slot (a command's keys must share a
    slot there), so a reader runs one blocking read per shard. Each read holds one
    connection while it blocks: a reader holds at most len(groups) at once."""
    names = list(names)
    if not isinstance(redis, RedisCluster):
        return [names]
    by_slot: dict[int, list[str]] = {}
    for name in names:
        by_slot.setdefault(key_slot(name.encode()), []).append(name)
    return list(by_slot.values())


def node_groups(redis: Client, names: Iterable[str]) -> list[list[str]]:
    """The keys that one pipeline may cover together: all of them on one Redis; on a
    cluster those its client knows one node to serve (a pipeline of keys on several
    nodes fails as a whole when one of them is down), or those of one slot while it has
    not learnt the slot map."""
    names = list(names)
    if not isinstance(redis, RedisCluster):
        return [names]
    by_node: dict[str, list[str]] = {}
    for name in names:
        try:
            where = str(redis.get_node_from_key(name).name)
        except (RedisError, RedisClusterException):  # not learnt, or a slot uncovered
            where = f"slot {key_slot(name.encode())}"
        by_node.setdefault(where, []).append(name)
    return list(by_node.values())


def check_redis(settings: Settings, *, jobs: bool = False) -> None:
    """The start-up check of every service: REDIS_URL in the mode ASKGATE_REDIS_CLUSTER
    says, and (for a service that runs RQ) a jobs Redis that is not a cluster node.
    Raises ConfigError with what to set."""
    check_mode(settings.redis_url, cluster=settings.redis_cluster)
    if jobs:
        url = settings.jobs_redis()
        if url != settings.redis_url:
            check_mode(url, cluster=False, url_var="ASKGATE_JOBS_REDIS_URL")
