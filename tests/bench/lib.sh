# Sourced by the benchmark scripts in tests/bench: a work directory, the
# cluster, and one controller process at a time.
#
#   bench_begin NAME      $work (a new directory), $own_cluster (set when the
#                         bench brought up a cluster of its own: the one
#                         HIBERNATOR_KUBECONFIG names is used if set), and
#                         KUBECONFIG and kubectl=(...) for it; at exit the
#                         controller stops and a cluster of its own goes,
#                         its components' logs kept in $work/cluster-logs
#   bench_stop_controller stops $controller_pid, if any
#   bench_cpu_seconds PID user + system CPU seconds of PID so far
#   bench_metrics_port LOG the port of /metrics of the controller logging to
#                         LOG, started with --metrics-bind-address=127.0.0.1:0
#                         (the kernel picks a free port; it logs which)
#   bench_gpu_nodes PREFIX PRODUCT N  N kwok nodes PREFIX-1.. of one GPU
#                         each, labelled nvidia.com/gpu.product=PRODUCT
#   bench_crds            the project's CRDs, applied and Established
#   bench_gauge CLASS STATE  workspaces of CLASS in STATE, from the
#                         controller's /metrics on $port
#
# The caller sets $repo, and bench_cluster_args (an array) for flags of
# cluster.sh up, such as --kueue. Environment for cluster.sh up (such as
# HIBERNATOR_CONTROLLER_MANAGER_ARGS) passes through bench_begin.

bench_stop_controller() {
  if [ -n "${controller_pid:-}" ]; then
    kill "$controller_pid" 2>/dev/null || true
    wait "$controller_pid" 2>/dev/null || true
    controller_pid=""
  fi
}

bench_end() {
  bench_stop_controller
  if [ -n "${own_cluster:-}" ]; then
    # The components' logs stay with the benchmark's own (what the API
    # server said when a client lost it); the rest of the cluster goes.
    cp -r "$own_cluster/logs" "$work/cluster-logs" 2>/dev/null || true
    "$repo/deploy/local/cluster.sh" down --dir "$own_cluster" >/dev/null 2>&1 || true
  fi
}

bench_begin() {
  work=$(mktemp -d "/tmp/hibernator-$1-bench.XXXXXX")
  own_cluster=""
  controller_pid=""
  trap bench_end EXIT
  if [ -z "${HIBERNATOR_KUBECONFIG:-}" ]; then
    own_cluster=$work/cluster
    "$repo/deploy/local/cluster.sh" up ${bench_cluster_args[@]+"${bench_cluster_args[@]}"} \
      --dir "$own_cluster" >/dev/null
    eval "$("$repo/deploy/local/cluster.sh" env --dir "$own_cluster")"
  fi
  export KUBECONFIG=$HIBERNATOR_KUBECONFIG
  kubectl=(kubectl --kubeconfig "$HIBERNATOR_KUBECONFIG")
}

bench_cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz }' "/proc/$1/stat"
}

bench_metrics_port() {
  local port i
  for i in $(seq 300); do
    port=$(sed -n 's/.*msg="serving" routes=metrics address=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$1" | head -1)
    if [ -n "$port" ]; then
      echo "$port"
      return 0
    fi
    sleep 0.1
  done
  echo "the controller did not say where it serves metrics (log $1)" >&2
  return 1
}

bench_gpu_nodes() {
  local prefix=$1 product=$2 n=$3 k
  for k in $(seq 1 "$n"); do
    cat <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $prefix-$k
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {type: kwok, kubernetes.io/hostname: $prefix-$k, nvidia.com/gpu.product: $product}
spec:
  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "1"}
  allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "1"}
---
YAML
  done | "${kubectl[@]}" apply -f - >/dev/null
}

bench_crds() {
  "${kubectl[@]}" apply -f "$repo/deploy/crds/" >/dev/null
  "${kubectl[@]}" wait --for=condition=Established --timeout=60s crd/workspaces.hibernator.dev >/dev/null
}

bench_gauge() {
  { curl -sf "http://127.0.0.1:$port/metrics" || true; } |
    awk -v c="class=\"$1\"" -v s="state=\"$2\"" '/^hibernator_workspaces\{/ && index($1, c) && index($1, s) { n += $2 } END { print n + 0 }'
}
