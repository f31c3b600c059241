#!/usr/bin/env bash
# The controller's own latency per snapshot transition, over N pause/resume
# cycles of one workspace with the GKE backend (the snapshot simulator plays
# GKE): from the change that queued the workspace to the request that acts on
# it, for
#   snapshot-ready-to-delete  the PodSnapshot turned Ready -> pod delete sent
#   resume-to-create          spec.paused turned false     -> pod create sent
# The controller logs each as a "transition" line (src/controller/reconciler.c).
#
#   tests/bench/snapshot.sh [-n CYCLES] [-b BUILD_DIR]
#
# Uses the cluster named by HIBERNATOR_KUBECONFIG/HIBERNATOR_CLUSTER_DIR, or
# brings up its own (and removes it afterwards).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cycles=200
build=$repo/build
while getopts "n:b:h" opt; do
  case $opt in
  n) cycles=$OPTARG ;;
  b) build=$OPTARG ;;
  h)
    sed -n '2,13s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
  *) exit 2 ;;
  esac
done

work=$(mktemp -d /tmp/hibernator-snapshot-bench.XXXXXX)
own_cluster=""
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "$own_cluster" ]; then
    "$repo/deploy/local/cluster.sh" down --dir "$own_cluster" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

if [ -z "${HIBERNATOR_KUBECONFIG:-}" ]; then
  own_cluster=$work/cluster
  "$repo/deploy/local/cluster.sh" up --dir "$own_cluster" >/dev/null
  eval "$("$repo/deploy/local/cluster.sh" env --dir "$own_cluster")"
fi
export KUBECONFIG=$HIBERNATOR_KUBECONFIG
kubectl=(kubectl --kubeconfig "$HIBERNATOR_KUBECONFIG")
ns=snapshot-bench-$$

"${kubectl[@]}" apply -f "$repo/deploy/crds/" -f "$repo/deploy/local/podsnapshot-crds.yaml" >/dev/null
"${kubectl[@]}" wait --for=condition=Established --timeout=60s \
  crd/workspaces.hibernator.dev crd/podsnapshots.podsnapshot.gke.io >/dev/null
"${kubectl[@]}" create namespace "$ns" >/dev/null
"${kubectl[@]}" apply -f - >/dev/null <<EOF
apiVersion: podsnapshot.gke.io/v1
kind: PodSnapshotStorageConfig
metadata: {name: snapshot-bench}
spec: {snapshotStorageConfig: {gcs: {bucket: local}}}
---
apiVersion: hibernator.dev/v1alpha1
kind: WorkspaceClass
metadata: {name: snapshot-bench}
spec:
  images: {allowed: ["registry.local/notebook:*"], default: "registry.local/notebook:v1"}
  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
  home: {size: 1Gi}
  pause: {gracePeriodSeconds: 1}
  snapshot: {backend: GKE, storageConfigName: snapshot-bench, timeout: 60s, keep: 2}
EOF

"$build/tests/snapshot_simulator" --kubeconfig "$HIBERNATOR_KUBECONFIG" --namespace "$ns" \
  --checkpoint-delay 100ms --delete-delay 100ms 2>"$work/simulator.log" &
pids+=($!)
"$build/hibernator" --kubeconfig "$HIBERNATOR_KUBECONFIG" --namespace "$ns" --leader-elect=false \
  --health-probe-bind-address=0 --metrics-bind-address=0 2>"$work/controller.log" &
pids+=($!)

state() {
  "${kubectl[@]}" -n "$ns" get workspace bench -o jsonpath='{.status.state}' 2>/dev/null || true
}
wait_state() {
  local want=$1 i
  for i in $(seq 1 600); do
    [ "$(state)" = "$want" ] && return 0
    sleep 0.1
  done
  echo "workspace never reached $want (state $(state))" >&2
  return 1
}
set_paused() {
  "${kubectl[@]}" -n "$ns" patch workspace bench --type=merge -p "{\"spec\":{\"paused\":$1}}" >/dev/null
}

"${kubectl[@]}" -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: hibernator.dev/v1alpha1
kind: Workspace
metadata: {name: bench}
spec: {className: snapshot-bench}
EOF
wait_state Running
start=$(date +%s)
for c in $(seq 1 "$cycles"); do
  set_paused true
  wait_state Paused
  set_paused false
  wait_state Running
  [ $((c % 20)) -eq 0 ] && echo "  $c cycles" >&2
done
wall=$(($(date +%s) - start))
# With the simulator still running, so GKE's finalizer is released.
"${kubectl[@]}" -n "$ns" delete workspace bench --wait=true --timeout=60s >/dev/null || true

summary() {
  local step=$1
  grep 'msg="transition"' "$work/controller.log" | grep "step=$step" |
    sed -n 's/.*latency_us=\([0-9]*\).*/\1/p' | sort -n |
    awk -v step="$step" '{ v[NR] = $1 } END {
      if (NR == 0) { printf "%-26s no samples\n", step; exit }
      p50 = v[int((NR + 1) * 0.50)]; p90 = v[int((NR * 0.90) + 0.5)]; p99 = v[int((NR * 0.99) + 0.5)]
      if (p90 == "") p90 = v[NR]; if (p99 == "") p99 = v[NR]
      printf "%-26s %5d samples  median %6.2f ms  p90 %6.2f ms  p99 %6.2f ms  max %6.2f ms\n",
             step, NR, p50 / 1000, p90 / 1000, p99 / 1000, v[NR] / 1000
      printf "RESULT snapshot_bench step=%s samples=%d median_ms=%.2f p99_ms=%.2f max_ms=%.2f\n",
             step, NR, p50 / 1000, p99 / 1000, v[NR] / 1000 > "/dev/stderr"
    }'
}
echo "snapshot benchmark: $cycles pause/resume cycles in ${wall} s"
summary snapshot-ready-to-delete
summary resume-to-create
"${kubectl[@]}" delete namespace "$ns" --wait=false >/dev/null
