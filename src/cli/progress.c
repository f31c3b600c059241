#include "cli/progress.h"

#include <stdio.h>
#include <string.h>

#include "cli/ledger.h"
#include "cli/timetext.h"
#include "workspace/vocabulary.h"

static int streq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

void progress_begin(struct progress *p, enum progress_goal goal, const struct workspace *ws,
                    int64_t now)
{
    const struct workspace_status *st = &ws->status;
    *p = (struct progress){.goal = goal, .started_ms = now, .snapshot_seconds = -1};
    p->generation = ws->generation;
    p->pauses_before = st->pauses;
    p->resumes_before = st->resumes;
    /* A pause is open while pauses > resumes (docs/state-machine.md). */
    int open = p->pauses_before > p->resumes_before;
    if (goal == PROGRESS_RESUME)
        p->counted_expected = open;
    /* Following a resume already counted and not ready yet: that one. */
    if (goal == PROGRESS_RESUME && !open && p->resumes_before > 0 &&
        st->last_resume->requested_ms && !st->last_resume->ready_ms) {
        p->counted_expected = 1;
        p->resumes_before--;
    }
}

static const char *cond_reason(const struct workspace *ws, const char *type)
{
    const struct condition *c = workspace_status_condition(&ws->status, type);
    return c ? c->reason : NULL;
}

static const char *cond_message(const struct workspace *ws, const char *type)
{
    const struct condition *c = workspace_status_condition(&ws->status, type);
    return c ? c->message : NULL;
}

static int set(struct progress *p, enum progress_phase phase, const char *detail)
{
    char d[sizeof(p->detail)];
    snprintf(d, sizeof(d), "%s", detail ? detail : "");
    int changed = phase != p->phase || strcmp(d, p->detail) != 0;
    p->phase = phase;
    memcpy(p->detail, d, sizeof(d));
    return changed;
}

static int observe_start(struct progress *p, const struct workspace *ws, int64_t now, int counted)
{
    const struct workspace_status *st = &ws->status;
    if (!counted)
        return set(p, PROGRESS_REQUESTED, NULL);
    if (st->state == WS_STATE_WAITING_FOR_CAPACITY)
        return set(p, PROGRESS_WAITING_FOR_CAPACITY, cond_message(ws, WS_COND_CAPACITY_AVAILABLE));
    if (st->state == WS_STATE_QUEUED)
        return set(p, PROGRESS_QUEUED, cond_message(ws, WS_COND_READY));
    const char *restored = cond_reason(ws, WS_COND_RESTORED);
    int ready;
    if (p->goal == PROGRESS_RESUME && p->counted_expected)
        ready = st->last_resume->ready_ms != 0;
    else
        ready = st->state == WS_STATE_RUNNING &&
                streq(cond_reason(ws, WS_COND_READY), WS_REASON_POD_READY);
    if (!ready) {
        if (streq(restored, WS_REASON_RESTORE_CRASHED) ||
            streq(restored, WS_REASON_RESTORE_UNRESPONSIVE))
            return set(p, PROGRESS_STARTING, cond_message(ws, WS_COND_RESTORED));
        const char *what = streq(restored, WS_REASON_RESTORING) ? "restoring from the snapshot"
                           : streq(restored, WS_REASON_FROM_CHECKPOINT) ? "from the checkpoint"
                                                                        : NULL;
        char d[sizeof(p->detail)];
        const char *msg = cond_message(ws, WS_COND_READY);
        if (!msg || !*msg)
            msg = NULL;
        snprintf(d, sizeof(d), "%s%s%s", what ? what : "", what && msg ? ": " : "", msg ? msg : "");
        return set(p, PROGRESS_STARTING, d);
    }
    if (streq(restored, WS_REASON_RESTORING))
        return set(p, PROGRESS_CONFIRMING, "ready; waiting to learn whether the memory came back");
    const char *from = st->last_resume->restored_from;
    if (p->goal == PROGRESS_RESUME && p->counted_expected && from)
        snprintf(p->restored_from, sizeof(p->restored_from), "%s", from);
    else if (restored && !streq(restored, WS_REASON_RESTORE_CRASHED) &&
             !streq(restored, WS_REASON_RESTORE_UNRESPONSIVE))
        snprintf(p->restored_from, sizeof(p->restored_from), "%s", restored);
    /* Ready here means lastResume.readyAt is set, and with it the figure. */
    if (p->goal == PROGRESS_RESUME && p->counted_expected)
        p->seconds = st->last_resume->seconds_to_ready;
    else
        p->seconds = (double)(now - p->started_ms) / 1000.0;
    return set(p, PROGRESS_DONE, NULL);
}

static int observe_pause(struct progress *p, const struct workspace *ws, int64_t now)
{
    const struct workspace_status *st = &ws->status;
    /* Not by the pause count: a workspace without a pod is Paused without
     * counting one. Seen at the request's generation, Paused is this pause. */
    if (st->observed_generation < p->generation)
        return set(p, PROGRESS_REQUESTED, NULL);
    if (st->state == WS_STATE_PAUSED) {
        p->seconds = (double)(now - p->started_ms) / 1000.0;
        const struct workspace_snapshot *sn = st->snapshot;
        if (sn->requested_ms && sn->requested_ms >= st->last_pause->requested_ms && sn->ready_ms)
            p->snapshot_seconds = sn->seconds;
        return set(p, PROGRESS_DONE, NULL);
    }
    const char *snap = cond_reason(ws, WS_COND_SNAPSHOT_READY);
    const char *ready = cond_reason(ws, WS_COND_READY);
    if (streq(snap, WS_REASON_CHECKPOINTING))
        return set(p, PROGRESS_PAUSING, "the application is writing its checkpoint");
    if (streq(snap, WS_REASON_IN_PROGRESS))
        return set(p, PROGRESS_PAUSING, "taking the snapshot");
    if (streq(snap, WS_REASON_FAILED) || streq(snap, WS_REASON_TIMEOUT))
        return set(p, PROGRESS_PAUSING, cond_message(ws, WS_COND_SNAPSHOT_READY));
    if (streq(ready, WS_REASON_PAUSING) || streq(ready, WS_REASON_POD_TERMINATING))
        return set(p, PROGRESS_PAUSING, "the pod is stopping");
    return set(p, PROGRESS_PAUSING, cond_message(ws, WS_COND_READY));
}

int progress_observe(struct progress *p, const struct workspace *ws, int64_t now)
{
    const struct workspace_status *st = &ws->status;
    if (p->phase == PROGRESS_DONE)
        return 0;
    if (st->state == WS_STATE_FAILED && p->goal != PROGRESS_PAUSE &&
        st->observed_generation >= p->generation)
        return set(p, PROGRESS_FAILED, st->message);
    if (p->goal == PROGRESS_PAUSE)
        return observe_pause(p, ws, now);
    int counted = st->observed_generation >= p->generation;
    if (counted && p->goal == PROGRESS_RESUME && p->counted_expected)
        counted = st->resumes > p->resumes_before;
    return observe_start(p, ws, now, counted);
}

static const char *phase_words(const struct progress *p)
{
    switch (p->phase) {
    case PROGRESS_REQUESTED:
        return p->goal == PROGRESS_PAUSE    ? "pause requested"
               : p->goal == PROGRESS_RESUME ? "resume requested"
                                            : "created";
    case PROGRESS_PAUSING:
        return "pausing";
    case PROGRESS_WAITING_FOR_CAPACITY:
        return "waiting for capacity";
    case PROGRESS_QUEUED:
        return "queued";
    case PROGRESS_STARTING:
        return p->goal == PROGRESS_RESUME ? "resuming" : "starting";
    case PROGRESS_CONFIRMING:
        return "confirming the restore";
    case PROGRESS_DONE:
        return "done";
    case PROGRESS_FAILED:
        return "failed";
    }
    return "";
}

void progress_line(const struct progress *p, int64_t now, char *out, size_t size)
{
    char elapsed[TIMETEXT_SIZE];
    timetext_age(now - p->started_ms, elapsed);
    snprintf(out, size, "[%6s] %s%s%s", elapsed, phase_words(p), p->detail[0] ? ": " : "",
             p->detail);
}

void progress_result(const struct progress *p, char *out, size_t size)
{
    char s[TIMETEXT_SIZE];
    timetext_seconds(p->seconds, s);
    switch (p->goal) {
    case PROGRESS_PAUSE:
        if (p->snapshot_seconds >= 0) {
            char snap[TIMETEXT_SIZE];
            timetext_seconds(p->snapshot_seconds, snap);
            snprintf(out, size, "paused in %s (snapshot %s)", s, snap);
        } else {
            snprintf(out, size, "paused in %s (without a memory snapshot)", s);
        }
        return;
    case PROGRESS_RESUME:
        if (p->restored_from[0])
            snprintf(out, size, "ready in %s (%s%s)", s,
                     strcmp(p->restored_from, WS_REASON_FRESH) == 0 ? "" : "restored from ",
                     ledger_restored_words(p->restored_from));
        else
            snprintf(out, size, "ready in %s", s);
        return;
    case PROGRESS_RUNNING:
        snprintf(out, size, "running in %s", s);
        return;
    }
}
