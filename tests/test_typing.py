"""A type checker sees llmclient's keywords as the official client's are seen: the constructors
(``ClientOptions``, PEP 692) and ``create()`` (the official signatures, written by
scripts/signatures.py, plus llmclient's per-call options) are typed, so a misspelt keyword or a
wrong value type is an error in the user's editor, not a surprise at run time."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

from llmclient._client_options import ClientOptions
from llmclient._config import OPTION_NAMES
from llmclient._keywords import OFFICIAL_ONLY_SETTINGS
from llmclient.layers.options import CallOptions

ROOT = Path(__file__).resolve().parents[1]

SNIPPET = '''\
import llmclient

llmclient.OpenAI(api_kye="sk")                                   # line 3: misspelt
llmclient.OpenAI(max_retries="three")                            # line 4: wrong type
llmclient.OpenAI(api_key="sk", wire="protbuf")                   # line 5: not a wire
ok = llmclient.OpenAI(api_key="sk", hedge=True, cache="sqlite:///c.db", stream_idle_timeout=None)
MSG = [{"role": "user", "content": "hi"}]
ok.chat.completions.create(model="m", messages=MSG, temprature=0.2)   # line 8: misspelt
ok.chat.completions.create(model="m", messages=MSG, wire="protbuf")   # line 9: not a wire
answer = ok.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=4,
                                    cache=True, hedge=False, timeout=3.0)
reveal_type(answer)                                              # line 12
stream = ok.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
reveal_type(stream)                                              # line 14
reveal_type(ok.with_options(timeout=5, hedge=True))              # line 15
'''


def _mypy(source: str, tmp: Path) -> list[str]:
    mypy_api = pytest.importorskip("mypy.api", reason="the test extra installs mypy")
    path = tmp / "snippet.py"
    path.write_text(source)
    # The repository's cache: make typecheck (before make test in CI) has filled most of it.
    out, _, _ = mypy_api.run(["--no-error-summary", "--hide-error-context", "--follow-imports", "silent",
                              "--cache-dir", str(ROOT / ".mypy_cache"), str(path)])
    # (a cached result may name the snippet's path in an earlier run: its name is what counts)
    return [line.split("snippet.py:", 1)[1] for line in out.splitlines() if "snippet.py:" in line]


def test_a_type_checker_rejects_misspelt_and_mistyped_keywords(tmp_path: Path) -> None:
    lines = _mypy(SNIPPET, tmp_path)
    errors = {int(line.split(":")[0]) for line in lines if ": error:" in line}
    assert errors == {3, 4, 5, 8, 9}, "\n".join(lines)
    said = "\n".join(lines)
    assert 'did you mean "api_key"' in said and 'did you mean "temperature"' in said
    revealed = {int(line.split(":")[0]): line for line in lines if "Revealed type" in line}
    assert "TracedChatCompletion" in revealed[12]
    assert "Stream[openai.types.chat.chat_completion_chunk.ChatCompletionChunk]" in revealed[14]
    assert "llmclient._client.OpenAI" in revealed[15]


def test_the_typed_keywords_are_the_configs_own() -> None:
    typed = set(ClientOptions.__annotations__)  # the keys (their types are strings: TYPE_CHECKING names)
    assert typed == set(OPTION_NAMES) | set(OFFICIAL_ONLY_SETTINGS) | {"api_key", "organization", "project",
                                                                        "base_url", "timeout", "max_retries",
                                                                        "default_headers", "default_query",
                                                                        "http_client"}
    assert set(OPTION_NAMES) <= typed


def test_the_create_signatures_list_every_call_option() -> None:
    spec = importlib.util.spec_from_file_location("signatures", ROOT / "scripts" / "signatures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["signatures"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    listed = {option.split(":", 1)[0] for option in module.OWN_OPTIONS}
    assert listed == {f.name for f in dataclasses.fields(CallOptions)}
