"""`askgate-mcp`: the ask_user MCP server, over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from askgate_mcp.config import ConfigError, McpSettings, load_settings

JSON_FLAGS = {
    "targets": "a JSON list of targets",
    "remind": "a JSON object",
    "escalate": "a JSON list of steps",
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="askgate-mcp",
        description="MCP server with one tool, ask_user: ask the human through askgate "
        "and wait for the answer. Flags override the ASKGATE_* environment.",
    )
    ap.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="serve streamable HTTP on PORT (path /mcp) instead of stdio",
    )
    ap.add_argument("--host", default="127.0.0.1", help="bind address for --http")
    ap.add_argument("--url", help="askgate API base URL (ASKGATE_URL)")
    ap.add_argument("--api-key", help="tenant API key (ASKGATE_API_KEY)")
    ap.add_argument("--session", help="agent session to ask in (ASKGATE_SESSION)")
    ap.add_argument("--targets", help="where to show questions, JSON list (ASKGATE_TARGETS)")
    ap.add_argument("--locale", help="en, tr or hi (ASKGATE_LOCALE)")
    ap.add_argument(
        "--remind",
        help="reminders for every ask, a JSON object such as "
        '{"every_s": 300, "max": 3} (ASKGATE_REMIND)',
    )
    ap.add_argument(
        "--escalate",
        help="escalation steps for every ask, a JSON list such as "
        '[{"after_s": 600, "targets": [...]}] (ASKGATE_ESCALATE)',
    )
    ap.add_argument("--run-id", help="run id sent with every ask (ASKGATE_RUN_ID)")
    ap.add_argument("--agent-id", help="agent id sent with every ask (ASKGATE_AGENT_ID)")
    ap.add_argument(
        "--progress-interval-s",
        type=float,
        help="seconds between progress notifications (ASKGATE_PROGRESS_INTERVAL_S)",
    )
    return ap.parse_args(argv)


def settings_from(args: argparse.Namespace) -> McpSettings:
    overrides: dict[str, Any] = {
        "url": args.url,
        "api_key": args.api_key,
        "session": args.session,
        "locale": args.locale,
        "run_id": args.run_id,
        "agent_id": args.agent_id,
        "progress_interval_s": args.progress_interval_s,
    }
    for name, shape in JSON_FLAGS.items():
        value = getattr(args, name)
        if value is None:
            continue
        try:
            overrides[name] = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--{name} must be {shape}: {exc}") from None
    return load_settings(**overrides)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        settings = settings_from(args)
    except ConfigError as exc:
        print(f"askgate-mcp: {exc.message}", file=sys.stderr)
        raise SystemExit(2) from None
    # To stderr: stdout is the stdio transport.
    logging.basicConfig(
        level=settings.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # The SDK and the server only now: --help and a configuration error answer without
    # them (importing the SDK is about a second of CPU).
    import anyio
    import uvicorn
    from mcp.server.stdio import stdio_server

    from askgate_mcp.server import build_server

    server = build_server(settings)
    if args.http is not None:
        app = server.streamable_http_app(host=args.host)
        uvicorn.run(app, host=args.host, port=args.http, log_level=settings.log_level.lower())
        return

    async def serve_stdio() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve_stdio)


if __name__ == "__main__":
    main()
