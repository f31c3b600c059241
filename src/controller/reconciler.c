#include "controller/reconciler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>
#include <unistd.h>

#include "activity/url_template.h"
#include "controller/activity_log.h"
#include "controller/activity_tracker.h"
#include "controller/app_checkpoint.h"
#include "controller/events.h"
#include "controller/expectations.h"
#include "controller/node_index.h"
#include "controller/pods_seen.h"
#include "controller/prewarm_turns.h"
#include "controller/writes.h"
#include "kube/informer.h"
#include "kube/node_cache.h"
#include "kube/workqueue.h"
#include "snapshot/gke.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/strmap.h"
#include "util/strpool.h"
#include "util/timefmt.h"
#include "workspace/action_failure.h"
#include "workspace/class.h"
#include "workspace/decide.h"
#include "workspace/ledger.h"
#include "workspace/outcome.h"
#include "workspace/pod.h"
#include "workspace/vocabulary.h"
#include "workspace/workspace.h"

static const struct kube_resource workspaces = {"hibernator.dev", "v1alpha1", "workspaces",
                                                "Workspace", 1};
static const struct kube_resource classes = {"hibernator.dev", "v1alpha1", "workspaceclasses",
                                             "WorkspaceClass", 0};

#define API_VERSION "hibernator.dev/v1alpha1"
#define MANAGED_SELECTOR MANAGED_BY_LABEL "=" MANAGED_BY_VALUE
/* Snapshots of one workspace looked at per decision; retention keeps 10 at
 * most, so more only means some wait for the next pass. */
#define MAX_SNAPSHOTS_SEEN 32
/* The pod keys ("ns/pod") that carry one workspace's label, by workspace key. */
struct pod_keys {
    char **keys;
    size_t n, cap;
    int cut_logged; /* more than a decision looks at was said in the log */
};

struct reconciler {
    uv_loop_t *loop;
    struct kube_client *client;
    char *ns;
    char *identity;
    unsigned workers;
    char *failpoint; /* action name after which the process dies, for crash tests */
    int64_t (*now_ms)(void *data);
    void *now_data;

    struct informer *ws_inf, *class_inf, *pod_inf, *pvc_inf;
    struct activity_tracker *activity;
    struct activity_log *records; /* what each workspace's use was, for what-if replays */
    struct gke_snapshots *gke;
    struct app_checkpoints *checkpoints; /* asking applications to write their checkpoint */
    struct node_cache *nodes; /* which accelerator a pod got; started with an accelerator class */
    struct workqueue_driver *queue;
    struct strmap pods_by_ws; /* "ns/ws" -> struct pod_keys * */
    /* Pods by node, paused workspaces by the node they left: what a node's
     * or a scheduled pod's event looks at. */
    struct node_index by_node;
    /* Pre-warms starting and persons waiting for capacity, by class. */
    struct prewarm_turns turns;
    struct strmap noticed; /* "ns/ws" -> uint64_t *: when a change first queued it (µs) */
    /* "ns/ws" -> struct action_failure *: the last action the API server
     * refused, until a pass carries out all its actions. */
    struct strmap failures;
    /* "ns/ws" -> struct workspace_pod *: the last pod of the workspace the
     * pod cache dropped, as it was then (workspace_pod_copy_end()); one per
     * workspace, dropped with the workspace. Says why a pod no pass saw
     * leaving ended. */
    struct strmap gone_pods;
    struct controller_metrics *metrics;
    struct expectations own_writes; /* our last Workspace write per key, until the cache shows it */
    /* The strings cached Workspaces repeat (workspace_share_strings()):
     * the cache's entries are freed after reconciler_close(), hence a pool
     * it lets go of rather than frees. */
    struct strpool *strings;
    unsigned in_flight;
    LIST_HEAD(job_list, job) jobs; /* in flight */
    int closing;
    struct reconciler_stats stats;
};

/* One reconcile of one key: decide() once, then its actions in order. */
struct job {
    struct reconciler *r;
    char *key;
    char *ns, *name, *uid;
    char *rv; /* the Workspace's resourceVersion, advanced by our own writes */
    struct decide_output out;
    /* The status as read, written with ActionFailed if an action fails
     * (workspace/action_failure.h); NULL: the pass has no action to fail. */
    struct workspace_status *read;
    int64_t generation;
    cJSON *bodies[DECIDE_MAX_ACTIONS];  /* pods and claims to create */
    char *pod_uids[DECIDE_MAX_ACTIONS]; /* delete preconditions */
    char *urls[DECIDE_MAX_ACTIONS];     /* AppCheckpoint: the request's URL, NULL: see errs */
    char *errs[DECIDE_MAX_ACTIONS];     /* AppCheckpoint: why the URL could not be made */
    size_t next;
    int finalizer_add;        /* for the finalizer get -> patch step */
    uint64_t noticed_us;      /* when the change that led to this reconcile arrived, 0: unknown */
    struct kube_request *req; /* the call in flight, cancelled on close */
    struct gke_begin *begin;  /* a snapshot being started, cancelled on close */
    struct gke_delete *gdel;  /* a snapshot being deleted, cancelled on close */
    LIST_ENTRY(job) link;     /* in the reconciler's jobs while linked */
    int linked;
    int released; /* gave its worker back: only the status write is left */

    /* Metrics: the reconcile's time, and what its status write records. */
    uint64_t started_ns; /* uv_hrtime() */
    struct workspace_outcome outcome;
    char *class_name; /* the outcome's class, when it has anything to count */
};

/* ---- clock and codecs ---------------------------------------------------- */

/* A Workspace whose spec cannot be read still decodes (spec_error), so
 * that decide() can say so on it; a class that cannot be read is kept by
 * the informer without its decoded form, and its workspaces say so. */
/* The Workspace cache holds one copy of each repeated string (data: the
 * reconciler's pool). */
static int ws_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    struct workspace *ws = NULL;
    int e = workspace_decode(obj, &ws, ret_err);
    if (e < 0)
        return e;
    if (workspace_share_strings(ws, data) < 0) {
        workspace_free(ws);
        return -ENOMEM;
    }
    *ret = ws;
    return 0;
}

static void ws_free(void *p)
{
    workspace_free(p);
}

static int class_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)data;
    return workspace_class_decode(obj, (struct workspace_class **)ret, ret_err);
}

static void class_free(void *p)
{
    workspace_class_free(p);
}

static const struct informer_codec class_codec = {class_decode, class_free, NULL};
/* Pods and claims are read leniently: only memory can fail. */
static int pod_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)ret_err;
    return (*ret = workspace_pod_decode(obj, data)) ? 0 : -ENOMEM;
}

static int pvc_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)ret_err;
    return (*ret = workspace_pvc_decode(obj, data)) ? 0 : -ENOMEM;
}

static const struct informer_codec pod_codec = {pod_decode, workspace_pod_free, NULL};
static const struct informer_codec pvc_codec = {pvc_decode, workspace_pvc_free, NULL};

/* ---- keys ---------------------------------------------------------------- */

/* The controller's own latency per transition is measured from the first
 * change that queued a key since its last reconcile began to the request
 * that acts on it (docs/benchmarks.md). */
static void notice(struct reconciler *r, const char *key)
{
    if (strmap_get(&r->noticed, key))
        return;
    uint64_t *t = malloc(sizeof(*t));
    if (!t)
        return;
    *t = uv_hrtime() / 1000;
    if (strmap_put(&r->noticed, key, t, NULL) < 0)
        free(t);
}

static uint64_t take_notice(struct reconciler *r, const char *key)
{
    uint64_t *t = strmap_remove(&r->noticed, key);
    uint64_t v = t ? *t : 0;
    free(t);
    return v;
}

/* A key the queue could not take is not reconciled until its next change:
 * say so (-ESHUTDOWN while closing is expected and quiet). */
static void requeue_result(const char *key, const char *how, int e)
{
    if (e < 0 && e != -ESHUTDOWN)
        log_warn("workspace not queued again", "key", key, "how", how, "error", log_errno_str(e));
}

static void queue_key(struct reconciler *r, const char *key)
{
    notice(r, key);
    requeue_result(key, "now", workqueue_driver_add(r->queue, key));
}

static void enqueue(struct reconciler *r, const char *ns, const char *name)
{
    char *key = NULL;
    if (asprintf(&key, "%s/%s", ns, name) < 0)
        return;
    queue_key(r, key);
    free(key);
}

static void on_activity(void *data, const char *key)
{
    struct reconciler *r = data;
    if (!r->closing)
        queue_key(r, key);
}

/* Named once per change of the object, not on every pass over it. */
static void log_unreadable_spec(const struct cache_entry *e)
{
    const struct workspace *ws = e->obj;
    if (ws && ws->spec_error)
        log_warn("cannot read a Workspace's spec; reporting it on the object", "workspace", e->key,
                 "resourceVersion", e->resource_version, "error", ws->spec_error);
}

/* The entry of inf cached under key ("ns/name"), NULL: none. */
static const struct cache_entry *cached(const struct informer *inf, const char *key)
{
    const char *s = strchr(key, '/');
    char *ns = s ? strndup(key, (size_t)(s - key)) : NULL;
    const struct cache_entry *e = ns ? informer_get(inf, ns, s + 1) : NULL;
    free(ns);
    return e;
}

/* The node index follows the caches; out of memory it misses an object
 * until its next change, said once per change. */
static void index_workspace(struct reconciler *r, const struct cache_entry *e,
                            const struct workspace *ws)
{
    if (node_index_workspace(&r->by_node, e->key, ws) < 0)
        log_warn("workspace not indexed by node", "workspace", e->key, "error",
                 log_errno_str(-ENOMEM));
}

static void index_pod(struct reconciler *r, const struct cache_entry *e,
                      const struct workspace_pod *p)
{
    if (node_index_pod(&r->by_node, e->key, p) < 0)
        log_warn("pod not indexed by node", "pod", e->key, "error", log_errno_str(-ENOMEM));
}

/* A turn among the resumes freed: a pre-warm waiting for one looks again. */
static void turn_freed(void *data, const char *key)
{
    struct reconciler *r = data;
    if (!r->closing)
        queue_key(r, key);
}

static void index_turns(struct reconciler *r, const struct cache_entry *e,
                        const struct workspace *ws)
{
    if (prewarm_turns_workspace(&r->turns, e->key, ws, turn_freed, r) < 0)
        log_warn("workspace not counted among its class's resumes", "workspace", e->key, "error",
                 log_errno_str(-ENOMEM));
}

static void on_ws_add(void *data, const struct cache_entry *e)
{
    struct reconciler *r = data;
    expectations_observe(&r->own_writes, e->key, e->resource_version);
    controller_metrics_workspace_changed(r->metrics, NULL, e->obj);
    index_workspace(r, e, e->obj);
    index_turns(r, e, e->obj);
    log_unreadable_spec(e);
    enqueue(r, e->ns, e->name);
}

static void on_ws_update(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    struct reconciler *r = data;
    expectations_observe(&r->own_writes, e->key, e->resource_version);
    const struct workspace *was = old_e->obj, *ws = e->obj;
    controller_metrics_workspace_changed(r->metrics, was, ws);
    index_workspace(r, e, ws);
    index_turns(r, e, ws);
    if (!(was && ws && was->spec_error && ws->spec_error &&
          strcmp(was->spec_error, ws->spec_error) == 0))
        log_unreadable_spec(e);
    enqueue(r, e->ns, e->name);
}

/* Gone: nothing of ours to wait for any more; the pass that follows lets the
 * activity tracker forget it. */
static void on_ws_delete(void *data, const struct cache_entry *e)
{
    struct reconciler *r = data;
    expectations_forget(&r->own_writes, e->key);
    controller_metrics_workspace_changed(r->metrics, e->obj, NULL);
    index_workspace(r, e, NULL);
    index_turns(r, e, NULL);
    enqueue(r, e->ns, e->name);
}

struct class_match {
    struct reconciler *r;
    const char *class_name;
};

static void enqueue_if_class(void *data, const struct cache_entry *e)
{
    struct class_match *m = data;
    const struct workspace *ws = e->obj;
    if (ws && ws->class_name && strcmp(ws->class_name, m->class_name) == 0)
        enqueue(m->r, e->ns, e->name);
}

/* The node cache keeps every class's product label (it starts listing on
 * the first reconcile of a workspace with an accelerator). */
static void keep_product_label(struct reconciler *r, const struct workspace_class *c)
{
    if (c && c->has_accelerator && node_cache_keep_label(r->nodes, c->product_label) < 0)
        log_warn("cannot keep a node label", "class", c->name, "label", c->product_label);
    /* What GKE matches a restore on (docs/snapshots.md, "Restore
     * compatibility"), for the classes that take GKE snapshots. */
    static const char *const gke[] = {MACHINE_FAMILY_LABEL, MACHINE_TYPE_LABEL, NODE_POOL_LABEL};
    for (size_t i = 0;
         c && c->snapshot.backend == SNAPSHOT_BACKEND_GKE && i < sizeof(gke) / sizeof(gke[0]); i++)
        if (node_cache_keep_label(r->nodes, gke[i]) < 0)
            log_warn("cannot keep a node label", "class", c->name, "label", gke[i]);
}

static void on_class_change(void *data, const struct cache_entry *e)
{
    struct reconciler *r = data;
    keep_product_label(r, e->obj);
    /* A class with the GKE backend: its caches run from now, also when no
     * workspace of it is left, so that the policies of workspaces deleted
     * while the controller was down are found and go (gke.h). */
    const struct workspace_class *c = e->obj;
    if (c && c->snapshot.backend == SNAPSHOT_BACKEND_GKE && gke_snapshots_start(r->gke) < 0)
        log_warn("cannot watch GKE Pod Snapshots", "class", e->name);
    struct class_match m = {r, e->name};
    informer_foreach(r->ws_inf, enqueue_if_class, &m);
}

static void on_class_update(void *data, const struct cache_entry *old_e,
                            const struct cache_entry *e)
{
    (void)old_e;
    on_class_change(data, e);
}

static char *ws_key_of_pod(const struct workspace_pod *p)
{
    char *key = NULL;
    if (!p->workspace || asprintf(&key, "%s/%s", p->ns, p->workspace) < 0)
        return NULL;
    return key;
}

static void on_pod_add(void *data, const struct cache_entry *e)
{
    struct reconciler *r = data;
    const struct workspace_pod *p = e->obj;
    index_pod(r, e, p);
    char *wk = ws_key_of_pod(p);
    if (!wk)
        return;
    struct pod_keys *set = strmap_get(&r->pods_by_ws, wk);
    if (!set) {
        set = calloc(1, sizeof(*set));
        if (!set || strmap_put(&r->pods_by_ws, wk, set, NULL) < 0) {
            free(set);
            free(wk);
            return;
        }
    }
    int present = 0;
    for (size_t i = 0; i < set->n; i++)
        present |= strcmp(set->keys[i], e->key) == 0;
    if (!present) {
        if (set->n == set->cap) {
            size_t cap = set->cap ? set->cap * 2 : 2;
            char **k = realloc(set->keys, cap * sizeof(*k));
            if (k) {
                set->keys = k;
                set->cap = cap;
            }
        }
        if (set->n < set->cap && (set->keys[set->n] = strdup(e->key)))
            set->n++;
    }
    queue_key(r, wk);
    free(wk);
}

/* GPU fate: a pod that just got a node may have taken the accelerator a
 * paused workspace released there; such workspaces look again. */
struct pod_scheduled {
    struct reconciler *r;
    const struct workspace_pod *pod;
    int64_t now;
};

static void enqueue_if_taken(void *data, const char *key)
{
    struct pod_scheduled *m = data;
    const struct cache_entry *e = cached(m->r->ws_inf, key);
    if (e && e->obj && ledger_taker_pick(e->obj, m->now, NULL, m->pod))
        queue_key(m->r, e->key);
}

static void on_pod_update(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    struct reconciler *r = data;
    const struct workspace_pod *was = old_e->obj, *p = e->obj;
    if (was && p && !was->node_name && p->node_name && p->extended[0]) {
        struct pod_scheduled m = {r, p, r->now_ms(r->now_data)};
        node_index_paused_from(&r->by_node, p->node_name, enqueue_if_taken, &m);
    }
    on_pod_add(data, e);
}

static void on_pod_delete(void *data, const struct cache_entry *e)
{
    struct reconciler *r = data;
    index_pod(r, e, NULL);
    char *wk = ws_key_of_pod(e->obj);
    if (!wk)
        return;
    struct pod_keys *set = strmap_get(&r->pods_by_ws, wk);
    for (size_t i = 0; set && i < set->n; i++) {
        if (strcmp(set->keys[i], e->key) == 0) {
            free(set->keys[i]);
            set->keys[i] = set->keys[--set->n];
            break;
        }
    }
    if (set && set->n == 0) {
        strmap_remove(&r->pods_by_ws, wk);
        free(set->keys);
        free(set);
    }
    struct workspace_pod *last = workspace_pod_copy_end(e->obj);
    if (last) {
        struct workspace_pod *before = strmap_remove(&r->gone_pods, wk);
        workspace_pod_free(before);
        if (strmap_put(&r->gone_pods, wk, last, NULL) < 0)
            workspace_pod_free(last);
    }
    queue_key(r, wk);
    free(wk);
}

struct node_match {
    struct reconciler *r;
    const char *node; /* NULL: any */
};

static void enqueue_if_on_node(void *data, const struct cache_entry *e)
{
    const struct node_match *m = data;
    const struct workspace_pod *p = e->obj;
    if (!p->node_name || (m->node && strcmp(p->node_name, m->node) != 0))
        return;
    char *wk = ws_key_of_pod(p);
    if (wk)
        queue_key(m->r, wk);
    free(wk);
}

/* A paused workspace whose pod ran on the node, which may just have left. */
static void enqueue_if_paused_off_node(void *data, const struct cache_entry *e)
{
    const struct node_match *m = data;
    const struct workspace *ws = e->obj;
    const char *node = ws ? ws->status.last_pause->node_name : NULL;
    if (!node || (m->node && strcmp(node, m->node) != 0) ||
        !ledger_awaits_node_removal(&ws->status, m->r->now_ms(m->r->now_data)))
        return;
    queue_key(m->r, e->key);
}

static void enqueue_pod_key_if_on_node(void *data, const char *key)
{
    const struct node_match *m = data;
    const struct cache_entry *e = cached(m->r->pod_inf, key);
    if (e)
        enqueue_if_on_node(data, e);
}

static void enqueue_ws_key_if_paused_off_node(void *data, const char *key)
{
    const struct node_match *m = data;
    const struct cache_entry *e = cached(m->r->ws_inf, key);
    if (e)
        enqueue_if_paused_off_node(data, e);
}

/* A node's product label changed, or the node came or went: the
 * workspaces with a pod on it decide again (NULL: any node, all of them). */
static void on_node_change(void *data, const char *node)
{
    struct reconciler *r = data;
    if (r->closing)
        return;
    struct node_match m = {r, node};
    if (node) {
        node_index_pods_on(&r->by_node, node, enqueue_pod_key_if_on_node, &m);
        node_index_paused_from(&r->by_node, node, enqueue_ws_key_if_paused_off_node, &m);
        return;
    }
    informer_foreach(r->pod_inf, enqueue_if_on_node, &m);
    informer_foreach(r->ws_inf, enqueue_if_paused_off_node, &m);
}

static void enqueue_ws_key(void *data, const char *key)
{
    queue_key(data, key);
}

/* A node took or left a version: the paused workspaces whose snapshot was
 * taken on either decide again whether it can come back. */
static void on_node_version(void *data, const char *node, const char *before, const char *after)
{
    struct reconciler *r = data;
    (void)node;
    if (r->closing)
        return;
    if (before)
        node_index_paused_on_version(&r->by_node, before, enqueue_ws_key, r);
    if (after)
        node_index_paused_on_version(&r->by_node, after, enqueue_ws_key, r);
}

static void on_pvc_change(void *data, const struct cache_entry *e)
{
    struct reconciler *r = data;
    /* Claims are named "<workspace>-home", never cut for a valid workspace
     * name (names_home_claim()). */
    size_t n = strlen(e->name);
    if (n > 5 && strcmp(e->name + n - 5, "-home") == 0) {
        char *ws = strndup(e->name, n - 5);
        if (ws)
            enqueue(r, e->ns, ws);
        free(ws);
    }
}

static void on_pvc_update(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    (void)old_e;
    on_pvc_change(data, e);
}

/* ---- jobs ---------------------------------------------------------------- */

static void job_free(struct job *j)
{
    for (size_t i = 0; i < DECIDE_MAX_ACTIONS; i++) {
        cJSON_Delete(j->bodies[i]);
        free(j->pod_uids[i]);
        free(j->urls[i]);
        free(j->errs[i]);
    }
    decide_output_clear(&j->out);
    workspace_status_clear(j->read);
    free(j->read);
    free(j->key);
    free(j->ns);
    free(j->name);
    free(j->uid);
    free(j->rv);
    free(j->class_name);
    free(j);
}

static void pull(void *data);

/* Ends a job: error 0 forgets the key's failures; otherwise it is re-queued
 * with backoff. The queue learns the key is done either way. */
static void job_unlink(struct job *j)
{
    if (j->linked)
        LIST_REMOVE(j, link);
    j->linked = 0;
}

static void job_finish(struct job *j, int error)
{
    struct reconciler *r = j->r;
    job_unlink(j);
    if (!r->closing) {
        controller_metrics_reconciled(r->metrics, error, !error && j->out.requeue_after_ms > 0,
                                      (double)(uv_hrtime() - j->started_ns) / 1e9);
        if (error) {
            r->stats.errors++;
            requeue_result(j->key, "after a failure",
                           workqueue_driver_add_rate_limited(r->queue, j->key));
        } else {
            workqueue_driver_forget(r->queue, j->key);
            if (j->out.requeue_after_ms > 0)
                requeue_result(j->key, "after a delay",
                               workqueue_driver_add_after(r->queue, j->key,
                                                          (uint64_t)j->out.requeue_after_ms));
        }
        workqueue_driver_done(r->queue, j->key);
    }
    if (!j->released)
        r->in_flight--;
    job_free(j);
}

/* A write of the Workspace succeeded and obj is what the API server made of
 * it: the job's next write builds on its resourceVersion, and the next pass
 * for the key waits until the cache shows it. */
static void wrote_workspace(struct job *j, const cJSON *obj)
{
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "resourceVersion");
    if (!cJSON_IsString(rv))
        return;
    char *copy = strdup(rv->valuestring);
    if (copy) {
        free(j->rv);
        j->rv = copy;
    }
    /* Out of memory: nothing is recorded, and the next pass decides at once. */
    int e = expectations_record(&j->r->own_writes, j->key, rv->valuestring,
                                (int64_t)uv_now(j->r->loop));
    if (e < 0)
        log_warn("own write not recorded", "key", j->key, "error", log_errno_str(e));
}

static void run_next(struct job *j);

/* Crash tests: die right after an action of the named type succeeded, before
 * anything else (the status write included) happens; with "before:<type>",
 * right before such an action is sent. */
static void failpoint(const struct reconciler *r, enum action_type t)
{
    if (r->failpoint && strcmp(r->failpoint, action_type_name(t)) == 0) {
        log_warn("failpoint reached, exiting", "after", r->failpoint);
        _exit(3);
    }
}

static void failpoint_before(const struct reconciler *r, enum action_type t)
{
    if (r->failpoint && strncmp(r->failpoint, "before:", 7) == 0 &&
        strcmp(r->failpoint + 7, action_type_name(t)) == 0) {
        log_warn("failpoint reached, exiting", "before", r->failpoint + 7);
        _exit(3);
    }
}

/* A status write failed: a conflict is normal (the key is decided again on
 * the newer object); anything else is said, and plainly when the controller
 * may not write status at all, since nothing else can report that. */
static void status_write_failed(const struct job *j, const struct kube_response *resp)
{
    if (kube_response_conflict(resp))
        return;
    if (resp->status == -EIO && resp->http_code == 403)
        log_error("cannot write the Workspace's status: forbidden; the controller needs update "
                  "on workspaces/status (deploy/rbac.yaml)",
                  "workspace", j->key, "error", kube_response_error_text(resp));
    else
        log_warn("status write failed", "workspace", j->key, "code", LOG_INT(resp->http_code),
                 "error", kube_response_error_text(resp));
}

static void on_status_written(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (resp->status < 0) {
        status_write_failed(j, resp);
        job_finish(j, 1);
        return;
    }
    j->r->stats.status_writes++;
    controller_metrics_outcome(j->r->metrics, j->ns, j->class_name, &j->outcome);
    wrote_workspace(j, resp->body);
    job_finish(j, 0);
}

/* PUT of st as the Workspace's status, on the resourceVersion the job
 * read (or last wrote); cb ends the job. */
static void put_status(struct job *j, const struct workspace_status *st, kube_response_cb cb)
{
    cJSON *obj = NULL;
    int e = writes_status_object(j->name, j->ns, j->rv, st, &obj);
    if (e < 0) {
        log_warn("status write not built", "workspace", j->key, "error", log_errno_str(e));
        job_finish(j, 1);
        return;
    }
    e = kube_replace(j->r->client, &workspaces, j->ns, j->name, "status", obj, cb, j, &j->req);
    cJSON_Delete(obj);
    if (e < 0) {
        log_warn("status write could not start", "workspace", j->key, "error", log_errno_str(e));
        job_finish(j, 1);
        return;
    }
    /* The status only records what the actions did: it may wait behind
     * other workspaces' pod deletes and creates (the client sends those
     * first), so it gives its worker to the next key rather than hold back
     * that key's actions. The key stays busy in the queue until the write
     * is answered. */
    j->released = 1;
    j->r->in_flight--;
    workqueue_driver_notify(j->r->queue);
}

static void write_status(struct job *j)
{
    put_status(j, &j->out.status, on_status_written);
}

/* ---- actions that fail --------------------------------------------------- */

static void forget_failure(struct reconciler *r, const char *key)
{
    struct action_failure *f = strmap_remove(&r->failures, key);
    action_failure_clear(f);
    free(f);
}

static void on_failure_reported(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (resp->status < 0) {
        status_write_failed(j, resp);
    } else {
        j->r->stats.status_writes++;
        wrote_workspace(j, resp->body);
    }
    job_finish(j, 1); /* the action is retried with backoff */
}

/* The current action failed with the API server's (or the backend's) answer.
 * A conflict only means the world moved: decide again. Anything else is
 * remembered and reported in the status as read, with ActionFailed (why
 * not the decided status: workspace/action_failure.h); the key is retried
 * with backoff either way. resp: the API server's answer, NULL when there
 * is none (a backend's failure, a call that could not start). */
static void action_failed(struct job *j, const struct kube_response *resp, const char *message)
{
    struct reconciler *r = j->r;
    const struct action *a = &j->out.actions[j->next];
    const char *type = action_type_name(a->type);
    long http_code = resp ? resp->http_code : 0;
    if (resp && kube_response_conflict(resp)) {
        log_warn("action failed", "workspace", j->key, "action", type, "name", a->name, "code",
                 LOG_INT(http_code), "error", message);
        job_finish(j, 1);
        return;
    }
    int64_t now = r->now_ms(r->now_data);
    struct action_failure *f = strmap_get(&r->failures, j->key);
    if (!f && (f = calloc(1, sizeof(*f))) && strmap_put(&r->failures, j->key, f, NULL) < 0) {
        free(f);
        f = NULL;
    }
    if (!f || action_failure_note(f, type, a->name, http_code, message, now) < 0) {
        log_warn("action failed", "workspace", j->key, "action", type, "name", a->name, "code",
                 LOG_INT(http_code), "error", message);
        job_finish(j, 1);
        return;
    }
    char since[TIMEFMT_RFC3339_SIZE];
    timefmt_rfc3339_text(f->first_failed_ms, since);
    log_warn("action failed", "workspace", j->key, "action", type, "name", a->name, "code",
             LOG_INT(http_code), "error", f->message, "failures", LOG_INT(f->count), "since",
             since);
    int changed = j->read ? action_failure_report(j->read, f, j->generation, now) : 0;
    if (changed <= 0) {
        job_finish(j, 1);
        return;
    }
    put_status(j, j->read, on_failure_reported);
}

/* The current action's call could not start; e says why (a negative errno). */
static void action_not_started(struct job *j, int e)
{
    char why[128];
    snprintf(why, sizeof(why), "cannot start the request: %s", log_errno_str(e));
    action_failed(j, NULL, why);
}

/* The current action succeeded: the crash tests' failpoint, then the next. */
static void next_action(struct job *j)
{
    failpoint(j->r, j->out.actions[j->next].type);
    j->r->stats.actions++;
    j->next++;
    run_next(j);
}

static void action_succeeded(struct job *j)
{
    const struct action *a = &j->out.actions[j->next];
    log_info("action done", "workspace", j->key, "action", action_type_name(a->type), "name",
             a->name);
    next_action(j);
}

/* An action's outcome: tolerated answers count as done. */
static void on_action_done(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    const struct action *a = &j->out.actions[j->next];
    int ok = resp->status == 0;
    if (!ok && resp->status == -EIO) {
        if ((a->type == ACTION_CREATE_POD || a->type == ACTION_CREATE_PVC) &&
            kube_response_already_exists(resp))
            ok = 1;
        if ((a->type == ACTION_DELETE_POD || a->type == ACTION_DELETE_PVC ||
             a->type == ACTION_RELEASE_PVC) &&
            kube_response_not_found(resp))
            ok = 1;
    }
    if (!ok) {
        action_failed(j, resp, kube_response_error_text(resp));
        return;
    }
    action_succeeded(j);
}

/* A write to the Workspace itself failed: returns 1 when it did (and the job
 * is told), 0 when it succeeded. 409: the workspace changed since the
 * decision (a user's edit wins), decide again on what it is now; 404: it is
 * gone, nothing left to do; anything else is the action's failure. */
static int workspace_write_failed(struct job *j, struct kube_response *resp)
{
    if (resp->status >= 0)
        return 0;
    if (kube_response_conflict(resp) || kube_response_not_found(resp))
        job_finish(j, !kube_response_not_found(resp));
    else
        action_failed(j, resp, kube_response_error_text(resp));
    return 1;
}

static void on_finalizer_patched(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (workspace_write_failed(j, resp))
        return;
    wrote_workspace(j, resp->body);
    next_action(j);
}

/* Finalizers are a list others may add to: change ours only, on the object as
 * it is now, with its resourceVersion, so nobody else's entry is lost. */
static void on_ws_for_finalizer(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (resp->status < 0) {
        if (kube_response_not_found(resp))
            job_finish(j, 0);
        else
            action_failed(j, resp, kube_response_error_text(resp));
        return;
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(resp->body, "metadata");
    const cJSON *uid = cJSON_GetObjectItemCaseSensitive(meta, "uid");
    if (!cJSON_IsString(uid) || strcmp(uid->valuestring, j->uid) != 0) {
        job_finish(j, 0); /* a new object with the same name: its own reconcile will come */
        return;
    }
    char *text = NULL;
    int e = writes_finalizer_patch(meta, j->finalizer_add, &text);
    if (e < 0) {
        log_warn("finalizer patch not built", "workspace", j->key, "error", log_errno_str(e));
        job_finish(j, 1);
        return;
    }
    e = kube_patch(j->r->client, &workspaces, j->ns, j->name, NULL, KUBE_PATCH_MERGE, text,
                   on_finalizer_patched, j, &j->req);
    free(text);
    if (e < 0)
        action_not_started(j, e);
}

/* A snapshot backend's call (begin or delete) is over. */
static void on_backend_done(void *data, int status, const char *error)
{
    struct job *j = data;
    j->begin = NULL;
    j->gdel = NULL;
    if (status < 0) {
        action_failed(j, NULL, error ? error : log_errno_str(status));
        return;
    }
    action_succeeded(j);
}

static void on_auto_paused(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (workspace_write_failed(j, resp))
        return;
    wrote_workspace(j, resp->body);
    log_info("paused an idle workspace", "workspace", j->key, "reason",
             j->out.actions[j->next].message);
    j->r->stats.auto_pauses++;
    next_action(j);
}

static void on_auto_resumed(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (workspace_write_failed(j, resp))
        return;
    wrote_workspace(j, resp->body);
    const struct action *a = &j->out.actions[j->next];
    log_info("pre-warmed a workspace", "workspace", j->key, "reason", a->message);
    const struct cache_entry *we = informer_get(j->r->ws_inf, j->ns, j->name);
    const struct workspace *ws = we ? we->obj : NULL;
    if (ws && ws->class_name && prewarm_turns_begun(&j->r->turns, j->key, ws->class_name) < 0)
        log_warn("pre-warm not counted among its class's resumes", "workspace", j->key, "error",
                 log_errno_str(-ENOMEM));
    j->r->stats.auto_resumes++;
    next_action(j);
}

/* spec.paused false and the pre-warm's annotations, in one write that only
 * lands on the object the decision was made for. */
static int auto_resume(struct job *j, const struct action *a, struct kube_request **ret_req)
{
    char *text = NULL;
    int e = writes_auto_resume_patch(j->rv, a->time_ms, a->for_ms, &text);
    if (e < 0)
        return e;
    e = kube_patch(j->r->client, &workspaces, j->ns, j->name, NULL, KUBE_PATCH_MERGE, text,
                   on_auto_resumed, j, ret_req);
    free(text);
    return e;
}

/* spec.paused and the annotations that say why, in one write that only
 * lands on the object the decision was made for. */
static int auto_pause(struct job *j, const struct action *a, struct kube_request **ret_req)
{
    char *text = NULL;
    int e = writes_auto_pause_patch(j->rv, a->time_ms, a->message, &text);
    if (e < 0)
        return e;
    e = kube_patch(j->r->client, &workspaces, j->ns, j->name, NULL, KUBE_PATCH_MERGE, text,
                   on_auto_paused, j, ret_req);
    free(text);
    return e;
}

static int has_event(const struct job *j, const char *reason)
{
    for (size_t i = 0; i < j->out.n_actions; i++)
        if (j->out.actions[i].type == ACTION_EVENT && strcmp(j->out.actions[i].reason, reason) == 0)
            return 1;
    return 0;
}

/* Logs the controller's own latency for the transitions the snapshot
 * benchmark follows: a Ready snapshot to the pod's delete, a resume request
 * to the new pod's create. */
static void transition_latency(const struct job *j, const struct action *a)
{
    const char *step = NULL;
    if (a->type == ACTION_DELETE_POD && has_event(j, "SnapshotReady"))
        step = "snapshot-ready-to-delete";
    else if (a->type == ACTION_CREATE_POD && has_event(j, "Resuming"))
        step = "resume-to-create";
    if (!step || !j->noticed_us)
        return;
    log_info("transition", "workspace", j->key, "step", step, "latency_us",
             LOG_INT((int64_t)(uv_hrtime() / 1000 - j->noticed_us)));
}

/* What frees or claims an accelerator goes before the API client's other
 * requests (include/kube/client.h). */
static enum kube_priority action_priority(enum action_type t)
{
    switch (t) {
    case ACTION_DELETE_POD:
    case ACTION_CREATE_POD:
    case ACTION_AUTO_PAUSE:
        return KUBE_PRIORITY_CRITICAL;
    default:
        return KUBE_PRIORITY_NORMAL;
    }
}

/* Asks the application to write its checkpoint; the answer comes back
 * through the tracker, which queues the key. Started is done: the action
 * does not wait for the answer. */
static void app_checkpoint_run(struct job *j, const struct action *a)
{
    struct reconciler *r = j->r;
    const struct workspace_class *cls = NULL;
    const struct cache_entry *we = informer_get(r->ws_inf, j->ns, j->name);
    const struct workspace *ws = we ? we->obj : NULL;
    const struct cache_entry *ce =
        ws && ws->class_name ? informer_get(r->class_inf, NULL, ws->class_name) : NULL;
    cls = ce ? ce->obj : NULL;
    int e = 0;
    if (!j->urls[j->next] || !cls || !cls->checkpoint_request.method) {
        e = app_checkpoints_refuse(r->checkpoints, j->key, a->name,
                                   j->errs[j->next] ? j->errs[j->next] : "no URL for the pod");
    } else {
        int64_t left = a->time_ms - r->now_ms(r->now_data);
        struct app_checkpoint_call call = {
            .key = j->key,
            .attempt = a->name,
            .method = cls->checkpoint_request.method,
            .url = j->urls[j->next],
            .timeout_ms = left < 1000 ? 1000 : left,
        };
        e = app_checkpoints_ask(r->checkpoints, &call);
        if (e == -EINVAL)
            e = app_checkpoints_refuse(r->checkpoints, j->key, a->name, "the URL is not usable");
        else if (e == 0)
            log_info("asking the application to write its checkpoint", "workspace", j->key,
                     "attempt", a->name);
    }
    if (e < 0) {
        action_failed(j, NULL, log_errno_str(e));
        return;
    }
    action_succeeded(j);
}

/* Every action was carried out (or none is needed any more): a failure
 * reported before is over. Not once the finalizer is gone: the Workspace
 * goes with it. The status is written if it changed. */
static void actions_done(struct job *j)
{
    forget_failure(j->r, j->key);
    if (!(j->out.n_actions &&
          j->out.actions[j->out.n_actions - 1].type == ACTION_REMOVE_FINALIZER) &&
        action_failure_resolved(&j->out.status))
        j->out.status_changed = 1;
    if (j->out.status_changed)
        write_status(j);
    else
        job_finish(j, 0);
}

/* Starts the API call of action a (one that the API server carries out).
 * Returns 0 and *ret_req, or a negative errno (kube_get() and friends). */
static int start_api_call(struct job *j, const struct action *a, struct kube_request **ret_req)
{
    struct reconciler *r = j->r;
    switch (a->type) {
    case ACTION_ADD_FINALIZER:
    case ACTION_REMOVE_FINALIZER:
        j->finalizer_add = a->type == ACTION_ADD_FINALIZER;
        return kube_get(r->client, &workspaces, j->ns, j->name, on_ws_for_finalizer, j, ret_req);
    case ACTION_CREATE_PVC:
        return kube_create(r->client, &KUBE_RESOURCE_PVCS, j->ns, j->bodies[j->next],
                           on_action_done, j, ret_req);
    case ACTION_CREATE_POD:
        return kube_create(r->client, &KUBE_RESOURCE_PODS, j->ns, j->bodies[j->next],
                           on_action_done, j, ret_req);
    case ACTION_DELETE_POD: {
        struct kube_delete_options o = {.precondition_uid = j->pod_uids[j->next],
                                        .grace_period_seconds = a->grace_seconds,
                                        .propagation_policy = "Background"};
        return kube_delete(r->client, &KUBE_RESOURCE_PODS, j->ns, a->name, &o, on_action_done, j,
                           ret_req);
    }
    case ACTION_DELETE_PVC: {
        struct kube_delete_options o = {.grace_period_seconds = -1,
                                        .propagation_policy = "Background"};
        return kube_delete(r->client, &KUBE_RESOURCE_PVCS, j->ns, a->name, &o, on_action_done, j,
                           ret_req);
    }
    case ACTION_RELEASE_PVC:
        return kube_patch(r->client, &KUBE_RESOURCE_PVCS, j->ns, a->name, NULL, KUBE_PATCH_MERGE,
                          "{\"metadata\":{\"ownerReferences\":null}}", on_action_done, j, ret_req);
    case ACTION_AUTO_PAUSE:
        return auto_pause(j, a, ret_req);
    case ACTION_AUTO_RESUME:
        return auto_resume(j, a, ret_req);
    default:
        return -EINVAL; /* not an API call: run_next() starts it */
    }
}

/* A transition's Event has its answer: whatever it was (a dropped or
 * refused Event is logged, never a reason to hold up reconciling), the
 * next action follows. */
static void on_event_posted(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    (void)events_posted(resp);
    j->next++;
    run_next(j);
}

/* Posts action a, an Event. Named after its transition, or else the object
 * version it was decided on: decided again after a crash, it is posted once.
 * A transition's Event (one with an occasion) is waited for, so the status
 * write that records the transition comes after it: a controller that dies
 * before that write decides the transition again and posts it then, and a
 * status that shows a transition never lacks its Event. Returns whether the
 * job goes on by itself (1: on_event_posted() runs the next action). */
static int post_event(struct job *j, const struct action *a)
{
    struct reconciler *r = j->r;
    struct event_subject subject = {API_VERSION, "Workspace", j->ns, j->name, j->uid};
    char version[200];
    snprintf(version, sizeof(version), "rv-%s", j->rv);
    if (a->occasion &&
        events_post_then(r->client, &subject, a->event_type, a->reason, a->message, a->occasion,
                         r->identity, r->now_ms(r->now_data), on_event_posted, j, &j->req) == 0)
        return 1;
    if (!a->occasion)
        events_post(r->client, &subject, a->event_type, a->reason, a->message, version, r->identity,
                    r->now_ms(r->now_data));
    return 0;
}

/* Starts the job's next action; its callback runs the one after. */
static void run_next(struct job *j)
{
    struct reconciler *r = j->r;
    if (r->closing) {
        job_finish(j, 0);
        return;
    }
    if (j->next >= j->out.n_actions) {
        actions_done(j);
        return;
    }
    const struct action *a = &j->out.actions[j->next];
    failpoint_before(r, a->type);
    transition_latency(j, a);
    switch (a->type) {
    case ACTION_EVENT:
        if (post_event(j, a))
            return;
        j->next++;
        run_next(j);
        return;
    case ACTION_SNAPSHOT_BEGIN: {
        int e =
            gke_snapshots_begin(r->gke, j->ns, j->bodies[j->next], on_backend_done, j, &j->begin);
        if (e < 0)
            action_not_started(j, e);
        return;
    }
    case ACTION_APP_CHECKPOINT:
        app_checkpoint_run(j, a);
        return;
    case ACTION_SNAPSHOT_DELETE: {
        /* The PodSnapshot only: its trigger goes when it is gone. */
        int e = gke_snapshots_delete(r->gke, j->ns, a->name, on_backend_done, j, &j->gdel);
        if (e < 0)
            action_not_started(j, e);
        return;
    }
    default:
        break;
    }
    struct kube_request *req = NULL;
    int e = start_api_call(j, a, &req);
    if (e < 0) {
        action_not_started(j, e);
        return;
    }
    j->req = req;
    kube_request_set_priority(req, action_priority(a->type));
}

struct taker_search {
    const struct reconciler *r;
    const struct workspace *ws;
    int64_t now;
    const struct workspace_pod *first;
};

static void pick_taker(void *data, const char *key)
{
    struct taker_search *t = data;
    const struct cache_entry *e = cached(t->r->pod_inf, key);
    if (e)
        t->first = ledger_taker_pick(t->ws, t->now, t->first, e->obj);
}

/* The pod that took the accelerator ws's last pause released, from the
 * controller's own pods on the node it left; NULL: none (yet), or nothing
 * to look for. */
static const struct workspace_pod *accelerator_taker(const struct reconciler *r,
                                                     const struct workspace *ws, int64_t now)
{
    struct taker_search t = {r, ws, now, NULL};
    if (ledger_awaits_taker(&ws->status, now))
        node_index_pods_on(&r->by_node, ws->status.last_pause->node_name, pick_taker, &t);
    return t.first;
}

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

/* What one pass decides on, read from the caches (pointers into them,
 * valid until the loop turns). */
struct gathered {
    const struct workspace *ws;
    const struct workspace_class *cls;
    struct pods_seen pods;
    struct decide_node nodes[PODS_SEEN_MAX];
    size_t n_nodes;
    struct decide_restore_nodes restore_nodes;
    struct snapshot_view snap_view, snap_list[MAX_SNAPSHOTS_SEEN];
    struct snapshot_view next_view; /* of the attempt workspace_snapshot_next_attempt() names */
    char next_attempt[NAMES_SIZE];
    struct decide_input in;
};

/* A new job for key, linked into r's jobs; NULL (said in the log, key
 * queued again with backoff) out of memory. */
static struct job *job_new(struct reconciler *r, const char *key)
{
    r->stats.reconciles++;
    r->in_flight++;
    struct job *j = calloc(1, sizeof(*j));
    if (!j || !(j->key = strdup(key))) {
        free(j);
        r->in_flight--;
        log_warn("reconcile not started", "key", key, "error", log_errno_str(-ENOMEM));
        requeue_result(key, "after a failure", workqueue_driver_add_rate_limited(r->queue, key));
        workqueue_driver_done(r->queue, key);
        return NULL;
    }
    j->r = r;
    j->started_ns = uv_hrtime();
    LIST_INSERT_HEAD(&r->jobs, j, link);
    j->linked = 1;
    return j;
}

/* The Workspace key named is gone: everything kept for it goes too. name
 * is the part of key after the namespace, NULL when key has none. */
static void workspace_gone(struct job *j, const char *name)
{
    struct reconciler *r = j->r;
    take_notice(r, j->key);
    forget_failure(r, j->key);
    workspace_pod_free(strmap_remove(&r->gone_pods, j->key));
    expectations_forget(&r->own_writes, j->key);
    activity_tracker_update(r->activity, j->key, NULL, NULL, NULL, 0, 0);
    activity_log_forget(r->records, j->key);
    app_checkpoints_forget(r->checkpoints, j->key);
    /* Deleted: the garbage collector takes what it owned; snapshot
     * triggers go as their PodSnapshots do. */
    if (j->ns && name)
        gke_snapshots_workspace_deleted(r->gke, j->ns, name);
    job_finish(j, 0);
}

/* The cached pods that carry key's label, at most PODS_SEEN_MAX of them
 * (controller/pods_seen.h picks those that matter). More is not the
 * controller's doing: it is said in the log once while it lasts. */
static void gather_pods(struct reconciler *r, const char *key, struct gathered *g)
{
    struct pod_keys *set = strmap_get(&r->pods_by_ws, key);
    pods_seen_init(&g->pods, g->ws->status.pod_name);
    for (size_t i = 0; set && i < set->n; i++) {
        const char *s = strchr(set->keys[i], '/');
        char *pns = s ? strndup(set->keys[i], (size_t)(s - set->keys[i])) : NULL;
        const struct cache_entry *pe = pns ? informer_get(r->pod_inf, pns, s + 1) : NULL;
        free(pns);
        if (pe)
            pods_seen_offer(&g->pods, pe->obj);
    }
    size_t left_out = pods_seen_left_out(&g->pods);
    if (set && left_out && !set->cut_logged)
        log_warn("more pods carry the workspace's label than a decision looks at; it looks at "
                 "the pod the status names and live pods first",
                 "workspace", key, "pods", LOG_INT(g->pods.n_offered), "looked_at",
                 LOG_INT(g->pods.n), "left_out", LOG_INT(left_out));
    if (set)
        set->cut_logged = left_out > 0;
}

/* How many nodes carry the snapshot's product, and how many of those run
 * its node's version. */
struct restore_node_count {
    const struct node_cache *nc;
    const char *label, *product, *version;
    struct decide_restore_nodes *out;
};

static void count_restore_node(void *data, const char *name)
{
    struct restore_node_count *c = data;
    const char *product = node_cache_label(c->nc, name, c->label);
    if (!product || strcmp(product, c->product) != 0)
        return;
    c->out->with_product++;
    const char *v = node_cache_version(c->nc, name);
    if (v && strcmp(v, c->version) == 0)
        c->out->matching++;
    else if (v && !c->out->seen)
        c->out->seen = v;
}

/* For a workspace paused with a Ready snapshot whose node version was
 * recorded: which nodes could restore it (a walk over the node cache,
 * only then: a resume is rare next to the passes of running workspaces). */
static void gather_restore_nodes(struct reconciler *r, struct gathered *g)
{
    const struct workspace_snapshot *sn = g->ws->status.snapshot;
    if (!g->cls->has_accelerator || (!g->ws->paused && g->ws->status.state != WS_STATE_PAUSED))
        return;
    if (!sn->node_version || !sn->gpu_product || !sn->phase || strcmp(sn->phase, "Ready") != 0 ||
        !node_cache_synced(r->nodes))
        return;
    g->restore_nodes = (struct decide_restore_nodes){0};
    struct restore_node_count c = {r->nodes, g->cls->product_label, sn->gpu_product,
                                   sn->node_version, &g->restore_nodes};
    node_cache_foreach(r->nodes, count_restore_node, &c);
    g->in.restore_nodes = &g->restore_nodes;
}

/* What the node cache knows of each pod's node: its accelerator product
 * (accelerator classes) and what GKE matches a restore on (classes with the
 * GKE backend). */
static void gather_nodes(struct reconciler *r, const char *key, struct gathered *g)
{
    if (!g->cls || (!g->cls->has_accelerator && g->cls->snapshot.backend != SNAPSHOT_BACKEND_GKE))
        return;
    if (node_cache_start(r->nodes) < 0)
        log_warn("cannot watch Nodes", "workspace", key);
    for (size_t i = 0; i < g->pods.n; i++) {
        const char *n = g->pods.pods[i]->node_name;
        if (n)
            g->nodes[g->n_nodes++] = (struct decide_node){
                n,
                g->cls->has_accelerator ? node_cache_label(r->nodes, n, g->cls->product_label)
                                        : NULL,
                node_cache_label(r->nodes, n, MACHINE_FAMILY_LABEL),
                node_cache_label(r->nodes, n, MACHINE_TYPE_LABEL),
                node_cache_label(r->nodes, n, NODE_POOL_LABEL),
                node_cache_version(r->nodes, n)};
    }
    gather_restore_nodes(r, g);
}

/* The GKE Pod Snapshots of the workspace, and the backend told whether it
 * still lives. A deleted workspace's class may be gone or changed: its
 * snapshots still go, if the backend ever ran. */
static void gather_snapshots(struct reconciler *r, const char *key, struct gathered *g)
{
    const struct workspace *ws = g->ws;
    int gke = g->cls && g->cls->snapshot.backend == SNAPSHOT_BACKEND_GKE;
    /* A class that no longer takes snapshots (or is gone) may leave some
     * behind: the status names one the backend made, and retention removes
     * them once no pause needs them. */
    int left = !gke && ws->status.snapshot->attempt;
    if (!gke && !left && !ws->deletion_ms)
        return;
    if ((gke || left) && gke_snapshots_start(r->gke) < 0)
        log_warn("cannot watch GKE Pod Snapshots", "workspace", key);
    if (ws->status.snapshot->attempt) {
        gke_snapshots_view(r->gke, ws->ns, ws->status.snapshot->attempt, &g->snap_view);
        g->in.snapshot = &g->snap_view;
    }
    /* A pass that began the pause's next attempt may have died before its
     * status write: the backend may hold it already. */
    if (gke && workspace_snapshot_next_attempt(ws, g->next_attempt) == 1) {
        gke_snapshots_view(r->gke, ws->ns, g->next_attempt, &g->next_view);
        g->in.next_attempt = &g->next_view;
    }
    g->in.n_snapshots =
        gke_snapshots_list(r->gke, ws->ns, ws->name, g->snap_list, MAX_SNAPSHOTS_SEEN);
    if (gke_snapshots_storage(r->gke, ws->ns, ws->name, &g->in.snapshot_storage) != 1)
        g->in.snapshot_storage = NULL;
    /* Once no pod is left, no trigger can still be served. */
    if (ws->deletion_ms && g->pods.n == 0)
        gke_snapshots_workspace_deleted(r->gke, ws->ns, ws->name);
    else if (!ws->deletion_ms)
        gke_snapshots_workspace_live(r->gke, ws->ns, ws->name);
}

/* Everything decide() reads about the cached Workspace we, from r's caches
 * and trackers, into g. */
static void gather(struct reconciler *r, const char *key, const struct cache_entry *we,
                   struct gathered *g)
{
    const struct workspace *ws = we->obj;
    const struct cache_entry *ce =
        ws->class_name ? informer_get(r->class_inf, NULL, ws->class_name) : NULL;
    g->ws = ws;
    g->cls = ce ? ce->obj : NULL;
    gather_pods(r, key, g);
    char *claim = workspace_home_claim_name(ws);
    const struct cache_entry *pvce = claim ? informer_get(r->pvc_inf, ws->ns, claim) : NULL;
    free(claim);
    gather_nodes(r, key, g);
    gather_snapshots(r, key, g);
    int64_t now = r->now_ms(r->now_data);
    struct decide_input *in = &g->in;
    in->ws = ws;
    in->cls = g->cls;
    in->class_error = ce && !ce->obj ? ce->error : NULL;
    in->pods = g->pods.pods;
    in->n_pods = g->pods.n;
    in->pvc = pvce ? pvce->obj : NULL;
    in->now_ms = now;
    in->activity = activity_tracker_observation(r->activity, key);
    in->zone = g->cls && g->cls->idle.schedule.n_windows
                   ? activity_tracker_zone(r->activity, g->cls->idle.time_zone)
                   : NULL;
    in->snapshots = g->snap_list;
    in->accelerator_taker = accelerator_taker(r, ws, now);
    in->pause_node_absent =
        ledger_awaits_node_removal(&ws->status, now) &&
        node_cache_lookup(r->nodes, ws->status.last_pause->node_name) == NODE_ABSENT;
    in->nodes = g->nodes;
    in->n_nodes = g->n_nodes;
    in->gone_pod = strmap_get(&r->gone_pods, key);
    in->pod_node_absent =
        ws->status.node_name && node_cache_lookup(r->nodes, ws->status.node_name) == NODE_ABSENT;
    in->restore_check = activity_tracker_restore_check(r->activity, key);
    in->app_checkpoint = app_checkpoints_seen(r->checkpoints, key);
    if (ws->prewarm && g->cls && g->cls->prewarm.enabled) {
        in->prewarm_zone = activity_tracker_zone(r->activity, ws->prewarm->time_zone);
        in->prewarm_zone_error = activity_tracker_zone_error(r->activity, ws->prewarm->time_zone);
    }
    if (ws->class_name)
        in->class_prewarms_starting = prewarm_turns_starting(&r->turns, ws->class_name, key);
    if (g->cls && g->cls->has_accelerator) {
        char accel[PREWARM_ACCELERATOR_SIZE];
        prewarm_turns_accelerator(g->cls->accelerator_resource, g->cls->product, accel);
        in->person_waiting = prewarm_turns_person_waiting(&r->turns, accel);
    }
}

/* The pod of g named name, NULL: none; live_only skips pods being deleted. */
static const struct workspace_pod *gathered_pod(const struct gathered *g, const char *name,
                                                int live_only)
{
    const struct workspace_pod *found = NULL;
    for (size_t i = 0; i < g->pods.n && name; i++)
        if (strcmp(g->pods.pods[i]->name, name) == 0 &&
            (!live_only || !g->pods.pods[i]->deletion_ms))
            found = g->pods.pods[i];
    return found;
}

/* The AppCheckpoint action i's URL (j->urls[i]) or why there is none
 * (j->errs[i]). Returns 0 or -ENOMEM. */
static int build_checkpoint_url(struct job *j, size_t i, const struct gathered *g)
{
    const struct workspace_class *cls = g->cls;
    const struct workspace_pod *pod = gathered_pod(g, j->out.status.pod_name, 0);
    struct template_vars vars = {pod ? pod->pod_ip : NULL, cls->port, g->ws->ns, g->ws->name,
                                 pod ? pod->name : NULL};
    int e = pod ? url_template_expand(cls->checkpoint_request.url_template, &vars, &j->urls[i],
                                      &j->errs[i])
                : -ENOENT;
    if (e == -ENOMEM)
        return e;
    if (e == -EAGAIN || e == -ENOENT)
        j->errs[i] = strdup(e == -EAGAIN ? "the pod has no IP yet" : "the pod is gone");
    return 0;
}

/* The uid precondition of DELETE_POD action i: the pod's uid as cached. A
 * pod the cache does not know is deleted by name alone, as before; one it
 * knows never loses its precondition. Returns 0 or -ENOMEM. */
static int build_delete_uid(struct job *j, size_t i, const struct gathered *g)
{
    const struct action *a = &j->out.actions[i];
    for (size_t k = 0; k < g->pods.n; k++)
        if (strcmp(g->pods.pods[k]->name, a->name) == 0 && g->pods.pods[k]->uid) {
            free(j->pod_uids[i]);
            if (!(j->pod_uids[i] = strdup(g->pods.pods[k]->uid)))
                return -ENOMEM;
        }
    return 0;
}

/* Builds every action's body now: the cache entries may change before the
 * calls run. Returns 0 or -ENOMEM (nothing is sent then). */
static int build_bodies(struct job *j, const struct gathered *g)
{
    const struct workspace *ws = g->ws;
    for (size_t i = 0; i < j->out.n_actions; i++) {
        const struct action *a = &j->out.actions[i];
        int e = 0;
        if (a->type == ACTION_CREATE_PVC)
            j->bodies[i] = workspace_pvc_build(ws, g->cls);
        else if (a->type == ACTION_CREATE_POD)
            j->bodies[i] = workspace_pod_build_with(
                ws, g->cls,
                &(struct pod_build){a->name, a->from_checkpoint, a->snapshot, a->product,
                                    a->capacity_fallback, a->group, a->machine_type, a->node_pool});
        else if (a->type == ACTION_SNAPSHOT_BEGIN)
            j->bodies[i] =
                gke_snapshot_begin_bodies(ws, g->cls, a->name, j->out.status.pod_name, a->group);
        else if (a->type == ACTION_APP_CHECKPOINT && g->cls)
            e = build_checkpoint_url(j, i, g);
        else if (a->type == ACTION_DELETE_POD)
            e = build_delete_uid(j, i, g);
        if (e == 0 &&
            (a->type == ACTION_CREATE_PVC || a->type == ACTION_CREATE_POD ||
             a->type == ACTION_SNAPSHOT_BEGIN) &&
            !j->bodies[i])
            e = -ENOMEM;
        if (e < 0)
            return e;
    }
    return 0;
}

/* Decides on g into j->out, keeps what the job needs of the Workspace as
 * read, and tells the activity tracker what to watch. Returns 0 or -ENOMEM. */
static int decide(struct job *j, const struct gathered *g)
{
    struct reconciler *r = j->r;
    const struct workspace *ws = g->ws;
    if (!j->name || !j->uid || !j->rv)
        return -ENOMEM;
    int e = workspace_decide(&g->in, &j->out);
    if (e < 0)
        return e;
    j->generation = ws->generation;
    int acts = 0;
    for (size_t i = 0; i < j->out.n_actions; i++)
        acts |= j->out.actions[i].type != ACTION_EVENT;
    if (acts && (!(j->read = calloc(1, sizeof(*j->read))) ||
                 workspace_status_copy(&ws->status, j->read) < 0))
        return -ENOMEM;
    const struct condition *turn = workspace_status_condition(&j->out.status, WS_COND_PRE_WARM);
    int due = turn && ws->class_name && strcmp(turn->reason, WS_REASON_WAITING_FOR_TURN) == 0;
    char accel[PREWARM_ACCELERATOR_SIZE] = "";
    if (g->cls && g->cls->has_accelerator)
        prewarm_turns_accelerator(g->cls->accelerator_resource, g->cls->product, accel);
    if (prewarm_turns_due(&r->turns, j->key, ws->class_name, accel, due) < 0)
        log_warn("pre-warm not queued for its turn; it looks again later", "workspace", j->key,
                 "error", log_errno_str(-ENOMEM));
    workspace_outcome_diff(&ws->status, &j->out.status, g->in.now_ms, &j->outcome);
    if (workspace_outcome_any(&j->outcome) && ws->class_name)
        j->class_name = strdup(ws->class_name);
    /* The record of what its use was: only where use can be seen. */
    const struct workspace_class *cls = g->cls;
    if (cls && !ws->deletion_ms &&
        (cls->activity.application != ACTIVITY_APP_NONE || cls->activity.prometheus_url)) {
        int64_t activity_ms = 0;
        char state =
            activity_log_state(&j->out.status, g->in.activity, cls->idle.gpu_threshold_percent,
                               g->in.now_ms, cls->activity.interval_ms, &activity_ms);
        activity_log_note(r->records, j->key, ws, g->in.now_ms, state, activity_ms);
    }
    const struct workspace_pod *current = gathered_pod(g, j->out.status.pod_name, 1);
    if (j->out.restore_check_wanted)
        activity_tracker_check_restore(r->activity, j->key, ws, g->cls, current, j->out.probe_now);
    else
        activity_tracker_update(r->activity, j->key, ws, g->cls, current, j->out.probe_wanted,
                                j->out.probe_now);
    return 0;
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
    struct job *j = job_new(r, key);
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
        job_finish(j, 0);
        return;
    }
    j->noticed_us = take_notice(r, key);
    const struct workspace *ws = we->obj;
    if (!ws) {
        /* Not even its name and status can be read (the informer named it
         * in the log): nothing can be written on it; its next change
         * queues it again. */
        job_finish(j, 0);
        return;
    }
    j->name = strdup(ws->name);
    j->uid = strdup(ws->uid);
    j->rv = strdup(we->resource_version);
    struct gathered g = {0};
    gather(r, key, we, &g);
    int e = decide(j, &g);
    if (e == 0)
        e = build_bodies(j, &g);
    if (e < 0) {
        log_warn("reconcile stopped before its writes", "workspace", key, "error",
                 log_errno_str(e));
        job_finish(j, 1);
        return;
    }
    if (j->out.n_actions || j->out.status_changed)
        log_debug("reconcile", "workspace", key, "state", workspace_state_name(j->out.status.state),
                  "actions", LOG_INT(j->out.n_actions), "status_changed",
                  j->out.status_changed ? "yes" : "no");
    run_next(j);
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
    struct gke_snapshots_walked g = gke_snapshots_walked(r->gke);
    controller_metrics_cache_walked(r->metrics, "podsnapshots", g.snapshots);
    controller_metrics_cache_walked(r->metrics, "podsnapshotmanualtriggers", g.triggers);
    controller_metrics_cache_walked(r->metrics, "podsnapshotpolicies", g.policies);
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
    struct informer_codec ws_codec = {ws_decode, ws_free, r->strings};
    struct informer_options wo = {
        .resource = &workspaces,
        .ns = r->ns,
        .codec = &ws_codec,
        .handlers = {on_ws_add, on_ws_update, on_ws_delete, on_synced, r},
    };
    struct informer_options co = {
        .resource = &classes,
        .codec = &class_codec,
        .handlers = {on_class_change, on_class_update, on_class_change, on_synced, r},
    };
    struct informer_options po = {
        .resource = &KUBE_RESOURCE_PODS,
        .ns = r->ns,
        .label_selector = MANAGED_SELECTOR,
        .codec = &pod_codec,
        .handlers = {on_pod_add, on_pod_update, on_pod_delete, on_synced, r},
    };
    struct informer_options vo = {
        .resource = &KUBE_RESOURCE_PVCS,
        .ns = r->ns,
        .label_selector = MANAGED_SELECTOR,
        .codec = &pvc_codec,
        .handlers = {on_pvc_change, on_pvc_update, on_pvc_change, on_synced, r},
    };
    struct activity_tracker_options ao = {
        .prober = {.max_in_flight = o->probe_concurrency},
        .zoneinfo_dir = o->zoneinfo_dir,
        .now_ms = r->now_ms,
        .now_data = r->now_data,
        .metrics = r->metrics,
    };
    if (e == 0)
        e = activity_tracker_new(loop, client, &ao, on_activity, r, &r->activity);
    if (e == 0)
        e = activity_log_new(client, r->ns, &r->records);
    if (e == 0)
        e = gke_snapshots_new(loop, client, r->ns, on_activity, r, &r->gke);
    if (e == 0)
        e = app_checkpoints_new(loop, r->now_ms, r->now_data, on_activity, r, &r->checkpoints);
    if (e == 0)
        e = node_cache_new(loop, client, on_node_change, r, &r->nodes);
    if (e == 0)
        node_cache_on_version(r->nodes, on_node_version);
    if (e == 0)
        e = informer_new(loop, client, &wo, &r->ws_inf);
    if (e == 0)
        e = informer_new(loop, client, &co, &r->class_inf);
    if (e == 0)
        e = informer_new(loop, client, &po, &r->pod_inf);
    if (e == 0)
        e = informer_new(loop, client, &vo, &r->pvc_inf);
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
    gke_snapshots_free(r->gke);
    node_cache_free(r->nodes);
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
    while (!LIST_EMPTY(&r->jobs)) {
        struct job *j = LIST_FIRST(&r->jobs);
        kube_request_cancel(j->req); /* no callback follows */
        gke_begin_cancel(j->begin);
        gke_delete_cancel(j->gdel);
        job_unlink(j);
        job_free(j);
    }
    for (size_t it = 0; strmap_next(&r->gone_pods, &it, NULL, &v);)
        workspace_pod_free(v);
    strmap_free(&r->gone_pods);
    strpool_let_go(r->strings);
    free(r->ns);
    free(r->identity);
    free(r->failpoint);
    free(r);
}
