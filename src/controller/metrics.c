#include "controller/metrics.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strmap.h"
#include "workspace/workspace.h"

struct controller_metrics {
    struct metrics_registry *registry;

    struct metric_family *queue_depth, *queue_adds, *queue_latency, *queue_work, *queue_retries,
        *queue_unfinished, *queue_longest;
    struct metric_family *reconciles, *reconcile_errors, *reconcile_time, *reconcile_cpu;

    struct metric_family *workspaces, *pauses, *resumes, *snapshots, *snapshot_seconds,
        *resume_seconds, *capacity_seconds, *probe_rounds, *accelerator_seconds, *leader,
        *build_info, *interruptions, *home_losses, *client_dropped, *client_pokes, *cache_walked,
        *prewarms, *prewarms_in_time;
    uint64_t client_dropped_seen, client_pokes_seen;
    /* hibernator_cache_walked_objects_total: the informers' own counts,
     * by resource, as last shown. */
    struct {
        const char *resource; /* static */
        uint64_t seen;
    } walked[CONTROLLER_METRICS_CACHES];

    /* Workspaces by class and state: "class\nstate" -> struct ws_count
     * (a class name never holds a line break); only counts above 0. */
    struct strmap ws_counts;
    int ws_counts_changed; /* since they were last shown */
};

struct ws_count {
    size_t n;
    const char *state; /* a static name */
    char class_name[]; /* the key's first part */
};

static const char *const queue_label[] = {"name", NULL};
static const char *const queue_name[] = {CONTROLLER_NAME};
static const char *const controller_label[] = {"controller", NULL};
static const char *const controller_name[] = {CONTROLLER_NAME};

/* client-go's and controller-runtime's buckets, so dashboards made for
 * them read these the same way. */
static const double queue_buckets[] = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3,
                                       1e-2, 0.1,  1,    10,   100,  1000};
static const double reconcile_buckets[] = {
    0.005, 0.01, 0.025, 0.05, 0.1,  0.15, 0.2,  0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
    0.7,   0.8,  0.9,   1.0,  1.25, 1.5,  1.75, 2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,
    6,     7,    8,     9,    10,   15,   20,   25,   30,  40,   50,  60};
/* A snapshot takes seconds to minutes; a resume from a few seconds (a warm
 * node) to many minutes (an image pull, a restore); a wait for a GPU up to
 * days. */
static const double snapshot_buckets[] = {1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800};
static const double resume_buckets[] = {1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600};
static const double capacity_buckets[] = {1,    10,   30,   60,    120,   300,  600,
                                          1800, 3600, 7200, 14400, 43200, 86400};

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct registrar {
    struct metrics_registry *r;
    int e;
};

static struct metric_family *counter(struct registrar *g, const char *name, const char *help,
                                     const char *const *labels)
{
    struct metric_family *f = NULL;
    if (g->e == 0)
        g->e = metrics_counter_new(g->r, name, help, labels, &f);
    return f;
}

static struct metric_family *gauge(struct registrar *g, const char *name, const char *help,
                                   const char *const *labels)
{
    struct metric_family *f = NULL;
    if (g->e == 0)
        g->e = metrics_gauge_new(g->r, name, help, labels, &f);
    return f;
}

static struct metric_family *histogram(struct registrar *g, const char *name, const char *help,
                                       const char *const *labels, const double *buckets, size_t n)
{
    struct metric_family *f = NULL;
    if (g->e == 0)
        g->e = metrics_histogram_new(g->r, name, help, labels, buckets, n, &f);
    return f;
}

/* Long: one registration per metric family, a list that reads like the exposition it makes. */
int controller_metrics_new(struct metrics_registry *registry, const char *version,
                           struct controller_metrics **ret)
{
    struct controller_metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->registry = registry;
    strmap_init(&m->ws_counts);
    struct registrar g = {registry, 0};

    m->queue_depth = gauge(&g, "workqueue_depth", "Current depth of workqueue", queue_label);
    m->queue_adds = counter(&g, "workqueue_adds_total", "Total number of adds handled by workqueue",
                            queue_label);
    m->queue_latency =
        histogram(&g, "workqueue_queue_duration_seconds",
                  "How long in seconds an item stays in workqueue before being requested",
                  queue_label, queue_buckets, N(queue_buckets));
    m->queue_work = histogram(&g, "workqueue_work_duration_seconds",
                              "How long in seconds processing an item from workqueue takes.",
                              queue_label, queue_buckets, N(queue_buckets));
    m->queue_retries = counter(&g, "workqueue_retries_total",
                               "Total number of retries handled by workqueue", queue_label);
    m->queue_unfinished =
        gauge(&g, "workqueue_unfinished_work_seconds",
              "How many seconds of work has been done that is in progress and hasn't been "
              "observed by work_duration. Large values indicate stuck threads.",
              queue_label);
    m->queue_longest = gauge(&g, "workqueue_longest_running_processor_seconds",
                             "How many seconds has the longest running processor for workqueue "
                             "been running.",
                             queue_label);

    m->reconciles = counter(&g, "controller_runtime_reconcile_total",
                            "Total number of reconciliations per controller",
                            (const char *[]){"controller", "result", NULL});
    m->reconcile_errors =
        counter(&g, "controller_runtime_reconcile_errors_total",
                "Total number of reconciliation errors per controller", controller_label);
    m->reconcile_time = histogram(&g, "controller_runtime_reconcile_time_seconds",
                                  "Length of time per reconciliation per controller",
                                  controller_label, reconcile_buckets, N(reconcile_buckets));

    m->reconcile_cpu = counter(&g, "hibernator_reconcile_cpu_seconds_total",
                               "CPU the event loop spent in reconciles' own work: reading the "
                               "caches, deciding, building the requests (not the answers' "
                               "handling, nor waiting for them).",
                               controller_label);

    m->workspaces = gauge(&g, "hibernator_workspaces", "Workspaces by class and state.",
                          (const char *[]){"class", "state", NULL});
    m->pauses = counter(&g, "hibernator_pauses_total",
                        "Pauses completed (the pod gone, the accelerator free), by what the "
                        "pause kept of the session.",
                        (const char *[]){"namespace", "class", "reason", "memory", NULL});
    m->resumes = counter(&g, "hibernator_resumes_total",
                         "Resumes that became ready, by where the session came from.",
                         (const char *[]){"namespace", "class", "restore_source", NULL});
    m->snapshots = counter(&g, "hibernator_snapshots_total",
                           "Snapshot attempts that became Ready, failed or timed out.",
                           (const char *[]){"namespace", "class", "result", NULL});
    m->snapshot_seconds = histogram(&g, "hibernator_snapshot_duration_seconds",
                                    "Time from a snapshot's request to Ready.", NULL,
                                    snapshot_buckets, N(snapshot_buckets));
    m->resume_seconds =
        histogram(&g, "hibernator_resume_to_ready_seconds",
                  "Time from a resume request to a ready workspace.",
                  (const char *[]){"restore_source", NULL}, resume_buckets, N(resume_buckets));
    m->capacity_seconds =
        histogram(&g, "hibernator_waiting_for_capacity_seconds",
                  "How long workspaces waited for capacity (a node with a free accelerator).", NULL,
                  capacity_buckets, N(capacity_buckets));
    m->probe_rounds = counter(&g, "hibernator_activity_probe_rounds_total",
                              "Activity probe rounds by source and result.",
                              (const char *[]){"source", "result", NULL});
    m->accelerator_seconds =
        counter(&g, "hibernator_accelerator_seconds_released_total",
                "Accelerator-seconds given back by paused workspaces (accelerators times "
                "seconds paused), counted when they resume.",
                (const char *[]){"namespace", "class", NULL});
    m->interruptions = counter(&g, "hibernator_pod_interruptions_total",
                               "Workspace pods that ended without the controller asking, by "
                               "what ended them.",
                               (const char *[]){"namespace", "class", "reason", NULL});
    m->prewarms = counter(&g, "hibernator_prewarms_total",
                          "Resumes ahead of the owner (spec.preWarm) as they settled: used (a "
                          "person's activity after it), unused (paused again without) or yielded "
                          "(gave way, waiting for capacity, to a person's resume).",
                          (const char *[]){"namespace", "class", "outcome", NULL});
    m->prewarms_in_time = counter(&g, "hibernator_prewarms_ready_in_time_total",
                                  "Pre-warms whose pod was ready before the owner's time.",
                                  (const char *[]){"namespace", "class", NULL});
    m->home_losses = counter(&g, "hibernator_home_losses_total",
                             "Home claims seen gone (deleted by someone, not with the Workspace).",
                             (const char *[]){"namespace", "class", NULL});
    m->leader = gauge(&g, "hibernator_leader", "1 while this replica leads, else 0.", NULL);
    m->client_dropped = counter(&g, "hibernator_client_requests_dropped_total",
                                "Low-priority API requests (Events) the client dropped because "
                                "they waited too long for its rate limit.",
                                NULL);
    m->client_pokes = counter(&g, "hibernator_client_connection_pokes_total",
                              "GET /version calls the API client made because a call had stopped "
                              "receiving on the shared connection.",
                              NULL);
    m->cache_walked = counter(&g, "hibernator_cache_walked_objects_total",
                              "Cached objects visited by walks over a whole cache (a class "
                              "change, a node seen everywhere); events and reconciles look "
                              "objects up instead, so this grows with configuration changes, "
                              "not with the number of workspaces times their events.",
                              (const char *[]){"resource", NULL});
    m->build_info = gauge(&g, "hibernator_build_info", "The controller's version; always 1.",
                          (const char *[]){"version", NULL});
    if (g.e == 0)
        g.e = metrics_gauge_set(m->build_info, (const char *[]){version}, 1);
    /* The reconcile series exist from the start, at 0, so that rates and
     * ratios of them are defined before the first error. */
    static const char *const results[] = {"success", "requeue_after", "error"};
    for (size_t i = 0; i < N(results) && g.e == 0; i++)
        g.e = metrics_counter_add(m->reconciles, (const char *[]){CONTROLLER_NAME, results[i]}, 0);
    if (g.e == 0)
        g.e = metrics_counter_add(m->reconcile_errors, controller_name, 0);
    if (g.e == 0)
        g.e = metrics_counter_add(m->client_dropped, NULL, 0);
    if (g.e == 0)
        g.e = metrics_counter_add(m->client_pokes, NULL, 0);
    if (g.e < 0) {
        free(m);
        return g.e;
    }
    *ret = m;
    return 0;
}

void controller_metrics_free(struct controller_metrics *m)
{
    if (!m)
        return;
    void *v;
    for (size_t it = 0; strmap_next(&m->ws_counts, &it, NULL, &v);)
        free(v);
    strmap_free(&m->ws_counts);
    free(m);
}

/* ---- the queue ---- */

static void on_added(void *data)
{
    struct controller_metrics *m = data;
    metrics_counter_add(m->queue_adds, queue_name, 1);
}

static void on_retried(void *data)
{
    struct controller_metrics *m = data;
    metrics_counter_add(m->queue_retries, queue_name, 1);
}

static void on_started(void *data, uint64_t queued_ms)
{
    struct controller_metrics *m = data;
    metrics_histogram_observe(m->queue_latency, queue_name, (double)queued_ms / 1000.0);
}

static void on_finished(void *data, uint64_t work_ms)
{
    struct controller_metrics *m = data;
    metrics_histogram_observe(m->queue_work, queue_name, (double)work_ms / 1000.0);
}

void controller_metrics_watch_queue(struct controller_metrics *m, struct workqueue *q)
{
    if (!m || !q)
        return;
    struct workqueue_observer o = {on_added, on_retried, on_started, on_finished, m};
    workqueue_set_observer(q, &o);
    /* The series exist from the start, at 0. */
    metrics_counter_add(m->queue_adds, queue_name, 0);
    metrics_counter_add(m->queue_retries, queue_name, 0);
    metrics_gauge_add(m->queue_depth, queue_name, 0);
}

/* ---- reconciles and outcomes ---- */

void controller_metrics_reconciled(struct controller_metrics *m, int error, int requeue_after,
                                   double seconds)
{
    if (!m)
        return;
    const char *result = error ? "error" : requeue_after ? "requeue_after" : "success";
    metrics_counter_add(m->reconciles, (const char *[]){CONTROLLER_NAME, result}, 1);
    if (error)
        metrics_counter_add(m->reconcile_errors, controller_name, 1);
    metrics_histogram_observe(m->reconcile_time, controller_name, seconds);
}

void controller_metrics_reconcile_cpu(struct controller_metrics *m, double seconds)
{
    if (m && seconds > 0)
        metrics_counter_add(m->reconcile_cpu, controller_name, seconds);
}

void controller_metrics_outcome(struct controller_metrics *m, const char *ns,
                                const char *class_name, const struct workspace_outcome *o)
{
    if (!m || !o)
        return;
    const char *cls = class_name ? class_name : "";
    if (o->paused)
        metrics_counter_add(
            m->pauses,
            (const char *[]){ns, cls, o->pause_reason, pause_memory_name(o->pause_memory)}, 1);
    if (o->resumed != RESTORE_SOURCE_NONE) {
        const char *source = restore_source_name(o->resumed);
        metrics_counter_add(m->resumes, (const char *[]){ns, cls, source}, 1);
        metrics_histogram_observe(m->resume_seconds, (const char *[]){source}, o->resume_seconds);
    }
    if (o->snapshot != SNAPSHOT_RESULT_NONE) {
        metrics_counter_add(m->snapshots,
                            (const char *[]){ns, cls, snapshot_result_name(o->snapshot)}, 1);
        if (o->snapshot == SNAPSHOT_RESULT_READY)
            metrics_histogram_observe(m->snapshot_seconds, NULL, o->snapshot_seconds);
    }
    if (o->capacity_wait_ended)
        metrics_histogram_observe(m->capacity_seconds, NULL, o->capacity_wait_seconds);
    if (o->accelerator_seconds_released > 0)
        metrics_counter_add(m->accelerator_seconds, (const char *[]){ns, cls},
                            o->accelerator_seconds_released);
    if (o->interrupted[0])
        metrics_counter_add(m->interruptions, (const char *[]){ns, cls, o->interrupted}, 1);
    if (o->home_lost)
        metrics_counter_add(m->home_losses, (const char *[]){ns, cls}, 1);
    if (o->prewarm[0])
        metrics_counter_add(m->prewarms, (const char *[]){ns, cls, o->prewarm}, 1);
    if (o->prewarm_ready_in_time)
        metrics_counter_add(m->prewarms_in_time, (const char *[]){ns, cls}, 1);
}

void controller_metrics_probe_round(struct controller_metrics *m, const char *source,
                                    const char *result)
{
    if (!m)
        return;
    char word[16];
    size_t n = 0;
    for (const char *p = result ? result : ""; *p && n + 1 < sizeof(word); p++)
        word[n++] = (char)tolower((unsigned char)*p);
    word[n] = '\0';
    metrics_counter_add(m->probe_rounds, (const char *[]){source, word}, 1);
}

/* ---- workspaces by class and state ---- */

/* ws's state as the gauge names it. */
static const char *ws_state(const struct workspace *ws)
{
    const char *state = workspace_state_name(ws->status.state);
    return state[0] ? state : "Unknown";
}

/* "class\nstate" for ws in *ret (caller frees). Returns 0 or -ENOMEM. */
static int ws_count_key(const struct workspace *ws, char **ret)
{
    return asprintf(ret, "%s\n%s", ws->class_name ? ws->class_name : "", ws_state(ws)) < 0 ? -ENOMEM
                                                                                           : 0;
}

/* Adds delta (+1 or -1) to ws's class and state. A count never goes
 * below 0 (a delete of what was never counted changes nothing); out of
 * memory an add is not counted. */
static void ws_count_add(struct controller_metrics *m, const struct workspace *ws, int delta)
{
    char *key = NULL;
    if (ws_count_key(ws, &key) < 0)
        return;
    struct ws_count *c = strmap_get(&m->ws_counts, key);
    if (delta < 0 && c) {
        if (--c->n == 0)
            free(strmap_remove(&m->ws_counts, key));
        m->ws_counts_changed = 1;
    } else if (delta > 0 && c) {
        c->n++;
        m->ws_counts_changed = 1;
    } else if (delta > 0) {
        const char *cls = ws->class_name ? ws->class_name : "";
        c = malloc(sizeof(*c) + strlen(cls) + 1);
        if (c) {
            c->n = 1;
            c->state = ws_state(ws);
            strcpy(c->class_name, cls);
            if (strmap_put(&m->ws_counts, key, c, NULL) < 0)
                free(c);
            else
                m->ws_counts_changed = 1;
        }
    }
    free(key);
}

/* Whether a and b count under the same class and state. */
static int same_count(const struct workspace *a, const struct workspace *b)
{
    return a && b && a->status.state == b->status.state &&
           strcmp(a->class_name ? a->class_name : "", b->class_name ? b->class_name : "") == 0;
}

void controller_metrics_workspace_changed(struct controller_metrics *m, const struct workspace *was,
                                          const struct workspace *now)
{
    if (!m || same_count(was, now))
        return;
    if (was)
        ws_count_add(m, was, -1);
    if (now)
        ws_count_add(m, now, +1);
}

/* ---- collection ---- */

void controller_metrics_collect(struct controller_metrics *m, int workspaces_synced,
                                const struct workqueue *q, uint64_t now_ms)
{
    if (!m)
        return;
    struct metrics_gauge_update *u = NULL;
    if (workspaces_synced && m->ws_counts_changed &&
        metrics_gauge_update_begin(m->workspaces, &u) == 0) {
        void *v;
        for (size_t it = 0; strmap_next(&m->ws_counts, &it, NULL, &v);) {
            const struct ws_count *c = v;
            metrics_gauge_update_add(u, (const char *[]){c->class_name, c->state}, (double)c->n);
        }
        metrics_gauge_update_commit(u);
        m->ws_counts_changed = 0;
    }
    if (q) {
        struct workqueue_metrics qm;
        workqueue_get_metrics(q, &qm);
        uint64_t total_ms, longest_ms;
        workqueue_processing_time(q, now_ms, &total_ms, &longest_ms);
        metrics_gauge_set(m->queue_depth, queue_name, (double)qm.depth);
        metrics_gauge_set(m->queue_unfinished, queue_name, (double)total_ms / 1000.0);
        metrics_gauge_set(m->queue_longest, queue_name, (double)longest_ms / 1000.0);
    }
}

/* Adds what a total counted elsewhere grew by since *seen. */
static void counter_catch_up(struct metric_family *counter, uint64_t *seen, uint64_t total)
{
    if (total <= *seen)
        return;
    metrics_counter_add(counter, NULL, (double)(total - *seen));
    *seen = total;
}

void controller_metrics_client(struct controller_metrics *m, uint64_t dropped, uint64_t pokes)
{
    if (!m)
        return;
    counter_catch_up(m->client_dropped, &m->client_dropped_seen, dropped);
    counter_catch_up(m->client_pokes, &m->client_pokes_seen, pokes);
}

void controller_metrics_cache_walked(struct controller_metrics *m, const char *resource,
                                     uint64_t total)
{
    if (!m)
        return;
    for (size_t i = 0; i < CONTROLLER_METRICS_CACHES; i++) {
        if (!m->walked[i].resource)
            m->walked[i].resource = resource;
        if (strcmp(m->walked[i].resource, resource) != 0)
            continue;
        if (total > m->walked[i].seen) {
            metrics_counter_add(m->cache_walked, (const char *[]){resource},
                                (double)(total - m->walked[i].seen));
            m->walked[i].seen = total;
        }
        return;
    }
}

void controller_metrics_set_leader(struct controller_metrics *m, int leading)
{
    if (m)
        metrics_gauge_set(m->leader, NULL, leading ? 1 : 0);
}
