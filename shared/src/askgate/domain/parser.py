"""The plain-text reply parser (README "Plain-text replies"): one pure function shared by
every channel.

`parse_reply(questions, text, locale)` reads a human's message as answers to a pending
ask: option numbers, labels ignoring case, free text, comma lists for multi-select,
keyed or positional lines for several questions (mixed: keyed lines go to their
questions, the others fill the rest in order), and the locale's skip word. A reply that
leaves a question unanswered yields one correction message naming it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from askgate.domain.i18n import SKIP_WORDS, t
from askgate.domain.models import RECOMMENDED, QuestionIn

_NUMBER = re.compile(r"^\s*(\d{1,3})\s*[.)]?\s*$")
_SPLIT = re.compile(r"[,;\n]")
_SPLIT_INLINE = re.compile(r"[,;]")
_SEPARATOR = re.compile(r"\s*(?::|=|\s-\s|-)\s*")


@dataclass(frozen=True)
class ParsedReply:
    kind: Literal["answers", "skip", "incomplete"]
    answers: dict[str, list[str]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    message: str | None = None


def normalize(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip()


def is_skip(text: str) -> bool:
    return normalize(text).casefold().rstrip(".!") in SKIP_WORDS


def match_label(question: QuestionIn, text: str) -> str | None:
    """The declared label that `text` names, ignoring case and the Recommended suffix."""
    want = " ".join(normalize(text).split()).casefold()
    if not want:
        return None
    labels = [(opt.label, normalize(opt.label).casefold()) for opt in question.options]
    # A whole label wins over another label without its suffix (`fast` vs `Fast (Rec…)`).
    for declared, label in labels:
        if want == label:
            return declared
    suffix = RECOMMENDED.casefold()
    for declared, label in labels:
        if label.endswith(suffix) and want == label[: -len(suffix)]:
            return declared
    return None


def resolve_part(question: QuestionIn, text: str) -> str | None:
    """One answer value: option n, a label, or trimmed free text (None when blank)."""
    text = normalize(text)
    if not text:
        return None
    m = _NUMBER.match(text)
    if m and 1 <= int(m.group(1)) <= len(question.options):
        return question.options[int(m.group(1)) - 1].label
    return match_label(question, text) or text


def parse_value(question: QuestionIn, text: str, *, split_lines: bool = True) -> list[str]:
    """All values one question's text gives, as the answer list (empty when blank)."""
    text = normalize(text)
    if not text:
        return []
    if not question.multiSelect:
        value = resolve_part(question, text)
        return [value] if value else []
    whole = _NUMBER.match(text) or match_label(question, text)
    if whole:
        value = resolve_part(question, text)
        return [value] if value else []
    parts = _SPLIT.split(text) if split_lines else _SPLIT_INLINE.split(text)
    values: dict[str, None] = {}  # ordered, and O(1) to test: duplicates dropped
    for part in parts:
        value = resolve_part(question, part)
        if value:
            values[value] = None
    return list(values)


def _keys(questions: Sequence[QuestionIn]) -> list[tuple[str, ...]]:
    """Each question's keys as a reply's key is compared: after NFC (the reply is NFC'd, so
    a header declared as a compatibility ideograph such as U+2F800 must be too), casefolded."""
    keys: list[tuple[str, ...]] = []
    for q in questions:
        text = normalize(q.question).casefold()
        keys.append((q.id, normalize(q.header).casefold(), text, text.rstrip("?")))
    return keys


def _key_index(keys: Sequence[tuple[str, ...]], key: str) -> int | None:
    k = " ".join(key.split()).casefold()
    if k.isdecimal() and 1 <= int(k) <= len(keys):  # isdigit() takes "²", int() not
        return int(k) - 1
    for i, names in enumerate(keys):
        if k in names:
            return i
    return None


def _sort_lines(
    questions: Sequence[QuestionIn], lines: list[str]
) -> tuple[dict[int, str], list[str]]:
    """The keyed lines' values by question, and every other line in order. A line is
    keyed only when its key names a question (id, header, question text or position):
    `14:30`, `2026-07-08` or `https://…` merely look keyed, and are values."""
    found: dict[int, list[str]] = {}
    loose: list[str] = []
    keys, longest = _keys(questions), _longest_key(questions)
    for line in lines:
        pair = _split_key(keys, line, longest) if line.strip() else None
        if pair is None:
            loose.append(line)
        else:
            found.setdefault(pair[0], []).append(pair[1])
    # Joined once at the end: appending to a string per line would be quadratic.
    return {idx: ", ".join(values) for idx, values in found.items()}, loose


def _longest_key(questions: Sequence[QuestionIn]) -> int:
    """The most characters a key can span (a question's text, with some spacing slack):
    no separator beyond it can end a key, so a line is never rescanned past it."""
    return max(len(q.question) for q in questions) * 2 + 16


def _split_key(keys: Sequence[tuple[str, ...]], line: str, longest: int) -> tuple[int, str] | None:
    """The first `key<sep>value` split of `line` whose key names a question: a header
    such as `Pre-check` holds a separator itself, so the first `-` is not always it."""
    for sep in _SEPARATOR.finditer(line, 0, longest):
        key = line[: sep.start()]
        if key.strip():
            idx = _key_index(keys, key)
            if idx is not None:
                return idx, line[sep.end() :]
    return None


def parse_reply(questions: Sequence[QuestionIn], text: str, locale: str = "en") -> ParsedReply:
    raw = unicodedata.normalize("NFC", text)
    text = raw.strip()
    if is_skip(text):
        return ParsedReply("skip")
    answers: dict[str, list[str]] = {}
    if len(questions) == 1:
        values = parse_value(questions[0], text)
        if values:
            answers[questions[0].id] = values
    else:
        lines = raw.replace("\r", "").rstrip().split("\n")
        keyed, loose = _sort_lines(questions, lines)
        for idx, value in keyed.items():
            values = parse_value(questions[idx], value, split_lines=False)
            if values:
                answers[questions[idx].id] = values
        if keyed:
            # The other lines fill the questions no key named, in order (blank ones skipped).
            rest = [q for i, q in enumerate(questions) if i not in keyed]
            loose = [line for line in loose if line.strip()]
        else:
            # One line per question; a blank line (a leading one too) keeps its place.
            rest = list(questions)
        if len(loose) > len(rest) and any(x.strip() for x in loose[len(rest) :]):
            return ParsedReply(
                "incomplete",
                answers=answers,
                missing=[q.id for q in questions if q.id not in answers],
                message=t(locale, "too_many_lines", count=len(questions)),
            )
        for q, line in zip(rest, loose, strict=False):
            values = parse_value(q, line, split_lines=False)
            if values:
                answers[q.id] = values
    missing = [q for q in questions if q.id not in answers]
    if missing:
        named = " / ".join(f"{q.header}: {q.question}" for q in missing)
        return ParsedReply(
            "incomplete",
            answers=answers,
            missing=[q.id for q in missing],
            message=t(locale, "missing", questions=named),
        )
    return ParsedReply("answers", answers=answers)
