#!/bin/sh
# Regenerate llmclient_pb2.py / .pyi from llmclient.proto (run from anywhere).
# Needs grpcio-tools (pip install grpcio-tools); the generated module checks the protobuf
# runtime version at import (see _runtime_version.ValidateProtobufRuntimeVersion in it).
set -eu
cd "$(dirname "$0")"
exec "${PYTHON:-python}" -m grpc_tools.protoc -I. --python_out=. --pyi_out=. llmclient.proto
