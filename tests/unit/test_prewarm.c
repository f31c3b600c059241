/*
 * The pre-warm rules of decide() (docs/idle.md, "Ready before you are"),
 * from tables: when a paused workspace is resumed ahead of its owner, when
 * not (weekends, a workspace nobody uses, a class that does not allow it,
 * a turn taken, one paused within the lead), how the resume, its readiness,
 * its use and its end are recorded, and the yield to a person who waits.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "activity/probe_result.h"
#include "util/timefmt.h"
#include "util/tz.h"
#include "workspace/decide.h"
#include "workspace/idle.h"
#include "workspace/pause_window.h"
#include "workspace/vocabulary.h"

/* 2027-01-04T00:00:00Z, a Monday */
#define MON INT64_C(1799020800000)
#define SEC INT64_C(1000)
#define MINUTE (60 * SEC)
#define HOUR (60 * MINUTE)
#define DAY (24 * HOUR)

static struct workspace_class *make_class(const char *prewarm)
{
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"gpu-t4\"},\"spec\":{"
             "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],"
             "\"default\":\"quay.io/jupyter/base-notebook:2025-10-20\"},"
             "\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\",\"product\":\"Tesla-T4\"},"
             "\"home\":{\"size\":\"10Gi\"},"
             "\"activity\":{\"application\":\"Jupyter\",\"interval\":\"60s\"},"
             "\"idle\":{\"after\":\"30m\",\"minRunning\":\"5m\",\"warnBefore\":\"2m\"}%s%s}}",
             prewarm ? ",\"preWarm\":" : "", prewarm ? prewarm : "");
    cJSON *obj = cJSON_Parse(json);
    assert_non_null(obj);
    struct workspace_class *c = NULL;
    char *err = NULL;
    if (workspace_class_decode(obj, &c, &err) < 0)
        fail_msg("class: %s", err ? err : "?");
    cJSON_Delete(obj);
    return c;
}

/* A Workspace as the API server would send it: spec, annotations, status
 * (JSON texts, "" for none). */
static struct workspace *make_ws(const char *spec, const char *annotations, const char *status)
{
    char json[4096];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"alice\",\"namespace\":\"team\",\"uid\":\"u1\","
             "\"generation\":5,\"creationTimestamp\":\"2027-01-03T00:00:00Z\","
             "\"finalizers\":[\"hibernator.dev/cleanup\"],\"annotations\":{%s}},"
             "\"spec\":{\"className\":\"gpu-t4\"%s%s},\"status\":{%s}}",
             annotations, spec[0] ? "," : "", spec, status);
    cJSON *obj = cJSON_Parse(json);
    if (!obj)
        fail_msg("bad JSON: %s", json);
    struct workspace *ws = NULL;
    char *err = NULL;
    if (workspace_decode(obj, &ws, &err) < 0)
        fail_msg("workspace: %s", err ? err : "?");
    cJSON_Delete(obj);
    return ws;
}

#define WORKDAYS "\"preWarm\":{\"days\":[\"Mon\",\"Tue\",\"Wed\",\"Thu\",\"Fri\"],\"at\":\"08:30\"}"
#define PAUSED_SINCE_FRIDAY                                                                        \
    "\"state\":\"Paused\",\"lastPause\":{\"requestedAt\":\"2027-01-03T18:00:00Z\","                \
    "\"reason\":\"User\",\"acceleratorReleasedAt\":\"2027-01-03T18:01:00Z\"},"                     \
    "\"accounting\":{\"pauses\":1}"

static struct workspace_pvc home = {
    .ns = "team", .name = "alice-home", .uid = "h1", .phase = "Bound", .created_ms = MON - 3 * DAY};

struct run {
    struct decide_input in;
    struct decide_output out;
};

static void decide_at(struct run *r, const struct workspace *ws, const struct workspace_class *c,
                      int64_t now)
{
    r->in = (struct decide_input){.ws = ws, .cls = c, .pvc = &home, .now_ms = now};
    if (ws->prewarm && c)
        r->in.prewarm_zone = tz_utc();
}

static void run_decide(struct run *r)
{
    assert_int_equal(workspace_decide(&r->in, &r->out), 0);
}

static const struct action *find_action(const struct decide_output *o, enum action_type t)
{
    for (size_t i = 0; i < o->n_actions; i++)
        if (o->actions[i].type == t)
            return &o->actions[i];
    return NULL;
}

static const struct action *find_event(const struct decide_output *o, const char *reason)
{
    for (size_t i = 0; i < o->n_actions; i++)
        if (o->actions[i].type == ACTION_EVENT && strcmp(o->actions[i].reason, reason) == 0)
            return &o->actions[i];
    return NULL;
}

static void want_condition(const struct decide_output *o, const char *type, enum condition_status s,
                           const char *reason)
{
    const struct condition *c = workspace_status_condition(&o->status, type);
    if (!c)
        fail_msg("no %s condition", type);
    if (c->status != s || strcmp(c->reason, reason) != 0)
        fail_msg("%s: %s/%s (%s), wanted %s", type, workspace_condition_status_name(c->status),
                 c->reason, c->message, reason);
}

/* ---- when ---- */

/* One row: a paused workspace of a class with a 15-minute lead, at a time;
 * whether it is resumed, and the plan it shows. */
static const struct when_row {
    const char *what;
    int64_t now;
    int resumes;
    int64_t next_ms;    /* status.preWarm.nextAt */
    int64_t requeue_ms; /* requeue_after wanted (0: not checked) */
} when_rows[] = {
    {"Monday 07:00: planned for 08:15", MON + 7 * HOUR, 0, MON + 8 * HOUR + 15 * MINUTE,
     75 * MINUTE},
    {"Monday 08:14:59: not yet", MON + 8 * HOUR + 15 * MINUTE - SEC, 0,
     MON + 8 * HOUR + 15 * MINUTE, SEC},
    {"Monday 08:15: due", MON + 8 * HOUR + 15 * MINUTE, 1, MON + 8 * HOUR + 15 * MINUTE, 0},
    {"Monday 08:29: still due", MON + 8 * HOUR + 29 * MINUTE, 1, MON + 8 * HOUR + 15 * MINUTE, 0},
    {"Monday 08:30: the owner's time passed, Tuesday's next", MON + 8 * HOUR + 30 * MINUTE, 0,
     MON + DAY + 8 * HOUR + 15 * MINUTE, 0},
    {"Saturday 08:20: a weekend, Monday's next", MON + 5 * DAY + 8 * HOUR + 20 * MINUTE, 0,
     MON + 7 * DAY + 8 * HOUR + 15 * MINUTE, 0},
    {"Friday 23:00: Monday's next", MON + 4 * DAY + 23 * HOUR, 0,
     MON + 7 * DAY + 8 * HOUR + 15 * MINUTE, 0},
};

static void test_when(void **state)
{
    (void)state;
    struct workspace_class *c = make_class("{\"lead\":\"15m\"}");
    struct workspace *ws = make_ws(WORKDAYS ",\"paused\":true", "", PAUSED_SINCE_FRIDAY);
    for (size_t i = 0; i < sizeof(when_rows) / sizeof(when_rows[0]); i++) {
        const struct when_row *row = &when_rows[i];
        print_message("  %s\n", row->what);
        struct run r;
        decide_at(&r, ws, c, row->now);
        run_decide(&r);
        const struct action *a = find_action(&r.out, ACTION_AUTO_RESUME);
        if (row->resumes) {
            assert_non_null(a);
            assert_int_equal(a->time_ms, row->now);
            assert_int_equal(a->for_ms, MON + 8 * HOUR + 30 * MINUTE);
            assert_non_null(strstr(a->message, "08:30 Mon,Tue,Wed,Thu,Fri (UTC)"));
            want_condition(&r.out, WS_COND_PRE_WARM, COND_TRUE, WS_REASON_PRE_WARMING);
        } else {
            assert_null(a);
            want_condition(&r.out, WS_COND_PRE_WARM, COND_TRUE, WS_REASON_PLANNED);
        }
        assert_int_equal(r.out.status.prewarm->next_ms, row->next_ms);
        assert_int_equal(r.out.status.prewarm->next_for_ms, row->next_ms + 15 * MINUTE);
        if (row->requeue_ms)
            assert_int_equal(r.out.requeue_after_ms, row->requeue_ms);
        assert_int_equal(r.out.status.state, WS_STATE_PAUSED);
        decide_output_clear(&r.out);
    }
    workspace_free(ws);
    workspace_class_free(c);
}

/* The owner's time in their zone, across the spring change of clocks. */
static void test_time_zone(void **state)
{
    (void)state;
    FILE *f = fopen("/usr/share/zoneinfo/Europe/Berlin", "rb");
    assert_non_null(f);
    static unsigned char data[TZ_FILE_MAX];
    size_t len = fread(data, 1, sizeof(data), f);
    fclose(f);
    struct tz *berlin = NULL;
    assert_int_equal(tz_parse("Europe/Berlin", data, len, &berlin, NULL), 0);
    int64_t t;
    /* Monday 2027-01-04 08:30 CET is 07:30 UTC */
    assert_int_equal(local_time_next(1u << 1, 8 * 60 + 30, berlin, MON, &t), 0);
    assert_int_equal(t, MON + 7 * HOUR + 30 * MINUTE);
    /* exactly then: the next Monday */
    assert_int_equal(local_time_next(1u << 1, 8 * 60 + 30, berlin, t, &t), 0);
    assert_int_equal(t, MON + 7 * DAY + 7 * HOUR + 30 * MINUTE);
    /* Sunday 2027-03-28 02:30 does not happen in Berlin: it counts from 03:00
     * CEST, 01:00 UTC */
    int64_t sat;
    assert_int_equal(timefmt_parse_rfc3339("2027-03-27T12:00:00Z", &sat), 0);
    assert_int_equal(local_time_next(1u << 0, 2 * 60 + 30, berlin, sat, &t), 0);
    char text[TIMEFMT_RFC3339_SIZE];
    timefmt_rfc3339_text(t, text);
    assert_string_equal(text, "2027-03-28T01:00:00Z");
    /* every day: the next reading */
    assert_int_equal(local_time_next(0, 0, tz_utc(), MON + 5 * SEC, &t), 0);
    assert_int_equal(t, MON + DAY);
    assert_int_equal(local_time_next(1u << 7, 0, tz_utc(), MON, &t), -EINVAL);
    assert_int_equal(local_time_next(0, 1440, tz_utc(), MON, &t), -EINVAL);
    tz_free(berlin);

    /* decide(): the zone not loaded yet, or not at all */
    struct workspace_class *c = make_class("{\"lead\":\"15m\"}");
    struct workspace *ws =
        make_ws("\"preWarm\":{\"at\":\"08:30\",\"timeZone\":\"Mars/Olympus\"},\"paused\":true", "",
                PAUSED_SINCE_FRIDAY);
    assert_string_equal(ws->prewarm->time_zone, "Mars/Olympus");
    struct run r;
    decide_at(&r, ws, c, MON + 8 * HOUR + 20 * MINUTE);
    r.in.prewarm_zone = NULL;
    run_decide(&r);
    want_condition(&r.out, WS_COND_PRE_WARM, COND_UNKNOWN, WS_REASON_TIME_ZONE_UNAVAILABLE);
    assert_null(find_action(&r.out, ACTION_AUTO_RESUME));
    assert_int_equal(r.out.requeue_after_ms, 2 * SEC);
    decide_output_clear(&r.out);
    r.in.prewarm_zone_error = "cannot be loaded: no such zone";
    run_decide(&r);
    want_condition(&r.out, WS_COND_PRE_WARM, COND_UNKNOWN, WS_REASON_TIME_ZONE_UNAVAILABLE);
    assert_non_null(strstr(workspace_status_condition(&r.out.status, WS_COND_PRE_WARM)->message,
                           "no such zone"));
    assert_int_equal(r.out.requeue_after_ms, 0);
    decide_output_clear(&r.out);
    workspace_free(ws);
    workspace_class_free(c);
}

/* ---- when not ---- */

static const struct skip_row {
    const char *what;
    const char *class_prewarm; /* NULL: the class has none */
    const char *spec;
    const char *status;
    size_t starting; /* the class's pre-warms starting */
    int person_waiting;
    const char *reason; /* the PreWarm condition's */
    const char *event;  /* an Event posted, NULL: none */
} skip_rows[] = {
    {"the class does not allow it", NULL, WORKDAYS ",\"paused\":true", PAUSED_SINCE_FRIDAY, 0, 0,
     WS_REASON_NOT_ALLOWED, WS_EVENT_PRE_WARM_NOT_ALLOWED},
    {"the class turned it off", "{\"enabled\":false}", WORKDAYS ",\"paused\":true",
     PAUSED_SINCE_FRIDAY, 0, 0, WS_REASON_NOT_ALLOWED, WS_EVENT_PRE_WARM_NOT_ALLOWED},
    {"nobody used it for 8 days", "{\"lead\":\"15m\"}", WORKDAYS ",\"paused\":true",
     PAUSED_SINCE_FRIDAY ",\"preWarm\":{\"personAt\":\"2026-12-27T09:00:00Z\",\"count\":4}", 0, 0,
     WS_REASON_SKIPPED, WS_EVENT_PRE_WARM_SKIPPED},
    {"another pre-warm of the class is starting", "{\"lead\":\"15m\"}", WORKDAYS ",\"paused\":true",
     PAUSED_SINCE_FRIDAY, 1, 0, WS_REASON_WAITING_FOR_TURN, NULL},
    {"a person's resume waits for capacity", "{\"lead\":\"15m\",\"maxConcurrent\":5}",
     WORKDAYS ",\"paused\":true", PAUSED_SINCE_FRIDAY, 0, 1, WS_REASON_WAITING_FOR_TURN, NULL},
    {"paused within the lead (someone just left)", "{\"lead\":\"15m\"}",
     WORKDAYS ",\"paused\":true",
     "\"state\":\"Paused\",\"lastPause\":{\"requestedAt\":\"2027-01-04T08:17:00Z\","
     "\"reason\":\"User\",\"acceleratorReleasedAt\":\"2027-01-04T08:18:00Z\"},"
     "\"accounting\":{\"pauses\":1}",
     0, 0, WS_REASON_PLANNED, NULL},
    {"this time's pre-warm happened (it gave way)", "{\"lead\":\"15m\"}",
     WORKDAYS ",\"paused\":true",
     PAUSED_SINCE_FRIDAY ",\"preWarm\":{\"lastFor\":\"2027-01-04T08:30:00Z\",\"count\":1,"
                         "\"yielded\":1,\"lastOutcome\":\"Yielded\"}",
     0, 0, WS_REASON_PLANNED, NULL},
    {"it runs", "{\"lead\":\"15m\"}", WORKDAYS, "\"state\":\"Running\",\"podName\":\"alice-1\"", 0,
     0, WS_REASON_PLANNED, NULL},
};

static void test_when_not(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(skip_rows) / sizeof(skip_rows[0]); i++) {
        const struct skip_row *row = &skip_rows[i];
        print_message("  %s\n", row->what);
        struct workspace_class *c = make_class(row->class_prewarm);
        struct workspace *ws = make_ws(row->spec, "", row->status);
        struct run r;
        decide_at(&r, ws, c, MON + 8 * HOUR + 20 * MINUTE);
        r.in.class_prewarms_starting = row->starting;
        r.in.person_waiting = row->person_waiting;
        run_decide(&r);
        assert_null(find_action(&r.out, ACTION_AUTO_RESUME));
        want_condition(&r.out, WS_COND_PRE_WARM,
                       strcmp(row->reason, WS_REASON_PLANNED) == 0 ? COND_TRUE : COND_FALSE,
                       row->reason);
        if (row->event)
            assert_non_null(find_event(&r.out, row->event));
        if (strcmp(row->reason, WS_REASON_PLANNED) == 0)
            /* the one after: Tuesday's */
            assert_int_equal(r.out.status.prewarm->next_for_ms, MON + DAY + 8 * HOUR + 30 * MINUTE);
        if (strcmp(row->reason, WS_REASON_WAITING_FOR_TURN) == 0)
            assert_int_equal(r.out.requeue_after_ms, 30 * SEC);
        /* a condition already said is not announced again */
        if (row->event) {
            struct workspace *again = make_ws(row->spec, "", row->status);
            workspace_status_clear(&again->status);
            assert_int_equal(workspace_status_copy(&r.out.status, &again->status), 0);
            struct run r2;
            decide_at(&r2, again, c, MON + 8 * HOUR + 21 * MINUTE);
            run_decide(&r2);
            assert_null(find_event(&r2.out, row->event));
            decide_output_clear(&r2.out);
            workspace_free(again);
        }
        decide_output_clear(&r.out);
        workspace_free(ws);
        workspace_class_free(c);
    }
}

/* No spec.preWarm: nothing planned, no condition, no block kept. */
static void test_not_asked(void **state)
{
    (void)state;
    struct workspace_class *c = make_class("{\"lead\":\"15m\"}");
    struct workspace *ws = make_ws("\"paused\":true", "", PAUSED_SINCE_FRIDAY);
    struct run r;
    decide_at(&r, ws, c, MON + 8 * HOUR + 20 * MINUTE);
    run_decide(&r);
    assert_null(find_action(&r.out, ACTION_AUTO_RESUME));
    assert_null(workspace_status_condition(&r.out.status, WS_COND_PRE_WARM));
    /* the next pass finds nothing to change, and no block is kept */
    workspace_status_clear(&ws->status);
    assert_int_equal(workspace_status_copy(&r.out.status, &ws->status), 0);
    decide_output_clear(&r.out);
    run_decide(&r);
    assert_false(r.out.status_changed);
    cJSON *j = workspace_status_to_json(&r.out.status);
    assert_null(cJSON_GetObjectItem(j, "preWarm"));
    cJSON_Delete(j);
    decide_output_clear(&r.out);
    workspace_free(ws);
    workspace_class_free(c);
}

/* ---- the lead ---- */

static void test_lead(void **state)
{
    (void)state;
    struct workspace_class *c = make_class("{}");
    struct workspace_status st;
    workspace_status_init(&st);
    assert_int_equal(workspace_status_own(&st), 0);
    /* nothing measured: 15 minutes */
    assert_int_equal(workspace_prewarm_lead(c, &st), 15 * MINUTE);
    /* twice the last time to ready, in whole minutes, at least 5 */
    st.last_resume->ready_ms = MON;
    st.last_resume->seconds_to_ready = 200;
    assert_int_equal(workspace_prewarm_lead(c, &st), 7 * MINUTE);
    st.last_resume->seconds_to_ready = 12.4;
    assert_int_equal(workspace_prewarm_lead(c, &st), 5 * MINUTE);
    workspace_status_clear(&st);
    workspace_class_free(c);
    c = make_class("{\"lead\":\"40m\"}");
    workspace_status_init(&st);
    assert_int_equal(workspace_prewarm_lead(c, &st), 40 * MINUTE);
    workspace_class_free(c);
}

/* ---- the resume and after ---- */

/* The pass that sees the controller's own write counts a pre-warm; a
 * person's resume counts a person. */
static void test_resume_counted(void **state)
{
    (void)state;
    struct workspace_class *c = make_class("{\"lead\":\"15m\"}");
    struct workspace *ws =
        make_ws(WORKDAYS ",\"paused\":false",
                "\"hibernator.dev/pre-warmed-at\":\"2027-01-04T08:15:00.250000Z\","
                "\"hibernator.dev/pre-warm-for\":\"2027-01-04T08:30:00Z\"",
                PAUSED_SINCE_FRIDAY);
    struct run r;
    decide_at(&r, ws, c, MON + 8 * HOUR + 15 * MINUTE + 400);
    run_decide(&r);
    const struct workspace_status *s = &r.out.status;
    assert_true(s->last_resume->pre_warmed);
    assert_int_equal(s->last_resume->requested_ms, MON + 8 * HOUR + 15 * MINUTE + 250);
    assert_int_equal(s->prewarm->count, 1);
    assert_int_equal(s->prewarm->last_for_ms, MON + 8 * HOUR + 30 * MINUTE);
    assert_null(s->prewarm->last_outcome);
    assert_non_null(find_action(&r.out, ACTION_CREATE_POD));
    const struct action *ev = find_event(&r.out, WS_EVENT_RESUMING);
    assert_non_null(ev);
    assert_non_null(strstr(ev->message, "pre-warm, ahead of the owner's 2027-01-04T08:30:00Z"));
    /* next: Tuesday's */
    assert_int_equal(s->prewarm->next_for_ms, MON + DAY + 8 * HOUR + 30 * MINUTE);
    want_condition(&r.out, WS_COND_PRE_WARM, COND_TRUE, WS_REASON_PRE_WARMING);
    decide_output_clear(&r.out);
    workspace_free(ws);

    /* a person's resume: the annotation is from before the pause */
    ws = make_ws(WORKDAYS ",\"paused\":false",
                 "\"hibernator.dev/pre-warmed-at\":\"2026-12-31T08:15:00Z\"", PAUSED_SINCE_FRIDAY);
    decide_at(&r, ws, c, MON + 10 * HOUR);
    run_decide(&r);
    assert_false(r.out.status.last_resume->pre_warmed);
    assert_int_equal(r.out.status.prewarm->count, 0);
    assert_int_equal(r.out.status.prewarm->person_ms, MON + 10 * HOUR);
    decide_output_clear(&r.out);
    workspace_free(ws);
    workspace_class_free(c);
}

#define PREWARMED_RUNNING(ready)                                                                   \
    "\"state\":\"Running\",\"stateSince\":\"" ready "\",\"podName\":\"alice-2\","                  \
    "\"lastPause\":{\"requestedAt\":\"2027-01-03T18:00:00Z\",\"reason\":\"User\","                 \
    "\"acceleratorReleasedAt\":\"2027-01-03T18:01:00Z\"},"                                         \
    "\"lastResume\":{\"requestedAt\":\"2027-01-04T08:15:00Z\",\"readyAt\":\"" ready "\","          \
    "\"secondsToReady\":12.0,\"restoredFrom\":\"FromSnapshot\",\"preWarmed\":true},"               \
    "\"activity\":{\"lastActivityTime\":\"" ready "\",\"lastActivitySource\":\"start\"},"          \
    "\"accounting\":{\"pauses\":1,\"resumes\":1},"                                                 \
    "\"preWarm\":{\"lastAt\":\"2027-01-04T08:15:00Z\",\"lastFor\":\"2027-01-04T08:30:00Z\","       \
    "\"lastReadyAt\":\"" ready "\",\"count\":1,\"readyInTime\":1}"

static struct workspace_pod *ready_pod(void)
{
    struct workspace_pod *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    p->name = "alice-2";
    p->uid = "p2";
    p->node_name = "gpu-1";
    p->phase = "Running";
    p->ready = 1;
    p->ready_ms = MON + 8 * HOUR + 15 * MINUTE + 12 * SEC;
    p->scheduled_ms = MON + 8 * HOUR + 15 * MINUTE + 1 * SEC;
    p->created_ms = MON + 8 * HOUR + 15 * MINUTE;
    return p;
}

static struct activity_observation idle_round(int64_t at, int64_t last_activity)
{
    struct activity_observation o = {.probed_at_ms = at};
    probe_result_init(&o.result, "jupyter");
    o.result.last_activity_ms = last_activity;
    return o;
}

/* ---- within quota ---- */

static struct workspace_class *queue_class(void)
{
    cJSON *obj = cJSON_Parse(
        "{\"metadata\":{\"name\":\"gpu-t4\"},\"spec\":{"
        "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],"
        "\"default\":\"quay.io/jupyter/base-notebook:2025-10-20\"},"
        "\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\",\"product\":\"Tesla-T4\"},"
        "\"home\":{\"size\":\"10Gi\"},"
        "\"activity\":{\"application\":\"Jupyter\",\"interval\":\"60s\"},"
        "\"idle\":{\"after\":\"30m\",\"minRunning\":\"5m\",\"warnBefore\":\"2m\"},"
        "\"preWarm\":{\"lead\":\"15m\"},"
        "\"queue\":{\"localQueue\":\"gpus\",\"priorityClass\":\"interactive\","
        "\"preWarmPriorityClass\":\"background\"}}}");
    assert_non_null(obj);
    struct workspace_class *c = NULL;
    char *err = NULL;
    if (workspace_class_decode(obj, &c, &err) < 0)
        fail_msg("class: %s", err ? err : "?");
    cJSON_Delete(obj);
    return c;
}

/* A class with spec.queue.preWarmPriorityClass: a pre-warm's pod goes to
 * Kueue at that priority (it preempts nobody) until its owner's time,
 * when it is raised to the class's priorityClass; a person's resume, or a
 * pre-warm its person used, goes at the class's priority. */
static void test_priority_within_quota(void **state)
{
    (void)state;
    struct workspace_class *c = queue_class();
    struct workspace *ws =
        make_ws(WORKDAYS ",\"paused\":false",
                "\"hibernator.dev/pre-warmed-at\":\"2027-01-04T08:15:00.250000Z\","
                "\"hibernator.dev/pre-warm-for\":\"2027-01-04T08:30:00Z\"",
                PAUSED_SINCE_FRIDAY);
    struct run r;
    decide_at(&r, ws, c, MON + 8 * HOUR + 15 * MINUTE + 400);
    run_decide(&r);
    const struct action *create = find_action(&r.out, ACTION_CREATE_POD);
    assert_non_null(create);
    assert_true(create->prewarm);
    decide_output_clear(&r.out);
    workspace_free(ws);

    /* Its pod runs at the low priority: raised at the owner's time. */
    ws = make_ws(WORKDAYS ",\"paused\":false",
                 "\"hibernator.dev/pre-warmed-at\":\"2027-01-04T08:15:00Z\","
                 "\"hibernator.dev/pre-warm-for\":\"2027-01-04T08:30:00Z\"",
                 PREWARMED_RUNNING("2027-01-04T08:15:12Z"));
    struct workspace_pod *p = ready_pod();
    p->priority_class = "background";
    const struct workspace_pod *pods[] = {p};
    decide_at(&r, ws, c, MON + 8 * HOUR + 20 * MINUTE);
    r.in.pods = pods;
    r.in.n_pods = 1;
    run_decide(&r);
    assert_null(find_action(&r.out, ACTION_RAISE_PRIORITY));
    assert_true(r.out.requeue_after_ms > 0 && r.out.requeue_after_ms <= 10 * MINUTE);
    decide_output_clear(&r.out);
    decide_at(&r, ws, c, MON + 8 * HOUR + 30 * MINUTE);
    r.in.pods = pods;
    r.in.n_pods = 1;
    run_decide(&r);
    const struct action *raise = find_action(&r.out, ACTION_RAISE_PRIORITY);
    assert_non_null(raise);
    assert_string_equal(raise->name, "alice-2");
    assert_string_equal(raise->reason, "interactive");
    decide_output_clear(&r.out);
    /* raised: nothing more */
    p->priority_class = "interactive";
    decide_at(&r, ws, c, MON + 8 * HOUR + 31 * MINUTE);
    r.in.pods = pods;
    r.in.n_pods = 1;
    run_decide(&r);
    assert_null(find_action(&r.out, ACTION_RAISE_PRIORITY));
    decide_output_clear(&r.out);
    workspace_free(ws);

    /* Used by its person before the owner's time: raised at once. */
    char used[2048];
    const char *running = PREWARMED_RUNNING("2027-01-04T08:15:12Z");
    const char *block = strstr(running, "\"preWarm\":{");
    assert_non_null(block);
    snprintf(used, sizeof(used), "%.*s\"preWarm\":{\"lastOutcome\":\"Used\",%s",
             (int)(block - running), running, block + strlen("\"preWarm\":{"));
    ws = make_ws(WORKDAYS ",\"paused\":false",
                 "\"hibernator.dev/pre-warmed-at\":\"2027-01-04T08:15:00Z\","
                 "\"hibernator.dev/pre-warm-for\":\"2027-01-04T08:30:00Z\"",
                 used);
    p->priority_class = "background";
    decide_at(&r, ws, c, MON + 8 * HOUR + 20 * MINUTE);
    r.in.pods = pods;
    r.in.n_pods = 1;
    run_decide(&r);
    assert_non_null(find_action(&r.out, ACTION_RAISE_PRIORITY));
    decide_output_clear(&r.out);
    workspace_free(ws);

    /* A person's resume goes at the class's priority. */
    ws = make_ws(WORKDAYS ",\"paused\":false",
                 "\"hibernator.dev/pre-warmed-at\":\"2026-12-31T08:15:00Z\"", PAUSED_SINCE_FRIDAY);
    decide_at(&r, ws, c, MON + 10 * HOUR);
    run_decide(&r);
    assert_false(find_action(&r.out, ACTION_CREATE_POD)->prewarm);
    decide_output_clear(&r.out);
    workspace_free(ws);
    free(p);
    workspace_class_free(c);
}

/* Unused, it is held until the owner's time plus grace less the idle time
 * (30m + 30m - 30m: 08:30), then paused by the idle rules; a person's
 * activity settles it as used. */
static void test_used_or_not(void **state)
{
    (void)state;
    struct workspace_class *c = make_class("{\"lead\":\"15m\",\"grace\":\"1h\"}");
    struct workspace *ws = make_ws(WORKDAYS, "", PREWARMED_RUNNING("2027-01-04T08:15:12Z"));
    struct workspace_pod *pod = ready_pod();
    const struct workspace_pod *pods[] = {pod};
    struct run r;

    /* 08:40, nothing since it was ready: held until 09:00 (08:30 + 1h - 30m) */
    decide_at(&r, ws, c, MON + 8 * HOUR + 40 * MINUTE);
    struct activity_observation obs =
        idle_round(MON + 8 * HOUR + 40 * MINUTE, MON + 8 * HOUR + 14 * MINUTE);
    r.in.pods = pods;
    r.in.n_pods = 1;
    r.in.activity = &obs;
    run_decide(&r);
    want_condition(&r.out, WS_COND_IDLE, COND_FALSE, WS_REASON_PRE_WARMED);
    assert_null(find_action(&r.out, ACTION_AUTO_PAUSE));
    assert_null(r.out.status.prewarm->last_outcome);
    assert_int_equal(r.out.requeue_after_ms, 20 * MINUTE);
    decide_output_clear(&r.out);

    /* 09:28: nobody came, the pause is announced for 09:30 (warnBefore 2m) */
    decide_at(&r, ws, c, MON + 9 * HOUR + 28 * MINUTE);
    obs = idle_round(MON + 9 * HOUR + 28 * MINUTE, MON + 8 * HOUR + 14 * MINUTE);
    r.in.pods = pods;
    r.in.n_pods = 1;
    r.in.activity = &obs;
    run_decide(&r);
    want_condition(&r.out, WS_COND_IDLE, COND_TRUE, WS_REASON_PAUSE_SCHEDULED);
    assert_int_equal(r.out.status.activity->pause_at_ms, MON + 9 * HOUR + 30 * MINUTE);
    decide_output_clear(&r.out);

    /* 08:45: the owner typed at 08:44: used */
    decide_at(&r, ws, c, MON + 8 * HOUR + 45 * MINUTE);
    obs = idle_round(MON + 8 * HOUR + 45 * MINUTE, MON + 8 * HOUR + 44 * MINUTE);
    r.in.pods = pods;
    r.in.n_pods = 1;
    r.in.activity = &obs;
    run_decide(&r);
    assert_string_equal(r.out.status.prewarm->last_outcome, "Used");
    assert_int_equal(r.out.status.prewarm->used, 1);
    assert_int_equal(r.out.status.prewarm->last_used_ms, MON + 8 * HOUR + 44 * MINUTE);
    assert_int_equal(r.out.status.prewarm->person_ms, MON + 8 * HOUR + 44 * MINUTE);
    want_condition(&r.out, WS_COND_IDLE, COND_FALSE, WS_REASON_ACTIVE);
    decide_output_clear(&r.out);

    free(pod);
    workspace_free(ws);
    workspace_class_free(c);
}

/* Paused while open: unused (the idle rules' pause, or a person's). */
static void test_paused_unused(void **state)
{
    (void)state;
    struct workspace_class *c = make_class("{\"lead\":\"15m\"}");
    struct workspace *ws = make_ws(WORKDAYS ",\"paused\":true",
                                   "\"hibernator.dev/auto-paused-at\":\"2027-01-04T09:30:00Z\"",
                                   PREWARMED_RUNNING("2027-01-04T08:15:12Z"));
    struct workspace_pod *pod = ready_pod();
    const struct workspace_pod *pods[] = {pod};
    struct run r;
    decide_at(&r, ws, c, MON + 9 * HOUR + 30 * MINUTE + 100);
    r.in.pods = pods;
    r.in.n_pods = 1;
    run_decide(&r);
    assert_string_equal(r.out.status.prewarm->last_outcome, "Unused");
    assert_int_equal(r.out.status.prewarm->unused, 1);
    assert_string_equal(r.out.status.last_pause->reason, "IdleTimeout");
    const struct action *ev = find_event(&r.out, WS_EVENT_IDLE_TIMEOUT);
    assert_non_null(ev);
    assert_non_null(strstr(ev->message, "nobody used the pre-warm"));
    decide_output_clear(&r.out);
    free(pod);
    workspace_free(ws);
    workspace_class_free(c);
}

/* Waiting for capacity when a person's resume of the class waits too: it
 * gives way, and the pause that follows says so. */
static void test_yield(void **state)
{
    (void)state;
    struct workspace_class *c = make_class("{\"lead\":\"15m\"}");
    const char *waiting =
        "\"state\":\"WaitingForCapacity\",\"podName\":\"alice-2\","
        "\"lastPause\":{\"requestedAt\":\"2027-01-03T18:00:00Z\",\"reason\":\"User\","
        "\"acceleratorReleasedAt\":\"2027-01-03T18:01:00Z\"},"
        "\"lastResume\":{\"requestedAt\":\"2027-01-04T08:15:00Z\",\"preWarmed\":true},"
        "\"accounting\":{\"pauses\":1,\"resumes\":1},"
        "\"preWarm\":{\"lastAt\":\"2027-01-04T08:15:00Z\",\"lastFor\":\"2027-01-04T08:30:00Z\","
        "\"count\":1}";
    struct workspace *ws = make_ws(WORKDAYS, "", waiting);
    struct workspace_pod pod = {
        .name = "alice-2",
        .uid = "p2",
        .phase = "Pending",
        .unschedulable = 1,
        .unschedulable_message = "0/3 nodes are available",
        .created_ms = MON + 8 * HOUR + 15 * MINUTE,
    };
    const struct workspace_pod *pods[] = {&pod};
    struct run r;
    /* nobody waits: it waits on */
    decide_at(&r, ws, c, MON + 8 * HOUR + 20 * MINUTE);
    r.in.pods = pods;
    r.in.n_pods = 1;
    run_decide(&r);
    assert_null(find_action(&r.out, ACTION_AUTO_PAUSE));
    assert_int_equal(r.out.status.state, WS_STATE_WAITING_FOR_CAPACITY);
    decide_output_clear(&r.out);
    /* a person waits too: paused again */
    r.in.person_waiting = 1;
    run_decide(&r);
    const struct action *a = find_action(&r.out, ACTION_AUTO_PAUSE);
    assert_non_null(a);
    assert_non_null(strstr(a->message, "gives way"));
    decide_output_clear(&r.out);
    workspace_free(ws);

    /* the pass that sees the controller's pause */
    ws = make_ws(WORKDAYS ",\"paused\":true",
                 "\"hibernator.dev/auto-paused-at\":\"2027-01-04T08:20:00Z\","
                 "\"hibernator.dev/auto-pause-reason\":\"the pre-warm gives way: a person's resume "
                 "of class gpu-t4 waits for capacity\"",
                 waiting);
    decide_at(&r, ws, c, MON + 8 * HOUR + 20 * MINUTE + 500);
    r.in.pods = pods;
    r.in.n_pods = 1;
    run_decide(&r);
    assert_string_equal(r.out.status.last_pause->reason, WS_EVENT_PRE_WARM_YIELDED);
    assert_string_equal(r.out.status.prewarm->last_outcome, "Yielded");
    assert_int_equal(r.out.status.prewarm->yielded, 1);
    assert_non_null(find_event(&r.out, WS_EVENT_PRE_WARM_YIELDED));
    assert_non_null(find_action(&r.out, ACTION_DELETE_POD));
    decide_output_clear(&r.out);
    workspace_free(ws);
    workspace_class_free(c);
}

/* ---- what the class and the workspace may say ---- */

static void test_decode(void **state)
{
    (void)state;
    struct workspace_class *c = make_class("{}");
    assert_true(c->prewarm.enabled);
    assert_int_equal(c->prewarm.lead_ms, 0);
    assert_int_equal(c->prewarm.grace_ms, 30 * MINUTE);
    assert_int_equal(c->prewarm.max_concurrent, 1);
    assert_int_equal(c->prewarm.skip_after_days, 7);
    workspace_class_free(c);
    c = make_class(NULL);
    assert_false(c->prewarm.enabled);
    workspace_class_free(c);

    static const struct {
        const char *prewarm;
        const char *error;
    } bad[] = {
        {"{\"lead\":\"5s\"}", "spec.preWarm.lead: must be between 10s and 12h"},
        {"{\"lead\":\"13h\"}", "spec.preWarm.lead: must be between 10s and 12h"},
        {"{\"lead\":\"soon\"}", "spec.preWarm.lead: \"soon\" is not a duration"},
        {"{\"grace\":\"1s\"}", "spec.preWarm.grace: must be between 10s and 12h"},
        {"{\"maxConcurrent\":0}", "spec.preWarm.maxConcurrent: must be between 1 and 10000"},
        {"{\"skipAfterDays\":1.5}", "spec.preWarm.skipAfterDays: must be a whole number"},
        {"{\"enabled\":\"yes\"}", "spec.preWarm.enabled: must be true or false"},
        {"[]", "spec.preWarm: must be an object"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char json[512];
        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"images\":{\"allowed\":[\"x/*\"],"
                 "\"default\":\"x/y\"},\"home\":{\"size\":\"1Gi\"},\"preWarm\":%s}}",
                 bad[i].prewarm);
        cJSON *obj = cJSON_Parse(json);
        assert_non_null(obj);
        char *err = NULL;
        assert_int_equal(workspace_class_decode(obj, &c, &err), -EINVAL);
        if (!err || !strstr(err, bad[i].error))
            fail_msg("%s: \"%s\", wanted \"%s\"", bad[i].prewarm, err ? err : "", bad[i].error);
        free(err);
        cJSON_Delete(obj);
    }

    struct workspace *ws =
        make_ws("\"preWarm\":{\"at\":\"07:05\",\"days\":[\"Sun\",\"Sat\"]}", "", "");
    assert_int_equal(ws->prewarm->minute, 7 * 60 + 5);
    assert_int_equal(ws->prewarm->days, (1u << 0) | (1u << 6));
    assert_string_equal(ws->prewarm->time_zone, "UTC");
    assert_null(ws->spec_error);
    workspace_free(ws);
    /* unreadable: named, and the spec is not half used */
    static const struct {
        const char *spec;
        const char *error;
    } bad_ws[] = {
        {"\"preWarm\":{\"days\":[\"Mon\"]}", "spec.preWarm.at: required"},
        {"\"preWarm\":{\"at\":\"24:00\"}", "spec.preWarm.at: \"24:00\" is not a time of day"},
        {"\"preWarm\":{\"at\":\"08:00\",\"days\":[\"monday\"]}", "spec.preWarm.days[0]:"},
        {"\"preWarm\":{\"at\":\"08:00\",\"days\":\"Mon\"}", "spec.preWarm.days: must be a list"},
        {"\"preWarm\":{\"at\":\"08:00\",\"timeZone\":\"../etc\"}",
         "spec.preWarm.timeZone: \"../etc\" is not a time zone name"},
        {"\"preWarm\":{\"at\":\"08:00\",\"timeZone\":7}", "spec.preWarm.timeZone: must be"},
        {"\"preWarm\":\"08:00\"", "spec.preWarm: must be an object"},
    };
    for (size_t i = 0; i < sizeof(bad_ws) / sizeof(bad_ws[0]); i++) {
        ws = make_ws(bad_ws[i].spec, "", "");
        if (!ws->spec_error || !strstr(ws->spec_error, bad_ws[i].error))
            fail_msg("%s: \"%s\", wanted \"%s\"", bad_ws[i].spec,
                     ws->spec_error ? ws->spec_error : "", bad_ws[i].error);
        assert_null(ws->prewarm);
        workspace_free(ws);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_when),
        cmocka_unit_test(test_time_zone),
        cmocka_unit_test(test_when_not),
        cmocka_unit_test(test_not_asked),
        cmocka_unit_test(test_lead),
        cmocka_unit_test(test_resume_counted),
        cmocka_unit_test(test_priority_within_quota),
        cmocka_unit_test(test_used_or_not),
        cmocka_unit_test(test_paused_unused),
        cmocka_unit_test(test_yield),
        cmocka_unit_test(test_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
