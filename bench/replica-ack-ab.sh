#!/usr/bin/env bash
# Issue 15's A/B: what REDIS_MIN_REPLICAS=1 costs a mute, in `npm run bench` terms.
#
#   bash bench/replica-ack-ab.sh            (3 rounds, 5 s cells, c1 and c16)
#   AB_ROUNDS=5 AB_SECONDS=10 AB_CONCURRENCY="1 16 64" bash bench/replica-ack-ab.sh
#
# One redis-server primary with one replica (no persistence, loopback), and two boardline
# processes on it started as bench/run.sh starts boardline (NODE_ENV=production, GUESS_LIMIT=0,
# the package's V8 flags): A with REDIS_MIN_REPLICAS=0 (today's behaviour), B with
# REDIS_MIN_REPLICAS=1 (each mute waits with WAIT until the replica has it). The same cells as the
# full bench (wrk for JSON mute, h2load -m 1 for gRPC Mute), A and B alternating within each round
# and their order swapped every round, so drift of the machine hits both. With two or more CPUs the
# servers and both Redis processes share the first CPU, the load generator the second (as run.sh
# pins them). Prints one line per cell and a Markdown table: median (min–max) over the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."

AB_ROUNDS=${AB_ROUNDS:-3}
AB_SECONDS=${AB_SECONDS:-5}
AB_WARMUP=${AB_WARMUP:-1}
AB_CONCURRENCY=${AB_CONCURRENCY:-"1 16"}
log() { printf '[ab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
  log "FAILED: $*"
  exit 1
}
for tool in redis-server redis-cli wrk h2load node taskset curl; do
  command -v "$tool" >/dev/null || die "$tool is required (bench/run.sh installs wrk and h2load)"
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/boardline-ab.XXXXXX")
PIDS=()
cleanup() {
  local rc=$? pid
  trap - EXIT INT TERM
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in {1..50}; do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
spawn() {
  local logfile=$1
  shift
  "$@" >"$logfile" 2>&1 &
  PIDS+=("$!")
}
wait_tcp() { # port
  for _ in {1..100}; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  die "nothing listens on $1 after 10 s"
}

read -ra CPUS <<<"$(taskset -cp $$ | sed 's/.*: *//; s/,/ /g')"
if ((${#CPUS[@]} >= 2)) && [[ ${CPUS[0]} != *-* ]]; then
  SERVER_PIN=(taskset -c "${CPUS[0]}")
  LOAD_PIN=(taskset -c "${CPUS[1]}")
elif [[ ${CPUS[0]} == *-* ]]; then
  first=${CPUS[0]%-*}
  SERVER_PIN=(taskset -c "$first")
  LOAD_PIN=(taskset -c "$((first + 1))")
else
  SERVER_PIN=()
  LOAD_PIN=()
fi

npm run --silent build >"$WORK/build.log" 2>&1 || die "npm run build failed: $(tail -n 20 "$WORK/build.log")"
read -r PRIMARY REPLICA A_PORT B_PORT < <(node -e '
  const net = require("node:net");
  Promise.all([0, 1, 2, 3].map(() => new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => resolve(s));
  }))).then((servers) => {
    console.log(servers.map((s) => s.address().port).join(" "));
    for (const s of servers) s.close();
  });')
mkdir "$WORK/primary" "$WORK/replica"
spawn "$WORK/primary.log" "${SERVER_PIN[@]}" redis-server --port "$PRIMARY" --bind 127.0.0.1 --save "" \
  --appendonly no --dir "$WORK/primary" --repl-diskless-sync-delay 0
wait_tcp "$PRIMARY"
spawn "$WORK/replica.log" "${SERVER_PIN[@]}" redis-server --port "$REPLICA" --bind 127.0.0.1 --save "" \
  --appendonly no --dir "$WORK/replica" --replicaof 127.0.0.1 "$PRIMARY"
for _ in {1..100}; do
  redis-cli -p "$REPLICA" info replication 2>/dev/null | grep -q master_link_status:up && break
  sleep 0.1
done
redis-cli -p "$REPLICA" info replication | grep -q master_link_status:up || die "the replica did not sync"

JWT_SECRET=$(node -e 'console.log(require("node:crypto").randomBytes(32).toString("hex"))')
export JWT_SECRET REDIS_URL="redis://127.0.0.1:$PRIMARY" REDIS_KEY_PREFIX="bl:"
OUT_DIR=$WORK node bench/setup.mjs >&2
JWT=$(<"$WORK/jwt.txt")
read -ra NODE_FLAGS <<<"$(node -p 'require("./package.json").config.nodeFlags')"
for variant in A:0:$A_PORT B:1:$B_PORT; do
  IFS=: read -r name replicas port <<<"$variant"
  spawn "$WORK/boardline-$name.log" "${SERVER_PIN[@]}" env NODE_ENV=production PORT="$port" HOST=127.0.0.1 \
    LOG_LEVEL=warn GUESS_LIMIT=0 REDIS_MIN_REPLICAS="$replicas" CONVERSION_API_BASE=http://127.0.0.1:9 \
    node "${NODE_FLAGS[@]}" dist/src/main.js
  wait_tcp "$port"
  status=$(curl -s -o /dev/null -w '%{http_code}' -H 'content-type: application/json' -H "authorization: Bearer $JWT" \
    --data-binary "@$WORK/mute.json" "http://127.0.0.1:$port/v1/channel/pstn/mute")
  [[ $status == 200 ]] || die "boardline $name: a mute answered $status"
done
# h2load counts any HTTP 200 as a success, and a gRPC error travels in a 200: check the status with grpc-js,
# before the cells and after them (a replica that stopped acknowledging would turn B's mutes into UNAVAILABLE).
grpc_ok() {
  node bench/grpc-check.mjs "boardline A" "127.0.0.1:$A_PORT" mute "$WORK/mute.grpc" "$WORK/jwt.txt" >/dev/null &&
    node bench/grpc-check.mjs "boardline B" "127.0.0.1:$B_PORT" mute "$WORK/mute.grpc" "$WORK/jwt.txt" >/dev/null
}
grpc_ok || die "a gRPC mute did not answer OK before the cells"

RESULTS=$WORK/results.jsonl
: >"$RESULTS"
cell() { # name port proto c round
  local name=$1 port=$2 proto=$3 c=$4 round=$5 file="$WORK/$1-$3-c$4-r$5"
  if [[ $proto == JSON ]]; then
    local load=("${LOAD_PIN[@]}" wrk -t 1 -c "$c" --timeout 5s --latency -s bench/post.lua)
    local url="http://127.0.0.1:$port/v1/channel/pstn/mute"
    BENCH_BODY=$WORK/mute.json BENCH_AUTH=$WORK/jwt.txt BENCH_OUT="" "${load[@]}" -d "${AB_WARMUP}s" "$url" >/dev/null
    BENCH_BODY=$WORK/mute.json BENCH_AUTH=$WORK/jwt.txt BENCH_OUT=$file.json "${load[@]}" -d "${AB_SECONDS}s" "$url" >/dev/null
    node bench/collect.mjs wrk "$file.json" variant="$name" proto="$proto" c="$c" round="$round" >>"$RESULTS"
  else
    local load=("${LOAD_PIN[@]}" h2load -t 1 -c "$c" -m 1 -d "$WORK/mute.grpc" -H 'content-type: application/grpc'
      -H 'te: trailers' -H "authorization: Bearer $JWT")
    local url="http://127.0.0.1:$port/channel.v1.PstnService/Mute"
    "${load[@]}" -D "$AB_WARMUP" "$url" >/dev/null
    "${load[@]}" -D "$AB_SECONDS" --log-file="$file.log" "$url" >"$file.out"
    node bench/collect.mjs h2load "$file.out" "$file.log" variant="$name" proto="$proto" c="$c" round="$round" >>"$RESULTS"
  fi
  log "$name $proto c$c round $round: $(tail -n 1 "$RESULTS" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const r=JSON.parse(s);console.log(`${r.rps.toFixed(0)} req/s, p50 ${r.p50_ms.toFixed(2)} ms, p99 ${r.p99_ms.toFixed(2)} ms, non-2xx ${r.non2xx}, errors ${r.errors}`)})')"
}

log "primary :$PRIMARY, replica :$REPLICA; A (REDIS_MIN_REPLICAS=0) :$A_PORT, B (=1) :$B_PORT"
for ((round = 1; round <= AB_ROUNDS; round++)); do
  order=(A:$A_PORT B:$B_PORT)
  ((round % 2 == 0)) && order=(B:$B_PORT A:$A_PORT)
  for c in $AB_CONCURRENCY; do
    for proto in JSON gRPC; do
      for v in "${order[@]}"; do cell "${v%%:*}" "${v#*:}" "$proto" "$c" "$round"; done
    done
  done
done
grpc_ok || die "a gRPC mute did not answer OK after the cells"
WAITS=$(redis-cli -p "$PRIMARY" info commandstats | tr -d '\r' | sed -n 's/^cmdstat_wait:calls=\([0-9]*\),.*/\1/p')

RESULTS=$RESULTS WAITS=${WAITS:-0} node --input-type=module -e '
import { readFileSync } from "node:fs";
const rows = readFileSync(process.env.RESULTS, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const fmt = (xs, d) => { const s = [...xs].sort((a, b) => a - b);
  return `${s[Math.floor(s.length / 2)].toFixed(d)} (${s[0].toFixed(d)}–${s.at(-1).toFixed(d)})`; };
const bad = rows.filter((r) => r.non2xx > 0 || r.errors > 0 || (r.failed ?? 0) > 0).length;
console.log("| cell | REDIS_MIN_REPLICAS | req/s | p50 ms | p99 ms |");
console.log("| --- | --- | --- | --- | --- |");
for (const c of [...new Set(rows.map((r) => r.c))]) for (const proto of ["JSON", "gRPC"]) for (const v of ["A", "B"]) {
  const cell = rows.filter((r) => r.c === c && r.proto === proto && r.variant === v);
  if (cell.length === 0) continue;
  console.log(`| ${proto} mute c${c} | ${v === "A" ? 0 : 1} | ${fmt(cell.map((r) => r.rps), 0)} | ${fmt(cell.map((r) => r.p50_ms), 2)} | ${fmt(cell.map((r) => r.p99_ms), 2)} |`);
}
const measuredB = rows.filter((r) => r.variant === "B").reduce((n, r) => n + r.requests, 0);
console.log(`\ncells with a non-2xx answer or an error: ${bad}; WAIT calls on the primary: ${process.env.WAITS} (B answered ${measuredB} measured mutes, warm-ups not counted)`);
'
