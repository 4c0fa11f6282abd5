"""The ask's outbound URLs (`callback_url`, text targets' `url`, also in escalation
steps) against the outbound policy (askgate.domain.netguard) before anything is stored: a URL
that is or resolves to an internal address is a 422 naming its field."""

from __future__ import annotations

import asyncio

from askgate.domain import netguard
from askgate.domain.errors import ValidationFailed
from askgate.domain.models import QuestionCreate, TextTarget
from askgate.store.tenants import Tenant


class OutboundCheck:
    def __init__(self, policy: netguard.Policy, resolver: netguard.Resolver) -> None:
        self.policy = policy
        self.resolver = resolver

    async def check_ask(self, tenant: Tenant, ask: QuestionCreate) -> None:
        # Every step's targets too: an escalation step's URL is reached just the same.
        urls = [
            (f"{path}.url", str(tg.url))
            for path, tg in ask.all_targets()
            if isinstance(tg, TextTarget)
        ]
        if ask.callback_url is not None:
            urls.insert(0, ("callback_url", str(ask.callback_url)))
        if not urls:
            return
        policy = self.policy.with_allowed(netguard.parse_cidrs(tenant.outbound_allow))
        found = await asyncio.gather(*(self._problem(field, url, policy) for field, url in urls))
        lines = [line for line in found if line]
        if lines:
            raise ValidationFailed("; ".join(lines), lines)

    async def _problem(self, field: str, url: str, policy: netguard.Policy) -> str | None:
        try:
            await netguard.check(url, policy, self.resolver)
        except (netguard.Refused, netguard.Unresolved) as exc:
            return f"{field} {exc.message}"
        return None
