#include "workspace/outcome.h"

#include <stdio.h>
#include <string.h>

static int streq(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

/* "IdleTimeout" -> "idle_timeout"; anything that is not a short word of
 * letters -> "other", so the label keeps a small set of values whatever the
 * status says. */
static void snake_case(const char *word, char *out, size_t size)
{
    size_t n = 0;
    for (const char *p = word; p && *p; p++) {
        int upper = *p >= 'A' && *p <= 'Z', lower = *p >= 'a' && *p <= 'z';
        if ((!upper && !lower) || n + 3 > size) {
            n = 0;
            break;
        }
        if (upper && p != word)
            out[n++] = '_';
        out[n++] = upper ? (char)(*p - 'A' + 'a') : *p;
    }
    if (n == 0)
        snprintf(out, size, "other");
    else
        out[n] = '\0';
}

static int pause_done(const struct workspace_status *s)
{
    return s->last_pause->requested_ms && s->last_pause->accelerator_released_ms;
}

/* The kinds workspace_pod_end() gives, as label values; a bounded set. */
static const char *interruption_label(const char *kind)
{
    static const char *const kinds[][2] = {
        {"Evicted", "evicted"},
        {"Preempted", "preempted"},
        {"NodeTainted", "node_tainted"},
        {"NodeLost", "node_lost"},
        {"TerminatedByKubelet", "terminated_by_kubelet"},
        {"OOMKilled", "oom_killed"},
        {"Stopped", "stopped"},
        {"Deleted", "deleted"},
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (streq(kind, kinds[i][0]))
            return kinds[i][1];
    return "other";
}

static enum restore_source source_of(const char *restored_from)
{
    if (streq(restored_from, "FromSnapshot"))
        return RESTORE_SOURCE_SNAPSHOT;
    if (streq(restored_from, "FromCheckpoint"))
        return RESTORE_SOURCE_CHECKPOINT;
    if (streq(restored_from, "ColdStart"))
        return RESTORE_SOURCE_COLD_START;
    if (streq(restored_from, "Fresh"))
        return RESTORE_SOURCE_FRESH;
    if (streq(restored_from, "FreshHome"))
        return RESTORE_SOURCE_FRESH_HOME;
    return RESTORE_SOURCE_NONE;
}

/* Ready, and where it came from is known: a restore's source may be judged
 * after the pod is ready (PodRestored, or the cold-start grace). */
static int resume_done(const struct workspace_status *s)
{
    return s->last_resume->requested_ms && s->last_resume->ready_ms &&
           source_of(s->last_resume->restored_from) != RESTORE_SOURCE_NONE;
}

static int settled(const char *phase)
{
    return streq(phase, "Ready") || streq(phase, "Failed");
}

void workspace_outcome_diff(const struct workspace_status *old, const struct workspace_status *st,
                            int64_t now_ms, struct workspace_outcome *ret)
{
    *ret = (struct workspace_outcome){0};
    const struct workspace_snapshot *sn = st->snapshot;

    if (pause_done(st) && !(pause_done(old) && old->pauses == st->pauses &&
                            old->last_pause->requested_ms == st->last_pause->requested_ms)) {
        ret->paused = 1;
        snake_case(st->last_pause->reason, ret->pause_reason, sizeof(ret->pause_reason));
        int this_pause = sn->attempt && sn->requested_ms >= st->last_pause->requested_ms;
        if (this_pause && streq(sn->phase, "Ready"))
            ret->pause_memory = PAUSE_MEMORY_SNAPSHOT;
        else if (this_pause && streq(sn->phase, "Failed"))
            ret->pause_memory = PAUSE_MEMORY_SNAPSHOT_FAILED;
        else
            ret->pause_memory = PAUSE_MEMORY_FILES;
    }

    if (resume_done(st) && !(resume_done(old) && old->resumes == st->resumes &&
                             old->last_resume->requested_ms == st->last_resume->requested_ms)) {
        ret->resumed = source_of(st->last_resume->restored_from);
        ret->resume_seconds = st->last_resume->seconds_to_ready;
    }

    /* An attempt settles once; its condition may change or go later. */
    if (sn->attempt && settled(sn->phase) &&
        !(streq(old->snapshot->attempt, sn->attempt) && streq(old->snapshot->phase, sn->phase))) {
        if (streq(sn->phase, "Ready")) {
            ret->snapshot = SNAPSHOT_RESULT_READY;
            ret->snapshot_seconds = sn->seconds;
        } else {
            const struct condition *c = workspace_status_condition(st, "SnapshotReady");
            ret->snapshot =
                c && streq(c->reason, "Timeout") ? SNAPSHOT_RESULT_TIMEOUT : SNAPSHOT_RESULT_FAILED;
        }
    }

    if (old->state == WS_STATE_WAITING_FOR_CAPACITY && st->state != WS_STATE_WAITING_FOR_CAPACITY &&
        old->waiting_for_capacity_since_ms && now_ms >= old->waiting_for_capacity_since_ms) {
        ret->capacity_wait_ended = 1;
        ret->capacity_wait_seconds = (double)(now_ms - old->waiting_for_capacity_since_ms) / 1000.0;
    }

    if (st->accelerator_seconds_released > old->accelerator_seconds_released)
        ret->accelerator_seconds_released =
            st->accelerator_seconds_released - old->accelerator_seconds_released;

    if (st->interruptions > old->interruptions)
        snprintf(ret->interrupted, sizeof(ret->interrupted), "%s",
                 interruption_label(st->last_interruption->reason));

    ret->home_lost = st->home->lost_ms && st->home->lost_ms != old->home->lost_ms;
    const struct workspace_prewarm_status *pw = st->prewarm, *was = old->prewarm;
    const char *settled = pw->used > was->used         ? "used"
                          : pw->unused > was->unused   ? "unused"
                          : pw->yielded > was->yielded ? "yielded"
                                                       : "";
    snprintf(ret->prewarm, sizeof(ret->prewarm), "%s", settled);
    ret->prewarm_ready_in_time = pw->ready_in_time > was->ready_in_time;
}

int workspace_outcome_any(const struct workspace_outcome *o)
{
    return o->paused || o->resumed != RESTORE_SOURCE_NONE || o->snapshot != SNAPSHOT_RESULT_NONE ||
           o->capacity_wait_ended || o->accelerator_seconds_released > 0 || o->interrupted[0] ||
           o->home_lost || o->prewarm[0] || o->prewarm_ready_in_time;
}

const char *pause_memory_name(enum pause_memory m)
{
    switch (m) {
    case PAUSE_MEMORY_SNAPSHOT:
        return "snapshot";
    case PAUSE_MEMORY_SNAPSHOT_FAILED:
        return "snapshot_failed";
    case PAUSE_MEMORY_FILES:
        break;
    }
    return "files";
}

const char *restore_source_name(enum restore_source s)
{
    switch (s) {
    case RESTORE_SOURCE_SNAPSHOT:
        return "snapshot";
    case RESTORE_SOURCE_CHECKPOINT:
        return "checkpoint";
    case RESTORE_SOURCE_COLD_START:
        return "cold_start";
    case RESTORE_SOURCE_FRESH:
        return "fresh";
    case RESTORE_SOURCE_FRESH_HOME:
        return "fresh_home";
    case RESTORE_SOURCE_NONE:
        break;
    }
    return "";
}

const char *snapshot_result_name(enum snapshot_result r)
{
    switch (r) {
    case SNAPSHOT_RESULT_READY:
        return "ready";
    case SNAPSHOT_RESULT_FAILED:
        return "failed";
    case SNAPSHOT_RESULT_TIMEOUT:
        return "timeout";
    case SNAPSHOT_RESULT_NONE:
        break;
    }
    return "";
}
