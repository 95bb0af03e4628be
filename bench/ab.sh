#!/usr/bin/env bash
# A side-by-side A/B of boardline builds and settings on one Redis, in alternating rounds, so the
# machine's drift hits every variant alike: JSON mute (wrk) and gRPC Mute (h2load) at one
# concurrency, BENCH_SECONDS each, BENCH_AB_ROUNDS rounds. Variants:
#   before  BENCH_AB_BEFORE=<a checkout whose dist/ is built>, e.g. the commit before a change
#           (git archive <commit> | tar -x -C <dir>, ln -s "$PWD/node_modules" <dir>/, then
#           npx tsc -p tsconfig.build.json in <dir>: no worktree to clean up afterwards)
#   off     this tree, tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)
#   on      this tree, tracing on, exporting (OTLP http/protobuf, the SDK's defaults) to bench/lib/otlp-sink.mjs
#   on-10%  the same, one trace in ten sampled (OTEL_TRACES_SAMPLER=parentbased_traceidratio, ARG 0.1)
#   flags   with BENCH_AB_FLAGS="<node flags>": this tree, tracing off, run with those flags instead of
#           package.json's config.nodeFlags — and then only "off" and "flags" run (no tracing variants)
# Servers and Redis on the first CPU, load generator and sink on the second (as bench/run.sh).
#   bash bench/ab.sh            knobs: BENCH_AB_BEFORE, BENCH_AB_LABEL (what the earlier build is, e.g. its
#                               commit), BENCH_AB_FLAGS, BENCH_AB_ROUNDS (5), BENCH_SECONDS (5), BENCH_WARMUP (1),
#                               BENCH_AB_C (16), BENCH_SKIP_BUILD=1, BENCH_AB_WRITE=1
# Prints one line per cell and, at the end, each variant's median req/s, p99 and CPU time per call (the
# server process's user + system time over the cell ÷ its requests: much steadier than req/s or p99 on a
# shared machine, where other work takes the CPUs away at random). With BENCH_AB_WRITE=1 it also writes
# the "ab" section of docs/performance.md (bench/report/ab.mjs), with a verdict on this tree against the
# earlier build per protocol; without it, it writes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${BENCH_AB_ROUNDS:-5}
STARTED_MS=$(($(date +%s) * 1000))
SECONDS_PER_CELL=${BENCH_SECONDS:-5}
WARMUP=${BENCH_WARMUP:-1}
C=${BENCH_AB_C:-16}
log() { printf '[ab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
for tool in wrk h2load redis-server redis-cli taskset node; do
  command -v "$tool" >/dev/null || { log "$tool is required (npm run bench installs wrk and h2load)"; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/boardline-ab.XXXXXX")
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -n ${BENCH_KEEP:-} ]] || rm -rf "$WORK"
}
trap cleanup EXIT
spawn() { # logfile command…
  local logfile=$1
  shift
  "$@" >"$logfile" 2>&1 &
  PIDS+=("$!")
}
wait_http() { # url
  for _ in {1..100}; do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done
  log "no answer from $1"
  exit 1
}
SERVER_PIN=(taskset -c 0)
LOAD_PIN=(taskset -c 1)
[[ $(nproc) -ge 2 ]] || { SERVER_PIN=(); LOAD_PIN=(); }

[[ -n ${BENCH_SKIP_BUILD:-} ]] || npm run --silent build >"$WORK/build.log" 2>&1
ports=$(node -e 'const n=require("node:net");Promise.all([0,1,2,3,4,5,6].map(()=>new Promise(r=>{const s=n.createServer().listen(0,"127.0.0.1",()=>r(s))}))).then(ss=>{console.log(ss.map(s=>s.address().port).join(" "));ss.forEach(s=>s.close())})')
read -r REDIS_PORT SIM_PORT SINK_PORT P_BEFORE P_OFF P_ON P_SAMPLED <<<"$ports"
spawn "$WORK/redis.log" "${SERVER_PIN[@]}" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK"
for _ in {1..50}; do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
export REDIS_URL="redis://127.0.0.1:$REDIS_PORT" REDIS_KEY_PREFIX="bl:"
JWT_SECRET=$(node -e 'console.log(require("node:crypto").randomBytes(32).toString("hex"))')
export JWT_SECRET
OUT_DIR=$WORK node bench/lib/setup.mjs >&2
JWT=$(<"$WORK/jwt.txt")
# No creates limit (SIM_CREATES_PER_SECOND=0): the cells measure boardline, not the backend's one create a second.
spawn "$WORK/simulator.log" "${LOAD_PIN[@]}" env SIM_PORT="$SIM_PORT" SIM_HOST=127.0.0.1 SIM_CREATES_PER_SECOND=0 \
  SIM_SDK_TOKEN="$(<"$WORK/sdk-token.txt")" LOG_LEVEL=warn node dist/src/demo/simulator/main.js
spawn "$WORK/sink.log" "${LOAD_PIN[@]}" env PORT="$SINK_PORT" node bench/lib/otlp-sink.mjs
SINK_PID=${PIDS[-1]}
read -ra NODE_FLAGS <<<"$(node -p 'require("./package.json").config.nodeFlags')"
# Production requires PASSPHRASE_KEYS and SECRETS_KEYS: the development keys, which the seeding above
# (bench/lib/setup.mjs, this checkout's store) wrote with. A build that predates them ignores them.
mapfile -t DEV_KEYS < <(node bench/lib/development-keys.mjs)
[[ ${#DEV_KEYS[@]} -eq 2 ]] || { echo "bench/lib/development-keys.mjs printed no keys" >&2; exit 1; }
server() { # name port dir extra-env…
  local name=$1 port=$2 dir=$3 flags=("${NODE_FLAGS[@]}")
  shift 3
  [[ $name != flags ]] || read -ra flags <<<"$BENCH_AB_FLAGS"
  spawn "$WORK/$name.log" "${SERVER_PIN[@]}" env NODE_ENV=production "${DEV_KEYS[@]}" PORT="$port" HOST=127.0.0.1 LOG_LEVEL=warn \
    GUESS_LIMIT=0 CONVERSION_API_BASE="http://127.0.0.1:$SIM_PORT" METRICS_PORT=0 "$@" node "${flags[@]}" "$dir/dist/src/main.js"
  wait_http "http://127.0.0.1:$port/readyz"
  SERVER_PID=${PIDS[-1]}
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICKS_PER_S=$(getconf CLK_TCK)
VARIANTS=()
if [[ -n ${BENCH_AB_BEFORE:-} ]]; then
  server before "$P_BEFORE" "$BENCH_AB_BEFORE"
  VARIANTS+=("before:$P_BEFORE:$SERVER_PID")
fi
server off "$P_OFF" "$PWD"
VARIANTS+=("off:$P_OFF:$SERVER_PID")
if [[ -n ${BENCH_AB_FLAGS:-} ]]; then
  server flags "$P_ON" "$PWD"
  VARIANTS+=("flags:$P_ON:$SERVER_PID")
else
  server on "$P_ON" "$PWD" OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT"
  VARIANTS+=("on:$P_ON:$SERVER_PID")
  server on-10% "$P_SAMPLED" "$PWD" OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT" \
    OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.1
  VARIANTS+=("on-10%:$P_SAMPLED:$SERVER_PID")
fi

RESULTS=$WORK/results.jsonl
: >"$RESULTS"
cell() { # variant port pid proto round
  local v=$1 port=$2 pid=$3 proto=$4 round=$5 name="$1-$4-$5" ticks
  if [[ $proto == JSON ]]; then
    local url="http://127.0.0.1:$port/v1/channel/pstn/mute"
    local load=("${LOAD_PIN[@]}" wrk -t 1 -c "$C" --timeout 5s --latency -s bench/wrk/post.lua)
    BENCH_BODY=$WORK/mute.json BENCH_AUTH=$WORK/jwt.txt BENCH_OUT="" "${load[@]}" -d "${WARMUP}s" "$url" >/dev/null
    ticks=$(cpu_ticks "$pid")
    BENCH_BODY=$WORK/mute.json BENCH_AUTH=$WORK/jwt.txt BENCH_OUT=$WORK/$name.json "${load[@]}" -d "${SECONDS_PER_CELL}s" "$url" >/dev/null
    ticks=$(($(cpu_ticks "$pid") - ticks))
    node bench/lib/collect.mjs wrk "$WORK/$name.json" variant="$v" proto="$proto" round="$round" cpu_s="$(node -p "$ticks / $TICKS_PER_S")" >>"$RESULTS"
  else
    local url="http://127.0.0.1:$port/channel.v1.PstnService/Mute"
    local load=("${LOAD_PIN[@]}" h2load -t 1 -c "$C" -m 1 -d "$WORK/mute.grpc" -H 'content-type: application/grpc'
      -H 'te: trailers' -H "authorization: Bearer $JWT")
    "${load[@]}" -D "$WARMUP" "$url" >/dev/null
    ticks=$(cpu_ticks "$pid")
    "${load[@]}" -D "$SECONDS_PER_CELL" --log-file="$WORK/$name.log" "$url" >"$WORK/$name.out"
    ticks=$(($(cpu_ticks "$pid") - ticks))
    node bench/lib/collect.mjs h2load "$WORK/$name.out" "$WORK/$name.log" variant="$v" proto="$proto" round="$round" cpu_s="$(node -p "$ticks / $TICKS_PER_S")" >>"$RESULTS"
  fi
  log "$(tail -n 1 "$RESULTS" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const r=JSON.parse(s);console.log(`round ${r.round} ${r.variant} ${r.proto}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50_ms.toFixed(2)} ms, p99 ${r.p99_ms.toFixed(2)} ms, ${(r.cpu_s * 1e6 / r.requests).toFixed(0)} µs CPU/call, non-2xx ${r.non2xx}, errors ${r.errors}`)})')"
}
# Each round starts with the next variant, so none is always first after a pause.
for ((round = 1; round <= ROUNDS; round++)); do
  for proto in JSON gRPC; do
    for ((i = 0; i < ${#VARIANTS[@]}; i++)); do
      IFS=: read -r v port pid <<<"${VARIANTS[$(((i + round) % ${#VARIANTS[@]}))]}"
      cell "$v" "$port" "$pid" "$proto" "$round"
    done
  done
done
for variant in "${VARIANTS[@]}"; do
  IFS=: read -r v port pid <<<"$variant"
  log "$v: peak RSS $(awk '/^VmHWM/ { printf "%.0f MB", $2 / 1024 }' "/proc/$pid/status"), RSS now $(awk '/^VmRSS/ { printf "%.0f MB", $2 / 1024 }' "/proc/$pid/status")"
done
kill -TERM "$SINK_PID" && wait "$SINK_PID" 2>/dev/null || true
log "sink received: $(tail -n 1 "$WORK/sink.log")"
log "span queue overflows logged by the traced servers: $(cat "$WORK"/on*.log | grep -c 'Dropped' || true)"
node -e '
  const rows = require("node:fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
  const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor((s.length - 1) / 2)]; };
  for (const proto of ["JSON", "gRPC"]) for (const v of [...new Set(rows.map((r) => r.variant))]) {
    const cells = rows.filter((r) => r.proto === proto && r.variant === v);
    for (const r of cells) r.cpu_us = (r.cpu_s * 1e6) / r.requests;
    const fmt = (k, d) => cells.map((r) => r[k].toFixed(d)).join(" / ");
    const med = (k, d) => median(cells.map((r) => r[k])).toFixed(d);
    console.log(`${proto} ${v}: median ${med("rps", 0)} req/s, p99 ${med("p99_ms", 2)} ms, ${med("cpu_us", 0)} µs CPU/call | req/s ${fmt("rps", 0)} | p99 ${fmt("p99_ms", 2)} | µs ${fmt("cpu_us", 0)}`);
  }' "$RESULTS"
if [[ -n ${BENCH_AB_WRITE:-} ]]; then
  BENCH_AB_STARTED=$STARTED_MS BENCH_AB_ROUNDS=$ROUNDS BENCH_SECONDS=$SECONDS_PER_CELL BENCH_WARMUP=$WARMUP BENCH_AB_C=$C \
    node bench/report/ab.mjs "$RESULTS" >/dev/null
fi
