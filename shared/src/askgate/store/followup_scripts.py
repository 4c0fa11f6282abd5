"""The Lua scripts of what follows an ask: reminders and escalation steps falling due
(`TIMERS`), reminders marked sent per target (`REMINDER_CLAIM`, `REMINDER_DONE`) and
answers that came after the end (`LATE_ANSWER`).

As in `scripts.py`, each header says what each KEYS[n] and ARGV[n] is. Every key a
script touches arrives in KEYS (the caller reads what it needs to name them first), and
all of them carry the question's shard tag, so each call runs in one Redis Cluster slot.
"""

from __future__ import annotations

# The deliveries hash lives as long as the question hash.
_SAME_TTL = """
local function same_ttl(qkey, dkey)
  local ttl = redis.call('PTTL', qkey)
  if ttl > 0 then redis.call('PEXPIRE', dkey, ttl) end
end
"""

TIMERS = """
-- KEYS[1] the shard's timers zset   KEYS[2] question hash
-- KEYS[3] the shard's undelivered zset   KEYS[4] the shard's metrics hash
-- KEYS[5..] the event streams the timer's event goes to
-- ARGV[1] the timer's member  ARGV[2] question id  ARGV[3] kind (remind|warn|escalate)
-- ARGV[4] n (reminder number, or escalation step)  ARGV[5] now_ms  ARGV[6] stream maxlen
-- ARGV[7] k: how many undelivered score/member pairs follow (an escalation step's chat
--         targets and their show-by deadlines: the watchdog's clock starts now)
-- Pops the timer; whoever pops it fires it, once, if the question is still pending:
-- a reminder appends question.remind (n, final, left_ms), a step records when it
-- started (`esc:<n>`) and appends question.escalate (step).
-- Returns 'fired' | 'taken' (another sweeper popped it) | 'ended' (gone or not pending)
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 'taken' end
local f = redis.call('HMGET', KEYS[2], 'status', 'tenant', 'session', 'expires')
if f[1] ~= 'pending' then return 'ended' end
local now = tonumber(ARGV[5])
if ARGV[3] == 'escalate' then
  redis.call('HSET', KEYS[2], 'esc:' .. ARGV[4], now)
  local k = tonumber(ARGV[7])
  if k > 0 then redis.call('ZADD', KEYS[3], unpack(ARGV, 8, 7 + 2 * k)) end
  redis.call('HINCRBY', KEYS[4], 'esc', 1)
  for i = 5, #KEYS do
    redis.call('XADD', KEYS[i], 'MAXLEN', '~', ARGV[6], '*', 'type', 'question.escalate',
               'id', ARGV[2], 'tenant', f[2], 'session', f[3], 'step', ARGV[4])
  end
else
  redis.call('HINCRBY', KEYS[2], 'rn', 1)
  local left = math.max(0, tonumber(f[4]) - now)
  local final = ARGV[3] == 'warn' and '1' or '0'
  for i = 5, #KEYS do
    redis.call('XADD', KEYS[i], 'MAXLEN', '~', ARGV[6], '*', 'type', 'question.remind',
               'id', ARGV[2], 'tenant', f[2], 'session', f[3], 'n', ARGV[4], 'final', final,
               'left_ms', left)
  end
end
return 'fired'
"""

REMINDER_CLAIM = (
    _SAME_TTL
    + """
-- KEYS[1] question hash   KEYS[2] its deliveries hash
-- ARGV[1] target index  ARGV[2] reminder number
-- Claims reminder n of target i (`r:<i>:<n>` in the deliveries hash) while the question
-- is pending and the target's prompt is shown. Returns 1 for exactly one caller.
local f = redis.call('HMGET', KEYS[1], 'status', 'ds:' .. ARGV[1])
if f[1] ~= 'pending' or f[2] ~= 'delivered' then return 0 end
if redis.call('HSETNX', KEYS[2], 'r:' .. ARGV[1] .. ':' .. ARGV[2], 'sending') == 0 then
  return 0
end
same_ttl(KEYS[1], KEYS[2])
return 1
"""
)

REMINDER_DONE = """
-- KEYS[1] question hash   KEYS[2] its deliveries hash   KEYS[3] the shard's metrics hash
-- ARGV[1] target index  ARGV[2] reminder number  ARGV[3] 'sent' | 'failed' | '' (hand the
-- claim back, for a later try)  ARGV[4] the target's channel (the metrics label)
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local field = 'r:' .. ARGV[1] .. ':' .. ARGV[2]
if ARGV[3] == '' then return redis.call('HDEL', KEYS[2], field) end
redis.call('HSET', KEYS[2], field, ARGV[3])
if ARGV[3] == 'sent' then redis.call('HINCRBY', KEYS[3], 'rs:' .. ARGV[4], 1) end
return 1
"""

LATE_ANSWER = (
    _SAME_TTL
    + """
-- KEYS[1] question hash   KEYS[2] its deliveries hash   KEYS[3] the shard's metrics hash
-- KEYS[4] (only with a callback_url) the shard's `webhook` event stream
-- ARGV[1] question id  ARGV[2] the late answer's JSON  ARGV[3] at most this many are kept
-- ARGV[4] stream maxlen
-- Keeps an answer that came after its question ended without one (`late:<n>` in the
-- deliveries hash, `late:n` how many) and appends question.late_answer for the webhook.
-- The result never changes. Returns {'kept', n} | {'full'} | {'answered'} | {'pending'}
-- | {'missing'}
local f = redis.call('HMGET', KEYS[1], 'status', 'tenant', 'session')
if not f[1] then return {'missing'} end
if f[1] == 'pending' then return {'pending'} end
if f[1] ~= 'no_answer' then return {'answered'} end
local n = tonumber(redis.call('HGET', KEYS[2], 'late:n') or '0')
if n >= tonumber(ARGV[3]) then return {'full'} end
redis.call('HSET', KEYS[2], 'late:' .. n, ARGV[2], 'late:n', n + 1)
same_ttl(KEYS[1], KEYS[2])
redis.call('HINCRBY', KEYS[3], 'late', 1)
if KEYS[4] then
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[4], '*', 'type', 'question.late_answer',
             'id', ARGV[1], 'tenant', f[2], 'session', f[3], 'n', n)
end
return {'kept', n}
"""
)
