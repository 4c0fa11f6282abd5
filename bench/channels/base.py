"""The seam between the channel figure and one chat channel's fake platform.

Times are `time.monotonic()` (CLOCK_MONOTONIC): the same clock in every process on the
machine, so the fake's "prompt received" and the agent's "ask accepted" compare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from redis.asyncio import Redis


@dataclass
class Prompt:
    """A prompt the fake platform received: `conv` names the conversation it was sent
    to (the same string `ChannelSpec.conv(i)` gives for ask i), `t` when it arrived."""

    conv: str
    t: float
    handle: Any  # the platform's own reference, handed back to Platform.answer


@dataclass(frozen=True)
class Worker:
    """Where the channel's worker takes the platform's calls (a click, an interaction),
    for channels whose platform calls the worker; chosen before either process starts."""

    port: int
    tenant: str


class Hooks(Protocol):
    def ready(self) -> None:
        """The worker is connected (e.g. its first long poll arrived)."""

    def prompt(self, prompt: Prompt) -> None:
        """A question's prompt arrived."""

    def summary(self, conv: str, t: float) -> None:
        """A prompt was turned into its summary (the question ended)."""

    def answered(self, conv: str, t: float) -> None:
        """The human's answer to the prompt of `conv` was handed to the platform at `t`."""


class Platform(Protocol):
    """The fake platform, run in its own process (`bench/channels/platform.py`)."""

    async def start(self) -> str:
        """Serve; returns the base URL the worker is pointed at."""

    async def stop(self) -> None: ...

    def answer(self, prompt: Prompt) -> None:
        """The human answers the prompt with its first option, through the platform (a
        button tap, a reply), and tells the hooks when it was sent (`answered`)."""


class ChannelSpec(Protocol):
    name: str  # the ask target's `channel`

    def conv(self, i: int) -> str:
        """Conversation of ask i: every ask gets its own (a chat, a thread)."""

    def target(self, i: int) -> dict[str, Any]:
        """The ask's target for conversation i."""

    async def configure(self, redis: Redis, tenant_id: str) -> None:
        """The tenant's channel credentials, before the worker starts."""

    def worker(self, base: str, worker: Worker) -> tuple[list[str], dict[str, str]]:
        """argv and environment of the channel's real worker process against `base`,
        serving the platform's calls on `worker.port` where the channel has any."""

    def platform(self, hooks: Hooks, worker: Worker) -> Platform:
        """The fake (only built in the platform process); it calls `worker` to answer."""
