"""Slack as a kit adapter: the prompt is a chat.postMessage with Block Kit controls, its
summary a chat.update that drops them.

chat.postMessage has no idempotency key, but every prompt carries its question id and
target index in the message's metadata, and Slack can be asked for the channel's recent
messages with it. So a try after the first (a worker killed mid-post, a timeout after
Slack took the message) first looks for the prompt (`find_prompt`, StalePolicy.LOOK_UP)
and posts only when it is not there: one prompt, whose ts is known, so it can still be
edited into its summary. A lease (ASKGATE_DELIVERY_LEASE_MS) longer than a call's timeout
makes sure the dead worker's post has landed before anyone looks.
"""

from __future__ import annotations

from typing import Any

import structlog
from askgate.channels import REMINDER, ExtraMessage, PermanentError, SentPrompt, StalePolicy
from askgate.domain.models import SlackTarget, Target
from askgate.store.record import Record

from askgate_slack import render
from askgate_slack.client import CHANNEL, Workspace, Workspaces, call, error_code

log = structlog.get_logger("askgate.slack")

EVENT_TYPE = "askgate_prompt"  # the metadata event_type of every prompt
# How far back, and how many pages of history, a look-up reads: the prompt was posted
# after the ask was created, so only messages since then are read.
LOOKUP_SLACK_S = 60
LOOKUP_PAGES = 5


def is_dm(channel_id: str) -> bool:
    """Slack's direct-message conversations have ids starting with D."""
    return channel_id.startswith("D")


def is_user(channel_id: str) -> bool:
    """A target naming a person (U…/W…): Slack posts to the DM with the bot."""
    return channel_id[:1] in ("U", "W")


class SlackAdapter:
    channel = CHANNEL
    stale_policy = StalePolicy.LOOK_UP

    def __init__(self, workspaces: Workspaces) -> None:
        self.workspaces = workspaces

    def destination(self, rec: Record, target: Target) -> str:
        assert isinstance(target, SlackTarget)
        return target.channel_id

    async def _ws(self, tenant: str) -> Workspace:
        ws = await self.workspaces.get(tenant)
        if ws is None:
            raise PermanentError("no Slack bot token is configured for this tenant")
        return ws

    async def send_prompt(self, rec: Record, index: int, target: Target) -> SentPrompt:
        assert isinstance(target, SlackTarget)
        ws = await self._ws(rec.tenant)
        prompt = render.prompt(rec.questions, rec.locale, rec.id, index)
        metadata = {
            "event_type": EVENT_TYPE,
            "event_payload": {"question_id": rec.id, "target": index},
        }
        resp = await call(
            lambda: ws.client.chat_postMessage(
                channel=target.channel_id,
                thread_ts=target.thread_ts,
                text=prompt.text,
                blocks=prompt.blocks,
                metadata=metadata,
                unfurl_links=False,
                unfurl_media=False,
            )
        )
        return self._sent(str(resp["channel"]), str(resp["ts"]), target)

    @staticmethod
    def _sent(channel: str, ts: str, target: SlackTarget) -> SentPrompt:
        ref = {"channel": channel, "ts": ts, "thread_ts": target.thread_ts}
        return SentPrompt(ref=ref, message=ts, destination=channel)

    async def find_prompt(self, rec: Record, index: int, target: Target) -> SentPrompt | None:
        assert isinstance(target, SlackTarget)
        ws = await self._ws(rec.tenant)
        channel = target.channel_id
        try:
            if is_user(channel):
                opened = await call(lambda: ws.client.conversations_open(users=channel))
                channel = str(opened["channel"]["id"])
            found = await self._look(ws, rec, index, channel, target.thread_ts)
        except PermanentError as exc:
            if error_code(exc) != "missing_scope":
                raise
            # Without the history scopes Slack cannot be asked: never post twice, count
            # it as shown (a click on it still supplies its ts).
            log.warning(
                "prompt.lookup_impossible",
                question_id=rec.id,
                target=index,
                error="missing_scope",
                fix="add the *:history scopes to the app",
            )
            return SentPrompt(ref={"unconfirmed": True})
        return self._sent(channel, found, target) if found else None

    async def _look(
        self, ws: Workspace, rec: Record, index: int, channel: str, thread_ts: str | None
    ) -> str | None:
        """The ts of the prompt for (question, target) among the channel's (or thread's)
        messages since the ask, or None."""
        oldest = f"{rec.created_ms / 1000 - LOOKUP_SLACK_S:.6f}"
        cursor: str | None = None
        for _ in range(LOOKUP_PAGES):
            if thread_ts:
                resp = await call(
                    lambda c=cursor: ws.client.conversations_replies(  # type: ignore[misc]
                        channel=channel,
                        ts=thread_ts,
                        oldest=oldest,
                        cursor=c,
                        include_all_metadata=True,
                        limit=200,
                    )
                )
            else:
                resp = await call(
                    lambda c=cursor: ws.client.conversations_history(  # type: ignore[misc]
                        channel=channel,
                        oldest=oldest,
                        cursor=c,
                        include_all_metadata=True,
                        limit=200,
                    )
                )
            for msg in resp.get("messages") or []:
                meta = msg.get("metadata") or {}
                payload = meta.get("event_payload") or {}
                if (
                    meta.get("event_type") == EVENT_TYPE
                    and payload.get("question_id") == rec.id
                    and payload.get("target") == index
                ):
                    return str(msg["ts"])
            cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                return None
        return None

    async def send_reminder(
        self, rec: Record, index: int, target: Target, ref: dict[str, Any], text: str, n: int
    ) -> SentPrompt | None:
        """A reply in the prompt's thread (where an answer may be typed too)."""
        assert isinstance(target, SlackTarget)
        ws = await self._ws(rec.tenant)
        channel = str(ref.get("channel") or target.channel_id)
        thread = ref.get("ts") or target.thread_ts
        resp = await call(
            lambda: ws.client.chat_postMessage(
                channel=channel, thread_ts=thread, text=text, unfurl_links=False, unfurl_media=False
            )
        )
        return SentPrompt(message=str(resp["ts"]), destination=str(resp["channel"]))

    async def finalise_message(self, rec: Record, target: Target, extra: ExtraMessage) -> None:
        """A reminder goes from the thread when its question ends (the prompt shows the
        summary)."""
        if extra.kind != REMINDER:
            return
        ws = await self._ws(rec.tenant)
        try:
            await call(lambda: ws.client.chat_delete(channel=extra.destination, ts=extra.message))
        except PermanentError as exc:
            if error_code(exc) != "message_not_found":
                raise

    async def finalise(self, rec: Record, index: int, target: Target, ref: dict[str, Any]) -> None:
        if not ref.get("ts") or not ref.get("channel"):
            return  # counted as shown without a ts, never clicked: nothing to edit
        ws = await self._ws(rec.tenant)
        channel, ts = str(ref["channel"]), str(ref["ts"])
        done = render.summary(rec, private=is_dm(channel))
        await call(
            lambda: ws.client.chat_update(
                channel=channel, ts=ts, text=done.text, blocks=done.blocks
            )
        )
