"""The Slack worker's settings (`ASKGATE_SLACK_*`), on top of the kit's
(`ASKGATE_CONSUMER_*`, `ASKGATE_DELIVERY_*`, `ASKGATE_CHANNEL_REFRESH_S`)."""

from __future__ import annotations

from typing import Literal

from askgate.channels import ChannelSettings
from pydantic import Field

SERVICE = "slack"


class SlackSettings(ChannelSettings):
    # http: Slack POSTs to /slack/<tenant>/interactivity and /slack/<tenant>/events on our
    # server (a public URL); socket: one Socket Mode connection per tenant with an
    # app_token (no public URL needed).
    slack_mode: Literal["http", "socket"] = "http"
    # Slack's Web API; GovSlack (https://slack-gov.com/api/) and the tests' fake differ.
    slack_api_base: str = Field("https://slack.com/api/", pattern=r"^https?://")
    slack_host: str = "127.0.0.1"
    slack_port: int = Field(8020, ge=0, le=65535)
    # One Web API call; a claim's lease (ASKGATE_DELIVERY_LEASE_MS) must be longer.
    slack_request_timeout_s: float = Field(30.0, gt=0)
