"""Inbound modes and liveness: the webhook's secret check, long polling, health."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from askgate.store import keys
from askgate_telegram.__main__ import main
from askgate_telegram.render import Tap
from askgate_telegram.service import TelegramService
from redis.asyncio import Redis

from tests.integration.telegram.fake_bot_api import FakeBotAPI
from tests.support.http import TLS
from tests.support.telegram import ADA, PRIVATE, Harness, tg_settings
from tests.support.waiting import eventually

OTHER = 777  # another private chat


@pytest.mark.parametrize("secret", [None, "wrong-secret", "hook-secret-012345678"])
async def test_forged_webhook_is_refused_and_changes_nothing(
    tg: Harness, secret: str | None
) -> None:
    """A webhook call without the tenant's exact secret gets 401 and changes nothing."""
    q = await tg.ask()
    prompt = await tg.prompt()
    r = await tg.post(
        tg.fake.tap(prompt, prompt.buttons[0][0]["callback_data"], ADA), secret=secret
    )
    assert r.status_code == 401
    assert (await tg.question(q["id"]))["status"] == "pending"
    assert tg.fake.sent("answerCallbackQuery") == []


async def test_webhook_for_unknown_tenant_is_refused(tg: Harness) -> None:
    """A webhook path naming a tenant without a bot answers 401."""
    q = await tg.ask()
    prompt = await tg.prompt()
    r = await tg.post(
        tg.fake.tap(prompt, prompt.buttons[0][0]["callback_data"], ADA), tenant_id="tnobody"
    )
    assert r.status_code == 401
    assert (await tg.question(q["id"]))["status"] == "pending"


async def test_long_polling_takes_a_tap(tg: Harness, redis_url: str, fake: FakeBotAPI) -> None:
    """In polling mode an update fetched with getUpdates answers the question."""
    await tg.service.close()
    service = TelegramService(
        tg_settings(redis_url, fake.base, telegram_mode="polling", telegram_polling_timeout_s=1)
    )
    await service.start()
    try:
        q = await tg.ask()
        prompt = await tg.prompt()
        token = tg.fake.sent()[0].token
        fake.push(token, fake.tap(prompt, prompt.buttons[1][0]["callback_data"], ADA))
        body = await tg.wait_result(q["id"])
        assert body["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}
    finally:
        await service.close()


async def test_tap_fetched_by_a_poller_that_died_is_handled_by_the_next(
    tg: Harness, redis_url: str, fake: FakeBotAPI
) -> None:
    """Telegram keeps an update until a later getUpdates confirms it: a tap fetched by a
    poller that died before confirming is fetched again by the next one, and answers."""
    q = await tg.ask()
    prompt = await tg.prompt()
    await tg.service.close()
    token = tg.fake.sent()[0].token
    tap = fake.tap(prompt, prompt.buttons[1][0]["callback_data"], ADA)
    fake.push(token, tap)
    async with httpx.AsyncClient(verify=TLS) as http:  # the poller that dies with it in hand
        r = await http.post(f"{fake.base}/bot{token}/getUpdates", data={"timeout": "0"})
    assert [u["update_id"] for u in r.json()["result"]] == [tap["update_id"]]
    service = TelegramService(
        tg_settings(redis_url, fake.base, telegram_mode="polling", telegram_polling_timeout_s=1)
    )
    await service.start()
    try:
        body = await tg.wait_result(q["id"])
        assert body["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}
        await eventually(
            lambda: tap["update_id"] in fake.confirmed.get(token, []), "the tap confirmed"
        )
    finally:
        await service.close()


async def test_polling_serves_other_chats_while_one_waits(
    tg: Harness, redis_url: str, fake: FakeBotAPI
) -> None:
    """In one getUpdates batch, a chat whose handling waits on Telegram does not hold a
    tap in another chat."""
    await tg.service.close()
    service = TelegramService(
        tg_settings(redis_url, fake.base, telegram_mode="polling", telegram_polling_timeout_s=1)
    )
    await service.start()
    try:
        first = await tg.ask(session="a")
        second = await tg.ask(session="b", chat_id=OTHER)
        slow, fast = await tg.prompt(), await tg.prompt(OTHER)
        await tg.delivered(second["id"])
        token = tg.fake.sent()[0].token
        fake.hold_send.clear()  # Telegram stops answering sendMessage
        fake.push(token, fake.tap(slow, Tap(q=first["id"], t=0, a="x").pack(), ADA))  # Other…
        fake.push(token, fake.tap(fast, fast.buttons[1][0]["callback_data"], ADA))
        body = await tg.wait_result(second["id"])
        assert body["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}
    finally:
        fake.hold_send.set()
        await service.close()


async def test_health_key_and_check(
    tg: Harness, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A running worker keeps its health key fresh, and --check exits 0."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    await eventually(lambda: tg.redis.keys(keys.health("telegram", "*")), "the health key")
    with pytest.raises(SystemExit) as exit_info:
        await asyncio.to_thread(main, ["--check"])
    assert exit_info.value.code == 0


async def test_check_fails_without_a_worker(
    redis: Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--check exits 1 when no worker has written its health key."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    with pytest.raises(SystemExit) as exit_info:
        await asyncio.to_thread(main, ["--check"])
    assert exit_info.value.code == 1


async def test_worker_without_bots_idles(redis: Redis, redis_url: str, fake: FakeBotAPI) -> None:
    """With no tenant bot configured the worker starts, consumes and stops cleanly."""
    service = TelegramService(tg_settings(redis_url, fake.base, telegram_mode="polling"))
    await service.start()
    await eventually(lambda: redis.keys(keys.health("telegram", "*")), "the health key")
    await service.close()
    assert fake.calls == []


async def test_reply_in_private_chat_answers_when_prompt_replied(tg: Harness) -> None:
    """A reply to the prompt in a private chat that counts gets a 👍, no extra message."""
    await tg.ask()
    prompt = await tg.prompt()
    update = tg.fake.text(PRIVATE, "1", ADA, reply_to=prompt)
    await tg.post(update)
    reply = tg.fake.chats[PRIVATE][update["message"]["message_id"]]
    assert reply.reactions == ["👍"]
    assert len(tg.fake.sent()) == 1
