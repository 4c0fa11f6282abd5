"""Tenants: one slot per tenant (its record and key index share its tag), the key lookup
beside it, and records written before the tag still served."""

from __future__ import annotations

import asyncio

import pytest
from askgate.store import keys
from askgate.store.tenants import (
    add_api_key,
    create_tenant,
    hash_key,
    load_tenant,
    set_channel_config,
    tenant_for_key,
)
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

pytestmark = pytest.mark.both_redis


async def test_tenant_keyspace(redis: Redis) -> None:
    """Creating a tenant writes exactly its record, its key index, the lookup and the list."""
    tenant, api_key = await create_tenant(redis, "acme", max_pending=5)
    found = (
        await redis.keys("*", target_nodes=RedisCluster.PRIMARIES)
        if isinstance(redis, RedisCluster)
        else await redis.keys("*")
    )
    assert {k.decode() for k in found} == {
        keys.tenant(tenant.id),
        keys.tenant_api_keys(tenant.id),
        keys.api_key(hash_key(api_key)),
        keys.TENANTS,
    }
    assert await redis.smembers(keys.tenant_api_keys(tenant.id)) == {hash_key(api_key).encode()}


async def test_another_key_is_indexed_and_works(redis: Redis) -> None:
    """A key issued later joins the tenant's index and finds the tenant."""
    tenant, first = await create_tenant(redis, "acme")
    second = await add_api_key(redis, tenant.id)
    assert await redis.smembers(keys.tenant_api_keys(tenant.id)) == {
        hash_key(first).encode(),
        hash_key(second).encode(),
    }
    found = await tenant_for_key(redis, second)
    assert found is not None and found.id == tenant.id


async def test_tenant_from_before_the_tag_still_works(redis: Redis) -> None:
    """A record at the old untagged key is found by its API key and takes channel config."""
    await redis.hset(
        keys.tenant_legacy("told"),
        mapping={"name": "old", "webhook_secret": "whsec_x", "created": "1"},
    )
    await redis.set(keys.api_key(hash_key("ag_old")), "told")
    found = await tenant_for_key(redis, "ag_old")
    assert found is not None and (found.id, found.name, found.webhook_secret) == (
        "told",
        "old",
        "whsec_x",
    )
    await set_channel_config(redis, "told", "telegram", {"bot_token": "1:A"})
    loaded = await load_tenant(redis, "told")
    assert loaded is not None and loaded.channels == {"telegram": {"bot_token": "1:A"}}
    assert not await redis.exists(keys.tenant("told"))  # no half-copied new record


async def test_channels_configured_at_once_all_stay(redis: Redis) -> None:
    """Several channels (and several keys of one) set at the same moment, as a deploy
    script or two admins may: every one of them is kept (a read-merge-write lost some)."""
    t, _ = await create_tenant(redis, "many")
    writes = [
        set_channel_config(redis, t.id, channel, {"bot_token": f"{channel}-token"})
        for channel in ("telegram", "slack", "discord", "text")
    ] + [set_channel_config(redis, t.id, "slack", {"signing_secret": "s3cret"})]
    await asyncio.gather(*writes)
    loaded = await load_tenant(redis, t.id)
    assert loaded is not None and loaded.channels == {
        "telegram": {"bot_token": "telegram-token"},
        "slack": {"bot_token": "slack-token", "signing_secret": "s3cret"},
        "discord": {"bot_token": "discord-token"},
        "text": {"bot_token": "text-token"},
    }
