#!/usr/bin/env bash
# Builds Hedgerow at another commit, for an A/B overhead run on a noisy host:
#
#   jar=$(scripts/bench.d/baseline.sh 7960b7b)
#   BENCH_BASELINE_JAR=$jar BENCH_OVERHEAD_QUICK=1 scripts/bench overhead
#
# The quick overhead run then measures that build ("baseline") next to this one, rounds interleaved. The build is a
# git worktree under ${TMPDIR:-/tmp}/hedgerow-baseline-<commit> (kept for later runs); prints its quarkus-run.jar.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
rev="${1:?usage: scripts/bench.d/baseline.sh <commit>}"
sha="$(git -C "$ROOT" rev-parse --short "$rev^{commit}")"
dir="${TMPDIR:-/tmp}/hedgerow-baseline-$sha"
jar="$dir/target/quarkus-app/quarkus-run.jar"
if [ ! -f "$jar" ]; then
  [ -d "$dir" ] || git -C "$ROOT" worktree add --detach "$dir" "$sha" >&2
  (cd "$dir" && ./mvnw -B -q package -DskipTests >&2)
fi
echo "$jar"
