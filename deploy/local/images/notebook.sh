# The notebook image for pods on the real node: Jupyter Server and the
# IPython kernel from Debian's packages (no registry), as
# hibernator.local/notebook:dev. Sourced by deploy/local/images.sh (or by
# hand: source deploy/local/real-node.sh, then this file, then
# notebook_build OUT.tar).
#
# The container starts /usr/local/bin/hibernator-notebook: as root it makes
# the home (the class's home.mountPath, $NOTEBOOK_HOME, default /home/jovyan)
# the user's, then runs Jupyter Server as jovyan (uid 1000, gid 100) from
# there; started as another uid it runs Jupyter as that uid. With
# NOTEBOOK_USER=root it stays root: on machines whose capability set lacks
# CAP_SYS_RESOURCE (the local cluster's), CRIU cannot checkpoint a process
# of another uid than its own (docs/snapshots.md, "The ContainerCheckpoint
# backend"), so the local cluster's checkpointed notebooks run as root. The hostPath
# volumes of the local StorageClass are directories the controller manager
# creates as root:root with mode 0750, and a WorkspaceClass sets no pod
# securityContext (no fsGroup), so the one chown at start is what lets a
# non-root server write its home (jupyter/docker-stacks' start.sh does the
# same when started as root with CHOWN_HOME=yes; its jovyan is 1000:100 too).
# Jupyter reads its token from JUPYTER_TOKEN, which the controller sets from
# the class's tokenSecretRef (docs/idle.md).

notebook_ref() { echo hibernator.local/notebook:dev; }

notebook_inputs() { :; }

# The start script, written into the image.
notebook_start_script() {
  cat <<'SCRIPT'
#!/bin/sh
# Runs Jupyter Server on :8888 with the token from JUPYTER_TOKEN, its root
# directory the home volume; as root, first gives the home to jovyan and
# drops to that user.
set -eu
home=${NOTEBOOK_HOME:-/home/jovyan}
port=${NOTEBOOK_PORT:-8888}
root=
if [ "$(id -u)" = 0 ] && [ "${NOTEBOOK_USER:-jovyan}" = root ]; then
  root=--allow-root
elif [ "$(id -u)" = 0 ]; then
  [ "$(stat -c %u:%g "$home")" = 1000:100 ] || chown 1000:100 "$home"
  exec setpriv --reuid=1000 --regid=100 --clear-groups --inh-caps=-all \
    env HOME="$home" USER=jovyan "$0" "$@"
fi
export HOME="$home"
cd "$home"
if [ -z "${JUPYTER_TOKEN:-}" ]; then
  echo "hibernator-notebook: JUPYTER_TOKEN is not set; refusing to serve without a token" >&2
  exit 1
fi
exec python3 -m jupyter_server --ip=0.0.0.0 --port="$port" --no-browser \
  --ServerApp.root_dir="$home" --ServerApp.allow_remote_access=True \
  --ServerApp.port_retries=0 $root "$@"
SCRIPT
}

notebook_build() {
  local out=$1 t mirror
  declare -F oci_archive >/dev/null || source "$(dirname "${BASH_SOURCE[0]}")/../real-node.sh"
  t=$(mktemp -d)
  notebook_start_script >"$t/start"
  # ipykernel's debugger (python3-pydevd) depends on gdb, only to attach to
  # a running process, which a notebook never asks for: an empty package
  # that provides gdb keeps gdb and what it pulls in (about 30 MB) out.
  mkdir -p "$t/stub/DEBIAN"
  printf '%s\n' 'Package: hibernator-notebook-no-gdb' 'Version: 1' 'Architecture: all' \
    'Maintainer: hibernator <hibernator@localhost>' 'Provides: gdb' \
    'Description: stands in for gdb in hibernator.local/notebook' >"$t/stub/DEBIAN/control"
  dpkg-deb --build --root-owner-group "$t/stub" "$t/no-gdb.deb" >/dev/null
  mirror=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
  # essential + the two packages and what they depend on (no recommends);
  # documentation, manuals, translations and apt's lists left out. The
  # essential set brings usrmerge (init-system-helpers needs usrmerge or
  # usr-is-merged), and usrmerge brings perl, for nothing in a root
  # filesystem that is merged already: with usr-is-merged installed, they
  # are purged at the end.
  # The stub goes in by path: file-mirror-automount makes it visible to
  # dpkg inside the chroot. eatmydata: dpkg without fsync (a throw-away
  # root filesystem), gone again from the result.
  mmdebstrap --variant=essential --format=tar --quiet \
    --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
    --hook-dir=/usr/share/mmdebstrap/hooks/eatmydata \
    --include=python3-jupyter-server,python3-ipykernel,usr-is-merged \
    --include="$t/no-gdb.deb" \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook="install -m 0755 '$t/start' \"\$1/usr/local/bin/hibernator-notebook\"" \
    --customize-hook='echo "jovyan:x:1000:100:jovyan:/home/jovyan:/bin/sh" >>"$1/etc/passwd"' \
    --customize-hook='echo "jovyan:*:19000:0:99999:7:::" >>"$1/etc/shadow"' \
    --customize-hook='install -d -o 1000 -g 100 "$1/home/jovyan"' \
    --customize-hook='chroot "$1" dpkg --purge usrmerge libfile-find-rule-perl libnumber-compare-perl libtext-glob-perl perl libperl5.36 perl-modules-5.36 >/dev/null' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*.log' \
    bookworm "$t/rootfs.tar" "${mirror:-http://deb.debian.org/debian}" >&2 || { rm -rf "$t"; return 1; }
  oci_archive "$out" "$(notebook_ref)" "$t/rootfs.tar" /usr/local/bin/hibernator-notebook
  rm -rf "$t"
}
