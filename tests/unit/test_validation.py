"""SPEC §1: every rule of the ask, as the exact 422 line that names the field and the fix,
and the normalisations that are accepted instead of refused."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import regex
from askgate.domain.models import HEADER_MAX, QuestionCreate, validation_message
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.support.asks import ask_body
from tests.support.properties import PROPERTY

GRAPHEME = regex.compile(r"\X")

Body = dict[str, Any]


def ask(**top: Any) -> Body:
    """The SPEC §1 example ask with a session; keyword arguments replace top-level fields."""
    return ask_body(**top)


def with_question(**fields: Any) -> Body:
    """The example ask with fields of its one question replaced."""
    body = ask()
    body["questions"][0].update(fields)
    return body


def without(path: Callable[[Body], dict[str, Any]], key: str) -> Body:
    body = ask()
    del path(body)[key]
    return body


def options(*labels: str) -> list[dict[str, str]]:
    return [{"label": label} for label in labels]


def question(qid: str) -> dict[str, Any]:
    return {**copy.deepcopy(ask()["questions"][0]), "id": qid}


def errors_of(body: Body) -> list[str]:
    with pytest.raises(ValidationError) as exc:
        QuestionCreate.model_validate(body)
    return validation_message(exc.value)


OTHER = "{label!r} is an 'Other' option; remove it: askgate always offers free text"

BAD_ASKS = [
    pytest.param(
        ask(questions=[]),
        "questions must contain 1 to 3 questions (got 0); ask the rest in a later call",
        id="zero-questions",
    ),
    pytest.param(
        ask(questions=[question(f"q{i}") for i in range(4)]),
        "questions must contain 1 to 3 questions (got 4); ask the rest in a later call",
        id="four-questions",
    ),
    pytest.param(
        without(lambda b: b["questions"][0], "id"),
        "questions[0].id is required",
        id="id-missing",
    ),
    pytest.param(
        with_question(id="DeployTarget"),
        "questions[0].id must be snake_case, for example deploy_target",
        id="id-camel-case",
    ),
    pytest.param(
        with_question(id="deploy-target"),
        "questions[0].id must be snake_case, for example deploy_target",
        id="id-kebab-case",
    ),
    pytest.param(
        with_question(id="1st"),
        "questions[0].id must be snake_case, for example deploy_target",
        id="id-leading-digit",
    ),
    pytest.param(
        ask(questions=[question("deploy_target"), question("db"), question("deploy_target")]),
        "questions[2].id 'deploy_target' repeats questions[0].id; each question needs its own id",
        id="id-duplicate",
    ),
    pytest.param(
        without(lambda b: b["questions"][0], "header"),
        "questions[0].header is required",
        id="header-missing",
    ),
    pytest.param(
        with_question(header="   "),
        "questions[0].header must not be empty; give a short tag such as 'Deploy'",
        id="header-blank",
    ),
    pytest.param(
        with_question(question="  "),
        "questions[0].question must not be empty; ask one clear question",
        id="question-empty",
    ),
    pytest.param(
        with_question(question="Where should I deploy?\nAnd when?"),
        "questions[0].question must be one sentence without line breaks; put details in options",
        id="question-line-break",
    ),
    pytest.param(
        with_question(question="Where should I deploy?\r\nAnd when?"),
        "questions[0].question must be one sentence without line breaks; put details in options",
        id="question-crlf",
    ),
    pytest.param(
        with_question(options=options("Staging")),
        "questions[0].options must contain 2 to 4 options (got 1)",
        id="one-option",
    ),
    pytest.param(
        with_question(options=options("a", "b", "c", "d", "e")),
        "questions[0].options must contain 2 to 4 options (got 5)",
        id="five-options",
    ),
    pytest.param(
        with_question(options=[{"label": "   "}, {"label": "Production"}]),
        "questions[0].options[0].label must not be empty; give the option a short label",
        id="label-empty",
    ),
    pytest.param(
        with_question(options=[{"label": "Staging"}, {"description": "no label"}]),
        "questions[0].options[1].label is required",
        id="label-missing",
    ),
    pytest.param(
        with_question(options=options("Staging", "x" * 65)),
        "questions[0].options[1].label must be at most 64 characters (got 65); "
        "move the detail into description",
        id="label-65-chars",
    ),
    pytest.param(
        with_question(options=options("Staging", "Production", "PRODUCTION")),
        "questions[0].options[2].label 'PRODUCTION' repeats options[1].label "
        "(ignoring case); make each label distinct",
        id="label-duplicate-ignoring-case",
    ),
    pytest.param(
        with_question(options=options("Caf\u00e9", "Cafe\u0301")),
        "questions[0].options[1].label 'Cafe\u0301' repeats options[0].label "
        "(ignoring case); make each label distinct",
        id="label-duplicate-composed-differently",
    ),
    pytest.param(
        ask(extra_field=1),
        "extra_field is not a known field; remove it",
        id="unknown-top-field",
    ),
    pytest.param(
        with_question(allowFreeText=True),
        "questions[0].allowFreeText is not a known field; remove it",
        id="unknown-question-field",
    ),
    pytest.param(
        with_question(options=[{"label": "Staging", "value": "stg"}, {"label": "Production"}]),
        "questions[0].options[0].value is not a known field; remove it",
        id="unknown-option-field",
    ),
    pytest.param(
        ask(timeoutSeconds=45.5),
        "timeoutSeconds must be a whole number, for example 60 (got 45.5; it is not rounded)",
        id="timeout-float",
    ),
    pytest.param(
        ask(timeoutSeconds="abc"),
        "timeoutSeconds must be a whole number",
        id="timeout-text",
    ),
    pytest.param(
        ask(locale="de"),
        "locale must be one of 'en', 'tr' or 'hi' (got 'de')",
        id="locale-unknown",
    ),
    pytest.param(
        ask(targets=[{"channel": "web"}, {"channel": "sms"}]),
        "targets[1].channel must be one of telegram, slack, discord, web, text",
        id="target-channel-unknown",
    ),
    pytest.param(
        ask(targets=[{"channel": "discord", "channel_id": "#general"}]),
        "targets[0].channel_id must be a Discord channel id (digits, e.g. "
        "1234567890123456789): in Discord, Developer Mode on, right-click the channel, "
        "Copy Channel ID",
        id="discord-channel-not-an-id",
    ),
    pytest.param(
        ask(targets=[{"channel": "discord", "channel_id": "1", "allowed_role_ids": ["2", "ops"]}]),
        "targets[0].allowed_role_ids[1] must be a Discord user or role id (digits, e.g. "
        "80351110224678912), got 'ops'",
        id="discord-role-not-an-id",
    ),
    pytest.param(
        without(lambda b: b, "session"),
        "session is required",
        id="session-missing",
    ),
]


@pytest.mark.parametrize(("body", "line"), BAD_ASKS)
def test_bad_ask_names_the_field_and_the_fix(body: Body, line: str) -> None:
    """Each broken rule of SPEC §1 is refused with exactly one line naming path and fix."""
    assert errors_of(body) == [line]


OTHER_LABELS = [
    "Other",
    "other",
    "OTHER",
    "Other…",
    "Other...",
    "Other.",
    "Something else",
    "something else…",
    "SOMETHING ELSE...",
    "Diğer",
    "diğer…",
    "Diğer...",
    "Başka bir şey",
    "başka bir şey…",
    "BAŞKA BIR ŞEY",
    "अन्य",
    "अन्य…",
    "अन्य...",
    "कुछ और",
    "कुछ और…",
    "  Other  ",
]


@pytest.mark.parametrize("label", OTHER_LABELS, ids=repr)
def test_other_option_is_refused(label: str) -> None:
    """An "Other" option in en/tr/hi, any case, with or without dots, is a 422."""
    body = with_question(options=options("Staging", label))
    assert errors_of(body) == ["questions[0].options[1].label " + OTHER.format(label=label.strip())]


@pytest.mark.parametrize(
    "label", ["Others-free plan", "Other region", "Anything", "अन्यत्र", "Diğerleri hariç"]
)
def test_label_that_only_starts_like_other_is_accepted(label: str) -> None:
    """Only a whole-label "Other" is refused; a label merely containing the word is fine."""
    body = with_question(options=options("Staging", label))
    assert QuestionCreate.model_validate(body).questions[0].options[1].label == label


def test_errors_in_two_questions_are_listed_in_order() -> None:
    """Every broken rule gets its own line, so one retry can fix them all."""
    body = ask(questions=[question("ok"), question("Bad"), {**question("x"), "header": ""}])
    assert errors_of(body) == [
        "questions[1].id must be snake_case, for example deploy_target",
        "questions[2].header must not be empty; give a short tag such as 'Deploy'",
    ]


# -- accepted normalisations ------------------------------------------------------------


def parsed(body: Body) -> QuestionCreate:
    return QuestionCreate.model_validate(body)


def test_header_is_trimmed() -> None:
    """Surrounding whitespace of the header is dropped, inner runs collapse to one space."""
    assert parsed(with_question(header="  Deploy   now ")).questions[0].header == "Deploy now"


def test_header_is_cut_to_twelve_characters() -> None:
    """A long header is cut to 12 characters, not refused (trailing space dropped)."""
    assert parsed(with_question(header="Deployment target")).questions[0].header == ("Deployment t")
    assert parsed(with_question(header="A very long header")).questions[0].header == ("A very long")


FAMILY = "👨\u200d👩\u200d👧\u200d👦"
HEADER_CLUSTERS = [
    pytest.param(FAMILY * 14, id="emoji-zwj-family"),
    pytest.param("🇹🇷🇮🇳🇺🇸" * 5, id="flags"),
    pytest.param("Deploy to " + "🇹🇷🇮🇳", id="flag-at-the-cut"),
    pytest.param("a" * 11 + "स्ते" + "b", id="devanagari-conjunct-at-the-cut"),
    pytest.param("नमस्ते दुनिया नमस्ते", id="devanagari-words"),
    pytest.param("e\u0301" * 13, id="combining-accent"),
    pytest.param("👍🏽" * 13, id="skin-tone-modifier"),
]


@pytest.mark.parametrize("header", HEADER_CLUSTERS)
def test_header_cut_never_splits_a_grapheme(header: str) -> None:
    """The cut keeps whole user-perceived characters: a prefix of the original clusters."""
    cut = parsed(with_question(header=header)).questions[0].header
    clusters = GRAPHEME.findall(cut)
    assert len(clusters) <= HEADER_MAX
    assert clusters == GRAPHEME.findall(header)[: len(clusters)]


def test_devanagari_conjunct_counts_as_one_character() -> None:
    """ "स्ते" is one grapheme, so 11 letters + it fit in the 12-character header whole."""
    cut = parsed(with_question(header="a" * 11 + "स्ते" + "b")).questions[0].header
    assert cut == "a" * 11 + "स्ते"


@PROPERTY
@given(st.text(min_size=1, max_size=40).filter(lambda s: s.strip()))
def test_header_cut_is_a_grapheme_prefix(header: str) -> None:
    """For any header the stored one is at most 12 whole clusters of the trimmed input."""
    normalised = " ".join(header.split())
    cut = parsed(with_question(header=header)).questions[0].header
    clusters = GRAPHEME.findall(cut)
    assert 1 <= len(clusters) <= HEADER_MAX
    assert normalised.startswith(cut)
    assert clusters == GRAPHEME.findall(normalised)[: len(clusters)]


def test_blank_description_is_dropped() -> None:
    """A blank description is stored as no description, not refused."""
    body = with_question(
        options=[{"label": "Staging", "description": "   "}, {"label": "Production"}]
    )
    assert parsed(body).questions[0].options[0].description is None


def test_multiselect_defaults_to_false() -> None:
    """multiSelect is optional and defaults to false."""
    body = ask()
    del body["questions"][0]["multiSelect"]
    assert parsed(body).questions[0].multiSelect is False


def test_timeout_defaults_to_none_for_the_store_to_fill() -> None:
    """Without timeoutSeconds the ask carries None; the store applies the default."""
    body = ask()
    del body["timeoutSeconds"]
    assert parsed(body).timeoutSeconds is None


def test_whole_float_timeout_is_accepted_as_int() -> None:
    """Pydantic's lax mode takes 60.0 (no fractional part) as the int 60; 45.5 is a 422."""
    timeout = parsed(ask(timeoutSeconds=60.0)).timeoutSeconds
    assert timeout == 60
    assert type(timeout) is int


def test_label_is_trimmed() -> None:
    """Labels lose surrounding whitespace and collapse inner runs."""
    body = with_question(options=options("  Staging  ", "Blue   green"))
    assert [o.label for o in parsed(body).questions[0].options] == ["Staging", "Blue green"]


def test_label_of_64_characters_is_accepted() -> None:
    """64 characters is the limit itself, not past it."""
    body = with_question(options=options("Staging", "x" * 64))
    assert parsed(body).questions[0].options[1].label == "x" * 64


def test_recommended_suffix_is_kept() -> None:
    """` (Recommended)` stays part of the declared label; it is guidance, not enforced."""
    body = with_question(options=options("Production", "Staging (Recommended)"))
    assert parsed(body).questions[0].options[1].label == "Staging (Recommended)"


def test_question_is_trimmed() -> None:
    """The question text is stored without surrounding whitespace."""
    assert parsed(with_question(question="  Where?  ")).questions[0].question == "Where?"


def test_telegram_chat_id_number_becomes_text() -> None:
    """A numeric Telegram chat_id is accepted and kept as a string."""
    body = ask(targets=[{"channel": "telegram", "chat_id": -100123}])
    assert parsed(body).targets[0].chat_id == "-100123"  # type: ignore[union-attr]


def test_spec_example_round_trips() -> None:
    """The SPEC §1 example validates unchanged, with its context defaults filled in."""
    created = parsed(ask())
    assert created.locale == "en"
    assert created.primary is True
    assert created.targets == []
    assert created.questions[0].model_dump(exclude_none=True) == ask()["questions"][0]


@pytest.mark.parametrize("label", ["Skip", "skip.", "Atla", "छोड़ें"])
def test_skip_option_is_refused(label: str) -> None:
    """An option that means Skip is refused: askgate always offers Skip itself."""
    body = {
        "session": "s",
        "questions": [
            {
                "id": "a",
                "header": "H",
                "question": "Q?",
                "options": [{"label": "Yes"}, {"label": label}],
            }
        ],
    }
    with pytest.raises(ValidationError) as exc:
        QuestionCreate.model_validate(body)
    assert validation_message(exc.value) == [
        f"questions[0].options[1].label {label!r} is a Skip option; remove it: "
        "askgate always offers Skip"
    ]
