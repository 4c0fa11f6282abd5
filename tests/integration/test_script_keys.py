"""Every Lua script declares every key it touches, and all of them share one slot.

A Redis Cluster routes a script by its declared KEYS and runs it on one node, so a key
built inside Lua, or declared keys in two slots, would fail there (or touch the wrong
node). This drives each script of askgate through its real callers on one Redis under
MONITOR, which shows every call (`EVALSHA sha n keys…`) followed by the commands its Lua
ran; `COMMAND GETKEYS` names the keys of each of those, and redis-py's `key_slot` gives
the slot of every declared key."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis as redis_sync
from askgate.dev.redis_server import RedisProcess
from askgate.domain.models import QuestionCreate
from askgate.domain.timeutil import now_ms
from askgate.settings import Settings
from askgate.store import followup_scripts, keys, scripts
from askgate.store.ledger import StalePolicy
from askgate.store.store import Store
from askgate.store.tenants import create_tenant, set_channel_config
from askgate.store.webhooks import WRITE, WebhookState
from redis.asyncio import Redis
from redis.crc import key_slot
from redis.exceptions import ResponseError

from tests.support.asks import ask_body

TG = {"channel": "telegram", "chat_id": "1"}
FUTURE_MS = 10**13


def every_script() -> dict[str, str]:
    """sha1 → name of every script askgate registers."""
    found = {"webhooks.WRITE": WRITE}
    for module in (scripts, followup_scripts):
        for name, value in vars(module).items():
            if name.isupper() and name[0] != "_" and isinstance(value, str) and "KEYS[" in value:
                found[f"{module.__name__}.{name}"] = value
    return {hashlib.sha1(text.encode()).hexdigest(): name for name, text in found.items()}


_TOKEN = re.compile(rb'"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|.)", re.DOTALL)
_SIMPLE = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"a": b"\a", b"b": b"\b"}


def _unescape(raw: bytes) -> bytes:
    def one(m: re.Match[bytes]) -> bytes:
        s = m.group(1)
        if s.startswith(b"x") and len(s) == 3:
            return bytes([int(s[1:], 16)])
        return _SIMPLE.get(s, s)

    return _ESCAPE.sub(one, raw)


@dataclass
class Call:
    script: str
    declared: list[bytes]
    touched: list[tuple[bytes, list[bytes]]] = field(default_factory=list)  # (command, keys)


class Monitor:
    """A MONITOR connection read after the workload, up to a marker PING."""

    def __init__(self, server: RedisProcess) -> None:
        self.client = redis_sync.Redis.from_url(server.url)
        self.conn = self.client.connection_pool.get_connection()
        self.conn.send_command("MONITOR")
        assert self.conn.read_response() == b"OK"

    def lines(self, marker: bytes) -> Iterator[tuple[bytes, list[bytes]]]:
        """(source, [command, args…]) of each command, until PING `marker`."""
        while True:
            line = self.conn.read_response()
            assert isinstance(line, bytes)
            source = line.split(b"[", 1)[1].split(b"]", 1)[0].split(b" ", 1)[1]
            words = [_unescape(t) for t in _TOKEN.findall(line)]
            if words[:2] == [b"PING", marker]:
                return
            yield source, words

    def keys_of(self, words: list[bytes]) -> list[bytes]:
        try:
            found = self.client.command_getkeys(*words)
        except ResponseError:  # a command without keys (PUBLISH)
            return []
        return [k if isinstance(k, bytes) else k.encode() for k in found]

    def close(self) -> None:
        self.conn.disconnect()
        self.client.close()


async def workload(redis: Redis, redis_url: str, settings: Settings) -> None:
    """Each script, on each of its paths that touch other keys."""
    store = Store(redis, settings)
    tenant, _ = await create_tenant(redis, "keys-" + secrets.token_hex(3))
    await set_channel_config(redis, tenant.id, "telegram", {"bot_token": "1:A"})

    async def ask(session: str, **extra: Any) -> str:
        body = QuestionCreate.model_validate(ask_body(session, **extra))
        rec, _ = await store.create(tenant.id, body, dead_channels=frozenset({"telegram"}))
        return rec.id

    async def load(qid: str) -> Any:
        rec = await store.load(qid)
        assert rec is not None
        return rec

    # Answered after a claim, a confirm, a summary mark and a reminder.
    hooked = await ask(
        "answered",
        targets=[TG],
        run_id="r1",
        callback_url="https://example.com/hook",
        remind={"every_s": 60, "max": 1},
        escalate=[{"after_s": 90, "targets": [TG]}],
    )
    rec = await load(hooked)
    ledger = store.ledger
    claim = await ledger.claim(rec, 0, owner="w", lease_ms=60_000, on_stale=StalePolicy.RESEND)
    assert claim.outcome == "claimed"
    assert (await ledger.confirm(rec, 0, owner="w", ref={"m": 1})).ok
    assert await ledger.claim_reminder(rec, 0, 1)
    await ledger.reminder_done(rec, 0, 1, "sent")
    assert await store.followup.fire_timers(keys.shard_of(hooked), FUTURE_MS) == (2, 2)
    await store.answer(tenant.id, hooked, {"deploy_target": ["Production"]})
    assert await ledger.mark_summary(rec, 0)
    # A claim whose lease ran out, counted as shown; then one whose tries ran out.
    assumed = await load(await ask("assumed", targets=[TG, TG]))
    await ledger.claim(assumed, 0, owner="a", lease_ms=0, on_stale=StalePolicy.ASSUME_SHOWN)
    again = await ledger.claim(assumed, 0, owner="b", lease_ms=0, on_stale=StalePolicy.ASSUME_SHOWN)
    assert again.outcome == "assumed"
    await ledger.claim(assumed, 1, owner="a", lease_ms=60_000, on_stale=StalePolicy.RESEND)
    await ledger.fail(assumed, 1, error="blocked")
    tries = await load(await ask("tries", targets=[TG]))
    await ledger.claim(tries, 0, owner="a", lease_ms=60_000, on_stale=StalePolicy.RESEND)
    assert (await ledger.release(tries, 0, owner="a", error="5xx", max_claims=1)).question_ended
    # The watchdog ends an ask nobody showed; a run is aborted; a sweep ends the rest,
    # one of which then gets a late answer.
    unseen = await ask("unseen", targets=[TG])
    assert await store.sweep_undelivered(keys.shard_of(unseen), set(), FUTURE_MS) == (1, 1, 1)
    aborted = [await ask(f"run-{i}", run_id="r2") for i in range(3)]
    assert sorted(await store.abort_run(tenant.id, "r2")) == sorted(aborted)
    late = await ask("late", timeoutSeconds=1, callback_url="https://example.com/hook")
    for shard in range(keys.SHARDS):
        await store.sweep_shard(shard, FUTURE_MS)
    assert (await load(late)).status == "no_answer"
    with pytest.raises(Exception, match="without"):
        await store.answer(tenant.id, late, {"deploy_target": ["Production"]})
    # The webhooks service's state.
    sync = redis_sync.Redis.from_url(redis_url)  # the test's own database, like `redis`
    try:
        state = WebhookState(sync)
        assert state.begin(hooked, {"status": "pending"}, now_ms()) == "ok"
        assert state.claim(hooked, 1, "1:x", now_ms())
        assert state.record(hooked, 1, "1:x", {"status": "failed"}, None, {"id": hooked}) == "ok"
    finally:
        sync.close()


async def test_every_script_declares_each_key_it_touches_in_one_slot(
    redis: Redis, redis_server: RedisProcess, redis_url: str, settings: Settings
) -> None:
    """Each call's declared keys share one slot, and its Lua touches no other key."""
    names = every_script()
    monitor = Monitor(redis_server)
    try:
        await workload(redis, redis_url, settings)
        marker = secrets.token_hex(4).encode()
        await redis.execute_command("PING", marker)
        calls: list[Call] = []
        for source, words in monitor.lines(marker):
            if source == b"lua":
                assert calls, f"a Lua command before any script: {words!r}"
                calls[-1].touched.append((words[0], monitor.keys_of(words)))
            elif words[0].upper() == b"EVALSHA":
                sha, n = words[1].decode(), int(words[2])
                calls.append(Call(names.get(sha, sha), words[3 : 3 + n]))
    finally:
        monitor.close()
    seen = {c.script for c in calls}
    assert seen >= set(names.values()), f"not exercised: {set(names.values()) - seen}"
    for call in calls:
        slots = {key_slot(k) for k in call.declared}
        assert len(slots) == 1, f"{call.script} declares keys in {len(slots)} slots"
        for command, touched in call.touched:
            undeclared = set(touched) - set(call.declared)
            assert not undeclared, f"{call.script}: {command!r} on undeclared {undeclared}"
