"""`askgate-webhooks`: POSTs each final result to its ask's callback_url, signed, retried.

Process model. `askgate-webhooks` (the `run` role, the default) is one asyncio process
that consumes the `webhook` streams and enqueues one RQ job per final question, and
supervises ASKGATE_WEBHOOK_WORKERS child processes (`askgate-webhooks worker`), each an
RQ `SimpleWorker` that runs the delivery jobs one at a time (a job is one HTTP POST, so
forking a work horse per job buys nothing); one of them also runs RQ's scheduler, which
starts the delayed retries. RQ workers are synchronous and own their process's signals,
hence processes, not threads. A stop signal reaches the parent, which stops consuming and
sends each child one SIGTERM (RQ's warm shutdown: the running attempt finishes); a child
that dies is restarted. Beside the consumer runs the reaper (reaper.py), which retries an
attempt whose worker died mid-POST (kill -9) and re-enqueues a retry whose job was lost.
The roles also run apart (`consumer` with the reaper, `worker`) to scale them
separately. `dead` lists the deliveries that gave up; `--check` is the liveness probe.

Two Redis: the questions live on REDIS_URL (one Redis or a cluster), RQ's queues on
ASKGATE_JOBS_REDIS_URL (default REDIS_URL; required on a cluster, which RQ cannot use).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import threading
import time

import orjson
import structlog
from askgate.domain.errors import ConfigError
from askgate.runtime import health
from askgate.runtime.consumer import StreamConsumer
from askgate.runtime.logs import configure_logging
from askgate.runtime.runner import run_service
from askgate.settings import load
from askgate.store import keys
from askgate.store.conn import check_redis, connect, connect_sync, consumer_client
from askgate.store.webhooks import list_dead

from askgate_webhooks import jobs
from askgate_webhooks.config import WebhookSettings
from askgate_webhooks.reaper import reap_forever
from askgate_webhooks.worker import CHANNEL, WebhookEnqueuer

SERVICE = "webhooks"
log = structlog.get_logger("askgate.webhooks")
# A worker child that died is restarted after this pause, so a crash loop (Redis down,
# a bad install) does not spin.
RESTART_DELAY_S = 1.0
# The parent's pid, given to worker children so they stop when it is gone.
PARENT_ENV = "ASKGATE_WEBHOOKS_PARENT"


async def supervise_worker(settings: WebhookSettings, stop: asyncio.Event, index: int) -> None:
    """Keep one `askgate-webhooks worker` child running until stop; then stop it warmly."""
    env = {**os.environ, PARENT_ENV: str(os.getpid())}
    while not stop.is_set():
        # Its own session: a terminal's Ctrl-C reaches only the parent, which sends one
        # SIGTERM (a second signal would be RQ's cold shutdown, killing the attempt).
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "askgate_webhooks", "worker", env=env, start_new_session=True
        )
        log.info("webhooks.worker_started", index=index, pid=proc.pid)
        exited = asyncio.ensure_future(proc.wait())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({exited, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if not exited.done():
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            # An attempt still running after this is cut short; its lease runs out and
            # the reaper retries it (reaper.py), so a stop never loses a delivery.
            try:
                await asyncio.wait_for(exited, settings.webhook_timeout_s + 5)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
            _kill_group(proc.pid)
            log.info("webhooks.worker_stopped", index=index, pid=proc.pid)
            return
        stopping.cancel()
        _kill_group(proc.pid)
        log.error("webhooks.worker_exited", index=index, pid=proc.pid, code=proc.returncode)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), RESTART_DELAY_S)


def _kill_group(pgid: int) -> None:
    """What a dead worker leaves behind: RQ forks its scheduler into the worker's process
    group, and a worker killed hard does not stop it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def serve(settings: WebhookSettings, stop: asyncio.Event, *, workers: int) -> None:
    redis = consumer_client(
        settings.redis_url, cluster=settings.redis_cluster, block_ms=settings.consumer_block_ms
    )
    sync_redis = connect_sync(settings.redis_url, cluster=settings.redis_cluster)
    jobs_redis = connect_sync(settings.jobs_redis())
    enqueuer = WebhookEnqueuer(sync_redis, settings, jobs_redis=jobs_redis)
    consumer = StreamConsumer(
        redis,
        CHANNEL,
        f"{health.instance_name()}:{os.getpid()}",
        enqueuer.handle,
        block_ms=settings.consumer_block_ms,
        claim_idle_ms=settings.consumer_claim_idle_ms,
    )
    log.info("webhooks.started", workers=workers)
    try:
        await asyncio.gather(
            consumer.run(stop),
            reap_forever(sync_redis, settings, stop, jobs_redis=jobs_redis),
            health.beat_forever(redis, SERVICE, stop),
            *(supervise_worker(settings, stop, i) for i in range(workers)),
        )
    finally:
        sync_redis.close()
        jobs_redis.close()
        await redis.aclose()
        log.info("webhooks.stopped")


def _exit_with_parent(parent: int) -> None:
    """A worker child whose parent is gone (killed hard) stops itself warmly."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def run_worker(settings: WebhookSettings) -> None:
    from rq import Queue, SimpleWorker

    jobs.configure(settings)
    if os.environ.get(PARENT_ENV, "").isdigit():
        _exit_with_parent(int(os.environ[PARENT_ENV]))
    # RQ's own connection; a job reaches the questions through jobs.store_redis().
    redis = connect_sync(settings.jobs_redis(), socket_timeout_s=None)
    worker = SimpleWorker([Queue(keys.WEBHOOK_QUEUE, connection=redis)], connection=redis)
    try:
        worker.work(with_scheduler=True, logging_level=settings.log_level.upper())
    finally:
        jobs.close_stores()
        redis.close()


async def print_dead(settings: WebhookSettings, tenant: str | None, limit: int) -> int:
    check_redis(settings)
    redis = connect(settings.redis_url, cluster=settings.redis_cluster, max_connections=4)
    try:
        for row in await list_dead(redis, tenant, limit):
            print(orjson.dumps(row).decode())
    finally:
        await redis.aclose()
    return 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="askgate-webhooks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--check", action="store_true", help="liveness probe: exit 0 if alive")
    sub = parser.add_subparsers(dest="role")
    sub.add_parser("run", help="consumer and RQ workers (the default)")
    sub.add_parser(
        "consumer",
        help="only the stream consumer that enqueues jobs, and the "
        "reaper that retries what dead workers abandoned",
    )
    sub.add_parser("worker", help="only one RQ worker (with the retry scheduler)")
    dead = sub.add_parser("dead", help="list dead letters as JSON lines, newest first")
    dead.add_argument("--tenant", default=None, help="only this tenant's")
    dead.add_argument("--limit", type=int, default=50)
    args = parser.parse_args(argv)
    try:
        settings = load(WebhookSettings)
        if args.role == "dead":
            raise SystemExit(asyncio.run(print_dead(settings, args.tenant, args.limit)))
        if args.check:
            raise SystemExit(
                asyncio.run(
                    health.check(settings.redis_url, SERVICE, cluster=settings.redis_cluster)
                )
            )
        check_redis(settings, jobs=True)
    except ConfigError as exc:
        print(f"askgate-webhooks: {exc.message}", file=sys.stderr)
        raise SystemExit(2) from None
    configure_logging(settings.log_level, settings.log_json)
    if args.role == "worker":
        run_worker(settings)
        return
    workers = 0 if args.role == "consumer" else settings.webhook_workers
    run_service(SERVICE, lambda stop: serve(settings, stop, workers=workers))


if __name__ == "__main__":
    main()
