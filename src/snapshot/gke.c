#include "snapshot/gke.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/informer.h"
#include "snapshot/gke_retention.h"
#include "util/json.h"
#include "util/key_groups.h"
#include "util/log.h"
#include "util/strmap.h"
#include "workspace/names.h"
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
    char *target_pod;       /* spec.targetPod: the pod it snapshots */
    char *owner_uid;        /* the Workspace it was made for (its owner reference) */
    int64_t created_ms;     /* metadata.creationTimestamp: when the snapshot was asked for */
    char *snapshot_created; /* status.snapshotCreated.name */
    int failed;             /* a condition says it failed */
    char *message;
};

struct podsnapshot {
    char *triggered_by;
    char *group;       /* label SNAPSHOT_GROUP_LABEL, copied by GKE from the source pod */
    char *policy_name; /* spec.policyName */
    int64_t deletion_ms;
    int ready;
    int64_t ready_ms;
    int failed;
    char *message;
    int64_t checkpoint_retries; /* status.observedCheckpointRetryCount */
    int64_t last_access_ms;     /* status.lastAccessTime */
};

/* What the cache keeps of a policy. */
struct policy {
    char *workspace;      /* label hibernator.dev/workspace */
    char *storage_config; /* spec.storageConfigName, "" when absent */
    int owned;            /* it has owner references (made by an earlier version) */
    int64_t deletion_ms;  /* 0 unless it is being deleted */
    int n_finalizers;     /* how many metadata.finalizers it has */
    int guard;            /* the index of GKE_POLICY_FINALIZER among them, -1: not there */
    char *resource_version;
};

struct gke_snapshots {
    uv_loop_t *loop;
    struct kube_client *client;
    char *ns;
    gke_changed_cb cb;
    void *cb_data;
    struct informer *triggers, *snapshots, *policies;
    int started;
    int swept; /* every trigger and policy was looked at once the caches had synced */
    /* "ns/trigger" -> struct removal *: triggers being deleted; "policy:ns/name"
     * for policies. */
    struct strmap removals;
    struct strmap retiring; /* "ns/workspace" -> "": deleted workspaces whose policy may go */
    uv_timer_t timer;       /* runs the removals that are due */
    /* The caches indexed by what a reconcile and an event look up, kept by
     * the informers' handlers, so each costs one workspace's objects and
     * not every object in the cluster (group names are "ns/name"). */
    struct key_groups snapshots_by_trigger; /* PodSnapshot keys by their trigger label */
    struct key_groups snapshots_by_policy;  /* PodSnapshot keys by spec.policyName */
    struct key_groups triggers_by_workspace;
    int index_lost; /* out of memory once: walks of the caches answer instead */
};

/* Retries of a trigger delete that failed: 1 s doubling to a minute. */
#define REMOVAL_RETRY_MIN_MS 1000
#define REMOVAL_RETRY_MAX_MS 60000

/* A trigger the backend deletes because its PodSnapshot is gone (or its
 * workspace is), retried until it is gone. */
struct removal {
    struct gke_snapshots *g;
    int policy;  /* a policy, not a trigger */
    int release; /* a policy's GKE_POLICY_FINALIZER to remove, not a delete */
    char *key;   /* "ns/name", "policy:ns/name" */
    char *ns, *name;
    char *uid;       /* the trigger's: a new one of the same name is not ours to delete */
    char *check;     /* the PodSnapshot to ask the API server about first; NULL: delete */
    const char *why; /* for the log */
    struct kube_request *req;
    uint64_t due_ms;   /* loop time of the next try */
    uint64_t delay_ms; /* the last retry delay, 0: no failure yet */
};

static void removal_add(struct gke_snapshots *g, const struct cache_entry *te, const char *check,
                        const char *why);
static int both_synced(const struct gke_snapshots *g);
static int not_installed(const struct gke_snapshots *g);
static void consider_policy(struct gke_snapshots *g, const char *ns, const char *workspace);
static void policy_disown(struct gke_snapshots *g, const struct cache_entry *pe);
static void policy_guard(struct gke_snapshots *g, const struct cache_entry *pe);
static void policy_patch_aside(struct gke_snapshots *g, const struct cache_entry *pe,
                               enum kube_patch_type type, const char *patch, const char *doing,
                               int changed_ok);

/* ---- the indexes ---- */

/* The group name "ns/name" in buf, NULL when name is unset. */
static const char *group_name(char buf[static 512], const char *ns, const char *name)
{
    if (!name || !name[0])
        return NULL;
    int n = snprintf(buf, 512, "%s/%s", ns, name);
    return n > 0 && n < 512 ? buf : NULL;
}

static void index_failed(struct gke_snapshots *g, int r)
{
    if (r == 0 || g->index_lost)
        return;
    g->index_lost = 1;
    log_warn("out of memory indexing GKE Pod Snapshots; walking the caches from now on");
}

/* e is cached now, or (gone) was deleted. */
static void index_snapshot(struct gke_snapshots *g, const struct cache_entry *e, int gone)
{
    const struct podsnapshot *s = gone ? NULL : e->obj;
    char a[512], b[512];
    index_failed(g, key_groups_set(&g->snapshots_by_trigger, e->key,
                                   group_name(a, e->ns, s ? s->triggered_by : NULL)));
    index_failed(g, key_groups_set(&g->snapshots_by_policy, e->key,
                                   group_name(b, e->ns, s ? s->policy_name : NULL)));
}

static void index_trigger(struct gke_snapshots *g, const struct cache_entry *e, int gone)
{
    const struct trigger *t = gone ? NULL : e->obj;
    char a[512];
    index_failed(g, key_groups_set(&g->triggers_by_workspace, e->key,
                                   group_name(a, e->ns, t ? t->workspace : NULL)));
}

/* A cache key "ns/name" back to its entry. */
static const struct cache_entry *entry_of(struct informer *inf, const char *key)
{
    const char *slash = strchr(key, '/');
    if (!slash)
        return informer_get(inf, NULL, key);
    char ns[256];
    size_t n = (size_t)(slash - key);
    if (n >= sizeof(ns))
        return NULL;
    memcpy(ns, key, n);
    ns[n] = '\0';
    return informer_get(inf, ns, slash + 1);
}

struct gke_begin {
    struct gke_snapshots *g;
    struct kube_request *req;
    cJSON *trigger; /* created once the policy is there */
    char *policy_name;
    /* The desired spec and no owner reference, for an existing policy; NULL:
     * an existing one is left as it is (a source pod without group). */
    char *policy_patch;
    char *ns;
    gke_done_cb cb;
    void *data;
};

/* ---- codecs ---- */

/* A condition that says the object failed: False with a reason naming a
 * failure or Error (the in-progress reason is AwaitingCheckpoint). GKE ends
 * a trigger with Triggered=False and reason Failed or Error; its clients
 * read both as a failure (agent-sandbox's GKE snapshot extension,
 * k8s_agent_sandbox/gke_extensions/snapshots/utils.py). A Checkpoint=False
 * with any other reason is not final: GKE retries a checkpoint by itself
 * (status.observedCheckpointRetryCount, "the current retry attempt count";
 * docs/snapshots.md), and the class's snapshot timeout bounds the wait. */
static int condition_failed(const cJSON *c)
{
    const char *type = json_string(c, "type"), *status = json_string(c, "status");
    const char *reason = json_string(c, "reason");
    if (!type || !status || strcmp(status, "False") != 0)
        return 0;
    return reason && (strstr(reason, "Fail") != NULL || strcmp(reason, "Error") == 0);
}

static int trigger_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)data;
    (void)ret_err;
    struct trigger *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
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
    t->created_ms = json_time_ms(meta, "creationTimestamp");
    if (json_dup_optional(json_string(json_member(meta, "labels"), WORKSPACE_LABEL),
                          &t->workspace) < 0 ||
        json_dup_optional(json_string(json_member(obj, "spec"), "targetPod"), &t->target_pod) < 0 ||
        json_dup_optional(json_controller_uid(meta), &t->owner_uid) < 0 ||
        json_dup_optional(json_string(json_member(status, "snapshotCreated"), "name"),
                          &t->snapshot_created) < 0)
        goto oom;
    *ret = t;
    return 0;
oom:
    free(t->workspace);
    free(t->target_pod);
    free(t->owner_uid);
    free(t->snapshot_created);
    free(t->message);
    free(t);
    return -ENOMEM;
}

static void trigger_free(void *p)
{
    struct trigger *t = p;
    if (!t)
        return;
    free(t->workspace);
    free(t->target_pod);
    free(t->owner_uid);
    free(t->snapshot_created);
    free(t->message);
    free(t);
}

static int podsnapshot_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)data;
    (void)ret_err;
    struct podsnapshot *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    const cJSON *meta = json_member(obj, "metadata");
    s->deletion_ms = json_time_ms(meta, "deletionTimestamp");
    if (json_member(meta, "deletionTimestamp") && !s->deletion_ms)
        s->deletion_ms = 1;
    int64_t retries = json_int(json_member(obj, "status"), "observedCheckpointRetryCount");
    s->checkpoint_retries = retries > 0 && retries < 1000000 ? retries : 0;
    s->last_access_ms = json_time_ms(json_member(obj, "status"), "lastAccessTime");
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
                          &s->triggered_by) < 0 ||
        json_dup_optional(json_string(json_member(meta, "labels"), SNAPSHOT_GROUP_LABEL),
                          &s->group) < 0 ||
        json_dup_optional(json_string(json_member(obj, "spec"), "policyName"), &s->policy_name) < 0)
        goto oom;
    *ret = s;
    return 0;
oom:
    free(s->triggered_by);
    free(s->group);
    free(s->message);
    free(s);
    return -ENOMEM;
}

static void podsnapshot_free(void *p)
{
    struct podsnapshot *s = p;
    if (!s)
        return;
    free(s->triggered_by);
    free(s->group);
    free(s->policy_name);
    free(s->message);
    free(s);
}

static int policy_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)data;
    (void)ret_err;
    struct policy *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    const cJSON *meta = json_member(obj, "metadata");
    p->owned = cJSON_GetArraySize(json_member(meta, "ownerReferences")) > 0;
    p->deletion_ms = json_time_ms(meta, "deletionTimestamp");
    p->guard = -1;
    const cJSON *f;
    cJSON_ArrayForEach(f, json_member(meta, "finalizers"))
    {
        if (cJSON_IsString(f) && strcmp(f->valuestring, GKE_POLICY_FINALIZER) == 0 && p->guard < 0)
            p->guard = p->n_finalizers;
        p->n_finalizers++;
    }
    const char *storage = json_string(json_member(obj, "spec"), "storageConfigName");
    if (json_dup_optional(json_string(json_member(meta, "labels"), WORKSPACE_LABEL),
                          &p->workspace) < 0 ||
        json_dup_optional(json_string(meta, "resourceVersion"), &p->resource_version) < 0 ||
        !(p->storage_config = strdup(storage ? storage : ""))) {
        free(p->workspace);
        free(p->resource_version);
        free(p);
        return -ENOMEM;
    }
    *ret = p;
    return 0;
}

static void policy_free(void *v)
{
    struct policy *p = v;
    if (!p)
        return;
    free(p->workspace);
    free(p->storage_config);
    free(p->resource_version);
    free(p);
}

static const struct informer_codec policy_codec = {policy_decode, policy_free, NULL};
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

/* ---- which triggers go ---- */

enum gke_trigger_fate gke_trigger_fate(const struct gke_trigger_facts *f)
{
    if (f->snapshot_deleted)
        return GKE_TRIGGER_DELETE;
    if (f->snapshot_cached)
        return GKE_TRIGGER_KEEP;
    if (f->served)
        return GKE_TRIGGER_CHECK;
    return f->workspace_deleting ? GKE_TRIGGER_DELETE : GKE_TRIGGER_KEEP;
}

const char *gke_trigger_fate_name(enum gke_trigger_fate fate)
{
    switch (fate) {
    case GKE_TRIGGER_KEEP:
        return "Keep";
    case GKE_TRIGGER_CHECK:
        return "Check";
    case GKE_TRIGGER_DELETE:
        return "Delete";
    }
    return "?";
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

struct first_key {
    struct informer *inf;
    const struct cache_entry *found;
};

static void take_first(void *data, const char *key)
{
    struct first_key *f = data;
    if (!f->found)
        f->found = entry_of(f->inf, key);
}

/* The PodSnapshot GKE labelled as made by trigger, NULL: none cached. */
static const struct cache_entry *snapshot_by_trigger(const struct gke_snapshots *g, const char *ns,
                                                     const char *trigger)
{
    if (g->index_lost) {
        struct find f = {ns, trigger, NULL};
        informer_foreach(g->snapshots, find_by_trigger, &f);
        return f.found;
    }
    char a[512];
    struct first_key f = {g->snapshots, NULL};
    key_groups_foreach(&g->snapshots_by_trigger, group_name(a, ns, trigger), take_first, &f);
    return f.found;
}

/* Looks at one trigger from the caches and starts its removal when it is
 * due. GKE labels a PodSnapshot before it names it in the trigger; the
 * label is looked for (a walk over the cache) only where it changes the
 * outcome: for a workspace being deleted. */
static void consider_trigger(struct gke_snapshots *g, const struct cache_entry *te,
                             int workspace_deleting)
{
    const struct trigger *t = te->obj;
    struct gke_trigger_facts f = {.served = t->snapshot_created != NULL,
                                  .workspace_deleting = workspace_deleting};
    f.snapshot_cached =
        t->snapshot_created && informer_get(g->snapshots, te->ns, t->snapshot_created);
    if (!f.snapshot_cached && workspace_deleting)
        f.snapshot_cached = snapshot_by_trigger(g, te->ns, te->name) != NULL;
    switch (gke_trigger_fate(&f)) {
    case GKE_TRIGGER_KEEP:
        break;
    case GKE_TRIGGER_CHECK:
        removal_add(g, te, t->snapshot_created, "its PodSnapshot is gone");
        break;
    case GKE_TRIGGER_DELETE:
        removal_add(g, te, NULL, "its workspace is deleted and it made no PodSnapshot");
        break;
    }
}

static void sweep_one(void *data, const struct cache_entry *te)
{
    consider_trigger(data, te, 0);
}

/* Once both caches hold their first lists: triggers whose PodSnapshot went
 * while nobody watched. */
/* A policy whose Workspace may be gone: the reconciler looks at the
 * workspace, and tells the backend when it is (workspace_deleted()). One an
 * earlier version made with an owner reference loses it. */
static void sweep_policy(void *data, const struct cache_entry *pe)
{
    struct gke_snapshots *g = data;
    const struct policy *p = pe->obj;
    if (p->owned)
        policy_disown(g, pe);
    policy_guard(g, pe);
    notify_workspace(g, pe->ns, p->workspace);
}

static void on_synced(void *data)
{
    struct gke_snapshots *g = data;
    if (g->swept || !both_synced(g))
        return;
    g->swept = 1;
    informer_foreach(g->triggers, sweep_one, g);
    informer_foreach(g->policies, sweep_policy, g);
}

static void on_policy(void *data, const struct cache_entry *e)
{
    struct gke_snapshots *g = data;
    const struct policy *p = e->obj;
    if (g->swept && p->owned)
        policy_disown(g, e);
    if (g->swept)
        policy_guard(g, e);
}

static void on_policy_update(void *data, const struct cache_entry *old_e,
                             const struct cache_entry *e)
{
    (void)old_e;
    on_policy(data, e);
}

struct workspace_match {
    struct gke_snapshots *g;
    const char *ns, *workspace;
};

static void consider_if_workspace(void *data, const struct cache_entry *te)
{
    struct workspace_match *m = data;
    const struct trigger *t = te->obj;
    if (strcmp(te->ns, m->ns) == 0 && t->workspace && strcmp(t->workspace, m->workspace) == 0)
        consider_trigger(m->g, te, 1);
}

static void consider_trigger_key(void *data, const char *key)
{
    struct workspace_match *m = data;
    const struct cache_entry *te = entry_of(m->g->triggers, key);
    if (te)
        consider_trigger(m->g, te, 1);
}

void gke_snapshots_workspace_deleted(struct gke_snapshots *g, const char *ns, const char *workspace)
{
    if (!g->started || !both_synced(g))
        return;
    struct workspace_match m = {g, ns, workspace};
    char a[512];
    if (g->index_lost)
        informer_foreach(g->triggers, consider_if_workspace, &m);
    else
        key_groups_foreach(&g->triggers_by_workspace, group_name(a, ns, workspace),
                           consider_trigger_key, &m);
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", ns, workspace);
    /* Out of memory: the next pass over the deleted workspace tries again. */
    if (strmap_put(&g->retiring, key, (void *)"", NULL) < 0)
        return;
    consider_policy(g, ns, workspace);
}

void gke_snapshots_workspace_live(struct gke_snapshots *g, const char *ns, const char *workspace)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", ns, workspace);
    strmap_remove(&g->retiring, key);
}

/* ---- the policy: it goes after the last PodSnapshot that names it ---- */

enum gke_policy_fate gke_policy_fate(const struct gke_policy_facts *f)
{
    if (!f->workspace_deleting || f->snapshots_left || f->triggers_left)
        return GKE_POLICY_KEEP;
    return GKE_POLICY_DELETE;
}

struct policy_users {
    const char *ns, *policy, *workspace;
    int snapshots, triggers;
};

static void count_snapshot_user(void *data, const struct cache_entry *e)
{
    struct policy_users *u = data;
    const struct podsnapshot *s = e->obj;
    u->snapshots +=
        strcmp(e->ns, u->ns) == 0 && s->policy_name && strcmp(s->policy_name, u->policy) == 0;
}

static void count_trigger_user(void *data, const struct cache_entry *e)
{
    struct policy_users *u = data;
    const struct trigger *t = e->obj;
    u->triggers +=
        strcmp(e->ns, u->ns) == 0 && t->workspace && strcmp(t->workspace, u->workspace) == 0;
}

/* The facts about the policy of ns/workspace from the caches; its cache
 * entry, NULL: none cached. */
static const struct cache_entry *policy_facts(const struct gke_snapshots *g, const char *ns,
                                              const char *workspace, struct gke_policy_facts *ret)
{
    char name[NAMES_SIZE], key[512];
    *ret = (struct gke_policy_facts){0};
    if (names_snapshot_policy(workspace, name) < 0)
        return NULL;
    const struct cache_entry *pe = informer_get(g->policies, ns, name);
    if (!pe)
        return NULL;
    snprintf(key, sizeof(key), "%s/%s", ns, workspace);
    struct policy_users u = {ns, name, workspace, 0, 0};
    if (g->index_lost) {
        informer_foreach(g->snapshots, count_snapshot_user, &u);
        informer_foreach(g->triggers, count_trigger_user, &u);
    } else {
        char a[512], b[512];
        u.snapshots = (int)key_groups_count(&g->snapshots_by_policy, group_name(a, ns, name));
        u.triggers = (int)key_groups_count(&g->triggers_by_workspace, group_name(b, ns, workspace));
    }
    *ret = (struct gke_policy_facts){.workspace_deleting = strmap_get(&g->retiring, key) != NULL,
                                     .snapshots_left = u.snapshots,
                                     .triggers_left = u.triggers};
    return pe;
}

int gke_snapshots_storage(const struct gke_snapshots *g, const char *ns, const char *workspace,
                          const char **ret)
{
    char name[NAMES_SIZE];
    *ret = NULL;
    if (g && g->started && not_installed(g))
        return 0;
    if (!g || !g->started || !informer_has_synced(g->policies))
        return -1;
    if (names_snapshot_policy(workspace, name) < 0)
        return 0;
    const struct cache_entry *pe = informer_get(g->policies, ns, name);
    if (!pe)
        return 0;
    *ret = ((const struct policy *)pe->obj)->storage_config;
    return 1;
}

/* The policy of a deleted workspace goes once no PodSnapshot names it (GKE's
 * finalizer finds the bucket through it) and no trigger of the workspace is
 * left (one could still make a PodSnapshot). */
static void consider_policy(struct gke_snapshots *g, const char *ns, const char *workspace)
{
    struct gke_policy_facts f;
    if (!g->started || !both_synced(g))
        return;
    const struct cache_entry *pe = policy_facts(g, ns, workspace, &f);
    if (pe && gke_policy_fate(&f) == GKE_POLICY_DELETE)
        removal_add(g, pe, NULL, "its workspace is deleted and no PodSnapshot names it");
}

static void on_trigger(void *data, const struct cache_entry *e)
{
    struct gke_snapshots *g = data;
    index_trigger(g, e, 0);
    const struct trigger *t = e->obj;
    notify_workspace(g, e->ns, t->workspace);
    if (g->swept)
        consider_trigger(g, e, 0);
}

static void on_trigger_update(void *data, const struct cache_entry *old_e,
                              const struct cache_entry *e)
{
    (void)old_e;
    on_trigger(data, e);
}

static void on_trigger_delete(void *data, const struct cache_entry *e)
{
    index_trigger(data, e, 1);
    const struct trigger *t = e->obj;
    notify_workspace(data, e->ns, t->workspace);
    if (t->workspace)
        consider_policy(data, e->ns, t->workspace);
}

static const struct cache_entry *trigger_of(const struct gke_snapshots *g,
                                            const struct cache_entry *se)
{
    const struct podsnapshot *s = se->obj;
    return s->triggered_by ? informer_get(g->triggers, se->ns, s->triggered_by) : NULL;
}

static void on_snapshot(void *data, const struct cache_entry *e)
{
    struct gke_snapshots *g = data;
    index_snapshot(g, e, 0);
    const struct cache_entry *te = trigger_of(g, e);
    if (te)
        notify_workspace(g, e->ns, ((const struct trigger *)te->obj)->workspace);
}

static void on_snapshot_update(void *data, const struct cache_entry *old_e,
                               const struct cache_entry *e)
{
    (void)old_e;
    on_snapshot(data, e);
}

/* The PodSnapshot is gone for good (GKE's finalizer let it go): now the
 * trigger that made it may go, and the workspace sees it no more. */
static void on_snapshot_delete(void *data, const struct cache_entry *e)
{
    struct gke_snapshots *g = data;
    index_snapshot(g, e, 1);
    const struct podsnapshot *s = e->obj;
    const struct cache_entry *pe =
        s->policy_name ? informer_get(g->policies, e->ns, s->policy_name) : NULL;
    const struct policy *p = pe ? pe->obj : NULL;
    if (p && p->workspace)
        consider_policy(g, e->ns, p->workspace);
    if (pe && g->swept)
        policy_guard(g, pe);
    const struct cache_entry *te = trigger_of(g, e);
    const struct trigger *t = te ? te->obj : NULL;
    if (!t)
        return;
    struct gke_trigger_facts f = {.snapshot_deleted = 1};
    if ((!t->snapshot_created || strcmp(t->snapshot_created, e->name) == 0) &&
        gke_trigger_fate(&f) == GKE_TRIGGER_DELETE)
        removal_add(g, te, NULL, "its PodSnapshot is gone");
    notify_workspace(g, e->ns, t->workspace);
}

/* ---- the view ---- */

static void fill_view(const struct cache_entry *se, const char *attempt, const struct trigger *t,
                      struct snapshot_view *ret)
{
    const struct podsnapshot *s = se->obj;
    *ret = (struct snapshot_view){.attempt = attempt,
                                  .pod = t ? t->target_pod : NULL,
                                  .owner_uid = t ? t->owner_uid : NULL,
                                  .requested_ms = t ? t->created_ms : 0,
                                  .phase = SNAPSHOT_PHASE_IN_PROGRESS,
                                  .name = se->name,
                                  .deleting_ms = s->deletion_ms,
                                  .group = s->group,
                                  .checkpoint_retries = s->checkpoint_retries,
                                  .last_access_ms = s->last_access_ms};
    if (s->failed) {
        ret->phase = SNAPSHOT_PHASE_FAILED;
        ret->message = s->message;
    } else if (s->ready) {
        ret->phase = SNAPSHOT_PHASE_READY;
        ret->ready_ms = s->ready_ms;
    }
}

/* Whether the trigger is being deleted because its PodSnapshot is gone (a
 * policy's removal has another key). */
static int trigger_going(const struct gke_snapshots *g, const char *ns, const char *name)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    const struct removal *x = strmap_get(&g->removals, key);
    return x && !x->check;
}

void gke_snapshots_view(const struct gke_snapshots *g, const char *ns, const char *attempt,
                        struct snapshot_view *ret)
{
    *ret = (struct snapshot_view){.attempt = attempt, .phase = SNAPSHOT_PHASE_IN_PROGRESS};
    if (g->started && not_installed(g)) {
        ret->phase = SNAPSHOT_PHASE_NONE; /* nothing of GKE's can exist */
        return;
    }
    if (!g->started || !both_synced(g)) {
        ret->unknown = 1;
        return;
    }
    const struct cache_entry *te = informer_get(g->triggers, ns, attempt);
    if (te && trigger_going(g, ns, attempt))
        te = NULL; /* its snapshot is gone: the attempt has nothing left to show */
    const struct trigger *t = te ? te->obj : NULL;
    const struct cache_entry *se = NULL;
    if (t && t->snapshot_created)
        se = informer_get(g->snapshots, ns, t->snapshot_created);
    if (!se) /* GKE labels the snapshot before it names it in the trigger. */
        se = snapshot_by_trigger(g, ns, attempt);
    if (se) {
        fill_view(se, attempt, t, ret);
        return;
    }
    if (t) {
        ret->pod = t->target_pod;
        ret->owner_uid = t->owner_uid;
        ret->requested_ms = t->created_ms;
    }
    if (t && t->failed) {
        ret->phase = SNAPSHOT_PHASE_FAILED;
        ret->message = t->message;
    } else if (!t) {
        ret->phase = SNAPSHOT_PHASE_NONE;
    }
}

struct gke_snapshots_walked gke_snapshots_walked(const struct gke_snapshots *g)
{
    struct gke_snapshots_walked w = {0};
    if (!g)
        return w;
    if (g->snapshots)
        w.snapshots = informer_stats(g->snapshots).walked;
    if (g->triggers)
        w.triggers = informer_stats(g->triggers).walked;
    if (g->policies)
        w.policies = informer_stats(g->policies).walked;
    return w;
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
    fill_view(e, te->name, t, &l->out[l->n++]);
}

static void list_snapshot_key(void *data, const char *key)
{
    struct lister *l = data;
    const struct cache_entry *e = entry_of(l->g->snapshots, key);
    if (e)
        list_one(l, e);
}

/* Each PodSnapshot of one of the workspace's triggers. */
static void list_trigger_key(void *data, const char *key)
{
    struct lister *l = data;
    key_groups_foreach(&l->g->snapshots_by_trigger, key, list_snapshot_key, l);
}

size_t gke_snapshots_list(const struct gke_snapshots *g, const char *ns, const char *workspace,
                          struct snapshot_view *out, size_t max)
{
    if (!g->started || !both_synced(g))
        return 0;
    struct lister l = {g, ns, workspace, out, max, 0};
    char a[512];
    if (g->index_lost)
        informer_foreach(g->snapshots, list_one, &l);
    else /* a trigger's key is the group name of the snapshots it made */
        key_groups_foreach(&g->triggers_by_workspace, group_name(a, ns, workspace),
                           list_trigger_key, &l);
    return l.n;
}

/* ---- begin: the policy, then the trigger ---- */

/* The object's apiVersion, kind and metadata (name, namespace, labels). */
static cJSON *labelled_object(const struct workspace *ws, const char *kind, const char *name)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(o, "metadata");
    cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
    if (!labels || !cJSON_AddStringToObject(o, "apiVersion", GKE_SNAPSHOT_GROUP "/v1") ||
        !cJSON_AddStringToObject(o, "kind", kind) || !cJSON_AddStringToObject(meta, "name", name) ||
        !cJSON_AddStringToObject(meta, "namespace", ws->ns) ||
        !cJSON_AddStringToObject(labels, MANAGED_BY_LABEL, MANAGED_BY_VALUE) ||
        !cJSON_AddStringToObject(labels, WORKSPACE_LABEL, ws->name)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The same, owned by the Workspace. */
static cJSON *owned_object(const struct workspace *ws, const char *kind, const char *name)
{
    cJSON *o = labelled_object(ws, kind, name);
    cJSON *refs = o ? cJSON_AddArrayToObject(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
                                             "ownerReferences")
                    : NULL;
    cJSON *ref = cJSON_CreateObject();
    if (!refs || !ref || !cJSON_AddItemToArray(refs, ref)) {
        cJSON_Delete(ref);
        cJSON_Delete(o);
        return NULL;
    }
    if (!cJSON_AddStringToObject(ref, "apiVersion", WORKSPACE_API_VERSION) ||
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

/* Adds the selector's requirement of the group label and the grouping
 * rules. Returns 0 or -ENOMEM. */
static int add_grouping(cJSON *spec, cJSON *sel)
{
    cJSON *exprs = cJSON_AddArrayToObject(sel, "matchExpressions");
    cJSON *expr = cJSON_CreateObject();
    if (!exprs || !expr || !cJSON_AddItemToArray(exprs, expr)) {
        cJSON_Delete(expr);
        return -ENOMEM;
    }
    cJSON *rules = cJSON_AddObjectToObject(spec, "snapshotGroupingRules");
    cJSON *by = rules ? cJSON_AddObjectToObject(rules, "groupByLabelValue") : NULL;
    cJSON *keys = by ? cJSON_AddArrayToObject(by, "labels") : NULL;
    cJSON *key = cJSON_CreateString(SNAPSHOT_GROUP_LABEL);
    if (!keys || !key || !cJSON_AddItemToArray(keys, key)) {
        cJSON_Delete(key);
        return -ENOMEM;
    }
    if (!cJSON_AddStringToObject(expr, "key", SNAPSHOT_GROUP_LABEL) ||
        !cJSON_AddStringToObject(expr, "operator", "Exists"))
        return -ENOMEM;
    return 0;
}

/* grouped: with the snapshot groups; 0: as an earlier version made it, for
 * a source pod of that version (it has no group label, and the group's
 * selector would not select it). */
static cJSON *policy_spec(const struct workspace *ws, const struct workspace_class *c, int grouped)
{
    char retention[GKE_RETENTION_SIZE];
    cJSON *spec = cJSON_CreateObject();
    cJSON *sel = spec ? cJSON_AddObjectToObject(spec, "selector") : NULL;
    cJSON *match = sel ? cJSON_AddObjectToObject(sel, "matchLabels") : NULL;
    if (!match || (grouped && add_grouping(spec, sel) < 0)) {
        cJSON_Delete(spec);
        return NULL;
    }
    cJSON *trig = cJSON_AddObjectToObject(spec, "triggerConfig");
    cJSON *ret = cJSON_AddObjectToObject(spec, "retentionConfig");
    if (gke_retention_format(c->snapshot.last_access_timeout_ms, retention) < 0 || !trig || !ret ||
        !cJSON_AddStringToObject(match, WORKSPACE_LABEL, ws->name) ||
        !cJSON_AddStringToObject(spec, "storageConfigName",
                                 c->snapshot.storage_config_name ? c->snapshot.storage_config_name
                                                                 : "") ||
        !cJSON_AddStringToObject(trig, "type", "manual") ||
        !cJSON_AddStringToObject(trig, "postCheckpoint", "stop") ||
        !cJSON_AddStringToObject(spec, "snapshotScope", "whole-pod") ||
        !cJSON_AddStringToObject(ret, "lastAccessTimeout", retention)) {
        cJSON_Delete(spec);
        return NULL;
    }
    return spec;
}

/* Not owned by the Workspace: GKE's finalizer on each PodSnapshot finds the
 * bucket through the policy, so the backend deletes it itself after the last
 * PodSnapshot (consider_policy()). */
static cJSON *policy_build(const struct workspace *ws, const struct workspace_class *c, int grouped)
{
    char name[NAMES_SIZE];
    if (names_snapshot_policy(ws->name, name) < 0)
        return NULL;
    cJSON *o = labelled_object(ws, "PodSnapshotPolicy", name);
    cJSON *fin =
        o ? cJSON_AddArrayToObject(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "finalizers")
          : NULL;
    cJSON *guard = cJSON_CreateString(GKE_POLICY_FINALIZER);
    if (!fin || !guard || !cJSON_AddItemToArray(fin, guard)) {
        cJSON_Delete(guard);
        cJSON_Delete(o);
        return NULL;
    }
    cJSON *spec = policy_spec(ws, c, grouped);
    if (!spec || !cJSON_AddItemToObject(o, "spec", spec)) {
        cJSON_Delete(spec);
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

static void begin_free(struct gke_begin *b)
{
    cJSON_Delete(b->trigger);
    free(b->policy_name);
    free(b->policy_patch);
    free(b->ns);
    free(b);
}

static void begin_finish(struct gke_begin *b, int status, const char *error)
{
    if (b->cb)
        b->cb(b->data, status, error);
    begin_free(b);
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

static void create_trigger(struct gke_begin *b)
{
    b->req = NULL;
    int e = kube_create(b->g->client, &triggers, b->ns, b->trigger, on_trigger_created, b, &b->req);
    /* The snapshot is the first step of a pause with memory. */
    if (e < 0)
        begin_finish(b, e, "cannot start the request");
    else
        kube_request_set_priority(b->req, KUBE_PRIORITY_CRITICAL);
}

static void on_policy_patched(void *data, struct kube_response *resp)
{
    struct gke_begin *b = data;
    b->req = NULL;
    if (resp->status < 0) {
        begin_finish(b, resp->status, kube_response_error_text(resp));
        return;
    }
    create_trigger(b);
}

static void on_policy_created(void *data, struct kube_response *resp)
{
    struct gke_begin *b = data;
    b->req = NULL;
    if (resp->status < 0 && !kube_response_already_exists(resp)) {
        begin_finish(b, resp->status, kube_response_error_text(resp));
        return;
    }
    if (resp->status == 0 || !b->policy_patch) {
        create_trigger(b);
        return;
    }
    /* It exists: made by an earlier version (no snapshot groups, an owner
     * reference), or for an earlier Workspace of the name, or with another
     * class. It is brought to the desired spec. */
    b->req = NULL;
    int e = kube_patch(b->g->client, &policies, b->ns, b->policy_name, NULL, KUBE_PATCH_MERGE,
                       b->policy_patch, on_policy_patched, b, &b->req);
    if (e < 0)
        begin_finish(b, e, "cannot start the request");
    else
        kube_request_set_priority(b->req, KUBE_PRIORITY_CRITICAL);
}

cJSON *gke_snapshot_begin_bodies(const struct workspace *ws, const struct workspace_class *c,
                                 const char *attempt, const char *pod_name, const char *pod_group)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *policy = policy_build(ws, c, pod_group != NULL);
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
    if (!pod_group && !cJSON_AddTrueToObject(o, "keepPolicy")) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The merge patch that brings an existing policy to the built one: its spec
 * (the selector and grouping rules replace the old ones whole) and no owner
 * reference. Malloc'd, NULL when out of memory. */
static char *policy_patch(const cJSON *policy)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *meta = o ? cJSON_AddObjectToObject(o, "metadata") : NULL;
    cJSON *spec = cJSON_Duplicate(json_member(policy, "spec"), 1);
    char *text = NULL;
    if (meta && spec && cJSON_AddNullToObject(meta, "ownerReferences") &&
        cJSON_AddItemToObject(o, "spec", spec)) {
        spec = NULL;
        text = cJSON_PrintUnformatted(o);
    }
    cJSON_Delete(spec);
    cJSON_Delete(o);
    return text;
}

int gke_snapshots_begin(struct gke_snapshots *g, const char *ns, const cJSON *bodies,
                        gke_done_cb cb, void *data, struct gke_begin **ret_begin)
{
    const cJSON *policy = json_member(bodies, "policy");
    const char *policy_name = json_string(json_member(policy, "metadata"), "name");
    const cJSON *trigger = json_member(bodies, "trigger");
    int keep = cJSON_IsTrue(json_member(bodies, "keepPolicy"));
    if (!g || !ns || !cb || !ret_begin || !policy || !policy_name || !trigger)
        return -EINVAL;
    struct gke_begin *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    if (!(b->trigger = cJSON_Duplicate(trigger, 1)) || !(b->ns = strdup(ns)) ||
        !(b->policy_name = strdup(policy_name)) ||
        (!keep && !(b->policy_patch = policy_patch(policy)))) {
        begin_free(b);
        return -ENOMEM;
    }
    b->g = g;
    b->cb = cb;
    b->data = data;
    int e = kube_create(g->client, &policies, ns, policy, on_policy_created, b, &b->req);
    if (e < 0) {
        begin_free(b);
        return e;
    }
    /* Like the steps after it: the first step of a pause with memory waits
     * behind no ordinary traffic. */
    kube_request_set_priority(b->req, KUBE_PRIORITY_CRITICAL);
    *ret_begin = b;
    return 0;
}

void gke_begin_cancel(struct gke_begin *b)
{
    if (!b)
        return;
    kube_request_cancel(b->req);
    b->cb = NULL;
    begin_free(b);
}

/* ---- delete: the PodSnapshot; its trigger follows when it is gone ---- */

struct gke_delete {
    struct kube_request *req;
    gke_done_cb cb;
    void *data;
};

static void on_snapshot_deleted(void *data, struct kube_response *resp)
{
    struct gke_delete *x = data;
    int status = resp->status < 0 && !kube_response_not_found(resp) ? resp->status : 0;
    if (x->cb)
        x->cb(x->data, status, status < 0 ? kube_response_error_text(resp) : NULL);
    free(x);
}

int gke_snapshots_delete(struct gke_snapshots *g, const char *ns, const char *name, gke_done_cb cb,
                         void *data, struct gke_delete **ret_delete)
{
    if (!g || !ns || !name || !cb || !ret_delete)
        return -EINVAL;
    struct gke_delete *x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    x->cb = cb;
    x->data = data;
    struct kube_delete_options o = {.grace_period_seconds = -1, .propagation_policy = "Background"};
    int e = kube_delete(g->client, &snapshots, ns, name, &o, on_snapshot_deleted, x, &x->req);
    if (e < 0) {
        free(x);
        return e;
    }
    *ret_delete = x;
    return 0;
}

void gke_delete_cancel(struct gke_delete *x)
{
    if (!x)
        return;
    kube_request_cancel(x->req);
    free(x);
}

/* ---- removals: triggers whose PodSnapshot is gone ---- */

/* The API server serves neither triggers nor PodSnapshots (GKE's CRDs are
 * not installed): no trigger and no snapshot of GKE's exists. */
static int not_installed(const struct gke_snapshots *g)
{
    return informer_not_served(g->triggers) && informer_not_served(g->snapshots);
}

static int both_synced(const struct gke_snapshots *g)
{
    return informer_has_synced(g->triggers) && informer_has_synced(g->snapshots) &&
           informer_has_synced(g->policies);
}

static void removal_free(struct removal *x)
{
    if (!x)
        return;
    kube_request_cancel(x->req);
    free(x->key);
    free(x->ns);
    free(x->name);
    free(x->uid);
    free(x->check);
    free(x);
}

static void removal_drop(struct removal *x)
{
    strmap_remove(&x->g->removals, x->key);
    removal_free(x);
}

static void on_removal_timer(uv_timer_t *timer);

/* Arms the timer for the earliest removal that waits. */
static void removals_schedule(struct gke_snapshots *g)
{
    uint64_t now = uv_now(g->loop), due = UINT64_MAX;
    void *v;
    for (size_t it = 0; strmap_next(&g->removals, &it, NULL, &v);) {
        const struct removal *x = v;
        if (!x->req && x->due_ms < due)
            due = x->due_ms;
    }
    if (due == UINT64_MAX)
        uv_timer_stop(&g->timer);
    else
        uv_timer_start(&g->timer, on_removal_timer, due > now ? due - now : 0, 0);
}

static const char *removal_kind(const struct removal *x)
{
    return x->release ? "policy finalizer" : x->policy ? "policy" : "trigger";
}

/* resp: the answer that refused the step, or NULL when its request could
 * not start, start_err saying why. */
static void removal_retry(struct removal *x, const char *what, const struct kube_response *resp,
                          int start_err)
{
    x->delay_ms = x->delay_ms ? x->delay_ms * 2 : REMOVAL_RETRY_MIN_MS;
    if (x->delay_ms > REMOVAL_RETRY_MAX_MS)
        x->delay_ms = REMOVAL_RETRY_MAX_MS;
    x->due_ms = uv_now(x->g->loop) + x->delay_ms;
    log_warn("cannot remove a snapshot object yet; retrying", "namespace", x->ns, removal_kind(x),
             x->name, "step", what, "code", LOG_INT(resp ? resp->http_code : 0), "error",
             resp ? kube_response_error_text(resp) : log_errno_str(start_err), "retry_ms",
             LOG_INT(x->delay_ms));
    removals_schedule(x->g);
}

static void on_trigger_removed(void *data, struct kube_response *resp)
{
    struct removal *x = data;
    x->req = NULL;
    /* 409: the uid precondition failed, the trigger of that name is a new one. */
    if (resp->status < 0 && !kube_response_not_found(resp) && resp->http_code != 409) {
        removal_retry(x, "delete", resp, 0);
        return;
    }
    removal_drop(x);
}

static void removal_delete(struct removal *x)
{
    struct kube_delete_options o = {
        .precondition_uid = x->uid, .grace_period_seconds = -1, .propagation_policy = "Background"};
    log_info(x->policy ? "deleting a snapshot policy" : "deleting a snapshot trigger", "namespace",
             x->ns, removal_kind(x), x->name, "why", x->why);
    x->req = NULL;
    int e = kube_delete(x->g->client, x->policy ? &policies : &triggers, x->ns, x->name, &o,
                        on_trigger_removed, x, &x->req);
    if (e < 0)
        removal_retry(x, "delete", NULL, e);
}

/* The PodSnapshot the trigger names, asked for by name: the cache may be
 * behind GKE's create. */
static void on_snapshot_checked(void *data, struct kube_response *resp)
{
    struct removal *x = data;
    x->req = NULL;
    if (!x->check || kube_response_not_found(resp)) {
        free(x->check);
        x->check = NULL;
        removal_delete(x);
    } else if (resp->status == 0) {
        removal_drop(x); /* it exists: the trigger stays until it goes */
    } else {
        removal_retry(x, "check", resp, 0);
    }
}

/* ---- the policy's finalizer: it outlives every PodSnapshot that names it ---- */

/* PodSnapshots (being deleted or not) whose spec.policyName is ns/name. */
static size_t policy_snapshots(const struct gke_snapshots *g, const char *ns, const char *name)
{
    struct policy_users u = {ns, name, "", 0, 0};
    if (g->index_lost) {
        informer_foreach(g->snapshots, count_snapshot_user, &u);
        return (size_t)u.snapshots;
    }
    char a[512];
    return key_groups_count(&g->snapshots_by_policy, group_name(a, ns, name));
}

static void on_released(void *data, struct kube_response *resp)
{
    struct removal *x = data;
    x->req = NULL;
    /* 422: the test failed, the finalizers changed: the policy's update
     * brings it back if it is still due. */
    if (resp->status < 0 && !kube_response_not_found(resp) && resp->http_code != 409 &&
        resp->http_code != 422) {
        removal_retry(x, "release", resp, 0);
        return;
    }
    removal_drop(x);
}

/* The policy is being deleted and no PodSnapshot names it any more: its
 * finalizer goes (a JSON patch that tests the index still names it). */
static void release_run(struct removal *x, const struct cache_entry *pe)
{
    const struct policy *p = pe->obj;
    if (!p->deletion_ms || p->guard < 0 || policy_snapshots(x->g, x->ns, x->name) > 0) {
        removal_drop(x); /* the last PodSnapshot's delete brings it back */
        return;
    }
    char patch[256];
    snprintf(patch, sizeof(patch),
             "[{\"op\":\"test\",\"path\":\"/metadata/finalizers/%d\",\"value\":\"%s\"},"
             "{\"op\":\"remove\",\"path\":\"/metadata/finalizers/%d\"}]",
             p->guard, GKE_POLICY_FINALIZER, p->guard);
    log_info("releasing a snapshot policy: no PodSnapshot names it any more", "namespace", x->ns,
             "policy", x->name);
    x->req = NULL;
    int e = kube_patch(x->g->client, &policies, x->ns, x->name, NULL, KUBE_PATCH_JSON, patch,
                       on_released, x, &x->req);
    if (e < 0)
        removal_retry(x, "release", NULL, e);
}

/* A live policy gets GKE_POLICY_FINALIZER (one an earlier version made
 * lacks it); a deleted one loses it once no PodSnapshot names it, so GKE's
 * finalizer on each of them still finds the storage through it whoever
 * deletes what first (the namespace controller deletes every object of a
 * namespace at once). Only once both caches have synced. */
static void policy_guard(struct gke_snapshots *g, const struct cache_entry *pe)
{
    const struct policy *p = pe->obj;
    if (!both_synced(g))
        return;
    if (p->deletion_ms) {
        if (p->guard < 0 || policy_snapshots(g, pe->ns, pe->name) > 0)
            return;
        char key[600];
        snprintf(key, sizeof(key), "release:%s", pe->key);
        if (strmap_get(&g->removals, key))
            return;
        struct removal *x = calloc(1, sizeof(*x));
        if (!x || !(x->key = strdup(key)) || !(x->ns = strdup(pe->ns)) ||
            !(x->name = strdup(pe->name)) || (pe->uid && !(x->uid = strdup(pe->uid))) ||
            strmap_put(&g->removals, x->key, x, NULL) < 0) {
            removal_free(x); /* the next event of the policy tries again */
            return;
        }
        x->g = g;
        x->policy = x->release = 1;
        x->why = "no PodSnapshot names it";
        x->due_ms = uv_now(g->loop);
        removals_schedule(g);
        return;
    }
    if (p->guard >= 0 || !p->resource_version)
        return;
    char patch[512];
    if (p->n_finalizers == 0)
        snprintf(patch, sizeof(patch),
                 "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"%s\"},"
                 "{\"op\":\"add\",\"path\":\"/metadata/finalizers\",\"value\":[\"%s\"]}]",
                 p->resource_version, GKE_POLICY_FINALIZER);
    else
        snprintf(patch, sizeof(patch),
                 "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"%s\"},"
                 "{\"op\":\"add\",\"path\":\"/metadata/finalizers/-\",\"value\":\"%s\"}]",
                 p->resource_version, GKE_POLICY_FINALIZER);
    /* 409/422: the policy changed meanwhile; its update looks again. */
    policy_patch_aside(g, pe, KUBE_PATCH_JSON, patch, "putting the finalizer on", 1);
}

static void removal_run(struct removal *x)
{
    const struct cache_entry *te =
        informer_get(x->policy ? x->g->policies : x->g->triggers, x->ns, x->name);
    if (!te || (x->uid && (!te->uid || strcmp(te->uid, x->uid) != 0))) {
        removal_drop(x); /* gone already, or a new one of the same name */
        return;
    }
    if (x->release) {
        release_run(x, te);
        return;
    }
    if (x->policy) {
        /* Still unneeded? A workspace of the same name may be back, or a
         * PodSnapshot may have appeared. */
        const struct policy *p = te->obj;
        struct gke_policy_facts f;
        if (!p->workspace || !policy_facts(x->g, x->ns, p->workspace, &f) ||
            gke_policy_fate(&f) != GKE_POLICY_DELETE) {
            removal_drop(x);
            return;
        }
    }
    if (!x->check) {
        removal_delete(x);
        return;
    }
    x->req = NULL;
    int e = kube_get(x->g->client, &snapshots, x->ns, x->check, on_snapshot_checked, x, &x->req);
    if (e < 0)
        removal_retry(x, "check", NULL, e);
}

static void on_removal_timer(uv_timer_t *timer)
{
    struct gke_snapshots *g = timer->data;
    uint64_t now = uv_now(g->loop);
    size_t n = 0, cap = strmap_len(&g->removals);
    struct removal **due = cap ? calloc(cap, sizeof(*due)) : NULL;
    if (cap && !due) {
        uv_timer_start(&g->timer, on_removal_timer, REMOVAL_RETRY_MIN_MS, 0);
        return;
    }
    void *v;
    for (size_t it = 0; strmap_next(&g->removals, &it, NULL, &v);) {
        struct removal *x = v;
        if (!x->req && x->due_ms <= now && n < cap)
            due[n++] = x;
    }
    /* A run may drop its own removal, never another one. */
    for (size_t i = 0; i < n; i++)
        removal_run(due[i]);
    free(due);
    removals_schedule(g);
}

/* Starts deleting the trigger te (after checking that the PodSnapshot
 * check is gone, when not NULL), from the loop; why is a static string for
 * the log. A removal already under way for it stays; a confirmed one
 * overrides a check. */
static void removal_add(struct gke_snapshots *g, const struct cache_entry *te, const char *check,
                        const char *why)
{
    int policy = informer_get(g->policies, te->ns, te->name) == te;
    char key[600];
    snprintf(key, sizeof(key), "%s%s", policy ? "policy:" : "", te->key);
    struct removal *x = strmap_get(&g->removals, key);
    if (x) {
        if (!check && x->check) {
            free(x->check); /* a check in flight then deletes whatever it hears */
            x->check = NULL;
            x->why = why;
        }
        return;
    }
    x = calloc(1, sizeof(*x));
    if (!x || !(x->key = strdup(key)) || !(x->ns = strdup(te->ns)) ||
        !(x->name = strdup(te->name)) || (te->uid && !(x->uid = strdup(te->uid))) ||
        (check && !(x->check = strdup(check))) || strmap_put(&g->removals, x->key, x, NULL) < 0) {
        /* Out of memory: the next sync or delete of the workspace finds it again. */
        removal_free(x);
        return;
    }
    x->g = g;
    x->policy = policy;
    x->why = why;
    x->due_ms = uv_now(g->loop);
    removals_schedule(g);
}

/* ---- a policy made with an owner reference loses it ---- */

/* A patch of a policy nobody waits for: its key and what it did, for the log. */
struct aside {
    char *key;
    const char *doing;
    int changed_ok; /* 409/422 (the policy changed meanwhile) is no failure */
};

static void on_aside_patched(void *data, struct kube_response *resp)
{
    struct aside *a = data;
    if (resp->status < 0 && !kube_response_not_found(resp) &&
        !(a->changed_ok && (resp->http_code == 409 || resp->http_code == 422)))
        log_warn("a snapshot policy patch failed; it is tried again when the policy changes or "
                 "the controller restarts",
                 "policy", a->key, "doing", a->doing, "error", kube_response_error_text(resp));
    free(a->key);
    free(a);
}

/* Sends patch to the policy pe and does not wait: a failure is logged, and
 * the policy's next change or the next start tries again. doing: static,
 * "<verb> ... a snapshot policy" for the log. */
static void policy_patch_aside(struct gke_snapshots *g, const struct cache_entry *pe,
                               enum kube_patch_type type, const char *patch, const char *doing,
                               int changed_ok)
{
    struct aside *a = calloc(1, sizeof(*a));
    if (!a || !(a->key = strdup(pe->key))) {
        free(a);
        return;
    }
    a->doing = doing;
    a->changed_ok = changed_ok;
    log_info("patching a snapshot policy", "policy", pe->key, "doing", doing);
    int e = kube_patch(g->client, &policies, pe->ns, pe->name, NULL, type, patch, on_aside_patched,
                       a, NULL);
    if (e < 0) {
        log_warn("cannot patch a snapshot policy", "policy", a->key, "doing", doing, "error",
                 log_errno_str(e));
        free(a->key);
        free(a);
    }
}

/* An earlier version made the policy owned by the Workspace: the garbage
 * collector would delete it with the Workspace, before GKE's finalizer has
 * freed the PodSnapshots' storage through it. */
static void policy_disown(struct gke_snapshots *g, const struct cache_entry *pe)
{
    static const char patch[] = "{\"metadata\":{\"ownerReferences\":null}}";
    policy_patch_aside(g, pe, KUBE_PATCH_MERGE, patch, "dropping the owner reference of", 0);
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
    strmap_init(&g->removals);
    strmap_init(&g->retiring);
    key_groups_init(&g->snapshots_by_trigger);
    key_groups_init(&g->snapshots_by_policy);
    key_groups_init(&g->triggers_by_workspace);
    if (ns && !(g->ns = strdup(ns))) {
        free(g);
        return -ENOMEM;
    }
    int r = uv_timer_init(loop, &g->timer);
    if (r < 0) {
        free(g->ns);
        free(g);
        return r;
    }
    g->timer.data = g;
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
        .handlers = {on_trigger, on_trigger_update, on_trigger_delete, on_synced, g},
    };
    struct informer_options so = {
        .resource = &snapshots,
        .ns = g->ns,
        .label_selector = GKE_TRIGGERED_BY_LABEL,
        .codec = &podsnapshot_codec,
        .handlers = {on_snapshot, on_snapshot_update, on_snapshot_delete, on_synced, g},
    };
    struct informer_options po = {
        .resource = &policies,
        .ns = g->ns,
        .label_selector = MANAGED_SELECTOR,
        .codec = &policy_codec,
        .handlers = {on_policy, on_policy_update, NULL, on_synced, g},
    };
    int r = informer_new(g->loop, g->client, &to, &g->triggers);
    if (r == 0)
        r = informer_new(g->loop, g->client, &so, &g->snapshots);
    if (r == 0)
        r = informer_new(g->loop, g->client, &po, &g->policies);
    if (r == 0)
        r = informer_start(g->triggers);
    if (r == 0)
        r = informer_start(g->snapshots);
    if (r == 0)
        r = informer_start(g->policies);
    if (r < 0) {
        informer_free(g->triggers);
        informer_free(g->snapshots);
        informer_free(g->policies);
        g->triggers = g->snapshots = g->policies = NULL;
        return r;
    }
    g->started = 1;
    log_info("watching GKE Pod Snapshots");
    return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
    struct gke_snapshots *g = h->data;
    free(g->ns);
    free(g);
}

void gke_snapshots_free(struct gke_snapshots *g)
{
    if (!g)
        return;
    informer_free(g->triggers);
    informer_free(g->snapshots);
    informer_free(g->policies);
    void *v;
    for (size_t it = 0; strmap_next(&g->removals, &it, NULL, &v);)
        removal_free(v);
    strmap_free(&g->removals);
    strmap_free(&g->retiring);
    key_groups_free(&g->snapshots_by_trigger);
    key_groups_free(&g->snapshots_by_policy);
    key_groups_free(&g->triggers_by_workspace);
    uv_timer_stop(&g->timer);
    uv_close((uv_handle_t *)&g->timer, on_timer_closed);
}
