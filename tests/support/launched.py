"""A program for tests/integration/test_launcher.py to fork: prints what it was started
with (and ECHO_ERR on standard error), then exits with ECHO_EXIT, or waits for a signal
when ECHO_EXIT is "wait"."""

from __future__ import annotations

import os
import signal
import sys

if __name__ == "__main__":
    print(f"name={__name__} argv={sys.argv[1:]} echo={os.environ.get('ECHO')}", flush=True)
    print(f"leaked={os.environ.get('LAUNCHER_PARENT_ONLY')} sid={os.getsid(0) == os.getpid()}")
    if os.environ.get("ECHO_ERR"):
        print(os.environ["ECHO_ERR"], file=sys.stderr)
    if os.environ.get("ECHO_EXIT") == "wait":
        print("waiting", flush=True)
        signal.pause()
    raise SystemExit(int(os.environ.get("ECHO_EXIT", "0")))
