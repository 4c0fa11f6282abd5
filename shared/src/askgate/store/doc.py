"""A question's static part (questions, targets, callback, reminders, escalation steps,
the agent and tool-call ids):
its codec and where it is kept. Pure: no Redis calls here.

The doc is deflated with a preset dictionary, behind a version byte that names the
dictionary, so a stored doc reads back whichever dictionary wrote it and a later one can
change. New asks keep it in the question hash itself, cut into `z<n>` fields short enough
that Redis keeps the hash a compact listpack (`hash-max-listpack-value`, 64 by default):
one key per question fewer than when it had its own key (`keys.doc`, still read for the
questions stored that way).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

import orjson

# Version 1: the ask's JSON shape only.
_ZDICT_1 = (
    b'{"questions":[{"id":"","header":"","question":"","options":[{"label":" (Recommended)",'
    b'"description":""},{"label":"","description":""}],"multiSelect":false}],"targets":'
    b'[{"channel":"telegram","chat_id":""},{"channel":"web"}],"callback":"https://"}'
)

# Version 2: common English words and the words of software work that agents ask about
# (a question's text is most of a doc), then every field name and fixed value of the
# ask's JSON. Deflate reaches back into the dictionary for any match of 3+ bytes; the
# nearer the end, the cheaper the match, so the likeliest strings come last. Changing a
# byte of it needs a new version (old docs keep decoding with theirs).
_WORDS_2 = (
    b"able account action actually added address ago allow already although among amount "
    b"answer anyone apply area around asked available away based become best better big bit "
    b"bring call called came case cause certain chance choose clear close come coming common "
    b"complete consider continue control copy cost create created day days decide decision "
    b"describe detail details different direct done early easy else ensure entire even ever "
    b"example expect fail failed failure fast final find fine finish finished follow form "
    b"found free full general give given going good great group handle happen hard help "
    b"high hold hour hours idea important include including information inside item items "
    b"kind know known large late leave left level likely line list little long look lose "
    b"lot low main major manual manually mean means minor minute minutes missing mode move "
    b"name needed normal note number often open order original part pass passed past per "
    b"place point possible prefer previous problem process proceed provide quick quickly "
    b"ready reason recommend recommended record reduce related remaining replace require "
    b"required result return safe save second seem send separate several show side simple "
    b"single small soon source start state stay stop sure switch system take team tell "
    b"three time together top total turn two type unless usual value wait week whole work "
    b"working write wrong year "
    b"about after again against also always another any anything because been before being "
    b"below between both cannot could does doing down during each either enough every few "
    b"first following from further have having here however instead into just keep last "
    b"later least less like longer make many might more most much must need needs never "
    b"next none nothing once only other otherwise over own rather really right same should "
    b"since some something still such than that their them then there these they thing "
    b"think this those though through today tomorrow under until upon very want were what "
    b"when where whether which while will with within without would your you yes now not "
    b"the and for are but all can was one our out use how its may new way who did get has "
    b"him his let put say she too old see try ask add run set end fix off "
    b"approach automatically backup branch build cache change changes check clean code "
    b"commit config configuration current data database default delete dependency deploy "
    b"deployment directory document documentation endpoint environment error existing "
    b"feature file files flag folder format function install issue keep library local "
    b"merge message migrate migration module option package performance pipeline plan "
    b"production project pull push refactor release remote remove rename repository "
    b"request review rollback rollout schema script server service settings staging step "
    b"support table task test tests update upgrade user users version warning "
    b"Should Which Where What When How Do Does Is Are Can Keep Use Run Skip Add Update "
    b"Yes No None All Other Later Now First "
)
_ZDICT_2 = _WORDS_2 + (
    b'"agent_id":"claude-code","tool_call_id":"toolu_01","remind":{"every_s":300,"max":3,"final_warning_s":60},"steps":[{"after_s":300,'
    b'"targets":1}],"callback":"https://","targets":[{"channel":"slack","channel_id":"C",'
    b'"thread_ts":"","allowed_user_ids":["U"]},{"channel":"discord","channel_id":"",'
    b'"allowed_role_ids":[""]},{"channel":"text","url":"https://"},{"channel":"telegram",'
    b'"chat_id":"","allowed_user_ids":[]},{"channel":"web"}]}'
    b'{"questions":[{"id":"","header":"","question":"","multiSelect":true,"options":[{"label"'
    b':" (Recommended)","description":"The "},{"label":"","description":""},{"label":"",'
    b'"description":""}]},{"id":"","header":"","question":"Which ","options":[{"label":"",'
    b'"description":"'
)
_ZDICTS = {1: _ZDICT_1, 2: _ZDICT_2}
# Record field → the doc's name for it (a question stored before kept them in its hash).
_IDS = (("agent", "agent_id"), ("tcid", "tool_call_id"))
DOC_VERSION = 2  # what new docs are written with

# A doc kept in the question hash: fields `z0`, `z1`, … of at most CHUNK bytes each.
# Redis keeps a hash a listpack while every value is at most `hash-max-listpack-value`
# (64 by default) bytes; 63 is the most a listpack stores behind a one-byte length.
CHUNK = 63
CHUNK_PREFIX = b"z"
_Z = CHUNK_PREFIX[0]


def encode_doc(
    questions: list[Any],
    targets: list[Any],
    callback: str | None,
    remind: dict[str, Any] | None = None,
    steps: list[dict[str, Any]] | None = None,
    *,
    ids: Mapping[str, str | None] | None = None,
    version: int = DOC_VERSION,
) -> bytes:
    """`steps`: each escalation step's `after_s` and how many targets it has (its targets
    follow the ask's own in `targets`, in step order). `ids`: the record fields `agent`
    and `tcid` (the agent and tool-call ids, shown, never changed). `version`: the
    dictionary (an older one writes a doc as askgate wrote it then)."""
    doc: dict[str, Any] = {"questions": questions, "targets": targets}
    for field, name in _IDS:
        if ids and ids.get(field):
            doc[name] = ids[field]
    if callback:
        doc["callback"] = callback
    if remind:
        doc["remind"] = remind
    if steps:
        doc["steps"] = steps
    # Level 6 deflates these small docs as well as 9 does, in less time.
    c = zlib.compressobj(6, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, _ZDICTS[version])
    return bytes([version]) + c.compress(orjson.dumps(doc)) + c.flush()


def decode_doc(blob: bytes) -> dict[str, str]:
    """The doc as the record fields `doc`, `targets`, `callback`, `remind`, `steps`
    (JSON / text)."""
    zdict = _ZDICTS.get(blob[0]) if blob else None
    if zdict is None:
        raise ValueError("unknown question doc version")
    d = zlib.decompressobj(-15, zdict)
    doc = orjson.loads(d.decompress(blob[1:]) + d.flush())
    for q in doc["questions"]:
        q.setdefault("multiSelect", False)
    out = {
        "doc": orjson.dumps(doc["questions"]).decode(),
        "targets": orjson.dumps(doc["targets"]).decode(),
    }
    if doc.get("callback"):
        out["callback"] = doc["callback"]
    for name in ("remind", "steps"):
        if doc.get(name):
            out[name] = orjson.dumps(doc[name]).decode()
    for field, name in _IDS:
        if doc.get(name):
            out[field] = doc[name]
    return out


def doc_fields(blob: bytes) -> list[tuple[str, bytes]]:
    """The hash fields that keep `blob`: (`z0`, its first CHUNK bytes), (`z1`, …), …"""
    return [(f"z{n}", blob[at : at + CHUNK]) for n, at in enumerate(range(0, len(blob), CHUNK))]


def split_doc(raw: Mapping[bytes, bytes]) -> tuple[dict[bytes, bytes], bytes | None]:
    """A question hash as read (HGETALL) parted into its other fields and the doc its
    `z<n>` fields keep (None when it keeps none: a question stored with its doc apart)."""
    rest: dict[bytes, bytes] = {}
    chunks: dict[bytes, bytes] = {}
    for name, value in raw.items():
        # (An int compare first: this runs for every field of every question read.)
        if name[0] == _Z and name[1:].isdigit():
            chunks[name] = value
        else:
            rest[name] = value
    if not chunks:
        return rest, None
    return rest, b"".join([chunks[b"z%d" % n] for n in range(len(chunks))])
