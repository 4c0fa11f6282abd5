"""The mixed workload: agents ask (with a callback and some channel targets) and wait
through the Python client; for each question a human answers through the API, replies in
plain text, answers through a channel, skips, races two answers, or lets it expire."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from datetime import datetime
from typing import Any

import httpx
from askgate_client import ApiError, AsyncAskgate

from chaos.channels import Asked, Channel, Stack, post_any

QUESTIONS: list[Any] = [
    {
        "id": "deploy_target",
        "header": "Deploy",
        "question": "Where should I deploy this build?",
        "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}],
    }
]
TIMEOUTS_S = [2, 3, 5, 8]
# What each way of answering makes the result, when it wins.
EXPECTED = {
    "api": {"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}},
    "reply": {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}},
    },
    "skip": {"status": "no_answer"},
}


class Workload:
    def __init__(
        self,
        stack: Stack,
        api_key: str,
        channels: list[Channel],
        callback_url: str,
        rnd: random.Random,
        agents: int,
        max_timeout_s: int = 8,
    ) -> None:
        self.stack = stack
        self.api_key = api_key
        self.channels = channels
        self.callback_url = callback_url
        self.rnd = rnd
        self.agents = agents
        self.timeouts = [t for t in TIMEOUTS_S if t <= max_timeout_s] or [TIMEOUTS_S[0]]
        self.asked: dict[str, Asked] = {}
        self.refused: Counter[str] = Counter()
        self.humans: Counter[str] = Counter()
        self.stop = asyncio.Event()
        self._humans: list[asyncio.Task[None]] = []

    async def run(self) -> None:
        async with httpx.AsyncClient(timeout=10.0) as http:
            await asyncio.gather(*(self._agent(i, http) for i in range(self.agents)))
            await asyncio.gather(*self._humans)

    async def _agent(self, index: int, http: httpx.AsyncClient) -> None:
        url = self.stack.api_urls[index % len(self.stack.api_urls)]
        async with AsyncAskgate(url, self.api_key, retry_for_s=300) as ag:
            n = 0
            while not self.stop.is_set():
                n += 1
                # The Control UI can always show it, so an ask is never refused because a
                # chat channel's worker is down at that moment (its target fails instead).
                targets = [
                    {"channel": "web"},
                    *[t for ch in self.channels if (t := ch.target(self.rnd))],
                ]
                try:
                    q = await ag.start(
                        QUESTIONS,
                        session=f"c{index}-{n}",
                        targets=targets,
                        timeout_s=self.rnd.choice(self.timeouts),
                        callback_url=self.callback_url,
                    )
                except ApiError as exc:
                    self.refused[f"HTTP {exc.status_code} {exc.code}"] += 1
                    await asyncio.sleep(0.2)
                    continue
                asked = Asked(q.id, q.session, _unix(q.expires_at), targets)
                self.asked[q.id] = asked
                self._humans.append(asyncio.create_task(self._human(asked, http)))
                result = await ag.wait(q.id)
                asked.returned_at = time.time()
                asked.result = result.tool_result
                asked.reason = result.reason

    async def _human(self, asked: Asked, http: httpx.AsyncClient) -> None:
        rnd = random.Random(asked.id)
        await asyncio.sleep(rnd.uniform(0, max(0.5, asked.expires_at - time.time()) * 1.1))
        roll = rnd.random()
        channel = next(
            (c for c in self.channels if any(t["channel"] == c.name for t in asked.targets)), None
        )
        if roll < 0.30:
            ways = ["api"]
        elif roll < 0.45:
            ways = ["api", "reply"]  # two channels at once: one wins, one is told
        elif roll < 0.60 and channel is not None:
            ways = [channel.name]
        elif roll < 0.67:
            ways = ["skip"]
        else:
            self.humans["let it expire"] += 1
            return
        outcomes = await asyncio.gather(*(self._answer(w, asked, http, channel) for w in ways))
        for way, outcome in zip(ways, outcomes, strict=True):
            self.humans[f"{way}: {outcome}"] += 1
            if outcome == "won":
                asked.human_wins.append(way)
            elif outcome == "told":
                asked.told_final += 1

    async def _answer(
        self, way: str, asked: Asked, http: httpx.AsyncClient, channel: Channel | None
    ) -> str:
        if channel is not None and way == channel.name:
            return await channel.answer(http, asked)
        path, body = {
            "api": ("answer", {"answers": {"deploy_target": ["Production"]}}),
            "reply": ("reply", {"text": "1"}),
            "skip": ("skip", {}),
        }[way]
        r = await post_any(
            http,
            self.stack.api_urls,
            f"/v1/questions/{asked.id}/{path}",
            body,
            self.stack.headers,
            random.Random(f"{asked.id}{way}"),
        )
        if r is None:
            return "unreachable"
        if r.status_code == 200:
            return "won"
        return "told" if r.status_code == 409 else f"HTTP {r.status_code}"


def _unix(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
