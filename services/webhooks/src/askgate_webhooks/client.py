"""The signed POST of one attempt (sync: it runs in RQ jobs), to an address the outbound
policy allows (askgate.domain.netguard), checked again right before it is made."""

from __future__ import annotations

import httpx
from askgate.domain import netguard
from askgate.runtime.outbound import Outcome, post_sync, signed_headers

USER_AGENT = "askgate-webhooks/0.1"


def post(
    client: httpx.Client,
    url: str,
    secret: str,
    body: bytes,
    extra_headers: dict[str, str] | None = None,
    *,
    policy: netguard.Policy | None = None,
    resolver: netguard.SyncResolver = netguard.system_resolver_sync,
) -> Outcome:
    headers = {**signed_headers(secret, body, USER_AGENT), **(extra_headers or {})}
    return post_sync(client, url, headers, body, policy or netguard.Policy(), resolver)
