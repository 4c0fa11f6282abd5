"""Records as the store would read them, for pure tests of what is built from one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from askgate.domain.models import QuestionIn
from askgate.store.record import Record


def record_of(
    questions: Sequence[QuestionIn],
    *,
    status: str = "pending",
    reason: str | None = None,
    result: Mapping[str, Any] | None = None,
    locale: str = "en",
    targets: Sequence[Mapping[str, Any]] = (),
) -> Record:
    fields = {
        "tenant": "t1",
        "session": "s1",
        "status": status,
        "locale": locale,
        "created": "1764500000000",
        "expires": "1764500900000",
        "timeout": "900",
        "doc": orjson.dumps([q.model_dump(mode="json") for q in questions]).decode(),
        "targets": orjson.dumps(list(targets)).decode(),
        "ntargets": str(len(targets)),
        "channels": "web",
    }
    if reason:
        fields["reason"] = reason
    if result is not None and status == "answered":
        fields["result"] = orjson.dumps(result).decode()
    return Record("q03abcdefghijabcdefghij", fields)
