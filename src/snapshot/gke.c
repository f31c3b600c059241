#include "snapshot/gke.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/informer.h"
#include "util/duration.h"
#include "util/json.h"
#include "util/log.h"
#include "workspace/pod.h"

static const struct kube_resource policies = {GKE_SNAPSHOT_GROUP, "v1", "podsnapshotpolicies",
                                              "PodSnapshotPolicy", 1};
static const struct kube_resource triggers = {GKE_SNAPSHOT_GROUP, "v1", "podsnapshotmanualtriggers",
                                              "PodSnapshotManualTrigger", 1};
static const struct kube_resource snapshots = {GKE_SNAPSHOT_GROUP, "v1", "podsnapshots",
                                               "PodSnapshot", 1};

#define MANAGED_SELECTOR MANAGED_BY_LABEL "=" MANAGED_BY_VALUE

/* What the caches keep of a trigger and of a PodSnapshot. */
struct trigger {
    char *workspace;        /* label hibernator.dev/workspace */
    char *snapshot_created; /* status.snapshotCreated.name */
    int failed;             /* a condition says it failed */
    char *message;
};

struct podsnapshot {
    char *triggered_by;
    int64_t deletion_ms;
    int ready;
    int64_t ready_ms;
    int failed;
    char *message;
};

struct gke_snapshots {
    uv_loop_t *loop;
    struct kube_client *client;
    char *ns;
    gke_changed_cb cb;
    void *cb_data;
    struct informer *triggers, *snapshots;
    int started;
};

struct gke_begin {
    struct gke_snapshots *g;
    struct kube_request *req;
    cJSON *trigger; /* created once the policy is there */
    char *ns;
    gke_done_cb cb;
    void *data;
};

/* ---- codecs ---- */

/* A condition that says the object failed: Checkpoint=False, or Ready=False
 * with a reason naming a failure (the in-progress reason is
 * AwaitingCheckpoint). */
static int condition_failed(const cJSON *c)
{
    const char *type = json_string(c, "type"), *status = json_string(c, "status");
    const char *reason = json_string(c, "reason");
    if (!type || !status || strcmp(status, "False") != 0)
        return 0;
    if (strcmp(type, "Checkpoint") == 0)
        return 1;
    return reason && strstr(reason, "Fail") != NULL;
}

static void *trigger_decode(const cJSON *obj, void *data)
{
    (void)data;
    struct trigger *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    const cJSON *meta = json_member(obj, "metadata"), *status = json_member(obj, "status");
    const cJSON *c;
    cJSON_ArrayForEach(c, json_member(status, "conditions"))
    {
        if (condition_failed(c) && !t->failed) {
            t->failed = 1;
            if (json_dup_optional(json_string(c, "message"), &t->message) < 0)
                goto oom;
        }
    }
    if (json_dup_optional(json_string(json_member(meta, "labels"), WORKSPACE_LABEL),
                          &t->workspace) < 0 ||
        json_dup_optional(json_string(json_member(status, "snapshotCreated"), "name"),
                          &t->snapshot_created) < 0)
        goto oom;
    return t;
oom:
    free(t->workspace);
    free(t->message);
    free(t);
    return NULL;
}

static void trigger_free(void *p)
{
    struct trigger *t = p;
    if (!t)
        return;
    free(t->workspace);
    free(t->snapshot_created);
    free(t->message);
    free(t);
}

static void *podsnapshot_decode(const cJSON *obj, void *data)
{
    (void)data;
    struct podsnapshot *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    const cJSON *meta = json_member(obj, "metadata");
    s->deletion_ms = json_time_ms(meta, "deletionTimestamp");
    if (json_member(meta, "deletionTimestamp") && !s->deletion_ms)
        s->deletion_ms = 1;
    const cJSON *c;
    cJSON_ArrayForEach(c, json_member(json_member(obj, "status"), "conditions"))
    {
        const char *type = json_string(c, "type"), *status = json_string(c, "status");
        if (type && status && strcmp(type, "Ready") == 0 && strcmp(status, "True") == 0) {
            s->ready = 1;
            s->ready_ms = json_time_ms(c, "lastTransitionTime");
        }
        if (condition_failed(c) && !s->failed) {
            s->failed = 1;
            if (json_dup_optional(json_string(c, "message"), &s->message) < 0)
                goto oom;
        }
    }
    if (json_dup_optional(json_string(json_member(meta, "labels"), GKE_TRIGGERED_BY_LABEL),
                          &s->triggered_by) < 0)
        goto oom;
    return s;
oom:
    free(s->message);
    free(s);
    return NULL;
}

static void podsnapshot_free(void *p)
{
    struct podsnapshot *s = p;
    if (!s)
        return;
    free(s->triggered_by);
    free(s->message);
    free(s);
}

static const struct informer_codec trigger_codec = {trigger_decode, trigger_free, NULL};
static const struct informer_codec podsnapshot_codec = {podsnapshot_decode, podsnapshot_free, NULL};

/* ---- change notifications ---- */

static void notify_workspace(struct gke_snapshots *g, const char *ns, const char *workspace)
{
    char key[512];
    if (!workspace || !g->cb)
        return;
    snprintf(key, sizeof(key), "%s/%s", ns, workspace);
    g->cb(g->cb_data, key);
}

static void on_trigger(void *data, const struct cache_entry *e)
{
    const struct trigger *t = e->obj;
    notify_workspace(data, e->ns, t->workspace);
}

static void on_trigger_update(void *data, const struct cache_entry *old_e,
                              const struct cache_entry *e)
{
    (void)old_e;
    on_trigger(data, e);
}

static void on_snapshot(void *data, const struct cache_entry *e)
{
    struct gke_snapshots *g = data;
    const struct podsnapshot *s = e->obj;
    const struct cache_entry *te =
        s->triggered_by ? informer_get(g->triggers, e->ns, s->triggered_by) : NULL;
    if (te)
        notify_workspace(g, e->ns, ((const struct trigger *)te->obj)->workspace);
}

static void on_snapshot_update(void *data, const struct cache_entry *old_e,
                               const struct cache_entry *e)
{
    (void)old_e;
    on_snapshot(data, e);
}

/* ---- the view ---- */

static void fill_view(const struct cache_entry *se, const char *attempt, struct snapshot_view *ret)
{
    const struct podsnapshot *s = se->obj;
    *ret = (struct snapshot_view){.attempt = attempt,
                                  .phase = SNAPSHOT_PHASE_IN_PROGRESS,
                                  .name = se->name,
                                  .deleting_ms = s->deletion_ms};
    if (s->failed) {
        ret->phase = SNAPSHOT_PHASE_FAILED;
        ret->message = s->message;
    } else if (s->ready) {
        ret->phase = SNAPSHOT_PHASE_READY;
        ret->ready_ms = s->ready_ms;
    }
}

struct find {
    const char *ns, *trigger;
    const struct cache_entry *found;
};

static void find_by_trigger(void *data, const struct cache_entry *e)
{
    struct find *f = data;
    const struct podsnapshot *s = e->obj;
    if (!f->found && strcmp(e->ns, f->ns) == 0 && s->triggered_by &&
        strcmp(s->triggered_by, f->trigger) == 0)
        f->found = e;
}

void gke_snapshots_view(const struct gke_snapshots *g, const char *ns, const char *attempt,
                        struct snapshot_view *ret)
{
    *ret = (struct snapshot_view){.attempt = attempt, .phase = SNAPSHOT_PHASE_IN_PROGRESS};
    if (!g->started || !informer_has_synced(g->triggers) || !informer_has_synced(g->snapshots))
        return;
    const struct cache_entry *te = informer_get(g->triggers, ns, attempt);
    const struct trigger *t = te ? te->obj : NULL;
    const struct cache_entry *se = NULL;
    if (t && t->snapshot_created)
        se = informer_get(g->snapshots, ns, t->snapshot_created);
    if (!se) {
        /* GKE labels the snapshot before it names it in the trigger. */
        struct find f = {ns, attempt, NULL};
        informer_foreach(g->snapshots, find_by_trigger, &f);
        se = f.found;
    }
    if (se) {
        fill_view(se, attempt, ret);
        return;
    }
    if (t && t->failed) {
        ret->phase = SNAPSHOT_PHASE_FAILED;
        ret->message = t->message;
    } else if (!t) {
        ret->phase = SNAPSHOT_PHASE_NONE;
    }
}

struct lister {
    const struct gke_snapshots *g;
    const char *ns, *workspace;
    struct snapshot_view *out;
    size_t max, n;
};

static void list_one(void *data, const struct cache_entry *e)
{
    struct lister *l = data;
    const struct podsnapshot *s = e->obj;
    if (l->n >= l->max || strcmp(e->ns, l->ns) != 0 || !s->triggered_by)
        return;
    const struct cache_entry *te = informer_get(l->g->triggers, e->ns, s->triggered_by);
    const struct trigger *t = te ? te->obj : NULL;
    if (!t || !t->workspace || strcmp(t->workspace, l->workspace) != 0)
        return;
    fill_view(e, te->name, &l->out[l->n++]);
}

size_t gke_snapshots_list(const struct gke_snapshots *g, const char *ns, const char *workspace,
                          struct snapshot_view *out, size_t max)
{
    if (!g->started || !informer_has_synced(g->triggers) || !informer_has_synced(g->snapshots))
        return 0;
    struct lister l = {g, ns, workspace, out, max, 0};
    informer_foreach(g->snapshots, list_one, &l);
    return l.n;
}

/* ---- begin: the policy, then the trigger ---- */

static cJSON *owned_object(const struct workspace *ws, const char *kind, const char *name)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(o, "metadata");
    cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
    cJSON *refs = cJSON_AddArrayToObject(meta, "ownerReferences");
    cJSON *ref = cJSON_CreateObject();
    if (!refs || !ref || !cJSON_AddItemToArray(refs, ref)) {
        cJSON_Delete(ref);
        cJSON_Delete(o);
        return NULL;
    }
    if (!labels || !cJSON_AddStringToObject(o, "apiVersion", GKE_SNAPSHOT_GROUP "/v1") ||
        !cJSON_AddStringToObject(o, "kind", kind) || !cJSON_AddStringToObject(meta, "name", name) ||
        !cJSON_AddStringToObject(meta, "namespace", ws->ns) ||
        !cJSON_AddStringToObject(labels, MANAGED_BY_LABEL, MANAGED_BY_VALUE) ||
        !cJSON_AddStringToObject(labels, WORKSPACE_LABEL, ws->name) ||
        !cJSON_AddStringToObject(ref, "apiVersion", WORKSPACE_API_VERSION) ||
        !cJSON_AddStringToObject(ref, "kind", WORKSPACE_KIND) ||
        !cJSON_AddStringToObject(ref, "name", ws->name) ||
        !cJSON_AddStringToObject(ref, "uid", ws->uid ? ws->uid : "") ||
        !cJSON_AddTrueToObject(ref, "controller") ||
        !cJSON_AddTrueToObject(ref, "blockOwnerDeletion")) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *policy_build(const struct workspace *ws, const struct workspace_class *c)
{
    char name[300], retention[32];
    snprintf(name, sizeof(name), "%s-snapshots", ws->name);
    cJSON *o = owned_object(ws, "PodSnapshotPolicy", name);
    cJSON *spec = o ? cJSON_AddObjectToObject(o, "spec") : NULL;
    cJSON *sel = spec ? cJSON_AddObjectToObject(spec, "selector") : NULL;
    cJSON *match = sel ? cJSON_AddObjectToObject(sel, "matchLabels") : NULL;
    cJSON *trig = spec ? cJSON_AddObjectToObject(spec, "triggerConfig") : NULL;
    cJSON *ret = spec ? cJSON_AddObjectToObject(spec, "retentionConfig") : NULL;
    if (duration_format_ms(c->snapshot.last_access_timeout_ms, retention, sizeof(retention)) < 0 ||
        !match || !trig || !ret || !cJSON_AddStringToObject(match, WORKSPACE_LABEL, ws->name) ||
        !cJSON_AddStringToObject(spec, "storageConfigName",
                                 c->snapshot.storage_config_name ? c->snapshot.storage_config_name
                                                                 : "") ||
        !cJSON_AddStringToObject(trig, "type", "manual") ||
        !cJSON_AddStringToObject(trig, "postCheckpoint", "resume") ||
        !cJSON_AddStringToObject(spec, "snapshotScope", "whole-pod") ||
        !cJSON_AddStringToObject(ret, "lastAccessTimeout", retention)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *trigger_build(const struct workspace *ws, const char *attempt, const char *pod_name)
{
    cJSON *o = owned_object(ws, "PodSnapshotManualTrigger", attempt);
    cJSON *spec = o ? cJSON_AddObjectToObject(o, "spec") : NULL;
    if (!spec || !cJSON_AddStringToObject(spec, "targetPod", pod_name)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static void begin_finish(struct gke_begin *b, int status, const char *error)
{
    if (b->cb)
        b->cb(b->data, status, error);
    cJSON_Delete(b->trigger);
    free(b->ns);
    free(b);
}

static void on_trigger_created(void *data, struct kube_response *resp)
{
    struct gke_begin *b = data;
    b->req = NULL;
    if (resp->status < 0 && !kube_response_already_exists(resp)) {
        begin_finish(b, resp->status, kube_response_error_text(resp));
        return;
    }
    begin_finish(b, 0, NULL);
}

static void on_policy_created(void *data, struct kube_response *resp)
{
    struct gke_begin *b = data;
    b->req = NULL;
    if (resp->status < 0 && !kube_response_already_exists(resp)) {
        begin_finish(b, resp->status, kube_response_error_text(resp));
        return;
    }
    b->req = kube_create(b->g->client, &triggers, b->ns, b->trigger, on_trigger_created, b);
    if (!b->req)
        begin_finish(b, -ENOMEM, "cannot start the request");
}

cJSON *gke_snapshot_begin_bodies(const struct workspace *ws, const struct workspace_class *c,
                                 const char *attempt, const char *pod_name)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *policy = policy_build(ws, c);
    cJSON *trigger = trigger_build(ws, attempt, pod_name);
    if (!o || !policy || !trigger || !cJSON_AddItemToObject(o, "policy", policy)) {
        cJSON_Delete(o);
        cJSON_Delete(policy);
        cJSON_Delete(trigger);
        return NULL;
    }
    if (!cJSON_AddItemToObject(o, "trigger", trigger)) {
        cJSON_Delete(o);
        cJSON_Delete(trigger);
        return NULL;
    }
    return o;
}

struct gke_begin *gke_snapshots_begin(struct gke_snapshots *g, const char *ns, const cJSON *bodies,
                                      gke_done_cb cb, void *data)
{
    struct gke_begin *b = calloc(1, sizeof(*b));
    const cJSON *policy = json_member(bodies, "policy");
    if (!b || !policy || !(b->trigger = cJSON_Duplicate(json_member(bodies, "trigger"), 1)) ||
        !(b->ns = strdup(ns))) {
        if (b) {
            cJSON_Delete(b->trigger);
            free(b->ns);
        }
        free(b);
        return NULL;
    }
    b->g = g;
    b->cb = cb;
    b->data = data;
    b->req = kube_create(g->client, &policies, ns, policy, on_policy_created, b);
    if (!b->req) {
        cJSON_Delete(b->trigger);
        free(b->ns);
        free(b);
        return NULL;
    }
    return b;
}

void gke_begin_cancel(struct gke_begin *b)
{
    if (!b)
        return;
    kube_request_cancel(b->req);
    b->cb = NULL;
    cJSON_Delete(b->trigger);
    free(b->ns);
    free(b);
}

/* ---- delete: the PodSnapshot, then the trigger that made it ---- */

struct gke_delete {
    struct gke_snapshots *g;
    struct kube_request *req;
    char *ns, *trigger;
    gke_done_cb cb;
    void *data;
};

static void delete_finish(struct gke_delete *x, int status, const char *error)
{
    if (x->cb)
        x->cb(x->data, status, error);
    free(x->ns);
    free(x->trigger);
    free(x);
}

static void on_trigger_deleted(void *data, struct kube_response *resp)
{
    struct gke_delete *x = data;
    x->req = NULL;
    if (resp->status < 0 && !kube_response_not_found(resp)) {
        delete_finish(x, resp->status, kube_response_error_text(resp));
        return;
    }
    delete_finish(x, 0, NULL);
}

static void on_snapshot_deleted(void *data, struct kube_response *resp)
{
    struct gke_delete *x = data;
    x->req = NULL;
    if (resp->status < 0 && !kube_response_not_found(resp)) {
        delete_finish(x, resp->status, kube_response_error_text(resp));
        return;
    }
    struct kube_delete_options o = {.grace_period_seconds = -1, .propagation_policy = "Background"};
    if (!x->trigger || !(x->req = kube_delete(x->g->client, &triggers, x->ns, x->trigger, &o,
                                              on_trigger_deleted, x)))
        delete_finish(x, 0, NULL);
}

struct gke_delete *gke_snapshots_delete(struct gke_snapshots *g, const char *ns, const char *name,
                                        gke_done_cb cb, void *data)
{
    struct gke_delete *x = calloc(1, sizeof(*x));
    if (!x || !(x->ns = strdup(ns))) {
        free(x);
        return NULL;
    }
    const struct cache_entry *se = g->started ? informer_get(g->snapshots, ns, name) : NULL;
    const struct podsnapshot *s = se ? se->obj : NULL;
    if (s && s->triggered_by && !(x->trigger = strdup(s->triggered_by))) {
        free(x->ns);
        free(x);
        return NULL;
    }
    x->g = g;
    x->cb = cb;
    x->data = data;
    struct kube_delete_options o = {.grace_period_seconds = -1, .propagation_policy = "Background"};
    if (!(x->req = kube_delete(g->client, &snapshots, ns, name, &o, on_snapshot_deleted, x))) {
        free(x->ns);
        free(x->trigger);
        free(x);
        return NULL;
    }
    return x;
}

void gke_delete_cancel(struct gke_delete *x)
{
    if (!x)
        return;
    kube_request_cancel(x->req);
    free(x->ns);
    free(x->trigger);
    free(x);
}

/* ---- lifetime ---- */

int gke_snapshots_new(uv_loop_t *loop, struct kube_client *client, const char *ns,
                      gke_changed_cb cb, void *data, struct gke_snapshots **ret)
{
    struct gke_snapshots *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->loop = loop;
    g->client = client;
    g->cb = cb;
    g->cb_data = data;
    if (ns && !(g->ns = strdup(ns))) {
        free(g);
        return -ENOMEM;
    }
    *ret = g;
    return 0;
}

int gke_snapshots_start(struct gke_snapshots *g)
{
    if (g->started)
        return 0;
    struct informer_options to = {
        .resource = &triggers,
        .ns = g->ns,
        .label_selector = MANAGED_SELECTOR,
        .codec = &trigger_codec,
        .handlers = {on_trigger, on_trigger_update, on_trigger, NULL, g},
    };
    struct informer_options so = {
        .resource = &snapshots,
        .ns = g->ns,
        .label_selector = GKE_TRIGGERED_BY_LABEL,
        .codec = &podsnapshot_codec,
        .handlers = {on_snapshot, on_snapshot_update, on_snapshot, NULL, g},
    };
    int r = informer_new(g->loop, g->client, &to, &g->triggers);
    if (r == 0)
        r = informer_new(g->loop, g->client, &so, &g->snapshots);
    if (r == 0)
        r = informer_start(g->triggers);
    if (r == 0)
        r = informer_start(g->snapshots);
    if (r < 0) {
        informer_free(g->triggers);
        informer_free(g->snapshots);
        g->triggers = g->snapshots = NULL;
        return r;
    }
    g->started = 1;
    log_info("watching GKE Pod Snapshots");
    return 0;
}

void gke_snapshots_free(struct gke_snapshots *g)
{
    if (!g)
        return;
    informer_free(g->triggers);
    informer_free(g->snapshots);
    free(g->ns);
    free(g);
}
