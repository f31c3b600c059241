#include "decide_internal.h"

/* ---- rule 7: Available, the one condition to wait on ---- */

/* Where the session of a ready pod came from, from its Restored reason:
 * FromSnapshot (memory and GPU state), FromCheckpoint (files and the
 * application's checkpoint, also after a cold start), Fresh; NULL for a
 * reason not known here. */
static const char *came_from(const char *restored)
{
    if (decide_streq(restored, "FromSnapshot") || decide_streq(restored, "UnwantedRestore"))
        return "FromSnapshot";
    if (decide_streq(restored, "FromCheckpoint") || decide_streq(restored, "ColdStart"))
        return "FromCheckpoint";
    if (decide_streq(restored, "Fresh") || decide_streq(restored, "FreshHome"))
        return "Fresh";
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
    const struct condition *ready = workspace_status_condition(st, COND_READY);
    const struct condition *restored = workspace_status_condition(st, COND_RESTORED);
    const char *ready_msg = ready && ready->message ? ready->message : "";
    if (st->state == WS_STATE_PAUSED) {
        decide_condition(d, COND_AVAILABLE, COND_FALSE, "Paused",
                         "the workspace is paused and holds no pod; set spec.paused to false to "
                         "resume");
        return;
    }
    if (!ready || ready->status != COND_TRUE) {
        decide_condition(d, COND_AVAILABLE, COND_FALSE, "NotReady", "%s",
                         ready_msg[0]                    ? ready_msg
                         : st->message && st->message[0] ? st->message
                                                         : "no pod is ready");
        return;
    }
    if (!restored) {
        decide_condition(d, COND_AVAILABLE, COND_TRUE, "PodReady",
                         "%s; how its session started is not recorded", ready_msg);
        return;
    }
    const char *from = came_from(restored->reason);
    if (restored->status != COND_TRUE || !from) {
        decide_condition(d, COND_AVAILABLE, COND_FALSE, "Restoring",
                         "%s, but whether its session came back from the snapshot is not known "
                         "yet: %s",
                         ready_msg, restored->message ? restored->message : "");
        return;
    }
    const char *restored_msg = restored->message ? restored->message : "";
    if (decide_streq(from, "FromSnapshot"))
        decide_condition(d, COND_AVAILABLE, COND_TRUE, "FromSnapshot", "%s", restored_msg);
    else if (decide_streq(from, "FromCheckpoint"))
        decide_condition(d, COND_AVAILABLE, COND_TRUE, "FromCheckpoint", "%s", restored_msg);
    else
        decide_condition(d, COND_AVAILABLE, COND_TRUE, "Fresh", "%s", restored_msg);
}
