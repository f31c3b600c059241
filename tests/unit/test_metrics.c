/* The metrics registry: the exact exposition text of each type, escaping,
 * ordering, the series limit, and gauges replaced wholesale. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/metrics.h"
#include "metrics/registry.h"
#include "workspace/workspace.h"

#define DROPPED_HEAD                                                                               \
    "# HELP hibernator_metrics_series_dropped_total Series not recorded because their family "     \
    "already had the most allowed.\n"                                                              \
    "# TYPE hibernator_metrics_series_dropped_total counter\n"

static char *render(struct metrics_registry *r)
{
    struct buf b;
    buf_init(&b, 64 * 1024 * 1024);
    assert_int_equal(metrics_registry_render(r, &b), 0);
    char *text = buf_steal(&b);
    assert_non_null(text);
    return text;
}

static struct metrics_registry *registry(size_t max_series)
{
    struct metrics_registry *r = NULL;
    assert_int_equal(metrics_registry_new(max_series, &r), 0);
    return r;
}

static void test_empty(void **state)
{
    (void)state;
    struct metrics_registry *r = registry(0);
    char *text = render(r);
    assert_string_equal(text, DROPPED_HEAD "hibernator_metrics_series_dropped_total 0\n");
    free(text);
    metrics_registry_free(r);
}

static void test_counter(void **state)
{
    (void)state;
    struct metrics_registry *r = registry(0);
    struct metric_family *f = NULL;
    assert_int_equal(metrics_counter_new(r, "a_total", "Things done.",
                                         (const char *[]){"kind", "result", NULL}, &f),
                     0);
    /* Series come out sorted by label values, whatever the order they came in. */
    assert_int_equal(metrics_counter_add(f, (const char *[]){"pod", "ok"}, 1), 0);
    assert_int_equal(metrics_counter_add(f, (const char *[]){"claim", "ok"}, 2.5), 0);
    assert_int_equal(metrics_counter_add(f, (const char *[]){"pod", "error"}, 1), 0);
    assert_int_equal(metrics_counter_add(f, (const char *[]){"pod", "ok"}, 1), 0);
    assert_int_equal(metrics_counter_add(f, (const char *[]){"pod", "ok"}, -1), -EINVAL);
    assert_int_equal(metrics_counter_add(f, (const char *[]){"pod", "ok"}, NAN), -EINVAL);
    assert_int_equal(metrics_gauge_set(f, (const char *[]){"pod", "ok"}, 1), -EINVAL);
    char *text = render(r);
    assert_string_equal(text, "# HELP a_total Things done.\n"
                              "# TYPE a_total counter\n"
                              "a_total{kind=\"claim\",result=\"ok\"} 2.5\n"
                              "a_total{kind=\"pod\",result=\"error\"} 1\n"
                              "a_total{kind=\"pod\",result=\"ok\"} 2\n" DROPPED_HEAD
                              "hibernator_metrics_series_dropped_total 0\n");
    free(text);
    metrics_registry_free(r);
}

static void test_gauge(void **state)
{
    (void)state;
    struct metrics_registry *r = registry(0);
    struct metric_family *plain = NULL, *labelled = NULL;
    assert_int_equal(metrics_gauge_new(r, "b", "Plain.", NULL, &plain), 0);
    assert_int_equal(metrics_gauge_new(r, "c", "Labelled.", (const char *[]){"x", NULL}, &labelled),
                     0);
    assert_int_equal(metrics_gauge_set(plain, NULL, -3), 0);
    assert_int_equal(metrics_gauge_add(plain, NULL, 0.5), 0);
    assert_int_equal(metrics_gauge_set(labelled, (const char *[]){NULL}, 1e9), 0);
    assert_int_equal(metrics_gauge_set(labelled, (const char *[]){"big"}, 1234567), 0);
    assert_int_equal(metrics_gauge_set(labelled, (const char *[]){"small"}, 0.0001), 0);
    assert_int_equal(metrics_gauge_set(labelled, (const char *[]){"tiny"}, 0.00001), 0);
    assert_int_equal(metrics_gauge_set(labelled, (const char *[]){"inf"}, INFINITY), 0);
    assert_int_equal(metrics_gauge_set(labelled, (const char *[]){"third"}, 1.0 / 3), 0);
    assert_int_equal(metrics_gauge_set(labelled, (const char *[]){"round"}, 123456), 0);
    char *text = render(r);
    assert_string_equal(text, "# HELP b Plain.\n"
                              "# TYPE b gauge\n"
                              "b -2.5\n"
                              "# HELP c Labelled.\n"
                              "# TYPE c gauge\n"
                              "c{x=\"\"} 1e+09\n"
                              "c{x=\"big\"} 1.234567e+06\n"
                              "c{x=\"inf\"} +Inf\n"
                              "c{x=\"round\"} 123456\n"
                              "c{x=\"small\"} 0.0001\n"
                              "c{x=\"third\"} 0.3333333333333333\n"
                              "c{x=\"tiny\"} 1e-05\n" DROPPED_HEAD
                              "hibernator_metrics_series_dropped_total 0\n");
    free(text);
    metrics_registry_free(r);
}

static void test_histogram(void **state)
{
    (void)state;
    struct metrics_registry *r = registry(0);
    struct metric_family *f = NULL;
    const double bounds[] = {0.1, 1, 10};
    assert_int_equal(metrics_histogram_new(r, "d_seconds", "Durations.",
                                           (const char *[]){"step", NULL}, bounds, 3, &f),
                     0);
    assert_int_equal(metrics_histogram_observe(f, (const char *[]){"b"}, 0.1), 0); /* le is <= */
    assert_int_equal(metrics_histogram_observe(f, (const char *[]){"b"}, 5), 0);
    assert_int_equal(metrics_histogram_observe(f, (const char *[]){"b"}, 50), 0);
    assert_int_equal(metrics_histogram_observe(f, (const char *[]){"a"}, 0.5), 0);
    char *text = render(r);
    assert_string_equal(text, "# HELP d_seconds Durations.\n"
                              "# TYPE d_seconds histogram\n"
                              "d_seconds_bucket{step=\"a\",le=\"0.1\"} 0\n"
                              "d_seconds_bucket{step=\"a\",le=\"1\"} 1\n"
                              "d_seconds_bucket{step=\"a\",le=\"10\"} 1\n"
                              "d_seconds_bucket{step=\"a\",le=\"+Inf\"} 1\n"
                              "d_seconds_sum{step=\"a\"} 0.5\n"
                              "d_seconds_count{step=\"a\"} 1\n"
                              "d_seconds_bucket{step=\"b\",le=\"0.1\"} 1\n"
                              "d_seconds_bucket{step=\"b\",le=\"1\"} 1\n"
                              "d_seconds_bucket{step=\"b\",le=\"10\"} 2\n"
                              "d_seconds_bucket{step=\"b\",le=\"+Inf\"} 3\n"
                              "d_seconds_sum{step=\"b\"} 55.1\n"
                              "d_seconds_count{step=\"b\"} 3\n" DROPPED_HEAD
                              "hibernator_metrics_series_dropped_total 0\n");
    free(text);

    /* Without labels: the one series from the start, le alone. */
    struct metric_family *g = NULL;
    const double tiny[] = {1e-08, 0.005};
    assert_int_equal(metrics_histogram_new(r, "e_seconds", "", NULL, tiny, 2, &g), 0);
    assert_int_equal(metrics_histogram_observe(g, NULL, 0), 0);
    text = render(r);
    assert_non_null(strstr(text, "# HELP e_seconds \n"
                                 "# TYPE e_seconds histogram\n"
                                 "e_seconds_bucket{le=\"1e-08\"} 1\n"
                                 "e_seconds_bucket{le=\"0.005\"} 1\n"
                                 "e_seconds_bucket{le=\"+Inf\"} 1\n"
                                 "e_seconds_sum 0\n"
                                 "e_seconds_count 1\n"));
    free(text);
    metrics_registry_free(r);
}

static void test_escaping(void **state)
{
    (void)state;
    struct metrics_registry *r = registry(0);
    struct metric_family *f = NULL;
    assert_int_equal(metrics_counter_new(r, "f_total", "Help with \\ and\nnewline and \"quotes\".",
                                         (const char *[]){"v", NULL}, &f),
                     0);
    assert_int_equal(metrics_counter_add(f, (const char *[]){"a\\b\"c\nd"}, 1), 0);
    char *text = render(r);
    assert_string_equal(text, "# HELP f_total Help with \\\\ and\\nnewline and \"quotes\".\n"
                              "# TYPE f_total counter\n"
                              "f_total{v=\"a\\\\b\\\"c\\nd\"} 1\n" DROPPED_HEAD
                              "hibernator_metrics_series_dropped_total 0\n");
    free(text);
    metrics_registry_free(r);
}

static void test_names(void **state)
{
    (void)state;
    struct metrics_registry *r = registry(0);
    struct metric_family *f = NULL;
    const double b[] = {1, 2}, bad[] = {2, 1}, inf[] = {1, INFINITY};
    assert_int_equal(metrics_counter_new(r, "ok:name_1", "", NULL, &f), 0);
    assert_int_equal(metrics_counter_new(r, "ok:name_1", "", NULL, &f), -EEXIST);
    assert_int_equal(metrics_counter_new(r, "1bad", "", NULL, &f), -EINVAL);
    assert_int_equal(metrics_counter_new(r, "bad-name", "", NULL, &f), -EINVAL);
    assert_int_equal(metrics_counter_new(r, "", "", NULL, &f), -EINVAL);
    assert_int_equal(metrics_counter_new(r, "g", "", (const char *[]){"a:b", NULL}, &f), -EINVAL);
    assert_int_equal(metrics_counter_new(r, "g", "", (const char *[]){"__x", NULL}, &f), -EINVAL);
    assert_int_equal(metrics_counter_new(r, "g", "", (const char *[]){"a", "a", NULL}, &f),
                     -EINVAL);
    assert_int_equal(metrics_histogram_new(r, "h", "", (const char *[]){"le", NULL}, b, 2, &f),
                     -EINVAL);
    assert_int_equal(metrics_histogram_new(r, "h", "", NULL, bad, 2, &f), -EINVAL);
    assert_int_equal(metrics_histogram_new(r, "h", "", NULL, inf, 2, &f), -EINVAL);
    assert_int_equal(metrics_histogram_new(r, "h", "", NULL, b, 2, &f), 0);
    metrics_registry_free(r);
}

/* The default limit: 10000 series per family, the next one dropped and
 * counted, existing series still updated. */
static void test_series_limit(void **state)
{
    (void)state;
    struct metrics_registry *r = registry(0);
    struct metric_family *f = NULL;
    assert_int_equal(metrics_counter_new(r, "g_total", "", (const char *[]){"n", NULL}, &f), 0);
    char v[32];
    for (int i = 0; i < METRICS_MAX_SERIES; i++) {
        snprintf(v, sizeof(v), "%05d", i);
        assert_int_equal(metrics_counter_add(f, (const char *[]){v}, 1), 0);
    }
    assert_int_equal(metrics_counter_add(f, (const char *[]){"new"}, 1), -ENOSPC);
    assert_int_equal(metrics_counter_add(f, (const char *[]){"newer"}, 1), -ENOSPC);
    assert_int_equal(metrics_counter_add(f, (const char *[]){"00000"}, 1), 0);
    char *text = render(r);
    assert_non_null(strstr(text, "g_total{n=\"00000\"} 2\n"));
    assert_non_null(strstr(text, "g_total{n=\"09999\"} 1\n"));
    assert_null(strstr(text, "new"));
    assert_non_null(strstr(text, "\nhibernator_metrics_series_dropped_total 2\n"));
    free(text);
    metrics_registry_free(r);
}

static void test_gauge_replaced(void **state)
{
    (void)state;
    struct metrics_registry *r = registry(2);
    struct metric_family *f = NULL;
    assert_int_equal(
        metrics_gauge_new(r, "ws", "Workspaces.", (const char *[]){"class", "state", NULL}, &f), 0);
    struct metrics_gauge_update *u = NULL;
    assert_int_equal(metrics_gauge_update_begin(f, &u), 0);
    metrics_gauge_update_add(u, (const char *[]){"gpu", "Running"}, 1);
    metrics_gauge_update_add(u, (const char *[]){"gpu", "Running"}, 1);
    metrics_gauge_update_add(u, (const char *[]){"cpu", "Paused"}, 1);
    /* Not seen until the commit. */
    char *text = render(r);
    assert_string_equal(text, DROPPED_HEAD "hibernator_metrics_series_dropped_total 0\n"
                                           "# HELP ws Workspaces.\n"
                                           "# TYPE ws gauge\n");
    free(text);
    metrics_gauge_update_commit(u);
    text = render(r);
    assert_string_equal(text, DROPPED_HEAD "hibernator_metrics_series_dropped_total 0\n"
                                           "# HELP ws Workspaces.\n"
                                           "# TYPE ws gauge\n"
                                           "ws{class=\"cpu\",state=\"Paused\"} 1\n"
                                           "ws{class=\"gpu\",state=\"Running\"} 2\n");
    free(text);

    /* The next set replaces it whole: what is gone disappears; past the
     * limit (2 here) a series is dropped and counted at the commit. */
    assert_int_equal(metrics_gauge_update_begin(f, &u), 0);
    metrics_gauge_update_add(u, (const char *[]){"gpu", "Paused"}, 1);
    metrics_gauge_update_add(u, (const char *[]){"gpu", "Pending"}, 1);
    assert_int_equal(metrics_gauge_update_add(u, (const char *[]){"gpu", "Running"}, 1), -ENOSPC);
    metrics_gauge_update_commit(u);
    text = render(r);
    assert_string_equal(text, DROPPED_HEAD "hibernator_metrics_series_dropped_total 1\n"
                                           "# HELP ws Workspaces.\n"
                                           "# TYPE ws gauge\n"
                                           "ws{class=\"gpu\",state=\"Paused\"} 1\n"
                                           "ws{class=\"gpu\",state=\"Pending\"} 1\n");
    free(text);

    /* An abandoned update changes nothing. */
    assert_int_equal(metrics_gauge_update_begin(f, &u), 0);
    metrics_gauge_update_add(u, (const char *[]){"x", "y"}, 1);
    metrics_gauge_update_abort(u);
    text = render(r);
    assert_null(strstr(text, "\"x\""));
    free(text);
    struct metric_family *c = NULL;
    assert_int_equal(metrics_counter_new(r, "z_total", "", NULL, &c), 0);
    assert_int_equal(metrics_gauge_update_begin(c, &u), -EINVAL);
    metrics_registry_free(r);
}

static void test_format_value(void **state)
{
    (void)state;
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0, "0"},
        {1, "1"},
        {-1, "-1"},
        {0.25, "0.25"},
        {100, "100"},
        {999999, "999999"},
        {1e6, "1e+06"},
        {1.5e-7, "1.5e-07"},
        {0.001, "0.001"},
        {60, "60"},
        {2.5e10, "2.5e+10"},
        {NAN, "NaN"},
        {-INFINITY, "-Inf"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[40];
        metrics_format_value(cases[i].v, out, sizeof(out));
        assert_string_equal(out, cases[i].text);
    }
}

/* The controller's families: an outcome moves each of its series once. */
static void test_controller_outcome(void **state)
{
    (void)state;
    struct metrics_registry *r = registry(0);
    struct controller_metrics *m = NULL;
    assert_int_equal(controller_metrics_new(r, "1.2.3", &m), 0);
    struct controller_metrics *again = NULL;
    assert_int_equal(controller_metrics_new(r, "1.2.3", &again), -EEXIST);
    struct workspace_outcome o = {
        .paused = 1,
        .pause_reason = "idle_timeout",
        .pause_memory = PAUSE_MEMORY_SNAPSHOT,
        .resumed = RESTORE_SOURCE_SNAPSHOT,
        .resume_seconds = 12.5,
        .snapshot = SNAPSHOT_RESULT_READY,
        .snapshot_seconds = 3.5,
        .capacity_wait_ended = 1,
        .capacity_wait_seconds = 30,
        .accelerator_seconds_released = 60.25,
    };
    controller_metrics_outcome(m, "team-a", "gpu", &o);
    controller_metrics_outcome(NULL, "team-a", "gpu", &o); /* metrics off */
    controller_metrics_probe_round(m, "jupyter+gpu", "Active");
    controller_metrics_reconciled(m, 1, 0, 0.02);
    controller_metrics_set_leader(m, 1);
    char *text = render(r);
    assert_non_null(strstr(text, "\nhibernator_client_requests_dropped_total 0\n"));
    assert_non_null(strstr(text, "\nhibernator_client_connection_pokes_total 0\n"));
    free(text);
    controller_metrics_client(m, 3, 1);
    controller_metrics_client(m, 3, 1); /* totals, not increments */
    controller_metrics_client(m, 5, 2);
    controller_metrics_client(NULL, 6, 3); /* metrics off */
    text = render(r);
    static const char *const lines[] = {
        "\nhibernator_pauses_total{namespace=\"team-a\",class=\"gpu\",reason=\"idle_timeout\","
        "memory=\"snapshot\"} 1\n",
        "\nhibernator_resumes_total{namespace=\"team-a\",class=\"gpu\",restore_source="
        "\"snapshot\"} 1\n",
        "\nhibernator_resume_to_ready_seconds_bucket{restore_source=\"snapshot\",le=\"10\"} 0\n"
        "hibernator_resume_to_ready_seconds_bucket{restore_source=\"snapshot\",le=\"20\"} 1\n",
        "\nhibernator_resume_to_ready_seconds_sum{restore_source=\"snapshot\"} 12.5\n",
        "\nhibernator_snapshots_total{namespace=\"team-a\",class=\"gpu\",result=\"ready\"} 1\n",
        "\nhibernator_snapshot_duration_seconds_count 1\n",
        "\nhibernator_snapshot_duration_seconds_sum 3.5\n",
        "\nhibernator_waiting_for_capacity_seconds_bucket{le=\"30\"} 1\n",
        "\nhibernator_waiting_for_capacity_seconds_count 1\n",
        "\nhibernator_accelerator_seconds_released_total{namespace=\"team-a\",class=\"gpu\"} "
        "60.25\n",
        "\nhibernator_activity_probe_rounds_total{source=\"jupyter+gpu\",result=\"active\"} 1\n",
        "\ncontroller_runtime_reconcile_total{controller=\"workspace\",result=\"error\"} 1\n",
        "\ncontroller_runtime_reconcile_total{controller=\"workspace\",result=\"success\"} 0\n",
        "\ncontroller_runtime_reconcile_errors_total{controller=\"workspace\"} 1\n",
        "\ncontroller_runtime_reconcile_time_seconds_bucket{controller=\"workspace\",le=\"0.025\"} "
        "1\n",
        "\nhibernator_leader 1\n",
        "\nhibernator_client_requests_dropped_total 5\n",
        "\nhibernator_client_connection_pokes_total 2\n",
        "\nhibernator_build_info{version=\"1.2.3\"} 1\n",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (!strstr(text, lines[i]))
            fail_msg("missing: %s", lines[i]);
    }
    free(text);
    controller_metrics_free(m);
    metrics_registry_free(r);
}

/* ---- hibernator_workspaces: running counts ---- */

/* The hibernator_workspaces lines of r's exposition (caller frees). */
static char *workspace_lines(struct metrics_registry *r)
{
    char *text = render(r);
    struct buf b;
    buf_init(&b, 1 << 20);
    static const char prefix[] = "hibernator_workspaces{";
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
        if (strncmp(line, prefix, sizeof(prefix) - 1) == 0)
            assert_int_equal(buf_append(&b, line, n), 0);
        line += n;
    }
    free(text);
    assert_int_equal(buf_append(&b, "", 1), 0);
    char *lines = buf_steal(&b);
    buf_free(&b);
    return lines;
}

static const char *const some_classes[] = {NULL, "", "cpu", "gpu", "a-very-long-class-name"};
static const enum workspace_state some_states[] = {
    WS_STATE_NONE,   WS_STATE_PENDING,  WS_STATE_RUNNING, WS_STATE_PAUSING,
    WS_STATE_PAUSED, WS_STATE_RESUMING, WS_STATE_FAILED,  WS_STATE_WAITING_FOR_CAPACITY,
};
#define N_KEYS 12
#define N_CLASSES (sizeof(some_classes) / sizeof(some_classes[0]))
#define N_STATES (sizeof(some_states) / sizeof(some_states[0]))

/* A cached object as the informer holds it: present or not, readable (a
 * struct workspace) or not (NULL), and its resourceVersion. */
struct model_entry {
    int present;
    int readable;
    int rv;
    struct workspace ws;
};

static void model_random(struct model_entry *e, int rv)
{
    e->present = 1;
    e->readable = rand() % 8 != 0;
    e->rv = rv;
    e->ws.class_name = (char *)some_classes[rand() % N_CLASSES];
    e->ws.status.state = some_states[rand() % N_STATES];
}

static const struct workspace *model_obj(const struct model_entry *e)
{
    return e->present && e->readable ? &e->ws : NULL;
}

/* What the controller exposed before: the gauge counted afresh from the
 * whole cache, in a registry of its own. */
static char *recount(const struct model_entry *cache)
{
    struct metrics_registry *r = registry(0);
    struct metric_family *f = NULL;
    assert_int_equal(metrics_gauge_new(r, "hibernator_workspaces", "Workspaces by class and state.",
                                       (const char *[]){"class", "state", NULL}, &f),
                     0);
    struct metrics_gauge_update *u = NULL;
    assert_int_equal(metrics_gauge_update_begin(f, &u), 0);
    for (size_t k = 0; k < N_KEYS; k++) {
        const struct workspace *ws = model_obj(&cache[k]);
        if (!ws)
            continue;
        const char *state = workspace_state_name(ws->status.state);
        assert_int_equal(
            metrics_gauge_update_add(u,
                                     (const char *[]){ws->class_name ? ws->class_name : "",
                                                      state[0] ? state : "Unknown"},
                                     1),
            0);
    }
    metrics_gauge_update_commit(u);
    char *lines = workspace_lines(r);
    metrics_registry_free(r);
    return lines;
}

/* The calls the informer makes for one watch event on key k. */
static void watch_event(struct controller_metrics *m, struct model_entry *cache, size_t k, int rv)
{
    struct model_entry was = cache[k];
    int kind = rand() % 3;
    if (kind == 2 && was.present) { /* DELETED */
        controller_metrics_workspace_changed(m, model_obj(&was), NULL);
        cache[k].present = 0;
        return;
    }
    model_random(&cache[k], rv); /* ADDED or MODIFIED */
    controller_metrics_workspace_changed(m, model_obj(&was), model_obj(&cache[k]));
}

/* A relist after the watch expired (410 Gone): the informer swaps in what
 * the list returned and calls add for the new keys, update for the changed
 * ones (a resourceVersion that moved) and delete for those the list lacks. */
static void relist(struct controller_metrics *m, struct model_entry *cache, int *rv)
{
    struct model_entry listed[N_KEYS];
    for (size_t k = 0; k < N_KEYS; k++) {
        listed[k] = cache[k];
        int r = rand() % 4;
        if (r == 0)
            listed[k].present = 0;
        else if (r == 1 || !listed[k].present)
            model_random(&listed[k], ++*rv);
    }
    for (size_t k = 0; k < N_KEYS; k++) {
        if (!listed[k].present)
            continue;
        if (!cache[k].present)
            controller_metrics_workspace_changed(m, NULL, model_obj(&listed[k]));
        else if (cache[k].rv != listed[k].rv)
            controller_metrics_workspace_changed(m, model_obj(&cache[k]), model_obj(&listed[k]));
    }
    for (size_t k = 0; k < N_KEYS; k++)
        if (cache[k].present && !listed[k].present)
            controller_metrics_workspace_changed(m, model_obj(&cache[k]), NULL);
    memcpy(cache, listed, sizeof(listed));
}

/* Workspaces by class and state are counted as the cache changes, not by
 * walking it: after every sequence of adds, updates, deletes and relists
 * the gauge equals a fresh count of the cache. */
static void test_workspace_counts(void **state)
{
    (void)state;
    struct metrics_registry *r = registry(0);
    struct controller_metrics *m = NULL;
    assert_int_equal(controller_metrics_new(r, "1.2.3", &m), 0);

    /* A few steps by hand. */
    struct workspace a = {.class_name = "gpu", .status.state = WS_STATE_RUNNING};
    struct workspace b = {.class_name = "gpu", .status.state = WS_STATE_RUNNING};
    struct workspace c = {.class_name = NULL, .status.state = WS_STATE_NONE};
    controller_metrics_workspace_changed(m, NULL, &a);
    controller_metrics_workspace_changed(m, NULL, &b);
    controller_metrics_workspace_changed(m, NULL, &c);
    controller_metrics_workspace_changed(NULL, NULL, &c); /* metrics off */
    /* Not shown before the caches have synced. */
    controller_metrics_collect(m, 0, NULL, 0);
    char *lines = workspace_lines(r);
    assert_string_equal(lines, "");
    free(lines);
    controller_metrics_collect(m, 1, NULL, 0);
    lines = workspace_lines(r);
    assert_string_equal(lines, "hibernator_workspaces{class=\"\",state=\"Unknown\"} 1\n"
                               "hibernator_workspaces{class=\"gpu\",state=\"Running\"} 2\n");
    free(lines);
    struct workspace a2 = {.class_name = "gpu", .status.state = WS_STATE_PAUSED};
    controller_metrics_workspace_changed(m, &a, &a2);
    controller_metrics_workspace_changed(m, &c, NULL);
    controller_metrics_workspace_changed(m, &b, &b); /* a status write that kept the state */
    controller_metrics_collect(m, 1, NULL, 0);
    lines = workspace_lines(r);
    /* A series whose count fell to 0 is gone. */
    assert_string_equal(lines, "hibernator_workspaces{class=\"gpu\",state=\"Paused\"} 1\n"
                               "hibernator_workspaces{class=\"gpu\",state=\"Running\"} 1\n");
    free(lines);
    controller_metrics_workspace_changed(m, &a2, NULL);
    controller_metrics_workspace_changed(m, &b, NULL);
    controller_metrics_collect(m, 1, NULL, 0);
    lines = workspace_lines(r);
    assert_string_equal(lines, "");
    free(lines);

    /* Random sequences against a model of the cache. */
    srand(7);
    struct model_entry cache[N_KEYS];
    memset(cache, 0, sizeof(cache));
    int rv = 0;
    for (int step = 0; step < 3000; step++) {
        if (rand() % 20 == 0)
            relist(m, cache, &rv);
        else
            watch_event(m, cache, (size_t)rand() % N_KEYS, ++rv);
        if (rand() % 3 != 0)
            continue; /* several changes between two collections */
        controller_metrics_collect(m, 1, NULL, 0);
        char *want = recount(cache), *got = workspace_lines(r);
        if (strcmp(want, got) != 0)
            fail_msg("step %d: want\n%sgot\n%s", step, want, got);
        free(want);
        free(got);
    }
    controller_metrics_free(m);
    metrics_registry_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_counter),
        cmocka_unit_test(test_gauge),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_series_limit),
        cmocka_unit_test(test_gauge_replaced),
        cmocka_unit_test(test_format_value),
        cmocka_unit_test(test_controller_outcome),
        cmocka_unit_test(test_workspace_counts),
    };
    return cmocka_run_group_tests_name("metrics registry", tests, NULL, NULL);
}
