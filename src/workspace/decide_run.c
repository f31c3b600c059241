#include "decide_internal.h"

/* ---- rule 5: run ---- */

static void begin_resume(struct decider *d)
{
    struct workspace_status *st = d->st;
    int64_t released = st->last_pause->accelerator_released_ms;
    st->resumes++;
    free(st->last_resume->restored_from);
    *st->last_resume = (struct workspace_resume_timeline){.requested_ms = d->now};
    decide_prewarm_resume_begins(d);
    if (released && d->now > released && d->cls && d->cls->has_accelerator) {
        st->accelerator_seconds_released +=
            (double)(d->now - released) / 1000.0 * d->cls->accelerator_count;
    }
    char occ[OCCASION_SIZE], t[32] = "", from[MAX_MESSAGE];
    decide_resume_occasion(d, occ);
    if (released)
        decide_format_duration(d->now - released, t, sizeof(t));
    /* What the pause left to come back from, judged as the pod's creation
     * judges it (a capacity fallback may still choose otherwise:
     * SnapshotNotUsed says why). */
    char why[MAX_MESSAGE];
    const char *snapshot = d->cls ? decide_restore_snapshot(d, why, sizeof(why)) : NULL;
    if (!d->cls)
        why[0] = '\0';
    if (st->home->lost_ms && !st->home->fresh_pod)
        snprintf(from, sizeof(from),
                 "the pod starts on a new, empty home: home claim %s was lost, and with it the "
                 "files, the application's checkpoint and any snapshot laid over them",
                 st->home->lost_claim_uid ? st->home->lost_claim_uid : "");
    else if (snapshot)
        snprintf(from, sizeof(from), "the pod is to be restored from snapshot %s", snapshot);
    else if (why[0])
        snprintf(from, sizeof(from),
                 "the pod starts from the files and the application's checkpoint (%.900s)", why);
    else
        snprintf(from, sizeof(from),
                 "the pod starts from the files and the application's checkpoint");
    workspace_message_one_line(from);
    char who[TIMEFMT_RFC3339_SIZE + 48] = "";
    if (st->last_resume->pre_warmed) {
        char owner[TIMEFMT_RFC3339_SIZE];
        timefmt_rfc3339_text(st->prewarm->last_for_ms, owner);
        snprintf(who, sizeof(who), " (pre-warm, ahead of the owner's %s)", owner);
    }
    decide_transition_event(d, occ, "Normal", WS_EVENT_RESUMING, "resume requested%s%s%s%s: %s",
                            who, released ? " after " : "", t, released ? " paused" : "", from);
}

/* A workspace created paused, never started, is resumed: not a resume of a
 * pause (the counters and the ledger have none), but its user asked for
 * one and is told so; the timeline measures it like one. */
static int first_start_of_paused(const struct decider *d)
{
    const struct workspace_status *st = d->st;
    return d->old->state == WS_STATE_PAUSED && st->pauses == 0 && st->resumes == 0 &&
           !st->last_resume->requested_ms && !d->keep;
}

static void begin_first_start(struct decider *d)
{
    struct workspace_status *st = d->st;
    free(st->last_resume->restored_from);
    *st->last_resume = (struct workspace_resume_timeline){.requested_ms = d->now};
    decide_prewarm_resume_begins(d);
    char occ[OCCASION_SIZE];
    decide_transition_event(d, decide_resume_occasion(d, occ), "Normal", WS_EVENT_RESUMING,
                            "resume requested%s: a first start (the workspace was created paused; "
                            "there is nothing to restore, the pod starts fresh)",
                            st->last_resume->pre_warmed ? " (pre-warm, ahead of the owner)" : "");
}

/* How a resumed pod came back, for the Resumed Event, from the Restored
 * reason it got (status.lastResume.restoredFrom). */
static void came_back(const struct decider *d, const struct workspace_pod *p, char *out,
                      size_t size)
{
    const char *from = d->st->last_resume->restored_from;
    if (decide_streq(from, WS_REASON_FROM_SNAPSHOT))
        snprintf(out, size, "from snapshot %s: %s back", p->snapshot ? p->snapshot : "",
                 d->cls && d->cls->has_accelerator ? "memory and GPU state are" : "memory is");
    else if (decide_streq(from, WS_REASON_COLD_START))
        snprintf(out, size,
                 "cold start: not restored from snapshot %s; from the files and the "
                 "application's checkpoint",
                 p->snapshot ? p->snapshot : "");
    else if (decide_streq(from, WS_REASON_FRESH_HOME))
        snprintf(out, size, "on a new, empty home: the old one was lost");
    else if (decide_streq(from, WS_REASON_FROM_CHECKPOINT) || (!from && p->restore_from_checkpoint))
        snprintf(out, size, "from the files and the application's checkpoint");
    else if (d->st->pauses == 0)
        snprintf(out, size, "a first start: fresh, the workspace was created paused");
    else
        snprintf(out, size, "fresh start");
}

/* The resume's pod is ready: the resume's timeline ends and is announced. */
static void resume_ready(struct decider *d, const struct workspace_pod *p)
{
    struct workspace_status *st = d->st;
    struct workspace_resume_timeline *r = st->last_resume;
    /* Pod times have whole seconds; the request has milliseconds. When
     * the pod's second cannot be told from the request's, the time we
     * saw it ready is the better figure (later by our cache's lag). */
    int64_t ready = p->ready_ms ? p->ready_ms : d->now;
    if (ready < r->requested_ms + 1000)
        ready = d->now > r->requested_ms ? d->now : r->requested_ms;
    /* A restored session is ready when its application answered. */
    if (restore_answered_ms(d, p) > ready)
        ready = restore_answered_ms(d, p);
    if (!r->pod_scheduled_ms)
        r->pod_scheduled_ms =
            p->scheduled_ms && p->scheduled_ms > r->requested_ms ? p->scheduled_ms : ready;
    r->ready_ms = ready;
    r->seconds_to_ready = (double)(ready - r->requested_ms) / 1000.0;
    /* The resume ends: counted by how it came back, in the same status
     * write as readyAt (once; a first start is no resume, resumes is 0). */
    if (st->resumes > 0)
        ledger_count_resume(st, r->restored_from);
    decide_prewarm_ready(d, ready);
    char occ[OCCASION_SIZE], how[MAX_MESSAGE];
    came_back(d, p, how, sizeof(how));
    decide_transition_event(d, decide_resume_occasion(d, occ), "Normal", WS_EVENT_RESUMED,
                            "ready %.1fs after the resume request (%s)", r->seconds_to_ready, how);
}

static void run_with_pod(struct decider *d)
{
    const struct workspace_pod *p = d->keep;
    struct workspace_status *st = d->st;
    int resuming = decide_resume_in_progress(st);
    decide_set_string(d, &st->node_name, p->node_name);
    decide_set_accelerator(d, decide_pod_product(d, p), p->capacity_fallback);
    if (decide_judge_unwanted_restore(d, p) || decide_judge_restore(d, p))
        return;

    if (p->ready) {
        st->state = WS_STATE_RUNNING;
        st->waiting_for_capacity_since_ms = 0;
        decide_condition(d, WS_COND_READY, COND_TRUE, WS_REASON_POD_READY, "pod %s is ready on %s",
                         p->name, decide_node_or_unknown(p));
        decide_condition(d, WS_COND_CAPACITY_AVAILABLE, COND_TRUE, WS_REASON_SCHEDULED,
                         "pod %s is scheduled on %s", p->name, decide_node_or_unknown(p));
        /* The resume ends when how the pod came back is known: a pod
         * created from a snapshot may be ready before the backend says
         * whether it restored it (then within the cold-start grace). */
        if (resuming && (!p->snapshot || st->last_resume->restored_from))
            resume_ready(d, p);
        decide_idle(d);
        return;
    }
    if (p->queue_gated && !decide_pod_is_scheduled(p)) {
        decide_queued(d);
        return;
    }
    if (p->unschedulable && !decide_pod_is_scheduled(p)) {
        decide_waiting_for_capacity(d);
        return;
    }
    if (decide_pod_is_scheduled(p)) {
        st->waiting_for_capacity_since_ms = 0;
        decide_condition(d, WS_COND_CAPACITY_AVAILABLE, COND_TRUE, WS_REASON_SCHEDULED,
                         "pod %s is scheduled on %s", p->name, decide_node_or_unknown(p));
        if (resuming && !st->last_resume->pod_scheduled_ms)
            st->last_resume->pod_scheduled_ms =
                p->scheduled_ms > st->last_resume->requested_ms ? p->scheduled_ms : d->now;
        if (!p->snapshot && decide_crash_looping(p) && d->cls &&
            d->cls->snapshot.backend != SNAPSHOT_BACKEND_NONE) {
            /* Not restored: the application's own crash. Kubernetes restarts
             * it; replacing the pod would not help. */
            st->state = resuming                            ? WS_STATE_RESUMING
                        : d->old->state == WS_STATE_RUNNING ? WS_STATE_RUNNING
                                                            : WS_STATE_PENDING;
            decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_CRASH_LOOP,
                             "pod %s crash-loops (%d restarts) without having been restored from a "
                             "snapshot: the application itself fails; see the pod's logs",
                             p->name, p->restart_count);
            char occ[OCCASION_SIZE];
            if (!decide_streq(decide_condition_reason(d->old, WS_COND_READY), WS_REASON_CRASH_LOOP))
                decide_transition_event(d, decide_pod_occasion(p->name, occ), "Warning",
                                        WS_EVENT_CRASH_LOOP,
                                        "pod %s crash-loops (%d restarts) without a restore from a "
                                        "snapshot: the application's own failure",
                                        p->name, p->restart_count);
        } else if (resuming) {
            st->state = WS_STATE_RESUMING;
            decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_POD_STARTING,
                             "pod %s is starting on %s", p->name, decide_node_or_unknown(p));
        } else if (d->old->state == WS_STATE_RUNNING) {
            /* It was ready and is not now (a crash, a failing probe): still
             * running, on the same node and accelerator. */
            st->state = WS_STATE_RUNNING;
            decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_POD_NOT_READY,
                             "pod %s on %s is not ready", p->name, decide_node_or_unknown(p));
        } else {
            st->state = WS_STATE_PENDING;
            decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_POD_STARTING,
                             "pod %s is starting on %s", p->name, decide_node_or_unknown(p));
        }
        return;
    }
    st->state = resuming ? WS_STATE_RESUMING : WS_STATE_PENDING;
    decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_POD_PENDING,
                     "pod %s is waiting to be scheduled", p->name);
}

/* A resume whose pause's snapshot the backend has not settled yet (the
 * controller died before recording it, and the backend's caches are still
 * syncing, or it is still being taken) waits for the answer, at most the
 * class's snapshot timeout: a pod created meanwhile would start from files
 * while the backend may restore it from that very snapshot. */
static int snapshot_pending(struct decider *d)
{
    const struct workspace_status *st = d->st;
    if (!decide_resume_in_progress(st) || !d->cls ||
        d->cls->snapshot.backend == SNAPSHOT_BACKEND_NONE || !decide_snapshot_current(st) ||
        !decide_streq(st->snapshot->phase, "InProgress"))
        return 0;
    int64_t until = st->last_resume->requested_ms + d->cls->snapshot.timeout_ms;
    if (d->now >= until)
        return 0;
    decide_requeue_at(d, until);
    return 1;
}

/* No pod starts yet: the home's loss awaits acknowledgement, or a snapshot
 * stands in the way. Returns 1 with the status saying why. */
static int pod_held_back(struct decider *d, int resuming)
{
    struct workspace_status *st = d->st;
    if (decide_home_awaits_acknowledgement(d)) {
        st->state = resuming ? WS_STATE_RESUMING : WS_STATE_PENDING;
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_HOME_LOST,
                         "no pod starts: the home claim (uid %s) was lost; annotate the Workspace "
                         "with " ACKNOWLEDGE_HOME_LOSS_ANNOTATION
                         "=%s to start on a new, empty home",
                         st->home->lost_claim_uid ? st->home->lost_claim_uid : "",
                         st->home->lost_claim_uid ? st->home->lost_claim_uid : "");
        return 1;
    }
    if (snapshot_pending(d)) {
        st->state = WS_STATE_RESUMING;
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_SNAPSHOTTING,
                         "waiting for the snapshot backend to say whether snapshot %s is ready, so "
                         "that the new pod starts from it or from files",
                         st->snapshot->attempt);
        return 1;
    }
    const char *in_the_way = decide_snapshot_in_the_way(d);
    if (in_the_way) {
        st->state = resuming ? WS_STATE_RESUMING : WS_STATE_PENDING;
        decide_condition(
            d, WS_COND_READY, COND_FALSE, WS_REASON_POD_TERMINATING,
            "waiting for snapshot %s to be removed, so that the new pod starts from files",
            in_the_way);
        decide_requeue_at(d, d->now + 2000);
        return 1;
    }
    return 0;
}

/* Names the pod to create: the one the status names, or a new one.
 * Returns 1 when the name is new, 0 when not, -ENOMEM. */
static int name_pod(struct decider *d)
{
    struct workspace_status *st = d->st;
    /* A retry gets a new name: the failed pod was seen, so a cache that no
     * longer shows it is not merely behind. */
    int is_new = !st->pod_name || d->retry;
    if (is_new) {
        char *name = workspace_pod_name(d->ws, st->pod_generation + 1);
        if (!name) {
            decide_failed(d, -ENOMEM);
            return -ENOMEM;
        }
        st->pod_generation++;
        free(st->pod_name);
        st->pod_name = name;
        decide_set_string(d, &st->pod_uid, NULL);
        /* The scheduler has not judged the new pod yet. */
        workspace_status_remove_condition(st, WS_COND_CAPACITY_AVAILABLE);
        /* The first pod after an interruption (and no pause since) replaces
         * the interrupted one. */
        struct workspace_interruption *li = st->last_interruption;
        if (li->pod && !li->replaced_by && li->at_ms >= st->last_pause->requested_ms)
            decide_set_string(d, &li->replaced_by, name);
        /* The first pod on a home made after the last one was lost. */
        if (st->home->lost_ms && !st->home->fresh_pod)
            decide_set_string(d, &st->home->fresh_pod, name);
    }
    return is_new;
}

/* The Restored condition (and SnapshotNotUsed) for a pod about to be
 * created: from the snapshot, on a new home, a capacity fallback, or from
 * files and the checkpoint, why in why. */
static void say_how_it_starts(struct decider *d, const char *snapshot, char *why, int fresh_home,
                              int fallback, int from_checkpoint)
{
    struct workspace_status *st = d->st;
    int resuming = decide_resume_in_progress(st);
    /* The last pause's Ready snapshot is not what this pod starts from:
     * SnapshotReady follows, naming why. */
    if (!snapshot && why[0] && decide_snapshot_current(st) &&
        decide_streq(st->snapshot->phase, "Ready")) {
        char msg[MAX_MESSAGE];
        snprintf(msg, sizeof(msg), "snapshot %s is not used: %s",
                 st->snapshot->name ? st->snapshot->name : st->snapshot->attempt, why);
        workspace_message_one_line(msg);
        decide_condition(d, WS_COND_SNAPSHOT_READY, COND_FALSE, WS_REASON_NOT_USED, "%s", msg);
    }
    if (snapshot) {
        decide_condition(d, WS_COND_RESTORED, COND_UNKNOWN, WS_REASON_RESTORING,
                         "pod %s is restored from snapshot %s", st->pod_name, snapshot);
        if (resuming)
            decide_set_string(d, &st->last_resume->restored_from, NULL);
    } else if (fresh_home) {
        decide_set_restored(d, st->pod_name, 0);
        char occ[OCCASION_SIZE];
        if (why[0])
            decide_transition_event(d, decide_pod_occasion(st->pod_name, occ), "Warning",
                                    WS_EVENT_SNAPSHOT_NOT_USED, "%s", why);
    } else if (fallback) {
        char products[PRODUCTS_TEXT], timeout[32];
        decide_allowed_products(d->cls, ", ", products, sizeof(products));
        decide_format_duration(d->cls->capacity_timeout_ms, timeout, sizeof(timeout));
        decide_set_restored(d, st->pod_name, from_checkpoint);
        if (from_checkpoint)
            decide_condition(
                d, WS_COND_RESTORED, COND_TRUE, WS_REASON_FROM_CHECKPOINT,
                "pod %s starts from the application's checkpoint (%s=%s), not from a "
                "snapshot: after the capacity timeout (%s) it may run on any of %s",
                st->pod_name, d->cls->checkpoint_env ? d->cls->checkpoint_env : "checkpoint",
                d->cls->checkpoint_path ? d->cls->checkpoint_path : "", timeout, products);
        else
            decide_condition(
                d, WS_COND_RESTORED, COND_TRUE, WS_REASON_FRESH,
                "pod %s starts fresh: the workspace was never paused; after the capacity "
                "timeout (%s) it may run on any of %s",
                st->pod_name, timeout, products);
    } else {
        decide_set_restored(d, st->pod_name, from_checkpoint);
        if (why[0] && from_checkpoint) {
            workspace_message_one_line(why);
            decide_condition(d, WS_COND_RESTORED, COND_TRUE, WS_REASON_FROM_CHECKPOINT,
                             "pod %s starts from the application's checkpoint: %s", st->pod_name,
                             why);
            const struct condition *before = workspace_status_condition(d->old, WS_COND_RESTORED);
            const struct condition *now = workspace_status_condition(st, WS_COND_RESTORED);
            char occ[OCCASION_SIZE];
            if (!before || !now || !decide_streq(before->message, now->message))
                decide_transition_event(d, decide_pod_occasion(st->pod_name, occ), "Warning",
                                        WS_EVENT_SNAPSHOT_NOT_USED,
                                        "%s; starting from files and the checkpoint", why);
        }
    }
}

void decide_create_pod(struct decider *d)
{
    struct workspace_status *st = d->st;
    int resuming = decide_resume_in_progress(st);
    /* After a pause or an interruption the application may have left a
     * checkpoint on home; the pod is told where. */
    int from_checkpoint = st->pauses > 0 || st->interruptions > 0;
    int fallback = decide_fallback_due(d);
    if (pod_held_back(d, resuming))
        return;
    int is_new = name_pod(d);
    if (is_new < 0)
        return;
    /* Nothing of the session is on a new home: no checkpoint, no snapshot
     * to lay over it. */
    int fresh_home = decide_on_fresh_home(d, st->pod_name);
    if (fresh_home)
        from_checkpoint = 0;
    /* Not new: the status names a pod that the cache does not show. It was
     * created in an earlier pass the cache has not caught up with, or it is
     * gone. Creating it again under the same name is right either way: the
     * API server answers AlreadyExists in the first case, and no second pod
     * can ever appear. */
    char why[MAX_MESSAGE] = "";
    /* A fallback may land on another product than the snapshot's: it starts
     * from files and the checkpoint. */
    const char *snapshot =
        from_checkpoint && !fallback ? decide_restore_snapshot(d, why, sizeof(why)) : NULL;
    if (fresh_home && st->pauses > 0 && d->cls->snapshot.backend != SNAPSHOT_BACKEND_NONE &&
        decide_snapshot_current(st) && decide_streq(st->snapshot->phase, "Ready"))
        snprintf(why, sizeof(why),
                 "snapshot %s was taken with home claim %s, which is gone: it is not laid over "
                 "a new, empty home",
                 st->snapshot->name ? st->snapshot->name : st->snapshot->attempt,
                 st->snapshot->home_claim_uid ? st->snapshot->home_claim_uid : "(unrecorded)");
    const char *pin = snapshot && d->cls->has_accelerator ? st->snapshot->gpu_product : NULL;
    struct action *a = decide_push(d, ACTION_CREATE_POD, st->pod_name);
    /* A pod made under the name (a fallback's, or a replacement after a
     * lost status write) is a new one: its uid is learnt when it is seen,
     * and its end is judged anew. */
    decide_set_string(d, &st->pod_uid, NULL);
    decide_set_string(d, &st->deleted_pod, NULL);
    /* A restore joins its snapshot's group (none for one taken before
     * groups: the policy then has none either); any other pod a group of
     * its own, which no snapshot has. */
    char fresh[SNAPSHOT_GROUP_SIZE];
    const char *group = snapshot ? st->snapshot->group
                        : workspace_snapshot_group(d->ws, st->pod_generation, fresh) == 0 ? fresh
                                                                                          : NULL;
    if (a) {
        a->from_checkpoint = from_checkpoint;
        a->capacity_fallback = fallback;
        /* A pre-warm goes at the class's pre-warm priority until its
         * owner's time (decide_prewarm_priority()). */
        a->prewarm = decide_prewarm_open(st) && d->now < st->prewarm->last_for_ms;
        const char *type = snapshot ? st->snapshot->node_machine_type : NULL;
        const char *pool = snapshot ? st->snapshot->node_pool : NULL;
        const char *driver = snapshot ? st->snapshot->node_gpu_driver : NULL;
        const char *image =
            snapshot && snapshot_backend_traits(d->cls->snapshot.backend)->restores_from_image
                ? st->snapshot->image
                : NULL;
        if ((snapshot && !(a->snapshot = strdup(snapshot))) ||
            (image && !(a->image = strdup(image))) || (pin && !(a->product = strdup(pin))) ||
            (group && !(a->group = strdup(group))) || (type && !(a->machine_type = strdup(type))) ||
            (pool && !(a->node_pool = strdup(pool))) ||
            (driver && !(a->gpu_driver = strdup(driver))))
            decide_failed(d, -ENOMEM);
    }
    decide_set_string(d, &st->node_name, NULL);
    decide_set_accelerator(d, fallback ? NULL : pin ? pin : d->cls->product, fallback);
    st->waiting_for_capacity_since_ms = 0;
    if (resuming && !st->last_resume->pod_created_ms)
        st->last_resume->pod_created_ms = d->now;
    say_how_it_starts(d, snapshot, why, fresh_home, fallback, from_checkpoint);
    st->state = resuming ? WS_STATE_RESUMING : WS_STATE_PENDING;
    decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_POD_PENDING,
                     "pod %s is waiting to be scheduled", st->pod_name);
    char occ[OCCASION_SIZE];
    if (is_new && !resuming)
        decide_transition_event(d, decide_pod_occasion(st->pod_name, occ), "Normal",
                                WS_EVENT_CREATED, "created pod %s (%s)", st->pod_name,
                                fresh_home        ? "on a new, empty home"
                                : from_checkpoint ? "from the application's checkpoint"
                                                  : "fresh");
}

/* The application was asked for its checkpoint, and what asked is over
 * before it answered: unpaused (the pause is cancelled), or the pod
 * stopped or went (nothing is left to snapshot). No snapshot follows. The
 * request is recorded as cancelled, why in its message (an answer that
 * still comes is not awaited), and SnapshotReady no longer says
 * Checkpointing. A later pause asks again under its own attempt, with a
 * fresh record. */
void decide_checkpoint_cancelled(struct decider *d, const char *why)
{
    struct workspace_snapshot *sn = d->st->snapshot;
    if (!sn->checkpoint_attempt || sn->checkpoint_result)
        return;
    char msg[MAX_MESSAGE];
    snprintf(msg, sizeof(msg), "%s before the application answered; no snapshot was taken", why);
    sn->checkpoint_answered_ms = d->now;
    decide_set_string(d, &sn->checkpoint_result, "Cancelled");
    decide_set_string(d, &sn->checkpoint_message, msg);
    decide_condition(d, WS_COND_SNAPSHOT_READY, COND_FALSE, WS_REASON_CANCELLED,
                     "the application was asked for its checkpoint before snapshot %s, and %s; no "
                     "snapshot was taken",
                     sn->checkpoint_attempt, why);
}

void decide_run(struct decider *d)
{
    struct workspace_status *st = d->st;
    const struct workspace_status *old = d->old;

    /* 5c: after a capacity timeout with onCapacityTimeout Fail, nothing is
     * retried until the user changes the spec. */
    int failed_for_capacity = old->state == WS_STATE_FAILED &&
                              decide_streq(decide_condition_reason(old, WS_COND_CAPACITY_AVAILABLE),
                                           WS_REASON_CAPACITY_TIMEOUT);
    d->retry = failed_for_capacity && old->observed_generation != d->ws->generation;
    if (d->retry)
        st->waiting_for_capacity_since_ms = 0; /* a new attempt, a new clock */
    if (failed_for_capacity && !d->retry) {
        decide_adopt(d);
        if (d->keep)
            decide_own_delete_pod(d, d->keep, 0);
        else if (!d->n_leaving) {
            decide_set_string(d, &st->pod_name, NULL);
            decide_set_string(d, &st->pod_uid, NULL);
            decide_set_string(d, &st->node_name, NULL);
            /* No pod holds or waits for one. */
            decide_set_string(d, &st->accelerator_product, NULL);
        }
        return;
    }
    /* A pause whose end no pass recorded (its pod went while the controller
     * was down, or the pass that saw it died before its status write) ended
     * by now: its record is completed before the resume. */
    if (decide_in_pause(st) && !d->keep && !d->n_leaving &&
        !st->last_pause->accelerator_released_ms)
        st->last_pause->accelerator_released_ms = d->now;
    if (decide_in_pause(st))
        begin_resume(d);
    else if (first_start_of_paused(d))
        begin_first_start(d);
    decide_checkpoint_cancelled(d, "the pause was cancelled (spec.paused false)");
    decide_adopt(d);
    if (d->keep)
        decide_snapshot_after_unpause(d, d->keep);
    if (d->keep) {
        run_with_pod(d);
        return;
    }
    if (decide_resume_in_progress(st))
        decide_snapshot_settle(d);
    if (d->n_leaving) {
        decide_wait_for_leaving(d, d->leaving->name);
        return;
    }
    decide_create_pod(d);
}
