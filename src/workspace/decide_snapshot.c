#include "decide_internal.h"

/* ---- snapshots (docs/snapshots.md) ---- */

/* status.snapshot records a new attempt: its handle and number, when it
 * was asked for, and what a restore from it needs (the source pod's node,
 * GPU product and group, the pod-spec hash, the home claim). The pod's
 * node and product are the status's when the pod is not known. Returns
 * 0, or -1 after decide_failed(). */
/* The application's own start and its kernels, as the probe saw them last
 * (for an attempt a crashed pass began: as it sees them now): what a
 * restore must show again to count as the same session. */
static void record_application(struct decider *d)
{
    struct workspace_snapshot *sn = d->st->snapshot;
    const struct activity_observation *obs = d->in->activity;
    const struct probe_result *r = obs && obs->result.ok ? &obs->result : NULL;
    sn->app_started_ms = r ? r->app_started_ms : 0;
    sn->app_kernel_count = r && r->n_kernels > 0 ? r->n_kernels : 0;
    char kernels[PROBE_KERNELS_MAX * 9 + 1] = "";
    size_t len = 0;
    for (int i = 0; sn->app_kernel_count && i < r->n_kernels && i < PROBE_KERNELS_MAX; i++)
        len += (size_t)snprintf(kernels + len, sizeof(kernels) - len, "%s%08x", i ? "," : "",
                                (unsigned)r->kernels[i]);
    decide_set_string(d, &sn->app_kernels, len ? kernels : NULL);
}

static int record_attempt(struct decider *d, const char *handle, int64_t attempt,
                          int64_t requested_ms, const char *name, const struct workspace_pod *p,
                          const char *group)
{
    struct workspace_status *st = d->st;
    struct workspace_snapshot *sn = st->snapshot;
    /* With the class gone (a pass that began this snapshot died, and the
     * class went before the next one), the template the pod was made of is
     * not known: no hash, and a restore says so. */
    char hash[POD_SPEC_HASH_SIZE];
    if (d->cls && workspace_pod_spec_hash(d->ws, d->cls, hash) < 0) {
        decide_failed(d, -ENOMEM);
        return -1;
    }
    decide_set_string(d, &sn->attempt, handle);
    sn->attempts = attempt;
    decide_set_string(d, &sn->name, name);
    decide_set_string(d, &sn->image, NULL);
    decide_set_string(d, &sn->phase, "InProgress");
    sn->requested_ms = requested_ms;
    sn->ready_ms = 0;
    sn->failed_ms = 0;
    /* A new snapshot: an earlier one's crashed restore says nothing of it. */
    sn->restore_failed_ms = 0;
    sn->seconds = 0;
    decide_set_string(d, &sn->node_name, p ? p->node_name : st->node_name);
    /* What the pod really runs on: a restore is pinned to this product. */
    decide_set_string(d, &sn->gpu_product,
                      p && d->cls ? decide_pod_product(d, p) : st->accelerator_product);
    decide_set_string(d, &sn->pod_spec_hash, d->cls ? hash : NULL);
    decide_set_string(d, &sn->message, NULL);
    decide_set_string(d, &sn->home_claim_uid, st->home->claim_uid);
    decide_set_string(d, &sn->class_name, d->ws->class_name);
    /* What GKE matches a restore on, of the source node as it is now. */
    const struct decide_node *n =
        p && decide_pod_is_scheduled(p) ? decide_node_of(d, p->node_name) : NULL;
    decide_set_string(d, &sn->node_machine_family, n ? n->machine_family : NULL);
    decide_set_string(d, &sn->node_machine_type, n ? n->machine_type : NULL);
    decide_set_string(d, &sn->node_pool, n ? n->node_pool : NULL);
    decide_set_string(d, &sn->node_version, n ? n->version : NULL);
    /* The GPU driver a CUDA checkpoint is restored only under. */
    char driver[64];
    int labelled = n && n->driver_major && n->driver_minor && n->driver_rev &&
                   snprintf(driver, sizeof(driver), "%s.%s.%s", n->driver_major, n->driver_minor,
                            n->driver_rev) < (int)sizeof(driver);
    decide_set_string(d, &sn->node_gpu_driver, labelled ? driver : NULL);
    /* The group the PodSnapshot gets (the backend copies the pod's label).
     * A pod of an earlier version has none: its snapshot is taken as
     * before, under a policy without groups, and restored without one. */
    decide_set_string(d, &sn->group, group);
    record_application(d);
    return 0;
}

static void snapshot_begin(struct decider *d, const struct workspace_pod *p, int64_t attempt)
{
    char handle[NAMES_SIZE];
    /* Derived from counters in the status: after a crash before the status
     * write the same call is made again, never a second snapshot. At most 63
     * characters: GKE puts it in a label value of the PodSnapshot. */
    if (names_snapshot_handle(d->ws->name, d->st->pauses, attempt, handle) < 0) {
        decide_failed(d, -EINVAL);
        return;
    }
    if (record_attempt(d, handle, attempt, d->now, NULL, p, p->group) < 0)
        return;
    struct action *a = decide_push(d, ACTION_SNAPSHOT_BEGIN, handle);
    if (a && p->group && !(a->group = strdup(p->group)))
        decide_failed(d, -ENOMEM);
    decide_condition(d, WS_COND_SNAPSHOT_READY, COND_FALSE, WS_REASON_IN_PROGRESS,
                     "taking snapshot %s of pod %s", handle, p->name);
    decide_requeue_at(d, d->now + d->cls->snapshot.timeout_ms);
}

/* Before each attempt of a pause's snapshot the application is asked to
 * write its checkpoint (the class's checkpoint.request), and the snapshot
 * waits for the answer up to the request's timeout: the checkpoint is then
 * on the home volume before the memory snapshot, and the snapshot's
 * postCheckpoint: stop keeps anything from writing there after it. A
 * failed or unanswered request is reported and the snapshot is taken all
 * the same: the snapshot holds the session; the files keep what the
 * application saved last on its own. The answer is recorded in
 * status.snapshot.appCheckpoint before the snapshot starts, so a
 * controller that restarts in between decides on the record. */
static void snapshot_prepare(struct decider *d, const struct workspace_pod *p, int64_t attempt)
{
    const struct checkpoint_request *cr = &d->cls->checkpoint_request;
    struct workspace_snapshot *sn = d->st->snapshot;
    if (!cr->url_template) {
        snapshot_begin(d, p, attempt);
        return;
    }
    char handle[NAMES_SIZE];
    if (names_snapshot_handle(d->ws->name, d->st->pauses, attempt, handle) < 0) {
        decide_failed(d, -EINVAL);
        return;
    }
    if (!decide_streq(sn->checkpoint_attempt, handle)) {
        decide_set_string(d, &sn->checkpoint_attempt, handle);
        sn->checkpoint_requested_ms = d->now;
        sn->checkpoint_answered_ms = 0;
        decide_set_string(d, &sn->checkpoint_result, NULL);
        decide_set_string(d, &sn->checkpoint_message, NULL);
    }
    if (!sn->checkpoint_result) {
        const struct app_checkpoint_seen *seen = d->in->app_checkpoint;
        if (seen && !decide_streq(seen->attempt, handle))
            seen = NULL;
        int64_t deadline = sn->checkpoint_requested_ms + cr->timeout_ms;
        char limit[32], msg[MAX_MESSAGE];
        decide_format_duration(cr->timeout_ms, limit, sizeof(limit));
        if (seen && seen->answered) {
            int64_t at = seen->answered_ms;
            sn->checkpoint_answered_ms = at < sn->checkpoint_requested_ms
                                             ? sn->checkpoint_requested_ms
                                         : at > d->now ? d->now
                                                       : at;
            decide_set_string(d, &sn->checkpoint_result, seen->written ? "Written" : "Failed");
            snprintf(msg, sizeof(msg), "%s",
                     seen->message && seen->message[0] ? seen->message : "no reason given");
        } else if (d->now >= deadline) {
            sn->checkpoint_answered_ms = d->now;
            decide_set_string(d, &sn->checkpoint_result, "Timeout");
            snprintf(msg, sizeof(msg), "no answer within %s", limit);
        } else {
            /* A request this process does not know (none made yet, or made
             * before a restart) is made; one in flight is waited for. */
            struct action *a = seen ? NULL : decide_push(d, ACTION_APP_CHECKPOINT, handle);
            if (a)
                a->time_ms = deadline;
            decide_condition(
                d, WS_COND_SNAPSHOT_READY, COND_FALSE, WS_REASON_CHECKPOINTING,
                "asking the application in pod %s to write its checkpoint before snapshot "
                "%s (at most %s)",
                p->name, handle, limit);
            decide_requeue_at(d, deadline);
            return;
        }
        if (!decide_streq(sn->checkpoint_result, "Written")) {
            workspace_message_one_line(msg);
            decide_set_string(d, &sn->checkpoint_message, msg);
            int failed_answer = decide_streq(sn->checkpoint_result, "Failed");
            decide_transition_event(
                d, handle, "Warning",
                failed_answer ? WS_EVENT_CHECKPOINT_FAILED : WS_EVENT_CHECKPOINT_TIMEOUT,
                "the application in pod %s did not confirm its checkpoint before "
                "snapshot %s: %s; taking the snapshot anyway (a resume from files "
                "gets what the application saved last on its own)",
                p->name, handle, msg);
        }
    }
    snapshot_begin(d, p, attempt);
}

/* The pause's attempt: status.snapshot was started for the open pause (or
 * the last one). */
int decide_snapshot_current(const struct workspace_status *st)
{
    const struct workspace_snapshot *sn = st->snapshot;
    return sn->attempt && sn->requested_ms >= st->last_pause->requested_ms;
}

/* A snapshot still being taken for a pause whose class has no backend any
 * more (changed or deleted while the pause ran) is bounded by this. */
#define ORPHAN_SNAPSHOT_TIMEOUT_MS (15 * 60 * 1000)

int decide_pause_snapshots(const struct decider *d)
{
    if (d->cls && d->cls->snapshot.backend != SNAPSHOT_BACKEND_NONE)
        return 1;
    return decide_in_pause(d->st) && decide_snapshot_current(d->st);
}

/* The class still takes snapshots (a retry is possible). */
static int class_snapshots(const struct decider *d)
{
    return d->cls && d->cls->snapshot.backend != SNAPSHOT_BACKEND_NONE;
}

static int64_t snapshot_timeout_ms(const struct decider *d)
{
    return class_snapshots(d) ? d->cls->snapshot.timeout_ms : ORPHAN_SNAPSHOT_TIMEOUT_MS;
}

/* A backend the class does not name (it changed, or is gone) may never be
 * able to say what it holds (it cannot start): the pause waits for it no
 * longer than a snapshot of such a workspace may take. */
static int unknown_waited_out(const struct decider *d)
{
    int64_t since = d->st->last_pause->requested_ms;
    return !class_snapshots(d) && since && d->now >= since + snapshot_timeout_ms(d);
}

/* The pause the next attempt is for and its number: the open pause (its
 * attempt after the one the status holds for it), or the next one. */
static int next_attempt_of(const char *name, const struct workspace_status *st, int open,
                           char out[NAMES_SIZE], int64_t *ret_attempt)
{
    int64_t pause = open ? st->pauses : st->pauses + 1;
    int64_t attempt = open && decide_snapshot_current(st) ? st->snapshot->attempts + 1 : 1;
    if (names_snapshot_handle(name, pause, attempt, out) < 0)
        return -EINVAL;
    if (ret_attempt)
        *ret_attempt = attempt;
    return 1;
}

int workspace_snapshot_next_attempt(const struct workspace *ws, char out[NAMES_SIZE])
{
    int open = decide_in_pause(&ws->status);
    if (!ws->name || (!open && !ws->paused))
        return 0;
    return next_attempt_of(ws->name, &ws->status, open, out, NULL);
}

/* The pod named name among the workspace's pods, or the one the pod cache
 * dropped last; NULL: none. */
static const struct workspace_pod *pod_named(const struct decider *d, const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < d->in->n_pods; i++)
        if (decide_streq(d->in->pods[i]->name, name))
            return d->in->pods[i];
    const struct workspace_pod *g = d->in->gone_pod;
    return g && decide_streq(g->name, name) ? g : NULL;
}

/* Whether v, found under a name this workspace's counters give, was asked
 * for by another Workspace of the same name (deleted and made again) or of
 * another pod than the live one of its name: never this pause's, whatever
 * its phase. why: what it belongs to, for the messages. */
int decide_snapshot_foreign(const struct decider *d, const struct snapshot_view *v, char *why,
                            size_t size)
{
    if (v->owner_uid && d->ws->uid && !decide_streq(v->owner_uid, d->ws->uid)) {
        snprintf(why, size,
                 "it was taken for an earlier workspace of this name (uid %s), and waits to be "
                 "deleted with it",
                 v->owner_uid);
        return 1;
    }
    const struct workspace_pod *p = v->pod_uid ? pod_named(d, v->pod) : NULL;
    if (p && p->uid && !decide_streq(p->uid, v->pod_uid)) {
        snprintf(why, size, "it was taken of an earlier pod named %s (uid %s), not of pod uid %s",
                 v->pod, v->pod_uid, p->uid);
        return 1;
    }
    return 0;
}

int decide_snapshot_recover(struct decider *d)
{
    struct workspace_status *st = d->st;
    struct workspace_snapshot *sn = st->snapshot;
    /* Also when the class no longer takes snapshots or is gone: a pass
     * that began this pause's snapshot may have died before the change. */
    if (!decide_in_pause(st))
        return 0;
    const struct snapshot_view *v = d->in->next_attempt;
    char handle[NAMES_SIZE];
    int64_t attempt = 0;
    if (!v || next_attempt_of(d->ws->name, st, 1, handle, &attempt) != 1 ||
        !decide_streq(v->attempt, handle))
        return 0;
    if (v->unknown) {
        if (unknown_waited_out(d))
            return 0;
        decide_requeue_at(d, d->now + SNAPSHOT_UNKNOWN_RECHECK_MS);
        return 1;
    }
    if (v->phase == SNAPSHOT_PHASE_NONE)
        return 0;
    /* Asked of another pod, or for another workspace of this name: not
     * this pause's (a name used before). */
    const char *pod_name = v->pod ? v->pod : st->pod_name;
    char why[MAX_MESSAGE / 2];
    if ((v->pod && st->pod_name && !decide_streq(v->pod, st->pod_name)) ||
        decide_snapshot_foreign(d, v, why, sizeof(why)))
        return 0;
    const struct workspace_pod *p = pod_named(d, pod_name);
    int64_t asked = v->requested_ms && v->requested_ms <= d->now ? v->requested_ms : d->now;
    if (record_attempt(d, handle, attempt, asked, v->name, p,
                       v->group ? v->group
                       : p      ? p->group
                                : NULL) < 0)
        return 0;
    /* The application was asked for this attempt, and its answer was lost
     * with the pass: the snapshot went ahead, as it does on any answer. */
    if (decide_streq(sn->checkpoint_attempt, handle) && !sn->checkpoint_result) {
        sn->checkpoint_answered_ms = asked;
        decide_set_string(d, &sn->checkpoint_result, "Unknown");
        decide_set_string(d, &sn->checkpoint_message,
                          "the answer was not recorded (the controller restarted before its "
                          "status write); the snapshot was taken");
    }
    /* The pause was asked for by the time its snapshot was: a pause counted
     * again after the crash keeps the first pass's time. */
    struct workspace_pause_timeline *lp = st->last_pause;
    if (lp->requested_ms > asked) {
        if (lp->work_ended_ms == lp->requested_ms)
            lp->work_ended_ms = asked;
        lp->requested_ms = asked;
    }
    decide_condition(d, WS_COND_SNAPSHOT_READY, COND_FALSE, WS_REASON_IN_PROGRESS,
                     "taking snapshot %s of pod %s", handle, pod_name ? pod_name : "?");
    decide_requeue_at(d, asked + snapshot_timeout_ms(d));
    return 0;
}

/* Whether attempt is one of the workspace's latest pause's: retention
 * never counts such a snapshot out. */
static int of_latest_pause(const struct decider *d, const char *attempt)
{
    const struct workspace_status *st = d->st;
    if (!attempt || st->pauses <= 0)
        return 0;
    int64_t last = st->snapshot->attempts + 1;
    if (last < 1 || last > 1000)
        last = 1;
    for (int64_t k = 1; k <= last; k++) {
        char handle[NAMES_SIZE];
        if (names_snapshot_handle(d->ws->name, st->pauses, k, handle) >= 0 &&
            decide_streq(handle, attempt))
            return 1;
    }
    return 0;
}

/* p completed (phase Succeeded) after a snapshot of it was asked for, with
 * a backend whose snapshots stop the pod (GKE: postCheckpoint: stop): the
 * snapshot ended it, not a failure or an eviction. */
int decide_snapshot_stopped(const struct decider *d, const struct workspace_pod *p,
                            const struct workspace_status *st)
{
    const struct workspace_snapshot *sn = st->snapshot;
    return decide_pause_snapshots(d) && p && p->name && decide_streq(p->phase, "Succeeded") &&
           decide_streq(p->name, st->pod_name) && sn->attempt && sn->requested_ms &&
           (!p->created_ms || sn->requested_ms >= p->created_ms);
}

/* The backend's view of status.snapshot.attempt (one decide_snapshot_recover()
 * recorded in this pass is the next attempt's), NULL: nothing seen. */
static const struct snapshot_view *snapshot_seen(const struct decider *d)
{
    const char *attempt = d->st->snapshot->attempt;
    const struct snapshot_view *v = d->in->snapshot;
    if (v && decide_streq(v->attempt, attempt))
        return v;
    v = d->in->next_attempt;
    return v && decide_streq(v->attempt, attempt) ? v : NULL;
}

int decide_snapshot_pending_for(const struct decider *d, const struct workspace_pod *p)
{
    const struct snapshot_view *v = d->in->next_attempt;
    char handle[NAMES_SIZE];
    return d->ws->paused && v &&
           (v->unknown ? !unknown_waited_out(d) : v->phase != SNAPSHOT_PHASE_NONE) && p &&
           p->name && decide_streq(p->phase, "Succeeded") &&
           decide_streq(p->name, d->old->pod_name) && (!v->pod || decide_streq(v->pod, p->name)) &&
           workspace_snapshot_next_attempt(d->ws, handle) == 1 && decide_streq(v->attempt, handle);
}

/* Brings an attempt the status holds InProgress up to what the backend's
 * objects say: Ready (with the backend's ready time), Failed, or timed out.
 * This is the record's only source: a controller that died after acting on
 * a Ready snapshot (the pod's delete) and before its status write left
 * InProgress behind, and the next one reads the truth here, with the pod
 * running or gone (pod_kept: a pod still runs for it to retry on;
 * FOLLOW_POD_RESTARTED: one runs, but its container started after the
 * attempt was asked for, so there is no session left to retry). A
 * backend that cannot say yet (its caches have not synced) decides
 * nothing. pod_name: the snapshot's pod, for the messages. */
#define FOLLOW_POD_RESTARTED 2

static void snapshot_follow(struct decider *d, const char *pod_name, int pod_kept)
{
    int64_t timeout_ms = snapshot_timeout_ms(d);
    int without_memory = !class_snapshots(d) ||
                         d->cls->snapshot.on_failure == SNAPSHOT_ON_FAILURE_PAUSE_WITHOUT_MEMORY;
    struct workspace_status *st = d->st;
    struct workspace_snapshot *sn = st->snapshot;
    if (decide_streq(sn->phase, "Ready") || decide_streq(sn->phase, "Failed"))
        return;
    const struct snapshot_view *v = snapshot_seen(d);
    if (v && v->unknown) {
        decide_requeue_at(d, d->now + SNAPSHOT_UNKNOWN_RECHECK_MS);
        return;
    }
    /* The name was taken before this pause asked for it: what is there is
     * not its snapshot, and the attempt failed at once (a retry gets a name
     * of its own). */
    char foreign[MAX_MESSAGE / 2] = "";
    if (v && v->phase != SNAPSHOT_PHASE_NONE &&
        decide_snapshot_foreign(d, v, foreign, sizeof(foreign)))
        v = NULL;
    if (v && v->phase == SNAPSHOT_PHASE_READY) {
        int64_t ready = v->ready_ms > sn->requested_ms ? v->ready_ms : d->now;
        decide_set_string(d, &sn->phase, "Ready");
        decide_set_string(d, &sn->name, v->name);
        decide_set_string(d, &sn->image, v->image);
        sn->ready_ms = ready;
        sn->seconds = (double)(ready - sn->requested_ms) / 1000.0;
        decide_condition(d, WS_COND_SNAPSHOT_READY, COND_TRUE, WS_REASON_READY,
                         "snapshot %s is ready (%.1fs)", v->name ? v->name : sn->attempt,
                         sn->seconds);
        decide_transition_event(d, sn->attempt, "Normal", WS_EVENT_SNAPSHOT_READY,
                                "snapshot %s of pod %s is ready after %.1fs",
                                v->name ? v->name : sn->attempt, pod_name ? pod_name : "?",
                                sn->seconds);
        return;
    }
    if (v && v->name)
        decide_set_string(d, &sn->name, v->name);
    int timed_out = d->now >= sn->requested_ms + timeout_ms;
    if (!timed_out && !foreign[0] && !(v && v->phase == SNAPSHOT_PHASE_FAILED)) {
        decide_requeue_at(d, sn->requested_ms + timeout_ms);
        if (v && v->checkpoint_retries > 0) {
            char limit[32];
            decide_format_duration(timeout_ms, limit, sizeof(limit));
            decide_condition(d, WS_COND_SNAPSHOT_READY, COND_FALSE, WS_REASON_IN_PROGRESS,
                             "taking snapshot %s of pod %s; the backend retries its checkpoint "
                             "(retry %lld), within the snapshot timeout of %s",
                             sn->attempt, pod_name ? pod_name : "?",
                             (long long)v->checkpoint_retries, limit);
        }
        return;
    }
    char limit[32];
    decide_format_duration(timeout_ms, limit, sizeof(limit));
    const char *reason = foreign[0] || (v && v->phase == SNAPSHOT_PHASE_FAILED) ? WS_REASON_FAILED
                                                                                : WS_REASON_TIMEOUT;
    char msg[MAX_MESSAGE];
    if (foreign[0])
        snprintf(msg, sizeof(msg), "snapshot %s failed: a snapshot of that name exists, and %s",
                 sn->attempt, foreign);
    else if (decide_streq(reason, WS_REASON_FAILED))
        snprintf(msg, sizeof(msg), "snapshot %s failed: %s", sn->attempt,
                 v->message && v->message[0] ? v->message : "no reason given");
    else
        snprintf(msg, sizeof(msg), "snapshot %s was not ready within %s", sn->attempt, limit);
    workspace_message_one_line(msg);
    decide_set_string(d, &sn->phase, "Failed");
    decide_set_string(d, &sn->message, msg);
    sn->failed_ms = d->now;
    decide_condition(d, WS_COND_SNAPSHOT_READY, COND_FALSE, reason, "%s", msg);
    decide_transition_event(
        d, sn->attempt, "Warning",
        decide_streq(reason, WS_REASON_FAILED) ? WS_EVENT_SNAPSHOT_FAILED
                                               : WS_EVENT_SNAPSHOT_TIMEOUT,
        "%s; %s", msg,
        !pod_kept ? "no running pod is left to snapshot: pausing without memory "
                    "(files and the application's checkpoint)"
        : pod_kept == FOLLOW_POD_RESTARTED
            ? "its container started again after the snapshot was asked for, so the session "
              "it was to keep is gone: pausing without memory (files and the application's "
              "checkpoint)"
        : !d->ws->paused ? "the workspace was unpaused: the pod runs on"
        : without_memory ? "pausing without memory (files and the application's checkpoint)"
                         : "the pod keeps running and the snapshot is tried again "
                           "after retryAfter (a pod the snapshot already stopped cannot "
                           "be snapshotted again: the pause then goes on without "
                           "memory)");
}

/* Unpaused after the pause's snapshot was asked for, its pod still
 * running: the backend goes on taking it (a trigger is not called back;
 * GKE's postCheckpoint: stop then ends the pod, and a new one follows).
 * The record follows it to Ready or Failed, and while it runs
 * SnapshotReady says the pause it was taken for is over. */
void decide_snapshot_after_unpause(struct decider *d, const struct workspace_pod *p)
{
    const struct workspace_status *st = d->st;
    if (!decide_pause_snapshots(d) || !decide_snapshot_current(st) ||
        !decide_streq(st->snapshot->phase, "InProgress"))
        return;
    snapshot_follow(d, p->name, 1);
    if (decide_streq(st->snapshot->phase, "InProgress"))
        decide_condition(
            d, WS_COND_SNAPSHOT_READY, COND_FALSE, WS_REASON_IN_PROGRESS,
            "snapshot %s was asked for before the pause was cancelled; the backend goes on "
            "taking it (GKE stops pod %s at its checkpoint and a new pod follows)",
            st->snapshot->attempt, p->name);
}

/* With no pod of the pause left running, what became of its snapshot is
 * read from the backend (a crash may have kept it from the status). */
void decide_snapshot_settle(struct decider *d)
{
    const struct workspace_status *st = d->st;
    if (!decide_pause_snapshots(d) || !decide_snapshot_current(st) ||
        !decide_streq(st->snapshot->phase, "InProgress"))
        return;
    const char *pod = d->leaving ? d->leaving->name : st->pod_name;
    snapshot_follow(d, pod, 0);
}

/* How often a pause waiting for older snapshots to go looks again (the
 * snapshot cache's changes wake it sooner). */
#define STORAGE_CLEARING_RECHECK_MS 5000

/* The class's storage config is not the one the workspace's snapshots are
 * held under (it changed while they were kept). The backend frees a
 * snapshot's files through the storage config its policy names, and the
 * pause's snapshot brings the policy to the class's: the older snapshots
 * go first (the running pod needs none of them), and the snapshot waits
 * for them, up to the class's snapshot timeout from the pause's request.
 * Past that it is taken all the same, and a Warning names those still
 * held. Returns 1 while the pause waits (the pod keeps running). */
static int storage_clearing(struct decider *d, const struct workspace_pod *p)
{
    const struct snapshot_config *sc = &d->cls->snapshot;
    const char *held = d->in->snapshot_storage;
    const char *wanted = sc->storage_config_name ? sc->storage_config_name : "";
    if (!held || strcmp(held, wanted) == 0 || d->in->n_snapshots == 0)
        return 0;
    char names[MAX_MESSAGE / 2] = "";
    size_t n = d->in->n_snapshots;
    for (size_t i = 0; i < n && strlen(names) < sizeof(names) - 80; i++) {
        const char *name = d->in->snapshots[i].name ? d->in->snapshots[i].name : "?";
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", names[0] ? ", " : "",
                 name);
    }
    int64_t deadline = d->st->last_pause->requested_ms + sc->timeout_ms;
    char handle[NAMES_SIZE];
    if (names_snapshot_handle(d->ws->name, d->st->pauses, 1, handle) < 0) {
        decide_failed(d, -EINVAL);
        return 1;
    }
    if (d->now >= deadline) {
        decide_transition_event(
            d, handle, "Warning", WS_EVENT_SNAPSHOT_STORAGE_CHANGED,
            "the class's storage config changed from \"%s\" to \"%s\"; %zu older snapshot(s) "
            "kept under \"%s\" were not gone within the snapshot timeout (%s); taking the "
            "snapshot under \"%s\" all the same: their files may be left in the old storage "
            "when they go",
            held, wanted, n, held, names, wanted);
        return 0;
    }
    d->clearing_storage = 1;
    decide_condition(d, WS_COND_SNAPSHOT_READY, COND_FALSE, WS_REASON_STORAGE_CHANGING,
                     "the class's storage config changed from \"%s\" to \"%s\": deleting "
                     "the %zu snapshot(s) kept under \"%s\" (%s) before pod %s is snapshotted "
                     "under \"%s\"; the pod keeps running",
                     held, wanted, n, held, names, p->name, wanted);
    decide_requeue_at(d, d->now + STORAGE_CLEARING_RECHECK_MS < deadline
                             ? d->now + STORAGE_CLEARING_RECHECK_MS
                             : deadline);
    return 1;
}

/* Whether the pod may be deleted for this pause: with a backend, only once
 * its snapshot is Ready, or when it failed and the class says to pause
 * without memory. Never before. */
int decide_snapshot_allows_delete(struct decider *d, const struct workspace_pod *p)
{
    const struct snapshot_config *sc = d->cls ? &d->cls->snapshot : NULL;
    struct workspace_status *st = d->st;
    struct workspace_snapshot *sn = st->snapshot;
    /* A class changed (or gone) while its pause's snapshot is taken: the
     * pod still waits for that snapshot, and is never snapshotted again. */
    if (!decide_pause_snapshots(d) || !decide_in_pause(st))
        return 1;
    int current = decide_snapshot_current(st);
    int running = decide_pod_is_scheduled(p) && p->ready;
    /* The container started again after the attempt was asked for (a crash
     * restarted it, or the backend's stop did under a restart policy that
     * restarts): the session the pause was for is gone, and a new attempt
     * would keep a fresh process as if it were that session. */
    int restarted = current && p->started_ms > sn->requested_ms;
    if (current)
        snapshot_follow(d, p->name, running && restarted ? FOLLOW_POD_RESTARTED : running);
    if (!running)
        return 1; /* nothing running, nothing to keep */
    if (!current) {
        if (!storage_clearing(d, p))
            snapshot_prepare(d, p, 1);
        return 0;
    }
    if (decide_streq(sn->phase, "Ready"))
        return 1;
    if (!decide_streq(sn->phase, "Failed"))
        return 0; /* snapshot_follow() asked for the re-check */
    if (!class_snapshots(d) || sc->on_failure == SNAPSHOT_ON_FAILURE_PAUSE_WITHOUT_MEMORY)
        return 1;
    if (restarted) {
        char at[TIMEFMT_RFC3339_SIZE];
        timefmt_rfc3339_text(p->started_ms, at);
        decide_condition(d, WS_COND_SNAPSHOT_READY, COND_FALSE, WS_REASON_FAILED,
                         "%s; pod %s's container started again at %s, after the snapshot was "
                         "asked for: its session is gone, so no new snapshot is taken",
                         sn->message ? sn->message : "the snapshot failed", p->name, at);
        /* Restarted while the retry waited: said once (the failure's own
         * Event said it when the restart came first). */
        char occ[OCCASION_SIZE];
        snprintf(occ, sizeof(occ), "restarted-%s", sn->attempt);
        if (!decide_streq(d->old->snapshot->phase, "InProgress"))
            decide_transition_event(
                d, occ, "Warning", WS_EVENT_SNAPSHOT_FAILED,
                "pod %s's container started again at %s, after snapshot %s was asked for: the "
                "session it was to keep is gone; pausing without memory (files and the "
                "application's checkpoint)",
                p->name, at, sn->attempt);
        return 1;
    }
    /* Retry: a new attempt once retryAfter has passed since the failure. */
    int64_t failed_at = sn->failed_ms ? sn->failed_ms : d->now;
    if (d->now >= failed_at + sc->retry_after_ms)
        snapshot_prepare(d, p, sn->attempts + 1);
    else
        decide_requeue_at(d, failed_at + sc->retry_after_ms);
    return 0;
}

/* ---- snapshot retention ---- */

/* A snapshot still in the backend's finalizer after this is reported. */
#define SNAPSHOT_STUCK_MS (5 * 60 * 1000)
#define MAX_SNAPSHOT_DELETES 4

static int newer_snapshot(const struct snapshot_view *a, const struct snapshot_view *b)
{
    return a->ready_ms > b->ready_ms;
}

/* Keep the class's number of snapshots (the one a pause or resume may still
 * need first, then the newest), drop the rest and the expired ones; say when
 * one is stuck in its finalizer. When deleting, every one goes and nothing
 * waits for them. Returns how many it would drop but left for a later pass
 * (at most MAX_SNAPSHOT_DELETES go per pass). */
size_t decide_snapshot_retention(struct decider *d, int deleting)
{
    const struct snapshot_view *all = d->in->snapshots;
    size_t n = d->in->n_snapshots;
    const struct snapshot_config *sc = d->cls ? &d->cls->snapshot : NULL;
    const struct workspace_snapshot *sn = d->st->snapshot;
    /* The one a pause is taking or a resume may use stays, unless it expired
     * or its restore crashed. */
    int pausing = d->ws->paused || decide_in_pause(d->st) || decide_resume_in_progress(d->st);
    size_t deletes = 0, kept = 0, left = 0;
    char stuck[MAX_MESSAGE] = "";
    for (size_t i = 0; i < n && d->rc == 0; i++) {
        const struct snapshot_view *v = &all[i];
        if (v->deleting_ms) {
            if (d->now - v->deleting_ms >= SNAPSHOT_STUCK_MS && strlen(stuck) < 512)
                snprintf(stuck + strlen(stuck), sizeof(stuck) - strlen(stuck), "%s%s",
                         stuck[0] ? ", " : "", v->name ? v->name : "?");
            continue;
        }
        char why[MAX_MESSAGE / 2];
        /* An earlier workspace's of this name: its owner's deletion takes it,
         * and it goes now. */
        int drop =
            deleting || d->clearing_storage || decide_snapshot_foreign(d, v, why, sizeof(why));
        if (!drop && sc && sc->backend == SNAPSHOT_BACKEND_NONE) {
            /* The class takes snapshots no more: none can be restored under
             * it. Kept while a pause is open (the class may take its backend
             * back before the resume), removed once the resume started. */
            drop = !d->ws->paused && !decide_in_pause(d->st);
        } else if (!drop && sc) {
            int current = sn->attempt && decide_streq(v->attempt, sn->attempt);
            /* GKE's clock: from the last restore, else from Ready
             * (retentionConfig.lastAccessTimeout, docs/snapshots.md). */
            int64_t since = v->last_access_ms > v->ready_ms ? v->last_access_ms : v->ready_ms;
            int expired = since && d->now - since > sc->last_access_timeout_ms;
            int in_use = current && pausing && !sn->restore_failed_ms;
            size_t rank = 0; /* newer live ones */
            for (size_t k = 0; k < n; k++)
                if (k != i && !all[k].deleting_ms && all[k].phase == SNAPSHOT_PHASE_READY &&
                    newer_snapshot(&all[k], v))
                    rank++;
            if (v->phase == SNAPSHOT_PHASE_IN_PROGRESS && current)
                continue; /* being taken */
            /* A crashed restore's group goes with it (the snapshots of that
             * session up to then). */
            int crashed_group = sn->restore_failed_ms && sn->group &&
                                decide_streq(v->group, sn->group) &&
                                v->phase == SNAPSHOT_PHASE_READY &&
                                (!v->ready_ms || v->ready_ms <= sn->restore_failed_ms);
            /* The latest pause's Ready snapshot is what its resume is for,
             * whatever the status recorded: never counted out by keep. */
            int latest = v->phase == SNAPSHOT_PHASE_READY && of_latest_pause(d, v->attempt);
            drop = decide_snapshot_rejected(sn, v) ||
                   (!in_use && (expired || (current && sn->restore_failed_ms) || crashed_group ||
                                v->phase == SNAPSHOT_PHASE_FAILED ||
                                (!latest && rank + (in_use ? 0 : 1) > (size_t)sc->keep)));
            if (!drop)
                kept++;
        }
        if (drop && v->name && deletes < MAX_SNAPSHOT_DELETES) {
            decide_push(d, ACTION_SNAPSHOT_DELETE, v->name);
            deletes++;
        } else if (drop && v->name) {
            left++;
        }
    }
    if (deleting)
        return left;
    const char *type = WS_COND_SNAPSHOT_CLEANUP;
    const struct condition *old = workspace_status_condition(d->old, type);
    if (stuck[0]) {
        decide_condition(d, type, COND_FALSE, WS_REASON_FINALIZER_STUCK,
                         "still being deleted after 5m (the backend's finalizer holds): %s", stuck);
        if (!old || old->status != COND_FALSE)
            decide_event(d, "Warning", WS_EVENT_SNAPSHOT_STUCK,
                         "snapshots still being deleted after 5m: %s; check the snapshot backend",
                         stuck);
    } else {
        workspace_status_remove_condition(d->st, type);
    }
    return left;
}
