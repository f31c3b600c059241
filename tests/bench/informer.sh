#!/usr/bin/env bash
# Informer benchmark: RSS after syncing N small custom objects, time to sync,
# and watch events applied per second. Brings up its own local cluster unless
# HIBERNATOR_CLUSTER_DIR names a running one.
#
#   tests/bench/informer.sh [N] [BUILD_DIR]     (defaults: 10000, build)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-10000}
build=${2:-$repo/build}
bench=$build/tests/informer_bench

own=""
if [ -z "${HIBERNATOR_CLUSTER_DIR:-}" ]; then
  own=$(mktemp -d /tmp/hibernator-bench.XXXXXX)
  "$repo/deploy/local/cluster.sh" up --dir "$own" >&2
  HIBERNATOR_CLUSTER_DIR=$own
fi
cleanup() {
  [ -z "$own" ] || "$repo/deploy/local/cluster.sh" down --dir "$own" >/dev/null 2>&1 || true
}
trap cleanup EXIT
# shellcheck disable=SC1091
. "$HIBERNATOR_CLUSTER_DIR/env"

ns=bench-$$
kubectl apply -f "$repo/tests/bench/widgets-crd.yaml" >/dev/null
kubectl wait --for=condition=Established crd/widgets.bench.hibernator.dev --timeout=60s >/dev/null
kubectl create namespace "$ns" >/dev/null

"$bench" create "$ns" "$n"
errlog=$(mktemp)
# Each mode: sync in a fresh process, then apply one update of every object.
for mode in watch watch-typed; do
  : >"$errlog"
  "$bench" "$mode" "$ns" "$n" 2>"$errlog" &
  watcher=$!
  for _ in $(seq 1 600); do
    grep -q READY "$errlog" && break
    sleep 0.1
  done
  "$bench" update "$ns" "$n"
  wait "$watcher"
done
kubectl delete namespace "$ns" --wait=false >/dev/null
rm -f "$errlog"
