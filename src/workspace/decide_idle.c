#include "decide_internal.h"

/* ---- idle (docs/idle.md) ---- */

void decide_requeue_at(struct decider *d, int64_t at_ms)
{
    if (at_ms <= 0)
        return;
    int64_t after = at_ms > d->now ? at_ms - d->now : 1;
    if (!d->out->requeue_after_ms || after < d->out->requeue_after_ms)
        d->out->requeue_after_ms = after;
}

/* Entering Running counts as activity and forgets what came before. */
static void reset_activity(struct decider *d)
{
    struct workspace_activity *a = d->st->activity;
    d->st->state_since_ms = d->now; /* running since, also after a resume from Running */
    a->last_activity_ms = d->now;
    decide_set_string(d, &a->last_activity_source, "start");
    a->last_probe_ms = 0;
    decide_set_string(d, &a->last_probe_result, NULL);
    decide_set_string(d, &a->last_probe_error, NULL);
    a->idle_since_ms = 0;
    a->pause_at_ms = 0;
}

/* Outside Running nothing is idle: the conditions go, the record of the last
 * activity stays (when work ended). */
void decide_clear_idle(struct decider *d)
{
    struct workspace_activity *a = d->st->activity;
    workspace_status_remove_condition(d->st, WS_COND_IDLE);
    workspace_status_remove_condition(d->st, WS_COND_ACTIVITY_PROBE);
    a->last_probe_ms = 0;
    decide_set_string(d, &a->last_probe_result, NULL);
    decide_set_string(d, &a->last_probe_error, NULL);
    a->idle_since_ms = 0;
    a->pause_at_ms = 0;
}

static void idle_policy_condition(struct decider *d, const struct idle_policy *pol, int clamped,
                                  const char *problem)
{
    if (!d->ws->idle_after_ms) {
        workspace_status_remove_condition(d->st, WS_COND_IDLE_POLICY);
        return;
    }
    const struct condition *old = workspace_status_condition(d->old, WS_COND_IDLE_POLICY);
    if (clamped) {
        decide_condition(d, WS_COND_IDLE_POLICY, COND_FALSE, WS_REASON_OUT_OF_BOUNDS, "%s",
                         problem);
        if (!old || old->status != COND_FALSE || !decide_streq(old->message, problem))
            decide_event(d, "Warning", WS_EVENT_IDLE_POLICY_OUT_OF_BOUNDS, "%s", problem);
    } else {
        char after[32];
        decide_format_duration(pol->after_ms, after, sizeof(after));
        decide_condition(d, WS_COND_IDLE_POLICY, COND_TRUE, WS_REASON_ACCEPTED,
                         "spec.idle.after %s applies", after);
    }
}

static void record_probe(struct decider *d, const struct activity_observation *obs,
                         const struct idle_policy *pol)
{
    struct workspace_activity *a = d->st->activity;
    const char *word = idle_probe_result_word(&obs->result, pol->gpu_threshold_percent);
    const char *error = obs->result.ok ? NULL : obs->result.error;
    if (!decide_streq(a->last_probe_result, word) || !decide_streq(a->last_probe_error, error) ||
        obs->probed_at_ms - a->last_probe_ms >= PROBE_RECORD_STEP_MS) {
        a->last_probe_ms = obs->probed_at_ms;
        decide_set_string(d, &a->last_probe_result, word);
        decide_set_string(d, &a->last_probe_error, error);
    }
    if (obs->result.ok)
        decide_condition(d, WS_COND_ACTIVITY_PROBE, COND_TRUE, WS_REASON_SUCCEEDED,
                         "the activity probe answers");
    else
        decide_condition(d, WS_COND_ACTIVITY_PROBE, COND_FALSE, WS_REASON_FAILED, "%s",
                         obs->result.error);
}

static void auto_pause(struct decider *d, const struct idle_policy *pol,
                       const struct idle_verdict *v)
{
    const struct activity_observation *obs = d->in->activity;
    char since[TIMEFMT_RFC3339_SIZE], probed[TIMEFMT_RFC3339_SIZE], idle_for[32], after[32];
    timefmt_rfc3339_text(v->last_activity_ms, since);
    timefmt_rfc3339_text(obs->probed_at_ms, probed);
    decide_format_duration(d->now - v->last_activity_ms, idle_for, sizeof(idle_for));
    decide_format_duration(pol->after_ms, after, sizeof(after));
    char gpu[96] = "";
    if (strstr(obs->result.source, "gpu") && obs->result.no_data)
        snprintf(gpu, sizeof(gpu), "; GPU utilisation: no data");
    else if (strstr(obs->result.source, "gpu"))
        snprintf(gpu, sizeof(gpu), "; GPU utilisation %.0f%% < %d%%", obs->result.gpu_utilisation,
                 pol->gpu_threshold_percent);
    struct action *a = decide_push(d, ACTION_AUTO_PAUSE, NULL);
    if (!a)
        return;
    a->time_ms = d->now;
    if (asprintf(&a->message,
                 "idle for %s (no activity since %s, %s), idle-after %s; %d connection(s)%s; "
                 "confirmed by the probe at %s",
                 idle_for, since, v->source, after, obs->result.connections, gpu, probed) < 0) {
        a->message = NULL;
        decide_failed(d, -ENOMEM);
        return;
    }
    if (!(a->reason = strdup("IdleTimeout")))
        decide_failed(d, -ENOMEM);
}

/* The record follows the verdict exactly when something is announced,
 * cancelled or carried out, and in steps otherwise. */
static void record_activity(struct decider *d, const struct idle_verdict *v, int64_t running_since)
{
    struct workspace_activity *a = d->st->activity;
    int exact = v->announce || v->cancelled || v->pause_now;
    if (v->last_activity_ms > a->last_activity_ms &&
        (exact || v->last_activity_ms - a->last_activity_ms >= ACTIVITY_RECORD_STEP_MS ||
         a->last_activity_ms < running_since ||
         !decide_streq(v->source, a->last_activity_source))) {
        a->last_activity_ms = v->last_activity_ms;
        decide_set_string(d, &a->last_activity_source, v->source);
    }
    a->idle_since_ms = v->idle_since_ms;
    a->pause_at_ms = v->pause_at_ms;
}

/* Only on a settled world: a pass that also removes a pod decides again
 * once it is gone. */
static void pause_when_settled(struct decider *d, const struct idle_policy *pol,
                               const struct idle_verdict *v)
{
    int settled = 1;
    for (size_t i = 0; i < d->out->n_actions; i++)
        if (d->out->actions[i].type == ACTION_CREATE_POD ||
            d->out->actions[i].type == ACTION_DELETE_POD)
            settled = 0;
    if (settled)
        auto_pause(d, pol, v);
    else
        decide_requeue_at(d, d->now + 1000);
}

void decide_idle(struct decider *d)
{
    const struct workspace *ws = d->ws;
    struct workspace_status *st = d->st;
    struct workspace_activity *a = st->activity;
    struct idle_policy pol;
    char problem[IDLE_PROBLEM_SIZE];
    int clamped = idle_policy_resolve(d->cls, ws, &pol, problem, sizeof(problem));
    idle_policy_condition(d, &pol, clamped, problem);
    a->idle_after_seconds = pol.after_ms / 1000;

    /* The status keeps whole seconds: a value with a fraction is the same
     * value when it comes back. */
    if (ws->keep_alive_until_ms / 1000 != a->keep_alive_requested_ms / 1000) {
        a->keep_alive_requested_ms = ws->keep_alive_until_ms;
        a->keep_alive_until_ms =
            idle_keep_alive_bound(ws->keep_alive_until_ms, d->now, pol.max_keep_alive_ms);
    }

    /* A resume counted in this very pass is a start too, and so is the
     * controller's own pause of this announcement taken back by the user
     * before a pass saw it. */
    int64_t announced_pause = d->old->activity->pause_at_ms;
    int taken_back = announced_pause && ws->auto_paused_ms >= announced_pause;
    int entering =
        d->old->state != WS_STATE_RUNNING || st->resumes != d->old->resumes || taken_back;
    if (entering)
        reset_activity(d);
    int64_t running_since = entering || !d->old->state_since_ms ? d->now : d->old->state_since_ms;

    const struct condition *idle = workspace_status_condition(d->old, WS_COND_IDLE);
    int announced = !entering && idle && idle->status == COND_TRUE &&
                    decide_streq(idle->reason, WS_REASON_PAUSE_SCHEDULED);
    const struct activity_observation *obs = d->in->activity;
    struct idle_input in = {
        .policy = &pol,
        .zone = d->in->zone,
        .now_ms = d->now,
        .running_since_ms = running_since,
        .obs = obs,
        .recorded_activity_ms = a->last_activity_ms,
        .recorded_source = a->last_activity_source,
        .annotated_activity_ms = ws->annotated_activity_ms,
        .keep_alive_until_ms = a->keep_alive_until_ms,
        .announced = announced,
        .announced_pause_at_ms = d->old->activity->pause_at_ms,
        .announced_idle_since_ms = d->old->activity->idle_since_ms,
    };
    struct idle_verdict v;
    idle_evaluate(&in, &v);
    /* A pre-warm nobody used yet holds the idle rules off (and the first
     * activity since settles it as used). */
    in.prewarm_hold_ms = decide_prewarm_hold(d, v.last_activity_ms, v.source, pol.after_ms);
    if (in.prewarm_hold_ms)
        idle_evaluate(&in, &v);
    d->out->probe_wanted = pol.has_sources;

    if (obs && obs->probed_at_ms >= running_since && pol.has_sources)
        record_probe(d, obs, &pol);
    else if (!pol.has_sources)
        workspace_status_remove_condition(st, WS_COND_ACTIVITY_PROBE);

    record_activity(d, &v, running_since);

    enum condition_status cs = v.state == IDLE_STATE_UNKNOWN  ? COND_UNKNOWN
                               : v.state == IDLE_STATE_ACTIVE ? COND_FALSE
                                                              : COND_TRUE;
    decide_condition(d, WS_COND_IDLE, cs, v.reason, "%s", v.message);
    if (v.cancelled) {
        char at[TIMEFMT_RFC3339_SIZE];
        timefmt_rfc3339_text(d->old->activity->pause_at_ms, at);
        decide_event(
            d, "Normal", WS_EVENT_IDLE_CANCELLED, "the pause announced for %s is cancelled: %s", at,
            v.state == IDLE_STATE_PAUSE_SCHEDULED ? "there was activity since" : v.message);
    }
    if (v.announce)
        decide_event(d, "Warning", WS_EVENT_IDLE_WARNING, "%s", v.message);
    decide_requeue_at(d, v.recheck_at_ms);
    d->out->probe_now = v.probe_now;
    if (v.pause_now)
        pause_when_settled(d, &pol, &v);
}
