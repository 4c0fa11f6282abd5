"""The `ask_user` tool: its input schema (exactly the contract's, README "The ask"), the
guidance the model reads in its description, and how results and errors are shaped. Pure data."""

from __future__ import annotations

import json
from typing import Any, Final

from mcp_types import CallToolResult, TextContent, Tool

NAME: Final = "ask_user"

DESCRIPTION: Final = """\
Ask the user 1-3 multiple-choice questions and wait for the answer.

Use this only when you are blocked on a decision that is genuinely the user's to make \
(a preference, a trade-off, a risk they must accept) and you cannot settle it from the \
context or by looking it up. Do not use it to confirm what you can decide yourself.

- Ask 1 to 3 questions in one call; each has a snake_case `id` (the answer key), a short \
`header` (up to 12 characters), one `question` sentence and 2 to 4 `options`.
- Put the recommended option first and end its label with " (Recommended)".
- Do not add an "Other" option: the user can always answer in their own words.
- Set `multiSelect` when several options may apply.

The result is {"status": "answered", "answers": {"answers": {"<id>": ["<label or the \
user's own text>", ...]}}} or {"status": "no_answer"} (timed out, skipped or cancelled). \
On no_answer, proceed with your best judgment (usually the recommended option) and say \
what you assumed.\
"""

OPTION_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "label": {
            "type": "string",
            "description": "What the user picks, at most 64 characters; unique in the "
            "question. The recommended option comes first and ends with ' (Recommended)'.",
        },
        "description": {
            "type": "string",
            "description": "Optional: what choosing it means.",
        },
    },
    "required": ["label"],
    "additionalProperties": False,
}

QUESTION_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "id": {
            "type": "string",
            "pattern": "^[a-z][a-z0-9_]*$",
            "description": "snake_case key of this question's answer, unique in the call, "
            "for example deploy_target.",
        },
        "header": {
            "type": "string",
            "description": "A short tag shown with the question, at most 12 characters.",
        },
        "question": {
            "type": "string",
            "description": "The question, one sentence.",
        },
        "options": {
            "type": "array",
            "items": OPTION_SCHEMA,
            "minItems": 2,
            "maxItems": 4,
            "description": "2 to 4 choices, the recommended one first; no 'Other' option.",
        },
        "multiSelect": {
            "type": "boolean",
            "default": False,
            "description": "True when the user may pick several options.",
        },
    },
    "required": ["id", "header", "question", "options"],
    "additionalProperties": False,
}

INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "items": QUESTION_SCHEMA,
            "minItems": 1,
            "maxItems": 3,
            "description": "1 to 3 questions, answered together.",
        },
        "timeoutSeconds": {
            "type": "integer",
            "default": 900,
            "description": "How long to wait for the user, in whole seconds (default 900, "
            "kept within 30 to 3600); then the result is no_answer.",
        },
    },
    "required": ["questions"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["answered", "no_answer"]},
        "answers": {
            "type": "object",
            "properties": {
                "answers": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
            },
            "required": ["answers"],
        },
    },
    "required": ["status"],
}

TOOL: Final = Tool(
    name=NAME,
    title="Ask the user",
    description=DESCRIPTION,
    input_schema=INPUT_SCHEMA,
    output_schema=OUTPUT_SCHEMA,
)

KNOWN_ARGUMENTS: Final = frozenset(INPUT_SCHEMA["properties"])


def argument_errors(arguments: dict[str, Any]) -> list[str]:
    """Top-level problems the API cannot see (it gets only the known fields); the rest
    is validated by the API, whose messages name the field and the fix."""
    errors = [
        f"{key} is not a known field; remove it" for key in arguments if key not in KNOWN_ARGUMENTS
    ]
    if "questions" not in arguments:
        errors.append("questions is required")
    elif not isinstance(arguments["questions"], list):
        errors.append("questions must be a list")
    return errors


def result(tool_result: dict[str, Any]) -> CallToolResult:
    """The contract's result, as JSON text and as structured content."""
    text = json.dumps(tool_result, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(text=text)], structured_content=tool_result)


def error(message: str) -> CallToolResult:
    """A tool error the model reads and can fix and retry."""
    return CallToolResult(content=[TextContent(text=message)], is_error=True)
