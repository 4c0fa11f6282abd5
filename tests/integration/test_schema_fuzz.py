"""Schemathesis against the API's own /openapi.json, over real HTTP (uvicorn): every
operation with generated valid and invalid input (bodies of the write endpoints included),
with a valid API key and without one. No response may be a 5xx, and every 4xx has the
`{"error": {"code", "message"}}` shape. Half the cases that name a question or a session
name a real pending one, so the answer, reply and message logic is reached, not only the
404. Derandomized and bounded here (ASKGATE_FUZZ_EXAMPLES per operation, mode and key);
`make chaos` runs it longer."""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
import requests
import schemathesis

# Imported at collection, not lazily by the first test that builds the schema: pytest
# rewrites the asserts of schemathesis' modules (a pytest plugin) as they are imported, and
# that ast.parse in the middle of a long session has failed with CPython 3.11's "AST
# constructor recursion depth mismatch" SystemError.
import schemathesis.specs.openapi.schemas
from askgate.dev.redis_server import RedisProcess
from askgate.store.conn import connect
from askgate.store.tenants import create_tenant
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode

from tests.integration.served import Served
from tests.support.asks import SECRET, ask_body, make_settings
from tests.support.databases import own_database

EXAMPLES = int(os.environ.get("ASKGATE_FUZZ_EXAMPLES", "12"))
PUBLIC = "93.184.216.34"


async def fake_dns(host: str, port: int) -> Sequence[str]:
    """Every generated hostname resolves to one public address (no real DNS in tests)."""
    return [PUBLIC]


def spec() -> dict[str, Any]:
    from askgate_api.app import create_app

    return dict(create_app(make_settings("redis://127.0.0.1:1/0")).openapi())


def _can_be_invalid(op: dict[str, Any]) -> bool:
    """Whether any input of the operation has a rule to break (a body, a typed or
    bounded parameter); a lone free-form string path parameter has none."""
    if "requestBody" in op:
        return True
    return any(
        p["schema"].get("type") != "string" or len(p["schema"]) > 2
        for p in op.get("parameters", [])
    )


def cases() -> list[Any]:
    out = []
    for path, item in spec()["paths"].items():
        for method, op in item.items():
            modes = [GenerationMode.POSITIVE]
            if _can_be_invalid(op):
                modes.append(GenerationMode.NEGATIVE)
            for mode in modes:
                for keyed in (True, False):
                    label = f"{method.upper()} {path} {mode.value} {'key' if keyed else 'no-key'}"
                    out.append(pytest.param(method.upper(), path, mode, keyed, id=label))
    return out


class Api:
    def __init__(self, url: str, key: str) -> None:
        self.url = url
        self.key = key
        self.headers = {"Authorization": f"Bearer {key}"}
        self.sessions = itertools.count()

    def pending(self) -> tuple[str, str]:
        """A fresh pending question: (its id, its session)."""
        session = f"fuzz-{next(self.sessions)}"
        r = requests.post(
            f"{self.url}/v1/questions",
            json=ask_body(session=session),
            headers=self.headers,
            timeout=10,
        )
        assert r.status_code == 201, r.text
        return r.json()["id"], session


@pytest.fixture(scope="module")
def api(redis_server: RedisProcess) -> Iterator[Api]:
    from askgate_api.app import create_app

    redis_url = own_database(redis_server)

    async def tenant() -> str:
        redis = connect(redis_url)
        try:
            _, key = await create_tenant(redis, "fuzz", max_pending=10**6, asks_per_s=10**6)
        finally:
            await redis.aclose()
        return key

    key = asyncio.run(tenant())
    app = create_app(make_settings(redis_url, secret_key=SECRET), resolver=fake_dns)
    with Served(app) as served:
        yield Api(served.url, key)


def check(response: requests.Response, what: str) -> None:
    assert response.status_code < 500, f"{what}: {response.status_code} {response.text[:300]}"
    if response.status_code >= 400:
        try:
            body: Any = response.json()
        except ValueError:
            raise AssertionError(
                f"{what}: {response.status_code} is not JSON: {response.text[:300]}"
            ) from None
        assert isinstance(body, dict) and set(body) == {"error"}, f"{what}: {body}"
        error = body["error"]
        assert isinstance(error.get("code"), str) and isinstance(error.get("message"), str), (
            f"{what}: {body}"
        )


SCHEMA: Any = None


def schema() -> Any:
    global SCHEMA
    if SCHEMA is None:
        SCHEMA = schemathesis.openapi.from_dict(spec())
    return SCHEMA


@pytest.mark.parametrize(("method", "path", "mode", "keyed"), cases())
def test_no_5xx_and_every_4xx_in_the_error_shape(
    api: Api, method: str, path: str, mode: GenerationMode, keyed: bool
) -> None:
    """Generated requests to this operation never get a 5xx; every 4xx is in the shape."""
    operation = schema()[path][method]
    headers = api.headers if keyed else {}
    real = itertools.count()

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        params = case.path_parameters or {}
        # Every other case names a real pending question or session (not for wait:
        # a generated timeout_s would hold it for up to a minute).
        if keyed and next(real) % 2 == 0 and not path.endswith("/wait"):
            qid, session = api.pending()
            if "question_id" in params:
                params["question_id"] = qid
            if "session" in params:
                params["session"] = session
        response = case.call(base_url=api.url, headers=headers, timeout=30)
        check(response, f"{method} {case.formatted_path}")

    run()
