"""`remind` and `escalate` in the ask: each broken rule is a 422 line naming the field
and the fix, and the timers they plan (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from askgate.domain.models import QuestionCreate, Remind, validation_message
from askgate.store.timers import Timer, TimerKind, plan
from pydantic import ValidationError

from tests.support.asks import ask_body

TG = {"channel": "telegram", "chat_id": "1"}


def errors_of(**extra: Any) -> list[str]:
    with pytest.raises(ValidationError) as exc:
        QuestionCreate.model_validate(ask_body(**extra))
    return validation_message(exc.value)


BAD = [
    pytest.param(
        {"remind": {"every_s": 10}},
        "remind.every_s must be from 60 to 3600 seconds (got 10); for example 300 "
        "reminds every 5 minutes",
        id="every-too-short",
    ),
    pytest.param(
        {"remind": {"max": 11}},
        "remind.max must be from 0 to 10 reminders (got 11); 0 sends none",
        id="max-too-many",
    ),
    pytest.param(
        {"remind": {"final_warning_s": 5}},
        "remind.final_warning_s must be from 10 to 3600 seconds before the deadline "
        "(got 5), or left out for no final warning",
        id="final-too-short",
    ),
    pytest.param(
        {"remind": {"every": 300}},
        "remind.every is not a known field; remove it",
        id="remind-unknown-field",
    ),
    pytest.param(
        {"remind": {"every_s": 61.5}},
        "remind.every_s must be a whole number, for example 60 (got 61.5; it is not rounded)",
        id="every-float",
    ),
    pytest.param(
        {"escalate": [{"targets": [TG]}]},
        "escalate[0].after_s is required",
        id="step-after-missing",
    ),
    pytest.param(
        {"escalate": [{"after_s": 5, "targets": [TG]}]},
        "escalate[0].after_s must be at least 10 seconds (got 5); a step starts that "
        "long after the ask",
        id="step-too-soon",
    ),
    pytest.param(
        {"escalate": [{"after_s": 60, "targets": []}]},
        "escalate[0].targets must contain 1 to 10 targets (got 0)",
        id="step-no-target",
    ),
    pytest.param(
        {"escalate": [{"after_s": 60, "targets": [{"channel": "telegram"}]}]},
        "escalate[0].targets[0].chat_id is required",
        id="step-target-like-targets",
    ),
    pytest.param(
        {"escalate": [{"after_s": 60, "targets": [{"channel": "sms"}]}]},
        "escalate[0].targets[0].channel must be one of telegram, slack, discord, web, text",
        id="step-unknown-channel",
    ),
    pytest.param(
        {"escalate": [{"after_s": 60, "targets": [{"channel": "web"}]}]},
        "escalate[0].targets[0] is a web target, which the Control UI always shows; "
        "escalate to a chat target (telegram, slack, discord, text)",
        id="step-web",
    ),
    pytest.param(
        {"escalate": [{"after_s": 60, "targets": [{"channel": "text", "url": "ftp://x"}]}]},
        "escalate[0].targets[0].url must be an http(s) URL, for example https://example.com/hook",
        id="step-bad-url",
    ),
    pytest.param(
        {"escalate": [{"after_s": 600, "targets": [TG]}, {"after_s": 300, "targets": [TG]}]},
        "escalate[1].after_s (300) must be later than escalate[0].after_s (600); "
        "order the steps by time",
        id="steps-out-of-order",
    ),
    pytest.param(
        {"escalate": [{"after_s": 60 * k, "targets": [TG]} for k in range(1, 5)]},
        "escalate must contain at most 3 steps (got 4)",
        id="too-many-steps",
    ),
    pytest.param(
        {"escalate": [{"after_s": 60, "targets": [TG], "when": "later"}]},
        "escalate[0].when is not a known field; remove it",
        id="step-unknown-field",
    ),
]


@pytest.mark.parametrize(("extra", "line"), BAD)
def test_bad_followup_names_the_field_and_the_fix(extra: dict[str, Any], line: str) -> None:
    """Each broken rule of remind/escalate is one line that names the field and the fix."""
    assert errors_of(**extra) == [line]


def test_timing_beyond_the_timeout_is_named() -> None:
    """A final warning or a step the timeout never reaches is named with the timeout."""
    ask = QuestionCreate.model_validate(
        ask_body(remind={"final_warning_s": 600}, escalate=[{"after_s": 600, "targets": [TG]}])
    )
    assert ask.timing_problems(300) == [
        "remind.final_warning_s (600) must be shorter than the question's timeout (300 s)",
        "escalate[0].after_s (600) must be shorter than the question's timeout (300 s), or "
        "the step never runs",
    ]
    assert ask.timing_problems(900) == []


def test_steps_targets_follow_the_asks_own() -> None:
    """The stored target order: the ask's targets, then each step's, with field paths."""
    ask = QuestionCreate.model_validate(
        ask_body(targets=[TG], escalate=[{"after_s": 60, "targets": [TG, TG]}])
    )
    assert [path for path, _ in ask.all_targets()] == [
        "targets[0]",
        "escalate[0].targets[0]",
        "escalate[0].targets[1]",
    ]


def test_plan_stops_reminders_before_the_final_warning() -> None:
    """Reminders every every_s up to max, none at or after the final warning."""
    got = plan("q1", 0, 900_000, Remind(every_s=300, max=10, final_warning_s=300), [])
    assert got == [
        (300_000, Timer(TimerKind.REMIND, "q1", 1)),
        (600_000, Timer(TimerKind.WARN, "q1", 2)),
    ]


def test_plan_never_falls_on_the_deadline() -> None:
    """A reminder or step due at the deadline is not planned."""
    steps = QuestionCreate.model_validate(
        ask_body(escalate=[{"after_s": 300, "targets": [TG]}, {"after_s": 600, "targets": [TG]}])
    ).escalate
    got = plan("q1", 0, 600_000, Remind(every_s=300, max=3), steps)
    assert [(at, t.member) for at, t in got] == [
        (300_000, "remind|q1|1"),
        (300_000, "escalate|q1|1"),
    ]


def test_a_timer_member_reads_back() -> None:
    """A zset member parses back into its timer; a foreign one is None."""
    timer = Timer(TimerKind.ESCALATE, "q0aabc", 2)
    assert Timer.parse(timer.member) == timer
    assert Timer.parse("snooze|q0aabc|1") is None
    assert Timer.parse("remind|q0aabc|x") is None
