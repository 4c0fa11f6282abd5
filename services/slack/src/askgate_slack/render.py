"""Pure rendering: a question → a Block Kit message (built with `slack_sdk.models.blocks`
and validated before it leaves), a final question → its summary, and "Other…" → a modal.

One single-select question: a section with the question and the option descriptions,
one button per option in declared order (the ` (Recommended)` one `primary`), then
"Other…" and "Skip". One multi-select question: native checkboxes, then Submit, Other…
and Skip. Several questions: a section and radio buttons (or checkboxes) per question and
one Submit. Every message also carries the numbered text and reply guidance as `text`
(notifications, screen readers), which is also the whole prompt should the blocks not
validate. Every action id is an `Act`: the question id, the target index and the action
with the option's declared index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from askgate.channels.render import guidance, prompt_text, summary_text
from askgate.domain.i18n import t
from askgate.domain.models import RECOMMENDED, QuestionIn
from askgate.store.record import Record
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    CheckboxesElement,
    ContextBlock,
    InputBlock,
    MarkdownTextObject,
    Option,
    PlainTextInputElement,
    PlainTextObject,
    RadioButtonsElement,
    SectionBlock,
)
from slack_sdk.models.views import View

SECTION_MAX = 3000  # characters in a section's text
BUTTON_MAX = 75  # characters of a button's (or an option's) text
BLOCKS_MAX = 50  # blocks in a message
CHOICES_MAX = 10  # options of checkboxes and radio buttons
OTHER_BLOCK = "ag_other"  # the modal's text input (block and action id)
OTHER_CALLBACK = "askgate_other"  # the modal's callback_id
PREFIX = "ag"


@dataclass(frozen=True)
class Act:
    """An action id: `ag:<question id>:<target>:<action>`. Actions: `o<i>` picks option i
    (declared order, 0-based), `x` is Other…, `s` Skip, `d` Submit, `q<k>` the choices of
    question k (ticking them changes nothing until Submit)."""

    q: str
    t: int
    a: str

    def pack(self) -> str:
        return f"{PREFIX}:{self.q}:{self.t}:{self.a}"

    @classmethod
    def unpack(cls, raw: str) -> Act | None:
        parts = raw.split(":")
        if len(parts) != 4 or parts[0] != PREFIX or not parts[2].isdigit():
            return None
        return cls(parts[1], int(parts[2]), parts[3])


@dataclass(frozen=True)
class Prompt:
    text: str
    blocks: list[dict[str, Any]]


def esc(text: str) -> str:
    """Agent text as mrkdwn: only &, < and > have meaning to Slack's parser."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _recommended(label: str) -> bool:
    return label.casefold().endswith(RECOMMENDED.casefold())


def _section(q: QuestionIn, locale: str, number: int | None) -> SectionBlock:
    head = f"*{number}. [{esc(q.header)}]* " if number else f"*[{esc(q.header)}]* "
    text = head + esc(q.question)
    if q.multiSelect:
        text += " " + t(locale, "choose_many")
    notes = [f"• *{esc(o.label)}* — {esc(o.description)}" for o in q.options if o.description]
    if notes:
        text += "\n" + "\n".join(notes)
    return SectionBlock(text=MarkdownTextObject(text=cut(text, SECTION_MAX)))


def _button(text: str, act: Act, value: str, style: str | None = None) -> ButtonElement:
    return ButtonElement(text=cut(text, BUTTON_MAX), action_id=act.pack(), value=value, style=style)


def _choices(q: QuestionIn) -> list[Option]:
    return [
        Option(
            value=str(i),
            label=cut(o.label, BUTTON_MAX),
            description=cut(o.description, BUTTON_MAX) if o.description else None,
        )
        for i, o in enumerate(q.options)
    ]


def _blocks(questions: Sequence[QuestionIn], locale: str, qid: str, index: int) -> list[Block]:
    def act(action: str) -> Act:
        return Act(qid, index, action)

    other = _button(t(locale, "other"), act("x"), f"{qid}:{index}:x")
    skip = _button(t(locale, "skip"), act("s"), f"{qid}:{index}:s")
    submit = _button(t(locale, "submit"), act("d"), f"{qid}:{index}:d", "primary")
    if len(questions) == 1 and not questions[0].multiSelect:
        q = questions[0]
        buttons: list[ButtonElement] = [
            _button(
                o.label,
                act(f"o{i}"),
                f"{qid}:{index}:{i}",
                "primary" if _recommended(o.label) else None,
            )
            for i, o in enumerate(q.options)
        ]
        return [
            _section(q, locale, None),
            ActionsBlock(block_id=act("a").pack(), elements=[*buttons, other, skip]),
        ]
    if len(questions) == 1:
        q = questions[0]
        ticks = CheckboxesElement(action_id=act("q0").pack(), options=_choices(q))
        return [
            _section(q, locale, None),
            ActionsBlock(block_id=act("q0").pack(), elements=[ticks]),
            ActionsBlock(block_id=act("a").pack(), elements=[submit, other, skip]),
        ]
    blocks: list[Block] = []
    for k, q in enumerate(questions):
        kind = CheckboxesElement if q.multiSelect else RadioButtonsElement
        blocks += [
            _section(q, locale, k + 1),
            ActionsBlock(
                block_id=act(f"q{k}").pack(),
                elements=[kind(action_id=act(f"q{k}").pack(), options=_choices(q))],
            ),
        ]
    hint = " ".join(
        (
            t(locale, "choose_then_submit"),
            t(locale, "or_reply_in_thread"),
            guidance(questions, locale),
        )
    )
    blocks += [
        ContextBlock(elements=[PlainTextObject(text=cut(hint, SECTION_MAX))]),
        ActionsBlock(block_id=act("a").pack(), elements=[submit, skip]),
    ]
    return blocks


def validate(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    """The blocks as JSON, checked against Block Kit's limits (what slack_sdk checks, and
    the counts it does not); SlackObjectFormationError names what is wrong."""
    if not 0 < len(blocks) <= BLOCKS_MAX:
        raise SlackObjectFormationError(f"a message takes 1 to {BLOCKS_MAX} blocks")
    out = []
    for block in blocks:
        block.validate_json()
        data = block.to_dict()
        ids = [e.get("action_id") for e in data.get("elements", []) if e.get("action_id")]
        if len(ids) != len(set(ids)):
            raise SlackObjectFormationError("action_id must be unique within a block")
        for element in data.get("elements", []):
            if len(element.get("options", [])) > CHOICES_MAX:
                raise SlackObjectFormationError(f"at most {CHOICES_MAX} choices")
        out.append(data)
    return out


def _text_blocks(text: str, locale: str, qid: str, index: int) -> list[Block]:
    parts = [text[i : i + SECTION_MAX] for i in range(0, len(text), SECTION_MAX)]
    skip = _button(t(locale, "skip"), Act(qid, index, "s"), f"{qid}:{index}:s")
    return [
        *(SectionBlock(text=PlainTextObject(text=p)) for p in parts),
        ActionsBlock(block_id=Act(qid, index, "a").pack(), elements=[skip]),
    ]


def prompt(questions: Sequence[QuestionIn], locale: str, qid: str, index: int) -> Prompt:
    """The prompt message; numbered text with reply guidance and a Skip button when the
    blocks would break a Block Kit limit."""
    text = prompt_text(questions, locale)
    try:
        return Prompt(text, validate(_blocks(questions, locale, qid, index)))
    except SlackObjectFormationError:
        return Prompt(text, validate(_text_blocks(text, locale, qid, index)))


def summary(rec: Record, *, private: bool) -> Prompt:
    """What a prompt becomes when its question ends: the question(s), then the outcome;
    no controls. Free text is repeated only in a direct message."""
    text = summary_text(rec, echo_free_text=private)
    heads = " · ".join(f"[{q.header}] {q.question}" for q in rec.questions)
    blocks: list[Block] = [
        ContextBlock(elements=[PlainTextObject(text=cut(heads, SECTION_MAX))]),
        SectionBlock(text=PlainTextObject(text=cut(text, SECTION_MAX))),
    ]
    return Prompt(text, validate(blocks))


def picked(
    questions: Sequence[QuestionIn], values: Mapping[str, Any], qid: str, index: int
) -> dict[str, list[str]]:
    """The choices ticked in a message (a block_actions payload's `state.values`) as
    {question id: [labels]}; questions with nothing ticked are left out."""
    answers: dict[str, list[str]] = {}
    for k, q in enumerate(questions):
        key = Act(qid, index, f"q{k}").pack()
        state = (values.get(key) or {}).get(key) or {}
        chosen = state.get("selected_options") or (
            [state["selected_option"]] if state.get("selected_option") else []
        )
        indexes = {int(o["value"]) for o in chosen if str(o.get("value", "")).isdigit()}
        labels = [o.label for i, o in enumerate(q.options) if i in indexes]
        if labels:
            answers[q.id] = labels
    return answers


def other_modal(locale: str, metadata: str) -> dict[str, Any]:
    """The "Other…" modal: one text input; its submission is the free-text answer."""
    view = View(
        type="modal",
        callback_id=OTHER_CALLBACK,
        private_metadata=metadata,
        title=PlainTextObject(text=cut(t(locale, "other"), 24)),
        submit=PlainTextObject(text=cut(t(locale, "submit"), 24)),
        close=PlainTextObject(text=cut(t(locale, "cancel"), 24)),
        blocks=[
            InputBlock(
                block_id=OTHER_BLOCK,
                label=t(locale, "other_prompt"),
                element=PlainTextInputElement(action_id=OTHER_BLOCK, max_length=2000),
            )
        ],
    )
    view.validate_json()
    data: dict[str, Any] = view.to_dict()
    return data
