#!/usr/bin/env bash
# Builds boardline's image from this checkout with podman: `podman build .` (Containerfile at the
# repository root), plus what a release wants.
#   bash deploy/image/build.sh [more podman build options...]
# Environment:
#   IMAGE_TAG     the tag (default localhost/boardline:<package.json version>)
#   BASE          the runtime stage's base, BUILD_BASE the build stage's (default
#                 localhost/deploy/image/build-base.sh:bookworm and :bookworm-build, which
#                 deploy/image/build-base.sh builds from Debian's packages when they are missing or
#                 were built by another version of that script: it labels them with its sha256);
#                 e.g. BASE=docker.io/library/debian:bookworm-slim where a registry can be pulled from
#   IMAGE_SOURCE  the org.opencontainers.image.source label (default: the git remote's URL, if any)
#   BUILD_CA_FILE CA certificates the build stage's node and npm trust besides Node's own, for a
#                 registry behind a TLS-intercepting proxy (default: NODE_EXTRA_CA_CERTS, else npm's
#                 configured cafile, if any: the CAs the npm here trusts); passed as the build secret
#                 build-ca, so it stays out of the layer cache's keys
#
# What it does besides `podman build .`:
# - builds the bases when they are missing or stale;
# - refuses to build when the Containerfile's ENTRYPOINT flags differ from package.json's
#   config.nodeFlags (an exec-form ENTRYPOINT cannot take them from a build argument);
# - passes the version, revision, source and licence labels (with --label: podman's layer cache would
#   keep an earlier build's values of a LABEL made of build arguments), and --timestamp with the
#   commit's time, so two builds of one commit give the same layers.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"

read -r version licenses < <(node -e '
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

local_base=localhost/deploy/image/build-base.sh
base=${BASE:-$local_base:bookworm}
build_base=${BUILD_BASE:-$local_base:bookworm-build}
recipe=$(sha256sum deploy/image/build-base.sh | cut -d' ' -f1)
for image in "$base" "$build_base"; do
  [[ $image == "$local_base":* ]] || continue
  built=$(podman image inspect --format '{{index .Config.Labels "boardline.base.recipe"}}' "$image" 2>/dev/null || true)
  if [[ $built != "$recipe" ]]; then
    bash deploy/image/build-base.sh "$local_base:bookworm" "$local_base:bookworm-build" >&2
    break
  fi
done
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
source=${IMAGE_SOURCE:-$(git config --get remote.origin.url 2>/dev/null || true)}
tag=${IMAGE_TAG:-localhost/boardline:$version}
ca=${BUILD_CA_FILE:-${NODE_EXTRA_CA_CERTS:-$(npm config get cafile 2>/dev/null || true)}}
secrets=()
[[ -n $ca && -f $ca ]] && secrets=(--secret "id=build-ca,src=$ca")

label=org.opencontainers.image
podman build --file Containerfile --tag "$tag" --timestamp "$epoch" \
  --build-arg BASE="$base" --build-arg BUILD_BASE="$build_base" \
  --label "$label.version=$version" --label "$label.revision=$revision" \
  --label "$label.source=$source" --label "$label.licenses=$licenses" \
  "${secrets[@]}" "$@" .
