"""Bearer API keys → tenants, with a short in-process cache (keys are looked up by hash)."""

from __future__ import annotations

import time

from askgate.domain.errors import Unauthorized
from askgate.store.tenants import Tenant, hash_key, tenant_for_key
from fastapi import Request
from redis.asyncio import Redis

# A revoked key keeps working in a process for at most this long.
CACHE_TTL_S = 30.0


class TenantCache:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self._cache: dict[str, tuple[float, Tenant]] = {}

    async def resolve(self, api_key: str) -> Tenant:
        digest = hash_key(api_key)
        hit = self._cache.get(digest)
        now = time.monotonic()
        if hit is not None and hit[0] > now:
            return hit[1]
        tenant = await tenant_for_key(self._redis, api_key)
        if tenant is None:
            raise Unauthorized("unknown API key; send Authorization: Bearer <api key>")
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[digest] = (now + CACHE_TTL_S, tenant)
        return tenant


async def current_tenant(request: Request) -> Tenant:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("missing API key; send Authorization: Bearer <api key>")
    cache: TenantCache = request.app.state.tenants
    return await cache.resolve(token.strip())
