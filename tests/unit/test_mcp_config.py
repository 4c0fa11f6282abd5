"""The MCP server's settings: remind and escalate for every ask come from the
environment or flags as JSON, and a wrong one names the variable or flag."""

from __future__ import annotations

import pytest
from askgate_mcp.__main__ import parse_args, settings_from
from askgate_mcp.config import ConfigError, load_settings

STEP = {"after_s": 600, "targets": [{"channel": "telegram", "chat_id": "42"}]}


def test_remind_and_escalate_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """ASKGATE_REMIND and ASKGATE_ESCALATE are read as JSON."""
    monkeypatch.setenv("ASKGATE_REMIND", '{"every_s": 300, "max": 2}')
    monkeypatch.setenv(
        "ASKGATE_ESCALATE",
        '[{"after_s": 600, "targets": [{"channel": "telegram", "chat_id": "42"}]}]',
    )
    settings = load_settings(api_key="k")
    assert (settings.remind, settings.escalate) == ({"every_s": 300, "max": 2}, [STEP])


def test_flags_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """--remind replaces ASKGATE_REMIND."""
    monkeypatch.setenv("ASKGATE_REMIND", '{"every_s": 300}')
    settings = settings_from(parse_args(["--api-key", "k", "--remind", '{"max": 0}']))
    assert settings.remind == {"max": 0}


def test_unknown_remind_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key remind does not have is refused at start-up, naming variable and key."""
    monkeypatch.setenv("ASKGATE_REMIND", '{"every": 300}')
    with pytest.raises(ConfigError, match=r"ASKGATE_REMIND\.every: Extra inputs"):
        load_settings(api_key="k")


def test_escalation_step_without_targets_names_the_field() -> None:
    """A step without targets is refused at start-up, naming the step's field."""
    with pytest.raises(ConfigError, match=r"ASKGATE_ESCALATE\[0\]\.targets: Field required"):
        load_settings(api_key="k", escalate=[{"after_s": 600}])


def test_escalate_flag_that_is_not_json_names_the_flag() -> None:
    """--escalate must be JSON; the error says so."""
    with pytest.raises(ConfigError, match="--escalate must be a JSON list of steps"):
        settings_from(parse_args(["--api-key", "k", "--escalate", "[{after_s: 600}]"]))
