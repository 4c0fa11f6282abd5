"""The MCP server driven by the MCP SDK's own client, against the API as a process: as its
real console script over stdio (its tool list, an answered ask, its configuration from the
environment), and in-process (`Client(server)`, the SDK's in-memory transport) for the
rest, which would otherwise each pay a process's import of the SDK (~1.3 CPU-seconds)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import jsonschema  # type: ignore[import-untyped]
import pytest
from askgate_mcp.config import load_settings

from tests.support.agents import answer_production, pending_question
from tests.support.asks import Tenant, ask_body
from tests.support.http import local_client
from tests.support.processes import ApiProcess
from tests.support.waiting import eventually

if TYPE_CHECKING:
    # The SDK is imported by the tests that use it (the worker that runs this module),
    # not by every worker's collection (~1 CPU-second each).
    from mcp import Client
    from mcp_types import CallToolResult

SEED_INPUT = {k: v for k, v in ask_body().items() if k in ("questions", "timeoutSeconds")}
SEED_ANSWERED = {"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}}
SESSION = "mcp-session"


def text_of(result: CallToolResult) -> str:
    from mcp_types import TextContent

    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@asynccontextmanager
async def mcp_client(api_server: ApiProcess, tenant: Tenant, **env: str) -> AsyncIterator[Client]:
    """`askgate-mcp` spawned over stdio for this tenant (`env` on top), and a connected
    MCP client (a context manager, not a fixture: anyio needs one task to enter and exit
    it)."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "askgate-mcp"),
        env={
            "ASKGATE_URL": api_server.url,
            "ASKGATE_API_KEY": tenant.api_key,
            "ASKGATE_SESSION": SESSION,
            "ASKGATE_PROGRESS_INTERVAL_S": "0.2",
            **env,
        },
    )
    async with Client(params) as client:
        yield client


@asynccontextmanager
async def mcp_in_process(api_server: ApiProcess, tenant: Tenant) -> AsyncIterator[Client]:
    """The same server built in this process (`build_server`) with the same settings, and
    an MCP client connected to it in memory."""
    from askgate_mcp.server import build_server
    from mcp import Client

    settings = load_settings(
        url=api_server.url, api_key=tenant.api_key, session=SESSION, progress_interval_s=0.2
    )
    async with Client(build_server(settings)) as client:
        yield client


async def test_lists_ask_user_with_the_contract_schema(
    api_server: ApiProcess, tenant: Tenant
) -> None:
    """tools/list has one tool, ask_user, whose schema is the contract's: the README example
    validates, and unknown fields are refused at every level."""
    async with mcp_client(api_server, tenant) as client:
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == ["ask_user"]
        schema = tools[0].input_schema
        question = schema["properties"]["questions"]["items"]
        option = question["properties"]["options"]["items"]
        assert (set(schema["properties"]), schema["required"]) == (
            {"questions", "timeoutSeconds"},
            ["questions"],
        )
        assert (set(question["properties"]), question["required"]) == (
            {"id", "header", "question", "options", "multiSelect"},
            ["id", "header", "question", "options"],
        )
        assert (set(option["properties"]), option["required"]) == (
            {"label", "description"},
            ["label"],
        )
        assert [s["additionalProperties"] for s in (schema, question, option)] == [False] * 3
        jsonschema.validate(SEED_INPUT, schema)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**SEED_INPUT, "session": "x"}, schema)


async def test_description_carries_model_guidance(api_server: ApiProcess, tenant: Tenant) -> None:
    """The tool description tells the model when to ask and how to shape the options."""
    async with mcp_in_process(api_server, tenant) as client:
        description = (await client.list_tools()).tools[0].description or ""
        for phrase in (
            "genuinely the user's",
            "1-3 multiple-choice questions",
            " (Recommended)",
            'Do not add an "Other" option',
            "no_answer, proceed with your best judgment",
        ):
            assert phrase in description


async def test_ask_user_returns_the_contract_result(api_server: ApiProcess, tenant: Tenant) -> None:
    """ask_user waits for the human's answer and returns the contract's result as JSON text
    and as structured content."""
    async with mcp_client(api_server, tenant) as client:
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def call() -> None:
                results.append(await client.call_tool("ask_user", SEED_INPUT))

            tg.start_soon(call)
            question = await pending_question(api_server, tenant.headers, SESSION)
            await answer_production(api_server, tenant.headers, question["id"])
        result = results[0]
        assert not result.is_error
        assert result.structured_content == SEED_ANSWERED
        assert json.loads(text_of(result)) == SEED_ANSWERED


async def test_validation_error_is_tool_error(api_server: ApiProcess, tenant: Tenant) -> None:
    """A 422 from the API comes back as a tool error whose text names the field."""
    async with mcp_in_process(api_server, tenant) as client:
        bad = {"questions": [{**SEED_INPUT["questions"][0], "id": "Deploy Target"}]}
        result = await client.call_tool("ask_user", bad)
        assert result.is_error
        assert text_of(result) == ("questions[0].id must be snake_case, for example deploy_target")


async def test_progress_while_waiting(api_server: ApiProcess, tenant: Tenant) -> None:
    """While the human has not answered, the caller receives progress notifications."""
    async with mcp_in_process(api_server, tenant) as client:
        seen: list[tuple[float, str | None]] = []
        got_progress = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))
            got_progress.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: client.call_tool("ask_user", SEED_INPUT, progress_callback=on_progress)
            )
            question = await pending_question(api_server, tenant.headers, SESSION)
            await got_progress.wait()
            await answer_production(api_server, tenant.headers, question["id"])
        assert seen[0][1] is not None and "Waiting for the user's answer" in seen[0][1]
        assert [v for v, _ in seen] == sorted(v for v, _ in seen)


async def test_cancelled_call_cancels_question(api_server: ApiProcess, tenant: Tenant) -> None:
    """A call the MCP client cancels ends the question as no_answer / cancelled."""
    async with mcp_in_process(api_server, tenant) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "ask_user", SEED_INPUT)
            question = await pending_question(api_server, tenant.headers, SESSION)
            tg.cancel_scope.cancel()
        async with local_client(api_server.url, headers=tenant.headers) as http:

            async def ended() -> Any:
                q = (await http.get(f"/v1/questions/{question['id']}")).json()
                return q if q["status"] != "pending" else None

            final = await eventually(ended, "the cancelled question to end", 30)
        assert (final["status"], final["reason"], final["result"]) == (
            "no_answer",
            "cancelled",
            {"status": "no_answer"},
        )


async def test_asks_with_configured_remind_and_escalate(
    api_server: ApiProcess, tenant: Tenant
) -> None:
    """ASKGATE_REMIND and ASKGATE_ESCALATE are sent with the tool's asks."""
    step = {"after_s": 600, "targets": [{"channel": "telegram", "chat_id": "42"}]}
    env = {
        "ASKGATE_TARGETS": '[{"channel": "web"}]',
        "ASKGATE_REMIND": '{"every_s": 300, "max": 2}',
        "ASKGATE_ESCALATE": json.dumps([step]),
    }
    async with mcp_client(api_server, tenant, **env) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "ask_user", SEED_INPUT)
            question = await pending_question(api_server, tenant.headers, SESSION)
            await answer_production(api_server, tenant.headers, question["id"])
    assert (question["remind"]["every_s"], question["remind"]["max"]) == (300, 2)
    assert [(s["step"], s["after_s"]) for s in question["escalation"]] == [(1, 600)]
