"""The Slack worker's pure parts: action ids, Block Kit limits, summaries, the state of
ticked choices, and Slack's errors as the kit's."""

from __future__ import annotations

from typing import Any

import pytest
from askgate.channels import PermanentError, ThrottledError, TransientError
from askgate.domain.models import QuestionIn
from askgate_slack import render
from askgate_slack.client import call
from slack_sdk.errors import SlackApiError, SlackObjectFormationError
from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    CheckboxesElement,
    Option,
    SectionBlock,
)
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from tests.support.records import record_of

PICK = QuestionIn.model_validate(
    {
        "id": "areas",
        "header": "Areas",
        "question": "Which?",
        "multiSelect": True,
        "options": [{"label": "Auth"}, {"label": "Billing"}, {"label": "Search"}],
    }
)


def test_action_id_round_trips() -> None:
    """An action id packs question, target and action, and unpacks to the same."""
    act = render.Act("q0aabbccddeeff0011", 2, "o3")
    assert render.Act.unpack(act.pack()) == act


@pytest.mark.parametrize("raw", ["", "other:q1:0:o1", "ag:q1:x:o1", "ag:q1:0"])
def test_foreign_action_ids_are_not_ours(raw: str) -> None:
    """Action ids of other apps or malformed ones unpack to None."""
    assert render.Act.unpack(raw) is None


def test_more_than_fifty_blocks_are_refused() -> None:
    """validate() refuses a message of 51 blocks."""
    blocks = [SectionBlock(text=f"s{i}") for i in range(51)]
    with pytest.raises(SlackObjectFormationError):
        render.validate(blocks)


def test_repeated_action_id_in_a_block_is_refused() -> None:
    """validate() refuses two elements with one action_id in a block."""
    same = [ButtonElement(text="a", action_id="x"), ButtonElement(text="b", action_id="x")]
    with pytest.raises(SlackObjectFormationError, match="unique"):
        render.validate([ActionsBlock(elements=same)])


def test_more_than_ten_checkboxes_are_refused() -> None:
    """validate() refuses checkboxes with 11 options."""
    ticks = CheckboxesElement(
        action_id="c", options=[Option(value=str(i), label=str(i)) for i in range(11)]
    )
    with pytest.raises(SlackObjectFormationError, match="10"):
        render.validate([ActionsBlock(elements=[ticks])])


def test_agent_text_is_escaped_for_mrkdwn() -> None:
    """&, < and > in a question cannot become links or mentions."""
    assert render.esc("<!channel> & <@U1>") == "&lt;!channel&gt; &amp; &lt;@U1&gt;"


def test_picked_reads_checkboxes_and_radio_buttons() -> None:
    """Ticked choices in a message's state become {question id: [labels]}."""
    single = QuestionIn.model_validate(
        {
            "id": "go",
            "header": "Go",
            "question": "Go?",
            "options": [{"label": "Yes"}, {"label": "No"}],
        }
    )
    k0, k1 = render.Act("q1", 0, "q0").pack(), render.Act("q1", 0, "q1").pack()
    values = {
        k0: {k0: {"selected_option": {"value": "1"}}},
        k1: {k1: {"selected_options": [{"value": "2"}, {"value": "0"}]}},
    }
    assert render.picked([single, PICK], values, "q1", 0) == {
        "go": ["No"],
        "areas": ["Auth", "Search"],
    }


def test_free_text_summary_is_hidden_in_a_channel_and_shown_in_a_dm() -> None:
    """A typed answer shows as a placeholder in a channel, as typed in a DM."""
    go = QuestionIn.model_validate(
        {
            "id": "go",
            "header": "Go",
            "question": "Go?",
            "options": [{"label": "Yes"}, {"label": "No"}],
        }
    )
    rec = record_of(
        [go],
        status="answered",
        result={"status": "answered", "answers": {"answers": {"go": ["my plan"]}}},
    )
    assert render.summary(rec, private=False).text == "Answered: (your answer)"
    assert render.summary(rec, private=True).text == "Answered: my plan"


def slack_error(status: int, data: Any, headers: dict[str, str] | None = None) -> SlackApiError:
    response = AsyncSlackResponse(
        client=None,
        http_verb="POST",
        api_url="x",
        req_args={},
        data=data,
        headers=headers or {},
        status_code=status,
    )
    return SlackApiError("failed", response)


async def raising(exc: Exception) -> AsyncSlackResponse:
    raise exc


@pytest.mark.parametrize(
    ("exc", "kind", "detail"),
    [
        (
            slack_error(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "7"}),
            ThrottledError,
            7.0,
        ),
        (slack_error(200, {"ok": False, "error": "channel_not_found"}), PermanentError, None),
        (slack_error(200, {"ok": False, "error": "invalid_auth"}), PermanentError, None),
        (slack_error(502, {}), TransientError, False),
        (slack_error(200, {"ok": False, "error": "internal_error"}), TransientError, True),
        (TimeoutError(), TransientError, True),
    ],
)
async def test_slack_errors_map_to_the_kit(
    exc: Exception, kind: type[Exception], detail: Any
) -> None:
    """429 → throttled with Retry-After; refusals → permanent; an HTML page, 5xx codes
    and timeouts → transient (maybe sent unless Slack surely never saw it)."""
    with pytest.raises(kind) as info:
        await call(lambda: raising(exc))
    err = info.value
    if isinstance(err, ThrottledError):
        assert err.retry_after_s == detail
    elif isinstance(err, TransientError):
        assert err.maybe_sent is detail
