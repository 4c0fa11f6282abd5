"""Service processes forked from one that has already imported them: for the chaos driver
and the tests, which start and kill -9 many askgate services, each of which would spend
most of its start importing (the Telegram worker ~4 s of CPU on aiogram alone).

    launcher = Launcher(preload=["askgate_api.__main__"])   # a server process, importing
    proc = launcher.start("askgate_api", env, log_path)     # forked: imports already done
    proc.poll(); proc.send_signal(signal.SIGKILL); proc.wait(10)

The server (`python -m askgate.dev.launcher`) reads one JSON command per line. For a
start it imports what the command names (once: later starts find it in `sys.modules`) and
forks; the child takes the environment, working directory, argv and log file it was given,
a session of its own, Python's default signal handlers, and then runs the module's
`__main__` exactly as `python -m <module>` would (runpy, `__name__ == "__main__"`), so
exit codes, tracebacks and atexit behave the same. The server reaps its children and
answers `poll` with their exit codes; a child is a real process of its own, so a kill -9
is a kill -9. Settings are built in `main()`, never at import, which is what makes an
import shared with a fork safe. The server imports without the cyclic collector and then
freezes what it imported (`gc.freeze`), so no child scans that heap in its collections
or copies its pages by touching them. The server leaves when its parent closes the pipe.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import json
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Self


class Launcher:
    """The client: starts the server on first use; safe to use from several threads."""

    def __init__(self, preload: Iterable[str] = ()) -> None:
        self._preload = list(preload)
        self._server: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def open(self) -> Self:
        """Start the server now (it imports `preload` while the caller goes on)."""
        with self._lock:
            self._open()
        return self

    def _open(self) -> subprocess.Popen[bytes]:
        if self._server is None:
            self._server = subprocess.Popen(
                [sys.executable, "-m", "askgate.dev.launcher", *self._preload],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        elif (code := self._server.poll()) is not None:
            # A new server would know nothing of the children the old one forked.
            raise RuntimeError(f"askgate.dev.launcher: the server exited ({code})")
        return self._server

    def _ask(self, command: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            server = self._open()
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write(json.dumps(command).encode() + b"\n")
            server.stdin.flush()
            line = server.stdout.readline()
        if not line:
            raise RuntimeError("askgate.dev.launcher: the server ended (its output is above)")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def start(
        self,
        module: str,
        env: Mapping[str, str],
        log_path: Path | str,
        argv: Iterable[str] = (),
        preload: Iterable[str] = (),
        err_path: Path | str | None = None,
    ) -> Forked:
        """`python -m <module> <argv>` with exactly `env`, its output appended to
        `log_path` (its standard error to `err_path` where given), forked once what it
        imports (`<module>.__main__` for a package) and `preload` are imported."""
        reply = self._ask(
            {
                "op": "start",
                "module": module,
                "argv": list(argv),
                "env": dict(env),
                "cwd": os.getcwd(),
                "log": str(log_path),
                "err": None if err_path is None else str(err_path),
                "preload": list(preload),
            }
        )
        return Forked(self, int(reply["pid"]))

    def returncode(self, pid: int) -> int | None:
        return self._ask({"op": "poll", "pid": pid})["code"]  # type: ignore[no-any-return]

    def close(self) -> None:
        """End the server (its children are left running: each has its own owner)."""
        with self._lock:
            if self._server is not None:
                assert self._server.stdin is not None and self._server.stdout is not None
                self._server.stdin.close()
                self._server.wait(10)
                self._server.stdout.close()
                self._server = None


class Forked:
    """A forked service process, with the part of `subprocess.Popen` the harnesses use."""

    def __init__(self, launcher: Launcher, pid: int) -> None:
        self.launcher = launcher
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.launcher.returncode(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0.0)
            time.sleep(0.01)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # never signal a pid that was reaped (and may be reused)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _Child(Exception):
    """Raised in a forked child to leave the server's loop with what to run."""

    def __init__(self, command: dict[str, Any]) -> None:
        self.command = command


def _serve(preload: list[str]) -> None:
    # The commands come on fd 0 and the replies leave on fd 1, through private copies, so
    # that a stray print goes to stderr and no child inherits the pipes.
    commands = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C on the driver: just go
    _import(preload)
    codes: dict[int, int] = {}
    for line in commands:
        with contextlib.suppress(ChildProcessError):
            while (reaped := os.waitpid(-1, os.WNOHANG))[0]:
                codes[reaped[0]] = os.waitstatus_to_exitcode(reaped[1])
        command = json.loads(line)
        if command["op"] == "poll":
            reply = {"code": codes.get(command["pid"])}
        else:
            _import([_main_of(command["module"]), *command["preload"]])
            pid = os.fork()
            if pid == 0:
                commands.close()
                replies.close()
                raise _Child(command)
            codes.pop(pid, None)  # a reused pid: the code reaped before was another's
            reply = {"pid": pid}
        replies.write(json.dumps(reply).encode() + b"\n")
        replies.flush()


def _import(modules: list[str]) -> None:
    # Without the cyclic collector while importing (aiogram's ~1,300 pydantic models would
    # set it off again and again: a quarter of their import), then frozen: what an import
    # builds lives as long as the process, so no collection in the server or in a child
    # scans it again, and no child copies its pages by touching them (`gc.freeze`).
    gc.disable()
    try:
        for name in modules:
            # The child runs the module again and reports its own import error, in its log.
            with contextlib.suppress(Exception):
                importlib.import_module(name)
    finally:
        gc.freeze()
        gc.enable()


def _main_of(module: str) -> str:
    """What `python -m module` runs: a package's `__main__`, else the module itself."""
    with contextlib.suppress(Exception):
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations is not None:
            return f"{module}.__main__"
    return module


def _become(command: dict[str, Any]) -> None:
    """In the child: the process `python -m <module>` would have been, then run it."""
    os.setsid()
    for fd, path in ((1, command["log"]), (2, command.get("err") or command["log"])):
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(out, fd)
        os.close(out)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(command["cwd"])
    os.environ.clear()
    os.environ.update(command["env"])
    module = command["module"]
    sys.argv = [module, *command["argv"]]
    sys.modules.pop(_main_of(module), None)  # runpy runs it afresh, as __main__
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def main() -> None:
    try:
        _serve(sys.argv[1:])
        return
    except _Child as child:
        command = child.command
    _become(command)  # outside the except: the service's tracebacks chain nothing of ours


if __name__ == "__main__":
    main()
