"""Tenants and their API keys. Only a key's SHA-256 is stored; the key is shown once.

A tenant's record and the index of its keys share the tenant's hash tag, so creating a
tenant is one transaction in one Redis Cluster slot. The key → tenant lookup is a key of
its own, written after the record: a crash between the two leaves a key that was never
shown to anyone and does not work, never a key without a tenant. Tenants created before
the tag kept their record at `keys.tenant_legacy`, which is still read and written.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

import orjson
from redis import Redis as SyncRedis
from redis.asyncio import Redis

from askgate.domain.models import Remind
from askgate.domain.netguard import parse_cidrs
from askgate.domain.timeutil import now_ms
from askgate.store import keys, scripts


@dataclass(frozen=True)
class Tenant:
    id: str
    name: str
    webhook_secret: str
    max_pending: int | None = None
    asks_per_s: int | None = None
    channels: dict[str, Any] | None = None
    # Non-public ranges this tenant's URLs may reach (askgate.domain.netguard), as CIDR text.
    outbound_allow: tuple[str, ...] = ()
    remind: Remind | None = None  # reminders of an ask that says none itself


def hash_key(api_key: str) -> str:
    # API keys are 256 random bits, so a fast hash is enough (no password stretching).
    return hashlib.sha256(api_key.encode()).hexdigest()


async def create_tenant(
    redis: Redis, name: str, *, max_pending: int | None = None, asks_per_s: int | None = None
) -> tuple[Tenant, str]:
    """A new tenant and its API key (returned once, stored only hashed)."""
    tenant_id = "t" + secrets.token_hex(6)
    api_key = f"ag_{secrets.token_urlsafe(32)}"
    tenant = Tenant(tenant_id, name, "whsec_" + secrets.token_urlsafe(24), max_pending, asks_per_s)
    fields: dict[str, str] = {
        "name": name,
        "webhook_secret": tenant.webhook_secret,
        "created": str(now_ms()),
    }
    if max_pending is not None:
        fields["max_pending"] = str(max_pending)
    if asks_per_s is not None:
        fields["asks_per_s"] = str(asks_per_s)
    digest = hash_key(api_key)
    async with redis.pipeline(transaction=True) as pipe:  # one slot: the tenant's tag
        pipe.hset(keys.tenant(tenant_id), mapping=fields)
        pipe.sadd(keys.tenant_api_keys(tenant_id), digest)
        await pipe.execute()
    await redis.sadd(keys.TENANTS, tenant_id)
    await redis.set(keys.api_key(digest), tenant_id)
    return tenant, api_key


async def add_api_key(redis: Redis, tenant_id: str) -> str:
    api_key = f"ag_{secrets.token_urlsafe(32)}"
    digest = hash_key(api_key)
    await redis.sadd(keys.tenant_api_keys(tenant_id), digest)
    await redis.set(keys.api_key(digest), tenant_id)
    return api_key


async def _record_key(redis: Redis, tenant_id: str) -> str | None:
    """The key that holds the tenant's record (tagged, else legacy), None if neither."""
    for key in (keys.tenant(tenant_id), keys.tenant_legacy(tenant_id)):
        if await redis.exists(key):
            return key
    return None


async def load_tenant(redis: Redis, tenant_id: str) -> Tenant | None:
    raw = await redis.hgetall(keys.tenant(tenant_id))
    if not raw:
        raw = await redis.hgetall(keys.tenant_legacy(tenant_id))
    if not raw:
        return None
    f = {k.decode(): v.decode() for k, v in raw.items()}
    return Tenant(
        id=tenant_id,
        name=f.get("name", ""),
        webhook_secret=f.get("webhook_secret", ""),
        max_pending=int(f["max_pending"]) if f.get("max_pending") else None,
        asks_per_s=int(f["asks_per_s"]) if f.get("asks_per_s") else None,
        channels=orjson.loads(f["channels"]) if f.get("channels") else None,
        outbound_allow=tuple(c for c in f.get("outbound_allow", "").split(",") if c),
        remind=Remind.model_validate_json(f["remind"]) if f.get("remind") else None,
    )


async def tenant_for_key(redis: Redis, api_key: str) -> Tenant | None:
    tenant_id = await redis.get(keys.api_key(hash_key(api_key)))
    if tenant_id is None:
        return None
    return await load_tenant(redis, tenant_id.decode())


async def set_channel_config(
    redis: Redis, tenant_id: str, channel: str, config: dict[str, Any]
) -> None:
    """Per-tenant channel credentials (bot tokens, signing secrets), merged per channel.
    The merge is a compare-and-set of the record's `channels` field, tried again when
    another writer changed it meanwhile: two channels configured at once both stay."""
    record = await _record_key(redis, tenant_id)
    if record is None:
        raise KeyError(tenant_id)
    swap = redis.register_script(scripts.SWAP_FIELD)
    while True:
        raw = await redis.hget(record, "channels") or b""
        channels = orjson.loads(raw) if raw else {}
        channels[channel] = {**channels.get(channel, {}), **config}
        if await swap(keys=[record], args=["channels", raw, orjson.dumps(channels)]):
            return


async def set_outbound_allow(redis: Redis, tenant_id: str, cidrs: str) -> tuple[str, ...]:
    """Replace the tenant's outbound allow-list ('' clears it). ValueError names a bad CIDR,
    KeyError an unknown tenant. Returns the normalised ranges."""
    nets = tuple(str(n) for n in parse_cidrs(cidrs))
    record = await _record_key(redis, tenant_id)
    if record is None:
        raise KeyError(tenant_id)
    if nets:
        await redis.hset(record, "outbound_allow", ",".join(nets))
    else:
        await redis.hdel(record, "outbound_allow")
    return nets


async def set_remind(redis: Redis, tenant_id: str, remind: Remind | None) -> None:
    """The tenant's default reminders (None: asks without `remind` get none)."""
    record = await _record_key(redis, tenant_id)
    if record is None:
        raise KeyError(tenant_id)
    if remind is None:
        await redis.hdel(record, "remind")
    else:
        await redis.hset(record, "remind", remind.model_dump_json(exclude_none=True))


def webhook_secret(redis: SyncRedis, tenant_id: str) -> str | None:
    """The tenant's webhook secret, read by a blocking client (the RQ jobs)."""
    return webhook_settings(redis, tenant_id)[0]


def webhook_settings(redis: SyncRedis, tenant_id: str) -> tuple[str | None, str]:
    """The tenant's webhook secret (None: no such tenant) and its outbound allow-list
    (CIDRs, comma-separated), read by a blocking client (the RQ jobs)."""
    for key in (keys.tenant(tenant_id), keys.tenant_legacy(tenant_id)):
        secret, allow = redis.hmget(key, ["webhook_secret", "outbound_allow"])
        if isinstance(secret, bytes):
            return secret.decode(), allow.decode() if isinstance(allow, bytes) else ""
    return None, ""
