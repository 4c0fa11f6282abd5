"""One plug-in per chat channel: its fake platform, its worker process (a kill -9
victim), the target an ask names, how a human answers through it, and what must hold
afterwards. The plain-text channel is here; Telegram, Slack and Discord share chat.py
(telegram.py, slack.py, discord.py). The driver runs every channel in
`chaos.__main__.CHANNELS`."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

from chaos.platforms import Receiver
from chaos.processes import Component, wait_live


@dataclass
class Stack:
    """What a channel needs from the driver to start its worker and reach the API."""

    env: dict[str, str]
    log_dir: Path
    api_urls: list[str]
    headers: dict[str, str]
    seed: int
    tenant: str
    webhook_secret: str = ""  # the tenant's (Telegram's webhook checks it)
    cluster: bool = False  # REDIS_URL names a node of a Redis Cluster
    replicas: int = 1  # processes per channel worker


def replica_name(channel: str, i: int, replicas: int) -> str:
    """A worker process's name (its log file, its line in the kills table)."""
    return channel if replicas == 1 else f"{channel}#{i + 1}"


@dataclass
class Asked:
    """One accepted question, as the workload saw it."""

    id: str
    session: str
    expires_at: float  # unix seconds
    targets: list[dict[str, Any]]
    returned_at: float | None = None  # when the agent's wait returned
    result: dict[str, Any] | None = None  # what the agent was told
    reason: str | None = None
    human_wins: list[str] = field(default_factory=list)  # who got a 200 answering it
    told_final: int = 0  # answers refused because it had ended
    late_kept: list[str] = field(default_factory=list)  # who was told their late answer was kept


class Channel(Protocol):
    name: str
    must_be_zero: tuple[str, ...]  # of its verify() figures
    examples: dict[str, list[str]]  # figure → question ids, for the report

    async def start(self, stack: Stack) -> list[Component]: ...
    def target(self, rnd: random.Random) -> dict[str, Any] | None: ...
    async def answer(self, http: httpx.AsyncClient, asked: Asked) -> str:
        """Answer through the platform: "won", "told" (it had ended), "late" (kept as
        its late answer), or why it could not."""
        ...

    def owed(self, question: dict[str, Any]) -> bool: ...
    def verify(self, questions: dict[str, dict[str, Any]]) -> dict[str, int]: ...
    async def stop(self) -> None: ...


async def post_any(
    http: httpx.AsyncClient,
    urls: list[str],
    path: str,
    body: dict[str, Any],
    headers: dict[str, str],
    rnd: random.Random,
    tries: int = 40,
) -> httpx.Response | None:
    """POST through any live API process (a human taps again when a tap fails)."""
    for _ in range(tries):
        try:
            r = await http.post(rnd.choice(urls) + path, json=body, headers=headers)
        except httpx.TransportError:
            r = None
        if r is not None and r.status_code not in (502, 503, 504):
            return r
        await asyncio.sleep(0.25)
    return None


# The channel kit's settings for a chaos run: a killed worker's claims and leases are
# taken over within seconds, not the production minute.
KIT_ENV = {
    "ASKGATE_CONSUMER_CLAIM_IDLE_MS": "3000",
    "ASKGATE_CONSUMER_CLAIM_EVERY_S": "1",
    "ASKGATE_CONSUMER_BLOCK_MS": "500",
    "ASKGATE_DELIVERY_LEASE_MS": "5000",
    "ASKGATE_DELIVERY_BACKOFF_S": "0.1",
    "ASKGATE_DELIVERY_MAX_CLAIMS": "30",
}


class TextChannel:
    """The plain-text channel: `askgate-text` POSTs prompts to a local platform, and the
    human's reply comes back through POST /v1/sessions/{session}/messages."""

    name = "text"
    must_be_zero: tuple[str, ...] = ("prompts missing at the platform", "summaries missing")

    def __init__(self) -> None:
        self.platform: Receiver | None = None
        self.stack: Stack | None = None
        self.examples: dict[str, list[str]] = {}

    async def start(self, stack: Stack) -> list[Component]:
        self.stack = stack
        self.platform = Receiver("text", error_rate=0.05, seed=stack.seed, latency_s=0.3)
        workers = [
            Component(
                replica_name("text", i, stack.replicas),
                "askgate_text",
                {**stack.env, **KIT_ENV, "ASKGATE_TEXT_TIMEOUT_S": "2"},
                stack.log_dir,
            )
            for i in range(stack.replicas)
        ]
        for worker in workers:
            await asyncio.to_thread(worker.start)
        await asyncio.to_thread(wait_live, stack.env["REDIS_URL"], self.name, 60.0, stack.cluster)
        return workers

    def target(self, rnd: random.Random) -> dict[str, Any] | None:
        assert self.platform is not None
        return {"channel": "text", "url": self.platform.url} if rnd.random() < 0.5 else None

    async def answer(self, http: httpx.AsyncClient, asked: Asked) -> str:
        """Once the prompt reached the platform, the human replies '2' there."""
        assert self.platform is not None and self.stack is not None
        rnd = random.Random(asked.id)
        while (asked.id, "question") not in self.platform.taken:
            if time.time() > asked.expires_at + 1:
                return "not shown in time"
            await asyncio.sleep(0.1)
        r = await post_any(
            http,
            self.stack.api_urls,
            f"/v1/sessions/{asked.session}/messages",
            {"text": "2"},
            self.stack.headers,
            rnd,
        )
        if r is None:
            return "unreachable"
        body = r.json()
        if r.status_code == 200 and body.get("consumed"):
            return "late" if body.get("late") else "won"
        return "told"

    def owed(self, question: dict[str, Any]) -> bool:
        """A final question whose prompt the platform took but whose summary it has not
        yet: also when the worker was killed before it recorded the prompt delivered (it
        stays "sending"; once its lease has run out the worker sends it again, which the
        platform drops, and posts the summary)."""
        assert self.platform is not None
        sent = {
            h.headers.get("x-askgate-delivery") for h in self.platform.snapshot() if h.status == 200
        }
        qid = question["id"]
        return question["status"] != "pending" and any(
            d["target"]["channel"] == self.name
            and f"{qid}:{i}:question" in sent
            and f"{qid}:{i}:summary" not in sent
            for i, d in enumerate(question["deliveries"])
        )

    def verify(self, questions: dict[str, dict[str, Any]]) -> dict[str, int]:
        assert self.platform is not None
        hits = self.platform.snapshot()
        ok = Counter(h.headers.get("x-askgate-delivery", "") for h in hits if h.status == 200)
        figures = Counter[str]()

        def note(name: str, qid: str) -> None:
            figures[name] += 1
            self.examples.setdefault(name, []).append(qid)

        for qid, q in questions.items():
            for index, d in enumerate(q["deliveries"]):
                if d["target"]["channel"] != "text":
                    continue
                figures["targets"] += 1
                prompt = ok[f"{qid}:{index}:question"]
                summary = ok[f"{qid}:{index}:summary"]
                if d["status"] == "delivered":
                    figures["prompts delivered"] += 1
                    if prompt == 0:
                        note("prompts missing at the platform", qid)
                elif d["status"] == "failed":
                    figures["prompts failed"] += 1
                elif prompt == 0:  # ended before it was shown (a retry came too late)
                    figures["prompts not needed (ended first)"] += 1
                else:
                    note("prompts shown, not recorded as delivered", qid)
                if prompt and q["status"] != "pending" and summary == 0:
                    note("summaries missing", qid)
                figures["summaries posted twice"] += summary > 1
                # The platform is told to drop these (X-Askgate-Delivery): at least once.
                figures["prompts received twice with 200 (at least once)"] += prompt > 1
        return dict(figures)

    async def stop(self) -> None:
        if self.platform:
            self.platform.close()
