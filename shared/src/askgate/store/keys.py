"""Every Redis key, stream, consumer group and pub/sub channel askgate uses.

Sharding: a session lives in one of SHARDS shards, chosen from (tenant, session). All
keys of that session's questions carry the shard's hash tag (`tag`), so one Lua script
touches a single Redis Cluster slot. A question id starts with its shard in hex (`q2a…`),
so the id alone locates it. Channel streams are sharded the same way: a question's events
go to the stream of its own shard, and workers read every shard.

Shards 0-15 are those of askgate before 64 shards (tags `{ag:00}`…`{ag:15}`, ids
`q00…`-`q0f…`): their questions keep working (read, answered, swept, their streams read)
but no new ask goes there, because those 16 tags hash into four tight groups of slots.
New asks go to shards 16-63, whose tags (`{ag:NN.k}`) are chosen so that shard 16+j's
slot is the middle of the j-th of 48 equal parts of the slot space: with Redis's even
slot ranges every node of a cluster of up to 48 nodes serves as many shards as the next,
give or take one (`spread`).

The public contract (stable across minor versions): `result_key(id)` holds the result
JSON once final; `result_channel(id)` gets it published once when final.
"""

from __future__ import annotations

import zlib

from redis.crc import key_slot

PREFIX = "askgate"
# Fixed: a question id encodes its shard, so shards are only ever added after these.
LEGACY_SHARDS = 16  # 0-15: read and swept, never chosen for a new ask
SHARDS = 64
NEW_SHARDS = SHARDS - LEGACY_SHARDS

RESULT_PATTERN = f"{PREFIX}:{{ag:*}}:result:*"
CLUSTER_SLOTS = 16384  # a Redis Cluster's hash slots


# Shard 16+j's tag is `ag:NN.k` with the k below: the first whose slot is the middle of
# the j-th of 48 equal parts of the slot space (tests/unit/test_shards.py checks it), so
# the shards a node serves with Redis's even slot ranges differ by one at most.
_SPREAD_K = [
    2080, 102825, 1009, 8376, 12923, 5909, 11915, 2089, 18918, 5242, 1295, 19496,
    5005, 3870, 24948, 10511, 321, 13377, 8576, 1494, 3110, 29333, 3125, 27649,
    8841, 28247, 10372, 21859, 29300, 2699, 9989, 11465, 5097, 29433, 4784, 41853,
    13414, 403, 47990, 12114, 2205, 7851, 22658, 69597, 3734, 11829, 16269, 68436,
]  # fmt: skip
_TAGS = [f"{PREFIX}:{{ag:{s:02d}}}" for s in range(LEGACY_SHARDS)] + [
    f"{PREFIX}:{{ag:{LEGACY_SHARDS + j:02d}.{k}}}" for j, k in enumerate(_SPREAD_K)
]


def middle_slot(shard: int) -> int:
    """The slot a spread shard's tag hashes to: the middle of its part."""
    return (2 * (shard - LEGACY_SHARDS) + 1) * CLUSTER_SLOTS // (2 * NEW_SHARDS)


def shard_for(tenant: str, session: str) -> int:
    """The shard of a new ask of (tenant, session): one of the spread shards."""
    return LEGACY_SHARDS + zlib.crc32(f"{tenant}\x00{session}".encode()) % NEW_SHARDS


def shard_of(question_id: str) -> int:
    """The shard a question id belongs to; ValueError when the id is not askgate's."""
    if len(question_id) < 4 or question_id[0] != "q":
        raise ValueError(f"not a question id: {question_id!r}")
    try:
        shard = int(question_id[1:3], 16)
    except ValueError:
        raise ValueError(f"not a question id: {question_id!r}") from None
    if shard >= SHARDS:
        raise ValueError(f"not a question id: {question_id!r}")
    return shard


def tag(shard: int) -> str:
    """The key prefix of a shard, with its hash tag: `askgate:{ag:07}` (a legacy shard),
    `askgate:{ag:23.41}`."""
    return _TAGS[shard]


def spread(nodes: int) -> list[int]:
    """How many of the shards new asks go to each node of a cluster of `nodes` masters
    serves, with Redis's default layout (equal slot ranges in order)."""
    per_node = [0] * nodes
    for shard in range(LEGACY_SHARDS, SHARDS):
        slot = key_slot(tag(shard).encode())
        per_node[min(nodes - 1, slot * nodes // CLUSTER_SLOTS)] += 1
    return per_node


# -- per question (the shard comes from the id) -----------------------------------------


def question(question_id: str) -> str:
    return f"{tag(shard_of(question_id))}:q:{question_id}"


def doc(question_id: str) -> str:
    """STRING: the question's static part (questions, targets, callback), compressed, as
    questions stored before their hash kept it (`askgate.store.doc`) have it: still read,
    no longer written."""
    return f"{tag(shard_of(question_id))}:doc:{question_id}"


def deliveries(question_id: str) -> str:
    """HASH `d:<target index>` = that target's delivery JSON (status, error, ref, at), and
    the ledger's bookkeeping (claims, leases, reminder claims), apart from the question
    hash, whose values stay short enough for a listpack. Most of it goes when the question
    ends, the rest once its prompts show their summaries (scripts.py `end_deliveries`,
    `MARK_SUMMARY`): a retained question usually has none. Late answers are kept here."""
    return f"{tag(shard_of(question_id))}:dlv:{question_id}"


def result_key(question_id: str) -> str:
    return f"{tag(shard_of(question_id))}:result:{question_id}"


def result_channel(question_id: str) -> str:
    """The public contract: a classic `PUBLISH` of the result JSON, once, when final (on
    a cluster Redis forwards it to every node, so a plain SUBSCRIBE on any node hears it).
    Same name as the key on purpose: one thing to remember, and pub/sub channel names live
    in their own namespace."""
    return result_key(question_id)


def done_channel(shard: int) -> str:
    """Sharded pub/sub channel (`SPUBLISH`, Redis 7) of a shard: the id of each of its
    questions that ends, published in the question's own slot by the script that ends it.
    The API's waiters listen here on a cluster (one SSUBSCRIBE listener per node), where a
    classic publish would be copied to every node. Internal, not part of the contract."""
    return f"{tag(shard)}:done"


# -- per session / run / shard -----------------------------------------------------------


def session(shard: int, tenant: str, session: str) -> str:
    """HASH of one session: `p:<question id>` = its deadline (ms) while it is pending, and
    `<question id>` = its creation time (ms) for every recent question."""
    return f"{tag(shard)}:session:{tenant}:{session}"


def run(shard: int, tenant: str, run_id: str) -> str:
    """ZSET of the run's pending question ids in this shard, scored by expiry (ms), as
    askgate kept it before a run's questions were found by their `run` field: no ask
    writes one now; the scripts that end a question still take it out of its run's set
    (declared in `question_keys`), until the sets written before have expired."""
    return f"{tag(shard)}:run:{tenant}:{run_id}"


def due(shard: int) -> str:
    """ZSET of pending question ids scored by their expiry (ms since the epoch)."""
    return f"{tag(shard)}:due"


def timers(shard: int) -> str:
    """ZSET of the shard's reminders and escalation steps (`askgate.store.timers.Timer.member`)
    scored by when each is due (ms): the sweeper pops the due ones."""
    return f"{tag(shard)}:timers"


def metrics(shard: int) -> str:
    """HASH of counters kept where things happen (the scripts that end questions, fail
    targets, fire timers, mark reminders sent): the API's /metrics sums every shard's."""
    return f"{tag(shard)}:metrics"


def events(shard: int, channel: str) -> str:
    """The event stream of one channel in one shard."""
    return f"{tag(shard)}:events:{channel}"


def all_events(channel: str) -> list[str]:
    return [events(s, channel) for s in range(SHARDS)]


def group(channel: str) -> str:
    return f"{PREFIX}:{channel}"


# -- webhooks ------------------------------------------------------------------------------

# The RQ queue the webhook jobs go through (RQ prefixes its own keys with `rq:`).
WEBHOOK_QUEUE = "askgate-webhooks"


def webhook_dead(shard: int) -> str:
    """STREAM of webhook deliveries that gave up (dead letters) for questions of a shard;
    written in the same script as the question's `webhook` field, hence sharded."""
    return f"{tag(shard)}:webhooks:dead"


def all_webhook_dead() -> list[str]:
    return [webhook_dead(s) for s in range(SHARDS)]


def webhook_due(shard: int) -> str:
    """ZSET of a shard's unfinished webhook deliveries, scored by when their next step
    (a claimed attempt's end, a scheduled attempt's start) is overdue (ms): what the
    webhooks service's reaper reads to retry what a dead worker abandoned."""
    return f"{tag(shard)}:webhooks:due"


# -- tenants: a tenant's own keys share its tag `{t:<tenant>}` (one slot), so it is
# created in one transaction; the API-key lookup and the list of tenants stand alone. --


def api_key(key_hash: str) -> str:
    """STRING: the tenant id an API key (by its SHA-256) belongs to."""
    return f"{PREFIX}:apikey:{key_hash}"


def tenant(tenant_id: str) -> str:
    """HASH: the tenant's record (name, webhook_secret, quotas, channels)."""
    return f"{PREFIX}:{{t:{tenant_id}}}:tenant"


def tenant_legacy(tenant_id: str) -> str:
    """Where tenants created before the `{t:…}` tag kept their record; still read."""
    return f"{PREFIX}:tenant:{tenant_id}"


def tenant_api_keys(tenant_id: str) -> str:
    """SET of the SHA-256 of every API key issued to the tenant."""
    return f"{PREFIX}:{{t:{tenant_id}}}:apikeys"


TENANTS = f"{PREFIX}:tenants"


def tenant_pending(tenant_id: str) -> str:
    """ZSET of the tenant's pending question ids scored by expiry: the pending quota."""
    return f"{PREFIX}:{{t:{tenant_id}}}:pending"


def tenant_rate(tenant_id: str) -> str:
    return f"{PREFIX}:{{t:{tenant_id}}}:rate"


def health(service: str, instance: str) -> str:
    return f"{PREFIX}:health:{service}:{instance}"


# -- channels ------------------------------------------------------------------------------


def undelivered(shard: int) -> str:
    """ZSET `<question id>|<target index>|<channel>` → when that target must have been
    shown (ms): a target still pending then, on a channel with no live worker, fails
    (the sweeper's watchdog). Entries leave when the target is settled."""
    return f"{tag(shard)}:undelivered"


def channel_live(channel: str) -> str:
    """STRING, set with a short TTL by every live worker of a channel. One tag for all
    channels, so the API reads them in one MGET, on a cluster too."""
    return f"{PREFIX}:{{live}}:{channel}"


def prompt_ref(channel: str, tenant_id: str, destination: str, message: str) -> str:
    """STRING `<question id> <target index> <kind>` for a message a worker sent (the
    prompt, or a free-text request), so a reply to it finds its question."""
    return f"{PREFIX}:ch:{channel}:msg:{tenant_id}:{destination}:{message}"


def destination_prompts(channel: str, tenant_id: str, destination: str) -> str:
    """ZSET of question ids whose prompt is shown at a destination (a chat), scored by
    delivery time (ms): what a plain message there may answer."""
    return f"{PREFIX}:ch:{channel}:dest:{tenant_id}:{destination}"


def inbound_seen(channel: str, scope: str, event_id: str) -> str:
    """Marker of a handled platform event (platforms retry: dedupe by their event id)."""
    return f"{PREFIX}:ch:{channel}:seen:{scope}:{event_id}"


def prompt_extras(channel: str, question_id: str) -> str:
    """SET of the messages a worker sent about a question besides its prompt (a prompt
    shown again, a free-text request, a note), each `[target index, kind, destination,
    message]` in JSON: what finalisation turns into the summary or removes."""
    return f"{PREFIX}:ch:{channel}:extra:{question_id}"


def selection(question_id: str, target_index: int, part: int = 0) -> str:
    """SET of option indexes picked on a prompt, per question of the ask (`part`, its
    position): ticks where the platform has no native multi-select, or each question's
    pick where one prompt carries several questions."""
    suffix = f":{part}" if part else ""
    return f"{PREFIX}:ch:sel:{question_id}:{target_index}{suffix}"


# -- what a script that may end a question is given ----------------------------------------

# How many keys of `question_keys` come before the event streams.
QUESTION_KEYS_FIXED = 7


def question_keys(
    question_id: str, tenant: str, session_name: str, run_id: str | None, channels: str
) -> list[str]:
    """Every key of one question that a script ending it touches, in the order the
    scripts read them (`scripts.group`): the question hash, its doc, deliveries hash,
    result, session hash, run zset (the shard's due zset when it has no run: declared,
    not touched), the shard's done channel (`done_channel`: a shard channel is routed
    like a key), then one event stream per channel of its `channels` field ('web,slack').
    The names come from the question's own fields, which never change once it exists;
    all carry its shard's tag, so they share one slot."""
    shard = shard_of(question_id)
    return [
        question(question_id),
        doc(question_id),
        deliveries(question_id),
        result_key(question_id),
        session(shard, tenant, session_name),
        run(shard, tenant, run_id) if run_id else due(shard),
        done_channel(shard),
        *(events(shard, ch) for ch in channels.split(",") if ch),
    ]
