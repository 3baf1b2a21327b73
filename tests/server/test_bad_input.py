"""Bad input gets an OpenAI-shaped 4xx naming the field; the server never leaks a traceback."""

from __future__ import annotations

import base64
import io

import httpx
import pytest
from PIL import Image

from tests.conftest import start_ref_server, stop_ref_server

MSG = [{"role": "user", "content": "hi"}]


def _chat(server, body, **kw) -> httpx.Response:
    return httpx.post(server.base_url + "/chat/completions", json=body, **kw)


def _png(w: int, h: int) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (200, 30, 60)).save(buf, "PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _assert_error(r: httpx.Response, status: int, param: str | None) -> dict:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["param"] == param
    assert "Traceback" not in r.text
    return err


@pytest.mark.parametrize("body,param", [
    ({"messages": MSG}, "model"),
    ({"model": "gpt-4o-mini", "messages": []}, "messages"),
    ({"model": "gpt-4o-mini", "messages": "hi"}, "messages"),
    ({"model": "gpt-4o-mini", "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
    ({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ({"model": "gpt-4o-mini", "messages": MSG, "max_tokens": "ten"}, "max_tokens"),
    ({"model": "gpt-4o-mini", "messages": MSG, "max_tokens": 10**9}, "max_tokens"),
    ({"model": "gpt-4o-mini", "messages": MSG, "max_completion_tokens": 0}, "max_completion_tokens"),
    ({"model": "gpt-4o-mini", "messages": MSG, "n": 0}, "n"),
    ({"model": "gpt-4o-mini", "messages": MSG, "temperature": "hot"}, "temperature"),
    ({"model": "gpt-4o-mini", "messages": MSG, "seed": 1.5}, "seed"),
    ({"model": "gpt-4o-mini", "messages": MSG, "stop": [1]}, "stop"),
    ({"model": "gpt-4o-mini", "messages": MSG, "stream": "yes"}, "stream"),
    ({"model": "gpt-4o-mini", "messages": MSG, "stream_options": {"include_usage": True}}, "stream_options"),
    ({"model": "gpt-4o-mini", "messages": MSG, "tool_choice": "required"}, "tool_choice"),
])
def test_invalid_chat_fields_are_named(ref_server, body, param):
    _assert_error(_chat(ref_server, body), 400, param)


def test_malformed_json_and_non_object(ref_server):
    for raw in (b"{not json", b"[1, 2]"):
        r = httpx.post(ref_server.base_url + "/chat/completions", content=raw,
                       headers={"content-type": "application/json"})
        _assert_error(r, 400, None)


def test_unsupported_content_type_is_415(ref_server):
    r = httpx.post(ref_server.base_url + "/chat/completions", content=b"x",
                   headers={"content-type": "text/csv"})
    _assert_error(r, 415, None)


def test_unknown_model_and_route_are_404(ref_server):
    err = _assert_error(_chat(ref_server, {"model": "nope", "messages": MSG}), 404, "model")
    assert err["code"] == "model_not_found"
    _assert_error(httpx.get(ref_server.url + "/v1/nothing"), 404, None)
    _assert_error(httpx.get(ref_server.base_url + "/chat/completions"), 405, None)


def test_prompt_beyond_context_window(ref_server):
    huge = "word " * 140_000  # the zero profile's window is 131,072 tokens
    r = _chat(ref_server, {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": huge}]})
    assert _assert_error(r, 400, "messages")["code"] == "context_length_exceeded"


def test_embedding_input_errors(ref_server):
    url = ref_server.base_url + "/embeddings"
    _assert_error(httpx.post(url, json={"model": "text-embedding-3-small", "input": 5}), 400, "input")
    _assert_error(httpx.post(url, json={"model": "text-embedding-3-small", "input": "x",
                                        "encoding_format": "hex"}), 400, "encoding_format")
    _assert_error(httpx.post(url, json={"model": "text-embedding-3-small", "input": "x",
                                        "dimensions": 0}), 400, "dimensions")


def _image_chat(url: str, detail: str = "high") -> dict:
    return {"model": "gpt-4o-mini", "max_tokens": 2, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this"},
        {"type": "image_url", "image_url": {"url": url, "detail": detail}}]}]}


def test_images_add_provider_rule_tokens_to_the_prompt(ref_server):
    text_only = _chat(ref_server, {"model": "gpt-4o-mini", "max_tokens": 2, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "what is this"}]}]}).json()
    high = _chat(ref_server, _image_chat(_png(1024, 1024)))
    low = _chat(ref_server, _image_chat(_png(1024, 1024), "low")).json()
    base = text_only["usage"]["prompt_tokens"]
    assert high.json()["usage"]["prompt_tokens"] - base == 765   # 768x768: 4 tiles
    assert low["usage"]["prompt_tokens"] - base == 85
    assert "image;dur=" in high.headers["server-timing"]


@pytest.mark.parametrize("url,needle", [
    ("data:image/png;base64,iVBORw0KGgoAAAAN", "decoded"),
    ("data:image/png;base64,@@@", "base64"),
    ("https://example.com/cat.png", "not fetched"),
    ("data:text/plain,hello", "base64"),
])
def test_bad_images_name_the_part(ref_server, url, needle):
    err = _assert_error(_chat(ref_server, _image_chat(url)), 400, "messages[0].content[1].image_url")
    assert "messages[0].content[1]" in err["message"] and needle in err["message"]


def test_decompression_bomb_is_refused(ref_server):
    buf = io.BytesIO()
    Image.new("1", (10_000, 10_000)).save(buf, "PNG")  # 100 Mpx in a ~20 kB file
    url = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
    err = _assert_error(_chat(ref_server, _image_chat(url)), 400, "messages[0].content[1].image_url")
    assert "pixels" in err["message"] or "limit" in err["message"]


@pytest.fixture(scope="module")
def keyed_server():
    server = start_ref_server("--api-key", "sekret")
    yield server
    stop_ref_server(server)


def test_api_key_is_enforced(keyed_server):
    body = {"model": "gpt-4o-mini", "messages": MSG, "max_tokens": 2}
    r = _chat(keyed_server, body, headers={"authorization": "Bearer wrong"})
    assert _assert_error(r, 401, None)["code"] == "invalid_api_key"
    assert _chat(keyed_server, body, headers={"authorization": "Bearer sekret"}).status_code == 200
    assert httpx.get(keyed_server.url + "/health").status_code == 200


def test_request_id_echo_and_traceparent_logged(ref_server):
    tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    r = _chat(ref_server, {"model": "gpt-4o-mini", "messages": MSG, "max_tokens": 2},
              headers={"x-request-id": "req-abc-123", "traceparent": tp})
    assert r.headers["x-request-id"] == "req-abc-123"
    assert r.json()["id"] == "chatcmpl-req-abc-123"
    assert httpx.get(ref_server.url + "/health").headers["x-request-id"]
    with pytest.raises(httpx.RemoteProtocolError):
        _chat(ref_server, {"model": "gpt-4o-mini", "messages": MSG, "stream": True},
              headers={"x-request-id": "req-reset-9", "traceparent": tp, "x-fault": "reset"})
    lines = [ln for ln in ref_server.log_path.read_text().splitlines() if "req-reset-9" in ln]
    assert lines and all(f"traceparent={tp}" in ln for ln in lines)


def test_health_and_metrics(ref_server):
    assert httpx.get(ref_server.url + "/health").status_code == 200
    _chat(ref_server, {"model": "nope", "messages": MSG})
    text = httpx.get(ref_server.url + "/metrics").text
    assert 'http_errors_total{status="404"}' in text
    assert "llm_requests_running" in text and "llm_kv_blocks_total" in text


def test_health_is_503_during_cold_start_then_200():
    server = start_ref_server("--cold-start-s", "1.5")
    try:
        assert httpx.get(server.url + "/health").status_code == 503
        r = _chat(server, {"model": "gpt-4o-mini", "messages": MSG})
        assert _assert_error(r, 503, None)["code"] == "model_loading"
        for _ in range(100):
            if httpx.get(server.url + "/health").status_code == 200:
                break
            __import__("time").sleep(0.05)
        assert httpx.get(server.url + "/health").status_code == 200
    finally:
        stop_ref_server(server)
