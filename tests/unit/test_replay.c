/*
 * replay: a day of one GPU notebook under decide() on a virtual clock.
 * The owner works 09:00-12:00 and 13:00-17:30; a training cell keeps the
 * kernel busy from 14:00 to 20:00 with nobody at the notebook. With "idle
 * after 30m" the workspace pauses at night, over lunch and after the
 * training, never while the kernel is busy, and resumes when its owner
 * comes back; the accelerator time adds up.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "workspace/replay.h"
#include "workspace/workspace.h"

/* 2027-01-04T00:00:00Z, a Monday */
#define DAY0 INT64_C(1799020800000)
#define SEC INT64_C(1000)
#define MINUTE (60 * SEC)
#define HOUR (60 * MINUTE)

static struct workspace_class *gpu_class(const char *idle_after, const char *extra)
{
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"gpu-t4\"},\"spec\":{"
             "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],"
             "\"default\":\"quay.io/jupyter/base-notebook:2025-10-20\"},"
             "\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\",\"product\":\"Tesla-T4\"},"
             "\"home\":{\"size\":\"10Gi\"},"
             "\"activity\":{\"application\":\"Jupyter\",\"interval\":\"60s\"},"
             "\"idle\":{\"after\":\"%s\",\"minRunning\":\"5m\",\"warnBefore\":\"2m\"}%s}}",
             idle_after, extra);
    cJSON *obj = cJSON_Parse(json);
    assert_non_null(obj);
    struct workspace_class *c = NULL;
    char *err = NULL;
    if (workspace_class_decode(obj, &c, &err) < 0)
        fail_msg("class: %s", err ? err : "?");
    cJSON_Delete(obj);
    return c;
}

static const struct replay_span day[] = {
    {DAY0 + 9 * HOUR, DAY0 + 12 * HOUR, REPLAY_PERSON},
    {DAY0 + 13 * HOUR, DAY0 + 17 * HOUR + 30 * MINUTE, REPLAY_PERSON},
    {DAY0 + 14 * HOUR, DAY0 + 20 * HOUR, REPLAY_KERNEL},
};

static struct replay_input day_input(const struct workspace_class *c)
{
    return (struct replay_input){
        .cls = c,
        .start_ms = DAY0,
        .end_ms = DAY0 + 24 * HOUR,
        .spans = day,
        .n_spans = sizeof(day) / sizeof(day[0]),
        .times = {.snapshot_ms = 2 * MINUTE, .restore_ms = 12 * SEC, .cold_start_ms = 3 * MINUTE},
    };
}

static void print_result(const char *what, const struct replay_result *r)
{
    print_message("  %s: %lld steps; held %.2f h (in use %.2f h), returned %.2f h of %.2f h; "
                  "in use %.2f h; %lld pauses (%lld idle, %lld busy), %lld resumes, %lld "
                  "interruptions; waited %.0f s, restores %.0f s, snapshots %.0f s\n",
                  what, (long long)r->steps, r->held_s / 3600, r->held_in_use_s / 3600,
                  r->returned_s / 3600, r->window_s / 3600, r->in_use_s / 3600,
                  (long long)r->pauses, (long long)r->idle_pauses, (long long)r->busy_pauses,
                  (long long)r->person_resumes, (long long)r->interruptions, r->waited_s,
                  r->restore_s, r->snapshot_s);
}

static void test_a_day(void **state)
{
    (void)state;
    struct workspace_class *c = gpu_class("30m", "");
    struct replay_input in = day_input(c);
    struct replay_result r;
    assert_int_equal(replay_run(&in, &r), 0);
    print_result("idle after 30m", &r);

    /* Night (after the first start), lunch, and after the training. */
    assert_int_equal(r.pauses, 3);
    assert_int_equal(r.idle_pauses, 3);
    assert_int_equal(r.busy_pauses, 0);
    /* The owner finds it paused in the morning and after lunch. */
    assert_int_equal(r.person_resumes, 2);
    assert_int_equal(r.interruptions, 0);
    /* Each resume waited for a cold start (no snapshot backend). */
    assert_true(r.waited_s >= 2 * 180 && r.waited_s <= 2 * 180 + 2 * 60);
    assert_true(r.snapshot_s == 0);
    /* Every second of the window is held or returned; all the use was
     * served by a held accelerator (the kernel's 14:00-20:00 included);
     * people waited only for the starts. */
    assert_true(r.held_s + r.returned_s == r.window_s);
    double use_h = 3 + 7; /* 09-12, 13-20 */
    assert_true(r.in_use_s == use_h * 3600);
    assert_true(r.held_in_use_s >= r.in_use_s - r.waited_s - 1);
    /* Held beyond the use: 30 min idle + warning + probe at each pause,
     * minRunning after the first start, the starts themselves. */
    assert_true(r.held_s > r.in_use_s);
    assert_true(r.held_s < r.in_use_s + 3 * 3600);
    assert_true(r.returned_s > 12 * 3600);
    workspace_class_free(c);
}

/* Rounds that got no answer (a record's 'u') are no use, and a failed
 * round withdraws the pause announced before it, as the controller's
 * does: the pause comes a full warning after the answers are back. */
static void test_unanswered_rounds(void **state)
{
    (void)state;
    struct workspace_class *c = gpu_class("30m", "");
    const struct replay_span morning[] = {{DAY0 + 9 * HOUR, DAY0 + 12 * HOUR, REPLAY_PERSON}};
    const struct replay_span failing[] = {
        {DAY0 + 9 * HOUR, DAY0 + 12 * HOUR, REPLAY_PERSON},
        {DAY0 + 12 * HOUR + 29 * MINUTE, DAY0 + 12 * HOUR + 30 * MINUTE + 30 * SEC,
         REPLAY_UNANSWERED},
    };
    struct replay_input in = {
        .cls = c,
        .start_ms = DAY0 + 9 * HOUR,
        .end_ms = DAY0 + 14 * HOUR,
        .spans = morning,
        .n_spans = 1,
        .times = {.cold_start_ms = 3 * MINUTE},
    };
    struct replay_result plain, unanswered;
    assert_int_equal(replay_run(&in, &plain), 0);
    in.spans = failing;
    in.n_spans = 2;
    assert_int_equal(replay_run(&in, &unanswered), 0);
    print_message(
        "  paused at 12:%02lld with answers, 12:%02lld with none from 12:29 to 12:30:30\n",
        (long long)((plain.pause_requested_ms[0] - DAY0 - 12 * HOUR) / MINUTE),
        (long long)((unanswered.pause_requested_ms[0] - DAY0 - 12 * HOUR) / MINUTE));
    assert_int_equal(plain.pauses, 1);
    assert_int_equal(unanswered.pauses, 1);
    /* 30 min after the owner left, to the probe round. */
    assert_true(plain.pause_requested_ms[0] >= DAY0 + 12 * HOUR + 30 * MINUTE);
    assert_true(plain.pause_requested_ms[0] <= DAY0 + 12 * HOUR + 31 * MINUTE);
    /* Withdrawn at 12:29, announced again with the full 2 min warning. */
    assert_true(unanswered.pause_requested_ms[0] >= DAY0 + 12 * HOUR + 32 * MINUTE);
    /* No answer is no use. */
    assert_true(unanswered.in_use_s == plain.in_use_s);
    workspace_class_free(c);
}

/* A longer idle time gives back less, and the lunch break is no longer
 * long enough to pause in. */
static void test_policies_compare(void **state)
{
    (void)state;
    struct workspace_class *short_c = gpu_class("30m", ""), *long_c = gpu_class("2h", "");
    struct replay_input a = day_input(short_c), b = day_input(long_c);
    struct replay_result ra, rb;
    assert_int_equal(replay_run(&a, &ra), 0);
    assert_int_equal(replay_run(&b, &rb), 0);
    print_result("idle after 30m", &ra);
    print_result("idle after 2h", &rb);
    assert_true(rb.returned_s < ra.returned_s);
    assert_int_equal(rb.pauses, 2); /* night and after the training; not over lunch */
    assert_int_equal(rb.person_resumes, 1);
    assert_int_equal(rb.busy_pauses, 0);
    workspace_class_free(short_c);
    workspace_class_free(long_c);
}

/* The owner starts at 09:00 on weekdays: pre-warmed 15 minutes before,
 * the notebook is ready when they come, and the morning's wait is gone; the
 * pre-warm counts as used. Lunch is not a first arrival. */
static void test_prewarm(void **state)
{
    (void)state;
    struct workspace_class *plain = gpu_class("30m", ""),
                           *warm = gpu_class("30m", ",\"preWarm\":{\"lead\":\"15m\"}");
    struct workspace_prewarm owner = {.days = 0x3e, .minute = 9 * 60, .time_zone = "UTC"};
    struct replay_input a = day_input(plain), b = day_input(warm);
    b.prewarm = &owner;
    struct replay_result ra, rb;
    assert_int_equal(replay_run(&a, &ra), 0);
    assert_int_equal(replay_run(&b, &rb), 0);
    print_result("idle after 30m", &ra);
    print_result("idle after 30m, pre-warmed for 09:00", &rb);
    assert_int_equal(ra.first_arrivals, 1);
    assert_int_equal(ra.first_arrivals_ready, 0);
    assert_int_equal(rb.first_arrivals, 1);
    assert_int_equal(rb.first_arrivals_ready, 1);
    assert_int_equal(rb.prewarms, 1);
    assert_int_equal(rb.prewarms_used, 1);
    assert_int_equal(rb.prewarms_unused, 0);
    /* only the resume after lunch is a person's, and only it is waited for */
    assert_int_equal(rb.person_resumes, 1);
    assert_true(rb.waited_s < ra.waited_s);
    assert_true(rb.waited_s >= 180 && rb.waited_s <= 180 + 60);
    /* the price: the 15 minutes before 09:00 held */
    assert_true(rb.held_s > ra.held_s);
    assert_true(rb.held_s - ra.held_s < 20 * 60);
    assert_int_equal(rb.busy_pauses, 0);

    /* Nobody comes on that day: the pre-warm is paused again, unused. */
    struct replay_span none[] = {{DAY0 + 14 * HOUR, DAY0 + 14 * HOUR + 1, REPLAY_KERNEL}};
    b.spans = none;
    b.n_spans = 1;
    assert_int_equal(replay_run(&b, &rb), 0);
    print_result("pre-warmed, nobody came", &rb);
    assert_int_equal(rb.prewarms, 1);
    assert_int_equal(rb.prewarms_unused, 1);
    assert_int_equal(rb.first_arrivals, 0);
    workspace_class_free(plain);
    workspace_class_free(warm);
}

static void test_bad_input(void **state)
{
    (void)state;
    struct workspace_class *c = gpu_class("30m", "");
    struct replay_input in = day_input(c);
    struct replay_result r;
    in.end_ms = in.start_ms;
    assert_int_equal(replay_run(&in, &r), -EINVAL);
    in = day_input(c);
    in.cls = NULL;
    assert_int_equal(replay_run(&in, &r), -EINVAL);
    struct replay_span backwards = {DAY0 + HOUR, DAY0, REPLAY_PERSON};
    in = day_input(c);
    in.spans = &backwards;
    in.n_spans = 1;
    assert_int_equal(replay_run(&in, &r), -EINVAL);
    workspace_class_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_day),     cmocka_unit_test(test_policies_compare),
        cmocka_unit_test(test_prewarm),   cmocka_unit_test(test_unanswered_rounds),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests_name("replay", tests, NULL, NULL);
}
