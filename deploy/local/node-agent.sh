#!/usr/bin/env bash
# The node agent of the ContainerCheckpoint backend (deploy/node/) on the
# local cluster's real node, installed as a platform team installs it:
# `kubectl apply -k` of deploy/node/ with one change, the host directory the
# DaemonSet mounts (the kubelet's checkpoints are under the real node's
# --root-dir, DIR/real-node/kubelet, not /var/lib/kubelet). The real node
# carries the label hibernator.dev/container-checkpoint=true
# (deploy/local/real-node.sh), so the agent runs there and nowhere else.
#
#   deploy/local/node-agent.sh up --dir DIR     install (or update) and wait
#                                               for the agent to run
#   deploy/local/node-agent.sh down --dir DIR   remove the DaemonSet, its
#                                               credentials and its namespace
#
# up also: imports the controller image (hibernator:dev, which holds
# hibernator-node) into the real node's containerd, applies the
# ContainerSnapshot CRD, and gives the agent the cluster registry's
# credentials (Secret hibernator-node-registry, dockerconfigjson) and CA
# (ConfigMap hibernator-node-registry-ca) in its namespace, hibernator-node.
# The overlay is written to DIR/node-agent/ (kustomize loads patches only
# from under its own directory).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
ns=hibernator-node

log() { printf '[node-agent.sh] %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 1
}

cmd=${1:-}
shift || true
dir=
while [ $# -gt 0 ]; do
  case $1 in
  --dir)
    dir=$2
    shift 2
    ;;
  *) die "unknown argument: $1" ;;
  esac
done
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: node-agent.sh up|down --dir DIR"
[ -f "$dir/env" ] || die "no cluster in $dir"
# shellcheck disable=SC1091
. "$dir/env"

overlay=$dir/node-agent

write_overlay() {
  mkdir -p "$overlay"
  # A directory outside the overlay may be a resource; a relative path to it.
  local base
  base=$(realpath --relative-to="$overlay" "$repo/deploy/node")
  cat >"$overlay/kustomization.yaml" <<EOF
# Written by deploy/local/node-agent.sh: deploy/node/ with the real node's
# kubelet checkpoints directory.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $base
patches:
- path: checkpoints.yaml
EOF
  cat >"$overlay/checkpoints.yaml" <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: hibernator-node
  namespace: $ns
spec:
  template:
    spec:
      volumes:
      - name: checkpoints
        hostPath:
          path: $dir/real-node/kubelet/checkpoints
          type: DirectoryOrCreate
EOF
}

up() {
  : "${HIBERNATOR_REAL_NODE:?the cluster in $dir has no real node (cluster.sh up --real-node)}"
  : "${HIBERNATOR_REGISTRY:?the cluster in $dir has no registry}"
  "$here/images.sh" import controller
  kubectl apply -f "$repo/deploy/crds/containersnapshots.yaml" -f "$repo/deploy/node/namespace.yaml" >/dev/null
  kubectl wait --for=condition=Established --timeout=60s crd/containersnapshots.hibernator.dev >/dev/null
  # Credentials and trust: applied, so that up can run again.
  kubectl -n "$ns" create secret docker-registry hibernator-node-registry \
    --docker-server="$HIBERNATOR_REGISTRY" --docker-username=hibernator \
    --docker-password="$(cat "$HIBERNATOR_REGISTRY_PASSWORD_FILE")" \
    --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl -n "$ns" create configmap hibernator-node-registry-ca --from-file=ca.crt="$dir/pki/ca.crt" \
    --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  write_overlay
  kubectl apply -k "$overlay" >/dev/null
  kubectl -n "$ns" rollout status daemonset/hibernator-node --timeout=180s >/dev/null ||
    die "the agent did not start: kubectl -n $ns describe daemonset hibernator-node"
  log "the node agent runs on $HIBERNATOR_REAL_NODE (namespace $ns)"
}

down() {
  [ -f "$overlay/kustomization.yaml" ] || write_overlay
  kubectl delete -k "$overlay" --ignore-not-found --wait=true --timeout=120s >/dev/null || true
}

case $cmd in
up) up ;;
down) down ;;
*) die "usage: node-agent.sh up|down --dir DIR" ;;
esac
