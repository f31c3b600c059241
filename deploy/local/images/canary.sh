# The canary image for pods on the real node: Debian minbase + python3 (Debian
# packages only, no registry) and deploy/local/images/canary/app.py, a stand-in
# notebook that keeps a value only in memory (GET /canary, what `kubectl
# workspace drill` reads) and model state it checkpoints to its home volume
# when asked (the class's checkpoint.request) and on SIGTERM, and reads back
# at start. As hibernator.local/canary:dev. Sourced by deploy/local/images.sh
# (or by hand: source deploy/local/real-node.sh, then this file, then
# canary_build OUT.tar).
#
# The container starts /usr/local/bin/canary-start: as root it makes the home
# ($CANARY_HOME, default /home/canary: the class's home.mountPath) the
# canary user's (uid 1000): the hostPath volumes of the local StorageClass are
# directories the controller manager creates as root with mode 0750, and
# fsGroup does not apply to hostPath. Then it execs the application as uid
# 1000, so the Python process is PID 1 and handles SIGTERM itself. Started as
# another uid it runs the application directly; with CANARY_USER=root it
# stays root (a class whose pauses CRIU checkpoints on a machine without
# CAP_SYS_RESOURCE: CRIU there dumps only processes of its own uid).

canary_ref() { echo hibernator.local/canary:dev; }

canary_inputs() { echo deploy/local/images/canary; }

# The start script, written into the image.
canary_start_script() {
  cat <<'SCRIPT'
#!/bin/sh
set -eu
home=${CANARY_HOME:-/home/canary}
if [ "$(id -u)" = 0 ] && [ "${CANARY_USER:-canary}" != root ]; then
  [ "$(stat -c %u:%g "$home")" = 1000:1000 ] || chown 1000:1000 "$home"
  exec setpriv --reuid=1000 --regid=1000 --clear-groups --inh-caps=-all \
    env HOME="$home" USER=canary /usr/bin/python3 -u /opt/canary/app.py
fi
exec /usr/bin/python3 -u /opt/canary/app.py
SCRIPT
}

canary_build() {
  local out=$1 t mirror src
  declare -F oci_archive >/dev/null || source "$(dirname "${BASH_SOURCE[0]}")/../real-node.sh"
  src=$(cd "$(dirname "${BASH_SOURCE[0]}")/canary" && pwd)
  t=$(mktemp -d)
  canary_start_script >"$t/start"
  mirror=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
  # minbase + python3 and what it depends on (no recommends); documentation,
  # manuals, translations and apt's lists left out.
  mmdebstrap --variant=minbase --format=tar --quiet --include=python3 \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook="install -m 0755 '$t/start' \"\$1/usr/local/bin/canary-start\"" \
    --customize-hook="install -D -m 0644 '$src/app.py' \"\$1/opt/canary/app.py\"" \
    --customize-hook='echo "canary:x:1000:1000:canary:/home/canary:/bin/sh" >>"$1/etc/passwd"' \
    --customize-hook='echo "canary:x:1000:" >>"$1/etc/group"' \
    --customize-hook='echo "canary:*:19000:0:99999:7:::" >>"$1/etc/shadow"' \
    --customize-hook='install -d -o 1000 -g 1000 "$1/home/canary"' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*.log' \
    bookworm "$t/rootfs.tar" "${mirror:-http://deb.debian.org/debian}" >&2 || { rm -rf "$t"; return 1; }
  oci_archive "$out" "$(canary_ref)" "$t/rootfs.tar" /usr/local/bin/canary-start
  rm -rf "$t"
}
