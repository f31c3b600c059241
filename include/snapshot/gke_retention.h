/*
 * gke_retention: the class's lastAccessTimeout in the format GKE's
 * PodSnapshotPolicy takes, retentionConfig.lastAccessTimeout: one number
 * and one unit, pattern ^(\d+)\s*(y|mo|d|h|min)$ (GKE's CRD,
 * gke-labs/pod-migration patches/crds/policies.yaml). "1d12h" or "90m", what
 * the class's own format allows, is refused by GKE's API server.
 *
 * Pure function, no allocation.
 */
#ifndef HIBERNATOR_SNAPSHOT_GKE_RETENTION_H
#define HIBERNATOR_SNAPSHOT_GKE_RETENTION_H

#include <stdint.h>

/* Room for the longest result ("52559999min") and its NUL. */
#define GKE_RETENTION_SIZE 16

/* The longest retention written: 36500 days (100 years). A class may say
 * more (its durations reach 5 x 99999 days); GKE's unit for it is not
 * published, and a Go time.Duration, which such timeouts are commonly
 * parsed into, ends near 292 years. */
#define GKE_RETENTION_MAX_DAYS 36500

/*
 * Writes ms as GKE's lastAccessTimeout: rounded UP to whole minutes (GKE
 * never deletes a snapshot earlier than the class says; at most 59.999 s
 * later), then in the largest of d, h, min that holds it exactly: 36h ->
 * "36h", 24h -> "1d", 90m -> "90min", 90s -> "2min", 0 -> "0min". The units
 * y and mo are never used (how long GKE takes a month or a year to be is
 * not published). Above GKE_RETENTION_MAX_DAYS days: that many days.
 * Returns 0, or -EINVAL for a negative ms.
 */
int gke_retention_format(int64_t ms, char out[GKE_RETENTION_SIZE]);

#endif
