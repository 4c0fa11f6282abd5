"""The MCP server: one tool, `ask_user`, answered by waiting on the askgate API.

Built on the SDK's low-level `Server` so the input schema is exactly the contract's (the
high-level server would derive one from a function signature). While the tool waits it
sends progress notifications (when the caller gave a progress token); when the caller
cancels the request, the client cancels the question on its way out.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from askgate_client import AskResult, AsyncAskgate, ClientError
from mcp.server import Server, ServerRequestContext

from askgate_mcp import tool
from askgate_mcp.config import McpSettings

log = logging.getLogger("askgate_mcp")

Context = ServerRequestContext[AsyncAskgate]


def build_server(settings: McpSettings) -> Server[AsyncAskgate]:
    """The `ask_user` server; its lifespan owns one API client for all calls."""

    @asynccontextmanager
    async def lifespan(_: Server[AsyncAskgate]) -> AsyncIterator[AsyncAskgate]:
        async with AsyncAskgate(
            settings.url,
            settings.api_key,
            session=settings.session,
            targets=settings.targets,
            locale=settings.locale,
            remind=settings.remind,
            escalate=settings.escalate,
        ) as client:
            yield client

    async def list_tools(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.TOOL])

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != tool.NAME:
            return tool.error(f"unknown tool {params.name!r}; the only tool is {tool.NAME}")
        arguments = params.arguments or {}
        problems = tool.argument_errors(arguments)
        if problems:
            return tool.error("; ".join(problems))
        outcome = await _ask(ctx, settings, arguments)
        if isinstance(outcome, ClientError):
            log.info("ask refused: %s", outcome.message)
            return tool.error(outcome.message)
        log.info(
            "question %s ended: %s (%s)",
            outcome.question_id,
            outcome.status,
            outcome.reason or "answered",
        )
        return tool.result(outcome.tool_result)

    return Server(
        "askgate",
        version="0.1.0",
        instructions="askgate lets you ask the user a question and wait for the answer "
        f"with the {tool.NAME} tool; see its description for when to use it.",
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _ask(
    ctx: Context, settings: McpSettings, arguments: dict[str, Any]
) -> AskResult | ClientError:
    """Ask through the client while a side task reports progress; a cancelled request
    cancels the question (the client does that before re-raising)."""
    client = ctx.lifespan_context
    started = time.monotonic()
    outcome: AskResult | ClientError

    async def heartbeat() -> None:
        while True:
            await anyio.sleep(settings.progress_interval_s)
            waited_s = round(time.monotonic() - started, 1)
            await ctx.session.report_progress(
                waited_s, message=f"Waiting for the user's answer ({waited_s:.0f}s so far)"
            )

    async with anyio.create_task_group() as tg:
        tg.start_soon(heartbeat)
        try:
            outcome = await client.ask(
                arguments["questions"],
                timeout_s=arguments.get("timeoutSeconds"),
                run_id=settings.run_id,
                agent_id=settings.agent_id,
                # Fresh per call: the client's retried POSTs reuse it, so one call is
                # one question however often the connection drops.
                tool_call_id=f"mcp-{uuid.uuid4().hex}",
            )
        except ClientError as exc:
            outcome = exc
        tg.cancel_scope.cancel()
    return outcome
