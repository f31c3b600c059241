#include "controller/queue_workloads.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube/informer.h"
#include "util/json.h"
#include "util/log.h"
#include "util/strmap.h"

const struct kube_resource KUBE_RESOURCE_KUEUE_WORKLOADS = {"kueue.x-k8s.io", "v1beta2",
                                                            "workloads", "Workload", 1};

/* What is kept of a Workload. */
struct workload {
    char *pod_uid;  /* label QUEUE_JOB_UID_LABEL */
    char *pod_name; /* its controlling owner, a Pod */
    char *message;  /* QuotaReserved=False's message, NULL: reserved, or no verdict yet */
    int64_t created_ms;
};

struct queue_workloads {
    uv_loop_t *loop;
    struct kube_client *client;
    char *ns;
    queue_workloads_changed_cb changed;
    void *data;
    struct informer *inf;
    struct strmap by_pod_uid; /* pod uid -> the Workload's cache key (malloc'd) */
    int index_lost;           /* out of memory once: lookups walk the cache */
};

static void workload_free(void *p)
{
    struct workload *w = p;
    if (!w)
        return;
    free(w->pod_uid);
    free(w->pod_name);
    free(w->message);
    free(w);
}

static const char *owner_pod(const cJSON *meta)
{
    const cJSON *ref;
    cJSON_ArrayForEach(ref, json_member(meta, "ownerReferences"))
    {
        const char *kind = json_string(ref, "kind");
        if (kind && strcmp(kind, "Pod") == 0)
            return json_string(ref, "name");
    }
    return NULL;
}

static int workload_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)data;
    (void)ret_err;
    const cJSON *meta = json_member(obj, "metadata");
    struct workload *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    const char *message = NULL;
    const cJSON *c;
    cJSON_ArrayForEach(c, json_member(json_member(obj, "status"), "conditions"))
    {
        const char *type = json_string(c, "type"), *status = json_string(c, "status");
        if (type && status && strcmp(type, "QuotaReserved") == 0 && strcmp(status, "False") == 0)
            message = json_string(c, "message");
    }
    w->created_ms = json_time_ms(meta, "creationTimestamp");
    if (json_dup_optional(json_string(json_member(meta, "labels"), QUEUE_JOB_UID_LABEL),
                          &w->pod_uid) < 0 ||
        json_dup_optional(owner_pod(meta), &w->pod_name) < 0 ||
        json_dup_optional(message, &w->message) < 0) {
        workload_free(w);
        return -ENOMEM;
    }
    *ret = w;
    return 0;
}

static const struct informer_codec workload_codec = {workload_decode, workload_free, NULL};

static void index_set(struct queue_workloads *q, const char *pod_uid, const char *key)
{
    if (!pod_uid)
        return;
    if (!key) {
        free(strmap_remove(&q->by_pod_uid, pod_uid));
        return;
    }
    char *copy = strdup(key);
    void *old = NULL;
    if (!copy || strmap_put(&q->by_pod_uid, pod_uid, copy, &old) < 0) {
        free(copy);
        q->index_lost = 1;
        return;
    }
    free(old);
}

static void tell(struct queue_workloads *q, const struct cache_entry *e)
{
    const struct workload *w = e->obj;
    if (w && w->pod_name && q->changed)
        q->changed(q->data, e->ns, w->pod_name);
}

static void on_add(void *data, const struct cache_entry *e)
{
    struct queue_workloads *q = data;
    const struct workload *w = e->obj;
    index_set(q, w ? w->pod_uid : NULL, e->key);
    tell(q, e);
}

static void on_update(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    struct queue_workloads *q = data;
    const struct workload *old = old_e->obj, *w = e->obj;
    if (old && old->pod_uid && (!w || !w->pod_uid || strcmp(old->pod_uid, w->pod_uid) != 0))
        index_set(q, old->pod_uid, NULL);
    index_set(q, w ? w->pod_uid : NULL, e->key);
    tell(q, e);
}

static void on_delete(void *data, const struct cache_entry *e)
{
    struct queue_workloads *q = data;
    const struct workload *w = e->obj;
    index_set(q, w ? w->pod_uid : NULL, NULL);
    tell(q, e);
}

int queue_workloads_new(uv_loop_t *loop, struct kube_client *client, const char *ns,
                        queue_workloads_changed_cb changed, void *data,
                        struct queue_workloads **ret)
{
    struct queue_workloads *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->loop = loop;
    q->client = client;
    q->changed = changed;
    q->data = data;
    strmap_init(&q->by_pod_uid);
    if (ns && ns[0] && !(q->ns = strdup(ns))) {
        free(q);
        return -ENOMEM;
    }
    *ret = q;
    return 0;
}

int queue_workloads_start(struct queue_workloads *q)
{
    if (q->inf)
        return 0;
    struct informer_options io = {
        .resource = &KUBE_RESOURCE_KUEUE_WORKLOADS,
        .ns = q->ns,
        .label_selector = QUEUE_JOB_UID_LABEL,
        .codec = &workload_codec,
        .handlers = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete, .data = q},
    };
    int e = informer_new(q->loop, q->client, &io, &q->inf);
    if (e == 0)
        e = informer_start(q->inf);
    if (e < 0) {
        informer_free(q->inf);
        q->inf = NULL;
        return e;
    }
    log_info("watching Kueue's Workloads of pods");
    return 0;
}

struct finder {
    const char *pod_uid;
    const struct workload *found;
};

static void find_any(void *data, const struct cache_entry *e)
{
    struct finder *f = data;
    const struct workload *w = e->obj;
    if (!f->found && w && w->pod_uid && strcmp(w->pod_uid, f->pod_uid) == 0)
        f->found = w;
}

int queue_workloads_view(const struct queue_workloads *q, const char *pod_uid,
                         struct queue_view *ret)
{
    *ret = (struct queue_view){0};
    if (!q || !q->inf || !pod_uid)
        return 0;
    const struct workload *w = NULL;
    if (q->index_lost) {
        struct finder f = {pod_uid, NULL};
        informer_foreach(q->inf, find_any, &f);
        w = f.found;
    } else {
        const char *key = strmap_get(&q->by_pod_uid, pod_uid);
        const char *slash = key ? strchr(key, '/') : NULL;
        if (slash) {
            char ns[256];
            snprintf(ns, sizeof(ns), "%.*s", (int)(slash - key), key);
            const struct cache_entry *e = informer_get(q->inf, ns, slash + 1);
            w = e ? e->obj : NULL;
        }
    }
    if (!w)
        return 0;
    ret->message = w->message;
    ret->since_ms = w->created_ms;
    return 1;
}

void queue_workloads_free(struct queue_workloads *q)
{
    if (!q)
        return;
    informer_free(q->inf);
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&q->by_pod_uid, &i, &k, &v);)
        free(v);
    strmap_free(&q->by_pod_uid);
    free(q->ns);
    free(q);
}
