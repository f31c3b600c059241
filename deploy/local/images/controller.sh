# The controller image, docker.io/library/hibernator:dev (deploy/deployment.yaml's
# hibernator:dev): deploy/Containerfile built unchanged with buildah, its two
# FROM images made from the cached Debian minbase rootfs (images.sh
# images_debian_base), so no registry is asked. The Containerfile's apt-get
# steps reach Debian's packages over the host's network. Sourced by
# deploy/local/images.sh.

controller_ref() { echo docker.io/library/hibernator:dev; }

# What the Containerfile copies, and the base.
controller_inputs() {
  printf '%s\n' deploy/Containerfile CMakeLists.txt include src
  images_debian_rootfs
}

controller_build() {
  local out=$1 ref
  ref=$(controller_ref)
  images_debian_base || return 1
  # --network host, --isolation chroot: the RUN steps make no bridge, no
  # iptables rule and no cgroup on the machine. --layers: the apt-get steps
  # are kept in buildah's storage, so a change to src/ rebuilds only from
  # the COPY on.
  images_buildah bud --pull=never --isolation chroot --network host --layers \
    -f "$images_root/deploy/Containerfile" -t "$ref" "$images_root" >&2 || return 1
  images_buildah push --quiet "$ref" "oci-archive:$out:$ref" >&2
}
