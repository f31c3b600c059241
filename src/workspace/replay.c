#include "workspace/replay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "activity/record.h"
#include "util/tz.h"
#include "workspace/decide.h"

#define NAME_SIZE 128
#define MAX_PODS 4
#define MAX_SNAPSHOTS 8
/* A week at a step a second would be 604,800; no policy needs more than
 * this, and a rule that never settles must not run forever. */
#define MAX_STEPS 5000000
/* Unless the input says: the watch event that follows the controller's own
 * write comes this much later (tens of milliseconds on the local cluster),
 * and a deleted pod is gone this much later. */
#define STEP_MS 100
#define STOP_MS 1000

/* A slot for a pod; the pod's strings point into it, so it never moves. */
struct sim_pod {
    int live;
    struct workspace_pod pod;
    char name[NAME_SIZE], uid[NAME_SIZE], snapshot[NAME_SIZE], group[NAME_SIZE];
    int64_t ready_at_ms;
};

struct sim_snapshot {
    char attempt[NAME_SIZE], name[NAME_SIZE], group[NAME_SIZE];
    int64_t ready_at_ms;
};

struct world {
    const struct replay_input *in;
    struct workspace *ws;
    struct workspace_pvc pvc;
    struct sim_pod pods[MAX_PODS];
    struct sim_snapshot snaps[MAX_SNAPSHOTS];
    size_t n_snaps;
    int64_t now;
    int64_t uids;

    struct activity_observation obs;
    int has_obs;
    int64_t next_probe_ms; /* 0: no rounds (no ready pod) */

    char checkpoint_attempt[NAME_SIZE];
    struct app_checkpoint_seen checkpoint;
    int has_checkpoint;

    enum workspace_state state;
    int64_t pause_done_ms;   /* the last completed pause */
    int64_t resume_asked_ms; /* a person asked; 0: nobody waits */
    int64_t snapshot_ms;     /* spent snapshotting, every snapshot begun */
    int64_t restore_ms;      /* spent starting pods, every pod that became ready */
    int person_here;         /* a person was at the notebook at the last step */
    int64_t person_left_ms;  /* when the last person left; 0: nobody came yet */
};

static unsigned use_at(const struct replay_input *in, int64_t t)
{
    unsigned use = 0;
    for (size_t i = 0; i < in->n_spans; i++)
        if (in->spans[i].start_ms <= t && t < in->spans[i].end_ms)
            use |= in->spans[i].use;
    return use;
}

/* The latest moment at or before t inside a span of use, 0: none. */
static int64_t last_use_before(const struct replay_input *in, int64_t t, unsigned use)
{
    int64_t last = 0;
    for (size_t i = 0; i < in->n_spans; i++) {
        const struct replay_span *s = &in->spans[i];
        if (!(s->use & use) || s->start_ms > t)
            continue;
        int64_t at = t < s->end_ms ? t : s->end_ms;
        if (at > last)
            last = at;
    }
    return last;
}

/* The next span boundary after t, or INT64_MAX. */
static int64_t next_boundary(const struct replay_input *in, int64_t t)
{
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < in->n_spans; i++) {
        if (in->spans[i].start_ms > t && in->spans[i].start_ms < next)
            next = in->spans[i].start_ms;
        if (in->spans[i].end_ms > t && in->spans[i].end_ms < next)
            next = in->spans[i].end_ms;
    }
    return next;
}

static int64_t step_ms(const struct world *w)
{
    return w->in->times.step_ms > 0 ? w->in->times.step_ms : STEP_MS;
}

static int64_t stop_ms(const struct world *w)
{
    return w->in->times.stop_ms > 0 ? w->in->times.stop_ms : STOP_MS;
}

static int world_init(struct world *w, const struct replay_input *in)
{
    *w = (struct world){.in = in, .now = in->start_ms};
    cJSON *obj = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(obj, "metadata");
    cJSON *spec = cJSON_AddObjectToObject(obj, "spec");
    cJSON *fin = meta ? cJSON_AddArrayToObject(meta, "finalizers") : NULL;
    int ok = fin && spec && cJSON_AddStringToObject(meta, "name", "replay") &&
             cJSON_AddStringToObject(meta, "namespace", "replay") &&
             cJSON_AddStringToObject(meta, "uid", "replay-uid") &&
             cJSON_AddNumberToObject(meta, "generation", 1) &&
             cJSON_AddItemToArray(fin, cJSON_CreateString(WORKSPACE_FINALIZER)) &&
             cJSON_AddStringToObject(spec, "className", in->cls->name);
    int r = -ENOMEM;
    if (ok)
        r = workspace_decode(obj, &w->ws, NULL) < 0 ? -ENOMEM : 0;
    cJSON_Delete(obj);
    if (r < 0)
        return r;
    w->ws->idle_after_ms = in->idle_after_ms;
    w->ws->created_ms = in->start_ms;
    w->ws->paused = in->start_paused;
    if (in->prewarm) {
        struct workspace_prewarm *p = malloc(sizeof(*p));
        if (!p ||
            !(p->time_zone = strdup(in->prewarm->time_zone ? in->prewarm->time_zone : "UTC"))) {
            free(p);
            workspace_free(w->ws);
            return -ENOMEM;
        }
        p->days = in->prewarm->days;
        p->minute = in->prewarm->minute;
        w->ws->prewarm = p;
    }
    /* The home claim exists and is bound: a replay starts with a
     * workspace that has run before. */
    w->pvc = (struct workspace_pvc){.ns = "replay",
                                    .name = "replay-home",
                                    .uid = "replay-home-uid",
                                    .phase = "Bound",
                                    .created_ms = in->start_ms};
    return 0;
}

static struct sim_pod *find_pod(struct world *w, const char *name)
{
    for (size_t i = 0; i < MAX_PODS; i++)
        if (w->pods[i].live && strcmp(w->pods[i].name, name) == 0)
            return &w->pods[i];
    return NULL;
}

static void add_pod(struct world *w, const struct action *a)
{
    if (find_pod(w, a->name))
        return; /* AlreadyExists */
    struct sim_pod *s = NULL;
    for (size_t i = 0; i < MAX_PODS && !s; i++)
        if (!w->pods[i].live)
            s = &w->pods[i];
    if (!s)
        return;
    *s = (struct sim_pod){.live = 1};
    snprintf(s->name, sizeof(s->name), "%s", a->name);
    snprintf(s->uid, sizeof(s->uid), "uid-%lld", (long long)++w->uids);
    if (a->snapshot)
        snprintf(s->snapshot, sizeof(s->snapshot), "%s", a->snapshot);
    if (a->group)
        snprintf(s->group, sizeof(s->group), "%s", a->group);
    const struct workspace_class *c = w->in->cls;
    s->ready_at_ms = w->now + (a->snapshot ? w->in->times.restore_ms : w->in->times.cold_start_ms);
    /* The pod of a workspace that was running when the replay begins. */
    if (w->in->start_ready && !w->in->start_paused && w->uids == 1)
        s->ready_at_ms = w->now;
    s->pod = (struct workspace_pod){
        .ns = "replay",
        .name = s->name,
        .uid = s->uid,
        .workspace = "replay",
        .node_name = "replay-node",
        .phase = "Pending",
        .created_ms = w->now,
        .scheduled = 1,
        .scheduled_ms = w->now,
        .restore_from_checkpoint = a->from_checkpoint,
        .snapshot = a->snapshot ? s->snapshot : NULL,
        .group = a->group ? s->group : NULL,
        .capacity_fallback = a->capacity_fallback,
    };
    if (c->has_accelerator)
        s->pod.extended[0] = c->accelerator_resource;
}

/* Pods reach their ready time; deleted ones are gone. */
static void advance_pods(struct world *w)
{
    for (size_t i = 0; i < MAX_PODS; i++) {
        struct sim_pod *s = &w->pods[i];
        if (!s->live)
            continue;
        if (s->pod.deletion_ms && w->now >= s->pod.deletion_ms + stop_ms(w)) {
            s->live = 0;
            continue;
        }
        if (!s->pod.ready && !s->pod.deletion_ms && w->now >= s->ready_at_ms) {
            w->restore_ms += s->ready_at_ms - s->pod.created_ms;
            s->pod.ready = 1;
            s->pod.ready_ms = s->ready_at_ms;
            s->pod.phase = "Running";
            if (s->pod.snapshot) {
                s->pod.restored = 1;
                s->pod.restored_ms = s->ready_at_ms;
            }
        }
    }
}

static struct sim_snapshot *find_snapshot(struct world *w, const char *attempt)
{
    for (size_t i = 0; i < w->n_snaps; i++)
        if (strcmp(w->snaps[i].attempt, attempt) == 0)
            return &w->snaps[i];
    return NULL;
}

static void begin_snapshot(struct world *w, const struct action *a)
{
    if (find_snapshot(w, a->name))
        return;
    if (w->n_snaps == MAX_SNAPSHOTS) /* the oldest goes, as retention would */
        memmove(w->snaps, w->snaps + 1, --w->n_snaps * sizeof(w->snaps[0]));
    struct sim_snapshot *s = &w->snaps[w->n_snaps++];
    *s = (struct sim_snapshot){.ready_at_ms = w->now + w->in->times.snapshot_ms};
    w->snapshot_ms += w->in->times.snapshot_ms;
    snprintf(s->attempt, sizeof(s->attempt), "%s", a->name);
    snprintf(s->name, sizeof(s->name), "snapshot-%s", a->name);
    if (a->group)
        snprintf(s->group, sizeof(s->group), "%s", a->group);
}

static void delete_snapshot(struct world *w, const char *name)
{
    for (size_t i = 0; i < w->n_snaps; i++)
        if (strcmp(w->snaps[i].name, name) == 0 || strcmp(w->snaps[i].attempt, name) == 0) {
            memmove(&w->snaps[i], &w->snaps[i + 1], (w->n_snaps - i - 1) * sizeof(w->snaps[0]));
            w->n_snaps--;
            return;
        }
}

static void view_of(const struct world *w, const struct sim_snapshot *s, struct snapshot_view *v)
{
    int ready = w->now >= s->ready_at_ms;
    *v = (struct snapshot_view){
        .attempt = s->attempt,
        .phase = ready ? SNAPSHOT_PHASE_READY : SNAPSHOT_PHASE_IN_PROGRESS,
        .name = ready ? s->name : NULL,
        .ready_ms = ready ? s->ready_at_ms : 0,
        .group = s->group[0] ? s->group : NULL,
    };
}

/* A probe round at now, as the class's sources would answer it. */
static void probe_round(struct world *w)
{
    const struct activity_config *a = &w->in->cls->activity;
    unsigned use = use_at(w->in, w->now);
    struct probe_result r;
    probe_result_init(&r, a->application == ACTIVITY_APP_CODE_SERVER ? "code-server" : "jupyter");
    if (a->application != ACTIVITY_APP_NONE) {
        r.busy = (use & REPLAY_KERNEL) != 0;
        r.connections = (use & REPLAY_PERSON) != 0;
        r.last_activity_ms = last_use_before(w->in, w->now, REPLAY_PERSON);
    }
    if (a->prometheus_url) {
        struct probe_result gpu;
        probe_result_init(&gpu, "gpu");
        gpu.gpu_utilisation = (use & REPLAY_GPU) ? 100.0 : 0.0;
        if (a->application != ACTIVITY_APP_NONE)
            probe_result_merge(&r, &gpu);
        else
            r = gpu;
    }
    if (use & REPLAY_UNANSWERED)
        probe_result_fail(&r, r.source, "no answer");
    int gpu_busy = r.ok && a->prometheus_url && (use & REPLAY_GPU);
    int kernel_busy = r.ok && a->application != ACTIVITY_APP_NONE && (use & REPLAY_KERNEL);
    w->obs.probed_at_ms = w->now;
    w->obs.result = r;
    if (gpu_busy || kernel_busy) {
        w->obs.last_work_ms = w->now;
        w->obs.work_on_gpu = gpu_busy;
    }
    w->has_obs = 1;
}

static const struct sim_pod *ready_pod(const struct world *w)
{
    for (size_t i = 0; i < MAX_PODS; i++)
        if (w->pods[i].live && w->pods[i].pod.ready && !w->pods[i].pod.deletion_ms)
            return &w->pods[i];
    return NULL;
}

/* The status as the controller reads it back: through its JSON, whole
 * seconds and all. Takes out's status. */
static int write_status(struct world *w, struct decide_output *out)
{
    cJSON *obj = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(obj, "metadata");
    cJSON *spec = cJSON_AddObjectToObject(obj, "spec");
    cJSON *status = workspace_status_to_json(&out->status);
    if (!status || !meta || !spec || !cJSON_AddStringToObject(meta, "name", "replay") ||
        !cJSON_AddStringToObject(spec, "className", w->in->cls->name)) {
        cJSON_Delete(status);
        cJSON_Delete(obj);
        return -ENOMEM;
    }
    cJSON_AddItemToObject(obj, "status", status);
    struct workspace *back = NULL;
    int r = workspace_decode(obj, &back, NULL);
    cJSON_Delete(obj);
    if (r < 0)
        return -ENOMEM;
    workspace_status_clear(&w->ws->status);
    w->ws->status = back->status;
    workspace_status_init(&back->status);
    workspace_free(back);
    return 0;
}

static void apply(struct world *w, const struct decide_output *o)
{
    for (size_t i = 0; i < o->n_actions; i++) {
        const struct action *a = &o->actions[i];
        struct sim_pod *p;
        switch (a->type) {
        case ACTION_ADD_FINALIZER:
            w->ws->has_finalizer = 1;
            break;
        case ACTION_CREATE_POD:
            add_pod(w, a);
            break;
        case ACTION_DELETE_POD:
            p = find_pod(w, a->name);
            if (p && !p->pod.deletion_ms)
                p->pod.deletion_ms = w->now;
            break;
        case ACTION_AUTO_PAUSE:
            w->ws->paused = 1;
            w->ws->auto_paused_ms = a->time_ms;
            w->ws->generation++;
            break;
        case ACTION_AUTO_RESUME:
            w->ws->paused = 0;
            w->ws->prewarmed_ms = a->time_ms;
            w->ws->prewarm_for_ms = a->for_ms;
            w->ws->generation++;
            break;
        case ACTION_SNAPSHOT_BEGIN:
            begin_snapshot(w, a);
            break;
        case ACTION_SNAPSHOT_DELETE:
            delete_snapshot(w, a->name);
            break;
        case ACTION_RAISE_PRIORITY:
            break; /* no queue in a replay */
        case ACTION_APP_CHECKPOINT:
            /* The application writes its checkpoint at once. */
            snprintf(w->checkpoint_attempt, sizeof(w->checkpoint_attempt), "%s", a->name);
            w->checkpoint = (struct app_checkpoint_seen){.attempt = w->checkpoint_attempt,
                                                         .answered = 1,
                                                         .written = 1,
                                                         .answered_ms = w->now};
            w->has_checkpoint = 1;
            break;
        case ACTION_CREATE_PVC:
        case ACTION_DELETE_PVC:
        case ACTION_RELEASE_PVC:
        case ACTION_REMOVE_FINALIZER:
        case ACTION_EVENT:
            break;
        }
    }
}

/* One decision at w->now on what the world shows into *o (the caller
 * clears it); its actions applied and its status written. */
static int decide_once(struct world *w, struct replay_result *res, struct decide_output *o)
{
    const struct workspace_pod *pods[MAX_PODS];
    size_t n_pods = 0;
    for (size_t i = 0; i < MAX_PODS; i++)
        if (w->pods[i].live)
            pods[n_pods++] = &w->pods[i].pod;
    const struct workspace_class *c = w->in->cls;
    struct decide_node node = {.name = "replay-node", .product = c->product};
    struct snapshot_view view, list[MAX_SNAPSHOTS];
    const struct sim_snapshot *current =
        w->ws->status.snapshot->attempt ? find_snapshot(w, w->ws->status.snapshot->attempt) : NULL;
    if (current)
        view_of(w, current, &view);
    size_t n_list = 0;
    for (size_t i = 0; i < w->n_snaps; i++)
        if (w->now >= w->snaps[i].ready_at_ms)
            view_of(w, &w->snaps[i], &list[n_list++]);
    const struct sim_pod *ready = ready_pod(w);
    struct restore_check rc = {0};
    if (ready)
        rc = (struct restore_check){
            .pod = ready->name, .answered_ms = ready->pod.ready_ms, .last_round_ms = w->now};
    struct decide_input in = {
        .ws = w->ws,
        .cls = c,
        .pods = pods,
        .n_pods = n_pods,
        .pvc = &w->pvc,
        .now_ms = w->now,
        .activity = w->has_obs ? &w->obs : NULL,
        .zone = w->in->zone ? w->in->zone : tz_utc(),
        .snapshot = current ? &view : NULL,
        .snapshots = list,
        .n_snapshots = n_list,
        .nodes = &node,
        .n_nodes = 1,
        .restore_check = ready && ready->pod.snapshot ? &rc : NULL,
        .app_checkpoint = w->has_checkpoint ? &w->checkpoint : NULL,
        .prewarm_zone = w->in->prewarm_zone ? w->in->prewarm_zone : tz_utc(),
    };
    int r = workspace_decide(&in, o);
    if (r < 0)
        return r;
    res->steps++;
    unsigned use = use_at(w->in, w->now);
    for (size_t i = 0; i < o->n_actions; i++)
        if (o->actions[i].type == ACTION_AUTO_PAUSE && (use & (REPLAY_KERNEL | REPLAY_GPU)))
            res->busy_pauses++;
    apply(w, o);
    if (o->status_changed && write_status(w, o) < 0) {
        decide_output_clear(o);
        return -ENOMEM;
    }
    return 0;
}

/* What happened between the last look and now, counted. */
static void account(struct world *w, struct replay_result *res, int64_t from, int64_t to)
{
    if (to <= from)
        return;
    double s = (double)(to - from) / 1000.0;
    unsigned use = use_at(w->in, from) & ~(unsigned)REPLAY_UNANSWERED;
    int held = 0;
    for (size_t i = 0; i < MAX_PODS; i++)
        held |= w->pods[i].live && w->pods[i].pod.scheduled;
    int count = w->in->cls->has_accelerator ? w->in->cls->accelerator_count : 0;
    if (use)
        res->in_use_s += s;
    if (held) {
        res->held_s += s * count;
        if (use)
            res->held_in_use_s += s * count;
    }
}

/* The workspace's state changed to now's: count pauses and resumes. */
static void notice_state(struct world *w, struct replay_result *res)
{
    enum workspace_state st = w->ws->status.state;
    /* A workspace that starts paused has nothing to count. */
    if (st == WS_STATE_PAUSED && w->state != WS_STATE_PAUSED && w->state != WS_STATE_NONE) {
        if (res->pauses < REPLAY_PAUSE_TIMES)
            res->pause_requested_ms[res->pauses] = w->ws->status.last_pause->requested_ms;
        res->pauses++;
        const char *reason = w->ws->status.last_pause->reason;
        if (reason && strcmp(reason, "IdleTimeout") == 0)
            res->idle_pauses++;
        w->pause_done_ms = w->now;
    }
    w->state = st;
    const struct sim_pod *ready = ready_pod(w);
    if (w->resume_asked_ms && ready && st == WS_STATE_RUNNING) {
        res->waited_s += (double)(w->now - w->resume_asked_ms) / 1000.0;
        w->resume_asked_ms = 0;
    }
}

/* A person at the notebook who finds it paused resumes it. One who comes
 * after long away counts as the day's first, ready or not. */
static void person_arrives(struct world *w, struct replay_result *res)
{
    int here = (use_at(w->in, w->now) & REPLAY_PERSON) != 0;
    if (here && !w->person_here &&
        (!w->person_left_ms || w->now - w->person_left_ms >= REPLAY_FIRST_ARRIVAL_GAP_MS)) {
        res->first_arrivals++;
        if (!w->ws->paused && ready_pod(w) && w->ws->status.state == WS_STATE_RUNNING)
            res->first_arrivals_ready++;
    }
    if (!here && w->person_here)
        w->person_left_ms = w->now;
    w->person_here = here;
    if (!w->ws->paused || !here)
        return;
    w->ws->paused = 0;
    w->ws->auto_paused_ms = 0;
    w->ws->generation++;
    res->person_resumes++;
    if (w->pause_done_ms && w->now - w->pause_done_ms <= REPLAY_INTERRUPTION_MS)
        res->interruptions++;
    w->resume_asked_ms = w->now;
}

int replay_run(const struct replay_input *in, struct replay_result *out)
{
    *out = (struct replay_result){0};
    if (!in->cls || in->end_ms <= in->start_ms)
        return -EINVAL;
    for (size_t i = 0; i < in->n_spans; i++)
        if (in->spans[i].end_ms < in->spans[i].start_ms)
            return -EINVAL;
    struct world w;
    int r = world_init(&w, in);
    if (r < 0)
        return r;
    out->window_s = (double)(in->end_ms - in->start_ms) / 1000.0;
    int64_t probe_interval =
        in->cls->activity.interval_ms > 0 ? in->cls->activity.interval_ms : 60 * 1000;
    int has_sources =
        in->cls->activity.application != ACTIVITY_APP_NONE || in->cls->activity.prometheus_url;
    int64_t last = w.now;
    while (w.now < in->end_ms && r == 0) {
        if (out->steps >= MAX_STEPS) {
            r = -ELOOP;
            break;
        }
        account(&w, out, last, w.now);
        last = w.now;
        advance_pods(&w);
        person_arrives(&w, out);
        const struct sim_pod *ready = ready_pod(&w);
        if (!ready || !has_sources) {
            w.next_probe_ms = 0;
            w.has_obs = 0;
        } else if (!w.next_probe_ms || w.now >= w.next_probe_ms) {
            probe_round(&w);
            w.next_probe_ms = w.now + probe_interval;
        }
        struct decide_output o;
        r = decide_once(&w, out, &o);
        if (r == 0 && o.probe_now && ready && has_sources) {
            /* A pause is due: the controller probes once more first. */
            probe_round(&w);
            w.next_probe_ms = w.now + probe_interval;
            decide_output_clear(&o);
            r = decide_once(&w, out, &o);
        }
        if (r < 0)
            break;
        notice_state(&w, out);
        int64_t next = in->end_ms;
        if (o.requeue_after_ms > 0 && w.now + o.requeue_after_ms < next)
            next = w.now + o.requeue_after_ms;
        if ((o.status_changed || o.n_actions) && w.now + step_ms(&w) < next)
            next = w.now + step_ms(&w);
        decide_output_clear(&o);
        for (size_t i = 0; i < MAX_PODS; i++) {
            const struct sim_pod *p = &w.pods[i];
            if (!p->live)
                continue;
            int64_t t = p->pod.deletion_ms ? p->pod.deletion_ms + stop_ms(&w)
                        : p->pod.ready     ? INT64_MAX
                                           : p->ready_at_ms;
            if (t > w.now && t < next)
                next = t;
        }
        for (size_t i = 0; i < w.n_snaps; i++)
            if (w.snaps[i].ready_at_ms > w.now && w.snaps[i].ready_at_ms < next)
                next = w.snaps[i].ready_at_ms;
        if (w.next_probe_ms > w.now && w.next_probe_ms < next)
            next = w.next_probe_ms;
        int64_t b = next_boundary(in, w.now);
        if (b < next)
            next = b;
        w.now = next > w.now ? next : w.now + 1;
    }
    if (r == 0) {
        account(&w, out, last, in->end_ms);
        int count = in->cls->has_accelerator ? in->cls->accelerator_count : 0;
        out->returned_s = out->window_s * count - out->held_s;
        out->snapshot_s = (double)w.snapshot_ms / 1000.0;
        out->restore_s = (double)w.restore_ms / 1000.0;
        const struct workspace_prewarm_status *pw = w.ws->status.prewarm;
        out->prewarms = pw->count;
        out->prewarms_used = pw->used;
        out->prewarms_unused = pw->unused;
        out->prewarms_yielded = pw->yielded;
    }
    workspace_free(w.ws);
    return r;
}

static unsigned use_of(char state)
{
    switch (state) {
    case 'a':
    case 'w':
        return REPLAY_PERSON;
    case 'k':
        return REPLAY_KERNEL;
    case 'g':
        return REPLAY_GPU;
    case 'u':
        return REPLAY_UNANSWERED;
    default:
        return 0;
    }
}

int replay_spans_from_record(const struct activity_record *r, struct replay_span **ret_spans,
                             size_t *ret_n)
{
    struct replay_span *spans = r->n ? calloc(r->n, sizeof(*spans)) : NULL;
    if (r->n && !spans)
        return -ENOMEM;
    size_t n = 0;
    int64_t at = r->start_s * 1000;
    for (size_t i = 0; i < r->n; i++) {
        unsigned use = use_of(r->runs[i].state);
        int64_t end = at + (int64_t)r->runs[i].seconds * 1000;
        if (use && n && spans[n - 1].use == use && spans[n - 1].end_ms == at)
            spans[n - 1].end_ms = end;
        else if (use && end > at)
            spans[n++] = (struct replay_span){at, end, use};
        at = end;
    }
    *ret_spans = spans;
    *ret_n = n;
    return 0;
}
