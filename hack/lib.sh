# Shared by hack/run-local and hack/test. Sourced, not run.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${HIBERNATOR_CACHE:=${XDG_CACHE_HOME:-$HOME/.cache}/hibernator}"
export HIBERNATOR_CACHE

phase_names=()
phase_secs=()
phase_start=0
phase_name=""

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }

phase() {
  phase_end
  phase_name=$1
  phase_start=$SECONDS
  log "== $phase_name"
}

phase_end() {
  if [ -n "$phase_name" ]; then
    phase_names+=("$phase_name")
    phase_secs+=($((SECONDS - phase_start)))
    phase_name=""
  fi
}

phase_report() {
  phase_end
  local i
  printf '\nTime per phase:\n' >&2
  for i in "${!phase_names[@]}"; do
    printf '  %-40s %5d s\n' "${phase_names[$i]}" "${phase_secs[$i]}" >&2
  done
}

# Debian packages the build, the tests and the local cluster need.
deps=(
  build-essential cmake pkg-config git ca-certificates curl openssl util-linux procps
  libcurl4-openssl-dev libcjson-dev libyaml-dev libssl-dev libuv1-dev libcmocka-dev
  libmicrohttpd-dev tzdata
  python3-jupyter-server python3-ipykernel python3-jupyter-client
  clang libclang-rt-14-dev clang-format
)

# What a real node (kubelet + containerd, `cluster.sh up --real-node`) needs
# beyond deps; installed only when a real node is asked for.
# containerd and CRIU are built from source (deploy/local/build-binaries.sh
# --real-node; Debian 12's containerd 1.6 cannot restore a container and its
# CRIU 3.17 fails on current kernels): the rest of the list is what CRIU's
# build needs. The registry holds the checkpoint images.
real_node_deps=(
  runc containernetworking-plugins iptables nftables iproute2 socat mmdebstrap buildah fuse-overlayfs
  libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev protobuf-compiler libnl-3-dev libnet1-dev
  libbsd-dev libcap-dev libnftables-dev libaio-dev libgnutls28-dev uuid-dev python3-protobuf
  docker-registry apache2-utils
)

install_real_node_deps() {
  install_deps "${real_node_deps[@]}"
}

# install_deps [PACKAGE...]: the given packages, or deps when none is given.
install_deps() {
  local missing=() p want=("$@")
  [ ${#want[@]} -gt 0 ] || want=("${deps[@]}")
  for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
  if ! command -v go >/dev/null; then
    if [ -x /usr/local/go/bin/go ]; then
      export PATH=/usr/local/go/bin:$PATH
    else
      log "Go >= $(. "$repo/deploy/local/versions.env"; echo "$GO_MIN_VERSION") is needed to build the local cluster (expected at /usr/local/go or on PATH)"
      return 1
    fi
  fi
}

# release_build DIR CC: what a packager builds (Release, no tests) with
# compiler CC, warnings as errors; compiled only, nothing is run. The
# optimiser finds warnings the other builds do not (format truncation,
# maybe-uninitialized).
release_build() {
  local dir=$1 cc=$2
  CC=$cc cmake -S "$repo" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DHIBERNATOR_TESTS=OFF >/dev/null
  cmake --build "$dir" -j"$(nproc)"
}

# cmake_build DIR [cmake args...]
cmake_build() {
  local dir=$1
  shift
  cmake -S "$repo" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j"$(nproc)"
}
