"""Configuration from the environment (`ASKGATE_*`, `REDIS_URL`).

Settings are built in each service's `main()`, never at import time, so tests construct
them directly. `load()` turns pydantic's errors into one readable message per variable.
"""

from __future__ import annotations

from typing import Self, TypeVar
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from askgate.domain.errors import ConfigError
from askgate.domain.netguard import Policy, parse_cidrs


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASKGATE_", extra="ignore", frozen=True)

    redis_url: str = Field(
        "redis://127.0.0.1:6379/0",
        validation_alias=AliasChoices("REDIS_URL", "ASKGATE_REDIS_URL"),
        pattern=r"^(redis|rediss|unix)://",
    )
    # REDIS_URL names one node of a Redis Cluster (any node: the client finds the rest).
    redis_cluster: bool = False
    # RQ (the webhook jobs) needs a Redis that is not a cluster: unset means REDIS_URL,
    # which a clustered deployment must not use for it (see jobs_redis()).
    jobs_redis_url: str = Field("", pattern=r"^$|^(redis|rediss|unix)://")
    # After storing an ask, WAIT until this many replicas of its node have it (0: do not
    # wait); an ask not copied within redis_wait_timeout_ms is answered 503, not 201, so
    # a failover cannot lose an ask the agent was told about.
    redis_wait_replicas: int = Field(0, ge=0, le=16)
    redis_wait_timeout_ms: int = Field(1000, ge=1, le=60_000)
    api_host: str = "127.0.0.1"
    api_port: int = Field(8000, ge=1, le=65535)
    # The web Control UI's public base URL (links in prompts point there).
    web_base_url: str = "http://127.0.0.1:8001"
    # Where the web Control UI service listens (its public base is web_base_url).
    web_host: str = "127.0.0.1"
    web_port: int = Field(8001, ge=1, le=65535)
    # Signs Control UI links and anything else askgate signs for itself.
    secret_key: str = Field("", min_length=0)

    timeout_default_s: int = Field(900, ge=1)
    timeout_min_s: int = Field(30, ge=1)
    timeout_max_s: int = Field(3600, ge=1)
    result_ttl_s: int = Field(86400, ge=1)
    web_link_ttl_s: int = Field(7 * 86400, ge=60)

    tenant_max_pending: int = Field(1000, ge=1)
    tenant_asks_per_s: int = Field(50, ge=1)

    # A session message (POST /v1/sessions/{s}/messages) with nothing pending is kept as
    # the late answer of the session's newest question when that one ended without an
    # answer at most this long ago (0: never; an answer to a named question always is).
    late_answer_window_s: int = Field(600, ge=0)
    # A session's index (what GET /v1/questions?session= lists, the Control UI's
    # timeline, what a late answer is matched to) is kept this long after the deadline of
    # the session's newest question; each question stays readable by id for
    # result_ttl_s. Shorter than result_ttl_s, it costs a session asked once ~7 B per
    # retained question instead of ~170 (docs/benchmarks.md).
    session_history_s: int = Field(3600, ge=60)

    # A chat target not shown this long after its ask, while its channel has no live
    # worker, fails (when no other target can show the ask, it ends delivery_failed).
    channel_grace_s: int = Field(30, ge=1)

    stream_maxlen: int = Field(100_000, ge=1000)
    sweep_interval_ms: int = Field(200, ge=10)
    sweep_batch: int = Field(500, ge=1, le=10_000)

    # Every request body (API and web), in bytes: a worst-case ask is ~70 KB with every
    # non-ASCII character \u-escaped; free text is bounded anyway (models.FREE_TEXT_MAX).
    body_max_bytes: int = Field(128 * 1024, ge=4096)

    # Ranges askgate may POST tenants' URLs to although they are not public addresses
    # (comma-separated CIDRs, e.g. 10.0.0.0/8,fd00::/8). Empty: public addresses only.
    outbound_allow: str = ""

    log_level: str = Field("info", pattern=r"^(?i:debug|info|warning|error)$")
    log_json: bool = False

    @field_validator("outbound_allow")
    @classmethod
    def _cidrs(cls, v: str) -> str:
        parse_cidrs(v)  # a ValueError here names the bad entry
        return v

    def outbound_policy(self) -> Policy:
        """The operator's outbound policy (askgate.domain.netguard); tenants may add ranges."""
        return Policy(parse_cidrs(self.outbound_allow))

    @model_validator(mode="after")
    def _timeouts_ordered(self) -> Self:
        if not self.timeout_min_s <= self.timeout_default_s <= self.timeout_max_s:
            raise ValueError(
                "ASKGATE_TIMEOUT_MIN_S <= ASKGATE_TIMEOUT_DEFAULT_S <= ASKGATE_TIMEOUT_MAX_S "
                f"must hold (got {self.timeout_min_s}, {self.timeout_default_s}, "
                f"{self.timeout_max_s})"
            )
        return self

    @model_validator(mode="after")
    def _history_covers_late_answers(self) -> Self:
        if self.session_history_s < self.late_answer_window_s:
            raise ValueError(
                "ASKGATE_SESSION_HISTORY_S must be at least ASKGATE_LATE_ANSWER_WINDOW_S: a "
                "late answer is matched through the session's index (got "
                f"{self.session_history_s} < {self.late_answer_window_s})"
            )
        return self

    @model_validator(mode="after")
    def _cluster_url(self) -> Self:
        if not self.redis_cluster:
            return self
        url = urlsplit(self.redis_url)
        if url.scheme == "unix":
            raise ValueError(
                "ASKGATE_REDIS_CLUSTER=true needs REDIS_URL over TCP "
                "(redis:// or rediss://): a cluster is not reached by a socket file"
            )
        if url.path.strip("/") not in ("", "0"):
            raise ValueError(
                "ASKGATE_REDIS_CLUSTER=true: a Redis Cluster has only database 0, "
                f"so drop {url.path!r} from REDIS_URL"
            )
        if self.jobs_redis_url and self.jobs_redis_url == self.redis_url:
            raise ValueError(
                "ASKGATE_JOBS_REDIS_URL must name a Redis outside the cluster "
                "(RQ cannot run on Redis Cluster), not REDIS_URL"
            )
        return self

    def jobs_redis(self) -> str:
        """The URL of the Redis that RQ's queues live on."""
        if self.jobs_redis_url:
            return self.jobs_redis_url
        if self.redis_cluster:
            raise ConfigError(
                "ASKGATE_JOBS_REDIS_URL must be set when ASKGATE_REDIS_CLUSTER=true: the "
                "webhook jobs run on RQ, which needs a Redis outside the cluster "
                "(for example redis://askgate-jobs:6379/0)"
            )
        return self.redis_url

    def require_secret(self) -> str:
        if len(self.secret_key) < 32:
            raise ConfigError(
                "ASKGATE_SECRET_KEY must be set to at least 32 random characters "
                "(for example: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
        return self.secret_key


S = TypeVar("S", bound=BaseSettings)


def load(cls: type[S]) -> S:
    """Build settings from the environment, or raise ConfigError naming each bad variable."""
    try:
        return cls()
    except ValidationError as exc:
        prefix = str(cls.model_config.get("env_prefix", ""))
        lines = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"])
            var = f"{prefix}{field}".upper() if field else "settings"
            if field == "redis_url":
                var = "REDIS_URL"
            lines.append(f"{var}: {err['msg']} (got {err.get('input')!r})")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None
