"""ASKGATE_REDIS_CLUSTER and ASKGATE_JOBS_REDIS_URL: what a clustered deployment must set."""

from __future__ import annotations

import pytest
from askgate.domain.errors import ConfigError
from askgate.settings import Settings, load
from pydantic import ValidationError

NODE = "redis://10.0.0.5:7000/0"


def test_jobs_redis_defaults_to_redis_url_without_a_cluster() -> None:
    """On one Redis, RQ's queues live beside the questions."""
    assert Settings(redis_url="redis://r:6379/2").jobs_redis() == "redis://r:6379/2"


def test_jobs_redis_is_required_on_a_cluster() -> None:
    """Clustered without ASKGATE_JOBS_REDIS_URL, the webhook service is told to set it."""
    settings = Settings(redis_url=NODE, redis_cluster=True)
    with pytest.raises(ConfigError, match="ASKGATE_JOBS_REDIS_URL must be set"):
        settings.jobs_redis()


def test_jobs_redis_is_used_when_set() -> None:
    """A separate jobs Redis is what RQ connects to."""
    settings = Settings(redis_url=NODE, redis_cluster=True, jobs_redis_url="redis://jobs:6379/0")
    assert settings.jobs_redis() == "redis://jobs:6379/0"


def test_jobs_redis_may_not_be_the_cluster() -> None:
    """Naming the cluster node as the jobs Redis is refused at load time."""
    with pytest.raises(ValidationError, match="must name a Redis outside the cluster"):
        Settings(redis_url=NODE, redis_cluster=True, jobs_redis_url=NODE)


def test_cluster_needs_database_zero() -> None:
    """A cluster has only database 0: a REDIS_URL with /3 is refused with the fix."""
    with pytest.raises(ValidationError, match="drop '/3' from REDIS_URL"):
        Settings(redis_url="redis://10.0.0.5:7000/3", redis_cluster=True)


def test_cluster_is_not_a_unix_socket() -> None:
    """A cluster is reached over TCP, not a socket file."""
    with pytest.raises(ValidationError, match="over TCP"):
        Settings(redis_url="unix:///run/redis.sock", redis_cluster=True)


def test_cluster_flag_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """ASKGATE_REDIS_CLUSTER and ASKGATE_JOBS_REDIS_URL are read like every setting."""
    monkeypatch.setenv("REDIS_URL", NODE)
    monkeypatch.setenv("ASKGATE_REDIS_CLUSTER", "true")
    monkeypatch.setenv("ASKGATE_JOBS_REDIS_URL", "redis://jobs:6379/0")
    settings = load(Settings)
    assert settings.redis_cluster and settings.jobs_redis() == "redis://jobs:6379/0"


def test_bad_jobs_url_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A jobs URL that is not a Redis URL is reported under its variable name."""
    monkeypatch.setenv("ASKGATE_JOBS_REDIS_URL", "http://jobs")
    with pytest.raises(ConfigError, match="ASKGATE_JOBS_REDIS_URL"):
        load(Settings)


def test_the_session_history_covers_the_late_answer_window() -> None:
    """A session index kept shorter than the late-answer window is refused by name: late
    answers are matched through it."""
    with pytest.raises(ValidationError, match="ASKGATE_SESSION_HISTORY_S"):
        Settings(session_history_s=300, late_answer_window_s=600)
    assert Settings(session_history_s=600, late_answer_window_s=600).session_history_s == 600
