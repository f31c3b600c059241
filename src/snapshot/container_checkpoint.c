#include "snapshot/container_checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/informer.h"
#include "node/agent.h"
#include "node/snapshot_step.h"
#include "util/json.h"
#include "util/key_groups.h"
#include "util/log.h"

/* The longest OCI repository name registries take (Docker distribution's
 * limit; the CRD says so too). */
#define REPOSITORY_MAX 255

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

char *container_checkpoint_repository(const struct workspace_class *c, const char *ns,
                                      const char *workspace)
{
    const char *base = c ? c->snapshot.repository : NULL;
    if (!base || !ns || !workspace)
        return NULL;
    char *r = NULL;
    if (asprintf(&r, "%s/%s/%s", base, ns, workspace) < 0)
        return NULL;
    if (strlen(r) <= REPOSITORY_MAX)
        return r;
    /* Too long: the workspace's part cut, a hash of the whole name after
     * it, so two long names that share their start stay apart. */
    char whole[600];
    snprintf(whole, sizeof(whole), "%s/%s", ns, workspace);
    uint32_t h = fnv1a(whole);
    size_t room = REPOSITORY_MAX - strlen(base) - strlen(ns) - 2 - 9;
    free(r);
    if ((int)room < 1)
        return NULL;
    /* The cut must end on a letter or digit (a component may not end with
     * a separator). */
    size_t n = strlen(workspace) < room ? strlen(workspace) : room;
    while (n > 1 && (workspace[n - 1] == '.' || workspace[n - 1] == '-'))
        n--;
    if (asprintf(&r, "%s/%s/%.*s-%08x", base, ns, (int)n, workspace, h) < 0)
        return NULL;
    return r;
}

cJSON *container_checkpoint_begin_bodies(const struct workspace *ws,
                                         const struct workspace_class *c, const char *attempt,
                                         const struct workspace_pod *pod)
{
    if (!ws || !ws->name || !ws->ns || !attempt || !attempt[0] || !pod || !pod->name || !pod->uid ||
        !pod->node_name)
        return NULL;
    char *repo = container_checkpoint_repository(c, ws->ns, ws->name);
    if (!repo)
        return NULL;
    cJSON *bodies = cJSON_CreateObject();
    cJSON *o = bodies ? cJSON_AddObjectToObject(bodies, "containerSnapshot") : NULL;
    cJSON *meta = o ? cJSON_AddObjectToObject(o, "metadata") : NULL;
    cJSON *labels = meta ? cJSON_AddObjectToObject(meta, "labels") : NULL;
    cJSON *fins = meta ? cJSON_AddArrayToObject(meta, "finalizers") : NULL;
    cJSON *refs = meta ? cJSON_AddArrayToObject(meta, "ownerReferences") : NULL;
    cJSON *ref = cJSON_CreateObject();
    if (ref && refs && !cJSON_AddItemToArray(refs, ref)) {
        cJSON_Delete(ref);
        ref = NULL;
    }
    cJSON *spec = o ? cJSON_AddObjectToObject(o, "spec") : NULL;
    int ok = spec && labels && fins && ref &&
             cJSON_AddStringToObject(o, "apiVersion", "hibernator.dev/v1alpha1") &&
             cJSON_AddStringToObject(o, "kind", "ContainerSnapshot") &&
             cJSON_AddStringToObject(meta, "name", attempt) &&
             cJSON_AddStringToObject(meta, "namespace", ws->ns) &&
             cJSON_AddStringToObject(labels, MANAGED_BY_LABEL, MANAGED_BY_VALUE) &&
             cJSON_AddStringToObject(labels, WORKSPACE_LABEL, ws->name) &&
             cJSON_AddItemToArray(fins, cJSON_CreateString(CONTAINER_SNAPSHOT_FINALIZER)) &&
             cJSON_AddStringToObject(ref, "apiVersion", WORKSPACE_API_VERSION) &&
             cJSON_AddStringToObject(ref, "kind", WORKSPACE_KIND) &&
             cJSON_AddStringToObject(ref, "name", ws->name) &&
             cJSON_AddStringToObject(ref, "uid", ws->uid ? ws->uid : "") &&
             cJSON_AddTrueToObject(ref, "controller") &&
             cJSON_AddStringToObject(spec, "nodeName", pod->node_name) &&
             cJSON_AddStringToObject(spec, "podName", pod->name) &&
             cJSON_AddStringToObject(spec, "podUID", pod->uid) &&
             cJSON_AddStringToObject(spec, "containerName", WORKSPACE_CONTAINER) &&
             cJSON_AddStringToObject(spec, "repository", repo) &&
             cJSON_AddStringToObject(spec, "tag", attempt);
    free(repo);
    if (!ok) {
        cJSON_Delete(bodies);
        return NULL;
    }
    return bodies;
}

/* ---- the cache -------------------------------------------------------------- */

struct csnap {
    char *workspace, *pod, *pod_uid, *owner_uid, *image, *message;
    enum snapshot_phase phase;
    int64_t created_ms, ready_ms, deleting_ms;
};

static void csnap_free(void *p)
{
    struct csnap *s = p;
    if (!s)
        return;
    free(s->workspace);
    free(s->pod);
    free(s->pod_uid);
    free(s->owner_uid);
    free(s->image);
    free(s->message);
    free(s);
}

static int csnap_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)data;
    (void)ret_err;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
    struct csnap *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->phase = SNAPSHOT_PHASE_IN_PROGRESS;
    const cJSON *c;
    const char *reason = NULL, *words = NULL;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(status, "conditions"))
    {
        const char *t = json_string(c, "type"), *st = json_string(c, "status");
        if (!t || !st || strcmp(t, "Ready") != 0)
            continue;
        if (strcmp(st, "True") == 0) {
            s->phase = SNAPSHOT_PHASE_READY;
            s->ready_ms = json_time_ms(c, "lastTransitionTime");
        } else if (strcmp(st, "False") == 0) {
            s->phase = SNAPSHOT_PHASE_FAILED;
        }
        reason = json_string(c, "reason");
        words = json_string(c, "message");
    }
    const char *image = json_string(status, "image");
    if (s->phase == SNAPSHOT_PHASE_READY && !image)
        s->phase = SNAPSHOT_PHASE_IN_PROGRESS; /* Ready without an image is not usable */
    if (s->phase == SNAPSHOT_PHASE_READY) {
        int64_t stored = json_time_ms(status, "storedAt");
        if (stored)
            s->ready_ms = stored;
    }
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    int e = json_dup_optional(json_string(labels, WORKSPACE_LABEL), &s->workspace);
    if (e == 0)
        e = json_dup_optional(json_string(spec, "podName"), &s->pod);
    if (e == 0)
        e = json_dup_optional(json_string(spec, "podUID"), &s->pod_uid);
    if (e == 0)
        e = json_dup_optional(json_controller_uid(meta), &s->owner_uid);
    if (e == 0)
        e = json_dup_optional(image, &s->image);
    if (e == 0 && s->phase == SNAPSHOT_PHASE_FAILED &&
        asprintf(&s->message, "%s: %s", reason ? reason : "Failed", words ? words : "") < 0) {
        s->message = NULL;
        e = -ENOMEM;
    }
    if (e < 0) {
        csnap_free(s);
        return e;
    }
    s->created_ms = json_time_ms(meta, "creationTimestamp");
    s->deleting_ms = json_time_ms(meta, "deletionTimestamp");
    *ret = s;
    return 0;
}

static const struct informer_codec csnap_codec = {csnap_decode, csnap_free, NULL};

/* ---- the backend ---------------------------------------------------------- */

struct cc_backend {
    struct snapshot_backend base; /* first: the interface's pointer is ours */
    uv_loop_t *loop;
    struct kube_client *client;
    char *ns;
    snapshot_changed_cb changed;
    void *data;
    struct informer *snapshots;
    struct key_groups by_workspace; /* "ns/workspace" -> keys */
    int index_lost;                 /* out of memory once: lists walk the cache */
};

static struct cc_backend *cc_of(const struct snapshot_backend *b)
{
    return (struct cc_backend *)b;
}

static const char *group_name(char buf[static 512], const char *ns, const char *workspace)
{
    if (!workspace)
        return NULL;
    snprintf(buf, 512, "%s/%s", ns, workspace);
    return buf;
}

static void changed(struct cc_backend *b, const struct cache_entry *e)
{
    const struct csnap *s = e->obj;
    if (!s || !s->workspace || !b->changed)
        return;
    char key[512];
    b->changed(b->data, group_name(key, e->ns, s->workspace));
}

static void index_entry(struct cc_backend *b, const struct cache_entry *e, int present)
{
    const struct csnap *s = e->obj;
    char g[512];
    if (key_groups_set(&b->by_workspace, e->key,
                       present && s ? group_name(g, e->ns, s->workspace) : NULL) < 0)
        b->index_lost = 1;
}

static void on_add(void *data, const struct cache_entry *e)
{
    index_entry(data, e, 1);
    changed(data, e);
}

static void on_update(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    (void)old_e;
    index_entry(data, e, 1);
    changed(data, e);
}

static void on_delete(void *data, const struct cache_entry *e)
{
    index_entry(data, e, 0);
    changed(data, e);
}

static int cc_start(struct snapshot_backend *base)
{
    struct cc_backend *b = cc_of(base);
    if (b->snapshots)
        return 0;
    char selector[128];
    snprintf(selector, sizeof(selector), "%s=%s", MANAGED_BY_LABEL, MANAGED_BY_VALUE);
    struct informer_options io = {
        .resource = &KUBE_RESOURCE_CONTAINER_SNAPSHOTS,
        .ns = b->ns,
        .label_selector = selector,
        .codec = &csnap_codec,
        .handlers = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete, .data = b},
    };
    int e = informer_new(b->loop, b->client, &io, &b->snapshots);
    if (e == 0)
        e = informer_start(b->snapshots);
    if (e < 0) {
        informer_free(b->snapshots);
        b->snapshots = NULL;
    }
    return e;
}

static void fill_view(const struct cache_entry *e, const char *attempt, struct snapshot_view *ret)
{
    const struct csnap *s = e->obj;
    *ret = (struct snapshot_view){
        .attempt = attempt, .phase = SNAPSHOT_PHASE_IN_PROGRESS, .name = e->name};
    if (!s)
        return; /* unreadable: in progress, bounded by the class's timeout */
    ret->phase = s->phase;
    ret->ready_ms = s->ready_ms;
    ret->message = s->message;
    ret->deleting_ms = s->deleting_ms;
    ret->pod = s->pod;
    ret->pod_uid = s->pod_uid;
    ret->owner_uid = s->owner_uid;
    ret->requested_ms = s->created_ms;
    ret->image = s->phase == SNAPSHOT_PHASE_READY ? s->image : NULL;
}

static void cc_view(const struct snapshot_backend *base, const char *ns, const char *attempt,
                    struct snapshot_view *ret)
{
    const struct cc_backend *b = cc_of(base);
    *ret = (struct snapshot_view){.attempt = attempt, .phase = SNAPSHOT_PHASE_IN_PROGRESS};
    if (b->snapshots && informer_not_served(b->snapshots)) {
        ret->phase = SNAPSHOT_PHASE_NONE; /* the CRD is not installed: none exists */
        return;
    }
    if (!b->snapshots || !informer_has_synced(b->snapshots)) {
        ret->unknown = 1;
        return;
    }
    const struct cache_entry *e = informer_get(b->snapshots, ns, attempt);
    if (!e) {
        ret->phase = SNAPSHOT_PHASE_NONE;
        return;
    }
    fill_view(e, attempt, ret);
}

struct lister {
    const struct cc_backend *b;
    const char *ns, *workspace;
    struct snapshot_view *out;
    size_t max, n;
};

static void list_entry(struct lister *l, const struct cache_entry *e)
{
    const struct csnap *s = e->obj;
    if (l->n >= l->max || !s || !s->workspace || strcmp(e->ns, l->ns) != 0 ||
        strcmp(s->workspace, l->workspace) != 0)
        return;
    fill_view(e, e->name, &l->out[l->n++]);
}

static void list_key(void *data, const char *key)
{
    struct lister *l = data;
    const char *slash = strchr(key, '/');
    if (!slash)
        return;
    char ns[256];
    snprintf(ns, sizeof(ns), "%.*s", (int)(slash - key), key);
    const struct cache_entry *e = informer_get(l->b->snapshots, ns, slash + 1);
    if (e)
        list_entry(l, e);
}

static void list_any(void *data, const struct cache_entry *e)
{
    list_entry(data, e);
}

static size_t cc_list(const struct snapshot_backend *base, const char *ns, const char *workspace,
                      struct snapshot_view *out, size_t max)
{
    const struct cc_backend *b = cc_of(base);
    if (!b->snapshots || !informer_has_synced(b->snapshots))
        return 0;
    struct lister l = {b, ns, workspace, out, max, 0};
    char g[512];
    if (b->index_lost)
        informer_foreach(b->snapshots, list_any, &l);
    else
        key_groups_foreach(&b->by_workspace, group_name(g, ns, workspace), list_key, &l);
    return l.n;
}

/* Every ContainerSnapshot names its own repository: a class that changes
 * its repository leaves nothing behind that the next pause must move. */
static int cc_storage(const struct snapshot_backend *b, const char *ns, const char *workspace,
                      const char **ret)
{
    (void)b;
    (void)ns;
    (void)workspace;
    *ret = NULL;
    return 0;
}

/* ---- begin and delete ------------------------------------------------------------ */

struct cc_op {
    struct snapshot_op base; /* first: the interface's pointer is ours */
    struct kube_request *req;
    int is_delete;
    snapshot_done_cb cb;
    void *data;
};

static const struct snapshot_backend_ops cc_ops;

static void on_op_done(void *data, struct kube_response *resp)
{
    struct cc_op *op = data;
    snapshot_done_cb cb = op->cb;
    void *cb_data = op->data;
    int ok = resp->status == 0 ||
             (op->is_delete ? kube_response_not_found(resp) : kube_response_already_exists(resp));
    int status = ok ? 0 : resp->status < 0 ? resp->status : -EIO;
    char words[512] = "";
    if (!ok)
        snprintf(words, sizeof(words), "%s", kube_response_error_text(resp));
    free(op);
    cb(cb_data, status, ok ? NULL : words);
}

static int cc_begin(struct snapshot_backend *base, const char *ns, const cJSON *bodies,
                    snapshot_done_cb cb, void *data, struct snapshot_op **ret_op)
{
    struct cc_backend *b = cc_of(base);
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(bodies, "containerSnapshot");
    if (!ns || !cJSON_IsObject(obj) || !cb || !ret_op)
        return -EINVAL;
    struct cc_op *op = calloc(1, sizeof(*op));
    if (!op)
        return -ENOMEM;
    op->base.ops = &cc_ops;
    op->cb = cb;
    op->data = data;
    int e = kube_create(b->client, &KUBE_RESOURCE_CONTAINER_SNAPSHOTS, ns, obj, on_op_done, op,
                        &op->req);
    if (e < 0) {
        free(op);
        return e;
    }
    kube_request_set_priority(op->req, KUBE_PRIORITY_CRITICAL);
    *ret_op = &op->base;
    return 0;
}

/* The ContainerSnapshot goes; the node agent's finalizer holds it until the
 * image and the node-local archive are gone. */
static int cc_delete(struct snapshot_backend *base, const char *ns, const char *name,
                     snapshot_done_cb cb, void *data, struct snapshot_op **ret_op)
{
    struct cc_backend *b = cc_of(base);
    if (!ns || !name || !cb || !ret_op)
        return -EINVAL;
    struct cc_op *op = calloc(1, sizeof(*op));
    if (!op)
        return -ENOMEM;
    op->base.ops = &cc_ops;
    op->is_delete = 1;
    op->cb = cb;
    op->data = data;
    int e = kube_delete(b->client, &KUBE_RESOURCE_CONTAINER_SNAPSHOTS, ns, name, NULL, on_op_done,
                        op, &op->req);
    if (e < 0) {
        free(op);
        return e;
    }
    *ret_op = &op->base;
    return 0;
}

static void cc_cancel(struct snapshot_op *base)
{
    struct cc_op *op = (struct cc_op *)base;
    kube_request_cancel(op->req);
    free(op);
}

static void on_aside_deleted(void *data, struct kube_response *resp)
{
    (void)data;
    if (resp->status < 0 && !kube_response_not_found(resp))
        log_warn("cannot delete a ContainerSnapshot of a deleted workspace", "error",
                 kube_response_error_text(resp));
}

struct deleter {
    struct cc_backend *b;
    const char *ns;
};

static void delete_key(void *data, const char *key)
{
    struct deleter *d = data;
    const char *slash = strchr(key, '/');
    if (!slash)
        return;
    if (kube_delete(d->b->client, &KUBE_RESOURCE_CONTAINER_SNAPSHOTS, d->ns, slash + 1, NULL,
                    on_aside_deleted, NULL, NULL) < 0)
        log_warn("cannot delete a ContainerSnapshot of a deleted workspace", "snapshot", key);
}

/* Owned by the Workspace, they would go with it; at once is sooner. */
static void cc_workspace_deleted(struct snapshot_backend *base, const char *ns,
                                 const char *workspace)
{
    struct cc_backend *b = cc_of(base);
    if (!b->snapshots || !informer_has_synced(b->snapshots) || b->index_lost)
        return;
    char g[512];
    struct deleter d = {b, ns};
    key_groups_foreach(&b->by_workspace, group_name(g, ns, workspace), delete_key, &d);
}

static void cc_workspace_live(struct snapshot_backend *b, const char *ns, const char *workspace)
{
    (void)b;
    (void)ns;
    (void)workspace;
}

static void cc_walked(const struct snapshot_backend *base, snapshot_walked_cb cb, void *data)
{
    const struct cc_backend *b = cc_of(base);
    cb(data, "containersnapshots", b->snapshots ? informer_stats(b->snapshots).walked : 0);
}

static void cc_free(struct snapshot_backend *base)
{
    struct cc_backend *b = cc_of(base);
    informer_free(b->snapshots);
    key_groups_free(&b->by_workspace);
    free(b->ns);
    free(b);
}

static cJSON *cc_begin_bodies(const struct snapshot_backend *b, const struct workspace *ws,
                              const struct workspace_class *c, const char *attempt,
                              const char *pod_name, const char *pod_group,
                              const struct workspace_pod *pod)
{
    (void)b;
    (void)pod_group;
    if (!pod || !pod->name || !pod_name || strcmp(pod->name, pod_name) != 0)
        return NULL;
    return container_checkpoint_begin_bodies(ws, c, attempt, pod);
}

static const struct snapshot_backend_ops cc_ops = {
    .name = "container checkpoints",
    .restore_node_labels = NULL,
    .start = cc_start,
    .view = cc_view,
    .list = cc_list,
    .storage = cc_storage,
    .begin_bodies = cc_begin_bodies,
    .begin = cc_begin,
    .delete = cc_delete,
    .cancel = cc_cancel,
    .workspace_deleted = cc_workspace_deleted,
    .workspace_live = cc_workspace_live,
    .walked = cc_walked,
    .free = cc_free,
};

int container_checkpoint_backend_new(const struct snapshot_backend_options *o,
                                     struct snapshot_backend **ret)
{
    struct cc_backend *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    b->base.ops = &cc_ops;
    b->loop = o->loop;
    b->client = o->client;
    b->changed = o->changed;
    b->data = o->data;
    key_groups_init(&b->by_workspace);
    if (o->ns && !(b->ns = strdup(o->ns))) {
        free(b);
        return -ENOMEM;
    }
    *ret = &b->base;
    return 0;
}
