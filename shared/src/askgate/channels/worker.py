"""`ChannelWorker`: delivery and finalisation for every target of one channel, written
once. `handle(event)` is the stream consumer's handler.

- `question.created`: each of the question's own targets on this channel is claimed in
  the ledger, sent by the adapter, and confirmed with the platform's ref;
  `question.escalate` does the same for one escalation step's targets. Targets run
  concurrently (bounded by `concurrency`); a destination under a 429 waits alone
  (`RateGate`). A transient failure is retried here after a short back-off, a few times,
  before the stream entry is left for a later round; every counted try uses up one of
  `max_claims`, after which the target fails. A permanent failure fails the target at
  once; when no target can show the question, it ends as delivery_failed.
- `question.resolved`: every delivered prompt that is not yet a summary is finalised by
  the adapter, then marked in the ledger, so a replayed event edits nothing twice. So is
  one whose sender died between the platform call and its confirm, once that claim has
  run out (looked up under LOOK_UP, sent again for its ref under RESEND, where the
  platform drops the duplicate; under ASSUME_SHOWN there is nothing to edit). The
  question's extra messages (`track`: a prompt shown again, helper messages) go to the
  adapter's `finalise_message` once each.
- `question.remind`: every target of this channel whose prompt is shown gets reminder n
  once (claimed in the ledger before the platform call), replying to or linking its
  prompt; the reminder is an extra message, tidied when the question ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog

from askgate.channels.adapter import (
    ChannelAdapter,
    ExtraMessage,
    FindsPrompts,
    MessageFinaliser,
    SentPrompt,
)
from askgate.channels.inbound import PromptIndex, Selections
from askgate.channels.render import reminder_text
from askgate.domain.errors import PermanentError, PlatformError, ThrottledError, TransientError
from askgate.domain.events import (
    QuestionCreated,
    QuestionEscalate,
    QuestionRemind,
    QuestionResolved,
)
from askgate.domain.models import Target
from askgate.domain.status import DeliveryState
from askgate.domain.timeutil import now_ms
from askgate.runtime.consumer import Event, RetryLater
from askgate.store.ledger import StalePolicy
from askgate.store.record import Record
from askgate.store.store import Store

log = structlog.get_logger("askgate.channels")

# 429s in a row that one handling of a target absorbs before leaving it for later.
MAX_THROTTLES = 5
T = TypeVar("T")
# The kind of a reminder among a question's extra messages (`track`).
REMINDER = "reminder"


@dataclass(frozen=True)
class DeliveryPolicy:
    # A claim's lease: longer than one platform call can take (the adapter's timeout),
    # so a live sender is never taken for a dead one.
    lease_ms: int = 60_000
    # Counted tries of a target before it fails (a 429 does not count): with 3 tries a
    # round and a round per reclaim (30 s), a platform may be down for about 2 minutes.
    max_claims: int = 10
    # Back-off between tries within one handling; after the last, the entry waits for
    # the consumer's reclaim (a platform that stays down is not hammered).
    retry_delays_s: tuple[float, ...] = (0.5, 1.5)
    # A 429 asking for longer than this leaves the entry for a later round instead of
    # holding a handler.
    max_wait_s: float = 60.0
    # Platform calls in flight at once in this process.
    concurrency: int = 32


class RateGate:
    """Honours 429s per destination: a destination told to wait holds only its own calls."""

    def __init__(self) -> None:
        self._not_before: dict[str, float] = {}

    def wait_s(self, destination: str) -> float:
        until = self._not_before.get(destination)
        if until is None:
            return 0.0
        left = until - time.monotonic()
        if left <= 0:
            del self._not_before[destination]
            return 0.0
        return left

    def block(self, destination: str, seconds: float) -> None:
        until = time.monotonic() + max(0.0, seconds)
        self._not_before[destination] = max(until, self._not_before.get(destination, 0.0))


class Later(Exception):
    """A target left for a later round (the stream entry stays pending)."""


class ChannelWorker:
    def __init__(
        self,
        adapter: ChannelAdapter,
        store: Store,
        *,
        owner: str,
        policy: DeliveryPolicy | None = None,
        keep_s: int = 86_400,
    ) -> None:
        if adapter.stale_policy == StalePolicy.LOOK_UP and not isinstance(adapter, FindsPrompts):
            raise TypeError(f"{adapter.channel}: StalePolicy.LOOK_UP needs find_prompt()")
        self.adapter = adapter
        self.channel = adapter.channel
        self.store = store
        self.ledger = store.ledger
        self.owner = owner  # this process, in the claims it writes
        self.policy = policy or DeliveryPolicy()
        self.gate = RateGate()
        self.prompts = PromptIndex(store.redis, self.channel, keep_s)
        self.selections = Selections(store.redis, keep_s)
        self._slots = asyncio.Semaphore(self.policy.concurrency)

    async def handle(self, event: Event) -> None:
        payload = event.payload
        if isinstance(payload, QuestionCreated):
            await self.deliver(payload.question_id)
        elif isinstance(payload, QuestionEscalate):
            await self.deliver(payload.question_id, step=payload.step)
        elif isinstance(payload, QuestionRemind):
            await self.remind(payload)
        elif isinstance(payload, QuestionResolved):
            await self.finalise(payload.question_id)

    async def call_for_person(self, destination: str, fn: Callable[[], Awaitable[T]]) -> T | None:
        """A platform call made for a person (an ack, an ephemeral outcome, a reply to a
        message), outside the ledger: it waits out the destination's 429s through the
        same gate as deliveries, and a failure is logged, not raised (the answer it
        reports already counted). `fn` raises the kit's errors (ThrottledError, …)."""
        for _ in range(MAX_THROTTLES):
            wait = self.gate.wait_s(destination)
            if wait > self.policy.max_wait_s:
                break
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                return await fn()
            except ThrottledError as exc:
                self.gate.block(destination, exc.retry_after_s or 1.0)
            except PlatformError as exc:
                log.info(
                    "channel.call_failed", channel=self.channel, to=destination, error=exc.message
                )
                return None
        log.warning(
            "channel.call_dropped", channel=self.channel, to=destination, why="rate limited"
        )
        return None

    async def _turn(self, destination: str) -> None:
        """Wait out the destination's 429, or leave the work for later when it is long."""
        wait = self.gate.wait_s(destination)
        if wait > self.policy.max_wait_s:
            raise Later()
        if wait > 0:
            await asyncio.sleep(wait)

    # -- delivery ------------------------------------------------------------------------

    async def deliver(self, question_id: str, step: int = 0) -> None:
        """Show the question on this channel's targets of one escalation step (0: the
        ask's own targets)."""
        rec = await self.store.load(question_id)
        if rec is None or not rec.pending:
            return  # gone, or ended before it could be shown: nothing to show
        targets = rec.targets_of(self.channel, step)
        outcomes = await asyncio.gather(
            *(self._deliver(rec, i, tg) for i, tg in targets), return_exceptions=True
        )
        # The question may have ended while we were sending: its resolved event found
        # no prompt of ours yet, so make sure ours show the summary. Not when each was
        # confirmed while the question was still pending: an end after that finds them.
        if not outcomes or not all(out is True for out in outcomes):
            rec = await self.store.load(question_id)
            if rec is not None and not rec.pending:
                await self._finalise(rec)
        later = [
            i
            for (i, _), out in zip(targets, outcomes, strict=True)
            if isinstance(out, BaseException)
        ]
        for out in outcomes:
            if isinstance(out, BaseException) and not isinstance(out, Later):
                raise out
        if later:
            raise RetryLater(f"{question_id}: {self.channel} targets {later} later")

    async def _deliver(self, rec: Record, index: int, target: Target) -> bool:
        """Show one target's prompt, or settle it as failed. Raises Later to leave it.
        True when this call confirmed it shown while the question was still pending."""
        p = self.policy
        bound = log.bind(question_id=rec.id, tenant=rec.tenant, channel=self.channel, target=index)
        destination = self.adapter.destination(rec, target)
        tries = throttles = 0
        while True:
            await self._turn(destination)
            claim = await self.ledger.claim(
                rec,
                index,
                owner=self.owner,
                lease_ms=p.lease_ms,
                on_stale=self.adapter.stale_policy,
            )
            if claim.outcome == "busy":
                bound.info("prompt.claimed_elsewhere", lease_left_ms=claim.wait_ms)
                raise Later()
            if claim.outcome == "assumed":
                bound.warning("prompt.assumed_shown", why="the sending worker stopped")
                await self.prompts.remember(rec.tenant, destination, rec.id, index)
                return False
            if claim.outcome != "claimed":
                return False  # delivered, failed, or the question ended or is gone
            try:
                async with self._slots:
                    sent = await self._show(rec, index, target, claim.attempt)
            except ThrottledError as exc:
                self.gate.block(destination, exc.retry_after_s or 0.0)
                await self.ledger.release(
                    rec,
                    index,
                    owner=self.owner,
                    error=exc.message,
                    max_claims=p.max_claims,
                    counted=False,
                )
                throttles += 1
                bound.info("prompt.throttled", retry_after_s=exc.retry_after_s)
                if throttles >= MAX_THROTTLES:
                    raise Later() from exc
                continue
            except PermanentError as exc:
                done = await self.ledger.fail(rec, index, error=exc.message, owner=self.owner)
                bound.warning(
                    "prompt.failed", error=exc.message, question_ended=done.question_ended
                )
                return False
            except TransientError as exc:
                if exc.maybe_sent and self.adapter.stale_policy == StalePolicy.ASSUME_SHOWN:
                    # No idempotency key on this platform: a resend could show it twice.
                    await self.ledger.confirm(
                        rec, index, owner=self.owner, ref={"unconfirmed": True}
                    )
                    await self.prompts.remember(rec.tenant, destination, rec.id, index)
                    bound.warning("prompt.in_doubt", error=exc.message)
                    return False
                if exc.retry_after_s:
                    self.gate.block(destination, exc.retry_after_s or 0.0)
                settled = await self.ledger.release(
                    rec, index, owner=self.owner, error=exc.message, max_claims=p.max_claims
                )
                if settled.state == DeliveryState.FAILED:
                    bound.warning(
                        "prompt.failed",
                        error=exc.message,
                        tries=claim.attempt,
                        question_ended=settled.question_ended,
                    )
                    return False
                bound.info("prompt.retry", error=exc.message, tries=claim.attempt)
                if tries >= len(p.retry_delays_s):
                    raise Later() from exc
                await asyncio.sleep(p.retry_delays_s[tries])
                tries += 1
                continue
            except Exception:
                # A bug or an unexpected error: hand the claim back (counted), log it
                # through the consumer, and retry with the entry.
                await self.ledger.release(
                    rec, index, owner=self.owner, error="internal error", max_claims=p.max_claims
                )
                raise
            # Known at its destination before the ledger says delivered: a worker that
            # dies between the two leaves the delivery claimed (taken over, found again or
            # assumed shown) rather than delivered and unknown in the chat, where a plain
            # message or /pending would not find it.
            await self.prompts.remember(
                rec.tenant, sent.destination or destination, rec.id, index, sent.message
            )
            settled = await self.ledger.confirm(rec, index, owner=self.owner, ref=sent.ref)
            if not settled.ok:
                bound.warning("prompt.claim_lost", state=settled.state)
            bound.info("prompt.sent", attempt=claim.attempt)
            return settled.ok and settled.question_pending

    async def _show(self, rec: Record, index: int, target: Target, attempt: int) -> SentPrompt:
        """Send the prompt; where the platform can be asked, a try after the first (an
        earlier one may have reached it before a crash or a lost answer) looks first."""
        adapter = self.adapter
        if (
            attempt > 1
            and isinstance(adapter, FindsPrompts)
            and adapter.stale_policy == StalePolicy.LOOK_UP
        ):
            found = await adapter.find_prompt(rec, index, target)
            if found is not None:
                log.info(
                    "prompt.found",
                    question_id=rec.id,
                    channel=self.channel,
                    target=index,
                    attempt=attempt,
                )
                return found
        return await adapter.send_prompt(rec, index, target)

    # -- finalisation ----------------------------------------------------------------------

    async def finalise(self, question_id: str) -> None:
        rec = await self.store.load(question_id)
        if rec is not None and not rec.pending:
            await self._finalise(rec)

    async def _finalise(self, rec: Record) -> None:
        targets = rec.targets_of(self.channel)
        outcomes = await asyncio.gather(
            *(self._finalise_one(rec, i, tg) for i, tg in targets), return_exceptions=True
        )
        destinations = [self.adapter.destination(rec, tg) for _, tg in targets]
        left = await self.prompts.ended(rec.tenant, destinations, rec.id)
        await self.selections.clear(rec.id, [i for i, _ in targets])
        extras = await self._finalise_extras(rec, left)
        for out in [*outcomes, *extras]:
            if isinstance(out, Later):
                raise RetryLater(f"{rec.id}: {self.channel} summaries later")
            if isinstance(out, BaseException):
                raise out

    async def _finalise_one(self, rec: Record, index: int, target: Target) -> None:
        delivery = rec.delivery(index)
        if delivery.summary:
            return
        ref = delivery.ref
        if delivery.state == DeliveryState.SENDING:
            # Its sender stopped between the platform call and the confirm (killed, or
            # Redis gone), and nobody claims a target of an ended question again: the
            # prompt may be shown. Once the claim has run out, summarise it where the
            # platform can say (LOOK_UP) or a stray summary does no harm (RESEND).
            if delivery.lease_until_ms > now_ms():
                raise Later()  # the sender may still confirm, and finalise itself
            adapter = self.adapter
            if isinstance(adapter, FindsPrompts) and adapter.stale_policy == StalePolicy.LOOK_UP:
                found = await adapter.find_prompt(rec, index, target)
                if found is None:
                    return
                ref = found.ref
            elif adapter.stale_policy == StalePolicy.RESEND:
                # The platform drops a second send of the same prompt (Discord's nonce,
                # the text channel's X-Askgate-Delivery), so sending it again gives the
                # ref of the one it shows, to edit.
                sent: list[SentPrompt] = []

                async def resend() -> None:
                    sent.append(await adapter.send_prompt(rec, index, target))

                destination = adapter.destination(rec, target)
                if await self._settle_call(rec, index, destination, resend) != "done":
                    return
                ref = sent[0].ref
            else:
                return  # ASSUME_SHOWN: no message id to edit
        elif delivery.state != DeliveryState.DELIVERED:
            return
        await self.finalise_prompt(rec, index, target, ref)

    async def finalise_prompt(
        self, rec: Record, index: int, target: Target, ref: dict[str, Any]
    ) -> None:
        """Edit one shown prompt into its summary (also for inbound handlers that find
        an ended question's prompt); marked in the ledger once done."""
        outcome = await self._settle_call(
            rec,
            index,
            self.adapter.destination(rec, target),
            lambda: self.adapter.finalise(rec, index, target, ref),
        )
        if await self.ledger.mark_summary(rec, index, outcome):
            log.info(
                "prompt.finalised",
                question_id=rec.id,
                tenant=rec.tenant,
                channel=self.channel,
                target=index,
                status=rec.status.value,
                reason=rec.reason.value if rec.reason else None,
            )

    async def _settle_call(
        self,
        rec: Record,
        index: int,
        destination: str,
        fn: Callable[[], Awaitable[None]],
        what: str = "prompt.finalise_failed",
    ) -> str:
        """One finalising platform call, with the destination's 429s and quick retries:
        "done", or "failed" when the platform refuses for good; Later to try again on a
        later round."""
        p = self.policy
        tries = throttles = 0
        while True:
            await self._turn(destination)
            try:
                async with self._slots:
                    await fn()
            except ThrottledError as exc:
                self.gate.block(destination, exc.retry_after_s or 0.0)
                throttles += 1
                if throttles >= MAX_THROTTLES:
                    raise Later() from exc
                continue
            except TransientError as exc:
                if tries >= len(p.retry_delays_s):
                    raise Later() from exc
                await asyncio.sleep(p.retry_delays_s[tries])
                tries += 1
                continue
            except PermanentError as exc:
                # The message was deleted, the bot removed: nothing left to edit.
                log.warning(
                    what, question_id=rec.id, target=index, channel=self.channel, error=exc.message
                )
                return "failed"
            return "done"

    # -- reminders -----------------------------------------------------------------------

    async def remind(self, event: QuestionRemind) -> None:
        rec = await self.store.load(event.question_id)
        if rec is None or not rec.pending:
            return  # it ended: a reminder now would only confuse
        text = reminder_text(rec.locale, event.left_ms, final=event.final)
        shown = [
            (i, tg)
            for i, tg in rec.targets_of(self.channel)
            if rec.delivery(i).state == DeliveryState.DELIVERED
        ]
        outcomes = await asyncio.gather(
            *(self._remind(rec, i, tg, event.n, text) for i, tg in shown), return_exceptions=True
        )
        for out in outcomes:
            if isinstance(out, Later):
                raise RetryLater(f"{rec.id}: {self.channel} reminder {event.n} later")
            if isinstance(out, BaseException):
                raise out

    async def _remind(self, rec: Record, index: int, target: Target, n: int, text: str) -> None:
        """Reminder n to one shown prompt, once: claimed first, handed back when the
        platform is unreachable for now (Later), kept as failed when it refuses."""
        if not await self.ledger.claim_reminder(rec, index, n):
            return
        sent: list[SentPrompt | None] = []
        ref = rec.delivery(index).ref

        async def send() -> None:
            sent.append(await self.adapter.send_reminder(rec, index, target, ref, text, n))

        try:
            outcome = await self._settle_call(
                rec, index, self.adapter.destination(rec, target), send, "reminder.failed"
            )
        except BaseException:
            await self.ledger.reminder_done(rec, index, n, "")
            raise
        await self.ledger.reminder_done(rec, index, n, "sent" if outcome == "done" else "failed")
        log.info(
            "reminder.sent",
            question_id=rec.id,
            tenant=rec.tenant,
            channel=self.channel,
            target=index,
            n=n,
            outcome=outcome,
        )
        message = sent[0] if sent else None
        if message is not None and message.message is not None:
            await self.track(
                rec,
                index,
                message.destination or self.adapter.destination(rec, target),
                message.message,
                REMINDER,
            )

    # -- extra messages ------------------------------------------------------------------

    async def track(
        self, rec: Record, index: int, destination: str, message: str, kind: str
    ) -> None:
        """Remember a message sent about `rec` besides its prompt (the prompt shown
        again, a free-text request, a note), so that the question's end reaches it too
        (`MessageFinaliser`). A question that ended meanwhile has it finalised now: its
        resolved event may have been handled before the message existed."""
        await self.prompts.remember(rec.tenant, destination, rec.id, index, message, kind)
        now = await self.store.load(rec.id)
        if now is not None and not now.pending:
            for out in await self._finalise_extras(now, await self.prompts.extras(rec.id)):
                if isinstance(out, BaseException):
                    log.warning(
                        "message.finalise_later",
                        question_id=rec.id,
                        channel=self.channel,
                        error=repr(out),
                    )

    async def _finalise_extras(
        self, rec: Record, extras: list[ExtraMessage]
    ) -> list[BaseException | None]:
        return await asyncio.gather(
            *(self._finalise_extra(rec, e) for e in extras), return_exceptions=True
        )

    async def _finalise_extra(self, rec: Record, extra: ExtraMessage) -> None:
        if not await self.prompts.take(rec.id, extra):
            return  # another handler has it
        adapter = self.adapter
        if not isinstance(adapter, MessageFinaliser) or not 0 <= extra.index < len(rec.targets):
            return
        target = rec.targets[extra.index]
        try:
            outcome = await self._settle_call(
                rec,
                extra.index,
                extra.destination,
                lambda: adapter.finalise_message(rec, target, extra),
            )
        except BaseException:
            await self.prompts.put_back(rec.id, extra)
            raise
        log.info(
            "message.finalised",
            question_id=rec.id,
            tenant=rec.tenant,
            channel=self.channel,
            target=extra.index,
            kind=extra.kind,
            outcome=outcome,
        )
