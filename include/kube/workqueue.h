/*
 * workqueue: the controller's queue of object keys to reconcile, with
 * client-go's work queue semantics.
 *
 * - Keys are strings ("namespace/name"), copied in.
 * - A key queued twice before it is handed out is handed out once.
 * - A key is never handed out twice at once: a key added while it is being
 *   processed is marked dirty and queued again when workqueue_done() is
 *   called for it.
 * - Delayed adds wait in a heap; adding a key that is already waiting keeps
 *   the earlier deadline.
 * - Rate-limited adds wait the larger of a per-key exponential backoff
 *   (base * 2^failures, capped) and an overall token bucket reservation
 *   (10 qps / burst 100 by default), like client-go's default controller
 *   rate limiter. workqueue_forget() resets a key's failures.
 *
 * Two layers:
 * - struct workqueue is a plain data structure: no loop, no clock. Functions
 *   that depend on time take now_ms (any monotonic origin, the same for every
 *   call), so tests drive it with a fake clock.
 * - struct workqueue_driver runs a workqueue on a libuv loop: a timer fires at
 *   the next delayed deadline, and on_ready is called from the loop whenever
 *   keys may be ready, so the controller pulls them with
 *   workqueue_driver_get().
 *
 * Ownership: the queue copies keys. A key returned by a get function belongs
 * to the queue and stays valid until workqueue_done() is called for it.
 * Nothing here is thread-safe; everything runs on the loop thread.
 */
#ifndef HIBERNATOR_KUBE_WORKQUEUE_H
#define HIBERNATOR_KUBE_WORKQUEUE_H

#include "util/must_use.h"
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct workqueue_options {
    uint64_t base_delay_ms; /* first rate-limited delay; default 5 ms */
    uint64_t max_delay_ms;  /* per-key cap; default 1000 s */
    double qps;             /* overall rate; default 10; < 0: unlimited */
    int burst;              /* default 100 */
};

struct workqueue_metrics {
    uint64_t depth;         /* keys waiting to be handed out (incl. dirty keys in processing) */
    uint64_t adds_total;    /* adds that queued a key (duplicates collapsed are not counted) */
    uint64_t retries_total; /* delayed and rate-limited adds */
    uint64_t processing;    /* keys handed out and not yet done */
    uint64_t waiting;       /* keys waiting for a delayed add's deadline */
};

struct workqueue;

/* Creates an empty queue. opts may be NULL for the defaults; zero fields take
 * their default. now_ms starts the token bucket full.
 * Returns 0 or -ENOMEM. Free with workqueue_free(). */
int workqueue_new(const struct workqueue_options *opts, uint64_t now_ms,
                  struct workqueue **ret_queue);

/* Frees the queue and every key in it (handed-out keys become invalid).
 * Accepts NULL; returns NULL. */
struct workqueue *workqueue_free(struct workqueue *q);

/* Queues key now. Returns 0 (also when the key was already queued or is
 * being processed), -ESHUTDOWN after workqueue_shutdown() (nothing queued),
 * -EINVAL for a NULL key, or -ENOMEM. */
MUST_USE int workqueue_add(struct workqueue *q, const char *key);

/* Queues key once delay_ms has passed since now_ms; a delay of 0 is
 * workqueue_add(). If key is already waiting, the earlier deadline wins.
 * Returns as workqueue_add(). */
MUST_USE int workqueue_add_after(struct workqueue *q, const char *key, uint64_t delay_ms,
                                 uint64_t now_ms);

/* Counts a failure of key and queues it after the rate limiter's delay:
 * max(base * 2^failures capped at max_delay, token bucket wait). Every call
 * takes a token from the bucket. Returns as workqueue_add(); ret_delay_ms,
 * if not NULL, receives the delay on success. */
MUST_USE int workqueue_add_rate_limited(struct workqueue *q, const char *key, uint64_t now_ms,
                                        uint64_t *ret_delay_ms);

/* Forgets key's failures (after a successful reconcile), so the next
 * rate-limited add starts again at the base delay. Does not unqueue it. */
void workqueue_forget(struct workqueue *q, const char *key);

/* Failures counted for key since it was last forgotten. */
unsigned workqueue_num_requeues(const struct workqueue *q, const char *key);

/* Moves every waiting key whose deadline is <= now_ms into the queue.
 * Returns how many were moved. workqueue_get() does this itself. */
size_t workqueue_promote(struct workqueue *q, uint64_t now_ms);

/* Hands out the next ready key (first in, first out) and marks it as being
 * processed. Returns 0 and sets *ret_key, -EAGAIN when no key is ready now,
 * or -ESHUTDOWN when the queue is shut down and drained. Call
 * workqueue_done() with the key when its processing ends. */
int workqueue_get(struct workqueue *q, uint64_t now_ms, const char **ret_key);

/* Ends the processing of key. If it was added again meanwhile it is queued
 * again. key may be the pointer workqueue_get() returned (it is freed here
 * when nothing else refers to it). Unknown keys are ignored. */
void workqueue_done(struct workqueue *q, const char *key);

/* Keys ready to be handed out now (not waiting, not being processed). */
size_t workqueue_len(const struct workqueue *q);

/* The earliest deadline of a waiting key, or UINT64_MAX when none waits. */
uint64_t workqueue_next_deadline(const struct workqueue *q);

/* Stops accepting keys and drops the waiting ones. Keys already queued are
 * still handed out; after them workqueue_get() returns -ESHUTDOWN. */
void workqueue_shutdown(struct workqueue *q);
/* 1 once workqueue_shutdown() has been called, else 0. */
int workqueue_shutting_down(const struct workqueue *q);

/* Copies the queue's counts into *ret_metrics (the caller's). */
void workqueue_get_metrics(const struct workqueue *q, struct workqueue_metrics *ret_metrics);

/*
 * Timing, for the workqueue_* metrics client-go's queues export. A key's
 * queue time runs from when it was queued (became dirty) to when it is
 * handed out; its work time from then to workqueue_done(). Times come from
 * the now_ms of the calls; add and done take none, so a caller that wants
 * their moments counted says the time first with workqueue_set_clock()
 * (the driver does). The queue's clock never goes back.
 */
struct workqueue_observer {
    void (*added)(void *data);                       /* a key was queued (not a duplicate) */
    void (*retried)(void *data);                     /* a delayed or rate-limited add */
    void (*started)(void *data, uint64_t queued_ms); /* a key was handed out */
    void (*finished)(void *data, uint64_t work_ms);  /* a key's processing ended */
    void *data;
};

/* Calls o's functions (any may be NULL) from the calls that cause the
 * events, from now on; NULL stops. o is copied. */
void workqueue_set_observer(struct workqueue *q, const struct workqueue_observer *o);

/* Tells the queue the time for the calls that take none. */
void workqueue_set_clock(struct workqueue *q, uint64_t now_ms);

/* The keys being processed at now_ms: the sum of how long each has been
 * and the longest. Walks the queue's table. */
void workqueue_processing_time(const struct workqueue *q, uint64_t now_ms, uint64_t *ret_total_ms,
                               uint64_t *ret_longest_ms);

/* ---- the libuv driver ---- */

/* Called from the loop when keys may be ready, or when the queue has been shut
 * down (workqueue_driver_get() then returns -ESHUTDOWN once drained). Pull
 * keys with workqueue_driver_get() until it returns -EAGAIN or until enough
 * are in flight; the driver calls on_ready again after the next add, done,
 * or deadline, so a consumer that stops early is called back when a done
 * frees it. */
typedef void (*workqueue_ready_cb)(void *data);

struct workqueue_driver;

/* Creates a queue driven by loop; the clock is uv_now(loop). opts as for
 * workqueue_new(). Returns 0 or -ENOMEM (the timer and idle handles cannot fail to init on a loop).
 * Close with workqueue_driver_close(). */
int workqueue_driver_new(uv_loop_t *loop, const struct workqueue_options *opts,
                         workqueue_ready_cb on_ready, void *data,
                         struct workqueue_driver **ret_driver);

/* Stops the driver's handles and frees it (and its queue, so every
 * handed-out key) once the loop has closed them. No callback follows.
 * Accepts NULL. */
void workqueue_driver_close(struct workqueue_driver *d);

/* The queue itself, for the functions that need no clock (forget,
 * num_requeues, len, metrics). Do not add or get through it directly: the
 * driver would not notice. */
struct workqueue *workqueue_driver_queue(struct workqueue_driver *d);

/* workqueue_driver_add(), _add_after(), _add_rate_limited() (which does not
 * say the delay), _get(), _done(), _forget() and _shutdown() are the
 * workqueue_* functions of the same name with now_ms = uv_now(loop): same
 * results, same ownership of keys. */
MUST_USE int workqueue_driver_add(struct workqueue_driver *d, const char *key);
MUST_USE int workqueue_driver_add_after(struct workqueue_driver *d, const char *key,
                                        uint64_t delay_ms);
MUST_USE int workqueue_driver_add_rate_limited(struct workqueue_driver *d, const char *key);
int workqueue_driver_get(struct workqueue_driver *d, const char **ret_key);
void workqueue_driver_done(struct workqueue_driver *d, const char *key);
void workqueue_driver_forget(struct workqueue_driver *d, const char *key);
void workqueue_driver_shutdown(struct workqueue_driver *d);
/* A consumer has room again without a done (a key it still holds no
 * longer counts against its limit): on_ready is called on the next loop
 * turn if keys are ready. */
void workqueue_driver_notify(struct workqueue_driver *d);

#endif
