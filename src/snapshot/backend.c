#include "snapshot/backend.h"

#include <errno.h>

#include "snapshot/container_checkpoint.h"
#include "snapshot/gke_backend.h"

/* Every backend there is, by the kind a class names it with. A new backend
 * is one row here (and its kind in workspace/class.h). */
static const struct {
    enum snapshot_backend_kind kind;
    snapshot_backend_new_fn make;
} constructors[] = {
    {SNAPSHOT_BACKEND_GKE, gke_backend_new},
    {SNAPSHOT_BACKEND_CONTAINER_CHECKPOINT, container_checkpoint_backend_new},
};

_Static_assert(SNAPSHOT_BACKEND_CONTAINER_CHECKPOINT < SNAPSHOT_BACKEND_KINDS,
               "the table holds every kind");

/* ---- one backend ---- */

int snapshot_backend_start(struct snapshot_backend *b)
{
    if (!b)
        return -EINVAL;
    if (b->started)
        return 0;
    int e = b->ops->start(b);
    if (e == 0) {
        b->started = 1;
        b->started_ns = uv_hrtime();
    }
    return e;
}

void snapshot_backend_view(const struct snapshot_backend *b, const char *ns, const char *attempt,
                           struct snapshot_view *ret)
{
    b->ops->view(b, ns, attempt, ret);
}

cJSON *snapshot_backend_begin_bodies(const struct snapshot_backend *b, const struct workspace *ws,
                                     const struct workspace_class *c, const char *attempt,
                                     const char *pod_name, const char *pod_group,
                                     const struct workspace_pod *pod)
{
    return b->ops->begin_bodies(b, ws, c, attempt, pod_name, pod_group, pod);
}

int snapshot_backend_begin(struct snapshot_backend *b, const char *ns, const cJSON *bodies,
                           snapshot_done_cb cb, void *data, struct snapshot_op **ret_op)
{
    if (!b)
        return -EINVAL;
    return b->ops->begin(b, ns, bodies, cb, data, ret_op);
}

int snapshot_backend_delete(struct snapshot_backend *b, const char *ns, const char *name,
                            snapshot_done_cb cb, void *data, struct snapshot_op **ret_op)
{
    if (!b)
        return -EINVAL;
    return b->ops->delete (b, ns, name, cb, data, ret_op);
}

void snapshot_op_cancel(struct snapshot_op *op)
{
    if (op)
        op->ops->cancel(op);
}

const char *const *snapshot_backend_node_labels(const struct snapshot_backend *b)
{
    return b ? b->ops->restore_node_labels : NULL;
}

const char *snapshot_backend_name(const struct snapshot_backend *b)
{
    return b ? b->ops->name : "";
}

void snapshot_backend_free(struct snapshot_backend *b)
{
    if (b)
        b->ops->free(b);
}

/* ---- the table ---- */

int snapshot_backends_new(const struct snapshot_backend_options *o,
                          struct snapshot_backend *table[SNAPSHOT_BACKEND_KINDS])
{
    for (size_t k = 0; k < SNAPSHOT_BACKEND_KINDS; k++)
        table[k] = NULL;
    for (size_t i = 0; i < sizeof(constructors) / sizeof(constructors[0]); i++) {
        size_t k = (size_t)constructors[i].kind;
        int e =
            k < SNAPSHOT_BACKEND_KINDS && !table[k] ? constructors[i].make(o, &table[k]) : -EINVAL;
        if (e < 0) {
            snapshot_backends_free(table);
            return e;
        }
    }
    return 0;
}

void snapshot_backends_free(struct snapshot_backend *table[SNAPSHOT_BACKEND_KINDS])
{
    for (size_t k = 0; k < SNAPSHOT_BACKEND_KINDS; k++) {
        snapshot_backend_free(table[k]);
        table[k] = NULL;
    }
}

struct snapshot_backend *snapshot_backend_of(struct snapshot_backend *const table[],
                                             enum snapshot_backend_kind kind)
{
    size_t k = (size_t)kind;
    return k < SNAPSHOT_BACKEND_KINDS ? table[k] : NULL;
}

/* The i-th started backend to ask: first (if started), then the others by
 * kind; NULL past the last. *it (start at 0) says where the walk is. */
static struct snapshot_backend *next_started(struct snapshot_backend *const table[],
                                             const struct snapshot_backend *first, size_t *it)
{
    if (*it == 0) {
        (*it)++;
        for (size_t k = 0; first && k < SNAPSHOT_BACKEND_KINDS; k++)
            if (table[k] == first && first->started)
                return table[k];
    }
    while (*it <= SNAPSHOT_BACKEND_KINDS) {
        struct snapshot_backend *b = table[*it - 1];
        (*it)++;
        if (b && b != first && b->started)
            return b;
    }
    return NULL;
}

void snapshot_backends_view(struct snapshot_backend *const table[],
                            const struct snapshot_backend *first, const char *ns,
                            const char *attempt, struct snapshot_view *ret)
{
    /* Nobody can say yet, as a backend says before its caches synced. */
    struct snapshot_view unknown = {
        .attempt = attempt, .phase = SNAPSHOT_PHASE_IN_PROGRESS, .unknown = 1};
    struct snapshot_view none = {0};
    int have_unknown = 0, have_none = 0;
    struct snapshot_backend *b;
    for (size_t it = 0; (b = next_started(table, first, &it));) {
        struct snapshot_view v;
        snapshot_backend_view(b, ns, attempt, &v);
        if (!v.unknown && v.phase != SNAPSHOT_PHASE_NONE) {
            *ret = v;
            return;
        }
        if (v.unknown && !have_unknown) {
            unknown = v;
            have_unknown = 1;
        } else if (!v.unknown && !have_none) {
            none = v;
            have_none = 1;
        }
    }
    *ret = have_unknown || !have_none ? unknown : none;
}

size_t snapshot_backends_list(struct snapshot_backend *const table[],
                              const struct snapshot_backend *first, const char *ns,
                              const char *workspace, struct snapshot_view *out,
                              struct snapshot_backend **from, size_t max)
{
    size_t n = 0;
    struct snapshot_backend *b;
    for (size_t it = 0; n < max && (b = next_started(table, first, &it));) {
        size_t got = b->ops->list(b, ns, workspace, out + n, max - n);
        for (size_t i = n; from && i < n + got; i++)
            from[i] = b;
        n += got;
    }
    return n;
}

int snapshot_backends_storage(struct snapshot_backend *const table[],
                              const struct snapshot_backend *first, const char *ns,
                              const char *workspace, const char **ret)
{
    int asked = 0, cannot_say = 0;
    struct snapshot_backend *b;
    *ret = NULL;
    for (size_t it = 0; (b = next_started(table, first, &it));) {
        const char *s = NULL;
        int r = b->ops->storage(b, ns, workspace, &s);
        if (r == 1) {
            *ret = s;
            return 1;
        }
        asked = 1;
        cannot_say |= r < 0;
    }
    return asked && !cannot_say ? 0 : -1;
}

void snapshot_backends_workspace_deleted(struct snapshot_backend *const table[], const char *ns,
                                         const char *workspace)
{
    struct snapshot_backend *b;
    for (size_t it = 0; (b = next_started(table, NULL, &it));)
        b->ops->workspace_deleted(b, ns, workspace);
}

void snapshot_backends_workspace_live(struct snapshot_backend *const table[], const char *ns,
                                      const char *workspace)
{
    struct snapshot_backend *b;
    for (size_t it = 0; (b = next_started(table, NULL, &it));)
        b->ops->workspace_live(b, ns, workspace);
}

void snapshot_backends_walked(struct snapshot_backend *const table[], snapshot_walked_cb cb,
                              void *data)
{
    for (size_t k = 0; k < SNAPSHOT_BACKEND_KINDS; k++)
        if (table[k])
            table[k]->ops->walked(table[k], cb, data);
}
