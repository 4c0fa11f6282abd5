"""Slack input → answers: clicks (block_actions), the "Other…" modal (view_submission), and
messages (a reply in a prompt's thread, or a direct message's next message).

Both transports (service.py: the signed HTTP endpoints, or Socket Mode) hand payloads
here. The answer itself is one Redis transition, done before Slack is acknowledged (so a
failure makes Slack retry); what Slack must show the person (an ephemeral outcome, a
thread reply, the modal) is sent after the ack (`later`). Events are handled once per
event_id and clicks once per trigger_id (the kit's Dedupe); a double click is a second
interaction, told that the question was already answered. What the person is told comes
from the kit's `Answering`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Coroutine
from typing import Any

import structlog
from askgate.channels import (
    Answering,
    ChannelWorker,
    Dedupe,
    Outcome,
    PlatformError,
    PromptRef,
    may_answer,
)
from askgate.domain.i18n import t
from askgate.domain.models import Responder, SlackTarget
from askgate.domain.status import DeliveryState
from askgate.store.record import Record
from askgate.store.store import Store

from askgate_slack import render
from askgate_slack.adapter import EVENT_TYPE, is_dm, is_user
from askgate_slack.client import CHANNEL, Call, Workspace, Workspaces, call

log = structlog.get_logger("askgate.slack")

Reply = dict[str, Any] | None  # a view_submission's response body (None: close the modal)


def unescape(text: str) -> str:
    """Slack sends &, < and > in message text as entities."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def modal_error(text: str) -> dict[str, Any]:
    return {"response_action": "errors", "errors": {render.OTHER_BLOCK: text}}


class Inbound:
    def __init__(self, store: Store, workspaces: Workspaces, worker: ChannelWorker) -> None:
        self.store = store
        self.workspaces = workspaces
        self.worker = worker
        self.prompts = worker.prompts
        # A thread reply whose parent is not a recorded prompt is looked up in Slack only
        # when the parent is this young (its ts is its time): a prompt's post and its
        # confirm, or a dead sender's lease running out and the prompt found again, fall
        # within it; older threads are not ours.
        self.unrecorded_window_s = (
            worker.policy.lease_ms / 1000 + 2 * workspaces.settings.slack_request_timeout_s
        )
        self.answering = Answering(store)
        self.dedupe = Dedupe(store.redis, CHANNEL)
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- after the ack -------------------------------------------------------------------

    def later(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self, timeout_s: float) -> None:
        """Let what is being sent to people finish (bounded), then cancel the rest."""
        if self._tasks:
            _, late = await asyncio.wait(set(self._tasks), timeout=timeout_s)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)

    async def _call(self, gate_key: str, fn: Call) -> None:
        """A call made for a person, through the kit's rate gate (see call_for_person)."""
        await self.worker.call_for_person(gate_key, lambda: call(fn))

    def _tell(
        self, ws: Workspace, channel: str, user: str, text: str, thread_ts: str | None = None
    ) -> None:
        """An ephemeral message in the channel that only `user` sees."""
        self.later(
            self._call(
                channel,
                lambda: ws.client.chat_postEphemeral(
                    channel=channel, user=user, text=text, thread_ts=thread_ts
                ),
            )
        )

    def _say(self, ws: Workspace, channel: str, text: str, thread_ts: str | None) -> None:
        self.later(
            self._call(
                channel,
                lambda: ws.client.chat_postMessage(channel=channel, text=text, thread_ts=thread_ts),
            )
        )

    # -- shared checks -------------------------------------------------------------------

    async def _load(self, ws: Workspace, qid: Any, index: Any) -> tuple[Record, SlackTarget] | None:
        rec = await self.store.load(str(qid)) if qid else None
        if (
            rec is None
            or rec.tenant != ws.tenant
            or not isinstance(index, int)
            or not 0 <= index < len(rec.targets)
        ):
            return None
        target = rec.targets[index]
        return (rec, target) if isinstance(target, SlackTarget) else None

    @staticmethod
    def _allowed(
        ws: Workspace, rec: Record, index: int, target: SlackTarget, channel: str, user: str
    ) -> bool:
        """Only the target's own conversation counts; then the kit's rule (the target's
        allow-list, else anyone in a DM and the tenant's list in a channel)."""
        shown = rec.delivery(index).ref.get("channel")
        here = channel in (target.channel_id, shown) or (
            is_user(target.channel_id) and is_dm(channel)
        )
        return here and may_answer(
            user,
            target_allowed=target.allowed_user_ids,
            tenant_allowed=ws.allowed_user_ids,
            private=is_dm(channel),
        )

    async def _learn(self, rec: Record, index: int, channel: str, ts: str) -> Record:
        """A prompt counted as shown without its ts was clicked: record where it is, so
        it can be edited into its summary."""
        delivery = rec.delivery(index)
        if delivery.state != DeliveryState.DELIVERED or delivery.ref.get("ts"):
            return rec
        ref = {**delivery.ref, "channel": channel, "ts": ts, "unconfirmed": False}
        await self.store.ledger.update_ref(rec, index, ref)
        await self.prompts.remember(rec.tenant, channel, rec.id, index, ts)
        return await self.store.load(rec.id) or rec

    def _ended(self, ws: Workspace, rec: Record, index: int, target: SlackTarget) -> Outcome:
        """Input on an ended question: make sure its prompt shows the summary."""
        ref = rec.delivery(index).ref
        if ref.get("ts"):
            self.later(self.worker.finalise_prompt(rec, index, target, ref))
        return Answering.ended(rec)

    # -- interactivity -------------------------------------------------------------------

    async def interaction(self, ws: Workspace, payload: dict[str, Any]) -> Reply:
        kind = payload.get("type")
        if kind == "view_submission":
            if (payload.get("view") or {}).get("callback_id") == render.OTHER_CALLBACK:
                return await self._other(ws, payload)
            return None
        if kind != "block_actions":
            return None
        trigger = f"trigger:{payload.get('trigger_id') or ''}"
        if not payload.get("trigger_id"):
            await self._click(ws, payload)
            return None
        async with self.dedupe.once(ws.tenant, trigger) as new:
            if not new:
                log.info("interaction.duplicate", tenant=ws.tenant, trigger=trigger)
                return None
            await self._click(ws, payload)
        return None

    async def _click(self, ws: Workspace, payload: dict[str, Any]) -> None:
        action = (payload.get("actions") or [{}])[0]
        act = render.Act.unpack(str(action.get("action_id") or ""))
        if act is None or act.a.startswith("q"):
            return  # not ours, or a tick: Slack keeps it in the message until Submit
        user = str((payload.get("user") or {}).get("id") or "")
        container = payload.get("container") or {}
        channel = str((payload.get("channel") or {}).get("id") or container.get("channel_id") or "")
        found = await self._load(ws, act.q, act.t)
        if found is None:
            self._tell(ws, channel, user, t("en", "expired"))
            return
        rec, target = found
        if not self._allowed(ws, rec, act.t, target, channel, user):
            log.info("click.refused", question_id=rec.id, user_id=user, channel_id=channel)
            self._tell(ws, channel, user, Answering.refused(rec).text)
            return
        if container.get("message_ts"):
            rec = await self._learn(rec, act.t, channel, str(container["message_ts"]))
        if not rec.pending:
            ended = self._ended(ws, rec, act.t, target)
            if act.a[:1] != "o":  # only an option is an answer: it may be kept as late
                self._tell(ws, channel, user, ended.text)
                return
        values = (payload.get("state") or {}).get("values") or {}
        picked = render.picked(rec.questions, values, rec.id, act.t)
        who = Responder(channel=CHANNEL, user_id=user, name=(payload.get("user") or {}).get("name"))
        q = rec.questions[0]
        option = int(act.a[1:]) if act.a[:1] == "o" and act.a[1:].isdigit() else -1
        if 0 <= option < len(q.options):
            outcome = await self.answering.answer(
                rec, {q.id: [q.options[option].label]}, who, act.t
            )
        elif act.a == "s":
            outcome = await self.answering.skip(rec, who, act.t)
        elif act.a == "d" and picked:
            outcome = await self.answering.answer(rec, picked, who, act.t)
        elif act.a == "d":
            self._tell(ws, channel, user, t(rec.locale, "pick_missing"))
            return
        elif act.a == "x":
            ticks = [i for i, o in enumerate(q.options) if o.label in picked.get(q.id, [])]
            meta = json.dumps({"q": rec.id, "t": act.t, "c": channel, "p": ticks})
            view = render.other_modal(rec.locale, meta)
            trigger_id = str(payload.get("trigger_id") or "")
            self.later(
                self._call(channel, lambda: ws.client.views_open(trigger_id=trigger_id, view=view))
            )
            return
        else:
            return
        log.info("question.click", question_id=rec.id, outcome=outcome.kind, user_id=user)
        self._tell(ws, channel, user, outcome.text)

    async def _other(self, ws: Workspace, payload: dict[str, Any]) -> Reply:
        """The "Other…" modal submitted: its text (with any ticked options) is the answer;
        a refusal shows in the modal, which then stays open."""
        view = payload.get("view") or {}
        try:
            meta = json.loads(view.get("private_metadata") or "{}")
        except ValueError:
            return None
        user = str((payload.get("user") or {}).get("id") or "")
        found = await self._load(ws, meta.get("q"), meta.get("t"))
        if found is None:
            return modal_error(t("en", "expired"))
        rec, target = found
        index, channel = int(meta["t"]), str(meta.get("c") or "")
        if not self._allowed(ws, rec, index, target, channel, user):
            return modal_error(Answering.refused(rec).text)
        if not rec.pending:
            self._ended(ws, rec, index, target)  # the prompt shows the summary; the text
            # below may still be kept as a late answer
        field = ((view.get("state") or {}).get("values") or {}).get(render.OTHER_BLOCK) or {}
        text = str((field.get(render.OTHER_BLOCK) or {}).get("value") or "").strip()
        if not text:
            return modal_error(t(rec.locale, "other_prompt"))
        q = rec.questions[0]
        ticks = (
            [
                q.options[i].label
                for i in meta.get("p") or []
                if isinstance(i, int) and 0 <= i < len(q.options)
            ]
            if q.multiSelect
            else []
        )
        who = Responder(channel=CHANNEL, user_id=user, name=(payload.get("user") or {}).get("name"))
        outcome = await self.answering.answer(rec, {q.id: [*ticks, text]}, who, index)
        log.info("question.other", question_id=rec.id, outcome=outcome.kind, user_id=user)
        if not outcome.accepted:
            return modal_error(outcome.text)
        self._tell(ws, channel, user, outcome.text)
        return None

    # -- messages ------------------------------------------------------------------------

    async def event(self, ws: Workspace, body: dict[str, Any]) -> None:
        if body.get("type") != "event_callback":
            return
        event_id = str(body.get("event_id") or "")
        if not event_id:
            await self._message(ws, body.get("event") or {})
            return
        async with self.dedupe.once(ws.tenant, event_id) as new:
            if not new:
                log.info("event.duplicate", tenant=ws.tenant, event_id=event_id)
                return
            await self._message(ws, body.get("event") or {})

    async def _find(
        self, ws: Workspace, channel: str, thread: str | None, dm: bool
    ) -> tuple[Record, int, SlackTarget, bool] | None:
        """The question a message answers: the prompt whose thread it is in, else (in a
        DM, or in a thread a prompt was posted into) the newest pending question shown
        there. (record, target index, target, direct)."""
        if thread:
            ref = await self.prompts.lookup(ws.tenant, channel, thread)
            if ref is None:
                ref = await self._unrecorded(ws, channel, thread)
            loaded = await self._load(ws, ref.question_id, ref.index) if ref else None
            if ref is not None and loaded is not None:
                return loaded[0], ref.index, loaded[1], True
        elif not dm:
            return None  # talk in a channel, not about a prompt
        for qid in await self.prompts.shown_at(ws.tenant, channel):
            rec = await self.store.load(qid)
            if rec is None or not rec.pending:
                await self.prompts.forget(ws.tenant, channel, qid)
                continue
            for i, target in rec.targets_of(CHANNEL):
                assert isinstance(target, SlackTarget)
                here = channel in (target.channel_id, rec.delivery(i).ref.get("channel"))
                if here and (target.thread_ts or None) == thread:
                    return rec, i, target, bool(thread)
        return None

    async def _unrecorded(self, ws: Workspace, channel: str, thread: str) -> PromptRef | None:
        """A reply in the thread of one of this bot's prompts that the worker has not
        recorded yet (the person was quicker than Slack's answer to the post, or the
        worker died before it): the thread's parent, read back from Slack, carries the
        prompt's metadata naming its question and target. Only for a young thread
        (unrecorded_window_s), so other talk in threads costs no Slack call."""
        try:
            age_s = time.time() - float(thread)
        except ValueError:
            return None
        if not -60 < age_s < self.unrecorded_window_s:
            return None
        try:
            me = await self.workspaces.identity(ws)
            resp = await call(
                lambda: ws.client.conversations_replies(
                    channel=channel, ts=thread, limit=1, include_all_metadata=True
                )
            )
        except PlatformError as exc:
            log.info("reply.parent_unknown", tenant=ws.tenant, channel=channel, error=exc.message)
            return None
        parent: dict[str, Any] = next(
            (m for m in resp.get("messages") or [] if m.get("ts") == thread), {}
        )
        meta = parent.get("metadata") or {}
        payload = meta.get("event_payload") or {}
        if (
            not parent.get("bot_id")
            or parent.get("bot_id") != me.get("bot_id")
            or meta.get("event_type") != EVENT_TYPE
            or not isinstance(payload.get("target"), int)
        ):
            return None
        return PromptRef(str(payload.get("question_id") or ""), payload["target"], "prompt")

    async def _message(self, ws: Workspace, ev: dict[str, Any]) -> None:
        if (
            ev.get("type") != "message"
            or ev.get("bot_id")
            or ev.get("subtype") not in (None, "thread_broadcast")
        ):
            return  # edits, joins, and every bot's messages (ours too) are not answers
        user, channel = str(ev.get("user") or ""), str(ev.get("channel") or "")
        text = unescape(str(ev.get("text") or "")).strip()
        thread = str(ev["thread_ts"]) if ev.get("thread_ts") else None
        if not (user and channel and text):
            return
        found = await self._find(
            ws, channel, thread, is_dm(channel) or ev.get("channel_type") == "im"
        )
        if found is None:
            return
        rec, index, target, direct = found
        if not self._allowed(ws, rec, index, target, channel, user):
            if direct:  # a reply to the prompt is told why, privately; other talk is not ours
                self._tell(ws, channel, user, Answering.refused(rec).text, thread)
            return
        if not rec.pending:
            if not direct:
                return
            self._ended(ws, rec, index, target)  # a reply to its prompt may be a late answer
        outcome = await self.answering.reply(
            rec, text, Responder(channel=CHANNEL, user_id=user), index
        )
        log.info("question.reply", question_id=rec.id, outcome=outcome.kind, user_id=user)
        self._say(ws, channel, outcome.text, thread)
