#include "controller/prewarm_turns.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "workspace/workspace.h"

void prewarm_turns_init(struct prewarm_turns *t)
{
    key_groups_init(&t->starting);
    key_groups_init(&t->waiting);
    key_groups_init(&t->due_by_class);
    key_groups_init(&t->due_by_accelerator);
}

void prewarm_turns_accelerator(const char *resource, const char *product,
                               char out[PREWARM_ACCELERATOR_SIZE])
{
    if (!resource || !resource[0])
        out[0] = '\0';
    else
        snprintf(out, PREWARM_ACCELERATOR_SIZE, "%s/%s", resource, product ? product : "");
}

void prewarm_turns_free(struct prewarm_turns *t)
{
    key_groups_free(&t->starting);
    key_groups_free(&t->waiting);
    key_groups_free(&t->due_by_class);
    key_groups_free(&t->due_by_accelerator);
}

/* Resumed ahead of its owner, not ready yet: by the status, or by the
 * controller's annotation the status has not caught up with. */
static int starting(const struct workspace *ws)
{
    const struct workspace_status *s = &ws->status;
    if (ws->paused || ws->deletion_ms)
        return 0;
    if (ws->prewarmed_ms && ws->prewarmed_ms > s->last_resume->requested_ms &&
        ws->prewarmed_ms >= s->last_pause->requested_ms)
        return 1;
    return s->last_resume->pre_warmed && !s->last_resume->ready_ms &&
           (s->state == WS_STATE_RESUMING || s->state == WS_STATE_PENDING ||
            s->state == WS_STATE_WAITING_FOR_CAPACITY);
}

static int person_waiting(const struct workspace *ws)
{
    return !ws->paused && !ws->deletion_ms && ws->status.state == WS_STATE_WAITING_FOR_CAPACITY &&
           !ws->status.last_resume->pre_warmed;
}

int prewarm_turns_workspace(struct prewarm_turns *t, const char *key, const struct workspace *ws,
                            void (*fn)(void *data, const char *key), void *data)
{
    const char *cls = ws ? ws->class_name : NULL;
    char accel[PREWARM_ACCELERATOR_SIZE] = "";
    if (ws)
        prewarm_turns_accelerator(ws->status.accelerator_resource, ws->status.accelerator_product,
                                  accel);
    const char *now_starting = cls && starting(ws) ? cls : NULL;
    const char *now_waiting = accel[0] && person_waiting(ws) ? accel : NULL;
    const char *was_starting = key_groups_of(&t->starting, key);
    const char *was_waiting = key_groups_of(&t->waiting, key);
    /* The groups a turn frees in, copied: a group's name goes with it. */
    char freed_class[256] = "", freed_accel[PREWARM_ACCELERATOR_SIZE] = "";
    if (was_starting && (!now_starting || strcmp(was_starting, now_starting) != 0))
        snprintf(freed_class, sizeof(freed_class), "%s", was_starting);
    if (was_waiting && (!now_waiting || strcmp(was_waiting, now_waiting) != 0))
        snprintf(freed_accel, sizeof(freed_accel), "%s", was_waiting);
    int e = 0;
    if (key_groups_set(&t->starting, key, now_starting) < 0)
        e = -ENOMEM;
    if (key_groups_set(&t->waiting, key, now_waiting) < 0)
        e = -ENOMEM;
    if ((!ws || !ws->prewarm || !ws->paused) &&
        (key_groups_set(&t->due_by_class, key, NULL) < 0 ||
         key_groups_set(&t->due_by_accelerator, key, NULL) < 0))
        e = -ENOMEM;
    if (fn && freed_class[0])
        key_groups_foreach(&t->due_by_class, freed_class, fn, data);
    if (fn && freed_accel[0])
        key_groups_foreach(&t->due_by_accelerator, freed_accel, fn, data);
    return e;
}

int prewarm_turns_begun(struct prewarm_turns *t, const char *key, const char *cls)
{
    if (key_groups_set(&t->due_by_class, key, NULL) < 0 ||
        key_groups_set(&t->due_by_accelerator, key, NULL) < 0)
        return -ENOMEM;
    return key_groups_set(&t->starting, key, cls);
}

int prewarm_turns_due(struct prewarm_turns *t, const char *key, const char *cls, const char *accel,
                      int due)
{
    if (key_groups_set(&t->due_by_class, key, due ? cls : NULL) < 0)
        return -ENOMEM;
    return key_groups_set(&t->due_by_accelerator, key, due && accel && accel[0] ? accel : NULL);
}

size_t prewarm_turns_starting(const struct prewarm_turns *t, const char *cls, const char *key)
{
    size_t n = key_groups_count(&t->starting, cls);
    const char *own = key ? key_groups_of(&t->starting, key) : NULL;
    if (own && strcmp(own, cls) == 0 && n > 0)
        n--;
    return n;
}

int prewarm_turns_person_waiting(const struct prewarm_turns *t, const char *accel)
{
    return accel && accel[0] && key_groups_count(&t->waiting, accel) > 0;
}
