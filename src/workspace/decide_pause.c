#include "decide_internal.h"

/* ---- rule 6: pause ---- */

/* When a leaving pod's delete was sent: its deletionTimestamp less the grace
 * period the pause gives (the API server adds it), within the pause. */
static int64_t deleted_at(const struct decider *d, const struct workspace_pod *p)
{
    int64_t at = p->deletion_ms ? p->deletion_ms : d->now;
    if (p->deletion_ms && p->deletion_grace_known)
        at -= p->deletion_grace_s * 1000;
    else if (p->deletion_ms && decide_pod_is_scheduled(p))
        at -= decide_pod_grace(d, p) * 1000;
    if (at < d->st->last_pause->requested_ms)
        at = d->st->last_pause->requested_ms;
    return at < d->now ? at : d->now;
}

/* The pause's snapshot, asked for, is neither Ready nor Failed yet. */
static int snapshot_unsettled(const struct decider *d)
{
    const struct workspace_status *st = d->st;
    return decide_pause_snapshots(d) && decide_in_pause(st) && decide_snapshot_current(st) &&
           decide_streq(st->snapshot->phase, "InProgress");
}

/* The pause's pod is gone and no pass recorded when it was deleted: from
 * the pod cache's last sight of it when it is the pause's pod and says
 * (its deletionTimestamp), else marked unobserved, never left out. */
static void note_pod_deleted(struct decider *d)
{
    struct workspace_pause_timeline *lp = d->st->last_pause;
    if (lp->pod_deleted_ms)
        return;
    const struct workspace_pod *g = d->in->gone_pod;
    if (g && g->name && g->deletion_ms && decide_streq(g->name, d->st->pod_name)) {
        lp->pod_deleted_ms = deleted_at(d, g);
        return;
    }
    decide_set_string(d, &lp->unobserved, "podDeletedAt");
}

/* The pause's memory snapshot is Ready. */
static int snapshot_kept(const struct decider *d)
{
    const struct workspace_status *st = d->st;
    return decide_pause_snapshots(d) && decide_in_pause(st) && decide_snapshot_current(st) &&
           decide_streq(st->snapshot->phase, "Ready");
}

/* The pause's pod, completed by its snapshot and not yet deleted. */
static const struct workspace_pod *stopped_by_snapshot(const struct decider *d)
{
    if (!decide_in_pause(d->st))
        return NULL;
    for (size_t i = 0; i < d->in->n_pods; i++) {
        const struct workspace_pod *p = d->in->pods[i];
        if (!p->deletion_ms && decide_snapshot_stopped(d, p, d->st) &&
            decide_snapshot_current(d->st))
            return p;
    }
    return NULL;
}

/* A pause begins: counted, its timeline started, its reason (the
 * controller's own idle pause, or the user's) recorded and announced. */
static void begin_pause(struct decider *d)
{
    struct workspace_status *st = d->st;
    /* The controller's own pause names itself in annotations written with
     * spec.paused; an older one (before the last pause or resume) is
     * history. */
    const struct workspace *ws = d->ws;
    int idle = ws->auto_paused_ms && ws->auto_paused_ms > st->last_resume->requested_ms &&
               ws->auto_paused_ms > st->last_pause->requested_ms && ws->auto_paused_ms <= d->now &&
               ws->auto_paused_ms >= d->old->state_since_ms;
    /* The controller's pause for an eviction by Kueue says so. */
    const char *evicted = idle ? ws->auto_pause_cause : NULL;
    st->pauses++;
    int yielded = decide_prewarm_pause_begins(d, idle && !evicted);
    workspace_pause_timeline_clear(st->last_pause);
    int64_t requested = idle ? ws->auto_paused_ms : d->now;
    st->last_pause->requested_ms = requested;
    /* When work ended: for the controller's own pause, the last activity
     * its decision was based on (the pass that decided it recorded it
     * exactly); for the user's, the request. */
    int64_t work = d->old->activity->last_activity_ms;
    st->last_pause->work_ended_ms = !idle ? requested : work < requested ? work : requested;
    decide_set_string(d, &st->last_pause->reason,
                      evicted   ? evicted
                      : yielded ? WS_EVENT_PRE_WARM_YIELDED
                      : idle    ? "IdleTimeout"
                                : "User");
    if (idle && ws->auto_pause_message) {
        char msg[MAX_MESSAGE + 1];
        snprintf(msg, sizeof(msg), "%s", ws->auto_pause_message);
        workspace_message_one_line(msg);
        decide_set_string(d, &st->last_pause->message, msg);
    }
}

/* The pause is announced once it is known what happens to the pod: it
 * keeps running while its snapshot is taken (keeps), or it is stopped. */
static void announce_pause(struct decider *d, const struct workspace_pod *p, int keeps)
{
    const struct workspace_status *st = d->st;
    char occ[OCCASION_SIZE], fate[MAX_MESSAGE];
    decide_pause_occasion(d, occ);
    const char *name = p ? p->name : d->leaving->name;
    /* Only this pause's attempt is named: the status may still hold the
     * last pause's until this one's snapshot begins (its pod not ready
     * yet, or the application asked first). */
    int current = decide_snapshot_current(st);
    int asked = st->snapshot->checkpoint_attempt &&
                st->snapshot->checkpoint_requested_ms >= st->last_pause->requested_ms;
    if (keeps && asked && !current)
        snprintf(fate, sizeof(fate),
                 "pod %s keeps running: its application is asked for its checkpoint, then "
                 "snapshot %s is taken; the pod stops once the snapshot is ready",
                 name, st->snapshot->checkpoint_attempt);
    else if (keeps && current)
        snprintf(fate, sizeof(fate),
                 "pod %s keeps running while snapshot %s is taken; it stops once the snapshot "
                 "is ready",
                 name, st->snapshot->attempt);
    else if (keeps) /* the backend cannot say yet which attempt is this pause's */
        snprintf(fate, sizeof(fate),
                 "pod %s keeps running while its snapshot is taken; it stops once the snapshot "
                 "is ready",
                 name);
    else if (!p && decide_snapshot_current(st))
        snprintf(fate, sizeof(fate),
                 "snapshot %s of pod %s was asked for; the pod stops at its checkpoint and is "
                 "removed once the snapshot is settled",
                 st->snapshot->attempt, name);
    else if (!p && d->in->next_attempt && d->in->next_attempt->unknown)
        snprintf(fate, sizeof(fate),
                 "pod %s has stopped; whether a snapshot of it was taken first is asked of the "
                 "snapshot backend, which cannot say yet",
                 name);
    else if (!p)
        snprintf(fate, sizeof(fate), "pod %s is already stopping", name);
    else if (decide_pod_is_scheduled(p))
        snprintf(fate, sizeof(fate),
                 "%sstopping pod %s (%llds to write the application's checkpoint); the files on "
                 "home and the checkpoint keep the session",
                 d->cls ? ""
                        : "the workspace's class is not found, so no snapshot can be taken "
                          "(the memory is not kept): ",
                 name, (long long)grace_seconds(d));
    else
        snprintf(fate, sizeof(fate), "removing pod %s, which never got a node", name);
    const char *if_failed =
        !keeps ? ""
        : d->cls && d->cls->snapshot.backend != SNAPSHOT_BACKEND_NONE &&
                d->cls->snapshot.on_failure == SNAPSHOT_ON_FAILURE_RETRY
            ? " (should the snapshot fail, the pod keeps running and the pause is tried again)"
            : " (should the snapshot fail, the pod stops and the pause keeps the files only)";
    const char *unused = decide_streq(st->prewarm->last_outcome, "Unused") &&
                                 st->prewarm->last_ms > d->old->last_pause->requested_ms
                             ? " (nobody used the pre-warm)"
                             : "";
    if (decide_streq(st->last_pause->reason, WS_EVENT_PREEMPTED) ||
        decide_streq(st->last_pause->reason, WS_EVENT_EVICTED))
        decide_transition_event(
            d, occ, "Warning",
            decide_streq(st->last_pause->reason, WS_EVENT_PREEMPTED) ? WS_EVENT_PREEMPTED
                                                                     : WS_EVENT_EVICTED,
            "pausing: %s; %s%s", st->last_pause->message ? st->last_pause->message : "evicted",
            fate, if_failed);
    else if (decide_streq(st->last_pause->reason, WS_EVENT_PRE_WARM_YIELDED))
        decide_transition_event(
            d, occ, "Normal", WS_EVENT_PRE_WARM_YIELDED, "%s; %s",
            st->last_pause->message ? st->last_pause->message : "the pre-warm gives way", fate);
    else if (st->last_pause->reason && decide_streq(st->last_pause->reason, "IdleTimeout"))
        decide_transition_event(
            d, occ, "Normal", WS_EVENT_IDLE_TIMEOUT, "pausing idle workspace%s: %s; %s%s", unused,
            st->last_pause->message ? st->last_pause->message : "idle", fate, if_failed);
    else
        decide_transition_event(d, occ, "Normal", WS_EVENT_PAUSING, "pause requested: %s%s", fate,
                                if_failed);
}

/* What the finished pause kept, for its Event. */
static void pause_kept(const struct decider *d, char *out, size_t size)
{
    const struct workspace_status *st = d->st;
    const struct workspace_snapshot *sn = st->snapshot;
    int this_pause = decide_pause_snapshots(d) && sn->attempt &&
                     sn->requested_ms >= st->last_pause->requested_ms;
    if (this_pause && decide_streq(sn->phase, "Ready"))
        snprintf(out, size, "snapshot %s holds its %s, home its files",
                 sn->name ? sn->name : sn->attempt, decide_memory_words(d->cls));
    else if (this_pause && decide_streq(sn->phase, "Failed"))
        snprintf(out, size,
                 "files only: snapshot %s failed, home keeps the files and the application's "
                 "checkpoint",
                 sn->attempt);
    else
        snprintf(out, size, "home keeps the files and the application's checkpoint");
}

/* Paused with a Ready snapshot: said before the resume when no node can
 * restore it any more (SnapshotReady=False/NotRestorable), and said Ready
 * again should such a node come back. */
static void paused_snapshot_restorable(struct decider *d)
{
    const struct workspace_snapshot *sn = d->st->snapshot;
    if (!decide_pause_snapshots(d) || !decide_snapshot_current(d->st) ||
        !decide_streq(sn->phase, "Ready"))
        return;
    char why[MAX_MESSAGE];
    const char *was = decide_condition_reason(d->old, WS_COND_SNAPSHOT_READY);
    if (decide_snapshot_unrestorable(d, why, sizeof(why))) {
        decide_condition(d, WS_COND_SNAPSHOT_READY, COND_FALSE, WS_REASON_NOT_RESTORABLE,
                         "%s; the resume will start from files and the application's checkpoint",
                         why);
        char occ[OCCASION_SIZE];
        snprintf(occ, sizeof(occ), "unrestorable-%s", sn->attempt);
        if (!decide_streq(was, WS_REASON_NOT_RESTORABLE))
            decide_transition_event(d, occ, "Warning", WS_EVENT_SNAPSHOT_NOT_RESTORABLE,
                                    "%s; the resume will start from files and the application's "
                                    "checkpoint",
                                    why);
    } else if (decide_streq(was, WS_REASON_NOT_RESTORABLE) && d->in->restore_nodes) {
        decide_condition(d, WS_COND_SNAPSHOT_READY, COND_TRUE, WS_REASON_READY,
                         "snapshot %s is ready (%.1fs); a node like the one it was taken on is "
                         "back",
                         sn->name ? sn->name : sn->attempt, sn->seconds);
    }
}

/* The pod is gone: the workspace is Paused. */
static void pause_done(struct decider *d)
{
    struct workspace_status *st = d->st;
    if (decide_in_pause(st) && !st->last_pause->accelerator_released_ms)
        st->last_pause->accelerator_released_ms = d->now;
    decide_set_string(d, &st->node_name, NULL);
    decide_set_string(d, &st->pod_name, NULL);
    decide_set_string(d, &st->pod_uid, NULL);
    decide_set_string(d, &st->deleted_pod, NULL);
    /* The next resume asks for the snapshot's product (or the class's) again. */
    st->accelerator_fallback = 0;
    /* Nothing is held or asked for: kubectl get ws shows no accelerator
     * (lastPause.product keeps the one the pod had). */
    decide_set_string(d, &st->accelerator_product, NULL);
    /* Capacity is not being asked for; the next resume asks again. */
    workspace_status_remove_condition(st, WS_COND_CAPACITY_AVAILABLE);
    decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_PAUSED,
                     "the workspace is paused; set spec.paused to false to resume");
    paused_snapshot_restorable(d);
    st->state = WS_STATE_PAUSED;
    if (d->old->state != WS_STATE_PAUSED) {
        const struct workspace_pause_timeline *lp = st->last_pause;
        char occ[OCCASION_SIZE];
        char kept[MAX_MESSAGE];
        pause_kept(d, kept, sizeof(kept));
        if (decide_in_pause(st) && lp->requested_ms &&
            lp->accelerator_released_ms >= lp->requested_ms)
            decide_transition_event(
                d, decide_pause_occasion(d, occ), "Normal", WS_EVENT_PAUSED,
                "paused; the pod was gone %.1fs after the pause request; %s",
                (double)(lp->accelerator_released_ms - lp->requested_ms) / 1000.0, kept);
        else
            decide_event(d, "Normal", WS_EVENT_PAUSED, "paused");
    }
}

void decide_pause(struct decider *d)
{
    struct workspace_status *st = d->st;
    const struct workspace_pod *p = d->keep;
    int any_pod = p || d->n_leaving;
    decide_adopt(d);

    /* A workspace created paused, or whose pod was already gone, has nothing
     * to pause: it is Paused without counting a pause. */
    int began = !decide_in_pause(st) && any_pod;
    if (began)
        begin_pause(d);
    st->waiting_for_capacity_since_ms = 0;
    if (decide_snapshot_recover(d)) {
        /* The backend cannot say yet whether a pass began this pause's
         * snapshot: nothing is concluded about the pod meanwhile. */
        if (began)
            announce_pause(d, p, p != NULL);
        st->state = WS_STATE_PAUSING;
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_SNAPSHOTTING,
                         "waiting for the snapshot backend to say what became of this pause's "
                         "snapshot");
        return;
    }
    if (!p && decide_in_pause(st))
        decide_checkpoint_cancelled(d,
                                    "the pod stopped or went (no running pod is left to snapshot)");
    if (!p && decide_in_pause(st))
        decide_snapshot_settle(d);
    int keeps = p && !decide_snapshot_allows_delete(d, p);
    if (began)
        announce_pause(d, p, keeps);
    if (keeps) {
        st->state = WS_STATE_PAUSING;
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_SNAPSHOTTING,
                         "pod %s keeps running until its snapshot is ready", p->name);
        return;
    }
    if (p) {
        /* A pod that never got a node holds nothing worth a grace period.
         * Nor one whose memory snapshot is Ready: what it wrote to home
         * after the snapshot (a checkpoint on SIGTERM) would not match the
         * memory a resume restores, and the restore would fail. */
        int64_t grace =
            decide_pod_is_scheduled(p) && !snapshot_kept(d) ? decide_pod_grace(d, p) : 0;
        decide_own_delete_pod(d, p, grace);
        if (decide_in_pause(st) && !st->last_pause->pod_deleted_ms)
            st->last_pause->pod_deleted_ms = d->now;
        st->state = WS_STATE_PAUSING;
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_PAUSING, "pod %s is stopping",
                         p->name);
        return;
    }
    const struct workspace_pod *done = stopped_by_snapshot(d);
    if (done && !decide_streq(st->snapshot->phase, "InProgress")) {
        /* Completed by its snapshot, which is settled now: the pod goes. */
        decide_own_delete_pod(d, done, 0);
        if (decide_in_pause(st) && !st->last_pause->pod_deleted_ms)
            st->last_pause->pod_deleted_ms = d->now;
        st->state = WS_STATE_PAUSING;
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_PAUSING, "pod %s is stopping",
                         done->name);
        return;
    }
    if (done) {
        st->state = WS_STATE_PAUSING;
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_SNAPSHOTTING,
                         "pod %s completed after snapshot %s was asked for (GKE stops it at the "
                         "checkpoint; an application that exits by itself looks the same); it is "
                         "removed once the snapshot is settled: Ready holds the session, a failure "
                         "pauses without memory",
                         done->name, st->snapshot->attempt);
        return;
    }
    if (d->n_leaving) {
        /* Deleted by a pass whose status write was lost: the pod says when. */
        if (decide_in_pause(st) && !st->last_pause->pod_deleted_ms)
            st->last_pause->pod_deleted_ms = deleted_at(d, d->leaving);
        st->state = WS_STATE_PAUSING;
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_PAUSING, "pod %s is stopping",
                         d->leaving->name);
        return;
    }
    if (decide_in_pause(st))
        note_pod_deleted(d);
    if (snapshot_unsettled(d)) {
        /* The pod is gone, and what the pause kept is not known yet: Paused
         * (and its Event) wait for the backend to settle the snapshot. */
        if (!st->last_pause->accelerator_released_ms)
            st->last_pause->accelerator_released_ms = d->now;
        st->state = WS_STATE_PAUSING;
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_SNAPSHOTTING,
                         "the pod is gone; waiting for the snapshot backend to settle snapshot %s",
                         st->snapshot->attempt);
        return;
    }
    pause_done(d);
}
