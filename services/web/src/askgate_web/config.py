"""The web Control UI's fixed numbers and the few choices made from a request."""

from __future__ import annotations

from askgate.domain.models import LOCALES, Responder

SERVICE = "web"
# Every answer given on a page is recorded as coming from the web channel.
RESPONDER = Responder(channel="web")

# An SSE comment this often keeps proxies and load balancers from closing an idle stream.
HEARTBEAT_S = 15.0
# How soon a browser's EventSource reconnects after the stream drops.
SSE_RETRY_MS = 1000
# Per-connection backlog; a change event only says "re-read the view", so a full queue
# already holds one and dropping more loses nothing.
SUBSCRIBER_BACKLOG = 8

# XREAD blocks this long per call, so a stop is noticed within it.
READ_BLOCK_MS = 2000
READ_COUNT = 500
# After a Redis error, wait before reading again so an outage is not a busy loop.
ERROR_BACKOFF_S = 1.0

# The timeline shows this many of the session's newest questions.
TIMELINE_LIMIT = 50


def negotiate_locale(accept_language: str | None) -> str:
    """The first of en/tr/hi named in Accept-Language (for pages that have no ask yet)."""
    ranked: list[tuple[float, int, str]] = []
    for pos, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        lang = tag.strip().lower().split("-")[0]
        if lang in LOCALES and q > 0:
            ranked.append((-q, pos, lang))
    return min(ranked)[2] if ranked else "en"
