"""Settings of the plain-text channel worker (`ASKGATE_TEXT_*`), on top of the kit's."""

from __future__ import annotations

from askgate.channels import ChannelSettings
from pydantic import Field


class TextSettings(ChannelSettings):
    # One POST to the platform; retries, back-off and giving up are the kit's
    # (ASKGATE_DELIVERY_*).
    text_timeout_s: float = Field(10.0, gt=0)
