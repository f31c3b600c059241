#include "workspace/idle.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/duration.h"
#include "util/timefmt.h"
#include "workspace/pause_window.h"
#include "workspace/vocabulary.h"

/* After this long without activity a workspace shows an idle-since time: a
 * user who types every few seconds is not "idle since" each keystroke, and
 * the status is not rewritten on every round. */
#define IDLE_SINCE_AFTER_MS (60 * 1000)

static void fmt_duration(int64_t ms, char out[32])
{
    if (duration_format_ms(ms < 0 ? 0 : ms, out, 32) < 0)
        snprintf(out, 32, "?");
}

int idle_policy_resolve(const struct workspace_class *c, const struct workspace *ws,
                        struct idle_policy *p, char *problem, size_t size)
{
    const struct idle_class_policy *ip = &c->idle;
    *p = (struct idle_policy){
        .auto_pause = ip->auto_pause,
        .has_sources = c->activity.application != ACTIVITY_APP_NONE || c->activity.prometheus_url,
        .after_ms = ip->after_ms,
        .min_running_ms = ip->min_running_ms,
        .warn_before_ms = ip->warn_before_ms,
        .max_keep_alive_ms = ip->max_keep_alive_ms,
        .gpu_threshold_percent = ip->gpu_threshold_percent,
        .probe_interval_ms = c->activity.interval_ms,
        .schedule = &ip->schedule,
        .time_zone = ip->time_zone ? ip->time_zone : "UTC",
    };
    if (size > 0)
        problem[0] = '\0';
    if (!ws || ws->idle_after_ms <= 0)
        return 0;
    char want[32], bound[32];
    fmt_duration(ws->idle_after_ms, want);
    if (ws->idle_after_ms > ip->max_after_ms) {
        fmt_duration(ip->max_after_ms, bound);
        snprintf(problem, size,
                 "spec.idle.after: %s is longer than the class maximum %s; %s applies", want, bound,
                 bound);
        p->after_ms = ip->max_after_ms;
        return 1;
    }
    if (ws->idle_after_ms < ip->min_after_ms) {
        fmt_duration(ip->min_after_ms, bound);
        snprintf(problem, size,
                 "spec.idle.after: %s is shorter than the class minimum %s; %s applies", want,
                 bound, bound);
        p->after_ms = ip->min_after_ms;
        return 1;
    }
    p->after_ms = ws->idle_after_ms;
    return 0;
}

int64_t idle_keep_alive_bound(int64_t requested_ms, int64_t seen_ms, int64_t max_keep_alive_ms)
{
    if (requested_ms <= 0)
        return 0;
    if (seen_ms > 0 && requested_ms - seen_ms > max_keep_alive_ms)
        return seen_ms + max_keep_alive_ms;
    return requested_ms;
}

const char *idle_probe_result_word(const struct probe_result *r, int gpu_threshold_percent)
{
    if (!r->ok)
        return "Failed";
    if (r->busy ||
        (!r->no_data && r->gpu_utilisation >= gpu_threshold_percent && strstr(r->source, "gpu")))
        return "Active";
    return "Idle";
}

/* The application's name within a merged source ("jupyter+gpu" -> "jupyter"). */
static const char *app_source(const char *merged)
{
    if (strstr(merged, "jupyter"))
        return "jupyter";
    if (strstr(merged, "code-server"))
        return "code-server";
    return "probe";
}

struct latest {
    int64_t ms;
    const char *source;
};

static void consider(struct latest *l, int64_t ms, const char *source)
{
    if (ms > l->ms) {
        l->ms = ms;
        l->source = source;
    }
}

/* The first instant at or after t at which the windows allow a pause;
 * INT64_MAX when none comes. Returns -EAGAIN without the zone. */
static int first_allowed(const struct idle_input *in, int64_t t, int64_t *ret_ms)
{
    const struct idle_policy *p = in->policy;
    if (!p->schedule || p->schedule->n_windows == 0) {
        *ret_ms = t;
        return 0;
    }
    if (!in->zone)
        return -EAGAIN;
    int allowed;
    int64_t change;
    int r = pause_schedule_next(p->schedule, in->zone, t, &allowed, &change);
    if (r < 0)
        return r;
    *ret_ms = allowed ? t : change;
    return 0;
}

/* The latest activity. Entering Running counts as activity, and nothing
 * from before it counts at all: a resumed session starts a fresh clock.
 * Sets out's last activity, its source, active_now and idle_since_ms. */
static struct latest latest_activity(const struct idle_input *in, struct idle_verdict *out)
{
    const struct idle_policy *p = in->policy;
    const int64_t now = in->now_ms;
    struct latest last = {in->running_since_ms, "start"};
    if (in->recorded_activity_ms >= in->running_since_ms && in->recorded_source)
        consider(&last, in->recorded_activity_ms, in->recorded_source);
    if (in->annotated_activity_ms > 0)
        consider(&last, in->annotated_activity_ms < now ? in->annotated_activity_ms : now,
                 "annotation");
    if (in->keep_alive_until_ms > 0)
        consider(&last, in->keep_alive_until_ms < now ? in->keep_alive_until_ms : now, "keepAlive");
    if (in->prewarm_hold_ms > 0)
        consider(&last, in->prewarm_hold_ms < now ? in->prewarm_hold_ms : now, "preWarm");

    const struct activity_observation *obs = in->obs;
    int fresh = obs && obs->probed_at_ms >= in->running_since_ms;
    if (fresh && obs->result.ok) {
        const struct probe_result *r = &obs->result;
        int64_t at = obs->probed_at_ms;
        /* A server's clock ahead of ours must not push activity into the future. */
        if (r->last_activity_ms > 0)
            consider(&last, r->last_activity_ms < at ? r->last_activity_ms : at,
                     app_source(r->source));
        if (r->busy)
            consider(&last, at, app_source(r->source));
        if (!r->no_data && strstr(r->source, "gpu") &&
            r->gpu_utilisation >= p->gpu_threshold_percent)
            consider(&last, at, "gpu");
        /* Work seen by an earlier round (a busy kernel, a busy GPU) is
         * activity until its time, even once the current round is quiet. */
        if (obs->last_work_ms >= in->running_since_ms)
            consider(&last, obs->last_work_ms < at ? obs->last_work_ms : at,
                     obs->work_on_gpu ? "gpu" : app_source(r->source));
        out->active_now = r->busy || at - last.ms < IDLE_SINCE_AFTER_MS;
    }
    out->last_activity_ms = last.ms;
    out->source = last.source;
    out->idle_since_ms = out->active_now ? 0 : last.ms;
    if (!fresh || !obs->result.ok)
        out->idle_since_ms = 0;
    return last;
}

/* Nothing to judge by: no source, no probe since Running, or a failed one.
 * Returns 1 with out's reason and message set, 0 when there is. */
static int cannot_judge(const struct idle_input *in, struct idle_verdict *out)
{
    const struct idle_policy *p = in->policy;
    const struct activity_observation *obs = in->obs;
    if (!p->has_sources) {
        out->reason = WS_REASON_NO_ACTIVITY_SOURCE;
        snprintf(out->message, sizeof(out->message),
                 "the class has no activity probe or GPU metrics; nothing is paused automatically");
        return 1;
    }
    if (!obs || obs->probed_at_ms < in->running_since_ms) {
        out->reason = WS_REASON_PROBING;
        out->recheck_at_ms = in->now_ms + p->probe_interval_ms;
        snprintf(out->message, sizeof(out->message), "waiting for the first activity probe");
        return 1;
    }
    if (!obs->result.ok) {
        out->reason = WS_REASON_PROBE_FAILED;
        out->cancelled = in->announced;
        out->recheck_at_ms = in->now_ms + p->probe_interval_ms;
        snprintf(out->message, sizeof(out->message), "activity unknown, not pausing: %s",
                 obs->result.error);
        return 1;
    }
    return 0;
}

/* Not idle long enough to announce a pause: in use, kept alive, or
 * recently started. */
static void still_active(const struct idle_input *in, struct latest last, int64_t announce_from,
                         struct idle_verdict *out)
{
    const struct idle_policy *p = in->policy;
    char t1[TIMEFMT_RFC3339_SIZE], d1[32];
    out->state = IDLE_STATE_ACTIVE;
    out->cancelled = in->announced;
    out->recheck_at_ms = announce_from;
    fmt_duration(p->after_ms, d1);
    if (in->keep_alive_until_ms > in->now_ms) {
        /* The keep-alive counts as activity now until it ends, so nothing
         * changes before then. */
        out->reason = WS_REASON_KEEP_ALIVE;
        out->recheck_at_ms = in->keep_alive_until_ms;
        timefmt_rfc3339_text(in->keep_alive_until_ms, t1);
        snprintf(out->message, sizeof(out->message), "kept alive until %s (spec.keepAliveUntil)",
                 t1);
    } else if (in->prewarm_hold_ms > in->now_ms) {
        out->reason = WS_REASON_PRE_WARMED;
        out->recheck_at_ms = in->prewarm_hold_ms;
        timefmt_rfc3339_text(in->prewarm_hold_ms, t1);
        snprintf(out->message, sizeof(out->message),
                 "pre-warmed for its owner: counts as in use until %s, then paused after %s "
                 "without activity",
                 t1, d1);
    } else if (in->running_since_ms + p->min_running_ms > last.ms + p->after_ms) {
        out->reason = WS_REASON_MIN_RUNNING;
        timefmt_rfc3339_text(in->running_since_ms + p->min_running_ms, t1);
        snprintf(out->message, sizeof(out->message), "recently started; not paused before %s", t1);
    } else {
        out->reason = WS_REASON_ACTIVE;
        snprintf(out->message, sizeof(out->message),
                 "in use (%s); paused after %s without activity", last.source, d1);
    }
}

static void schedule_pause(const struct idle_input *in, struct latest last, int64_t eligible,
                           int announced, struct idle_verdict *out);

void idle_evaluate(const struct idle_input *in, struct idle_verdict *out)
{
    const struct idle_policy *p = in->policy;
    *out = (struct idle_verdict){.state = IDLE_STATE_UNKNOWN};
    struct latest last = latest_activity(in, out);
    if (cannot_judge(in, out))
        return;

    /* An announced pause stands only while no activity came after the
     * idle-since it was announced for. The status keeps whole seconds, so
     * the activity the announcement was made on (11:05:00.500, read back as
     * 11:05:00) is not "after" it. One that can no longer happen (automatic
     * pausing turned off, the windows' zone gone) is withdrawn, and the
     * verdict is the one the next pass, without it, will reach too. */
    int windows_unusable = p->schedule && p->schedule->n_windows > 0 && !in->zone;
    int announced = in->announced && in->announced_pause_at_ms > 0 &&
                    last.ms / 1000 <= in->announced_idle_since_ms / 1000 && p->auto_pause &&
                    !windows_unusable;
    int64_t eligible = last.ms + p->after_ms;
    if (in->running_since_ms + p->min_running_ms > eligible)
        eligible = in->running_since_ms + p->min_running_ms;
    int64_t announce_from = eligible - p->warn_before_ms;

    if (in->now_ms < announce_from && !announced)
        still_active(in, last, announce_from, out);
    else
        schedule_pause(in, last, eligible, announced, out);
}

/* Idle long enough: a pause is announced, held back by the windows, or
 * due; or, with automatic pausing off, only reported. */
static void schedule_pause(const struct idle_input *in, struct latest last, int64_t eligible,
                           int announced, struct idle_verdict *out)
{
    const struct idle_policy *p = in->policy;
    const struct activity_observation *obs = in->obs;
    const int64_t now = in->now_ms;
    char t1[TIMEFMT_RFC3339_SIZE], t2[TIMEFMT_RFC3339_SIZE];
    timefmt_rfc3339_text(last.ms, t1);
    if (!p->auto_pause) {
        out->state = IDLE_STATE_IDLE;
        out->reason = WS_REASON_AUTO_PAUSE_DISABLED;
        out->cancelled = in->announced;
        snprintf(out->message, sizeof(out->message),
                 "no activity since %s (%s); automatic pausing is disabled for this class", t1,
                 last.source);
        return;
    }
    /* The full warning, even when it comes late; the windows are asked about
     * the time that leaves, so the warning never carries a pause out of a
     * window. */
    int64_t earliest = eligible;
    if (!announced && earliest < now + p->warn_before_ms)
        earliest = now + p->warn_before_ms;
    int64_t pause_at;
    if (first_allowed(in, earliest, &pause_at) < 0) {
        out->reason = WS_REASON_TIME_ZONE_UNAVAILABLE;
        out->cancelled = in->announced;
        snprintf(out->message, sizeof(out->message),
                 "no activity since %s; the pause windows' time zone %s is not loaded", t1,
                 p->time_zone);
        return;
    }
    if (announced && in->announced_pause_at_ms > pause_at)
        pause_at = in->announced_pause_at_ms; /* never earlier than what users were told */
    if (pause_at == INT64_MAX || (!announced && now < pause_at - p->warn_before_ms)) {
        out->state = IDLE_STATE_IDLE;
        out->reason = WS_REASON_OUTSIDE_PAUSE_WINDOW;
        out->cancelled = in->announced;
        if (pause_at == INT64_MAX) {
            snprintf(out->message, sizeof(out->message),
                     "no activity since %s (%s); the pause windows never open", t1, last.source);
            return;
        }
        out->pause_at_ms = pause_at;
        out->recheck_at_ms = pause_at - p->warn_before_ms;
        timefmt_rfc3339_text(pause_at, t2);
        snprintf(out->message, sizeof(out->message),
                 "no activity since %s (%s); pausing at %s, when the next pause window opens", t1,
                 last.source, t2);
        return;
    }

    out->state = IDLE_STATE_PAUSE_SCHEDULED;
    out->reason = WS_REASON_PAUSE_SCHEDULED;
    out->announce = !announced;
    /* A new announcement over an old one: the old pause time is off. */
    out->cancelled = !announced && in->announced;
    out->pause_at_ms = pause_at;
    out->idle_since_ms = announced ? in->announced_idle_since_ms : last.ms;
    timefmt_rfc3339_text(pause_at, t2);
    snprintf(out->message, sizeof(out->message),
             "no activity since %s (%s); pausing at %s unless there is activity", t1, last.source,
             t2);
    if (now < pause_at) {
        out->recheck_at_ms = pause_at;
        return;
    }
    /* The time has come. Only a round that started at or after it may
     * confirm: anything older could have missed a user who just came back. */
    if (obs->probed_at_ms >= pause_at)
        out->pause_now = 1;
    else
        out->probe_now = 1;
}
