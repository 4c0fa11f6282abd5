"""What tests build asks from: the settings, the test tenant's credentials and the README
example ask."""

from __future__ import annotations

from typing import Any

import httpx
from askgate.settings import Settings

SECRET = "test-secret-" + "x" * 32


def make_settings(url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "redis_url": url,
        "secret_key": SECRET,
        "timeout_min_s": 1,
        "timeout_default_s": 900,
        "timeout_max_s": 3600,
        "sweep_interval_ms": 50,
        **overrides,
    }
    return Settings(**values)


class Tenant:
    def __init__(self, tenant_id: str, api_key: str, webhook_secret: str) -> None:
        self.id = tenant_id
        self.api_key = api_key
        self.webhook_secret = webhook_secret
        self.headers = {"Authorization": f"Bearer {api_key}"}


def ask_body(session: str = "s1", **extra: Any) -> dict[str, Any]:
    """The README "The ask" example ask, with the context beside it."""
    return {
        "questions": [
            {
                "id": "deploy_target",
                "header": "Deploy",
                "question": "Where should I deploy this build?",
                "options": [
                    {"label": "Staging (Recommended)", "description": "Safe, reversible"},
                    {"label": "Production"},
                ],
                "multiSelect": False,
            }
        ],
        "timeoutSeconds": 900,
        "session": session,
        **extra,
    }


async def question(client: httpx.AsyncClient, tenant: Tenant, qid: str) -> dict[str, Any]:
    """The question's resource as the API shows it to its tenant."""
    r = await client.get(f"/v1/questions/{qid}", headers=tenant.headers)
    return dict(r.json())
