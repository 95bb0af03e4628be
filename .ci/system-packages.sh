#!/usr/bin/env bash
# The Debian packages the test suite drives as real components, installed when missing.
# `npm test` runs this first (npm's `pretest`), so the README's test line works on a fresh Debian
# machine; `.ci/run` runs it through `npm test` too. As root it installs what is missing with
# apt-get; otherwise it prints the one `apt-get install` line to run and goes on (each test whose
# tool is missing then fails and names the package). BOARDLINE_SKIP_SYSTEM_PACKAGES=1 skips it.
set -uo pipefail
[[ -n ${BOARDLINE_SKIP_SYSTEM_PACKAGES:-} ]] && exit 0

missing=()
have_command() { command -v "$1" >/dev/null 2>&1; }
have_package() { dpkg -s "$1" >/dev/null 2>&1; }
need_command() { have_command "$1" || missing+=("$2"); }
need_package() { have_package "$1" || missing+=("$1"); }

# Redis for every store test (the harness starts its own on a free port); haproxy in front of three
# instances for the rolling restart; jemalloc, which `npm start` preloads as the image does.
need_command redis-server redis-server
need_command haproxy haproxy
# promtool, which checks the compose stack's Prometheus configuration.
need_command promtool prometheus
need_package libjemalloc2
# Chromium for the API reference page and the browser example; curl for the README's examples.
[[ -x /usr/bin/chromium ]] || missing+=(chromium)
need_command curl curl
# The Python example: Debian's grpcio and protobuf, protoc and grpc_python_plugin.
/usr/bin/python3 -c 'import grpc' >/dev/null 2>&1 || missing+=(python3-grpcio)
/usr/bin/python3 -c 'import google.protobuf' >/dev/null 2>&1 || missing+=(python3-protobuf)
need_command protoc protobuf-compiler
need_command grpc_python_plugin protobuf-compiler-grpc
# The Go example: Debian's Go, protoc plugins and grpc-go sources (GOPATH mode).
need_command go golang-go
for pkg in protoc-gen-go protoc-gen-go-grpc golang-google-grpc-dev golang-google-protobuf-dev \
  golang-google-genproto-dev golang-github-golang-protobuf-1-5-dev; do
  need_package "$pkg"
done
# Prometheus and promtool: the alert rules are checked and unit-tested, and fired against a live
# instance (deploy/monitoring; the package's own service is not used).
need_command promtool prometheus
# The container image: its base built with mmdebstrap, the image with podman, run with runc.
need_command podman podman
need_command runc runc
need_command mmdebstrap mmdebstrap

[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -ne 0 ]] || ! have_command apt-get; then
  echo "system-packages: missing Debian packages; as root, run:" >&2
  echo "  apt-get install ${missing[*]}" >&2
  exit 0
fi
echo "system-packages: installing ${missing[*]}" >&2
if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null); then
  echo "system-packages: apt-get could not install ${missing[*]}; the tests that need them will fail and name them" >&2
fi
exit 0
