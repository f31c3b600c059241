#include "decide_internal.h"

/* ---- rule 4: the pods ---- */

/* Newer first: creation time, then pod generation, then name. */
static int newer(const struct decider *d, const struct workspace_pod *a,
                 const struct workspace_pod *b)
{
    if (a->created_ms != b->created_ms)
        return a->created_ms > b->created_ms;
    int64_t ga = pod_generation_of(d->ws, a->name), gb = pod_generation_of(d->ws, b->name);
    if (ga != gb)
        return ga > gb;
    return strcmp(a->name, b->name) > 0;
}

void decide_sort_pods(struct decider *d, int may_delete)
{
    const struct decide_input *in = d->in;
    const struct workspace_pod *named = NULL, *newest = NULL;
    size_t n_live = 0;
    for (size_t i = 0; i < in->n_pods; i++) {
        const struct workspace_pod *p = in->pods[i];
        if (!p->name)
            continue;
        if ((p->deletion_ms && !decide_pod_held(d, p)) || decide_pod_has_stopped(p)) {
            /* Named in messages: the same one every pass, whatever the order. */
            if (!d->leaving || strcmp(p->name, d->leaving->name) < 0)
                d->leaving = p;
            d->n_leaving++;
            continue;
        }
        n_live++;
        if (d->st->pod_name && strcmp(p->name, d->st->pod_name) == 0)
            named = p;
        if (!newest || newer(d, p, newest))
            newest = p;
    }
    d->keep = named ? named : newest;
    if (!may_delete)
        return;

    /* Stopped pods (evicted, or the app exited 0 under the pods'
     * restartPolicy OnFailure) are not coming back. */
    size_t n_extra = 0;
    for (size_t i = 0; i < in->n_pods && n_extra < MAX_EXTRA_DELETES; i++) {
        const struct workspace_pod *p = in->pods[i];
        if (p->name && !p->deletion_ms && decide_pod_has_stopped(p)) {
            /* Completed by its own snapshot (postCheckpoint: stop):
             * deleted by decide_pause() once the snapshot is settled. */
            if (d->ws->paused && decide_in_pause(d->st) && decide_snapshot_current(d->st) &&
                decide_snapshot_stopped(d, p, d->st))
                continue;
            /* Perhaps completed by a snapshot a crashed pass began. */
            if (decide_snapshot_pending_for(d, p))
                continue;
            decide_delete_pod(d, p, 0);
            /* The pod the status names is an interruption: PodInterrupted
             * says it (decide_note_interruption()). */
            if (!d->ws->paused && !decide_streq(p->name, d->st->pod_name))
                decide_event(d, "Warning", WS_EVENT_POD_STOPPED,
                             "pod %s stopped (phase %s); a new pod will replace it", p->name,
                             p->phase);
            n_extra++;
        }
    }
    if (n_live > 1) {
        /* Should never happen; if it does, one pod keeps the workspace. */
        size_t n_dup = 0;
        for (size_t i = 0; i < in->n_pods && n_extra < MAX_EXTRA_DELETES; i++) {
            const struct workspace_pod *p = in->pods[i];
            if (!p->name || p->deletion_ms || decide_pod_has_stopped(p) || p == d->keep)
                continue;
            decide_delete_pod(d, p, 0);
            n_extra++;
            n_dup++;
        }
        if (n_dup)
            decide_event(d, "Warning", WS_EVENT_DUPLICATE_POD,
                         "found %zu pods for the workspace; keeping %s", n_live, d->keep->name);
    }
}

/* The first pod on a home made after the last one was lost: nothing of
 * the session is on it. */
int decide_on_fresh_home(const struct decider *d, const char *pod_name)
{
    const struct workspace_home *h = d->st->home;
    return h->lost_ms && pod_name && decide_streq(h->fresh_pod, pod_name);
}

/* The pod created in place of one that ended without the controller asking. */
static int replaces_interrupted(const struct decider *d, const char *pod_name)
{
    const struct workspace_interruption *li = d->st->last_interruption;
    return li->pod && pod_name && decide_streq(li->replaced_by, pod_name);
}

void decide_set_restored(struct decider *d, const char *pod_name, int from_checkpoint)
{
    const struct workspace_home *h = d->st->home;
    const struct workspace_interruption *li = d->st->last_interruption;
    const char *env = d->cls && d->cls->checkpoint_env ? d->cls->checkpoint_env : "checkpoint";
    const char *path = d->cls && d->cls->checkpoint_path ? d->cls->checkpoint_path : "";
    const char *cause = li->reason ? li->reason : "Deleted";
    const char *restored_from = from_checkpoint ? WS_REASON_FROM_CHECKPOINT : WS_REASON_FRESH;
    if (decide_on_fresh_home(d, pod_name)) {
        char at[TIMEFMT_RFC3339_SIZE];
        timefmt_rfc3339_text(h->lost_ms, at);
        restored_from = WS_REASON_FRESH_HOME;
        decide_condition(
            d, WS_COND_RESTORED, COND_TRUE, WS_REASON_FRESH_HOME,
            "pod %s starts on a new, empty home: claim %s (uid %s) was gone at %s, and "
            "with it the files and the application's checkpoint",
            pod_name, d->st->home_claim_name ? d->st->home_claim_name : "",
            h->lost_claim_uid ? h->lost_claim_uid : "", at);
    } else if (replaces_interrupted(d, pod_name) && from_checkpoint) {
        decide_condition(
            d, WS_COND_RESTORED, COND_TRUE, WS_REASON_FROM_CHECKPOINT,
            "pod %s replaces pod %s, which ended without the controller asking (%s): it "
            "starts from the files and is told where the application's checkpoint is "
            "(%s=%s); what was only in memory is lost",
            pod_name, li->pod, cause, env, path);
    } else if (replaces_interrupted(d, pod_name)) {
        decide_condition(
            d, WS_COND_RESTORED, COND_TRUE, WS_REASON_FRESH,
            "pod %s replaces pod %s, which ended without the controller asking (%s): it "
            "starts fresh from the files; what was only in memory is lost",
            pod_name, li->pod, cause);
    } else if (from_checkpoint) {
        decide_condition(d, WS_COND_RESTORED, COND_TRUE, WS_REASON_FROM_CHECKPOINT,
                         "pod %s starts from the application's checkpoint (%s=%s)", pod_name, env,
                         path);
    } else {
        decide_condition(d, WS_COND_RESTORED, COND_TRUE, WS_REASON_FRESH,
                         "pod %s starts fresh: the workspace was never paused", pod_name);
    }
    if (decide_resume_in_progress(d->st))
        decide_set_string(d, &d->st->last_resume->restored_from, restored_from);
}

/* The pod exists but the status does not name it: the controller stopped
 * between creating it and writing the status, or another replica wrote it. */
void decide_adopt(struct decider *d)
{
    const struct workspace_pod *p = d->keep;
    if (p && p->uid && decide_streq(d->st->pod_name, p->name))
        decide_set_string(d, &d->st->pod_uid, p->uid);
    if (!p || decide_streq(d->st->pod_name, p->name))
        return;
    decide_set_string(d, &d->st->pod_name, p->name);
    decide_set_string(d, &d->st->pod_uid, p->uid);
    decide_set_string(d, &d->st->deleted_pod, NULL);
    int64_t gen = pod_generation_of(d->ws, p->name);
    if (gen > d->st->pod_generation)
        d->st->pod_generation = gen;
    if (decide_resume_in_progress(d->st) && !d->st->last_resume->pod_created_ms)
        d->st->last_resume->pod_created_ms = p->created_ms ? p->created_ms : d->now;
    /* Created after the home was lost, by a pass whose status write was
     * lost: the first pod on the new home. */
    struct workspace_home *h = d->st->home;
    if (h->lost_ms && !h->fresh_pod && p->created_ms >= h->lost_ms - 1000)
        decide_set_string(d, &h->fresh_pod, p->name);
    if (p->snapshot)
        decide_condition(d, WS_COND_RESTORED, COND_UNKNOWN, WS_REASON_RESTORING,
                         "pod %s is restored from snapshot %s", p->name, p->snapshot);
    else
        decide_set_restored(d, p->name, p->restore_from_checkpoint);
}

/* ---- evictions: Kueue takes the pod, its hook holds it for a snapshot ---- */

int decide_pod_held(const struct decider *d, const struct workspace_pod *p)
{
    if (!p->deletion_ms || p->prestop_sleep_s <= 0 || !p->ready || decide_pod_has_stopped(p) ||
        !decide_streq(p->phase, "Running") || !workspace_pod_queue_eviction(p) || !d->cls ||
        d->cls->snapshot.backend == SNAPSHOT_BACKEND_NONE)
        return 0;
    /* The kubelet runs the hook from the delete on, within the grace
     * period; a delete that shortened the grace (the controller's own,
     * once the snapshot is Ready) ends it. */
    int64_t begun =
        p->deletion_grace_known ? p->deletion_ms - p->deletion_grace_s * 1000 : p->deletion_ms;
    int64_t until = begun + p->prestop_sleep_s * 1000;
    if (until > p->deletion_ms)
        until = p->deletion_ms;
    return d->now < until;
}

int decide_queue_eviction(struct decider *d)
{
    const struct workspace_pod *p = d->keep;
    if (!p || !p->deletion_ms || !decide_streq(p->name, d->st->pod_name) || !decide_pod_held(d, p))
        return 0;
    const char *kind = workspace_pod_queue_eviction(p);
    int preempted = decide_streq(kind, "Preempted");
    char hold[32], msg[MAX_MESSAGE + 1];
    decide_format_duration(p->prestop_sleep_s * 1000, hold, sizeof(hold));
    snprintf(msg, sizeof(msg),
             "%s by Kueue (%s%s%s); its preStop hook holds pod %s for %s so that its snapshot is "
             "taken first",
             preempted ? "preempted" : "evicted", p->termination_reason,
             p->termination_message ? ": " : "",
             p->termination_message ? p->termination_message : "", p->name, hold);
    workspace_message_one_line(msg);
    struct action *a = decide_push(d, ACTION_AUTO_PAUSE, NULL);
    if (!a)
        return 1;
    a->time_ms = d->now;
    if (!(a->message = strdup(msg)) || !(a->reason = strdup(kind))) {
        decide_failed(d, -ENOMEM);
        return 1;
    }
    d->st->state = WS_STATE_PAUSING;
    decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_PAUSING,
                     "pod %s was %s by Kueue; it is paused with a snapshot while its preStop hook "
                     "holds it",
                     p->name, preempted ? "preempted" : "evicted");
    return 1;
}

/* ---- interruptions: a pod that ended without the controller asking ---- */

/* Whether the controller itself deleted the pod the status names (p: as
 * last seen; NULL: gone without a trace). Every delete of it follows a
 * decision the status already shows: a pause, a capacity timeout, a
 * capacity fallback, a crashed restore. */
static int own_delete(const struct decider *d, const struct workspace_pod *p)
{
    const struct workspace_status *old = d->old;
    const struct workspace_class *c = d->cls;
    if (d->ws->paused || decide_in_pause(old))
        return 1;
    /* Completed by the pause's snapshot (postCheckpoint: stop) after a
     * resume was asked for: the snapshot stopped it, no interruption. */
    if (p && decide_snapshot_stopped(d, p, old))
        return 1;
    /* The pause's pod, still named while its resume has created none. */
    if (decide_resume_in_progress(old) && !old->last_resume->pod_created_ms)
        return 1;
    if (old->state == WS_STATE_FAILED &&
        decide_streq(decide_condition_reason(old, WS_COND_CAPACITY_AVAILABLE),
                     WS_REASON_CAPACITY_TIMEOUT))
        return 1;
    /* The pass that timed out may have died before its status write. */
    if (old->waiting_for_capacity_since_ms && c &&
        c->on_capacity_timeout != CAPACITY_TIMEOUT_WAIT &&
        d->now >= old->waiting_for_capacity_since_ms + c->capacity_timeout_ms)
        return 1;
    if (old->accelerator_fallback &&
        (p ? !p->capacity_fallback
           : decide_streq(decide_condition_reason(old, WS_COND_CAPACITY_AVAILABLE),
                          WS_REASON_CAPACITY_TIMEOUT)))
        return 1;
    if (old->snapshot->restore_failed_ms && (!p || p->snapshot) &&
        (decide_streq(decide_condition_reason(old, WS_COND_RESTORED), WS_REASON_RESTORE_CRASHED) ||
         decide_streq(decide_condition_reason(old, WS_COND_RESTORED),
                      WS_REASON_RESTORE_UNRESPONSIVE)))
        return 1;
    if (old->snapshot->rejected_ms && (!p || !p->snapshot) &&
        decide_streq(decide_condition_reason(old, WS_COND_RESTORED), WS_REASON_UNWANTED_RESTORE))
        return 1;
    return 0;
}

/* The pod the status names is leaving (deleted, or stopped for good) or
 * gone, and the controller did not ask for it: the interruption is
 * recorded (status.interruptions, a Warning PodInterrupted event), the
 * status stops naming the pod, and its replacement gets a new name. */
void decide_note_interruption(struct decider *d)
{
    struct workspace_status *st = d->st;
    if (!st->pod_name)
        return;
    const struct workspace_pod *named = NULL;
    for (size_t i = 0; i < d->in->n_pods; i++) {
        const struct workspace_pod *p = d->in->pods[i];
        if (p->name && decide_streq(p->name, st->pod_name))
            named = p;
    }
    const struct workspace_pod *ended = NULL;
    if (named &&
        ((named->deletion_ms && !decide_pod_held(d, named)) || decide_pod_has_stopped(named))) {
        ended = named;
    } else if (!named && st->pod_uid) {
        /* Seen by an earlier pass and now gone: the cache never un-sees an
         * object, so this is no lag behind a create (which forgets the
         * uid). The cache's last sight of it says why, when it kept one. */
        const struct workspace_pod *g = d->in->gone_pod;
        if (g && decide_streq(g->name, st->pod_name) &&
            (!g->uid || decide_streq(g->uid, st->pod_uid)))
            ended = g;
    } else {
        return;
    }
    if (decide_streq(st->deleted_pod, st->pod_name) || own_delete(d, ended)) {
        decide_set_string(d, &st->deleted_pod, st->pod_name);
        return;
    }
    const char *uid = ended && ended->uid ? ended->uid : st->pod_uid;
    const char *node = ended && ended->node_name ? ended->node_name : st->node_name;
    int node_absent = d->in->pod_node_absent && decide_streq(node, d->old->node_name);
    struct pod_end e;
    if (ended) {
        workspace_pod_end(ended, node_absent, &e);
    } else {
        e = (struct pod_end){0};
        snprintf(e.kind, sizeof(e.kind), "%s", node_absent ? "NodeLost" : "Deleted");
        if (node_absent && node)
            snprintf(e.message, sizeof(e.message), "node %s: no longer in the cluster", node);
    }
    workspace_message_one_line(e.message);
    struct workspace_interruption *li = st->last_interruption;
    st->interruptions++;
    li->at_ms = e.at_ms && e.at_ms <= d->now ? e.at_ms : d->now;
    decide_set_string(d, &li->pod, st->pod_name);
    decide_set_string(d, &li->pod_uid, uid);
    decide_set_string(d, &li->node_name, node);
    decide_set_string(d, &li->reason, e.kind);
    decide_set_string(d, &li->message, e.message[0] ? e.message : NULL);
    decide_set_string(d, &li->replaced_by, NULL);
    char occ[OCCASION_SIZE];
    snprintf(occ, sizeof(occ), "interrupted-%s", uid ? uid : st->pod_name);
    decide_transition_event(
        d, occ, "Warning", WS_EVENT_POD_INTERRUPTED,
        "pod %s%s%s ended without the controller asking: %s%s%s%s; its memory is "
        "lost, a new pod replaces it",
        st->pod_name, node ? " on " : "", node ? node : "", e.kind, e.message[0] ? " (" : "",
        e.message, e.message[0] ? ")" : "");
    decide_set_string(d, &st->pod_name, NULL);
    decide_set_string(d, &st->pod_uid, NULL);
}
