"""`AsyncAskgate`: the asyncio client. `ask()` blocks (asynchronously) until the human
answers or the question ends; cancelling the calling task cancels the question."""

from __future__ import annotations

import logging
import time
from types import TracebackType
from typing import Any, overload

import anyio
import httpx

from askgate_client import _protocol as p
from askgate_client._resource import AskResult, Question
from askgate_client._types import Escalation, Locale, Questions, Remind, Targets

log = logging.getLogger("askgate_client")


class AsyncAskgate:
    """An askgate API client for asyncio (and anyio) code.

    `base_url` and `api_key` default to `ASKGATE_URL` and `ASKGATE_API_KEY`; `session`,
    `targets`, `locale`, `remind` and `escalate` set defaults for every ask (an ask's
    own value replaces the default). Connection errors and 429/502/
    503/504 answers are retried with backoff (honouring Retry-After) for up to
    `retry_for_s` of continuous failure. Use as `async with AsyncAskgate(...) as ag:`.

    Every waiting `ask()`/`wait()` holds one HTTP connection for its long-poll, so the
    connection pool is unbounded by default (up to 20 idle ones are kept for 5 s);
    `max_connections` bounds it, and calls beyond the bound wait for a free connection.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        session: str | None = None,
        targets: Targets | None = None,
        locale: Locale | None = None,
        remind: Remind | None = None,
        escalate: Escalation | None = None,
        retry_for_s: float = p.RETRY_FOR_S,
        max_connections: int | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = p.base_url_from_env(base_url)
        self.session = session
        self.targets = targets
        self.locale = locale
        self.remind = remind
        self.escalate = escalate
        self.retry_for_s = retry_for_s
        self._owns_http = http is None
        self._http = http or httpx.AsyncClient(
            limits=p.pool_limits(max_connections), verify=p.tls()
        )
        self._headers = {"Authorization": f"Bearer {p.api_key_from_env(api_key)}"}

    async def __aenter__(self) -> AsyncAskgate:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def ask(
        self,
        questions: Questions,
        *,
        timeout_s: int | None = None,
        session: str | None = None,
        targets: Targets | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
        tool_call_id: str | None = None,
        locale: Locale | None = None,
        callback_url: str | None = None,
        remind: Remind | None = None,
        escalate: Escalation | None = None,
        primary: bool = True,
    ) -> AskResult:
        """Ask and wait until the question is final; return its `AskResult`.

        `remind` (`{"every_s": 300, "max": 3, "final_warning_s": 120}`; left out, the
        tenant's default; `{"max": 0}`, none) keeps after the human on the targets that
        show the question; `escalate` (`[{"after_s": 600, "targets": [...]}, ...]`, up to
        3 steps) also shows it on more targets while it is still pending.

        Re-waits across long-poll windows, API restarts and dropped connections; the
        question is asked once (a retried POST carries the same `tool_call_id`). If the
        calling task is cancelled, the question is cancelled before the cancellation
        propagates. Raises `InvalidAsk` (422, the message names the field),
        `SessionBusyError`, another `ApiError`, or `ApiUnavailable`.
        """
        question = await self.start(
            questions,
            timeout_s=timeout_s,
            session=session,
            targets=targets,
            run_id=run_id,
            agent_id=agent_id,
            tool_call_id=tool_call_id,
            locale=locale,
            callback_url=callback_url,
            remind=remind,
            escalate=escalate,
            primary=primary,
        )
        try:
            return await self.wait(question.id)
        except anyio.get_cancelled_exc_class():
            # Shielded: under anyio the cancelled scope would cancel this call too.
            with anyio.CancelScope(shield=True), anyio.move_on_after(p.CANCEL_GRACE_S):
                await self._cancel_quietly(question.id)
            raise

    async def start(
        self,
        questions: Questions,
        *,
        timeout_s: int | None = None,
        session: str | None = None,
        targets: Targets | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
        tool_call_id: str | None = None,
        locale: Locale | None = None,
        callback_url: str | None = None,
        remind: Remind | None = None,
        escalate: Escalation | None = None,
        primary: bool = True,
    ) -> Question:
        """Ask without waiting; returns the pending question (use `wait()` later).

        Without a `tool_call_id` one is generated, so a POST retried after a dropped
        connection returns the same question instead of asking twice.
        """
        session = session or self.session
        if not session:
            raise ValueError("session is required: pass session= here or to the client")
        body = p.ask_body(
            questions,
            session=session,
            timeout_s=timeout_s,
            tool_call_id=tool_call_id or p.new_tool_call_id(),
            targets=targets if targets is not None else self.targets,
            run_id=run_id,
            agent_id=agent_id,
            locale=locale or self.locale,
            callback_url=callback_url,
            remind=remind if remind is not None else self.remind,
            escalate=escalate if escalate is not None else self.escalate,
            primary=primary,
        )
        question = Question.from_resource(await self._request("POST", "/v1/questions", json=body))
        log.debug("asked %s in session %s", question.id, session)
        return question

    @overload
    async def wait(self, question_id: str) -> AskResult: ...
    @overload
    async def wait(self, question_id: str, *, timeout_s: float | None) -> AskResult | None: ...

    async def wait(self, question_id: str, *, timeout_s: float | None = None) -> AskResult | None:
        """Wait until the question is final and return its `AskResult`; with `timeout_s`,
        return None if it is still pending after that long (the question stays pending)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            window = p.WAIT_WINDOW_S
            if deadline is not None:
                window = max(0.0, min(window, deadline - time.monotonic()))
            body = await self._request(
                "GET",
                f"/v1/questions/{question_id}/wait",
                params={"timeout_s": round(window, 3)},
                read_timeout_s=window + p.READ_SLACK_S,
            )
            outcome = Question.from_resource(body).outcome()
            if outcome is not None:
                return outcome
            if deadline is not None and time.monotonic() >= deadline:
                return None

    async def get(self, question_id: str) -> Question:
        """The question resource as it is now."""
        return Question.from_resource(await self._request("GET", f"/v1/questions/{question_id}"))

    async def cancel(self, question_id: str) -> Question:
        """End a pending question as `no_answer` / `cancelled` (409 if it already ended)."""
        path = f"/v1/questions/{question_id}/cancel"
        return Question.from_resource(await self._request("POST", path))

    async def _cancel_quietly(self, question_id: str) -> None:
        try:
            await self.cancel(question_id)
            log.info("cancelled %s on the way out", question_id)
        except Exception as exc:  # already final, or unreachable: nothing more to do
            log.info("could not cancel %s on the way out: %s", question_id, exc)

    async def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        read_timeout_s: float = 30.0,
    ) -> dict[str, Any]:
        retrier = p.Retrier(self.retry_for_s)
        while True:
            failure: httpx.Response | Exception
            try:
                resp = await self._http.request(
                    method,
                    self.base_url + path,
                    json=json,
                    params=params,
                    headers=self._headers,
                    timeout=p.http_timeout(read_timeout_s),
                )
            except httpx.TransportError as exc:
                failure = exc
            else:
                if resp.status_code not in p.RETRY_STATUSES:
                    return p.parse(resp)
                failure = resp
            delay = retrier.delay_after(failure)
            log.info(
                "%s %s failed (%s); retrying in %.2f s",
                method,
                path,
                getattr(failure, "status_code", None) or type(failure).__name__,
                delay,
            )
            await anyio.sleep(delay)
