/*
 * strmap: a hash map from strings to pointers (open addressing, linear
 * probing, tombstone-free deletion by backward shift).
 *
 * Ownership: the map copies keys and frees its copies; values are the
 * caller's (the map never frees them). Iteration order is unspecified, and
 * a put or remove during iteration invalidates the iterator.
 */
#ifndef HIBERNATOR_UTIL_STRMAP_H
#define HIBERNATOR_UTIL_STRMAP_H

#include "util/must_use.h"
#include <stddef.h>

struct strmap_slot {
    char *key; /* NULL: empty */
    size_t hash;
    void *value;
};

struct strmap {
    struct strmap_slot *slots;
    size_t cap; /* power of two, or 0 */
    size_t len;
};

/* Makes m empty; allocates nothing. */
void strmap_init(struct strmap *m);

/* Returns the value for key or NULL. */
void *strmap_get(const struct strmap *m, const char *key);

/* Sets key to value. When the key was present, its old value is written to
 * *ret_old (if given) and 1 is returned; 0 for a new key; -ENOMEM. */
MUST_USE int strmap_put(struct strmap *m, const char *key, void *value, void **ret_old);

/* Removes key and returns its value, or NULL when absent. */
void *strmap_remove(struct strmap *m, const char *key);

/* How many keys m holds. */
size_t strmap_len(const struct strmap *m);

/* Iterates: for (size_t i = 0; strmap_next(m, &i, &k, &v);) { ... } */
int strmap_next(const struct strmap *m, size_t *iter, const char **ret_key, void **ret_value);

/* Frees the map's memory (not the values). */
void strmap_free(struct strmap *m);

#endif
