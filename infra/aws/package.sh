#!/usr/bin/env bash
# Lays out infra/aws/build/ (the CodeUri of every function): the Quarkus fast-jar, run.sh and the catalog.
#   ./mvnw -B package -DskipTests [-Dquarkus.package.jar.appcds.enabled=true]   then   infra/aws/package.sh [hedgerow.yaml]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/infra/aws/build"
catalog="${1:-$root/infra/aws/hedgerow.yaml}"
[ -d "$root/target/quarkus-app" ] || { echo "build first: ./mvnw -B package -DskipTests" >&2; exit 1; }
[ -f "$catalog" ] || { echo "no catalog at $catalog" >&2; exit 1; }
rm -rf "$out"; mkdir -p "$out"
cp -a "$root/target/quarkus-app/." "$out/"
cp "$root/infra/aws/run.sh" "$out/run.sh"; chmod +x "$out/run.sh"
# a custom runtime (provided.al2023, for the native build) runs ./bootstrap and no exec wrapper: the same script
cp "$root/infra/aws/run.sh" "$out/bootstrap"; chmod +x "$out/bootstrap"
cp "$catalog" "$out/hedgerow.yaml"
echo "infra/aws/build ready: sam deploy --guided -t infra/aws/template.yaml"
