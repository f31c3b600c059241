#include "controller/expectations.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct expectation {
    char *rv;
    int64_t at_ms; /* when the write was answered */
};

static void expectation_free(struct expectation *e)
{
    if (!e)
        return;
    free(e->rv);
    free(e);
}

void expectations_init(struct expectations *x, int64_t timeout_ms)
{
    strmap_init(&x->by_key);
    x->timeout_ms = timeout_ms > 0 ? timeout_ms : EXPECTATIONS_TIMEOUT_MS;
}

void expectations_free(struct expectations *x)
{
    void *v;
    for (size_t it = 0; strmap_next(&x->by_key, &it, NULL, &v);)
        expectation_free(v);
    strmap_free(&x->by_key);
}

int expectations_record(struct expectations *x, const char *key, const char *rv, int64_t now_ms)
{
    if (!key || !rv || !rv[0])
        return -EINVAL;
    struct expectation *e = strmap_get(&x->by_key, key);
    char *copy = strdup(rv);
    if (!copy) {
        /* Waiting for an older write than the last is worse than not waiting. */
        expectations_forget(x, key);
        return -ENOMEM;
    }
    if (e) {
        free(e->rv);
        e->rv = copy;
        e->at_ms = now_ms;
        return 0;
    }
    e = calloc(1, sizeof(*e));
    if (!e || strmap_put(&x->by_key, key, e, NULL) < 0) {
        free(e);
        free(copy);
        return -ENOMEM;
    }
    e->rv = copy;
    e->at_ms = now_ms;
    return 0;
}

void expectations_observe(struct expectations *x, const char *key, const char *rv)
{
    const struct expectation *e = key ? strmap_get(&x->by_key, key) : NULL;
    if (e && rv && strcmp(e->rv, rv) == 0)
        expectations_forget(x, key);
}

enum expectation_state expectations_check(struct expectations *x, const char *key,
                                          const char *cached_rv, int64_t now_ms,
                                          int64_t *ret_wait_ms)
{
    const struct expectation *e = key ? strmap_get(&x->by_key, key) : NULL;
    if (!e)
        return EXPECTATION_NONE;
    if (cached_rv && strcmp(e->rv, cached_rv) == 0) {
        expectations_forget(x, key);
        return EXPECTATION_SEEN;
    }
    int64_t left = e->at_ms + x->timeout_ms - now_ms;
    if (left <= 0) {
        expectations_forget(x, key);
        return EXPECTATION_EXPIRED;
    }
    if (ret_wait_ms)
        *ret_wait_ms = left;
    return EXPECTATION_WAIT;
}

void expectations_forget(struct expectations *x, const char *key)
{
    if (key)
        expectation_free(strmap_remove(&x->by_key, key));
}

const char *expectations_recorded(const struct expectations *x, const char *key)
{
    const struct expectation *e = key ? strmap_get(&x->by_key, key) : NULL;
    return e ? e->rv : NULL;
}

size_t expectations_len(const struct expectations *x)
{
    return strmap_len(&x->by_key);
}

const char *expectation_state_name(enum expectation_state s)
{
    switch (s) {
    case EXPECTATION_NONE:
        return "None";
    case EXPECTATION_SEEN:
        return "Seen";
    case EXPECTATION_WAIT:
        return "Wait";
    case EXPECTATION_EXPIRED:
        return "Expired";
    }
    return "?";
}
