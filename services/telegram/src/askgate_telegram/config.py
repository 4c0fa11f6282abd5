"""The Telegram worker's settings (`ASKGATE_TELEGRAM_*`), on top of askgate's own."""

from __future__ import annotations

from typing import Literal

from askgate.settings import Settings
from pydantic import Field


class TelegramSettings(Settings):
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
    # How often the set of tenants with a bot token is re-read.
    telegram_tenant_refresh_s: float = Field(30.0, gt=0)
    telegram_request_timeout_s: float = Field(30.0, gt=0)
    # Stream consumer knobs (see askgate.consumer).
    telegram_block_ms: int = Field(2000, ge=10)
    telegram_claim_idle_ms: int = Field(30_000, ge=10)
    telegram_claim_every_s: float = Field(5.0, gt=0)
    # A target left in `sending` longer than this by another process is in doubt: its
    # sendMessage may have reached Telegram, so it is never sent again.
    telegram_send_lease_ms: int = Field(60_000, ge=10)
    # A 429 asking to wait longer than this leaves the event for a later retry instead
    # of holding the consumer.
    telegram_max_retry_wait_s: float = Field(60.0, gt=0)
