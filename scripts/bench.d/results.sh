#!/usr/bin/env bash
# Assembles bench-results/RESULTS.md from the sections the benchmarks wrote (bench-results/sections/<name>.md),
# in a fixed order; a benchmark that has not run yet keeps no section. coldstart.sh may write sections/coldstart.md.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${BENCH_OUT:-$ROOT/bench-results}"
{
  echo "# Hedgerow benchmark results"
  echo
  echo "Made with \`scripts/bench\` (each section names its own command, date, commit and machine). Every figure in a"
  echo "table is from one run on a shared 2-core machine, where the compared variants ran side by side; compare"
  echo "within a table, not across sections or runs. Earlier runs' figures, and what changed between them, are in"
  echo "[HISTORY.md](HISTORY.md)."
  for s in overhead hedging routing chaos soak coldstart; do
    if [ -f "$OUT/sections/$s.md" ]; then
      echo
      cat "$OUT/sections/$s.md"
    fi
  done
} >"$OUT/RESULTS.md"
