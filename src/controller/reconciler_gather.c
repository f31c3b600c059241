#include "reconciler_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activity/url_template.h"
#include "util/log.h"
#include "workspace/class.h"
#include "workspace/ledger.h"
#include "workspace/pod.h"
#include "workspace/vocabulary.h"

struct taker_search {
    const struct reconciler *r;
    const struct workspace *ws;
    int64_t now;
    const struct workspace_pod *first;
};

static void pick_taker(void *data, const char *key)
{
    struct taker_search *t = data;
    const struct cache_entry *e = reconciler_keys_cached(t->r->pod_inf, key);
    if (e)
        t->first = ledger_taker_pick(t->ws, t->now, t->first, e->obj);
}

/* The pod that took the accelerator ws's last pause released, from the
 * controller's own pods on the node it left; NULL: none (yet), or nothing
 * to look for. */
static const struct workspace_pod *accelerator_taker(const struct reconciler *r,
                                                     const struct workspace *ws, int64_t now)
{
    struct taker_search t = {r, ws, now, NULL};
    if (ledger_awaits_taker(&ws->status, now))
        node_index_pods_on(&r->by_node, ws->status.last_pause->node_name, pick_taker, &t);
    return t.first;
}

/* The cached pods that carry key's label, at most PODS_SEEN_MAX of them
 * (controller/pods_seen.h picks those that matter). More is not the
 * controller's doing: it is said in the log once while it lasts. */
static void gather_pods(struct reconciler *r, const char *key, struct gathered *g)
{
    struct pod_keys *set = strmap_get(&r->pods_by_ws, key);
    pods_seen_init(&g->pods, g->ws->status.pod_name);
    for (size_t i = 0; set && i < set->n; i++) {
        const char *s = strchr(set->keys[i], '/');
        char *pns = s ? strndup(set->keys[i], (size_t)(s - set->keys[i])) : NULL;
        const struct cache_entry *pe = pns ? informer_get(r->pod_inf, pns, s + 1) : NULL;
        free(pns);
        if (pe)
            pods_seen_offer(&g->pods, pe->obj);
    }
    size_t left_out = pods_seen_left_out(&g->pods);
    if (set && left_out && !set->cut_logged)
        log_warn("more pods carry the workspace's label than a decision looks at; it looks at "
                 "the pod the status names and live pods first",
                 "workspace", key, "pods", LOG_INT(g->pods.n_offered), "looked_at",
                 LOG_INT(g->pods.n), "left_out", LOG_INT(left_out));
    if (set)
        set->cut_logged = left_out > 0;
}

/* How many nodes carry the snapshot's product, and how many of those run
 * its node's version. */
struct restore_node_count {
    const struct node_cache *nc;
    const char *label, *product, *version;
    struct decide_restore_nodes *out;
};

static void count_restore_node(void *data, const char *name)
{
    struct restore_node_count *c = data;
    const char *product = node_cache_label(c->nc, name, c->label);
    if (!product || strcmp(product, c->product) != 0)
        return;
    c->out->with_product++;
    const char *v = node_cache_version(c->nc, name);
    if (v && strcmp(v, c->version) == 0)
        c->out->matching++;
    else if (v && !c->out->seen)
        c->out->seen = v;
}

/* For a workspace paused with a Ready snapshot whose node version was
 * recorded: which nodes could restore it (a walk over the node cache,
 * only then: a resume is rare next to the passes of running workspaces). */
static void gather_restore_nodes(struct reconciler *r, struct gathered *g)
{
    const struct workspace_snapshot *sn = g->ws->status.snapshot;
    if (!g->cls->has_accelerator || (!g->ws->paused && g->ws->status.state != WS_STATE_PAUSED))
        return;
    if (!sn->node_version || !sn->gpu_product || !sn->phase || strcmp(sn->phase, "Ready") != 0 ||
        !node_cache_synced(r->nodes))
        return;
    g->restore_nodes = (struct decide_restore_nodes){0};
    struct restore_node_count c = {r->nodes, g->cls->product_label, sn->gpu_product,
                                   sn->node_version, &g->restore_nodes};
    node_cache_foreach(r->nodes, count_restore_node, &c);
    g->in.restore_nodes = &g->restore_nodes;
}

/* What the node cache knows of each pod's node: its accelerator product
 * (accelerator classes) and the labels a restore must match (classes whose
 * snapshot backend names some: GKE). */
static void gather_nodes(struct reconciler *r, const char *key, struct gathered *g)
{
    if (!g->cls || (!g->cls->has_accelerator && !snapshot_backend_node_labels(g->backend)))
        return;
    if (node_cache_start(r->nodes) < 0)
        log_warn("cannot watch Nodes", "workspace", key);
    for (size_t i = 0; i < g->pods.n; i++) {
        const char *n = g->pods.pods[i]->node_name;
        if (n)
            g->nodes[g->n_nodes++] = (struct decide_node){
                n,
                g->cls->has_accelerator ? node_cache_label(r->nodes, n, g->cls->product_label)
                                        : NULL,
                node_cache_label(r->nodes, n, MACHINE_FAMILY_LABEL),
                node_cache_label(r->nodes, n, MACHINE_TYPE_LABEL),
                node_cache_label(r->nodes, n, NODE_POOL_LABEL),
                node_cache_version(r->nodes, n),
                g->cls->has_accelerator ? node_cache_label(r->nodes, n, GPU_DRIVER_MAJOR_LABEL)
                                        : NULL,
                g->cls->has_accelerator ? node_cache_label(r->nodes, n, GPU_DRIVER_MINOR_LABEL)
                                        : NULL,
                g->cls->has_accelerator ? node_cache_label(r->nodes, n, GPU_DRIVER_REV_LABEL)
                                        : NULL};
    }
    gather_restore_nodes(r, g);
}

/* A class that sends its pods through Kueue: its Workloads are watched,
 * and the one of a pod Kueue holds back says why. */
static void gather_queue(struct reconciler *r, struct gathered *g, const char *key)
{
    if (!g->cls || !g->cls->queue.local_queue || !r->workloads)
        return;
    if (queue_workloads_start(r->workloads) < 0)
        log_warn("cannot watch Kueue's Workloads", "workspace", key);
    for (size_t i = 0; i < g->pods.n; i++) {
        const struct workspace_pod *p = g->pods.pods[i];
        if (!p->queue_gated || p->deletion_ms)
            continue;
        int seen = queue_workloads_view(r->workloads, p->uid, &g->queue);
        queue_positions_want(r->positions, p->ns, p->queue);
        seen |= queue_positions_get(r->positions, p->uid, &g->queue.position, &g->queue.pending);
        if (seen)
            g->in.queue = &g->queue;
        return;
    }
}

/* A pass that needs a backend started less than WINDOW ago, which cannot
 * say yet, looks again after BACKEND_FIRST_ANSWER_MS instead of deciding. */
#define BACKEND_FIRST_ANSWER_MS 300
#define BACKEND_FIRST_ANSWER_WINDOW_NS (10ull * 1000 * 1000 * 1000)

/* Whether a backend the pass asks (own, or every one when left) was started
 * moments ago (the first passes after a restart to need it): its first
 * lists may not have answered yet. */
static int backend_fresh(const struct reconciler *r, const struct snapshot_backend *own, int left)
{
    uint64_t now_ns = uv_hrtime();
    for (size_t k = 0; k < SNAPSHOT_BACKEND_KINDS; k++) {
        const struct snapshot_backend *b = r->snapshots[k];
        if (b && b->started && (b == own || left) &&
            now_ns - b->started_ns < BACKEND_FIRST_ANSWER_WINDOW_NS)
            return 1;
    }
    return 0;
}

/* Starts backend b for the workspace key's pass; a failure is said. */
static void start_backend(struct snapshot_backend *b, const char *key)
{
    if (snapshot_backend_start(b) < 0) {
        char msg[128];
        snprintf(msg, sizeof(msg), "cannot watch %s", snapshot_backend_name(b));
        log_warn(msg, "workspace", key);
    }
}

/* The snapshots of the workspace, and the backends told whether it still
 * lives. The class's backend is asked first; what a class no longer names
 * (it changed its backend or is gone) is still asked of every backend that
 * runs, so that a deleted workspace's snapshots go, and those a class left
 * behind, if their backend ever ran. */
static void gather_snapshots(struct reconciler *r, const char *key, struct gathered *g)
{
    const struct workspace *ws = g->ws;
    struct snapshot_backend *own = g->backend;
    /* A class that no longer takes snapshots (or is gone) may leave some
     * behind: the status names one a backend made, and retention removes
     * them once no pause needs them; or a pass that began this pause's
     * snapshot died before its status write, and the class changed before
     * the next pass. Which backend made it is not recorded, so each is
     * started: one that never ran cannot say, and one whose API is not
     * served says at once that it holds nothing. */
    int open = ws->status.pauses > ws->status.resumes || (ws->paused && g->pods.n > 0);
    int left = !own && (ws->status.snapshot->attempt || open);
    if (!own && !left && !ws->deletion_ms)
        return;
    if (own)
        start_backend(own, key);
    for (size_t k = 0; left && k < SNAPSHOT_BACKEND_KINDS; k++)
        if (r->snapshots[k])
            start_backend(r->snapshots[k], key);
    if (ws->status.snapshot->attempt) {
        snapshot_backends_view(r->snapshots, own, ws->ns, ws->status.snapshot->attempt,
                               &g->snap_view);
        g->in.snapshot = &g->snap_view;
    }
    /* A pass that began the pause's next attempt may have died before its
     * status write: the backend may hold it already. */
    if ((own || open) && workspace_snapshot_next_attempt(ws, g->next_attempt) == 1) {
        snapshot_backends_view(r->snapshots, own, ws->ns, g->next_attempt, &g->next_view);
        g->in.next_attempt = &g->next_view;
        /* Their first lists answer in a moment (or say they are not
         * served), and the pause is decided then, on what they hold,
         * rather than announced as waiting for them. Only in that window:
         * after it, decide() waits for them, bounded. */
        if (g->next_view.unknown && ws->paused && ws->status.state != WS_STATE_PAUSED &&
            backend_fresh(r, own, left))
            g->hold_ms = BACKEND_FIRST_ANSWER_MS;
    }
    g->in.n_snapshots = snapshot_backends_list(r->snapshots, own, ws->ns, ws->name, g->snap_list,
                                               g->snap_from, MAX_SNAPSHOTS_SEEN);
    const char *storage = NULL;
    if (snapshot_backends_storage(r->snapshots, own, ws->ns, ws->name, &storage) == 1)
        g->in.snapshot_storage = storage;
    /* Once no pod is left, no snapshot can still be taken of it (GKE: no
     * trigger can still be served). */
    if (ws->deletion_ms && g->pods.n == 0)
        snapshot_backends_workspace_deleted(r->snapshots, ws->ns, ws->name);
    else if (!ws->deletion_ms)
        snapshot_backends_workspace_live(r->snapshots, ws->ns, ws->name);
}

void reconciler_gather(struct reconciler *r, const char *key, const struct cache_entry *we,
                       struct gathered *g)
{
    const struct workspace *ws = we->obj;
    const struct cache_entry *ce =
        ws->class_name ? informer_get(r->class_inf, NULL, ws->class_name) : NULL;
    g->ws = ws;
    g->cls = ce ? ce->obj : NULL;
    g->backend = g->cls ? snapshot_backend_of(r->snapshots, g->cls->snapshot.backend) : NULL;
    gather_pods(r, key, g);
    char *claim = workspace_home_claim_name(ws);
    const struct cache_entry *pvce = claim ? informer_get(r->pvc_inf, ws->ns, claim) : NULL;
    free(claim);
    gather_nodes(r, key, g);
    gather_snapshots(r, key, g);
    int64_t now = r->now_ms(r->now_data);
    struct decide_input *in = &g->in;
    in->ws = ws;
    in->cls = g->cls;
    in->class_error = ce && !ce->obj ? ce->error : NULL;
    in->pods = g->pods.pods;
    in->n_pods = g->pods.n;
    in->pvc = pvce ? pvce->obj : NULL;
    in->now_ms = now;
    in->activity = activity_tracker_observation(r->activity, key);
    in->zone = g->cls && g->cls->idle.schedule.n_windows
                   ? activity_tracker_zone(r->activity, g->cls->idle.time_zone)
                   : NULL;
    in->snapshots = g->snap_list;
    in->accelerator_taker = accelerator_taker(r, ws, now);
    in->pause_node_absent =
        ledger_awaits_node_removal(&ws->status, now) &&
        node_cache_lookup(r->nodes, ws->status.last_pause->node_name) == NODE_ABSENT;
    in->nodes = g->nodes;
    in->n_nodes = g->n_nodes;
    in->gone_pod = strmap_get(&r->gone_pods, key);
    in->pod_node_absent =
        ws->status.node_name && node_cache_lookup(r->nodes, ws->status.node_name) == NODE_ABSENT;
    in->restore_check = activity_tracker_restore_check(r->activity, key);
    gather_queue(r, g, key);
    in->app_checkpoint = app_checkpoints_seen(r->checkpoints, key);
    if (ws->prewarm && g->cls && g->cls->prewarm.enabled) {
        in->prewarm_zone = activity_tracker_zone(r->activity, ws->prewarm->time_zone);
        in->prewarm_zone_error = activity_tracker_zone_error(r->activity, ws->prewarm->time_zone);
    }
    if (ws->class_name)
        in->class_prewarms_starting = prewarm_turns_starting(&r->turns, ws->class_name, key);
    if (g->cls && g->cls->has_accelerator) {
        char accel[PREWARM_ACCELERATOR_SIZE];
        prewarm_turns_accelerator(g->cls->accelerator_resource, g->cls->product, accel);
        in->person_waiting = prewarm_turns_person_waiting(&r->turns, accel);
    }
}

/* The pod of g named name, NULL: none; live_only skips pods being deleted. */
static const struct workspace_pod *gathered_pod(const struct gathered *g, const char *name,
                                                int live_only)
{
    const struct workspace_pod *found = NULL;
    for (size_t i = 0; i < g->pods.n && name; i++)
        if (strcmp(g->pods.pods[i]->name, name) == 0 &&
            (!live_only || !g->pods.pods[i]->deletion_ms))
            found = g->pods.pods[i];
    return found;
}

/* The AppCheckpoint action i's URL (j->urls[i]) or why there is none
 * (j->errs[i]). Returns 0 or -ENOMEM. */
static int build_checkpoint_url(struct job *j, size_t i, const struct gathered *g)
{
    const struct workspace_class *cls = g->cls;
    const struct workspace_pod *pod = gathered_pod(g, j->out.status.pod_name, 0);
    struct template_vars vars = {pod ? pod->pod_ip : NULL, cls->port, g->ws->ns, g->ws->name,
                                 pod ? pod->name : NULL};
    int e = pod ? url_template_expand(cls->checkpoint_request.url_template, &vars, &j->urls[i],
                                      &j->errs[i])
                : -ENOENT;
    if (e == -ENOMEM)
        return e;
    if (e == -EAGAIN || e == -ENOENT)
        j->errs[i] = strdup(e == -EAGAIN ? "the pod has no IP yet" : "the pod is gone");
    return 0;
}

/* The uid precondition of DELETE_POD action i: the pod's uid as cached. A
 * pod the cache does not know is deleted by name alone, as before; one it
 * knows never loses its precondition. Returns 0 or -ENOMEM. */
static int build_delete_uid(struct job *j, size_t i, const struct gathered *g)
{
    const struct action *a = &j->out.actions[i];
    for (size_t k = 0; k < g->pods.n; k++)
        if (strcmp(g->pods.pods[k]->name, a->name) == 0 && g->pods.pods[k]->uid) {
            free(j->pod_uids[i]);
            if (!(j->pod_uids[i] = strdup(g->pods.pods[k]->uid)))
                return -ENOMEM;
        }
    return 0;
}

/* SnapshotBegin action i: the class's backend and the objects it makes
 * (j->bodies[i], NULL when out of memory). Returns 0, or -EINVAL when the
 * class has no backend (decide() asks for none then). */
static int build_snapshot_begin(struct job *j, size_t i, const struct gathered *g)
{
    const struct action *a = &j->out.actions[i];
    if (!(j->backends[i] = g->backend))
        return -EINVAL;
    j->bodies[i] =
        snapshot_backend_begin_bodies(g->backend, g->ws, g->cls, a->name, j->out.status.pod_name,
                                      a->group, gathered_pod(g, j->out.status.pod_name, 0));
    return 0;
}

/* The backend that listed the snapshot named name (the one that deletes
 * it), else the class's; NULL: none. */
static struct snapshot_backend *snapshot_holder(const struct gathered *g, const char *name)
{
    for (size_t k = 0; k < g->in.n_snapshots && name; k++)
        if (g->snap_list[k].name && strcmp(g->snap_list[k].name, name) == 0)
            return g->snap_from[k];
    return g->backend;
}

/* Builds every action's body now: the cache entries may change before the
 * calls run, and picks the backend of each snapshot action. Returns 0,
 * -ENOMEM, or -EINVAL for a snapshot action no backend can carry out
 * (nothing is sent then). */
static int build_bodies(struct job *j, const struct gathered *g)
{
    const struct workspace *ws = g->ws;
    for (size_t i = 0; i < j->out.n_actions; i++) {
        const struct action *a = &j->out.actions[i];
        int e = 0;
        if (a->type == ACTION_CREATE_PVC)
            j->bodies[i] = workspace_pvc_build(ws, g->cls);
        else if (a->type == ACTION_CREATE_POD)
            j->bodies[i] = workspace_pod_build_with(
                ws, g->cls,
                &(struct pod_build){
                    .name = a->name,
                    .from_checkpoint = a->from_checkpoint,
                    .snapshot = a->snapshot,
                    .product = a->product,
                    .capacity_fallback = a->capacity_fallback,
                    .group = a->group,
                    .machine_type = a->machine_type,
                    .gpu_driver = a->gpu_driver,
                    .node_pool = a->node_pool,
                    .image = a->image,
                    .pull_secret = a->image && g->cls ? g->cls->snapshot.pull_secret_name : NULL,
                    .prewarm = a->prewarm});
        else if (a->type == ACTION_SNAPSHOT_BEGIN)
            e = build_snapshot_begin(j, i, g);
        else if (a->type == ACTION_SNAPSHOT_DELETE)
            e = (j->backends[i] = snapshot_holder(g, a->name)) ? 0 : -EINVAL;
        else if (a->type == ACTION_APP_CHECKPOINT && g->cls)
            e = build_checkpoint_url(j, i, g);
        else if (a->type == ACTION_DELETE_POD || a->type == ACTION_RAISE_PRIORITY)
            e = build_delete_uid(j, i, g);
        if (e == 0 &&
            (a->type == ACTION_CREATE_PVC || a->type == ACTION_CREATE_POD ||
             a->type == ACTION_SNAPSHOT_BEGIN) &&
            !j->bodies[i])
            e = -ENOMEM;
        if (e < 0)
            return e;
    }
    return 0;
}

/* Decides on g into j->out, keeps what the job needs of the Workspace as
 * read, and tells the activity tracker what to watch. Returns 0 or -ENOMEM. */
static int decide(struct job *j, const struct gathered *g)
{
    struct reconciler *r = j->r;
    const struct workspace *ws = g->ws;
    if (!j->name || !j->uid || !j->rv)
        return -ENOMEM;
    int e = workspace_decide(&g->in, &j->out);
    if (e < 0)
        return e;
    j->generation = ws->generation;
    int acts = 0;
    for (size_t i = 0; i < j->out.n_actions; i++)
        acts |= j->out.actions[i].type != ACTION_EVENT;
    if (acts && (!(j->read = calloc(1, sizeof(*j->read))) ||
                 workspace_status_copy(&ws->status, j->read) < 0))
        return -ENOMEM;
    const struct condition *turn = workspace_status_condition(&j->out.status, WS_COND_PRE_WARM);
    int due = turn && ws->class_name && strcmp(turn->reason, WS_REASON_WAITING_FOR_TURN) == 0;
    char accel[PREWARM_ACCELERATOR_SIZE] = "";
    if (g->cls && g->cls->has_accelerator)
        prewarm_turns_accelerator(g->cls->accelerator_resource, g->cls->product, accel);
    if (prewarm_turns_due(&r->turns, j->key, ws->class_name, accel, due) < 0)
        log_warn("pre-warm not queued for its turn; it looks again later", "workspace", j->key,
                 "error", log_errno_str(-ENOMEM));
    workspace_outcome_diff(&ws->status, &j->out.status, g->in.now_ms, &j->outcome);
    if (workspace_outcome_any(&j->outcome) && ws->class_name)
        j->class_name = strdup(ws->class_name);
    /* The record of what its use was: only where use can be seen. */
    const struct workspace_class *cls = g->cls;
    if (cls && !ws->deletion_ms &&
        (cls->activity.application != ACTIVITY_APP_NONE || cls->activity.prometheus_url)) {
        int64_t activity_ms = 0;
        char state =
            activity_log_state(&j->out.status, g->in.activity, cls->idle.gpu_threshold_percent,
                               g->in.now_ms, cls->activity.interval_ms, &activity_ms);
        activity_log_note(r->records, j->key, ws, g->in.now_ms, state, activity_ms);
    }
    const struct workspace_pod *current = gathered_pod(g, j->out.status.pod_name, 1);
    if (j->out.restore_check_wanted)
        activity_tracker_check_restore(r->activity, j->key, ws, g->cls, current, j->out.probe_now);
    else
        activity_tracker_update(r->activity, j->key, ws, g->cls, current, j->out.probe_wanted,
                                j->out.probe_now);
    return 0;
}

int reconciler_gather_decide(struct job *j, const struct gathered *g)
{
    int e = decide(j, g);
    if (e == 0)
        e = build_bodies(j, g);
    return e;
}
