"""`Askgate`: the blocking client, the same calls as `AsyncAskgate` (see there)."""

from __future__ import annotations

import logging
import time
from types import TracebackType
from typing import Any, overload

import httpx

from askgate_client import _protocol as p
from askgate_client._resource import AskResult, Question
from askgate_client._types import Escalation, Locale, Questions, Remind, Targets

log = logging.getLogger("askgate_client")


class Askgate:
    """A blocking askgate API client; `AsyncAskgate` documents every call.

    Ctrl-C (KeyboardInterrupt) during `ask()` cancels the question before it propagates.
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
        http: httpx.Client | None = None,
    ) -> None:
        self.base_url = p.base_url_from_env(base_url)
        self.session = session
        self.targets = targets
        self.locale = locale
        self.remind = remind
        self.escalate = escalate
        self.retry_for_s = retry_for_s
        self._owns_http = http is None
        self._http = http or httpx.Client(limits=p.pool_limits(max_connections), verify=p.tls())
        self._headers = {"Authorization": f"Bearer {p.api_key_from_env(api_key)}"}

    def __enter__(self) -> Askgate:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def ask(
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
        """Ask and block until the question is final; see `AsyncAskgate.ask`."""
        question = self.start(
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
            return self.wait(question.id)
        except KeyboardInterrupt:
            self._cancel_quietly(question.id)
            raise

    def start(
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
        """Ask without waiting; see `AsyncAskgate.start`."""
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
        question = Question.from_resource(self._request("POST", "/v1/questions", json=body))
        log.debug("asked %s in session %s", question.id, session)
        return question

    @overload
    def wait(self, question_id: str) -> AskResult: ...
    @overload
    def wait(self, question_id: str, *, timeout_s: float | None) -> AskResult | None: ...

    def wait(self, question_id: str, *, timeout_s: float | None = None) -> AskResult | None:
        """Block until final; with `timeout_s`, None if still pending; see
        `AsyncAskgate.wait`."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            window = p.WAIT_WINDOW_S
            if deadline is not None:
                window = max(0.0, min(window, deadline - time.monotonic()))
            body = self._request(
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

    def get(self, question_id: str) -> Question:
        """The question resource as it is now."""
        return Question.from_resource(self._request("GET", f"/v1/questions/{question_id}"))

    def cancel(self, question_id: str) -> Question:
        """End a pending question as `no_answer` / `cancelled` (409 if it already ended)."""
        return Question.from_resource(self._request("POST", f"/v1/questions/{question_id}/cancel"))

    def _cancel_quietly(self, question_id: str) -> None:
        saved, self.retry_for_s = self.retry_for_s, p.CANCEL_GRACE_S
        try:
            self.cancel(question_id)
            log.info("cancelled %s on the way out", question_id)
        except Exception as exc:  # already final, or unreachable: nothing more to do
            log.info("could not cancel %s on the way out: %s", question_id, exc)
        finally:
            self.retry_for_s = saved

    def _request(
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
                resp = self._http.request(
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
            time.sleep(delay)
