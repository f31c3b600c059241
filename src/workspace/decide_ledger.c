#include "decide_internal.h"

/* ---- the GPU-hours ledger (docs/api.md) ---- */

/* A pod holds the workspace's accelerator from the moment it has a node
 * until it is gone (a stopped pod's resources are free again); the earliest
 * scheduled one when there are several. */
static const struct workspace_pod *accelerator_holder(const struct decider *d)
{
    const struct workspace_status *st = d->st;
    const struct workspace_pod *h = NULL;
    if (!st->accelerator_resource || st->accelerator_count <= 0)
        return NULL;
    for (size_t i = 0; i < d->in->n_pods; i++) {
        const struct workspace_pod *p = d->in->pods[i];
        if (!p->name || !p->node_name || !p->node_name[0] || decide_pod_has_stopped(p))
            continue;
        if (!h || (p->scheduled_ms && (!h->scheduled_ms || p->scheduled_ms < h->scheduled_ms)))
            h = p;
    }
    return h;
}

/* accounting.acceleratorHeldSince follows the hold; when it ends its
 * seconds are added up, and a pause that ended it says when it began. */
static void track_hold(struct decider *d)
{
    struct workspace_status *st = d->st;
    const struct workspace_pod *h = accelerator_holder(d);
    int64_t since = st->accelerator_held_since_ms;
    if (h && !since)
        st->accelerator_held_since_ms =
            h->scheduled_ms && h->scheduled_ms <= d->now ? h->scheduled_ms : d->now;
    if (h || !since)
        return;
    int count = st->accelerator_count > 0 ? st->accelerator_count : 1;
    if (d->now > since)
        st->accelerator_seconds_held += (double)(d->now - since) / 1000.0 * count;
    if (decide_in_pause(st) && !st->last_pause->held_since_ms)
        st->last_pause->held_since_ms = since;
    st->accelerator_held_since_ms = 0;
}

/* What the pause kept of the session: its memory in a snapshot, or files
 * (and the application's checkpoint) only; NULL while its snapshot is still
 * InProgress and a backend may yet say Ready (decide_snapshot_settle()). */
static const char *pause_memory(const struct decider *d)
{
    const struct workspace_status *st = d->st;
    const struct workspace_snapshot *sn = st->snapshot;
    int current = decide_snapshot_current(st);
    if (current && decide_streq(sn->phase, "Ready"))
        return "snapshot";
    if (current && decide_streq(sn->phase, "Failed"))
        return "snapshotFailed";
    if (current && decide_streq(sn->phase, "InProgress") && decide_pause_snapshots(d))
        return NULL;
    return "files";
}

static void note_taker(struct decider *d)
{
    struct workspace_pause_timeline *lp = d->st->last_pause;
    const struct workspace_pod *t = d->in->accelerator_taker;
    if (!t || lp->accelerator_taken_ms || ledger_taker_pick(d->ws, d->now, NULL, t) != t)
        return;
    char *by = NULL;
    if (asprintf(&by, "%s/%s", t->ns ? t->ns : "", t->name) < 0) {
        decide_failed(d, -ENOMEM);
        return;
    }
    lp->accelerator_taken_ms = t->scheduled_ms;
    decide_set_string(d, &lp->accelerator_taken_by, by);
    free(by);
}

void decide_keep_ledger(struct decider *d)
{
    struct workspace_status *st = d->st;
    struct workspace_pause_timeline *lp = st->last_pause;
    track_hold(d);
    if (decide_in_pause(st) && lp->requested_ms) {
        const struct workspace_pod *p = d->keep && d->keep->node_name         ? d->keep
                                        : d->leaving && d->leaving->node_name ? d->leaving
                                                                              : NULL;
        if (p && !lp->node_name) {
            decide_set_string(d, &lp->node_name, p->node_name);
            decide_set_string(d, &lp->product,
                              st->accelerator_resource ? st->accelerator_product : NULL);
        }
    }
    /* The pause's snapshot may be settled after the resume began (a crash
     * kept it from the status): the record follows it. */
    const struct workspace_snapshot *sn = st->snapshot;
    if (lp->requested_ms && !lp->snapshot_ready_ms && decide_snapshot_current(st) &&
        decide_streq(sn->phase, "Ready") && sn->ready_ms) {
        lp->snapshot_ready_ms = sn->ready_ms;
        lp->snapshot_seconds = sn->seconds;
    }
    /* Counted by what it kept in the pass that first records it: the
     * status written holds both, so a pass redone after a crash before
     * the write counts it once again from the same status, and a later
     * pass finds it recorded. */
    if (lp->requested_ms && lp->accelerator_released_ms && !lp->memory) {
        decide_set_string(d, &lp->memory, pause_memory(d));
        if (lp->memory)
            ledger_count_pause(st, lp->memory);
    }
    note_taker(d);
    if (d->in->pause_node_absent && ledger_awaits_node_removal(st, d->now))
        lp->node_removed_ms = d->now;
    if (ledger_awaits_taker(st, d->now)) {
        int64_t next = d->now + LEDGER_RECHECK_MS;
        int64_t end = lp->accelerator_released_ms + LEDGER_WATCH_MS;
        decide_requeue_at(d, next < end ? next : end);
    }
    /* One record per completed pause, which then mirrors it and its resume. */
    if (d->rc == 0 && lp->requested_ms && lp->accelerator_released_ms &&
        !workspace_status_last_record(st) && workspace_status_push_history(st) < 0)
        decide_failed(d, -ENOMEM);
    if (d->rc == 0 && workspace_status_sync_history(st) < 0)
        decide_failed(d, -ENOMEM);
}

/* The ledger is in the status, which others than the controller may be
 * allowed to write: its totals are brought within what the workspace's
 * life allows before this pass builds on them (docs/api.md, "Trusting the
 * ledger"), and a correction is reported once. */
void decide_bound_ledger(struct decider *d)
{
    const struct workspace_class *c = d->cls;
    struct ledger_limits l = {
        .created_ms = d->ws->created_ms,
        .generation = d->ws->generation,
        .accelerator_count =
            c && c->has_accelerator ? c->accelerator_count : CLASS_MAX_ACCELERATOR_COUNT,
    };
    unsigned fixed = ledger_bound(d->st, &l, d->now);
    if (!fixed)
        return;
    char what[160] = "";
    static const struct {
        unsigned bit;
        const char *name;
    } parts[] = {
        {LEDGER_FIXED_COUNTS, "pauses/resumes"},
        {LEDGER_FIXED_SECONDS, "accelerator-seconds"},
        {LEDGER_FIXED_TIMES, "hold/release times"},
        {LEDGER_FIXED_HISTORY, "history records"},
        {LEDGER_FIXED_OUTCOMES, "resumesFrom/pausesKept"},
    };
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (fixed & parts[i].bit)
            snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s", what[0] ? ", " : "",
                     parts[i].name);
    decide_event(
        d, "Warning", WS_EVENT_LEDGER_CORRECTED,
        "the status's ledger was out of bounds and was corrected (%s): only the controller "
        "should write the status",
        what);
}
