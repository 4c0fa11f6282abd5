"""Interactions → answers: button clicks, selects, the "Other…" modal.

`handle` gets an interaction whose signature service.py has already checked and returns
the response Discord shows (within its 3 s): the clicker's outcome as an ephemeral
message, a select's picks kept on the prompt (type 7), or the modal (type 9, only as the
first response). The prompt itself becomes its summary through the kit's finalisation,
whichever channel ended the question. Each interaction id is handled once (the kit's
dedupe): a replayed one changes nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from askgate.channels import Answering, ChannelWorker, Dedupe, Outcome, may_answer
from askgate.domain.i18n import t
from askgate.domain.models import DiscordTarget, Responder
from askgate.domain.status import DeliveryState
from askgate.store.record import Record
from askgate.store.store import Store

from askgate_discord import render
from askgate_discord.client import CHANNEL, DiscordApp
from askgate_discord.render import Tap

log = structlog.get_logger("askgate.discord")

PING, COMPONENT, MODAL_SUBMIT = 1, 3, 5


def person(body: dict[str, Any]) -> tuple[dict[str, Any], list[str], bool]:
    """Who clicked, the roles they hold, and whether it is a DM (no guild)."""
    member = body.get("member")
    if isinstance(member, dict):
        return dict(member.get("user") or {}), [str(r) for r in member.get("roles") or []], False
    return dict(body.get("user") or {}), [], True


def allowed(
    app: DiscordApp,
    target: DiscordTarget,
    channel_id: str,
    user_id: str,
    roles: list[str],
    private: bool,
) -> bool:
    """Only the target's own channel counts; then the kit's rule, with roles."""
    if channel_id != target.channel_id:
        return False
    return may_answer(
        user_id,
        target_allowed=target.allowed_user_ids,
        tenant_allowed=app.allowed_user_ids,
        private=private,
        roles=roles,
        target_roles=target.allowed_role_ids,
        tenant_roles=app.allowed_role_ids,
    )


def _target(rec: Record, index: int) -> DiscordTarget | None:
    if not 0 <= index < len(rec.targets):
        return None
    target = rec.targets[index]
    return target if isinstance(target, DiscordTarget) else None


def _modal_values(data: dict[str, Any]) -> dict[str, str]:
    """The modal's text inputs by custom_id (rows of one input each)."""
    out: dict[str, str] = {}
    for row in data.get("components") or []:
        for comp in row.get("components") or []:
            out[str(comp.get("custom_id"))] = str(comp.get("value") or "").strip()
    return out


class Inbound:
    def __init__(self, store: Store, worker: ChannelWorker) -> None:
        self.store = store
        self.worker = worker
        self.selections = worker.selections
        self.answering = Answering(store)
        self.dedupe = Dedupe(store.redis, CHANNEL)
        self._later: set[asyncio.Task[None]] = set()

    async def handle(self, app: DiscordApp, body: dict[str, Any]) -> dict[str, Any]:
        kind = body.get("type")
        if kind == PING:
            return {"type": render.PONG}
        raw = body.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        tap = Tap.unpack(str(data.get("custom_id") or ""))
        if kind not in (COMPONENT, MODAL_SUBMIT) or tap is None:
            return render.ephemeral(t("en", "no_pending"))
        scope, interaction_id = app.application_id, str(body.get("id") or "")
        async with self.dedupe.once(scope, interaction_id) as new:
            if not new:
                log.info("interaction.duplicate", tenant=app.tenant, interaction_id=interaction_id)
                return {"type": render.DEFERRED_UPDATE}
            return await self._handle(app, body, data, tap)

    async def _handle(
        self, app: DiscordApp, body: dict[str, Any], data: dict[str, Any], tap: Tap
    ) -> dict[str, Any]:
        rec = await self.store.load(tap.q)
        target = _target(rec, tap.t) if rec is not None else None
        if rec is None or target is None or rec.tenant != app.tenant:
            return render.ephemeral(t(rec.locale if rec else "en", "expired"))
        user, roles, private = person(body)
        user_id = str(user.get("id") or "")
        channel_id = str(body.get("channel_id") or (body.get("channel") or {}).get("id") or "")
        if not allowed(app, target, channel_id, user_id, roles, private):
            log.info(
                "interaction.refused", question_id=rec.id, user_id=user_id, channel_id=channel_id
            )
            return render.ephemeral(Answering.refused(rec).text)
        act, qs = tap.a, rec.questions
        if not rec.pending:
            self._finalise_later(rec, tap.t, target)
            # Only an answer may be kept as late: an option, one question's select, the
            # form's text.
            answer = (
                act[:1] == "o"
                or (act[:1] == "m" and len(qs) == 1)
                or (body.get("type") == MODAL_SUBMIT and act == "f")
            )
            if not answer:
                return render.ephemeral(Answering.ended(rec).text)
        who = Responder(
            channel=CHANNEL, user_id=user_id, name=user.get("global_name") or user.get("username")
        )
        number = int(act[1:]) if act[1:].isdigit() else -1
        outcome: Outcome | None = None
        if body.get("type") == MODAL_SUBMIT and act == "f":
            outcome = await self._free_text(rec, tap.t, _modal_values(data), who)
        elif act == "x":
            return render.modal(rec, tap.t)
        elif act == "s":
            outcome = await self.answering.skip(rec, who, tap.t)
        elif act[:1] == "o" and len(qs) == 1 and 0 <= number < len(qs[0].options):
            outcome = await self.answering.answer(
                rec, {qs[0].id: [qs[0].options[number].label]}, who, tap.t
            )
        elif act[:1] == "m" and 0 <= number < len(qs):
            values = {int(v) for v in data.get("values") or [] if str(v).isdigit()}
            picks = sorted(i for i in values if i < len(qs[number].options))  # declared order
            if len(qs) == 1:
                labels = [qs[0].options[i].label for i in picks]
                outcome = await self.answering.answer(rec, {qs[0].id: labels}, who, tap.t)
            else:
                return await self._pick(rec, tap.t, number, picks)
        elif act == "d":
            outcome = await self._free_text(rec, tap.t, {}, who)
        if outcome is None:
            return render.ephemeral(t(rec.locale, "expired"))
        log.info(
            "question.interaction",
            question_id=rec.id,
            action=act,
            outcome=outcome.kind,
            user_id=user_id,
        )
        return render.ephemeral(outcome.text)

    async def _pick(self, rec: Record, index: int, part: int, picks: list[int]) -> dict[str, Any]:
        """One question's select on a several-question prompt: kept until Submit, and
        shown as picked to everyone who sees the prompt."""
        await self.selections.put(rec.id, index, picks, part)
        picked = {k: await self.selections.get(rec.id, index, k) for k in range(len(rec.questions))}
        return {
            "type": render.UPDATE_MESSAGE,
            "data": {
                "components": render.components(rec.questions, rec.locale, rec.id, index, picked)
            },
        }

    async def _free_text(
        self, rec: Record, index: int, typed: dict[str, str], who: Responder
    ) -> Outcome:
        """Submit (and the modal's submit): per question, what was typed for it, else
        what its select picked; a question with neither is named in the correction."""
        answers: dict[str, list[str]] = {}
        for k, q in enumerate(rec.questions):
            if typed.get(str(k)):
                answers[q.id] = [typed[str(k)]]
            elif len(rec.questions) > 1:
                picks = await self.selections.get(rec.id, index, k)
                answers[q.id] = [o.label for i, o in enumerate(q.options) if i in picks]
        return await self.answering.answer(rec, answers, who, index)

    def _finalise_later(self, rec: Record, index: int, target: DiscordTarget) -> None:
        """A click on an ended question's prompt that still shows its components: edit it
        after responding (the response must not wait for Discord)."""
        delivery = rec.delivery(index)
        if (
            delivery.state != DeliveryState.DELIVERED
            or delivery.summary
            or not delivery.ref.get("message_id")
        ):
            return
        task = asyncio.create_task(self._finalise(rec, index, target, delivery.ref))
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def _finalise(
        self, rec: Record, index: int, target: DiscordTarget, ref: dict[str, Any]
    ) -> None:
        try:
            await self.worker.finalise_prompt(rec, index, target, ref)
        except Exception as exc:  # the resolved event's handling tries again
            log.warning("prompt.finalise_later_failed", question_id=rec.id, error=str(exc))

    async def close(self) -> None:
        for task in list(self._later):
            task.cancel()
        await asyncio.gather(*self._later, return_exceptions=True)
