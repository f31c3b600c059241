#include "reconciler_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "workspace/class.h"
#include "workspace/ledger.h"
#include "workspace/pod.h"

const struct kube_resource reconciler_workspaces = {"hibernator.dev", "v1alpha1", "workspaces",
                                                    "Workspace", 1};
static const struct kube_resource classes = {"hibernator.dev", "v1alpha1", "workspaceclasses",
                                             "WorkspaceClass", 0};

#define MANAGED_SELECTOR MANAGED_BY_LABEL "=" MANAGED_BY_VALUE

/* ---- codecs -------------------------------------------------------------- */

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

uint64_t reconciler_keys_take_notice(struct reconciler *r, const char *key)
{
    uint64_t *t = strmap_remove(&r->noticed, key);
    uint64_t v = t ? *t : 0;
    free(t);
    return v;
}

/* A key the queue could not take is not reconciled until its next change:
 * say so (-ESHUTDOWN while closing is expected and quiet). */
void reconciler_keys_requeue_result(const char *key, const char *how, int e)
{
    if (e < 0 && e != -ESHUTDOWN)
        log_warn("workspace not queued again", "key", key, "how", how, "error", log_errno_str(e));
}

void reconciler_keys_queue(struct reconciler *r, const char *key)
{
    notice(r, key);
    reconciler_keys_requeue_result(key, "now", workqueue_driver_add(r->queue, key));
}

static void enqueue(struct reconciler *r, const char *ns, const char *name)
{
    char *key = NULL;
    if (asprintf(&key, "%s/%s", ns, name) < 0)
        return;
    reconciler_keys_queue(r, key);
    free(key);
}

void reconciler_keys_changed(void *data, const char *key)
{
    struct reconciler *r = data;
    if (!r->closing)
        reconciler_keys_queue(r, key);
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
const struct cache_entry *reconciler_keys_cached(const struct informer *inf, const char *key)
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
        reconciler_keys_queue(r, key);
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

/* The class's snapshot backend, NULL: none (or no class). */
static struct snapshot_backend *backend_of(const struct reconciler *r,
                                           const struct workspace_class *c)
{
    return c ? snapshot_backend_of(r->snapshots, c->snapshot.backend) : NULL;
}

/* The node cache keeps every class's product label (it starts listing on
 * the first reconcile of a workspace with an accelerator). */
static void keep_product_label(struct reconciler *r, const struct workspace_class *c)
{
    if (c && c->has_accelerator && node_cache_keep_label(r->nodes, c->product_label) < 0)
        log_warn("cannot keep a node label", "class", c->name, "label", c->product_label);
    /* What the class's snapshot backend matches a restore on (GKE:
     * docs/snapshots.md, "Restore compatibility"). */
    const char *const *labels = snapshot_backend_node_labels(backend_of(r, c));
    for (size_t i = 0; labels && labels[i]; i++)
        if (node_cache_keep_label(r->nodes, labels[i]) < 0)
            log_warn("cannot keep a node label", "class", c->name, "label", labels[i]);
}

static void on_class_change(void *data, const struct cache_entry *e)
{
    struct reconciler *r = data;
    keep_product_label(r, e->obj);
    /* A class with a snapshot backend: its caches run from now, also when
     * no workspace of it is left, so that what the backend keeps of
     * workspaces deleted while the controller was down is found and goes
     * (GKE: their policies, gke.h). */
    struct snapshot_backend *b = backend_of(r, e->obj);
    if (b && snapshot_backend_start(b) < 0) {
        char msg[128];
        snprintf(msg, sizeof(msg), "cannot watch %s", snapshot_backend_name(b));
        log_warn(msg, "class", e->name);
    }
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

/* A Workload of one of the pods changed (Kueue's verdict on it): its
 * workspace is looked at again. */
static void on_workload_change(void *data, const char *ns, const char *pod_name)
{
    struct reconciler *r = data;
    if (r->closing || !r->pod_inf)
        return;
    const struct cache_entry *e = informer_get(r->pod_inf, ns, pod_name);
    char *wk = e && e->obj ? ws_key_of_pod(e->obj) : NULL;
    if (wk)
        reconciler_keys_queue(r, wk);
    free(wk);
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
    reconciler_keys_queue(r, wk);
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
    const struct cache_entry *e = reconciler_keys_cached(m->r->ws_inf, key);
    if (e && e->obj && ledger_taker_pick(e->obj, m->now, NULL, m->pod))
        reconciler_keys_queue(m->r, e->key);
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
    reconciler_keys_queue(r, wk);
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
        reconciler_keys_queue(m->r, wk);
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
    reconciler_keys_queue(m->r, e->key);
}

static void enqueue_pod_key_if_on_node(void *data, const char *key)
{
    const struct node_match *m = data;
    const struct cache_entry *e = reconciler_keys_cached(m->r->pod_inf, key);
    if (e)
        enqueue_if_on_node(data, e);
}

static void enqueue_ws_key_if_paused_off_node(void *data, const char *key)
{
    const struct node_match *m = data;
    const struct cache_entry *e = reconciler_keys_cached(m->r->ws_inf, key);
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
    reconciler_keys_queue(data, key);
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

/* ---- the caches ---------------------------------------------------------- */

int reconciler_keys_watch(struct reconciler *r, void (*on_synced)(void *data))
{
    struct informer_codec ws_codec = {ws_decode, ws_free, r->strings};
    struct informer_options wo = {
        .resource = &reconciler_workspaces,
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
    int e = node_cache_new(r->loop, r->client, on_node_change, r, &r->nodes);
    if (e == 0)
        node_cache_on_version(r->nodes, on_node_version);
    if (e == 0)
        e = queue_workloads_new(r->loop, r->client, r->ns, on_workload_change, r, &r->workloads);
    if (e == 0)
        e = queue_positions_new(r->loop, r->visibility_client ? r->visibility_client : r->client,
                                on_workload_change, r, &r->positions);
    if (e == 0)
        e = informer_new(r->loop, r->client, &wo, &r->ws_inf);
    if (e == 0)
        e = informer_new(r->loop, r->client, &co, &r->class_inf);
    if (e == 0)
        e = informer_new(r->loop, r->client, &po, &r->pod_inf);
    if (e == 0)
        e = informer_new(r->loop, r->client, &vo, &r->pvc_inf);
    return e;
}
