/*
 * /metrics end to end: the controller under deploy/'s RBAC with the
 * snapshot simulator, scraped over HTTP like Prometheus does.
 *
 *   - a GPU pause with a snapshot and its resume move each series exactly
 *     once: pauses, snapshots, resumes, the duration histograms' _count,
 *     and the accelerator-seconds counter equals the workspace's own
 *     status.accounting;
 *   - a wait for capacity ends once in its histogram;
 *   - the health probes and /metrics answer, every time, while ~60
 *     workspaces are created, and hibernator_workspaces counts them;
 *   - events and reconciles walk no cache: annotations, pauses, resumes
 *     and their pods' scheduling leave hibernator_cache_walked_objects_total
 *     where it was (each such walk would cost as much as the cache is
 *     large, on every event).
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "util/buf.h"
#include "workspaces.h"

#define GPU_SNAP "it-metrics-gpu-snap"
#define GPU "it-metrics-gpu"
#define CPU "it-metrics-cpu"
#define LOAD_WORKSPACES 60

static int health_port, metrics_port;

/* ---- scraping ---------------------------------------------------------------- */

static size_t collect(char *p, size_t size, size_t n, void *data)
{
    return buf_append(data, p, size * n) == 0 ? size * n : 0;
}

/* GET http://127.0.0.1:port/path; returns the status (0: no answer) and
 * the body in *ret_body when given (caller frees). */
static long http_get(int port, const char *path, char **ret_body)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    struct buf b;
    buf_init(&b, 64 * 1024 * 1024);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    if (ret_body)
        *ret_body = buf_steal(&b);
    buf_free(&b);
    return code;
}

static char *scrape(void)
{
    char *text = NULL;
    assert_int_equal(http_get(metrics_port, "/metrics", &text), 200);
    return text;
}

/* The value of one series ("name{labels}" exactly as exposed), 0 when absent. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *line = text; line && *line;) {
        if (strncmp(line, series, n) == 0 && line[n] == ' ')
            return strtod(line + n + 1, NULL);
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return 0;
}

static double scrape_one(const char *series)
{
    char *text = scrape();
    double v = sample(text, series);
    free(text);
    return v;
}

/* Waits until the series reaches want (the counters move right after the
 * status write the test saw, the gauges at the next collection). */
static double wait_sample(const char *series, double want, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    double v;
    while ((v = scrape_one(series)) < want && harness_now_ms() < end)
        usleep(200 * 1000);
    return v;
}

/* ---- tests ------------------------------------------------------------------- */

static void series(char *out, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void series(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, size, fmt, ap);
    va_end(ap);
}

static void test_gpu_cycle(void **state)
{
    (void)state;
    char pauses[512], resumes[512], snapshots[512], released[512], running[256];
    series(pauses, sizeof(pauses),
           "hibernator_pauses_total{namespace=\"%s\",class=\"" GPU_SNAP
           "\",reason=\"user\",memory=\"snapshot\"}",
           ns);
    series(resumes, sizeof(resumes),
           "hibernator_resumes_total{namespace=\"%s\",class=\"" GPU_SNAP
           "\",restore_source=\"snapshot\"}",
           ns);
    series(snapshots, sizeof(snapshots),
           "hibernator_snapshots_total{namespace=\"%s\",class=\"" GPU_SNAP "\",result=\"ready\"}",
           ns);
    series(released, sizeof(released),
           "hibernator_accelerator_seconds_released_total{namespace=\"%s\",class=\"" GPU_SNAP "\"}",
           ns);
    series(running, sizeof(running),
           "hibernator_workspaces{class=\"" GPU_SNAP "\",state=\"Running\"}");
    const char *snapshot_count = "hibernator_snapshot_duration_seconds_count";
    const char *resume_count =
        "hibernator_resume_to_ready_seconds_count{restore_source=\"snapshot\"}";

    char *before = scrape();
    /* The controller's own series are there from the start. */
    assert_non_null(strstr(before, "\nhibernator_leader 1\n"));
    assert_non_null(
        strstr(before, "\nhibernator_build_info{version=\"" HIBERNATOR_VERSION "\"} 1\n"));
    assert_non_null(strstr(before, "workqueue_depth{name=\"workspace\"} "));
    assert_non_null(strstr(before, "# TYPE hibernator_pauses_total counter\n"));

    apply_ws("cycle", GPU_SNAP, 0, NULL);
    cJSON_Delete(wait_state("cycle", "Running", 60000));
    assert_true(wait_sample(running, 1, 10000) == 1);

    set_paused("cycle", 1);
    cJSON *ws = wait_state("cycle", "Paused", 90000);
    assert_string_equal(str_at(ws, "status.snapshot.phase"), "Ready");
    cJSON_Delete(ws);
    assert_true(wait_sample(pauses, sample(before, pauses) + 1, 10000) ==
                sample(before, pauses) + 1);

    set_paused("cycle", 0);
    ws = wait_reason("cycle", "Restored", "FromSnapshot", 90000);
    double accounting = num_at(ws, "status.accounting.acceleratorSecondsReleased");
    cJSON_Delete(ws);
    cJSON_Delete(wait_state("cycle", "Running", 60000));
    assert_true(wait_sample(resumes, sample(before, resumes) + 1, 10000) ==
                sample(before, resumes) + 1);

    /* Give any second count time to show, then compare. */
    sleep(3);
    char *after = scrape();
    print_message("  paused and resumed: %.3f accelerator-seconds released\n", accounting);
    assert_true(sample(after, pauses) - sample(before, pauses) == 1);
    assert_true(sample(after, snapshots) - sample(before, snapshots) == 1);
    assert_true(sample(after, resumes) - sample(before, resumes) == 1);
    assert_true(sample(after, snapshot_count) - sample(before, snapshot_count) == 1);
    assert_true(sample(after, resume_count) - sample(before, resume_count) == 1);
    /* No other kind of pause, snapshot or resume was counted for the class. */
    char other[512];
    series(other, sizeof(other),
           "hibernator_pauses_total{namespace=\"%s\",class=\"" GPU_SNAP
           "\",reason=\"user\",memory=\"files\"}",
           ns);
    assert_true(sample(after, other) == 0);
    series(other, sizeof(other),
           "hibernator_snapshots_total{namespace=\"%s\",class=\"" GPU_SNAP "\",result=\"failed\"}",
           ns);
    assert_true(sample(after, other) == 0);
    /* The counter of accelerator time is the workspace's own accounting. */
    assert_true(accounting > 0);
    assert_true(sample(before, released) == 0);
    print_message("  counter %.17g, status %.17g\n", sample(after, released), accounting);
    assert_true(fabs(sample(after, released) - accounting) <= 1e-9 * accounting);
    /* Reconciles and the queue moved too. */
    assert_true(sample(after, "controller_runtime_reconcile_total{controller=\"workspace\","
                              "result=\"success\"}") > 0);
    assert_true(sample(after, "controller_runtime_reconcile_time_seconds_count{controller="
                              "\"workspace\"}") > 0);
    assert_true(sample(after, "workqueue_adds_total{name=\"workspace\"}") > 0);
    assert_true(sample(after, "workqueue_queue_duration_seconds_count{name=\"workspace\"}") > 0);
    assert_true(sample(after, "workqueue_work_duration_seconds_count{name=\"workspace\"}") > 0);
    free(before);
    free(after);
}

/* Three GPUs on the local cluster: a fourth workspace waits until one frees
 * up, and the wait is observed once. */
static void test_capacity_wait(void **state)
{
    (void)state;
    const char *count = "hibernator_waiting_for_capacity_seconds_count";
    const char *sum = "hibernator_waiting_for_capacity_seconds_sum";
    for (int i = 1; i <= 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "fill-%d", i);
        apply_ws(name, GPU, 0, NULL);
    }
    for (int i = 1; i <= 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "fill-%d", i);
        cJSON_Delete(wait_state(name, "Running", 60000));
    }
    char *before = scrape();
    apply_ws("waiter", GPU, 0, NULL);
    cJSON_Delete(wait_state("waiter", "WaitingForCapacity", 60000));
    sleep(2);
    assert_true(scrape_one(count) == sample(before, count));
    set_paused("fill-1", 1);
    cJSON_Delete(wait_state("waiter", "Running", 90000));
    assert_true(wait_sample(count, sample(before, count) + 1, 10000) == sample(before, count) + 1);
    sleep(2);
    char *after = scrape();
    assert_true(sample(after, count) - sample(before, count) == 1);
    double waited = sample(after, sum) - sample(before, sum);
    print_message("  waited %.1f s for a GPU\n", waited);
    assert_true(waited >= 1);
    free(before);
    free(after);
}

struct hammer {
    atomic_int stop;
    long ok[3], failed[3];
    char first_failure[256];
};

static void *hammer_run(void *data)
{
    struct hammer *h = data;
    static const char *const paths[] = {"/healthz", "/readyz", "/metrics"};
    uint64_t end = harness_now_ms() + 400 * 1000; /* bounded whatever happens */
    for (long i = 0; !atomic_load(&h->stop) && harness_now_ms() < end && i < 200000; i++) {
        int k = (int)(i % 3);
        int port = k == 2 ? metrics_port : health_port;
        long code = http_get(port, paths[k], NULL);
        if (code == 200) {
            h->ok[k]++;
        } else {
            if (!h->failed[0] && !h->failed[1] && !h->failed[2])
                snprintf(h->first_failure, sizeof(h->first_failure), "%s answered %ld", paths[k],
                         code);
            h->failed[k]++;
        }
        usleep(5 * 1000);
    }
    return NULL;
}

static int count_running(void)
{
    char *out = NULL;
    harness_kubectl(&out,
                    "-n %s get workspaces -l it-metrics=load -o "
                    "jsonpath='{range .items[*]}{.status.state}{\"\\n\"}{end}'",
                    ns);
    int n = 0;
    for (char *p = out; p && (p = strstr(p, "Running\n")); p++)
        n++;
    free(out);
    return n;
}

static void test_health_under_load(void **state)
{
    (void)state;
    struct hammer h = {0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hammer_run, &h), 0);

    struct buf doc;
    buf_init(&doc, 1 << 20);
    for (int i = 0; i < LOAD_WORKSPACES; i++)
        assert_int_equal(
            buf_printf(&doc,
                       "---\napiVersion: hibernator.dev/v1alpha1\nkind: Workspace\n"
                       "metadata: {name: load-%02d, namespace: %s, labels: {it-metrics: load}}\n"
                       "spec: {className: " CPU "}\n",
                       i, ns),
            0);
    uint64_t start = harness_now_ms();
    assert_int_equal(harness_apply("%s", buf_str(&doc)), 0);
    buf_free(&doc);
    int running = 0;
    while ((running = count_running()) < LOAD_WORKSPACES && harness_now_ms() < start + 240000)
        usleep(500 * 1000);
    print_message("  %d workspaces Running after %.1f s\n", running,
                  (double)(harness_now_ms() - start) / 1000.0);
    char gauge[128];
    snprintf(gauge, sizeof(gauge), "hibernator_workspaces{class=\"" CPU "\",state=\"Running\"}");
    double counted = wait_sample(gauge, LOAD_WORKSPACES, 10000);

    atomic_store(&h.stop, 1);
    pthread_join(t, NULL);
    print_message("  /healthz %ld ok %ld failed, /readyz %ld ok %ld failed, /metrics %ld ok %ld "
                  "failed%s%s\n",
                  h.ok[0], h.failed[0], h.ok[1], h.failed[1], h.ok[2], h.failed[2],
                  h.first_failure[0] ? "; first: " : "", h.first_failure);
    assert_int_equal(running, LOAD_WORKSPACES);
    assert_true(counted == LOAD_WORKSPACES);
    assert_int_equal(h.failed[0] + h.failed[1] + h.failed[2], 0);
    for (int k = 0; k < 3; k++)
        assert_true(h.ok[k] >= 20);
    harness_kubectl(NULL, "-n %s delete workspaces -l it-metrics=load --wait=true --timeout=180s",
                    ns);
}

/* Objects visited by whole-cache walks so far, all caches together. */
static double walked(void)
{
    static const char *const resources[] = {
        "workspaces",         "pods",         "persistentvolumeclaims",
        "workspaceclasses",   "podsnapshots", "podsnapshotmanualtriggers",
        "podsnapshotpolicies"};
    char *text = scrape();
    double n = 0;
    for (size_t i = 0; i < sizeof(resources) / sizeof(resources[0]); i++) {
        char s[128];
        series(s, sizeof(s), "hibernator_cache_walked_objects_total{resource=\"%s\"}",
               resources[i]);
        n += sample(text, s);
    }
    free(text);
    return n;
}

#define WALK_WORKSPACES 6

static void test_events_walk_no_cache(void **state)
{
    (void)state;
    char name[32];
    for (int i = 0; i < WALK_WORKSPACES; i++) {
        snprintf(name, sizeof(name), "walk-%d", i);
        apply_ws(name, CPU, i % 2, NULL);
    }
    /* And one with GKE Pod Snapshots, already snapshotted once, so its
     * backend's caches have synced and hold its objects. */
    apply_ws("walk-gke", GPU_SNAP, 0, NULL);
    cJSON_Delete(wait_state("walk-gke", "Running", 60000));
    set_paused("walk-gke", 1);
    cJSON_Delete(wait_state("walk-gke", "Paused", 90000));
    for (int i = 0; i < WALK_WORKSPACES; i++) {
        snprintf(name, sizeof(name), "walk-%d", i);
        cJSON_Delete(wait_state(name, i % 2 ? "Paused" : "Running", 60000));
    }
    sleep(2); /* a collection after the last change */
    double before = walked();
    const char *cpu = "hibernator_reconcile_cpu_seconds_total{controller=\"workspace\"}";
    char *text = scrape();
    double cpu_before = sample(text, cpu);
    free(text);

    /* Events of every kind a workspace has: annotations (watch events and
     * reconciles), pauses (pods deleted), resumes (pods created and
     * scheduled onto a node). */
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < WALK_WORKSPACES; i++)
            assert_int_equal(harness_kubectl(NULL,
                                             "-n %s annotate workspace walk-%d --overwrite "
                                             "it-metrics/round=%d",
                                             ns, i, round),
                             0);
    for (int i = 0; i < WALK_WORKSPACES; i++) {
        snprintf(name, sizeof(name), "walk-%d", i);
        set_paused(name, !(i % 2));
    }
    for (int i = 0; i < WALK_WORKSPACES; i++) {
        snprintf(name, sizeof(name), "walk-%d", i);
        cJSON_Delete(wait_state(name, i % 2 ? "Running" : "Paused", 60000));
    }
    /* The GKE workspace resumes from its snapshot, pauses with a new one
     * and is deleted: its snapshots, triggers and policy are looked up,
     * listed and retired through the backend's indexes. */
    set_paused("walk-gke", 0);
    cJSON_Delete(wait_reason("walk-gke", "Restored", "FromSnapshot", 90000));
    set_paused("walk-gke", 1);
    cJSON_Delete(wait_state("walk-gke", "Paused", 90000));
    delete_ws("walk-gke");
    assert_true(wait_gone("walk-gke", 120000));
    /* Its triggers and policy found through the indexes and retired. */
    uint64_t end = harness_now_ms() + 60000;
    char *left = NULL;
    while (harness_now_ms() < end) {
        free(left);
        left = NULL;
        harness_kubectl(&left,
                        "-n %s get podsnapshotmanualtriggers,podsnapshotpolicies "
                        "-l hibernator.dev/workspace=walk-gke -o name",
                        ns);
        if (left && !left[0])
            break;
        usleep(500 * 1000);
    }
    print_message("  left of the deleted workspace's GKE objects: \"%s\"\n", left ? left : "?");
    assert_non_null(left);
    assert_string_equal(left, "");
    free(left);
    sleep(2);
    double after = walked();
    print_message("  cached objects walked: %.0f before the events, %.0f after\n", before, after);
    assert_true(after == before);
    /* The reconciles' own CPU is counted. */
    text = scrape();
    double cpu_after = sample(text, cpu);
    free(text);
    print_message("  reconciles' CPU: %.6f s before the events, %.6f s after\n", cpu_before,
                  cpu_after);
    assert_true(cpu_after > cpu_before);
}

/* ---- set-up ------------------------------------------------------------------ */

static int clean_slate(void **state)
{
    (void)state;
    delete_all_workspaces(120);
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    it_deploy("it-metrics");
    install_snapshot_crds("it-metrics");
    ns = harness_namespace("it-metrics");
    assert_int_equal(harness_kubectl(NULL, "-n %s create configmap snapshot-simulator", ns), 0);
    const char *gpu = "  accelerator: {resourceName: nvidia.com/gpu, count: 1, product: Tesla-T4}\n"
                      "  resume: {capacityTimeout: 30m, onCapacityTimeout: Wait}\n";
    char extra[512];
    snprintf(extra, sizeof(extra),
             "%s  snapshot: {backend: GKE, storageConfigName: it-metrics, timeout: 60s}\n", gpu);
    apply_class(GPU_SNAP, extra);
    apply_class(GPU, gpu);
    apply_class(CPU, "");
    simulator_start("2s", NULL);

    /* Health and metrics on addresses of their own; the kernel picks the
     * ports and the controller's log says which. */
    static const char *args[] = {"--health-probe-bind-address=127.0.0.1:0",
                                 "--metrics-bind-address=127.0.0.1:0", NULL};
    controller_extra_args(args);
    controller_start(NULL);
    health_port = controller_serving_port("health probes");
    metrics_port = controller_serving_port("metrics");
    uint64_t end = harness_now_ms() + 30000;
    while (http_get(health_port, "/readyz", NULL) != 200 && harness_now_ms() < end)
        usleep(100 * 1000);
    assert_int_equal(http_get(health_port, "/readyz", NULL), 200);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    controller_extra_args(NULL);
    simulator_stop();
    harness_namespace_delete(ns);
    it_show_logs();
    free(ns);
    return 0;
}

int main(void)
{
    harness_require_cluster();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_gpu_cycle, clean_slate),
        cmocka_unit_test_setup(test_capacity_wait, clean_slate),
        cmocka_unit_test_setup(test_health_under_load, clean_slate),
        cmocka_unit_test_setup(test_events_walk_no_cache, clean_slate),
    };
    int r = cmocka_run_group_tests_name("metrics", tests, group_setup, group_teardown);
    curl_global_cleanup();
    return r;
}
