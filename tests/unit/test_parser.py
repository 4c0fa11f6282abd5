"""Plain-text replies (README "Plain-text replies"), as the README's examples and as
properties over random asks."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import pytest
from askgate.domain.i18n import SKIP_WORDS
from askgate.domain.models import QuestionIn
from askgate.domain.parser import ParsedReply, is_skip, match_label, parse_reply, parse_value
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.support.properties import PROPERTY


def make(
    qid: str, header: str, question: str, labels: Sequence[str], *, multi: bool = False
) -> QuestionIn:
    return QuestionIn(
        id=qid,
        header=header,
        question=question,
        options=[{"label": label} for label in labels],
        multiSelect=multi,
    )


DEPLOY = make(
    "deploy_target",
    "Deploy",
    "Where should I deploy this build?",
    ["Staging (Recommended)", "Production", "Canary", "Local"],
)
DB = make("database", "DB", "Which database?", ["Postgres", "SQLite"])
AREAS = make(
    "areas",
    "Areas",
    "Which areas need tests?",
    ["Auth", "Billing", "Search, sort", "UI"],
    multi=True,
)
PRECHECK = make("precheck", "Pre-check", "Run the pre-check first?", ["Yes", "No"])


def answers(reply: ParsedReply) -> dict[str, list[str]]:
    assert reply.kind == "answers", reply
    return reply.answers


# -- one single-select question ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("1", "Staging (Recommended)", id="number-1"),
        pytest.param("4", "Local", id="number-last"),
        pytest.param("  2 ", "Production", id="number-padded"),
        pytest.param("2.", "Production", id="number-dot"),
        pytest.param("2)", "Production", id="number-paren"),
        pytest.param("7", "7", id="number-out-of-range-is-free-text"),
        pytest.param("0", "0", id="zero-is-free-text"),
        pytest.param("production", "Production", id="label-lower"),
        pytest.param("PRODUCTION", "Production", id="label-upper"),
        pytest.param("staging", "Staging (Recommended)", id="label-without-recommended"),
        pytest.param("STAGING (recommended)", "Staging (Recommended)", id="label-with-recommended"),
        pytest.param("  Canary  ", "Canary", id="label-padded"),
        pytest.param("  ship it   tomorrow ", "ship it   tomorrow", id="free-text-trimmed"),
        pytest.param("Production please", "Production please", id="label-prefix-is-free-text"),
        pytest.param("1,2", "1,2", id="single-select-is-not-split"),
    ],
)
def test_single_question_reply(text: str, value: str) -> None:
    """A number in range picks that option, a label picks itself, anything else is free text."""
    assert answers(parse_reply([DEPLOY], text)) == {"deploy_target": [value]}


def test_exact_label_wins_over_a_label_without_its_suffix() -> None:
    """`x` names the option labelled `X`, not `x (Recommended)` declared before it."""
    question = make("pick", "Pick", "Which?", ["Fast (Recommended)", "fast"])
    assert answers(parse_reply([question], "FAST")) == {"pick": ["fast"]}
    assert answers(parse_reply([question], "fast (recommended)")) == {
        "pick": ["Fast (Recommended)"]
    }


def test_label_typed_decomposed_matches_precomposed_label() -> None:
    """The reply is compared after NFC, so `è` typed as e + U+0300 still matches."""
    question = make("city", "City", "Which city?", ["Zürich", "Genève"])
    assert answers(parse_reply([question], "GENE\u0300VE")) == {"city": ["Genève"]}


def test_label_declared_decomposed_matches_precomposed_reply() -> None:
    """The label is compared after NFC too, and the declared spelling is returned."""
    question = make("city", "City", "Which city?", ["Zürich", "Gene\u0300ve"])
    assert answers(parse_reply([question], "genève")) == {"city": ["Gene\u0300ve"]}


def test_blank_reply_is_incomplete() -> None:
    """An empty message answers nothing and names the question."""
    reply = parse_reply([DEPLOY], "   ")
    assert reply.kind == "incomplete"
    assert reply.missing == ["deploy_target"]
    assert reply.message == "Please also answer: Deploy: Where should I deploy this build?"


# -- multi-select -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "values"),
    [
        pytest.param("1,3", ["Auth", "Search, sort"], id="numbers-comma"),
        pytest.param("Auth; Billing", ["Auth", "Billing"], id="labels-semicolon"),
        pytest.param("auth\nui", ["Auth", "UI"], id="labels-newline"),
        pytest.param("2, 1, 2", ["Billing", "Auth"], id="duplicates-dropped-order-kept"),
        pytest.param("billing, 2", ["Billing"], id="label-and-number-same-option"),
        pytest.param("search, sort", ["Search, sort"], id="whole-text-is-a-comma-label"),
        pytest.param("3", ["Search, sort"], id="one-number"),
        pytest.param("Auth, fuzzing", ["Auth", "fuzzing"], id="label-and-free-text"),
        pytest.param("1,,2,", ["Auth", "Billing"], id="empty-parts-ignored"),
        pytest.param("9, 1", ["9", "Auth"], id="out-of-range-part-is-free-text"),
    ],
)
def test_multi_select_reply(text: str, values: list[str]) -> None:
    """The whole text is tried first, then split on , ; and newlines, deduplicated in order."""
    assert answers(parse_reply([AREAS], text)) == {"areas": values}


# -- several questions ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("deploy_target: 2\ndatabase: sqlite", id="id-colon"),
        pytest.param("Deploy = Production\nDB = 2", id="header-equals"),
        pytest.param("1 - 2\n2 - SQLite", id="position-dash"),
        pytest.param("2-sqlite\n1-production", id="position-dash-no-spaces-any-order"),
        pytest.param(
            "Where should I deploy this build?: 2\nWhich database?: 2", id="question-text"
        ),
        pytest.param(
            "which database: sqlite\nWHERE SHOULD I DEPLOY THIS BUILD: production",
            id="question-text-without-question-mark",
        ),
        pytest.param("deploy_target: 2\n\ndatabase: 2\n", id="blank-lines-between-keys"),
        pytest.param("2\nsqlite", id="positional"),
        pytest.param("Production\n2\n\n", id="positional-trailing-blank-lines"),
    ],
)
def test_two_questions_reply(text: str) -> None:
    """Keyed lines (id, header, question text, position) or one line per question."""
    assert answers(parse_reply([DEPLOY, DB], text)) == {
        "deploy_target": ["Production"],
        "database": ["SQLite"],
    }


def test_keyed_multi_select_value_is_split_on_commas() -> None:
    """A keyed multi-select value is a comma list; keys may come in any order."""
    reply = parse_reply([DEPLOY, DB, AREAS], "areas: 1, 4\ndeploy_target: 1\ndatabase: 1")
    assert answers(reply) == {
        "areas": ["Auth", "UI"],
        "deploy_target": ["Staging (Recommended)"],
        "database": ["Postgres"],
    }


def test_repeated_key_adds_values_for_multi_select() -> None:
    """Two lines for the same multi-select question give both values."""
    reply = parse_reply([DB, AREAS], "areas: auth\nareas: billing\nDB: 1")
    assert answers(reply) == {"areas": ["Auth", "Billing"], "database": ["Postgres"]}


def test_30000_parts_parse_in_order_without_duplicates() -> None:
    """A 30,000-part multi-select reply parses (linearly) into its distinct values."""
    parts = [f"v{i % 10_000}" for i in range(30_000)] + ["4", "auth"]
    reply = parse_reply([AREAS], ",".join(parts))
    assert answers(reply)["areas"] == [f"v{i}" for i in range(10_000)] + ["UI", "Auth"]


def test_30000_keyed_lines_join_in_order() -> None:
    """30,000 keyed lines for one multi-select question join into its values."""
    lines = [f"areas: v{i}" for i in range(30_000)] + ["DB: 2"]
    reply = parse_reply([DB, AREAS], "\n".join(lines))
    assert answers(reply) == {"database": ["SQLite"], "areas": [f"v{i}" for i in range(30_000)]}


def test_header_with_a_hyphen_is_a_key() -> None:
    """`Pre-check: 1` keys on the header `Pre-check`; the hyphen is not the separator."""
    reply = parse_reply([PRECHECK, DB], "Pre-check: no\nDB: 2")
    assert answers(reply) == {"precheck": ["No"], "database": ["SQLite"]}


def test_unknown_key_falls_back_to_positional_free_text() -> None:
    """A line whose key names no question is read positionally, whole."""
    reply = parse_reply([DEPLOY, DB], "Blue-green: on staging\n1")
    assert answers(reply) == {
        "deploy_target": ["Blue-green: on staging"],
        "database": ["Postgres"],
    }


def test_blank_line_keeps_its_place() -> None:
    """A blank line leaves its question unanswered rather than shifting the rest up."""
    reply = parse_reply([DEPLOY, DB, AREAS], "1\n\n1,2")
    assert reply.kind == "incomplete"
    assert reply.answers == {
        "deploy_target": ["Staging (Recommended)"],
        "areas": ["Auth", "Billing"],
    }
    assert reply.missing == ["database"]


def test_leading_blank_line_keeps_its_place() -> None:
    """A blank first line means the first question is the unanswered one."""
    reply = parse_reply([DEPLOY, DB, AREAS], "\n2\n1")
    assert reply.kind == "incomplete"
    assert reply.missing == ["deploy_target"]
    assert reply.answers == {"database": ["SQLite"], "areas": ["Auth"]}


MISSING_DB = {
    "en": "Please also answer: DB: Which database?",
    "tr": "Lütfen şunu da cevaplayın: DB: Which database?",
    "hi": "कृपया इसका भी उत्तर दें: DB: Which database?",
}


@pytest.mark.parametrize("locale", ["en", "tr", "hi"])
@pytest.mark.parametrize(
    "text", ["2", "deploy_target: 2", "2\n   "], ids=["positional", "keyed", "blank"]
)
def test_partial_reply_names_the_missing_question(locale: str, text: str) -> None:
    """One correction message in the ask's locale names the unanswered question."""
    reply = parse_reply([DEPLOY, DB], text, locale)
    assert reply.kind == "incomplete"
    assert reply.missing == ["database"]
    assert reply.answers == {"deploy_target": ["Production"]}
    assert reply.message == MISSING_DB[locale]


@pytest.mark.parametrize(
    ("locale", "message"),
    [
        ("en", "Please reply with one line per question (2 questions)."),
        ("tr", "Lütfen her soru için bir satır yazın (2 soru)."),
        ("hi", "कृपया हर प्रश्न के लिए एक पंक्ति लिखें (2 प्रश्न)।"),
    ],
    ids=["en", "tr", "hi"],
)
def test_too_many_lines_is_refused(locale: str, message: str) -> None:
    """More non-blank lines than questions is one correction, answering nothing."""
    reply = parse_reply([DEPLOY, DB], "1\n2\n3", locale)
    assert reply == ParsedReply(
        "incomplete", answers={}, missing=["deploy_target", "database"], message=message
    )


def test_superscript_digit_key_does_not_crash() -> None:
    """`²` is a digit to str.isdigit but not a position; the line is not keyed by it."""
    reply = parse_reply([DEPLOY, DB], "²: 1\nsqlite")
    assert answers(reply) == {"deploy_target": ["²: 1"], "database": ["SQLite"]}


# -- skip --------------------------------------------------------------------------------

PRECOMPOSED_HI_SKIP = "\u091b\u094b\u095c\u0947\u0902"  # छोड़ें typed with ड़ as U+095C


@pytest.mark.parametrize("locale", ["en", "tr", "hi"])
@pytest.mark.parametrize(
    "word",
    ["skip", "SKIP", "Skip.", " skip! ", "/skip", "atla", "ATLA", "छोड़ें", PRECOMPOSED_HI_SKIP],
    ids=repr,
)
def test_skip_word_skips_the_whole_ask(locale: str, word: str) -> None:
    """Each locale's skip word (and English `skip`) skips every question, in any locale."""
    assert parse_reply([DEPLOY, DB], word, locale).kind == "skip"
    assert parse_reply([AREAS], word, locale).kind == "skip"


def test_precomposed_nukta_normalises_to_the_skip_word() -> None:
    """U+095C is NFC-decomposed to ड + ़, which is how SKIP_WORDS spells it."""
    assert PRECOMPOSED_HI_SKIP not in SKIP_WORDS
    assert unicodedata.normalize("NFC", PRECOMPOSED_HI_SKIP) in SKIP_WORDS
    assert is_skip(PRECOMPOSED_HI_SKIP)


@pytest.mark.parametrize("text", ["skip it", "skipping", "don't skip", "atla beni"])
def test_sentence_with_skip_is_free_text(text: str) -> None:
    """Only the skip word alone skips; a sentence containing it is an answer."""
    assert answers(parse_reply([DEPLOY], text)) == {"deploy_target": [text]}


# -- helpers -----------------------------------------------------------------------------


def test_match_label_returns_none_for_blank() -> None:
    """Blank text names no option."""
    assert match_label(DEPLOY, "  ") is None


def test_parse_value_keyed_line_does_not_split_on_newlines() -> None:
    """With split_lines=False a multi-select value splits on , and ; only."""
    assert parse_value(AREAS, "auth; ui", split_lines=False) == ["Auth", "UI"]


# -- properties over random asks ---------------------------------------------------------

# The parser's own notion of "a number": 1-3 decimal digits, optionally `.` or `)`.
NUMBER = re.compile(r"^\s*(\d{1,3})\s*[.)]?\s*$")


def fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split()).casefold()


def is_number_in_range(text: str, count: int) -> bool:
    m = NUMBER.match(unicodedata.normalize("NFC", text).strip())
    return m is not None and 1 <= int(m.group(1)) <= count


def names_label(question: QuestionIn, text: str) -> bool:
    want = fold(text)
    for opt in question.options:
        label = fold(opt.label)
        if want == label or (
            label.endswith(" (recommended)") and want == label[: -len(" (recommended)")]
        ):
            return True
    return False


def skip_like(text: str) -> bool:
    return unicodedata.normalize("NFC", text).strip().casefold().rstrip(".!") in SKIP_WORDS


labels_st = (
    st.one_of(
        st.sampled_from(
            [
                "Auth",
                "Billing",
                "Search, sort",
                "Staging (Recommended)",
                "UI",
                "Yes",
                "No",
                "Zürich",
                "Genève",
                "नमस्ते",
                "Diğer şehir",
                "a; b",
                "12",
                "2024-06-01",
            ]
        ),
        st.text(min_size=1, max_size=30),
    )
    .map(lambda s: " ".join(s.split()))
    .filter(bool)
)


@st.composite
def questions_st(draw: st.DrawFn, qid: str = "pick", multi: bool | None = None) -> QuestionIn:
    labels = draw(st.lists(labels_st, min_size=2, max_size=4, unique_by=fold))
    multi_select = draw(st.booleans()) if multi is None else multi
    header = draw(st.text(min_size=1, max_size=16).filter(str.strip))
    text = draw(st.text(min_size=1, max_size=40).filter(lambda s: s.strip()))
    try:
        return QuestionIn.model_validate(
            {
                "id": qid,
                "header": header,
                "question": text.replace("\n", " ").replace("\r", " "),
                "options": [{"label": label} for label in labels],
                "multiSelect": multi_select,
            }
        )
    except ValidationError:
        assume(False)
        raise  # unreachable: assume(False) raises


def random_case(data: st.DataObject, text: str) -> str:
    flips = data.draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(c.upper() if up else c.lower() for c, up in zip(text, flips, strict=True))


@PROPERTY
@given(data=st.data(), question=questions_st())
def test_property_option_number_picks_that_label(data: st.DataObject, question: QuestionIn) -> None:
    """Replying with option number n (also `n.`, `n)`, padded) yields exactly option n."""
    n = data.draw(st.integers(1, len(question.options)))
    form = data.draw(st.sampled_from(["{}", " {} ", "{}.", "{})"]))
    reply = parse_reply([question], form.format(n))
    assert answers(reply) == {question.id: [question.options[n - 1].label]}


@PROPERTY
@given(data=st.data(), question=questions_st())
def test_property_label_in_any_case_picks_it(data: st.DataObject, question: QuestionIn) -> None:
    """Replying with a declared label in random case yields that declared label."""
    option = data.draw(st.sampled_from(question.options))
    typed = random_case(data, option.label)
    assume(fold(typed) == fold(option.label))  # case mapping is not always reversible (ı→I→i)
    assume(not is_number_in_range(typed, len(question.options)))  # numbers pick by position
    assume(not skip_like(typed))
    assert answers(parse_reply([question], typed)) == {question.id: [option.label]}


@PROPERTY
@given(question=questions_st(multi=False), text=st.text(min_size=1))
def test_property_other_text_is_free_text(question: QuestionIn, text: str) -> None:
    """Text that is no number in range, no label and no skip word is itself, normalised."""
    assume(unicodedata.normalize("NFC", text).strip())
    assume(not is_number_in_range(text, len(question.options)))
    assume(not names_label(question, text))
    assume(not skip_like(text))
    expected = unicodedata.normalize("NFC", text).strip()
    assert answers(parse_reply([question], text)) == {question.id: [expected]}


@PROPERTY
@given(data=st.data(), question=questions_st(multi=True))
def test_property_multi_select_numbers_give_labels_in_order(
    data: st.DataObject, question: QuestionIn
) -> None:
    """A list of option numbers yields their labels, first occurrence first, no duplicates."""
    picks = data.draw(st.lists(st.integers(1, len(question.options)), min_size=1, max_size=6))
    sep = data.draw(st.sampled_from([",", ", ", ";", " ; ", "\n"]))
    text = sep.join(str(n) for n in picks)
    assume(not names_label(question, text))  # the whole text is tried as one label first
    expected = list(dict.fromkeys(question.options[n - 1].label for n in picks))
    assert answers(parse_reply([question], text)) == {question.id: expected}


@st.composite
def asks_st(draw: st.DrawFn, min_size: int = 1) -> list[QuestionIn]:
    count = draw(st.integers(min_size, 3))
    return [draw(questions_st(qid=f"q{i}")) for i in range(count)]


@PROPERTY
@given(data=st.data(), questions=asks_st(min_size=2))
def test_property_positional_numbers_answer_every_question(
    data: st.DataObject, questions: list[QuestionIn]
) -> None:
    """One line of an option number per question answers each with that label."""
    picks = [data.draw(st.integers(1, len(q.options))) for q in questions]
    reply = parse_reply(questions, "\n".join(str(n) for n in picks))
    assert answers(reply) == {
        q.id: [q.options[n - 1].label] for q, n in zip(questions, picks, strict=True)
    }


replies_st = st.one_of(
    st.text(),
    st.text(alphabet="12³²३٣:=-,;. \n\r\tskipatlaSKIPछोड़ें\u095cq0_"),
)


@PROPERTY
@given(questions=asks_st(), text=replies_st, locale=st.sampled_from(["en", "tr", "hi"]))
def test_property_parse_reply_is_total(questions: list[QuestionIn], text: str, locale: str) -> None:
    """Any text gives answers/skip/incomplete, and `answers` exactly when all are answered."""
    reply = parse_reply(questions, text, locale)
    assert reply.kind in ("answers", "skip", "incomplete")
    ids = [q.id for q in questions]
    if reply.kind == "answers":
        assert list(reply.answers) != [] and sorted(reply.answers) == sorted(ids)
        assert all(reply.answers[i] for i in ids)
        assert reply.missing == []
    elif reply.kind == "incomplete":
        assert reply.missing and set(reply.missing) <= set(ids)
        assert not set(reply.missing) & set(reply.answers)
        assert reply.message
    else:
        assert reply.answers == {}
    for q in questions:
        if not q.multiSelect and q.id in reply.answers:
            assert len(reply.answers[q.id]) == 1


# -- keyed and unkeyed lines in one reply -------------------------------------------------

WHEN = make("meeting_time", "Time", "When should we meet?", ["Morning", "Afternoon"])
NOTE = make("q2", "Note", "Anything to add?", ["No", "Yes"])
SITE = make("site", "Site", "Which page is broken?", ["Home", "Docs"])


def test_a_keyed_line_and_an_unkeyed_one_share_the_questions() -> None:
    """`14:30` is the first question's value; `q2: real answer` goes to q2 by its key."""
    assert answers(parse_reply([WHEN, NOTE], "14:30\nq2: real answer")) == {
        "meeting_time": ["14:30"],
        "q2": ["real answer"],
    }


def test_the_keyed_line_may_come_first() -> None:
    """The unkeyed lines fill the questions no key named, whatever the keyed lines' place."""
    assert answers(parse_reply([DEPLOY, DB, AREAS], "DB: 2\nProduction\nauth, ui")) == {
        "database": ["SQLite"],
        "deploy_target": ["Production"],
        "areas": ["Auth", "UI"],
    }


def test_a_key_declared_in_a_form_nfc_changes_still_keys_its_line() -> None:
    """U+2F800 (a CJK compatibility ideograph) is NFC'd to U+4E3D, as every reply is: the
    header and question as declared still key their lines (found by the property below)."""
    compat = "\U0002f800"
    assert unicodedata.normalize("NFC", compat) != compat
    area = make("area", compat, f"{compat}\u0301?", ["Auth", "Billing"])
    for key in (compat, f"{compat}\u0301"):
        assert answers(parse_reply([WHEN, NOTE, area], f"q2: 1\n2\n{key}: 2")) == {
            "meeting_time": ["Afternoon"],
            "q2": ["No"],
            "area": ["Billing"],
        }


@pytest.mark.parametrize(
    "value", ["2026-07-08", "https://example.com/a-b?c=d", "14:30", "10:00 - 11:00"]
)
def test_a_value_that_only_looks_keyed_is_a_value(value: str) -> None:
    """A date, a URL, a time (or a range) whose 'key' names no question is the value."""
    assert answers(parse_reply([WHEN, SITE], f"{value}\n2")) == {
        "meeting_time": [value],
        "site": ["Docs"],
    }


def test_a_key_that_is_a_position_makes_the_line_keyed() -> None:
    """`2:30` keys question 2 (a position) with the value `30`: the rule is the key's."""
    assert answers(parse_reply([WHEN, NOTE], "2:30\nmorning")) == {
        "q2": ["30"],
        "meeting_time": ["Morning"],
    }


def test_more_unkeyed_lines_than_questions_left_is_refused() -> None:
    """Two unkeyed lines for the one question no key named: one correction, nothing
    guessed."""
    reply = parse_reply([WHEN, NOTE], "q2: no\nmorning\nafternoon")
    assert reply.kind == "incomplete"
    assert reply.message == "Please reply with one line per question (2 questions)."


def test_blank_lines_among_mixed_lines_do_not_count() -> None:
    """With a keyed line present, blank lines hold no place: the unkeyed line fills."""
    assert answers(parse_reply([WHEN, NOTE], "\nq2: yes\n\nafternoon\n")) == {
        "q2": ["Yes"],
        "meeting_time": ["Afternoon"],
    }


SEPARATORS = re.compile(r"[:=\-\s]")


def key_of(data: st.DataObject, questions: list[QuestionIn], i: int) -> str:
    """A key that names question i alone: its id, its position, or (when it holds no
    separator and no other question could claim it) its header."""
    q = questions[i]
    kinds = ["id", "position"]
    others = {
        fold(x)
        for j, o in enumerate(questions)
        if j != i
        for x in (o.id, o.header, o.question, o.question.rstrip("?"), str(j + 1))
    }
    if not SEPARATORS.search(q.header) and fold(q.header) not in others:
        kinds.append("header")
    kind = data.draw(st.sampled_from(kinds))
    return {"id": q.id, "position": str(i + 1), "header": q.header}[kind]


@PROPERTY
@given(data=st.data(), questions=asks_st(min_size=2))
def test_property_mixed_keyed_and_unkeyed_lines(
    data: st.DataObject, questions: list[QuestionIn]
) -> None:
    """Any questions keyed (id, header or position), in any place among the others: the
    keyed lines answer their questions and the rest fill the others in order."""
    picks = [data.draw(st.integers(1, len(q.options))) for q in questions]
    keyed = data.draw(st.lists(st.integers(0, len(questions) - 1), unique=True))
    lines = [str(picks[i]) for i in range(len(questions)) if i not in keyed]
    for i in keyed:
        line = f"{key_of(data, questions, i)}: {picks[i]}"
        lines.insert(data.draw(st.integers(0, len(lines))), line)
    reply = parse_reply(questions, "\n".join(lines))
    assert answers(reply) == {
        q.id: [q.options[n - 1].label] for q, n in zip(questions, picks, strict=True)
    }


looks_keyed_st = st.one_of(
    st.builds(lambda h, m: f"{h}:{m:02d}", st.integers(4, 23), st.integers(0, 59)),
    st.builds(
        lambda y, m, d: f"{y}-{m:02d}-{d:02d}",
        st.integers(2000, 2099),
        st.integers(1, 12),
        st.integers(1, 28),
    ),
    st.builds(
        lambda p: f"https://example.com/{p}", st.from_regex(r"[a-z0-9\-]{0,12}", fullmatch=True)
    ),
)


@PROPERTY
@given(data=st.data(), questions=asks_st(min_size=2))
def test_property_values_that_only_look_keyed_stay_values(
    data: st.DataObject, questions: list[QuestionIn]
) -> None:
    """Times, dates and URLs as unkeyed lines are the values of their questions, in order,
    next to a keyed line for the last question."""
    values = [data.draw(looks_keyed_st) for _ in questions[:-1]]
    for v in values:
        # Every key the line could be read with (the text before each separator).
        keys = {fold(v[: m.start()]) for m in re.finditer(r"\s*(?::|=|\s-\s|-)\s*", v)}
        for q in questions:
            assume(
                not keys
                & {fold(q.id), fold(q.header), fold(q.question), fold(q.question.rstrip("?"))}
            )
        assume(not any(names_label(q, v) for q in questions))
    last = len(questions) - 1
    lines = [*values, f"{questions[last].id}: 1"]
    reply = parse_reply(questions, "\n".join(lines))
    expected = {q.id: [v] for q, v in zip(questions, values, strict=False)}
    expected[questions[last].id] = [questions[last].options[0].label]
    assert answers(reply) == expected
