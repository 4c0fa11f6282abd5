"""The Lua scripts: every state change that can race is one of these.

Each script's header says what each KEYS[n] and ARGV[n] is. The allowed transitions are
rendered from `status.TRANSITIONS`, and key names from `keys.LUA_KEYS`, so the table and
the key schema are spelled once. A script that finds a question's related keys from its
hash (session pointer, run set, streams) builds them with the question key's own hash
tag, so every key it touches is in the question's slot.
"""

from __future__ import annotations

from askgate.keys import LUA_KEYS
from askgate.status import TRANSITIONS


def _allowed_table() -> str:
    rows = []
    for cur, nxt in TRANSITIONS.items():
        inner = ", ".join(f"['{s.value}'] = true" for s in sorted(nxt))
        rows.append(f"['{cur.value}'] = {{{inner}}}")
    return "local ALLOWED = {" + ", ".join(rows) + "}\n"


# resolve(): the one final transition. Writes the status, result and reason, keeps the
# result readable for keep_ms, releases the session, leaves the due set and run set,
# appends question.resolved to each channel stream and publishes the result, so nobody
# can observe the new state without the notification having been sent.
_RESOLVE = (
    LUA_KEYS
    + _allowed_table()
    + """
local function extend(key, ms)
  ms = tonumber(ms)
  local ttl = redis.call('PTTL', key)
  if ttl < ms then redis.call('PEXPIRE', key, ms) end  -- -1 (no TTL yet) included
end

-- The event streams of a channel list ('web,telegram') under a tag prefix, split once
-- per script call (a sweep resolves hundreds of questions with the same few lists).
local STREAMS = {}
local function streams_of(P, channels)
  local cache_key = P .. '|' .. channels
  local out = STREAMS[cache_key]
  if not out then
    out = {}
    for ch in string.gmatch(channels, '[^,]+') do out[#out + 1] = k_events(P, ch) end
    STREAMS[cache_key] = out
  end
  return out
end

-- in_due: also leave the due set and the run set (a sweep removes its whole batch from
-- the due set at once instead).
-- A sweep resolves at or after the deadline, when the hash, doc and session TTLs set at
-- creation (deadline + keep_ms) already have keep_ms left: it skips refreshing them.
local function resolve(qkey, id, status, reason, result, responder, now, keep_ms, maxlen,
                       in_due)
  local f = redis.call('HMGET', qkey, 'status', 'tenant', 'session', 'run', 'channels', 'reason')
  if not f[1] then return {'missing'} end
  local allowed = ALLOWED[f[1]]
  if not allowed or not allowed[status] then return {'final', f[1], f[6] or ''} end
  local P = k_prefix(qkey)
  -- A no_answer result is always {"status":"no_answer"}: the hash keeps only the reason.
  if status == 'answered' then
    redis.call('HSET', qkey, 'status', status, 'result', result, 'responder', responder,
               'resolved', now)
  elseif responder ~= '' then
    redis.call('HSET', qkey, 'status', status, 'reason', reason, 'responder', responder,
               'resolved', now)
  else
    redis.call('HSET', qkey, 'status', status, 'reason', reason, 'resolved', now)
  end
  local rk = k_result(P, id)
  redis.call('SET', rk, result, 'PX', keep_ms)
  local sk = k_session(P, f[2], f[3])
  redis.call('HDEL', sk, 'p:' .. id)
  if in_due then
    redis.call('PEXPIRE', qkey, keep_ms)
    redis.call('PEXPIRE', k_doc(P, id), keep_ms)
    redis.call('PEXPIRE', k_deliveries(P, id), keep_ms)
    extend(sk, keep_ms)
    redis.call('ZREM', k_due(P), id)
    -- (A swept question stays in its run's set: it is scored by its deadline, and the
    -- next ask of the run drops entries past their deadline.)
    if f[4] and f[4] ~= '' then redis.call('ZREM', k_run(P, f[2], f[4]), id) end
  end
  for _, stream in ipairs(streams_of(P, f[5] or '')) do
    redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*',
               'type', 'question.resolved', 'id', id, 'status', status, 'reason', reason)
  end
  redis.call('PUBLISH', rk, result)
  return {'ok', f[2]}
end
"""
)

CREATE = (
    _RESOLVE
    + """
-- KEYS[1] question hash   KEYS[2] session hash   KEYS[3] due zset   KEYS[4] run zset
-- KEYS[5] the question's doc (static part)   KEYS[6..] one event stream per channel
-- ARGV[1] id  ARGV[2] expires_ms  ARGV[3] now_ms  ARGV[4] keep_ms (TTL of hash and doc)
-- ARGV[5] stream maxlen  ARGV[6] has_run ('1'|'0')  ARGV[7] doc bytes
-- ARGV[8..] the hash's field/value pairs
-- Returns {'created'} | {'replay'} | {'busy', pending_id}
if redis.call('EXISTS', KEYS[1]) == 1 then return {'replay'} end
local now, expires, keep = tonumber(ARGV[3]), tonumber(ARGV[2]), tonumber(ARGV[4])
-- The session hash: `p:<id>` = deadline while <id> is pending, `<id>` = creation time.
local fields = redis.call('HGETALL', KEYS[2])
local stale = {}
for i = 1, #fields, 2 do
  local name, value = fields[i], tonumber(fields[i + 1])
  if string.sub(name, 1, 2) == 'p:' then
    -- A pending question a minute past its deadline that no sweeper ended no longer
    -- blocks its session.
    if value + 60000 > now then return {'busy', string.sub(name, 3)} end
    stale[#stale + 1] = name
  elseif value < now - keep then
    stale[#stale + 1] = name  -- past the retention period
  end
end
if #stale > 0 then redis.call('HDEL', KEYS[2], unpack(stale)) end
redis.call('HSET', KEYS[1], unpack(ARGV, 8))
redis.call('PEXPIRE', KEYS[1], keep)
redis.call('SET', KEYS[5], ARGV[7], 'PX', keep)
redis.call('HSET', KEYS[2], 'p:' .. ARGV[1], ARGV[2], ARGV[1], ARGV[3])
extend(KEYS[2], keep)
redis.call('ZADD', KEYS[3], expires, ARGV[1])
if ARGV[6] == '1' then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  redis.call('ZADD', KEYS[4], expires, ARGV[1])
  extend(KEYS[4], keep)
end
for i = 6, #KEYS do
  redis.call('XADD', KEYS[i], 'MAXLEN', '~', ARGV[5], '*',
             'type', 'question.created', 'id', ARGV[1])
end
return {'created'}
"""
)

RESOLVE = (
    _RESOLVE
    + """
-- KEYS[1] question hash
-- ARGV[1] id  ARGV[2] new status  ARGV[3] reason ('' when answered)  ARGV[4] result JSON
-- ARGV[5] responder JSON  ARGV[6] now_ms  ARGV[7] keep_ms  ARGV[8] stream maxlen
-- Returns {'ok', tenant} | {'final', status, reason} | {'missing'}
return resolve(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8],
               true)
"""
)

SWEEP = (
    _RESOLVE
    + """
-- KEYS[1] a shard's due zset
-- ARGV[1] now_ms  ARGV[2] batch size  ARGV[3] keep_ms  ARGV[4] stream maxlen
-- ARGV[5] the no_answer result JSON
-- Ends up to ARGV[2] questions whose deadline has passed as no_answer/timeout.
-- Returns {ended, taken}: how many it ended, and how many due entries it took.
-- (Tenants' quota entries are scored by the same deadline and drop out by themselves.)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
if #due == 0 then return {0, 0} end
local P = k_prefix(KEYS[1])
local ended = 0
for _, id in ipairs(due) do
  local r = resolve(k_question(P, id), id, 'no_answer', 'timeout', ARGV[5], '', ARGV[1],
                    ARGV[3], ARGV[4], false)
  if r[1] == 'ok' then ended = ended + 1 end
end
redis.call('ZREM', KEYS[1], unpack(due))
return {ended, #due}
"""
)

ABORT_RUN = (
    _RESOLVE
    + """
-- KEYS[1] a run's pending zset in one shard
-- ARGV[1] now_ms  ARGV[2] keep_ms  ARGV[3] stream maxlen  ARGV[4] the no_answer result
-- Ends every pending question of the run in this shard as no_answer/run_aborted.
-- Returns the ids it ended.
local P = k_prefix(KEYS[1])
local out = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local r = resolve(k_question(P, id), id, 'no_answer', 'run_aborted', ARGV[4], '', ARGV[1],
                    ARGV[2], ARGV[3], true)
  if r[1] == 'ok' then out[#out + 1] = id end
end
redis.call('DEL', KEYS[1])
return out
"""
)

DELIVERY = (
    _RESOLVE
    + """
-- KEYS[1] question hash   KEYS[2] its deliveries hash
-- ARGV[1] id  ARGV[2] target index  ARGV[3] state (sending|delivered|failed)
-- ARGV[4] delivery JSON  ARGV[5] expected current state ('' = any)  ARGV[6] now_ms
-- ARGV[7] keep_ms  ARGV[8] stream maxlen  ARGV[9] the no_answer result JSON
-- Records one target's delivery (a compare-and-set on its state, so two consumers
-- cannot both claim it). When every target has failed and none can show the question,
-- the question ends as no_answer/delivery_failed.
-- Returns {'ok', ended ('1'|'0')} | {'conflict', current state} | {'missing'}
local f = redis.call('HMGET', KEYS[1], 'status', 'ntargets', 'ds:' .. ARGV[2])
if not f[1] then return {'missing'} end
local cur = f[3] or 'pending'
if ARGV[5] ~= '' and cur ~= ARGV[5] then return {'conflict', cur} end
redis.call('HSET', KEYS[1], 'ds:' .. ARGV[2], ARGV[3])
redis.call('HSET', KEYS[2], 'd:' .. ARGV[2], ARGV[4])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end  -- it lives as long as the question
if ARGV[3] ~= 'failed' or f[1] ~= 'pending' then return {'ok', '0'} end
local n = tonumber(f[2] or '0')
for i = 0, n - 1 do
  if redis.call('HGET', KEYS[1], 'ds:' .. i) ~= 'failed' then return {'ok', '0'} end
end
local r = resolve(KEYS[1], ARGV[1], 'no_answer', 'delivery_failed', ARGV[9], '', ARGV[6],
                  ARGV[7], ARGV[8], true)
return {'ok', r[1] == 'ok' and '1' or '0'}
"""
)

RESERVE = """
-- KEYS[1] tenant's pending zset (id -> expires_ms)   KEYS[2] tenant's ask-rate counter
-- ARGV[1] now_ms  ARGV[2] question id  ARGV[3] expires_ms  ARGV[4] max pending
-- ARGV[5] asks per second
-- Returns {'ok'} | {'rate', retry_ms} | {'pending', retry_ms}
local n = redis.call('INCR', KEYS[2])
if n == 1 then redis.call('PEXPIRE', KEYS[2], 1000) end
if n > tonumber(ARGV[5]) then return {'rate', redis.call('PTTL', KEYS[2])} end
local now = tonumber(ARGV[1])
-- Entries past their deadline are gone either way; this also heals any entry whose
-- removal was lost to a crash between a final transition and its ZREM.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return {'ok'} end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {'pending', tonumber(first[2]) - now}
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
local want = tonumber(ARGV[3]) - now + 60000
if ttl < want then redis.call('PEXPIRE', KEYS[1], want) end
return {'ok'}
"""
