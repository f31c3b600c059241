#include "util/strmap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a: short keys, no adversary that can pick collisions cheaply enough to matter
 * at our sizes (keys are object names the API server already validated). */
static size_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return (size_t)h;
}

void strmap_init(struct strmap *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->len = 0;
}

static struct strmap_slot *find(const struct strmap *m, const char *key, size_t h)
{
    if (m->cap == 0)
        return NULL;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        struct strmap_slot *s = &m->slots[i];
        if (!s->key)
            return NULL;
        if (s->hash == h && strcmp(s->key, key) == 0)
            return s;
    }
}

void *strmap_get(const struct strmap *m, const char *key)
{
    struct strmap_slot *s = find(m, key, hash_str(key));
    return s ? s->value : NULL;
}

static void insert_slot(struct strmap_slot *slots, size_t cap, struct strmap_slot in)
{
    size_t i = in.hash & (cap - 1);
    while (slots[i].key)
        i = (i + 1) & (cap - 1);
    slots[i] = in;
}

static int grow(struct strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    struct strmap_slot *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            insert_slot(slots, cap, m->slots[i]);
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int strmap_put(struct strmap *m, const char *key, void *value, void **ret_old)
{
    size_t h = hash_str(key);
    struct strmap_slot *s = find(m, key, h);
    if (s) {
        if (ret_old)
            *ret_old = s->value;
        s->value = value;
        return 1;
    }
    /* Keep the load factor at or below 3/4. */
    if ((m->len + 1) * 4 > m->cap * 3 && grow(m) < 0)
        return -ENOMEM;
    char *k = strdup(key);
    if (!k)
        return -ENOMEM;
    insert_slot(m->slots, m->cap, (struct strmap_slot){k, h, value});
    m->len++;
    return 0;
}

void *strmap_remove(struct strmap *m, const char *key)
{
    struct strmap_slot *s = find(m, key, hash_str(key));
    if (!s)
        return NULL;
    void *value = s->value;
    free(s->key);
    size_t mask = m->cap - 1;
    size_t hole = (size_t)(s - m->slots);
    /* Backward-shift the rest of the probe run so lookups need no tombstones. */
    for (size_t j = (hole + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t home = m->slots[j].hash & mask;
        int movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
        if (movable) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole] = (struct strmap_slot){0};
    m->len--;
    return value;
}

size_t strmap_len(const struct strmap *m)
{
    return m->len;
}

int strmap_next(const struct strmap *m, size_t *iter, const char **ret_key, void **ret_value)
{
    for (; *iter < m->cap; (*iter)++) {
        struct strmap_slot *s = &m->slots[*iter];
        if (s->key) {
            if (ret_key)
                *ret_key = s->key;
            if (ret_value)
                *ret_value = s->value;
            (*iter)++;
            return 1;
        }
    }
    return 0;
}

void strmap_free(struct strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].key);
    free(m->slots);
    strmap_init(m);
}
