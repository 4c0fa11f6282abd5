"""Discord access: the REST API over plain aiohttp, every failure as the kit's errors, and
each tenant's application (`askgate tenant channel T discord bot_token=… public_key=…
application_id=…`).

No Discord library both serves HTTP interactions and points at a configurable API base
(`ASKGATE_DISCORD_API_BASE`: Discord's, or the tests' fake), and the worker needs two
calls: create a message and edit it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp
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


def error_of(status: int, content: bytes, retry_after: str | None) -> PlatformError | None:
    """Discord's answer (its status, body and Retry-After header) as the kit's error, None
    when it took the call. A 429 waits its `retry_after`; a 5xx or a body that is not
    Discord's JSON (a proxy's HTML page) may pass later; any other refusal (Unknown Channel
    10003, Missing Access 50001, Missing Permissions 50013, a bad token's 401) cannot."""
    try:
        body = orjson.loads(content)
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
        header = retry_after_s(retry_after)
        seconds = float(wait) if isinstance(wait, int | float) else header
        return ThrottledError(what, seconds if seconds is not None else 1.0)
    if status >= 500:
        return TransientError(what, maybe_sent=True)
    return PermanentError(what)


# Connections to Discord's API this process keeps open at most.
KEEP = 100


class DiscordClient:
    """The REST calls over one aiohttp session (aiohttp serves the interactions already).
    Not httpx: httpcore checks every pooled connection's socket on each request (KEEP of
    them), and the worker spent 3.2-3.6 ms of CPU per prompt with it, 1.5 ms with this."""

    def __init__(self, settings: DiscordSettings) -> None:
        self.base = settings.discord_api_base.rstrip("/") + "/"
        timeout_s = settings.discord_request_timeout_s
        # As httpx's one timeout was: to get a connection, then between bytes of the answer.
        self.timeout = aiohttp.ClientTimeout(total=None, connect=timeout_s, sock_read=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        # Made on first use: a session belongs to the running event loop.
        if self._session is None:
            self._session = aiohttp.ClientSession(
                headers={"User-Agent": USER_AGENT},
                timeout=self.timeout,
                # Every connection kept for reuse: beyond the kit's 32 deliveries at once
                # plus interaction responses, a call must not wait for another's to end.
                connector=aiohttp.TCPConnector(limit=KEEP),
                # Discord's API needs no cookies: none are kept or sent.
                cookie_jar=aiohttp.DummyCookieJar(),
            )
        return self._session

    async def _send(
        self, method: str, path: str, token: str, payload: dict[str, Any] | None
    ) -> tuple[int, bytes, str | None]:
        """The status, body and Retry-After header of one call."""
        headers = {"Authorization": f"Bot {token}"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        try:
            async with self._http().request(
                method,
                self.base + path.lstrip("/"),
                data=orjson.dumps(payload) if payload is not None else None,
                headers=headers,
            ) as response:
                return response.status, await response.read(), response.headers.get("Retry-After")
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as exc:
            raise TransientError(f"cannot reach Discord: {type(exc).__name__}") from exc
        except (aiohttp.ClientError, TimeoutError) as exc:  # cut off after the request left
            raise TransientError(
                f"Discord call cut off: {type(exc).__name__}", maybe_sent=True
            ) from exc

    async def call(
        self, method: str, path: str, token: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        """One REST call; the JSON body, or the kit's error."""
        status, content, retry_after = await self._send(method, path, token, payload)
        error = error_of(status, content, retry_after)
        if error is not None:
            raise error
        body: dict[str, Any] = orjson.loads(content)
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
        status, content, retry_after = await self._send(
            "DELETE", f"channels/{channel_id}/messages/{message_id}", token, None
        )
        if status in (204, 404):
            return
        error = error_of(status, content, retry_after)
        if error is not None:
            raise error

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
