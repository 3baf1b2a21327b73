"""Locust load through llmclient, reporting TTFT and end-to-end latency as Locust metrics.

    locust -f benchmarks/locustfile.py --host https://127.0.0.1:8443/v1 --headless -u 50 -r 10
    # spread over machines: one master, N workers (the same file everywhere)
    locust -f benchmarks/locustfile.py --master --host URL
    locust -f benchmarks/locustfile.py --worker --master-host MASTER

``--host`` is the OpenAI-compatible base URL (with ``/v1``). Environment: ``OPENAI_API_KEY``,
``LLM_MODEL`` (default: the server's first model), ``LLM_STREAM`` (1/0, default 1),
``LLM_CA_BUNDLE`` (a CA file for a self-signed server such as the reference server),
``LLM_THINK_S`` (mean think time between calls, default 1.0), ``LLM_STOP_AFTER`` (stop the run
once this many calls have finished, in this process: a smoke run that ends when it has its
sample, however slow the machine, with ``-t`` as the upper bound).

Each call fires three Locust request events under type ``LLM``: ``e2e`` (end-to-end latency),
``ttft`` (time to the first non-empty content chunk; streams only) and, on failure, ``e2e`` with
the exception, so Locust's statistics, percentiles and charts (and its master/worker
aggregation) carry the LLM metrics. Prompts and lengths come from ``benchmarks.harness.load``'s
lognormal mix, seeded per user.
"""

from __future__ import annotations

import os
import random
import time
from typing import TYPE_CHECKING, Any

try:
    from locust import User, between, task
except ImportError as exc:  # pragma: no cover - needs the bench extra
    raise SystemExit("locust is not installed: pip install 'llmclient[bench]'") from exc

from llmclient_bench.harness.load import LengthModel, readable_text

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

REQUEST_TYPE = "LLM"


def stop_after() -> int | None:
    """``LLM_STOP_AFTER`` as a count; a value that is not a positive integer is an error."""
    raw = os.environ.get("LLM_STOP_AFTER")
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"LLM_STOP_AFTER={raw!r}: expected a positive integer")
    return int(raw)


class LLMUser(User):
    """One simulated app user: chat calls with think time, through llmclient."""

    wait_time = between(0.0, 2 * float(os.environ.get("LLM_THINK_S", "1.0")))
    lengths = LengthModel()
    finished = 0                      # calls finished by every user of this process
    stop_after = stop_after()

    def on_start(self) -> None:
        import llmclient

        verify: str | bool = os.environ.get("LLM_CA_BUNDLE") or True
        self.llm = llmclient.OpenAI(base_url=self.host,
                                    api_key=os.environ.get("OPENAI_API_KEY", "bench-key"),
                                    verify=verify)
        self.model = os.environ.get("LLM_MODEL") or self._first_model()
        self.stream = os.environ.get("LLM_STREAM", "1") != "0"
        self.rng = random.Random(id(self))

    def on_stop(self) -> None:
        self.llm.close()

    def _first_model(self) -> str:
        models = self.llm.models.list()
        data = getattr(models, "data", None) or []
        return str(data[0].id) if data else "default"

    def _fire(self, name: str, ms: float, length: int, exc: BaseException | None = None,
              **context: Any) -> None:
        self.environment.events.request.fire(
            request_type=REQUEST_TYPE, name=name, response_time=ms, response_length=length,
            exception=exc, context=context)

    @task
    def chat(self) -> None:
        words, max_tokens = self.lengths.sample(self.rng)
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": readable_text(words, self.rng)}]
        t0 = time.perf_counter()
        ttft: float | None = None
        chars = 0
        trace_id = None
        try:
            if self.stream:
                stream = self.llm.chat.completions.create(
                    model=self.model, messages=messages, max_tokens=max_tokens, stream=True)
                for chunk in stream:
                    text = chunk.choices[0].delta.content if chunk.choices else None
                    if text:
                        if ttft is None:
                            ttft = (time.perf_counter() - t0) * 1000.0
                        chars += len(text)
                trace_id = getattr(stream, "trace_id", None)
            else:
                response = self.llm.chat.completions.create(
                    model=self.model, messages=messages, max_tokens=max_tokens)
                chars = len(response.choices[0].message.content or "")
                trace_id = getattr(response, "trace_id", None)
        except Exception as exc:
            self._fire("e2e", (time.perf_counter() - t0) * 1000.0, 0, exc,
                       trace_id=getattr(exc, "trace_id", None))
            return
        self._fire("e2e", (time.perf_counter() - t0) * 1000.0, chars, trace_id=trace_id)
        if ttft is not None:
            self._fire("ttft", ttft, chars, trace_id=trace_id)
        LLMUser.finished += 1
        if self.stop_after is not None and LLMUser.finished >= self.stop_after \
                and self.environment.runner is not None:
            # From a greenlet of its own: quit() kills the users, this one included.
            import gevent

            gevent.spawn(self.environment.runner.quit)
