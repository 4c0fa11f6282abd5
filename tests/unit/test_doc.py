"""The question doc's codec: versioned dictionaries, and the hash fields that keep it."""

from __future__ import annotations

import pytest
from askgate.store.doc import CHUNK, DOC_VERSION, decode_doc, doc_fields, encode_doc, split_doc

from tests.support.asks import ask_body

# The README example's questions, as a stored doc keeps them.
QUESTIONS = ask_body()["questions"]
TARGETS = [{"channel": "telegram", "chat_id": "42"}]


def test_a_doc_reads_back_whichever_dictionary_wrote_it() -> None:
    """A doc written with the first dictionary (as askgate stored it before) and one
    written now read back the same."""
    old = encode_doc(QUESTIONS, TARGETS, "https://example.com/hook", version=1)
    new = encode_doc(QUESTIONS, TARGETS, "https://example.com/hook")
    assert (old[0], new[0]) == (1, DOC_VERSION)
    assert decode_doc(old) == decode_doc(new)
    assert decode_doc(new)["callback"] == "https://example.com/hook"


def test_an_unknown_doc_version_is_refused() -> None:
    """A doc whose version byte names no dictionary is an error, not garbage."""
    with pytest.raises(ValueError, match="version"):
        decode_doc(b"\x09" + encode_doc(QUESTIONS, TARGETS, None)[1:])


def test_the_hash_fields_keep_a_long_doc_in_order() -> None:
    """A doc cut into more than ten `z<n>` fields, each short enough for a listpack,
    comes back whole from a hash read in any field order."""
    blob = bytes(range(256)) * 4
    fields = doc_fields(blob)
    assert len(fields) > 10 and all(len(v) <= CHUNK for _, v in fields)
    raw = {k.encode(): v for k, v in reversed(fields)} | {b"status": b"pending"}
    rest, kept = split_doc(raw)
    assert kept == blob
    assert rest == {b"status": b"pending"}
    assert split_doc({b"status": b"pending"}) == ({b"status": b"pending"}, None)
