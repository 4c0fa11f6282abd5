"""Configuration: where the API is, the key, and the session and targets to ask in.

From the environment (`ASKGATE_URL`, `ASKGATE_API_KEY`, `ASKGATE_SESSION`,
`ASKGATE_TARGETS`, `ASKGATE_REMIND` and `ASKGATE_ESCALATE` as JSON, `ASKGATE_LOCALE`, …)
with command-line flags on top, built in `main()` and validated there with one message
per bad value. Targets, `remind` and `escalate` are checked for their shape here (keys,
types); the API checks their rules (ranges, ids) and names the field in its message.
"""

from __future__ import annotations

from typing import Any

from askgate_client import EscalationStepSpec, Locale, RemindSpec, TargetSpec
from pydantic import Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)


class ConfigError(Exception):
    """A setting is missing or wrong; the message names each bad variable."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _EnvUnlessFlagged(PydanticBaseSettingsSource):
    """The environment without what a flag gives: a flag replaces its variable whole
    (pydantic-settings would merge a JSON object from both, key by key)."""

    def __init__(self, env: PydanticBaseSettingsSource, flags: InitSettingsSource) -> None:
        super().__init__(env.settings_cls)
        self.env = env
        self.flags = flags

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.env.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        return {k: v for k, v in self.env().items() if k not in self.flags.init_kwargs}


class McpSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASKGATE_", extra="ignore", frozen=True)

    url: str = Field("http://127.0.0.1:8000", pattern=r"^https?://")
    api_key: str = Field(min_length=1)
    # One stdio server serves one agent session; under --http every MCP client shares it.
    session: str = Field("mcp", min_length=1, max_length=200)
    targets: list[TargetSpec] = Field(default_factory=list)
    locale: Locale = "en"
    # Sent with every ask (the tool's schema stays the contract's: the model never sets them).
    remind: RemindSpec | None = None
    escalate: list[EscalationStepSpec] = Field(default_factory=list)
    run_id: str | None = None
    agent_id: str | None = None
    # Progress notifications while waiting keep MCP clients' request timeouts from firing.
    progress_interval_s: float = Field(10.0, gt=0)
    log_level: str = Field("warning", pattern=r"^(?i:debug|info|warning|error)$")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        assert isinstance(init_settings, InitSettingsSource)
        return init_settings, _EnvUnlessFlagged(env_settings, init_settings)


def load_settings(**overrides: Any) -> McpSettings:
    """Settings from the environment with `overrides` (flags) on top; a ConfigError
    names each bad variable."""
    try:
        return McpSettings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "settings"
            rest = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"][1:])
            lines.append(f"ASKGATE_{field.upper()}{rest}: {err['msg']}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None
