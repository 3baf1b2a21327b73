#!/bin/sh
# Regenerate llmclient_pb2.py / .pyi from llmclient.proto (run from anywhere: it compiles from
# llmclient/wire/proto/ itself, with -I., so the descriptor's file name stays "llmclient.proto"
# and the generated module imports no other generated file).
# Needs grpcio-tools (pip install grpcio-tools); the generated module checks the protobuf
# runtime version at import (see _runtime_version.ValidateProtobufRuntimeVersion in it).
set -eu
cd "$(dirname "$0")"
exec "${PYTHON:-python}" -m grpc_tools.protoc -I. --python_out=. --pyi_out=. llmclient.proto
