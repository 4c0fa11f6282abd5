"""The Discord worker's settings (`ASKGATE_DISCORD_*`), on top of the kit's
(`ASKGATE_CONSUMER_*`, `ASKGATE_DELIVERY_*`, `ASKGATE_CHANNEL_REFRESH_S`)."""

from __future__ import annotations

from askgate.channels import ChannelSettings
from pydantic import Field

SERVICE = "discord"


class DiscordSettings(ChannelSettings):
    # Discord's REST API, or the tests' fake.
    discord_api_base: str = Field("https://discord.com/api/v10", pattern=r"^https?://")
    # Where the interactions endpoint (POST /discord/<tenant id>/interactions) listens.
    discord_host: str = "127.0.0.1"
    discord_port: int = Field(8011, ge=0, le=65535)
    # One REST call; a claim's lease (ASKGATE_DELIVERY_LEASE_MS) must be longer.
    discord_request_timeout_s: float = Field(15.0, gt=0)
