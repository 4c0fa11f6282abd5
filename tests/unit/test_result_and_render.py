"""The result bytes (README "The result"), answer canonicalisation, question ids, the plain-text
rendering and summaries, the status table, and askgate's HMAC signatures."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from urllib.parse import parse_qs, unquote, urlsplit

import orjson
import pytest
from askgate.channels.render import guidance, prompt_text, summary_text
from askgate.domain import signing
from askgate.domain.answers import canonical_answers
from askgate.domain.errors import IncompleteAnswer, ValidationFailed
from askgate.domain.i18n import MESSAGES
from askgate.domain.models import FREE_TEXT_MAX, QuestionIn
from askgate.runtime.outbound import signed_headers
from askgate.store import keys
from askgate.store.record import new_question_id, result_json
from askgate_client import verify_webhook
from hypothesis import given
from hypothesis import strategies as st

from tests.support.properties import PROPERTY
from tests.support.records import record_of

LOCALES = ["en", "tr", "hi"]


def make(
    qid: str,
    header: str,
    question: str,
    labels: Sequence[str],
    *,
    multi: bool = False,
    description: str | None = None,
) -> QuestionIn:
    return QuestionIn.model_validate(
        {
            "id": qid,
            "header": header,
            "question": question,
            "options": [{"label": label, "description": description} for label in labels],
            "multiSelect": multi,
        }
    )


DEPLOY = make(
    "deploy_target",
    "Deploy",
    "Where should I deploy this build?",
    ["Staging (Recommended)", "Production"],
)
DB = make("database", "DB", "Which database?", ["Postgres", "SQLite"])
AREAS = make("areas", "Areas", "Which areas need tests?", ["Auth", "Billing", "UI"], multi=True)


# -- result_json -------------------------------------------------------------------------


def test_result_json_is_the_contract_bytes() -> None:
    """The answered result is byte for byte the contract's tool result (README "The result")."""
    assert result_json({"deploy_target": ["Staging (Recommended)"]}) == (
        b'{"status":"answered","answers":{"answers":{"deploy_target":["Staging (Recommended)"]}}}'
    )


def test_result_json_keeps_question_order_and_utf8() -> None:
    """Several questions keep their order; non-ASCII text is plain UTF-8, not escaped."""
    raw = result_json({"database": ["SQLite"], "areas": ["Diğer şehir", "नमस्ते"]})
    assert (
        raw
        == (
            '{"status":"answered","answers":{"answers":'
            '{"database":["SQLite"],"areas":["Diğer şehir","नमस्ते"]}}}'
        ).encode()
    )


# -- canonical_answers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given_value", "canonical"),
    [
        pytest.param(["staging (recommended)"], ["Staging (Recommended)"], id="label-any-case"),
        pytest.param(["STAGING"], ["Staging (Recommended)"], id="label-without-recommended"),
        pytest.param("production", ["Production"], id="bare-string"),
        pytest.param(["  ship it tomorrow  "], ["ship it tomorrow"], id="free-text-trimmed"),
        pytest.param(
            ["staging", "Staging (Recommended)"],
            ["Staging (Recommended)"],
            id="same-option-twice-is-one",
        ),
    ],
)
def test_canonical_answers_single_select(
    given_value: list[str] | str, canonical: list[str]
) -> None:
    """Labels map to the declared spelling; free text is trimmed; the value is a list."""
    assert canonical_answers([DEPLOY], {"deploy_target": given_value}) == {
        "deploy_target": canonical
    }


def test_canonical_answers_multi_select_dedupes_in_order() -> None:
    """Multi-select values map to labels, duplicates dropped, first occurrence first."""
    out = canonical_answers([AREAS], {"areas": ["ui", "auth", "UI", "fuzzing"]})
    assert out == {"areas": ["UI", "Auth", "fuzzing"]}


def test_canonical_answers_orders_by_declared_questions() -> None:
    """The result lists questions in the ask's order, whatever order they were sent in."""
    out = canonical_answers([DEPLOY, DB], {"database": ["sqlite"], "deploy_target": ["1"]})
    assert list(out) == ["deploy_target", "database"]
    assert out["deploy_target"] == ["1"]  # the answer endpoint takes labels, not numbers


def test_canonical_answers_refuses_unknown_question_id() -> None:
    """An id that is not in the ask is a 422 naming it and the valid ids."""
    with pytest.raises(ValidationFailed) as exc:
        canonical_answers([DEPLOY, DB], {"deploy_target": ["Production"], "region": ["eu"]})
    assert exc.value.message == (
        "answers.region is not a question of this ask; answer with the ids deploy_target, database"
    )
    assert exc.value.http_status == 422


def test_canonical_answers_refuses_two_values_for_single_select() -> None:
    """A single-select question takes one value; the message names the field."""
    with pytest.raises(ValidationFailed) as exc:
        canonical_answers([DEPLOY], {"deploy_target": ["Staging", "Production"]})
    assert exc.value.message == (
        "answers.deploy_target takes one answer (the question is single-select); "
        "send a list with one value"
    )


@pytest.mark.parametrize(
    ("locale", "tail"),
    [
        ("en", "Please also answer: DB: Which database?"),
        ("tr", "Lütfen şunu da cevaplayın: DB: Which database?"),
        ("hi", "कृपया इसका भी उत्तर दें: DB: Which database?"),
    ],
)
@pytest.mark.parametrize("value", [None, [], ["  "]], ids=["absent", "empty-list", "blank"])
def test_canonical_answers_names_the_missing_question(
    locale: str, tail: str, value: list[str] | None
) -> None:
    """An unanswered question raises IncompleteAnswer naming it, in the ask's locale."""
    given_answers: dict[str, list[str] | str] = {"deploy_target": ["Production"]}
    if value is not None:
        given_answers["database"] = value
    with pytest.raises(IncompleteAnswer) as exc:
        canonical_answers([DEPLOY, DB], given_answers, locale)
    assert exc.value.missing == ["database"]
    assert exc.value.message == (
        "answers.database is missing; all questions of an ask are answered together. " + tail
    )


def test_canonical_answers_refuses_overlong_free_text() -> None:
    """Free text longer than the one free-text limit is a 422 naming the field."""
    with pytest.raises(ValidationFailed, match=r"^answers\.deploy_target values must be at most"):
        canonical_answers([DEPLOY], {"deploy_target": ["x" * (FREE_TEXT_MAX + 1)]})


def test_canonical_answers_refuses_100000_values_with_the_bound() -> None:
    """100,000 values for a multi-select are refused at once, naming the bound."""
    with pytest.raises(ValidationFailed) as exc:
        canonical_answers([AREAS], {"areas": [f"v{i}" for i in range(100_000)]})
    assert exc.value.message == (
        "answers.areas takes at most 4 values (its 3 options and one free text; got 100000); "
        "send each option once"
    )


def test_canonical_answers_refuses_many_values_for_single_select() -> None:
    """A long list for a single-select question says it takes one answer."""
    with pytest.raises(ValidationFailed, match=r"^answers\.deploy_target takes one answer"):
        canonical_answers([DEPLOY], {"deploy_target": ["Production"] * 100_000})


def test_canonical_answers_refuses_two_free_texts() -> None:
    """A multi-select takes its options and at most one free text."""
    with pytest.raises(ValidationFailed) as exc:
        canonical_answers([AREAS], {"areas": ["Auth", "fuzzing", "perf"]})
    assert exc.value.message == (
        "answers.areas takes at most one free-text value besides its options "
        "(got 2: 'fuzzing', 'perf'); join them into one text"
    )


def test_canonical_answers_takes_every_option_and_one_free_text() -> None:
    """The largest valid multi-select answer: each option once plus one free text."""
    out = canonical_answers([AREAS], {"areas": ["UI", "Billing", "Auth", "fuzzing"]})
    assert out == {"areas": ["UI", "Billing", "Auth", "fuzzing"]}


# -- new_question_id ---------------------------------------------------------------------

ID_RE = re.compile(r"^q[0-9a-f]{2}[a-z2-7]{16}$")


def test_question_id_is_deterministic_with_tool_call_id() -> None:
    """The same tenant, session, run and tool_call_id give the same id (idempotent ask)."""
    first = new_question_id("acme", "s1", "run-1", "call-7")
    assert new_question_id("acme", "s1", "run-1", "call-7") == first
    assert ID_RE.match(first)


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(("globex", "s1", "run-1", "call-7"), id="tenant"),
        pytest.param(("acme", "s1", "run-2", "call-7"), id="run"),
        pytest.param(("acme", "s1", "run-1", "call-8"), id="tool-call"),
    ],
)
def test_question_id_differs_when_the_identity_differs(other: tuple[str, str, str, str]) -> None:
    """Another tenant, run or tool call never collides with the original id."""
    assert new_question_id(*other) != new_question_id("acme", "s1", "run-1", "call-7")


def test_question_id_without_run_is_keyed_by_session() -> None:
    """Without a run_id the session stands in for it, so two sessions get two ids."""
    assert new_question_id("acme", "s1", None, "c") == new_question_id("acme", "s1", None, "c")
    assert new_question_id("acme", "s1", None, "c") != new_question_id("acme", "s2", None, "c")


def test_question_id_without_tool_call_id_is_random() -> None:
    """Without a tool_call_id every ask gets a fresh id."""
    assert new_question_id("acme", "s1", None, None) != new_question_id("acme", "s1", None, None)


@PROPERTY
@given(
    tenant=st.text(min_size=1, max_size=40),
    session=st.text(min_size=1, max_size=200),
    run_id=st.none() | st.text(min_size=1, max_size=200),
    tool_call_id=st.none() | st.text(min_size=1, max_size=200),
)
def test_question_id_carries_its_shard_and_fits_callback_data(
    tenant: str, session: str, run_id: str | None, tool_call_id: str | None
) -> None:
    """The id's shard is the session's, and `a:<id>:<index>` fits Telegram's 64 bytes."""
    qid = new_question_id(tenant, session, run_id, tool_call_id)
    assert ID_RE.match(qid)
    assert keys.shard_of(qid) == keys.shard_for(tenant, session)
    assert keys.question(qid).startswith(keys.tag(keys.shard_for(tenant, session)))
    assert len(f"a:{qid}:3".encode()) <= 64


# -- prompt_text -------------------------------------------------------------------------


def test_prompt_numbers_options_for_one_question() -> None:
    """One question: header, question, numbered options with descriptions, guidance."""
    question = DEPLOY.model_copy(
        update={
            "options": [
                DEPLOY.options[0].model_copy(update={"description": "Safe"}),
                DEPLOY.options[1],
            ]
        }
    )
    assert prompt_text([question], "en") == (
        "[Deploy] Where should I deploy this build?\n"
        "1) Staging (Recommended) — Safe\n"
        "2) Production\n"
        "\n"
        "Reply with an option's number or your own answer, or 'skip'."
    )


def test_prompt_numbers_questions_and_marks_multi_select() -> None:
    """Several questions are numbered, options indented, multi-select says so."""
    assert prompt_text([DB, AREAS], "en") == (
        "1. [DB] Which database?\n"
        "   1) Postgres\n"
        "   2) SQLite\n"
        "\n"
        "2. [Areas] Which areas need tests? (choose one or more)\n"
        "   1) Auth\n"
        "   2) Billing\n"
        "   3) UI\n"
        "\n" + MESSAGES["en"]["guide_many"]
    )


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize(
    ("questions", "key"),
    [([DEPLOY], "guide_single"), ([AREAS], "guide_multi"), ([DEPLOY, DB], "guide_many")],
    ids=["single", "multi", "many"],
)
def test_prompt_ends_with_guidance_in_the_locale(
    locale: str, questions: list[QuestionIn], key: str
) -> None:
    """The reply guidance matching the ask's shape closes the prompt, in its locale."""
    text = prompt_text(questions, locale)
    assert guidance(questions, locale) == MESSAGES[locale][key]
    assert text.endswith("\n\n" + MESSAGES[locale][key])


@pytest.mark.parametrize(("locale", "skip"), [("en", "'skip'"), ("tr", "'atla'"), ("hi", "'छोड़ें'")])
def test_guidance_names_the_locale_skip_word(locale: str, skip: str) -> None:
    """Every guidance line tells the human the skip word they can type."""
    for key in ("guide_single", "guide_multi", "guide_many"):
        assert skip in MESSAGES[locale][key]


long_text = st.text(min_size=0, max_size=300)


@st.composite
def long_asks(draw: st.DrawFn) -> list[QuestionIn]:
    count = draw(st.integers(1, 3))
    out = []
    for i in range(count):
        n = draw(st.integers(2, 4))
        out.append(
            QuestionIn.model_validate(
                {
                    "id": f"q{i}",
                    "header": "H" * draw(st.integers(1, 20)),
                    "question": "Q" * draw(st.integers(1, 1000)),
                    "options": [
                        {
                            "label": f"{j}" + "L" * draw(st.integers(0, 60)),
                            "description": draw(long_text) or "d" * 300,
                        }
                        for j in range(n)
                    ],
                    "multiSelect": draw(st.booleans()),
                }
            )
        )
    return out


@PROPERTY
@given(
    questions=long_asks(),
    locale=st.sampled_from(LOCALES),
    limit=st.sampled_from([200, 1000, 2000, 4000]),
)
def test_prompt_never_exceeds_the_limit(
    questions: list[QuestionIn], locale: str, limit: int
) -> None:
    """However long the descriptions, the prompt fits the platform's message limit."""
    assert len(prompt_text(questions, locale, limit=limit)) <= limit


def test_prompt_drops_descriptions_before_cutting() -> None:
    """Over the limit, descriptions go first so every option and the guidance survive."""
    question = make("pick", "Pick", "Which one?", ["A", "B"], description="x" * 300)
    text = prompt_text([question], "en", limit=200)
    assert text == "[Pick] Which one?\n1) A\n2) B\n\n" + MESSAGES["en"]["guide_single"]


# -- summary_text ------------------------------------------------------------------------

SUMMARIES = {
    "en": {
        "timeout": "Expired",
        "cancelled": "Cancelled",
        "run_aborted": "Cancelled",
        "skipped": "Skipped",
        "delivery_failed": "Not delivered",
    },
    "tr": {
        "timeout": "Süresi doldu",
        "cancelled": "İptal edildi",
        "run_aborted": "İptal edildi",
        "skipped": "Atlandı",
        "delivery_failed": "İletilemedi",
    },
    "hi": {
        "timeout": "समय समाप्त",
        "cancelled": "रद्द किया गया",
        "run_aborted": "रद्द किया गया",
        "skipped": "छोड़ दिया गया",
        "delivery_failed": "पहुँचाया नहीं जा सका",
    },
}


@pytest.mark.parametrize(
    ("locale", "reason", "text"),
    [(loc, reason, text) for loc, table in SUMMARIES.items() for reason, text in table.items()],
)
def test_summary_for_each_reason(locale: str, reason: str, text: str) -> None:
    """A question that ended without an answer says why, in the ask's locale."""
    rec = record_of([DEPLOY], status="no_answer", reason=reason, locale=locale)
    assert summary_text(rec) == text


ANSWERED = orjson.loads(
    result_json({"deploy_target": ["Staging (Recommended)"], "areas": ["Auth", "please also fuzz"]})
)


@pytest.mark.parametrize(
    ("locale", "prefix"),
    [("en", "Answered: "), ("tr", "Cevaplandı: "), ("hi", "उत्तर दिया गया: ")],
)
def test_summary_lists_answers(locale: str, prefix: str) -> None:
    """One answered question becomes `Answered: <labels>`, free text echoed by default."""
    rec = record_of([AREAS], status="answered", result=ANSWERED, locale=locale)
    assert summary_text(rec) == prefix + "Auth, please also fuzz"


def test_summary_of_several_questions_names_each() -> None:
    """Several answered questions say which answer belongs to which: `Header: labels`."""
    rec = record_of([DEPLOY, AREAS], status="answered", result=ANSWERED)
    assert summary_text(rec) == (
        "Answered: Deploy: Staging (Recommended) · Areas: Auth, please also fuzz"
    )


@pytest.mark.parametrize(
    ("locale", "placeholder"),
    [("en", "(your answer)"), ("tr", "(kendi cevabınız)"), ("hi", "(आपका उत्तर)")],
)
def test_summary_hides_free_text_in_group_chats(locale: str, placeholder: str) -> None:
    """With echo_free_text=False free text is a placeholder; declared labels still show."""
    rec = record_of([DEPLOY, AREAS], status="answered", result=ANSWERED, locale=locale)
    text = summary_text(rec, echo_free_text=False)
    assert text.endswith(f": Staging (Recommended) · Areas: Auth, {placeholder}")
    assert "please also fuzz" not in text


# -- status ------------------------------------------------------------------------------


# -- signing -----------------------------------------------------------------------------

SECRET = "unit-secret-" + "s" * 32
Tamper = Callable[[str, str, str, str], tuple[str, str, str, str]]


def link_parts(url: str) -> tuple[str, str, str, str]:
    parts = urlsplit(url)
    _, prefix, tenant, session = parts.path.split("/")
    assert prefix == "s"
    query = parse_qs(parts.query)
    return tenant, unquote(session), query["exp"][0], query["sig"][0]


def test_fresh_session_link_verifies() -> None:
    """A link just made for a session is accepted for that tenant and session."""
    url = signing.session_link("http://ui.local/", SECRET, "acme", "chat/42 é", ttl_s=600)
    assert url.startswith("http://ui.local/s/acme/")
    tenant, session, exp, sig = link_parts(url)
    assert session == "chat/42 é"
    assert signing.verify_session_link(SECRET, tenant, session, exp, sig)


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda t, s, e, g: ("globex", s, e, g), id="tenant"),
        pytest.param(lambda t, s, e, g: (t, s + "x", e, g), id="session"),
        pytest.param(lambda t, s, e, g: (t, s, str(int(e) + 3600), g), id="exp-extended"),
        pytest.param(
            lambda t, s, e, g: (t, s, e, g[:-1] + ("0" if g[-1] != "0" else "1")), id="sig"
        ),
        pytest.param(lambda t, s, e, g: (t, s, "-1", g), id="exp-not-a-number"),
    ],
)
def test_tampered_session_link_is_refused(tamper: Tamper) -> None:
    """Changing the tenant, session, expiry or signature invalidates the link."""
    parts = link_parts(signing.session_link("http://ui", SECRET, "acme", "s1", ttl_s=600))
    assert signing.verify_session_link(SECRET, *parts)
    assert not signing.verify_session_link(SECRET, *tamper(*parts))


def test_expired_session_link_is_refused() -> None:
    """A correctly signed link whose exp has passed is refused."""
    exp = int(time.time()) - 1
    sig = signing.session_link_sig(SECRET, "acme", "s1", exp)
    assert not signing.verify_session_link(SECRET, "acme", "s1", str(exp), sig)


def test_session_link_from_another_secret_is_refused() -> None:
    """A link signed with another key is refused."""
    parts = link_parts(signing.session_link("http://ui", "other-" + SECRET, "acme", "s1", 600))
    assert not signing.verify_session_link(SECRET, *parts)


BODY = result_json({"deploy_target": ["Production"]})


def sent_headers(secret: str, at: int) -> dict[str, str]:
    """The headers askgate's webhook and text-channel POSTs carry."""
    return signed_headers(secret, BODY, "askgate-test", timestamp=at)


def test_receiver_verifies_what_askgate_signs() -> None:
    """The client's verify_webhook accepts the headers askgate sends with the body, with
    header names in any case."""
    now = int(time.time())
    sent = sent_headers(SECRET, now)
    assert sent["X-Askgate-Signature"].startswith("v1=")
    assert verify_webhook(SECRET, sent, BODY)
    assert verify_webhook(SECRET, {k.lower(): v for k, v in sent.items()}, BODY)


def test_webhook_with_changed_body_is_refused() -> None:
    """One changed byte of the body fails verification."""
    sent = sent_headers(SECRET, int(time.time()))
    assert not verify_webhook(SECRET, sent, BODY.replace(b"Production", b"Productiom"))


def test_webhook_with_old_timestamp_is_refused() -> None:
    """A validly signed delivery older than the tolerance is a replay and is refused."""
    sent = sent_headers(SECRET, int(time.time()) - 301)
    assert not verify_webhook(SECRET, sent, BODY)


def test_webhook_with_other_secret_or_no_signature_is_refused() -> None:
    """A signature made with another tenant's secret, or none, is refused."""
    sent = sent_headers("other-" + SECRET, int(time.time()))
    assert not verify_webhook(SECRET, sent, BODY)
    del sent["X-Askgate-Signature"]
    assert not verify_webhook(SECRET, sent, BODY)
