"""askgate MCP server: the `ask_user` tool, backed by the askgate HTTP API."""
