#!/usr/bin/env bash
# Runs a command with jemalloc as its C allocator, as boardline's image runs node (the Containerfile's
# LD_PRELOAD; the base holds Debian's libjemalloc2), when this machine has the library:
#   bash deploy/jemalloc.sh node dist/src/main.js
# `npm start` and the benchmarks' servers start through it, so they measure what the image ships.
#
# Why: what Node allocates outside V8's heap (HTTP/2 sessions, sockets, buffers, zlib) goes through
# malloc. glibc's malloc keeps much of what a busy instance freed; jemalloc gives it back, so the
# peak RSS under load is lower, at the same requests/s or more (docs/performance.md).
#
# With jemalloc, pages freed go back to the system after 1 s rather than jemalloc's default 10 s
# (MALLOC_CONF=dirty_decay_ms:1000, as the image sets it): what a burst left behind (thousands of
# watches opened at once) is not held for 10 s more. The mute path's CPU per call does not change with
# it, and open watches hold a little less memory each.
#
# An LD_PRELOAD that is set already, even to nothing, is left alone: `LD_PRELOAD= npm start` runs on
# glibc's malloc; so is a MALLOC_CONF that is set. Without the library (`apt-get install libjemalloc2`
# brings it), the command runs as it is.
set -euo pipefail
if [[ -z ${LD_PRELOAD+set} && -z $(env -u MALLOC_CONF LD_PRELOAD=libjemalloc.so.2 true 2>&1) ]]; then
  export LD_PRELOAD=libjemalloc.so.2
  export MALLOC_CONF=${MALLOC_CONF-dirty_decay_ms:1000}
fi
exec "$@"
