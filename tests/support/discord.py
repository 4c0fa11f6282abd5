"""The Discord channel's test harness: the guild, channel and people of the tests, the
worker's test settings, the tenant's Discord configuration, and `Harness` (what the `dc`
fixture of tests/integration/discord/conftest.py yields)."""

from __future__ import annotations

import itertools
import time
from typing import Any

import httpx
import orjson
from askgate.store.tenants import set_channel_config
from askgate_discord.config import DiscordSettings
from askgate_discord.service import DiscordService
from nacl.signing import SigningKey
from redis.asyncio import Redis

from tests.integration.discord.fake_discord import FakeDiscord, Msg
from tests.support.asks import SECRET, Tenant
from tests.support.channel_harness import AgentSide
from tests.support.http import local_client
from tests.support.waiting import eventually

TOKEN = "bot-token-for-tests"
APP_ID = "1100000000000000001"
GUILD = "1200000000000000001"
CHANNEL = "1300000000000000001"
ADA = {"id": "1400000000000000001", "username": "ada", "global_name": "Ada"}
BOB = {"id": "1400000000000000002", "username": "bob"}
OPS_ROLE = "1500000000000000001"

THREE = [
    {
        "id": "deploy_target",
        "header": "Deploy",
        "question": "Where should I deploy this build?",
        "options": [
            {"label": "Staging (Recommended)", "description": "Safe, reversible"},
            {"label": "Production"},
        ],
    },
    {
        "id": "areas",
        "header": "Areas",
        "question": "Which areas should I test?",
        "options": [{"label": "Auth"}, {"label": "Billing"}, {"label": "Search"}],
        "multiSelect": True,
    },
    {
        "id": "notify",
        "header": "Notify",
        "question": "Whom should I notify?",
        "options": [{"label": "Nobody"}, {"label": "The team"}],
    },
]


def dc_settings(redis_url: str, api_base: str, **overrides: Any) -> DiscordSettings:
    values: dict[str, Any] = {
        "redis_url": redis_url,
        "secret_key": SECRET,
        "timeout_min_s": 1,
        "discord_port": 0,
        "discord_api_base": api_base,
        "consumer_block_ms": 100,
        "consumer_claim_every_s": 0.2,
        "channel_refresh_s": 0.5,
        "delivery_backoff_s": 0.05,
        **overrides,
    }
    return DiscordSettings(**values)


class Harness(AgentSide):
    def __init__(
        self,
        fake: FakeDiscord,
        service: DiscordService,
        tenant: Tenant,
        api: httpx.AsyncClient,
        redis: Redis,
        key: SigningKey,
    ) -> None:
        self.fake = fake
        self.service = service
        self.tenant = tenant
        self.api = api
        self.redis = redis
        self.key = key
        # A harness limit, not a behaviour: a loaded machine can take seconds to answer.
        self.http = local_client(f"http://127.0.0.1:{service.port}", timeout=30)
        self._ids = itertools.count(1600000000000000001)

    async def ask(
        self,
        *,
        channel_id: str = CHANNEL,
        session: str = "s1",
        target: dict[str, Any] | None = None,
        targets: list[dict[str, Any]] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        dc = {"channel": "discord", "channel_id": channel_id, **(target or {})}
        return await self.ask_to(dc, session, targets, **extra)

    async def prompt(self, channel_id: str = CHANNEL) -> Msg:
        """The prompt shown in the channel (the first message there)."""
        msg = await eventually(
            lambda: self.fake.messages(channel_id), f"a prompt in channel {channel_id}"
        )
        return msg[0]  # type: ignore[no-any-return]

    def interaction(
        self,
        msg: Msg,
        custom_id: str,
        user: dict[str, Any] = ADA,
        *,
        roles: list[str] | None = None,
        values: list[str] | None = None,
        dm: bool = False,
    ) -> dict[str, Any]:
        """A component interaction: `user` clicks `custom_id` on `msg` (a select with
        `values`), in the guild channel or, with dm, in a DM."""
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": 2}
        if values is not None:
            data.update(component_type=3, values=values)
        body: dict[str, Any] = {
            "id": str(next(self._ids)),
            "application_id": APP_ID,
            "type": 3,
            "token": "interaction-token",
            "version": 1,
            "channel_id": msg.channel_id,
            "message": msg.raw,
            "data": data,
        }
        if dm:
            body["user"] = user
        else:
            body.update(guild_id=GUILD, member={"user": user, "roles": roles or []})
        return body

    def modal_submit(
        self, msg: Msg, custom_id: str, texts: dict[str, str], user: dict[str, Any] = ADA
    ) -> dict[str, Any]:
        body = self.interaction(msg, custom_id, user)
        body["type"] = 5
        body["data"] = {
            "custom_id": custom_id,
            "components": [
                {"type": 1, "components": [{"type": 4, "custom_id": k, "value": v}]}
                for k, v in texts.items()
            ],
        }
        return body

    def signed(
        self, raw: bytes, *, key: SigningKey | None = None, timestamp: int | None = None
    ) -> dict[str, str]:
        ts = str(int(time.time()) if timestamp is None else timestamp)
        sig = (key or self.key).sign(ts.encode() + raw).signature.hex()
        return {
            "X-Signature-Ed25519": sig,
            "X-Signature-Timestamp": ts,
            "Content-Type": "application/json",
        }

    async def send(
        self,
        body: dict[str, Any],
        *,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> httpx.Response:
        """POST an interaction, signed by the application's key unless told otherwise."""
        raw = raw if raw is not None else orjson.dumps(body)
        return await self.http.post(
            f"/discord/{self.tenant.id}/interactions",
            content=raw,
            headers=headers or self.signed(raw),
        )

    async def click(
        self, msg: Msg, custom_id: str, user: dict[str, Any] = ADA, **kw: Any
    ) -> dict[str, Any]:
        r = await self.send(self.interaction(msg, custom_id, user, **kw))
        assert r.status_code == 200, r.text
        return dict(r.json())

    async def summary(self, msg: Msg) -> str:
        await eventually(
            lambda: msg.edits and msg.components == [], f"prompt {msg.id} edited into its summary"
        )
        return msg.content


async def configure(redis: Redis, tenant_id: str, key: SigningKey, **extra: str) -> None:
    await set_channel_config(
        redis,
        tenant_id,
        "discord",
        {
            "bot_token": TOKEN,
            "public_key": key.verify_key.encode().hex(),
            "application_id": APP_ID,
            **extra,
        },
    )
