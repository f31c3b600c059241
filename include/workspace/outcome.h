/*
 * outcome: what one decision achieved, read off the difference between the
 * status it started from and the status it decided: a pause that completed,
 * a resume that became ready, a snapshot that became Ready or failed, a
 * wait for capacity that ended, accelerator time given back.
 *
 * The controller's counters (controller/metrics.h) take these once the
 * status write that records them has succeeded. Each event is counted
 * exactly once because the writes are optimistic: a write lands only on
 * the status it was computed from, so the next decision starts from the
 * status that already records the event and sees no difference.
 *
 * Pure: no clock (now_ms is given), no allocation, no I/O.
 */
#ifndef HIBERNATOR_WORKSPACE_OUTCOME_H
#define HIBERNATOR_WORKSPACE_OUTCOME_H

#include <stdint.h>

#include "workspace/workspace.h"

/* What a completed pause kept of the session. */
enum pause_memory {
    PAUSE_MEMORY_FILES,           /* no snapshot of this pause: files (and a checkpoint) */
    PAUSE_MEMORY_SNAPSHOT,        /* a Ready snapshot: memory and GPU state */
    PAUSE_MEMORY_SNAPSHOT_FAILED, /* the snapshot failed and the class paused without memory */
};

/* Where a resumed session came from (status.lastResume.restoredFrom). */
enum restore_source {
    RESTORE_SOURCE_NONE, /* not known (yet) */
    RESTORE_SOURCE_SNAPSHOT,
    RESTORE_SOURCE_CHECKPOINT,
    RESTORE_SOURCE_COLD_START,
    RESTORE_SOURCE_FRESH,
    RESTORE_SOURCE_FRESH_HOME, /* a new, empty home: the old one was lost */
};

enum snapshot_result {
    SNAPSHOT_RESULT_NONE,
    SNAPSHOT_RESULT_READY,
    SNAPSHOT_RESULT_FAILED,
    SNAPSHOT_RESULT_TIMEOUT,
};

#define OUTCOME_REASON_SIZE 40

struct workspace_outcome {
    /* A pause completed: its pod is gone and the accelerator free. */
    int paused;
    char pause_reason[OUTCOME_REASON_SIZE]; /* lastPause.reason in snake_case: "user", ... */
    enum pause_memory pause_memory;

    /* A resume became ready and where it came from is known. */
    enum restore_source resumed;
    double resume_seconds; /* from the resume request to ready */

    /* The current snapshot attempt became Ready or failed. */
    enum snapshot_result snapshot;
    double snapshot_seconds; /* from the request to Ready (Ready only) */

    /* The workspace stopped waiting for capacity (scheduled, paused, failed). */
    int capacity_wait_ended;
    double capacity_wait_seconds;

    /* Accelerator-seconds this decision added to the accounting. */
    double accelerator_seconds_released;

    /* A pod ended without the controller asking: its kind in snake_case
     * ("evicted", "node_lost", ...); "" for none. */
    char interrupted[OUTCOME_REASON_SIZE];

    /* The claim that held home was seen gone. */
    int home_lost;

    /* A pre-warm settled: "used", "unused" or "yielded"; "" for none. And
     * one became ready before its owner's time. */
    char prewarm[OUTCOME_REASON_SIZE];
    int prewarm_ready_in_time;
};

/* Compares the status read (old) with the status decided; now_ms is the
 * decision's time. Fills every field of *ret. */
void workspace_outcome_diff(const struct workspace_status *old,
                            const struct workspace_status *decided, int64_t now_ms,
                            struct workspace_outcome *ret);

/* Whether the outcome has anything to count. */
int workspace_outcome_any(const struct workspace_outcome *o);

/* Metric label values, static: pause_memory_name() "files" | "snapshot" |
 * "snapshot_failed" ("files" for another value); restore_source_name()
 * "snapshot" | "checkpoint" | "cold_start" | "fresh" | "fresh_home" ("" for
 * none or another value); snapshot_result_name() "ready" | "failed" |
 * "timeout" ("" for none or another value). */
const char *pause_memory_name(enum pause_memory m);
const char *restore_source_name(enum restore_source s);
const char *snapshot_result_name(enum snapshot_result r);

#endif
