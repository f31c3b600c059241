/*
 * expectations: the controller's own Workspace writes that its cache has not
 * shown yet (docs/architecture.md, "Own-write waits").
 *
 * A decision read from a cache that lags behind the controller's last write
 * undoes that write: a pod deletion can reach the pod cache before the status
 * write that explains it, and the next pass would create the pod again. So
 * after each successful write the reconciler records the resourceVersion the
 * API server returned for the key, and a later pass for the key decides only
 * once the write has come back through the informer.
 *
 * The rule. resourceVersions are opaque: they can be compared for equality,
 * never for order. The watch delivers one object's changes in order, so
 *   - the cached object carrying the recorded resourceVersion, or
 *   - a watch event for the key carrying it (the cache may have moved past it
 *     by the time the key is reconciled)
 * means the write has been seen, and everything the cache shows afterwards is
 * as new or newer. An event carrying another resourceVersion says nothing by
 * itself: the watch may still be delivering changes older than the write
 * (another write of the same pass, or the object a GET read ahead of the
 * cache). A relist after 410 Gone may skip the write altogether, and an event
 * may beat the write's own response, so the wait ends after a timeout
 * (EXPECTATIONS_TIMEOUT_MS) whatever the cache shows.
 *
 * Pure: the caller passes the time (any monotonic milliseconds) and the
 * cache's resourceVersion; nothing here reads a clock or an informer.
 *
 * Ownership: struct expectations is the caller's; it copies the keys and
 * versions it keeps and frees them in expectations_free().
 */
#ifndef HIBERNATOR_CONTROLLER_EXPECTATIONS_H
#define HIBERNATOR_CONTROLLER_EXPECTATIONS_H

#include "util/must_use.h"
#include <stddef.h>
#include <stdint.h>

#include "util/strmap.h"

#define EXPECTATIONS_TIMEOUT_MS 10000

struct expectations {
    struct strmap by_key; /* "namespace/name" -> struct expectation * */
    int64_t timeout_ms;
};

enum expectation_state {
    EXPECTATION_NONE,    /* nothing outstanding for the key: decide */
    EXPECTATION_SEEN,    /* the write came back: decide (the record is dropped) */
    EXPECTATION_WAIT,    /* not yet: come back within *ret_wait_ms, or at the next event */
    EXPECTATION_EXPIRED, /* not seen within the timeout: decide anyway (the record is dropped) */
};

/* timeout_ms <= 0: EXPECTATIONS_TIMEOUT_MS. */
void expectations_init(struct expectations *x, int64_t timeout_ms);
/* Frees every record; x is empty afterwards and may be used again. */
void expectations_free(struct expectations *x);

/* A write for key succeeded and the API server answered with rv at now_ms.
 * Replaces what was recorded for the key (the last write is the one to
 * wait for). Returns 0, -EINVAL (no key or rv) or -ENOMEM (then nothing is
 * recorded and the next pass does not wait). */
MUST_USE int expectations_record(struct expectations *x, const char *key, const char *rv,
                                 int64_t now_ms);

/* The informer applied a watch event (add or update) for key whose object
 * carries rv: drops the record when rv is the one recorded. */
void expectations_observe(struct expectations *x, const char *key, const char *rv);

/* Whether a pass for key may decide on a cache showing cached_rv (NULL: the
 * key is not cached). On EXPECTATION_WAIT, *ret_wait_ms (if given) is the
 * time left until the timeout, at least 1. */
enum expectation_state expectations_check(struct expectations *x, const char *key,
                                          const char *cached_rv, int64_t now_ms,
                                          int64_t *ret_wait_ms);

/* Drops the record for key (the object was deleted). */
void expectations_forget(struct expectations *x, const char *key);

/* The resourceVersion recorded for key, or NULL; valid until the next call
 * that changes x. */
const char *expectations_recorded(const struct expectations *x, const char *key);

/* How many keys have a write recorded (one past its timeout counts until
 * expectations_check() drops it). */
size_t expectations_len(const struct expectations *x);

/* "None", "Seen", "Wait" or "Expired" ("?" for another value); static. */
const char *expectation_state_name(enum expectation_state s);

#endif
