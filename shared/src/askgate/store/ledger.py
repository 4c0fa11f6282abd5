"""The delivery ledger: one record per (question, target) of whether its prompt is shown.

A worker claims a target with a lease before it calls the platform (pending → sending),
then confirms it with the platform's message ref (→ delivered), hands it back for a
later try (→ pending, the claim counted) or fails it (→ failed; when every target of a
pending question failed, the question ends as no_answer/delivery_failed). A claim whose
lease ran out belongs to a worker that died mid-call: the next claimer takes it over and
sends again (first asking the platform whether it has the prompt, where it can be asked),
or counts the prompt as shown, by the adapter's `StalePolicy`.
Every change is one compare-and-set script (`scripts.CLAIM`, `SETTLE`, `MARK_SUMMARY`);
only the holder of a claim may settle it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

import orjson
from redis.asyncio import Redis
from redis.commands.core import AsyncScript

from askgate.domain.status import DeliveryState
from askgate.domain.timeutil import iso, now_ms
from askgate.settings import Settings
from askgate.store import followup_scripts, keys, scripts
from askgate.store.record import NO_ANSWER, Record


class StalePolicy(StrEnum):
    """What a claim left by a dead worker means for the next one."""

    RESEND = "resend"  # the platform dedupes, or a double prompt is harmless
    ASSUME_SHOWN = "assume"  # a resend could show the prompt twice: count it as shown
    # The platform can be asked whether it has the prompt (a message carrying the
    # question id): every try after the first looks first and sends only when there is
    # none (`FindsPrompts.find_prompt`). Taken over like RESEND in the claim script.
    LOOK_UP = "lookup"


ClaimOutcome = Literal["claimed", "busy", "assumed", "done", "ended", "missing"]


@dataclass(frozen=True)
class Claim:
    outcome: ClaimOutcome
    attempt: int = 0  # the claim's number (1 = first) when claimed
    wait_ms: int = 0  # when busy: how long the other claim's lease still runs
    state: str = ""  # when done: delivered or failed; when ended: the question's status


@dataclass(frozen=True)
class Settled:
    ok: bool  # False: the claim was not ours any more, or the state did not allow it
    state: str  # the target's state now (failed when a hand-back used the last try)
    question_ended: bool = False  # this failure ended the question (delivery_failed)
    # The question was still pending once this was settled: a confirmed prompt of a
    # question that ends later is found delivered by that end's finalisation.
    question_pending: bool = False


def watch_member(question_id: str, index: int, channel: str) -> str:
    """The undelivered-set entry of a target (see keys.undelivered)."""
    return f"{question_id}|{index}|{channel}"


def _doc(
    state: DeliveryState, error: str | None = None, ref: dict[str, Any] | None = None
) -> bytes:
    return orjson.dumps({"status": state.value, "error": error, "ref": ref, "at": iso(now_ms())})


class Ledger:
    def __init__(self, redis: Redis, settings: Settings) -> None:
        self.redis = redis
        self.keep_ms = settings.result_ttl_s * 1000
        self.maxlen = settings.stream_maxlen
        self._claim: AsyncScript = redis.register_script(scripts.CLAIM)
        self._settle: AsyncScript = redis.register_script(scripts.SETTLE)
        self._mark: AsyncScript = redis.register_script(scripts.MARK_SUMMARY)
        self._remind_claim: AsyncScript = redis.register_script(followup_scripts.REMINDER_CLAIM)
        self._remind_done: AsyncScript = redis.register_script(followup_scripts.REMINDER_DONE)

    @staticmethod
    def _keys(rec: Record) -> list[str]:
        shard = keys.shard_of(rec.id)
        return [
            keys.question(rec.id),
            keys.deliveries(rec.id),
            keys.undelivered(shard),
            keys.metrics(shard),
        ]

    async def claim(
        self,
        rec: Record,
        index: int,
        *,
        owner: str,
        lease_ms: int,
        on_stale: StalePolicy,
        now: int | None = None,
    ) -> Claim:
        """Claim delivery `index` for `owner` for `lease_ms` from `now` (ms since the
        epoch; the clock's when None): a lease that ran out is taken over per `on_stale`."""
        member = watch_member(rec.id, index, rec.targets[index].channel)
        assumed = _doc(DeliveryState.DELIVERED, ref={"unconfirmed": True})
        reply = await self._claim(
            keys=self._keys(rec),
            args=[
                index,
                now_ms() if now is None else now,
                lease_ms,
                owner,
                on_stale.value,
                _doc(DeliveryState.SENDING),
                assumed,
                member,
            ],
        )
        kind = reply[0].decode()
        if kind == "claimed":
            return Claim("claimed", attempt=int(reply[1]))
        if kind == "busy":
            return Claim("busy", wait_ms=int(reply[1]))
        if kind in ("done", "ended"):
            return Claim(kind, state=reply[1].decode())
        return Claim("assumed" if kind == "assumed" else "missing")

    async def _set(
        self,
        rec: Record,
        index: int,
        state: DeliveryState,
        doc: bytes,
        *,
        owner: str = "",
        expect: str = "",
        max_claims: int = 0,
        uncounted: bool = False,
        failed_doc: bytes = b"",
        error_class: str = "",
    ) -> Settled:
        member = watch_member(rec.id, index, rec.targets[index].channel)
        shard = keys.shard_of(rec.id)
        reply = await self._settle(
            keys=[
                keys.undelivered(shard),
                keys.metrics(shard),
                keys.due(shard),
                *rec.script_keys(),
            ],
            args=[
                rec.id,
                index,
                state.value,
                doc,
                owner,
                expect,
                member,
                now_ms(),
                self.keep_ms,
                self.maxlen,
                NO_ANSWER,
                max_claims,
                failed_doc,
                "1" if uncounted else "0",
                error_class,
            ],
        )
        if reply[0] != b"ok":
            current = reply[1].decode() if len(reply) > 1 else "missing"
            return Settled(False, current)
        return Settled(True, reply[1].decode(), reply[2] == b"1", reply[3] == b"pending")

    async def confirm(self, rec: Record, index: int, *, owner: str, ref: dict[str, Any]) -> Settled:
        """The platform has the prompt: sending → delivered with its message ref."""
        return await self._set(
            rec,
            index,
            DeliveryState.DELIVERED,
            _doc(DeliveryState.DELIVERED, ref=ref),
            owner=owner,
            expect=DeliveryState.SENDING,
        )

    async def release(
        self,
        rec: Record,
        index: int,
        *,
        owner: str,
        error: str,
        max_claims: int,
        counted: bool = True,
    ) -> Settled:
        """Not shown this time, may pass later: back to pending, or failed when this was
        claim number `max_claims` (a claim that does not count, such as a 429, never
        uses one up)."""
        return await self._set(
            rec,
            index,
            DeliveryState.PENDING,
            _doc(DeliveryState.PENDING, error=error),
            owner=owner,
            expect=DeliveryState.SENDING,
            max_claims=max_claims,
            uncounted=not counted,
            failed_doc=_doc(DeliveryState.FAILED, error=error),
            error_class="retries",
        )

    async def fail(self, rec: Record, index: int, *, error: str, owner: str = "") -> Settled:
        """Cannot be shown (a permanent platform error, no credentials)."""
        return await self._set(
            rec,
            index,
            DeliveryState.FAILED,
            _doc(DeliveryState.FAILED, error=error),
            owner=owner,
            error_class="refused",
        )

    async def update_ref(self, rec: Record, index: int, ref: dict[str, Any]) -> Settled:
        """A delivered prompt's ref completed later (e.g. an assumed prompt was tapped)."""
        return await self._set(
            rec,
            index,
            DeliveryState.DELIVERED,
            _doc(DeliveryState.DELIVERED, ref=ref),
            expect=DeliveryState.DELIVERED,
        )

    async def mark_summary(self, rec: Record, index: int, outcome: str = "done") -> bool:
        """Record that target `index`'s prompt now shows its summary; True the first time."""
        done = await self._mark(
            keys=[keys.question(rec.id), keys.deliveries(rec.id)], args=[index, outcome]
        )
        return bool(done)

    # -- reminders: each delivered target gets reminder n at most once ----------------

    async def claim_reminder(self, rec: Record, index: int, n: int) -> bool:
        """True for exactly one caller while the question is pending and the target's
        prompt is shown: that caller sends reminder n to it."""
        return bool(
            await self._remind_claim(
                keys=[keys.question(rec.id), keys.deliveries(rec.id)], args=[index, n]
            )
        )

    async def reminder_done(
        self, rec: Record, index: int, n: int, outcome: Literal["sent", "failed", ""]
    ) -> None:
        """Record reminder n's outcome ('' hands the claim back for a later try)."""
        await self._remind_done(
            keys=[
                keys.question(rec.id),
                keys.deliveries(rec.id),
                keys.metrics(keys.shard_of(rec.id)),
            ],
            args=[index, n, outcome, rec.targets[index].channel],
        )
