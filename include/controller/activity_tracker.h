/*
 * activity_tracker: the reconciler's link to the activity probes.
 *
 * After each decision the reconciler says whether a workspace should be
 * probed (Running, ready, a class with activity sources) and the tracker
 * keeps the prober's target in step: the URL and PromQL filled in for the
 * current pod, the Jupyter token read from the Secret the class names. It
 * keeps the latest probe round per workspace for the next decision, loads
 * the time zones of pause windows, and calls back with the workspace key
 * whenever something a decision depends on arrived.
 *
 * Failures that stop a probe before it starts (the token Secret is missing,
 * a template cannot be filled in) are reported as a failed round, so they
 * show in the ActivityProbe condition and never read as "idle".
 *
 * Ownership: the tracker copies what it keeps. Tokens are wiped when
 * replaced or dropped. Observations and zones returned are owned by the
 * tracker and valid until the next call into it or the loop runs.
 */
#ifndef HIBERNATOR_CONTROLLER_ACTIVITY_TRACKER_H
#define HIBERNATOR_CONTROLLER_ACTIVITY_TRACKER_H

#include <stdint.h>
#include <uv.h>

#include "activity/prober.h"
#include "controller/metrics.h"
#include "kube/client.h"
#include "workspace/class.h"
#include "workspace/decide.h"
#include "workspace/idle.h"
#include "workspace/pod.h"
#include "workspace/workspace.h"

struct activity_tracker;

/* key: "namespace/name" of a workspace to look at again. */
typedef void (*activity_changed_cb)(void *data, const char *key);

struct activity_tracker_options {
    struct prober_options prober;
    const char *zoneinfo_dir; /* NULL: the system's */
    int64_t (*now_ms)(void *data);
    void *now_data;
    struct controller_metrics *metrics; /* rounds are counted here; NULL: not */
};

/* A tracker on loop that reads token Secrets through client (both borrowed:
 * they must outlive it). opts is read during the call (NULL: the defaults),
 * except metrics and now_data, which are borrowed too. cb (NULL: none) runs
 * from the loop. Returns 0 and *ret (the caller's, activity_tracker_close()),
 * -EINVAL without a loop, or -ENOMEM (also when libcurl cannot start). */
int activity_tracker_new(uv_loop_t *loop, struct kube_client *client,
                         const struct activity_tracker_options *opts, activity_changed_cb cb,
                         void *data, struct activity_tracker **ret);

/* Stops probing; no callback follows. Run the loop afterwards so handles
 * close. Accepts NULL. */
void activity_tracker_close(struct activity_tracker *t);

/* The latest round for key, or NULL. */
const struct activity_observation *activity_tracker_observation(struct activity_tracker *t,
                                                                const char *key);

/* The zone for name, or NULL while it loads (every tracked workspace is
 * looked at again once it has) or when it cannot be loaded (logged once;
 * pauses of classes naming it wait: the Idle condition says why). */
const struct tz *activity_tracker_zone(struct activity_tracker *t, const char *name);

/* Why the zone for name cannot be loaded ("no such zone ..."), NULL while
 * it loads, once loaded, or before activity_tracker_zone() asked for it.
 * Owned by the tracker. */
const char *activity_tracker_zone_error(struct activity_tracker *t, const char *name);

/* After a decision on key: probe it (wanted) with this class and pod, or
 * stop. probe_now asks for a round at once (a pause is due). */
void activity_tracker_update(struct activity_tracker *t, const char *key,
                             const struct workspace *ws, const struct workspace_class *cls,
                             const struct workspace_pod *pod, int wanted, int probe_now);

/* After a decision that wants a restored pod's application asked
 * (decide_output.restore_check_wanted): probe pod's application, the
 * class's Jupyter or code-server probe only (no GPU query), every second or
 * the class's interval if shorter, in place of the activity rounds. The
 * rounds of another pod, or of activity, are forgotten. probe_now asks for
 * a round at once. */
void activity_tracker_check_restore(struct activity_tracker *t, const char *key,
                                    const struct workspace *ws, const struct workspace_class *cls,
                                    const struct workspace_pod *pod, int probe_now);

/* What the restore check's rounds for key said, or NULL when key is not
 * being checked or no round ended yet. Owned by the tracker. */
const struct restore_check *activity_tracker_restore_check(struct activity_tracker *t,
                                                           const char *key);

/* Copies the prober's counters into *ret (the caller's). */
void activity_tracker_stats(const struct activity_tracker *t, struct prober_stats *ret);

#endif
