/*
 * checkpoint_image: the OCI documents that turn a kubelet checkpoint
 * archive into an image a container runtime restores from.
 *
 * The kubelet's archive (checkpoint-<pod>_<ns>-<container>-<time>.tar:
 * spec.dump, config.dump, status.dump, checkpoint/ with CRIU's images,
 * rootfs-diff.tar) is the image's one layer, as it is (an uncompressed tar
 * layer). containerd v2.1-v2.3 restores a container created from an image
 * whose index carries the annotation CHECKPOINT_IMAGE_ANNOTATION (the
 * checkpointctl library's name; containerd's
 * internal/cri/server/container_checkpoint_linux.go reads it from the
 * index, not from the manifest): the index names one manifest for the
 * node's platform, the manifest the config and the layer, the config the
 * layer's diff id (for an uncompressed layer, its own digest).
 *
 * Pure: builds text and digests, no I/O.
 *
 * Ownership: the documents are malloc'd, the caller's until
 * checkpoint_image_free().
 */
#ifndef HIBERNATOR_NODE_CHECKPOINT_IMAGE_H
#define HIBERNATOR_NODE_CHECKPOINT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#define CHECKPOINT_IMAGE_ANNOTATION "org.criu.checkpoint.container.name"
#define OCI_MEDIA_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_MEDIA_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_MEDIA_CONFIG "application/vnd.oci.image.config.v1+json"
#define OCI_MEDIA_LAYER_TAR "application/vnd.oci.image.layer.v1.tar"

/* "sha256:" + 64 hex digits + NUL. */
#define OCI_DIGEST_SIZE 72

struct oci_document {
    char *text; /* as pushed: its digest is of these bytes */
    size_t len;
    char digest[OCI_DIGEST_SIZE];
};

struct checkpoint_image {
    struct oci_document config, manifest, index;
};

/* Writes "sha256:<hex>" of len bytes of data into out. */
void oci_digest(const void *data, size_t len, char out[OCI_DIGEST_SIZE]);

/* 1 when s is "sha256:" followed by exactly 64 lower-case hex digits. */
int oci_digest_valid(const char *s);

/*
 * The three documents for a layer (its digest "sha256:<hex>" and size in
 * bytes), the checkpointed container's name and the platform (GOARCH and
 * GOOS words: "amd64", "linux"). Returns 0, -EINVAL (a digest that is not
 * sha256:<64 hex>, a negative size, an empty name, architecture or OS, or
 * a name with a character JSON would have to escape), or -ENOMEM; on
 * failure *ret holds nothing to free.
 */
int checkpoint_image_build(const char *layer_digest, int64_t layer_size, const char *container,
                           const char *architecture, const char *os, struct checkpoint_image *ret);

/* Frees the documents; NULL is ignored. */
void checkpoint_image_free(struct checkpoint_image *img);

/* The GOARCH word for the machine this runs on ("amd64", "arm64", ...), or
 * NULL for one without a word here. Static. */
const char *oci_architecture(void);

#endif
