/*
 * informer: a local, eventually consistent copy of one kind of object.
 *
 * List (in pages), then watch from the list's resourceVersion with bookmarks
 * and a random 5-10 minute server timeout; on a watch that ends, re-watch from
 * the last resourceVersion seen; on 410 Gone (HTTP or an ERROR event in the
 * stream) relist and emit only the differences; on errors reconnect with a
 * jittered 800 ms .. 30 s backoff. Handlers run on the loop, in event order.
 *
 * The cache keeps what the codec makes of each object, not the object: a
 * controller decodes the few fields it reads into a small struct. The default
 * codec keeps the object's compact JSON without managedFields and the
 * last-applied annotation. An object the codec refuses is logged once per
 * change, naming it, and kept without its decoded form (cache_entry.error).
 *
 * Ownership: the informer owns its cache entries; a const cache_entry handed
 * to a handler or returned by informer_get() is valid until control returns
 * to the loop (an old entry given to on_update/on_delete only during the
 * call). Options strings and the codec are copied; the codec's data is only
 * passed to decode, which runs while the informer is not being freed, so it
 * need not outlive informer_free() (free, which may run later, gets none).
 */
#ifndef HIBERNATOR_KUBE_INFORMER_H
#define HIBERNATOR_KUBE_INFORMER_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kube/client.h"

struct cache_entry {
    const char *key; /* "namespace/name", or "name" for cluster-scoped objects */
    const char *ns;  /* "" for cluster-scoped */
    const char *name;
    const char *uid;
    const char *resource_version;
    void *obj;         /* what the codec made of the object; NULL when it could not read it */
    const char *error; /* why the codec could not read it (names the field); NULL when read */
};

struct informer_codec {
    /* Makes the cached form of obj in *ret. Returns 0, -ENOMEM, or -EINVAL
     * for an object the codec cannot read, with *ret_err (malloc'd; may be
     * left NULL) naming the field. An unreadable object is still an object:
     * the informer keeps it (obj NULL, error set), tells the handlers, and
     * never ends a watch or reads it as deleted because of it. */
    int (*decode)(const cJSON *obj, void *data, void **ret, char **ret_err);
    void (*free)(void *decoded);
    void *data;
};

/* The default codec: obj is a char * of compact JSON. */
extern const struct informer_codec informer_codec_json;

struct informer_handlers {
    void (*on_add)(void *data, const struct cache_entry *e);
    void (*on_update)(void *data, const struct cache_entry *old_e, const struct cache_entry *e);
    void (*on_delete)(void *data, const struct cache_entry *e);
    /* Once, when the first list is in the cache. */
    void (*on_synced)(void *data);
    void *data;
};

struct informer_options {
    const struct kube_resource *resource;
    const char *ns; /* NULL or "": all namespaces */
    const char *label_selector;
    const char *field_selector;
    long page_size;                     /* default 100 */
    unsigned watch_timeout_min_s;       /* default 300 */
    unsigned watch_timeout_max_s;       /* default 600 */
    size_t max_event_bytes;             /* one watch event's JSON; default 4 MiB */
    const struct informer_codec *codec; /* default informer_codec_json */
    struct informer_handlers handlers;
};

struct informer_stats {
    uint64_t lists;        /* complete lists, the first one included */
    uint64_t relists;      /* lists after 410 Gone */
    uint64_t watches;      /* watch requests started */
    uint64_t events;       /* watch events applied (bookmarks included) */
    uint64_t watch_errors; /* watches that ended in an error */
    uint64_t unreadable;   /* changes to objects the codec could not read */
    uint64_t walked;       /* entries informer_foreach() visited */
};

struct informer;

/* An informer on loop for o->resource through client; loop, client and
 * o->resource are borrowed and must outlive it, the rest of o is copied.
 * Nothing is requested before informer_start(). Returns 0 and *ret_informer
 * (the caller's, informer_free()), -EINVAL without a resource, or -ENOMEM. */
int informer_new(uv_loop_t *loop, struct kube_client *client, const struct informer_options *o,
                 struct informer **ret_informer);

/* Starts listing. Returns 0 or a negative errno. */
int informer_start(struct informer *inf);

/* 1 from when the first list is in the cache (on_synced runs then); it
 * stays 1 through relists. 0 before. */
int informer_has_synced(const struct informer *inf);

/* 1 while the latest list of the resource answered 404 Not Found (the API
 * server does not serve it: its CRD is not installed, so no object of it
 * exists) or 403 Forbidden (not served to this client: it cannot have made
 * any either); 0 before the first answer and once a list succeeds. */
int informer_not_served(const struct informer *inf);

/* ns NULL or "" for cluster-scoped objects. */
const struct cache_entry *informer_get(const struct informer *inf, const char *ns,
                                       const char *name);
/* How many objects the cache holds, unreadable ones included. */
size_t informer_len(const struct informer *inf);

/* Calls fn for every entry (unspecified order); fn must not change the
 * informer. Counted in the stats (walked): a walk costs as much as
 * the cache is large, so a path taken on every event must not take one. */
void informer_foreach(struct informer *inf, void (*fn)(void *data, const struct cache_entry *e),
                      void *data);

/* The resourceVersion the cache reflects. */
const char *informer_resource_version(const struct informer *inf);

/* A copy of the counters since informer_new(). */
struct informer_stats informer_stats(const struct informer *inf);

/* Stops requests and timers and frees everything once the loop has closed
 * the timer; no handler is called afterwards. Accepts NULL. */
void informer_free(struct informer *inf);

#endif
