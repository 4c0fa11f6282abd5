"""Discord access: the REST API over plain httpx, every failure as the kit's errors, and
each tenant's application (`askgate tenant channel T discord bot_token=… public_key=…
application_id=…`).

No Discord library both serves HTTP interactions and points at a configurable API base
(`ASKGATE_DISCORD_API_BASE`: Discord's, or the tests' fake), and the worker needs two
calls: create a message and edit it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import orjson
from askgate.channels import (
    PermanentError,
    PlatformError,
    ThrottledError,
    TransientError,
    id_list,
)
from askgate.runtime.outbound import retry_after_s
from askgate.store.tenants import Tenant
from nacl.signing import VerifyKey

from askgate_discord.config import DiscordSettings

CHANNEL = "discord"
USER_AGENT = "DiscordBot (https://github.com/askgate/askgate, 0.1)"


@dataclass(frozen=True)
class DiscordApp:
    """One tenant's Discord application: its bot, the key its interactions are signed
    with, and who may answer in shared channels."""

    tenant: str
    bot_token: str
    application_id: str
    verify_key: VerifyKey
    allowed_user_ids: frozenset[str]
    allowed_role_ids: frozenset[str]


def build_app(tenant: Tenant, conf: dict[str, Any], prev: DiscordApp | None) -> DiscordApp | None:
    """The tenant's app from its channel config; a ValueError names the bad setting."""
    token = str(conf.get("bot_token") or "").strip()
    if not token:
        return None
    try:
        key = VerifyKey(bytes.fromhex(str(conf.get("public_key") or "").strip()))
    except ValueError as exc:  # nacl's own ValueError (wrong length) is one too
        raise ValueError(
            "public_key must be the application's public key, 64 hex "
            "characters (Developer Portal → General Information)"
        ) from exc
    application_id = str(conf.get("application_id") or "").strip()
    if not application_id.isdigit():
        raise ValueError(
            "application_id must be the application's id, digits "
            "(Developer Portal → General Information)"
        )
    return DiscordApp(
        tenant.id,
        token,
        application_id,
        key,
        id_list(conf.get("allowed_user_ids")),
        id_list(conf.get("allowed_role_ids")),
    )


def error_of(response: httpx.Response) -> PlatformError | None:
    """Discord's answer as the kit's error, None when it took the call. A 429 waits its
    `retry_after`; a 5xx or a body that is not Discord's JSON (a proxy's HTML page) may
    pass later; any other refusal (Unknown Channel 10003, Missing Access 50001, Missing
    Permissions 50013, a bad token's 401) cannot."""
    status = response.status_code
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        body = None
    if not isinstance(body, dict):
        # It may still have reached Discord (a front end failing after it answered).
        return TransientError(
            f"Discord answered {status} with an error page, not JSON", maybe_sent=True
        )
    if status < 300:
        return None
    what = f"Discord {status}: {body.get('message') or 'error'} (code {body.get('code', 0)})"
    if status == 429:
        wait = body.get("retry_after")
        header = retry_after_s(response.headers.get("Retry-After"))
        seconds = float(wait) if isinstance(wait, int | float) else header
        return ThrottledError(what, seconds if seconds is not None else 1.0)
    if status >= 500:
        return TransientError(what, maybe_sent=True)
    return PermanentError(what)


# Connections to Discord's API this process keeps open at most.
KEEP = 100


class DiscordClient:
    def __init__(self, settings: DiscordSettings) -> None:
        self.http = httpx.AsyncClient(
            base_url=settings.discord_api_base.rstrip("/") + "/",
            timeout=settings.discord_request_timeout_s,
            headers={"User-Agent": USER_AGENT},
            # Every connection kept for reuse: httpx keeps 20 by default, so beyond 20
            # calls at once (the kit's 32 deliveries plus interaction responses) each
            # call closed its connection and the next opened a new one.
            limits=httpx.Limits(max_connections=KEEP, max_keepalive_connections=KEEP),
        )

    async def _send(
        self, method: str, path: str, token: str, payload: dict[str, Any] | None
    ) -> httpx.Response:
        try:
            return await self.http.request(
                method,
                path.lstrip("/"),
                content=orjson.dumps(payload) if payload is not None else None,
                headers={"Authorization": f"Bot {token}", "Content-Type": "application/json"},
            )
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise TransientError(f"cannot reach Discord: {type(exc).__name__}") from exc
        except httpx.TransportError as exc:  # a timeout or reset after the request left
            raise TransientError(
                f"Discord call cut off: {type(exc).__name__}", maybe_sent=True
            ) from exc

    async def call(
        self, method: str, path: str, token: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        """One REST call; the JSON body, or the kit's error."""
        response = await self._send(method, path, token, payload)
        error = error_of(response)
        if error is not None:
            raise error
        body: dict[str, Any] = orjson.loads(response.content)
        return body

    async def create_message(
        self, token: str, channel_id: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        return await self.call("POST", f"channels/{channel_id}/messages", token, payload)

    async def edit_message(
        self, token: str, channel_id: str, message_id: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        return await self.call(
            "PATCH", f"channels/{channel_id}/messages/{message_id}", token, payload
        )

    async def delete_message(self, token: str, channel_id: str, message_id: str) -> None:
        """Delete one of the bot's messages (204); a message already gone is no error."""
        response = await self._send(
            "DELETE", f"channels/{channel_id}/messages/{message_id}", token, None
        )
        if response.status_code in (204, 404):
            return
        error = error_of(response)
        if error is not None:
            raise error

    async def aclose(self) -> None:
        await self.http.aclose()
