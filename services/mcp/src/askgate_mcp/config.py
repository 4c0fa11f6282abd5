"""Configuration: where the API is, the key, and the session and targets to ask in.

From the environment (`ASKGATE_URL`, `ASKGATE_API_KEY`, `ASKGATE_SESSION`,
`ASKGATE_TARGETS` as JSON, `ASKGATE_LOCALE`, …) with command-line flags on top, built
in `main()` and validated there with one message per bad value.
"""

from __future__ import annotations

from typing import Any

from askgate.errors import ConfigError
from askgate.models import Locale, Target
from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict


class McpSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASKGATE_", extra="ignore", frozen=True)

    url: str = Field("http://127.0.0.1:8000", pattern=r"^https?://")
    api_key: str = Field(min_length=1)
    # One stdio server serves one agent session; under --http every MCP client shares it.
    session: str = Field("mcp", min_length=1, max_length=200)
    targets: list[Target] = Field(default_factory=list)
    locale: Locale = "en"
    run_id: str | None = None
    agent_id: str | None = None
    # Progress notifications while waiting keep MCP clients' request timeouts from firing.
    progress_interval_s: float = Field(10.0, gt=0)
    log_level: str = Field("warning", pattern=r"^(?i:debug|info|warning|error)$")

    def target_dicts(self) -> list[dict[str, Any]]:
        return [t.model_dump(mode="json", exclude_none=True) for t in self.targets]


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
