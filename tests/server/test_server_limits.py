"""What one client may cost the reference server, against the real server process.

Each test once failed: 100,000 one-word embedding inputs held the event loop for over a minute
(/health timed out), a body that stopped arriving kept its connection for over 70 s, SIGTERM
waited for every stream in flight, and any client could inject faults with ``x-fault``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import math
import signal
import socket
import threading
import time
from array import array
from collections.abc import Iterator

import h2.config
import h2.connection
import h2.events
import httpx
import orjson
import pytest
from PIL import Image

from benchmarks.server.embeddings import embed
from benchmarks.server.tokenizer import encode, encode_capped
from tests.conftest import ROOT, RefServer, start_ref_server, stop_ref_server

EMBED = "text-embedding-3-small"
CHAT = {"model": "gpt-4o-mini", "max_tokens": 2}
BODY_TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def limited() -> Iterator[RefServer]:
    """No fault headers (the default); small limits so each is reached with a small request."""
    server = start_ref_server("--max-request-tokens", "1000", "--max-embedding-inputs", "4",
                              "--body-timeout-s", str(BODY_TIMEOUT_S))
    yield server
    stop_ref_server(server)


def _error(r: httpx.Response, status: int, param: str | None, code: str) -> str:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert (err["param"], err["code"]) == (param, code)
    assert set(err) == {"message", "type", "param", "code"}
    return str(err["message"])


# -- embeddings ---------------------------------------------------------------------------

def test_packed_embedding_sum_equals_the_per_token_sum():
    def reference(ids: list[int], dims: int) -> array[float]:
        vec = [0] * dims
        for tid in ids:
            noise = array("b", hashlib.shake_256(tid.to_bytes(8, "little")).digest(dims))
            vec = [v + x for v, x in zip(vec, noise, strict=True)]
        norm = math.hypot(*vec) or 1.0
        return array("f", [v / norm for v in vec])

    for text in ("", "hello", "the cat sat on the mat, the cat", "x " * 300):
        for dims in (1, 8, 1536):
            assert embed(encode(text), dims) == reference(encode(text), dims)


def test_capped_encoding_stops_one_past_the_cap():
    assert encode_capped("a b c d", 2) == encode("a b c")
    assert encode_capped("a b", 5) == encode("a b")
    assert len(encode_capped("word " * 1_000_000, 1000)) == 1001


def test_100k_embedding_inputs_are_refused_at_once_naming_openais_2048(ref_server):
    body = {"model": EMBED, "input": [f"w{i}" for i in range(100_000)]}  # about 0.9 MB
    t0 = time.perf_counter()
    r = httpx.post(ref_server.base_url + "/embeddings", json=body, timeout=120)
    assert "2048" in _error(r, 400, "input", "too_many_inputs")
    # Before the limit, these inputs held the event loop for over a minute; a refusal that
    # read the body and counted its items takes well under a second even on a busy machine.
    assert time.perf_counter() - t0 < 30


def test_2048_embedding_inputs_are_served(ref_server):
    body = {"model": EMBED, "input": [f"w{i}" for i in range(2048)], "dimensions": 8}
    r = httpx.post(ref_server.base_url + "/embeddings", json=body, timeout=30)
    assert r.status_code == 200
    assert len(r.json()["data"]) == 2048


def test_embedding_tokens_are_bounded_per_input_and_per_request(ref_server):
    url = ref_server.base_url + "/embeddings"
    long_input = {"model": EMBED, "input": ["a " * 8193], "dimensions": 8}
    message = _error(httpx.post(url, json=long_input, timeout=30), 400, "input",
                     "context_length_exceeded")
    assert "input[0]" in message and "8192" in message
    # 38 inputs of 8,000 tokens: each under 8,192, together over 300,000.
    many = {"model": EMBED, "input": ["a " * 8000] * 38, "dimensions": 8}
    assert "300000" in _error(httpx.post(url, json=many, timeout=30), 400, "input",
                              "too_many_tokens")


def test_embedding_limits_follow_the_command_line(limited):
    url = limited.base_url + "/embeddings"
    assert httpx.post(url, json={"model": EMBED, "input": ["a"] * 4}).status_code == 200
    assert "4 inputs" in _error(httpx.post(url, json={"model": EMBED, "input": ["a"] * 5}), 400,
                                "input", "too_many_inputs")
    over = {"model": EMBED, "input": ["a " * 600, "b " * 600], "dimensions": 8}
    assert "1000" in _error(httpx.post(url, json=over), 400, "input", "too_many_tokens")


def test_health_answers_while_a_heavy_embeddings_request_runs(ref_server):
    # The largest request the limits allow: 2048 inputs, about 290,000 tokens in all.
    text = " ".join(f"word{i}" for i in range(140))
    body = {"model": EMBED, "input": [f"{i} {text}" for i in range(2048)]}
    result: dict[str, object] = {}

    def heavy() -> None:
        t0 = time.perf_counter()
        r = httpx.post(ref_server.base_url + "/embeddings", json=body, timeout=120)
        result["status"] = r.status_code
        result["seconds"] = time.perf_counter() - t0

    worker = threading.Thread(target=heavy)
    with httpx.Client(timeout=5) as health:
        health.get(ref_server.url + "/health")  # connected before the heavy request starts
        worker.start()
        waits = []
        while worker.is_alive() and len(waits) < 20:
            t0 = time.perf_counter()
            assert health.get(ref_server.url + "/health").status_code == 200
            waits.append(time.perf_counter() - t0)
            time.sleep(0.05)
    worker.join(120)
    assert result["status"] == 200
    assert len(waits) >= 3, "the heavy request finished too soon to probe /health during it"
    # A blocked event loop would hold a probe for most of the heavy request; a busy machine
    # slows both alike, so the bound scales with the heavy request (at least 1 s).
    heavy_s = float(result["seconds"])  # type: ignore[arg-type]
    assert max(waits) < max(1.0, heavy_s / 4), (waits, heavy_s)


# -- chat and completions -----------------------------------------------------------------

def test_prompt_tokens_are_bounded_per_request(limited):
    chat = {**CHAT, "messages": [{"role": "user", "content": "word " * 1200}]}
    message = _error(httpx.post(limited.base_url + "/chat/completions", json=chat), 400,
                     "messages", "too_many_tokens")
    assert "1000" in message
    # Each prompt fits; together they do not.
    prompts = {**CHAT, "prompt": ["word " * 400] * 3}
    _error(httpx.post(limited.base_url + "/completions", json=prompts), 400, "prompt",
           "too_many_tokens")
    ids = {**CHAT, "prompt": [[7] * 600, [8] * 600]}
    _error(httpx.post(limited.base_url + "/completions", json=ids), 400, "prompt",
           "too_many_tokens")
    ok = {**CHAT, "prompt": ["word " * 400] * 2}
    assert httpx.post(limited.base_url + "/completions", json=ok).status_code == 200


def test_completion_sequences_are_bounded(ref_server):
    body = {**CHAT, "prompt": ["hi"] * 17, "n": 128}  # 2,176 sequences
    message = _error(httpx.post(ref_server.base_url + "/completions", json=body), 400,
                     "prompt", "too_many_sequences")
    assert "2048" in message


def test_more_than_500_images_are_refused(ref_server):
    buf = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buf, "PNG")
    url = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
    parts = [{"type": "image_url", "image_url": {"url": url, "detail": "low"}}] * 501
    body = {**CHAT, "messages": [{"role": "user", "content": parts}]}
    message = _error(httpx.post(ref_server.base_url + "/chat/completions", json=body, timeout=30),
                     400, "messages", "too_many_images")
    assert "500" in message


# -- a body that stops arriving -----------------------------------------------------------

def test_a_body_that_stops_arriving_is_answered_408_and_the_connection_closed(limited):
    with socket.create_connection(("127.0.0.1", limited.port), timeout=10) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
                  b"content-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"model\"")
        t0 = time.perf_counter()
        data = b""
        while chunk := s.recv(65536):  # until the server closes the connection
            data += chunk
        waited = time.perf_counter() - t0
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), data[:200]
    assert orjson.loads(body)["error"]["code"] == "body_timeout"
    # Never before the timeout; a server that never answered would leave recv() to the
    # socket's 10 s timeout (socket.timeout), so no upper bound on the clock is needed.
    assert waited > BODY_TIMEOUT_S * 0.9


def test_a_stalled_http2_body_is_answered_408_on_its_stream(limited):
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    with socket.create_connection(("127.0.0.1", limited.port), timeout=10) as s:
        conn.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":authority", "x"),
                              (":path", "/v1/chat/completions"), ("content-length", "1000"),
                              ("content-type", "application/json")])
        conn.send_data(1, b"{\"model\"")
        s.sendall(conn.data_to_send())
        t0 = time.perf_counter()
        status = None
        while status is None:
            data = s.recv(65536)
            assert data, "the server closed the connection without answering"
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    status = dict(event.headers)[b":status"]
            s.sendall(conn.data_to_send())
    assert status == b"408"  # (a server that never answered: recv()'s 10 s socket timeout)
    assert time.perf_counter() - t0 > BODY_TIMEOUT_S * 0.9


# -- fault headers ------------------------------------------------------------------------

def test_fault_headers_are_ignored_unless_the_server_allows_them(limited, ref_server):
    chat = {**CHAT, "messages": [{"role": "user", "content": "hi"}]}
    for fault in ("status=503", "reset", "status=999"):
        r = httpx.post(limited.base_url + "/chat/completions", json=chat,
                       headers={"x-fault": fault})
        assert r.status_code == 200, (fault, r.text)
    # The test fixture's server is started with --allow-fault-headers.
    r = httpx.post(ref_server.base_url + "/chat/completions", json=chat,
                   headers={"x-fault": "status=503"})
    assert r.status_code == 503


# -- shutdown -----------------------------------------------------------------------------

def _stream(server: RefServer, max_tokens: int, first: threading.Event,
            done: dict[int, bytes], key: int) -> None:
    body = {"model": "gpt-4o-mini", "max_tokens": max_tokens, "stream": True,
            "messages": [{"role": "user", "content": "tell me a long story"}]}
    received = b""
    try:
        with httpx.stream("POST", server.base_url + "/chat/completions", json=body,
                          timeout=60) as r:
            for chunk in r.iter_bytes():
                received += chunk
                first.set()
    except httpx.HTTPError:
        pass
    done[key] = received


def test_sigterm_under_load_drains_briefly_then_exits(tmp_path):
    # h100-8b (about 12 ms per token) whose answers never end before max_tokens.
    profile = orjson.loads((ROOT / "benchmarks/server/profiles/h100-8b.json").read_bytes())
    path = tmp_path / "endless.json"
    path.write_bytes(orjson.dumps({**profile, "output_len_median": 10**6, "output_len_sigma": 0.01}))
    grace = 1.5
    server = start_ref_server("--shutdown-grace-s", str(grace), profile=str(path))
    assert server.process is not None
    try:
        done: dict[int, bytes] = {}
        started = [threading.Event() for _ in range(9)]
        # Eight streams of 3,000 tokens (about 36 s each) and one of 30 (well under the grace).
        threads = [threading.Thread(target=_stream, args=(server, 3000, started[i], done, i),
                                    daemon=True) for i in range(8)]
        threads.append(threading.Thread(target=_stream, args=(server, 30, started[8], done, 8),
                                        daemon=True))
        for t in threads:
            t.start()
        assert all(e.wait(20) for e in started)
        t0 = time.perf_counter()
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=25)
        exited = time.perf_counter() - t0
        for t in threads:
            t.join(10)
    finally:
        if server.process.poll() is None:
            server.process.kill()
        stop_ref_server(server)
    # The grace and a prompt exit, against streams with 36 s to go: halfway bounds a busy
    # machine keeps.
    assert exited < 15, exited
    assert done[8].endswith(b"data: [DONE]\n\n")  # the short one finished during the drain
    assert not any(done[i].endswith(b"data: [DONE]\n\n") for i in range(8))


def test_sigterm_during_heavy_embeddings_exits_promptly():
    # Twelve requests of heavy embedding work (seconds each on a small machine), queued behind
    # one another: a server whose stop waited for them would answer all twelve. The grace (1 s)
    # ends it while most are still waiting, on any machine.
    server = start_ref_server("--shutdown-grace-s", "1")
    assert server.process is not None
    text = " ".join(f"word{i}" for i in range(140))
    body = {"model": EMBED, "input": [f"{i} {text}" for i in range(2048)],
            "dimensions": 3072}
    answers: list[int] = []
    sent = 12
    try:
        def post() -> None:
            with contextlib.suppress(httpx.HTTPError):  # the server goes away mid-request
                answers.append(httpx.post(server.base_url + "/embeddings", json=body,
                                          timeout=120).status_code)

        posts = [threading.Thread(target=post, daemon=True) for _ in range(sent)]
        for t in posts:
            t.start()
        time.sleep(0.5)  # the bodies sent, the first computing
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=120)  # a liveness bound, not a speed claim
        for t in posts:
            t.join(10)
    finally:
        if server.process.poll() is None:
            server.process.kill()
        stop_ref_server(server)
    assert answers.count(200) < sent, answers
