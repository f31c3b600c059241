#!/usr/bin/env bash
# Idle CPU of the controller with many paused workspaces: W Workspaces of a
# class without snapshots, created paused (a home claim each, no pod), on
# the local cluster; each controller given (-c) is started, waits until
# every workspace reads Paused and the start's writes are over, then
# stands idle for S seconds, nothing scraping /metrics. Its CPU over those
# seconds is read from /proc/PID/stat (utime + stime). Controllers take
# turns R times, so that the figures of one run compare under the same
# load.
#
#   tests/bench/idle.sh [-w 1000] [-s 60] [-r 2] [-c CONTROLLER]...
#
# Default controller: build/hibernator. Uses the cluster named by
# HIBERNATOR_KUBECONFIG, or brings up its own (and removes it afterwards).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
workspaces=1000
seconds=60
rounds=2
controllers=()
while getopts "w:s:r:c:h" opt; do
  case $opt in
  w) workspaces=$OPTARG ;;
  s) seconds=$OPTARG ;;
  r) rounds=$OPTARG ;;
  c) controllers+=("$OPTARG") ;;
  h)
    sed -n '2,15s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
  *) exit 2 ;;
  esac
done
[ ${#controllers[@]} -gt 0 ] || controllers=("$repo/build/hibernator")

# shellcheck source=tests/bench/lib.sh
. "$repo/tests/bench/lib.sh"
bench_begin idle
ns=idle-bench-$$

start_controller() { # BINARY LOG
  "$1" --kubeconfig "$HIBERNATOR_KUBECONFIG" --namespace "$ns" --leader-elect=false \
    --health-probe-bind-address=0 --metrics-bind-address=0 2>"$2" &
  controller_pid=$!
}
wait_paused() {
  local i got
  for i in $(seq 1 1200); do
    got=$("${kubectl[@]}" -n "$ns" get workspaces -o jsonpath='{range .items[*]}{.status.state}{"\n"}{end}' | grep -c '^Paused$' || true)
    [ "$got" -eq "$workspaces" ] && return 0
    sleep 1
  done
  echo "only $got of $workspaces workspaces reached Paused" >&2
  return 1
}

"${kubectl[@]}" apply -f "$repo/deploy/crds/" >/dev/null
"${kubectl[@]}" wait --for=condition=Established --timeout=60s crd/workspaces.hibernator.dev >/dev/null
"${kubectl[@]}" create namespace "$ns" >/dev/null
"${kubectl[@]}" apply -f - >/dev/null <<YAML
apiVersion: hibernator.dev/v1alpha1
kind: WorkspaceClass
metadata: {name: idle-bench}
spec:
  images: {allowed: ["registry.local/notebook:*"], default: "registry.local/notebook:v1"}
  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
  home: {size: 1Gi}
YAML
for i in $(seq 0 $((workspaces - 1))); do
  printf 'apiVersion: hibernator.dev/v1alpha1\nkind: Workspace\nmetadata: {name: idle-%d}\nspec: {className: idle-bench, paused: true}\n---\n' "$i"
done | "${kubectl[@]}" -n "$ns" apply -f - >/dev/null

echo "idle benchmark: $workspaces paused workspaces, ${seconds} s idle per controller, $rounds rounds"
for round in $(seq 1 "$rounds"); do
  k=0
  for c in "${controllers[@]}"; do
    k=$((k + 1))
    start_controller "$c" "$work/controller-$round-$k.log"
    wait_paused
    sleep 15 # the start's status writes and Events drain
    before=$(bench_cpu_seconds "$controller_pid")
    load_before=$(cut -d' ' -f1 /proc/loadavg)
    sleep "$seconds"
    after=$(bench_cpu_seconds "$controller_pid")
    load_after=$(cut -d' ' -f1 /proc/loadavg)
    rss=$(awk '/^VmRSS/ { print $2 / 1024 " MiB" }' "/proc/$controller_pid/status")
    echo "round $round controller $c: $(awk -v a="$before" -v b="$after" 'BEGIN { printf "%.2f", b - a }') CPU-s in ${seconds} s idle, RSS $rss, load average $load_before -> $load_after"
    bench_stop_controller
  done
done

# Cleaned up with a controller running, which releases the finalizers.
start_controller "${controllers[-1]}" "$work/controller-cleanup.log"
"${kubectl[@]}" delete namespace "$ns" --wait=true --timeout=300s >/dev/null || true
"${kubectl[@]}" delete workspaceclass idle-bench --wait=false >/dev/null || true
echo "logs in $work"
