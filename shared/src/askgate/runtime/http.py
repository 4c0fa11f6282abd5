"""How the HTTP services (API, Control UI) read a JSON body: orjson (strict, see
askgate.domain.asgi) in place of the standard library's decoder, for every FastAPI route
(`APIRouter(route_class=StrictJsonRoute)`). orjson's JSONDecodeError is the standard
one's subclass, so FastAPI reports it as `json_invalid` (models.describe_errors). Needs
FastAPI: the `askgate[http]` extra."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response


class StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = orjson.loads(await self.body())
        return self._json


class StrictJsonRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return route
