"""askgate's Python client: ask a human 1-3 questions and wait for the answer.

    from askgate_client import AsyncAskgate

    async with AsyncAskgate("http://127.0.0.1:8000", api_key, session="demo") as ag:
        result = await ag.ask([{"id": "deploy_target", "header": "Deploy", ...}])
        result.tool_result  # exactly {"status": "answered", "answers": {"answers": {...}}}

`Askgate` is the same client, blocking. Both wait on the long-poll endpoint in windows of
at most 60 s, re-waiting across API restarts and dropped connections. It needs httpx and
pydantic only: no Redis, no server code.
"""

from askgate_client._async import AsyncAskgate
from askgate_client._errors import (
    ApiError,
    ApiUnavailable,
    ClientError,
    InvalidAsk,
    QuestionNotFound,
    SessionBusyError,
    UnexpectedResponse,
)
from askgate_client._resource import AskResult, Question
from askgate_client._sync import Askgate
from askgate_client._types import (
    DiscordTargetSpec,
    EscalationStepSpec,
    Locale,
    OptionSpec,
    QuestionSpec,
    RemindSpec,
    SlackTargetSpec,
    TargetSpec,
    TelegramTargetSpec,
    TextTargetSpec,
    WebTargetSpec,
)
from askgate_client._webhooks import verify_webhook

__all__ = [
    "ApiError",
    "ApiUnavailable",
    "AskResult",
    "Askgate",
    "AsyncAskgate",
    "ClientError",
    "DiscordTargetSpec",
    "EscalationStepSpec",
    "InvalidAsk",
    "Locale",
    "OptionSpec",
    "Question",
    "QuestionNotFound",
    "QuestionSpec",
    "RemindSpec",
    "SessionBusyError",
    "SlackTargetSpec",
    "TargetSpec",
    "TelegramTargetSpec",
    "TextTargetSpec",
    "UnexpectedResponse",
    "WebTargetSpec",
    "verify_webhook",
]
