/*
 * ledger: a workspace's pause-and-resume records, as the controller keeps
 * them: status.history (struct workspace_pause_record, newest first) and
 * the totals of status.accounting, decoded by the controller's own decoder
 * (workspace/workspace.h).
 *
 * A status without history (a controller from before the ledger) is read
 * from lastPause, lastResume and snapshot instead: at most two records, the
 * last pause and the last resume, and no held time; from_history says
 * which. A figure in a record is known exactly when its time is
 * (workspace.h): snapshot_seconds with snapshot_ready_ms, seconds_to_ready
 * with ready_ms.
 *
 * Ownership: the records and their strings belong to the workspace, which
 * must outlive the ledger (made records are kept in the ledger itself, so
 * it must not be copied once read); nothing is allocated.
 */
#ifndef HIBERNATOR_CLI_LEDGER_H
#define HIBERNATOR_CLI_LEDGER_H

#include <stddef.h>

#include "workspace/workspace.h"

struct ledger {
    const struct workspace_pause_record *records; /* newest first */
    size_t n;
    int from_history; /* 0: made from lastPause/lastResume */
    int accelerators; /* how many the workspace takes; 0 for a CPU workspace */
    struct workspace_pause_record made[2];
};

/* Reads the ledger of ws into *l. */
void ledger_read(const struct workspace *ws, struct ledger *l);

/* True when restored_from means the memory did not come back (ColdStart,
 * FromCheckpoint, Fresh); false for FromSnapshot and unknown values. */
int ledger_lost_memory(const char *restored_from);

/* Words for a restoredFrom value: "snapshot", "checkpoint", "cold start",
 * "fresh start"; the value itself when unknown, "" for NULL. */
const char *ledger_restored_words(const char *restored_from);

#endif
