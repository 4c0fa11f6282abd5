"""The FastAPI application: wiring, lifespan and the one place errors become responses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import structlog
from askgate.domain import netguard
from askgate.domain.asgi import BodyLimit
from askgate.domain.errors import AskgateError, HttpError, ValidationFailed
from askgate.domain.models import describe_errors
from askgate.runtime.http import mount_routes
from askgate.settings import Settings
from askgate.store.conn import Client, connect, connect_pubsub, warm
from askgate.store.store import Store
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import BusyLoadingError, ConnectionError, TimeoutError
from starlette.exceptions import HTTPException

from askgate_api import routes
from askgate_api.auth import TenantCache
from askgate_api.fastpath import (
    ANSWER_PATH,
    ASK_PATH,
    WAIT_PATH,
    serve_answer,
    serve_ask,
    serve_wait,
)
from askgate_api.liveness import Liveness
from askgate_api.outbound import OutboundCheck
from askgate_api.responses import error_response, redis_unavailable
from askgate_api.waiters import ShardedWaiters, Waiters

log = structlog.get_logger("askgate.api")


def make_redis(settings: Settings) -> Redis:
    # Short connect timeout: an unreachable Redis must become a quick 503, not a hang.
    return connect(
        settings.redis_url,
        cluster=settings.redis_cluster,
        max_connections=256,
        connect_timeout_s=1.0,
    )


def _error_body(status: int, message: str) -> bytes:
    return orjson.dumps({"error": {"code": HttpError.code_for(status), "message": message}})


class AskgateAPI(FastAPI):
    """FastAPI with the ask, the long-poll `wait`, answer and reply served first as plain ASGI
    (see fastpath.py), behind one body-size limit for every endpoint."""

    def __init__(self, *, body_max_bytes: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._guarded = BodyLimit(self._dispatch, body_max_bytes, _error_body)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # A long-poll spends its life suspended in the frames above it: served from here,
        # a waiter holds no BodyLimit or _dispatch frame nor the path match (0.9 KB of the
        # 12 KB it cost). It reads no body, so one that says it sends one goes through
        # the limit as before.
        question_id = _wait_id(scope)
        if question_id is not None:
            return await serve_wait(self, scope, send, question_id)
        await self._guarded(scope, receive, send)

    async def _dispatch(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            if scope["method"] == "GET":
                match = WAIT_PATH.match(scope["path"])
                if match is not None:
                    return await serve_wait(self, scope, send, match.group(1))
            elif scope["method"] == "POST":
                if scope["path"] == ASK_PATH:
                    return await serve_ask(self, scope, receive, send)
                match = ANSWER_PATH.match(scope["path"])
                if match is not None:
                    return await serve_answer(
                        self, scope, receive, send, match.group(1), match.group(2)
                    )
        await super().__call__(scope, receive, send)


def _wait_id(scope: Any) -> str | None:
    """The question id of a GET /v1/questions/{id}/wait that sends no body, else None."""
    if scope["type"] != "http" or scope["method"] != "GET":
        return None
    match = WAIT_PATH.match(scope["path"])
    if match is None:
        return None
    for name, _ in scope["headers"]:
        if name == b"content-length" or name == b"transfer-encoding":
            return None
    return str(match.group(1))


def create_app(settings: Settings, resolver: netguard.Resolver | None = None) -> FastAPI:
    """The API. `resolver` looks up the hosts of outbound URLs (the machine's resolver
    unless a test gives its own)."""
    settings.require_secret()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis = make_redis(settings)
        await warm(redis)
        pubsub_redis: Client = (
            connect(settings.redis_url, cluster=True, max_connections=4)
            if settings.redis_cluster
            else connect_pubsub(settings.redis_url)
        )
        app.state.redis = redis
        app.state.store = Store(redis, settings)
        app.state.tenants = TenantCache(redis)
        app.state.liveness = Liveness(redis)
        app.state.waiters = (
            ShardedWaiters(pubsub_redis)
            if isinstance(pubsub_redis, RedisCluster)
            else Waiters(pubsub_redis)
        )
        await app.state.waiters.start()
        log.info("api.started", redis=settings.redis_url.split("@")[-1])
        try:
            yield
        finally:
            await app.state.waiters.stop()
            await app.state.store.aclose()
            await redis.aclose()
            await pubsub_redis.aclose()

    app = AskgateAPI(
        body_max_bytes=settings.body_max_bytes,
        # /v1/questions/ is a 404 in the error shape, not a redirect a client may not follow.
        redirect_slashes=False,
        title="askgate",
        version="1.0",
        summary="Let AI agents ask a human 1-3 structured questions and wait for the answer.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.outbound = OutboundCheck(
        settings.outbound_policy(), resolver or netguard.system_resolver
    )

    @app.exception_handler(AskgateError)
    async def _askgate_error(_: Request, exc: AskgateError) -> Response:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> Response:
        lines = describe_errors(list(exc.errors()))
        return error_response(ValidationFailed("; ".join(lines), lines))

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> Response:
        # Unknown routes (404), wrong methods (405) and the like, in the error shape.
        response = error_response(HttpError(exc.status_code, _http_message(exc)))
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> Response:
        log.exception("api.unexpected_error", error_type=type(exc).__name__)
        return error_response(HttpError(500, "internal error; it was logged"))

    @app.exception_handler(ConnectionError)
    @app.exception_handler(TimeoutError)
    @app.exception_handler(BusyLoadingError)
    @app.exception_handler(OSError)
    async def _redis_down(_: Request, exc: Exception) -> Response:
        log.warning("api.redis_unavailable", error=str(exc))
        return error_response(redis_unavailable())

    mount_routes(app, routes.router)
    return app


def _http_message(exc: HTTPException) -> str:
    if exc.status_code == 404:
        return "no such endpoint; see /openapi.json for the API"
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        return f"method not allowed here; use {allowed}" if allowed else "method not allowed"
    return str(exc.detail)
