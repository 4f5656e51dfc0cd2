# Shared by scripts/bench and the scripts in scripts/bench.d: paths, build, test classpath, the Java runner.
# Expects ROOT (the repository). Sets BENCH_OUT (bench-results/) and BENCH_CP.
BENCH_OUT="${BENCH_OUT:-$ROOT/bench-results}"
export BENCH_OUT
BENCH_TMP="$BENCH_OUT/tmp"   # gitignored: catalogs, process logs, the cached classpath

bench_prepare() {
  mkdir -p "$BENCH_OUT/sections" "$BENCH_TMP"
  command -v redis-server >/dev/null 2>&1 || "$ROOT/scripts/redis" install
  if [ "${BENCH_SKIP_BUILD:-0}" != 1 ] || [ ! -f "$ROOT/target/quarkus-app/quarkus-run.jar" ]; then
    echo "building the packaged app (./mvnw -B -q package -DskipTests) ..." >&2
    (cd "$ROOT" && ./mvnw -B -q package -DskipTests) >"$BENCH_TMP/build.log" 2>&1 \
      || { tail -n 40 "$BENCH_TMP/build.log" >&2; echo "scripts/bench: build failed" >&2; exit 1; }
  fi
  local sum cpfile
  sum="$(sha256sum "$ROOT/pom.xml" | cut -c1-16)"
  cpfile="$BENCH_TMP/classpath-$sum.txt"
  if [ ! -s "$cpfile" ]; then
    (cd "$ROOT" && ./mvnw -B -q dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile="$cpfile") \
      >"$BENCH_TMP/classpath.log" 2>&1 || { tail -n 20 "$BENCH_TMP/classpath.log" >&2; exit 1; }
  fi
  BENCH_CP="$ROOT/target/test-classes:$ROOT/target/classes:$(cat "$cpfile")"
  export BENCH_CP
  BENCH_STAMP="$(date -u +%Y-%m-%dT%H:%MZ), commit $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?'), \
$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), load average at start $(cut -d" " -f1 /proc/loadavg)"
  export BENCH_STAMP
}

bench_java() { # bench name
  # shellcheck disable=SC2086 # BENCH_JAVA_OPTS: extra options for the bench's own JVM (load and simulator), split
  java -Xms128m -Xmx1g ${BENCH_JAVA_OPTS:-} -Djava.awt.headless=true -Djava.util.logging.manager=org.jboss.logmanager.LogManager -cp "$BENCH_CP" dev.hedgerow.bench.BenchMain "$1" "$ROOT" "$BENCH_OUT"
}
