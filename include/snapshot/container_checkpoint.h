/*
 * container_checkpoint: the ContainerCheckpoint snapshot backend
 * (docs/snapshots.md, "The ContainerCheckpoint backend"), behind the
 * snapshot backend interface (snapshot/backend.h).
 *
 * Per attempt one ContainerSnapshot (hibernator.dev/v1alpha1,
 * deploy/crds/containersnapshots.yaml) named by the attempt's handle, in
 * the workspace's namespace, owned by the Workspace and labelled with it,
 * carrying the finalizer of the node agent (CONTAINER_SNAPSHOT_FINALIZER):
 * the node agent on the pod's node (deploy/node/) takes the kubelet's
 * checkpoint of the workspace container, pushes it as a checkpoint image to
 * <class repository>/<namespace>/<workspace>:<attempt> and says Ready with
 * status.image, the image by digest, which a restore pod names as its
 * container's image. Deleting a snapshot deletes the ContainerSnapshot;
 * the agent deletes the image, then lets the object go.
 *
 * The cache of ContainerSnapshots starts on first use, so a cluster without
 * the CRD costs nothing until a class asks for the backend.
 *
 * Ownership: as snapshot/backend.h says; views borrow strings from the
 * cache until the loop runs again.
 */
#ifndef HIBERNATOR_SNAPSHOT_CONTAINER_CHECKPOINT_H
#define HIBERNATOR_SNAPSHOT_CONTAINER_CHECKPOINT_H

#include <cjson/cJSON.h>

#include "snapshot/backend.h"
#include "workspace/class.h"
#include "workspace/pod.h"
#include "workspace/workspace.h"

/* The repository of a workspace's checkpoint images:
 * "<class repository>/<namespace>/<workspace>", or, where that would be
 * longer than an OCI repository may be (255), the workspace's part cut and
 * followed by 8 hex digits of a hash of the whole name. Returns a malloc'd
 * string, NULL when out of memory or the class names no repository. Pure. */
char *container_checkpoint_repository(const struct workspace_class *c, const char *ns,
                                      const char *workspace);

/* The ContainerSnapshot of an attempt of ws's pod (its name, uid and node;
 * the workspace container), built at decision time:
 * {"containerSnapshot": {...}}. NULL when out of memory or when something it
 * needs is missing (the pod's uid or node, the class's repository). Pure. */
cJSON *container_checkpoint_begin_bodies(const struct workspace *ws,
                                         const struct workspace_class *c, const char *attempt,
                                         const struct workspace_pod *pod);

/* The backend (a cache of ContainerSnapshots in o's namespace, NULL: all).
 * Returns 0 and *ret (the caller's, snapshot_backend_free()) or -ENOMEM. */
int container_checkpoint_backend_new(const struct snapshot_backend_options *o,
                                     struct snapshot_backend **ret);

#endif
