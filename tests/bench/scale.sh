#!/usr/bin/env bash
# The whole controller at many workspaces: for each count W (default 1,000,
# 10,000 and 50,000), W Workspaces in 10 namespaces, a share of them running
# (-f, default 0.1: every tenth, with a pod on a kwok node) and the rest
# paused (a home claim each, no pod). The workspaces are made cumulatively
# through the project's own client (tests/scale_bench, many requests in
# flight), then for each W:
#
#   first start   a fresh controller reconciles the new ones (claims, pods,
#                 statuses): time until every workspace reads its state
#   restart       a fresh controller on settled workspaces: CPU and time
#                 until every workspace was reconciled once and the queue is
#                 empty (controller_runtime_reconcile_total, workqueue_depth)
#   idle          S seconds (-s, default 60), nothing scraping: CPU, RSS (and
#                 its anonymous part, smaps), and the peak RSS (VmHWM)
#   updates       an annotation patched on 1,000 workspaces: CPU per
#                 watch event, the reconciler's own time per reconcile
#                 (controller_runtime_reconcile_time_seconds sum / count) and
#                 its CPU (hibernator_reconcile_cpu_seconds_total / count)
#
# and, at the end, a census of one namespace's caches by part
# (scale_bench census). Prints one line per W; the figures go to
# docs/benchmarks.md. The work directory it names at the end keeps the
# controllers' logs, the writers' summaries (writes.log: writes sent again
# after a broken connection, writes failed) and, with a cluster of its own,
# the cluster's component logs (cluster-logs/).
#
#   tests/bench/scale.sh [-w "1000 10000 50000"] [-f 0.1] [-s 60] [-b BUILD_DIR] [-c CONTROLLER]...
#
# -c may be given several times (an older build first, say): the first
# makes the first start, then each in turn is measured from its restart
# on, under the same load. The controller runs with --kube-api-qps 500 --kube-api-burst 1000 (the
# defaults, 20/30, would take most of an hour to write 50,000 statuses);
# default controller BUILD_DIR/hibernator. Uses the cluster named by
# HIBERNATOR_KUBECONFIG, or brings up its own (and removes it afterwards).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
counts="1000 10000 50000"
running_share=0.1
seconds=60
build=$repo/build
controllers=()
while getopts "w:f:s:b:c:h" opt; do
  case $opt in
  w) counts=$OPTARG ;;
  f) running_share=$OPTARG ;;
  s) seconds=$OPTARG ;;
  b) build=$OPTARG ;;
  c) controllers+=("$OPTARG") ;;
  h)
    sed -n '2,36s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
  *) exit 2 ;;
  esac
done
[ ${#controllers[@]} -gt 0 ] || controllers=("$build/hibernator")
controller=${controllers[0]}
bench=$build/tests/scale_bench
namespaces=10

# shellcheck source=tests/bench/lib.sh
. "$repo/tests/bench/lib.sh"
# The controller manager's own client limit (20/s) would make binding the
# running share's claims the slowest part of the run.
HIBERNATOR_CONTROLLER_MANAGER_ARGS="--kube-api-qps=300 --kube-api-burst=600" bench_begin scale

start_controller() { # LOG
  "$controller" --kubeconfig "$HIBERNATOR_KUBECONFIG" --leader-elect=false \
    --kube-api-qps 500 --kube-api-burst 1000 \
    --health-probe-bind-address=0 --metrics-bind-address=127.0.0.1:0 2>"$1" &
  controller_pid=$!
  port=$(bench_metrics_port "$1")
}
status_mib() { # FIELD: VmRSS or VmHWM of the controller, MiB
  awk -v f="$1:" '$1 == f { printf "%.1f\n", $2 / 1024 }' "/proc/$controller_pid/status"
}
scrape() { curl -sf "http://127.0.0.1:$port/metrics" || true; }
# metric NAME [LABEL_RE]: the sum of the samples of NAME whose labels match.
metric() {
  scrape | awk -v n="$1" -v l="${2:-}" '
    { split($1, a, "{") } a[1] == n && (l == "" || $1 ~ l) { s += $2 } END { printf "%.0f\n", s + 0 }'
}
metric_float() {
  scrape | awk -v n="$1" '{ split($1, a, "{") } a[1] == n { s += $2 } END { printf "%.6f\n", s + 0 }'
}
# Waits until the workspaces gauge reads W in state Paused + Running.
wait_settled() { # W
  local i got
  for i in $(seq 1 3600); do
    got=$(metric hibernator_workspaces 'state="(Paused|Running)"')
    [ "$got" -ge "$1" ] && return 0
    sleep 1
  done
  echo "only $got of $1 workspaces settled" >&2
  return 1
}
# Waits until the controller has reconciled at least N times and its queue
# is empty.
wait_reconciled() { # N
  local i got depth
  for i in $(seq 1 36000); do
    got=$(metric controller_runtime_reconcile_total)
    depth=$(metric workqueue_depth)
    [ "$got" -ge "$1" ] && [ "$depth" -eq 0 ] && return 0
    sleep 0.1
  done
  echo "reconciled $got of $1 (queue $depth)" >&2
  return 1
}

# Nodes for the running share: kwok plays their pods.
nodes=$(awk -v c="${counts##* }" -v f="$running_share" 'BEGIN { n = int(c * f / 1000) + 1; print n }')
for k in $(seq 1 "$nodes"); do
  cat <<YAML
apiVersion: v1
kind: Node
metadata:
  name: scale-node-$k
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {type: kwok, kubernetes.io/hostname: scale-node-$k}
spec:
  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]
status:
  capacity: {cpu: "1000", memory: 4000Gi, pods: "1100"}
  allocatable: {cpu: "1000", memory: 4000Gi, pods: "1100"}
---
YAML
done | "${kubectl[@]}" apply -f - >/dev/null
"${kubectl[@]}" apply -f "$repo/deploy/crds/" >/dev/null
"${kubectl[@]}" wait --for=condition=Established --timeout=60s crd/workspaces.hibernator.dev >/dev/null
# Claims bind when a pod needs them: the paused workspaces' claims stay
# Pending (a volume each would be 50,000 directories and PersistentVolumes
# to make); the controller caches them all the same.
"${kubectl[@]}" apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: scale-bench}
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: hibernator.dev/v1alpha1
kind: WorkspaceClass
metadata: {name: scale-bench}
spec:
  images: {allowed: ["registry.local/notebook:*"], default: "registry.local/notebook:v1"}
  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
  home: {size: 1Gi, storageClassName: scale-bench}
YAML
for n in $(seq 0 $((namespaces - 1))); do
  "${kubectl[@]}" create namespace "scale-$n" --dry-run=client -o yaml | "${kubectl[@]}" apply -f - >/dev/null
done

# Every how many workspaces one runs.
every=$(awk -v f="$running_share" 'BEGIN { print (f > 0) ? int(1 / f + 0.5) : 0 }')

echo "scale benchmark: counts $counts, running share $running_share, $seconds s idle," \
  "controller $controller; load average $(cut -d' ' -f1-3 /proc/loadavg)"
made=0
for w in $counts; do
  per_ns=$((w / namespaces))
  t0=$(date +%s.%N)
  pids=()
  for n in $(seq 0 $((namespaces - 1))); do
    "$bench" create "scale-$n" s- $((made / namespaces)) "$per_ns" scale-bench "$every" >>"$work/writes.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  made=$w
  create_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')

  # First start: the new workspaces get their claims, pods and statuses.
  start_controller "$work/first-$w.log"
  t0=$(date +%s.%N)
  wait_settled "$w"
  first_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  sleep 10
  bench_stop_controller

  k=0
  for controller in "${controllers[@]}"; do
    k=$((k + 1))
    name=$k:$(basename "$(dirname "$controller")")
    # Restart on settled workspaces.
    start_controller "$work/restart-$w-$k.log"
    t0=$(date +%s.%N)
    wait_reconciled "$w"
    sync_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    sync_cpu=$(bench_cpu_seconds "$controller_pid")
    # Lists that waited for their timeout, and the client's pokes of a
    # stalled connection (docs/architecture.md, "The API client's connection").
    sync_timeouts=$(grep -c "list failed, retrying.*timed out" "$work/restart-$w-$k.log" || true)
    sync_pokes=$(metric hibernator_client_connection_pokes_total)
    sleep 10

    # Idle, nothing scraping.
    load0=$(cut -d' ' -f1 /proc/loadavg)
    c0=$(bench_cpu_seconds "$controller_pid")
    sleep "$seconds"
    c1=$(bench_cpu_seconds "$controller_pid")
    load1=$(cut -d' ' -f1 /proc/loadavg)
    idle_cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')
    rss=$(status_mib VmRSS)
    peak=$(status_mib VmHWM)
    # smaps: the anonymous part (the heap and stacks: what grows with the
    # count; the rest is the binary and its libraries).
    anon=$(awk '$1 == "Anonymous:" { printf "%.1f\n", $2 / 1024 }' "/proc/$controller_pid/smaps_rollup")

    # 1,000 updates: an annotation on 100 workspaces of each namespace (a
    # share of them running, as of all).
    r0=$(metric controller_runtime_reconcile_total)
    rt0=$(metric_float controller_runtime_reconcile_time_seconds_sum)
    rn0=$(metric controller_runtime_reconcile_time_seconds_count)
    rc0=$(metric_float hibernator_reconcile_cpu_seconds_total)
    c0=$(bench_cpu_seconds "$controller_pid")
    pids=()
    for n in $(seq 0 $((namespaces - 1))); do
      "$bench" patch "scale-$n" s- 0 100 '{"metadata":{"annotations":{"bench/touch":"%p"}}}' >>"$work/writes.log" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    wait_reconciled $((r0 + 1000))
    c1=$(bench_cpu_seconds "$controller_pid")
    rt1=$(metric_float controller_runtime_reconcile_time_seconds_sum)
    rn1=$(metric controller_runtime_reconcile_time_seconds_count)
    rc1=$(metric_float hibernator_reconcile_cpu_seconds_total)
    bench_stop_controller
    touched=$((100 * namespaces))

    awk -v w="$w" -v name="$name" -v cs="$create_s" -v fs="$first_s" -v ss="$sync_s" -v sc="$sync_cpu" \
      -v st="$sync_timeouts" -v sp="$sync_pokes" \
      -v ic="$idle_cpu" -v s="$seconds" -v rss="$rss" -v peak="$peak" -v anon="$anon" \
      -v uc="$(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }')" -v t="$touched" \
      -v rt="$(awk -v a="$rt0" -v b="$rt1" -v x="$rn0" -v y="$rn1" 'BEGIN { if (y > x) printf "%.1f", (b - a) * 1e6 / (y - x); else print "-" }')" \
      -v rc="$(awk -v a="${rc0:-0}" -v b="${rc1:-0}" -v x="$rn0" -v y="$rn1" 'BEGIN { if (y > x && b > a) printf "%.1f", (b - a) * 1e6 / (y - x); else print "-" }')" \
      -v l0="$load0" -v l1="$load1" 'BEGIN {
        printf "W=%d %s: created in %s s; first start %s s; restart: synced in %s s, %.2f CPU-s, %d list timeouts, %d pokes; ", w, name, cs, fs, ss, sc, st, sp
        printf "idle %.2f CPU-s per %d s; RSS %.1f MiB (anonymous %.1f), peak %.1f MiB; ", ic, s, rss, anon, peak
        printf "%d updates: %.2f CPU-s, %.0f us a watch event, %s us a reconcile (%s us of CPU); load %s -> %s\n", t, uc, uc * 1e6 / t, rt, rc, l0, l1
      }'
  done
  controller=${controllers[0]}
done

"$bench" census scale-0 | sed 's/^/census (namespace scale-0): /'

# A cluster of its own goes as a whole; in a given one, the workspaces are
# cleaned up with a controller running, which releases the finalizers.
if [ -z "$own_cluster" ]; then
  start_controller "$work/cleanup.log"
  for n in $(seq 0 $((namespaces - 1))); do
    "${kubectl[@]}" delete namespace "scale-$n" --wait=false >/dev/null || true
  done
  for n in $(seq 0 $((namespaces - 1))); do
    "${kubectl[@]}" wait --for=delete "namespace/scale-$n" --timeout=1800s >/dev/null 2>&1 || true
  done
  bench_stop_controller
  "${kubectl[@]}" delete workspaceclass scale-bench --wait=false >/dev/null || true
  "${kubectl[@]}" delete storageclass scale-bench --wait=false >/dev/null || true
  for k in $(seq 1 "$nodes"); do "${kubectl[@]}" delete node "scale-node-$k" --wait=false >/dev/null || true; done
fi
echo "logs in $work"
