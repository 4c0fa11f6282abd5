"""Tenants and their API keys. Only a key's SHA-256 is stored; the key is shown once."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

import orjson
from redis.asyncio import Redis

from askgate import keys
from askgate.timeutil import now_ms


@dataclass(frozen=True)
class Tenant:
    id: str
    name: str
    webhook_secret: str
    max_pending: int | None = None
    asks_per_s: int | None = None
    channels: dict[str, Any] | None = None


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
    async with redis.pipeline(transaction=True) as pipe:
        pipe.hset(keys.tenant(tenant_id), mapping=fields)
        pipe.set(keys.api_key(hash_key(api_key)), tenant_id)
        pipe.sadd(keys.TENANTS, tenant_id)
        await pipe.execute()
    return tenant, api_key


async def add_api_key(redis: Redis, tenant_id: str) -> str:
    api_key = f"ag_{secrets.token_urlsafe(32)}"
    await redis.set(keys.api_key(hash_key(api_key)), tenant_id)
    return api_key


async def load_tenant(redis: Redis, tenant_id: str) -> Tenant | None:
    raw = await redis.hgetall(keys.tenant(tenant_id))
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
    )


async def tenant_for_key(redis: Redis, api_key: str) -> Tenant | None:
    tenant_id = await redis.get(keys.api_key(hash_key(api_key)))
    if tenant_id is None:
        return None
    return await load_tenant(redis, tenant_id.decode())


async def set_channel_config(
    redis: Redis, tenant_id: str, channel: str, config: dict[str, Any]
) -> None:
    """Per-tenant channel credentials (bot tokens, signing secrets), merged per channel."""
    current = await load_tenant(redis, tenant_id)
    if current is None:
        raise KeyError(tenant_id)
    channels = dict(current.channels or {})
    channels[channel] = {**channels.get(channel, {}), **config}
    await redis.hset(keys.tenant(tenant_id), "channels", orjson.dumps(channels))
