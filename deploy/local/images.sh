#!/usr/bin/env bash
# Images for the real node, without a registry: each is built into an OCI
# archive, cached by the content of what it is built from, and imported into
# the real node's containerd.
#
#   images.sh path NAME         build NAME unless cached; print the archive's path
#   images.sh import [--cached] NAME...
#                               path, then import into $HIBERNATOR_CONTAINERD_SOCK
#                               (skipped when containerd holds that very image);
#                               --cached: only those built already, never build
#                               (cluster.sh up --real-node imports those)
#   images.sh ref NAME          print the image reference pods use
#   images.sh list              the images there are
#
# An image NAME ([a-z]+) is a file deploy/local/images/NAME.sh, sourced here,
# that defines three bash functions:
#   NAME_ref        the image reference pods use (imagePullPolicy Never or
#                   IfNotPresent)
#   NAME_inputs     the paths whose content keys the cache, one a line:
#                   repo-relative (files or directories, walked), or absolute
#                   (a base made outside the repo, such as the Debian rootfs)
#   NAME_build OUT  writes an OCI archive that `ctr images import` takes
# NAME.sh is always an input too; this file is not (a change to a helper
# below that changes what images hold needs `rm ~/.cache/hibernator/images/NAME-*`).
#
# The archive is $cache/images/NAME-KEY.oci.tar, KEY the first 16 hex digits
# of a sha256 over the inputs (each file's path and sha256, sorted); a build
# replaces the archives of older keys. $cache is $HIBERNATOR_CACHE, else
# ~/.cache/hibernator (as for the binaries). A lock per image lets several
# callers ask at once: one builds, the others wait and reuse.
#
# Helpers for the NAME.sh files:
#   images_buildah ARGS...      buildah with its storage under $cache/buildah
#                               (never /var/lib/containers)
#   images_debian_base          the cached Debian minbase rootfs tagged, in that
#                               storage, as docker.io/library/debian:bookworm
#                               and :bookworm-slim (what deploy/Containerfile's
#                               FROM lines name), so `buildah bud --pull=never`
#                               needs no registry
#   images_debian_rootfs        prints the minbase rootfs tar's path (an input)
set -euo pipefail

images_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
images_root=$(cd "$images_here/../.." && pwd)
images_cache=${HIBERNATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hibernator}
# shellcheck source=real-node.sh
. "$images_here/real-node.sh"

images_log() { printf '[images] %s\n' "$*" >&2; }
images_die() {
  images_log "error: $*"
  exit 1
}

# ---------------------------------------------------------------- helpers

# buildah 1.28's commit writes a blob info cache to
# /var/lib/containers/cache/blob-info-cache-v1.boltdb whatever --root says:
# when that directory was not there before, it goes again after.
images_buildah() {
  local b=$images_cache/buildah rc=0 v=/var/lib/containers had=1
  mkdir -p "$b/root" "$b/runroot" "$b/tmp"
  [ -e "$v" ] || had=0
  # TMPDIR: buildah's scratch files (/var/tmp otherwise).
  TMPDIR=$b/tmp buildah --root "$b/root" --runroot "$b/runroot" --storage-driver overlay "$@" || rc=$?
  if ((!had)) && [ -d "$v" ]; then
    rm -f "$v/cache/blob-info-cache-v1.boltdb"
    rmdir "$v/cache" "$v" 2>/dev/null || true
  fi
  return "$rc"
}

# (With images_no_build set, as for import --cached, it is not made when
# missing: an image on it cannot be cached then either.)
images_no_build=
images_debian_rootfs() {
  [ -n "$images_no_build" ] || real_node_minbase_archive >/dev/null
  echo "$images_cache/images/debian-minbase-rootfs.tar"
}

# (from scratch + add + commit rather than `buildah pull oci-archive:`: pull
# keeps a blob info cache in /var/lib/containers whatever --root says.)
# Made once per rootfs (a stamp of its sha256): the same base image ID is
# what lets buildah reuse the layers of earlier builds.
# One at a time across images (a lock of its own): another build may be
# making the base too.
images_debian_base() {
  mkdir -p "$images_cache/buildah"
  (
    flock 8
    images_debian_base_locked
  ) 8>"$images_cache/buildah/.base.lock"
}

images_debian_base_locked() {
  local rootfs c sum stamp=$images_cache/buildah/debian-base.sha256
  rootfs=$(images_debian_rootfs)
  sum=$(sha256sum "$rootfs" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ] &&
    images_buildah inspect --type image docker.io/library/debian:bookworm >/dev/null 2>&1 &&
    images_buildah inspect --type image docker.io/library/debian:bookworm-slim >/dev/null 2>&1; then
    return 0
  fi
  # A new base: every layer cached on the old one is useless now.
  rm -f "$stamp"
  images_buildah rmi --all --force >/dev/null 2>&1 || true
  c=$(images_buildah from --quiet scratch) || return 1
  images_buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/bash "$c" &&
    images_buildah add --quiet "$c" "$rootfs" / >/dev/null &&
    images_buildah commit --quiet --rm "$c" docker.io/library/debian:bookworm >/dev/null &&
    images_buildah tag docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim ||
    { images_buildah rm "$c" >/dev/null 2>&1; return 1; }
  echo "$sum" >"$stamp"
}

# ---------------------------------------------------------------- the cache

images_load() {
  local name=$1
  [[ $name =~ ^[a-z]+$ ]] || images_die "bad image name: $name"
  [ -f "$images_here/images/$name.sh" ] || images_die "no image $name (deploy/local/images/$name.sh)"
  # shellcheck source=/dev/null
  . "$images_here/images/$name.sh"
}

# images_key NAME: 16 hex digits over the inputs' paths and contents.
images_key() {
  local name=$1 in
  {
    for in in "deploy/local/images/$name.sh" $("${name}_inputs"); do
      if [ "${in#/}" != "$in" ]; then
        [ -e "$in" ] || images_die "$name: input $in missing"
        (cd / && find "${in#/}" -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
      else
        [ -e "$images_root/$in" ] || images_die "$name: input $in missing"
        (cd "$images_root" && find "$in" -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
      fi
    done
  } | sha256sum | cut -c1-16
}

# images_path NAME [cached]: the archive, built unless cached; with
# "cached", nothing is built and an image not built is an empty line.
images_path() {
  local name=$1 key out t0=$SECONDS
  images_load "$name"
  mkdir -p "$images_cache/images"
  if [ "${2:-}" = cached ]; then
    images_no_build=1
    key=$(images_key "$name" 2>/dev/null) || { echo; return 0; }
    out=$images_cache/images/$name-$key.oci.tar
    if [ -f "$out" ]; then echo "$out"; else echo; fi
    return 0
  fi
  key=$(images_key "$name")
  out=$images_cache/images/$name-$key.oci.tar
  exec 9>"$images_cache/images/.$name.lock"
  flock 9
  if [ ! -f "$out" ]; then
    images_log "$name: building $("${name}_ref") (key $key)"
    rm -f "$out.tmp"
    "${name}_build" "$out.tmp" || { rm -f "$out.tmp"; images_die "$name: build failed"; }
    mv "$out.tmp" "$out"
    find "$images_cache/images" -maxdepth 1 -name "$name-*.oci.tar" ! -name "${out##*/}" -delete
    images_log "$name: built in $((SECONDS - t0)) s: $out"
  fi
  exec 9>&-
  echo "$out"
}

# The digest of the archive's image (its index's first manifest).
images_archive_digest() {
  tar -xOf "$1" index.json | grep -o '"digest":"sha256:[0-9a-f]*"' | head -n1 | cut -d'"' -f4
}

images_import() {
  local name path ref have want cached=
  [ "${1:-}" = --cached ] && { cached=cached; shift; }
  [ -n "${HIBERNATOR_CONTAINERD_SOCK:-}" ] || images_die "HIBERNATOR_CONTAINERD_SOCK unset (source the cluster's env; up --real-node)"
  for name in "$@"; do
    images_load "$name"
    path=$(images_path "$name" $cached)
    if [ -z "$path" ]; then
      images_log "$name: not built for this tree; not imported (deploy/local/images.sh import $name)"
      continue
    fi
    ref=$("${name}_ref")
    want=$(images_archive_digest "$path")
    have=$(ctr -a "$HIBERNATOR_CONTAINERD_SOCK" -n k8s.io images ls "name==$ref" 2>/dev/null | awk 'NR == 2 {print $3}')
    if [ -n "$want" ] && [ "$have" = "$want" ]; then
      images_log "$name: $ref already imported"
      continue
    fi
    local t0=$SECONDS
    ctr -a "$HIBERNATOR_CONTAINERD_SOCK" -n k8s.io images import "$path" >/dev/null
    images_log "$name: imported $ref in $((SECONDS - t0)) s"
  done
}

images_list() {
  local f
  for f in "$images_here"/images/*.sh; do
    [ -f "$f" ] && basename "$f" .sh
  done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  case ${1:-} in
  path) [ $# -eq 2 ] || images_die "usage: $0 path NAME"; images_path "$2" ;;
  import) shift; [ $# -ge 1 ] || images_die "usage: $0 import NAME..."; images_import "$@" ;;
  ref) [ $# -eq 2 ] || images_die "usage: $0 ref NAME"; images_load "$2"; "${2}_ref" ;;
  list) images_list ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
fi
