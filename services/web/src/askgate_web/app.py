"""The web Control UI application: wiring, lifespan, and where errors become pages."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import orjson
import structlog
from askgate.domain.asgi import BodyLimit
from askgate.domain.errors import AskgateError
from askgate.domain.i18n import t
from askgate.domain.models import describe_errors
from askgate.runtime import health
from askgate.runtime.http import mount_routes
from askgate.settings import Settings
from askgate.store.conn import connect, warm
from askgate.store.store import Store
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from redis.exceptions import RedisError
from starlette.exceptions import HTTPException

from askgate_web import operator, render, routes
from askgate_web.config import READ_BLOCK_MS, SERVICE
from askgate_web.feed import PageFeed

log = structlog.get_logger("askgate.web")
STATIC = Path(__file__).parent / "static"
# How long a stopping service waits for its reader and health tasks to end.
STOP_GRACE_S = 1.0


def create_app(settings: Settings) -> FastAPI:
    settings.require_secret()
    feed = PageFeed()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis = connect(
            settings.redis_url,
            cluster=settings.redis_cluster,
            connect_timeout_s=1.0,
            socket_timeout_s=5.0,
        )
        await warm(redis)
        # The blocking XREAD needs its own connection with a longer read timeout.
        reader = connect(
            settings.redis_url,
            cluster=settings.redis_cluster,
            connect_timeout_s=1.0,
            socket_timeout_s=READ_BLOCK_MS / 1000 + 5.0,
        )
        app.state.store = Store(redis, settings)
        stop = asyncio.Event()
        tasks = [
            asyncio.create_task(feed.run(reader), name="web-reader"),
            asyncio.create_task(health.beat_forever(redis, SERVICE, stop), name="web-beat"),
        ]
        log.info("web.started", redis=settings.redis_url.split("@")[-1])
        try:
            yield
        finally:
            feed.close()
            stop.set()
            # The reader's connection is dropped first: that ends a blocking XREAD at
            # once, where a cancel landing as its reply arrives was seen to go unnoticed
            # until the grace ran out (a second of every stop).
            await reader.aclose()
            for task in tasks:
                task.cancel()
            _, pending = await asyncio.wait(tasks, timeout=STOP_GRACE_S)
            if pending:
                for task in pending:
                    task.cancel()
                await asyncio.wait(pending, timeout=STOP_GRACE_S)
            for task in tasks:
                if task.done() and not task.cancelled() and task.exception():
                    log.warning(
                        "web.task_failed", task=task.get_name(), error=str(task.exception())
                    )
            await reader.aclose()
            await redis.aclose()
            log.info("web.stopped")

    app = FastAPI(
        title="askgate web", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.settings = settings
    app.state.feed = feed

    @app.exception_handler(routes.LinkRefused)
    async def _refused(request: Request, exc: routes.LinkRefused) -> Response:
        if request.url.path.startswith("/api/"):
            return _error(t(exc.locale, "link_invalid"), 403)
        return HTMLResponse(render.invalid_html(exc.locale), 403, headers=routes.PAGE)

    @app.exception_handler(AskgateError)
    async def _askgate_error(_: Request, exc: AskgateError) -> Response:
        return _error(exc.message, exc.http_status)

    @app.exception_handler(RedisError)
    @app.exception_handler(OSError)
    async def _redis_down(_: Request, exc: Exception) -> Response:
        log.warning("web.redis_unavailable", error=str(exc))
        return _error("Redis is unreachable; nothing was changed. Retry shortly.", 503)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> Response:
        return _error("; ".join(describe_errors(list(exc.errors()))), 422)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> Response:
        # The page's API answers in its own JSON shape; anything else is plain text.
        message = "not found" if exc.status_code == 404 else str(exc.detail)
        if request.url.path.startswith("/api/"):
            response = _error(message, exc.status_code)
        else:
            response = PlainTextResponse(message, exc.status_code, headers=routes.PRIVATE)
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> Response:
        log.exception("web.unexpected_error", error_type=type(exc).__name__)
        return _error("internal error; it was logged", 500)

    mount_routes(app, routes.router, operator.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_middleware(BodyLimit, max_bytes=settings.body_max_bytes, render=_error_body)
    return app


def _error_body(_: int, message: str) -> bytes:
    return orjson.dumps({"ok": False, "message": message})


def _error(message: str, status: int) -> Response:
    return Response(
        _error_body(status, message), status, media_type="application/json", headers=routes.PRIVATE
    )
