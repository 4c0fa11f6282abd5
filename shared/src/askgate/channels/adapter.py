"""The seam between the kit and a platform: what a channel worker implements.

A worker says how to show a prompt, how to turn a shown prompt into its summary, and
which destination (chat, channel) a target names, for rate limits. Everything else,
claiming, retries, crash recovery, finalising every prompt once, is the kit's
(`ChannelWorker`). Adapters raise `askgate.domain.errors.PermanentError` (the target fails),
`TransientError` (tried again with back-off) or `ThrottledError` (a 429: the
destination waits) and nothing else for a platform's answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from askgate.domain.models import Target
from askgate.store.ledger import StalePolicy
from askgate.store.record import Record


@dataclass(frozen=True)
class SentPrompt:
    """What the platform said when it took a prompt.

    `ref` is kept in the ledger (shown on the resource, given back to `finalise`).
    With `message` (the platform's message id), replies to the message are found by
    the kit's prompt index; `destination` is where the platform says it put it, when
    that is spelled differently from the target's (a chat's @name vs its id)."""

    ref: dict[str, Any] = field(default_factory=dict)
    message: str | None = None
    destination: str | None = None


@dataclass(frozen=True)
class ExtraMessage:
    """A message a worker sent about a question besides its prompt, tracked by the
    prompt index (`ChannelWorker.track`): `kind` is the worker's word for it ("copy": the
    prompt shown again; "other": a free-text request; "note": a reply to the person)."""

    index: int  # the target's index in the ask
    kind: str
    destination: str
    message: str


class ChannelAdapter(Protocol):
    channel: str
    # What a claim left by a worker that died mid-send means (see ledger.StalePolicy).
    stale_policy: StalePolicy

    def destination(self, rec: Record, target: Target) -> str:
        """Where the target shows prompts (a chat or channel id): the rate-limit key."""
        ...

    async def send_prompt(self, rec: Record, index: int, target: Target) -> SentPrompt:
        """Show the question at the target."""
        ...

    async def finalise(self, rec: Record, index: int, target: Target, ref: dict[str, Any]) -> None:
        """Turn the shown prompt into its summary (`rec` is final); idempotent."""
        ...

    async def send_reminder(
        self, rec: Record, index: int, target: Target, ref: dict[str, Any], text: str, n: int
    ) -> SentPrompt | None:
        """Send reminder `n`, `text` (a short reminder in the ask's locale), at the
        target, replying to or linking the prompt whose ledger ref is `ref`. Returns the
        message (its id and where it is) when the platform gives one, so it can be tidied
        at the end."""
        ...


@runtime_checkable
class MessageFinaliser(Protocol):
    """An adapter that also tidies its extra messages when the question ends: a copy of
    the prompt becomes the summary too, a helper message goes. Optional: without it the
    kit only forgets them."""

    async def finalise_message(self, rec: Record, target: Target, extra: ExtraMessage) -> None:
        """`rec` is final; idempotent (a message already gone is not an error)."""
        ...


@runtime_checkable
class FindsPrompts(Protocol):
    """An adapter whose platform can say whether it already shows a prompt
    (`StalePolicy.LOOK_UP`): a retry after a worker died mid-send or a call that may have
    reached the platform finds the first prompt instead of posting a second."""

    async def find_prompt(self, rec: Record, index: int, target: Target) -> SentPrompt | None:
        """The prompt an earlier try of this target showed, or None when there is none."""
        ...
