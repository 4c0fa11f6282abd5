"""Settings of the plain-text channel worker (`ASKGATE_TEXT_*`), on top of askgate's own."""

from __future__ import annotations

from askgate.settings import Settings
from pydantic import Field


class TextSettings(Settings):
    text_timeout_s: float = Field(10.0, gt=0)
    # POSTs per handling of an event: quick retries of a blip, waiting backoff_s, then
    # twice that, … (a 429's Retry-After when it is shorter than text_backoff_max_s).
    text_attempts: int = Field(3, ge=1, le=10)
    text_backoff_s: float = Field(0.5, ge=0)
    text_backoff_max_s: float = Field(5.0, ge=0)
    # Handlings of a prompt before its target counts as failed: between two, the stream
    # entry stays unacknowledged and is reclaimed after consumer_claim_idle_ms.
    text_rounds: int = Field(3, ge=1, le=10)
    consumer_block_ms: int = Field(2000, ge=10)
    consumer_claim_idle_ms: int = Field(30_000, ge=100)
