"""The client's view of the ask and of the question resource agrees with the server's
models: the same keys, the same required keys, every field of the ask reachable from
`ask()`, and the resource as the server builds it readable by the client."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from askgate.domain import models
from askgate.domain.resource import QuestionPublic
from askgate_client import (
    Askgate,
    AsyncAskgate,
    DiscordTargetSpec,
    EscalationStepSpec,
    OptionSpec,
    Question,
    QuestionSpec,
    RemindSpec,
    SlackTargetSpec,
    TelegramTargetSpec,
    TextTargetSpec,
    WebTargetSpec,
)
from askgate_client._protocol import ask_body
from pydantic import BaseModel

SHAPES: list[tuple[Any, type[BaseModel]]] = [
    (OptionSpec, models.Option),
    (QuestionSpec, models.QuestionIn),
    (TelegramTargetSpec, models.TelegramTarget),
    (SlackTargetSpec, models.SlackTarget),
    (DiscordTargetSpec, models.DiscordTarget),
    (WebTargetSpec, models.WebTarget),
    (TextTargetSpec, models.TextTarget),
    (RemindSpec, models.Remind),
    (EscalationStepSpec, models.EscalationStep),
]
# The keyword of each ask field where it is not the wire name.
KEYWORD = {"timeoutSeconds": "timeout_s"}
ASKS: list[Callable[..., Any]] = [Askgate.ask, Askgate.start, AsyncAskgate.ask, AsyncAskgate.start]


@pytest.mark.parametrize(("spec", "model"), SHAPES, ids=lambda x: getattr(x, "__name__", ""))
def test_client_shape_has_the_models_keys(spec: Any, model: type[BaseModel]) -> None:
    """Each TypedDict has exactly the keys of the server model it stands for."""
    assert set(spec.__annotations__) == set(model.model_fields)


@pytest.mark.parametrize(("spec", "model"), SHAPES, ids=lambda x: getattr(x, "__name__", ""))
def test_client_shape_requires_what_the_model_requires(spec: Any, model: type[BaseModel]) -> None:
    """A key the server requires is required in the TypedDict, and only those."""
    required = {name for name, f in model.model_fields.items() if f.is_required()}
    assert set(spec.__required_keys__) == required


@pytest.mark.parametrize("call", ASKS, ids=lambda f: f.__qualname__)
def test_every_field_of_the_ask_is_a_keyword(call: Callable[..., Any]) -> None:
    """ask() and start(), sync and async, take every field of POST /v1/questions."""
    params = set(inspect.signature(call).parameters) - {"self"}
    assert params == {KEYWORD.get(f, f) for f in models.QuestionCreate.model_fields}


def test_ask_body_sends_remind_and_escalate() -> None:
    """remind and escalate travel in the body as given; what is None is left out."""
    step = {"after_s": 600, "targets": [{"channel": "telegram", "chat_id": "42"}]}
    body = ask_body(
        [{"id": "x", "header": "X", "question": "Q?", "options": []}],
        session="s",
        timeout_s=None,
        tool_call_id="c1",
        targets=None,
        run_id=None,
        agent_id=None,
        locale=None,
        callback_url=None,
        remind={"every_s": 300, "max": 2},
        escalate=[step],
        primary=True,
    )
    assert body == {
        "questions": [{"id": "x", "header": "X", "question": "Q?", "options": []}],
        "session": "s",
        "tool_call_id": "c1",
        "remind": {"every_s": 300, "max": 2},
        "escalate": [step],
    }


def test_ask_body_is_what_the_server_accepts() -> None:
    """A body with every field the client can send validates as the server's ask."""
    body = ask_body(
        [
            {
                "id": "deploy_target",
                "header": "Deploy",
                "question": "Where?",
                "options": [{"label": "Staging"}, {"label": "Production"}],
            }
        ],
        session="s",
        timeout_s=60,
        tool_call_id="c1",
        targets=[{"channel": "web"}, {"channel": "slack", "channel_id": "C1"}],
        run_id="r1",
        agent_id="a1",
        locale="tr",
        callback_url="https://example.com/hook",
        remind={"every_s": 60, "max": 0},
        primary=False,
        escalate=[{"after_s": 30, "targets": [{"channel": "discord", "channel_id": "123"}]}],
    )
    ask = models.QuestionCreate.model_validate(body)
    assert set(ask.model_fields_set) == set(models.QuestionCreate.model_fields)


def test_resource_fields_are_the_servers() -> None:
    """Every field the client reads from the resource is one the server documents."""
    assert set(Question.model_fields) - {"raw"} <= set(QuestionPublic.model_fields)


def test_client_reads_the_resource_the_server_builds() -> None:
    """The server's resource, remind and escalation included, parses as the client's."""
    public = QuestionPublic.model_validate(
        {
            "id": "q03abc",
            "status": "answered",
            "reason": None,
            "session": "s",
            "result": {"status": "answered", "answers": {"answers": {"x": ["A"]}}},
            "questions": [
                {
                    "id": "x",
                    "header": "X",
                    "question": "Q?",
                    "options": [{"label": "A"}, {"label": "B"}],
                }
            ],
            "timeout_s": 900,
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-01T00:15:00Z",
            "result_key": "k",
            "result_channel": "c",
            "remind": {"every_s": 300, "max": 3, "sent": 1},
            "escalation": [
                {"step": 1, "after_s": 600, "due_at": "2026-01-01T00:10:00Z", "targets": [1]}
            ],
        }
    )
    question = Question.from_resource(public.model_dump(mode="json"))
    assert (question.remind, question.escalation[0]["after_s"]) == (
        {"every_s": 300, "max": 3, "final_warning_s": None, "sent": 1},
        600,
    )
    outcome = question.outcome()
    assert outcome is not None and outcome.answers == {"x": ["A"]}
