# Kueue for the local cluster: its manager (build-binaries.sh --kueue) as a
# process beside the control plane, its CRDs, and its webhooks called by URL
# on 127.0.0.1. Sourced by cluster.sh (`up --kueue`, `down`).
#
# Facts this relies on (Kueue v0.17.0's source; docs/kueue.md, "The local
# cluster"):
#   - with internalCertManagement off, the manager reads its serving
#     certificates from files: the webhook's from webhook.certDir, and, at
#     paths it does not let anyone change, the metrics server's from
#     /etc/kueue/metrics/certs and the visibility server's from /visibility
#     (cmd/kueue/main.go, pkg/visibility/server.go). The manager runs in a
#     mount namespace of its own in which this cluster's certificate is bound
#     over both, so several clusters' managers run side by side; the two
#     directories are created (empty) on the machine as mount points;
#   - it never reads or patches webhook configurations itself then: they are
#     applied here, with the cluster CA as their caBundle;
#   - the plain-Pod integration acts only on pods the pod webhook marked
#     (kueue.x-k8s.io/managed), so the pod webhooks are asked only for pods
#     with a queue label (objectSelector): a pod without one never waits on
#     Kueue, and one with it is refused while the manager is down
#     (failurePolicy: Fail, as Kueue ships it).

kueue_mount_points=(/etc/kueue/metrics/certs /visibility)

kueue_pki() {
  local leaf='basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid'
  printf '[req]\ndistinguished_name = dn\n[dn]\n' >"$dir/pki/req.cnf"
  issue kueue-serving "/CN=kueue" "$leaf
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
  rm -f "$dir/pki/req.cnf"
  mkdir -p "$dir/kueue/certs"
  cp "$dir/pki/kueue-serving.crt" "$dir/kueue/certs/tls.crt"
  (umask 077 && cp "$dir/pki/kueue-serving.key" "$dir/kueue/certs/tls.key")
}

ports_kueue() {
  pick_port kueue_health_port
  pick_port kueue_metrics_port
  pick_port kueue_webhook_port
  pick_port kueue_visibility_port
}

kueue_config() {
  cat >"$dir/conf/kueue.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
leaderElection:
  leaderElect: false
health:
  healthProbeBindAddress: 127.0.0.1:$kueue_health_port
metrics:
  bindAddress: 127.0.0.1:$kueue_metrics_port
webhook:
  host: 127.0.0.1
  port: $kueue_webhook_port
  certDir: $dir/kueue/certs
internalCertManagement:
  enable: false
manageJobsWithoutQueueName: false
managedJobsNamespaceSelector:
  matchExpressions:
  - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kueue-system]}
integrations:
  frameworks:
  - pod
visibilityServer:
  bindAddress: 127.0.0.1
  bindPort: $kueue_visibility_port
EOF
}

cmd_kueue() {
  kueue_config
  local certs=$dir/kueue/certs
  # unshare execs without forking, and so does sh: the recorded PID ends up
  # the manager's own (run/kueue.exe names its binary for component_pid).
  printf '%s\n' "$(command -v unshare)" --mount --propagation private -- /bin/sh -c \
    'c=$1; shift; mount --bind "$c" /etc/kueue/metrics/certs && mount --bind "$c" /visibility && exec "$@"' \
    sh "$certs" "$bindir/kueue" \
    --config="$dir/conf/kueue.yaml" \
    --kubeconfig="$dir/kubeconfig" \
    --zap-log-level=info
  extra_args HIBERNATOR_KUEUE_ARGS
}

check_kueue() {
  curl -fsS --max-time 2 "http://127.0.0.1:$kueue_health_port/readyz" >/dev/null 2>&1
}

# The webhooks of Kueue's own manifests (config/components/webhook), by URL.
kueue_webhooks() {
  local ca url=https://127.0.0.1:$kueue_webhook_port
  ca=$(b64 "$dir/pki/ca.crt")
  local common="admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail"
  local pods="objectSelector: {matchExpressions: [{key: kueue.x-k8s.io/queue-name, operator: Exists}]}
  namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kueue-system]}]}"
  local g=kueue.x-k8s.io v=v1beta2
  cat <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: kueue-mutating-webhook-configuration}
webhooks:
- name: mpod.kb.io
  $common
  clientConfig: {url: "$url/mutate--v1-pod", caBundle: "$ca"}
  $pods
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
- name: mworkload.kb.io
  $common
  clientConfig: {url: "$url/mutate-kueue-x-k8s-io-v1beta2-workload", caBundle: "$ca"}
  rules: [{apiGroups: [$g], apiVersions: [$v], operations: [CREATE], resources: [workloads]}]
- name: mclusterqueue.kb.io
  $common
  clientConfig: {url: "$url/mutate-kueue-x-k8s-io-v1beta2-clusterqueue", caBundle: "$ca"}
  rules: [{apiGroups: [$g], apiVersions: [$v], operations: [CREATE], resources: [clusterqueues]}]
- name: mresourceflavor.kb.io
  $common
  clientConfig: {url: "$url/mutate-kueue-x-k8s-io-v1beta2-resourceflavor", caBundle: "$ca"}
  rules: [{apiGroups: [$g], apiVersions: [$v], operations: [CREATE], resources: [resourceflavors]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: kueue-validating-webhook-configuration}
webhooks:
- name: vpod.kb.io
  $common
  clientConfig: {url: "$url/validate--v1-pod", caBundle: "$ca"}
  $pods
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}]
- name: vworkload.kb.io
  $common
  clientConfig: {url: "$url/validate-kueue-x-k8s-io-v1beta2-workload", caBundle: "$ca"}
  rules: [{apiGroups: [$g], apiVersions: [$v], operations: [CREATE, UPDATE], resources: [workloads, workloads/status]}]
- name: vclusterqueue.kb.io
  $common
  clientConfig: {url: "$url/validate-kueue-x-k8s-io-v1beta2-clusterqueue", caBundle: "$ca"}
  rules: [{apiGroups: [$g], apiVersions: [$v], operations: [CREATE, UPDATE], resources: [clusterqueues]}]
- name: vresourceflavor.kb.io
  $common
  clientConfig: {url: "$url/validate-kueue-x-k8s-io-v1beta2-resourceflavor", caBundle: "$ca"}
  rules: [{apiGroups: [$g], apiVersions: [$v], operations: [CREATE, UPDATE], resources: [resourceflavors]}]
- name: vcohort.kb.io
  $common
  clientConfig: {url: "$url/validate-kueue-x-k8s-io-v1beta2-cohort", caBundle: "$ca"}
  rules: [{apiGroups: [$g], apiVersions: [$v], operations: [CREATE, UPDATE], resources: [cohorts]}]
EOF
}

# kueue_up: the CRDs, the manager, its webhooks; the env file says where the
# visibility server listens.
kueue_up() {
  local t0=$SECONDS p
  [ -x "$bindir/kueue" ] && [ -d "$bindir/kueue-crds" ] || die "missing $bindir/kueue (build-binaries.sh --kueue)"
  for p in "${kueue_mount_points[@]}"; do
    mkdir -p "$p" || die "cannot create $p (Kueue's fixed certificate path; needs root)"
  done
  kueue_pki
  kubectl_ apply --server-side -f "$bindir/kueue-crds/" >/dev/null
  # (kubectl wait fails at once on a CRD that has no conditions yet)
  wait_for "Kueue's CRDs" "$start_timeout" kubectl_ wait --for=condition=Established --timeout=5s \
    crd/workloads.kueue.x-k8s.io crd/clusterqueues.kueue.x-k8s.io crd/localqueues.kueue.x-k8s.io \
    crd/resourceflavors.kueue.x-k8s.io crd/workloadpriorityclasses.kueue.x-k8s.io || return 1
  echo "$bindir/kueue" >"$dir/run/kueue.exe"
  kueue_health_port='' kueue_metrics_port='' kueue_webhook_port='' kueue_visibility_port=''
  start_with_retry kueue || return 1
  kueue_webhooks | kubectl_ apply -f - >/dev/null
  cat >>"$dir/run/ports" <<EOF
kueue_health_port=$kueue_health_port
kueue_metrics_port=$kueue_metrics_port
kueue_webhook_port=$kueue_webhook_port
kueue_visibility_port=$kueue_visibility_port
EOF
  cat >>"$dir/env" <<EOF
# Kueue's visibility server (pending workloads and their positions), served
# by its manager itself; no Service routes to it on this cluster.
export HIBERNATOR_KUEUE_VISIBILITY_URL='https://127.0.0.1:$kueue_visibility_port'
EOF
  log "Kueue $(basename "$(dirname "$(readlink -f "$bindir/kueue")")") up in $((SECONDS - t0)) s"
}

kueue_down() {
  # The webhooks go first: with the manager gone they would refuse every
  # pod with a queue label.
  if component_pid kube-apiserver >/dev/null && component_pid kueue >/dev/null; then
    kubectl_ delete mutatingwebhookconfiguration kueue-mutating-webhook-configuration \
      --ignore-not-found --request-timeout=10s >/dev/null 2>&1 || true
    kubectl_ delete validatingwebhookconfiguration kueue-validating-webhook-configuration \
      --ignore-not-found --request-timeout=10s >/dev/null 2>&1 || true
  fi
  stop_components kueue
}
