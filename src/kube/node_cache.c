#include "kube/node_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube/informer.h"
#include "util/json.h"

static const struct kube_resource nodes = {"", "v1", "nodes", "Node", 0};

/* What the cache keeps of a node: its kubelet's version
 * (status.nodeInfo.kubeletVersion; NULL: not said) and the values of the
 * first n kept keys (NULL when the node has no such label), in the order of
 * nc->keys. */
struct node {
    char *version;
    size_t n;
    char *values[];
};

struct node_cache {
    uv_loop_t *loop;
    struct kube_client *client;
    node_cache_changed_cb cb;
    node_cache_version_cb version_cb;
    void *cb_data;
    char *keys[NODE_CACHE_MAX_LABELS];
    size_t n_keys;
    /* Its data is the cache (the keys to keep), for decode only: node_free
     * needs nothing of it, so entries freed after the cache are fine. */
    struct informer_codec codec;
    struct informer *inf; /* NULL until started */
};

static void node_free(void *p)
{
    struct node *n = p;
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        free(n->values[i]);
    free(n->version);
    free(n);
}

static int node_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)ret_err;
    const struct node_cache *nc = data;
    struct node *n = calloc(1, sizeof(*n) + nc->n_keys * sizeof(n->values[0]));
    if (!n)
        return -ENOMEM;
    const cJSON *labels = json_member(json_member(obj, "metadata"), "labels");
    const char *version =
        json_string(json_member(json_member(obj, "status"), "nodeInfo"), "kubeletVersion");
    if (json_dup_optional(version, &n->version) < 0) {
        node_free(n);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nc->n_keys; i++) {
        if (json_dup_optional(json_string(labels, nc->keys[i]), &n->values[i]) < 0) {
            node_free(n);
            return -ENOMEM;
        }
        n->n++;
    }
    *ret = n;
    return 0;
}

static void notify(struct node_cache *nc, const char *node)
{
    if (nc->cb && informer_has_synced(nc->inf))
        nc->cb(nc->cb_data, node);
}

static void notify_version(struct node_cache *nc, const char *node, const char *before,
                           const char *after)
{
    if (nc->version_cb && informer_has_synced(nc->inf))
        nc->version_cb(nc->cb_data, node, before, after);
}

static void on_add(void *data, const struct cache_entry *e)
{
    const struct node *n = e->obj;
    notify(data, e->name);
    notify_version(data, e->name, NULL, n->version);
}

static void on_delete(void *data, const struct cache_entry *e)
{
    const struct node *n = e->obj;
    notify(data, e->name);
    notify_version(data, e->name, n->version, NULL);
}

static void on_update(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    const struct node *a = old_e->obj, *b = e->obj;
    int changed = a->n != b->n || (a->version && b->version ? strcmp(a->version, b->version) != 0
                                                            : a->version != b->version);
    for (size_t i = 0; !changed && i < a->n; i++) {
        const char *x = a->values[i], *y = b->values[i];
        changed = x && y ? strcmp(x, y) != 0 : x != y;
    }
    if (changed)
        notify(data, e->name);
    if (a->version && b->version ? strcmp(a->version, b->version) != 0 : a->version != b->version)
        notify_version(data, e->name, a->version, b->version);
}

static void on_synced(void *data)
{
    struct node_cache *nc = data;
    if (nc->cb)
        nc->cb(nc->cb_data, NULL);
}

static int list_and_watch(struct node_cache *nc)
{
    struct informer_options o = {
        .resource = &nodes,
        .codec = &nc->codec,
        .handlers = {on_add, on_update, on_delete, on_synced, nc},
    };
    struct informer *inf = NULL;
    int r = informer_new(nc->loop, nc->client, &o, &inf);
    if (r == 0)
        r = informer_start(inf);
    if (r < 0) {
        informer_free(inf);
        return r;
    }
    informer_free(nc->inf);
    nc->inf = inf;
    return 0;
}

int node_cache_new(uv_loop_t *loop, struct kube_client *client, node_cache_changed_cb cb,
                   void *data, struct node_cache **ret)
{
    struct node_cache *nc = calloc(1, sizeof(*nc));
    if (!nc)
        return -ENOMEM;
    nc->loop = loop;
    nc->client = client;
    nc->cb = cb;
    nc->cb_data = data;
    nc->codec = (struct informer_codec){node_decode, node_free, nc};
    *ret = nc;
    return 0;
}

void node_cache_free(struct node_cache *nc)
{
    if (!nc)
        return;
    informer_free(nc->inf);
    for (size_t i = 0; i < nc->n_keys; i++)
        free(nc->keys[i]);
    free(nc);
}

static int key_index(const struct node_cache *nc, const char *key)
{
    for (size_t i = 0; key && i < nc->n_keys; i++)
        if (strcmp(nc->keys[i], key) == 0)
            return (int)i;
    return -1;
}

int node_cache_keep_label(struct node_cache *nc, const char *key)
{
    if (!key || !key[0])
        return -EINVAL;
    if (key_index(nc, key) >= 0)
        return 0;
    if (nc->n_keys >= NODE_CACHE_MAX_LABELS)
        return -E2BIG;
    if (!(nc->keys[nc->n_keys] = strdup(key)))
        return -ENOMEM;
    nc->n_keys++;
    /* The nodes in the cache lack the new label: list them again. */
    return nc->inf ? list_and_watch(nc) : 0;
}

int node_cache_start(struct node_cache *nc)
{
    return nc->inf ? 0 : list_and_watch(nc);
}

int node_cache_synced(const struct node_cache *nc)
{
    return nc && nc->inf && informer_has_synced(nc->inf);
}

enum node_presence node_cache_lookup(const struct node_cache *nc, const char *name)
{
    if (!node_cache_synced(nc) || !name)
        return NODE_UNKNOWN;
    return informer_get(nc->inf, NULL, name) ? NODE_PRESENT : NODE_ABSENT;
}

const char *node_cache_label(const struct node_cache *nc, const char *name, const char *key)
{
    int k = nc ? key_index(nc, key) : -1;
    if (k < 0 || !node_cache_synced(nc) || !name)
        return NULL;
    const struct cache_entry *e = informer_get(nc->inf, NULL, name);
    const struct node *n = e ? e->obj : NULL;
    return n && (size_t)k < n->n ? n->values[k] : NULL;
}

const char *node_cache_version(const struct node_cache *nc, const char *name)
{
    if (!node_cache_synced(nc) || !name)
        return NULL;
    const struct cache_entry *e = informer_get(nc->inf, NULL, name);
    const struct node *n = e ? e->obj : NULL;
    return n ? n->version : NULL;
}

struct foreach_ctx {
    void (*fn)(void *data, const char *name);
    void *data;
};

static void foreach_one(void *data, const struct cache_entry *e)
{
    struct foreach_ctx *c = data;
    c->fn(c->data, e->name);
}

void node_cache_foreach(const struct node_cache *nc, void (*fn)(void *data, const char *name),
                        void *data)
{
    if (!node_cache_synced(nc))
        return;
    struct foreach_ctx c = {fn, data};
    informer_foreach(nc->inf, foreach_one, &c);
}

void node_cache_on_version(struct node_cache *nc, node_cache_version_cb cb)
{
    nc->version_cb = cb;
}
