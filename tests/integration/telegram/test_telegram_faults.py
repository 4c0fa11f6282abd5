"""A Bot API that is not polite: HTML error pages, dropped connections and a getUpdates
that keeps failing never stop prompts or taps, and show in the worker's health."""

from __future__ import annotations

from askgate_telegram.service import TelegramService

from tests.integration.telegram.fake_bot_api import FakeBotAPI
from tests.support.telegram import ADA, Harness, tg_settings
from tests.support.waiting import eventually


async def test_html_502_on_send_is_retried_into_one_prompt(tg: Harness) -> None:
    """sendMessage answered with a proxy's HTML 502 page is tried again within seconds:
    one prompt, delivered."""
    tg.fake.faults["sendMessage"] = ["html502"]
    q = await tg.ask()
    await tg.prompt()

    async def delivered() -> bool:
        return bool((await tg.question(q["id"]))["deliveries"][0]["status"] == "delivered")

    await eventually(delivered, "the prompt delivered after the 502")
    assert len(tg.fake.sent()) == 2  # the refused call, then the one that showed it
    assert (
        len(
            [
                m
                for m in tg.fake.messages(int(q["deliveries"][0]["target"]["chat_id"]))
                if m.raw.get("reply_markup")
            ]
        )
        == 1
    )


async def test_dropped_send_is_counted_shown_never_resent(tg: Harness) -> None:
    """A connection dropped after sendMessage went out may have shown the prompt:
    it counts as shown (unconfirmed) and is not sent again."""
    tg.fake.faults["sendMessage"] = ["drop"]
    q = await tg.ask()

    async def settled() -> dict[str, object] | None:
        d = (await tg.question(q["id"]))["deliveries"][0]
        return d if d["status"] == "delivered" else None

    delivery = await eventually(settled, "the in-doubt prompt settled")
    assert delivery["ref"] == {"unconfirmed": True}
    assert len(tg.fake.sent()) == 1


async def test_polling_survives_error_pages_and_reports_while_failing(
    tg: Harness, redis_url: str, fake: FakeBotAPI
) -> None:
    """getUpdates answered with HTML 502s and dropped connections: the loop backs off,
    the worker reports itself unwell while it lasts, then reads the next tap."""
    await tg.service.close()
    service = TelegramService(
        tg_settings(
            redis_url,
            fake.base,
            telegram_mode="polling",
            telegram_polling_timeout_s=1,
            # Three failures back off 0.2 + 0.4 + 0.8 s: failing for longer than the
            # 0.5 s that makes the worker report it, and over soon after.
            telegram_poll_backoff_s=0.2,
            telegram_poll_unhealthy_s=0.5,
        )
    )
    fake.faults["getUpdates"] = ["html502", "drop", "html502"]
    await service.start()
    try:
        await eventually(service.channel.problem, "the failing getUpdates to show", 15)
        q = await tg.ask()
        prompt = await tg.prompt()
        token = tg.fake.sent()[0].token
        fake.push(token, fake.tap(prompt, prompt.buttons[1][0]["callback_data"], ADA))
        body = await tg.wait_result(q["id"])
        assert body["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}
        assert service.channel.problem() is None
    finally:
        await service.close()
