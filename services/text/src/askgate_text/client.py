"""The platform side: one signed JSON POST to a target's url, to an address the outbound
policy allows (askgate.domain.netguard) for the question's tenant, checked right before it is
made; its answer as the kit's errors (4xx or a refused address: permanent; 5xx, 429,
timeouts, dropped connections: transient)."""

from __future__ import annotations

import time

import httpx
import orjson
from askgate.domain import netguard
from askgate.domain.errors import PermanentError, ThrottledError, TransientError
from askgate.runtime.outbound import CONNECTION_FAILED, TIMEOUT, post_async, signed_headers
from askgate.store.tenants import load_tenant
from redis.asyncio import Redis

from askgate_text.config import TextSettings

USER_AGENT = "askgate-text/0.1"
# A tenant's outbound allow-list is re-read at most this often.
TENANT_CACHE_S = 30.0


class TextClient:
    def __init__(
        self,
        settings: TextSettings,
        redis: Redis | None = None,
        resolver: netguard.Resolver = netguard.system_resolver,
    ) -> None:
        self.redis = redis
        self.resolver = resolver
        self.policy = settings.outbound_policy()
        self._tenants: dict[str, tuple[float, netguard.Policy]] = {}
        self.http = httpx.AsyncClient(timeout=settings.text_timeout_s, follow_redirects=False)

    async def _policy(self, tenant: str | None) -> netguard.Policy:
        """The operator's policy plus the tenant's own ranges (cached briefly)."""
        if tenant is None or self.redis is None:
            return self.policy
        hit = self._tenants.get(tenant)
        now = time.monotonic()
        if hit is not None and hit[0] > now:
            return hit[1]
        record = await load_tenant(self.redis, tenant)
        allow = netguard.parse_cidrs(record.outbound_allow) if record else ()
        policy = self.policy.with_allowed(allow)
        if len(self._tenants) > 10_000:
            self._tenants.clear()
        self._tenants[tenant] = (now + TENANT_CACHE_S, policy)
        return policy

    async def post(
        self,
        url: str,
        secret: str,
        payload: dict[str, object],
        delivery_id: str,
        *,
        tenant: str | None = None,
    ) -> int:
        """POST once; the status code, or the kit's error for the answer."""
        body = orjson.dumps(payload)
        headers = {**signed_headers(secret, body, USER_AGENT), "X-Askgate-Delivery": delivery_id}
        outcome = await post_async(
            self.http, url, headers, body, await self._policy(tenant), self.resolver
        )
        if outcome.ok and outcome.status_code is not None:
            return outcome.status_code
        if outcome.error in (TIMEOUT, CONNECTION_FAILED):
            # The platform may have the message: it dedupes by X-Askgate-Delivery.
            raise TransientError(outcome.describe(), maybe_sent=True)
        if outcome.status_code == 429:
            raise ThrottledError(outcome.describe(), outcome.retry_after_s or 1.0)
        if outcome.retry:
            raise TransientError(outcome.describe())
        raise PermanentError(outcome.describe())

    async def aclose(self) -> None:
        await self.http.aclose()
