"""The question's `webhook` field: one compare-and-set script on the attempt counter.

The hash field `webhook` holds what the API shows as the question's `webhook`:
`{"status": "pending|delivered|failed", "attempts": [{"at", "status_code"|"error"}],
"next_attempt_at"}`. Beside it `wh:n` counts the attempts that were claimed. Every write
is a compare-and-set on `wh:n`, so a stream entry processed twice, or a job that RQ runs
twice, cannot start a second delivery chain or post the same attempt twice.
"""

from __future__ import annotations

from typing import Any

import orjson
from askgate import keys
from redis import Redis

WRITE = """
-- KEYS[1] question hash   KEYS[2] the shard's webhook dead-letter stream
-- ARGV[1] expected attempt counter wh:n ('' = never set)  ARGV[2] new wh:n
-- ARGV[3] the webhook JSON ('' = leave it)  ARGV[4] dead-letter stream maxlen
-- ARGV[5..] the dead letter's field/value pairs (none = no dead letter)
-- Writes only while the question exists (HSET would otherwise make a stray hash).
-- Returns 'ok' | 'conflict' | 'missing'
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
local cur = redis.call('HGET', KEYS[1], 'wh:n') or ''
if cur ~= ARGV[1] then return 'conflict' end
redis.call('HSET', KEYS[1], 'wh:n', ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'webhook', ARGV[3]) end
if #ARGV > 4 then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', unpack(ARGV, 5))
end
return 'ok'
"""


class WebhookState:
    def __init__(self, redis: Redis, dead_maxlen: int = 10_000) -> None:
        self.redis = redis
        self.dead_maxlen = dead_maxlen
        self._write = redis.register_script(WRITE)

    def write(
        self,
        question_id: str,
        expect: str,
        counter: str,
        doc: dict[str, Any] | None = None,
        dead: dict[str, str] | None = None,
    ) -> str:
        flat: list[str] = []
        for k, v in (dead or {}).items():
            flat += [k, v]
        shard = keys.shard_of(question_id)
        reply = self._write(
            keys=[keys.question(question_id), keys.webhook_dead(shard)],
            args=[expect, counter, orjson.dumps(doc).decode() if doc else "",
                  self.dead_maxlen, *flat],
        )
        return reply.decode() if isinstance(reply, bytes) else str(reply)

    def begin(self, question_id: str, doc: dict[str, Any]) -> str:
        """The first write: the delivery is pending, no attempt claimed yet."""
        return self.write(question_id, "", "0", doc)

    def claim(self, question_id: str, attempt: int) -> bool:
        """Attempt n may run only once, and only after attempt n-1."""
        return self.write(question_id, str(attempt - 1), str(attempt)) == "ok"

    def record(self, question_id: str, attempt: int, doc: dict[str, Any],
               dead: dict[str, str] | None = None) -> str:
        return self.write(question_id, str(attempt), str(attempt), doc, dead)
