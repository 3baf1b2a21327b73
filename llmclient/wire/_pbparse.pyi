# Types of the compiled protobuf parser (llmclient/wire/_pbparse.c); see llmclient/wire/protobuf.py.
from collections.abc import Callable
from typing import Any

def setup(
    bad: type[Exception],
    finish: Callable[..., None],
    body_json: Callable[[bytes], dict[str, Any]],
    body_kinds: dict[int, tuple[str, Any]],
    token_spec: Any,
    kinds: tuple[int, ...],
    specs: list[Any],
) -> None: ...
def parse(spec: Any, data: bytes, start: int, end: int) -> dict[str, Any]: ...
def parse_body(data: bytes) -> tuple[str | None, dict[str, Any] | None, list[str]]: ...
