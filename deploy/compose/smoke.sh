#!/usr/bin/env bash
# deploy/compose.yaml for real, offline: builds Redis, HAProxy and Prometheus images from Debian's packages,
# brings the stack up with podman-compose, creates a channel and mutes through HAProxy over JSON
# (HTTP/1.1) and gRPC (h2c), checks that /metrics is on the replicas' metrics port and not the
# public one, checks that Prometheus scrapes both replicas, checks that the Redis replica has the
# mute, and takes it down.
# Prints the time of each step. Run from the repository, after `npm ci`:
#   bash deploy/image/build.sh && bash deploy/compose/smoke.sh
# BOARDLINE_IMAGE: the boardline image (default: what deploy/image/build.sh tags).
# BASE_IMAGE: a Debian bookworm image with apt (built with mmdebstrap when absent).
# PODMAN_SANDBOX=1: the adjustments of machines whose cgroups and limits podman's defaults trip on
# (runc instead of crun, no raise of the open-files limit), in a containers.conf of its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
PATH=$(bash .ci/supported-node.sh)
export PATH
BOARDLINE_IMAGE=${BOARDLINE_IMAGE:-localhost/boardline:$(node -p 'require("./package.json").version')}
BASE_IMAGE=${BASE_IMAGE:-localhost/boardline-compose-base:bookworm}
export REDIS_IMAGE=${REDIS_IMAGE:-localhost/boardline-compose-redis:latest}
export HAPROXY_IMAGE=${HAPROXY_IMAGE:-localhost/boardline-compose-haproxy:latest}
export PROMETHEUS_IMAGE=${PROMETHEUS_IMAGE:-localhost/boardline-compose-prometheus:latest}
export BOARDLINE_IMAGE
project=bl-smoke-$$
work=$(mktemp -d)
runtime=()
if [[ ${PODMAN_SANDBOX:-} == 1 ]]; then
  printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\n' >"$work/containers.conf"
  export CONTAINERS_CONF=$work/containers.conf
  runtime=(--runtime runc)
fi
compose=(podman-compose -p "$project" -f deploy/compose.yaml)
started=$SECONDS
step() { echo "==> [$((SECONDS - started)) s] $*"; }
cleanup() {
  step "down"
  "${compose[@]}" down -t 20 >"$work/down.log" 2>&1 || cat "$work/down.log"
  step "remove the volumes and the network"
  podman volume rm "${project}_redis-primary" "${project}_redis-replica" "${project}_prometheus" >/dev/null 2>&1 || true
  podman network rm "${project}_default" >/dev/null 2>&1 || true
  rm -rf "$work"
  step "done"
}

step "npm run build (token minting)"
npm run --silent build
podman image exists "$BOARDLINE_IMAGE" || { echo "no image $BOARDLINE_IMAGE: bash deploy/image/build.sh" >&2; exit 1; }
if ! podman image exists "$BASE_IMAGE"; then
  step "base image $BASE_IMAGE (mmdebstrap, Debian bookworm minbase)"
  mmdebstrap --variant=minbase --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/man/*' bookworm - 2>/dev/null | podman import - "$BASE_IMAGE" >/dev/null
fi
for image in redis haproxy prometheus; do
  step "image $image"
  case $image in
    redis) tag=$REDIS_IMAGE ;;
    haproxy) tag=$HAPROXY_IMAGE ;;
    prometheus) tag=$PROMETHEUS_IMAGE ;;
  esac
  podman build "${runtime[@]}" -q --build-arg "BASE=$BASE_IMAGE" -t "$tag" \
    -f "deploy/compose/$image.Containerfile" deploy/compose >/dev/null
done

# The secret files compose binds into the replicas, as docs/deploy.md makes them: in $work (mode
# 0700), each readable by the replicas' user. The CLI mints with the same JWT_SECRET_FILE.
BOARDLINE_SECRETS=$work/secrets
mkdir "$BOARDLINE_SECRETS"
random() { node -e 'console.log(require("node:crypto").randomBytes(Number(process.argv[1])).toString("base64"))' "$1"; }
random 48 >"$BOARDLINE_SECRETS/JWT_SECRET"
random 32 >"$BOARDLINE_SECRETS/PASSPHRASE_KEYS"
random 32 >"$BOARDLINE_SECRETS/SECRETS_KEYS"
# Hex: nothing a URL or a configuration line would have to escape.
redis_password=$(node -e 'console.log(require("node:crypto").randomBytes(32).toString("hex"))')
echo "$redis_password" >"$BOARDLINE_SECRETS/REDIS_PASSWORD"
echo "redis://:$redis_password@redis:6379" >"$BOARDLINE_SECRETS/REDIS_URL"
chmod 644 "$BOARDLINE_SECRETS"/*
free_port() { node -e 'const s=require("node:net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
BOARDLINE_PORT=$(free_port)
PROMETHEUS_PORT=$(free_port)
export BOARDLINE_SECRETS BOARDLINE_PORT PROMETHEUS_PORT
url=http://127.0.0.1:$BOARDLINE_PORT
mint() { JWT_SECRET_FILE=$BOARDLINE_SECRETS/JWT_SECRET node dist/src/cli/main.js token mint --project acme "$@"; }

trap cleanup EXIT
step "up (9 containers)"
"${compose[@]}" up -d >"$work/up.log" 2>&1 || { cat "$work/up.log"; exit 1; }

step "create a channel through HAProxy (retried until the replicas are in rotation)"
admin=$(mint --subject meetings --scope channels.admin)
for attempt in $(seq 90); do
  channel=$(curl -sS -X POST "$url/v1/channels" -H "Authorization: Bearer $admin" \
    -H 'Content-Type: application/json' -d '{"channel_id":"weekly-sync"}' 2>&1 || true)
  [[ $channel == *host_passphrase* ]] && break
  last=$channel
  sleep 1
done
[[ $channel == *host_passphrase* ]] || { echo "no channel: $channel"; exit 1; }
[[ $attempt == 1 ]] || echo "answered at attempt $attempt; the one before: ${last//$'\n'/ }"
host=$(node -e 'console.log(JSON.parse(process.argv[1]).host_passphrase)' "$channel")
token=$(mint --subject ops --ttl 15m)

step "JSON mute (HTTP/1.1)"
answer=$(curl -sS -X POST "$url/v1/channel/pstn/mute" -H "Authorization: Bearer $token" \
  -H 'Content-Type: application/json' -d "{\"uid\":\"pstn-1001\",\"passphrase\":\"$host\",\"mute\":true}")
echo "$answer"
[[ $answer == '{"uid":"pstn-1001","mute":true}' ]]

step "gRPC Mute (h2c)"
answer=$(npx buf curl --protocol grpc --http2-prior-knowledge -H "Authorization: Bearer $token" \
  -d "{\"uid\":\"pstn-1002\",\"passphrase\":\"$host\",\"mute\":true}" "$url/channel.v1.PstnService/Mute")
echo "$answer" | tr -d ' \n'
echo
[[ $(echo "$answer" | tr -d ' \n') == '{"uid":"pstn-1002","mute":true}' ]]

step "/metrics: 404 through HAProxy (the public port), served on each replica's METRICS_PORT (9090)"
status=$(curl -sS -o /dev/null -w '%{http_code}' "$url/metrics")
[[ $status == 404 ]] || { echo "/metrics on the public port answered $status"; exit 1; }
for replica in boardline-1 boardline-2; do
  # The image has no shell and no curl: its node asks.
  podman exec "${project}_${replica}_1" node -e '
    fetch("http://127.0.0.1:9090/metrics").then(async (r) => {
      const ok = r.status === 200 && (await r.text()).includes("boardline_calls_total");
      if (!ok) { console.error(`'"$replica"': /metrics answered ${r.status}`); process.exit(1); }
    });'
done

step "Prometheus scrapes both replicas (up{job=\"boardline\"} is 1 for each)"
for attempt in $(seq 60); do
  up=$(curl -sS "http://127.0.0.1:$PROMETHEUS_PORT/api/v1/query" --data-urlencode 'query=sum(up{job="boardline"})' 2>/dev/null |
    node -e 'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>{try{console.log(JSON.parse(s).data.result[0].value[1])}catch{console.log("none")}})' || true)
  [[ $up == 2 ]] && break
  sleep 1
done
[[ $up == 2 ]] || { echo "Prometheus sees ${up:-none} replicas up"; exit 1; }

step "a client of the network without the password is refused by Redis and by the Sentinels"
for target in "redis-primary_1 redis-cli" "sentinel-1_1 redis-cli -p 26379"; do
  read -r container cli <<<"$target"
  refused=$(podman exec "${project}_${container}" $cli ping 2>&1 || true)
  echo "$container without the password: $refused"
  [[ $refused == *NOAUTH* ]]
done

step "the mutes on the Redis replica, and the Sentinels' view"
authed() { podman exec -e REDISCLI_AUTH="$redis_password" "${project}_$1" "${@:2}"; }
authed redis-replica_1 redis-cli hkeys 'bl:chan:{acme/weekly-sync}:pstn-mute'
authed sentinel-1_1 redis-cli -p 26379 sentinel get-master-addr-by-name boardline
[[ $(authed redis-replica_1 redis-cli hlen 'bl:chan:{acme/weekly-sync}:pstn-mute') == 2 ]]
echo "smoke test passed"
