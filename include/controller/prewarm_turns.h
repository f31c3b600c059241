/*
 * prewarm_turns: whose turn it is among the resumes of a class (docs/idle.md,
 * "Ready before you are"). Per class, from the Workspace cache's changes:
 *
 *   starting  by class: pre-warms resumed ahead of their owners whose pod is
 *             not ready yet (the class's preWarm.maxConcurrent bounds them);
 *   waiting   by accelerator ("nvidia.com/gpu/Tesla-T4", of any class): a
 *             person's resume waiting for capacity (pre-warms of that
 *             accelerator give way to it: none starts, and one waiting for
 *             capacity is paused again);
 *   due       paused workspaces whose pre-warm waits for its turn, by class
 *             and by accelerator, queued again when a turn frees.
 *
 * Each costs the size of its class's group, never a walk of all
 * workspaces.
 *
 * Ownership: struct prewarm_turns is the caller's; it copies the keys and
 * class names it keeps.
 */
#ifndef HIBERNATOR_CONTROLLER_PREWARM_TURNS_H
#define HIBERNATOR_CONTROLLER_PREWARM_TURNS_H

#include <stddef.h>

#include "util/key_groups.h"
#include "util/must_use.h"

struct workspace;

struct prewarm_turns {
    struct key_groups starting;
    struct key_groups waiting;
    struct key_groups due_by_class;
    struct key_groups due_by_accelerator;
};

/* What a workspace of a class with an accelerator waits for: "<resource>/<product>"
 * ("nvidia.com/gpu/Tesla-T4"; the product may be empty) into out; "" for
 * none. */
#define PREWARM_ACCELERATOR_SIZE 512
void prewarm_turns_accelerator(const char *resource, const char *product,
                               char out[PREWARM_ACCELERATOR_SIZE]);

void prewarm_turns_init(struct prewarm_turns *t);
void prewarm_turns_free(struct prewarm_turns *t);

/* Follows the cached workspace under key (ws NULL: gone). When it leaves
 * a starting or waiting group (a turn frees), calls fn(data, key) for each
 * workspace whose pre-warm waits for a turn of that group. Returns 0 or
 * -ENOMEM (the workspace is then in no group). */
MUST_USE int prewarm_turns_workspace(struct prewarm_turns *t, const char *key,
                                     const struct workspace *ws,
                                     void (*fn)(void *data, const char *key), void *data);

/* The controller wrote the pre-warm of key, of class cls: it counts as
 * starting at once, before the cache shows it. Returns 0 or -ENOMEM. */
MUST_USE int prewarm_turns_begun(struct prewarm_turns *t, const char *key, const char *cls);

/* key's pre-warm, of class cls and accelerator accel ("" for none), waits
 * for its turn (due 1) or not (0). Returns 0 or -ENOMEM. */
MUST_USE int prewarm_turns_due(struct prewarm_turns *t, const char *key, const char *cls,
                               const char *accel, int due);

/* The class's pre-warms starting, key's own not counted. */
size_t prewarm_turns_starting(const struct prewarm_turns *t, const char *cls, const char *key);

/* Whether a person's resume waits for capacity of accelerator accel. */
int prewarm_turns_person_waiting(const struct prewarm_turns *t, const char *accel);

#endif
