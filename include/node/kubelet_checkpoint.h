/*
 * kubelet_checkpoint: the kubelet's checkpoint API (KEP-2008, gate
 * ContainerCheckpoint, beta and on by default since Kubernetes 1.30):
 * POST /checkpoint/{namespace}/{pod}/{container}?timeout=N on the kubelet's
 * authenticated port. The kubelet authorizes the caller for the
 * nodes/checkpoint subresource (verb create), asks the runtime (CRI
 * CheckpointContainer, CRIU underneath) and answers
 * {"items":["<kubelet root>/checkpoints/checkpoint-<pod>_<ns>-<container>-<time>.tar"]}.
 * The container keeps running.
 *
 * Blocking: runs on libuv's thread pool, never on the event loop. The
 * answer is read up to KUBELET_MAX_BODY bytes.
 *
 * Ownership: strings returned through ret_* are malloc'd, the caller's.
 * The bearer token is read from its file for each call (it rotates) and
 * wiped after it; it never reaches an error text.
 */
#ifndef HIBERNATOR_NODE_KUBELET_CHECKPOINT_H
#define HIBERNATOR_NODE_KUBELET_CHECKPOINT_H

#define KUBELET_MAX_BODY (64 * 1024)

struct kubelet_access {
    const char *base_url; /* "https://<node IP>:<port>" */
    const char
        *ca_file; /* PEM to trust for the kubelet's serving certificate; NULL: the system's */
    const char *token_file; /* the service account token to present */
};

/* Checkpoints container of ns/pod, the runtime given timeout_s seconds (0:
 * the kubelet's default). Returns 0 and *ret_archive (the path on the
 * node), or a negative errno and *ret_err: -EINVAL for a name that is not a
 * DNS name, -EACCES when the kubelet refused the caller, -EIO with the
 * kubelet's words (CRIU's refusal reaches here), -ETIMEDOUT. */
int kubelet_checkpoint(const struct kubelet_access *k, const char *ns, const char *pod,
                       const char *container, long timeout_s, char **ret_archive, char **ret_err);

/* The archive's file name (after the last '/'), or NULL when path has none
 * or it is "." or ".." or does not end in ".tar". Borrowed from path. */
const char *kubelet_archive_name(const char *path);

#endif
