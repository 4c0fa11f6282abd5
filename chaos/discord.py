"""Discord under chaos: the tests' fake Discord REST API (tests/integration/discord), the
real `askgate-discord` worker with its interactions endpoint on a fixed port, and a
person allowed in each guild channel who clicks a button (an Ed25519-signed component
interaction POSTed to the worker, as Discord sends it; a click that fails is clicked
again). What the person is shown is the interaction's response. A prompt whose worker
died mid-post is sent again with the same nonce, which Discord answers with the first
message (`StalePolicy.RESEND` with `enforce_nonce`).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import httpx
import orjson
from nacl.signing import SigningKey

from chaos.channels import Asked
from chaos.chat import ChatChannel
from tests.integration.discord.fake_discord import FakeDiscord, Msg

TOKEN = "chaos-bot-token"
APP_ID = "1100000000000000009"
GUILD = "1200000000000000009"
ADA = {"id": "1400000000000000009", "username": "ada", "global_name": "Ada"}


class DiscordChannel(ChatChannel):
    name = "discord"
    module = "askgate_discord"
    rooms = tuple(f"13000000000000000{i:02d}" for i in range(1, 5))  # guild channels

    def __init__(self) -> None:
        super().__init__()
        self.fake = FakeDiscord(TOKEN)
        self.key = SigningKey.generate()
        self._ids = itertools.count(1600000000000000001)
        self._index: dict[str, list[Msg]] = {}
        self._indexed_at = 0.0

    async def open_platform(self) -> None:
        await self.fake.start()

    async def close_platform(self) -> None:
        await self.fake.stop()

    def worker_env(self, port: int) -> dict[str, str]:
        return {
            "ASKGATE_DISCORD_PORT": str(port),
            "ASKGATE_DISCORD_API_BASE": self.fake.base,
            "ASKGATE_DISCORD_REQUEST_TIMEOUT_S": "3",
        }

    def credentials(self) -> dict[str, str]:
        return {
            "bot_token": TOKEN,
            "public_key": self.key.verify_key.encode().hex(),
            "application_id": APP_ID,
            "allowed_user_ids": ADA["id"],
        }

    def address(self, room: str) -> dict[str, Any]:
        return {"channel_id": room}

    def prompts(self, qid: str, index: int) -> list[Msg]:
        if time.monotonic() - self._indexed_at > 0.05:  # many people look at once
            self._index = {}
            for room in self.rooms:
                for msg in self.fake.messages(room):
                    first = msg.sent_components[0]["components"][0] if msg.sent_components else {}
                    parts = str(first.get("custom_id", "")).split(":")
                    if len(parts) == 4 and parts[0] == "ag":
                        self._index.setdefault(f"{parts[1]}:{parts[2]}", []).append(msg)
            self._indexed_at = time.monotonic()
        return list(self._index.get(f"{qid}:{index}", []))

    def summarised(self, prompt: Msg) -> bool:
        return bool(prompt.edits) and prompt.components == []

    async def tap(self, http: httpx.AsyncClient, prompt: Msg, asked: Asked, index: int) -> Any:
        if not prompt.components:
            return None  # already its summary: nothing to click
        body = {
            "id": str(next(self._ids)),
            "application_id": APP_ID,
            "type": 3,
            "token": "interaction-token",
            "version": 1,
            "channel_id": prompt.channel_id,
            "message": prompt.raw,
            "data": {"custom_id": f"ag:{asked.id}:{index}:o1", "component_type": 2},
            "guild_id": GUILD,
            "member": {"user": ADA, "roles": []},
        }
        raw = orjson.dumps(body)
        at = str(int(time.time()))
        headers = {
            "X-Signature-Ed25519": self.key.sign(at.encode() + raw).signature.hex(),
            "X-Signature-Timestamp": at,
            "Content-Type": "application/json",
        }
        assert self.stack is not None
        r = await self.post_worker(http, f"/discord/{self.stack.tenant}/interactions", raw, headers)
        if r is None or r.status_code != 200:
            return None
        return str((r.json().get("data") or {}).get("content") or "")

    def told(self, handles: list[Any]) -> list[str]:
        return [h for h in handles if h]
