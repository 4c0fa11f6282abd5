"""askgate-client and the MCP server start in a Python where the server library and
Redis cannot be imported (a fresh interpreter, so nothing is imported already)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support.packages import SERVER_SIDE

BLOCKED_START = textwrap.dedent("""
    import importlib.abc
    import sys

    BLOCKED = {blocked!r}

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{{name}} is server-side")
            return None

    sys.meta_path.insert(0, Blocker())

    from askgate_client import Askgate, AsyncAskgate
    from askgate_mcp.__main__ import settings_from, parse_args
    from askgate_mcp.server import build_server

    Askgate("http://127.0.0.1:9", "key").close()
    AsyncAskgate("http://127.0.0.1:9", "key")
    build_server(settings_from(parse_args(["--api-key", "k", "--remind", '{{"max": 2}}'])))
    loaded = sorted({{m.split(".")[0] for m in sys.modules}} & BLOCKED)
    print("loaded:", loaded)
""")


def test_client_and_mcp_start_without_server_code() -> None:
    """With askgate and redis made unimportable, the client builds both clients and the
    MCP server builds itself from its settings."""
    script = BLOCKED_START.format(blocked=SERVER_SIDE)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "loaded: []"
