"""Question statuses, end reasons and the one table of allowed transitions.

The Lua scripts enforce the same table: `scripts.py` renders it into Lua from here,
so the Python and Redis sides cannot drift apart.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    PENDING = "pending"
    ANSWERED = "answered"
    NO_ANSWER = "no_answer"


class Reason(StrEnum):
    """Why a question ended without an answer (the resource's `reason`)."""

    TIMEOUT = "timeout"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"
    RUN_ABORTED = "run_aborted"
    DELIVERY_FAILED = "delivery_failed"


TRANSITIONS: dict[Status, frozenset[Status]] = {
    Status.PENDING: frozenset({Status.ANSWERED, Status.NO_ANSWER}),
    Status.ANSWERED: frozenset(),
    Status.NO_ANSWER: frozenset(),
}

FINAL = frozenset(s for s, nxt in TRANSITIONS.items() if not nxt)


class DeliveryState(StrEnum):
    """One target's delivery (the ledger, `askgate.store.ledger`)."""

    PENDING = "pending"  # not shown yet; a worker may claim it
    SENDING = "sending"  # claimed by a worker with a lease, the platform call in flight
    DELIVERED = "delivered"  # shown (the platform's message ref recorded, or assumed)
    FAILED = "failed"  # cannot be shown; when every target failed the question ends


# A web target is delivered at creation (the Control UI can always show it). A claim whose
# lease ran out is taken over (sending → sending) or assumed shown (sending → delivered).
DELIVERY_TRANSITIONS: dict[DeliveryState, frozenset[DeliveryState]] = {
    DeliveryState.PENDING: frozenset({DeliveryState.SENDING, DeliveryState.FAILED}),
    DeliveryState.SENDING: frozenset(
        {
            DeliveryState.SENDING,
            DeliveryState.DELIVERED,
            DeliveryState.PENDING,
            DeliveryState.FAILED,
        }
    ),
    DeliveryState.DELIVERED: frozenset({DeliveryState.DELIVERED}),  # its ref completed later
    DeliveryState.FAILED: frozenset(),
}
