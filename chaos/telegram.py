"""Telegram under chaos: the tests' fake Bot API (tests/integration/telegram) with
Telegram's getUpdates semantics, the real `askgate-telegram` worker polling it, and a
person in each private chat who taps a button (a callback_query update waiting in the
fake until the worker's getUpdates confirms it).

With one worker it long-polls, as one replica per bot must; with replicas
(`--replicas`) each listens for Telegram's webhook and a tap is POSTed to one that is up,
with the tenant's secret, as Telegram would behind a load balancer.

Telegram has no idempotency key, so a prompt whose worker died mid-sendMessage is
assumed shown and never sent again (the kit's `StalePolicy.ASSUME_SHOWN`): it is never
posted twice, but one whose request had not reached Telegram is missing, and one that did
reach it keeps its buttons until a tap tells the worker its message id. Both are
counted apart: they are the price of never posting twice on a platform that cannot
dedupe.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from chaos.channels import Asked
from chaos.chat import ChatChannel
from tests.integration.telegram.fake_bot_api import FakeBotAPI, Msg, user

TOKEN = "777000:CHAOS-token-abcdefghijklmnopqrstuvwxyz"


class TelegramChannel(ChatChannel):
    name = "telegram"
    module = "askgate_telegram"
    rooms = ("7001", "7002", "7003", "7004")  # private chats: the person is the chat
    must_be_zero: tuple[str, ...] = (*ChatChannel.must_be_zero, "taps confirmed but never answered")

    def __init__(self) -> None:
        super().__init__()
        self.fake = FakeBotAPI()
        self._seen = 0
        self._by_target: dict[tuple[str, int], list[Msg]] = {}
        self._hooked: list[tuple[int, str]] = []  # (update id, query id) a worker took (200)

    async def open_platform(self) -> None:
        await self.fake.start()

    async def close_platform(self) -> None:
        await self.fake.stop()

    def webhook(self) -> bool:
        return self.stack is not None and self.stack.replicas > 1

    def worker_env(self, port: int) -> dict[str, str]:
        mode = {"ASKGATE_TELEGRAM_MODE": "polling"}
        if self.webhook():
            mode = {"ASKGATE_TELEGRAM_MODE": "webhook", "ASKGATE_TELEGRAM_WEBHOOK_PORT": str(port)}
        return {
            **mode,
            "ASKGATE_TELEGRAM_API_BASE": self.fake.base,
            "ASKGATE_TELEGRAM_POLLING_TIMEOUT_S": "1",
            "ASKGATE_TELEGRAM_REQUEST_TIMEOUT_S": "3",
        }

    def credentials(self) -> dict[str, str]:
        return {"bot_token": TOKEN}

    def address(self, room: str) -> dict[str, Any]:
        return {"chat_id": room}

    def prompts(self, qid: str, index: int) -> list[Msg]:
        created = self.fake.created
        for msg in created[self._seen :]:  # index the messages sent since the last look
            for row in (msg.sent_markup or {}).get("inline_keyboard", []):
                data = str(row[0].get("callback_data", "")).split(":")
                if len(data) == 4 and data[0] == "ag":
                    self._by_target.setdefault((data[1], int(data[2])), []).append(msg)
                    break
        self._seen = len(created)
        return list(self._by_target.get((qid, index), []))

    def summarised(self, prompt: Msg) -> bool:
        return bool(prompt.edits) and prompt.reply_markup is None

    def can_summarise(self, delivery: dict[str, Any]) -> bool:
        return bool((delivery.get("ref") or {}).get("message_id"))

    def missing_figure(self, delivery: dict[str, Any]) -> str:
        if not self.can_summarise(delivery):
            return "prompts assumed shown, never reached Telegram"
        return "prompts missing at the platform"

    async def tap(self, http: httpx.AsyncClient, prompt: Msg, asked: Asked, index: int) -> Any:
        person = user(int(prompt.chat_id), "Ada")
        update = self.fake.tap(prompt, f"ag:{asked.id}:{index}:o1", person)
        query = update["callback_query"]["id"]
        if not self.webhook():
            self.fake.push(TOKEN, update)
            return query
        assert self.stack is not None
        headers = {
            "Content-Type": "application/json",
            "X-Telegram-Bot-Api-Secret-Token": self.stack.webhook_secret,
        }
        r = await self.post_worker(
            http, f"/telegram/{self.stack.tenant}", orjson.dumps(update), headers
        )
        if r is None or r.status_code != 200:
            return None
        self._hooked.append((update["update_id"], query))
        return query

    def told(self, handles: list[Any]) -> list[str]:
        answers = self.fake.callback_answers
        return [answers[h] for h in handles if h in answers]

    def verify(self, questions: dict[str, dict[str, Any]]) -> dict[str, int]:
        figures = super().verify(questions)
        # An update the worker confirmed (getUpdates moved past it) but never answered:
        # a tap Telegram considers delivered that no one handled.
        confirmed = set(self.fake.confirmed.get(TOKEN, []))
        lost = 0
        for update_id, query in self._queries():
            if update_id in confirmed and query not in self.fake.callback_answers:
                lost += 1
        # With webhooks, a 200 is Telegram's confirmation.
        lost += sum(1 for _, query in self._hooked if query not in self.fake.callback_answers)
        figures["taps confirmed but never answered"] = lost
        figures["updates never confirmed"] = len(self.fake.updates.get(TOKEN, []))
        return figures

    def _queries(self) -> list[tuple[int, str]]:
        return [
            (u["update_id"], u["callback_query"]["id"])
            for u in self.fake.pushed
            if "callback_query" in u
        ]
