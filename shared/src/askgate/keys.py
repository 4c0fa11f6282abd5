"""Every Redis key, stream, consumer group and pub/sub channel askgate uses.

Sharding: a session lives in one of SHARDS shards, chosen from (tenant, session). All
keys of that session's questions carry the shard's hash tag `{ag:NN}`, so one Lua script
touches a single Redis Cluster slot. A question id starts with its shard (`q07…`), so the
id alone locates it. Channel streams are sharded the same way: a question's events go to
the stream of its own shard, and workers read every shard.

The public contract (stable across minor versions): `result_key(id)` holds the result
JSON once final; `result_channel(id)` gets it published once when final.
"""

from __future__ import annotations

import zlib

PREFIX = "askgate"
SHARDS = 16  # fixed: a question id encodes its shard, so changing this strands old ids

RESULT_PATTERN = f"{PREFIX}:{{ag:*}}:result:*"


def shard_for(tenant: str, session: str) -> int:
    return zlib.crc32(f"{tenant}\x00{session}".encode()) % SHARDS


def shard_of(question_id: str) -> int:
    """The shard a question id belongs to; ValueError when the id is not askgate's."""
    if len(question_id) < 4 or question_id[0] != "q":
        raise ValueError(f"not a question id: {question_id!r}")
    shard = int(question_id[1:3], 16)
    if shard >= SHARDS:
        raise ValueError(f"not a question id: {question_id!r}")
    return shard


def tag(shard: int) -> str:
    return f"{PREFIX}:{{ag:{shard:02d}}}"


# -- per question (the shard comes from the id) -----------------------------------------


def question(question_id: str) -> str:
    return f"{tag(shard_of(question_id))}:q:{question_id}"


def result_key(question_id: str) -> str:
    return f"{tag(shard_of(question_id))}:result:{question_id}"


def result_channel(question_id: str) -> str:
    # Same name as the key on purpose: one thing to remember, and pub/sub channel names
    # live in their own namespace.
    return result_key(question_id)


# -- per session / run / shard -----------------------------------------------------------


def pending(shard: int, tenant: str, session: str) -> str:
    """The id of the session's one pending question (a string, absent when none)."""
    return f"{tag(shard)}:pending:{tenant}:{session}"


def session_index(shard: int, tenant: str, session: str) -> str:
    """ZSET of the session's question ids, scored by creation time (ms)."""
    return f"{tag(shard)}:session:{tenant}:{session}"


def run(shard: int, tenant: str, run_id: str) -> str:
    """SET of the run's pending question ids in this shard."""
    return f"{tag(shard)}:run:{tenant}:{run_id}"


def due(shard: int) -> str:
    """ZSET of pending question ids scored by their expiry (ms since the epoch)."""
    return f"{tag(shard)}:due"


def events(shard: int, channel: str) -> str:
    """The event stream of one channel in one shard."""
    return f"{tag(shard)}:events:{channel}"


def all_events(channel: str) -> list[str]:
    return [events(s, channel) for s in range(SHARDS)]


def group(channel: str) -> str:
    return f"{PREFIX}:{channel}"


# -- tenants (not sharded: read by key, never in a script with question keys) ------------


def api_key(key_hash: str) -> str:
    return f"{PREFIX}:apikey:{key_hash}"


def tenant(tenant_id: str) -> str:
    return f"{PREFIX}:tenant:{tenant_id}"


TENANTS = f"{PREFIX}:tenants"


def tenant_pending(tenant_id: str) -> str:
    """ZSET of the tenant's pending question ids scored by expiry: the pending quota."""
    return f"{PREFIX}:{{t:{tenant_id}}}:pending"


def tenant_rate(tenant_id: str) -> str:
    return f"{PREFIX}:{{t:{tenant_id}}}:rate"


def health(service: str, instance: str) -> str:
    return f"{PREFIX}:health:{service}:{instance}"


# The Lua side of the names above, for scripts that find a question's related keys from
# its hash. `P` is the question key's tag prefix (`askgate:{ag:NN}`).
LUA_KEYS = """
local function k_prefix(qkey) return string.sub(qkey, 1, string.find(qkey, '}', 1, true)) end
local function k_question(P, id) return P .. ':q:' .. id end
local function k_result(P, id) return P .. ':result:' .. id end
local function k_pending(P, t, s) return P .. ':pending:' .. t .. ':' .. s end
local function k_session(P, t, s) return P .. ':session:' .. t .. ':' .. s end
local function k_run(P, t, r) return P .. ':run:' .. t .. ':' .. r end
local function k_due(P) return P .. ':due' end
local function k_events(P, c) return P .. ':events:' .. c end
"""
