"""The FastAPI application: wiring, lifespan and the one place errors become responses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import structlog
from askgate.conn import connect, connect_pubsub
from askgate.errors import AskgateError, ValidationFailed
from askgate.models import describe_errors
from askgate.settings import Settings
from askgate.store import Store
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from redis.asyncio import Redis
from redis.exceptions import BusyLoadingError, ConnectionError, TimeoutError

from askgate_api import routes
from askgate_api.auth import TenantCache
from askgate_api.fastpath import ASK_PATH, WAIT_PATH, serve_ask, serve_wait
from askgate_api.liveness import Liveness
from askgate_api.responses import error_response, redis_unavailable
from askgate_api.waiters import Hub

log = structlog.get_logger("askgate.api")


def make_redis(settings: Settings) -> Redis:
    # Short connect timeout: an unreachable Redis must become a quick 503, not a hang.
    return connect(settings.redis_url, cluster=settings.redis_cluster, max_connections=256,
                   connect_timeout_s=1.0)


class AskgateAPI(FastAPI):
    """FastAPI with the ask and the long-poll `wait` served first as plain ASGI
    (see fastpath.py)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            if scope["method"] == "GET":
                match = WAIT_PATH.match(scope["path"])
                if match is not None:
                    return await serve_wait(self, scope, send, match.group(1))
            elif scope["method"] == "POST" and scope["path"] == ASK_PATH:
                return await serve_ask(self, scope, receive, send)
        await super().__call__(scope, receive, send)


def create_app(settings: Settings) -> FastAPI:
    settings.require_secret()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis = make_redis(settings)
        pubsub_redis = connect_pubsub(settings.redis_url)
        app.state.redis = redis
        app.state.store = Store(redis, settings)
        app.state.tenants = TenantCache(redis)
        app.state.liveness = Liveness(redis)
        app.state.hub = Hub(pubsub_redis)
        await app.state.hub.start()
        log.info("api.started", redis=settings.redis_url.split("@")[-1])
        try:
            yield
        finally:
            await app.state.hub.stop()
            await redis.aclose()
            await pubsub_redis.aclose()

    app = AskgateAPI(
        title="askgate",
        version="1.0",
        summary="Let AI agents ask a human 1-3 structured questions and wait for the answer.",
        lifespan=lifespan,
    )
    app.state.settings = settings

    @app.exception_handler(AskgateError)
    async def _askgate_error(_: Request, exc: AskgateError) -> Response:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> Response:
        lines = describe_errors(list(exc.errors()))
        return error_response(ValidationFailed("; ".join(lines), lines))

    @app.exception_handler(ConnectionError)
    @app.exception_handler(TimeoutError)
    @app.exception_handler(BusyLoadingError)
    @app.exception_handler(OSError)
    async def _redis_down(_: Request, exc: Exception) -> Response:
        log.warning("api.redis_unavailable", error=str(exc))
        return error_response(redis_unavailable())

    app.include_router(routes.router)
    return app
