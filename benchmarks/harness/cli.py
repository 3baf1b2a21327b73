"""``python -m benchmarks``: the savings suite, and ``python -m benchmarks compare``.

    python -m benchmarks [--network wan|lan|mobile|loopback] [--quick] [--scenarios a,b]
                         [--profile h100-8b] [--out results] [--base-url URL --api-key KEY]
                         [--api openai|anthropic]
    python -m benchmarks compare A.json B.json [--max-p99-regression 10%]

Without ``--base-url`` it starts the reference server (TLS, so handshakes count) and puts the
emulated network between client and server; with it, it runs what makes sense against that
server directly (add ``--network`` to emulate a network in front of it as well) and says which
scenarios it skipped and why. ``--api anthropic`` runs the scenarios that apply to the Messages
API (each with ``anthropic`` in its ``apis``) with llmclient's ``AsyncAnthropic`` against the
official ``anthropic.AsyncAnthropic``, on the reference server's ``/v1/messages`` or on the
Anthropic-compatible server of ``--base-url`` (its root, as the official client takes it:
``https://api.anthropic.com``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib
import os
import platform
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from llmclient._redact import redact_argv, redact_text, redact_url

from ._scenario import Context, NotAvailable, ScenarioResult, default_api_key
from .drivers import ANTHROPIC_VERSION, APIS, anthropic_root
from .progress import Progress
from .records import official_named
from .serverproc import ServerProcess, start_server
from .stats import SLO
from .usage import Usage, describe_usage

__all__ = ["main", "parse_slo", "probe_capabilities", "quick_plan"]


def _prog() -> str:
    """How this was started, for usage lines: the ``llmclient-bench`` command, else
    ``python -m benchmarks`` (``python -m llmclient_bench`` when installed)."""
    command = os.path.basename(sys.argv[0])
    return command if command == "llmclient-bench" else f"python -m {__name__.split('.')[0]}"


NETWORKS = ("wan", "lan", "mobile", "loopback", "none")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=_prog(), description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--network", choices=NETWORKS, default=None,
                   help="emulated network profile (default: wan; with --base-url: none)")
    p.add_argument("--quick", action="store_true",
                   help="small budgets, each scenario judged on a statistic it can decide "
                        "in them, within 5 minutes on 2 cores (what `make bench` runs); "
                        "scenarios that cannot decide anything that fast are left out and "
                        "named")
    p.add_argument("--full", action="store_true",
                   help="the full budgets (~45 minutes on 2 cores; `make bench-full`); wins over "
                        "--quick")
    p.add_argument("--otlp-endpoint", metavar="URL",
                   help="export the run's spans (llmclient's and the reference server's) over "
                        "OTLP/HTTP to URL, e.g. http://127.0.0.1:4318 "
                        "(needs opentelemetry-exporter-otlp-proto-http)")
    p.add_argument("--scenarios", default="", help="comma-separated scenario names (default all)")
    p.add_argument("--list", action="store_true", help="list scenarios and exit")
    p.add_argument("--profile", default="h100-8b", help="reference server engine profile")
    p.add_argument("--no-tls", action="store_true", help="reference server over plain HTTP")
    p.add_argument("--out", default="results", help="results directory (a timestamped folder "
                   "is created inside)")
    p.add_argument("--base-url", help="an OpenAI-compatible server instead of the embedded one; "
                   "several, comma-separated: replicas of one model (the first serves every "
                   "scenario, all of them the replicas scenario)")
    p.add_argument("--api", choices=APIS, default="openai",
                   help="which API and face: openai (Chat Completions; the official openai "
                        "client as the baseline) or anthropic (the Messages API; the official "
                        "anthropic client as the baseline); runs the scenarios that apply to it")
    p.add_argument("--api-key", default=None,
                   help="API key (default: $OPENAI_API_KEY, or $ANTHROPIC_API_KEY with --api anthropic)")
    p.add_argument("--model", default=None, help="model name (default: the server's first)")
    p.add_argument("--capability", action="append", default=[],
                   help="declare a capability of the --base-url server (e.g. vision)")
    p.add_argument("--slo", default="ttft=2000,tpot=200,e2e=30000",
                   help="goodput SLOs in ms, e.g. ttft=500,tpot=50 (missing ones: no limit)")
    p.add_argument("--seed", type=int, default=0)
    return p


def parse_slo(text: str) -> SLO:
    """``ttft=500,tpot=50,e2e=10000`` (milliseconds) -> SLO; unknown keys are an error."""
    values: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, raw = item.partition("=")
        if not sep or key.strip() not in ("ttft", "tpot", "e2e"):
            raise ValueError(f"--slo item {item!r}: expected ttft=MS, tpot=MS or e2e=MS")
        try:
            values[key.strip()] = float(raw)
        except ValueError:
            raise ValueError(f"--slo item {item!r}: {raw!r} is not a number") from None
    return SLO(ttft_ms=values.get("ttft"), tpot_ms=values.get("tpot"), e2e_ms=values.get("e2e"))


def _compare_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"{_prog()} compare",
                                description="Two runs side by side (each savings row with its "
                                            "95% interval, then every variant's p50/p99 change "
                                            "with its interval). Exit 1 on a P99 regression "
                                            "whose whole interval lies beyond the threshold, "
                                            "2 on bad input, 0 otherwise.")
    p.add_argument("baseline")
    p.add_argument("current")
    p.add_argument("--max-p99-regression", default="10%")
    p.add_argument("--min-samples", type=int, default=None,
                   help="P99s from fewer requests are shown but not gated (default: 200, the "
                        "fewest that estimate a P99: two samples beyond it)")
    return p


def probe_capabilities(reference: bool, tls: bool, extra: list[str], api: str = "openai") -> set[str]:
    """What this installation (and server) can do; scenarios check ``requires`` against it.
    ``openai`` stands for the run's official client: the ``anthropic`` package with
    ``api="anthropic"`` (so a scenario written with the harness's drivers requires it once)."""
    caps = set(extra)
    face = "AsyncAnthropic" if api == "anthropic" else "AsyncOpenAI"
    with contextlib.suppress(ImportError):
        import llmclient

        if hasattr(llmclient, face):
            caps.add("llmclient")
    with contextlib.suppress(ImportError):
        importlib.import_module(api)
        caps.add("openai")
        caps.add(api)
    for module, cap in (("llmclient.cache", "llmclient.cache"),
                        ("llmclient.wire.protobuf", "llmclient.protobuf"),
                        ("llmclient.features.images", "llmclient.images"),
                        ("llmclient.features.prefetch", "llmclient.prefetch")):
        with contextlib.suppress(Exception):
            __import__(module)
            caps.add(cap)
    if reference:
        caps |= {"reference_server", "faults", "spawn_server", "vision"}
    if tls:
        caps.add("tls")
    return caps


def _first_model(base_url: str, api_key: str, verify: str | bool, api: str = "openai") -> str | None:
    """The first model the server lists: ``GET /models`` (OpenAI's), or with ``api="anthropic"``
    ``GET /v1/models`` under the Messages API's root with its headers."""
    import httpx

    if api == "anthropic":
        url, headers = anthropic_root(base_url) + "/v1/models", {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION}
    else:
        url, headers = base_url.rstrip("/") + "/models", {"authorization": f"Bearer {api_key}"}
    try:
        response = httpx.get(url, verify=verify, timeout=10.0, headers=headers)
        data = response.json().get("data") or []
        return str(data[0]["id"]) if data else None
    except (httpx.HTTPError, ValueError, KeyError, IndexError, AttributeError):
        return None


def _ssl_context(verify: str | bool) -> Any:
    import ssl

    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return ssl.create_default_context() if verify else None


@contextlib.contextmanager
def _network(profile: str, host: str, port: int, scheme: str, verify: str | bool,
             measure: bool, seed: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yields (origin through the emulated network, what the network achieved)."""
    if profile == "none":
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # an IPv6 literal
        yield f"{scheme}://{netloc}", {"profile": "none (direct)"}
        return
    from ..netem import Network, measure_network

    with Network(profile=profile, upstream=(host, port), seed=seed) as net:
        measured: dict[str, Any] = {}
        if measure:
            ssl_ctx = _ssl_context(verify) if scheme == "https" else None
            measured = measure_network(net, ssl_context=ssl_ctx, server_hostname=host
                                       if ssl_ctx is not None else None)
        measured.setdefault("profile", profile)
        yield net.origin(scheme), measured


def _command_line() -> str:
    """The command as results record it: ``--api-key`` values and URL passwords masked."""
    return " ".join(redact_argv(sys.argv))


def _otlp(endpoint: str) -> Any:
    """Send llmclient's spans from this process to ``endpoint`` (OTLP/HTTP); the provider, to
    flush at the end."""
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise SystemExit(f"--otlp-endpoint needs opentelemetry-sdk and "
                         f"opentelemetry-exporter-otlp-proto-http ({exc})") from None
    provider = TracerProvider(resource=Resource.create({"service.name": "llmclient-benchmark"}))
    provider.add_span_processor(BatchSpanProcessor(
        OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")))
    trace.set_tracer_provider(provider)
    return provider


def _run_one(scenario: Any, ctx: Context) -> ScenarioResult:
    missing = ctx.missing(scenario.requires)
    if missing:
        from ._scenario import CAPABILITIES

        reason = "; ".join(f"needs {m} ({CAPABILITIES.get(m, 'capability')})" for m in missing)
        return ScenarioResult.not_available(scenario, reason)
    try:
        return scenario.run(ctx)
    except NotAvailable as exc:
        return ScenarioResult.not_available(scenario, str(exc))


def _one_line(result: ScenarioResult, cost: dict[str, Any]) -> str:
    if result.skipped:
        return f"[{result.name}] not available: {result.skipped}"
    from .stats import summarize

    parts = []
    for name, records in result.variants.items():
        s = summarize(records)
        if not s["n"]:
            continue
        p50 = s["latency_ms"].get("p50")
        parts.append(f"{name} p50 {p50:.0f} ms n={s['n']} fail={s['n_failed']}"
                     if p50 is not None else f"{name} n={s['n']} all failed")
    shown = "; ".join(parts[:4]) + (" ..." if len(parts) > 4 else "")
    return f"[{result.name}] done in {describe_usage(cost)}: {shown}"


def parse_base_urls(value: str | None) -> tuple[str, ...]:
    """``--base-url``: one URL or several, comma-separated (replicas of one model); each
    ``http(s)://host[:port][/path]``, no duplicates. ValueError naming the bad one. Pure."""
    if value is None:
        return ()
    urls = [u.strip().rstrip("/") for u in value.split(",") if u.strip()]
    if not urls:
        raise ValueError("--base-url is empty")
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--base-url: {url!r} is not an http(s) URL")
    seen = [u for i, u in enumerate(urls) if u in urls[:i]]
    if seen:
        raise ValueError(f"--base-url: {seen[0]!r} is listed twice")
    return tuple(urls)


def quick_plan(scenarios: list[Any], wanted: list[str], quick: bool) -> tuple[list[Any], list[Any]]:
    """(scenarios to run, scenarios left out): a quick pass over every scenario leaves out those
    that cannot decide anything in its time (``quick = False``); one named on the command line
    runs whatever it is. Pure."""
    if not quick or wanted:
        return scenarios, []
    return ([s for s in scenarios if getattr(s, "quick", True)],
            [s for s in scenarios if not getattr(s, "quick", True)])


def quick_cost(scenario: Any, api: str) -> float | None:
    """A scenario's measured quick-pass seconds on ``api``: its ``quick_s``, one number, or a
    mapping per API for one whose work differs by API (``{"openai": 26, "anthropic": 14}``). Pure."""
    cost = getattr(scenario, "quick_s", None)
    if isinstance(cost, Mapping):
        return cost.get(api)
    return cost


def for_api(scenarios: list[Any], api: str, named: bool) -> list[Any]:
    """The scenarios that apply to ``api`` (``apis`` on a scenario; default ``("openai",)``).
    ``named``: the user listed them, so one that does not apply is a ValueError saying which
    APIs it has, instead of silently running fewer. Pure."""
    fits = [s for s in scenarios if api in getattr(s, "apis", ("openai",))]
    if named and len(fits) < len(scenarios):
        odd = [s for s in scenarios if s not in fits]
        raise ValueError("not for --api {}: {} (they run with --api {})".format(
            api, ", ".join(s.name for s in odd),
            " / ".join(sorted({a for s in odd for a in getattr(s, "apis", ("openai",))}))))
    if not fits:
        raise ValueError(f"no scenario applies to --api {api}")
    return fits


def _interrupt(signum: int, frame: Any) -> None:
    """SIGTERM unwinds the run as Ctrl-C does: servers stopped, the key folder removed."""
    raise KeyboardInterrupt(f"signal {signum}")


def run_suite(args: argparse.Namespace) -> int:
    from ..scenarios import discover, select

    scenarios, errors = discover()
    for err in errors:
        print(f"warning: scenario module {err.module} not loaded: {err.error}", file=sys.stderr)
    wanted = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    try:
        chosen = select(scenarios, wanted)
        chosen = for_api(chosen, args.api, named=bool(wanted))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for s in for_api(scenarios, args.api, named=False):
            quick = "" if getattr(s, "quick", True) else "  (--full only)"
            print(f"{s.name:<14} requires {','.join(s.requires) or '-':<40} {s.description}{quick}")
        return 0

    try:
        slo = parse_slo(args.slo)
        replica_urls = parse_base_urls(args.base_url)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.full:
        args.quick = False
    chosen, left_out = quick_plan(chosen, wanted, args.quick)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return _run(args, chosen, left_out, slo, replica_urls)
    except KeyboardInterrupt:
        print("\ninterrupted: servers stopped, certificates and keys removed", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace, chosen: list[Any], left_out: list[Any], slo: SLO,
         replica_urls: tuple[str, ...]) -> int:
    from .load import measure_scheduler_overhead
    from .report import build_result, headline, render_table, write_result
    from .sampler import MetricsSampler

    if replica_urls:
        args.base_url = replica_urls[0]
    api_key = args.api_key or default_api_key(args.api)
    reference = args.base_url is None
    server_args: tuple[str, ...] = ()
    if args.otlp_endpoint:
        stack_provider = _otlp(args.otlp_endpoint)
        server_args = ("--otlp-endpoint", args.otlp_endpoint)
    else:
        stack_provider = None
    network = args.network or ("none" if args.base_url else "wan")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out_dir = Path(args.out) / stamp
    logs = out_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    server: ServerProcess | None = None
    tls = reference and not args.no_tls
    costs = [quick_cost(s, args.api) if args.quick else None for s in chosen]
    out = Progress([s.name for s in chosen], costs)
    with contextlib.ExitStack() as stack:
        # Certificates and private keys of the servers this run starts: a folder of their own,
        # removed when the run ends however it ends (Ctrl-C and SIGTERM included), so that the
        # results folder holds nothing secret and nothing is left in /tmp.
        secrets_dir = tempfile.mkdtemp(prefix="llmclient-bench-keys-")
        stack.callback(shutil.rmtree, secrets_dir, ignore_errors=True)
        stack.callback(out.close)
        if reference:
            out.line(f"starting reference server (profile {args.profile}, "
                     f"{'TLS' if tls else 'plain HTTP'}) ...")
            server = start_server(profile=args.profile, tls=tls, log_dir=str(logs),
                                  cert_dir=secrets_dir, extra_args=server_args)
            stack.callback(server.stop)
            verify: str | bool = server.ca_path or True
            direct = server.base_url
            out.line(f"  ready in {server.started_s:.2f}s at {server.origin} "
                     f"(log: {server.log_path}; certificates and keys in {secrets_dir}, "
                     "removed at exit)")
        else:
            verify = True
            direct = args.base_url.rstrip("/")
        parts = urlsplit(direct)
        host, port = parts.hostname or "127.0.0.1", parts.port or (
            443 if parts.scheme == "https" else 80)
        out.line(f"network: {network} (measuring achieved RTT, bandwidth, TLS handshake) ...")
        origin, measured = stack.enter_context(
            _network(network, host, port, parts.scheme, verify, True, args.seed))
        base_url = origin + (parts.path.rstrip("/") or "")
        if reference:
            base_url = origin + "/v1"
        out.line(_describe_network(measured))
        overhead = _harness_overhead(measure_scheduler_overhead)
        out.line(f"harness overhead: open-loop send lag p50 {overhead['lag_p50_ms']:.2f} ms, "
                 f"p99 {overhead['lag_p99_ms']:.2f} ms (n={overhead['n']:.0f}, no-op requests)")

        caps = probe_capabilities(reference, tls, args.capability, args.api)
        model = args.model or _first_model(direct, api_key, verify, args.api) or "default"
        sampler = MetricsSampler(server.origin if server else direct.rsplit("/v1", 1)[0], verify)
        if sampler.available():
            caps.add("metrics")
            sampler.start()
            stack.callback(sampler.stop)

        spawn: Callable[..., ServerProcess] | None = None
        through: Any = None
        if reference:
            def spawn(**kwargs: Any) -> ServerProcess:
                return start_server(tls=tls, log_dir=str(logs), cert_dir=secrets_dir, **kwargs)

            @contextlib.contextmanager
            def through(srv: ServerProcess) -> Iterator[str]:
                scheme = "https" if srv.tls else "http"
                with _network(network, srv.host, srv.port, scheme, verify, False,
                              args.seed) as (o, _m):
                    yield o + "/v1"

        ctx = Context(base_url=base_url, direct_url=direct, network=network, quick=args.quick,
                      api_key=api_key, model=model, budget=24 if args.quick else 200,
                      capabilities=frozenset(caps), verify=verify, seed=args.seed,
                      network_measured=measured, server=server, spawn_server=spawn,
                      progress=out.step, through_network=through,
                      replica_urls=replica_urls if len(replica_urls) > 1 else (), api=args.api)
        stack.callback(ctx.close)
        out.line(f"model {model}; capabilities: {', '.join(sorted(caps))}")
        if left_out:
            out.line("quick pass: leaving out " + ", ".join(s.name for s in left_out)
                     + " (they cannot decide anything in its time; --full runs them)")
        known = [c for c in costs if c is not None]
        if args.quick and known and len(known) == len(costs):
            out.line(f"quick pass: {len(chosen)} scenarios, about {sum(known):.0f} s of them "
                     "by their measured costs")
        results: list[ScenarioResult] = []
        crashed = 0
        scenario_costs: dict[str, dict[str, Any]] = {}
        suite = Usage.start()
        for i, scenario in enumerate(chosen, 1):
            out.begin(f"[{i}/{len(chosen)}] {scenario.name}: "
                      f"{official_named(scenario.description, args.api)}")
            usage = Usage.start()
            ctx.arms.clear()
            try:
                result = _run_one(scenario, ctx)
            except Exception as exc:  # one broken scenario must not lose the others' results
                out.line(traceback.format_exc().rstrip())
                crashed += 1
                result = ScenarioResult.not_available(
                    scenario, redact_text(f"crashed: {type(exc).__name__}: {exc}"))
            result.arms = {**ctx.arms, **result.arms}
            result = result.official_named(args.api)  # the baseline's name on this API
            results.append(result)
            scenario_costs[scenario.name] = usage.summary()
            out.line(_one_line(result, scenario_costs[scenario.name]))
        out.close()
        machine = suite.summary()
        gpu = sampler.stop() if "metrics" in caps else []
        meta = {
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": _command_line(),
            "quick": args.quick,
            "api": args.api,
            "suite_s": machine["wall_s"],
            "machine": {"busy": machine["machine_busy"], "cpu_s": machine["cpu_s"],
                        "others_cores": machine["others_cores"], "cores": machine["cores"]},
            "scenario_costs": scenario_costs,
            "full_only": [{"name": s.name, "description": s.description,
                           "adds": getattr(s, "full_adds", None)} for s in left_out],
            "host": {"python": platform.python_version(), "platform": platform.platform(),
                     "cpus": os.cpu_count()},
            "server": ({"profile": server.profile, "tls": server.tls, "origin": server.origin,
                        "log": _relative(server.log_path, out_dir), "start_s": server.started_s}
                       if server else {"base_url": redact_url(args.base_url),
                                       "replicas": [redact_url(u) for u in replica_urls]}),
            "model": model,
            "network": measured,
            "harness_overhead": overhead,
            "capabilities": sorted(caps),
            "gpu_samples": gpu,
        }
        doc = build_result(results, meta, slo)
        json_path, html_path = write_result(doc, out_dir)
    if stack_provider is not None:
        stack_provider.shutdown()  # flush the run's spans to the collector
    print()
    print(render_table(doc))
    if doc["advice"]:
        print("\nadvice:")
        for line in doc["advice"]:
            print(f"  - {line}")
    print("\nwhat each scenario cost: " + "; ".join(
        f"{name} {describe_usage(c)}" for name, c in scenario_costs.items()))
    # The headline last, where the eye lands when the run ends (the same lines top the report).
    print(f"\nin short ({'quick pass' if args.quick else 'full suite'}, "
          f"{describe_usage(machine)} of scenarios):")
    for line in headline(doc):
        print(f"  - {line}")
    print(f"\nwrote {json_path}, {html_path} and the servers' logs in {logs}/")
    return 1 if crashed else 0


def _relative(path: str | None, root: Path) -> str | None:
    """``path`` relative to the results folder (it travels with the folder), when inside it."""
    if path is None:
        return None
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return path


def _harness_overhead(measure: Any) -> dict[str, float]:
    import asyncio

    return asyncio.run(measure())


def _describe_network(measured: dict[str, Any]) -> str:
    if "rtt_ms" not in measured:
        return f"  network: {measured.get('profile')}"
    with contextlib.suppress(Exception):
        from ..netem import format_measurement

        return "\n".join("  " + line for line in format_measurement(measured).splitlines())
    return f"  network: {measured}"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "compare":
        from .compare import main as compare_main

        cargs = _compare_parser().parse_args(argv[1:])
        return compare_main(cargs.baseline, cargs.current, cargs.max_p99_regression,
                            cargs.min_samples)
    return run_suite(_parser().parse_args(argv))
