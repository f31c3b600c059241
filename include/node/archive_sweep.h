/*
 * archive_sweep: which files of the kubelet's checkpoints directory the
 * node agent deletes although no ContainerSnapshot records them. An agent
 * killed while the kubelet checkpoints, or before it wrote status.archive,
 * leaves an archive nobody records: a container's whole memory on the
 * node's disk. The restarted agent checkpoints again (nothing says
 * Checkpointed), and sweeps such leftovers.
 *
 * A file is a leftover when
 *   - its name is the kubelet's for a container one of this node's
 *     ContainerSnapshots names: checkpoint-<pod>_<namespace>-<container>-
 *     <RFC 3339 time>.tar (what the kubelet's checkpoint API writes); the
 *     kubelet's archives of other containers (someone's forensic
 *     checkpoint) are not the agent's to delete;
 *   - no ContainerSnapshot names it in status.archive;
 *   - no checkpoint of that container is in flight in this agent (the
 *     kubelet may be writing its archive, or the agent its status);
 *   - it was last modified before the cutoff: the agent's start on its
 *     first sweep; the sweep's own start when a snapshot has just become
 *     final (its archive recorded and stored: what is left of the
 *     container was written for a call that no longer waits for it); a
 *     checkpoint's longest time ago on the periodic sweeps.
 *
 * Pure: no I/O, no allocation.
 */
#ifndef HIBERNATOR_NODE_ARCHIVE_SWEEP_H
#define HIBERNATOR_NODE_ARCHIVE_SWEEP_H

#include <stddef.h>
#include <stdint.h>

/* A container a ContainerSnapshot of this node names. */
struct sweep_container {
    const char *ns, *pod, *container;
};

struct sweep_rules {
    const struct sweep_container *containers;
    size_t n_containers;
    const char *const *recorded; /* status.archive values (paths or names) */
    size_t n_recorded;
    const struct sweep_container *busy; /* checkpoints in flight: kept */
    size_t n_busy;
    int64_t cutoff_ms; /* files modified at or after this are kept */
};

/* 1 when name (a file name, no directory) modified at mtime_ms is a
 * leftover under r, else 0. */
int archive_sweep_is_leftover(const char *name, int64_t mtime_ms, const struct sweep_rules *r);

/* 1 when s is an RFC 3339 time as Go's time.RFC3339 formats it
 * ("2006-01-02T15:04:05Z" or with "+07:00"), else 0. len: its length. */
int archive_sweep_is_rfc3339(const char *s, size_t len);

#endif
