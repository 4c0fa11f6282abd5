"""Delivery: what each ask looks like in Slack, limits, failures, 429s, lost answers."""

from __future__ import annotations

import pytest
from askgate.domain.i18n import t
from askgate.store import keys

from tests.support.slack import ADA, ROOM, Harness
from tests.support.waiting import eventually

OTHER = "C0OTHER"


async def test_single_select_has_one_button_per_option_then_other_and_skip(sl: Harness) -> None:
    """Buttons in declared order, the Recommended one primary, then Other… and Skip;
    each action id and value carries the question id, target and option index."""
    q = await sl.ask(locale="hi")
    prompt = await sl.prompt()
    qid = q["id"]
    got = [(e["text"]["text"], e.get("style"), e["action_id"], e["value"]) for e in prompt.actions]
    assert got == [
        ("Staging (Recommended)", "primary", f"ag:{qid}:0:o0", f"{qid}:0:0"),
        ("Production", None, f"ag:{qid}:0:o1", f"{qid}:0:1"),
        (t("hi", "other"), None, f"ag:{qid}:0:x", f"{qid}:0:x"),
        (t("hi", "skip"), None, f"ag:{qid}:0:s", f"{qid}:0:s"),
    ]


async def test_prompt_has_the_question_and_descriptions(sl: Harness) -> None:
    """The section names the question and each option's description."""
    await sl.ask()
    prompt = await sl.prompt()
    section = prompt.blocks[0]["text"]["text"]
    assert section.startswith("*[Deploy]* Where should I deploy this build?")
    assert "*Staging (Recommended)* — Safe, reversible" in section


@pytest.mark.parametrize("locale", ["en", "tr", "hi"])
async def test_text_is_the_numbered_prompt_with_guidance(sl: Harness, locale: str) -> None:
    """`text` (notifications) is the numbered prompt ending with the locale's guidance."""
    await sl.ask(locale=locale)
    prompt = await sl.prompt()
    assert "1) Staging (Recommended)" in prompt.text
    assert prompt.text.endswith(t(locale, "guide_single"))


async def test_prompt_carries_its_question_in_metadata(sl: Harness) -> None:
    """Every prompt's metadata names the question and target (found again after a crash)."""
    q = await sl.ask()
    prompt = await sl.prompt()
    assert prompt.metadata == {
        "event_type": "askgate_prompt",
        "event_payload": {"question_id": q["id"], "target": 0},
    }


async def test_longest_ask_fits_block_kit_limits(sl: Harness) -> None:
    """Three questions with the longest texts pass the fake's Block Kit checks."""
    long_qs = [
        {
            "id": f"q{i}",
            "header": "H" * 12,
            "question": "Why " + "x" * 990 + "?",
            "multiSelect": i == 1,
            "options": [{"label": f"{j}" + "L" * 63, "description": "d" * 300} for j in range(4)],
        }
        for i in range(3)
    ]
    q = await sl.ask(questions=long_qs)
    await sl.prompt()
    await sl.delivered(q["id"])


@pytest.mark.parametrize("error", ["channel_not_found", "not_in_channel"])
async def test_unreachable_channel_ends_the_ask_as_delivery_failed(sl: Harness, error: str) -> None:
    """A permanent Slack error on the only target: no_answer/delivery_failed at once."""
    (sl.fake.missing if error == "channel_not_found" else sl.fake.not_in).add(ROOM)
    q = await sl.ask()
    body = await sl.wait_result(q["id"])
    assert (body["result"], body["reason"]) == ({"status": "no_answer"}, "delivery_failed")
    assert body["deliveries"][0]["error"] == error
    assert len(sl.fake.sent()) == 1


async def test_one_unreachable_target_leaves_the_other(sl: Harness) -> None:
    """With one channel gone and one reachable, the ask stays pending and shown."""
    sl.fake.missing.add(OTHER)
    q = await sl.ask(
        targets=[
            {"channel": "slack", "channel_id": OTHER},
            {"channel": "slack", "channel_id": ROOM},
        ]
    )

    async def states() -> list[str] | None:
        got = [d["status"] for d in (await sl.question(q["id"]))["deliveries"]]
        return got if "sending" not in got and "pending" not in got else None

    assert await eventually(states, "both deliveries settled") == ["failed", "delivered"]
    assert (await sl.question(q["id"]))["status"] == "pending"


async def test_429_waits_retry_after_then_posts_once(sl: Harness) -> None:
    """A 429 with Retry-After: 1 holds the channel that long, then one prompt."""
    sl.fake.ratelimit[ROOM] = [1]
    q = await sl.ask()
    await sl.prompt()
    first, second = sl.fake.sent()
    assert second.at - first.at >= 1.0
    assert len(sl.fake.messages(ROOM)) == 1
    await sl.delivered(q["id"])


async def test_html_502_is_retried_into_one_prompt(sl: Harness) -> None:
    """Two HTML 502 pages from a front end, then success: exactly one prompt."""
    sl.fake.html_502["chat.postMessage"] = 2
    await sl.ask()
    await sl.prompt()
    assert len(sl.fake.messages(ROOM)) == 1


async def test_dropped_connection_before_slack_took_it_posts_once(sl: Harness) -> None:
    """A connection dropped before Slack took the message: looked up, then posted once."""
    sl.fake.drop["chat.postMessage"] = 1
    await sl.ask()
    await sl.prompt()
    assert len(sl.fake.messages(ROOM)) == 1
    assert len(sl.fake.sent("conversations.history")) == 1


async def test_lost_answer_after_slack_took_it_keeps_one_prompt(sl: Harness) -> None:
    """Slack took the message but the answer was lost: the retry finds it by metadata
    and confirms it with its ts; nothing is posted again."""
    sl.fake.lose["chat.postMessage"] = 1
    q = await sl.ask()
    prompt = await sl.prompt()
    delivery = await sl.delivered(q["id"])
    assert delivery["ref"]["ts"] == prompt.ts
    assert len(sl.fake.sent()) == 1 and len(sl.fake.messages(ROOM)) == 1


async def test_prompt_to_a_user_id_lands_in_the_dm(sl: Harness) -> None:
    """A target naming a user (U…) is posted to the DM; the DM's next message answers."""
    q = await sl.ask(channel_id=ADA)
    dm = "D" + ADA[1:]
    await sl.prompt(dm)
    await sl.delivered(q["id"])  # the worker heard back from its post before Ada read it
    await sl.event(sl.fake.message(dm, ADA, "1"))
    body = await sl.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["Staging (Recommended)"]}


async def test_no_bot_token_fails_delivery(sl: Harness) -> None:
    """A tenant without Slack credentials cannot be reached: delivery_failed at once."""
    await sl.redis.hdel(keys.tenant(sl.tenant.id), "channels")
    await sl.service.workspaces.refresh()
    q = await sl.ask()
    body = await sl.wait_result(q["id"])
    assert body["reason"] == "delivery_failed"
    assert body["deliveries"][0]["error"] == "no Slack bot token is configured for this tenant"
