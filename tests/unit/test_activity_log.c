/*
 * activity_log_state(): the state a workspace's activity record notes,
 * from its decided status and the latest probe round; activity_log_note():
 * what the record keeps of the states noted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <stdlib.h>
#include <uv.h>

#include "activity/probe_result.h"
#include "activity/record.h"
#include "controller/activity_log.h"
#include "kube/client.h"
#include "kube/config.h"
#include "workspace/idle.h"
#include "workspace/workspace.h"

#define NOW INT64_C(1799020800000)
#define MINUTE INT64_C(60000)

static const struct row {
    const char *what;
    enum workspace_state state;
    int pre_warmed;
    int probed; /* 0: no round; 1: ok; -1: failed */
    int busy;
    double gpu;
    const char *source;   /* status.activity.lastActivitySource */
    int64_t activity_ago; /* status.activity.lastActivityTime, before now */
    char want;
} rows[] = {
    {"paused", WS_STATE_PAUSED, 0, 0, 0, 0, NULL, 0, 'p'},
    {"failed", WS_STATE_FAILED, 0, 0, 0, 0, NULL, 0, 'p'},
    {"pausing (a snapshot is taken)", WS_STATE_PAUSING, 0, 1, 0, 0, NULL, 0, 'p'},
    {"a person's resume", WS_STATE_RESUMING, 0, 0, 0, 0, NULL, 0, 'w'},
    {"a person waits for capacity", WS_STATE_WAITING_FOR_CAPACITY, 0, 0, 0, 0, NULL, 0, 'w'},
    {"a pre-warm waits: nobody does", WS_STATE_WAITING_FOR_CAPACITY, 1, 0, 0, 0, NULL, 0, 'p'},
    {"a person waits in Kueue's queue", WS_STATE_QUEUED, 0, 0, 0, 0, NULL, 0, 'w'},
    {"a pre-warm queued: nobody waits", WS_STATE_QUEUED, 1, 0, 0, 0, NULL, 0, 'p'},
    {"running, no round yet", WS_STATE_RUNNING, 0, 0, 0, 0, "start", 0, 'u'},
    {"running, the probe failed", WS_STATE_RUNNING, 0, -1, 0, 0, "start", 0, 'u'},
    {"the GPU busy", WS_STATE_RUNNING, 0, 1, 0, 80, "gpu", 0, 'g'},
    {"the GPU below the threshold", WS_STATE_RUNNING, 0, 1, 0, 3, "start", 0, 'i'},
    {"a kernel busy", WS_STATE_RUNNING, 0, 1, 1, 0, "jupyter", 0, 'k'},
    {"a person a minute ago", WS_STATE_RUNNING, 0, 1, 0, 0, "jupyter", MINUTE, 'a'},
    {"the round saw a person a moment ago", WS_STATE_RUNNING, 0, 2, 0, 0, "start", 0, 'a'},
    {"the round saw a person before the round before", WS_STATE_RUNNING, 0, 3, 0, 0, "start", 0,
     'i'},
    {"a person by the annotation", WS_STATE_RUNNING, 0, 1, 0, 0, "annotation", MINUTE, 'a'},
    {"a person an hour ago: idle", WS_STATE_RUNNING, 0, 1, 0, 0, "jupyter", 60 * MINUTE, 'i'},
    {"kept alive: no person", WS_STATE_RUNNING, 0, 1, 0, 0, "keepAlive", 0, 'i'},
};

static void test_states(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *row = &rows[i];
        struct workspace_status st;
        workspace_status_init(&st);
        assert_int_equal(workspace_status_own(&st), 0);
        st.state = row->state;
        st.state_since_ms = NOW - 30 * MINUTE;
        st.last_resume->pre_warmed = row->pre_warmed;
        st.activity->last_activity_source = (char *)row->source;
        st.activity->last_activity_ms = NOW - row->activity_ago;
        struct activity_observation obs = {.probed_at_ms = NOW - 10000};
        probe_result_init(&obs.result, row->gpu > 0 ? "jupyter+gpu" : "jupyter");
        if (row->probed < 0)
            probe_result_fail(&obs.result, "jupyter", "connection refused");
        obs.result.busy = row->busy;
        if (row->probed == 2) /* the application's last activity, just before the round */
            obs.result.last_activity_ms = obs.probed_at_ms - 5000;
        if (row->probed == 3) /* ... and one from before the round before */
            obs.result.last_activity_ms = obs.probed_at_ms - MINUTE - 5000;
        obs.result.gpu_utilisation = row->gpu;
        int64_t activity_ms = -1;
        char got = activity_log_state(&st, row->probed ? &obs : NULL, 5, NOW, MINUTE, &activity_ms);
        /* the newest activity known: the round's, else the status's */
        int64_t want_ms = st.activity->last_activity_ms;
        if (row->probed > 0 && obs.result.last_activity_ms > want_ms)
            want_ms = obs.result.last_activity_ms;
        assert_int_equal(activity_ms, want_ms);
        if (got != row->want)
            fail_msg("%s: '%c', wanted '%c'", row->what, got, row->want);
        st.activity->last_activity_source = NULL;
        workspace_status_clear(&st);
    }
}

static int log_ready(uv_loop_t *loop, const struct activity_log *l)
{
    for (int i = 0; i < 1000 && !activity_log_ready(l); i++)
        uv_run(loop, UV_RUN_ONCE);
    return activity_log_ready(l);
}

/* The log notes through the record's rule (activity_record_note_state()):
 * a resume whose pod was ready within the second, not yet probed, is
 * still the person's wait, not an unprobed run. Nothing listens at the
 * client's server: the log's list fails, so it starts afresh, and its
 * writes fail without touching the record. */
static void test_note_keeps_the_resume_wait(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct kube_config cfg = {.server = "https://127.0.0.1:9", .token = "t", .namespace = "team"};
    struct kube_client *client = NULL;
    assert_int_equal(kube_client_new(&loop, &cfg, NULL, &client, NULL), 0);
    struct activity_log *l = NULL;
    assert_int_equal(activity_log_new(client, NULL, &l), 0);
    assert_int_equal(activity_log_start(l), 0);
    assert_true(log_ready(&loop, l));

    struct workspace ws = {.ns = "team", .name = "nb", .uid = "u-1"};
    const int64_t s = 1000;
    activity_log_note(l, "team/nb", &ws, 110 * s, 'p', 0);
    activity_log_note(l, "team/nb", &ws, 120 * s, 'w', 0);       /* a person resumes it */
    activity_log_note(l, "team/nb", &ws, 120 * s + 400, 'u', 0); /* ready, not yet probed */
    activity_log_note(l, "team/nb", &ws, 121 * s, 'a', 121 * s); /* the round sees them */
    const struct activity_record *r = activity_log_record(l, "team/nb");
    assert_non_null(r);
    char *t = NULL;
    assert_int_equal(activity_record_text(r, 125, 4096, &t), 0);
    assert_string_equal(t, "v1 110 p10 w1 a4");
    free(t);

    activity_log_free(l);
    kube_client_close(client);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_states),
        cmocka_unit_test(test_note_keeps_the_resume_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
