/*
 * snapshot view: what decide() knows about a snapshot, in words every
 * backend can say (docs/snapshots.md). The reconciler builds a view from its
 * caches through the backend; decide() never sees a backend's objects.
 *
 * Ownership: the strings are borrowed from the caches for one decision.
 */
#ifndef HIBERNATOR_SNAPSHOT_VIEW_H
#define HIBERNATOR_SNAPSHOT_VIEW_H

#include <stdint.h>

enum snapshot_phase {
    SNAPSHOT_PHASE_NONE,        /* nothing seen for the attempt (yet) */
    SNAPSHOT_PHASE_IN_PROGRESS, /* asked for, not ready */
    SNAPSHOT_PHASE_READY,
    SNAPSHOT_PHASE_FAILED,
};

struct snapshot_view {
    const char *attempt; /* the handle the view is for */
    enum snapshot_phase phase;
    const char *name;    /* the snapshot, once the backend names it */
    int64_t ready_ms;    /* when it became Ready by the backend's account, 0: unknown */
    const char *message; /* why it failed */
    int64_t deleting_ms; /* being deleted since (the backend's finalizer holds it), 0: not */
    const char *group;   /* its snapshot group (the source pod's), NULL: none */
    const char *pod;     /* the pod it was asked of (GKE: the trigger's targetPod), NULL: unknown */
    /* That pod's uid (ContainerCheckpoint: spec.podUID), NULL: unknown. */
    const char *pod_uid;
    /* The Workspace it was asked for: the uid of its controlling owner
     * reference (GKE: the trigger's), NULL: unknown. A workspace deleted and
     * made again under its name finds its predecessor's snapshots under the
     * names its own counters give until they are gone. */
    const char *owner_uid;
    int64_t requested_ms; /* when it was asked for (GKE: the trigger's creation), 0: unknown */
    /* The backend's own retries of the checkpoint so far (GKE:
     * status.observedCheckpointRetryCount), 0: none. */
    int64_t checkpoint_retries;
    /* When a pod was last restored from it (GKE: status.lastAccessTime), 0:
     * never or unknown. Its retention ages it from then (else from Ready). */
    int64_t last_access_ms;
    /* What a restore pod runs (ContainerCheckpoint: the checkpoint image,
     * repository@digest), NULL: the backend restores by name (GKE). */
    const char *image;
    /* The backend cannot say yet (its caches have not synced): phase is a
     * placeholder, and decide() concludes nothing from it. */
    int unknown;
};

/* "InProgress", "Ready" or "Failed"; "" for SNAPSHOT_PHASE_NONE or another
 * value. Static. */
const char *snapshot_phase_name(enum snapshot_phase p);

#endif
