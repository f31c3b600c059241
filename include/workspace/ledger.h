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

#endif
