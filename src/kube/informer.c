#include "kube/informer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube/watch_stream.h"
#include "util/backoff.h"
#include "util/json.h"
#include "util/log.h"
#include "util/strmap.h"

/* Returned from the watch-event callback to end the stream and relist. */
#define RELIST_NEEDED (-ESTALE)

struct informer {
    uv_loop_t *loop;
    struct kube_client *client;
    const struct kube_resource *resource;
    char *ns;
    char *label_selector;
    char *field_selector;
    long page_size;
    unsigned watch_timeout_min_s;
    unsigned watch_timeout_max_s;
    struct informer_codec codec; /* a copy: entries outlive the caller's */
    struct informer_handlers h;

    struct strmap cache; /* key -> struct cache_entry * */
    struct strmap next;  /* the list being read, swapped in when complete */
    char *rv;            /* what the cache reflects */
    int synced;
    int not_served; /* the latest list answered 404 or 403 */
    int relisting;

    struct kube_request *req;
    struct watch_stream stream;
    uv_timer_t retry_timer;
    void (*retry_fn)(struct informer *inf);
    struct backoff backoff;
    struct informer_stats stats;
    int freeing;
};

/* ---- the default codec --------------------------------------------------- */

static int json_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)data;
    (void)ret_err;
    cJSON *copy = cJSON_Duplicate(obj, 1);
    if (!copy)
        return -ENOMEM;
    /* Bulky fields no controller reads: managedFields and kubectl's copy of the
     * object are often larger than the object itself. */
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(copy, "metadata");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
    cJSON_DeleteItemFromObjectCaseSensitive(ann,
                                            "kubectl.kubernetes.io/last-applied-configuration");
    char *s = cJSON_PrintUnformatted(copy);
    cJSON_Delete(copy);
    if (!s)
        return -ENOMEM;
    *ret = s;
    return 0;
}

static void json_free(void *decoded)
{
    free(decoded);
}

const struct informer_codec informer_codec_json = {json_decode, json_free, NULL};

/* ---- cache entries ------------------------------------------------------- */

static void entry_free(struct informer *inf, struct cache_entry *e)
{
    if (!e)
        return;
    if (e->obj)
        inf->codec.free(e->obj);
    free((char *)e->error);
    free(e); /* the strings live in the same allocation */
}

/* Writes "ns/name" (or "name" when ns is empty) and its NUL at out, which
 * has room for strlen(ns) + strlen(name) + 2 bytes. Returns the key's length. */
static size_t write_key(char *out, const char *ns, const char *name)
{
    size_t nl = ns ? strlen(ns) : 0, ml = strlen(name);
    if (nl) {
        memcpy(out, ns, nl);
        out[nl++] = '/';
    }
    memcpy(out + nl, name, ml + 1);
    return nl + ml;
}

static char *make_key(const char *ns, const char *name)
{
    char *k = malloc((ns ? strlen(ns) : 0) + strlen(name) + 2);
    if (k)
        write_key(k, ns, name);
    return k;
}

/* Builds an entry from a full object: the struct and its strings in one
 * allocation, since ten thousand small objects make per-string malloc
 * overhead a large part of the cache. Returns 0, -EBADMSG (no name), -ENOMEM.
 * An object the codec cannot read still makes an entry: obj NULL, error set. */
static int entry_new(struct informer *inf, const cJSON *obj, struct cache_entry **ret)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const char *name = json_string(meta, "name");
    const char *ns = json_string(meta, "namespace");
    const char *uid = json_string(meta, "uid");
    const char *rv = json_string(meta, "resourceVersion");
    if (!name || !rv)
        return -EBADMSG;
    if (!ns)
        ns = "";
    if (!uid)
        uid = "";
    size_t nl = strlen(ns), ml = strlen(name), ul = strlen(uid), rl = strlen(rv);
    size_t key_len = nl ? nl + 1 + ml : ml;
    struct cache_entry *e = malloc(sizeof(*e) + key_len + 1 + nl + 1 + ml + 1 + ul + 1 + rl + 1);
    if (!e)
        return -ENOMEM;
    char *p = (char *)(e + 1);
    e->key = p;
    p += write_key(p, ns, name) + 1;
    e->ns = memcpy(p, ns, nl + 1);
    p += nl + 1;
    e->name = memcpy(p, name, ml + 1);
    p += ml + 1;
    e->uid = memcpy(p, uid, ul + 1);
    p += ul + 1;
    e->resource_version = memcpy(p, rv, rl + 1);
    e->obj = NULL;
    e->error = NULL;
    char *err = NULL;
    int r = inf->codec.decode(obj, inf->codec.data, &e->obj, &err);
    if (r == -EINVAL) {
        e->obj = NULL;
        e->error = err ? err : strdup("the object cannot be read");
        if (!e->error)
            r = -ENOMEM;
    } else {
        free(err);
    }
    if (r < 0 && r != -EINVAL) {
        free((char *)e->error);
        free(e);
        return -ENOMEM;
    }
    *ret = e;
    return 0;
}

/* An object the codec refused is named once per change it makes (a relist
 * that finds it unchanged says nothing), and stays in the cache. */
static void note_unreadable(struct informer *inf, const struct cache_entry *e,
                            const struct cache_entry *old)
{
    if (!e->error)
        return;
    if (old && old->error && strcmp(old->resource_version, e->resource_version) == 0)
        return;
    inf->stats.unreadable++;
    log_warn("cannot read object; it is kept and reported, not acted on", "resource",
             inf->resource->plural, "object", e->key, "resourceVersion", e->resource_version,
             "error", e->error);
}

static void set_rv(struct informer *inf, const char *rv)
{
    if (!rv || !rv[0])
        return;
    char *copy = strdup(rv);
    if (!copy)
        return; /* keep the older one: a relist at worst */
    free(inf->rv);
    inf->rv = copy;
}

/* ---- retries --------------------------------------------------------------- */

static void on_retry_timer(uv_timer_t *t)
{
    struct informer *inf = t->data;
    inf->retry_fn(inf);
}

static void retry_after(struct informer *inf, void (*fn)(struct informer *), uint64_t delay_ms)
{
    inf->retry_fn = fn;
    uv_timer_start(&inf->retry_timer, on_retry_timer, delay_ms, 0);
}

static void retry_with_backoff(struct informer *inf, void (*fn)(struct informer *))
{
    retry_after(inf, fn, backoff_next(&inf->backoff, backoff_random()));
}

/* ---- list ---------------------------------------------------------------- */

static void list_page(struct informer *inf, const char *continue_token);
static void start_list(struct informer *inf);
static void start_watch(struct informer *inf);

/* Swaps the freshly listed objects in and tells the handlers what changed. */
static void apply_list(struct informer *inf)
{
    struct strmap fresh = inf->next;
    strmap_init(&inf->next);

    const char *key;
    void *value;
    for (size_t it = 0; strmap_next(&fresh, &it, &key, &value);) {
        struct cache_entry *e = value, *old = NULL;
        if (strmap_put(&inf->cache, key, e, (void **)&old) < 0) {
            entry_free(inf, e); /* out of memory: the next relist repairs it */
            continue;
        }
        note_unreadable(inf, e, old);
        if (!old) {
            if (inf->h.on_add)
                inf->h.on_add(inf->h.data, e);
        } else {
            if (strcmp(old->resource_version, e->resource_version) != 0 && inf->h.on_update)
                inf->h.on_update(inf->h.data, old, e);
            entry_free(inf, old);
        }
    }
    /* What the cache had and the list does not: deleted while we were not watching. */
    size_t gone_n = 0;
    char **gone = NULL;
    if (strmap_len(&inf->cache) > strmap_len(&fresh)) {
        gone = calloc(strmap_len(&inf->cache) - strmap_len(&fresh), sizeof(*gone));
        for (size_t it = 0; gone && strmap_next(&inf->cache, &it, &key, &value);)
            if (!strmap_get(&fresh, key))
                gone[gone_n++] = (char *)((struct cache_entry *)value)->key;
    }
    for (size_t i = 0; i < gone_n; i++) {
        struct cache_entry *e = strmap_remove(&inf->cache, gone[i]);
        if (inf->h.on_delete)
            inf->h.on_delete(inf->h.data, e);
        entry_free(inf, e);
    }
    free(gone);
    strmap_free(&fresh);
}

static void discard_next(struct informer *inf)
{
    void *value;
    for (size_t it = 0; strmap_next(&inf->next, &it, NULL, &value);)
        entry_free(inf, value);
    strmap_free(&inf->next);
}

static void on_list(void *data, struct kube_response *resp)
{
    struct informer *inf = data;
    inf->req = NULL;
    if (resp->status < 0) {
        if (resp->status == -EIO && kube_api_error_is_gone(&resp->error)) {
            /* The continue token expired between pages: start over. */
            discard_next(inf);
            start_list(inf);
            return;
        }
        /* A 404 on a list means the API itself is missing (CRDs not
         * installed), a 403 that it is not served to this client. Said once
         * while it lasts: a cluster without a backend's CRDs answers so for
         * as long as the controller runs. */
        int was = inf->not_served;
        inf->not_served = resp->http_code == 404 || resp->http_code == 403;
        if (was && inf->not_served)
            log_debug("list failed again: the API is not served, retrying", "resource",
                      inf->resource->plural, "code", LOG_INT(resp->http_code));
        else
            log_warn(resp->http_code == 404 ? "list failed: the API is not served, retrying"
                                            : "list failed, retrying",
                     "resource", inf->resource->plural, "group",
                     inf->resource->group[0] ? inf->resource->group : "core", "code",
                     LOG_INT(resp->http_code), "error",
                     resp->status == -EIO ? resp->error.message : resp->transport_error);
        discard_next(inf);
        retry_with_backoff(inf, start_list);
        return;
    }
    inf->not_served = 0;
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(resp->body, "items");
    const cJSON *item;
    cJSON_ArrayForEach(item, items)
    {
        struct cache_entry *e, *old = NULL;
        int r = entry_new(inf, item, &e);
        if (r == -EBADMSG)
            continue; /* an object without a name cannot be cached */
        if (r == 0 && strmap_put(&inf->next, e->key, e, (void **)&old) < 0) {
            entry_free(inf, e);
            r = -ENOMEM;
        }
        if (r < 0) {
            /* Out of memory: a list missing an object would read it as
             * deleted, so this list is dropped whole and tried again. */
            log_warn("list dropped: out of memory, retrying", "resource", inf->resource->plural);
            discard_next(inf);
            retry_with_backoff(inf, start_list);
            return;
        }
        entry_free(inf, old);
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(resp->body, "metadata");
    const char *cont = json_string(meta, "continue");
    if (cont && cont[0]) {
        list_page(inf, cont);
        return;
    }
    set_rv(inf, json_string(meta, "resourceVersion"));
    apply_list(inf);
    inf->stats.lists++;
    if (inf->relisting)
        inf->stats.relists++;
    inf->relisting = 0;
    backoff_reset(&inf->backoff);
    log_debug("listed", "resource", inf->resource->plural, "objects",
              LOG_INT(strmap_len(&inf->cache)), "rv", inf->rv);
    if (!inf->synced) {
        inf->synced = 1;
        if (inf->h.on_synced)
            inf->h.on_synced(inf->h.data);
    }
    start_watch(inf);
}

static void list_page(struct informer *inf, const char *continue_token)
{
    struct kube_list_options o = {
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .limit = inf->page_size,
        .continue_token = continue_token,
    };
    int e = kube_list(inf->client, inf->resource, inf->ns, &o, on_list, inf, &inf->req);
    if (e < 0) {
        log_warn("list could not start", "resource", inf->resource->plural, "error",
                 log_errno_str(e));
        inf->req = NULL;
        discard_next(inf);
        retry_with_backoff(inf, start_list);
    }
}

static void start_list(struct informer *inf)
{
    list_page(inf, NULL);
}

/* ---- watch --------------------------------------------------------------- */

static int on_event(void *data, enum watch_event_type type, cJSON *obj, int *steal)
{
    (void)steal;
    struct informer *inf = data;
    inf->stats.events++;
    if (type == WATCH_EVENT_ERROR) {
        struct kube_api_error err = {0};
        int gone = kube_api_error_from_status(obj, &err) == 0 && kube_api_error_is_gone(&err);
        if (!gone)
            log_warn("watch error event", "resource", inf->resource->plural, "code",
                     LOG_INT(err.code), "error", err.message);
        kube_api_error_clear(&err);
        return gone ? RELIST_NEEDED : -EIO;
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (type == WATCH_EVENT_BOOKMARK) {
        set_rv(inf, json_string(meta, "resourceVersion"));
        return 0;
    }
    struct cache_entry *e;
    int r = entry_new(inf, obj, &e);
    if (r == -EBADMSG)
        return 0; /* an object without a name cannot be cached; skip it */
    if (r < 0)
        return r;
    backoff_reset(&inf->backoff);
    set_rv(inf, e->resource_version);
    if (type == WATCH_EVENT_DELETED) {
        struct cache_entry *old = strmap_remove(&inf->cache, e->key);
        if (inf->h.on_delete)
            inf->h.on_delete(inf->h.data, old ? old : e);
        entry_free(inf, old);
        entry_free(inf, e);
        return 0;
    }
    struct cache_entry *old = NULL;
    if (strmap_put(&inf->cache, e->key, e, (void **)&old) < 0) {
        entry_free(inf, e);
        return -ENOMEM;
    }
    note_unreadable(inf, e, old);
    if (old) {
        if (inf->h.on_update)
            inf->h.on_update(inf->h.data, old, e);
        entry_free(inf, old);
    } else if (inf->h.on_add) {
        inf->h.on_add(inf->h.data, e);
    }
    return 0;
}

static int on_watch_bytes(void *data, const char *bytes, size_t len)
{
    struct informer *inf = data;
    return watch_stream_feed(&inf->stream, bytes, len);
}

static void relist(struct informer *inf)
{
    inf->relisting = 1;
    start_list(inf);
}

static void on_watch_done(void *data, struct kube_response *resp)
{
    struct informer *inf = data;
    inf->req = NULL;
    watch_stream_reset(&inf->stream);
    if (resp->status == 0) {
        start_watch(inf); /* the server's timeout: carry on from where we are */
        return;
    }
    if (resp->status == RELIST_NEEDED ||
        (resp->status == -EIO && kube_api_error_is_gone(&resp->error))) {
        log_info("watch expired, relisting", "resource", inf->resource->plural, "rv", inf->rv);
        relist(inf);
        return;
    }
    inf->stats.watch_errors++;
    log_warn("watch ended, reconnecting", "resource", inf->resource->plural, "code",
             LOG_INT(resp->http_code), "error",
             resp->status == -EIO    ? resp->error.message
             : resp->transport_error ? resp->transport_error
                                     : log_errno_str(resp->status));
    retry_with_backoff(inf, start_watch);
}

static void start_watch(struct informer *inf)
{
    unsigned span = inf->watch_timeout_max_s - inf->watch_timeout_min_s;
    struct kube_watch_options o = {
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .resource_version = inf->rv,
        .timeout_seconds = inf->watch_timeout_min_s + (long)(backoff_random() * (span + 1)),
        .allow_bookmarks = 1,
    };
    inf->stats.watches++;
    int e = kube_watch(inf->client, inf->resource, inf->ns, &o, on_watch_bytes, on_watch_done, inf,
                       &inf->req);
    if (e < 0) {
        log_warn("watch could not start", "resource", inf->resource->plural, "error",
                 log_errno_str(e));
        inf->req = NULL;
        retry_with_backoff(inf, start_watch);
    }
}

/* ---- lifecycle ----------------------------------------------------------- */

static char *dup_opt(const char *s)
{
    return s && s[0] ? strdup(s) : NULL;
}

int informer_new(uv_loop_t *loop, struct kube_client *client, const struct informer_options *o,
                 struct informer **ret_informer)
{
    if (!o->resource)
        return -EINVAL;
    struct informer *inf = calloc(1, sizeof(*inf));
    if (!inf)
        return -ENOMEM;
    inf->loop = loop;
    inf->client = client;
    inf->resource = o->resource;
    inf->ns = dup_opt(o->ns);
    inf->label_selector = dup_opt(o->label_selector);
    inf->field_selector = dup_opt(o->field_selector);
    if ((o->ns && o->ns[0] && !inf->ns) ||
        (o->label_selector && o->label_selector[0] && !inf->label_selector) ||
        (o->field_selector && o->field_selector[0] && !inf->field_selector)) {
        free(inf->ns);
        free(inf->label_selector);
        free(inf->field_selector);
        free(inf);
        return -ENOMEM;
    }
    /* Small pages: each page's JSON tree is freed while the entries made from
     * it stay, and large pages leave the heap fragmented (measured: 10,000
     * objects cost 5.5 MiB with pages of 500, 3.1 MiB with pages of 100). */
    inf->page_size = o->page_size > 0 ? o->page_size : 100;
    inf->watch_timeout_min_s = o->watch_timeout_min_s ? o->watch_timeout_min_s : 300;
    inf->watch_timeout_max_s = o->watch_timeout_max_s ? o->watch_timeout_max_s : 600;
    if (inf->watch_timeout_max_s < inf->watch_timeout_min_s)
        inf->watch_timeout_max_s = inf->watch_timeout_min_s;
    inf->codec = o->codec ? *o->codec : informer_codec_json;
    inf->h = o->handlers;
    strmap_init(&inf->cache);
    strmap_init(&inf->next);
    watch_stream_init(&inf->stream, o->max_event_bytes ? o->max_event_bytes : 4u << 20, on_event,
                      inf);
    backoff_init(&inf->backoff, 800, 30000, 2.0, 1.0);
    uv_timer_init(loop, &inf->retry_timer);
    inf->retry_timer.data = inf;
    *ret_informer = inf;
    return 0;
}

int informer_start(struct informer *inf)
{
    if (inf->req || inf->freeing)
        return -EALREADY;
    start_list(inf);
    return 0;
}

int informer_has_synced(const struct informer *inf)
{
    return inf->synced;
}

int informer_not_served(const struct informer *inf)
{
    return inf->not_served;
}

const struct cache_entry *informer_get(const struct informer *inf, const char *ns, const char *name)
{
    char *key = make_key(ns, name);
    if (!key)
        return NULL;
    const struct cache_entry *e = strmap_get(&inf->cache, key);
    free(key);
    return e;
}

size_t informer_len(const struct informer *inf)
{
    return strmap_len(&inf->cache);
}

void informer_foreach(struct informer *inf, void (*fn)(void *, const struct cache_entry *),
                      void *data)
{
    void *value;
    for (size_t it = 0; strmap_next(&inf->cache, &it, NULL, &value);) {
        inf->stats.walked++;
        fn(data, value);
    }
}

const char *informer_resource_version(const struct informer *inf)
{
    return inf->rv ? inf->rv : "";
}

struct informer_stats informer_stats(const struct informer *inf)
{
    return inf->stats;
}

static void on_informer_closed(uv_handle_t *h)
{
    struct informer *inf = h->data;
    void *value;
    for (size_t it = 0; strmap_next(&inf->cache, &it, NULL, &value);)
        entry_free(inf, value);
    strmap_free(&inf->cache);
    discard_next(inf);
    watch_stream_free(&inf->stream);
    free(inf->rv);
    free(inf->ns);
    free(inf->label_selector);
    free(inf->field_selector);
    free(inf);
}

void informer_free(struct informer *inf)
{
    if (!inf || inf->freeing)
        return;
    inf->freeing = 1;
    kube_request_cancel(inf->req);
    inf->req = NULL;
    uv_timer_stop(&inf->retry_timer);
    uv_close((uv_handle_t *)&inf->retry_timer, on_informer_closed);
}
