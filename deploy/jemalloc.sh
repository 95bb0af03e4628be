#!/usr/bin/env bash
# Runs a command with jemalloc as its C allocator, as boardline's image runs node (the Containerfile's
# LD_PRELOAD; the base holds Debian's libjemalloc2), when this machine has the library:
#   bash deploy/jemalloc.sh node dist/src/main.js
# `npm start` and the benchmarks' servers start through it, so they measure what the image ships.
#
# Why: what Node allocates outside V8's heap (HTTP/2 sessions, sockets, buffers, zlib) goes through
# malloc. glibc's malloc keeps much of what a busy instance freed; jemalloc gives it back. In the
# benchmarks the ConvertFile cells peaked 15–20 MB lower with it, at the same requests/s or more
# (bench/RESULTS.md, "Issue 24").
#
# An LD_PRELOAD that is set already, even to nothing, is left alone: `LD_PRELOAD= npm start` runs on
# glibc's malloc. Without the library (`apt-get install libjemalloc2` brings it), the command runs
# as it is.
set -euo pipefail
if [[ -z ${LD_PRELOAD+set} && -z $(LD_PRELOAD=libjemalloc.so.2 env true 2>&1) ]]; then
  export LD_PRELOAD=libjemalloc.so.2
fi
exec "$@"
