"""Slack under chaos: the tests' fake Slack Web API (tests/integration/slack), the real
`askgate-slack` worker in HTTP mode on a fixed port, and a person in each direct
message who clicks a button (a signed block_actions POST to the worker, as Slack sends
it; a click that fails is clicked again). What the person is shown comes back as an
ephemeral message. A prompt whose worker died mid-post is looked up by its metadata
before it is posted again (`StalePolicy.LOOK_UP`).
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

import httpx
import orjson
from slack_sdk.signature import SignatureVerifier

from chaos.channels import Asked
from chaos.chat import ChatChannel
from tests.integration.slack.fake_slack import TOKEN, FakeSlack, Msg

SIGNING_SECRET = "chaos-signing-secret-0123456789"


class SlackChannel(ChatChannel):
    name = "slack"
    module = "askgate_slack"
    rooms = ("D0CHAOS1", "D0CHAOS2", "D0CHAOS3", "D0CHAOS4")  # direct messages

    def __init__(self) -> None:
        super().__init__()
        self.fake = FakeSlack()
        self._clicks = 0
        self._index: dict[tuple[str, int], list[Msg]] = {}
        self._indexed_at = 0.0

    async def open_platform(self) -> None:
        await self.fake.start()

    async def close_platform(self) -> None:
        await self.fake.stop()

    def worker_env(self, port: int) -> dict[str, str]:
        return {
            "ASKGATE_SLACK_MODE": "http",
            "ASKGATE_SLACK_PORT": str(port),
            "ASKGATE_SLACK_API_BASE": self.fake.api,
            "ASKGATE_SLACK_REQUEST_TIMEOUT_S": "3",
        }

    def credentials(self) -> dict[str, str]:
        return {"bot_token": TOKEN, "signing_secret": SIGNING_SECRET}

    def address(self, room: str) -> dict[str, Any]:
        return {"channel_id": room}

    def prompts(self, qid: str, index: int) -> list[Msg]:
        if time.monotonic() - self._indexed_at > 0.05:  # many people look at once
            self._index = {}
            for room in self.rooms:
                for msg in self.fake.messages(room):
                    about = (msg.metadata or {}).get("event_payload") or {}
                    if "question_id" in about:
                        key = (str(about["question_id"]), int(about["target"]))
                        self._index.setdefault(key, []).append(msg)
            self._indexed_at = time.monotonic()
        return list(self._index.get((qid, index), []))

    def summarised(self, prompt: Msg) -> bool:
        return bool(prompt.edits) and not prompt.actions

    async def tap(self, http: httpx.AsyncClient, prompt: Msg, asked: Asked, index: int) -> Any:
        assert self.stack is not None
        if not prompt.actions:
            return None  # already its summary: nothing to click
        self._clicks += 1
        person = f"U0C{self._clicks:06d}"  # one person per click: their ephemerals are theirs
        payload = self.fake.click(prompt, "o1", person)
        body = urlencode({"payload": orjson.dumps(payload).decode()}).encode()
        at = str(int(time.time()))
        signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=at, body=body)
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": at,
            "X-Slack-Signature": signature or "",
        }
        r = await self.post_worker(http, f"/slack/{self.stack.tenant}/interactivity", body, headers)
        return person if r is not None and r.status_code == 200 else None

    def told(self, handles: list[Any]) -> list[str]:
        people = set(handles)
        return [str(e["text"]) for e in self.fake.ephemeral if e["user"] in people]
