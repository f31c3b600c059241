#include "decide_internal.h"

/* ---- rule 0: deleting ---- */

static void decide_deleting(struct decider *d)
{
    size_t n_pods = 0, n_deletes = 0;
    for (size_t i = 0; i < d->in->n_pods; i++) {
        const struct workspace_pod *p = d->in->pods[i];
        n_pods++;
        if (!p->deletion_ms && n_deletes < DECIDE_MAX_ACTIONS) {
            decide_delete_pod(d, p, decide_pod_grace(d, p));
            n_deletes++;
        }
    }
    /* The finalizer stays until no pod can still be writing to home. */
    if (n_pods > 0)
        return;
    /* The snapshots hold the session's memory: they go with it, and the
     * finalizer does not wait for the backend to free their storage. It
     * does wait until each one's deletion has been asked for: once the
     * workspace is gone nothing would find the rest. */
    if (decide_snapshot_retention(d, 1) > 0) {
        decide_requeue_at(d, d->now + 1000);
        return;
    }
    const struct workspace_pvc *pvc = d->in->pvc;
    if (pvc && !pvc->deletion_ms) {
        /* An unreadable class may say Retain: keep the files rather than
         * guess. */
        if (d->in->class_error)
            decide_push(d, ACTION_RELEASE_PVC, pvc->name);
        else if (!d->cls || d->cls->home_on_delete == HOME_ON_DELETE_DELETE)
            decide_push(d, ACTION_DELETE_PVC, pvc->name);
        else
            decide_push(d, ACTION_RELEASE_PVC, pvc->name);
    }
    if (d->ws->has_finalizer)
        decide_push(d, ACTION_REMOVE_FINALIZER, NULL);
}

/* ---- rules 1-7 ---- */

/* Rule 7: the message mirrors the condition that explains the state. */
static void set_message(struct decider *d)
{
    const char *type = WS_COND_READY;
    if (d->invalid_reason)
        type = WS_COND_VALID;
    else if (d->st->state == WS_STATE_WAITING_FOR_CAPACITY ||
             (d->st->state == WS_STATE_FAILED &&
              decide_streq(decide_condition_reason(d->st, WS_COND_CAPACITY_AVAILABLE),
                           WS_REASON_CAPACITY_TIMEOUT)))
        type = WS_COND_CAPACITY_AVAILABLE;
    const struct condition *c = workspace_status_condition(d->st, type);
    decide_set_string(d, &d->st->message, c && c->message && c->message[0] ? c->message : NULL);
}

static void decide_live(struct decider *d)
{
    const struct workspace *ws = d->ws;
    struct workspace_status *st = d->st;

    decide_bound_ledger(d);
    if (!ws->has_finalizer)
        decide_push(d, ACTION_ADD_FINALIZER, NULL);
    st->observed_generation = ws->generation;

    int frozen = decide_unreadable(d);
    if (!frozen && decide_class_not_yet_seen(d)) {
        /* Nothing to decide without the class, and nothing to report yet. */
        if (!st->state)
            st->state = WS_STATE_PENDING;
        decide_requeue_at(d, ws->created_ms + CLASS_GRACE_MS);
        set_message(d);
        if (st->state != d->old->state || !st->state_since_ms)
            st->state_since_ms = d->now;
        return;
    }
    if (!frozen)
        decide_validate(d);
    if (d->rc < 0)
        return;
    if (d->invalid_reason) {
        const struct condition *old = workspace_status_condition(d->old, WS_COND_VALID);
        int transition = !old || old->status != COND_FALSE ||
                         !decide_streq(old->reason, d->invalid_reason) ||
                         !decide_streq(old->message, d->invalid_message);
        decide_condition(d, WS_COND_VALID, COND_FALSE, d->invalid_reason, "%s", d->invalid_message);
        if (transition)
            decide_event(d, "Warning", d->invalid_reason, "%s", d->invalid_message);
    } else {
        decide_condition(d, WS_COND_VALID, COND_TRUE, WS_REASON_ACCEPTED,
                         "class \"%s\" accepts the workspace", d->cls->name);
        char *claim = workspace_home_claim_name(ws);
        if (!claim) {
            decide_failed(d, -ENOMEM);
            return;
        }
        decide_set_string(d, &st->home_claim_name, claim);
        decide_home(d, claim);
        free(claim);
    }

    /* Extra pods are removed only when something may be deleted at all. */
    decide_sort_pods(d, !frozen && (ws->paused || !d->invalid_reason));
    /* Kueue evicting a pod its hook holds: a pause, not an interruption. */
    int evicted = !frozen && !ws->paused && !d->invalid_reason && decide_queue_eviction(d);
    if (!frozen && !ws->paused && !evicted)
        decide_note_interruption(d);
    if (frozen) {
        st->state = WS_STATE_FAILED;
    } else if (evicted) {
        /* decide_queue_eviction() set the state; the pause follows. */
    } else if (ws->paused) {
        /* Also when invalid: stopping a pod because its user asked destroys
         * nothing the user did not choose to stop. */
        decide_pause(d);
    } else if (d->invalid_reason && !d->cls && d->keep &&
               decide_streq(d->invalid_reason, WS_REASON_CLASS_NOT_FOUND)) {
        /* The class went while the pod runs: the session runs on, and says
         * so (Valid=False/ClassNotFound); nothing is created or deleted. */
        st->state = d->keep->ready ? WS_STATE_RUNNING
                    : d->old->state == WS_STATE_FAILED || d->old->state == WS_STATE_PAUSED
                        ? WS_STATE_PENDING
                        : d->old->state;
    } else if (d->invalid_reason) {
        /* Create nothing and delete nothing: a class that changed must never
         * take a running session away. Fixing the spec or the class
         * recovers. */
        st->state = WS_STATE_FAILED;
    } else {
        decide_run(d);
    }
    if (st->state != WS_STATE_RUNNING)
        decide_clear_idle(d);
    decide_clear_queue(d);
    decide_keep_ledger(d);
    if (!frozen) {
        decide_prewarm(d);
        decide_prewarm_priority(d);
    }
    if (!frozen && d->cls &&
        (d->cls->snapshot.backend != SNAPSHOT_BACKEND_NONE || d->in->n_snapshots > 0))
        decide_snapshot_retention(d, 0);
    set_message(d);
    decide_available(d);
    /* When the one-word state last changed: what "paused since" or "waiting
     * since" means on a dashboard. */
    if (st->state != d->old->state || !st->state_since_ms)
        st->state_since_ms = d->now;
    /* Every condition was weighed against this generation, changed or not. */
    for (size_t i = 0; i < st->n_conditions; i++)
        st->conditions[i].observed_generation = ws->generation;
}

int workspace_decide(const struct decide_input *in, struct decide_output *out)
{
    *out = (struct decide_output){0};
    struct decider d = {
        .in = in,
        .ws = in->ws,
        .cls = in->cls,
        .old = &in->ws->status,
        .st = &out->status,
        .out = out,
        .now = in->now_ms,
    };
    if (workspace_status_copy(&in->ws->status, &out->status) < 0)
        return -ENOMEM;
    if (in->ws->deletion_ms)
        decide_deleting(&d);
    else
        decide_live(&d);
    free(d.invalid_message);
    if (d.rc < 0) {
        decide_output_clear(out);
        return d.rc;
    }
    /* status.podUID goes along with any other change, never alone: a pod
     * seen changes nothing else only while it waits unjudged, and a pod that
     * goes then is still known from the reconciler's gone_pod. */
    char *pod_uid = out->status.pod_uid;
    out->status.pod_uid = in->ws->status.pod_uid;
    out->status_changed =
        in->ws->deletion_ms ? 0 : !workspace_status_equal(&out->status, &in->ws->status);
    out->status.pod_uid = pod_uid;
    return 0;
}

void decide_output_clear(struct decide_output *out)
{
    if (!out)
        return;
    workspace_status_clear(&out->status);
    for (size_t i = 0; i < out->n_actions && i < DECIDE_MAX_ACTIONS; i++) {
        free(out->actions[i].name);
        free(out->actions[i].reason);
        free(out->actions[i].message);
        free(out->actions[i].snapshot);
        free(out->actions[i].product);
        free(out->actions[i].machine_type);
        free(out->actions[i].gpu_driver);
        free(out->actions[i].node_pool);
        free(out->actions[i].image);
        free(out->actions[i].group);
        free(out->actions[i].occasion);
    }
    *out = (struct decide_output){0};
}

const char *action_type_name(enum action_type t)
{
    switch (t) {
    case ACTION_ADD_FINALIZER:
        return "AddFinalizer";
    case ACTION_CREATE_PVC:
        return "CreatePVC";
    case ACTION_CREATE_POD:
        return "CreatePod";
    case ACTION_DELETE_POD:
        return "DeletePod";
    case ACTION_DELETE_PVC:
        return "DeletePVC";
    case ACTION_RELEASE_PVC:
        return "ReleasePVC";
    case ACTION_REMOVE_FINALIZER:
        return "RemoveFinalizer";
    case ACTION_EVENT:
        return "Event";
    case ACTION_AUTO_PAUSE:
        return "AutoPause";
    case ACTION_AUTO_RESUME:
        return "AutoResume";
    case ACTION_APP_CHECKPOINT:
        return "AppCheckpoint";
    case ACTION_RAISE_PRIORITY:
        return "RaisePriority";
    case ACTION_SNAPSHOT_BEGIN:
        return "SnapshotBegin";
    case ACTION_SNAPSHOT_DELETE:
        return "SnapshotDelete";
    }
    return "Unknown";
}
