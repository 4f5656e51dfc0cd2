#!/usr/bin/env bash
# Cold start of the Hedgerow JVM builds: process start -> first routed response, and resident memory.
#
#   scripts/bench.d/coldstart.sh            (scripts/bench calls it; runs alone too)
#
# Variants, each built from a private copy of the sources (so a build here never races a developer's target/):
#   jvm      Java 17, the fast-jar (target/quarkus-app)
#   appcds   Java 17 + AppCDS     (-Dquarkus.package.jar.appcds.enabled=true; run from the folder it was built in)
#   aot      JDK 25 + AOT cache   (-Dquarkus.package.jar.aot.enabled=true ...aot.type=AOT ...aot.phase=BUILD,
#                                  run with -XX:AOTCache=app.aot from inside the app folder)
# For each, RUNS (default 3) cold starts on the bundled demo config (in-memory state, simulated providers):
#   ready  = process start -> first 200 on GET /q/health/ready
#   chat   = process start -> first 200 on POST /v1/chat/completions (demo key, alias kimi3, max_tokens 1;
#            includes the demo simulator's scripted time to first token, 150-500 ms)
#   rss    = VmRSS of the process right after that first response
# and prints the medians as a table (also written to bench-results/coldstart.md).
#
# Env: RUNS (3), JAVA17 (java on PATH), JDK25_HOME (/usr/lib/jvm/temurin-25-jdk-amd64), VARIANTS ("jvm appcds aot"),
#      REUSE_BUILDS=1 to measure the builds of a previous run again.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

RUNS="${RUNS:-3}"
JAVA17="${JAVA17:-java}"
JDK25_HOME="${JDK25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
VARIANTS="${VARIANTS:-jvm appcds aot}"
work="$root/bench-results/tmp/coldstart"
out_md="$root/bench-results/coldstart.md"
mkdir -p "$work" "$(dirname "$out_md")"

now_ms() { date +%s%3N; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Copies the tracked sources (plus uncommitted edits) to a private tree for building.
copy_sources() { # dest
  local dest="$1"
  rm -rf "$dest"; mkdir -p "$dest"
  git ls-files -z --cached --others --exclude-standard | grep -zv '^bench-results/' \
    | xargs -0 -I{} cp --parents -a {} "$dest"/ 2>/dev/null || true
  # the wrapper's own files are needed to build offline
  cp -a .mvn mvnw "$dest"/
}

build() { # variant -> prints the app folder
  local v="$1" src="$work/src-$v" log="$work/build-$v.log"
  if [ "${REUSE_BUILDS:-0}" = 1 ] && [ -f "$src/target/quarkus-app/quarkus-run.jar" ]; then
    echo "$src/target/quarkus-app"; return 0
  fi
  copy_sources "$src"
  local args=(-B -q package -DskipTests)
  local java_home=""
  case "$v" in
    jvm) ;;
    appcds) args+=(-Dquarkus.package.jar.appcds.enabled=true) ;;
    aot)
      [ -x "$JDK25_HOME/bin/java" ] || { echo "coldstart: no JDK 25 at $JDK25_HOME" >&2; return 1; }
      java_home="$JDK25_HOME"
      args+=(-Dquarkus.package.jar.aot.enabled=true -Dquarkus.package.jar.aot.type=AOT
             -Dquarkus.package.jar.aot.phase=BUILD) ;;
    *) echo "coldstart: unknown variant $v" >&2; return 1 ;;
  esac
  echo "coldstart: building $v ..." >&2
  if [ -n "$java_home" ]; then
    (cd "$src" && JAVA_HOME="$java_home" PATH="$java_home/bin:$PATH" ./mvnw "${args[@]}") >"$log" 2>&1 \
      || { tail -n 30 "$log" >&2; return 1; }
  else
    (cd "$src" && ./mvnw "${args[@]}") >"$log" 2>&1 || { tail -n 30 "$log" >&2; return 1; }
  fi
  echo "$src/target/quarkus-app"
}

# One cold start; prints "ready_ms chat_ms rss_kb".
run_once() { # variant appdir
  local v="$1" app="$2" port pid t0 ready="" chat="" rss
  port="$(free_port)"
  local java="$JAVA17" jvm_args=()
  case "$v" in
    appcds) jvm_args+=(-XX:SharedArchiveFile=app-cds.jsa -Xshare:auto) ;;
    aot) java="$JDK25_HOME/bin/java"; jvm_args+=(-XX:AOTCache=app.aot) ;;
  esac
  local body='{"model":"kimi3","max_tokens":1,"messages":[{"role":"user","content":"cold start"}]}'
  t0=$(now_ms)
  (cd "$app" && exec env -u HEDGEROW_CONFIG -u REDIS_URL QUARKUS_HTTP_PORT="$port" \
      "$java" "${jvm_args[@]}" -jar quarkus-run.jar) >"$work/run-$v.log" 2>&1 &
  pid=$!
  local deadline=$(( t0 + 60000 ))
  while [ -z "$chat" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 20 "$work/run-$v.log" >&2; echo "coldstart: $v exited early" >&2; return 1
    fi
    [ "$(now_ms)" -lt "$deadline" ] || { kill "$pid"; echo "coldstart: $v did not answer in 60 s" >&2; return 1; }
    if [ -z "$ready" ]; then
      if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/q/health/ready" 2>/dev/null)" = 200 ]; then
        ready=$(( $(now_ms) - t0 ))
      else
        sleep 0.01; continue
      fi
    fi
    if [ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer hr-demo-key' \
          -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$port/v1/chat/completions")" = 200 ]; then
      chat=$(( $(now_ms) - t0 ))
    else
      sleep 0.01
    fi
  done
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "$ready $chat $rss"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A label=([jvm]="Java 17 JVM (fast-jar)" [appcds]="Java 17 + AppCDS" [aot]="JDK 25 + AOT cache")
table="| build | start -> ready (s) | start -> first routed response (s) | RSS after it (MB) | runs |
| --- | ---: | ---: | ---: | ---: |"
for v in $VARIANTS; do
  app="$(build "$v")"
  case "$v" in
    appcds) [ -f "$app/app-cds.jsa" ] || { echo "coldstart: no app-cds.jsa was built" >&2; exit 1; } ;;
    aot) [ -f "$app/app.aot" ] || { echo "coldstart: no app.aot was built" >&2; exit 1; } ;;
  esac
  run_once "$v" "$app" >/dev/null # warm the page cache: the first start after a build reads every jar from disk
  : >"$work/samples-$v"
  for i in $(seq 1 "$RUNS"); do
    s="$(run_once "$v" "$app")"
    echo "coldstart: $v run $i: ready/chat ms, rss kB = $s" >&2
    echo "$s" >>"$work/samples-$v"
  done
  r=$(awk '{print $1}' "$work/samples-$v" | median)
  c=$(awk '{print $2}' "$work/samples-$v" | median)
  m=$(awk '{print $3}' "$work/samples-$v" | median)
  table+=$'\n'"$(printf '| %s | %.2f | %.2f | %.0f | %d |' "${label[$v]}" "$(bc -l <<<"$r/1000")" \
    "$(bc -l <<<"$c/1000")" "$(bc -l <<<"$m/1024")" "$RUNS")"
done

{
  echo "# Cold start (median of $RUNS; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "$table"
} | tee "$out_md"
