# A real node for the local cluster: containerd + runc + CRIU + the kubelet,
# on a bridge of its own, and an OCI registry for checkpoint images. Sourced by cluster.sh (`up --real-node`, `down`); run
# alone it writes one-layer OCI archives:
#
#   real-node.sh oci-archive OUT.tar REF ROOTFS.tar CMD...
#   real-node.sh minbase-image   build (once) a Debian minbase image archive,
#                                print its path
#
# Facts this relies on (containerd settings, sysctls and chains the kubelet
# changes): docs/local-cluster.md, "A real node". One real node per machine.
# containerd, its shim, ctr and CRIU are the ones deploy/local/build-binaries.sh
# --real-node builds (containerd v2.3 restores a container from a checkpoint
# image; Debian 12's 1.6 cannot); runc is Debian's.
#
# Tunables: HIBERNATOR_REAL_NODE_CIDR (10.231.0.0/24; a /24 nothing else on
# the machine uses: the bridge holds .1, the node IP, pods get the rest).

real_node_name=hibernator-real-node
real_node_bridge=hib0
real_node_cidr=${HIBERNATOR_REAL_NODE_CIDR:-10.231.0.0/24}
real_node_ip=${real_node_cidr%.*}.1
real_node_pause=hibernator.local/pause:1
# The `kubernetes` Service's ClusterIP (cluster.sh's --service-cluster-ip-range).
real_node_service_ip=10.96.0.1
# Sysctls the kubelet, the bridge plugin or the runtime write.
real_node_sysctls=(vm.overcommit_memory kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward
  net.ipv6.conf.all.forwarding net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables)
# Host paths they may create outside the cluster directory.
real_node_paths=(/var/log/containers /var/log/pods /var/lib/cni /run/containerd /var/lib/kubelet
  /var/lib/containerd /opt/containerd /run/netns /var/run/netns /etc/cni /opt/cni /run/runc /etc/criu)
# runc hands CRIU this configuration file for every checkpoint and restore
# (runc's default; a container may name another with the annotation
# org.criu.config). tcp-close: established TCP connections (a browser's, a
# probe's, the kernels' own over loopback) are not kept; a restored pod has
# another IP, so they could not be, and clients reconnect.
real_node_criu_conf=/etc/criu/runc.conf

# oci_archive OUT REF ROOTFS_TAR CMD...: a one-layer OCI image archive that
# `ctr images import` takes, named REF.
oci_archive() {
  local out=$1 ref=$2 rootfs=$3 t ld ls cd cs md ms cmd
  shift 3
  t=$(mktemp -d)
  mkdir -p "$t/blobs/sha256"
  ld=$(sha256sum "$rootfs" | cut -d' ' -f1)
  ls=$(stat -c %s "$rootfs")
  cp "$rootfs" "$t/blobs/sha256/$ld"
  cmd=$(printf '"%s",' "$@")
  printf '{"architecture":"amd64","os":"linux","config":{"Cmd":[%s],"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "${cmd%,}" "$ld" >"$t/c"
  cd=$(sha256sum "$t/c" | cut -d' ' -f1) cs=$(stat -c %s "$t/c")
  mv "$t/c" "$t/blobs/sha256/$cd"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$cd" "$cs" "$ld" "$ls" >"$t/m"
  md=$(sha256sum "$t/m" | cut -d' ' -f1) ms=$(stat -c %s "$t/m")
  mv "$t/m" "$t/blobs/sha256/$md"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$md" "$ms" "$ref" "${ref##*:}" >"$t/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$t/oci-layout"
  tar -cf "$out" -C "$t" oci-layout index.json blobs
  rm -rf "$t"
}

# The pause image: a static binary that reaps children and exits on a
# signal, built here, so that no registry is needed. Cached.
real_node_pause_archive() {
  local cache=${HIBERNATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hibernator}/images
  local out=$cache/pause-1.oci.tar t
  [ -f "$out" ] && { echo "$out"; return 0; }
  mkdir -p "$cache"
  t=$(mktemp -d)
  cat >"$t/pause.c" <<'EOF'
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
static void on_term(int s) { (void)s; _exit(0); }
static void on_chld(int s) { (void)s; while (waitpid(-1, 0, WNOHANG) > 0) {} }
int main(void) {
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  signal(SIGCHLD, on_chld);
  for (;;) pause();
}
EOF
  mkdir -p "$t/root"
  gcc -static -Os -s -o "$t/root/pause" "$t/pause.c" || { rm -rf "$t"; return 1; }
  tar -cf "$t/layer.tar" -C "$t/root" --owner=0 --group=0 pause
  oci_archive "$out.tmp" "$real_node_pause" "$t/layer.tar" /pause
  mv "$out.tmp" "$out"
  rm -rf "$t"
  echo "$out"
}

# A Debian minbase image (mmdebstrap, no registry) for pods on the real node:
# hibernator.local/debian-minbase:bookworm, /bin/sh by default. Cached.
real_node_minbase_archive() {
  local cache=${HIBERNATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hibernator}/images
  local out=$cache/debian-minbase.oci.tar rootfs=$cache/debian-minbase-rootfs.tar mirror
  [ -f "$out" ] && { echo "$out"; return 0; }
  mkdir -p "$cache"
  if [ ! -f "$rootfs" ]; then
    mirror=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
    mmdebstrap --variant=minbase --format=tar --quiet bookworm "$rootfs.tmp" "${mirror:-http://deb.debian.org/debian}" >&2
    mv "$rootfs.tmp" "$rootfs"
  fi
  oci_archive "$out.tmp" hibernator.local/debian-minbase:bookworm "$rootfs" /bin/sh
  mv "$out.tmp" "$out"
  echo "$out"
}

# ---------------------------------------------------------------- machine state

# real_node_snapshot DIR: what the real node may change, one file per kind.
real_node_snapshot() {
  local d=$1 s p
  mkdir -p "$d"
  for s in "${real_node_sysctls[@]}"; do
    p=/proc/sys/${s//.//}
    if [ -r "$p" ]; then echo "$s=$(cat "$p")"; else echo "$s=absent"; fi
  done >"$d/sysctls"
  # Counters and comments change by themselves; rules and chains are the state.
  iptables-save 2>/dev/null | sed -e '/^#/d' -e 's/ \[[0-9]*:[0-9]*\]$//' >"$d/iptables"
  ip6tables-save 2>/dev/null | sed -e '/^#/d' -e 's/ \[[0-9]*:[0-9]*\]$//' >"$d/ip6tables"
  # Mounts and links only where the node makes them: other work on the
  # machine (an image build, say) may mount and unmount meanwhile.
  awk '{print $5}' /proc/self/mountinfo |
    grep -E '^(/var)?/run/netns(/|$)|^/run/containerd(/|$)|^/var/lib/(kubelet|containerd|cni)(/|$)|/real-node(/|$)' |
    LC_ALL=C sort >"$d/mounts" || true
  { ls -1 /run/netns 2>/dev/null || true; } | LC_ALL=C sort >"$d/netns"
  find /sys/fs/cgroup -mindepth 2 -maxdepth 2 -name 'kubepods*' 2>/dev/null | LC_ALL=C sort >"$d/cgroups"
  ip -o link | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | grep -E "^($real_node_bridge|veth.*|cni.*)$" |
    LC_ALL=C sort >"$d/links" || true
  for p in "${real_node_paths[@]}"; do
    if [ -e "$p" ]; then echo "$p"; fi
  done | LC_ALL=C sort >"$d/paths"
  { awk '{print $1}' /proc/modules 2>/dev/null || true; } | LC_ALL=C sort >"$d/modules"
  # iptables-nft makes nftables tables that iptables-save cannot tell from
  # missing ones once emptied: the ruleset itself, handles aside.
  { nft list ruleset 2>/dev/null || true; } | sed 's/ # handle [0-9]*$//' >"$d/nftables"
}

# real_node_compare BEFORE AFTER: prints the differences; fails if any.
real_node_compare() {
  local rc=0 f
  for f in sysctls iptables ip6tables nftables mounts netns cgroups links paths modules; do
    if ! diff -u "$1/$f" "$2/$f" >"$2/$f.diff"; then
      log "machine state differs from the record: $f"
      sed 's/^/    /' "$2/$f.diff" >&2
      rc=1
    fi
  done
  return "$rc"
}

# ---------------------------------------------------------------- up

ctr_() { "$bindir/ctr" -a "$rn/containerd.sock" -n k8s.io "$@"; }

real_node_commands=(runc iptables iptables-save nft ip gcc socat mmdebstrap docker-registry htpasswd
  /usr/lib/cni/bridge /usr/lib/cni/host-local)
# Built, not packaged: in the bin dir.
real_node_built=(kubelet containerd containerd-shim-runc-v2 ctr criu)

real_node_check_machine() {
  local c
  for c in "${real_node_commands[@]}"; do
    command -v "$c" >/dev/null && continue
    log "real node: $c missing; installing the real node's Debian packages"
    bash -c '. "$1/../../hack/lib.sh" && install_real_node_deps' _ "$here" >&2 || die "real node: cannot install its packages"
    break
  done
  for c in "${real_node_commands[@]}"; do
    command -v "$c" >/dev/null || die "real node: $c missing (hack/lib.sh install_real_node_deps)"
  done
  for c in "${real_node_built[@]}"; do
    [ -x "$bindir/$c" ] || die "real node: no $c in $bindir (deploy/local/build-binaries.sh --real-node)"
  done
  pgrep -x kubelet >/dev/null && die "real node: a kubelet already runs on this machine (one per machine)"
  ip -o -4 addr | grep -q " ${real_node_cidr%.*}\." && die "real node: $real_node_cidr is in use on this machine"
  ip -o link show "$real_node_bridge" >/dev/null 2>&1 && die "real node: link $real_node_bridge exists"
  [ -e "$real_node_criu_conf" ] && die "real node: $real_node_criu_conf exists (the real node writes its own)"
  return 0
}

real_node_config() {
  mkdir -p "$rn/containerd/root" "$rn/containerd/state" "$rn/cni/net.d" "$rn/cni/ipam" "$rn/kubelet" "$rn/pod-logs"
  # containerd 2.x's own format (version 3). CRIU: checkpoint through the
  # kubelet, and the opt-in restore of a container created from a
  # checkpoint image (containerd v2.1-v2.3 only). The registry's hosts.toml
  # names the cluster CA.
  cat >"$rn/containerd.toml" <<EOF
version = 3
root = "$rn/containerd/root"
state = "$rn/containerd/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$rn/containerd.sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$real_node_pause"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$rn/certs.d"
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  enable_criu = true
  enable_experimental_restore_via_create = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$rn/cni/net.d"
EOF
  mkdir -p "$rn/certs.d/$real_node_ip:$registry_port" "$rn/registry/data"
  cat >"$rn/certs.d/$real_node_ip:$registry_port/hosts.toml" <<EOF
server = "https://$real_node_ip:$registry_port"
[host."https://$real_node_ip:$registry_port"]
  capabilities = ["pull", "resolve", "push"]
  ca = "$dir/pki/ca.crt"
EOF
  # The registry: TLS from the cluster CA, one user (htpasswd, bcrypt), its
  # password in the cluster directory only.
  [ -f "$rn/registry/password" ] || openssl rand -hex 16 >"$rn/registry/password"
  htpasswd -Bbn hibernator "$(cat "$rn/registry/password")" >"$rn/registry/htpasswd"
  cat >"$rn/registry/config.yml" <<EOF
version: 0.1
log: {level: info, fields: {service: registry}}
storage:
  filesystem: {rootdirectory: $rn/registry/data}
  delete: {enabled: true}
http:
  addr: $real_node_ip:$registry_port
  tls: {certificate: $dir/pki/registry.crt, key: $dir/pki/registry.key}
  headers: {X-Content-Type-Options: [nosniff]}
auth:
  htpasswd: {realm: hibernator, path: $rn/registry/htpasswd}
EOF
  cat >"$rn/cni/net.d/10-hibernator.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "hibernator", "plugins": [{"type": "bridge", "bridge": "$real_node_bridge",
 "isGateway": true, "ipMasq": false, "hairpinMode": false,
 "ipam": {"type": "host-local", "dataDir": "$rn/cni/ipam",
  "ranges": [[{"subnet": "$real_node_cidr", "gateway": "$real_node_ip"}]],
  "routes": [{"dst": "$real_node_service_ip/32"}]}}]}
EOF
  cat >"$rn/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $real_node_ip
port: $kubelet_port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $kubelet_healthz_port
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$rn/containerd.sock
failSwapOn: false
protectKernelDefaults: false
podLogsDir: $rn/pod-logs
tlsCertFile: $dir/pki/$real_node_name-serving.crt
tlsPrivateKeyFile: $dir/pki/$real_node_name-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $dir/pki/ca.crt}
authorization: {mode: Webhook}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "50Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
registerWithTaints:
- {key: hibernator.dev/real-node, value: "true", effect: NoSchedule}
EOF
}

# Pods cannot reach 127.0.0.1: a TCP relay on the node IP, same port, passes
# TLS through to the API server (its certificate names the node IP and
# 10.96.0.1). In-cluster clients dial the `kubernetes` Service, whose
# KUBERNETES_SERVICE_HOST/PORT the kubelet puts in every pod; with no
# kube-proxy, one DNAT rule sends that address from the bridge to the relay,
# and the pods' only route beyond the bridge is to that address (the CNI
# config above). down restores iptables from its record.
real_node_service_rule() {
  printf '%s\n' PREROUTING -i "$real_node_bridge" -d "$real_node_service_ip/32" -p tcp --dport 443 \
    -m comment --comment "hibernator real node: the kubernetes Service to the API server relay" \
    -j DNAT --to-destination "$real_node_ip:$apiserver_port"
}

cmd_apiserver-relay() {
  printf '%s\n' "$(command -v socat)" \
    "TCP-LISTEN:$apiserver_port,bind=$real_node_ip,reuseaddr,fork" "TCP:127.0.0.1:$apiserver_port"
}

cmd_containerd() { printf '%s\n' "$bindir/containerd" --config="$rn/containerd.toml"; }
# The shim, and runc's CRIU, are found on containerd's PATH.
env_containerd() { echo "PATH=$bindir:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"; }
cmd_registry() { printf '%s\n' "$(command -v docker-registry)" serve "$rn/registry/config.yml"; }
cmd_kubelet() {
  printf '%s\n' "$bindir/kubelet" \
    --config="$rn/kubelet.yaml" \
    --kubeconfig="$dir/conf/kubelet.kubeconfig" \
    --root-dir="$rn/kubelet" \
    --cert-dir="$rn/kubelet-pki" \
    --hostname-override="$real_node_name" \
    --node-ip="$real_node_ip" \
    --node-labels=hibernator.dev/real-node=true,hibernator.dev/container-checkpoint=true
  extra_args HIBERNATOR_KUBELET_ARGS
}

real_node_ready() {
  [ "$(kubectl_ get node "$real_node_name" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

real_node_up() {
  local t0=$SECONDS t
  rn=$dir/real-node
  mkdir -p "$rn"
  real_node_check_machine
  log "real node: recording the machine's state in $rn/before"
  real_node_snapshot "$rn/before"
  echo "$real_node_bridge" >"$rn/bridge"
  log "real node: bridge $real_node_bridge $real_node_ip/24"
  ip link add "$real_node_bridge" type bridge
  ip addr add "$real_node_ip/24" dev "$real_node_bridge"
  ip link set "$real_node_bridge" up
  pick_port kubelet_port
  pick_port kubelet_healthz_port
  pick_port registry_port
  local p=$dir/pki leaf='basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid'
  printf '[req]\ndistinguished_name = dn\n[dn]\n' >"$p/req.cnf"
  issue "$real_node_name" "/O=system:nodes/CN=system:node:$real_node_name" "$leaf
extendedKeyUsage=clientAuth"
  issue "$real_node_name-serving" "/CN=$real_node_name" "$leaf
extendedKeyUsage=serverAuth
subjectAltName=IP:$real_node_ip,DNS:$real_node_name"
  issue registry "/CN=hibernator-registry" "$leaf
extendedKeyUsage=serverAuth
subjectAltName=IP:$real_node_ip"
  rm -f "$p/req.cnf"
  write_kubeconfig "$dir/conf/kubelet.kubeconfig" "system:node:$real_node_name" "$real_node_name"
  real_node_config
  cmd_apiserver-relay >"$dir/run/apiserver-relay.cmd"
  spawn apiserver-relay
  wait_for "the API server relay on $real_node_ip" "$start_timeout" \
    curl -fsS --max-time 3 --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" \
    --key "$dir/pki/admin.key" "https://$real_node_ip:$apiserver_port/readyz" || { log_tail apiserver-relay; exit 1; }
  local rule
  mapfile -t rule < <(real_node_service_rule)
  iptables -t nat -A "${rule[@]}"
  # And should that rule be gone, the pods' packets still go nowhere else.
  iptables -A FORWARD -i "$real_node_bridge" ! -o "$real_node_bridge" \
    -m comment --comment "hibernator real node: nothing from the pods is routed out" -j DROP
  log "real node: $real_node_service_ip:443 (the kubernetes Service) from $real_node_bridge goes to the relay"
  mkdir -p "${real_node_criu_conf%/*}"
  printf '%s\n' "# written by the hibernator local cluster's real node ($dir)" tcp-close >"$real_node_criu_conf"
  cmd_registry >"$dir/run/registry.cmd"
  spawn registry
  wait_for "the registry on $real_node_ip:$registry_port" "$start_timeout" \
    curl -fsS --max-time 3 --cacert "$dir/pki/ca.crt" -u "hibernator:$(cat "$rn/registry/password")" \
    "https://$real_node_ip:$registry_port/v2/" || { log_tail registry; exit 1; }
  log "real node: registry on $real_node_ip:$registry_port ($("$bindir/criu" --version | head -n1))"
  t=$SECONDS
  cmd_containerd >"$dir/run/containerd.cmd"
  env_containerd >"$dir/run/containerd.env"
  spawn containerd
  wait_for "containerd" "$start_timeout" ctr_ version || { log_tail containerd; exit 1; }
  log "real node: containerd ready in $((SECONDS - t)) s; importing the pause image"
  ctr_ images import "$(real_node_pause_archive)" >/dev/null
  t=$SECONDS
  cmd_kubelet >"$dir/run/kubelet.cmd"
  spawn kubelet
  wait_for "the real node to be Ready" "$start_timeout" real_node_ready || { log_tail kubelet; exit 1; }
  log "real node: $real_node_name Ready $((SECONDS - t)) s after the kubelet started"
  # The images deploy/local/images.sh has built for this tree; building is a
  # step of its own (the controller's takes minutes cold).
  t=$SECONDS
  # images.sh runs the ctr built here, as the cluster's env does.
  PATH=$bindir:$PATH HIBERNATOR_CONTAINERD_SOCK=$rn/containerd.sock "$here/images.sh" import --cached \
    $("$here/images.sh" list) || log "real node: importing the images failed"
  log "real node: images imported in $((SECONDS - t)) s; real node set up in $((SECONDS - t0)) s"
  cat >>"$dir/env" <<EOF
# The real node (kubelet + containerd): images go in with
#   ctr -a \$HIBERNATOR_CONTAINERD_SOCK -n k8s.io images import IMAGE.tar
export HIBERNATOR_REAL_NODE='$real_node_name'
export HIBERNATOR_REAL_NODE_IP='$real_node_ip'
export HIBERNATOR_CONTAINERD_SOCK='$rn/containerd.sock'
# Its registry for checkpoint images (TLS from the cluster CA; user
# hibernator, the password in the file).
export HIBERNATOR_REGISTRY='$real_node_ip:$registry_port'
export HIBERNATOR_REGISTRY_PASSWORD_FILE='$rn/registry/password'
EOF
}

# ---------------------------------------------------------------- down

# real_node_down: stops the kubelet, the pods and containerd, and puts back
# what the record in $dir/real-node/before holds. Fails on any difference.
real_node_down() {
  rn=$dir/real-node
  [ -d "$rn/before" ] || return 0
  local rc=0 pid m n c l s v p t0=$SECONDS
  # The pods first, while the kubelet can still stop their sandboxes (CNI DEL).
  if component_pid kubelet >/dev/null && component_pid kube-apiserver >/dev/null; then
    kubectl_ delete pods -A --field-selector "spec.nodeName=$real_node_name" --wait=true --timeout=30s >/dev/null 2>&1 || true
  fi
  local t_pods=$((SECONDS - t0))
  stop_components kubelet apiserver-relay registry
  if component_pid containerd >/dev/null; then
    for c in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s KILL "$c" >/dev/null 2>&1 || true; done
    sleep 0.5
    for c in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$c" >/dev/null 2>&1 || true; done
    for c in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers delete "$c" >/dev/null 2>&1 || true; done
  fi
  stop_components containerd
  local t_stop=$((SECONDS - t0))
  # Shims of this containerd that outlived it.
  for pid in /proc/[0-9]*; do
    pid=${pid#/proc/}
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$bindir/containerd-shim-runc-v2")" ] || continue
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$rn/containerd.sock"; then
      log "real node: stopping leftover shim $pid"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  sleep 0.3
  real_node_snapshot "$rn/now"
  # Mounts made since the record, innermost first.
  for m in $(LC_ALL=C comm -13 "$rn/before/mounts" "$rn/now/mounts" | LC_ALL=C sort -r); do
    umount -l "$m" 2>/dev/null || log "real node: cannot unmount $m"
  done
  for n in $(LC_ALL=C comm -13 "$rn/before/netns" "$rn/now/netns"); do
    ip netns delete "$n" 2>/dev/null || log "real node: cannot delete netns $n"
  done
  # Processes left in the pods' cgroups: a `runc init` whose runc went
  # with containerd waits for it forever (seen once, in wait_for_partner,
  # after a full test run) and keeps its cgroup from going. Thawed first,
  # so that a frozen one takes the signal.
  local procs f
  for c in $(LC_ALL=C comm -13 "$rn/before/cgroups" "$rn/now/cgroups"); do
    for f in $(find "$c" -name freezer.state 2>/dev/null); do echo THAWED >"$f" 2>/dev/null || true; done
    procs=$(find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u | tr '\n' ' ')
    if [ -n "${procs// /}" ]; then
      log "real node: stopping what was left in $c: $(for p in $procs; do printf '%s(%s) ' "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-40)" "$p"; done)"
      # shellcheck disable=SC2086
      kill -KILL $procs 2>/dev/null || true
    fi
  done
  sleep 0.3
  for c in $(LC_ALL=C comm -13 "$rn/before/cgroups" "$rn/now/cgroups"); do
    find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || log "real node: cannot remove cgroup $c"
  done
  for l in $(LC_ALL=C comm -13 "$rn/before/links" "$rn/now/links"); do
    case $l in "$real_node_bridge" | veth*) ip link delete "$l" 2>/dev/null || true ;; esac
  done
  local t
  for t in iptables ip6tables; do
    if ! cmp -s "$rn/before/$t" "$rn/now/$t"; then
      # Tables the record lacks were created since: empty them; then the rest.
      for s in $(sed -n 's/^\*//p' "$rn/now/$t"); do
        grep -qx "\*$s" "$rn/before/$t" || { "$t" -t "$s" -F && "$t" -t "$s" -X; } || true
      done
      "$t-restore" <"$rn/before/$t" || log "real node: $t-restore failed"
    fi
  done
  # Tables iptables-nft created since the record: delete them whole.
  if command -v nft >/dev/null && ! cmp -s "$rn/before/nftables" "$rn/now/nftables"; then
    local fam tab
    while read -r _ fam tab _; do
      grep -qx "table $fam $tab {" "$rn/before/nftables" || nft delete table "$fam" "$tab" || true
    done < <(nft list tables 2>/dev/null | sed 's/$/ {/')
  fi
  while IFS='=' read -r s v; do
    p=/proc/sys/${s//.//}
    [ "$v" != absent ] && [ -w "$p" ] && [ "$(cat "$p")" != "$v" ] && { echo "$v" >"$p" || true; }
  done <"$rn/before/sysctls"
  for p in $(LC_ALL=C comm -13 "$rn/before/paths" "$rn/now/paths"); do
    rm -rf -- "$p"
  done
  for m in $(LC_ALL=C comm -13 "$rn/before/modules" "$rn/now/modules"); do
    rmmod "$m" 2>/dev/null || true
  done
  for m in $(LC_ALL=C comm -13 "$rn/before/modules" "$rn/now/modules"); do
    rmmod "$m" 2>/dev/null || true
  done
  rm -rf "$rn/now"
  real_node_snapshot "$rn/now"
  real_node_compare "$rn/before" "$rn/now" || rc=1
  log "real node: pods gone after ${t_pods} s, kubelet and containerd stopped after ${t_stop} s, state put back after $((SECONDS - t0)) s"
  ((rc == 0)) && log "real node: machine state restored as recorded"
  return "$rc"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case ${1:-} in
  oci-archive) shift; oci_archive "$@" ;;
  minbase-image) real_node_minbase_archive ;;
  *) echo "usage: $0 oci-archive OUT.tar REF ROOTFS.tar CMD... | minbase-image" >&2; exit 2 ;;
  esac
fi
