"""Wire models: the ask (README "The ask"), targets, answers, and the question resource.

Every rule of the contract lives here as a validator whose message names the fix, and
`describe_errors` turns pydantic's errors into `questions[0].id must be …` lines.
"""

from __future__ import annotations

import reprlib
import unicodedata
from typing import Annotated, Any, Literal

import regex
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    HttpUrl,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from askgate.domain.asgi import invalid_json_message
from askgate.domain.i18n import SKIP_LABELS

ID_RE = regex.compile(r"^[a-z][a-z0-9_]*$")
GRAPHEME = regex.compile(r"\X")
HEADER_MAX = 12
LABEL_MAX = 64
DESCRIPTION_MAX = 300
QUESTION_MAX = 1000
RECOMMENDED = " (Recommended)"
LOCALES = ("en", "tr", "hi")
Locale = Literal["en", "tr", "hi"]

# Free text is always offered by askgate itself, so an option that means "something
# else" would show twice. Compared after casefold, trailing dots/ellipsis stripped.
OTHER_LABELS = frozenset(
    {
        "other",
        "others",
        "something else",
        "anything else",
        "other (please specify)",
        "other (specify)",
        "none of the above",
        "custom",
        "diğer",
        "diğerleri",
        "başka",
        "başka bir şey",
        "başka bir seçenek",
        "diğer seçenek",
        "अन्य",
        "कुछ और",
        "दूसरा",
        "अन्य विकल्प",
        "कोई और",
    }
)

Text200 = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]

# One limit for anything a human types (an answer value, a reply, a message, the Control
# UI's composer), in characters, and one for each responder field.
FREE_TEXT_MAX = 4000
RESPONDER_FIELD_MAX = 200

# Session and run names travel in URL paths (/v1/sessions/{session}/messages,
# /v1/runs/{run_id}/abort, the Control UI link) and in Redis key names, so they keep to
# characters that no client, proxy or browser rewrites: no '/', no spaces or control
# characters, and never the dot segments '.' and '..'.
NAME_MAX = 200
NAME_RE = regex.compile(r"^[A-Za-z0-9._~:@-]{1,200}$")
NAME_RULE = (
    f"must be 1 to {NAME_MAX} characters of A-Z a-z 0-9 . _ ~ : @ - "
    "(and not '.' or '..'), for example chat-42"
)
_SHOW = reprlib.Repr()
_SHOW.maxstring = 60
_SHOW.maxother = 60


def show(value: Any) -> str:
    """A short repr of client input for an error message (never the whole of a huge or
    deeply nested value)."""
    return _SHOW.repr(value)


def name_problem(value: str) -> str | None:
    """Why `value` is not a valid session or run name (None when it is)."""
    if NAME_RE.match(value) and value not in (".", ".."):
        return None
    return f"{NAME_RULE} (got {show(value)})"


def _name(value: str) -> str:
    problem = name_problem(value)
    if problem:
        raise _err(problem)
    return value


Name = Annotated[str, AfterValidator(_name)]


def _err(message: str) -> PydanticCustomError:
    return PydanticCustomError("askgate", message)


def cut_graphemes(text: str, limit: int) -> str:
    """The first `limit` user-perceived characters of `text` (never half an emoji)."""
    if len(text) <= limit:  # a cluster is at least one code point
        return text
    clusters = GRAPHEME.findall(text)
    return "".join(clusters[:limit]).rstrip() if len(clusters) > limit else text


_RESERVED = {**dict.fromkeys(OTHER_LABELS, "other"), **dict.fromkeys(SKIP_LABELS, "skip")}
_RECOMMENDED_CF = RECOMMENDED.casefold()


def fold_label(label: str) -> str:
    """A label as labels and replies are compared: NFC (a reply is NFC'd, so "Café" typed
    precomposed or with U+0301 is one label), then ignoring case."""
    return (label if label.isascii() else unicodedata.normalize("NFC", label)).casefold()


def reserved_label(label: str) -> str | None:
    """'other' or 'skip' when a label means what askgate itself always offers."""
    norm = fold_label(label)
    if norm.endswith(_RECOMMENDED_CF):
        norm = norm[: -len(_RECOMMENDED_CF)]
    return _RESERVED.get(norm.strip().rstrip(".…:!? ").strip())


def is_other_label(label: str) -> bool:
    return reserved_label(label) == "other"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- the ask (tool input) ----------------------------------------------------------------


# The rules of a question and its options. The ask's questions are CheckedQuestionIn,
# which apply them field by field; a question read back from Redis (written after them)
# is a plain QuestionIn, which costs a third as much to build. Each rule returns the
# normalised value or raises the error to report.


def check_label(v: str) -> str:
    v = " ".join(v.split())
    if not v:
        raise _err("must not be empty; give the option a short label")
    if len(v) > LABEL_MAX:
        raise _err(
            f"must be at most {LABEL_MAX} characters (got {len(v)}); "
            "move the detail into description"
        )
    reserved = reserved_label(v)
    if reserved == "other":
        raise _err(f"{v!r} is an 'Other' option; remove it: askgate always offers free text")
    if reserved == "skip":
        raise _err(f"{v!r} is a Skip option; remove it: askgate always offers Skip")
    return v


def check_description(v: str | None) -> str | None:
    if v is None:
        return None
    v = " ".join(v.split())
    if len(v) > DESCRIPTION_MAX:
        raise _err(f"must be at most {DESCRIPTION_MAX} characters (got {len(v)})")
    return v or None


def check_id(v: str) -> str:
    if not ID_RE.match(v) or len(v) > 64:
        raise _err("must be snake_case, for example deploy_target")
    return v


def check_header(v: str) -> str:
    v = " ".join(v.split())
    if not v:
        raise _err("must not be empty; give a short tag such as 'Deploy'")
    return cut_graphemes(v, HEADER_MAX)


def check_question(v: str) -> str:
    v = v.strip()
    if not v:
        raise _err("must not be empty; ask one clear question")
    if "\n" in v or "\r" in v:
        raise _err("must be one sentence without line breaks; put details in options")
    if len(v) > QUESTION_MAX:
        raise _err(f"must be at most {QUESTION_MAX} characters (got {len(v)})")
    return v


def check_options_count(v: Any) -> Any:
    if isinstance(v, list) and not 2 <= len(v) <= 4:
        raise _err(f"must contain 2 to 4 options (got {len(v)})")
    return v


def check_labels_unique(options: list[Option]) -> None:
    seen: dict[str, int] = {}
    for i, opt in enumerate(options):
        key = fold_label(opt.label)
        if key in seen:
            raise _err(
                f"options[{i}].label {opt.label!r} repeats options[{seen[key]}].label "
                "(ignoring case); make each label distinct"
            )
        seen[key] = i


class Option(Strict):
    """An option's shape; every option of an ask was a CheckedOption."""

    label: str
    description: str | None = None


class QuestionIn(Strict):
    """A question's shape; every question of an ask was a CheckedQuestionIn."""

    id: str
    header: str
    question: str
    options: list[Option]
    multiSelect: bool = False


class CheckedOption(Option):
    """An option validated with every rule, field by field (what reports the errors)."""

    _label = field_validator("label")(check_label)
    _description = field_validator("description")(check_description)


class CheckedQuestionIn(QuestionIn):
    """A question validated with every rule, field by field (what reports the errors)."""

    options: list[CheckedOption]  # type: ignore[assignment]  # a narrower item: same shape

    _id = field_validator("id")(check_id)
    _header = field_validator("header")(check_header)
    _question = field_validator("question")(check_question)
    _options_count = field_validator("options", mode="before")(check_options_count)

    @model_validator(mode="after")
    def _labels_unique(self) -> CheckedQuestionIn:
        check_labels_unique(list(self.options))
        return self


class AskInput(Strict):
    """The `ask_user` tool input, exactly as the MCP tool schema."""

    questions: list[CheckedQuestionIn]
    timeoutSeconds: int | None = None

    @field_validator("questions", mode="before")
    @classmethod
    def _questions_count(cls, v: Any) -> Any:
        if isinstance(v, list) and not 1 <= len(v) <= 3:
            raise _err(
                f"must contain 1 to 3 questions (got {len(v)}); ask the rest in a later call"
            )
        return v

    @model_validator(mode="after")
    def _ids_unique(self) -> AskInput:
        seen: dict[str, int] = {}
        for i, q in enumerate(self.questions):
            if q.id in seen:
                raise _err(
                    f"questions[{i}].id {q.id!r} repeats questions[{seen[q.id]}].id; "
                    "each question needs its own id"
                )
            seen[q.id] = i
        return self


# -- targets -----------------------------------------------------------------------------


class TelegramTarget(Strict):
    channel: Literal["telegram"]
    chat_id: str
    allowed_user_ids: list[int] | None = None

    @field_validator("chat_id", mode="before")
    @classmethod
    def _chat_id(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


class SlackTarget(Strict):
    channel: Literal["slack"]
    channel_id: Text200
    thread_ts: str | None = None
    allowed_user_ids: list[str] | None = None


SNOWFLAKE_RE = regex.compile(r"^[0-9]{1,20}$")


def _snowflake(v: Any) -> Any:
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


class DiscordTarget(Strict):
    """Who may answer: the listed users, or anyone holding a listed role; with neither
    list, the tenant's lists (`askgate tenant channel T discord allowed_user_ids=…`)."""

    channel: Literal["discord"]
    channel_id: str
    allowed_user_ids: list[str] | None = None
    allowed_role_ids: list[str] | None = None

    @field_validator("channel_id", mode="before")
    @classmethod
    def _channel_id(cls, v: Any) -> Any:
        v = _snowflake(v)
        if isinstance(v, str) and not SNOWFLAKE_RE.match(v.strip()):
            raise _err(
                "must be a Discord channel id (digits, e.g. 1234567890123456789): "
                "in Discord, Developer Mode on, right-click the channel, Copy Channel ID"
            )
        return v.strip() if isinstance(v, str) else v

    @field_validator("allowed_user_ids", "allowed_role_ids", mode="before")
    @classmethod
    def _ids(cls, v: Any) -> Any:
        if not isinstance(v, list):
            return v
        out = [_snowflake(x) for x in v]
        for i, x in enumerate(out):
            if not isinstance(x, str) or not SNOWFLAKE_RE.match(x):
                raise _err(
                    f"[{i}] must be a Discord user or role id (digits, e.g. "
                    f"80351110224678912), got {x!r}"
                )
        return out


class WebTarget(Strict):
    channel: Literal["web"]


class TextTarget(Strict):
    channel: Literal["text"]
    url: HttpUrl


Target = Annotated[
    TelegramTarget | SlackTarget | DiscordTarget | WebTarget | TextTarget,
    Field(discriminator="channel"),
]
CHANNELS = ("telegram", "slack", "discord", "web", "text")


# -- reminders and escalation ---------------------------------------------------------------

REMIND_EVERY_S = (60, 3600)
REMIND_MAX = 10
FINAL_WARNING_S = (10, 3600)
ESCALATE_STEPS_MAX = 3
STEP_TARGETS_MAX = 10
STEP_AFTER_MIN_S = 10


class Remind(Strict):
    """`remind`: while the question is pending, each delivered chat target gets a short
    reminder every `every_s` seconds, at most `max` times, and (with `final_warning_s`) a
    last one that many seconds before the deadline. No reminder falls after the deadline."""

    every_s: int = 300
    max: int = 3
    final_warning_s: int | None = None

    @field_validator("every_s")
    @classmethod
    def _every(cls, v: int) -> int:
        lo, hi = REMIND_EVERY_S
        if not lo <= v <= hi:
            raise _err(
                f"must be from {lo} to {hi} seconds (got {v}); for example 300 "
                "reminds every 5 minutes"
            )
        return v

    @field_validator("max")
    @classmethod
    def _max(cls, v: int) -> int:
        if not 0 <= v <= REMIND_MAX:
            raise _err(f"must be from 0 to {REMIND_MAX} reminders (got {v}); 0 sends none")
        return v

    @field_validator("final_warning_s")
    @classmethod
    def _final(cls, v: int | None) -> int | None:
        lo, hi = FINAL_WARNING_S
        if v is not None and not lo <= v <= hi:
            raise _err(
                f"must be from {lo} to {hi} seconds before the deadline (got {v}), "
                "or left out for no final warning"
            )
        return v


class EscalationStep(Strict):
    """One step of `escalate`: `after_s` seconds after the ask, while it is still
    pending, the question is also shown on `targets` (validated like the ask's)."""

    after_s: int
    targets: list[Target]

    @field_validator("after_s")
    @classmethod
    def _after(cls, v: int) -> int:
        if v < STEP_AFTER_MIN_S:
            raise _err(
                f"must be at least {STEP_AFTER_MIN_S} seconds (got {v}); a step "
                "starts that long after the ask"
            )
        return v

    @field_validator("targets")
    @classmethod
    def _targets(cls, v: list[Any]) -> list[Any]:
        if not 1 <= len(v) <= STEP_TARGETS_MAX:
            raise _err(f"must contain 1 to {STEP_TARGETS_MAX} targets (got {len(v)})")
        for i, tg in enumerate(v):
            if tg.channel == "web":
                raise _err(
                    f"[{i}] is a web target, which the Control UI always shows; "
                    "escalate to a chat target (telegram, slack, discord, text)"
                )
        return v


class QuestionCreate(AskInput):
    """POST /v1/questions: the tool input with the ask's context beside it."""

    session: Name
    run_id: Name | None = None
    agent_id: Text200 | None = None
    tool_call_id: Text200 | None = None
    primary: bool = True
    targets: list[Target] = Field(default_factory=list)
    locale: Locale = "en"
    callback_url: HttpUrl | None = None
    # Absent: the tenant's default (`askgate tenant remind`); {"max": 0}: none.
    remind: Remind | None = None
    escalate: list[EscalationStep] = Field(default_factory=list)

    @field_validator("targets")
    @classmethod
    def _targets(cls, v: list[Any]) -> list[Any]:
        if len(v) > 10:
            raise _err(f"must contain at most 10 targets (got {len(v)})")
        return v

    @field_validator("escalate")
    @classmethod
    def _escalate(cls, v: list[EscalationStep]) -> list[EscalationStep]:
        if len(v) > ESCALATE_STEPS_MAX:
            raise _err(f"must contain at most {ESCALATE_STEPS_MAX} steps (got {len(v)})")
        for k in range(1, len(v)):
            if v[k].after_s <= v[k - 1].after_s:
                raise _err(
                    f"[{k}].after_s ({v[k].after_s}) must be later than "
                    f"escalate[{k - 1}].after_s ({v[k - 1].after_s}); order the "
                    "steps by time"
                )
        return v

    def all_targets(self) -> list[tuple[str, Target]]:
        """Every target with its field path: the ask's, then each escalation step's (the
        order of the stored target indexes)."""
        out: list[tuple[str, Target]] = [(f"targets[{i}]", tg) for i, tg in enumerate(self.targets)]
        for k, step in enumerate(self.escalate):
            out += [(f"escalate[{k}].targets[{i}]", tg) for i, tg in enumerate(step.targets)]
        return out

    def timing_problems(self, timeout_s: int) -> list[str]:
        """What in `remind` and `escalate` cannot happen within the question's timeout
        (the clamped one, known only when it is asked)."""
        lines = []
        if (
            self.remind
            and self.remind.final_warning_s is not None
            and self.remind.final_warning_s >= timeout_s
        ):
            lines.append(
                f"remind.final_warning_s ({self.remind.final_warning_s}) must be "
                f"shorter than the question's timeout ({timeout_s} s)"
            )
        for k, step in enumerate(self.escalate):
            if step.after_s >= timeout_s:
                lines.append(
                    f"escalate[{k}].after_s ({step.after_s}) must be shorter than "
                    f"the question's timeout ({timeout_s} s), or the step never runs"
                )
        return lines


# -- answers -----------------------------------------------------------------------------


ResponderField = Annotated[str, StringConstraints(max_length=RESPONDER_FIELD_MAX)]
FreeText = Annotated[str, StringConstraints(max_length=FREE_TEXT_MAX)]


class Responder(BaseModel):
    model_config = ConfigDict(extra="forbid")
    channel: ResponderField | None = None
    user_id: ResponderField | None = None
    name: ResponderField | None = None

    @field_validator("user_id", mode="before")
    @classmethod
    def _uid(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


class AnswerBody(Strict):
    answers: dict[str, list[str] | str]
    responder: Responder | None = None


class ReplyBody(Strict):
    text: FreeText
    responder: Responder | None = None


class MessageBody(Strict):
    text: FreeText
    responder: Responder | None = None


# -- errors ------------------------------------------------------------------------------

_FIXES = {
    "missing": "is required",
    "extra_forbidden": "is not a known field; remove it",
    "string_type": "must be a string",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "url_parsing": "must be an http(s) URL, for example https://example.com/hook",
    "url_scheme": "must be an http(s) URL, for example https://example.com/hook",
}


_TARGET_PATH = regex.compile(r"(^|\.)targets\[\d+\]$")


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    prev_index = False
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
            prev_index = True
            continue
        if prev_index and p in CHANNELS and _TARGET_PATH.search(out):
            prev_index = False  # the discriminated union's tag, not a field
            continue
        if p in ("list[str]", "str", "function-after[_chat_id(), str]"):
            continue
        out += f".{p}" if out else str(p)
        prev_index = False
    return out or "body"


def describe_errors(errors: list[Any]) -> list[str]:
    """One line per error: the field path, then what is wrong and how to fix it."""
    lines: list[str] = []
    for err in errors:
        kind = err.get("type", "")
        path = _path(tuple(err.get("loc", ())))
        if kind == "askgate":
            msg = str(err["msg"])
            # A model-level rule names fields relative to its model; the ask's own rule
            # already names the full path (its loc is the body itself).
            if msg.startswith("questions["):
                lines.append(msg)
            elif msg.startswith("options[") and path != "body":
                lines.append(f"{path}.{msg}")
            elif msg.startswith("["):  # a list's item, named by its index
                lines.append(f"{path}{msg}")
            else:
                lines.append(f"{path} {msg}")
        elif kind == "json_invalid":
            lines.append(invalid_json_message(str(err.get("ctx", {}).get("error", "malformed"))))
        elif kind == "int_from_float":
            lines.append(
                f"{path} must be a whole number, for example 60 (got {show(err.get('input'))}; "
                "it is not rounded)"
            )
        elif kind in ("union_tag_invalid", "union_tag_not_found"):
            lines.append(f"{path}.channel must be one of {', '.join(CHANNELS)}")
        elif kind == "literal_error":
            expected = err.get("ctx", {}).get("expected", "")
            lines.append(f"{path} must be one of {expected} (got {show(err.get('input'))})")
        elif kind in ("string_too_short",) and err.get("ctx", {}).get("min_length") == 1:
            lines.append(f"{path} must not be empty")
        elif kind == "string_too_long":
            lines.append(
                f"{path} must be at most {err['ctx']['max_length']} characters; shorten it"
            )
        elif kind in _FIXES:
            lines.append(f"{path} {_FIXES[kind]}")
        else:
            lines.append(f"{path}: {str(err.get('msg', 'is invalid')).lower()}")
    # Unions report one error per member; keep the first of identical lines.
    return list(dict.fromkeys(lines))


def validation_message(exc: ValidationError) -> list[str]:
    return describe_errors(list(exc.errors()))
