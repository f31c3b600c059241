#!/usr/bin/env bash
# A local Kubernetes control plane for the tests and the demo: etcd, the real
# kube-apiserver, kube-controller-manager and kube-scheduler, and kwok playing
# the nodes and the pod lifecycle. Everything listens on 127.0.0.1 only, on
# random free ports, with TLS and RBAC on, so several clusters can run on one
# machine at once. All state (certificates, etcd data, logs, PIDs) lives in
# one directory per cluster.
#
#   cluster.sh up [--dir DIR] [--real-node] [--kueue]  start a cluster; prints DIR
#                                 on stdout (--real-node: also a kubelet + containerd
#                                 node, as root; see real-node.sh; --kueue: Kueue's
#                                 manager and webhooks, see kueue.sh)
#   cluster.sh down [--dir DIR] [--keep-dir] [--kill]
#   cluster.sh env [--dir DIR]            print the sourceable env file
#   cluster.sh status [--dir DIR]
#   cluster.sh stop-apiserver|start-apiserver|restart-apiserver [--dir DIR]
#                                 [--kill]  (--kill: SIGKILL, no graceful shutdown)
#   cluster.sh compact-etcd [--dir DIR]   compact etcd to its current revision
#   cluster.sh selftest [--dir DIR]       scheduling, tokens, garbage collection,
#                                         storage
#
# Without --dir, `up` uses $HIBERNATOR_CLUSTER_DIR or a new
# /tmp/hibernator-cluster.XXXXXX; the other commands use $HIBERNATOR_CLUSTER_DIR.
#
# Requires (Debian packages): bash coreutils util-linux (flock, setsid)
# openssl curl grep sed; and, to build the binaries once, Go (see
# build-binaries.sh). Set HIBERNATOR_BIN_DIR to use prebuilt binaries.
#
# Tunables (environment):
#   HIBERNATOR_BIN_DIR          directory with the binaries (skips the build)
#   HIBERNATOR_START_TIMEOUT    seconds to wait for each component (60)
#   HIBERNATOR_RESTART_TIMEOUT  seconds to wait for a restarted component (180)
#   HIBERNATOR_STOP_TIMEOUT     seconds from SIGTERM to SIGKILL (15)
#   HIBERNATOR_POD_CIDR         pod IPs kwok hands out (10.244.0.0/16). They
#                               are only status fields: nothing listens there
#                               and nothing may connect to them.
#   HIBERNATOR_<C>_ARGS         extra flags, word-split, for C in ETCD,
#                               APISERVER, CONTROLLER_MANAGER, SCHEDULER, KWOK
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly here
# shellcheck source=real-node.sh
. "$here/real-node.sh"
# shellcheck source=kueue.sh
. "$here/kueue.sh"
readonly components=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok kueue)
start_timeout=${HIBERNATOR_START_TIMEOUT:-60}
# A restart from the recorded command line (the API server under a test that
# restarts it, on a machine loaded by other tests beside it) may take longer
# than a first start: its etcd is full, and every CRD's schema is compiled
# again. Giving up kills the component and every test after it.
restart_timeout=${HIBERNATOR_RESTART_TIMEOUT:-180}
# Below the kernel's ephemeral range (32768+), so outgoing connections of the
# tests never hold a port that a component is about to bind.
readonly port_min=20000 port_span=12000
readonly marker=.hibernator-cluster

log() { printf '[cluster] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

# ---------------------------------------------------------------- processes

# Field 22 of /proc/PID/stat: the start time in clock ticks since boot. It
# tells a live process from a later one that reused its PID.
proc_starttime() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  local -a f
  read -ra f <<<"${stat##*) }"
  [ "${f[0]}" != Z ] || return 1
  echo "${f[19]}"
}

# The same, zombies included.
proc_anystate_starttime() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  local -a f
  read -ra f <<<"${stat##*) }"
  echo "${f[19]}"
}

# component_pid NAME: the recorded PID of NAME if that process still runs the
# binary this cluster started, with the same start time; fails otherwise.
component_pid() {
  local name=$1 pid start exe cur
  [ -f "$dir/run/$name.pid" ] && [ -f "$dir/run/$name.proc" ] || return 1
  read -r pid <"$dir/run/$name.pid" || return 1
  read -r start exe <"$dir/run/$name.proc" || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  cur=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  [ "${cur% (deleted)}" = "$exe" ] || return 1
  cur=$(proc_starttime "$pid") || return 1
  [ "$cur" = "$start" ] || return 1
  echo "$pid"
}

# pid_listens PID PORT: PID holds the listening TCP socket on PORT. Guards
# against taking another cluster's server, which may have won the port, for
# ours.
pid_listens() {
  local pid=$1 hex f addr st rest inodes=" " fd
  printf -v hex '%04X' "$2"
  for f in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$f" ] || continue
    # sl local rem st tx:rx tr:when retrnsmt uid timeout inode
    while read -r _ addr _ st _ _ _ _ _ rest; do
      [ "$st" = 0A ] && [ "${addr##*:}" = "$hex" ] && inodes+="${rest%% *} "
    done <"$f"
  done
  [ "$inodes" != " " ] || return 1
  for fd in /proc/"$pid"/fd/*; do
    f=$(readlink "$fd" 2>/dev/null) || continue
    case $f in socket:\[*\]) case $inodes in *" ${f:8:-1} "*) return 0 ;; esac ;; esac
  done
  return 1
}

port_in_use() {
  local hex f addr
  printf -v hex '%04X' "$1"
  for f in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$f" ] || continue
    while read -r _ addr _; do
      [ "${addr##*:}" = "$hex" ] && return 0
    done <"$f"
  done
  return 1
}

picked_ports=" "
# pick_port VAR: a random port that no socket on this machine uses, and not
# one picked before by this run. Another cluster may still bind it between
# the check and our bind: start_with_retry catches that.
pick_port() {
  local -n _ret=$1
  local p i
  for ((i = 0; i < 500; i++)); do
    p=$((port_min + (RANDOM * 32768 + RANDOM) % port_span))
    case $picked_ports in *" $p "*) continue ;; esac
    port_in_use "$p" && continue
    picked_ports+="$p "
    _ret=$p
    return 0
  done
  die "no free port found in $port_min-$((port_min + port_span))"
}

# spawn NAME: starts the command recorded in run/NAME.cmd (one argument per
# line, the binary first) with the environment in run/NAME.env, in its own
# session, detached from our terminal, appending to logs/NAME.log.
spawn() {
  local name=$1 pid start exe
  local -a argv envv=()
  mapfile -t argv <"$dir/run/$name.cmd"
  [ -f "$dir/run/$name.env" ] && mapfile -t envv <"$dir/run/$name.env"
  exe=$(readlink -f "${argv[0]}")
  [ -x "$exe" ] || die "$name: $exe is not executable"
  argv[0]=$exe
  # A wrapper that execs the component (run/NAME.exe names the binary the
  # PID ends up running).
  [ ! -f "$dir/run/$name.exe" ] || exe=$(readlink -f "$(cat "$dir/run/$name.exe")")
  printf '\n===== %s starting %s\n' "$(date -u +%FT%TZ)" "$name" >>"$dir/logs/$name.log"
  # No job control in this shell, so the subshell is not a process group
  # leader and setsid(1) execs in place: $! stays the component's PID.
  (
    cd "$dir"
    exec env "${envv[@]}" setsid "${argv[@]}" </dev/null >>"$dir/logs/$name.log" 2>&1 8>&- 9>&-
  ) &
  pid=$!
  start=$(proc_starttime "$pid") || die "$name exited at once; see $dir/logs/$name.log"
  echo "$pid" >"$dir/run/$name.pid"
  echo "$start $exe" >"$dir/run/$name.proc"
}

# Health checks: each prints nothing and succeeds once NAME serves.
check_etcd() {
  curl -fsS --max-time 2 "http://127.0.0.1:$etcd_port/health" 2>/dev/null | grep -q '"health":"true"'
}
check_kube-apiserver() {
  curl -fsS --max-time 3 --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" \
    --key "$dir/pki/admin.key" "https://127.0.0.1:$apiserver_port/readyz" >/dev/null 2>&1
}
# The controller manager and the scheduler serve with self-signed certificates
# (--cert-dir); /healthz is open to anyone, so no client certificate either.
check_kube-controller-manager() {
  curl -fsSk --max-time 2 "https://127.0.0.1:$controller_manager_port/healthz" >/dev/null 2>&1
}
check_kube-scheduler() {
  curl -fsSk --max-time 2 "https://127.0.0.1:$scheduler_port/readyz" >/dev/null 2>&1
}
check_kwok() {
  curl -fsS --max-time 2 "http://127.0.0.1:$kwok_port/healthz" >/dev/null 2>&1
}

main_port() {
  case $1 in
  etcd) echo "$etcd_port" ;;
  kube-apiserver) echo "$apiserver_port" ;;
  kube-controller-manager) echo "$controller_manager_port" ;;
  kube-scheduler) echo "$scheduler_port" ;;
  kwok) echo "$kwok_port" ;;
  kueue) echo "$kueue_health_port" ;;
  esac
}

log_tail() {
  log "last lines of $dir/logs/$1.log:"
  tail -n "${2:-40}" "$dir/logs/$1.log" | sed 's/^/    /' >&2 || true
}

# The API server's own list of the readiness checks that fail.
log_readyz() {
  log "failing readiness checks of kube-apiserver:"
  curl -sS --max-time 10 --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" \
    --key "$dir/pki/admin.key" "https://127.0.0.1:$apiserver_port/readyz?verbose" 2>&1 |
    grep -v ' ok$' | sed 's/^/    /' >&2 || true
}

# wait_healthy NAME: 0 once NAME answers its health check from its own port,
# 1 if it exited (bind failures are told apart by the caller), 2 on timeout.
# An optional second argument is the timeout in seconds.
wait_healthy() {
  local name=$1 deadline=$((SECONDS + ${2:-$start_timeout})) pid port
  port=$(main_port "$name")
  while ((SECONDS < deadline)); do
    pid=$(component_pid "$name") || {
      # Just after spawn the PID may still be env or setsid, about to exec.
      local p s
      read -r p <"$dir/run/$name.pid"
      read -r s _ <"$dir/run/$name.proc"
      [ "$(proc_starttime "$p" 2>/dev/null)" = "$s" ] || return 1
      sleep 0.1
      continue
    }
    if "check_$name" && pid_listens "$pid" "$port"; then
      return 0
    fi
    sleep 0.2
  done
  return 2
}

# Our components are no children of ours once `up` has returned, and init
# reaps them only a moment (about a second here) after they exit. `down` waits
# for that, so that no <defunct> entry is left for a caller's `pgrep`; a
# stopped component has closed its sockets already, so nothing else waits.
wait_reaped() {
  local entry deadline=$((SECONDS + 5))
  for entry in "${stopped[@]}"; do
    while [ "$(proc_anystate_starttime "${entry%:*}")" = "${entry#*:}" ] && ((SECONDS < deadline)); do
      sleep 0.05
    done
  done
}

# stop_components NAME...: SIGTERM (or $stop_signal) to each that is still
# ours, then SIGKILL to whatever is left after the grace period. Never signals
# a PID that no longer runs the binary we started.
stop_signal=TERM
stopped=()
stop_components() {
  local name pid deadline left
  local -A pids=() starts=()
  for name in "$@"; do
    if pid=$(component_pid "$name"); then
      pids[$name]=$pid
      starts[$name]=$(proc_anystate_starttime "$pid")
      kill -"$stop_signal" "$pid" 2>/dev/null || true
    fi
  done
  deadline=$((SECONDS + ${HIBERNATOR_STOP_TIMEOUT:-15}))
  while :; do
    left=0
    for name in "${!pids[@]}"; do
      if component_pid "$name" >/dev/null; then left=1; fi
    done
    ((left)) || break
    if ((SECONDS >= deadline)); then
      for name in "${!pids[@]}"; do
        if pid=$(component_pid "$name"); then
          log "$name (pid $pid) did not stop on SIGTERM; sending SIGKILL"
          kill -KILL "$pid" 2>/dev/null || true
        fi
      done
      sleep 0.2
      break
    fi
    sleep 0.1
  done
  for name in "${!pids[@]}"; do
    stopped+=("${pids[$name]}:${starts[$name]}")
  done
  for name in "$@"; do
    rm -f "$dir/run/$name.pid" "$dir/run/$name.proc"
  done
}

# start_with_retry NAME: writes NAME's command line with freshly picked ports,
# starts it and waits until it is healthy; on a port clash it picks new ports
# and tries again.
start_with_retry() {
  local name=$1 attempt rc
  for attempt in 1 2 3 4 5; do
    "ports_$name"
    "cmd_$name" >"$dir/run/$name.cmd"
    spawn "$name"
    rc=0
    wait_healthy "$name" || rc=$?
    ((rc == 0)) && return 0
    if ((rc == 1)) && grep -qiE 'address already in use|bind: address' "$dir/logs/$name.log"; then
      log "$name: port clash, retrying with other ports (attempt $attempt)"
      stop_components "$name"
      : >"$dir/logs/$name.log"
      continue
    fi
    if ((rc == 2)); then
      log "$name did not become healthy within ${start_timeout}s"
    else
      log "$name exited during startup"
    fi
    log_tail "$name"
    return 1
  done
  log "$name: gave up after 5 port clashes"
  log_tail "$name"
  return 1
}

# Restarts NAME from its recorded command line, same ports.
start_recorded() {
  local name=$1 rc=0
  spawn "$name"
  wait_healthy "$name" "$restart_timeout" || rc=$?
  if ((rc != 0)); then
    if ((rc == 2)); then
      log "$name did not become healthy within ${restart_timeout}s"
      [ "$name" != kube-apiserver ] || log_readyz
    else
      log "$name exited during startup"
    fi
    log_tail "$name"
    stop_components "$name"
    return 1
  fi
}

# ---------------------------------------------------------------- pki

openssl_quiet() {
  local out
  out=$(openssl "$@" 2>&1) || {
    printf '%s\n' "$out" >&2
    die "openssl $1 failed"
  }
}

# The CA and the TLS certificates use P-256 keys (fast to make, accepted by
# Kubernetes, OpenSSL and curl); the service-account signing key is RSA.
new_ec_key() {
  (umask 077 && openssl_quiet genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1")
}

# make_ca NAME SUBJECT: a self-signed CA in pki/NAME.{key,crt}.
make_ca() {
  local name=$1 subject=$2 p=$dir/pki
  new_ec_key "$p/$name.key"
  openssl_quiet req -new -key "$p/$name.key" -subj "$subject" -config "$p/req.cnf" -out "$p/$name.csr"
  printf '%s\n' 'basicConstraints=critical,CA:TRUE' \
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature' \
    'subjectKeyIdentifier=hash' >"$p/$name.ext"
  openssl_quiet x509 -req -in "$p/$name.csr" -signkey "$p/$name.key" -days 3650 -sha256 \
    -set_serial "0x$(openssl rand -hex 15)" -extfile "$p/$name.ext" -out "$p/$name.crt"
  rm -f "$p/$name.csr" "$p/$name.ext"
}

# issue NAME SUBJECT EXTENSIONS [CA]: pki/NAME.{key,crt} signed by pki/CA
# (default: the cluster CA).
issue() {
  local name=$1 subject=$2 ext=$3 ca=${4:-ca} p=$dir/pki
  new_ec_key "$p/$name.key"
  openssl_quiet req -new -key "$p/$name.key" -subj "$subject" -config "$p/req.cnf" -out "$p/$name.csr"
  printf '%s\n' "$ext" >"$p/$name.ext"
  openssl_quiet x509 -req -in "$p/$name.csr" -CA "$p/$ca.crt" -CAkey "$p/$ca.key" \
    -set_serial "0x$(openssl rand -hex 15)" -days 825 -sha256 \
    -extfile "$p/$name.ext" -out "$p/$name.crt"
  rm -f "$p/$name.csr" "$p/$name.ext"
}

make_pki() {
  local p=$dir/pki
  mkdir -p "$p"
  chmod 700 "$p"
  # A config of our own, so the machine's openssl.cnf adds nothing.
  printf '[req]\ndistinguished_name = dn\n[dn]\n' >"$p/req.cnf"

  make_ca ca "/CN=hibernator-local-ca-$(basename "$dir")"

  local leaf='basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid'
  # The in-cluster names and the first service IP are there for clients that
  # build the in-cluster URL; on this machine everyone dials 127.0.0.1.
  issue apiserver "/CN=kube-apiserver" "$leaf
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:::1,IP:10.96.0.1,IP:$real_node_ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  issue admin "/O=system:masters/CN=admin" "$leaf
extendedKeyUsage=clientAuth"
  # The API server's identity towards kubelets (logs, exec, port-forward).
  issue apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$leaf
extendedKeyUsage=clientAuth"
  issue kube-controller-manager "/CN=system:kube-controller-manager" "$leaf
extendedKeyUsage=clientAuth"
  issue kube-scheduler "/CN=system:kube-scheduler" "$leaf
extendedKeyUsage=clientAuth"
  # kwok writes node and pod status, node leases and deletes pods for many
  # nodes; mapping that onto the Node authorizer would need one identity per
  # node, so it runs as a cluster admin, as in kwokctl's clusters.
  issue kwok "/O=system:masters/CN=kwok-controller" "$leaf
extendedKeyUsage=clientAuth"

  # The aggregation layer's own CA, apart from the cluster CA, so that no
  # client certificate minted by the tests can pass for the front proxy.
  # Without it the controller manager and the scheduler log, over and over,
  # that the request-header CA bundle is missing.
  make_ca front-proxy-ca "/CN=hibernator-local-front-proxy-ca-$(basename "$dir")"
  issue front-proxy-client "/CN=front-proxy-client" "$leaf
extendedKeyUsage=clientAuth" front-proxy-ca

  (umask 077 && openssl_quiet genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$p/sa.key")
  openssl_quiet pkey -in "$p/sa.key" -pubout -out "$p/sa.pub"
  rm -f "$p/req.cnf"
}

b64() { base64 -w0 <"$1"; }

# write_kubeconfig FILE USER CERTNAME: a kubeconfig with everything embedded.
write_kubeconfig() {
  local file=$1 user=$2 cert=$3
  (
    umask 077
    cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: hibernator-local
  cluster:
    server: https://127.0.0.1:$apiserver_port
    certificate-authority-data: $(b64 "$dir/pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(b64 "$dir/pki/$cert.crt")
    client-key-data: $(b64 "$dir/pki/$cert.key")
contexts:
- name: hibernator-local
  context:
    cluster: hibernator-local
    user: $user
current-context: hibernator-local
EOF
  )
}

# ---------------------------------------------------------------- commands

# extra_args VAR: the words of $VAR, one per line (flags have no spaces).
extra_args() {
  local -a words
  read -ra words <<<"${!1:-}"
  if ((${#words[@]})); then printf '%s\n' "${words[@]}"; fi
}

ports_etcd() {
  pick_port etcd_port
  pick_port etcd_peer_port
}
cmd_etcd() {
  printf '%s\n' "$bindir/etcd" \
    --name=hibernator \
    --data-dir="$dir/etcd" \
    --listen-client-urls="http://127.0.0.1:$etcd_port" \
    --advertise-client-urls="http://127.0.0.1:$etcd_port" \
    --listen-peer-urls="http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster="hibernator=http://127.0.0.1:$etcd_peer_port" \
    --unsafe-no-fsync=true \
    --log-level=warn
  extra_args HIBERNATOR_ETCD_ARGS
}

# The endpoint reconciler would publish the advertise address as the
# endpoint of the `kubernetes` Service, and Endpoints may not be loopback
# addresses; nothing here runs in a pod, so the Service stays without one.
#
# On SIGTERM the API server by default waits up to its request timeout (60 s)
# for open watches. Here it answers new requests with 429 + Retry-After until
# the short ones are done, ends open watches within 2 s, and exits: a restart
# mid-watch takes seconds, and clients see a real graceful shutdown.
ports_kube-apiserver() { pick_port apiserver_port; }
cmd_kube-apiserver() {
  printf '%s\n' "$bindir/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 \
    --endpoint-reconciler-type=none \
    --secure-port="$apiserver_port" \
    --cert-dir="$dir/pki/apiserver-generated" \
    --tls-cert-file="$dir/pki/apiserver.crt" \
    --tls-private-key-file="$dir/pki/apiserver.key" \
    --client-ca-file="$dir/pki/ca.crt" \
    --requestheader-client-ca-file="$dir/pki/front-proxy-ca.crt" \
    --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User \
    --requestheader-uid-headers=X-Remote-Uid \
    --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$dir/pki/front-proxy-client.crt" \
    --proxy-client-key-file="$dir/pki/front-proxy-client.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$dir/pki/sa.pub" \
    --service-account-signing-key-file="$dir/pki/sa.key" \
    --service-cluster-ip-range=10.96.0.0/16 \
    --authorization-mode=Node,RBAC \
    --kubelet-client-certificate="$dir/pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$dir/pki/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP \
    --allow-privileged=true \
    --shutdown-send-retry-after=true \
    --shutdown-watch-termination-grace-period=2s \
    --profiling=false
  extra_args HIBERNATOR_APISERVER_ARGS
}

# Every default controller runs (tokens, garbage collection, namespaces, node
# lifecycle, workloads, CSR signing, ...) except node CIDR allocation: kwok
# hands out the pod IPs. Release 1.37 has no cloud controllers left to drop.
#
# The hostPath provisioner serves the StorageClass "standard" of
# storage.yaml, so that claims bind: each volume is a directory
# /tmp/hostpath_pv/<uuid> that the controller manager creates (the path is
# fixed in Kubernetes) and removes when its claim goes (reclaim Delete).
ports_kube-controller-manager() { pick_port controller_manager_port; }
cmd_kube-controller-manager() {
  local kc=$dir/conf/kube-controller-manager.kubeconfig
  printf '%s\n' "$bindir/kube-controller-manager" \
    --kubeconfig="$kc" \
    --authentication-kubeconfig="$kc" \
    --authorization-kubeconfig="$kc" \
    --bind-address=127.0.0.1 \
    --secure-port="$controller_manager_port" \
    --cert-dir="$dir/pki/kube-controller-manager-generated" \
    --leader-elect=false \
    --use-service-account-credentials=true \
    --service-account-private-key-file="$dir/pki/sa.key" \
    --root-ca-file="$dir/pki/ca.crt" \
    --cluster-signing-cert-file="$dir/pki/ca.crt" \
    --cluster-signing-key-file="$dir/pki/ca.key" \
    --controllers="*,-node-ipam-controller" \
    --enable-hostpath-provisioner=true \
    --profiling=false
  extra_args HIBERNATOR_CONTROLLER_MANAGER_ARGS
}

ports_kube-scheduler() { pick_port scheduler_port; }
cmd_kube-scheduler() {
  local kc=$dir/conf/kube-scheduler.kubeconfig
  printf '%s\n' "$bindir/kube-scheduler" \
    --kubeconfig="$kc" \
    --authentication-kubeconfig="$kc" \
    --authorization-kubeconfig="$kc" \
    --bind-address=127.0.0.1 \
    --secure-port="$scheduler_port" \
    --cert-dir="$dir/pki/kube-scheduler-generated" \
    --leader-elect=false \
    --profiling=false
  extra_args HIBERNATOR_SCHEDULER_ARGS
}

ports_kwok() { pick_port kwok_port; }
cmd_kwok() {
  printf '%s\n' "$bindir/kwok" \
    --kubeconfig="$dir/conf/kwok.kubeconfig" \
    --config="$dir/conf/kwok-stages.yaml" \
    --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds=40 \
    --node-ip=127.0.0.1 \
    --cidr="${HIBERNATOR_POD_CIDR:-10.244.0.0/16}" \
    --server-address="127.0.0.1:$kwok_port"
  extra_args HIBERNATOR_KWOK_ARGS
}

save_ports() {
  cat >"$dir/run/ports" <<EOF
bindir='$bindir'
etcd_port=$etcd_port
etcd_peer_port=$etcd_peer_port
apiserver_port=$apiserver_port
controller_manager_port=$controller_manager_port
scheduler_port=$scheduler_port
kwok_port=$kwok_port
EOF
}

write_env() {
  cat >"$dir/env" <<EOF
# Local cluster $dir: source this file, then use kubectl as usual.
export HIBERNATOR_CLUSTER_DIR='$dir'
export KUBECONFIG='$dir/kubeconfig'
export HIBERNATOR_KUBECONFIG='$dir/kubeconfig'
export HIBERNATOR_APISERVER_URL='https://127.0.0.1:$apiserver_port'
export HIBERNATOR_ETCD_URL='http://127.0.0.1:$etcd_port'
export HIBERNATOR_CA_CERT='$dir/pki/ca.crt'
export HIBERNATOR_CA_KEY='$dir/pki/ca.key'
export HIBERNATOR_SA_KEY='$dir/pki/sa.key'
export HIBERNATOR_SA_PUB='$dir/pki/sa.pub'
export HIBERNATOR_BIN_DIR='$bindir'
# Per cluster, so a later cluster on the same port never sees stale discovery.
export KUBECACHEDIR='$dir/kubectl-cache'
export PATH='$bindir':"\$PATH"
EOF
}

# ---------------------------------------------------------------- state

# parse_args ARGS...: dir from --dir, else $HIBERNATOR_CLUSTER_DIR; flags.
parse_args() {
  dir=${HIBERNATOR_CLUSTER_DIR:-}
  keep_dir=0
  real_node=0
  with_kueue=0
  while (($#)); do
    case $1 in
    --dir)
      (($# >= 2)) || die "--dir needs a value"
      dir=$2
      shift 2
      ;;
    --dir=*)
      dir=${1#--dir=}
      shift
      ;;
    --keep-dir)
      keep_dir=1
      shift
      ;;
    --kill)
      stop_signal=KILL
      shift
      ;;
    --real-node)
      real_node=1
      shift
      ;;
    --kueue)
      with_kueue=1
      shift
      ;;
    -h | --help) usage ;;
    *) die "unknown argument: $1" ;;
    esac
  done
}

load_state() {
  [ -n "$dir" ] || die "no cluster: pass --dir DIR or set HIBERNATOR_CLUSTER_DIR"
  [ -d "$dir" ] || die "no such directory: $dir"
  dir=$(cd "$dir" && pwd)
  [ -f "$dir/$marker" ] || die "$dir is not a cluster directory (no $marker)"
  # shellcheck source=/dev/null
  . "$dir/run/ports"
}

lock_dir() {
  exec 8>"$dir/run/lock"
  flock 8
}

kubectl_() { "$bindir/kubectl" --kubeconfig="$dir/kubeconfig" --cache-dir="$dir/kubectl-cache" "$@"; }

# ---------------------------------------------------------------- up

up_failed() {
  local rc=$?
  trap - EXIT INT TERM
  if ((rc != 0)) && [ -n "${dir:-}" ] && [ -d "$dir/run" ]; then
    log "startup failed; stopping what was started"
    real_node_down || true
    stop_components kueue kwok kube-scheduler kube-controller-manager
    stop_components kube-apiserver
    stop_components etcd
    log "logs kept in $dir/logs (remove with: $0 down --dir $dir)"
  fi
  exit "$rc"
}

# Polls CMD until it succeeds, for up to SECS seconds.
wait_for() {
  local what=$1 secs=$2 deadline
  shift 2
  deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      log "timed out after ${secs}s waiting for $what"
      return 1
    fi
    sleep 0.25
  done
}

nodes_schedulable() {
  local out
  out=$(kubectl_ get nodes -l type=kwok -o \
    'jsonpath={range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Ready")].status}{" "}{.spec.taints[*].key}{"\n"}{end}') || return 1
  [ "$(grep -c . <<<"$out")" -ge 3 ] || return 1
  # Ready, and the node lifecycle controller has lifted its not-ready taints.
  ! grep -vE '^[^ ]+ True kwok.x-k8s.io/node$' <<<"$out" | grep -q .
}

cmd_up() {
  local t0=$SECONDS
  if [ -z "$dir" ]; then
    dir=$(mktemp -d /tmp/hibernator-cluster.XXXXXX)
  else
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ ! -e "$dir/$marker" ] || die "$dir already holds a cluster; run: $0 down --dir $dir"
    [ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
  fi
  chmod 700 "$dir"
  mkdir -p "$dir/run" "$dir/logs" "$dir/conf" "$dir/etcd" "$dir/kwok-home" "$dir/kubectl-cache"
  echo "created $(date -u +%FT%TZ) by $0" >"$dir/$marker"
  lock_dir
  trap up_failed EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  log "state directory: $dir"

  if [ -n "${HIBERNATOR_BIN_DIR:-}" ]; then
    bindir=$HIBERNATOR_BIN_DIR
  else
    log "locating binaries (builds them on first use; takes a long time once)"
    local build_args=()
    ((real_node)) && build_args+=(--real-node)
    ((with_kueue)) && build_args+=(--kueue)
    bindir=$("$here/build-binaries.sh" "${build_args[@]}" 8>&-)
  fi
  local b
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok; do
    [ -x "$bindir/$b" ] || die "missing binary: $bindir/$b"
  done

  log "generating certificates"
  make_pki
  [ -f "$bindir/kwok-stages.yaml" ] || die "missing $bindir/kwok-stages.yaml (run build-binaries.sh)"
  # kwok's pod-delete for pods without a preStop sleep hook; ours for those
  # with one (kwok-prestop-stage.yaml says why).
  {
    awk '{ print }
      /^  name: pod-delete$/ { in_delete = 1 }
      in_delete && /operator: .Exists./ {
        print "    - key: \x27.spec.containers[0].lifecycle.preStop.sleep.seconds\x27"
        print "      operator: \x27DoesNotExist\x27"
        in_delete = 0
      }' "$bindir/kwok-stages.yaml"
    echo "---"
    cat "$here/kwok-prestop-stage.yaml"
  } >"$dir/conf/kwok-stages.yaml"
  [ "$(grep -c "preStop.sleep.seconds'" "$dir/conf/kwok-stages.yaml")" = 2 ] ||
    die "kwok's pod-delete stage has changed: $bindir/kwok-stages.yaml"
  # kwok also reads ~/.kwok/kwok.yaml when present; a HOME of its own keeps
  # a developer's personal configuration out of the tests.
  echo "HOME=$dir/kwok-home" >"$dir/run/kwok.env"

  etcd_port='' etcd_peer_port='' apiserver_port='' controller_manager_port='' scheduler_port='' kwok_port=''
  log "starting etcd"
  start_with_retry etcd
  log "starting kube-apiserver"
  start_with_retry kube-apiserver
  write_kubeconfig "$dir/kubeconfig" admin admin
  write_kubeconfig "$dir/conf/kube-controller-manager.kubeconfig" system:kube-controller-manager kube-controller-manager
  write_kubeconfig "$dir/conf/kube-scheduler.kubeconfig" system:kube-scheduler kube-scheduler
  write_kubeconfig "$dir/conf/kwok.kubeconfig" kwok-controller kwok
  log "starting kube-controller-manager, kube-scheduler, kwok"
  start_with_retry kube-controller-manager
  start_with_retry kube-scheduler
  start_with_retry kwok
  save_ports
  write_env

  log "creating fake nodes and the default StorageClass"
  kubectl_ apply -f "$here/nodes.yaml" -f "$here/storage.yaml" >/dev/null
  kubectl_ apply -f "$here/podsnapshot-crds.yaml" >/dev/null # GKE Pod Snapshot API stand-in (docs/simulator.md)
  wait_for "nodes to become Ready and untainted" "$start_timeout" nodes_schedulable || {
    kubectl_ get nodes -o wide >&2 || true
    log_tail kwok 20
    exit 1
  }
  # Pods are admitted only once their namespace's service account exists.
  wait_for "the default service account" "$start_timeout" \
    kubectl_ get serviceaccount default -n default || {
    log_tail kube-controller-manager 20
    exit 1
  }

  if ((real_node)); then
    real_node_up
  fi
  if ((with_kueue)); then
    log "starting Kueue"
    kueue_up
  fi

  trap - EXIT INT TERM
  log "cluster up in $((SECONDS - t0)) s: apiserver https://127.0.0.1:$apiserver_port, etcd http://127.0.0.1:$etcd_port"
  log "use it:  source $dir/env; kubectl get nodes"
  log "stop it: $0 down --dir $dir"
  echo "$dir"
}

# ---------------------------------------------------------------- others

# The hostPath provisioner's directories lie outside $dir, so removing $dir
# leaves them behind: remove those of this cluster's volumes while the API
# server can still list them. Only paths of the provisioner's own shape are
# touched. A cluster whose API server is already gone leaves them in
# /tmp/hostpath_pv.
remove_host_volumes() {
  [ -f "$dir/run/ports" ] || return 0
  # shellcheck source=/dev/null
  . "$dir/run/ports"
  component_pid kube-apiserver >/dev/null || return 0
  local out by path
  out=$(kubectl_ get pv --request-timeout=10s -o \
    'jsonpath={range .items[*]}{.metadata.annotations.kubernetes\.io/createdby}{" "}{.spec.hostPath.path}{"\n"}{end}' \
    2>/dev/null) || return 0
  while read -r by path; do
    [ "$by" = hostpath-dynamic-provisioner ] || continue
    [[ $path =~ ^/tmp/hostpath_pv/[0-9a-f-]+$ ]] || continue
    rm -rf -- "$path"
  done <<<"$out"
}

cmd_down() {
  if [ -z "$dir" ]; then die "no cluster: pass --dir DIR or set HIBERNATOR_CLUSTER_DIR"; fi
  [ -d "$dir" ] || die "no such directory: $dir"
  dir=$(cd "$dir" && pwd)
  [ -f "$dir/$marker" ] || die "$dir is not a cluster directory (no $marker); not touching it"
  [ -d "$dir/run" ] || mkdir -p "$dir/run"
  lock_dir
  # The real node first, while the API server can still delete its pods.
  local real_node_rc=0
  if [ -f "$dir/run/ports" ]; then
    # shellcheck source=/dev/null
    . "$dir/run/ports"
  fi
  real_node_down || real_node_rc=1
  # Clients first, so none of them logs a storm of errors while the API
  # server goes away; etcd last.
  kueue_down
  stop_components kwok kube-scheduler kube-controller-manager
  remove_host_volumes
  stop_components kube-apiserver
  stop_components etcd
  local name left=()
  for name in "${components[@]}"; do
    if component_pid "$name" >/dev/null; then left+=("$name"); fi
  done
  ((${#left[@]} == 0)) || die "still running: ${left[*]}"
  wait_reaped
  ((real_node_rc == 0)) || die "the real node's changes to the machine were not all undone (see above); state kept in $dir"
  if ((keep_dir)); then
    log "stopped; state kept in $dir"
  else
    exec 8>&-
    rm -rf "$dir"
    log "stopped and removed $dir"
  fi
}

cmd_env() {
  load_state
  cat "$dir/env"
}

cmd_status() {
  load_state
  local name pid rc=0
  for name in "${components[@]}"; do
    if pid=$(component_pid "$name"); then
      printf '%-24s running  pid %-8s port %s\n' "$name" "$pid" "$(main_port "$name")"
    else
      printf '%-24s stopped\n' "$name"
      rc=1
    fi
  done
  if [ -d "$dir/real-node/before" ]; then
    for name in apiserver-relay containerd kubelet; do
      if pid=$(component_pid "$name"); then
        printf '%-24s running  pid %s\n' "$name" "$pid"
      else
        printf '%-24s stopped\n' "$name"
        rc=1
      fi
    done
  fi
  return "$rc"
}

cmd_stop-apiserver() {
  load_state
  lock_dir
  component_pid kube-apiserver >/dev/null || die "kube-apiserver is not running"
  local t0=$EPOCHREALTIME
  stop_components kube-apiserver
  log "kube-apiserver stopped in $(elapsed "$t0") s"
}

cmd_start-apiserver() {
  load_state
  lock_dir
  ! component_pid kube-apiserver >/dev/null || die "kube-apiserver is already running"
  local t0=$EPOCHREALTIME
  start_recorded kube-apiserver
  log "kube-apiserver ready in $(elapsed "$t0") s on https://127.0.0.1:$apiserver_port"
}

cmd_restart-apiserver() {
  load_state
  lock_dir
  local t0=$EPOCHREALTIME
  stop_components kube-apiserver
  start_recorded kube-apiserver
  log "kube-apiserver restarted in $(elapsed "$t0") s on https://127.0.0.1:$apiserver_port"
}

elapsed() {
  local now=${EPOCHREALTIME/,/.} then=${1/,/.}
  local ms=$(((${now%.*} - ${then%.*}) * 1000 + (10#${now#*.} - 10#${then#*.}) / 1000))
  printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

# etcd's JSON gateway takes and returns 64-bit numbers as strings and keys as
# base64; the key "a" (YQ==) exists in no cluster, so the range answer carries
# just the header with the store's current revision.
# etcd_post PATH JSON: prints the answer; fails unless HTTP 200.
etcd_post() {
  local out
  out=$(curl -sS --max-time 10 -X POST -H 'Content-Type: application/json' \
    -w '\n%{http_code}' "http://127.0.0.1:$etcd_port$1" -d "$2") || return 1
  printf '%s\n' "${out%$'\n'*}"
  [ "${out##*$'\n'}" = 200 ]
}

cmd_compact-etcd() {
  load_state
  local out rev
  out=$(etcd_post /v3/kv/range '{"key":"YQ==","limit":1}') || die "etcd range request failed"
  # protojson varies its whitespace on purpose: allow blanks around the colon.
  rev=$(sed -n 's/.*"revision"[[:space:]]*:[[:space:]]*"\([0-9]*\)".*/\1/p' <<<"$out")
  [ -n "$rev" ] || die "no revision in etcd's answer: $out"
  if out=$(etcd_post /v3/kv/compaction "{\"revision\":\"$rev\",\"physical\":true}" 2>&1); then
    log "etcd compacted to revision $rev"
  elif grep -q 'required revision has been compacted' <<<"$out"; then
    # Nothing was written since the last compaction at this revision.
    log "etcd already compacted at revision $rev"
  else
    die "compaction failed: $out"
  fi
  echo "$rev"
}

# ---------------------------------------------------------------- selftest

st_pass=0 st_fail=0
check() {
  local what=$1
  shift
  if "$@"; then
    st_pass=$((st_pass + 1))
    log "PASS $what"
  else
    st_fail=$((st_fail + 1))
    log "FAIL $what"
  fi
}

st_token() {
  local token
  wait_for "service account default in $ns" 60 kubectl_ get serviceaccount default -n "$ns" || return 1
  token=$(kubectl_ create token default -n "$ns" --duration=10m) || return 1
  # A JWT: three base64url parts. Not printed: it is a credential.
  [[ $token =~ ^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$ ]]
}

st_gc() {
  local uid
  kubectl_ create configmap owner -n "$ns" --from-literal=k=v >/dev/null || return 1
  uid=$(kubectl_ get configmap owner -n "$ns" -o 'jsonpath={.metadata.uid}') || return 1
  kubectl_ apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: ConfigMap
metadata:
  name: dependent
  namespace: $ns
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: owner
    uid: $uid
data:
  k: v
EOF
  kubectl_ delete configmap owner -n "$ns" --wait=true >/dev/null || return 1
  kubectl_ wait --for=delete configmap/dependent -n "$ns" --timeout=60s >/dev/null 2>&1 ||
    ! kubectl_ get configmap dependent -n "$ns" >/dev/null 2>&1
}

gpu_pod() {
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $ns
spec:
  tolerations:
  - key: kwok.x-k8s.io/node
    operator: Exists
    effect: NoSchedule
  nodeSelector:
    nvidia.com/gpu.product: Tesla-T4
  containers:
  - name: main
    image: selftest.invalid/notebook:1
    resources:
      limits:
        nvidia.com/gpu: "$2"
EOF
}

st_gpu_pod_runs() {
  local node
  gpu_pod gpu-1 1 | kubectl_ apply -f - >/dev/null || return 1
  kubectl_ wait --for=condition=Ready pod/gpu-1 -n "$ns" --timeout=60s >/dev/null || {
    kubectl_ describe pod gpu-1 -n "$ns" >&2
    return 1
  }
  node=$(kubectl_ get pod gpu-1 -n "$ns" -o 'jsonpath={.spec.nodeName} {.status.phase}')
  log "  gpu-1 is on ${node% *}, phase ${node#* }"
  [[ $node == gpu-node-?\ Running ]] || return 1
  kubectl_ delete pod gpu-1 -n "$ns" --wait=true --timeout=60s >/dev/null
}

st_too_many_gpus() {
  local msg deadline=$((SECONDS + 60))
  gpu_pod gpu-3 3 | kubectl_ apply -f - >/dev/null || return 1
  kubectl_ wait --for='jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}=Unschedulable' \
    pod/gpu-3 -n "$ns" --timeout=60s >/dev/null || return 1
  msg=$(kubectl_ get pod gpu-3 -n "$ns" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}')
  log "  gpu-3: $msg"
  [[ $msg == *"Insufficient nvidia.com/gpu"* ]] || return 1
  # The scheduler's event may trail the condition a little.
  until kubectl_ get events -n "$ns" --field-selector involvedObject.name=gpu-3,reason=FailedScheduling \
    -o name | grep -q .; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
  [ "$(kubectl_ get pod gpu-3 -n "$ns" -o 'jsonpath={.status.phase}')" = Pending ] || return 1
  kubectl_ delete pod gpu-3 -n "$ns" --wait=true --timeout=60s >/dev/null
}

# A claim of the default StorageClass binds at once; a pod using it runs on a
# kwok node; deleting the claim deletes its volume and the directory.
st_storage() {
  local pv path deadline=$((SECONDS + 60))
  kubectl_ apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: home
  namespace: $ns
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: with-home
  namespace: $ns
spec:
  tolerations:
  - key: kwok.x-k8s.io/node
    operator: Exists
    effect: NoSchedule
  containers:
  - name: main
    image: selftest.invalid/notebook:1
    volumeMounts:
    - name: home
      mountPath: /home/jovyan
  volumes:
  - name: home
    persistentVolumeClaim:
      claimName: home
EOF
  kubectl_ wait --for='jsonpath={.status.phase}=Bound' pvc/home -n "$ns" --timeout=60s >/dev/null || return 1
  kubectl_ wait --for=condition=Ready pod/with-home -n "$ns" --timeout=60s >/dev/null || return 1
  pv=$(kubectl_ get pvc home -n "$ns" -o 'jsonpath={.spec.volumeName}') || return 1
  path=$(kubectl_ get pv "$pv" -o 'jsonpath={.spec.hostPath.path}') || return 1
  log "  claim home bound to $pv ($path)"
  [ -d "$path" ] || return 1
  kubectl_ delete pod with-home -n "$ns" --wait=true --timeout=60s >/dev/null || return 1
  kubectl_ delete pvc home -n "$ns" --wait=true --timeout=60s >/dev/null || return 1
  while kubectl_ get pv "$pv" >/dev/null 2>&1 || [ -e "$path" ]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.25
  done
}

st_namespace_deleted() {
  kubectl_ delete namespace "$ns" --wait=true --timeout=90s >/dev/null
}

cmd_selftest() {
  load_state
  local t0=$SECONDS
  ns=selftest-$(printf '%04x%04x' $RANDOM $RANDOM)
  kubectl_ create namespace "$ns" >/dev/null || die "cannot create namespace $ns"
  check "service account token (kubectl create token)" st_token
  check "garbage collection of a dependent ConfigMap" st_gc
  check "1-GPU pod scheduled on a GPU node, Running and Ready, then deleted" st_gpu_pod_runs
  check "3-GPU pod stays Pending: FailedScheduling, Insufficient nvidia.com/gpu" st_too_many_gpus
  check "claim of StorageClass standard bound, pod using it Ready, volume deleted with it" st_storage
  check "namespace $ns deleted" st_namespace_deleted
  log "selftest took $((SECONDS - t0)) s"
  echo "selftest: $st_pass passed, $st_fail failed"
  ((st_fail == 0))
}

# ---------------------------------------------------------------- main

(($# >= 1)) || usage
sub=$1
shift
parse_args "$@"
case $sub in
up) cmd_up ;;
down) cmd_down ;;
env) cmd_env ;;
status) cmd_status ;;
stop-apiserver | start-apiserver | restart-apiserver | compact-etcd | selftest) "cmd_$sub" ;;
-h | --help | help) usage ;;
*) die "unknown command: $sub" ;;
esac
