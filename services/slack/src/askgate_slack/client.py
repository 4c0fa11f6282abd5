"""Slack access: one `AsyncWebClient` per tenant (its bot token) over one aiohttp session
pointed at `slack_api_base`, the tenant's request signature check, and every Web API
failure as the kit's errors.

A tenant's workspace comes from `askgate tenant channel T slack bot_token=xoxb-…
signing_secret=… [allowed_user_ids=U1,U2] [app_token=xapp-… for Socket Mode]`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from askgate.channels import (
    PermanentError,
    TenantConfigs,
    ThrottledError,
    TransientError,
    id_list,
)
from askgate.runtime.outbound import retry_after_s
from askgate.store.tenants import Tenant
from redis.asyncio import Redis
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.signature import Clock, SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from askgate_slack.config import SlackSettings

CHANNEL = "slack"
# `ok: false` codes a later try may get past; every other code is permanent
# (channel_not_found, not_in_channel, invalid_auth, account_inactive, is_archived, …).
TRANSIENT_CODES = frozenset(
    {"internal_error", "fatal_error", "service_unavailable", "request_timeout", "team_not_ready"}
)
# Slack sends Retry-After with every 429; this covers a proxy's 429 without it.
DEFAULT_RETRY_AFTER_S = 1.0

Call = Callable[[], Awaitable[AsyncSlackResponse]]


def error_code(exc: PermanentError) -> str:
    """The Slack error code a PermanentError from `call` carries (its message)."""
    return exc.message


async def call(fn: Call) -> AsyncSlackResponse:
    """One Web API call. A 429 is ThrottledError(Retry-After); a 5xx, an answer that is
    not Slack's JSON (a front end's HTML error page), a dropped connection or a timeout
    is TransientError (maybe_sent when the request may have reached Slack); any other
    `ok: false` is PermanentError with Slack's error code as its message."""
    try:
        return await fn()
    except SlackApiError as exc:
        response = exc.response
        status = int(getattr(response, "status_code", 0) or getattr(response, "status", 0))
        data = getattr(response, "data", None)
        code = str(data.get("error") or "") if isinstance(data, dict) else ""
        if status == 429 or code == "ratelimited":
            headers = getattr(response, "headers", None) or {}
            wait = retry_after_s(str(headers.get("Retry-After") or ""))
            raise ThrottledError(
                "ratelimited", DEFAULT_RETRY_AFTER_S if wait is None else wait
            ) from exc
        if not code:
            raise TransientError(f"Slack answered HTTP {status} without its JSON") from exc
        if status >= 500 or code in TRANSIENT_CODES:
            raise TransientError(code, maybe_sent=True) from exc
        raise PermanentError(code) from exc
    except aiohttp.ClientConnectorError as exc:
        # The connection never opened: the request surely did not reach Slack.
        raise TransientError(f"cannot connect: {exc}") from exc
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise TransientError(f"{type(exc).__name__}: {exc}", maybe_sent=True) from exc
    except SlackClientError as exc:
        raise PermanentError(f"{type(exc).__name__}: {exc}") from exc


@dataclass(frozen=True)
class Workspace:
    """One tenant's Slack app."""

    tenant: str
    bot_token: str
    client: AsyncWebClient
    verifier: SignatureVerifier | None  # None: no signing secret, HTTP requests refused
    allowed_user_ids: frozenset[str]
    app_token: str  # Socket Mode only


class Workspaces:
    """The workspace of every tenant with a Slack bot token, refreshed from Redis."""

    def __init__(self, redis: Redis, settings: SlackSettings, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock = clock or Clock()
        self.session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=settings.slack_request_timeout_s)
        )
        self.configs: TenantConfigs[Workspace] = TenantConfigs(redis, CHANNEL, self._build)
        self._me: dict[str, dict[str, Any]] = {}  # bot token → its auth.test answer

    async def identity(self, ws: Workspace) -> dict[str, Any]:
        """Who the bot is (auth.test: team, user_id, bot_id), asked once per bot token;
        raises the kit's errors when Slack cannot say."""
        me = self._me.get(ws.bot_token)
        if me is None:
            data = (await call(lambda: ws.client.auth_test())).data
            me = self._me[ws.bot_token] = dict(data) if isinstance(data, dict) else {}
        return me

    def _build(
        self, tenant: Tenant, conf: dict[str, Any], prev: Workspace | None
    ) -> Workspace | None:
        token = str(conf.get("bot_token") or "")
        if not token:
            return None
        if not token.startswith("xoxb-"):
            raise ValueError("bot_token: must be the app's Bot User OAuth Token (xoxb-…)")
        app_token = str(conf.get("app_token") or "")
        if app_token and not app_token.startswith("xapp-"):
            raise ValueError(
                "app_token: must be an app-level token (xapp-…) with connections:write"
            )
        secret = str(conf.get("signing_secret") or "").strip()
        client = (
            prev.client
            if prev is not None and prev.bot_token == token
            else AsyncWebClient(
                token=token,
                base_url=self.settings.slack_api_base,
                session=self.session,
                # No retries inside the client: a resent chat.postMessage
                # could post twice; the kit decides what to retry.
                retry_handlers=[],
            )
        )
        return Workspace(
            tenant.id,
            token,
            client,
            SignatureVerifier(secret, self.clock) if secret else None,
            id_list(conf.get("allowed_user_ids")),
            app_token,
        )

    async def refresh(self) -> list[Workspace]:
        """Re-read every tenant's Slack config; returns the workspaces configured now."""
        return list((await self.configs.refresh()).values())

    async def get(self, tenant_id: str) -> Workspace | None:
        return await self.configs.get(tenant_id)

    def all(self) -> list[Workspace]:
        return list(self.configs.all().values())

    async def close(self) -> None:
        await self.session.close()
