"""The Lua scripts: every state change that can race is one of these.

Each script's header says what each KEYS[n] and ARGV[n] is. The allowed transitions are
rendered from `status.TRANSITIONS`, so the table is spelled once.

Every key a script touches is declared in its KEYS: no key name is built in Lua, so a
Redis Cluster routes each call by its keys and they all share one slot (the question's
shard tag; tests/unit/test_script_keys.py checks both on every script). A script that may
end a question is given that question's keys (`keys.question_keys`, read by `group`); a
script over a batch (sweep, watchdog, abort) is given the batch its caller read, and
acts only on the entries still there.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from enum import StrEnum
from typing import TypeVar

from askgate.domain.status import DELIVERY_TRANSITIONS, TRANSITIONS
from askgate.store.metrics import LUA_METRICS

E = TypeVar("E", bound=StrEnum)


def _lua_table(name: str, table: Mapping[E, Set[E]]) -> str:
    rows = []
    for cur, nxt in table.items():
        inner = ", ".join(f"['{s.value}'] = true" for s in sorted(nxt))
        rows.append(f"['{cur.value}'] = {{{inner}}}")
    return f"local {name} = {{" + ", ".join(rows) + "}\n"


# resolve(): the one final transition. Writes the status, result and reason, keeps the
# result readable for keep_ms, releases the session, leaves the due set and run set,
# appends question.resolved to each channel stream and publishes the result, so nobody
# can observe the new state without the notification having been sent.
_RESOLVE = (
    LUA_METRICS
    + _lua_table("ALLOWED", TRANSITIONS)
    + _lua_table("DELIVERY_ALLOWED", DELIVERY_TRANSITIONS)
    + """
local function extend(key, ms)
  ms = tonumber(ms)
  local ttl = redis.call('PTTL', key)
  if ttl < ms then redis.call('PEXPIRE', key, ms) end  -- -1 (no TTL yet) included
end

-- A question's keys, declared by the caller from KEYS[i] (keys.question_keys): its hash,
-- doc, deliveries hash, result, session hash, run zset (or a placeholder), the shard's
-- done channel, then n event streams, one per channel of its `channels` field.
local function group(i, n)
  local streams = {}
  for j = 1, n do streams[j] = KEYS[i + 6 + j] end
  return {q = KEYS[i], doc = KEYS[i + 1], dlv = KEYS[i + 2], result = KEYS[i + 3],
          session = KEYS[i + 4], run = KEYS[i + 5], done = KEYS[i + 6], streams = streams}
end

-- True when every one of the question's n targets has failed: nothing can show it.
local function all_failed(qkey, n)
  n = tonumber(n or '0')
  if n == 0 then return false end
  for i = 0, n - 1 do
    if redis.call('HGET', qkey, 'ds:' .. i) ~= 'failed' then return false end
  end
  return true
end

-- Who ended the question, as short fields so the hash stays a listpack (the responder's
-- JSON with its target index passes 64 bytes for a chat user): `by` its channel ('' when
-- it names none), `by_id`, `by_name`, `by_target` (the index of the target it came
-- through). Returns field/value pairs for HSET; none when there is no responder.
local function responder_fields(responder)
  if responder == '' then return {} end
  local r = cjson.decode(responder)
  local out = {'by', type(r.channel) == 'string' and r.channel or ''}
  if type(r.user_id) == 'string' then out[#out + 1] = 'by_id'; out[#out + 1] = r.user_id end
  if type(r.name) == 'string' then out[#out + 1] = 'by_name'; out[#out + 1] = r.name end
  if type(r.target) == 'number' then
    out[#out + 1] = 'by_target'; out[#out + 1] = string.format('%d', r.target)
  end
  return out
end

-- Delivery bookkeeping ends with the question, so a retained question keeps no more of
-- it than its record needs: claim counts (`n:<i>`), reminder claims (`r:<i>:<n>`, their
-- sent count kept as `rc:<i>` in the hash, for the resource) and the details of a target
-- that was never shown go. What stays: each target's state (`ds:<i>` in the hash), a
-- failed target's details (its error), a sending target's details and lease (its sender
-- may still confirm; the finaliser waits the lease out) and a shown prompt's details: its
-- ref, by which the worker edits it into its summary (MARK_SUMMARY then drops them too).
local function end_deliveries(qkey, dkey)
  local d = redis.call('HGETALL', dkey)
  if #d == 0 then return end
  local drop, sent, states = {}, {}, {}
  for j = 1, #d, 2 do
    local name = d[j]
    local kind, i = string.match(name, '^(%a):(%d+)')
    if kind == 'n' then
      drop[#drop + 1] = name
    elseif kind == 'r' then
      drop[#drop + 1] = name
      if d[j + 1] == 'sent' then sent[i] = (sent[i] or 0) + 1 end
    elseif kind == 'd' or kind == 'l' then
      if states[i] == nil then states[i] = redis.call('HGET', qkey, 'ds:' .. i) or 'pending' end
      local st = states[i]
      if st == 'pending' or (kind == 'l' and st ~= 'sending') then drop[#drop + 1] = name end
    end
  end
  for i, n in pairs(sent) do redis.call('HSET', qkey, 'rc:' .. i, n) end
  if #drop > 0 then redis.call('HDEL', dkey, unpack(drop)) end
end

-- G: the question's keys (group). in_due: also leave the due set `due` and the run set (a
-- sweep removes its whole batch from the due set at once instead). mkey: the shard's
-- metrics hash, where the end is counted. batch: the caller counts the end and SPUBLISHes
-- the id itself, once for its whole batch (one message and one HINCRBY per batch).
-- A sweep resolves at or after the deadline, when the hash and doc TTLs set at creation
-- (deadline + keep_ms) already have keep_ms left: it skips refreshing them. The session
-- hash is the session's index, kept until session_history_s after its newest question's
-- deadline (set by CREATE), not for keep_ms: the end leaves its TTL alone.
local function resolve(G, due, id, status, reason, result, responder, now, keep_ms, maxlen,
                       in_due, mkey, batch)
  local qkey = G.q
  local f = redis.call('HMGET', qkey, 'status', 'tenant', 'session', 'run', 'channels', 'reason',
                       'created')
  if not f[1] then return {'missing'} end
  local allowed = ALLOWED[f[1]]
  if not allowed or not allowed[status] then return {'final', f[1], f[6] or ''} end
  -- The result lives in its public key alone (the hash keeps short values, so Redis can
  -- keep it a listpack); a no_answer result is always {"status":"no_answer"}, and the
  -- hash keeps its reason.
  if status == 'answered' then
    redis.call('HSET', qkey, 'status', status, 'resolved', now, unpack(responder_fields(responder)))
  else
    redis.call('HSET', qkey, 'status', status, 'reason', reason, 'resolved', now,
               unpack(responder_fields(responder)))
  end
  -- How many targets it has is read only while it is pending (all_failed).
  redis.call('HDEL', qkey, 'ntargets')
  end_deliveries(qkey, G.dlv)
  local rk = G.result
  redis.call('SET', rk, result, 'PX', keep_ms)
  local sk = G.session
  redis.call('HDEL', sk, 'p:' .. id)
  if in_due then
    redis.call('PEXPIRE', qkey, keep_ms)
    redis.call('PEXPIRE', G.doc, keep_ms)
    redis.call('PEXPIRE', G.dlv, keep_ms)
    redis.call('ZREM', due, id)
    -- (A swept question stays in its run's set: it is scored by its deadline, and the
    -- next ask of the run drops entries past their deadline.)
    if f[4] and f[4] ~= '' then redis.call('ZREM', G.run, id) end
  end
  for _, stream in ipairs(G.streams) do
    redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'type', 'question.resolved',
               'id', id, 'tenant', f[2], 'session', f[3], 'status', status, 'reason', reason)
  end
  -- The public contract (any SUBSCRIBE hears it), then the shard's own channel, which the
  -- API's waiters hear (sharded pub/sub, Redis 7: on a cluster in this slot only; an older
  -- single Redis has none, and its waiters PSUBSCRIBE to the result channels instead).
  redis.call('PUBLISH', rk, result)
  if batch then return {'ok', f[2]} end
  if redis.REDIS_VERSION_NUM then redis.call('SPUBLISH', G.done, id) end
  count_end(mkey, status, reason, responder, f[7], now)
  return {'ok', f[2]}
end
"""
)

CREATE = (
    _RESOLVE
    + """
-- KEYS[1] question hash   KEYS[2] session hash   KEYS[3] due zset
-- KEYS[4] the shard's undelivered zset   KEYS[5] the shard's timers zset
-- KEYS[6..] one event stream per channel shown at once
-- ARGV[1] id  ARGV[2] expires_ms  ARGV[3] now_ms  ARGV[4] keep_ms (TTL of the hash)
-- ARGV[5] stream maxlen  ARGV[6] tenant  ARGV[7] session
-- ARGV[8] the session hash's TTL (ms): until session_history_s after this deadline
-- ARGV[9] n: how many undelivered entries follow
-- ARGV[10 .. 9+2n] undelivered score/member pairs (a chat target's show-by deadline)
-- ARGV[10+2n] m: how many timers follow, then m due/member pairs (reminders, steps)
-- then the hash's field/value pairs, the doc's `z<n>` fields among them (a run's
-- questions are found by their `run` field: Store.abort_run)
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
local nwatch = tonumber(ARGV[9])
local tpos = 10 + 2 * nwatch
local ntimers = tonumber(ARGV[tpos])
redis.call('HSET', KEYS[1], unpack(ARGV, tpos + 1 + 2 * ntimers))
redis.call('PEXPIRE', KEYS[1], keep)
redis.call('HSET', KEYS[2], 'p:' .. ARGV[1], ARGV[2], ARGV[1], ARGV[3])
extend(KEYS[2], ARGV[8])
redis.call('ZADD', KEYS[3], expires, ARGV[1])
if nwatch > 0 then redis.call('ZADD', KEYS[4], unpack(ARGV, 10, 9 + 2 * nwatch)) end
if ntimers > 0 then redis.call('ZADD', KEYS[5], unpack(ARGV, tpos + 1, tpos + 2 * ntimers)) end
for i = 6, #KEYS do
  redis.call('XADD', KEYS[i], 'MAXLEN', '~', ARGV[5], '*', 'type', 'question.created',
             'id', ARGV[1], 'tenant', ARGV[6], 'session', ARGV[7])
end
return {'created'}
"""
)

RESOLVE = (
    _RESOLVE
    + """
-- KEYS[1] the shard's metrics hash   KEYS[2] the shard's due zset
-- KEYS[3..] the question's keys (keys.question_keys)
-- ARGV[1] id  ARGV[2] new status  ARGV[3] reason ('' when answered)  ARGV[4] result JSON
-- ARGV[5] responder JSON  ARGV[6] now_ms  ARGV[7] keep_ms  ARGV[8] stream maxlen
-- Returns {'ok', tenant} | {'final', status, reason} | {'missing'}
return resolve(group(3, #KEYS - 9), KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5],
               ARGV[6], ARGV[7], ARGV[8], true, KEYS[1])
"""
)

SWEEP = (
    _RESOLVE
    + """
-- KEYS[1] a shard's due zset   KEYS[2] its metrics hash
-- KEYS[3..] the keys of each question in ARGV (keys.question_keys), one after another
-- ARGV[1] now_ms  ARGV[2] keep_ms  ARGV[3] stream maxlen  ARGV[4] the no_answer result JSON
-- ARGV[5..] per question the caller read from the due zset (deadline passed): its id,
-- its event streams' count
-- Ends those still pending as no_answer/timeout and takes them all out of the due zset.
-- (Another sweeper that read the same ids finds them ended: resolve() ends a question
-- once. Tenants' quota entries are scored by the same deadline and drop out by themselves.)
-- The ends are counted once and their ids SPUBLISHed in one message (space-separated) on
-- the shard's done channel (every question's group declares it).
-- Returns {ended, taken}: how many it ended, and how many due entries it took.
local ended, k, taken, done = {}, 3, {}, nil
for a = 5, #ARGV, 2 do
  local id, n = ARGV[a], tonumber(ARGV[a + 1])
  local G = group(k, n)
  local r = resolve(G, KEYS[1], id, 'no_answer', 'timeout', ARGV[4], '', ARGV[1],
                    ARGV[2], ARGV[3], false, KEYS[2], true)
  if r[1] == 'ok' then
    ended[#ended + 1] = id
    done = G.done
  end
  taken[#taken + 1] = id
  k = k + 7 + n
end
if #taken > 0 then redis.call('ZREM', KEYS[1], unpack(taken)) end
if done then
  count_no_answers(KEYS[2], 'timeout', #ended)
  if redis.REDIS_VERSION_NUM then redis.call('SPUBLISH', done, table.concat(ended, ' ')) end
end
return {#ended, #taken}
"""
)

ABORT_RUN = (
    _RESOLVE
    + """
-- KEYS[1] the shard's metrics hash   KEYS[2] the shard's due zset
-- KEYS[3..] the keys of each question in ARGV, one after another
-- ARGV[1] now_ms  ARGV[2] keep_ms  ARGV[3] stream maxlen  ARGV[4] the no_answer result
-- ARGV[5] the run id
-- ARGV[6..] per question the caller found in the run: its id, its streams' count
-- Ends those of the run still pending as no_answer/run_aborted (resolve() ends a question
-- once). Returns the ids it ended.
local out = {}
local k = 3
for a = 6, #ARGV, 2 do
  local id, n = ARGV[a], tonumber(ARGV[a + 1])
  local G = group(k, n)
  if redis.call('HGET', G.q, 'run') == ARGV[5] then
    local r = resolve(G, KEYS[2], id, 'no_answer', 'run_aborted', ARGV[4], '', ARGV[1],
                      ARGV[2], ARGV[3], true, KEYS[1])
    if r[1] == 'ok' then out[#out + 1] = id end
  end
  k = k + 7 + n
end
return out
"""
)

# The delivery ledger (askgate.store.ledger). Per target i: its state `ds:<i>` in the question
# hash (short, so the hash stays a listpack); in the deliveries hash its JSON `d:<i>`
# (what the resource shows), claim count `n:<i>` and lease `l:<i>` = `<until ms>:<owner>`;
# once it ended, the summary mark `s:<i>` in the question hash (resolve's end_deliveries
# says what stays of the rest). Every change follows DELIVERY_ALLOWED.
_LEDGER = """
local function lease_of(dkey, i)
  local raw = redis.call('HGET', dkey, 'l:' .. i)
  if not raw then return 0, '' end
  local sep = string.find(raw, ':', 1, true)
  return tonumber(string.sub(raw, 1, sep - 1)), string.sub(raw, sep + 1)
end

-- The deliveries hash lives as long as the question hash.
local function same_ttl(qkey, dkey)
  local ttl = redis.call('PTTL', qkey)
  if ttl > 0 then redis.call('PEXPIRE', dkey, ttl) end
end

-- Set target i of the question whose keys are G (group; only G.q and G.dlv unless it
-- ends) to `state` with its JSON. A failure is counted in the metrics hash mkey
-- by its channel (from the undelivered member) and error class; one that leaves no
-- target able to show a pending question ends it as no_answer/delivery_failed (a target
-- of an escalation step that has not started is still pending, so the step still runs).
-- Returns '1' if it ended.
local function settle(G, wkey, due, id, i, state, doc, member, now, keep, maxlen,
                      no_answer, mkey, eclass)
  local qkey, dkey = G.q, G.dlv
  redis.call('HSET', qkey, 'ds:' .. i, state)
  redis.call('HSET', dkey, 'd:' .. i, doc)
  redis.call('HDEL', dkey, 'l:' .. i)
  same_ttl(qkey, dkey)
  if state ~= 'pending' and member ~= '' then redis.call('ZREM', wkey, member) end
  if state ~= 'failed' then return '0' end
  local ch = string.match(member, '|([^|]+)$') or 'unknown'
  redis.call('HINCRBY', mkey, 'df:' .. ch .. ':' .. eclass, 1)
  local f = redis.call('HMGET', qkey, 'status', 'ntargets')
  if f[1] ~= 'pending' or not all_failed(qkey, f[2]) then return '0' end
  local r = resolve(G, due, id, 'no_answer', 'delivery_failed', no_answer, '', now, keep,
                    maxlen, true, mkey)
  return r[1] == 'ok' and '1' or '0'
end
"""

CLAIM = (
    _RESOLVE
    + _LEDGER
    + """
-- KEYS[1] question hash   KEYS[2] its deliveries hash   KEYS[3] the shard's undelivered zset
-- KEYS[4] the shard's metrics hash
-- ARGV[1] target index  ARGV[2] now_ms  ARGV[3] lease_ms  ARGV[4] owner
-- ARGV[5] on a claim whose lease ran out: 'resend' (take it over) | 'assume' (count the
--         prompt as shown: the platform may have it and cannot say)
-- ARGV[6] the sending JSON  ARGV[7] the assumed-delivered JSON  ARGV[8] undelivered member
-- Returns {'claimed', attempt} | {'busy', lease ms left} | {'assumed'} | {'done', state}
--       | {'ended', status} | {'missing'}
local i = ARGV[1]
local f = redis.call('HMGET', KEYS[1], 'status', 'ds:' .. i)
if not f[1] then return {'missing'} end
local cur = f[2] or 'pending'
if not DELIVERY_ALLOWED[cur]['sending'] then return {'done', cur} end
if f[1] ~= 'pending' then return {'ended', f[1]} end
local now = tonumber(ARGV[2])
if cur == 'sending' then
  local until_ms = lease_of(KEYS[2], i)
  if until_ms > now then return {'busy', until_ms - now} end
  if ARGV[5] == 'assume' then
    settle({q = KEYS[1], dlv = KEYS[2]}, KEYS[3], '', '', i, 'delivered', ARGV[7], ARGV[8],
           now, 0, 0, '', KEYS[4], '')
    return {'assumed'}
  end
end
redis.call('HSET', KEYS[1], 'ds:' .. i, 'sending')
local n = redis.call('HINCRBY', KEYS[2], 'n:' .. i, 1)
redis.call('HSET', KEYS[2], 'd:' .. i, ARGV[6],
           'l:' .. i, (now + tonumber(ARGV[3])) .. ':' .. ARGV[4])
same_ttl(KEYS[1], KEYS[2])
return {'claimed', n}
"""
)

SETTLE = (
    _RESOLVE
    + _LEDGER
    + """
-- KEYS[1] the shard's undelivered zset   KEYS[2] the shard's metrics hash
-- KEYS[3] the shard's due zset   KEYS[4..] the question's keys (keys.question_keys)
-- ARGV[1] id  ARGV[2] target index  ARGV[3] new state  ARGV[4] its JSON
-- ARGV[5] owner: only the holder of the claim may settle it ('' = not a claim's end)
-- ARGV[6] expected current state ('' = any allowed)  ARGV[7] undelivered member
-- ARGV[8] now_ms  ARGV[9] keep_ms  ARGV[10] stream maxlen  ARGV[11] no_answer result
-- ARGV[12] going back to pending: claims allowed before the target fails (0 = no limit)
-- ARGV[13] the failed JSON used then  ARGV[14] '1' when this claim does not count (the
--          platform said "later", e.g. a 429)   ARGV[15] a failure's error class
-- Returns {'ok', state, ended ('1'|'0'), the question's status after it}
--       | {'conflict', current state} | {'missing'}
local G = group(4, #KEYS - 10)
local i, state = ARGV[2], ARGV[3]
local cur = redis.call('HGET', G.q, 'ds:' .. i)
if not cur then
  if redis.call('EXISTS', G.q) == 0 then return {'missing'} end
  cur = 'pending'
end
if ARGV[6] ~= '' and cur ~= ARGV[6] then return {'conflict', cur} end
if not DELIVERY_ALLOWED[cur][state] then return {'conflict', cur} end
if ARGV[5] ~= '' then
  local _, owner = lease_of(G.dlv, i)
  if owner ~= ARGV[5] then return {'conflict', cur} end
end
local doc = ARGV[4]
if state == 'pending' then
  local n
  if ARGV[14] == '1' then
    n = redis.call('HINCRBY', G.dlv, 'n:' .. i, -1)
  else
    n = tonumber(redis.call('HGET', G.dlv, 'n:' .. i) or '0')
  end
  local limit = tonumber(ARGV[12])
  if limit > 0 and n >= limit then state, doc = 'failed', ARGV[13] end
end
local ended = settle(G, KEYS[1], KEYS[3], ARGV[1], i, state, doc, ARGV[7],
                     ARGV[8], ARGV[9], ARGV[10], ARGV[11], KEYS[2], ARGV[15])
return {'ok', state, ended, redis.call('HGET', G.q, 'status') or ''}
"""
)

MARK_SUMMARY = """
-- KEYS[1] question hash   KEYS[2] its deliveries hash
-- ARGV[1] target index  ARGV[2] outcome ('done' | 'failed')
-- Marks target i's prompt as turned into its summary, once (`s:<i>` in the hash: short,
-- so it stays a listpack; a question marked before it moved there has it in the
-- deliveries hash). Once the question has ended the target's details go: their ref was
-- kept for this edit. Returns 1 if this call marked it.
local f = redis.call('HMGET', KEYS[1], 'status', 's:' .. ARGV[1])
if not f[1] then return 0 end
if f[1] ~= 'pending' then redis.call('HDEL', KEYS[2], 'd:' .. ARGV[1], 'l:' .. ARGV[1]) end
if f[2] or redis.call('HEXISTS', KEYS[2], 's:' .. ARGV[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 's:' .. ARGV[1], ARGV[2])
return 1
"""

WATCHDOG = (
    _RESOLVE
    + _LEDGER
    + """
-- KEYS[1] a shard's undelivered zset (`<id>|<target index>|<channel>` → show-by ms)
-- KEYS[2] the shard's metrics hash   KEYS[3] the shard's due zset
-- KEYS[4..] the keys of each entry's question (keys.question_keys), one after another
-- ARGV[1] now_ms  ARGV[2] grace_ms  ARGV[3] live channels ('a,b,')  ARGV[4] keep_ms
-- ARGV[5] stream maxlen  ARGV[6] no_answer result  ARGV[7] now (ISO)
-- ARGV[8..] per entry the caller read from the undelivered zset: the entry, its question's
-- event streams' count
-- A target still not shown by its deadline fails when no worker of its channel is
-- live (a live worker may be waiting out a rate limit: it gets grace_ms more). One a
-- worker is sending under a lease that still runs is left until the lease ends: that
-- worker is live whatever the live key says (just restarted, a Redis blip), and
-- failing the target under it would leave its prompt shown but never summarised.
-- Entries no longer due (settled or moved meanwhile) are left alone.
-- Returns {failed, ended, taken}.
local now = tonumber(ARGV[1])
local failed, ended, taken = 0, 0, 0
local k = 4
for a = 8, #ARGV, 2 do
  local member, n = ARGV[a], tonumber(ARGV[a + 1])
  local G = group(k, n)
  k = k + 7 + n
  local score = redis.call('ZSCORE', KEYS[1], member)
  if score and tonumber(score) <= now then
    taken = taken + 1
    local id, i, ch = string.match(member, '^([^|]+)|(%d+)|(.+)$')
    local f = redis.call('HMGET', G.q, 'status', 'ds:' .. i)
    local cur = f[2] or 'pending'
    if f[1] ~= 'pending' or not DELIVERY_ALLOWED[cur]['failed'] then
      redis.call('ZREM', KEYS[1], member)
    elseif string.find(ARGV[3], ',' .. ch .. ',', 1, true) then
      redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), member)
    elseif cur == 'sending' and lease_of(G.dlv, i) > now then
      redis.call('ZADD', KEYS[1], lease_of(G.dlv, i), member)
    else
      local doc = cjson.encode({status = 'failed', at = ARGV[7], ref = cjson.null,
                                error = 'no live askgate-' .. ch .. ' worker'})
      failed = failed + 1
      if settle(G, KEYS[1], KEYS[3], id, i, 'failed', doc, member, now, ARGV[4], ARGV[5],
                ARGV[6], KEYS[2], 'no_worker') == '1' then
        ended = ended + 1
      end
    end
  end
end
return {failed, ended, taken}
"""
)

FIELDS = """
-- KEYS[1..n] question hashes (of one shard)
-- Returns, per question, its tenant, session, run and channels ('' when unset or gone):
-- what names the rest of its keys (keys.question_keys), for a batch script to declare.
local out = {}
for _, key in ipairs(KEYS) do
  local f = redis.call('HMGET', key, 'tenant', 'session', 'run', 'channels')
  for i = 1, 4 do out[#out + 1] = f[i] or '' end
end
return out
"""

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

# A compare-and-set of one hash field: KEYS[1] the hash; ARGV[1] the field, ARGV[2] the
# value it held when read ('' for none), ARGV[3] the new value. Writes only if the field
# still holds what was read: 1, else 0 (someone wrote it meanwhile: read again).
SWAP_FIELD = """
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if (cur or '') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""
