"""Per-tenant channel credentials (bot tokens, signing secrets), as each worker builds
them from the tenant's channel config (`askgate tenant channel T <channel> k=v …`).

`TenantConfigs` re-reads every tenant's config for one channel and keeps what the
worker's `build` made of it; a tenant configured since the last refresh is loaded on
first use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

import structlog
from redis.asyncio import Redis

from askgate.store import keys
from askgate.store.tenants import Tenant, load_tenant

log = structlog.get_logger("askgate.channels")
C = TypeVar("C")

# build(tenant, the tenant's config for this channel, what it built last time or None):
# the credentials, or None when the tenant has none for this channel. A ValueError names
# what is wrong with the config (logged; the tenant is treated as unconfigured).
Build = Callable[[Tenant, dict[str, Any], C | None], C | None]


def id_list(raw: Any) -> frozenset[str]:
    """An allow-list from channel config: a list, or "1,2,3" as the CLI stores it."""
    if raw is None or raw == "":
        return frozenset()
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    return frozenset(str(x).strip() for x in items if str(x).strip())


class TenantConfigs(Generic[C]):
    def __init__(self, redis: Redis, channel: str, build: Build[C]) -> None:
        self.redis = redis
        self.channel = channel
        self.build = build
        self._by_tenant: dict[str, C] = {}

    def _make(self, tenant: Tenant | None) -> C | None:
        if tenant is None:
            return None
        conf = (tenant.channels or {}).get(self.channel) or {}
        if not conf:
            return None
        try:
            return self.build(tenant, dict(conf), self._by_tenant.get(tenant.id))
        except ValueError as exc:
            log.error("channel.bad_config", channel=self.channel, tenant=tenant.id, error=str(exc))
            return None

    async def refresh(self) -> dict[str, C]:
        """Re-read every tenant's config; returns the tenants configured now."""
        fresh: dict[str, C] = {}
        for raw in sorted(await self.redis.smembers(keys.TENANTS)):
            tenant_id = raw.decode()
            made = self._make(await load_tenant(self.redis, tenant_id))
            if made is not None:
                fresh[tenant_id] = made
        self._by_tenant = fresh
        return dict(fresh)

    async def get(self, tenant_id: str) -> C | None:
        made = self._by_tenant.get(tenant_id)
        if made is None:
            made = self._make(await load_tenant(self.redis, tenant_id))
            if made is not None:
                self._by_tenant[tenant_id] = made
        return made

    def all(self) -> dict[str, C]:
        return dict(self._by_tenant)
