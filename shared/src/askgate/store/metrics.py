"""Counters kept in Redis where things happen, and their Prometheus text.

Questions end, targets fail, timers fire and reminders go out in many processes (the
API, every channel worker, every sweeper), so no process can count them alone. The
scripts that do each of these also count it in their shard's metrics hash
(`keys.metrics`, declared in their KEYS); any API replica sums every shard's hash into
Prometheus text (`render`). Field names (spelled here and, for the scripts, rendered into
their Lua by `LUA_METRICS`):

- `lat:<channel>:<le>` answers whose time from ask to answer fell in the bucket with
  upper bound `le` seconds (`+Inf` last), and `lat_ms:<channel>` the sum of those times
- `na:<reason>` questions ended as no_answer, by reason
- `df:<channel>:<class>` targets that failed, by channel and error class
  (`refused`: the platform refused for good; `retries`: its tries ran out; `no_worker`:
  no live worker of its channel showed it in time)
- `rs:<channel>` reminders sent, `esc` escalation steps started, `late` late answers kept
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from askgate.domain.models import CHANNELS

# Upper bounds (seconds) of the answer-latency histogram's buckets.
LATENCY_BUCKETS_S = (5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)
# Channel labels a responder may carry; anything else counts as `other` (an API caller
# names its own responder, and a label per made-up name would grow without bound).
CHANNEL_LABELS = (*CHANNELS, "api")

LUA_METRICS = (
    "local LATENCY_BUCKETS = {"
    + ", ".join(str(b) for b in LATENCY_BUCKETS_S)
    + "}\n"
    + "local CHANNEL_LABELS = {"
    + ", ".join(f"['{c}'] = true" for c in CHANNEL_LABELS)
    + "}\n"
    + """
-- The channel label of a responder JSON ('api' when it names none).
local function channel_label(responder)
  if responder == nil or responder == '' then return 'api' end
  local ok, r = pcall(cjson.decode, responder)
  if not ok or type(r) ~= 'table' or type(r.channel) ~= 'string' then return 'api' end
  if CHANNEL_LABELS[r.channel] then return r.channel end
  return 'other'
end

-- Count a question's end: an answer's latency by channel, or a no_answer by reason.
local function count_end(mkey, status, reason, responder, created, now)
  if status == 'answered' then
    local ch = channel_label(responder)
    local ms = math.max(0, tonumber(now) - tonumber(created or now))
    local le = '+Inf'
    for _, b in ipairs(LATENCY_BUCKETS) do
      if ms <= b * 1000 then le = tostring(b); break end
    end
    redis.call('HINCRBY', mkey, 'lat:' .. ch .. ':' .. le, 1)
    redis.call('HINCRBY', mkey, 'lat_ms:' .. ch, ms)
  else
    redis.call('HINCRBY', mkey, 'na:' .. reason, 1)
  end
end

-- Count n no_answer ends with one reason at once (a batch script's).
local function count_no_answers(mkey, reason, n)
  redis.call('HINCRBY', mkey, 'na:' .. reason, n)
end
"""
)


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(hashes: Iterable[Mapping[bytes, bytes]]) -> str:
    """Prometheus text of every shard's metrics hash, summed."""
    total: dict[str, int] = defaultdict(int)
    for raw in hashes:
        for k, v in raw.items():
            total[k.decode()] += int(v)
    lines: list[str] = []

    def family(name: str, kind: str, help_: str) -> None:
        lines.append(f"# HELP {name} {help_}")
        lines.append(f"# TYPE {name} {kind}")

    family(
        "askgate_answer_latency_seconds",
        "histogram",
        "Time from ask to answer, by the channel that answered",
    )
    by_channel: dict[str, dict[str, int]] = defaultdict(dict)
    for field, n in total.items():
        if field.startswith("lat:"):
            _, ch, le = field.split(":", 2)
            by_channel[ch][le] = n
    for ch in sorted(by_channel):
        counts = by_channel[ch]
        running = 0
        for le in [*map(str, LATENCY_BUCKETS_S), "+Inf"]:
            running += counts.get(le, 0)
            shown = le if le == "+Inf" else str(float(le))  # as prometheus_client spells it
            lines.append(
                f'askgate_answer_latency_seconds_bucket{{channel="{_esc(ch)}",'
                f'le="{shown}"}} {running}'
            )
        lines.append(
            f'askgate_answer_latency_seconds_sum{{channel="{_esc(ch)}"}} '
            f"{total.get(f'lat_ms:{ch}', 0) / 1000:g}"
        )
        lines.append(f'askgate_answer_latency_seconds_count{{channel="{_esc(ch)}"}} {running}')

    def counter(name: str, help_: str, prefix: str, labels: tuple[str, ...]) -> None:
        family(name, "counter", help_)
        for field in sorted(f for f in total if f.startswith(prefix)):
            values = field[len(prefix) :].split(":", len(labels) - 1)
            if len(values) != len(labels):
                continue
            pairs = ",".join(f'{k}="{_esc(v)}"' for k, v in zip(labels, values, strict=True))
            lines.append(f"{name}{{{pairs}}} {total[field]}")

    counter(
        "askgate_no_answer_total",
        "Questions ended without an answer, by reason",
        "na:",
        ("reason",),
    )
    counter(
        "askgate_delivery_failures_total",
        "Targets that failed, by channel and error class",
        "df:",
        ("channel", "error"),
    )
    counter("askgate_reminders_sent_total", "Reminders sent, by channel", "rs:", ("channel",))
    family("askgate_escalations_total", "counter", "Escalation steps started")
    lines.append(f"askgate_escalations_total {total.get('esc', 0)}")
    family("askgate_late_answers_total", "counter", "Answers kept after their question ended")
    lines.append(f"askgate_late_answers_total {total.get('late', 0)}")
    return "\n".join(lines) + "\n"
