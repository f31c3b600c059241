#!/usr/bin/env bash
# A resume storm: W paused GPU workspaces (default 1,000) resumed in the
# same second on a cluster with far fewer GPUs (-g, default 50 kwok nodes
# of one GPU each). The controller runs at its default API client limits
# (--kube-api-qps 20 --kube-api-burst 30). Measured from outside:
#
#   - every pod create, counted on the API server's own metrics
#     (apiserver_request_total, verb POST, resource pods), and the most
#     made in any one second (the pods' creationTimestamp), against the
#     client's bound of burst + qps a second;
#   - duplicate pods: a workspace with more than one pod (0 expected);
#   - the final states: as many Running as there are GPUs, the rest
#     WaitingForCapacity, each with the scheduler's reason in its message;
#   - the time from the patches to every workspace in its final state.
#
#   tests/bench/storm.sh [-w 1000] [-g 50] [-b BUILD_DIR] [-c CONTROLLER]
#
# Brings up a local cluster of its own (and removes it afterwards), or uses
# the one HIBERNATOR_KUBECONFIG names.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
workspaces=1000
gpus=50
build=$repo/build
controller=""
while getopts "w:g:b:c:h" opt; do
  case $opt in
  w) workspaces=$OPTARG ;;
  g) gpus=$OPTARG ;;
  b) build=$OPTARG ;;
  c) controller=$OPTARG ;;
  h)
    sed -n '2,20s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
  *) exit 2 ;;
  esac
done
controller=${controller:-$build/hibernator}
bench=$build/tests/scale_bench
ns=storm
qps=20
burst=30

# shellcheck source=tests/bench/lib.sh
. "$repo/tests/bench/lib.sh"
# The controller manager's own client limit (20/s) would make binding the
# claims the slowest part of the set-up.
HIBERNATOR_CONTROLLER_MANAGER_ARGS="--kube-api-qps=300 --kube-api-burst=600" bench_begin storm

gauge() { bench_gauge storm "$1"; } # STATE: workspaces of the class in STATE
pod_posts() {
  "${kubectl[@]}" get --raw /metrics |
    awk '/^apiserver_request_total\{/ && /verb="POST"/ && /resource="pods"/ && /subresource=""/ && /code="201"/ { n += $2 } END { print n + 0 }'
}

bench_gpu_nodes storm-gpu Storm-GPU "$gpus"
bench_crds
"${kubectl[@]}" apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: storm}
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: hibernator.dev/v1alpha1
kind: WorkspaceClass
metadata: {name: storm}
spec:
  images: {allowed: ["registry.local/notebook:*"], default: "registry.local/notebook:v1"}
  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
  home: {size: 1Gi, storageClassName: storm}
  accelerator: {resourceName: nvidia.com/gpu, count: 1, productLabel: nvidia.com/gpu.product, product: Storm-GPU}
  resume: {capacityTimeout: 24h, onCapacityTimeout: Wait}
YAML
"${kubectl[@]}" create namespace "$ns" >/dev/null
"$bench" create "$ns" s- 0 "$workspaces" storm 0 >/dev/null

"$controller" --kubeconfig "$HIBERNATOR_KUBECONFIG" --leader-elect=false --namespace "$ns" \
  --kube-api-qps "$qps" --kube-api-burst "$burst" \
  --health-probe-bind-address=0 --metrics-bind-address=127.0.0.1:0 2>"$work/controller.log" &
controller_pid=$!
port=$(bench_metrics_port "$work/controller.log")
for i in $(seq 1 1800); do
  [ "$(gauge Paused)" -ge "$workspaces" ] && break
  sleep 1
done
[ "$(gauge Paused)" -ge "$workspaces" ] || { echo "not all workspaces paused" >&2; exit 1; }
sleep 20 # the set-up's status writes and Events drain

echo "resume storm: $workspaces paused workspaces, $gpus GPUs, client $qps/s burst $burst;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
posts0=$(pod_posts)
t0=$(date +%s.%N)
"$bench" patch "$ns" s- 0 "$workspaces" '{"spec":{"paused":false}}' | sed 's/^/  /'
final=""
for i in $(seq 1 3600); do
  running=$(gauge Running)
  waiting=$(gauge WaitingForCapacity)
  if [ "$running" -ge "$gpus" ] && [ $((running + waiting)) -ge "$workspaces" ]; then
    final=$(date +%s.%N)
    break
  fi
  sleep 1
done
[ -n "$final" ] || { echo "not settled: $running Running, $waiting WaitingForCapacity" >&2; exit 1; }
posts1=$(pod_posts)

"${kubectl[@]}" -n "$ns" get pods -o json >"$work/pods.json"
"${kubectl[@]}" -n "$ns" get workspaces -o json >"$work/workspaces.json"
python3 - "$work/pods.json" "$work/workspaces.json" "$qps" "$burst" <<'PY'
import collections, json, sys
pods = json.load(open(sys.argv[1]))["items"]
wss = json.load(open(sys.argv[2]))["items"]
qps, burst = float(sys.argv[3]), int(sys.argv[4])
by_ws = collections.Counter(p["metadata"].get("labels", {}).get("hibernator.dev/workspace") for p in pods)
dups = sum(1 for n in by_ws.values() if n > 1)
per_second = collections.Counter(p["metadata"]["creationTimestamp"] for p in pods)
first = min(per_second) if per_second else "-"
last = max(per_second) if per_second else "-"
states = collections.Counter(w.get("status", {}).get("state") for w in wss)
waiting = [w for w in wss if w.get("status", {}).get("state") == "WaitingForCapacity"]
with_reason = sum(1 for w in waiting if "Insufficient nvidia.com/gpu" in w["status"].get("message", ""))
print(f"  pods: {len(pods)} for {len(by_ws)} workspaces, {dups} workspaces with more than one;"
      f" created {first} .. {last}, at most {max(per_second.values()) if per_second else 0} in one"
      f" second (the client's bound: {int(burst + qps)} in the first second, {int(qps)} a second after)")
print(f"  states: " + ", ".join(f"{k} {v}" for k, v in sorted(states.items(), key=str)))
print(f"  WaitingForCapacity with the scheduler's reason (Insufficient nvidia.com/gpu): {with_reason} of {len(waiting)}")
PY
awk -v a="$t0" -v b="$final" -v p0="$posts0" -v p1="$posts1" 'BEGIN {
  printf "  pod creates on the API server: %d; every workspace in its final state %.1f s after the patches\n", p1 - p0, b - a }'
echo "logs in $work"
