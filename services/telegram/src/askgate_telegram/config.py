"""The Telegram worker's settings (`ASKGATE_TELEGRAM_*`), on top of the kit's
(`ASKGATE_CONSUMER_*`, `ASKGATE_DELIVERY_*`, `ASKGATE_CHANNEL_REFRESH_S`)."""

from __future__ import annotations

from typing import Literal

from askgate.channels import ChannelSettings
from pydantic import Field

SERVICE = "telegram"


class TelegramSettings(ChannelSettings):
    # webhook: Telegram POSTs updates to /telegram/<tenant id> on our HTTP server;
    # polling: one getUpdates loop per configured bot (no public URL needed).
    telegram_mode: Literal["webhook", "polling"] = "polling"
    # Self-hosted Bot API servers (and the tests' fake) are reached through this base.
    telegram_api_base: str = Field("https://api.telegram.org", pattern=r"^https?://")
    telegram_webhook_host: str = "127.0.0.1"
    telegram_webhook_port: int = Field(8010, ge=0, le=65535)
    # Public base URL Telegram reaches us at; when set, setWebhook is called for each bot
    # with `<url>/telegram/<tenant id>` and the tenant's webhook_secret.
    telegram_webhook_url: str = ""
    telegram_polling_timeout_s: int = Field(25, ge=0, le=50)
    # A bot whose getUpdates keeps failing this long makes the worker unhealthy
    # (`--check` fails) until it recovers.
    telegram_poll_unhealthy_s: float = Field(60.0, gt=0)
    # After a failed getUpdates (or a batch whose handling failed), wait this long before
    # the next, doubling up to 30 s: an outage is not a busy loop.
    telegram_poll_backoff_s: float = Field(1.0, gt=0, le=30)
    # One Bot API call; a claim's lease (ASKGATE_DELIVERY_LEASE_MS) must be longer.
    telegram_request_timeout_s: float = Field(30.0, gt=0)
