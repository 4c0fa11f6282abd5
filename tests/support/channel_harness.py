"""The agent's side every chat channel's test harness shares: the question resource, a
target's delivery once the worker has confirmed it, and the agent's wait."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.asks import Tenant, ask_body
from tests.support.waiting import eventually


class AgentSide:
    """Mixed into a channel harness that sets `api` (the API's client) and `tenant`."""

    api: httpx.AsyncClient
    tenant: Tenant

    async def ask_to(
        self,
        own: dict[str, Any],
        session: str,
        targets: list[dict[str, Any]] | None,
        **extra: Any,
    ) -> dict[str, Any]:
        """The README example ask for `session`, shown on `targets`, else on the channel's
        `own` target; the 201's resource."""
        body = ask_body(session, targets=targets or [own], **extra)
        r = await self.api.post("/v1/questions", json=body, headers=self.tenant.headers)
        assert r.status_code == 201, r.text
        return dict(r.json())

    async def question(self, qid: str) -> dict[str, Any]:
        r = await self.api.get(f"/v1/questions/{qid}", headers=self.tenant.headers)
        return dict(r.json())

    async def delivered(self, qid: str, target: int = 0) -> dict[str, Any]:
        """The target's delivery once the ledger has settled it as delivered: the prompt
        reaches the fake platform a moment before the worker confirms it."""

        async def settled() -> dict[str, Any] | None:
            d = dict((await self.question(qid))["deliveries"][target])
            return d if d["status"] == "delivered" else None

        return dict(await eventually(settled, f"delivery {target} of {qid} settled"))

    async def wait_result(self, qid: str) -> dict[str, Any]:
        r = await self.api.get(
            f"/v1/questions/{qid}/wait?timeout_s=10", headers=self.tenant.headers
        )
        body = dict(r.json())
        assert body["status"] != "pending", body
        return body
