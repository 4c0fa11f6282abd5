"""Shards that spread: new asks go to 48 shards whose hash tags lie in 48 equal parts of
the Redis Cluster slot space, so a cluster of N nodes serves them evenly; the 16 shards of
ids from before keep their tags. A tenant's keys share one slot."""

from __future__ import annotations

import pytest
from askgate.store import keys
from askgate.store.record import new_question_id
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot


@pytest.mark.parametrize("nodes", range(1, 49))
def test_every_node_serves_as_many_new_shards_as_the_next_give_or_take_one(nodes: int) -> None:
    """With Redis's even slot ranges, no node of 1-48 serves more than one shard over
    another: N nodes carry about Nx one node (exactly 3 shards each at 16 nodes)."""
    per_node = keys.spread(nodes)
    assert sum(per_node) == keys.NEW_SHARDS
    assert max(per_node) - min(per_node) <= 1, per_node
    assert max(per_node) <= -(-keys.NEW_SHARDS // nodes)


def test_each_new_shard_sits_in_the_middle_of_its_own_part() -> None:
    """Shard 16+j's tag hashes to the middle slot of the j-th 48th of the slots."""
    for shard in range(keys.LEGACY_SHARDS, keys.SHARDS):
        slot = key_slot(keys.tag(shard).encode())
        assert slot == keys.middle_slot(shard)
        assert slot * keys.NEW_SHARDS // REDIS_CLUSTER_HASH_SLOTS == shard - keys.LEGACY_SHARDS


def test_the_old_tags_bunch_together_which_is_why_new_asks_avoid_them() -> None:
    """The 16 tags `{ag:00}`…`{ag:15}` fall in only four parts of a 16-node layout."""
    parts = {key_slot(keys.tag(s).encode()) * 16 // REDIS_CLUSTER_HASH_SLOTS for s in range(16)}
    assert len(parts) <= 4


def test_an_old_id_still_names_its_old_keys() -> None:
    """An id from before 64 shards (`q07…`) says shard 7, whose keys keep the `{ag:07}` tag."""
    old = "q07abcdefghijklmnop"
    assert keys.shard_of(old) == 7
    assert keys.question(old) == "askgate:{ag:07}:q:q07abcdefghijklmnop"
    assert keys.result_key(old) == "askgate:{ag:07}:result:q07abcdefghijklmnop"


@pytest.mark.parametrize("session", [f"s{i}" for i in range(200)])
def test_a_new_ask_never_goes_to_an_old_shard(session: str) -> None:
    qid = new_question_id("acme", session, None, None)
    assert keys.LEGACY_SHARDS <= keys.shard_of(qid) < keys.SHARDS


@pytest.mark.parametrize("bad", ["q40abcdefghijklmnop", "qzzabcdefghijklmnop", "x07abc", "q0"])
def test_an_id_past_the_shards_is_not_a_question_id(bad: str) -> None:
    with pytest.raises(ValueError, match="not a question id"):
        keys.shard_of(bad)


def test_tenant_keys_share_the_tenant_tag() -> None:
    """The record, the key index and the quota keys carry `{t:<tenant>}`: one slot, so
    the scripts that touch them together run on a cluster."""
    names = [
        keys.tenant("t1"),
        keys.tenant_api_keys("t1"),
        keys.tenant_pending("t1"),
        keys.tenant_rate("t1"),
    ]
    assert all("{t:t1}" in name for name in names)
    assert len({key_slot(name.encode()) for name in names}) == 1
