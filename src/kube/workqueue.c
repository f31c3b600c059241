#include "kube/workqueue.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/backoff.h"
#include "util/ratelimit.h"

#define WQ_DEFAULT_BASE_DELAY_MS 5
#define WQ_DEFAULT_MAX_DELAY_MS (1000 * 1000)
#define WQ_DEFAULT_QPS 10.0
#define WQ_DEFAULT_BURST 100
#define WQ_NOT_WAITING SIZE_MAX
#define WQ_MIN_SLOTS 16

/*
 * One entry per key the queue knows anything about. An entry lives while any
 * of these hold: dirty (queued or to be queued after done), processing,
 * waiting in the heap, or failures > 0; when the last one ends it is freed.
 *
 * The ready ring holds exactly the entries that are dirty and not being
 * processed, so membership needs no flag of its own, and the ring's capacity
 * is kept at least the number of dirty entries: pushing onto it never fails.
 */
struct wq_entry {
    uint64_t hash;
    uint64_t deadline; /* while waiting */
    uint64_t seq;      /* orders equal deadlines first come, first served */
    uint64_t dirty_ms; /* when it last became dirty (queued) */
    uint64_t start_ms; /* when it was handed out, while processing */
    size_t heap_index; /* WQ_NOT_WAITING when not in the heap */
    unsigned failures;
    bool dirty;
    bool processing;
    char key[];
};

struct workqueue {
    struct workqueue_options opts;
    struct token_bucket bucket;
    uint64_t hash_seed;

    /* Open addressing, linear probing, backward-shift deletion: no
     * tombstones, so lookups stay short however keys come and go. */
    struct wq_entry **slots;
    size_t nslots; /* a power of two, at least twice count */
    size_t count;

    struct wq_entry **ring;
    size_t ring_cap;
    size_t ring_head;
    size_t ring_len;

    struct wq_entry **heap; /* min-heap on (deadline, seq) */
    size_t heap_len;
    size_t heap_cap;
    uint64_t next_seq;

    bool shutting_down;
    uint64_t dirty_count;
    uint64_t processing_count;
    uint64_t adds_total;
    uint64_t retries_total;

    uint64_t clock_ms; /* the latest time a caller gave */
    struct workqueue_observer observer;
};

/* ---- hash table ---- */

static uint64_t key_hash(const struct workqueue *q, const char *key)
{
    /* FNV-1a from a per-queue starting point, so keys chosen to collide in
     * one process do not collide in the next. */
    uint64_t h = UINT64_C(0xcbf29ce484222325) ^ q->hash_seed;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static size_t slot_find(const struct workqueue *q, const char *key, uint64_t hash)
{
    size_t mask = q->nslots - 1;
    for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
        struct wq_entry *e = q->slots[i];
        if (!e)
            return i;
        if (e->hash == hash && strcmp(e->key, key) == 0)
            return i;
    }
}

static struct wq_entry *entry_lookup(const struct workqueue *q, const char *key)
{
    return q->slots[slot_find(q, key, key_hash(q, key))];
}

static int table_grow(struct workqueue *q)
{
    size_t n = q->nslots * 2;
    if (n < q->nslots || n > SIZE_MAX / sizeof(*q->slots))
        return -ENOMEM;
    struct wq_entry **slots = calloc(n, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    for (size_t i = 0; i < q->nslots; i++) {
        struct wq_entry *e = q->slots[i];
        if (!e)
            continue;
        size_t j = (size_t)e->hash & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = e;
    }
    free(q->slots);
    q->slots = slots;
    q->nslots = n;
    return 0;
}

static int entry_get_or_create(struct workqueue *q, const char *key, struct wq_entry **ret_entry)
{
    uint64_t hash = key_hash(q, key);
    size_t i = slot_find(q, key, hash);
    if (q->slots[i]) {
        *ret_entry = q->slots[i];
        return 0;
    }

    if ((q->count + 1) * 2 > q->nslots) {
        int r = table_grow(q);
        if (r < 0)
            return r;
        i = slot_find(q, key, hash);
    }

    size_t len = strlen(key);
    struct wq_entry *e = malloc(sizeof(*e) + len + 1);
    if (!e)
        return -ENOMEM;
    *e = (struct wq_entry){.hash = hash, .heap_index = WQ_NOT_WAITING};
    memcpy(e->key, key, len + 1);
    q->slots[i] = e;
    q->count++;
    *ret_entry = e;
    return 0;
}

static void table_remove(struct workqueue *q, const struct wq_entry *e)
{
    size_t mask = q->nslots - 1;
    size_t i = slot_find(q, e->key, e->hash);
    q->slots[i] = NULL;
    q->count--;

    /* Pull later members of the probe run back over the hole unless their
     * home slot lies cyclically in (i, j]. */
    for (size_t j = (i + 1) & mask; q->slots[j]; j = (j + 1) & mask) {
        size_t home = (size_t)q->slots[j]->hash & mask;
        bool stays = (i < j) ? (home > i && home <= j) : (home > i || home <= j);
        if (stays)
            continue;
        q->slots[i] = q->slots[j];
        q->slots[j] = NULL;
        i = j;
    }
}

/* Frees e once nothing refers to it any more. */
static void entry_release_if_unused(struct workqueue *q, struct wq_entry *e)
{
    if (e->dirty || e->processing || e->heap_index != WQ_NOT_WAITING || e->failures > 0)
        return;
    table_remove(q, e);
    free(e);
}

/* ---- ready ring ---- */

static int ring_reserve(struct workqueue *q, size_t need)
{
    if (need <= q->ring_cap)
        return 0;
    size_t cap = q->ring_cap ? q->ring_cap : 16;
    while (cap < need) {
        if (cap > SIZE_MAX / 2 / sizeof(*q->ring))
            return -ENOMEM;
        cap *= 2;
    }
    struct wq_entry **ring = malloc(cap * sizeof(*ring));
    if (!ring)
        return -ENOMEM;
    for (size_t k = 0; k < q->ring_len; k++)
        ring[k] = q->ring[(q->ring_head + k) % q->ring_cap];
    free(q->ring);
    q->ring = ring;
    q->ring_cap = cap;
    q->ring_head = 0;
    return 0;
}

static void ring_push(struct workqueue *q, struct wq_entry *e)
{
    q->ring[(q->ring_head + q->ring_len) % q->ring_cap] = e;
    q->ring_len++;
}

static struct wq_entry *ring_pop(struct workqueue *q)
{
    struct wq_entry *e = q->ring[q->ring_head];
    q->ring_head = (q->ring_head + 1) % q->ring_cap;
    q->ring_len--;
    return e;
}

/* ---- delay heap ---- */

static bool heap_less(const struct wq_entry *a, const struct wq_entry *b)
{
    if (a->deadline != b->deadline)
        return a->deadline < b->deadline;
    return a->seq < b->seq;
}

static void heap_set(struct workqueue *q, size_t i, struct wq_entry *e)
{
    q->heap[i] = e;
    e->heap_index = i;
}

static void heap_sift_up(struct workqueue *q, size_t i)
{
    struct wq_entry *e = q->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_less(e, q->heap[parent]))
            break;
        heap_set(q, i, q->heap[parent]);
        i = parent;
    }
    heap_set(q, i, e);
}

static void heap_sift_down(struct workqueue *q, size_t i)
{
    struct wq_entry *e = q->heap[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= q->heap_len)
            break;
        if (child + 1 < q->heap_len && heap_less(q->heap[child + 1], q->heap[child]))
            child++;
        if (!heap_less(q->heap[child], e))
            break;
        heap_set(q, i, q->heap[child]);
        i = child;
    }
    heap_set(q, i, e);
}

static int heap_reserve(struct workqueue *q)
{
    if (q->heap_len < q->heap_cap)
        return 0;
    size_t cap = q->heap_cap ? q->heap_cap * 2 : 16;
    if (cap > SIZE_MAX / sizeof(*q->heap))
        return -ENOMEM;
    struct wq_entry **heap = realloc(q->heap, cap * sizeof(*heap));
    if (!heap)
        return -ENOMEM;
    q->heap = heap;
    q->heap_cap = cap;
    return 0;
}

static struct wq_entry *heap_pop(struct workqueue *q)
{
    struct wq_entry *top = q->heap[0];
    q->heap_len--;
    if (q->heap_len > 0) {
        heap_set(q, 0, q->heap[q->heap_len]);
        heap_sift_down(q, 0);
    }
    top->heap_index = WQ_NOT_WAITING;
    return top;
}

/* ---- the queue ---- */

int workqueue_new(const struct workqueue_options *opts, uint64_t now_ms,
                  struct workqueue **ret_queue)
{
    struct workqueue *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->slots = calloc(WQ_MIN_SLOTS, sizeof(*q->slots));
    if (!q->slots) {
        free(q);
        return -ENOMEM;
    }
    q->nslots = WQ_MIN_SLOTS;

    if (opts)
        q->opts = *opts;
    if (q->opts.base_delay_ms == 0)
        q->opts.base_delay_ms = WQ_DEFAULT_BASE_DELAY_MS;
    if (q->opts.max_delay_ms == 0)
        q->opts.max_delay_ms = WQ_DEFAULT_MAX_DELAY_MS;
    if (q->opts.qps == 0.0)
        q->opts.qps = WQ_DEFAULT_QPS;
    if (q->opts.burst == 0)
        q->opts.burst = WQ_DEFAULT_BURST;
    token_bucket_init(&q->bucket, q->opts.qps, q->opts.burst, now_ms);
    q->clock_ms = now_ms;
    q->hash_seed = (uint64_t)(backoff_random() * 9007199254740992.0);

    *ret_queue = q;
    return 0;
}

struct workqueue *workqueue_free(struct workqueue *q)
{
    if (!q)
        return NULL;
    for (size_t i = 0; i < q->nslots; i++)
        free(q->slots[i]);
    free(q->slots);
    free(q->ring);
    free(q->heap);
    free(q);
    return NULL;
}

static void tick(struct workqueue *q, uint64_t now_ms)
{
    if (now_ms > q->clock_ms)
        q->clock_ms = now_ms;
}

/* Marks e dirty and, unless it is being processed, queues it. */
static int entry_enqueue(struct workqueue *q, struct wq_entry *e)
{
    if (e->dirty)
        return 0;
    int r = ring_reserve(q, q->dirty_count + 1);
    if (r < 0)
        return r;
    e->dirty = true;
    e->dirty_ms = q->clock_ms;
    q->dirty_count++;
    q->adds_total++;
    if (q->observer.added)
        q->observer.added(q->observer.data);
    if (!e->processing)
        ring_push(q, e);
    return 0;
}

int workqueue_add(struct workqueue *q, const char *key)
{
    if (!key)
        return -EINVAL;
    if (q->shutting_down)
        return -ESHUTDOWN;

    struct wq_entry *e;
    int r = entry_get_or_create(q, key, &e);
    if (r < 0)
        return r;
    r = entry_enqueue(q, e);
    if (r < 0)
        entry_release_if_unused(q, e);
    return r;
}

int workqueue_add_after(struct workqueue *q, const char *key, uint64_t delay_ms, uint64_t now_ms)
{
    if (!key)
        return -EINVAL;
    if (q->shutting_down)
        return -ESHUTDOWN;

    tick(q, now_ms);
    q->retries_total++;
    if (q->observer.retried)
        q->observer.retried(q->observer.data);
    if (delay_ms == 0)
        return workqueue_add(q, key);

    uint64_t deadline = now_ms + delay_ms;
    if (deadline < now_ms)
        deadline = UINT64_MAX;

    struct wq_entry *e;
    int r = entry_get_or_create(q, key, &e);
    if (r < 0)
        return r;

    if (e->heap_index != WQ_NOT_WAITING) {
        if (deadline < e->deadline) {
            e->deadline = deadline;
            heap_sift_up(q, e->heap_index);
        }
        return 0;
    }

    r = heap_reserve(q);
    if (r < 0) {
        entry_release_if_unused(q, e);
        return r;
    }
    e->deadline = deadline;
    e->seq = q->next_seq++;
    heap_set(q, q->heap_len, e);
    q->heap_len++;
    heap_sift_up(q, e->heap_index);
    return 0;
}

static uint64_t item_backoff_ms(const struct workqueue *q, unsigned failures)
{
    uint64_t base = q->opts.base_delay_ms;
    uint64_t max = q->opts.max_delay_ms;
    if (failures >= 63 || base > (max >> failures))
        return max;
    return base << failures;
}

int workqueue_add_rate_limited(struct workqueue *q, const char *key, uint64_t now_ms,
                               uint64_t *ret_delay_ms)
{
    if (!key)
        return -EINVAL;
    if (q->shutting_down)
        return -ESHUTDOWN;

    struct wq_entry *e;
    int r = entry_get_or_create(q, key, &e);
    if (r < 0)
        return r;

    uint64_t delay = item_backoff_ms(q, e->failures);
    if (e->failures < UINT_MAX)
        e->failures++;
    uint64_t bucket_wait = token_bucket_reserve(&q->bucket, now_ms);
    if (bucket_wait > delay)
        delay = bucket_wait;

    r = workqueue_add_after(q, key, delay, now_ms);
    if (r < 0)
        return r;
    if (ret_delay_ms)
        *ret_delay_ms = delay;
    return 0;
}

void workqueue_forget(struct workqueue *q, const char *key)
{
    if (!key)
        return;
    struct wq_entry *e = entry_lookup(q, key);
    if (!e)
        return;
    e->failures = 0;
    entry_release_if_unused(q, e);
}

unsigned workqueue_num_requeues(const struct workqueue *q, const char *key)
{
    if (!key)
        return 0;
    const struct wq_entry *e = entry_lookup(q, key);
    return e ? e->failures : 0;
}

size_t workqueue_promote(struct workqueue *q, uint64_t now_ms)
{
    tick(q, now_ms);
    size_t moved = 0;
    while (q->heap_len > 0 && q->heap[0]->deadline <= now_ms) {
        struct wq_entry *e = q->heap[0];
        /* Make room before leaving the heap: on ENOMEM the key keeps
         * waiting and is moved on a later call instead of being lost. */
        if (!e->dirty && ring_reserve(q, q->dirty_count + 1) < 0)
            break;
        heap_pop(q);
        bool was_dirty = e->dirty;
        (void)entry_enqueue(q, e);
        if (!was_dirty)
            e->dirty_ms = e->deadline; /* ready since then, however late this call */
        moved++;
    }
    return moved;
}

int workqueue_get(struct workqueue *q, uint64_t now_ms, const char **ret_key)
{
    workqueue_promote(q, now_ms);
    if (q->ring_len == 0)
        return q->shutting_down ? -ESHUTDOWN : -EAGAIN;

    struct wq_entry *e = ring_pop(q);
    e->dirty = false;
    q->dirty_count--;
    e->processing = true;
    e->start_ms = q->clock_ms;
    q->processing_count++;
    if (q->observer.started)
        q->observer.started(q->observer.data, q->clock_ms - e->dirty_ms);
    *ret_key = e->key;
    return 0;
}

void workqueue_done(struct workqueue *q, const char *key)
{
    if (!key)
        return;
    struct wq_entry *e = entry_lookup(q, key);
    if (!e || !e->processing)
        return;
    e->processing = false;
    q->processing_count--;
    if (q->observer.finished)
        q->observer.finished(q->observer.data, q->clock_ms - e->start_ms);
    if (e->dirty)
        ring_push(q, e); /* capacity was reserved when it became dirty */
    else
        entry_release_if_unused(q, e); /* may free key's storage */
}

size_t workqueue_len(const struct workqueue *q)
{
    return q->ring_len;
}

uint64_t workqueue_next_deadline(const struct workqueue *q)
{
    return q->heap_len > 0 ? q->heap[0]->deadline : UINT64_MAX;
}

void workqueue_shutdown(struct workqueue *q)
{
    q->shutting_down = true;
    size_t n = q->heap_len;
    q->heap_len = 0;
    for (size_t i = 0; i < n; i++) {
        struct wq_entry *e = q->heap[i];
        e->heap_index = WQ_NOT_WAITING;
        entry_release_if_unused(q, e);
    }
}

int workqueue_shutting_down(const struct workqueue *q)
{
    return q->shutting_down;
}

void workqueue_get_metrics(const struct workqueue *q, struct workqueue_metrics *ret_metrics)
{
    *ret_metrics = (struct workqueue_metrics){
        .depth = q->dirty_count,
        .adds_total = q->adds_total,
        .retries_total = q->retries_total,
        .processing = q->processing_count,
        .waiting = q->heap_len,
    };
}

void workqueue_set_clock(struct workqueue *q, uint64_t now_ms)
{
    tick(q, now_ms);
}

void workqueue_set_observer(struct workqueue *q, const struct workqueue_observer *o)
{
    q->observer = o ? *o : (struct workqueue_observer){0};
}

void workqueue_processing_time(const struct workqueue *q, uint64_t now_ms, uint64_t *ret_total_ms,
                               uint64_t *ret_longest_ms)
{
    uint64_t total = 0, longest = 0;
    for (size_t i = 0; i < q->nslots && q->processing_count; i++) {
        const struct wq_entry *e = q->slots[i];
        if (!e || !e->processing)
            continue;
        uint64_t ms = now_ms > e->start_ms ? now_ms - e->start_ms : 0;
        total += ms;
        if (ms > longest)
            longest = ms;
    }
    *ret_total_ms = total;
    *ret_longest_ms = longest;
}

/* ---- the libuv driver ---- */

struct workqueue_driver {
    uv_loop_t *loop;
    struct workqueue *q;
    workqueue_ready_cb on_ready;
    void *data;

    uv_timer_t timer; /* the earliest delayed deadline */
    uv_idle_t idle;   /* one-shot: calls on_ready on the next loop turn */
    uint64_t armed_deadline;
    int open_handles;
    bool closing;
};

static void driver_on_idle(uv_idle_t *handle)
{
    struct workqueue_driver *d = handle->data;
    uv_idle_stop(&d->idle);
    if (!d->closing && d->on_ready)
        d->on_ready(d->data);
}

static void driver_on_timer(uv_timer_t *handle);

/* Arms the timer for the earliest deadline and, when keys are ready or the
 * consumer has to learn of a shutdown, schedules on_ready. The callback runs
 * from the loop rather than from here, so callers of add and done never
 * re-enter their own code. */
static void driver_sync(struct workqueue_driver *d, bool notify)
{
    if (d->closing)
        return;

    uint64_t deadline = workqueue_next_deadline(d->q);
    if (deadline == UINT64_MAX) {
        if (d->armed_deadline != UINT64_MAX)
            uv_timer_stop(&d->timer);
        d->armed_deadline = UINT64_MAX;
    } else if (deadline != d->armed_deadline) {
        uint64_t now = uv_now(d->loop);
        uv_timer_start(&d->timer, driver_on_timer, deadline > now ? deadline - now : 0, 0);
        d->armed_deadline = deadline;
    }

    if (notify && (workqueue_len(d->q) > 0 || workqueue_shutting_down(d->q)))
        uv_idle_start(&d->idle, driver_on_idle);
}

static void driver_on_timer(uv_timer_t *handle)
{
    struct workqueue_driver *d = handle->data;
    d->armed_deadline = UINT64_MAX;
    workqueue_promote(d->q, uv_now(d->loop));
    driver_sync(d, true);
}

int workqueue_driver_new(uv_loop_t *loop, const struct workqueue_options *opts,
                         workqueue_ready_cb on_ready, void *data,
                         struct workqueue_driver **ret_driver)
{
    struct workqueue_driver *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    int r = workqueue_new(opts, uv_now(loop), &d->q);
    if (r < 0) {
        free(d);
        return r;
    }
    d->loop = loop;
    d->on_ready = on_ready;
    d->data = data;
    d->armed_deadline = UINT64_MAX;

    /* Neither init can fail on a valid loop; both handles are closed
     * through workqueue_driver_close() from here on. */
    uv_timer_init(loop, &d->timer);
    uv_idle_init(loop, &d->idle);
    d->timer.data = d;
    d->idle.data = d;
    d->open_handles = 2;
    *ret_driver = d;
    return 0;
}

static void driver_on_close(uv_handle_t *handle)
{
    struct workqueue_driver *d = handle->data;
    if (--d->open_handles > 0)
        return;
    workqueue_free(d->q);
    free(d);
}

void workqueue_driver_close(struct workqueue_driver *d)
{
    if (!d || d->closing)
        return;
    d->closing = true;
    uv_close((uv_handle_t *)&d->timer, driver_on_close);
    uv_close((uv_handle_t *)&d->idle, driver_on_close);
}

struct workqueue *workqueue_driver_queue(struct workqueue_driver *d)
{
    return d->q;
}

int workqueue_driver_add(struct workqueue_driver *d, const char *key)
{
    workqueue_set_clock(d->q, uv_now(d->loop));
    int r = workqueue_add(d->q, key);
    driver_sync(d, true);
    return r;
}

int workqueue_driver_add_after(struct workqueue_driver *d, const char *key, uint64_t delay_ms)
{
    int r = workqueue_add_after(d->q, key, delay_ms, uv_now(d->loop));
    driver_sync(d, true);
    return r;
}

int workqueue_driver_add_rate_limited(struct workqueue_driver *d, const char *key)
{
    int r = workqueue_add_rate_limited(d->q, key, uv_now(d->loop), NULL);
    driver_sync(d, true);
    return r;
}

int workqueue_driver_get(struct workqueue_driver *d, const char **ret_key)
{
    int r = workqueue_get(d->q, uv_now(d->loop), ret_key);
    /* get may have moved due keys out of the heap. */
    driver_sync(d, false);
    return r;
}

void workqueue_driver_done(struct workqueue_driver *d, const char *key)
{
    workqueue_set_clock(d->q, uv_now(d->loop));
    workqueue_done(d->q, key);
    driver_sync(d, true);
}

void workqueue_driver_forget(struct workqueue_driver *d, const char *key)
{
    workqueue_forget(d->q, key);
}

void workqueue_driver_notify(struct workqueue_driver *d)
{
    driver_sync(d, true);
}

void workqueue_driver_shutdown(struct workqueue_driver *d)
{
    workqueue_shutdown(d->q);
    driver_sync(d, true);
}
