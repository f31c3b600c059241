/*
 * ledger: what became of the accelerator a pause gave back.
 *
 * Once a pause has released its accelerator, the controller looks in its own
 * pod cache for the pod that took it: a pod of another workspace, scheduled
 * on the node the paused pod ran on, asking for the same accelerator
 * resource, since the paused pod was deleted. It looks when such a pod is
 * scheduled and, until one is found, every LEDGER_RECHECK_MS for
 * LEDGER_WATCH_MS after the release (decide() asks for the re-checks).
 * decide() writes what was found into status.lastPause and the history.
 * docs/api.md, "The GPU-hours ledger".
 *
 * The ledger is in the status, which anyone allowed to write the status
 * subresource can change: ledger_bound() keeps its totals within what the
 * workspace's lifetime and generation allow before decide() builds on them.
 *
 * Pure functions: no I/O, no clock, tested in tests/unit/test_ledger.c.
 * Ownership: nothing is allocated; a returned pod is one of the arguments.
 */
#ifndef HIBERNATOR_WORKSPACE_LEDGER_H
#define HIBERNATOR_WORKSPACE_LEDGER_H

#include <stdint.h>

#include "workspace/pod.h"
#include "workspace/workspace.h"

#define LEDGER_RECHECK_MS (60 * 1000)
#define LEDGER_WATCH_MS (24 * 60 * 60 * 1000)

/* Whether the last pause still waits to learn who took its accelerator: the
 * pause is open, its pod ran on a known node and released an accelerator of
 * a known resource less than LEDGER_WATCH_MS before now, and nobody was seen
 * taking it yet. */
int ledger_awaits_taker(const struct workspace_status *s, int64_t now_ms);

/* Whether the last pause still waits to learn that the node its pod ran on
 * left the cluster: the pause is open, it released its pod's node less than
 * LEDGER_WATCH_MS before now, and no removal was seen yet. */
int ledger_awaits_node_removal(const struct workspace_status *s, int64_t now_ms);

/* The node the last pause's pod ran on, while the pause may still wait to
 * learn something of it (ledger_awaits_taker() or
 * ledger_awaits_node_removal() hold at the moment the accelerator was
 * released); NULL otherwise. Reads no clock: whether it still waits now,
 * within LEDGER_WATCH_MS, is for the caller to ask. */
const char *ledger_watched_node(const struct workspace_status *s);

/* Whether pod p took the accelerator ws's last pause released (which
 * ledger_awaits_taker() must still wait for): a pod of another workspace on
 * that node, asking for that resource, scheduled in or after the second the
 * paused pod was deleted (the controller sees the pod gone, and sets
 * acceleratorReleasedAt, a moment after the scheduler may have placed the
 * next one). Returns p when it did and it was scheduled before best (the
 * first taker found so far, or NULL; ties go to the smaller namespace/name),
 * else best. Folding it over the pods gives the first taker. */
const struct workspace_pod *ledger_taker_pick(const struct workspace *ws, int64_t now_ms,
                                              const struct workspace_pod *best,
                                              const struct workspace_pod *p);

/* The counters that outlive the history (status.accounting.resumesFrom,
 * pausesKept): one more resume that ended restored as restored_from says
 * (a Restored reason: FromSnapshot, ColdStart, FromCheckpoint, Fresh,
 * FreshHome), one more pause that kept memory ("snapshot", "files",
 * "snapshotFailed"). Returns 1 when counted, 0 for NULL or an unknown
 * value (nothing changes). */
int ledger_count_resume(struct workspace_status *s, const char *restored_from);
int ledger_count_pause(struct workspace_status *s, const char *memory);

/* The sums of those counters. */
int64_t ledger_resumes_from_total(const struct workspace_status *s);
int64_t ledger_pauses_kept_total(const struct workspace_status *s);

/* Slack for the clocks of the API server (creation and scheduling times)
 * and the controller (the times it records) disagreeing, and for times
 * kept in whole seconds. */
#define LEDGER_CLOCK_SLACK_MS (60 * 1000)

/* What the ledger is bounded by: facts the status cannot change. */
struct ledger_limits {
    /* metadata.creationTimestamp. 0: not known (an object the API server
     * made always has one): only the counters' consistency is checked. */
    int64_t created_ms;
    /* metadata.generation: every pause and every resume counted needs a
     * change of spec.paused first, and each change is a new generation. */
    int64_t generation;
    /* Accelerators a pod of the workspace may hold: the class's count when
     * it has an accelerator, else the most the schema allows (a class that
     * lost its accelerator does not void what was recorded under it). */
    int accelerator_count;
};

/* What ledger_bound() corrected. */
#define LEDGER_FIXED_COUNTS 0x1  /* accounting.pauses, resumes */
#define LEDGER_FIXED_SECONDS 0x2 /* accounting.acceleratorSecondsHeld, Released */
#define LEDGER_FIXED_TIMES                                                                         \
    0x4 /* accounting.acceleratorHeldSince, lastPause.acceleratorReleasedAt */
#define LEDGER_FIXED_HISTORY 0x8   /* records dropped from status.history */
#define LEDGER_FIXED_OUTCOMES 0x10 /* accounting.resumesFrom, pausesKept */

/* Brings the ledger in s within bounds, in place (docs/api.md, "Trusting
 * the ledger"): pauses and resumes not negative, resumes <= pauses <=
 * resumes + 1, pauses + resumes <= generation - 1; the times the totals
 * grow from (acceleratorHeldSince, lastPause.acceleratorReleasedAt)
 * between creation and now; acceleratorSecondsHeld + Released at most
 * (now - creation + LEDGER_CLOCK_SLACK_MS) x the accelerator count, held
 * kept first; at most pauses history records, none paused before creation
 * or after now; the counters of resumesFrom not negative and together at
 * most resumes, those of pausesKept at most pauses (lowered starting with
 * the last one named: freshHome, snapshotFailed). A ledger the controller
 * wrote is never changed. Returns the
 * LEDGER_FIXED_* bits of what was corrected, 0 for nothing. Allocates
 * nothing. */
unsigned ledger_bound(struct workspace_status *s, const struct ledger_limits *l, int64_t now_ms);

#endif
