"""The kit's inbound state on real Redis: selections per question of the ask, and the
correction a person gets for a partial answer."""

from __future__ import annotations

import pytest
from askgate.channels import Answering, Selections
from askgate.domain.models import QuestionCreate, Responder
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.store import Store
from redis.asyncio import Redis

from tests.support.asks import Tenant, ask_body

pytestmark = pytest.mark.both_redis

TWO = [
    {
        "id": "region",
        "header": "Region",
        "question": "Which region?",
        "options": [{"label": "EU"}, {"label": "US"}],
    },
    {
        "id": "size",
        "header": "Size",
        "question": "Which size?",
        "options": [{"label": "Small"}, {"label": "Large"}],
        "multiSelect": True,
    },
]


async def test_put_replaces_one_questions_selection_only(redis: Redis) -> None:
    """A native select's whole selection replaces that question's; others are untouched."""
    sel = Selections(redis, 60)
    await sel.put("q1", 0, [0, 1], part=1)
    await sel.put("q1", 0, [1], part=0)
    await sel.put("q1", 0, [0], part=1)
    assert (await sel.get("q1", 0, 0), await sel.get("q1", 0, 1)) == ({1}, {0})
    await sel.put("q1", 0, [], part=0)
    assert await sel.get("q1", 0, 0) == set()


async def test_all_gives_each_questions_picks(redis: Redis) -> None:
    """Every question's picks on one prompt; questions without any are left out."""
    sel = Selections(redis, 60)
    await sel.put("q1", 0, [1], part=0)
    await sel.toggle("q1", 0, 2, part=2)
    await sel.toggle("q1", 0, 0, part=1)
    await sel.toggle("q1", 0, 0, part=1)
    assert await sel.all("q1", 0) == {0: {1}, 2: {2}}


async def test_clear_removes_every_questions_selection(redis: Redis) -> None:
    """Clearing a target's selections leaves no key of any question behind."""
    sel = Selections(redis, 60)
    await sel.toggle("q1", 0, 2)
    await sel.put("q1", 0, [1], part=2)
    await sel.clear("q1", [0])
    assert await redis.keys(keys.selection("q1", 0) + "*") == []


async def test_partial_answer_names_the_missing_question_to_the_person(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A chat answer that leaves a question out is told, in the ask's words, which one."""
    store = Store(redis, settings)
    rec, _ = await store.create(
        tenant.id, QuestionCreate.model_validate(ask_body(questions=TWO, locale="tr"))
    )
    outcome = await Answering(store).answer(rec, {"region": ["EU"]}, Responder(user_id="1"))
    assert (outcome.kind, outcome.missing) == ("incomplete", ("size",))
    assert outcome.text == "Lütfen şunu da cevaplayın: Size: Which size?"
