#include "workspace/ledger.h"

#include <math.h>
#include <string.h>

static int streq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

int ledger_awaits_taker(const struct workspace_status *s, int64_t now_ms)
{
    const struct workspace_pause_timeline *lp = s->last_pause;
    return s->pauses > s->resumes && lp->accelerator_released_ms && lp->node_name &&
           lp->node_name[0] && s->accelerator_resource && s->accelerator_resource[0] &&
           !lp->accelerator_taken_ms && now_ms < lp->accelerator_released_ms + LEDGER_WATCH_MS;
}

int ledger_awaits_node_removal(const struct workspace_status *s, int64_t now_ms)
{
    const struct workspace_pause_timeline *lp = s->last_pause;
    return s->pauses > s->resumes && lp->accelerator_released_ms && lp->node_name &&
           lp->node_name[0] && !lp->node_removed_ms &&
           now_ms < lp->accelerator_released_ms + LEDGER_WATCH_MS;
}

const char *ledger_watched_node(const struct workspace_status *s)
{
    int64_t at = s->last_pause->accelerator_released_ms;
    return ledger_awaits_taker(s, at) || ledger_awaits_node_removal(s, at)
               ? s->last_pause->node_name
               : NULL;
}

/* p was scheduled before q (q NULL: nothing yet). */
static int earlier(const struct workspace_pod *p, const struct workspace_pod *q)
{
    if (!q)
        return 1;
    if (p->scheduled_ms != q->scheduled_ms)
        return p->scheduled_ms < q->scheduled_ms;
    int c = strcmp(p->ns ? p->ns : "", q->ns ? q->ns : "");
    return c ? c < 0 : strcmp(p->name ? p->name : "", q->name ? q->name : "") < 0;
}

const struct workspace_pod *ledger_taker_pick(const struct workspace *ws, int64_t now_ms,
                                              const struct workspace_pod *best,
                                              const struct workspace_pod *p)
{
    const struct workspace_status *s = &ws->status;
    const struct workspace_pause_timeline *lp = s->last_pause;
    if (!p || !p->name || !ledger_awaits_taker(s, now_ms))
        return best;
    if (streq(p->ns, ws->ns) && streq(p->workspace, ws->name))
        return best; /* its own next pod */
    if (!streq(p->node_name, lp->node_name) || !workspace_pod_requests(p, s->accelerator_resource))
        return best;
    /* Pod times have whole seconds; the release began with the delete. */
    int64_t from = lp->pod_deleted_ms ? lp->pod_deleted_ms : lp->accelerator_released_ms;
    from -= from % 1000;
    if (!p->scheduled_ms || p->scheduled_ms < from)
        return best;
    return earlier(p, best) ? p : best;
}

/* ---- the counters that outlive the history ---- */

int ledger_count_resume(struct workspace_status *s, const char *r)
{
    struct workspace_resume_sources *c = &s->resumes_from;
    int64_t *n = streq(r, "FromSnapshot")     ? &c->from_snapshot
                 : streq(r, "ColdStart")      ? &c->cold_start
                 : streq(r, "FromCheckpoint") ? &c->from_checkpoint
                 : streq(r, "Fresh")          ? &c->fresh
                 : streq(r, "FreshHome")      ? &c->fresh_home
                                              : NULL;
    if (!n)
        return 0;
    (*n)++;
    return 1;
}

int ledger_count_pause(struct workspace_status *s, const char *m)
{
    struct workspace_pause_memories *c = &s->pauses_kept;
    int64_t *n = streq(m, "snapshot")         ? &c->snapshot
                 : streq(m, "files")          ? &c->files
                 : streq(m, "snapshotFailed") ? &c->snapshot_failed
                                              : NULL;
    if (!n)
        return 0;
    (*n)++;
    return 1;
}

int64_t ledger_resumes_from_total(const struct workspace_status *s)
{
    const struct workspace_resume_sources *c = &s->resumes_from;
    return c->from_snapshot + c->cold_start + c->from_checkpoint + c->fresh + c->fresh_home;
}

int64_t ledger_pauses_kept_total(const struct workspace_status *s)
{
    const struct workspace_pause_memories *c = &s->pauses_kept;
    return c->snapshot + c->files + c->snapshot_failed;
}

/* ---- bounds ---- */

static unsigned bound_counts(struct workspace_status *s, const struct ledger_limits *l)
{
    int64_t p = s->pauses > 0 ? s->pauses : 0;
    int64_t r = s->resumes > 0 ? s->resumes : 0;
    /* A resume follows a pause; at most one pause is open. When the counters
     * contradict that, one of them was written by someone else: the
     * timeline says whether a pause is open, and the other counter stays. */
    int open = s->last_pause->requested_ms > s->last_resume->requested_ms;
    if (r > p)
        r = p > 0 && open ? p - 1 : p;
    if (p > r + 1)
        p = r + open;
    /* Counts alternate (pause, resume, pause, ...) and each needs spec.paused
     * changed since the one before, the first one since creation (a pause
     * needs a pod, made only while not paused): count k needs generation
     * k + 1 at least. */
    if (l->created_ms > 0 && l->generation > 0 && p + r > l->generation - 1) {
        int64_t total = l->generation - 1;
        int still_open = p > r && total >= 1;
        r = still_open ? (total - 1) / 2 : total / 2;
        p = r + still_open;
    }
    unsigned fixed = p != s->pauses || r != s->resumes ? LEDGER_FIXED_COUNTS : 0;
    s->pauses = p;
    s->resumes = r;
    return fixed;
}

/* t within [from, to]; 0 (unset) stays. */
static unsigned bound_time(int64_t *t, int64_t from, int64_t to)
{
    int64_t v = *t;
    if (!v)
        return 0;
    if (v < from)
        v = from;
    if (v > to)
        v = to;
    if (v == *t)
        return 0;
    *t = v;
    return LEDGER_FIXED_TIMES;
}

/* v within [0, cap] (NaN is 0). */
static unsigned bound_seconds(double *v, double cap)
{
    double x = isnan(*v) || *v < 0 ? 0 : *v;
    if (x > cap)
        x = cap;
    if (x == *v)
        return 0;
    *v = x;
    return LEDGER_FIXED_SECONDS;
}

/* The n counters at c[0..n-1] not negative and together at most total
 * (not negative): the first ones are kept, the last ones lowered. */
static unsigned bound_outcomes(int64_t *const *c, size_t n, int64_t total)
{
    unsigned fixed = 0;
    int64_t room = total;
    for (size_t i = 0; i < n; i++) {
        int64_t v = *c[i] < 0 ? 0 : *c[i];
        if (v > room)
            v = room;
        if (v != *c[i]) {
            *c[i] = v;
            fixed = LEDGER_FIXED_OUTCOMES;
        }
        room -= v;
    }
    return fixed;
}

unsigned ledger_bound(struct workspace_status *s, const struct ledger_limits *l, int64_t now_ms)
{
    unsigned fixed = bound_counts(s, l);
    /* A resume is counted by its source when it ends, a pause by what it
     * kept when it completes: never more than were counted at all. */
    struct workspace_resume_sources *rf = &s->resumes_from;
    int64_t *const sources[] = {&rf->from_snapshot, &rf->cold_start, &rf->from_checkpoint,
                                &rf->fresh, &rf->fresh_home};
    fixed |= bound_outcomes(sources, sizeof(sources) / sizeof(sources[0]), s->resumes);
    struct workspace_pause_memories *pk = &s->pauses_kept;
    int64_t *const kept[] = {&pk->snapshot, &pk->files, &pk->snapshot_failed};
    fixed |= bound_outcomes(kept, sizeof(kept) / sizeof(kept[0]), s->pauses);
    /* Without the creation time, only what needs no clock: the totals are
     * not negative. */
    double cap = INFINITY;
    if (l->created_ms > 0) {
        int64_t from = l->created_ms - l->created_ms % 1000 - LEDGER_CLOCK_SLACK_MS;
        int64_t to = now_ms > from ? now_ms : from;
        fixed |= bound_time(&s->accelerator_held_since_ms, from, to);
        fixed |= bound_time(&s->last_pause->accelerator_released_ms, from, to);
        int count = l->accelerator_count > 0 ? l->accelerator_count : 0;
        cap = (double)(to - from) / 1000.0 * count;
    }
    fixed |= bound_seconds(&s->accelerator_seconds_held, cap);
    fixed |= bound_seconds(&s->accelerator_seconds_released, cap - s->accelerator_seconds_held);
    /* One record per completed pause, each paused in the workspace's life. */
    for (size_t i = s->n_history; i-- > 0;) {
        int64_t at = s->history[i].pause.requested_ms;
        int outside = l->created_ms > 0 &&
                      (at < l->created_ms - l->created_ms % 1000 - LEDGER_CLOCK_SLACK_MS ||
                       at > now_ms + LEDGER_CLOCK_SLACK_MS);
        if (outside || i >= (size_t)s->pauses) {
            workspace_status_drop_record(s, i);
            fixed |= LEDGER_FIXED_HISTORY;
        }
    }
    return fixed;
}
