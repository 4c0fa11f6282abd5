"""What an agent's and a human's side do against an API process in the e2e tests: find
the session's pending question, pick Production for the README example ask."""

from __future__ import annotations

from typing import Any

from tests.support.http import local_client
from tests.support.processes import ApiProcess
from tests.support.waiting import eventually


async def pending_question(api: ApiProcess, headers: dict[str, str], session: str) -> Any:
    """The session's pending question, once an agent has asked it (polls the list)."""
    async with local_client(api.url, headers=headers, timeout=30) as http:

        async def first() -> Any:
            r = await http.get("/v1/questions", params={"session": session, "status": "pending"})
            return (
                r.json()["questions"][0] if r.status_code == 200 and r.json()["questions"] else None
            )

        return await eventually(first, f"a pending question in session {session!r}", 30)


async def answer_production(api: ApiProcess, headers: dict[str, str], question_id: str) -> None:
    """The human picks Production for the README example's deploy_target."""
    async with local_client(api.url, headers=headers, timeout=30) as http:
        r = await http.post(
            f"/v1/questions/{question_id}/answer",
            json={"answers": {"deploy_target": ["Production"]}},
        )
        assert r.status_code == 200, r.text
