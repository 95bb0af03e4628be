#!/bin/sh
# Generates the Python messages and gRPC stubs of the whiteboard and the telephone line from boardline's proto/ into gen/,
# with Debian's protoc (protobuf-compiler) and grpc_python_plugin (protobuf-compiler-grpc).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
proto=${1:-$here/../../proto}
plugin=$(command -v grpc_python_plugin) || {
  echo "grpc_python_plugin not found: apt-get install protobuf-compiler-grpc" >&2
  exit 1
}
rm -rf "$here/gen"
mkdir "$here/gen"
protoc -I "$proto" --python_out="$here/gen" --grpc_out="$here/gen" --plugin=protoc-gen-grpc="$plugin" \
  "$proto/whiteboard/v1/whiteboard.proto" "$proto/channel/v1/pstn.proto" "$proto/buf/validate/validate.proto" \
  "$proto"/google/api/*.proto "$proto"/google/rpc/*.proto
