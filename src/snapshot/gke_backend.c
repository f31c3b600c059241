#include "snapshot/gke_backend.h"

#include <errno.h>
#include <stdlib.h>

#include "snapshot/gke.h"
#include "workspace/pod.h"

struct gke_backend {
    struct snapshot_backend base; /* first: the interface's pointer is ours */
    struct gke_snapshots *g;
};

/* A begin or delete in flight: GKE's own handle, and whom to tell. */
struct gke_op {
    struct snapshot_op base; /* first: the interface's pointer is ours */
    struct gke_begin *begin; /* one of the two is set */
    struct gke_delete *del;
    snapshot_done_cb cb;
    void *data;
};

static struct gke_snapshots *gke_of(const struct snapshot_backend *b)
{
    return ((const struct gke_backend *)b)->g;
}

static int gke_start(struct snapshot_backend *b)
{
    return gke_snapshots_start(gke_of(b));
}

static void gke_view(const struct snapshot_backend *b, const char *ns, const char *attempt,
                     struct snapshot_view *ret)
{
    gke_snapshots_view(gke_of(b), ns, attempt, ret);
}

static size_t gke_list(const struct snapshot_backend *b, const char *ns, const char *workspace,
                       struct snapshot_view *out, size_t max)
{
    return gke_snapshots_list(gke_of(b), ns, workspace, out, max);
}

static int gke_storage(const struct snapshot_backend *b, const char *ns, const char *workspace,
                       const char **ret)
{
    return gke_snapshots_storage(gke_of(b), ns, workspace, ret);
}

static cJSON *gke_begin_bodies(const struct snapshot_backend *b, const struct workspace *ws,
                               const struct workspace_class *c, const char *attempt,
                               const char *pod_name, const char *pod_group,
                               const struct workspace_pod *pod)
{
    (void)b;
    (void)pod;
    return gke_snapshot_begin_bodies(ws, c, attempt, pod_name, pod_group);
}

/* GKE's call is over (it frees its own handle after this returns): the
 * handle goes before the caller hears, who may then forget it. */
static void on_gke_done(void *data, int status, const char *error)
{
    struct gke_op *op = data;
    snapshot_done_cb cb = op->cb;
    void *cb_data = op->data;
    free(op);
    cb(cb_data, status, error);
}

static const struct snapshot_backend_ops gke_ops;

static struct gke_op *op_new(snapshot_done_cb cb, void *data)
{
    struct gke_op *op = calloc(1, sizeof(*op));
    if (!op)
        return NULL;
    op->base.ops = &gke_ops;
    op->cb = cb;
    op->data = data;
    return op;
}

static int gke_begin(struct snapshot_backend *b, const char *ns, const cJSON *bodies,
                     snapshot_done_cb cb, void *data, struct snapshot_op **ret_op)
{
    if (!cb || !ret_op)
        return -EINVAL;
    struct gke_op *op = op_new(cb, data);
    if (!op)
        return -ENOMEM;
    int e = gke_snapshots_begin(gke_of(b), ns, bodies, on_gke_done, op, &op->begin);
    if (e < 0) {
        free(op);
        return e;
    }
    *ret_op = &op->base;
    return 0;
}

/* The PodSnapshot only: its trigger goes when the cache sees it gone. */
static int gke_delete(struct snapshot_backend *b, const char *ns, const char *name,
                      snapshot_done_cb cb, void *data, struct snapshot_op **ret_op)
{
    if (!ns || !name || !cb || !ret_op)
        return -EINVAL;
    struct gke_op *op = op_new(cb, data);
    if (!op)
        return -ENOMEM;
    int e = gke_snapshots_delete(gke_of(b), ns, name, on_gke_done, op, &op->del);
    if (e < 0) {
        free(op);
        return e;
    }
    *ret_op = &op->base;
    return 0;
}

static void gke_cancel(struct snapshot_op *base)
{
    struct gke_op *op = (struct gke_op *)base;
    gke_begin_cancel(op->begin);
    gke_delete_cancel(op->del);
    free(op);
}

static void gke_workspace_deleted(struct snapshot_backend *b, const char *ns, const char *workspace)
{
    gke_snapshots_workspace_deleted(gke_of(b), ns, workspace);
}

static void gke_workspace_live(struct snapshot_backend *b, const char *ns, const char *workspace)
{
    gke_snapshots_workspace_live(gke_of(b), ns, workspace);
}

static void gke_walked(const struct snapshot_backend *b, snapshot_walked_cb cb, void *data)
{
    struct gke_snapshots_walked w = gke_snapshots_walked(gke_of(b));
    cb(data, "podsnapshots", w.snapshots);
    cb(data, "podsnapshotmanualtriggers", w.triggers);
    cb(data, "podsnapshotpolicies", w.policies);
}

static void gke_free(struct snapshot_backend *b)
{
    gke_snapshots_free(gke_of(b));
    free(b);
}

/* What GKE matches a restore on (docs/snapshots.md, "Restore
 * compatibility"). */
static const char *const gke_node_labels[] = {MACHINE_FAMILY_LABEL, MACHINE_TYPE_LABEL,
                                              NODE_POOL_LABEL, NULL};

static const struct snapshot_backend_ops gke_ops = {
    .name = "GKE Pod Snapshots",
    .restore_node_labels = gke_node_labels,
    .start = gke_start,
    .view = gke_view,
    .list = gke_list,
    .storage = gke_storage,
    .begin_bodies = gke_begin_bodies,
    .begin = gke_begin,
    .delete = gke_delete,
    .cancel = gke_cancel,
    .workspace_deleted = gke_workspace_deleted,
    .workspace_live = gke_workspace_live,
    .walked = gke_walked,
    .free = gke_free,
};

int gke_backend_new(const struct snapshot_backend_options *o, struct snapshot_backend **ret)
{
    struct gke_backend *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    b->base.ops = &gke_ops;
    int e = gke_snapshots_new(o->loop, o->client, o->ns, o->changed, o->data, &b->g);
    if (e < 0) {
        free(b);
        return e;
    }
    *ret = &b->base;
    return 0;
}
