/*
 * ledger: a workspace's pause-and-resume records, as the controller keeps
 * them in its status (JSON, times RFC 3339):
 *
 *   status.accounting  {pauses, resumes, acceleratorSecondsReleased,
 *                       acceleratorSecondsHeld, acceleratorHeldSince}
 *   status.history[]   newest first, at most 20 records of one pause and the
 *                      resume that ended it: {pausedAt, reason, workEndedAt,
 *                      heldSince, podDeletedAt, acceleratorReleasedAt,
 *                      snapshotReadyAt, snapshotSeconds, memory, nodeName,
 *                      product, acceleratorTakenAt, acceleratorTakenBy,
 *                      nodeRemovedAt, resumeRequestedAt, podScheduledAt,
 *                      readyAt, secondsToReady, restoredFrom}
 *
 * Every field may be missing. A status without history (a controller from
 * before the ledger) is read from lastPause, lastResume and snapshot
 * instead: at most two records, the last pause and the last resume, and no
 * held time; from_history says which.
 *
 * Ownership: strings in the records point into the workspace object, which
 * must outlive the ledger; ledger_clear() frees the record array.
 */
#ifndef HIBERNATOR_CLI_LEDGER_H
#define HIBERNATOR_CLI_LEDGER_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Records read from status.history at most (the controller keeps 20). */
#define LEDGER_MAX_RECORDS 64

struct ledger_record {
    int64_t paused_ms;
    const char *reason; /* User | IdleTimeout | ... */
    int64_t work_ended_ms;
    int64_t held_since_ms; /* the pod began holding the accelerator */
    int64_t pod_deleted_ms;
    int64_t released_ms; /* acceleratorReleasedAt */
    int64_t snapshot_ready_ms;
    double snapshot_seconds; /* < 0: unknown */
    const char *memory;      /* snapshot | files | snapshotFailed */
    const char *node_name;
    const char *product;
    int64_t taken_ms; /* acceleratorTakenAt: someone else got it */
    const char *taken_by;
    int64_t node_removed_ms;
    int64_t resume_requested_ms;
    int64_t pod_scheduled_ms;
    int64_t ready_ms;
    double seconds_to_ready;   /* < 0: unknown */
    const char *restored_from; /* FromSnapshot | FromCheckpoint | ColdStart | Fresh */
};

struct ledger {
    struct ledger_record *records; /* newest first */
    size_t n;
    int from_history;      /* 0: made from lastPause/lastResume */
    int64_t pauses;        /* accounting; -1 when absent */
    int64_t resumes;       /* -1 when absent */
    double released_s;     /* acceleratorSecondsReleased, -1 when absent */
    double held_s;         /* acceleratorSecondsHeld, -1 when absent */
    int64_t held_since_ms; /* acceleratorHeldSince: the current hold, 0 when none */
    int accelerators;      /* how many the workspace takes; 0 for a CPU workspace */
};

/* Reads the ledger of a Workspace object. Returns 0 or -ENOMEM. */
int ledger_read(const cJSON *ws, struct ledger *ret);
void ledger_clear(struct ledger *l);

/* True when restored_from means the memory did not come back (ColdStart,
 * FromCheckpoint, Fresh); false for FromSnapshot and unknown values. */
int ledger_lost_memory(const char *restored_from);

/* Words for a restoredFrom value: "snapshot", "checkpoint", "cold start",
 * "fresh start"; the value itself when unknown, "" for NULL. */
const char *ledger_restored_words(const char *restored_from);

#endif
