"""Delivery: what each ask looks like in the channel, Discord's limits, faults and 429s."""

from __future__ import annotations

import pytest
from askgate.store import keys

from tests.integration.discord.fake_discord import FakeDiscord
from tests.support.discord import CHANNEL, THREE, Harness
from tests.support.waiting import eventually

OTHER = "1300000000000000002"


def rows_of(msg_components: list[dict[str, object]]) -> list[list[tuple[object, ...]]]:
    return [
        [(c.get("type"), c.get("label"), c.get("style"), c["custom_id"]) for c in row["components"]]  # type: ignore[attr-defined]
        for row in msg_components
    ]


async def test_single_select_is_a_row_of_buttons_then_other_and_skip(dc: Harness) -> None:
    """Options in declared order (Recommended primary), then Other… and Skip."""
    q = await dc.ask(locale="tr")
    prompt, qid = await dc.prompt(), q["id"]
    assert rows_of(prompt.components) == [
        [(2, "Staging (Recommended)", 1, f"ag:{qid}:0:o0"), (2, "Production", 2, f"ag:{qid}:0:o1")],
        [(2, "Diğer…", 2, f"ag:{qid}:0:x"), (2, "Atla", 2, f"ag:{qid}:0:s")],
    ]
    assert prompt.content == (
        "**[Deploy] Where should I deploy this build?**\n"
        "1) Staging (Recommended) — Safe, reversible\n2) Production"
    )


async def test_multi_select_is_a_native_string_select(dc: Harness) -> None:
    """A multi-select question is one string select taking 1 to all options."""
    q = await dc.ask(questions=[THREE[1]])
    prompt = await dc.prompt()
    select = prompt.components[0]["components"][0]
    assert (select["type"], select["custom_id"], select["min_values"], select["max_values"]) == (
        3,
        f"ag:{q['id']}:0:m0",
        1,
        3,
    )
    assert [o["value"] for o in select["options"]] == ["0", "1", "2"]


async def test_three_questions_are_three_selects_and_submit(dc: Harness) -> None:
    """Several questions: one select per question, then Submit, Other… and Skip."""
    q = await dc.ask(questions=THREE, locale="hi")
    prompt, qid = await dc.prompt(), q["id"]
    assert [row["components"][0]["custom_id"] for row in prompt.components] == [
        f"ag:{qid}:0:m0",
        f"ag:{qid}:0:m1",
        f"ag:{qid}:0:m2",
        f"ag:{qid}:0:d",
    ]
    assert [c["label"] for c in prompt.components[3]["components"]] == ["भेजें", "अन्य…", "छोड़ें"]
    assert prompt.content.endswith("हर प्रश्न के लिए एक उत्तर चुनें, फिर 'भेजें' दबाएँ।")


async def test_longest_ask_fits_discord_limits(dc: Harness) -> None:
    """Three questions with the longest text, labels and descriptions are accepted."""
    long_qs = [
        {
            "id": f"q{i}",
            "header": "H" * 12,
            "question": "Why " + "x" * 990 + "?",
            "options": [{"label": f"{j}" + "L" * 63, "description": "d" * 300} for j in range(4)],
            "multiSelect": i == 1,
        }
        for i in range(3)
    ]
    q = await dc.ask(questions=long_qs)
    prompt = await dc.prompt()
    assert len(prompt.content) <= 2000
    await dc.delivered(q["id"])


async def test_429_waits_retry_after_then_posts_once(dc: Harness) -> None:
    """A 429 with retry_after holds the channel for that long, then one prompt is posted."""
    dc.fake.retry_after[CHANNEL] = [0.3]
    q = await dc.ask()
    await dc.prompt()
    await dc.delivered(q["id"])
    assert len(dc.fake.creates()) == 2 and len(dc.fake.messages(CHANNEL)) == 1


async def test_429_holds_only_its_channel(dc: Harness) -> None:
    """Another channel's prompt is posted while one waits out its 429."""
    dc.fake.retry_after[CHANNEL] = [1.0]
    await dc.ask(session="a")
    await eventually(lambda: dc.fake.creates(), "the refused create")
    await dc.ask(session="b", channel_id=OTHER)
    await dc.prompt(OTHER)
    await dc.prompt(CHANNEL)
    order = [c.path.split("/")[4] for c in dc.fake.creates()]
    assert order == [CHANNEL, OTHER, CHANNEL]


@pytest.mark.parametrize("fault", ["html502", "drop"])
async def test_fault_after_the_post_still_shows_one_prompt(dc: Harness, fault: str) -> None:
    """An HTML 502 or a dropped connection is retried with the same nonce: one message."""
    dc.fake.faults[CHANNEL] = [fault]
    q = await dc.ask()
    await eventually(lambda: len(dc.fake.creates()) == 2, "the retried create")
    assert len(dc.fake.messages(CHANNEL)) == 1
    delivery = await dc.delivered(q["id"])
    assert delivery["ref"]["message_id"] == dc.fake.messages(CHANNEL)[0].id


@pytest.mark.parametrize(
    ("status", "code", "message"),
    [
        (404, 10003, "Unknown Channel"),
        (403, 50001, "Missing Access"),
        (403, 50013, "Missing Permissions"),
    ],
)
async def test_permanent_refusal_ends_the_ask_as_delivery_failed(
    dc: Harness, status: int, code: int, message: str
) -> None:
    """Discord refusing the channel fails the only target: no_answer/delivery_failed."""
    dc.fake.refuse[CHANNEL] = (status, code, message)
    q = await dc.ask()
    body = await dc.wait_result(q["id"])
    assert (body["result"], body["reason"]) == ({"status": "no_answer"}, "delivery_failed")
    assert body["deliveries"][0]["error"] == f"Discord {status}: {message} (code {code})"
    assert len(dc.fake.creates()) == 1


async def test_wrong_bot_token_fails_delivery(dc: Harness, fake: FakeDiscord) -> None:
    """A 401 (the bot token was reset) fails the target at once."""
    fake.token = "another-token"
    q = await dc.ask()
    body = await dc.wait_result(q["id"])
    assert body["reason"] == "delivery_failed"
    assert body["deliveries"][0]["error"].startswith("Discord 401")


async def test_no_application_fails_delivery(dc: Harness) -> None:
    """A tenant without a Discord application cannot be reached: delivery_failed."""
    await dc.redis.hdel(keys.tenant(dc.tenant.id), "channels")
    await dc.service.apps.refresh()
    q = await dc.ask()
    body = await dc.wait_result(q["id"])
    assert body["reason"] == "delivery_failed"
    assert dc.fake.creates() == []


async def test_one_refused_channel_leaves_the_other(dc: Harness) -> None:
    """With one channel unknown and one reachable, the question stays pending and shown."""
    dc.fake.refuse[OTHER] = (404, 10003, "Unknown Channel")
    q = await dc.ask(
        targets=[
            {"channel": "discord", "channel_id": OTHER},
            {"channel": "discord", "channel_id": CHANNEL},
        ]
    )
    await dc.prompt()

    async def states() -> list[str] | None:
        got = [d["status"] for d in (await dc.question(q["id"]))["deliveries"]]
        return got if "sending" not in got and "pending" not in got else None

    assert await eventually(states, "both deliveries settled") == ["failed", "delivered"]
    assert (await dc.question(q["id"]))["status"] == "pending"
