"""Outgoing POSTs (webhooks, text channel): which answers are retried, and how long the
webhook waits before the next attempt."""

from __future__ import annotations

from email.utils import formatdate

import orjson
from askgate.runtime.outbound import classify, retry_after_s
from askgate.store.record import Record
from askgate_webhooks.config import WebhookSettings
from askgate_webhooks.jobs import backoff_s
from askgate_webhooks.render import result_body

SETTINGS = WebhookSettings(webhook_backoff_s=1.0, webhook_backoff_max_s=10.0)


def test_client_error_is_permanent() -> None:
    """A 4xx other than 429 is not retried."""
    outcome = classify(404)
    assert not outcome.ok and not outcome.retry


def test_server_error_is_retried() -> None:
    """A 5xx is retried."""
    assert classify(503).retry and not classify(503).ok


def test_redirect_is_permanent() -> None:
    """A 3xx is not followed and not retried."""
    assert not classify(301).retry


def test_rate_limit_carries_retry_after_seconds() -> None:
    """A 429 is retried and keeps its Retry-After in seconds."""
    outcome = classify(429, "7")
    assert outcome.retry and outcome.retry_after_s == 7.0


def test_retry_after_http_date_is_read() -> None:
    """Retry-After as an HTTP date becomes the seconds until then."""
    seconds = retry_after_s(formatdate(2_000_000_000, usegmt=True))
    assert seconds is not None and seconds > 0


def test_backoff_doubles_up_to_the_cap() -> None:
    """Attempt n waits base * 2**(n-1), never more than the cap."""
    waits = [backoff_s(SETTINGS, n, classify(500)) for n in range(1, 6)]
    assert waits == [1.0, 2.0, 4.0, 8.0, 10.0]


def test_backoff_honours_retry_after() -> None:
    """A 429's Retry-After replaces the computed wait (still capped)."""
    assert backoff_s(SETTINGS, 1, classify(429, "3")) == 3.0
    assert backoff_s(SETTINGS, 1, classify(429, "3600")) == 10.0


def _final(status: str, reason: str, result: bytes) -> Record:
    return Record(
        "q00abcdefghijklmnopqrst",
        {
            "tenant": "t1",
            "session": "s1",
            "status": status,
            "reason": reason,
            "result": result.decode(),
            "created": "1700000000000",
            "resolved": "1700000005000",
            "doc": "[]",
            "responder": '{"channel":"text","user_id":"u1"}',
            "run": "r1",
        },
    )


def test_answered_body_carries_the_contract_result_and_answers() -> None:
    """The webhook body holds the result exactly and the answers beside it."""
    contract = b'{"status":"answered","answers":{"answers":{"deploy_target":["Production"]}}}'
    body = orjson.loads(result_body(_final("answered", "", contract)))
    assert orjson.dumps(body["result"]) == contract
    assert body == {
        "question_id": "q00abcdefghijklmnopqrst",
        "status": "answered",
        "reason": None,
        "result": orjson.loads(contract),
        "answers": {"deploy_target": ["Production"]},
        "responder": {"channel": "text", "user_id": "u1"},
        "created_at": "2023-11-14T22:13:20.000Z",
        "resolved_at": "2023-11-14T22:13:25.000Z",
        "session": "s1",
        "run_id": "r1",
    }


def test_no_answer_body_has_reason_and_no_answers() -> None:
    """A no_answer body names its reason and has no answers field."""
    body = orjson.loads(result_body(_final("no_answer", "timeout", b'{"status":"no_answer"}')))
    assert (body["reason"], body["result"]) == ("timeout", {"status": "no_answer"})
    assert "answers" not in body
