#!/usr/bin/env bash
# Installs the peer gateway for the overhead benchmark: @portkey-ai/gateway 1.15.x under bench/node_modules
# (gitignored), with npm, then applies its upstream streaming fix (portkey-patch.mjs, Portkey-AI/gateway#1551).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
command -v node >/dev/null 2>&1 || { echo "portkey.sh: node is required (apt-get install -y nodejs npm)" >&2; exit 1; }
if [ ! -f "$ROOT/bench/node_modules/@portkey-ai/gateway/build/start-server.js" ]; then
  echo "installing @portkey-ai/gateway under bench/node_modules (npm) ..." >&2
  (cd "$ROOT/bench" && npm install --no-audit --no-fund >/dev/null)
fi
node "$ROOT/scripts/bench.d/portkey-patch.mjs" "$ROOT/bench/node_modules/@portkey-ai/gateway/build/start-server.js"
