#!/usr/bin/env bash
# Soak: workspaces cycle pause and resume for a set time while the controller
# is SIGKILLed every 0.5-3 s and restarted at once, and, in a shuffled round,
# the kube-apiserver is restarted (gracefully or killed), etcd is compacted
# (with or without a restart after it, so watches resume into 410 Gone), and API
# Priority and Fairness rejects the controller's requests with 429 for a
# while. Independent watch recorders (soak_record.py: the API server's own
# view, not the controller's logs) record pods, PodSnapshots, triggers, PVCs,
# Workspaces and Events; soak_check.py then checks that the record never went
# false (docs/benchmarks.md lists the checks) and exits non-zero if it did.
#
#   tests/bench/soak.sh [-t DURATION] [-w N] [-g MIN-MAX] [-s SEED]
#                       [-o OUT_DIR] [-b BUILD_DIR]
#
#   -t  how long the workspaces cycle under faults: 20m (default), 2h, 300s
#   -w  workspaces per class (default 3): snap-1..N (GKE backend, played by
#       the snapshot simulator) and files-1..N (no snapshot backend)
#   -g  seconds between API server faults, drawn from MIN-MAX (default 20-60)
#   -s  seed of the random choices (default: the time)
#   -o  where the recordings, logs and the checker's report go (kept);
#       default a new /tmp/hibernator-soak.XXXXXX
#   -b  the build directory with hibernator and snapshot_simulator (build/)
#
# Uses the cluster named by HIBERNATOR_CLUSTER_DIR (source its env file), or
# brings up its own (and removes it afterwards). Check a run again with
# tests/bench/soak_check.py OUT_DIR.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
duration=20m
per_class=3
gap=20-60
seed=$(date +%s)
out=""
build=$repo/build
settle=45
wait_timeout=120
while getopts "t:w:g:s:o:b:h" opt; do
  case $opt in
  t) duration=$OPTARG ;;
  w) per_class=$OPTARG ;;
  g) gap=$OPTARG ;;
  s) seed=$OPTARG ;;
  o) out=$OPTARG ;;
  b) build=$OPTARG ;;
  h)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *) exit 2 ;;
  esac
done
case $duration in
*h) secs=$((${duration%h} * 3600)) ;;
*m) secs=$((${duration%m} * 60)) ;;
*s) secs=${duration%s} ;;
*) secs=$duration ;;
esac
[[ $secs =~ ^[0-9]+$ ]] && ((secs > 0)) || {
  echo "bad duration: $duration" >&2
  exit 2
}
[[ $gap =~ ^([0-9]+)-([0-9]+)$ ]] && ((BASH_REMATCH[1] <= BASH_REMATCH[2])) || {
  echo "bad gap: $gap" >&2
  exit 2
}
gap_min=${BASH_REMATCH[1]} gap_max=${BASH_REMATCH[2]}
for b in hibernator tests/snapshot_simulator; do
  [ -x "$build/$b" ] || {
    echo "missing $build/$b: build first (cmake --build build)" >&2
    exit 2
  }
done

if [ -z "$out" ]; then out=$(mktemp -d /tmp/hibernator-soak.XXXXXX); fi
mkdir -p "$out/rec" "$out/state" "$out/flags"
out=$(cd "$out" && pwd)
log() { printf '[soak %s] %s\n' "$(date -u +%T)" "$*" >&2; }

own_cluster=""
pids=()
cleanup() {
  local p
  touch "$out/flags/stop-drive" "$out/flags/stop-faults" "$out/flags/stop-kills"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -f "$out/controller.pid" ]; then kill "$(cat "$out/controller.pid")" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  if [ -n "$own_cluster" ]; then
    "$repo/deploy/local/cluster.sh" down --dir "$own_cluster" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

if [ -z "${HIBERNATOR_CLUSTER_DIR:-}" ]; then
  own_cluster=$(mktemp -d /tmp/hibernator-soak-cluster.XXXXXX)
  rmdir "$own_cluster"
  log "bringing up a cluster in $own_cluster"
  "$repo/deploy/local/cluster.sh" up --dir "$own_cluster" >/dev/null
  eval "$("$repo/deploy/local/cluster.sh" env --dir "$own_cluster")"
fi
cdir=$HIBERNATOR_CLUSTER_DIR
kubectl=(kubectl --kubeconfig "$cdir/kubeconfig" --request-timeout=20s)
cluster=("$repo/deploy/local/cluster.sh")
ns=soak-$$
RANDOM=$seed

# ------------------------------------------------------------------ set-up

# The controller runs as the ServiceAccount deploy/ creates, with its RBAC,
# so that API Priority and Fairness can single out its requests (the admin
# is system:masters, which APF exempts).
"${kubectl[@]}" apply -f "$repo/deploy/crds/" -f "$repo/deploy/namespace.yaml" \
  -f "$repo/deploy/serviceaccount.yaml" -f "$repo/deploy/rbac.yaml" >/dev/null
"${kubectl[@]}" wait --for=condition=Established --timeout=60s \
  crd/workspaces.hibernator.dev crd/podsnapshots.podsnapshot.gke.io >/dev/null
token=$("${kubectl[@]}" -n hibernator-system create token hibernator --duration="$((secs + 7200))s")
ca=$("${kubectl[@]}" config view --raw --minify -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')
(
  umask 077
  cat >"$out/controller.kubeconfig" <<EOF
apiVersion: v1
kind: Config
current-context: c
clusters: [{name: l, cluster: {server: "$HIBERNATOR_APISERVER_URL", certificate-authority-data: $ca}}]
contexts: [{name: c, context: {cluster: l, user: hibernator}}]
users: [{name: hibernator, user: {token: $token}}]
EOF
)
unset token

"${kubectl[@]}" create namespace "$ns" >/dev/null
"${kubectl[@]}" apply -f - >/dev/null <<EOF
apiVersion: podsnapshot.gke.io/v1
kind: PodSnapshotStorageConfig
metadata: {name: $ns}
spec: {snapshotStorageConfig: {gcs: {bucket: local}}}
---
apiVersion: hibernator.dev/v1alpha1
kind: WorkspaceClass
metadata: {name: $ns-snap}
spec:
  images: {allowed: ["registry.local/notebook:*"], default: "registry.local/notebook:v1"}
  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
  home: {size: 1Gi}
  pause: {gracePeriodSeconds: 1}
  snapshot: {backend: GKE, storageConfigName: $ns, timeout: 60s, onFailure: Retry, retryAfter: 10s, keep: 2}
---
apiVersion: hibernator.dev/v1alpha1
kind: WorkspaceClass
metadata: {name: $ns-files}
spec:
  images: {allowed: ["registry.local/notebook:*"], default: "registry.local/notebook:v1"}
  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
  home: {size: 1Gi}
  pause: {gracePeriodSeconds: 1}
EOF

snap_ws=() files_ws=()
for i in $(seq 1 "$per_class"); do
  snap_ws+=("snap-$i")
  files_ws+=("files-$i")
done
all_ws=("${snap_ws[@]}" "${files_ws[@]}")
json_list() {
  local IFS=,
  local -a q=("${@/#/\"}")
  q=("${q[@]/%/\"}")
  echo "[${q[*]}]"
}

write_meta() {
  cat >"$out/meta.json" <<EOF
{"run": "$out", "namespace": "$ns", "seed": $seed, "duration": $secs,
 "snapshot_workspaces": $(json_list "${snap_ws[@]}"),
 "files_workspaces": $(json_list "${files_ws[@]}"),
 "start": ${t_start:-null}, "faults_end": ${t_faults_end:-null}, "end": ${t_end:-null},
 "converge_within": 30, "wait_timeout": $wait_timeout}
EOF
}

# The recorders start before anything of the namespace exists, so they see
# every object from its creation.
python3 "$repo/tests/bench/soak_record.py" --server "$HIBERNATOR_APISERVER_URL" \
  --ca "$cdir/pki/ca.crt" --cert "$cdir/pki/admin.crt" --key "$cdir/pki/admin.key" \
  --namespace "$ns" --out "$out/rec" --state-dir "$out/state" \
  pods pvcs events workspaces podsnapshots triggers 2>"$out/recorder.log" &
recorder=$!
pids+=("$recorder")
sleep 2

"$build/tests/snapshot_simulator" --kubeconfig "$cdir/kubeconfig" --namespace "$ns" \
  --checkpoint-delay 500ms --delete-delay 200ms 2>"$out/simulator.log" &
pids+=($!)

for ws in "${snap_ws[@]}"; do
  printf 'apiVersion: hibernator.dev/v1alpha1\nkind: Workspace\nmetadata: {name: %s}\nspec: {className: %s-snap}\n---\n' "$ws" "$ns"
done | "${kubectl[@]}" -n "$ns" apply -f - >/dev/null
for ws in "${files_ws[@]}"; do
  printf 'apiVersion: hibernator.dev/v1alpha1\nkind: Workspace\nmetadata: {name: %s}\nspec: {className: %s-files}\n---\n' "$ws" "$ns"
done | "${kubectl[@]}" -n "$ns" apply -f - >/dev/null

# ------------------------------------------------------------------ helpers

now() { echo "${EPOCHREALTIME/,/.}"; }
now_ms() {
  local t=${EPOCHREALTIME/,/.}
  echo $((${t%.*} * 1000 + 10#${t#*.} / 1000))
}
# rand_s VAR MIN MAX: VAR = a duration in seconds with milliseconds, uniform
# in MIN..MAX ms (in the caller's shell, so that the seed's sequence holds).
rand_s() {
  local ms=$(($2 + (RANDOM * 32768 + RANDOM) % ($3 - $2 + 1)))
  printf -v "$1" '%d.%03d' $((ms / 1000)) $((ms % 1000))
}
stopped() { [ -e "$out/flags/$1" ]; }
# nap SECONDS FLAG: sleeps, but returns 1 as soon as FLAG is set.
nap() {
  local until=$(($(now_ms) + ${1%.*} * 1000 + 10#${1#*.}))
  while (($(now_ms) < until)); do
    stopped "$2" && return 1
    sleep 0.2
  done
  return 0
}
count() { # PATTERN FILE [-v]: lines of FILE matching PATTERN (or not, with -v)
  local n
  n=$(grep -c ${3:-} -- "$1" "$2" 2>/dev/null) || true
  echo "${n:-0}"
}
fault() { # KIND T_START [DETAIL] [EXTRA_JSON]
  printf '{"t":%s,"t_end":%s,"kind":"%s","detail":"%s"%s}\n' "$2" "$(now)" "$1" "${3:-}" "${4:-}" >>"$out/faults.jsonl"
}

# ------------------------------------------------------------------ the controller, killed

controller_loop() {
  set +e
  local pid t n=0 nap_s rc
  while :; do
    "$build/hibernator" --kubeconfig "$out/controller.kubeconfig" --namespace "$ns" \
      --leader-elect=false --health-probe-bind-address=0 --metrics-bind-address=0 \
      >>"$out/controller.log" 2>&1 &
    pid=$!
    if stopped stop-kills; then
      echo "$pid" >"$out/controller.pid"
      echo "$n" >"$out/kills"
      return 0
    fi
    rand_s nap_s 500 3000
    sleep "$nap_s"
    t=$(now)
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=$?
    if ((rc == 128 + 9)); then
      n=$((n + 1))
      fault controller-kill "$t" "pid $pid"
    else # it had ended before the signal: the checker shows it with the findings
      fault controller-exit "$t" "pid $pid exited by itself with status $rc"
    fi
  done
}

# ------------------------------------------------------------------ API server faults

apf_rejected() {
  "${kubectl[@]}" get --raw /metrics 2>/dev/null |
    awk '/^apiserver_flowcontrol_rejected_requests_total\{/ && /priority_level="soak-throttle"/ { s += $NF } END { printf "%d", s }'
}

apf_on() {
  "${kubectl[@]}" apply -f - >/dev/null <<EOF
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: soak-throttle}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: $1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: soak-throttle}
spec:
  priorityLevelConfiguration: {name: soak-throttle}
  matchingPrecedence: 100
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: ServiceAccount, serviceAccount: {name: hibernator, namespace: hibernator-system}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
EOF
}
apf_off() {
  "${kubectl[@]}" delete flowschema soak-throttle --ignore-not-found >/dev/null &&
    "${kubectl[@]}" delete prioritylevelconfiguration soak-throttle --ignore-not-found >/dev/null
}

restart_apiserver() { # [--kill]
  if ! "${cluster[@]}" restart-apiserver --dir "$cdir" "$@" >>"$out/faults.log" 2>&1; then
    log "API server restart failed; starting it again"
    "${cluster[@]}" start-apiserver --dir "$cdir" >>"$out/faults.log" 2>&1 || true
  fi
}

fault_loop() {
  set +e
  local t how shares before secs nap_s i j kind
  local -a deck=()
  while rand_s nap_s $((gap_min * 1000)) $((gap_max * 1000)) && nap "$nap_s" stop-faults; do
    # The four kinds in a shuffled round, so that a short run has each.
    if ((${#deck[@]} == 0)); then
      deck=(0 1 2 3)
      for ((i = 3; i > 0; i--)); do
        j=$((RANDOM % (i + 1)))
        kind=${deck[i]} deck[i]=${deck[j]} deck[j]=$kind
      done
    fi
    kind=${deck[0]}
    deck=("${deck[@]:1}")
    t=$(now)
    case $kind in
    0)
      how=$([ $((RANDOM % 2)) = 0 ] && echo --kill || true)
      restart_apiserver $how
      fault apiserver-restart "$t" "${how:-graceful}"
      ;;
    1)
      "${cluster[@]}" compact-etcd --dir "$cdir" >>"$out/faults.log" 2>&1 || true
      fault etcd-compact "$t" "watches resume into 410 when behind"
      ;;
    2)
      "${cluster[@]}" compact-etcd --dir "$cdir" >>"$out/faults.log" 2>&1 || true
      fault etcd-compact "$t" "then a restart"
      t=$(now)
      restart_apiserver
      fault apiserver-restart "$t" "graceful, after a compaction"
      ;;
    3)
      # 0 shares: every request of the controller is rejected; 1: most of
      # them, a few get through.
      shares=$((RANDOM % 2))
      before=$(apf_rejected)
      secs=$((10 + RANDOM % 21))
      if apf_on "$shares"; then
        nap "$secs.000" stop-faults || true
        fault apf-throttle "$t" "${secs}s at nominalConcurrencyShares $shares" \
          ",\"rejected\":$(($(apf_rejected) - before))"
      fi
      until apf_off; do sleep 1; done
      ;;
    esac
  done
}

# ------------------------------------------------------------------ drivers

# wait_state WS STATE GENERATION: until the recorder shows STATE with
# generation GENERATION observed; 1 on timeout or stop.
wait_state() {
  local ws=$1 want=$2 gen=$3 deadline=$((SECONDS + wait_timeout)) st g og p t0
  t0=$(now)
  while ((SECONDS < deadline)); do
    if read -r st g og p 2>/dev/null <"$out/state/$ws" && [ "$st" = "$want" ] && ((og >= gen)); then
      printf '{"t":%s,"t_end":%s,"ws":"%s","want":"%s","ok":true}\n' "$t0" "$(now)" "$ws" "$want" >>"$out/waits.jsonl"
      return 0
    fi
    stopped stop-drive && return 1
    sleep 0.2
  done
  printf '{"t":%s,"t_end":%s,"ws":"%s","want":"%s","ok":false,"last":"%s"}\n' \
    "$t0" "$(now)" "$ws" "$want" "${st:-} ${g:-} ${og:-} ${p:-}" >>"$out/waits.jsonl"
  return 1
}

# flip WS BOOL: sets spec.paused, retrying through API server restarts;
# prints the generation it made.
flip() {
  local ws=$1 v=$2 t gen
  t=$(now)
  until gen=$("${kubectl[@]}" -n "$ns" patch workspace "$ws" --type=merge \
    -p "{\"spec\":{\"paused\":$v}}" -o 'jsonpath={.metadata.generation}' 2>/dev/null); do
    stopped stop-drive && return 1
    sleep 1
  done
  printf '{"t":%s,"t_end":%s,"ws":"%s","paused":%s,"generation":%s}\n' "$t" "$(now)" "$ws" "$v" "$gen" >>"$out/drive.jsonl"
  echo "$gen"
}

drive() {
  set +e
  local ws=$1 gen nap_s
  RANDOM=$2
  wait_state "$ws" Running 1 || true
  while ! stopped stop-drive; do
    gen=$(flip "$ws" true) || break
    wait_state "$ws" Paused "$gen" || true
    rand_s nap_s 0 2000
    nap "$nap_s" stop-drive || break
    gen=$(flip "$ws" false) || break
    wait_state "$ws" Running "$gen" || true
    rand_s nap_s 0 2000
    nap "$nap_s" stop-drive || break
  done
}

# ------------------------------------------------------------------ run

t_start=$(now)
write_meta
log "namespace $ns, ${#all_ws[@]} workspaces, $secs s of faults, seed $seed; recording into $out"
controller_loop &
ctl_loop=$!
pids+=("$ctl_loop")
drivers=()
i=0
for ws in "${all_ws[@]}"; do
  i=$((i + 1))
  drive "$ws" $((seed + i)) &
  drivers+=($!)
  pids+=($!)
done
fault_loop &
faults=$!
pids+=("$faults")

end=$((SECONDS + secs))
while ((SECONDS < end)); do
  sleep 60 &
  wait $! || true
  log "$(count '"paused":true' "$out/drive.jsonl") pauses sent," \
    "$(count controller-kill "$out/faults.jsonl") kills," \
    "$(count controller- "$out/faults.jsonl" -v) API server faults"
done

log "stopping the drivers, then the faults"
touch "$out/flags/stop-drive"
wait "${drivers[@]}" 2>/dev/null || true
touch "$out/flags/stop-faults"
wait "$faults" 2>/dev/null || true
"${cluster[@]}" status --dir "$cdir" >/dev/null 2>&1 || "${cluster[@]}" start-apiserver --dir "$cdir" >>"$out/faults.log" 2>&1 || true
touch "$out/flags/stop-kills"
wait "$ctl_loop" 2>/dev/null || true
t_faults_end=$(now)
write_meta
log "faults over after $(cat "$out/kills") controller kills; the controller runs undisturbed for ${settle} s"
sleep "$settle"
kill -TERM "$recorder"
wait "$recorder" 2>/dev/null || true
t_end=$(now)
write_meta

rc=0
python3 "$repo/tests/bench/soak_check.py" "$out" | tee "$out/report.txt" || rc=$?

# Clean up with the controller and the simulator still running, so the
# finalizers (the workspace's, GKE's on PodSnapshots) are released.
"${kubectl[@]}" -n "$ns" delete workspaces --all --wait=true --timeout=120s >/dev/null 2>&1 || true
kill "$(cat "$out/controller.pid")" 2>/dev/null || true
rm -f "$out/controller.pid"
"${kubectl[@]}" delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
"${kubectl[@]}" delete workspaceclass "$ns-snap" "$ns-files" --ignore-not-found >/dev/null 2>&1 || true
"${kubectl[@]}" delete podsnapshotstorageconfig "$ns" --ignore-not-found >/dev/null 2>&1 || true
log "report: $out/report.txt"
exit "$rc"
