#!/usr/bin/env bash
# The morning rush under Kueue: two teams, W paused GPU workspaces each
# (default 100), resumed in the same second; each team's ClusterQueue has
# G/2 GPUs of quota (default G = 20, kwok nodes of one GPU each) in one
# cohort, so neither team borrows while the other waits. The controller
# runs at its default API client limits. Measured from the API server's
# objects, per team:
#
#   - time from a workspace's resume (status.lastResume.requestedAt) to
#     Kueue's admission (its pod's Workload: QuotaReserved=True) and to
#     ready (lastResume.readyAt), median and largest;
#   - how many of each team Kueue admitted (fairness between teams), and
#     the order within a team: an admitted workspace whose Workload is
#     younger than one still waiting in its team's queue is counted (an
#     order other than first come, first served);
#   - the ones waiting: state Queued, each with its queue and its place;
#   - then the running ones are paused at once and the next wave is
#     admitted: the same figures for it.
#
#   tests/bench/rush.sh [-w 100] [-g 20] [-r] [-b BUILD_DIR] [-c CONTROLLER]
#
# -r: the ClusterQueues reclaim their quota from a team that borrowed it
# (preemption.reclaimWithinCohort: Any); without it, quota one team
# borrowed while the other's resumes were on their way stays borrowed.
#
# Brings up a local cluster of its own with Kueue (cluster.sh up --kueue)
# and removes it afterwards.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
per_team=100
gpus=20
build=$repo/build
controller=""
reclaim=Never
while getopts "w:g:rb:c:h" opt; do
  case $opt in
  w) per_team=$OPTARG ;;
  r) reclaim=Any ;;
  g) gpus=$OPTARG ;;
  b) build=$OPTARG ;;
  c) controller=$OPTARG ;;
  h)
    sed -n '2,26s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
  *) exit 2 ;;
  esac
done
controller=${controller:-$build/hibernator}
bench=$build/tests/scale_bench
((gpus % 2 == 0)) || {
  echo "-g must be even (half the GPUs are each team's quota)" >&2
  exit 2
}
quota=$((gpus / 2))
teams=(rush-a rush-b)

# shellcheck source=tests/bench/lib.sh
. "$repo/tests/bench/lib.sh"
unset HIBERNATOR_KUBECONFIG
bench_cluster_args=(--kueue)
HIBERNATOR_CONTROLLER_MANAGER_ARGS="--kube-api-qps=300 --kube-api-burst=600" bench_begin rush

gauge() { bench_gauge rush "$1"; } # STATE: workspaces of the class in STATE
total=$((2 * per_team))
gauge_interrupted() { # interruptions recorded in the Workspaces' status
  local t n=0
  for t in "${teams[@]}"; do
    n=$((n + $("${kubectl[@]}" -n "$t" get workspaces -o jsonpath='{range .items[*]}{.status.interruptions.count}{"\n"}{end}' |
      awk '{ n += $1 } END { print n + 0 }')))
  done
  echo "$n"
}

bench_gpu_nodes rush-gpu Rush-GPU "$gpus"
bench_crds
{
  cat <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: rush}
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: rush-gpu}
spec: {nodeLabels: {nvidia.com/gpu.product: Rush-GPU}}
---
apiVersion: hibernator.dev/v1alpha1
kind: WorkspaceClass
metadata: {name: rush}
spec:
  images: {allowed: ["registry.local/notebook:*"], default: "registry.local/notebook:v1"}
  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
  home: {size: 1Gi, storageClassName: rush}
  accelerator: {resourceName: nvidia.com/gpu, count: 1, productLabel: nvidia.com/gpu.product, product: Rush-GPU}
  resume: {capacityTimeout: 24h, onCapacityTimeout: Wait}
  queue: {localQueue: gpus}
YAML
  for t in "${teams[@]}"; do
    cat <<YAML
---
apiVersion: v1
kind: Namespace
metadata: {name: $t}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $t}
spec:
  cohortName: rush
  preemption: {reclaimWithinCohort: $reclaim}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $t}}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: rush-gpu
      resources:
      - {name: cpu, nominalQuota: "1000"}
      - {name: memory, nominalQuota: 4000Gi}
      - {name: nvidia.com/gpu, nominalQuota: "$quota", borrowingLimit: "$quota"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: gpus, namespace: $t}
spec: {clusterQueue: $t}
YAML
  done
} | "${kubectl[@]}" apply -f - >/dev/null
for t in "${teams[@]}"; do
  "$bench" create "$t" w- 0 "$per_team" rush 0 >/dev/null
done

"$controller" --kubeconfig "$HIBERNATOR_KUBECONFIG" --leader-elect=false \
  --kueue-visibility-server="$HIBERNATOR_KUEUE_VISIBILITY_URL" \
  --health-probe-bind-address=0 --metrics-bind-address=127.0.0.1:0 2>"$work/controller.log" &
controller_pid=$!
port=$(bench_metrics_port "$work/controller.log")
for i in $(seq 1 1800); do
  [ "$(gauge Paused)" -ge "$total" ] && break
  sleep 1
done
[ "$(gauge Paused)" -ge "$total" ] || {
  echo "not all workspaces paused" >&2
  exit 1
}
sleep 10 # the set-up's status writes and Events drain

# settle RUNNING QUEUED PAUSED: waits until exactly that many workspaces
# are Running, Queued and Paused, three seconds in a row (a preemption
# moves a Running one back to the queue).
settle() {
  local i running queued paused stable=0
  for i in $(seq 1 1800); do
    running=$(gauge Running)
    queued=$(gauge Queued)
    paused=$(gauge Paused)
    if [ "$running" = "$1" ] && [ "$queued" = "$2" ] && [ "$paused" = "$3" ]; then
      stable=$((stable + 1))
      ((stable < 3)) || return 0
    else
      stable=0
    fi
    sleep 1
  done
  echo "not settled: $running Running, $queued Queued, $paused Paused" >&2
  return 1
}

# report WAVE: the figures of the workspaces admitted since the last one,
# from the Workspaces, pods and Workloads of both teams.
report() {
  local t
  for t in "${teams[@]}"; do
    "${kubectl[@]}" -n "$t" get workspaces -o json >"$work/$1-$t-workspaces.json"
    "${kubectl[@]}" -n "$t" get pods -o json >"$work/$1-$t-pods.json"
    "${kubectl[@]}" -n "$t" get workloads.kueue.x-k8s.io -o json >"$work/$1-$t-workloads.json"
  done
  python3 - "$work" "$1" "${teams[@]}" <<'PY'
import json, statistics, sys
from datetime import datetime
work, wave, teams = sys.argv[1], sys.argv[2], sys.argv[3:]
def t(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() if s else None
def load(team, kind):
    return json.load(open(f"{work}/{wave}-{team}-{kind}.json"))["items"]
def med(xs):
    return f"{statistics.median(xs):.1f} s (largest {max(xs):.1f} s)" if xs else "-"
for team in teams:
    pods = {p["metadata"]["uid"]: p for p in load(team, "pods")}
    admitted_at, made_at = {}, {}
    for w in load(team, "workloads"):
        uid = w["metadata"].get("labels", {}).get("kueue.x-k8s.io/job-uid")
        made_at[uid] = t(w["metadata"]["creationTimestamp"])
        for c in w.get("status", {}).get("conditions", []):
            if c["type"] == "QuotaReserved" and c["status"] == "True":
                admitted_at[uid] = t(c["lastTransitionTime"])
    to_admit, to_ready, running, waiting = [], [], [], []
    places = 0
    for ws in load(team, "workspaces"):
        st = ws.get("status", {})
        lr = st.get("lastResume", {})
        req = t(lr.get("requestedAt"))
        pod = next((p for p in pods.values() if p["metadata"]["name"] == st.get("podName")), None)
        created = made_at.get(pod["metadata"]["uid"]) if pod else None
        if st.get("state") == "Running" and req and lr.get("readyAt"):
            running.append((created, ws["metadata"]["name"]))
            if pod and pod["metadata"]["uid"] in admitted_at:
                to_admit.append(admitted_at[pod["metadata"]["uid"]] - req)
            to_ready.append(t(lr["readyAt"]) - req)
        elif st.get("state") == "Queued":
            waiting.append((created, ws["metadata"]["name"]))
            places += ", number " in st.get("message", "")
    oldest_waiting = min((c for c, _ in waiting if c), default=None)
    inversions = sum(1 for c, _ in running if oldest_waiting and c and c > oldest_waiting)
    print(f"  {team}: {len(running)} running, {len(waiting)} Queued ({places} saying their place);"
          f" resume to admission {med(to_admit)}, to ready {med(to_ready)};"
          f" admitted with a Workload younger than one still waiting: {inversions}")
PY
}

echo "morning rush: 2 teams x $per_team paused workspaces, $gpus GPUs, $quota each team's quota," \
  "reclaimWithinCohort $reclaim;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s.%N)
patchers=()
for t in "${teams[@]}"; do
  "$bench" patch "$t" w- 0 "$per_team" '{"spec":{"paused":false}}' >"$work/patch-$t.log" &
  patchers+=($!)
done
wait "${patchers[@]}"
settle "$gpus" $((total - gpus)) 0
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v n="$(gauge_interrupted)" 'BEGIN {
  printf "wave 1: %d Running and the rest Queued (3 s in a row) %.1f s after the resumes; %d interruptions\n", '"$gpus"', b - a - 2, n }'
report wave1

# The first wave pauses at once: the next is admitted.
for t in "${teams[@]}"; do
  "${kubectl[@]}" -n "$t" get workspaces -o json |
    python3 -c 'import json,sys; print("\n".join(w["metadata"]["name"] for w in json.load(sys.stdin)["items"] if w.get("status",{}).get("state")=="Running"))' \
      >"$work/wave1-$t.names"
done
t0=$(date +%s.%N)
patchers=()
for t in "${teams[@]}"; do
  while read -r name; do
    "${kubectl[@]}" -n "$t" patch workspace "$name" --type=merge -p '{"spec":{"paused":true}}' >/dev/null &
    patchers+=($!)
  done <"$work/wave1-$t.names"
done
wait "${patchers[@]}"
settle "$gpus" $((total - 2 * gpus)) "$gpus"
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v n="$(gauge_interrupted)" 'BEGIN {
  printf "wave 2: the first wave Paused and the next Running (3 s in a row) %.1f s after the pauses; %d interruptions in all\n", b - a - 2, n }'
report wave2
echo "logs in $work"
