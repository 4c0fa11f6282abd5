"""One fake clock for the code that takes the time from its caller: the store's and the
sweeper's passes (`now=`, ms since the epoch: `sweep_once`, `timers_once`, `watch_once`,
`reap_once`, `Store.sweep_shard`) and the Slack service's signature check (a slack_sdk
`Clock`, whose `now()` is in seconds). Time moves only when the test moves it, so a test
reaches a deadline without waiting for it."""

from __future__ import annotations

from askgate.domain.timeutil import now_ms
from slack_sdk.signature import Clock


class FakeClock(Clock):
    def __init__(self, at_ms: int | None = None) -> None:
        self.ms = now_ms() if at_ms is None else at_ms

    def now(self) -> float:
        """Seconds since the epoch (slack_sdk's Clock)."""
        return self.ms / 1000

    def advance(self, seconds: float) -> int:
        """Move on by `seconds`; the new time in ms."""
        self.ms += round(seconds * 1000)
        return self.ms

    def past(self, deadline_ms: int) -> int:
        """Move to just after `deadline_ms` (never back); the new time in ms."""
        self.ms = max(self.ms, deadline_ms + 1)
        return self.ms
