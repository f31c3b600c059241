#include "util/key_groups.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct key_group {
    struct strmap keys; /* the set: key -> the group itself (any non-NULL value) */
    char name[];
};

void key_groups_init(struct key_groups *g)
{
    strmap_init(&g->by_key);
    strmap_init(&g->by_name);
}

void key_groups_free(struct key_groups *g)
{
    void *v;
    for (size_t it = 0; strmap_next(&g->by_name, &it, NULL, &v);) {
        struct key_group *grp = v;
        strmap_free(&grp->keys);
        free(grp);
    }
    strmap_free(&g->by_name);
    strmap_free(&g->by_key);
}

/* Takes key out of its group, if it has one; an emptied group goes. */
static void leave(struct key_groups *g, const char *key)
{
    struct key_group *grp = strmap_remove(&g->by_key, key);
    if (!grp)
        return;
    strmap_remove(&grp->keys, key);
    if (strmap_len(&grp->keys) == 0) {
        strmap_remove(&g->by_name, grp->name);
        strmap_free(&grp->keys);
        free(grp);
    }
}

int key_groups_set(struct key_groups *g, const char *key, const char *name)
{
    struct key_group *now = strmap_get(&g->by_key, key);
    if (now && name && strcmp(now->name, name) == 0)
        return 0;
    leave(g, key);
    if (!name || !name[0])
        return 0;
    struct key_group *grp = strmap_get(&g->by_name, name);
    int fresh = !grp;
    if (fresh) {
        grp = malloc(sizeof(*grp) + strlen(name) + 1);
        if (!grp)
            return -ENOMEM;
        strmap_init(&grp->keys);
        strcpy(grp->name, name);
        if (strmap_put(&g->by_name, grp->name, grp, NULL) < 0) {
            free(grp);
            return -ENOMEM;
        }
    }
    if (strmap_put(&grp->keys, key, grp, NULL) < 0)
        goto fail;
    if (strmap_put(&g->by_key, key, grp, NULL) < 0) {
        strmap_remove(&grp->keys, key);
        goto fail;
    }
    return 0;
fail:
    if (strmap_len(&grp->keys) == 0) {
        strmap_remove(&g->by_name, grp->name);
        strmap_free(&grp->keys);
        free(grp);
    }
    return -ENOMEM;
}

void key_groups_foreach(const struct key_groups *g, const char *name,
                        void (*fn)(void *data, const char *key), void *data)
{
    const struct key_group *grp = name ? strmap_get(&g->by_name, name) : NULL;
    const char *key;
    for (size_t it = 0; grp && strmap_next(&grp->keys, &it, &key, NULL);)
        fn(data, key);
}

size_t key_groups_count(const struct key_groups *g, const char *name)
{
    const struct key_group *grp = name ? strmap_get(&g->by_name, name) : NULL;
    return grp ? strmap_len(&grp->keys) : 0;
}

const char *key_groups_of(const struct key_groups *g, const char *key)
{
    const struct key_group *grp = strmap_get(&g->by_key, key);
    return grp ? grp->name : NULL;
}
