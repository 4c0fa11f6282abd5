"""The benchmark package: it imports, and its pure parts say what they claim (no timings)."""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
from inspect import signature

from askgate.store import keys
from askgate.store.record import new_question_id
from askgate.store.store import Store
from redis.asyncio import Redis

import bench
from bench.__main__ import FIGURES
from bench.channels import CHANNELS, load
from bench.memory import key_type
from bench.procs import machine_times, steal_share
from bench.report import pct
from bench.sample import QUESTIONS, AskTemplate, ask_body, make_settings

URL = "redis://127.0.0.1:1/0"  # never connected to: the template only records


def test_every_figure_has_a_module() -> None:
    """`python -m bench` runs every figure module (each bench module with `run(ctx)`),
    under the module's name, and each channel has a fake platform spec."""
    figures = {}
    for info in pkgutil.iter_modules(bench.__path__):
        module = importlib.import_module(f"bench.{info.name}")
        run = getattr(module, "run", None)
        if (
            info.name != "__main__"
            and run is not None
            and list(signature(run).parameters) == ["ctx"]
        ):
            figures[info.name] = run
    assert figures == FIGURES
    assert [load(name).name for name in CHANNELS] == list(CHANNELS)


def test_template_replays_store_create_for_another_session() -> None:
    """The recorded calls, replayed for another session, name that session's id and shard."""
    store = Store(Redis.from_url(URL), make_settings(URL))
    body = ask_body(QUESTIONS, "x", run_id="r", tool_call_id="t")
    tmpl = asyncio.run(AskTemplate.record(store, "tenant1", body))
    qid, calls = tmpl.calls("other-session", run="run-9", tcid="call-9", now_ms=1_000_000)
    assert qid == new_question_id("tenant1", "other-session", "run-9", "call-9")
    reserve, create = calls
    assert reserve[0] == "reserve" and reserve[2][:3] == [1_000_000, qid, 1_000_000 + 900_000]
    tag = keys.tag(keys.shard_for("tenant1", "other-session"))
    assert create[1][0] == keys.question(qid)
    assert all(k.startswith(tag) for k in create[1])
    assert not [a for a in create[2] if isinstance(a, str) and "tmpl-" in a]


def test_key_type_names_the_kind_of_key() -> None:
    """Key names group by kind: ids, shards, tenants, sessions and numbers become placeholders."""
    assert key_type("askgate:{ag:07}:q:q07abcdefghijklmnop") == "q:{id}"
    assert (
        key_type("askgate:{ag:01}:session:t0123456789ab:mem-session-000123")
        == "session:{tenant}:{session}"
    )
    assert key_type("askgate:tg:msg:t0123456789ab:10001234:55") == "tg:msg:{tenant}:{n}:{n}"


def test_pct_is_nearest_rank() -> None:
    """p50 of 1..4 is 2 and p99 of 1..100 is 99 (nearest rank, no interpolation)."""
    assert pct([4.0, 1.0, 3.0, 2.0], 0.5) == 2.0
    assert pct([float(x) for x in range(1, 101)], 0.99) == 99.0


def test_steal_share_is_the_hypervisors_part_of_the_time_wanted() -> None:
    """/proc/stat's columns: user nice system idle iowait irq softirq steal. Idle and
    iowait are not time the machine wanted; steal over (run + steal) is the share held back."""
    before = machine_times("cpu  100 10 20 5000 7 1 2 30 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    after = machine_times("cpu  160 10 35 9000 9 1 7 105 0 0\n")
    assert before == (133, 30) and after == (213, 105)
    assert steal_share(before, after) == 75 / (80 + 75)
    assert steal_share(after, after) == 0.0
    now = machine_times()  # this machine's own counters only grow
    later = machine_times()
    assert later[0] >= now[0] > 0 and later[1] >= now[1] >= 0
