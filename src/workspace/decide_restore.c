#include "decide_internal.h"

/* A restore that crash-loops is not left looping: the pod goes, once, and
 * the next one starts from files and the checkpoint. */
#define RESTORE_CRASH_RESTARTS 2
/* PodRestored may come after Ready; a pod ready this long without it was
 * cold-started. */
#define RESTORE_CONDITION_GRACE_MS (30 * 1000)

/* ---- the restored application: does the session answer? ---- */

/* After restoreCheckTimeout without an answer, the check waits this much
 * longer (beyond the class's probe timeout) for a round started after it:
 * a controller started late, or a round in flight, still gets its word. */
#define RESTORE_CHECK_LAST_ROUND_MS (5 * 1000)

/* The restored pod's rounds, when the input has them for this pod. */
static const struct restore_check *restore_check_of(const struct decider *d,
                                                    const struct workspace_pod *p)
{
    const struct restore_check *rc = d->in->restore_check;
    return rc && rc->pod && decide_streq(rc->pod, p->name) ? rc : NULL;
}

/* When the application of a pod restored (or to be) from a snapshot
 * answered; 0: not known. */
int64_t restore_answered_ms(const struct decider *d, const struct workspace_pod *p)
{
    const struct restore_check *rc = p->snapshot ? restore_check_of(d, p) : NULL;
    return rc ? rc->answered_ms : 0;
}

static int checks_application(const struct decider *d)
{
    return d->cls && d->cls->activity.application != ACTIVITY_APP_NONE;
}

/* The workspace waits for the application of pod p (snapshot named). */
static void await_application(struct decider *d, const struct workspace_pod *p, const char *fmt,
                              ...) __attribute__((format(printf, 3, 4)));

static void await_application(struct decider *d, const struct workspace_pod *p, const char *fmt,
                              ...)
{
    struct workspace_status *st = d->st;
    d->out->restore_check_wanted = 1;
    st->state = decide_resume_in_progress(st) ? WS_STATE_RESUMING : WS_STATE_PENDING;
    st->waiting_for_capacity_since_ms = 0;
    decide_condition(d, WS_COND_CAPACITY_AVAILABLE, COND_TRUE, WS_REASON_SCHEDULED,
                     "pod %s is scheduled on %s", p->name, decide_node_or_unknown(p));
    va_list ap;
    va_start(ap, fmt);
    char *msg = decide_vformat(d, fmt, ap);
    va_end(ap);
    if (msg)
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_AWAITING_APPLICATION, "%s", msg);
    free(msg);
}

/* What status.snapshot.message begins with once a restore did not answer
 * (the verdict kept with the snapshot). */
#define NO_ANSWER "its application did not answer"

/* The restored application did not answer in time: the same path as a
 * restore that crash-loops (judge_restore): the pod goes, once, the
 * snapshot is marked and deleted, the next pod starts from files. */
static void restore_unresponsive(struct decider *d, const struct workspace_pod *p,
                                 const struct restore_check *rc)
{
    struct workspace_status *st = d->st;
    int again =
        decide_streq(decide_condition_reason(st, WS_COND_RESTORED), WS_REASON_RESTORE_UNRESPONSIVE);
    if (!st->snapshot->restore_failed_ms)
        st->snapshot->restore_failed_ms = d->now;
    decide_own_delete_pod(d, p, 0);
    st->state = decide_resume_in_progress(st) ? WS_STATE_RESUMING : WS_STATE_PENDING;
    decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_POD_TERMINATING,
                     "pod %s is being replaced", p->name);
    if (again) /* decided before; the delete again, in case it was lost */
        return;
    char timeout[32];
    decide_format_duration(d->cls->snapshot.restore_check_timeout_ms, timeout, sizeof(timeout));
    const char *why = rc && rc->error ? rc->error : "no probe round could be made";
    /* Kept with the snapshot: the next pod's message says it even when a
     * later pass no longer sees this verdict in the Restored condition. */
    char kept[MAX_MESSAGE / 2];
    snprintf(kept, sizeof(kept), NO_ANSWER " within %s (%s)", timeout, why);
    decide_set_string(d, &st->snapshot->message, kept);
    decide_condition(
        d, WS_COND_RESTORED, COND_FALSE, WS_REASON_RESTORE_UNRESPONSIVE,
        "pod %s was restored from snapshot %s, but its application did not answer within "
        "%s (%s); a fresh pod starts from files and the checkpoint",
        p->name, p->snapshot, timeout, why);
    char occ[OCCASION_SIZE];
    if (!decide_streq(decide_condition_reason(d->old, WS_COND_RESTORED),
                      WS_REASON_RESTORE_UNRESPONSIVE))
        decide_transition_event(
            d, decide_pod_occasion(p->name, occ), "Warning", WS_EVENT_RESTORE_UNRESPONSIVE,
            "the application of pod %s, restored from snapshot %s, did not answer "
            "within %s (%s); replacing it with a fresh pod from files and the "
            "checkpoint",
            p->name, p->snapshot, timeout, why);
}

/*
 * A pod GKE reports restored (PodRestored=True) counts as FromSnapshot only
 * once its application answers the class's application probe; a class
 * without one counts PodRestored alone. The check's clock starts at
 * PodRestored (the pod's own time, so a controller started anew counts from
 * the same moment). Returns 1 when the pod is not counted yet: waiting for
 * the answer, or replaced because none came.
 */
static int judge_restored_app(struct decider *d, const struct workspace_pod *p)
{
    struct workspace_status *st = d->st;
    const struct workspace_class *c = d->cls;
    const char *reason = decide_condition_reason(st, WS_COND_RESTORED);
    /* Decided already: the session came back, or it did not (the
     * application answered as a new process: the snapshot is marked). */
    if (!checks_application(d) || decide_streq(reason, WS_REASON_FROM_SNAPSHOT) ||
        (decide_streq(reason, WS_REASON_COLD_START) && st->snapshot->restore_failed_ms))
        return 0;
    const struct restore_check *rc = restore_check_of(d, p);
    if (decide_streq(reason, WS_REASON_RESTORE_UNRESPONSIVE) && st->snapshot->restore_failed_ms) {
        restore_unresponsive(d, p, rc);
        return 1;
    }
    if (rc && rc->answered_ms)
        return 0;
    int64_t since = p->restored_ms ? p->restored_ms : p->ready_ms ? p->ready_ms : p->created_ms;
    int64_t deadline = since + c->snapshot.restore_check_timeout_ms;
    int64_t last_word = deadline + c->activity.timeout_ms + RESTORE_CHECK_LAST_ROUND_MS;
    if (d->now >= last_word || (d->now >= deadline && rc && rc->last_round_ms >= deadline)) {
        restore_unresponsive(d, p, rc);
        return 1;
    }
    if (d->now >= deadline)
        d->out->probe_now = 1; /* one more round, started after the deadline */
    decide_requeue_at(d, d->now < deadline ? deadline : last_word);
    char timeout[32];
    decide_format_duration(c->snapshot.restore_check_timeout_ms, timeout, sizeof(timeout));
    decide_condition(d, WS_COND_RESTORED, COND_UNKNOWN, WS_REASON_RESTORING,
                     "pod %s was restored from snapshot %s; waiting for its application to answer "
                     "(at most %s)",
                     p->name, p->snapshot, timeout);
    await_application(d, p,
                      "pod %s was restored from snapshot %s; its application has not "
                      "answered yet",
                      p->name, p->snapshot);
    return 1;
}

int decide_crash_looping(const struct workspace_pod *p)
{
    return p->crash_looping || p->restart_count >= RESTORE_CRASH_RESTARTS;
}

/* What the backend said of a restore it reports failed (PodRestored=False),
 * between before and after, for a message; "" when it reports none. */
static const char *backend_failure(const struct workspace_pod *p, const char *before,
                                   const char *after, char *buf, size_t size)
{
    buf[0] = '\0';
    if (p->restore_failed)
        snprintf(buf, size, "%sthe backend reports the restore failed: %s%s", before,
                 p->restore_failure ? p->restore_failure : "PodRestored=False", after);
    return buf;
}

/* Whether the snapshot is one a pod was restored from unasked (or could have
 * been): status.snapshot.rejectedGroup. */
int decide_snapshot_rejected(const struct workspace_snapshot *sn, const struct snapshot_view *v)
{
    if (!sn->rejected_ms || !sn->rejected_group || v->phase != SNAPSHOT_PHASE_READY ||
        (v->ready_ms && v->ready_ms > sn->rejected_ms))
        return 0;
    return decide_streq(sn->rejected_group, "*") || decide_streq(sn->rejected_group, v->group);
}

/* A pod that was to start from files (no restore asked for) and that the
 * backend restored all the same (PodRestored=True: a policy without the
 * snapshot group, a group label removed), crash-looping or not: its memory
 * is older than the files, so it is not kept. It goes (grace 0); the
 * snapshots it could come from — its group's, or every one when no snapshot
 * has its group (the grouping did not hold) — are rejected and deleted, and
 * the next pod starts from files once they are gone. Returns 1 when the pod
 * is being replaced. */
int decide_judge_unwanted_restore(struct decider *d, const struct workspace_pod *p)
{
    struct workspace_status *st = d->st;
    /* PodRestored=False says a restore was attempted all the same: one
     * that then crash-loops is that restore's crash, not the
     * application's (a failed restore that started fresh is a pod from
     * files as asked). */
    if (p->snapshot || !(p->restored || (p->restore_failed && decide_crash_looping(p))))
        return 0;
    char occ[OCCASION_SIZE];
    if (!p->group && !decide_crash_looping(p)) {
        /* Made by an earlier version, restored back then: the session has
         * gone on in it since, so it is kept and only said. */
        decide_condition(
            d, WS_COND_RESTORED, COND_TRUE, WS_REASON_UNWANTED_RESTORE,
            "pod %s (made by an earlier version) was restored from a snapshot though it was "
            "to start from files: its memory was older than its files when it started; it "
            "is kept, the session went on in it",
            p->name);
        if (!decide_streq(decide_condition_reason(d->old, WS_COND_RESTORED),
                          WS_REASON_UNWANTED_RESTORE))
            decide_transition_event(
                d, decide_pod_occasion(p->name, occ), "Warning", WS_EVENT_UNWANTED_RESTORE,
                "pod %s was restored from a snapshot though it was to start from "
                "files (an earlier version's pod); it is kept",
                p->name);
        return 0;
    }
    int again = decide_streq(decide_condition_reason(d->old, WS_COND_RESTORED),
                             WS_REASON_UNWANTED_RESTORE) &&
                st->snapshot->rejected_ms;
    if (!again) {
        const char *group = "*";
        for (size_t i = 0; p->group && i < d->in->n_snapshots; i++)
            if (decide_streq(d->in->snapshots[i].group, p->group))
                group = p->group;
        decide_set_string(d, &st->snapshot->rejected_group, group);
        st->snapshot->rejected_ms = d->now;
    }
    decide_own_delete_pod(d, p, 0);
    char failed[MAX_MESSAGE / 2];
    backend_failure(p, " (", ")", failed, sizeof(failed));
    decide_condition(
        d, WS_COND_RESTORED, COND_FALSE, WS_REASON_UNWANTED_RESTORE,
        "pod %s was %s from a snapshot by the snapshot backend though it was to "
        "start from files%s%s; its memory is older than the files: it is replaced by a pod "
        "from files and the checkpoint once the snapshots it could come from are deleted",
        p->name, p->restored ? "restored" : "being restored", failed,
        decide_crash_looping(p) ? ", and crash-loops" : "");
    if (!again)
        decide_transition_event(
            d, decide_pod_occasion(p->name, occ), "Warning", WS_EVENT_UNWANTED_RESTORE,
            "pod %s was restored from a snapshot though it was to start from files "
            "(the snapshot backend's policy or the pod's snapshot group did not "
            "hold); replacing it with a pod from files and deleting the snapshots "
            "it could come from",
            p->name);
    if (decide_resume_in_progress(st))
        decide_set_string(d, &st->last_resume->restored_from, NULL);
    st->state = decide_resume_in_progress(st) ? WS_STATE_RESUMING : WS_STATE_PENDING;
    decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_POD_TERMINATING,
                     "pod %s is being replaced", p->name);
    return 1;
}

/* The pod runs without the snapshot's session: Restored=True/ColdStart,
 * detail (" (...)" or "") after the snapshot's name, how in the Event. */
static void say_cold_start(struct decider *d, const struct workspace_pod *p, const char *detail,
                           const char *how)
{
    struct workspace_status *st = d->st;
    decide_condition(d, WS_COND_RESTORED, COND_TRUE, WS_REASON_COLD_START,
                     "pod %s started without the state of snapshot %s%s; it has the files and %s "
                     "to recover from the application's checkpoint",
                     p->name, p->snapshot, detail,
                     d->cls && d->cls->checkpoint_env ? d->cls->checkpoint_env : "the checkpoint");
    char occ[OCCASION_SIZE];
    if (!decide_streq(decide_condition_reason(d->old, WS_COND_RESTORED), WS_REASON_COLD_START))
        decide_transition_event(d, decide_pod_occasion(p->name, occ), "Warning",
                                WS_EVENT_COLD_START,
                                "pod %s was not restored from snapshot %s (%s); the session's "
                                "memory is lost, files and the application's checkpoint remain",
                                p->name, p->snapshot, how);
    if (st->last_resume->requested_ms)
        decide_set_string(d, &st->last_resume->restored_from, WS_REASON_COLD_START);
}

/* The restored pod's application answered as another process than the one
 * the snapshot was taken of: its own start (Jupyter's "started") is not
 * the one recorded before the snapshot. Both must be known to tell. */
static int session_lost(const struct decider *d, const struct workspace_pod *p, char *why,
                        size_t size)
{
    const struct restore_check *rc = restore_check_of(d, p);
    int64_t before = d->st->snapshot->app_started_ms;
    /* The status keeps whole seconds (status.snapshot.appStartedAt): the
     * same process says the same second; another one, started for the
     * restore, a later one. */
    if (!rc || !rc->answered_ms || !rc->app_started_ms || !before ||
        rc->app_started_ms / 1000 == before / 1000)
        return 0;
    char then[TIMEFMT_RFC3339_SIZE], now[TIMEFMT_RFC3339_SIZE];
    timefmt_rfc3339_text(before, then);
    timefmt_rfc3339_text(rc->app_started_ms, now);
    snprintf(why, size,
             " (its application answers as a process started at %s, not the one started at %s "
             "that was paused)",
             now, then);
    return 1;
}

/* How many of the kernels the snapshot's round listed (its hashes,
 * comma-separated) the restored application does not list; -1: cannot
 * tell (either side did not say, or the restored list was cut short of a
 * hash it would hold). */
static int kernels_missing(const char *before, const struct restore_check *rc)
{
    if (!before || !rc->kernels || rc->n_kernels < 0)
        return -1;
    int kept = rc->n_kernels < PROBE_KERNELS_MAX ? rc->n_kernels : PROBE_KERNELS_MAX;
    int missing = 0;
    for (const char *p = before; *p;) {
        char *end = NULL;
        unsigned long h = strtoul(p, &end, 16);
        if (end == p)
            return -1;
        int found = 0;
        for (int i = 0; i < kept && !found; i++)
            found = rc->kernels[i] == (uint32_t)h;
        if (!found && rc->n_kernels > kept && kept > 0 && (uint32_t)h > rc->kernels[kept - 1])
            return -1; /* beyond the smallest the probe kept */
        missing += !found;
        p = *end == ',' ? end + 1 : end;
    }
    return missing;
}

/* What the restored application showed of the session, for Restored's
 * message: its start (the process that was paused) and its kernels. Empty
 * when the class has no probe for it or no round has answered. */
static void application_proof(const struct decider *d, const struct workspace_pod *p, char *out,
                              size_t size)
{
    const struct restore_check *rc = restore_check_of(d, p);
    const struct workspace_snapshot *sn = d->st->snapshot;
    out[0] = '\0';
    if (!rc || !rc->answered_ms)
        return;
    if (!rc->app_started_ms) {
        snprintf(out, size,
                 "; its application answers, but does not say when its process started, so "
                 "that it is the paused one rests on the backend's word");
        return;
    }
    if (!sn->app_started_ms) {
        snprintf(out, size,
                 "; its application answers, but when the paused process started was not "
                 "recorded (no probe had answered before the snapshot was asked for), so that it "
                 "is the paused one rests on the backend's word");
        return;
    }
    char then[TIMEFMT_RFC3339_SIZE];
    timefmt_rfc3339_text(sn->app_started_ms, then);
    int missing = kernels_missing(sn->app_kernels, rc);
    if (missing == 0)
        snprintf(out, size,
                 "; its application answers as the process started at %s that was paused, "
                 "listing the %lld kernel%s it listed before the pause",
                 then, (long long)sn->app_kernel_count, sn->app_kernel_count == 1 ? "" : "s");
    else if (missing > 0)
        snprintf(out, size,
                 "; its application answers as the process started at %s that was paused, but "
                 "%d of the %lld kernels it listed before the pause %s not listed now (shut down "
                 "between the last look and the snapshot?)",
                 then, missing, (long long)sn->app_kernel_count, missing == 1 ? "is" : "are");
    else
        snprintf(out, size,
                 "; its application answers as the process started at %s that was paused", then);
}

/* Returns 1 when the pod is being replaced (nothing more to decide). */
int decide_judge_restore(struct decider *d, const struct workspace_pod *p)
{
    struct workspace_status *st = d->st;
    if (!p->snapshot)
        return 0;
    /* Restored or not: a session that crashes as it comes back is not one
     * to keep restarting from the same memory; nor is one whose container
     * cannot be made from its checkpoint image. */
    if (decide_crash_looping(p) || p->restore_stuck) {
        if (!st->snapshot->restore_failed_ms)
            st->snapshot->restore_failed_ms = d->now;
        /* What the runtime or the backend said: the next pod's message
         * gives it as the reason the memory did not come back. */
        if (p->restore_failure)
            decide_set_string(d, &st->snapshot->message, p->restore_failure);
        decide_own_delete_pod(d, p, 0);
        char failed[MAX_MESSAGE / 2];
        backend_failure(p, "; ", "", failed, sizeof(failed));
        if (p->restore_stuck)
            decide_condition(d, WS_COND_RESTORED, COND_FALSE, WS_REASON_RESTORE_CRASHED,
                             "pod %s could not be restored from snapshot %s%s; a fresh pod "
                             "starts from files and the checkpoint",
                             p->name, p->snapshot, failed);
        else
            decide_condition(d, WS_COND_RESTORED, COND_FALSE, WS_REASON_RESTORE_CRASHED,
                             "pod %s crashed after its restore from snapshot %s (%d restarts)%s; "
                             "a fresh pod starts from files and the checkpoint",
                             p->name, p->snapshot, p->restart_count, failed);
        char occ[OCCASION_SIZE];
        if (!decide_streq(decide_condition_reason(d->old, WS_COND_RESTORED),
                          WS_REASON_RESTORE_CRASHED))
            decide_transition_event(
                d, decide_pod_occasion(p->name, occ), "Warning", WS_EVENT_RESTORE_CRASH_LOOP,
                "pod %s %s its restore from snapshot %s%s; replacing it with a fresh pod from "
                "files and the checkpoint",
                p->name, p->restore_stuck ? "cannot start:" : "crash-loops after", p->snapshot,
                failed);
        st->state = decide_resume_in_progress(st) ? WS_STATE_RESUMING : WS_STATE_PENDING;
        decide_condition(d, WS_COND_READY, COND_FALSE, WS_REASON_POD_TERMINATING,
                         "pod %s is being replaced", p->name);
        return 1;
    }
    if (p->restored) {
        if (judge_restored_app(d, p))
            return 1;
        if (decide_streq(decide_condition_reason(st, WS_COND_RESTORED), WS_REASON_COLD_START) &&
            st->snapshot->restore_failed_ms)
            return 0; /* its application answered as a new process: said before */
        char lost[MAX_MESSAGE / 2];
        if (session_lost(d, p, lost, sizeof(lost))) {
            /* The snapshot does not bring the session back: not used again. */
            if (!st->snapshot->restore_failed_ms)
                st->snapshot->restore_failed_ms = d->now;
            say_cold_start(d, p, lost, "its application is a new process");
            return 0;
        }
        char proof[MAX_MESSAGE / 2];
        application_proof(d, p, proof, sizeof(proof));
        /* Said once the application answered; the rounds end after that,
         * and a pass without them keeps what was said. */
        const struct condition *said = workspace_status_condition(st, WS_COND_RESTORED);
        int keep = !proof[0] && said && decide_streq(said->reason, WS_REASON_FROM_SNAPSHOT) &&
                   said->message && strstr(said->message, "; its application answers");
        if (!keep)
            decide_condition(
                d, WS_COND_RESTORED, COND_TRUE, WS_REASON_FROM_SNAPSHOT,
                "pod %s was restored from snapshot %s: %s back%s", p->name, p->snapshot,
                d->cls && d->cls->has_accelerator ? "memory and GPU state are" : "memory is",
                proof);
        if (st->last_resume->requested_ms)
            decide_set_string(d, &st->last_resume->restored_from, WS_REASON_FROM_SNAPSHOT);
        return 0;
    }
    if (!p->ready)
        return 0;
    int64_t ready = p->ready_ms ? p->ready_ms : d->now;
    /* PodRestored=False: the backend says its restore failed, and the pod
     * runs without the memory (a cold start, said now, with its words). */
    if (!p->restore_failed && d->now < ready + RESTORE_CONDITION_GRACE_MS) {
        decide_requeue_at(d, ready + RESTORE_CONDITION_GRACE_MS);
        /* Whether restored or cold-started, the session is there once the
         * application answers (the class has a probe for it). */
        if (!checks_application(d) || restore_answered_ms(d, p))
            return 0;
        await_application(d, p,
                          "pod %s is ready; waiting for its application to answer and for the "
                          "backend to say whether it was restored from snapshot %s",
                          p->name, p->snapshot);
        return 1;
    }
    char failed[MAX_MESSAGE / 2];
    backend_failure(p, " (", ")", failed, sizeof(failed));
    say_cold_start(d, p, failed,
                   p->restore_failed ? "the backend cold-started it, reporting its restore failed"
                                     : "the backend cold-started it");
    return 0;
}

/* No node can restore the snapshot: nodes carry its accelerator product,
 * none its node's version (GKE restores only onto a node like the one it
 * was taken on: the pool was upgraded since). Writes why. */
int decide_snapshot_unrestorable(const struct decider *d, char *why, size_t size)
{
    const struct decide_restore_nodes *rn = d->in->restore_nodes;
    const struct workspace_snapshot *sn = d->st->snapshot;
    if (!rn || !sn->node_version || rn->with_product == 0 || rn->matching > 0)
        return 0;
    snprintf(why, size,
             "snapshot %s was taken on a node of version %s; none of the %zu nodes with %s runs "
             "it now (they run %s, the node pool was upgraded): GKE restores a snapshot only onto "
             "a node like the one it was taken on, so its memory cannot come back",
             sn->name ? sn->name : sn->attempt, sn->node_version, rn->with_product,
             sn->gpu_product ? sn->gpu_product : "its accelerator",
             rn->seen ? rn->seen : "another");
    return 1;
}

/* The snapshot a resume restores from, or NULL with why (empty when the
 * class has no backend: nothing to explain). docs/snapshots.md. */
/* The snapshot was taken under another class than the workspace's now
 * (spec.className changed while paused). */
static int class_moved(const struct decider *d)
{
    const char *then = d->st->snapshot->class_name;
    return then && !decide_streq(then, d->ws->class_name);
}

const char *decide_restore_snapshot(struct decider *d, char *why, size_t size)
{
    const struct workspace_status *st = d->st;
    const struct workspace_snapshot *sn = st->snapshot;
    const struct snapshot_config *sc = &d->cls->snapshot;
    why[0] = '\0';
    if (sc->backend == SNAPSHOT_BACKEND_NONE) {
        /* The class stopped taking snapshots while the workspace was paused
         * with one: said, never a silent start from files. */
        if (sn->attempt && sn->requested_ms >= st->last_pause->requested_ms &&
            decide_streq(sn->phase, "Ready")) {
            const char *now = d->ws->class_name ? d->ws->class_name : "";
            if (class_moved(d))
                snprintf(why, size,
                         "the workspace's class changed from %s to %s since snapshot %s of the "
                         "last pause, and class %s has no snapshot backend "
                         "(spec.snapshot.backend: None), so the snapshot is not restored",
                         sn->class_name, now, sn->name ? sn->name : sn->attempt, now);
            else
                snprintf(why, size,
                         "class %s no longer has a snapshot backend (spec.snapshot.backend: None), "
                         "so snapshot %s of the last pause is not restored",
                         now, sn->name ? sn->name : sn->attempt);
        }
        return NULL;
    }
    if (!sn->attempt || sn->requested_ms < st->last_pause->requested_ms ||
        !decide_streq(sn->phase, "Ready")) {
        snprintf(why, size, "the last pause has no snapshot%s%s", sn->message ? ": " : "",
                 sn->message ? sn->message : "");
        return NULL;
    }
    const char *name = sn->name ? sn->name : sn->attempt;
    if (sn->restore_failed_ms) {
        const char *verdict = decide_condition_reason(st, WS_COND_RESTORED);
        if (decide_streq(verdict, WS_REASON_RESTORE_UNRESPONSIVE))
            snprintf(why, size, "the application restored from snapshot %s did not answer", name);
        else if (decide_streq(verdict, WS_REASON_COLD_START))
            snprintf(why, size,
                     "the application restored from snapshot %s was a new process, not the "
                     "paused one",
                     name);
        else if (sn->message && !strncmp(sn->message, NO_ANSWER, sizeof(NO_ANSWER) - 1))
            snprintf(why, size, "the restore from snapshot %s failed: %s", name, sn->message);
        else if (sn->message) /* the runtime's or the backend's words */
            snprintf(why, size, "the restore from snapshot %s crashed or could not start: %s", name,
                     sn->message);
        else
            snprintf(why, size, "the restore from snapshot %s crashed", name);
        return NULL;
    }
    /* A checkpoint image is restored by the runtime, a GKE snapshot by
     * GKE: one the class's backend cannot restore is not used. */
    int is_image = sn->image != NULL;
    const struct snapshot_backend_traits *t = snapshot_backend_traits(sc->backend);
    if (!t || is_image != t->restores_from_image) {
        snprintf(why, size,
                 "snapshot %s is %s, and the class's backend (spec.snapshot.backend) is now %s, "
                 "which cannot restore it",
                 name, is_image ? "a checkpoint image" : "not a checkpoint image",
                 t ? t->name : "unknown");
        return NULL;
    }
    const struct snapshot_view *v = d->in->snapshot;
    if (v && decide_streq(v->attempt, sn->attempt) && v->phase == SNAPSHOT_PHASE_NONE) {
        snprintf(why, size, "snapshot %s no longer exists", name);
        return NULL;
    }
    if (v && decide_streq(v->attempt, sn->attempt) && decide_snapshot_rejected(sn, v)) {
        snprintf(why, size, "snapshot %s is deleted: a pod was restored from it unasked", name);
        return NULL;
    }
    /* Aged as GKE ages it: from its last restore, else from Ready. */
    int64_t since = sn->ready_ms;
    if (v && decide_streq(v->attempt, sn->attempt) && v->last_access_ms > since)
        since = v->last_access_ms;
    if (since && d->now - since > sc->last_access_timeout_ms) {
        snprintf(why, size, "snapshot %s expired", name);
        return NULL;
    }
    if (decide_snapshot_unrestorable(d, why, size))
        return NULL;
    /* The restore is pinned to the snapshot's product: any the class still
     * allows. */
    const struct workspace_class *c = d->cls;
    if (c->has_accelerator ? !workspace_class_allows_product(c, sn->gpu_product)
                           : sn->gpu_product != NULL) {
        char products[PRODUCTS_TEXT];
        decide_allowed_products(c, " or ", products, sizeof(products));
        snprintf(why, size, "snapshot %s was taken on %s, the class now asks for %s", name,
                 sn->gpu_product ? sn->gpu_product : "no GPU",
                 c->has_accelerator ? products : "no GPU");
        return NULL;
    }
    char hash[POD_SPEC_HASH_SIZE], with_product[POD_SPEC_HASH_SIZE];
    if (workspace_pod_spec_hash(d->ws, c, hash) < 0 ||
        workspace_pod_spec_hash_with_product(d->ws, c, sn->gpu_product, with_product) < 0) {
        decide_failed(d, -ENOMEM);
        return NULL;
    }
    if (!sn->pod_spec_hash) {
        snprintf(why, size,
                 "the pod template snapshot %s was taken of is not known: the pass that asked "
                 "for it was lost, and its class %s was gone when the snapshot was found",
                 name, sn->class_name ? sn->class_name : "");
        return NULL;
    }
    if (!decide_streq(hash, sn->pod_spec_hash) && !decide_streq(with_product, sn->pod_spec_hash)) {
        if (class_moved(d))
            snprintf(why, size,
                     "the pod template changed since snapshot %s: the workspace's class changed "
                     "from %s to %s",
                     name, st->snapshot->class_name, d->ws->class_name ? d->ws->class_name : "");
        else
            snprintf(why, size,
                     "the pod template changed since snapshot %s (image, resources or class)",
                     name);
        return NULL;
    }
    if (sn->home_claim_uid && !decide_streq(sn->home_claim_uid, st->home->claim_uid)) {
        snprintf(why, size, "snapshot %s was taken with home claim %s, which is gone", name,
                 sn->home_claim_uid);
        return NULL;
    }
    /* A pod of the workspace was ready since the resume: the session went
     * on from the snapshot, and its memory is older than the files. */
    if (!decide_resume_in_progress(st)) {
        snprintf(why, size, "the session went on after snapshot %s was restored", name);
        return NULL;
    }
    return name;
}

/* A backend may restore any new pod of the workspace from a snapshot that
 * matches it (GKE does). A pod from files has a snapshot group no snapshot
 * has, so after a restore crashed it need not wait — unless the snapshot was
 * taken without a group (by an earlier version, under a policy without
 * grouping): then the new pod waits until that snapshot is gone, or it
 * would come back crashing. After a pod was restored unasked, the grouping
 * did not hold: the next one waits until every rejected snapshot is gone.
 * Returns the snapshot waited for, NULL: none. */
const char *decide_snapshot_in_the_way(struct decider *d)
{
    const struct workspace_snapshot *sn = d->st->snapshot;
    for (size_t i = 0; i < d->in->n_snapshots; i++) {
        const struct snapshot_view *v = &d->in->snapshots[i];
        const char *name = v->name ? v->name : v->attempt;
        if (decide_snapshot_rejected(sn, v))
            return name;
        /* Deleting: rejected when it was still Ready. */
        if (sn->rejected_ms && v->deleting_ms && v->ready_ms && v->ready_ms <= sn->rejected_ms &&
            (decide_streq(sn->rejected_group, "*") || decide_streq(sn->rejected_group, v->group)))
            return name;
    }
    if (!sn->restore_failed_ms || sn->group || !d->cls ||
        d->cls->snapshot.backend == SNAPSHOT_BACKEND_NONE)
        return NULL;
    for (size_t i = 0; i < d->in->n_snapshots; i++)
        if (decide_streq(d->in->snapshots[i].attempt, sn->attempt))
            return sn->name ? sn->name : sn->attempt;
    return NULL;
}
