"""Dead letters: webhook deliveries that gave up, newest first (`askgate-webhooks dead`)."""

from __future__ import annotations

from typing import Any

import orjson
from askgate.store import keys
from redis.asyncio import Redis


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


async def list_dead(
    redis: Redis, tenant: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    """Dead letters across every shard, newest first; only `tenant`'s when given."""
    rows: list[dict[str, Any]] = []
    for stream in keys.all_webhook_dead():
        # Each shard's newest `limit` matching entries are enough for the merged top.
        last = "+"
        found = 0
        while found < limit:
            batch = await redis.xrevrange(stream, max=last, min="-", count=max(limit, 100))
            if not batch:
                break
            for entry_id, fields in batch:
                row = {k.decode(): v.decode() for k, v in fields.items()}
                if tenant is None or row.get("tenant") == tenant:
                    row["id"] = entry_id.decode()
                    row["last"] = orjson.loads(row["last"]) if row.get("last") else None
                    row["attempts"] = int(row.get("attempts", "0"))
                    rows.append(row)
                    found += 1
            last = "(" + batch[-1][0].decode()
            if len(batch) < max(limit, 100):
                break
    rows.sort(key=lambda r: _id_key(r["id"]), reverse=True)
    return rows[:limit]
