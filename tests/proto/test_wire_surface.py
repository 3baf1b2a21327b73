"""``llmclient.wire``, the public surface of the codecs: every name it exports, the protobuf ones
loaded on first access only, and the schema the generated module was compiled from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import llmclient.wire
from llmclient.wire import codec, compression, protobuf
from llmclient.wire.proto import PROTO_PATH


def test_every_exported_name_is_there_and_is_its_owners_object() -> None:
    namespace: dict[str, object] = {}
    exec("from llmclient.wire import *", namespace)
    assert sorted(n for n in namespace if n != "__builtins__") == sorted(llmclient.wire.__all__)
    listed = dir(llmclient.wire)
    for name in llmclient.wire.__all__:
        assert name in listed, name
        owner = next((m for m in (codec, compression, protobuf) if hasattr(m, name)), None)
        if owner is not None:
            assert getattr(llmclient.wire, name) is getattr(owner, name), name


def test_the_protobuf_names_load_on_first_access() -> None:
    code = """
import sys
import llmclient.wire
assert 'llmclient.wire.protobuf' not in sys.modules, 'imported eagerly'
codec = llmclient.wire.PROTOBUF_CODEC
from llmclient.wire.protobuf import PROTOBUF_CODEC, encode_response
assert codec is PROTOBUF_CODEC
assert llmclient.wire.encode_response is encode_response
print('google.protobuf' in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    # The codec module is loaded; the protobuf runtime waits for the first encode or decode.
    assert out.stdout.strip() == "False"


def test_an_unknown_name_raises_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match=r"'llmclient\.wire' has no attribute 'PROTOBUF_CODECS'"):
        _ = llmclient.wire.PROTOBUF_CODECS  # type: ignore[attr-defined]
    assert not hasattr(llmclient.wire, "decode_response")
    with pytest.raises(ImportError, match="no_such_name"):
        exec("from llmclient.wire import no_such_name", {})


def test_the_generated_module_was_compiled_from_the_schema_beside_it() -> None:
    from google.protobuf import descriptor_pool

    from llmclient.wire.proto import llmclient_pb2 as pb

    assert PROTO_PATH.is_file() and Path(pb.__file__).parent == PROTO_PATH.parent
    # regen.sh compiles from the schema's folder: the descriptor is registered under the bare
    # file name, once, and it is this module's.
    assert pb.DESCRIPTOR.name == PROTO_PATH.name == "llmclient.proto"
    assert pb.DESCRIPTOR.package == "llmclient.v1"
    assert descriptor_pool.Default().FindFileByName(PROTO_PATH.name) is pb.DESCRIPTOR
    assert "message Body {" in PROTO_PATH.read_text(encoding="utf-8")
