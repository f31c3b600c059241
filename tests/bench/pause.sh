#!/usr/bin/env bash
# Pause latency when many workspaces fall due at once, at the controller's
# default API client limits (--kube-api-qps 20, --kube-api-burst 30): W
# workspaces of a files class (no snapshots) run on kwok nodes; for each N,
# tests/pause_bench patches spec.paused=true on N of them at once and reports,
# from its own watches, the time from each workspace falling due to its pod's
# delete being requested (median, p90, max). Then they are resumed for the
# next N.
#
#   tests/bench/pause.sh [-n "1 30 100"] [-b BUILD_DIR] [-c CONTROLLER]...
#
# -c may be given several times (e.g. an older build first) to compare
# controllers in one run on the same cluster; default: BUILD_DIR/hibernator.
# Uses the cluster named by HIBERNATOR_KUBECONFIG/HIBERNATOR_CLUSTER_DIR, or
# brings up its own (and removes it afterwards).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
sizes="1 30 100"
build=$repo/build
controllers=()
while getopts "n:b:c:h" opt; do
  case $opt in
  n) sizes=$OPTARG ;;
  b) build=$OPTARG ;;
  c) controllers+=("$OPTARG") ;;
  h)
    sed -n '2,15s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
  *) exit 2 ;;
  esac
done
[ ${#controllers[@]} -gt 0 ] || controllers=("$build/hibernator")
total=0
for n in $sizes; do [ "$n" -gt "$total" ] && total=$n; done

# shellcheck source=tests/bench/lib.sh
. "$repo/tests/bench/lib.sh"
bench_begin pause
ns=pause-bench-$$

start_controller() { # BINARY LOG
  "$1" --kubeconfig "$HIBERNATOR_KUBECONFIG" --namespace "$ns" --leader-elect=false \
    --health-probe-bind-address=0 --metrics-bind-address=0 2>"$2" &
  controller_pid=$!
}
# Waits until workspaces bench-0 .. bench-<n-1> are all in state $2.
wait_states() { # N STATE
  local want=$1 state=$2 i got
  for i in $(seq 1 1200); do
    got=$("${kubectl[@]}" -n "$ns" get workspaces -o jsonpath='{range .items[*]}{.metadata.name} {.status.state}{"\n"}{end}' |
      awk -v n="$want" -v s="$state" '{ sub("bench-", "", $1) } ($1 + 0) < n && $2 == s' | wc -l)
    [ "$got" -eq "$want" ] && return 0
    sleep 0.5
  done
  echo "only $got of $want workspaces reached $state" >&2
  return 1
}
set_paused() { # N true|false
  local names=() i
  for i in $(seq 0 $(($1 - 1))); do names+=("bench-$i"); done
  "${kubectl[@]}" -n "$ns" patch workspaces "${names[@]}" --type=merge -p "{\"spec\":{\"paused\":$2}}" >/dev/null
}

"${kubectl[@]}" apply -f "$repo/deploy/crds/" >/dev/null
"${kubectl[@]}" wait --for=condition=Established --timeout=60s crd/workspaces.hibernator.dev >/dev/null
"${kubectl[@]}" create namespace "$ns" >/dev/null
"${kubectl[@]}" apply -f - >/dev/null <<EOF
apiVersion: hibernator.dev/v1alpha1
kind: WorkspaceClass
metadata: {name: pause-bench}
spec:
  images: {allowed: ["registry.local/notebook:*"], default: "registry.local/notebook:v1"}
  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
  home: {size: 1Gi}
  pause: {gracePeriodSeconds: 1}
EOF
for i in $(seq 0 $((total - 1))); do
  printf 'apiVersion: hibernator.dev/v1alpha1\nkind: Workspace\nmetadata: {name: bench-%d}\nspec: {className: pause-bench}\n---\n' "$i"
done | "${kubectl[@]}" -n "$ns" apply -f - >/dev/null

echo "pause benchmark: $total workspaces, default client limits (qps 20, burst 30)"
k=0
for c in "${controllers[@]}"; do
  k=$((k + 1))
  start_controller "$c" "$work/controller-$k.log"
  wait_states "$total" Running
  sleep 5 # let the start's status writes and Events drain
  echo "controller $c"
  for n in $sizes; do
    "$build/tests/pause_bench" "$ns" bench- "$n" >"$work/pause-$k-$n.txt" 2>"$work/pause-$k-$n.err" || true
    grep -h "simultaneous pauses\|patches were answered" "$work/pause-$k-$n.txt" || cat "$work/pause-$k-$n.err" >&2
    grep -h '^RESULT' "$work/pause-$k-$n.err" >&2 || true
    wait_states "$n" Paused
    sleep 5
    set_paused "$n" false
    wait_states "$total" Running
    sleep 5
  done
  bench_stop_controller
done

# Cleaned up with a controller running, which releases the finalizers.
start_controller "${controllers[-1]}" "$work/controller-cleanup.log"
"${kubectl[@]}" delete namespace "$ns" --wait=true --timeout=120s >/dev/null || true
"${kubectl[@]}" delete workspaceclass pause-bench --wait=false >/dev/null || true
echo "logs in $work"
