"""``python -m llmclient doctor URL [URL ...]``: probe an endpoint, say what was found and what
llmclient will do with it; given several (replicas of one model), probe each and say whether
they all serve the same models (:func:`fleet_check`).

Each probe is one :class:`Check` (``ok``, ``warn``, ``fail`` or ``skip`` with the reason); a
probe that cannot run because an earlier one failed is skipped, naming that one. Nothing
raises out of :func:`diagnose`: an unreachable host or a server that is not an LLM API is a
report, and :func:`main` exits 2 (unreachable), 1 (reachable, but not a working
OpenAI-compatible API) or 0.

The probes, in order: DNS, TCP, TLS (version, cipher, ALPN, certificate), HTTP/2 (ALPN, or
h2c with prior knowledge on cleartext), the API (``GET /models``), a tiny chat call (TTFB and
the headers: Server-Timing, rate limits, Date for clock skew, Keep-Alive, what bodies and
codings the server reads), connection reuse on a second call, and a tiny stream (TTFT,
finish_reason, ``[DONE]``). Every request is sent by llmclient itself or by httpx over one
fresh connection; nothing is sent anywhere but the URL given.
"""

from __future__ import annotations

import argparse
import email.utils
import json
import os
import socket
import ssl
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from ._client import OpenAI
from ._hints import auth_hint, status_hint, transport_hint, with_hint
from .features.route.router import model_labels
from .pipeline.timings import parse_server_timing

__all__ = ["Check", "Report", "diagnose", "fleet_check", "main"]

_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # RFC 9113 6.5: length 0, type 4


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail | skip
    summary: str
    ms: float | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    url: str
    checks: list[Check] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    exit_code: int = 0
    # what was found, when the exit code's words would mislead (an API that wants a key is
    # reachable and an API, only not usable without one)
    verdict: str | None = None

    def add(self, check: Check) -> Check:
        self.checks.append(check)
        return check

    def get(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "exit_code": self.exit_code, "verdict": verdict_of(self),
                "checks": [asdict(c) for c in self.checks], "features": self.features}


@dataclass
class _Target:
    scheme: str
    host: str
    port: int
    base_url: str  # with the API path, e.g. http://host:8000/v1


def _target(url: str) -> _Target:
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = parts.path.rstrip("/") or "/v1"
    host = parts.hostname
    netloc = f"[{host}]" if ":" in host else host
    return _Target(parts.scheme, host, port, f"{parts.scheme}://{netloc}:{port}{path}")


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 2)


# -- network probes --------------------------------------------------------------------------


def _dns(report: Report, t: _Target) -> list[Any] | None:
    t0 = time.perf_counter()
    try:
        infos = socket.getaddrinfo(t.host, t.port, type=socket.SOCK_STREAM)
    except OSError as exc:
        report.add(Check("dns", "fail", f"{t.host} did not resolve: {exc}", _ms(t0)))
        return None
    addrs = list(dict.fromkeys(str(info[4][0]) for info in infos))
    report.add(Check("dns", "ok", f"{t.host} -> {', '.join(addrs[:4])}", _ms(t0), {"addresses": addrs}))
    return infos


def _tcp(report: Report, t: _Target, infos: list[Any], timeout: float) -> socket.socket | None:
    errors = []
    for family, kind, proto, _, addr in infos:
        sock = socket.socket(family, kind, proto)
        sock.settimeout(timeout)
        t0 = time.perf_counter()
        try:
            sock.connect(addr)
        except OSError as exc:
            sock.close()
            errors.append(f"{addr[0]}: {exc.strerror or exc}")
            continue
        report.add(Check("tcp", "ok", f"connected to {addr[0]} port {t.port}", _ms(t0),
                         {"address": addr[0]}))
        return sock
    why = "; ".join(errors)
    hint = " (nothing listening on that port?)" if "refused" in why.lower() else ""
    report.add(Check("tcp", "fail", f"could not connect: {why}{hint}"))
    return None


def _tls(report: Report, t: _Target, sock: socket.socket, ca: str | None, insecure: bool) -> str | None:
    """The negotiated ALPN protocol; records the handshake. Closes ``sock``."""
    ctx = ssl.create_default_context(cafile=ca)
    if insecure:
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    t0 = time.perf_counter()
    try:
        with ctx.wrap_socket(sock, server_hostname=t.host) as tls:
            alpn = tls.selected_alpn_protocol()
            version, cipher = tls.version(), (tls.cipher() or ("?",))[0]
            cert = tls.getpeercert() or {}
    except ssl.SSLCertVerificationError as exc:
        report.add(Check("tls", "fail", f"certificate not trusted: {exc.verify_message or exc}; "
                         "llmclient verifies by default (pass --ca FILE, or --insecure to look "
                         "further)", _ms(t0)))
        return None
    except (ssl.SSLError, OSError) as exc:
        report.add(Check("tls", "fail", with_hint(f"TLS handshake failed: {exc}",
                                                  transport_hint(str(exc), t.base_url)), _ms(t0)))
        return None
    expires = cert.get("notAfter")
    summary = f"{version}, {cipher}, ALPN {alpn or 'none'}" + (
        "" if insecure else ", certificate verified") + (f", expires {expires}" if expires else "")
    report.add(Check("tls", "ok" if version in ("TLSv1.2", "TLSv1.3") else "warn", summary, _ms(t0),
                     {"version": version, "cipher": cipher, "alpn": alpn, "not_after": expires,
                      "verified": not insecure}))
    return alpn


def _h2c(sock: socket.socket, timeout: float) -> tuple[bool, str]:
    """HTTP/2 with prior knowledge on a cleartext connection (RFC 9113 3.3). Closes ``sock``."""
    try:
        sock.settimeout(timeout)
        sock.sendall(_H2_PREFACE + _EMPTY_SETTINGS)
        head = b""
        while len(head) < 9:
            piece = sock.recv(9 - len(head))
            if not piece:
                break
            head += piece
    except OSError as exc:
        return False, f"no answer to the HTTP/2 preface ({exc})"
    finally:
        sock.close()
    if len(head) >= 9 and head[3] == 0x4:
        return True, "h2c (HTTP/2 with prior knowledge) answered with SETTINGS"
    if head.startswith(b"HTTP/1"):
        return False, "answered the HTTP/2 preface in HTTP/1.x: HTTP/1.1 only"
    return False, "closed or garbled the connection after the HTTP/2 preface: HTTP/1.1 only"


# -- API probes ------------------------------------------------------------------------------


def _client(t: _Target, api_key: str, ca: str | None, insecure: bool, timeout: float) -> Any:
    verify: bool | str = False if insecure else (ca or True)
    return OpenAI(base_url=t.base_url, api_key=api_key, verify=verify, max_retries=0,
                  timeout=timeout)


def _http(ca: str | None, insecure: bool, timeout: float) -> Any:
    verify: Any = False if insecure else (ssl.create_default_context(cafile=ca) if ca else True)
    return httpx.Client(verify=verify, timeout=timeout)


def _models(report: Report, t: _Target, http: Any, api_key: str, model: str | None,
            key_given: bool = True) -> str | None:
    """``GET /models`` read raw (httpx): status, content type, the model list. A 401/403 is an
    API that wants a key (or refused the one given), said as such."""
    t0 = time.perf_counter()
    try:
        resp = http.get(t.base_url + "/models", headers={"authorization": f"Bearer {api_key}"})
    except Exception as exc:
        report.add(Check("api", "fail", f"GET /models failed: {type(exc).__name__}: {exc}", _ms(t0)))
        return None
    ms = _ms(t0)
    ctype = resp.headers.get("content-type", "")
    if resp.status_code != 200:
        wants_key = auth_hint(resp.status_code, key_given)
        why = wants_key or with_hint("not an OpenAI-compatible API at this base URL",
                                     status_hint(resp.status_code, "GET", t.base_url + "/models"))
        report.add(Check("api", "fail", f"GET /models answered {resp.status_code} ({ctype or 'no type'}): "
                         + why, ms, {"status": resp.status_code, "wants_key": wants_key is not None}))
        if wants_key is not None:
            report.verdict = (f"reachable: an API that wants a key ({resp.status_code} to GET /models"
                              + ("; none was given): pass --api-key KEY or set OPENAI_API_KEY"
                                 if not key_given else "): the key given was refused"))
        return None
    try:
        data = resp.json()["data"]
        ids = [str(m["id"]) for m in data]
        labels = model_labels(data) or ids  # with the weights behind a served name (vLLM's root)
    except Exception:  # a 200 that is not a model list (an HTML page, another API)
        report.add(Check("api", "fail", f"GET /models answered 200 ({ctype or 'no type'}) but not a "
                         "model list: not an OpenAI-compatible API at this base URL", ms))
        return None
    chosen = model or (ids[0] if ids else None)
    report.add(Check("api", "ok" if chosen else "warn",
                     f"{len(ids)} models ({', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''})"
                     + (f"; probing with {chosen}" if chosen else "; none to probe with (--model)"),
                     ms, {"models": ids[:50], "labels": labels[:50], "model": chosen}))
    return chosen


def _chat(report: Report, client: Any, model: str) -> Any:
    """A one-token chat call through llmclient: TTFB, HTTP version, and the raw response."""
    t0 = time.perf_counter()
    try:
        raw = client.chat.completions.with_raw_response.create(
            model=model, messages=[{"role": "user", "content": "Say OK."}], max_tokens=1,
            temperature=0)
        parsed = raw.parse()
    except Exception as exc:
        report.add(Check("chat", "fail", f"a one-token chat call failed: {type(exc).__name__}: "
                         f"{str(exc)[:200]}", _ms(t0)))
        return None
    timings = parsed.timings
    report.add(Check("chat", "ok", f"one-token answer over {timings.http_version}; TTFB "
                     f"{timings.first_byte_ms:.1f} ms, total {timings.total_ms:.1f} ms",
                     timings.total_ms, {"ttfb_ms": timings.first_byte_ms,
                                        "http_version": timings.http_version,
                                        "finish_reason": parsed.choices[0].finish_reason
                                        if parsed.choices else None}))
    return raw


def _headers(report: Report, headers: Any) -> dict[str, Any]:
    """What the response headers say: Server-Timing, rate limits, clock, keep-alive, codecs."""
    from .wire.protobuf import server_accepts_protobuf  # loads google.protobuf: only when asked

    found: dict[str, Any] = {}
    st = headers.get("server-timing")
    if st:
        parsed = parse_server_timing(st)
        report.add(Check("server-timing", "ok", ", ".join(f"{k} {v:.1f} ms" for k, v in parsed.items()),
                         data={"server_timing": parsed}))
    else:
        report.add(Check("server-timing", "warn", "no Server-Timing header: r.timings cannot split "
                         "server time (queue, inference) from the network"))
    limits = {k: v for k, v in headers.items() if k.lower().startswith(("x-ratelimit", "ratelimit", "retry-after"))}
    report.add(Check("rate-limits", "ok" if limits else "skip",
                     ", ".join(f"{k}: {v}" for k, v in limits.items()) if limits
                     else "no rate-limit headers (x-ratelimit-*)", data={"headers": limits}))
    date = headers.get("date")
    if date:
        try:
            skew = email.utils.parsedate_to_datetime(date).timestamp() - time.time()
        except (TypeError, ValueError):
            skew = None
        if skew is not None:
            # Date has 1 s resolution and servers cache it for up to a second: within 3 s is
            # as close as this header can tell.
            status = "ok" if abs(skew) < 3 else "warn"
            report.add(Check("clock", status, f"server clock {skew:+.1f} s from ours (Date header, 1 s "
                             "resolution)" + ("" if status == "ok" else ": client and server span "
                                              "timestamps will not line up"), data={"skew_s": round(skew, 1)}))
    else:
        report.add(Check("clock", "skip", "no Date header: clock skew unknown"))
    keep = headers.get("keep-alive")
    conn = headers.get("connection", "")
    if keep or conn:
        found["keep_alive"] = keep
        report.add(Check("keep-alive", "warn" if "close" in conn.lower() else "ok",
                         f"Connection: {conn or '-'}, Keep-Alive: {keep or '-'}",
                         data={"connection": conn, "keep_alive": keep}))
    lowered = {k.lower(): v for k, v in headers.items()}
    found["protobuf"] = server_accepts_protobuf(lowered)
    report.add(Check("protobuf", "ok" if found["protobuf"] else "skip",
                     "advertises protobuf bodies (x-llm-wire / Accept-Post): wire='auto' will use them"
                     if found["protobuf"] else "JSON only (no x-llm-wire or Accept-Post for protobuf)"))
    codings = [c.strip() for c in (lowered.get("accept-encoding") or "").split(",") if c.strip()]
    found["codings"] = codings
    report.add(Check("compression", "ok" if codings else "skip",
                     f"reads request bodies in {', '.join(codings)} (Accept-Encoding in its responses)"
                     if codings else "no Accept-Encoding in responses: request bodies go uncompressed",
                     data={"request_codings": codings,
                           "response_coding": lowered.get("content-encoding")}))
    return found


def _reuse(report: Report, client: Any, model: str) -> bool | None:
    t0 = time.perf_counter()
    try:
        r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Say OK."}],
                                           max_tokens=1, temperature=0)
    except Exception as exc:
        report.add(Check("connection-reuse", "warn", f"second call failed: {type(exc).__name__}: {exc}",
                         _ms(t0)))
        return None
    reused = bool(r.timings.connection_reused)
    report.add(Check("connection-reuse", "ok" if reused else "warn",
                     f"second call {'reused the connection' if reused else 'opened a new connection'}; "
                     f"TTFB {r.timings.first_byte_ms:.1f} ms", _ms(t0),
                     {"reused": reused, "ttfb_ms": r.timings.first_byte_ms}))
    return reused


def _stream(report: Report, t: _Target, http: Any, api_key: str, model: str) -> bool:
    """A tiny stream read raw (httpx): TTFT, finish_reason, [DONE]."""
    body = {"model": model, "messages": [{"role": "user", "content": "Count to three."}],
            "max_tokens": 8, "stream": True}
    ttft = None
    finish = None
    done = False
    chunks = 0
    t0 = time.perf_counter()
    try:
        with http.stream(
                "POST", t.base_url + "/chat/completions", json=body,
                headers={"authorization": f"Bearer {api_key}", "accept": "text/event-stream"}) as resp:
            if resp.status_code != 200:
                resp.read()
                report.add(Check("stream", "fail", f"a streamed call answered {resp.status_code}", _ms(t0)))
                return False
            for line in resp.iter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    done = True
                    continue
                chunks += 1
                obj = json.loads(data)
                for choice in obj.get("choices") or ():
                    delta = choice.get("delta") or {}
                    if ttft is None and (delta.get("content") or choice.get("text")):
                        ttft = _ms(t0)
                    finish = choice.get("finish_reason") or finish
    except Exception as exc:
        report.add(Check("stream", "fail", f"the stream broke: {type(exc).__name__}: {exc}", _ms(t0)))
        return False
    ok = finish is not None and done
    summary = (f"{chunks} chunks, TTFT {ttft if ttft is not None else '-'} ms, finish_reason "
               f"{finish or 'MISSING'}, [DONE] {'seen' if done else 'MISSING'}")
    if not ok:
        summary += ": llmclient raises IncompleteStreamError on streams without a finish_reason" \
            if finish is None else ": accepted (every choice finished), though [DONE] is missing"
    report.add(Check("stream", "ok" if ok else ("warn" if finish else "fail"), summary, _ms(t0),
                     {"ttft_ms": ttft, "finish_reason": finish, "done": done, "chunks": chunks}))
    return finish is not None


# -- what llmclient will do ------------------------------------------------------------------


def _features(report: Report, t: _Target, h2: bool | None, found: dict[str, Any]) -> list[str]:
    out = []
    if h2:
        out.append("one warm multiplexed HTTP/2 connection for every call to this origin "
                   f"({'ALPN h2' if t.scheme == 'https' else 'h2c, prior knowledge'}); pinged "
                   "before reuse after 30 s idle")
        out.append("hedge=True can apply: a losing copy is cancelled with RST_STREAM")
    elif h2 is False:
        out.append("HTTP/1.1 keep-alive pool (remembered per origin after one probe); no "
                   "multiplexing")
        out.append("hedge=True will not send copies here: an HTTP/1.1 request cannot be cancelled")
    if found.get("protobuf"):
        out.append("wire='auto' switches to protobuf bodies (+ zstd) after the first answer")
    else:
        out.append("JSON bodies (orjson); wire='auto' stays JSON")
    codings = found.get("codings") or []
    if codings:
        out.append(f"request bodies >= 1 KiB compressed ({'zstd' if 'zstd' in codings else codings[0]})")
    out.append("cache= and prefetch= work on any server (client side); a prefetch costs tokens")
    if report.get("server-timing") and report.get("server-timing").status == "ok":  # type: ignore[union-attr]
        out.append("r.timings.server_timing splits server time from network time")
    return out


def diagnose(url: str, *, api_key: str | None = None, model: str | None = None,
             ca: str | None = None, insecure: bool = False, timeout: float = 10.0) -> Report:
    """Probe ``url``; never raises for what the endpoint does (only for a malformed URL)."""
    t = _target(url)
    report = Report(t.base_url)
    given = api_key or os.environ.get("OPENAI_API_KEY")
    key = given or "doctor"
    infos = _dns(report, t)
    sock = _tcp(report, t, infos, timeout) if infos else None
    if sock is None:
        for name in (["tcp"] if infos is None else []) + ["tls", "http2", "api", "chat", "stream"]:
            if name == "tls" and t.scheme != "https":
                continue
            report.add(Check(name, "skip", f"skipped: {'DNS' if infos is None else 'TCP'} failed"))
        report.exit_code = 2
        return report
    h2: bool | None
    if t.scheme == "https":
        alpn = _tls(report, t, sock, ca, insecure)
        if report.checks[-1].status == "fail":
            for name in ("http2", "api", "chat", "stream"):
                report.add(Check(name, "skip", "skipped: TLS failed"))
            report.exit_code = 2
            return report
        h2 = alpn == "h2"
        report.add(Check("http2", "ok" if h2 else "warn",
                         "HTTP/2 by ALPN" if h2 else f"ALPN chose {alpn or 'nothing'}: HTTP/1.1 only"))
    else:
        h2, why = _h2c(sock, min(timeout, 3.0))
        report.add(Check("http2", "ok" if h2 else "warn", why))
    with _http(ca, insecure, timeout) as http:
        return _api(report, t, http, key, model, h2, ca, insecure, timeout, key_given=bool(given))


def _api(report: Report, t: _Target, http: Any, key: str, model: str | None, h2: bool | None,
         ca: str | None, insecure: bool, timeout: float, key_given: bool = True) -> Report:
    chosen = _models(report, t, http, key, model, key_given)
    found: dict[str, Any] = {}
    if chosen is None:
        why = "no usable key" if report.verdict else "no OpenAI-compatible API found"
        for name in ("chat", "stream"):
            report.add(Check(name, "skip", f"skipped: {why}"))
        report.exit_code = 1
        return report
    client = _client(t, key, ca, insecure, timeout)
    raw = _chat(report, client, chosen)
    if raw is not None:
        found = _headers(report, raw.headers)
        _reuse(report, client, chosen)
    streamed = _stream(report, t, http, key, chosen)
    report.features = _features(report, t, h2, found)
    report.exit_code = 0 if raw is not None and streamed else 1
    return report


def fleet_check(reports: list[Report]) -> Check:
    """Several URLs given as replicas of one model (``base_url=[...]``): do they all answer and
    serve the same models? Pure: reads each report's ``api`` check."""
    served: dict[str, tuple[str, ...]] = {}
    down = []
    for report in reports:
        api = report.get("api")
        if api is None or api.status == "fail" or "models" not in api.data:
            down.append(report.url)
        else:
            served[report.url] = tuple(sorted(api.data.get("labels", api.data["models"])))
    if len(set(served.values())) > 1:
        listing = "; ".join(f"{url}: {', '.join(ids) or 'none'}" for url, ids in served.items())
        return Check("replicas", "fail", f"the replicas serve different models ({listing})",
                     data={"models": {u: list(i) for u, i in served.items()}, "down": down})
    if down:
        return Check("replicas", "fail" if not served else "warn",
                     f"{len(down)} of {len(reports)} replicas have no working API: {', '.join(down)}",
                     data={"down": down})
    models = next(iter(served.values()), ())
    return Check("replicas", "ok", f"{len(reports)} replicas, all serving the same models "
                 f"({', '.join(models[:5])}{', ...' if len(models) > 5 else ''}): "
                 "base_url=[...] can route between them", data={"models": list(models)})


# -- the command -----------------------------------------------------------------------------

_MARK = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "--  "}


def render(report: Report) -> str:
    lines = [f"llmclient doctor {report.url}", ""]
    for c in report.checks:
        ms = f" ({c.ms:.1f} ms)" if c.ms is not None and c.name in ("dns", "tcp", "tls", "api") else ""
        lines.append(f"  [{_MARK.get(c.status, c.status)}] {c.name:<17}{c.summary}{ms}")
    if report.features:
        lines += ["", "What llmclient will do here:"]
        lines += [f"  - {f}" for f in report.features]
    lines += ["", f"Verdict: {verdict_of(report)} (exit {report.exit_code})"]
    return "\n".join(lines)


def verdict_of(report: Report) -> str:
    """The verdict in words: what was found when a probe said more than the exit code does."""
    if report.verdict:
        return report.verdict
    return {0: "usable", 1: "reachable, but not a working OpenAI-compatible API",
            2: "unreachable"}[report.exit_code]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m llmclient doctor",
                                description="Probe an OpenAI-compatible endpoint and say what "
                                            "llmclient will do with it.")
    p.add_argument("url", nargs="+", help="base URL, e.g. https://host:8000/v1 (a bare host:port means "
                                          "http, /v1); several: replicas of one model, each probed, then "
                                          "whether they serve the same models")
    p.add_argument("--api-key", help="default: $OPENAI_API_KEY")
    p.add_argument("--model", help="model for the tiny calls (default: the first /models lists)")
    p.add_argument("--ca", help="CA bundle to trust (PEM)")
    p.add_argument("--insecure", action="store_true", help="do not verify the TLS certificate")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per probe (default 10)")
    p.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = p.parse_args(argv)
    try:
        reports = [diagnose(url, api_key=args.api_key, model=args.model, ca=args.ca,
                            insecure=args.insecure, timeout=args.timeout) for url in args.url]
    except ValueError as exc:
        print(f"llmclient doctor: {exc}", file=sys.stderr)
        return 2
    if len(reports) == 1:
        print(json.dumps(reports[0].to_dict(), indent=2) if args.json else render(reports[0]))
        return reports[0].exit_code
    fleet = fleet_check(reports)
    if args.json:
        print(json.dumps({"replicas": [r.to_dict() for r in reports], "fleet": asdict(fleet)}, indent=2))
    else:
        print("\n\n".join(render(r) for r in reports))
        print(f"\nFleet: [{_MARK.get(fleet.status, fleet.status)}] {fleet.summary}")
    worst = max(r.exit_code for r in reports)
    return max(worst, 1) if fleet.status == "fail" else worst
