"""The Python client for askgate: ask a human 1-3 questions and wait for the answer.

    from askgate.client import AsyncAskgate

    async with AsyncAskgate("http://127.0.0.1:8000", api_key, session="demo") as ag:
        result = await ag.ask([{"id": "deploy_target", "header": "Deploy", ...}])
        result.tool_result  # exactly the seed's {"status": "answered", "answers": {...}}

`Askgate` is the same client, blocking. Both wait on the long-poll endpoint in windows of
at most 60 s, re-waiting across API restarts and dropped connections.
"""

from askgate.client._async import AsyncAskgate
from askgate.client._errors import (
    ApiError,
    ApiUnavailable,
    ClientError,
    InvalidAsk,
    QuestionNotFound,
    SessionBusyError,
)
from askgate.client._sync import Askgate
from askgate.client._types import AskResult, OptionSpec, Question, QuestionSpec

__all__ = [
    "ApiError",
    "ApiUnavailable",
    "AskResult",
    "Askgate",
    "AsyncAskgate",
    "ClientError",
    "InvalidAsk",
    "OptionSpec",
    "Question",
    "QuestionNotFound",
    "QuestionSpec",
    "SessionBusyError",
]
