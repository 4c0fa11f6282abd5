"""When a question's reminders and escalation steps are due (pure: no Redis here).

All of a question's timers are planned when it is asked and stored with it (`CREATE`
adds them to its shard's timers zset, `keys.timers`); the sweeper pops the due ones
(`scripts.TIMERS`), so a timer survives any restart and fires once however many
sweepers run. A member names what is due: `remind|<id>|<n>` (reminder n), `warn|<id>|<n>`
(the final warning, numbered after the reminders) and `escalate|<id>|<k>` (step k, the
ask's `escalate[k-1]`; step 0 is the ask's own targets, shown at once).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from askgate.domain.models import EscalationStep, Remind


class TimerKind(StrEnum):
    REMIND = "remind"
    WARN = "warn"  # the final warning before the deadline
    ESCALATE = "escalate"


@dataclass(frozen=True)
class Timer:
    kind: TimerKind
    question_id: str
    n: int  # the reminder's number (from 1), or the escalation step (from 1)

    @property
    def member(self) -> str:
        return f"{self.kind.value}|{self.question_id}|{self.n}"

    @classmethod
    def parse(cls, member: str) -> Timer | None:
        """The timer a zset member names; None for a member this version cannot read."""
        kind, _, rest = member.partition("|")
        qid, _, n = rest.partition("|")
        if kind not in TimerKind.__members__.values() or not qid or not n.isdigit():
            return None
        return cls(TimerKind(kind), qid, int(n))


def plan(
    question_id: str,
    created_ms: int,
    expires_ms: int,
    remind: Remind | None,
    steps: Sequence[EscalationStep],
) -> list[tuple[int, Timer]]:
    """(due ms, timer) of every reminder and escalation step of a question. Reminders
    come every `every_s` from the ask, at most `max`, and stop before the final warning
    (or the deadline); nothing is due at or after the deadline."""
    out: list[tuple[int, Timer]] = []
    if remind is not None:
        final_at = (
            expires_ms - remind.final_warning_s * 1000
            if remind.final_warning_s is not None
            else None
        )
        end = final_at if final_at is not None else expires_ms
        n = 0
        for n_ in range(1, remind.max + 1):
            at = created_ms + n_ * remind.every_s * 1000
            if at >= end:
                break
            n = n_
            out.append((at, Timer(TimerKind.REMIND, question_id, n)))
        if final_at is not None and created_ms < final_at < expires_ms:
            out.append((final_at, Timer(TimerKind.WARN, question_id, n + 1)))
    for k, step in enumerate(steps, 1):
        at = created_ms + step.after_s * 1000
        if at < expires_ms:
            out.append((at, Timer(TimerKind.ESCALATE, question_id, k)))
    return out
