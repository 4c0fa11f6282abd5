"""How a prompt reads in the chat: a bold header, the time left, the question's web page,
guidance for groups, and formatting that never fails a delivery."""

from __future__ import annotations

import datetime as dt
from urllib.parse import parse_qs, urlsplit

from askgate.domain.signing import verify_session_link

from tests.support.asks import SECRET
from tests.support.telegram import GROUP, PRIVATE, Harness


async def test_prompt_has_a_bold_header_and_the_time_left(tg: Harness) -> None:
    """The header is bold, and "⏳ 15 min" is a date entity on the question's expiry."""
    q = await tg.ask()
    prompt = await tg.prompt()
    assert prompt.styled("bold") == ["Deploy"]
    assert "⏳ 15 min" in prompt.text
    entity = prompt.entity("date_time")
    expires = (await tg.question(q["id"]))["expires_at"]
    assert prompt.styled("date_time") == ["15 min"]
    assert entity["date_time_format"] == "r" and isinstance(entity["unix_time"], int)
    assert expires.startswith(_iso_minute(entity["unix_time"]))


def _iso_minute(unix_time: int) -> str:
    return dt.datetime.fromtimestamp(unix_time, dt.UTC).strftime("%Y-%m-%dT%H:%M")


async def test_prompt_links_to_the_sessions_signed_web_page(tg: Harness) -> None:
    """ "Open on the web" links to the session's Control UI page with a valid signature."""
    await tg.ask(session="deploys")
    prompt = await tg.prompt()
    assert prompt.styled("text_link") == ["Open on the web"]
    url = urlsplit(prompt.entity("text_link")["url"])
    assert f"{url.scheme}://{url.netloc}{url.path}" == (
        f"http://127.0.0.1:8001/s/{tg.tenant.id}/deploys"
    )
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert verify_session_link(SECRET, tg.tenant.id, "deploys", query["exp"], query["sig"])


async def test_group_prompt_says_to_reply_to_it(tg: Harness) -> None:
    """In a group the guidance says the bot sees only replies: reply to this message."""
    await tg.ask(chat_id=GROUP)
    prompt = await tg.prompt(GROUP)
    assert (
        "In a group the bot sees only replies: to answer in writing, reply to this message."
    ) in prompt.text


async def test_refused_formatting_still_delivers_the_prompt(tg: Harness) -> None:
    """When Telegram refuses the formatting, the same prompt goes as plain text."""
    tg.fake.refuse_entities.add(PRIVATE)
    q = await tg.ask()
    prompt = await tg.prompt()
    assert prompt.entities == [] and prompt.text.startswith("Deploy\nWhere should I deploy")
    await tg.delivered(q["id"])


async def test_description_is_readable_on_its_own_line(tg: Harness) -> None:
    """An option's description is an italic line under its label."""
    await tg.ask()
    prompt = await tg.prompt()
    assert "1) Staging (Recommended)\n     Safe, reversible\n2) Production" in prompt.text
    assert prompt.styled("italic") == ["Safe, reversible"]
