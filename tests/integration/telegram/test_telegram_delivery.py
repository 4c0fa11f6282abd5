"""Delivery: what each ask looks like in the chat, limits, failures, 429s, replays."""

from __future__ import annotations

import orjson
import pytest
from askgate.store import keys
from askgate_telegram.render import Tap

from tests.support.questions import THREE
from tests.support.telegram import ADA, PRIVATE, Harness
from tests.support.waiting import eventually

OTHER_CHAT = 777


@pytest.mark.parametrize(
    ("n", "locale", "guide"),
    [
        (1, "en", "Reply with an option's number or your own answer, or 'skip'."),
        (
            2,
            "tr",
            "Her soru için sırayla bir satır ya da 'anahtar: cevap' satırları yazın; "
            "'atla' hepsini geçer.",
        ),
        (3, "hi", "हर प्रश्न के लिए क्रम से एक पंक्ति या 'कुंजी: उत्तर' पंक्तियाँ लिखें; 'छोड़ें' सब छोड़ देता है।"),
    ],
)
async def test_prompt_text_is_numbered_with_guidance_in_locale(
    tg: Harness, n: int, locale: str, guide: str
) -> None:
    """1, 2 or 3 questions arrive as numbered text ending with the locale's guidance."""
    qs = [dict(THREE[0], multiSelect=False)] if n == 1 else THREE[:n]
    await tg.ask(questions=qs, locale=locale)
    prompt = await tg.prompt()
    assert prompt.text.endswith(guide)
    assert "1) Staging" in prompt.text and "2) Production" in prompt.text


async def test_single_select_gets_one_button_per_option_then_other_and_skip(tg: Harness) -> None:
    """One single-select question: option buttons in declared order, then Other… and Skip."""
    q = await tg.ask(locale="tr")
    prompt = await tg.prompt()
    rows = [[(b["text"], b["callback_data"]) for b in row] for row in prompt.buttons]
    qid = q["id"]
    assert rows == [
        [("Staging (Recommended)", f"ag:{qid}:0:o0")],
        [("Production", f"ag:{qid}:0:o1")],
        [("Diğer…", f"ag:{qid}:0:x"), ("Atla", f"ag:{qid}:0:s")],
    ]


async def test_several_questions_get_a_row_of_options_per_question(tg: Harness) -> None:
    """Several questions: one row of option buttons per question, then Skip (Submit comes
    once every question has an answer)."""
    q = await tg.ask(questions=THREE, locale="hi")
    prompt = await tg.prompt()
    rows = [[(b["text"], b["callback_data"]) for b in row] for row in prompt.buttons]
    qid = q["id"]
    assert rows == [
        [("Staging", f"ag:{qid}:0:p0.0"), ("Production", f"ag:{qid}:0:p0.1")],
        [
            ("Auth", f"ag:{qid}:0:p1.0"),
            ("Billing", f"ag:{qid}:0:p1.1"),
            ("Search", f"ag:{qid}:0:p1.2"),
        ],
        [("Team", f"ag:{qid}:0:p2.0"), ("Nobody", f"ag:{qid}:0:p2.1")],
        [("छोड़ें", f"ag:{qid}:0:s")],
    ]


async def test_multi_select_toggles_then_done_answers(tg: Harness) -> None:
    """A multi-select keyboard ticks options on tap (✓) and Done answers with them."""
    q = await tg.ask(questions=[THREE[1]])
    prompt = await tg.prompt()
    for i in (2, 0):
        data = Tap(q=q["id"], t=0, a=f"t{i}").pack()
        await tg.post(tg.fake.tap(prompt, data, ADA))
    assert [row[0]["text"] for row in prompt.buttons[:3]] == ["✓ Auth", "Billing", "✓ Search"]
    await tg.post(tg.fake.tap(prompt, Tap(q=q["id"], t=0, a="d").pack(), ADA))
    body = await tg.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"areas": ["Auth", "Search"]}


async def test_done_with_nothing_ticked_asks_to_choose(tg: Harness) -> None:
    """Done before ticking anything is refused with a hint; the question stays pending."""
    q = await tg.ask(questions=[THREE[1]])
    prompt = await tg.prompt()
    await tg.post(tg.fake.tap(prompt, Tap(q=q["id"], t=0, a="d").pack(), ADA))
    assert tg.fake.sent("answerCallbackQuery")[0].params["text"] == "Answer this question first."
    assert (await tg.question(q["id"]))["status"] == "pending"


async def test_long_question_fits_telegram_limits(tg: Harness) -> None:
    """Three questions with the longest labels and descriptions still fit 4096 characters."""
    long_qs = [
        {
            "id": f"q{i}",
            "header": "H" * 12,
            "question": "Why " + "x" * 990 + "?",
            "options": [{"label": f"{j}" + "L" * 63, "description": "d" * 300} for j in range(4)],
        }
        for i in range(3)
    ]
    q = await tg.ask(questions=long_qs)
    await tg.prompt()
    assert len(tg.fake.sent()[0].params["text"]) <= 4096
    await tg.delivered(q["id"])


async def test_blocked_bot_ends_question_as_delivery_failed(tg: Harness) -> None:
    """A chat that blocked the bot fails the only target: no_answer/delivery_failed at once."""
    tg.fake.blocked.add(PRIVATE)
    q = await tg.ask()
    body = await tg.wait_result(q["id"])
    assert (body["result"], body["reason"]) == ({"status": "no_answer"}, "delivery_failed")
    assert body["deliveries"][0]["error"] == "Forbidden: bot was blocked by the user"


async def test_one_unreachable_target_leaves_the_other(tg: Harness) -> None:
    """With one chat not found and one reachable, the question stays pending and shown."""
    tg.fake.missing.add(OTHER_CHAT)
    q = await tg.ask(
        targets=[
            {"channel": "telegram", "chat_id": str(OTHER_CHAT)},
            {"channel": "telegram", "chat_id": str(PRIVATE)},
        ]
    )
    qid = q["id"]
    await tg.prompt()

    async def states() -> list[str] | None:
        got = [d["status"] for d in (await tg.question(qid))["deliveries"]]
        return got if "sending" not in got and "pending" not in got else None

    assert await eventually(states, "both deliveries settled") == ["failed", "delivered"]
    assert (await tg.question(qid))["status"] == "pending"


async def test_no_bot_token_fails_delivery(tg: Harness) -> None:
    """A tenant without a bot token cannot be reached on Telegram: delivery_failed at once."""
    await tg.redis.hdel(keys.tenant(tg.tenant.id), "channels")
    await tg.service.bots.refresh()
    q = await tg.ask()
    body = await tg.wait_result(q["id"])
    assert body["reason"] == "delivery_failed"


async def test_retry_after_holds_only_its_chat(tg: Harness) -> None:
    """A 429 for one chat delays that chat's prompt only; another chat is served meanwhile."""
    # Long enough that the other chat's ask, made after the 429, is served within it
    # even on a loaded machine.
    tg.fake.retry_after[PRIVATE] = [3]
    first = await tg.ask(session="a")
    await eventually(lambda: tg.fake.sent(), "the refused sendMessage")
    await tg.ask(session="b", chat_id=OTHER_CHAT)
    await tg.prompt(OTHER_CHAT)
    await tg.prompt(PRIVATE)
    order = [int(c.params["chat_id"]) for c in tg.fake.sent()]
    assert order == [PRIVATE, OTHER_CHAT, PRIVATE]
    await tg.delivered(first["id"])


async def test_replayed_created_event_posts_no_second_prompt(tg: Harness) -> None:
    """Re-processing a question.created entry never sends the prompt again."""
    q = await tg.ask()
    prompt = await tg.prompt()
    stream = keys.events(keys.shard_of(q["id"]), "telegram")
    await tg.redis.xadd(stream, {"type": "question.created", "id": q["id"]})
    # The cancel's resolved entry comes after the replay: once the prompt shows the
    # summary, the replayed entry has been handled too.
    await tg.api.post(f"/v1/questions/{q['id']}/cancel", headers=tg.tenant.headers)
    await tg.summary(prompt)
    assert len(tg.fake.sent()) == 1


async def test_delivery_ref_records_the_message(tg: Harness) -> None:
    """A delivered target records chat, message id and bot in the question's deliveries."""
    q = await tg.ask()
    prompt = await tg.prompt()
    ref = await eventually(lambda: _ref(tg, q["id"]), "the delivered ref")
    assert ref == {
        "chat_id": str(PRIVATE),
        "message_id": prompt.message_id,
        "bot": 123456,
        "chat_type": "private",
    }


async def _ref(tg: Harness, qid: str) -> dict[str, object] | None:
    raw = await tg.redis.hget(keys.deliveries(qid), "d:0")
    doc = orjson.loads(raw) if raw else {}
    return doc.get("ref") if doc.get("status") == "delivered" else None
