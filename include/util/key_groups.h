/*
 * key_groups: keys (cache keys, "namespace/name") grouped by a name, each
 * key in one group at most, so that "every key of group X" costs the size
 * of X and not of all keys: pods by the node they run on, PodSnapshots by
 * the trigger that made them.
 *
 * Ownership: struct key_groups is the caller's; it copies the keys and
 * group names it keeps and frees them in key_groups_free().
 */
#ifndef HIBERNATOR_UTIL_KEY_GROUPS_H
#define HIBERNATOR_UTIL_KEY_GROUPS_H

#include <stddef.h>

#include "util/must_use.h"
#include "util/strmap.h"

struct key_groups {
    struct strmap by_key;  /* key -> struct key_group * */
    struct strmap by_name; /* group name -> struct key_group * */
};

/* Makes g empty; allocates nothing. */
void key_groups_init(struct key_groups *g);

/* Frees what g holds; it is empty afterwards. */
void key_groups_free(struct key_groups *g);

/* Puts key in the group called name (NULL or "": in none), taking it out
 * of the one it was in; an emptied group goes. Returns 0, or -ENOMEM with
 * key in no group. */
MUST_USE int key_groups_set(struct key_groups *g, const char *key, const char *name);

/* Calls fn with each key of group name (unspecified order); fn must not
 * change g. */
void key_groups_foreach(const struct key_groups *g, const char *name,
                        void (*fn)(void *data, const char *key), void *data);

/* How many keys group name holds (0 when there is no such group). */
size_t key_groups_count(const struct key_groups *g, const char *name);

/* The group key is in, NULL: none. */
const char *key_groups_of(const struct key_groups *g, const char *key);

#endif
