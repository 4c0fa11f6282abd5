"""Discord: the tests' fake Discord REST API (`tests/integration/discord/fake_discord.py`)
and the real worker, `python -m askgate_discord`, its interactions endpoint on a port of
its own.

Every ask goes to its own guild channel; the human (allowed by the tenant's config)
clicks the prompt's first option, which reaches the worker as an Ed25519-signed
component interaction, as Discord sends it.
"""

from __future__ import annotations

import contextvars
import itertools
import sys
import time
from typing import Any

import orjson
from askgate.store.tenants import set_channel_config
from redis.asyncio import Redis

from bench.channels.base import Hooks, Platform, Prompt, Worker

TOKEN = "bench-bot-token"
APP_ID = "1100000000000000042"
GUILD = "1200000000000000042"
PERSON = {"id": "1400000000000000042", "username": "ada", "global_name": "Ada"}
# A fixed key: the benchmark's own process configures the public key, the fake's
# process signs with it. Not a secret of anything.
SEED = b"askgate-bench-discord-signing-k!"


def _key() -> Any:
    from nacl.signing import SigningKey

    return SigningKey(SEED)


class DiscordSpec:
    name = "discord"

    def conv(self, i: int) -> str:
        return str(1_300_000_000_000_000_000 + i)

    def target(self, i: int) -> dict[str, Any]:
        return {"channel": "discord", "channel_id": self.conv(i)}

    async def configure(self, redis: Redis, tenant_id: str) -> None:
        await set_channel_config(
            redis,
            tenant_id,
            "discord",
            {
                "bot_token": TOKEN,
                "public_key": _key().verify_key.encode().hex(),
                "application_id": APP_ID,
                "allowed_user_ids": PERSON["id"],
            },
        )

    def worker(self, base: str, worker: Worker) -> tuple[list[str], dict[str, str]]:
        return [sys.executable, "-m", "askgate_discord"], {
            "ASKGATE_DISCORD_PORT": str(worker.port),
            "ASKGATE_DISCORD_API_BASE": base,
        }

    def platform(self, hooks: Hooks, worker: Worker) -> Platform:
        return _platform(hooks, worker)


def _platform(hooks: Hooks, worker: Worker) -> Platform:
    from aiohttp import web

    from bench.channels.http_clicks import Clicker
    from tests.integration.discord.fake_discord import FakeDiscord, Msg

    arrived: contextvars.ContextVar[float] = contextvars.ContextVar("arrived")

    class BenchDiscord(FakeDiscord):
        """The fake Discord REST API, telling the hooks what the worker sends."""

        async def _create(self, request: web.Request) -> web.StreamResponse:
            t = time.monotonic()  # before the body is parsed
            response = await super()._create(request)
            channel = request.match_info["channel"]
            msg = self.messages(channel)[-1] if self.messages(channel) else None
            if response.status == 200 and msg is not None and msg.components:
                hooks.prompt(Prompt(channel, t, msg))
            return response

        async def _edit(self, request: web.Request) -> web.Response:
            arrived.set(time.monotonic())
            response = await super()._edit(request)
            msg = self.channels.get(request.match_info["channel"], {}).get(
                request.match_info["message"]
            )
            if response.status == 200 and msg is not None and msg.components == []:
                hooks.summary(msg.channel_id, arrived.get())
            return response

    key = _key()
    ids = itertools.count(1_600_000_000_000_000_001)

    class DiscordPlatform:
        def __init__(self) -> None:
            self.fake = BenchDiscord(TOKEN)
            self.clicker = Clicker(hooks, worker)

        async def start(self) -> str:
            await self.fake.start()
            self.clicker.start()
            return self.fake.base

        async def stop(self) -> None:
            await self.clicker.stop()
            await self.fake.stop()

        def answer(self, prompt: Prompt) -> None:
            msg = prompt.handle
            assert isinstance(msg, Msg)

            def build() -> tuple[bytes, dict[str, str]]:
                body = orjson.dumps(
                    {
                        "id": str(next(ids)),
                        "application_id": APP_ID,
                        "type": 3,
                        "token": "interaction-token",
                        "version": 1,
                        "channel_id": msg.channel_id,
                        "message": msg.raw,
                        "data": {"custom_id": msg.custom_ids()[0], "component_type": 2},
                        "guild_id": GUILD,
                        "member": {"user": PERSON, "roles": []},
                    }
                )
                at = str(int(time.time()))
                return body, {
                    "X-Signature-Ed25519": key.sign(at.encode() + body).signature.hex(),
                    "X-Signature-Timestamp": at,
                    "Content-Type": "application/json",
                }

            self.clicker.click(prompt.conv, "/discord/{tenant}/interactions", build)

    return DiscordPlatform()


SPEC = DiscordSpec()
