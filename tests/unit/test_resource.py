"""The question resource built straight from the stored hash matches its documented model."""

from __future__ import annotations

from typing import Any

import orjson
from askgate.domain.resource import QuestionPublic
from askgate.store.record import Record

DOC = [
    {
        "id": "deploy_target",
        "header": "Deploy",
        "question": "Where?",
        "multiSelect": False,
        "options": [
            {"label": "Staging (Recommended)", "description": "Safe"},
            {"label": "Production"},
        ],
    }
]


def model_form(data: dict[str, Any]) -> dict[str, Any]:
    """The QuestionPublic model's JSON form of `data`, absent descriptions left out as the
    API leaves them out."""
    dumped = QuestionPublic.model_validate(data).model_dump(mode="json")
    for q in dumped["questions"]:
        for o in q["options"]:
            if o["description"] is None:
                del o["description"]
    return dumped


def record(**extra: str) -> Record:
    return Record(
        "q03abcdefghijabcdefghij",
        {
            "tenant": "t1",
            "session": "s",
            "status": "pending",
            "locale": "tr",
            "created": "1764500000000",
            "expires": "1764500900000",
            "timeout": "900",
            "doc": orjson.dumps(DOC).decode(),
            "channels": "web,telegram",
            "ntargets": "2",
            "targets": orjson.dumps(
                [{"channel": "telegram", "chat_id": "5"}, {"channel": "web"}]
            ).decode(),
            "ds:1": "delivered",
            **extra,
        },
    )


def test_pending_resource_matches_model() -> None:
    """A pending question's dict equals the QuestionPublic model's JSON form."""
    rec = record(**{"d:0": '{"status":"failed","error":"chat not found","ref":null,"at":null}'})
    data = rec.public_dict("http://ui/s/t1/s")
    assert data == model_form(data)
    assert data["questions"] == DOC
    assert [d["status"] for d in data["deliveries"]] == ["failed", "delivered"]
    assert data["expires_at"] == "2025-11-30T11:08:20.000Z"


def test_final_resource_matches_model() -> None:
    """An answered question's dict carries the result, responder and resolution time."""
    rec = record(
        status="answered",
        result='{"status":"answered","answers":{"answers":{"deploy_target":["Production"]}}}',
        responder='{"channel":"api"}',
        resolved="1764500100000",
        run="r1",
    )
    data = rec.public_dict()
    assert data == model_form(data)
    assert data["responder"] == {"channel": "api", "user_id": None, "name": None}
    assert data["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}
    assert data["run_id"] == "r1" and data["reason"] is None
