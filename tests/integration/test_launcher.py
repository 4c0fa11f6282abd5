"""`askgate.dev.launcher`: the tests' and the chaos driver's service processes are forked
from a server that imported them, and each still behaves as `python -m <module>` would:
its own environment, argv, session, log and exit code, and a kill -9 kills it."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from askgate.dev.launcher import Launcher

from tests.support.waiting import eventually

PROGRAM = "tests.support.launched"


@pytest.fixture(scope="module")
def launcher() -> Iterator[Launcher]:
    """One server for these tests (the services it forks are tested wherever ApiProcess
    and the chaos smoke start them)."""
    launcher = Launcher()
    # Only the parent's environment has it: a child must get the env it is given, no more.
    os.environ["LAUNCHER_PARENT_ONLY"] = "1"
    try:
        yield launcher.open()
    finally:
        del os.environ["LAUNCHER_PARENT_ONLY"]
        launcher.close()


def env(**extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], **extra}


def test_a_child_runs_as_main_with_its_own_env_argv_and_exit_code(
    launcher: Launcher, tmp_path: Path
) -> None:
    """The module runs as __main__ with the argv and environment it was given (nothing of
    the launcher's), in a session of its own, and its exit code comes back."""
    log = tmp_path / "out.log"
    proc = launcher.start(PROGRAM, env(ECHO="hi", ECHO_EXIT="3"), log, argv=["--x", "1"])
    assert proc.wait(30) == 3
    assert log.read_text().splitlines() == [
        "name=__main__ argv=['--x', '1'] echo=hi",
        "leaked=None sid=True",
    ]


def test_a_childs_standard_error_goes_where_it_was_told(launcher: Launcher, tmp_path: Path) -> None:
    """With an error path, what the child writes to standard error lands there and its
    output in the log; without one, both in the log."""
    log, err = tmp_path / "out.log", tmp_path / "err.log"
    proc = launcher.start(PROGRAM, env(ECHO_ERR="oops"), log, err_path=err)
    assert proc.wait(30) == 0
    assert err.read_text() == "oops\n"
    assert "oops" not in log.read_text() and "echo=None" in log.read_text()
    both = tmp_path / "both.log"
    assert launcher.start(PROGRAM, env(ECHO_ERR="oops"), both).wait(30) == 0
    assert "oops" in both.read_text() and "echo=None" in both.read_text()


async def test_kill_9_kills_the_child_and_reports_the_signal(
    launcher: Launcher, tmp_path: Path
) -> None:
    """A child waiting forever is killed by SIGKILL, and its exit is reported as -9."""
    log = tmp_path / "out.log"
    proc = launcher.start(PROGRAM, env(ECHO_EXIT="wait"), log)
    try:
        await eventually(lambda: log.exists() and "waiting" in log.read_text(), "the child", 30)
        assert proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
    finally:
        proc.kill()  # not left waiting forever when an assertion above failed


def test_a_module_that_fails_to_import_fails_like_python_m(
    launcher: Launcher, tmp_path: Path
) -> None:
    """A module that does not exist: exit code 1 and Python's own error in the log."""
    log = tmp_path / "out.log"
    assert launcher.start("askgate_nonexistent", env(), log).wait(30) == 1
    assert "No module named askgate_nonexistent" in log.read_text()
