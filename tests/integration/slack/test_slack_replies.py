"""Messages as answers: a reply in the prompt's thread, a DM's next message, partial
replies corrected in the thread, Slack's event retries handled once."""

from __future__ import annotations

from tests.support.questions import DEPLOY_AREAS_NOTIFY
from tests.support.slack import ADA, BOB, DM, ROOM, Harness


async def test_thread_reply_answers_the_prompt(sl: Harness) -> None:
    """A reply in the prompt's thread is read by the shared parser: "2" is Production."""
    q = await sl.ask()
    prompt = await sl.prompt()
    r = await sl.event(sl.fake.message(ROOM, ADA, "2", thread_ts=prompt.ts))
    assert r.status_code == 200
    body = await sl.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}
    assert await sl.said(ROOM, prompt.ts) == ["Answer submitted."]


async def test_partial_thread_reply_gets_the_correction_in_the_thread(sl: Harness) -> None:
    """Two lines for three questions: the thread is told what is missing; still pending."""
    q = await sl.ask(questions=DEPLOY_AREAS_NOTIFY)
    prompt = await sl.prompt()
    await sl.event(sl.fake.message(ROOM, ADA, "1\n1,3", thread_ts=prompt.ts))
    correction = (await sl.said(ROOM, prompt.ts))[0]
    assert correction.startswith("Please also answer:") and "Notify" in correction
    assert (await sl.question(q["id"]))["status"] == "pending"


async def test_completed_thread_reply_after_correction_answers(sl: Harness) -> None:
    """After the correction, a full reply in the same thread answers all three."""
    q = await sl.ask(questions=DEPLOY_AREAS_NOTIFY)
    prompt = await sl.prompt()
    await sl.event(sl.fake.message(ROOM, ADA, "1\n1,3", thread_ts=prompt.ts))
    await sl.said(ROOM, prompt.ts)
    await sl.event(sl.fake.message(ROOM, ADA, "1\n1,3\n2", thread_ts=prompt.ts))
    body = await sl.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {
        "deploy_target": ["Staging (Recommended)"],
        "areas": ["Auth", "Search"],
        "notify": ["No"],
    }


async def test_dm_next_message_answers_the_pending_question(sl: Harness) -> None:
    """In a direct message, the next message answers the question shown there."""
    q = await sl.ask(channel_id=DM)
    await sl.prompt(DM)
    await sl.delivered(q["id"])  # the worker heard back from its post before Ada read it
    await sl.event(sl.fake.message(DM, ADA, "ship it to canary"))
    body = await sl.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["ship it to canary"]}


async def test_free_text_is_repeated_in_the_dm_summary(sl: Harness) -> None:
    """In a DM the summary may show what the person typed."""
    q = await sl.ask(channel_id=DM)
    prompt = await sl.prompt(DM)
    await sl.delivered(q["id"])
    await sl.event(sl.fake.message(DM, ADA, "ship it to canary"))
    assert await sl.summary(prompt) == "Answered: ship it to canary"


async def test_channel_talk_outside_the_thread_is_not_an_answer(sl: Harness) -> None:
    """A top-level message in a shared channel answers nothing and gets no reply."""
    q = await sl.ask()
    await sl.prompt()
    await sl.event(sl.fake.message(ROOM, ADA, "1"))
    await sl.event(sl.fake.message(ROOM, ADA, "2", thread_ts="1.000001"))
    assert (await sl.question(q["id"]))["status"] == "pending"
    assert sl.fake.sent("chat.postMessage")[1:] == []


async def test_refused_thread_reply_is_told_privately(sl: Harness) -> None:
    """A reply from someone not allowed is told why in an ephemeral; nothing changes."""
    q = await sl.ask()
    prompt = await sl.prompt()
    await sl.event(sl.fake.message(ROOM, BOB, "1", thread_ts=prompt.ts))
    assert await sl.told(BOB) == ["You are not allowed to answer this question."]
    assert sl.fake.ephemeral[0]["thread_ts"] == prompt.ts
    assert (await sl.question(q["id"]))["status"] == "pending"


async def test_retried_event_is_handled_once(sl: Harness) -> None:
    """Slack's retry of an event (X-Slack-Retry-Num, same event_id) changes nothing."""
    q = await sl.ask(questions=DEPLOY_AREAS_NOTIFY)
    prompt = await sl.prompt()
    event = sl.fake.message(ROOM, ADA, "1", thread_ts=prompt.ts)
    assert (await sl.event(event)).status_code == 200
    assert (await sl.event(event, retry=1)).status_code == 200
    await sl.service.inbound.drain(5.0)  # replies are scheduled before the ack
    assert len(await sl.said(ROOM, prompt.ts)) == 1
    assert (await sl.question(q["id"]))["status"] == "pending"


async def test_thread_target_reply_in_that_thread_answers(sl: Harness) -> None:
    """A target naming a thread gets the prompt in it, and a reply there answers."""
    q = await sl.ask(target={"thread_ts": "1700000000.000100"})
    prompt = await sl.prompt()
    assert prompt.thread_ts == "1700000000.000100"
    await sl.event(sl.fake.message(ROOM, ADA, "skip", thread_ts="1700000000.000100"))
    body = await sl.wait_result(q["id"])
    assert body["reason"] == "skipped"


async def test_bot_messages_are_never_answers(sl: Harness) -> None:
    """A message from a bot (ours included) in the prompt's thread is ignored."""
    q = await sl.ask()
    prompt = await sl.prompt()
    event = sl.fake.message(ROOM, ADA, "1", thread_ts=prompt.ts)
    event["event"]["bot_id"] = "B0OTHER"
    await sl.event(event)
    assert (await sl.question(q["id"]))["status"] == "pending"


async def test_reply_on_an_answered_question_says_so_in_the_thread(sl: Harness) -> None:
    """A thread reply after the answer is told the question was already answered."""
    q = await sl.ask()
    prompt = await sl.prompt()
    await sl.api.post(
        f"/v1/questions/{q['id']}/answer",
        json={"answers": {"deploy_target": ["Production"]}},
        headers=sl.tenant.headers,
    )
    await sl.event(sl.fake.message(ROOM, ADA, "1", thread_ts=prompt.ts))
    assert await sl.said(ROOM, prompt.ts) == ["This question was already answered."]


async def test_thread_reply_also_sent_to_the_channel_answers(sl: Harness) -> None:
    """A thread reply with "Also send to the channel" (thread_broadcast) still answers."""
    q = await sl.ask()
    prompt = await sl.prompt()
    event = sl.fake.message(ROOM, ADA, "2", thread_ts=prompt.ts)
    event["event"]["subtype"] = "thread_broadcast"
    await sl.event(event)
    assert (await sl.wait_result(q["id"]))["status"] == "answered"


async def test_edited_message_is_not_an_answer(sl: Harness) -> None:
    """An edit (message_changed) in the prompt's thread answers nothing."""
    q = await sl.ask()
    prompt = await sl.prompt()
    event = sl.fake.message(ROOM, ADA, "2", thread_ts=prompt.ts)
    event["event"]["subtype"] = "message_changed"
    await sl.event(event)
    assert (await sl.question(q["id"]))["status"] == "pending"


async def test_thread_reply_before_the_worker_recorded_the_prompt_answers(sl: Harness) -> None:
    """A reply in the prompt's thread that arrives before Slack has answered the worker's
    post (so before it recorded which message the prompt is) still answers it: the
    prompt's metadata, read back from the thread, names the question."""
    sl.fake.hold_post.clear()  # Slack shows the prompt; its answer to the worker waits
    q = await sl.ask()
    prompt = await sl.prompt()
    assert (await sl.question(q["id"]))["deliveries"][0]["status"] == "sending"
    await sl.event(sl.fake.message(ROOM, ADA, "2", thread_ts=prompt.ts))
    body = await sl.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}
    sl.fake.hold_post.set()
    assert await sl.summary(prompt) == "Answered: Production"


async def test_a_young_thread_of_someone_elses_message_is_not_an_answer(sl: Harness) -> None:
    """A reply in the thread of a person's message posted a moment ago (it could have
    been a prompt not recorded yet, so Slack is asked) answers nothing."""
    q = await sl.ask()
    await sl.prompt()
    talk = sl.fake.message(ROOM, BOB, "shall we ship?")
    await sl.event(talk)
    r = await sl.event(sl.fake.message(ROOM, ADA, "1", thread_ts=talk["event"]["ts"]))
    assert r.status_code == 200  # acknowledged once handled
    assert (await sl.question(q["id"]))["status"] == "pending"
    assert sl.fake.sent("chat.postMessage")[1:] == []
