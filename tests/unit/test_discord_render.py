"""The Discord worker's pure parts: components within Discord's limits, custom ids, the
error mapping of REST answers, the signature check."""

from __future__ import annotations

import time

import pytest
from askgate.domain.errors import PermanentError, ThrottledError, TransientError
from askgate.domain.models import QuestionIn
from askgate.store.record import new_question_id
from askgate_discord import render
from askgate_discord.client import error_of
from askgate_discord.render import Tap
from askgate_discord.service import verified
from nacl.signing import SigningKey

from tests.support.records import record_of


def question(i: int = 0, multi: bool = False, n: int = 4) -> QuestionIn:
    return QuestionIn.model_validate(
        {
            "id": f"q{i}",
            "header": "H" * 12,
            "question": "Why " + "x" * 990 + "?",
            "options": [{"label": f"{j}" + "L" * 63, "description": "d" * 300} for j in range(n)],
            "multiSelect": multi,
        }
    )


QID = new_question_id("t" * 13, "s" * 200, "r" * 200, "c" * 200)
SHAPES = {
    "single": [question()],
    "multi": [question(multi=True)],
    "three": [question(0), question(1, multi=True), question(2)],
}


@pytest.mark.parametrize("shape", SHAPES)
def test_components_keep_discord_limits(shape: str) -> None:
    """≤ 5 rows, ≤ 5 buttons or one select a row, custom ids 1-100 and unique, labels ≤ 80."""
    qs = SHAPES[shape]
    rows = render.components(qs, "en", QID, 9)
    ids = [c["custom_id"] for row in rows for c in row["components"]]
    assert len(rows) <= 5 and len(ids) == len(set(ids))
    assert all(1 <= len(i) <= 100 for i in ids)
    for row in rows:
        items = row["components"]
        assert len(items) <= 5 and (len(items) == 1 or all(c["type"] == 2 for c in items))
        assert all(len(c.get("label", "")) <= 80 for c in items)
        for c in items:
            assert all(len(o.get("description", "")) <= 100 for o in c.get("options", []))
    assert len(render.content(qs, "en")) <= 2000


def test_tap_round_trips_and_refuses_foreign_ids() -> None:
    """A custom id unpacks to what was packed; another app's ids are not ours."""
    tap = Tap(QID, 3, "o2")
    assert Tap.unpack(tap.pack()) == tap
    assert [Tap.unpack(x) for x in ("", "ag:q:x:o1", "other:q:0:o1", "ag:q:0:")] == [None] * 4


def test_modal_has_one_text_input_per_question_within_45_characters() -> None:
    """The Other… modal: a title and an input label per question, each ≤ 45 characters."""
    data = render.modal(record_of(SHAPES["three"], locale="tr"), 0)["data"]
    inputs = [row["components"][0] for row in data["components"]]
    assert [i["custom_id"] for i in inputs] == ["0", "1", "2"]
    assert all(len(i["label"]) <= 45 for i in inputs) and data["title"] == "Diğer…"
    assert not any(i["required"] for i in inputs)


def response(status: int, body: bytes, **headers: str) -> tuple[int, bytes, str | None]:
    """A REST answer as the client hands it to error_of: status, body, Retry-After."""
    return status, body, headers.get("Retry-After")


def test_429_waits_the_bodys_retry_after() -> None:
    """A 429 is ThrottledError with the body's retry_after, in seconds."""
    err = error_of(
        *response(
            429,
            b'{"message": "rate limited", "retry_after": 2.5, "global": false}',
            **{"Retry-After": "3"},
        )
    )
    assert isinstance(err, ThrottledError) and err.retry_after_s == 2.5


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (502, b"<html>Bad Gateway</html>", TransientError),
        (500, b'{"message": "Internal Server Error", "code": 0}', TransientError),
        (200, b"<html>ok?</html>", TransientError),
        (404, b'{"message": "Unknown Channel", "code": 10003}', PermanentError),
        (403, b'{"message": "Missing Permissions", "code": 50013}', PermanentError),
        (401, b'{"message": "401: Unauthorized", "code": 0}', PermanentError),
    ],
)
def test_rest_answers_map_to_the_kits_errors(status: int, body: bytes, kind: type) -> None:
    """5xx and error pages may pass later; Discord's refusals cannot."""
    err = error_of(*response(status, body))
    assert type(err) is kind
    assert not isinstance(err, ThrottledError)


def test_signature_is_over_timestamp_and_body_and_fresh() -> None:
    """Only the app key's signature of timestamp + body, at most 5 minutes old, verifies."""
    key = SigningKey.generate()
    ts, body = str(int(time.time())), b'{"type": 1}'
    sig = key.sign(ts.encode() + body).signature.hex()
    assert verified(key.verify_key, sig, ts, body)
    assert not verified(key.verify_key, sig, ts, body + b" ")
    assert not verified(key.verify_key, sig, ts, body, now=int(ts) + 301)
    assert not verified(key.verify_key, "zz", ts, body)
    assert not verified(key.verify_key, sig[:-2], ts, body)
