"""What every chat worker needs to take a human's input: which question a message is
about (the prompt index, which also keeps the question's extra messages for its end),
platform retries turned into no-ops (dedupe), who may answer, partial picks, and one
mapping from an answer attempt to what the human is told.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator, Collection, Mapping
from dataclasses import dataclass
from typing import Literal

import orjson
from redis.asyncio import Redis
from redis.exceptions import RedisError

from askgate.channels.adapter import ExtraMessage
from askgate.domain.answers import ended_message
from askgate.domain.errors import AlreadyFinal, IncompleteAnswer, ValidationFailed
from askgate.domain.i18n import t
from askgate.domain.models import Responder
from askgate.domain.status import Reason
from askgate.domain.timeutil import now_ms
from askgate.store import keys
from askgate.store.record import Record
from askgate.store.store import Store

# Platforms give up redelivering an event well within a day.
DEDUPE_TTL_S = 86_400
# How long an event stays in hand after its handler stops renewing the mark (it died):
# then a copy of it is handled.
DEDUPE_LEASE_S = 10.0
IN_HAND = "hand:"
DONE = b"done"
# An ask has at most this many questions (models.AskInput): the parts of a selection.
MAX_QUESTIONS = 3


@dataclass(frozen=True)
class PromptRef:
    question_id: str
    index: int  # the target's index in the ask
    kind: str  # "prompt", or what the message asked for ("other": free text)


class PromptIndex:
    """Messages a worker sent → their question, and per destination the questions whose
    prompt is shown there (newest first), for a plain message that answers one."""

    def __init__(self, redis: Redis, channel: str, keep_s: int) -> None:
        self.redis = redis
        self.channel = channel
        self.keep_s = keep_s

    async def remember(
        self,
        tenant: str,
        destination: str,
        question_id: str,
        index: int,
        message: str | None = None,
        kind: str = "prompt",
    ) -> None:
        """A message of ours at `destination` (or, without `message`, a prompt shown
        there whose message id is not known). Any kind but "prompt" is also an extra
        message of the question, handed to the adapter when the question ends."""
        async with self.redis.pipeline(transaction=False) as pipe:
            if message is not None:
                pipe.set(
                    keys.prompt_ref(self.channel, tenant, destination, message),
                    f"{question_id} {index} {kind}",
                    ex=self.keep_s,
                )
            if kind == "prompt":
                dest = keys.destination_prompts(self.channel, tenant, destination)
                pipe.zadd(dest, {question_id: now_ms()})
                pipe.expire(dest, self.keep_s)
            elif message is not None:
                extras = keys.prompt_extras(self.channel, question_id)
                pipe.sadd(extras, _extra_member(ExtraMessage(index, kind, destination, message)))
                pipe.expire(extras, self.keep_s)
            await pipe.execute()

    async def lookup(self, tenant: str, destination: str, message: str) -> PromptRef | None:
        raw = await self.redis.get(keys.prompt_ref(self.channel, tenant, destination, message))
        if raw is None:
            return None
        qid, index, kind = raw.decode().split()
        return PromptRef(qid, int(index), kind)

    async def shown_at(self, tenant: str, destination: str, limit: int = 10) -> list[str]:
        """Question ids whose prompt is shown at `destination`, newest first."""
        dest = keys.destination_prompts(self.channel, tenant, destination)
        return [q.decode() for q in await self.redis.zrevrange(dest, 0, limit - 1)]

    async def forget(self, tenant: str, destination: str, question_id: str) -> None:
        await self.redis.zrem(
            keys.destination_prompts(self.channel, tenant, destination), question_id
        )

    async def extras(self, question_id: str) -> list[ExtraMessage]:
        """The question's extra messages not yet finalised, oldest message first."""
        return _extras(await self.redis.smembers(keys.prompt_extras(self.channel, question_id)))

    async def ended(
        self, tenant: str, destinations: Collection[str], question_id: str
    ) -> list[ExtraMessage]:
        """The question has ended: it leaves its destinations' prompts (forget, for each)
        and its extra messages not yet finalised are returned (extras), in one round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for destination in destinations:
                pipe.zrem(keys.destination_prompts(self.channel, tenant, destination), question_id)
            pipe.smembers(keys.prompt_extras(self.channel, question_id))
            replies = await pipe.execute()
        return _extras(replies[-1])

    async def take(self, question_id: str, extra: ExtraMessage) -> bool:
        """Claim an extra message for finalisation: True for exactly one caller."""
        return bool(
            await self.redis.srem(
                keys.prompt_extras(self.channel, question_id), _extra_member(extra)
            )
        )

    async def put_back(self, question_id: str, extra: ExtraMessage) -> None:
        """A claimed extra message that could not be finalised now: for a later round."""
        key = keys.prompt_extras(self.channel, question_id)
        await self.redis.sadd(key, _extra_member(extra))
        await self.redis.expire(key, self.keep_s)


def _extras(raw: Collection[bytes]) -> list[ExtraMessage]:
    found = [ExtraMessage(*orjson.loads(m)) for m in raw]
    return sorted(found, key=lambda e: (e.destination, _numeric(e.message)))


def _extra_member(extra: ExtraMessage) -> bytes:
    return orjson.dumps([extra.index, extra.kind, extra.destination, extra.message])


def _numeric(message: str) -> tuple[int, str]:
    return (int(message), "") if message.isdigit() else (0, message)


class InHandElsewhere(Exception):
    """An event another handler holds and still works on: try again later."""


class Dedupe:
    """Platforms retry (webhooks, events), and a poller fetches again what it did not
    confirm: each event id is handled once.

    The mark is written in two steps, so a handler killed mid-way loses nothing: first
    "in hand" with a short lease that the handler renews while it works, then "done" (kept
    for `DEDUPE_TTL_S`) when it has finished. A copy that arrives while the event is in
    hand waits for it: "done" makes it a duplicate; a lease that runs out (its handler
    died) hands the event to the copy; a handler that fails forgets the mark at once, so
    the platform's retry runs it."""

    def __init__(self, redis: Redis, channel: str, lease_s: float = DEDUPE_LEASE_S) -> None:
        self.redis = redis
        self.channel = channel
        self.lease_ms = max(1, int(lease_s * 1000))

    @contextlib.asynccontextmanager
    async def once(self, scope: str, event_id: str) -> AsyncIterator[bool]:
        """`async with dedupe.once(scope, id) as new:` — handle the event when `new`
        (it is marked in hand for the block, done after it, forgotten if it raises);
        False for a copy of one handled already. Raises InHandElsewhere when another
        live handler still holds it after twice the lease."""
        key = keys.inbound_seen(self.channel, scope, event_id)
        mine = f"{IN_HAND}{secrets.token_hex(8)}".encode()
        if not await self._take(key, mine):
            yield False
            return
        renew = asyncio.create_task(self._renew(key))
        try:
            yield True
        except BaseException:
            renew.cancel()
            with contextlib.suppress(RedisError, OSError):
                if await self.redis.get(key) == mine:
                    await self.redis.delete(key)
            raise
        renew.cancel()
        await self.redis.set(key, DONE, ex=DEDUPE_TTL_S)

    async def _take(self, key: str, mine: bytes) -> bool:
        """True once the mark is ours; False when the event is done."""
        deadline = time.monotonic() + 2 * self.lease_ms / 1000
        pause = 0.02
        while True:
            if await self.redis.set(key, mine, nx=True, px=self.lease_ms):
                return True
            held = await self.redis.get(key)
            if held is not None and not held.startswith(IN_HAND.encode()):
                return False  # done ("1" from before the lease existed counts as done)
            if held is not None and time.monotonic() > deadline:
                raise InHandElsewhere(f"{key} is still in hand elsewhere")
            if held is not None:
                await asyncio.sleep(pause)
                pause = min(pause * 2, self.lease_ms / 4000)

    async def _renew(self, key: str) -> None:
        while True:
            await asyncio.sleep(self.lease_ms / 3000)
            with contextlib.suppress(RedisError, OSError):
                await self.redis.pexpire(key, self.lease_ms)


class Selections:
    """Options picked on a prompt, where the platform keeps no state: ticks on a
    multi-select, or each question's pick on a prompt that carries several (`part`: the
    question's position in the ask)."""

    def __init__(self, redis: Redis, keep_s: int) -> None:
        self.redis = redis
        self.keep_s = keep_s

    async def toggle(self, question_id: str, index: int, option: int, part: int = 0) -> set[int]:
        key = keys.selection(question_id, index, part)
        if not await self.redis.srem(key, option):
            await self.redis.sadd(key, option)
        await self.redis.expire(key, self.keep_s)
        return await self.get(question_id, index, part)

    async def put(
        self, question_id: str, index: int, options: Collection[int], part: int = 0
    ) -> None:
        """The whole selection at once (a platform's native select reports all of it)."""
        key = keys.selection(question_id, index, part)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(key)
            if options:
                pipe.sadd(key, *options)
                pipe.expire(key, self.keep_s)
            await pipe.execute()

    async def get(self, question_id: str, index: int, part: int = 0) -> set[int]:
        return {int(x) for x in await self.redis.smembers(keys.selection(question_id, index, part))}

    async def all(self, question_id: str, index: int) -> dict[int, set[int]]:
        """Every question's picks on the prompt (questions without any are left out)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for part in range(MAX_QUESTIONS):
                pipe.smembers(keys.selection(question_id, index, part))
            found = await pipe.execute()
        return {part: {int(x) for x in raw} for part, raw in enumerate(found) if raw}

    async def clear(self, question_id: str, indexes: Collection[int]) -> None:
        if indexes:
            await self.redis.delete(
                *(
                    keys.selection(question_id, i, part)
                    for i in indexes
                    for part in range(MAX_QUESTIONS)
                )
            )


def may_answer(
    user_id: str,
    *,
    target_allowed: Collection[str] | None,
    tenant_allowed: Collection[str],
    private: bool,
    roles: Collection[str] = (),
    target_roles: Collection[str] | None = None,
    tenant_roles: Collection[str] = (),
) -> bool:
    """The target's own allow-list when it has one; else anyone in a private chat (the
    chat is the person) and the tenant's allow-list in a shared room. On platforms with
    roles (Discord), a role the person holds that is on the list counts like their id."""
    held = {str(r) for r in roles}
    if target_allowed is not None or target_roles is not None:
        return user_id in {str(x) for x in target_allowed or ()} or bool(
            held & {str(r) for r in target_roles or ()}
        )
    return (
        private
        or user_id in {str(x) for x in tenant_allowed}
        or bool(held & {str(r) for r in tenant_roles})
    )


# late: the question had ended without an answer; this one was kept as its late answer
# (the person is told the agent went on without it).
Kind = Literal["answered", "skipped", "ended", "late", "incomplete", "invalid", "refused"]


@dataclass(frozen=True)
class Outcome:
    """An answer attempt's result and what the human is told (in the ask's locale)."""

    kind: Kind
    text: str
    record: Record
    missing: tuple[str, ...] = ()

    @property
    def accepted(self) -> bool:
        """This input ended the question."""
        return self.kind in ("answered", "skipped")


def _final(exc: AlreadyFinal, rec: Record) -> Outcome:
    return Outcome("late" if exc.late else "ended", exc.message, rec)


class Answering:
    """Answer attempts from a chat, all through the store's one atomic transition. An
    answer to a question that ended without one is kept as its late answer (the result
    does not change) and the person is told so; `target` is the index of the target the
    input came through (kept for the audit)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def answer(
        self,
        rec: Record,
        answers: Mapping[str, list[str]],
        responder: Responder,
        target: int | None = None,
    ) -> Outcome:
        try:
            done = await self.store.apply_answer(rec, answers, responder, target=target)
        except AlreadyFinal as exc:
            return _final(exc, rec)
        except IncompleteAnswer as exc:
            # The API's message names the answers field; a person is told the questions.
            named = " / ".join(
                f"{q.header}: {q.question}" for q in rec.questions if q.id in exc.missing
            )
            return Outcome(
                "incomplete", t(rec.locale, "missing", questions=named), rec, tuple(exc.missing)
            )
        except ValidationFailed as exc:
            return Outcome("invalid", exc.message, rec)
        return Outcome("answered", t(rec.locale, "submitted"), done)

    async def skip(self, rec: Record, responder: Responder, target: int | None = None) -> Outcome:
        try:
            done = await self.store.end(
                rec.tenant, rec.id, Reason.SKIPPED, responder, target=target
            )
        except AlreadyFinal as exc:
            return Outcome("ended", exc.message, rec)
        return Outcome("skipped", t(rec.locale, "summary_skipped"), done)

    async def reply(
        self, rec: Record, text: str, responder: Responder, target: int | None = None
    ) -> Outcome:
        """A plain-text message read by the shared parser; a partial one gets the
        correction that names what is missing."""
        try:
            done, parsed = await self.store.apply_reply(rec, text, responder, target=target)
        except AlreadyFinal as exc:
            return _final(exc, rec)
        except ValidationFailed as exc:
            return Outcome("invalid", exc.message, rec)
        if parsed.kind == "incomplete":
            return Outcome(
                "incomplete", parsed.message or t(rec.locale, "ended"), rec, tuple(parsed.missing)
            )
        if parsed.kind == "skip":
            return Outcome("skipped", t(rec.locale, "summary_skipped"), done)
        return Outcome("answered", t(rec.locale, "submitted"), done)

    @staticmethod
    def ended(rec: Record) -> Outcome:
        """The question had already ended when the input arrived."""
        return Outcome("ended", ended_message(rec.status, rec.reason, rec.locale), rec)

    @staticmethod
    def refused(rec: Record) -> Outcome:
        return Outcome("refused", t(rec.locale, "not_allowed"), rec)
