"""Client-side overhead: llmclient vs the official ``openai`` client vs raw httpx + orjson.

    python -m benchmarks.client_overhead                 # starts the reference server (profile zero)
    python -m benchmarks.client_overhead --url http://127.0.0.1:8000/v1 --calls 500 --rounds 5
    python -m benchmarks.client_overhead --http1            # an HTTP/1.1-only reference server
    python -m benchmarks.client_overhead --http1 --clients llmclient,openai,openai-aiohttp

Every client runs in its own worker process against the same local server, the clients
taking turns over ``--rounds`` rounds (medians reported), so its CPU time (``time.process_time()`` of the worker: the client's CPU and nothing
else, the server being another process) and its imports are its own. Reported per client:

* ``cpu_ms_call`` / ``p50_ms_call``: client CPU per non-streamed chat call, and its median latency
* ``cpu_ms_stream`` / ``p50_ms_stream``: the same for a streamed call of ``--stream-tokens`` chunks
* ``conc_calls_s``: completed calls per second with ``--concurrency`` calls in flight (async client)
* ``import_ms``: ``import <module>`` in a fresh interpreter (``-X importtime`` cumulative, median)
* ``first_client_ms`` / ``next_client_ms``: constructing the first client, then another one
* with ``--http1``: ``h2c_probe``, what llmclient's one h2c probe per process and origin adds
  to the first call (:func:`h2c_probe_ms`)

The floor is what a hand-written client needs: httpx over HTTP/1.1 with orjson and no
response objects. ``openai-aiohttp`` is the official client on its aiohttp backend
(``openai.DefaultAioHttpClient`` for the async client, needs ``pip install aiohttp``; its
sync client is the default one), the stronger baseline for concurrency on HTTP/1.1 origins. Ratios are against the official client, measured in the same run. The
targets (``TARGETS``): CPU per call <= 0.4x, per stream <= 0.15x, concurrent throughput >= 2x,
import <= 0.35x, a second client < 1 ms; structured output (``chat.completions.parse``) and the
Responses API (``responses.create``, a call and a stream of typed events) <= 0.3x per call, <= 0.2x
per Responses stream.

CPU time on a shared machine moves by 2x between runs of the same code. ``--instructions``
counts instructions instead (valgrind's callgrind; ``apt-get install valgrind``), repeatable to
a few percent whatever else the machine runs: each client's worker runs under valgrind twice,
with ``k`` and ``k + --calls`` calls after the same set-up and warm-up, and the difference over
``--calls`` is what one call costs (the same for streams). It is about 50x slower than the
timed mode, so it measures only the non-streamed call and the stream::

    python -m benchmarks.client_overhead --instructions --clients llmclient,openai
    python -m benchmarks.client_overhead --instructions --clients llmclient --otel
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CLIENTS = ("llmclient", "openai", "httpx", "openai-aiohttp", "llmclient-otel", "llmclient-otel-sampled",
           "llmclient-sdk", "llmclient-anthropic", "anthropic")
# The Anthropic face against the official anthropic client: the Messages API (``--clients
# llmclient-anthropic,anthropic``), a call and a stream of Anthropic events, per call and per event.
ANTHROPIC_KINDS = ("llmclient-anthropic", "anthropic")
OTEL_KINDS = ("llmclient-otel", "llmclient-otel-sampled", "llmclient-sdk")
DEFAULT_CLIENTS = ("llmclient", "openai", "httpx")
MODULE_OF = {"llmclient": "llmclient", "openai": "openai", "httpx": "httpx", "openai-aiohttp": "openai",
             "llmclient-otel": "llmclient", "llmclient-otel-sampled": "llmclient", "llmclient-sdk": "llmclient",
             "llmclient-anthropic": "llmclient", "anthropic": "anthropic"}
API_KEY = "bench-key"
ROOT = Path(__file__).resolve().parents[1]


# -- worker side (one client per process) ---------------------------------------------------

def _body(model: str, tokens: int, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": tokens,
                            "messages": [{"role": "user", "content": "Tell me about the sea."}]}
    if stream:
        body["stream"] = True
    return body


def _sdk_calls(kind: str, base_url: str, model: str, tokens: int) -> tuple[Callable[[], Any], Callable[[], int], Any]:
    mod = __import__(MODULE_OF[kind])
    client = mod.OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    messages = _body(model, 1, False)["messages"]

    def call() -> Any:
        r = client.chat.completions.create(model=model, messages=messages, max_tokens=8)
        return r.choices[0].message.content

    def stream() -> int:
        n = 0
        for chunk in client.chat.completions.create(model=model, messages=messages, max_tokens=tokens, stream=True):
            if chunk.choices and chunk.choices[0].delta.content is not None:
                n += 1
        return n

    return call, stream, client


def _anthropic_root(base_url: str) -> str:
    """The Messages API's base URL: the server's, without the OpenAI ``/v1`` (its paths have it)."""
    return base_url[:-3] if base_url.endswith("/v1") else base_url


def _anthropic_calls(kind: str, base_url: str, model: str, tokens: int) -> tuple[Callable[[], Any], Callable[[], int], Any]:
    """``messages.create`` whole, and streamed (its text deltas counted), on llmclient's face or
    the official anthropic client."""
    mod = __import__(MODULE_OF[kind])
    client = mod.Anthropic(base_url=_anthropic_root(base_url), api_key=API_KEY, max_retries=0)
    messages = _body(model, 1, False)["messages"]

    def call() -> Any:
        r = client.messages.create(model=model, messages=messages, max_tokens=8)
        return r.content[0].text

    def stream() -> int:
        n = 0
        for event in client.messages.create(model=model, messages=messages, max_tokens=tokens, stream=True):
            if event.type == "content_block_delta":
                n += 1
        return n

    return call, stream, client


def _parse_call(client: Any, model: str) -> Callable[[], Any]:
    """Structured output: ``chat.completions.parse(response_format=<pydantic model>)``, the
    schema sent strict and the answer validated into the model."""
    import pydantic

    class Weather(pydantic.BaseModel):
        city: str
        temperature_c: float
        sunny: bool

    messages = [{"role": "user", "content": "The weather in Paris, as JSON."}]

    def call() -> Any:
        r = client.chat.completions.parse(model=model, messages=messages, response_format=Weather,
                                          max_tokens=64)
        return r.choices[0].message.parsed

    return call


def _responses_calls(client: Any, model: str, tokens: int) -> tuple[Callable[[], Any], Callable[[], int]]:
    """The Responses API: ``responses.create`` (16 tokens, the API's minimum), and a
    ``tokens``-token stream of its typed events (counting the text deltas)."""
    question = "Tell me about the sea."

    def call() -> Any:
        return client.responses.create(model=model, input=question, max_output_tokens=16).output_text

    def stream() -> int:
        n = 0
        for event in client.responses.create(model=model, input=question, max_output_tokens=tokens, stream=True):
            if event.type == "response.output_text.delta":
                n += 1
        return n

    return call, stream


def _httpx_calls(base_url: str, model: str, tokens: int) -> tuple[Callable[[], Any], Callable[[], int], Any]:
    import httpx
    import orjson

    client = httpx.Client(timeout=60.0)
    url = base_url + "/chat/completions"
    headers = {"authorization": f"Bearer {API_KEY}", "content-type": "application/json"}
    plain = orjson.dumps(_body(model, 8, False))
    streamed = orjson.dumps(_body(model, tokens, True))

    def call() -> Any:
        r = client.post(url, content=plain, headers=headers)
        return orjson.loads(r.content)["choices"][0]["message"]["content"]

    def stream() -> int:
        n, buf = 0, b""
        with client.stream("POST", url, content=streamed, headers=headers) as r:
            for raw in r.iter_raw():
                buf += raw
                *events, buf = buf.split(b"\n\n")
                for event in events:
                    if event.startswith(b"data: {"):
                        obj = orjson.loads(event[6:])
                        if obj["choices"] and obj["choices"][0]["delta"].get("content") is not None:
                            n += 1
        return n

    return call, stream, client


def _measure(fn: Callable[[], Any], calls: int, warmup: int) -> dict[str, Any]:
    for _ in range(warmup):
        fn()
    # The collections that walk what importing left behind (one full pass costs ~25 ms, as
    # much as 60 calls) land in whichever phase happens to be running: run them now, so each
    # phase pays only for the garbage its own calls make, as a long-running process does.
    gc.collect()
    lat: list[float] = []
    last: Any = None
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(calls):
        t0 = time.perf_counter()
        last = fn()
        lat.append(time.perf_counter() - t0)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    lat.sort()
    return {"cpu_ms": cpu / calls * 1000.0, "p50_ms": lat[len(lat) // 2] * 1000.0,
            "p90_ms": lat[int(len(lat) * 0.9)] * 1000.0, "wall_s": wall, "last": last}


async def _concurrent(kind: str, base_url: str, model: str, total: int, width: int) -> dict[str, Any]:
    messages = _body(model, 1, False)["messages"]
    if kind == "httpx":
        import httpx
        import orjson

        client: Any = httpx.AsyncClient(timeout=60.0, limits=httpx.Limits(max_connections=width * 2))
        url, body = base_url + "/chat/completions", orjson.dumps(_body(model, 8, False))
        headers = {"authorization": f"Bearer {API_KEY}", "content-type": "application/json"}

        async def one() -> None:
            r = await client.post(url, content=body, headers=headers)
            orjson.loads(r.content)
    else:
        mod = __import__(MODULE_OF[kind])
        extra: dict[str, Any] = {}
        if kind == "openai-aiohttp":
            extra["http_client"] = mod.DefaultAioHttpClient()
        client = mod.AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0, **extra)

        async def one() -> None:
            r = await client.chat.completions.create(model=model, messages=messages, max_tokens=8)
            _ = r.choices[0].message.content

    async def lane(n: int) -> None:
        for _ in range(n):
            await one()

    await asyncio.gather(*(lane(2) for _ in range(width)))  # warm: open what the client opens
    per_lane = max(1, total // width)
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(lane(per_lane) for _ in range(width)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    done = per_lane * width
    return {"calls_s": done / wall, "cpu_ms": cpu / done * 1000.0, "calls": done}


def _construction(kind: str, base_url: str) -> dict[str, float]:
    if kind == "httpx":
        import httpx

        def make() -> Any:
            return httpx.Client()
    elif kind in ANTHROPIC_KINDS:
        mod = __import__(MODULE_OF[kind])

        def make() -> Any:
            return mod.Anthropic(base_url=_anthropic_root(base_url), api_key=API_KEY)
    else:
        mod = __import__(MODULE_OF[kind])

        def make() -> Any:
            return mod.OpenAI(base_url=base_url, api_key=API_KEY)

    t0 = time.perf_counter()
    make()
    first = time.perf_counter() - t0
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        make()
        times.append(time.perf_counter() - t0)
    return {"first_client_ms": first * 1000.0, "next_client_ms": statistics.median(times) * 1000.0}


def _install_otel(sampled: float | None = None) -> None:
    """``llmclient-otel``: the OpenTelemetry SDK as an application would run it (a batch span
    processor, a periodic metric reader), exporting to nowhere: what spans and metrics cost
    the client, without an exporter's network I/O. ``sampled``: a parent-based ratio sampler
    keeping that share of new traces (``llmclient-otel-sampled``), as production tracing often
    runs; the default samples every span."""
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        MetricExporter,
        MetricExportResult,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class NoSpans(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    class NoMetrics(MetricExporter):
        def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kw: Any) -> MetricExportResult:
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis: float = 10_000) -> bool:
            return True

        def shutdown(self, timeout_millis: float = 30_000, **kw: Any) -> None:
            pass

    sampler = None
    if sampled is not None:
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

        sampler = ParentBased(TraceIdRatioBased(sampled))
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(BatchSpanProcessor(NoSpans()))
    trace.set_tracer_provider(provider)
    reader = PeriodicExportingMetricReader(NoMetrics(), export_interval_millis=5_000)
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))


def _by_hand(client: Any, model: str, stream_tokens: int) -> tuple[Callable[[], Any], Callable[[], int]]:
    """``llmclient-sdk``: llmclient's own telemetry off, and the least an application would
    write by hand with the SDK for the same conventions (one CLIENT span with the request
    attributes at its start and the answer's at its end, the duration and two token-usage
    measurements): the SDK's own floor, which llmclient's spans and metrics are compared with."""
    import time as _time

    from opentelemetry import metrics, trace

    tracer = trace.get_tracer("by-hand")
    meter = metrics.get_meter("by-hand")
    duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s")
    tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}")
    base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": model}
    attrs_in, attrs_out = {**base, "gen_ai.token.type": "input"}, {**base, "gen_ai.token.type": "output"}
    host, port = client.base_url.host, client.base_url.port or 80
    start_attrs = {**base, "server.address": host, "server.port": port, "gen_ai.request.max_tokens": 8}
    kind = trace.SpanKind.CLIENT
    messages = _body(model, 1, False)["messages"]

    def traced(stream_it: bool) -> Any:
        t0 = _time.perf_counter()
        with tracer.start_as_current_span(f"chat {model}", kind=kind, attributes=start_attrs) as span:
            if stream_it:
                n, last = 0, None
                for chunk in client.chat.completions.create(model=model, messages=messages,
                                                            max_tokens=stream_tokens, stream=True, stream_options={"include_usage": True}):
                    last = chunk
                    if chunk.choices and chunk.choices[0].delta.content is not None:
                        n += 1
                assert last is not None and last.usage is not None, "a stream with no usage chunk"
                usage, rid, rmodel, reasons = last.usage, last.id, last.model, ["stop"]
                result: Any = n
            else:
                r = client.chat.completions.create(model=model, messages=messages, max_tokens=8)
                usage, rid, rmodel = r.usage, r.id, r.model
                reasons = [c.finish_reason for c in r.choices]
                result = r.choices[0].message.content
            span.set_attributes({"gen_ai.response.id": rid, "gen_ai.response.model": rmodel,
                                 "gen_ai.response.finish_reasons": reasons,
                                 "gen_ai.usage.input_tokens": usage.prompt_tokens,
                                 "gen_ai.usage.output_tokens": usage.completion_tokens})
        duration.record(_time.perf_counter() - t0, base)
        tokens.record(usage.prompt_tokens, attrs_in)
        tokens.record(usage.completion_tokens, attrs_out)
        return result

    return (lambda: traced(False)), (lambda: traced(True))


def worker(kind: str, base_url: str, model: str, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"client": kind}
    _setup_otel(kind)
    out.update(_construction(kind, base_url))
    call, stream, _client = _client_calls(kind, base_url, model, args.stream_tokens)
    plain = _measure(call, args.calls, args.warmup)
    streamed = _measure(stream, args.stream_calls, max(2, args.warmup // 4))
    out.update(cpu_ms_call=plain["cpu_ms"], p50_ms_call=plain["p50_ms"], p90_ms_call=plain["p90_ms"],
               cpu_ms_stream=streamed["cpu_ms"], p50_ms_stream=streamed["p50_ms"],
               p90_ms_stream=streamed["p90_ms"], stream_chunks=streamed["last"])
    if kind in ANTHROPIC_KINDS:  # per streamed event: the stream's CPU over its content events
        out["cpu_us_event"] = streamed["cpu_ms"] * 1000.0 / max(1, streamed["last"])
        return out
    if kind in ("llmclient", "openai"):
        parsed = _measure(_parse_call(_client, model), max(10, args.calls // 4), max(2, args.warmup // 4))
        out.update(cpu_ms_parse=parsed["cpu_ms"], p50_ms_parse=parsed["p50_ms"])
        r_call, r_stream = _responses_calls(_client, model, args.stream_tokens)
        r_plain = _measure(r_call, max(10, args.calls // 2), max(2, args.warmup // 4))
        r_streamed = _measure(r_stream, args.stream_calls, max(2, args.warmup // 4))
        out.update(cpu_ms_responses=r_plain["cpu_ms"], p50_ms_responses=r_plain["p50_ms"],
                   cpu_ms_responses_stream=r_streamed["cpu_ms"], responses_stream_deltas=r_streamed["last"])
    if kind == "llmclient" or kind in OTEL_KINDS:
        r = _client.chat.completions.create(model=model, messages=[{"role": "user", "content": "x"}], max_tokens=2)
        out["http_version"] = r.timings.http_version
    conc = asyncio.run(_concurrent(kind, base_url, model, args.conc_calls, args.concurrency))
    out.update(conc_calls_s=conc["calls_s"], conc_cpu_ms_call=conc["cpu_ms"])
    return out


def h2c_probe_ms(base_url: str, model: str, repeats: int = 20) -> dict[str, float]:
    """What llmclient's one h2c probe per process costs on an HTTP/1.1-only origin: the first
    call of a fresh process with it (http2=True: the prior-knowledge preface, answered in
    HTTP/1.1, then the call over HTTP/1.1) and without it (http2=False), medians of
    ``repeats`` alternating pairs, each on fresh connections with the origin forgotten."""
    import llmclient
    from llmclient.transport import lanes as _transport

    messages = _body(model, 1, False)["messages"]
    samples: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(repeats):
        for http2 in (True, False):
            _transport._http1_origins.clear()  # this process measures one origin
            llmclient.close_all()
            client = llmclient.OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0, http2=http2)
            t0 = time.perf_counter()
            client.chat.completions.create(model=model, messages=messages, max_tokens=2)
            samples[http2].append((time.perf_counter() - t0) * 1000.0)
    llmclient.close_all()
    with_probe, without = statistics.median(samples[True]), statistics.median(samples[False])
    return {"first_call_with_probe_ms": with_probe, "first_call_without_probe_ms": without,
            "probe_ms": with_probe - without}


# -- parent side ----------------------------------------------------------------------------

def import_ms(module: str, repeats: int = 5) -> float:
    """Median cumulative ``-X importtime`` of ``import module`` in a fresh interpreter.

    Bytecode as an installed package has it: pip compiles site-packages at install time, but
    a source checkout with PYTHONDONTWRITEBYTECODE set would recompile every module on every
    import (~20 ms for llmclient). So the measuring interpreters may write bytecode, and a first,
    untimed import writes it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = [sys.executable, "-X", "importtime", "-c", f"import {module}"]
    subprocess.run(cmd, capture_output=True, cwd=ROOT, check=True, env=env)
    samples = []
    for _ in range(repeats):
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True, env=env)
        for line in proc.stderr.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2] == module:
                samples.append(int(parts[1]) / 1000.0)
    return statistics.median(samples)


def _setup_otel(kind: str) -> None:
    """OpenTelemetry as ``kind`` says: none, llmclient's (all spans or 1 in 10 sampled), or
    llmclient's off and the by-hand floor's on."""
    if kind in OTEL_KINDS:
        if kind == "llmclient-sdk":  # OpenTelemetry's own switch, read when llmclient is imported
            os.environ["OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"] = "llmclient"
        _install_otel(0.1 if kind == "llmclient-otel-sampled" else None)


def _client_calls(kind: str, base_url: str, model: str,
                  tokens: int) -> tuple[Callable[[], Any], Callable[[], int], Any]:
    """The call and the stream ``kind`` measures, and its client."""
    if kind == "httpx":
        call, stream, client = _httpx_calls(base_url, model, tokens)
    elif kind in ANTHROPIC_KINDS:
        call, stream, client = _anthropic_calls(kind, base_url, model, tokens)
    else:
        call, stream, client = _sdk_calls(kind, base_url, model, tokens)
    if kind == "llmclient-sdk":
        call, stream = _by_hand(client, model, tokens)
    return call, stream, client


def instruction_worker(kind: str, what: str, n: int, base_url: str, model: str, tokens: int) -> None:
    """Under valgrind: set up, warm up, collect, then ``n`` calls (or streams), and leave
    without the interpreter's teardown. Two runs with different ``n`` differ by the calls alone."""
    _setup_otel(kind)
    call, stream, _ = _client_calls(kind, base_url, model, tokens)
    fn = call if what == "call" else stream
    for _ in range(10):
        fn()
    gc.collect()
    for _ in range(n):
        fn()
    sys.stdout.flush()
    os._exit(0)


_COLLECTED = re.compile(r"Collected : (\d+)")


def per_call_instructions(few: int, more: int, n_few: int, n_more: int) -> float:
    """Instructions per call from two runs' totals: ``few`` after ``n_few`` calls, ``more``
    after ``n_more`` (the set-up, imports and warm-up cancel out)."""
    if n_more <= n_few:
        raise ValueError(f"the second run must make more calls ({n_more} <= {n_few})")
    if more <= few:
        raise ValueError(f"the run with more calls counted fewer instructions ({more} <= {few})")
    return (more - few) / (n_more - n_few)


_compiled: set[tuple[str, str]] = set()  # (kind, what) whose modules have their bytecode written


def count_instructions(kind: str, what: str, n: int, base_url: str, model: str, tokens: int) -> int:
    """Instructions the whole worker process executed (callgrind's total). The first time a
    (kind, what) is counted, the worker runs once without valgrind: in a fresh checkout that
    run compiles the bytecode, which would otherwise land in whichever counted run came first."""
    worker = [sys.executable, "-m", f"{__package__}.client_overhead", "--instruction-worker",
              f"{kind}:{what}:{n}", "--url", base_url, "--model", model, "--stream-tokens", str(tokens)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONHASHSEED": "0"}
    if (kind, what) not in _compiled:
        subprocess.run(worker, capture_output=True, cwd=ROOT, timeout=600, env=env, check=True)
        _compiled.add((kind, what))
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *worker]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1800, env=env)
    found = _COLLECTED.search(proc.stderr)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(f"valgrind run of {kind} ({what} x {n}) failed:\n{proc.stderr[-3000:]}")
    return int(found.group(1))


def instruction_rows(kinds: list[str], base_url: str, model: str, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """``instr_call`` / ``instr_stream`` (millions of instructions) per client; the valgrind
    runs share the cores (each is single-threaded)."""
    from concurrent.futures import ThreadPoolExecutor

    plan = {("call", kind): (max(10, args.calls // 4), max(10, args.calls // 4) + args.calls) for kind in kinds}
    plan |= {("stream", kind): (max(5, args.stream_calls // 4), max(5, args.stream_calls // 4) + args.stream_calls)
             for kind in kinds}
    jobs = [(kind, what, n) for (what, kind), pair in plan.items() for n in pair]
    with ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2))) as pool:
        counted = pool.map(lambda job: count_instructions(job[0], job[1], job[2], base_url, model,
                                                          args.stream_tokens), jobs)
        totals = dict(zip(jobs, counted, strict=True))
    rows: dict[str, dict[str, Any]] = {}
    for (what, kind), (few, more) in plan.items():
        per = per_call_instructions(totals[(kind, what, few)], totals[(kind, what, more)], few, more)
        rows.setdefault(kind, {"client": kind})[f"instr_{what}"] = per / 1e6
    return rows


def run_worker(kind: str, base_url: str, model: str, argv: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", f"{__package__}.client_overhead", "--worker", kind, "--url", base_url,
           "--model", model, *argv]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"worker {kind} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def median_row(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-metric median over rounds (non-numeric fields from the first round)."""
    out = dict(samples[0])
    for key, value in samples[0].items():
        if isinstance(value, float):
            out[key] = statistics.median(s[key] for s in samples)
    return out


def ratios(rows: dict[str, dict[str, Any]]) -> dict[str, float]:
    ours, official = rows["llmclient"], rows["openai"]
    out = {
        "cpu_call_vs_openai": ours["cpu_ms_call"] / official["cpu_ms_call"],
        "cpu_stream_vs_openai": ours["cpu_ms_stream"] / official["cpu_ms_stream"],
        "throughput_vs_openai": ours["conc_calls_s"] / official["conc_calls_s"],
        "import_vs_openai": ours["import_ms"] / official["import_ms"],
        "next_client_ms": ours["next_client_ms"],
    }
    if "cpu_ms_parse" in ours and "cpu_ms_parse" in official:
        out["cpu_parse_vs_openai"] = ours["cpu_ms_parse"] / official["cpu_ms_parse"]
    for key in ("responses", "responses_stream"):
        if f"cpu_ms_{key}" in ours and f"cpu_ms_{key}" in official:
            out[f"cpu_{key}_vs_openai"] = ours[f"cpu_ms_{key}"] / official[f"cpu_ms_{key}"]
    if "openai-aiohttp" in rows:
        out["throughput_vs_openai_aiohttp"] = ours["conc_calls_s"] / rows["openai-aiohttp"]["conc_calls_s"]
    return out


def anthropic_ratios(rows: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The Anthropic face over the official anthropic client, measured in the same run."""
    if not {"llmclient-anthropic", "anthropic"} <= rows.keys():
        return {}
    ours, official = rows["llmclient-anthropic"], rows["anthropic"]
    return {"anthropic_cpu_call_vs_official": ours["cpu_ms_call"] / official["cpu_ms_call"],
            "anthropic_cpu_event_vs_official": ours["cpu_us_event"] / official["cpu_us_event"],
            "anthropic_import_vs_official": ours["import_ms"] / official["import_ms"]}


def otel_ratios(rows: dict[str, dict[str, Any]], measure: str = "cpu") -> dict[str, float]:
    """CPU with OpenTelemetry on, over plain llmclient's: llmclient's spans and metrics (every
    span sampled, and 1 in 10), and the same telemetry written by hand with the SDK (its floor);
    ``otel_*_vs_sdk_floor`` is what llmclient's instrumentation costs above that floor.
    ``measure``: ``cpu`` (the timed rows) or ``instr`` (``--instructions``)."""
    out: dict[str, float] = {}
    plain = rows.get("llmclient")
    if plain is None:
        return out
    for what in ("call", "stream"):
        key = f"cpu_ms_{what}" if measure == "cpu" else f"instr_{what}"
        for kind, name in (("llmclient-otel", "otel"), ("llmclient-otel-sampled", "otel_sampled"),
                           ("llmclient-sdk", "sdk_floor")):
            if kind in rows:
                out[f"{name}_{measure}_{what}_vs_llmclient"] = rows[kind][key] / plain[key]
        if "llmclient-otel" in rows and "llmclient-sdk" in rows:
            out[f"otel_{measure}_{what}_vs_sdk_floor"] = rows["llmclient-otel"][key] / rows["llmclient-sdk"][key]
    return out


def instruction_ratios(rows: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The ``--instructions`` ratios: llmclient against the official client, and OpenTelemetry's."""
    out: dict[str, float] = {}
    if {"llmclient", "openai"} <= rows.keys():
        for what in ("call", "stream"):
            out[f"instr_{what}_vs_openai"] = rows["llmclient"][f"instr_{what}"] / rows["openai"][f"instr_{what}"]
    out.update(otel_ratios(rows, "instr"))
    return out


TARGETS = {"otel_cpu_call_vs_llmclient": ("<=", 1.15), "otel_cpu_stream_vs_llmclient": ("<=", 1.15),
           "otel_sampled_cpu_call_vs_llmclient": ("<=", 1.15), "otel_sampled_cpu_stream_vs_llmclient": ("<=", 1.15),
           "sdk_floor_cpu_call_vs_llmclient": ("<=", 1.15), "sdk_floor_cpu_stream_vs_llmclient": ("<=", 1.15),
           "otel_cpu_call_vs_sdk_floor": ("<=", 1.05), "otel_cpu_stream_vs_sdk_floor": ("<=", 1.05),
           "cpu_call_vs_openai": ("<=", 0.4), "cpu_stream_vs_openai": ("<=", 0.15),
           "throughput_vs_openai": (">=", 2.0), "import_vs_openai": ("<=", 0.35), "next_client_ms": ("<", 1.0),
           "throughput_vs_openai_aiohttp": (">", 1.0), "cpu_parse_vs_openai": ("<=", 0.3),
           "cpu_responses_vs_openai": ("<=", 0.3), "cpu_responses_stream_vs_openai": ("<=", 0.2),
           # issue 45's goals for the Anthropic face
           "anthropic_cpu_call_vs_official": ("<=", 0.3), "anthropic_cpu_event_vs_official": ("<=", 0.3),
           "anthropic_import_vs_official": ("<=", 0.35)}
# --instructions: the same targets, counted in instructions.
TARGETS |= {key.replace("cpu_", "instr_", 1) if key.startswith("cpu_") else key.replace("_cpu_", "_instr_"): value
            for key, value in TARGETS.items() if "cpu_call" in key or "cpu_stream" in key}
# Targets for an HTTP/1.1-only origin (--http1).
TARGETS_HTTP1 = TARGETS | {"cpu_stream_vs_openai": ("<=", 0.2), "throughput_vs_openai": (">=", 1.5)}


def table(rows: dict[str, dict[str, Any]], ratio: dict[str, float],
          targets: dict[str, tuple[str, float]] = TARGETS) -> str:
    if all("instr_call" in row for row in rows.values()):
        cols = [("instr_call", "M instr/call"), ("instr_stream", "M instr/stream")]
    else:
        cols = [("cpu_ms_call", "CPU/call ms"), ("p50_ms_call", "p50 call ms"), ("cpu_ms_stream", "CPU/stream ms"),
                ("p50_ms_stream", "p50 stream ms"), ("conc_calls_s", "32-way calls/s"), ("import_ms", "import ms"),
                ("first_client_ms", "1st client ms"), ("next_client_ms", "2nd client ms")]
    if any("cpu_ms_parse" in row for row in rows.values()):
        cols.append(("cpu_ms_parse", "CPU/parse ms"))
    if any("cpu_us_event" in row for row in rows.values()):
        cols.append(("cpu_us_event", "CPU/event us"))
    if any("cpu_ms_responses" in row for row in rows.values()):
        cols += [("cpu_ms_responses", "CPU/resp ms"), ("cpu_ms_responses_stream", "CPU/resp strm ms")]
    lines = [f"{'client':<23}" + "".join(f"{title:>16}" for _, title in cols)]
    for kind, row in rows.items():
        lines.append(f"{kind:<23}" + "".join(
            f"{row[key]:>16.3f}" if key in row else f"{'-':>16}" for key, _ in cols))
    lines.append("")
    for key, value in ratio.items():
        op, target = targets[key]
        ok = value <= target if op in ("<=", "<") else value >= target
        lines.append(f"{key:<40} {value:8.3f}   target {op} {target}   {'met' if ok else 'NOT met'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", help="base URL of a running server (default: start the reference server)")
    p.add_argument("--model", help="model name (default: the server's first)")
    p.add_argument("--calls", type=int, default=200, help="non-streamed calls per client and round")
    p.add_argument("--stream-calls", type=int, default=40, help="streamed calls per client and round")
    p.add_argument("--stream-tokens", type=int, default=64, help="chunks per streamed call")
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--conc-calls", type=int, default=640, help="calls in the concurrent phase per round")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians are reported")
    p.add_argument("--clients", default=",".join(DEFAULT_CLIENTS),
                   help=f"comma-separated, of {', '.join(CLIENTS)}")
    p.add_argument("--http1", action="store_true",
                   help="start the reference server with --http1-only (an HTTP/1.1 origin, as vLLM, "
                        "SGLang, llama.cpp and Ollama are)")
    p.add_argument("--otel", action="store_true",
                   help="also run llmclient-otel: llmclient with OpenTelemetry spans and metrics on "
                        "(SDK, no-op exporters); its CPU is compared with plain llmclient's")
    p.add_argument("--out", help="JSON results (default: results/client_overhead.json, or "
                                 "results/client_overhead_instructions.json with --instructions)")
    p.add_argument("--instructions", action="store_true",
                   help="count instructions per call and per stream under valgrind (callgrind) "
                        "instead of timing: repeatable on a busy machine, ~50x slower")
    p.add_argument("--worker", choices=CLIENTS, help=argparse.SUPPRESS)
    p.add_argument("--instruction-worker", metavar="KIND:WHAT:N", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.url, args.model, args)))
        return 0
    if args.instruction_worker:
        kind, what, n = args.instruction_worker.split(":")
        instruction_worker(kind, what, int(n), args.url, args.model, args.stream_tokens)
    for name in (args.clients.split(",") if args.clients else []):
        if name not in CLIENTS:
            p.error(f"--clients: unknown client {name!r} (one of {', '.join(CLIENTS)})")
    if args.instructions and shutil.which("valgrind") is None:
        p.error("--instructions needs valgrind on PATH (apt-get install valgrind)")
    passthrough = ["--calls", str(args.calls), "--stream-calls", str(args.stream_calls),
                   "--stream-tokens", str(args.stream_tokens), "--concurrency", str(args.concurrency),
                   "--conc-calls", str(args.conc_calls), "--warmup", str(args.warmup)]
    server = None
    if args.url:
        base_url = args.url.rstrip("/")
    else:
        from .harness.serverproc import start_server

        server = start_server(profile="zero", extra_args=("--http1-only",) if args.http1 else ())
        base_url = server.base_url
    try:
        model = args.model or (server.model() if server else None) or "sim-zero"
        rounds: list[dict[str, dict[str, Any]]] = []
        kinds = args.clients.split(",")
        if args.otel:
            kinds += [kind for kind in OTEL_KINDS if kind not in kinds]
        for r in range(0 if args.instructions else args.rounds):
            # Clients take turns (ABC ABC ABC) so that load from other processes on a shared
            # machine hits each of them alike; the table reports the median over rounds.
            this: dict[str, dict[str, Any]] = {}
            for kind in kinds:
                print(f"round {r + 1}/{args.rounds}: {kind} ...", file=sys.stderr, flush=True)
                this[kind] = run_worker(kind, base_url, model, passthrough)
                this[kind]["import_ms"] = import_ms(MODULE_OF[kind], repeats=3)
            rounds.append(this)
        if args.instructions:
            print(f"valgrind: {len(kinds) * 4} runs of {', '.join(kinds)} ...", file=sys.stderr, flush=True)
            rows = instruction_rows(kinds, base_url, model, args)
        else:
            rows = {kind: median_row([rnd[kind] for rnd in rounds]) for kind in kinds}
        probe = h2c_probe_ms(base_url, model) if args.http1 and not args.instructions else None
    finally:
        if server is not None:
            server.stop()
    if args.instructions:
        ratio = instruction_ratios(rows)
    else:
        ratio = ratios(rows) if {"llmclient", "openai"} <= rows.keys() else {}
        ratio.update(otel_ratios(rows))
        ratio.update(anthropic_ratios(rows))
    print(table(rows, ratio, TARGETS_HTTP1 if args.http1 else TARGETS))
    if probe is not None:
        print(f"h2c probe (once per process and origin): first call {probe['first_call_with_probe_ms']:.2f} ms "
              f"with it, {probe['first_call_without_probe_ms']:.2f} ms without: {probe['probe_ms']:.2f} ms")
    from llmclient._redact import redact_url

    settings = vars(args) | {"out": None, "url": redact_url(args.url) if args.url else None}
    result = {"base_url": redact_url(base_url), "model": model, "cpu_count": os.cpu_count(),
              "python": sys.version.split()[0], "settings": settings, "clients": rows, "ratios": ratio,
              "rounds": rounds, "h2c_probe": probe,
              "note": ("instr = instructions per call (callgrind), the difference of two runs with "
                       "different call counts, in millions; the server runs in another process."
                       if args.instructions else
                       "CPU = worker process CPU time / calls; the server runs in another process.")}
    out = Path(args.out or ROOT / "results" / (
        "client_overhead_instructions.json" if args.instructions else "client_overhead.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
