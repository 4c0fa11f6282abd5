"""What an ask is made of, as TypedDicts: the `ask_user` tool input (`QuestionSpec`), the
targets, `remind` and `escalate`. Plain dicts of these shapes are what the client sends.

They give the shape only (keys, which are required, value types); the server holds the
rules (snake_case ids, 2 to 4 options, ranges, ...) and names the field and the fix in
its 422. pydantic can check the shape (`TypeAdapter(TargetSpec)`), as the MCP server does
with its settings at start-up; unknown keys are refused there as the server refuses them.
"""

# No `from __future__ import annotations`: TypedDict reads NotRequired[...] from the
# evaluated annotations to know which keys are required.
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Field, with_config

# typing_extensions' TypedDict: pydantic validates typing's only from Python 3.12 on.
from typing_extensions import TypedDict

Locale = Literal["en", "tr", "hi"]
_CLOSED = ConfigDict(extra="forbid")


@with_config(_CLOSED)
class OptionSpec(TypedDict):
    """One option of a question: `label` (recommended first, ending in ` (Recommended)`)."""

    label: str
    description: NotRequired[str]


@with_config(_CLOSED)
class QuestionSpec(TypedDict):
    """One question of the `ask_user` tool input."""

    id: str
    header: str
    question: str
    options: list[OptionSpec]
    multiSelect: NotRequired[bool]


# -- targets: where a question is shown ------------------------------------------------


@with_config(_CLOSED)
class TelegramTargetSpec(TypedDict):
    channel: Literal["telegram"]
    chat_id: str | int
    allowed_user_ids: NotRequired[list[int]]


@with_config(_CLOSED)
class SlackTargetSpec(TypedDict):
    channel: Literal["slack"]
    channel_id: str
    thread_ts: NotRequired[str]
    allowed_user_ids: NotRequired[list[str]]


@with_config(_CLOSED)
class DiscordTargetSpec(TypedDict):
    channel: Literal["discord"]
    channel_id: str | int
    allowed_user_ids: NotRequired[list[str | int]]
    allowed_role_ids: NotRequired[list[str | int]]


@with_config(_CLOSED)
class WebTargetSpec(TypedDict):
    channel: Literal["web"]


@with_config(_CLOSED)
class TextTargetSpec(TypedDict):
    """A generic plain-text webhook: askgate POSTs the prompt to `url`."""

    channel: Literal["text"]
    url: str


TargetSpec = Annotated[
    TelegramTargetSpec | SlackTargetSpec | DiscordTargetSpec | WebTargetSpec | TextTargetSpec,
    Field(discriminator="channel"),
]


# -- keeping after the human -------------------------------------------------------------


@with_config(_CLOSED)
class RemindSpec(TypedDict):
    """`remind`: a reminder to every shown target each `every_s` seconds (default 300), at
    most `max` times (default 3; 0 turns the tenant's default off), and a last call
    `final_warning_s` seconds before the deadline."""

    every_s: NotRequired[int]
    max: NotRequired[int]
    final_warning_s: NotRequired[int]


@with_config(_CLOSED)
class EscalationStepSpec(TypedDict):
    """One step of `escalate`: `after_s` seconds after the ask, if it is still pending,
    the question is also shown on `targets` (chat targets, not web)."""

    after_s: int
    targets: list[TargetSpec]


# What the client's calls accept: these shapes, or any mapping (checked by the server).
Questions = Sequence[QuestionSpec] | Sequence[Mapping[str, Any]]
Targets = Sequence[TargetSpec] | Sequence[Mapping[str, Any]]
Remind = RemindSpec | Mapping[str, Any]
Escalation = Sequence[EscalationStepSpec] | Sequence[Mapping[str, Any]]
