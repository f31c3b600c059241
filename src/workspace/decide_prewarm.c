#include "decide_internal.h"

#include "util/tz.h"
#include "workspace/pause_window.h"

/* ---- rule 8: resume ahead of the owner (docs/idle.md, "Ready before you are") ---- */

/* A zone still loading is asked for again this soon. */
#define PREWARM_ZONE_RECHECK_MS 2000
/* Waiting for its turn (other pre-warms, a person's resume), a pre-warm
 * looks again this soon: the reconciler also queues the class's paused
 * workspaces when a turn frees, this is the safety net. */
#define PREWARM_TURN_RECHECK_MS (30 * 1000)
#define DAY_MS (24LL * 60 * 60 * 1000)

int decide_prewarm_open(const struct workspace_status *s)
{
    return s->last_resume->pre_warmed && s->prewarm->last_ms && !s->prewarm->last_outcome;
}

/* The lead: the class's, or twice the workspace's last measured time to
 * ready, at least PREWARM_MIN_DEFAULT_LEAD_MS (PREWARM_FIRST_LEAD_MS before
 * any was measured), in whole minutes. */
int64_t workspace_prewarm_lead(const struct workspace_class *cls, const struct workspace_status *st)
{
    if (cls->prewarm.lead_ms)
        return cls->prewarm.lead_ms;
    double seconds = -1;
    if (st->last_resume->ready_ms)
        seconds = st->last_resume->seconds_to_ready;
    for (size_t i = 0; seconds < 0 && i < st->n_history; i++)
        if (st->history[i].resume.ready_ms)
            seconds = st->history[i].resume.seconds_to_ready;
    if (seconds < 0)
        return PREWARM_FIRST_LEAD_MS;
    int64_t lead = (int64_t)(2 * seconds * 1000);
    lead = (lead + 59999) / 60000 * 60000;
    if (lead > 12LL * 60 * 60 * 1000)
        lead = 12LL * 60 * 60 * 1000;
    return lead < PREWARM_MIN_DEFAULT_LEAD_MS ? PREWARM_MIN_DEFAULT_LEAD_MS : lead;
}

/* A resume begins: a pre-warm when the controller's annotation says this
 * resume is its own, else a person's. */
void decide_prewarm_resume_begins(struct decider *d)
{
    struct workspace_status *st = d->st;
    const struct workspace *ws = d->ws;
    int pre_warm = ws->prewarmed_ms && ws->prewarmed_ms >= st->last_pause->requested_ms &&
                   ws->prewarmed_ms > st->prewarm->last_ms && ws->prewarmed_ms <= d->now;
    st->last_resume->pre_warmed = pre_warm;
    struct workspace_prewarm_status *pw = st->prewarm;
    if (!pre_warm) {
        /* Recorded only for a workspace that asks for pre-warms (or did):
         * the rest keep no block. */
        if (ws->prewarm || pw->count)
            pw->person_ms = d->now;
        return;
    }
    st->last_resume->requested_ms = ws->prewarmed_ms;
    pw->last_ms = ws->prewarmed_ms;
    pw->last_for_ms = ws->prewarm_for_ms;
    pw->last_ready_ms = 0;
    pw->last_used_ms = 0;
    decide_set_string(d, &pw->last_outcome, NULL);
    pw->count++;
}

/* The pre-warm's pod is ready. */
void decide_prewarm_ready(struct decider *d, int64_t ready_ms)
{
    struct workspace_prewarm_status *pw = d->st->prewarm;
    if (!decide_prewarm_open(d->st) || pw->last_ready_ms)
        return;
    pw->last_ready_ms = ready_ms;
    if (!pw->last_for_ms || ready_ms <= pw->last_for_ms)
        pw->ready_in_time++;
}

/* Running after a pre-warm: a person's activity since it was ready settles
 * it as used. Until then, and never past the owner's time plus the longer
 * of the grace and the idle time, it counts as in use: returns the
 * activity time to hold the idle rules with (0: none). */
int64_t decide_prewarm_hold(struct decider *d, int64_t last_activity_ms, const char *source,
                            int64_t idle_after_ms)
{
    struct workspace_status *st = d->st;
    struct workspace_prewarm_status *pw = st->prewarm;
    if (!decide_prewarm_open(st) || !d->cls)
        return 0;
    int64_t since = pw->last_ready_ms ? pw->last_ready_ms : pw->last_ms;
    if (last_activity_ms > since && source && !decide_streq(source, "start") &&
        !decide_streq(source, "preWarm")) {
        pw->last_used_ms = last_activity_ms;
        pw->person_ms = last_activity_ms;
        pw->used++;
        decide_set_string(d, &pw->last_outcome, "Used");
        return 0;
    }
    int64_t owner = pw->last_for_ms ? pw->last_for_ms : pw->last_ms;
    int64_t grace = d->cls->prewarm.grace_ms;
    return owner + (grace > idle_after_ms ? grace - idle_after_ms : 0);
}

/* A pause begins: an open pre-warm ends unused, or, stopped by the
 * controller before it ran, yielded. Returns 1 when it yielded. */
int decide_prewarm_pause_begins(struct decider *d, int automatic)
{
    struct workspace_status *st = d->st;
    if (!decide_prewarm_open(st))
        return 0;
    int yielded = automatic && d->old->state != WS_STATE_RUNNING;
    if (yielded) {
        st->prewarm->yielded++;
        decide_set_string(d, &st->prewarm->last_outcome, "Yielded");
    } else {
        st->prewarm->unused++;
        decide_set_string(d, &st->prewarm->last_outcome, "Unused");
    }
    return yielded;
}

static void plan_none(struct decider *d)
{
    struct workspace_prewarm_status *pw = d->st->prewarm;
    pw->next_ms = 0;
    pw->next_for_ms = 0;
}

/* A pre-warm waiting for capacity gives way to a person's resume of the
 * class that waits too: it is paused again, as the controller's own pause. */
static void yield_if_a_person_waits(struct decider *d)
{
    if (d->st->state != WS_STATE_WAITING_FOR_CAPACITY || !decide_prewarm_open(d->st) ||
        !d->in->person_waiting || d->ws->paused)
        return;
    struct action *a = decide_push(d, ACTION_AUTO_PAUSE, NULL);
    if (!a)
        return;
    a->time_ms = d->now;
    if (asprintf(&a->message,
                 "the pre-warm gives way: a person's resume waits for capacity of %s %s",
                 d->cls->accelerator_resource ? d->cls->accelerator_resource : "",
                 d->cls->product ? d->cls->product : "") < 0) {
        a->message = NULL;
        decide_failed(d, -ENOMEM);
        return;
    }
    if (!(a->reason = strdup(WS_EVENT_PRE_WARM_YIELDED)))
        decide_failed(d, -ENOMEM);
}

static void not_allowed(struct decider *d)
{
    const struct condition *old = workspace_status_condition(d->old, WS_COND_PRE_WARM);
    decide_condition(d, WS_COND_PRE_WARM, COND_FALSE, WS_REASON_NOT_ALLOWED,
                     "class %s does not allow spec.preWarm (its spec.preWarm is absent or not "
                     "enabled); the workspace is resumed only when a person asks",
                     d->cls->name);
    if (!old || !decide_streq(old->reason, WS_REASON_NOT_ALLOWED))
        decide_event(d, "Warning", WS_EVENT_PRE_WARM_NOT_ALLOWED,
                     "spec.preWarm is ignored: class %s does not allow pre-warms", d->cls->name);
    plan_none(d);
}

/* Whether a person used the workspace recently enough to keep warming it;
 * when not, the condition says so. */
static int still_used(struct decider *d, const char *when)
{
    const struct workspace_prewarm_status *pw = d->st->prewarm;
    int64_t person = pw->person_ms ? pw->person_ms : d->ws->created_ms;
    int64_t days = d->cls->prewarm.skip_after_days;
    if (!person || d->now - person < days * DAY_MS)
        return 1;
    const struct condition *old = workspace_status_condition(d->old, WS_COND_PRE_WARM);
    char since[TIMEFMT_RFC3339_SIZE];
    timefmt_rfc3339_text(person, since);
    decide_condition(d, WS_COND_PRE_WARM, COND_FALSE, WS_REASON_SKIPPED,
                     "not pre-warmed for %s: nobody resumed or used it since %s (class %s: "
                     "preWarm.skipAfterDays %lld); a person's resume turns pre-warms on again",
                     when, since, d->cls->name, (long long)days);
    if (!old || !decide_streq(old->reason, WS_REASON_SKIPPED))
        decide_event(d, "Normal", WS_EVENT_PRE_WARM_SKIPPED,
                     "pre-warms stop: nobody resumed or used the workspace since %s", since);
    plan_none(d);
    return 0;
}

/* A pre-warm's pod went to Kueue at the class's preWarmPriorityClass, so
 * that it preempts nobody; at its owner's time, or once its person used
 * it (the pre-warm is no longer open), it is the person's and is raised
 * to the class's priorityClass. */
void decide_prewarm_priority(struct decider *d)
{
    const struct workspace_class *c = d->cls;
    const struct workspace_pod *p = d->keep;
    if (!c || !p || d->ws->paused || !c->queue.prewarm_priority_class || !c->queue.priority_class ||
        !decide_streq(p->priority_class, c->queue.prewarm_priority_class))
        return;
    int64_t owner = d->st->prewarm->last_for_ms;
    if (decide_prewarm_open(d->st) && d->now < owner) {
        decide_requeue_at(d, owner);
        return;
    }
    struct action *a = decide_push(d, ACTION_RAISE_PRIORITY, p->name);
    if (a && !(a->reason = strdup(c->queue.priority_class)))
        decide_failed(d, -ENOMEM);
}

/* The next pre-warm, and whether it starts now. */
void decide_prewarm(struct decider *d)
{
    const struct workspace *ws = d->ws;
    struct workspace_status *st = d->st;
    if (!d->cls || d->invalid_reason) {
        workspace_status_remove_condition(st, WS_COND_PRE_WARM);
        return;
    }
    yield_if_a_person_waits(d);
    if (!ws->prewarm) {
        workspace_status_remove_condition(st, WS_COND_PRE_WARM);
        plan_none(d);
        return;
    }
    if (!d->cls->prewarm.enabled) {
        not_allowed(d);
        return;
    }
    char when[WORKSPACE_PREWARM_TEXT_SIZE];
    workspace_prewarm_text(ws->prewarm, when);
    const struct tz *zone = d->in->prewarm_zone;
    if (!zone) {
        decide_condition(d, WS_COND_PRE_WARM, COND_UNKNOWN, WS_REASON_TIME_ZONE_UNAVAILABLE,
                         "spec.preWarm.timeZone %s %s", ws->prewarm->time_zone,
                         d->in->prewarm_zone_error ? d->in->prewarm_zone_error : "is being loaded");
        if (!d->in->prewarm_zone_error)
            decide_requeue_at(d, d->now + PREWARM_ZONE_RECHECK_MS);
        return;
    }
    if (!still_used(d, when))
        return;
    int64_t lead = workspace_prewarm_lead(d->cls, st);
    /* The owner's next time; its pre-warm may be due already. */
    int64_t owner;
    int r = local_time_next(ws->prewarm->days, ws->prewarm->minute, zone, d->now, &owner);
    if (r < 0) {
        decide_condition(d, WS_COND_PRE_WARM, COND_UNKNOWN, WS_REASON_TIME_ZONE_UNAVAILABLE,
                         "no time %s can be computed in zone %s", when, ws->prewarm->time_zone);
        plan_none(d);
        return;
    }
    int64_t start = owner - lead;
    int paused = ws->paused && st->state == WS_STATE_PAUSED;
    int due = d->now >= start;
    /* Not this time: it runs, it was paused within the lead (a person who
     * just left), or this time's pre-warm already happened. */
    int skip = due && (!paused || st->last_pause->requested_ms >= start ||
                       st->prewarm->last_for_ms == owner);
    if (skip || !due) {
        if (skip) {
            /* The one after. */
            if (local_time_next(ws->prewarm->days, ws->prewarm->minute, zone, owner, &owner) < 0)
                return;
            start = owner - lead;
        }
        st->prewarm->next_ms = start;
        st->prewarm->next_for_ms = owner;
        char at[TIMEFMT_RFC3339_SIZE], lead_text[32];
        timefmt_rfc3339_text(start, at);
        decide_format_duration(lead, lead_text, sizeof(lead_text));
        if (decide_prewarm_open(st) && !st->prewarm->last_ready_ms && !paused)
            decide_condition(d, WS_COND_PRE_WARM, COND_TRUE, WS_REASON_PRE_WARMING,
                             "resumed ahead of the owner's %s; the next at %s", when, at);
        else
            decide_condition(d, WS_COND_PRE_WARM, COND_TRUE, WS_REASON_PLANNED,
                             "resumes at %s, %s ahead of the owner's %s, if paused then", at,
                             lead_text, when);
        decide_requeue_at(d, start);
        return;
    }
    st->prewarm->next_ms = start;
    st->prewarm->next_for_ms = owner;
    if (d->in->person_waiting) {
        decide_condition(d, WS_COND_PRE_WARM, COND_FALSE, WS_REASON_WAITING_FOR_TURN,
                         "due for the owner's %s, but a person's resume waits for capacity of "
                         "%s %s and goes first",
                         when, d->cls->accelerator_resource ? d->cls->accelerator_resource : "",
                         d->cls->product ? d->cls->product : "");
        decide_requeue_at(d, d->now + PREWARM_TURN_RECHECK_MS);
        return;
    }
    if (d->in->class_prewarms_starting >= (size_t)d->cls->prewarm.max_concurrent) {
        decide_condition(d, WS_COND_PRE_WARM, COND_FALSE, WS_REASON_WAITING_FOR_TURN,
                         "due for the owner's %s; %zu pre-warm(s) of class %s are starting "
                         "(preWarm.maxConcurrent %lld)",
                         when, d->in->class_prewarms_starting, d->cls->name,
                         (long long)d->cls->prewarm.max_concurrent);
        decide_requeue_at(d, d->now + PREWARM_TURN_RECHECK_MS);
        return;
    }
    struct action *a = decide_push(d, ACTION_AUTO_RESUME, NULL);
    if (!a)
        return;
    a->time_ms = d->now;
    a->for_ms = owner;
    char at[TIMEFMT_RFC3339_SIZE];
    timefmt_rfc3339_text(owner, at);
    if (asprintf(&a->message, "pre-warm: resumed ahead of the owner's %s (%s)", when, at) < 0) {
        a->message = NULL;
        decide_failed(d, -ENOMEM);
        return;
    }
    decide_condition(d, WS_COND_PRE_WARM, COND_TRUE, WS_REASON_PRE_WARMING,
                     "resuming ahead of the owner's %s", when);
}
