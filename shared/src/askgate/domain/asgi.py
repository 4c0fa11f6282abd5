"""Request bodies at the edge of every HTTP service (API and web), as plain ASGI: a size
limit that answers 413 before the app reads anything, and the one JSON decoder.

orjson is strict where the standard library is not: invalid UTF-8, a lone surrogate
("\\ud800", which no JSON encoder can write back and Redis cannot store) and nesting past
1024 levels are refused as malformed JSON, so they become a 422 instead of a 500.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

from askgate.domain.errors import ValidationFailed

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
# (status, message) -> the error body in the service's own shape.
Render = Callable[[int, str], bytes]


def invalid_json_message(detail: str) -> str:
    return (
        f"body is not valid JSON ({detail}); send UTF-8 JSON without lone surrogates, "
        "nested at most 1024 levels"
    )


def parse_json(body: bytes) -> Any:
    """The request body as JSON, or ValidationFailed saying what is wrong with it."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ValidationFailed(invalid_json_message(exc.msg)) from None


def too_large_message(limit: int) -> str:
    return f"body must be at most {limit} bytes; send less (free text is limited anyway)"


class BodyLimit:
    """Answers 413 for a body over `max_bytes`: at once when Content-Length says so, else
    (a chunked body) after reading at most max_bytes + 1 bytes of it, which are then
    handed to the app unchanged."""

    def __init__(self, app: ASGIApp, max_bytes: int, render: Render) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.render = render

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length: bytes | None = None
        chunked = False
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = value
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if length is not None:
            # The server frames the body by Content-Length: the app never gets more.
            if length.isdigit() and int(length) > self.max_bytes:
                return await self._refuse(send)
            return await self.app(scope, receive, send)
        if not chunked:
            return await self.app(scope, receive, send)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return await self._refuse(send)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # http.disconnect, when it comes
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body = self.render(413, too_large_message(self.max_bytes))
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
