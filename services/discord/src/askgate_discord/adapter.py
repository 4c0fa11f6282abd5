"""Discord as a kit adapter: the prompt is a message with components in the target's
channel, its summary an edit of that message that removes them."""

from __future__ import annotations

from typing import Any

from askgate.channels import (
    REMINDER,
    ExtraMessage,
    PermanentError,
    SentPrompt,
    StalePolicy,
    TenantConfigs,
)
from askgate.domain.models import DiscordTarget, Target
from askgate.store.record import Record

from askgate_discord import render
from askgate_discord.client import CHANNEL, DiscordApp, DiscordClient


def nonce(rec: Record, index: int) -> str:
    """The same on every try of one target (≤ 25 characters, Discord's limit)."""
    return f"{rec.id}:{index}"


class DiscordAdapter:
    channel = CHANNEL
    # Discord has no idempotency key, but a create with `nonce` and `enforce_nonce: true`
    # returns the message the same bot already created with that nonce in the last few
    # minutes instead of posting another. Every try of a target carries the same nonce,
    # so a claim left by a worker that died mid-post (or a post cut off by a timeout) is
    # sent again safely and Discord hands back the first message, whose id the ledger
    # then records. A stale claim is taken over after the lease (60 s by default), well
    # inside that window; only a worker that stays dead for longer and comes back to the
    # same claim could show a second prompt, which answers the same question.
    stale_policy = StalePolicy.RESEND

    def __init__(self, apps: TenantConfigs[DiscordApp], client: DiscordClient) -> None:
        self.apps = apps
        self.client = client

    def destination(self, rec: Record, target: Target) -> str:
        assert isinstance(target, DiscordTarget)
        return target.channel_id

    async def _app(self, tenant: str) -> DiscordApp:
        app = await self.apps.get(tenant)
        if app is None:
            raise PermanentError(
                "no Discord application is configured for this tenant "
                "(askgate tenant channel TENANT discord bot_token=… …)"
            )
        return app

    async def send_prompt(self, rec: Record, index: int, target: Target) -> SentPrompt:
        app = await self._app(rec.tenant)
        channel_id = self.destination(rec, target)
        payload = {
            **render.prompt(rec, index),
            "nonce": nonce(rec, index),
            "enforce_nonce": True,
            "allowed_mentions": {"parse": []},
        }
        msg = await self.client.create_message(app.bot_token, channel_id, payload)
        message_id = str(msg.get("id") or "")
        if not message_id:
            raise PermanentError("Discord created a message without an id")
        return SentPrompt(
            ref={"channel_id": channel_id, "message_id": message_id},
            message=message_id,
            destination=channel_id,
        )

    async def send_reminder(
        self, rec: Record, index: int, target: Target, ref: dict[str, Any], text: str, n: int
    ) -> SentPrompt | None:
        """A reply to the prompt (Discord shows what it answers), sent with its own nonce so
        a retry shows it once."""
        app = await self._app(rec.tenant)
        channel_id = str(ref.get("channel_id") or self.destination(rec, target))
        payload: dict[str, Any] = {
            "content": text,
            "nonce": f"{rec.id}.{index}.{n}",
            "enforce_nonce": True,
            "allowed_mentions": {"parse": []},
        }
        if ref.get("message_id"):
            payload["message_reference"] = {
                "message_id": str(ref["message_id"]),
                "fail_if_not_exists": False,
            }
        msg = await self.client.create_message(app.bot_token, channel_id, payload)
        return SentPrompt(message=str(msg.get("id") or "") or None, destination=channel_id)

    async def finalise_message(self, rec: Record, target: Target, extra: ExtraMessage) -> None:
        """A reminder goes when its question ends: the prompt's summary says it all."""
        if extra.kind == REMINDER:
            app = await self._app(rec.tenant)
            await self.client.delete_message(app.bot_token, extra.destination, extra.message)

    async def finalise(self, rec: Record, index: int, target: Target, ref: dict[str, Any]) -> None:
        if not ref.get("message_id"):
            return
        app = await self._app(rec.tenant)
        await self.client.edit_message(
            app.bot_token, str(ref["channel_id"]), str(ref["message_id"]), render.summary(rec)
        )
