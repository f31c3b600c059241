#!/usr/bin/env bash
# Builds the local cluster's binaries from pinned Go modules into a cache
# outside the repository, keyed by version, so that later runs reuse them.
#
#   deploy/local/build-binaries.sh              build what is missing, print the bin dir
#   deploy/local/build-binaries.sh --real-node  the same, plus what a real node runs: the
#                                               kubelet, containerd (+ its runc shim and
#                                               ctr) and CRIU (+ its plugins)
#   deploy/local/build-binaries.sh --kueue      the same, plus Kueue's manager and its CRDs
#                                               (both options may be given)
#
# Cache: ${HIBERNATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hibernator}
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"

cache=${HIBERNATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hibernator}
bin="$cache/bin"
mkdir -p "$bin" "$cache/src"

log() { printf '[build-binaries] %s\n' "$*" >&2; }

with_kubelet=0 with_kueue=0
for arg in "$@"; do
  case $arg in
  --real-node | --kubelet) with_kubelet=1 ;;
  --kueue) with_kueue=1 ;;
  *) log "unknown argument: $arg"; exit 2 ;;
  esac
done

links="$bin/current-$KUBERNETES_VERSION-$ETCD_VERSION-$KWOK_VERSION"

# link_all: the stable directory of links the other scripts put on PATH. A
# link is replaced only when it points elsewhere: `ln -sfn` unlinks before it
# links, and a cluster starting at that moment would find no binary.
link_all() {
  mkdir -p "$links"
  local f target
  for f in kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok; do
    case $f in
    etcd) target="$bin/etcd-$ETCD_VERSION/etcd" ;;
    kwok) target="$bin/kwok-$KWOK_VERSION/kwok" ;;
    *) target="$bin/kubernetes-$KUBERNETES_VERSION/$f" ;;
    esac
    [ "$(readlink "$links/$f" 2>/dev/null)" = "$target" ] || ln -sfn "$target" "$links/$f"
  done
  if [ -f "$bin/kubelet-$KUBERNETES_VERSION/.complete" ]; then
    target="$bin/kubelet-$KUBERNETES_VERSION/kubelet"
    [ "$(readlink "$links/kubelet" 2>/dev/null)" = "$target" ] || ln -sfn "$target" "$links/kubelet"
  fi
  if [ -f "$bin/containerd-$CONTAINERD_VERSION/.complete" ]; then
    for f in containerd containerd-shim-runc-v2 ctr; do
      target="$bin/containerd-$CONTAINERD_VERSION/$f"
      [ "$(readlink "$links/$f" 2>/dev/null)" = "$target" ] || ln -sfn "$target" "$links/$f"
    done
  fi
  if [ -f "$bin/criu-$CRIU_VERSION/.complete" ]; then
    target="$bin/criu-$CRIU_VERSION/criu"
    [ "$(readlink "$links/criu" 2>/dev/null)" = "$target" ] || ln -sfn "$target" "$links/criu"
  fi
  if [ -f "$bin/kueue-$KUEUE_VERSION/.complete" ]; then
    for f in kueue kueue-crds; do
      target="$bin/kueue-$KUEUE_VERSION/$f"
      [ "$(readlink "$links/$f" 2>/dev/null)" = "$target" ] || ln -sfn "$target" "$links/$f"
    done
  fi
  target="$bin/kwok-$KWOK_VERSION/stages.yaml"
  [ "$(readlink "$links/kwok-stages.yaml" 2>/dev/null)" = "$target" ] ||
    ln -sfn "$target" "$links/kwok-stages.yaml"
}

all_built() {
  [ -f "$bin/kubernetes-$KUBERNETES_VERSION/.complete" ] &&
    [ -f "$bin/etcd-$ETCD_VERSION/.complete" ] &&
    [ -f "$bin/kwok-$KWOK_VERSION/.complete" ] &&
    [ -f "$bin/kwok-$KWOK_VERSION/stages.yaml" ] &&
    { [ "$with_kubelet" = 0 ] || {
      [ -f "$bin/kubelet-$KUBERNETES_VERSION/.complete" ] &&
        [ -f "$bin/containerd-$CONTAINERD_VERSION/.complete" ] &&
        [ -f "$bin/criu-$CRIU_VERSION/.complete" ]
    }; } &&
    { [ "$with_kueue" = 0 ] || [ -f "$bin/kueue-$KUEUE_VERSION/.complete" ]; }
}

# Warm path: no Go, no module cache, no network, no waiting on the lock.
if all_built; then
  link_all
  echo "$links"
  exit 0
fi

command -v go >/dev/null || { [ -x /usr/local/go/bin/go ] && PATH=/usr/local/go/bin:$PATH; }
command -v go >/dev/null || { log "go not found (need Go >= $GO_MIN_VERSION)"; exit 1; }

# One build at a time per cache, so parallel test runs do not race.
exec 9>"$cache/build.lock"
flock 9

# build_module NAME VERSION MODULE@VERSION "REPLACES" LDFLAGS PKG:OUT...
# (BUILD_TAGS in the environment: go build's -tags)
build_module() {
  local key=$1 version=$2 require=$3 replaces=$4 ldflags=$5
  shift 5
  local done_dir="$bin/$key-$version"
  if [ -f "$done_dir/.complete" ]; then
    return 0
  fi
  local start=$SECONDS
  local work="$cache/src/$key-$version"
  rm -rf "$work" "$done_dir.tmp"
  mkdir -p "$work" "$done_dir.tmp"
  {
    echo "module hibernator.local/$key"
    echo
    echo "go $GO_MIN_VERSION"
    echo
    echo "require ${require/@/ }"
    if [ -n "$replaces" ]; then
      echo
      echo "replace ("
      printf '%s\n' "$replaces"
      echo ")"
    fi
  } >"$work/go.mod"
  {
    echo "//go:build tools"
    echo
    echo "package tools"
    echo
    echo "import ("
    local spec
    for spec in "$@"; do
      echo "	_ \"${spec%%:*}\""
    done
    echo ")"
  } >"$work/tools.go"
  log "resolving $key $version"
  (cd "$work" && GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>"$work/tidy.log") || {
    cat "$work/tidy.log" >&2
    return 1
  }
  for spec in "$@"; do
    local pkg=${spec%%:*} out=${spec##*:}
    log "building $out from $pkg"
    (cd "$work" && CGO_ENABLED=0 go build -trimpath ${BUILD_TAGS:+-tags "$BUILD_TAGS"} \
      -ldflags "-s -w $ldflags" -o "$done_dir.tmp/$out" "$pkg")
  done
  touch "$done_dir.tmp/.complete"
  rm -rf "$done_dir"
  mv "$done_dir.tmp" "$done_dir"
  log "$key $version built in $((SECONDS - start)) s"
}

# --- Kubernetes: a wrapper module replacing each staging module with its release.
k8s_minor=${KUBERNETES_VERSION#v1.}
k8s_minor=${k8s_minor%%.*}
staging_version="v0.${KUBERNETES_VERSION#v1.}"
# Resolved only when Kubernetes is to be built: it needs the module proxy.
replaces=""
if [ ! -f "$bin/kubernetes-$KUBERNETES_VERSION/.complete" ] ||
  { [ "$with_kubelet" = 1 ] && [ ! -f "$bin/kubelet-$KUBERNETES_VERSION/.complete" ]; }; then
  k8s_dir=$(cd "$cache/src" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$k8s_dir" ] || { log "cannot download k8s.io/kubernetes@$KUBERNETES_VERSION"; exit 1; }
  replaces=$(sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"$staging_version"'#p' "$k8s_dir/go.mod")
fi
vpkg=k8s.io/component-base/version
cpkg=k8s.io/client-go/pkg/version
k8s_ldflags="-X $vpkg.gitVersion=$KUBERNETES_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$k8s_minor -X $vpkg.gitTreeState=clean"
k8s_ldflags+=" -X $cpkg.gitVersion=$KUBERNETES_VERSION -X $cpkg.gitMajor=1 -X $cpkg.gitMinor=$k8s_minor -X $cpkg.gitTreeState=clean"
build_module kubernetes "$KUBERNETES_VERSION" "k8s.io/kubernetes@$KUBERNETES_VERSION" "$replaces" "$k8s_ldflags" \
  k8s.io/kubernetes/cmd/kube-apiserver:kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager:kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler:kube-scheduler \
  k8s.io/kubernetes/cmd/kubectl:kubectl

# --- the kubelet, only for a real node: the same wrapper module, its own entry.
if [ "$with_kubelet" = 1 ]; then
  build_module kubelet "$KUBERNETES_VERSION" "k8s.io/kubernetes@$KUBERNETES_VERSION" "$replaces" "$k8s_ldflags" \
    k8s.io/kubernetes/cmd/kubelet:kubelet
fi

# --- containerd and CRIU, only for a real node.
# CRIU from Debian's source package, checked against the pinned sha256; its
# plugins (the CUDA one: NVIDIA's cuda-checkpoint, driver >= 550) beside it.
build_criu() {
  local done_dir="$bin/criu-$CRIU_VERSION" work="$cache/src/criu-$CRIU_VERSION"
  local tarball="$cache/src/criu_$CRIU_VERSION.orig.tar.xz" start=$SECONDS
  [ -f "$done_dir/.complete" ] && return 0
  if [ ! -f "$tarball" ]; then
    log "downloading $CRIU_URL"
    curl -fsSL -o "$tarball.tmp" "$CRIU_URL"
    mv "$tarball.tmp" "$tarball"
  fi
  if [ "$(sha256sum "$tarball" | cut -d' ' -f1)" != "$CRIU_SHA256" ]; then
    log "$tarball: sha256 is not $CRIU_SHA256; removed"
    rm -f "$tarball"
    return 1
  fi
  rm -rf "$work" "$done_dir.tmp"
  mkdir -p "$work" "$done_dir.tmp/plugins"
  tar -xJf "$tarball" -C "$work" --strip-components=1
  log "building criu $CRIU_VERSION"
  make -C "$work" -j"$(nproc)" criu cuda_plugin >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; return 1; }
  cp "$work/criu/criu" "$done_dir.tmp/criu"
  cp "$work/plugins/cuda/cuda_plugin.so" "$done_dir.tmp/plugins/"
  touch "$done_dir.tmp/.complete"
  rm -rf "$done_dir"
  mv "$done_dir.tmp" "$done_dir"
  log "criu $CRIU_VERSION built in $((SECONDS - start)) s"
}

if [ "$with_kubelet" = 1 ]; then
  BUILD_TAGS="urfave_cli_no_docs no_btrfs" build_module containerd "$CONTAINERD_VERSION" \
    "github.com/containerd/containerd/v2@$CONTAINERD_VERSION" "" \
    "-X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
    github.com/containerd/containerd/v2/cmd/containerd:containerd \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2:containerd-shim-runc-v2 \
    github.com/containerd/containerd/v2/cmd/ctr:ctr
  build_criu
fi

# --- Kueue, on demand: its manager (the plain-Pod integration is in it) and
# the CRDs of the same release beside it.
if [ "$with_kueue" = 1 ] && [ ! -f "$bin/kueue-$KUEUE_VERSION/.complete" ]; then
  build_module kueue-manager "$KUEUE_VERSION" "sigs.k8s.io/kueue@$KUEUE_VERSION" "" \
    "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" \
    sigs.k8s.io/kueue/cmd/kueue:kueue
  kueue_dir=$(cd "$cache/src" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$kueue_dir" ] || { log "cannot download sigs.k8s.io/kueue@$KUEUE_VERSION"; exit 1; }
  rm -rf "$bin/kueue-$KUEUE_VERSION.tmp"
  mkdir -p "$bin/kueue-$KUEUE_VERSION.tmp/kueue-crds"
  cp "$bin/kueue-manager-$KUEUE_VERSION/kueue" "$bin/kueue-$KUEUE_VERSION.tmp/kueue"
  cp "$kueue_dir"/config/components/crd/bases/*.yaml "$bin/kueue-$KUEUE_VERSION.tmp/kueue-crds/"
  chmod -R u+w "$bin/kueue-$KUEUE_VERSION.tmp"
  touch "$bin/kueue-$KUEUE_VERSION.tmp/.complete"
  rm -rf "$bin/kueue-$KUEUE_VERSION"
  mv "$bin/kueue-$KUEUE_VERSION.tmp" "$bin/kueue-$KUEUE_VERSION"
fi

# --- etcd: its server module replaces sibling modules with paths; pin releases.
etcd_replaces=""
for m in api/v3 client/pkg/v3 client/v3 pkg/v3; do
  etcd_replaces+="	go.etcd.io/etcd/$m => go.etcd.io/etcd/$m $ETCD_VERSION"$'\n'
done
build_module etcd "$ETCD_VERSION" "go.etcd.io/etcd/server/v3@$ETCD_VERSION" "${etcd_replaces%$'\n'}" "" \
  go.etcd.io/etcd/server/v3:etcd

# --- kwok
build_module kwok "$KWOK_VERSION" "sigs.k8s.io/kwok@$KWOK_VERSION" "" \
  "-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" \
  sigs.k8s.io/kwok/cmd/kwok:kwok

# The standalone kwok binary has no built-in stages. Use the "fast" set that
# the pinned kwok release ships (what kwokctl installs by default): nodes
# become Ready, bound pods Running and Ready, deleted pods go away.
stages="$bin/kwok-$KWOK_VERSION/stages.yaml"
if [ ! -f "$stages" ]; then
  kwok_dir=$(cd "$cache/src" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  {
    echo "# Generated by build-binaries.sh from sigs.k8s.io/kwok@$KWOK_VERSION kustomize/stage/."
    for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
      pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
      echo "---"
      grep -v '^---$' "$kwok_dir/kustomize/stage/$f.yaml"
    done
  } >"$stages.tmp"
  mv "$stages.tmp" "$stages"
fi

link_all
echo "$links"
