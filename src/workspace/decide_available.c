#include "decide_internal.h"

/* ---- rule 7: Available, the one condition to wait on ---- */

/* Where the session of a ready pod came from, from its Restored reason:
 * FromSnapshot (memory and GPU state), FromCheckpoint (files and the
 * application's checkpoint, also after a cold start), Fresh; NULL for a
 * reason not known here. */
static const char *came_from(const char *restored)
{
    if (decide_streq(restored, WS_REASON_FROM_SNAPSHOT) ||
        decide_streq(restored, WS_REASON_UNWANTED_RESTORE))
        return WS_REASON_FROM_SNAPSHOT;
    if (decide_streq(restored, WS_REASON_FROM_CHECKPOINT) ||
        decide_streq(restored, WS_REASON_COLD_START))
        return WS_REASON_FROM_CHECKPOINT;
    if (decide_streq(restored, WS_REASON_FRESH) || decide_streq(restored, WS_REASON_FRESH_HOME))
        return WS_REASON_FRESH;
    return NULL;
}

/*
 * Available=True: the pod is ready and the restore's verdict is in, so
 * `kubectl wait --for=condition=Available` returns once the workspace can be
 * used and its reason says how the session came back (docs/operations.md).
 * Ready alone turns True up to 30 s before a cold start can be told from a
 * restore.
 */
void decide_available(struct decider *d)
{
    const struct workspace_status *st = d->st;
    const struct condition *ready = workspace_status_condition(st, WS_COND_READY);
    const struct condition *restored = workspace_status_condition(st, WS_COND_RESTORED);
    const char *ready_msg = ready && ready->message ? ready->message : "";
    if (st->state == WS_STATE_PAUSED) {
        decide_condition(d, WS_COND_AVAILABLE, COND_FALSE, WS_REASON_PAUSED,
                         "the workspace is paused and holds no pod; set spec.paused to false to "
                         "resume");
        return;
    }
    if (!ready || ready->status != COND_TRUE) {
        decide_condition(d, WS_COND_AVAILABLE, COND_FALSE, WS_REASON_NOT_READY, "%s",
                         ready_msg[0]                    ? ready_msg
                         : st->message && st->message[0] ? st->message
                                                         : "no pod is ready");
        return;
    }
    if (!restored) {
        decide_condition(d, WS_COND_AVAILABLE, COND_TRUE, WS_REASON_POD_READY,
                         "%s; how its session started is not recorded", ready_msg);
        return;
    }
    const char *from = came_from(restored->reason);
    if (restored->status != COND_TRUE || !from) {
        decide_condition(d, WS_COND_AVAILABLE, COND_FALSE, WS_REASON_RESTORING,
                         "%s, but whether its session came back from the snapshot is not known "
                         "yet: %s",
                         ready_msg, restored->message ? restored->message : "");
        return;
    }
    const char *restored_msg = restored->message ? restored->message : "";
    if (decide_streq(from, WS_REASON_FROM_SNAPSHOT))
        decide_condition(d, WS_COND_AVAILABLE, COND_TRUE, WS_REASON_FROM_SNAPSHOT, "%s",
                         restored_msg);
    else if (decide_streq(from, WS_REASON_FROM_CHECKPOINT))
        decide_condition(d, WS_COND_AVAILABLE, COND_TRUE, WS_REASON_FROM_CHECKPOINT, "%s",
                         restored_msg);
    else
        decide_condition(d, WS_COND_AVAILABLE, COND_TRUE, WS_REASON_FRESH, "%s", restored_msg);
}
