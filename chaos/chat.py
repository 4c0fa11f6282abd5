"""What the Telegram, Slack and Discord plug-ins share: the channel's fake platform runs in
the driver's event loop, the real worker runs as a process (a kill -9 victim) against
it, the human taps option 2 ("Production") on the prompt the platform shows, and
afterwards every prompt is counted on the platform.

A plug-in says how to start its fake, what the worker's settings and the tenant's
credentials are, where a target points, how to find a question's prompts on the
platform, whether one was turned into its summary, and how a tap is sent and what the
person was shown for it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from typing import Any

import httpx
from askgate.dev.redis_server import free_port
from askgate.domain.i18n import t
from askgate.store.conn import connect
from askgate.store.tenants import set_channel_config

from chaos.channels import KIT_ENV, Asked, Stack, replica_name
from chaos.processes import Component, wait_live

# A person whose tap shows nothing for this long taps again (the worker may be down).
TAP_PATIENCE_S = 6.0
TAPS_MAX = 12
SUBMITTED = t("en", "submitted")
LATE = {t("en", "late_expired"), t("en", "late_ended")}


def outcome(told: list[str]) -> str:
    """What the person's taps came to, from everything they were shown."""
    if SUBMITTED in told:
        return "won"
    if LATE & set(told):
        return "late"
    return "told"


class ChatChannel:
    """One chat platform under chaos (subclasses: telegram.py, slack.py, discord.py)."""

    name = ""
    module = ""  # the worker's `python -m` module
    rooms: tuple[str, ...] = ()  # where targets point
    must_be_zero: tuple[str, ...] = (
        "prompts posted twice",
        "prompts missing at the platform",
        "summaries missing",
    )

    def __init__(self) -> None:
        self.stack: Stack | None = None
        self.worker_ports: list[int] = []  # each replica's HTTP port, when it listens
        self.taps: Counter[str] = Counter()
        self.examples: dict[str, list[str]] = {}

    # -- what a plug-in says -------------------------------------------------------------

    async def open_platform(self) -> None:
        raise NotImplementedError

    async def close_platform(self) -> None:
        raise NotImplementedError

    def worker_env(self, port: int) -> dict[str, str]:
        """A replica's settings; `port` is free for it to listen on."""
        raise NotImplementedError

    def credentials(self) -> dict[str, str]:
        raise NotImplementedError

    def address(self, room: str) -> dict[str, Any]:
        raise NotImplementedError

    def prompts(self, qid: str, index: int) -> list[Any]:
        """The question's prompts for target `index` as the platform holds them."""
        raise NotImplementedError

    def summarised(self, prompt: Any) -> bool:
        raise NotImplementedError

    def can_summarise(self, delivery: dict[str, Any]) -> bool:
        """The worker knows which message to edit (Telegram may not: see telegram.py)."""
        return True

    async def tap(self, http: httpx.AsyncClient, prompt: Any, asked: Asked, index: int) -> Any:
        """Tap option 2 on the prompt; a handle for `told`, or None when the tap did not
        get through (the person tries again)."""
        raise NotImplementedError

    def told(self, handles: list[Any]) -> list[str]:
        """What the person was shown for their taps so far."""
        raise NotImplementedError

    # -- the driver's side ---------------------------------------------------------------

    async def start(self, stack: Stack) -> list[Component]:
        self.stack = stack
        await self.open_platform()
        client = connect(stack.env["REDIS_URL"], cluster=stack.cluster)
        try:
            await set_channel_config(client, stack.tenant, self.name, self.credentials())
        finally:
            await client.aclose()
        self.worker_ports = [free_port() for _ in range(stack.replicas)]
        workers = [
            Component(
                replica_name(self.name, i, stack.replicas),
                self.module,
                {**stack.env, **KIT_ENV, **self.worker_env(port)},
                stack.log_dir,
            )
            for i, port in enumerate(self.worker_ports)
        ]
        for worker in workers:
            await asyncio.to_thread(worker.start)
        await asyncio.to_thread(wait_live, stack.env["REDIS_URL"], self.name, 60.0, stack.cluster)
        return workers

    async def post_worker(
        self, http: httpx.AsyncClient, path: str, content: bytes, headers: dict[str, str]
    ) -> httpx.Response | None:
        """POST to the workers as a load balancer would: to a replica that is up (in a
        random order); None when none answered."""
        for port in random.sample(self.worker_ports, len(self.worker_ports)):
            try:
                return await http.post(
                    f"http://127.0.0.1:{port}{path}", content=content, headers=headers
                )
            except httpx.TransportError:
                continue
        return None

    def target(self, rnd: random.Random) -> dict[str, Any] | None:
        if rnd.random() >= 0.5:
            return None
        return {"channel": self.name, **self.address(rnd.choice(self.rooms))}

    def index(self, asked: Asked) -> int:
        return next(i for i, tg in enumerate(asked.targets) if tg["channel"] == self.name)

    async def answer(self, http: httpx.AsyncClient, asked: Asked) -> str:
        """Once the prompt shows, tap option 2; tap again while nothing is shown back."""
        index = self.index(asked)
        while not (found := self.prompts(asked.id, index)):
            if time.time() > asked.expires_at + 1:
                return "not shown in time"
            await asyncio.sleep(0.1)
        handles: list[Any] = []
        for _ in range(TAPS_MAX):
            if self.summarised(found[0]):
                return "saw the summary (it had ended)"
            handle = await self.tap(http, found[0], asked, index)
            if handle is not None:
                handles.append(handle)
            deadline = time.monotonic() + TAP_PATIENCE_S
            while time.monotonic() < deadline:
                if told := self.told(handles):
                    return outcome(told)
                await asyncio.sleep(0.1)
            self.taps["tapped again (nothing shown back)"] += 1
        return "never told"

    def owed(self, question: dict[str, Any]) -> bool:
        """A final question with a shown prompt not yet turned into its summary."""
        if question["status"] == "pending":
            return False
        for index, d in enumerate(question["deliveries"]):
            if d["target"]["channel"] != self.name or not self.can_summarise(d):
                continue
            if any(not self.summarised(p) for p in self.prompts(question["id"], index)):
                return True
        return False

    def verify(self, questions: dict[str, dict[str, Any]]) -> dict[str, int]:
        figures = Counter[str](self.taps)

        def note(name: str, qid: str) -> None:
            figures[name] += 1
            self.examples.setdefault(name, []).append(qid)

        for qid, q in questions.items():
            for index, d in enumerate(q["deliveries"]):
                if d["target"]["channel"] != self.name:
                    continue
                figures["targets"] += 1
                shown = self.prompts(qid, index)
                if len(shown) > 1:
                    note("prompts posted twice", qid)
                if d["status"] == "delivered":
                    figures["prompts delivered"] += 1
                    if not shown:
                        note(self.missing_figure(d), qid)
                elif d["status"] == "failed":
                    figures["prompts failed"] += 1
                elif not shown:
                    figures["prompts not needed (ended first)"] += 1
                else:
                    note("prompts shown, not recorded as delivered", qid)
                if q["status"] != "pending" and shown:
                    if not self.can_summarise(d):
                        note("prompts left as shown (message id never learnt)", qid)
                    elif not all(self.summarised(p) for p in shown):
                        note("summaries missing", qid)
        return dict(figures)

    def missing_figure(self, delivery: dict[str, Any]) -> str:
        return "prompts missing at the platform"

    async def stop(self) -> None:
        await self.close_platform()
