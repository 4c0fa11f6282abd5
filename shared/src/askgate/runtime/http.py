"""How the HTTP services (API, Control UI) read a JSON body: orjson (strict, see
askgate.domain.asgi) in place of the standard library's decoder, for every FastAPI route
(`APIRouter(route_class=StrictJsonRoute)`). orjson's JSONDecodeError is the standard
one's subclass, so FastAPI reports it as `json_invalid` (models.describe_errors). And
how an app takes its routes (`mount_routes`). Needs FastAPI: the `askgate[http]` extra."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import FastAPI
from fastapi.routing import APIRoute, APIRouter
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


def mount_routes(app: FastAPI, *routers: APIRouter) -> None:
    """The routers' routes, the very ones their decorators built at import, added to
    `app`. (FastAPI's include_router wraps each router and builds an effective copy of
    every route of it on the app's first request, paid by each app a process makes: a
    new API app and its first request 25-30 ms of CPU, against 4-5 ms. askgate's routers
    carry no prefix, tags or dependencies that an include would apply, and no app
    overrides dependencies.)"""
    for router in routers:
        app.router.routes.extend(router.routes)
