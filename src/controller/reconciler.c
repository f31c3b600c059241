#include "reconciler_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/log.h"
#include "workspace/action_failure.h"
#include "workspace/pod.h"

/* How long a pass for key must wait before deciding on the cached Workspace
 * e, 0: not at all. It waits while the cache has not shown our last write of
 * it (a decision on the object as it was before that write would undo it);
 * include/controller/expectations.h has the rule. */
static int64_t own_write_wait(struct reconciler *r, const char *key, const struct cache_entry *e)
{
    int64_t wait_ms = 0;
    const char *rv = expectations_recorded(&r->own_writes, key);
    switch (expectations_check(&r->own_writes, key, e->resource_version, (int64_t)uv_now(r->loop),
                               &wait_ms)) {
    case EXPECTATION_WAIT:
        log_debug("waiting for the cache to show our last write", "workspace", key,
                  "resourceVersion", rv, "cached", e->resource_version, "timeout_ms",
                  LOG_INT(wait_ms));
        return wait_ms;
    case EXPECTATION_EXPIRED:
        log_debug("the cache did not show our last write in time; deciding on what it shows",
                  "workspace", key, "cached", e->resource_version);
        return 0;
    case EXPECTATION_NONE:
    case EXPECTATION_SEEN:
        break;
    }
    return 0;
}

/* The Workspace key named is gone: everything kept for it goes too. name
 * is the part of key after the namespace, NULL when key has none. */
static void workspace_gone(struct job *j, const char *name)
{
    struct reconciler *r = j->r;
    reconciler_keys_take_notice(r, j->key);
    reconciler_job_forget_failure(r, j->key);
    workspace_pod_free(strmap_remove(&r->gone_pods, j->key));
    expectations_forget(&r->own_writes, j->key);
    activity_tracker_update(r->activity, j->key, NULL, NULL, NULL, 0, 0);
    activity_log_forget(r->records, j->key);
    app_checkpoints_forget(r->checkpoints, j->key);
    /* Deleted: the garbage collector takes what it owned; the snapshot
     * backends let go of the rest (GKE: triggers go as their PodSnapshots
     * do). */
    if (j->ns && name)
        snapshot_backends_workspace_deleted(r->snapshots, j->ns, name);
    reconciler_job_finish(j, 0);
}

/* The loop thread's CPU time so far, in seconds. */
static double thread_cpu_seconds(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) < 0)
        return 0;
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void reconcile_work(struct reconciler *r, const char *key);

/* Reads the caches for key and decides; the output's actions then run.
 * Counts the CPU this part takes (hibernator_reconcile_cpu_seconds_total):
 * per reconcile, it must not grow with the number of workspaces. */
static void reconcile(struct reconciler *r, const char *key)
{
    double cpu = thread_cpu_seconds();
    reconcile_work(r, key);
    controller_metrics_reconcile_cpu(r->metrics, thread_cpu_seconds() - cpu);
}

static void reconcile_work(struct reconciler *r, const char *key)
{
    struct job *j = reconciler_job_new(r, key);
    if (!j)
        return;
    const char *slash = strchr(key, '/');
    const struct cache_entry *we =
        slash ? informer_get(r->ws_inf, (j->ns = strndup(key, (size_t)(slash - key))), slash + 1)
              : NULL;
    if (!we) {
        workspace_gone(j, slash ? slash + 1 : NULL);
        return;
    }
    int64_t wait_ms = own_write_wait(r, key, we);
    if (wait_ms > 0) {
        /* The watch event that shows the write queues the key sooner. */
        j->out.requeue_after_ms = wait_ms;
        reconciler_job_finish(j, 0);
        return;
    }
    j->noticed_us = reconciler_keys_take_notice(r, key);
    const struct workspace *ws = we->obj;
    if (!ws) {
        /* Not even its name and status can be read (the informer named it
         * in the log): nothing can be written on it; its next change
         * queues it again. */
        reconciler_job_finish(j, 0);
        return;
    }
    j->name = strdup(ws->name);
    j->uid = strdup(ws->uid);
    j->rv = strdup(we->resource_version);
    struct gathered g = {0};
    reconciler_gather(r, key, we, &g);
    if (g.hold_ms > 0) {
        j->out.requeue_after_ms = g.hold_ms;
        reconciler_job_finish(j, 0);
        return;
    }
    int e = reconciler_gather_decide(j, &g);
    if (e < 0) {
        log_warn("reconcile stopped before its writes", "workspace", key, "error",
                 log_errno_str(e));
        reconciler_job_finish(j, 1);
        return;
    }
    if (j->out.n_actions || j->out.status_changed)
        log_debug("reconcile", "workspace", key, "state", workspace_state_name(j->out.status.state),
                  "actions", LOG_INT(j->out.n_actions), "status_changed",
                  j->out.status_changed ? "yes" : "no");
    reconciler_job_run(j);
}

/* ---- the queue ----------------------------------------------------------- */

static void pull(void *data)
{
    struct reconciler *r = data;
    if (r->closing || !reconciler_synced(r))
        return;
    while (r->in_flight < r->workers) {
        const char *key;
        if (workqueue_driver_get(r->queue, &key) != 0)
            break;
        reconcile(r, key);
    }
}

static void on_synced(void *data)
{
    struct reconciler *r = data;
    if (reconciler_synced(r)) {
        log_info("watching", "namespace", r->ns ? r->ns : "(all)", "workspaces",
                 LOG_INT(informer_len(r->ws_inf)), "classes", LOG_INT(informer_len(r->class_inf)),
                 "pods", LOG_INT(informer_len(r->pod_inf)));
        pull(r);
    }
}

int reconciler_synced(const struct reconciler *r)
{
    return informer_has_synced(r->ws_inf) && informer_has_synced(r->class_inf) &&
           informer_has_synced(r->pod_inf) && informer_has_synced(r->pvc_inf);
}

struct reconciler_stats reconciler_stats(const struct reconciler *r)
{
    return r->stats;
}

/* A snapshot backend's cache, counted as the informers' are (data: the
 * metrics). */
static void cache_walked(void *data, const char *resource, uint64_t walked)
{
    controller_metrics_cache_walked(data, resource, walked);
}

void reconciler_collect_metrics(struct reconciler *r)
{
    controller_metrics_collect(r->metrics, reconciler_synced(r), workqueue_driver_queue(r->queue),
                               uv_now(r->loop));
    controller_metrics_cache_walked(r->metrics, "workspaces", informer_stats(r->ws_inf).walked);
    controller_metrics_cache_walked(r->metrics, "pods", informer_stats(r->pod_inf).walked);
    controller_metrics_cache_walked(r->metrics, "persistentvolumeclaims",
                                    informer_stats(r->pvc_inf).walked);
    controller_metrics_cache_walked(r->metrics, "workspaceclasses",
                                    informer_stats(r->class_inf).walked);
    snapshot_backends_walked(r->snapshots, cache_walked, r->metrics);
}

int reconciler_new(uv_loop_t *loop, struct kube_client *client, const struct reconciler_options *o,
                   struct reconciler **ret)
{
    struct reconciler *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    LIST_INIT(&r->jobs);
    r->loop = loop;
    r->client = client;
    r->ns = o->ns ? strdup(o->ns) : NULL;
    r->visibility_client = o->visibility_client;
    r->identity = strdup(o->identity ? o->identity : "hibernator");
    r->workers = o->workers ? o->workers : RECONCILER_DEFAULT_WORKERS;
    r->now_ms = o->now_ms ? o->now_ms : clock_unix_ms_cb;
    r->now_data = o->now_data;
    r->metrics = o->metrics;
    if (o->failpoint && o->failpoint[0])
        r->failpoint = strdup(o->failpoint);
    strmap_init(&r->pods_by_ws);
    node_index_init(&r->by_node);
    prewarm_turns_init(&r->turns);
    strmap_init(&r->noticed);
    strmap_init(&r->failures);
    strmap_init(&r->gone_pods);
    expectations_init(&r->own_writes, EXPECTATIONS_TIMEOUT_MS);
    /* A namespace lost to out-of-memory would widen the watch to all of
     * them: every copy is checked. */
    r->strings = strpool_new();
    int e = r->identity && (!o->ns || r->ns) &&
                    (!o->failpoint || !o->failpoint[0] || r->failpoint) && r->strings
                ? 0
                : -ENOMEM;
    if (e == 0)
        e = workqueue_driver_new(loop, NULL, pull, r, &r->queue);
    if (e == 0)
        controller_metrics_watch_queue(r->metrics, workqueue_driver_queue(r->queue));
    struct activity_tracker_options ao = {
        .prober = {.max_in_flight = o->probe_concurrency},
        .zoneinfo_dir = o->zoneinfo_dir,
        .now_ms = r->now_ms,
        .now_data = r->now_data,
        .metrics = r->metrics,
    };
    struct snapshot_backend_options so = {
        .loop = loop,
        .client = client,
        .ns = r->ns,
        .changed = reconciler_keys_changed,
        .data = r,
    };
    if (e == 0)
        e = activity_tracker_new(loop, client, &ao, reconciler_keys_changed, r, &r->activity);
    if (e == 0)
        e = activity_log_new(client, r->ns, &r->records);
    if (e == 0)
        e = snapshot_backends_new(&so, r->snapshots);
    if (e == 0)
        e = app_checkpoints_new(loop, r->now_ms, r->now_data, reconciler_keys_changed, r,
                                &r->checkpoints);
    if (e == 0)
        e = reconciler_keys_watch(r, on_synced);
    if (e < 0) {
        reconciler_close(r);
        return e;
    }
    *ret = r;
    return 0;
}

int reconciler_start(struct reconciler *r)
{
    int e = activity_log_start(r->records);
    if (e < 0)
        log_warn("activity records not listed; they start afresh", "error", log_errno_str(e));
    e = informer_start(r->class_inf);
    if (e == 0)
        e = informer_start(r->pod_inf);
    if (e == 0)
        e = informer_start(r->pvc_inf);
    if (e == 0)
        e = informer_start(r->ws_inf);
    return e;
}

void reconciler_close(struct reconciler *r)
{
    if (!r)
        return;
    r->closing = 1;
    informer_free(r->ws_inf);
    informer_free(r->class_inf);
    informer_free(r->pod_inf);
    informer_free(r->pvc_inf);
    workqueue_driver_close(r->queue);
    activity_tracker_close(r->activity);
    activity_log_free(r->records);
    app_checkpoints_close(r->checkpoints);
    snapshot_backends_free(r->snapshots);
    node_cache_free(r->nodes);
    queue_workloads_free(r->workloads);
    queue_positions_free(r->positions);
    void *v;
    for (size_t it = 0; strmap_next(&r->pods_by_ws, &it, NULL, &v);) {
        struct pod_keys *set = v;
        for (size_t i = 0; i < set->n; i++)
            free(set->keys[i]);
        free(set->keys);
        free(set);
    }
    strmap_free(&r->pods_by_ws);
    node_index_free(&r->by_node);
    prewarm_turns_free(&r->turns);
    for (size_t it = 0; strmap_next(&r->noticed, &it, NULL, &v);)
        free(v);
    strmap_free(&r->noticed);
    for (size_t it = 0; strmap_next(&r->failures, &it, NULL, &v);) {
        action_failure_clear(v);
        free(v);
    }
    strmap_free(&r->failures);
    expectations_free(&r->own_writes);
    while (!LIST_EMPTY(&r->jobs))
        reconciler_job_cancel(LIST_FIRST(&r->jobs));
    for (size_t it = 0; strmap_next(&r->gone_pods, &it, NULL, &v);)
        workspace_pod_free(v);
    strmap_free(&r->gone_pods);
    strpool_let_go(r->strings);
    free(r->ns);
    free(r->identity);
    free(r->failpoint);
    free(r);
}
