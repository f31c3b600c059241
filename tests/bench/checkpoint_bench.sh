#!/usr/bin/env bash
# The ContainerCheckpoint backend's pause and resume for real, by the size
# of what a Jupyter kernel holds: on the local cluster's real node, the node
# agent (its DaemonSet, deploy/local/node-agent.sh) takes a
# ContainerSnapshot of a notebook pod whose kernel holds SIZE MiB; then the
# pod goes and a new one is created from the image. Prints per size: the
# image's bytes, pause (ContainerSnapshot created -> Ready: checkpoint +
# image + push + read-back), resume (pod created -> Ready, and -> the kernel
# answers with its variables), and MB/s of each.
#
#   source DIR/env        # a cluster up with --real-node
#   tests/bench/checkpoint_bench.sh [SIZE_MIB...]     (default: 256 1024 4096)
#
# Results: docs/benchmarks.md, "Pausing with memory on the real node".
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
: "${HIBERNATOR_REGISTRY:?source the env file of a cluster up with --real-node}"
dir=$HIBERNATOR_CLUSTER_DIR
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(256 1024 4096)
work=$(mktemp -d /tmp/checkpoint-bench.XXXXXX)
ns=checkpoint-bench-$$
node=$HIBERNATOR_REAL_NODE
password=$(cat "$HIBERNATOR_REGISTRY_PASSWORD_FILE")
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }

# The agent as its DaemonSet (deploy/node/, kubectl apply -k), on the real node.
"$repo/deploy/local/node-agent.sh" up --dir "$dir"
trap 'kubectl -n $ns delete containersnapshots --all --timeout=120s >/dev/null 2>&1; kubectl delete ns $ns --wait=false >/dev/null 2>&1; rm -rf "$work"' EXIT
kubectl create ns "$ns" >/dev/null
kubectl -n "$ns" create secret docker-registry checkpoints --docker-server="$HIBERNATOR_REGISTRY" \
  --docker-username=hibernator --docker-password="$password" >/dev/null

pod() { # NAME IMAGE
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $ns}
spec:
  nodeName: $node
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 2
  tolerations: [{key: hibernator.dev/real-node, operator: Exists, effect: NoSchedule}]
  imagePullSecrets: [{name: checkpoints}]
  containers:
  - name: workspace
    image: "$2"
    imagePullPolicy: IfNotPresent
    command: [python3, -m, jupyter_server, --ip=0.0.0.0, --port=8888, --no-browser, --allow-root, --ServerApp.root_dir=/root]
    env: [{name: JUPYTER_TOKEN, value: bench}]
    resources: {limits: {memory: 8Gi}}
EOF
  kubectl -n "$ns" wait --for=condition=Ready "pod/$1" --timeout=600s >/dev/null
}
cell() { # POD KERNEL CODE
  kubectl -n "$ns" exec -i "$1" -c workspace -- python3 - http://127.0.0.1:8888 bench x "$2" "$3" \
    <"$repo/tests/tools/jupyter_run.py"
}
answers() { # POD
  local ip
  ip=$(kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.podIP}')
  until curl -fsS -m 2 -H 'Authorization: token bench' "http://$ip:8888/api/status" >/dev/null 2>&1; do
    sleep 0.1
  done
}

printf '%-8s %12s %10s %10s %12s %14s %10s\n' MiB image-bytes pause-s pause-MB/s resume-ready-s resume-kernel-s resume-MB/s
for size in "${sizes[@]}"; do
  p=nb-$size
  pod "$p" hibernator.local/notebook:dev
  answers "$p"
  out=$(cell "$p" new "import os; x = 42; buf = bytearray(os.urandom(1 << 20)) * $size; print(x, len(buf))")
  kernel=$(head -n1 <<<"$out")
  uid=$(kubectl -n "$ns" get pod "$p" -o jsonpath='{.metadata.uid}')
  t0=$(now)
  kubectl apply -f - >/dev/null <<EOF
apiVersion: hibernator.dev/v1alpha1
kind: ContainerSnapshot
metadata: {name: $p-p1-1, namespace: $ns, finalizers: [hibernator.dev/checkpoint-image]}
spec: {nodeName: $node, podName: $p, podUID: "$uid", containerName: workspace, repository: "$HIBERNATOR_REGISTRY/bench/$ns/$p", tag: p1-1}
EOF
  until [ "$(kubectl -n "$ns" get containersnapshot "$p-p1-1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; do
    r=$(kubectl -n "$ns" get containersnapshot "$p-p1-1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')
    [ "$r" = False ] && { kubectl -n "$ns" get containersnapshot "$p-p1-1" -o yaml >&2; exit 1; }
    sleep 0.2
  done
  t1=$(now)
  image=$(kubectl -n "$ns" get containersnapshot "$p-p1-1" -o jsonpath='{.status.image}')
  bytes=$(kubectl -n "$ns" get containersnapshot "$p-p1-1" -o jsonpath='{.status.sizeBytes}')
  kubectl -n "$ns" delete pod "$p" --grace-period=0 --wait=true >/dev/null 2>&1
  t2=$(now)
  pod "$p-r" "$image"
  t3=$(now)
  answers "$p-r"
  out=$(cell "$p-r" "$kernel" "print(x, len(buf))")
  t4=$(now)
  # (IPython's history thread may print a warning into the same line)
  grep -q "^42" <<<"$(sed -n 2p <<<"$out")" && grep -q " $((size << 20))\$" <<<"$out" ||
    { echo "size $size: the kernel says: $out" >&2; exit 1; }
  printf '%-8s %12s %10.1f %10.0f %12.1f %14.1f %10.0f\n' "$size" "$bytes" "$(secs "$t0" "$t1")" \
    "$(echo "$bytes / 1000000 / ($t1 - $t0)" | bc -l)" "$(secs "$t2" "$t3")" "$(secs "$t2" "$t4")" \
    "$(echo "$bytes / 1000000 / ($t4 - $t2)" | bc -l)"
  kubectl -n "$ns" delete pod "$p-r" --grace-period=0 --wait=true >/dev/null 2>&1
  kubectl -n "$ns" delete containersnapshot "$p-p1-1" --timeout=120s >/dev/null
done
