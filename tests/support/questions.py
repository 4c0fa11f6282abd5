"""Questions several tests ask, and what they read back."""

from __future__ import annotations

from typing import Any

# Three questions, the middle one multi-select (the plain-text and Telegram tests).
THREE: list[dict[str, Any]] = [
    {
        "id": "env",
        "header": "Env",
        "question": "Which environment?",
        "options": [{"label": "Staging"}, {"label": "Production"}],
    },
    {
        "id": "areas",
        "header": "Areas",
        "question": "Which areas changed?",
        "options": [{"label": "Auth"}, {"label": "Billing"}, {"label": "Search"}],
        "multiSelect": True,
    },
    {
        "id": "notify",
        "header": "Notify",
        "question": "Who should be told?",
        "options": [{"label": "Team"}, {"label": "Nobody"}],
    },
]


def answers(body: dict[str, Any]) -> dict[str, list[str]]:
    """The answers of a final question's resource."""
    return dict(body["result"]["answers"]["answers"])


# One multi-select question (the Slack tests).
AREAS: dict[str, Any] = {
    "id": "areas",
    "header": "Areas",
    "question": "Which areas changed?",
    "multiSelect": True,
    "options": [{"label": "Auth"}, {"label": "Billing"}, {"label": "Search"}],
}

# Three questions, the first the README's deploy target (the Slack tests).
DEPLOY_AREAS_NOTIFY: list[dict[str, Any]] = [
    {
        "id": "deploy_target",
        "header": "Deploy",
        "question": "Where?",
        "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}],
    },
    AREAS,
    {
        "id": "notify",
        "header": "Notify",
        "question": "Tell the team?",
        "options": [{"label": "Yes"}, {"label": "No"}],
    },
]
