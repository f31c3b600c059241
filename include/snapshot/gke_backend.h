/*
 * gke_backend: the GKE Pod Snapshot backend (snapshot/gke.h) behind the
 * snapshot backend interface (snapshot/backend.h). Each operation is the
 * gke_snapshots_*() function of the same meaning; this file only adapts
 * them (and names the GKE caches for hibernator_cache_walked_objects_total:
 * podsnapshots, podsnapshotmanualtriggers, podsnapshotpolicies).
 *
 * Ownership: as snapshot/backend.h says; the backend owns its
 * struct gke_snapshots.
 */
#ifndef HIBERNATOR_SNAPSHOT_GKE_BACKEND_H
#define HIBERNATOR_SNAPSHOT_GKE_BACKEND_H

#include "snapshot/backend.h"

/* The GKE backend (gke_snapshots_new() with o's loop, client, namespace
 * and changed callback). Returns 0 and *ret (the caller's,
 * snapshot_backend_free()), -ENOMEM, or libuv's negative errno for the
 * timer. */
int gke_backend_new(const struct snapshot_backend_options *o, struct snapshot_backend **ret);

#endif
