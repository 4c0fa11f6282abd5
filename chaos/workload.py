"""The mixed workload: agents ask (with a callback and some channel targets) and wait
through the Python client; for each question a human answers through the API, replies in
plain text, answers through a channel (taps on its platform), skips, races two answers,
or lets it expire, and then now and then answers anyway, late (kept on the resource,
never the result)."""

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
TIMEOUTS_S = [2, 3, 5, 8, 12]
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
        shown_on = [c for c in self.channels if any(t["channel"] == c.name for t in asked.targets)]
        channel = rnd.choice(shown_on) if shown_on else None
        if roll < 0.25:
            ways = ["api"]
        elif roll < 0.40:
            ways = ["api", "reply"]  # two channels at once: one wins, one is told
        elif roll < 0.65 and channel is not None:
            ways = [channel.name]
        elif roll < 0.72:
            ways = ["skip"]
        else:
            self.humans["let it expire"] += 1
            if rnd.random() < 0.5:
                await self._late(asked, http, rnd)
            return
        outcomes = await asyncio.gather(*(self._answer(w, asked, http, channel) for w in ways))
        for way, outcome in zip(ways, outcomes, strict=True):
            self._count(asked, way, outcome)

    def _count(self, asked: Asked, way: str, outcome: str) -> None:
        self.humans[f"{way}: {outcome}"] += 1
        if outcome == "won":
            asked.human_wins.append(way)
        elif outcome == "told":
            asked.told_final += 1
        elif outcome == "late":
            asked.late_kept.append(way)

    async def _late(self, asked: Asked, http: httpx.AsyncClient, rnd: random.Random) -> None:
        """After the question timed out, the human answers anyway: through the API, or
        as a plain-text message in the session when a text target showed it."""
        await asyncio.sleep(max(0.0, asked.expires_at - time.time()) + rnd.uniform(0.5, 3.0))
        text = any(tg["channel"] == "text" for tg in asked.targets)
        way = "late text" if text and rnd.random() < 0.5 else "late api"
        if way == "late text":
            r = await post_any(
                http,
                self.stack.api_urls,
                f"/v1/sessions/{asked.session}/messages",
                {"text": "2"},
                self.stack.headers,
                rnd,
            )
            body = r.json() if r is not None else {}
            late = r is not None and r.status_code == 200 and body.get("late")
        else:
            r = await post_any(
                http,
                self.stack.api_urls,
                f"/v1/questions/{asked.id}/answer",
                {"answers": {"deploy_target": ["Production"]}},
                self.stack.headers,
                rnd,
            )
            error = (r.json().get("error") or {}) if r is not None and r.status_code == 409 else {}
            late = bool(error.get("late_answer_recorded"))
        if r is None:
            outcome = "unreachable"
        elif late:
            outcome = "late"
        elif r.status_code == 200 and way == "late api":
            outcome = "won"  # it had not ended yet after all
        else:
            outcome = f"HTTP {r.status_code}" + (" (not kept)" if r.status_code < 300 else "")
        self._count(asked, way, outcome)

    async def _answer(
        self, way: str, asked: Asked, http: httpx.AsyncClient, channel: Channel | None
    ) -> str:
        if channel is not None and way == channel.name:
            return await channel.answer(http, asked)
        answers: dict[str, tuple[str, dict[str, Any]]] = {
            "api": ("answer", {"answers": {"deploy_target": ["Production"]}}),
            "reply": ("reply", {"text": "1"}),
            "skip": ("skip", {}),
        }
        path, body = answers[way]
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
        if r.status_code != 409:
            return f"HTTP {r.status_code}"
        # It had ended: without an answer, this one is kept as its late answer.
        return "late" if (r.json().get("error") or {}).get("late_answer_recorded") else "told"


def _unix(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
