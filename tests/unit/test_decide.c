/*
 * workspace_decide() from tables of situations: each row is a workspace,
 * its class, its pods and claim at a moment, and what decide() must answer.
 * Every row is then decided again on the world its actions made (and the
 * status read back through JSON): nothing may change and no event may
 * repeat. A random search checks the safety rules over many more worlds,
 * and a small simulated cluster plays whole lifecycles.
 */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/timefmt.h"
#include "util/tz.h"
#include "workspace/decide.h"
#include "workspace/ledger.h"
#include "workspace/status_fields.h"

/* 2027-01-01T00:00:00Z */
#define T0 INT64_C(1798761600000)
#define SEC INT64_C(1000)
/* <uv.h>, which the class's headers reach through util/tz.h, brings
 * <sys/param.h>'s MIN(a, b). */
#undef MIN
#define MIN (60 * SEC)
#define NOW (T0 + 60 * MIN)

#define SCHED_MSG                                                                                  \
    "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are "           \
    "available: 3 No preemption victims found for incoming pod."

static const char *const class_json =
    "{\"metadata\":{\"name\":\"gpu-t4\"},\"spec\":{"
    "\"images\":{\"allowed\":[\"quay.io/jupyter/*\",\"ghcr.io/acme/*\"],"
    "\"default\":\"quay.io/jupyter/base-notebook:2025-10-20\"},"
    "\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\",\"product\":\"Tesla-T4\"},"
    "\"home\":{\"size\":\"10Gi\",\"maxSize\":\"100Gi\"},"
    "\"pause\":{\"gracePeriodSeconds\":60},"
    "\"resume\":{\"capacityTimeout\":\"30m\",\"onCapacityTimeout\":\"Wait\"}}}";

static const char *const ws_json =
    "{\"metadata\":{\"name\":\"alice\",\"namespace\":\"team-a\",\"uid\":\"u-1\","
    "\"generation\":1,\"finalizers\":[\"hibernator.dev/cleanup\"]},"
    "\"spec\":{\"className\":\"gpu-t4\"}}";

/* ---- the world a row describes ---- */

enum {
    SCHED = 1 << 0,    /* has a node */
    READY = 1 << 1,    /* Ready=True (implies SCHED) */
    UNSCHED = 1 << 2,  /* PodScheduled=False, Unschedulable */
    TERM = 1 << 3,     /* deletionTimestamp set */
    STOPPED = 1 << 4,  /* phase Failed */
    CKPT = 1 << 5,     /* built with the checkpoint env */
    FALLBACK = 1 << 6, /* a capacity fallback pod */
};

#define MAX_PODS 8

struct world {
    struct workspace *ws;
    struct workspace_class *cls; /* NULL: the class is missing */
    struct workspace_class *cls_owned;
    struct workspace_pod pods[MAX_PODS];
    size_t n_pods;
    struct workspace_pvc pvc;
    int has_pvc;
    int64_t now;
    char *owned[64];
    size_t n_owned;
    /* idle detection */
    struct activity_observation obs; /* the latest probe round */
    int has_obs;
    const struct tz *zone; /* the class's time zone; NULL: not loaded */
    /* the pod the reconciler found on the paused pod's node */
    const struct workspace_pod *taker;
    /* what the node cache knows */
    struct decide_node nodes[4];
    size_t n_nodes;
    int pause_node_absent;            /* the node cache no longer has the paused pod's node */
    const char *class_error;          /* the class exists but cannot be read */
    const struct workspace_pod *gone; /* the last pod the pod cache dropped */
    int pod_node_absent;              /* status.nodeName is not in the node cache */
    struct queue_view queue;          /* Kueue's Workload of the kept pod */
    int has_queue;
};

static char *keep_str(struct world *w, const char *s)
{
    assert_true(w->n_owned < sizeof(w->owned) / sizeof(w->owned[0]));
    char *copy = strdup(s);
    assert_non_null(copy);
    w->owned[w->n_owned++] = copy;
    return copy;
}

static void world_init(struct world *w)
{
    *w = (struct world){.now = NOW, .has_pvc = 1, .zone = tz_utc()};
    cJSON *obj = cJSON_Parse(ws_json);
    assert_int_equal(workspace_decode(obj, &w->ws, NULL), 0);
    cJSON_Delete(obj);
    obj = cJSON_Parse(class_json);
    assert_int_equal(workspace_class_decode(obj, &w->cls_owned, NULL), 0);
    cJSON_Delete(obj);
    w->cls = w->cls_owned;
    w->pvc = (struct workspace_pvc){.ns = "team-a", .name = "alice-home", .phase = "Bound"};
}

static void world_free(struct world *w)
{
    workspace_free(w->ws);
    workspace_class_free(w->cls_owned);
    for (size_t i = 0; i < w->n_owned; i++)
        free(w->owned[i]);
}

/* "uid-<name>": a pod made again under the same name gets the same one,
 * which the API server would not give; tests that care set another. */
static char *pod_uid(struct world *w, const char *name)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "uid-%s", name);
    return keep_str(w, buf);
}

static struct workspace_pod *add_pod(struct world *w, const char *name, int flags, int64_t created)
{
    assert_true(w->n_pods < MAX_PODS);
    struct workspace_pod *p = &w->pods[w->n_pods++];
    if (flags & READY)
        flags |= SCHED;
    *p = (struct workspace_pod){
        .ns = "team-a",
        .name = keep_str(w, name),
        .uid = pod_uid(w, name),
        .workspace = "alice",
        .phase = (flags & STOPPED) ? "Failed"
                 : (flags & READY) ? "Running"
                                   : "Pending",
        .created_ms = created,
        .restore_from_checkpoint = !!(flags & CKPT),
        .capacity_fallback = !!(flags & FALLBACK),
    };
    if (flags & SCHED) {
        p->node_name = "gpu-1";
        p->scheduled = 1;
        p->scheduled_ms = created + 2 * SEC;
    }
    if (flags & READY) {
        p->ready = 1;
        p->ready_ms = created + 12 * SEC;
    }
    if (flags & UNSCHED) {
        p->unschedulable = 1;
        p->unschedulable_message = SCHED_MSG;
    }
    if (flags & TERM)
        p->deletion_ms = w->now - 5 * SEC;
    return p;
}

static struct workspace_pod *find_pod(struct world *w, const char *name)
{
    for (size_t i = 0; i < w->n_pods; i++)
        if (strcmp(w->pods[i].name, name) == 0)
            return &w->pods[i];
    return NULL;
}

static void remove_pod(struct world *w, struct workspace_pod *p)
{
    size_t i = (size_t)(p - w->pods);
    memmove(&w->pods[i], &w->pods[i + 1], (w->n_pods - i - 1) * sizeof(*p));
    w->n_pods--;
}

/* ---- status set-up ---- */

/* A status as its JSON, for a failure's message (left to the process's end). */
static const char *status_text(const struct workspace_status *s)
{
    cJSON *j = workspace_status_to_json(s);
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return text ? text : "?";
}

/* The world's status, to be written: every block its own. */
static struct workspace_status *st(struct world *w)
{
    assert_int_equal(workspace_status_own(&w->ws->status), 0);
    return &w->ws->status;
}

static void set_str(char **field, const char *value)
{
    free(*field);
    *field = value ? strdup(value) : NULL;
}

static void set_state(struct world *w, enum workspace_state state, const char *pod, int64_t gen)
{
    st(w)->state = state;
    set_str(&st(w)->pod_name, pod);
    st(w)->pod_generation = gen;
    st(w)->observed_generation = w->ws->generation;
    set_str(&st(w)->home_claim_name, "alice-home");
}

static void set_cond(struct world *w, const char *type, enum condition_status s, const char *reason,
                     const char *msg)
{
    assert_int_equal(
        workspace_status_set_condition(st(w), type, s, reason, msg, w->ws->generation, T0), 0);
}

static void running(struct world *w)
{
    set_state(w, WS_STATE_RUNNING, "alice-1", 1);
    set_str(&st(w)->node_name, "gpu-1");
    set_str(&st(w)->accelerator_resource, "nvidia.com/gpu");
    set_str(&st(w)->accelerator_product, "Tesla-T4");
    st(w)->accelerator_count = 1;
    set_cond(w, "Valid", COND_TRUE, "Accepted", "class \"gpu-t4\" accepts the workspace");
    set_cond(w, "Ready", COND_TRUE, "PodReady", "pod alice-1 is ready on gpu-1");
    set_cond(w, "CapacityAvailable", COND_TRUE, "Scheduled", "pod alice-1 is scheduled on gpu-1");
}

static void pausing(struct world *w)
{
    running(w);
    w->ws->paused = 1;
    st(w)->state = WS_STATE_PAUSING;
    st(w)->pauses = 1;
    st(w)->last_pause->requested_ms = NOW - 10 * MIN;
    st(w)->last_pause->pod_deleted_ms = NOW - 10 * MIN;
}

static void paused(struct world *w)
{
    set_state(w, WS_STATE_PAUSED, NULL, 1);
    w->ws->paused = 1;
    st(w)->pauses = 1;
    *st(w)->last_pause = (struct workspace_pause_timeline){
        .requested_ms = T0, .pod_deleted_ms = T0 + SEC, .accelerator_released_ms = T0 + 30 * SEC};
    set_cond(w, "Valid", COND_TRUE, "Accepted", "class \"gpu-t4\" accepts the workspace");
    set_cond(w, "Ready", COND_FALSE, "Paused", "paused");
}

/* A resume asked for 20 s ago; pod alice-2 created then. */
static void resuming(struct world *w)
{
    paused(w);
    w->ws->paused = 0;
    set_state(w, WS_STATE_RESUMING, "alice-2", 2);
    st(w)->resumes = 1;
    st(w)->last_resume->requested_ms = NOW - 20 * SEC;
    st(w)->last_resume->pod_created_ms = NOW - 20 * SEC;
}

static void waiting(struct world *w, int64_t since)
{
    resuming(w);
    st(w)->state = WS_STATE_WAITING_FOR_CAPACITY;
    st(w)->waiting_for_capacity_since_ms = since;
    set_cond(w, "CapacityAvailable", COND_FALSE, "Unschedulable", SCHED_MSG);
    add_pod(w, "alice-2", UNSCHED | CKPT, NOW - 20 * SEC);
}

/* The class lists NVIDIA-L4 besides its Tesla-T4. */
static void alternatives(struct workspace_class *c)
{
    c->alternative_products = calloc(1, sizeof(char *));
    assert_non_null(c->alternative_products);
    c->alternative_products[0] = strdup("NVIDIA-L4");
    c->n_alternative_products = 1;
}

static void failed_for_capacity(struct world *w)
{
    resuming(w);
    w->cls->on_capacity_timeout = CAPACITY_TIMEOUT_FAIL;
    st(w)->state = WS_STATE_FAILED;
    set_cond(w, "CapacityAvailable", COND_FALSE, "CapacityTimeout", "no capacity after 30m: x");
}

/* What decide() is given of the world; pods is filled with w's pods. */
static struct decide_input world_input(struct world *w, const struct workspace_pod **pods)
{
    for (size_t i = 0; i < w->n_pods; i++)
        pods[i] = &w->pods[i];
    return (struct decide_input){
        .ws = w->ws,
        .cls = w->cls,
        .pods = pods,
        .n_pods = w->n_pods,
        .pvc = w->has_pvc ? &w->pvc : NULL,
        .now_ms = w->now,
        .activity = w->has_obs ? &w->obs : NULL,
        .zone = w->zone,
        .accelerator_taker = w->taker,
        .nodes = w->nodes,
        .n_nodes = w->n_nodes,
        .pause_node_absent = w->pause_node_absent,
        .class_error = w->class_error,
        .gone_pod = w->gone,
        .pod_node_absent = w->pod_node_absent,
        .queue = w->has_queue ? &w->queue : NULL,
    };
}

/* Runs decide() and keeps its status, as a pass that went well would. */
static void settle(struct world *w)
{
    const struct workspace_pod *pods[MAX_PODS];
    struct decide_input in = world_input(w, pods);
    struct decide_output out;
    assert_int_equal(workspace_decide(&in, &out), 0);
    workspace_status_clear(&w->ws->status);
    w->ws->status = out.status;
    workspace_status_init(&out.status);
    decide_output_clear(&out);
}

/* ---- running decide() and reading its answer ---- */

static void decide(struct world *w, struct decide_output *out)
{
    const struct workspace_pod *pods[MAX_PODS];
    struct decide_input in = world_input(w, pods);
    int r = workspace_decide(&in, out);
    if (r != 0)
        fail_msg("workspace_decide: %d", r);
}

static void action_str(const struct action *a, char *buf, size_t size)
{
    switch (a->type) {
    case ACTION_CREATE_POD:
        snprintf(buf, size, "CreatePod %s%s%s%s%s", a->name,
                 a->from_checkpoint ? " checkpoint" : "", a->capacity_fallback ? " fallback" : "",
                 a->product ? " product=" : "", a->product ? a->product : "");
        break;
    case ACTION_DELETE_POD:
        snprintf(buf, size, "DeletePod %s grace=%lld", a->name, (long long)a->grace_seconds);
        break;
    case ACTION_EVENT:
        snprintf(buf, size, "Event %s %s", a->event_type, a->reason);
        break;
    default:
        snprintf(buf, size, "%s%s%s", action_type_name(a->type), a->name ? " " : "",
                 a->name ? a->name : "");
    }
}

static const struct action *find_event(const struct decide_output *o, const char *reason)
{
    for (size_t i = 0; i < o->n_actions; i++)
        if (o->actions[i].type == ACTION_EVENT && strcmp(o->actions[i].reason, reason) == 0)
            return &o->actions[i];
    return NULL;
}

static size_t count_events(const struct decide_output *o)
{
    size_t n = 0;
    for (size_t i = 0; i < o->n_actions; i++)
        n += o->actions[i].type == ACTION_EVENT;
    return n;
}

static const struct condition *cond(const struct decide_output *o, const char *type)
{
    return workspace_status_condition(&o->status, type);
}

static void assert_cond(const struct decide_output *o, const char *type, enum condition_status s,
                        const char *reason)
{
    const struct condition *c = cond(o, type);
    if (!c)
        fail_msg("no %s condition", type);
    if (c->status != s || strcmp(c->reason, reason) != 0)
        fail_msg("%s: status %d reason %s, want %d %s", type, c->status, c->reason, s, reason);
}

static regex_t reason_re;

/* What every answer must respect: kube's reason syntax, one-line bounded
 * messages, the generation observed. */
static void check_shape(const struct world *w, const struct decide_output *o)
{
    assert_true(o->n_actions <= DECIDE_MAX_ACTIONS);
    for (size_t i = 0; i < o->n_actions; i++) {
        const struct action *a = &o->actions[i];
        if (a->type != ACTION_EVENT)
            continue;
        assert_true(strcmp(a->event_type, "Normal") == 0 || strcmp(a->event_type, "Warning") == 0);
        if (regexec(&reason_re, a->reason, 0, NULL, 0) != 0)
            fail_msg("event reason \"%s\"", a->reason);
        assert_null(strchr(a->message, '\n'));
        assert_true(strlen(a->message) <= 1024);
    }
    for (size_t i = 0; i < o->status.n_conditions; i++) {
        const struct condition *c = &o->status.conditions[i];
        if (regexec(&reason_re, c->reason, 0, NULL, 0) != 0)
            fail_msg("%s reason \"%s\"", c->type, c->reason);
        assert_null(strchr(c->message ? c->message : "", '\n'));
        assert_int_equal(c->observed_generation,
                         w->ws->deletion_ms ? c->observed_generation : w->ws->generation);
    }
    if (o->status.message)
        assert_null(strchr(o->status.message, '\n'));
    if (!w->ws->deletion_ms)
        assert_int_equal(o->status.observed_generation, w->ws->generation);
}

/* What the shell would do with the answer, against a cluster that does not
 * move on its own. */
static void apply(struct world *w, const struct decide_output *o)
{
    for (size_t i = 0; i < o->n_actions; i++) {
        const struct action *a = &o->actions[i];
        struct workspace_pod *p;
        switch (a->type) {
        case ACTION_ADD_FINALIZER:
            w->ws->has_finalizer = 1;
            break;
        case ACTION_CREATE_PVC:
            w->has_pvc = 1;
            w->pvc.deletion_ms = 0;
            break;
        case ACTION_CREATE_POD:
            if (!find_pod(w, a->name)) /* else AlreadyExists */
                add_pod(w, a->name,
                        (a->from_checkpoint ? CKPT : 0) | (a->capacity_fallback ? FALLBACK : 0),
                        w->now);
            break;
        case ACTION_DELETE_POD:
            p = find_pod(w, a->name);
            if (p && !p->deletion_ms)
                p->deletion_ms = w->now;
            break;
        case ACTION_RAISE_PRIORITY:
            p = find_pod(w, a->name);
            if (p)
                p->priority_class = keep_str(w, a->reason);
            break;
        case ACTION_DELETE_PVC:
            w->pvc.deletion_ms = w->now;
            break;
        case ACTION_REMOVE_FINALIZER:
            w->ws->has_finalizer = 0;
            break;
        case ACTION_RELEASE_PVC:
        case ACTION_EVENT:
            break;
        case ACTION_AUTO_PAUSE:
            /* spec.paused with the annotations, in one write */
            w->ws->paused = 1;
            w->ws->auto_paused_ms = a->time_ms;
            free(w->ws->auto_pause_message);
            w->ws->auto_pause_message = strdup(a->message);
            break;
        case ACTION_AUTO_RESUME:
            /* spec.paused false with the pre-warm's annotations, in one write */
            w->ws->paused = 0;
            w->ws->prewarmed_ms = a->time_ms;
            w->ws->prewarm_for_ms = a->for_ms;
            break;
        case ACTION_SNAPSHOT_BEGIN:
        case ACTION_SNAPSHOT_DELETE:
        case ACTION_APP_CHECKPOINT:
            break; /* these worlds have no snapshot backend (test_snapshot.c) */
        }
    }
}

/* Replaces the workspace's status with what reading back o's status from
 * the API server would give. */
static void write_status(struct world *w, const struct decide_output *o)
{
    cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"className\":\"c\"}}");
    cJSON *status = workspace_status_to_json(&o->status);
    assert_non_null(status);
    cJSON_AddItemToObject(obj, "status", status);
    struct workspace *back = NULL;
    assert_int_equal(workspace_decode(obj, &back, NULL), 0);
    cJSON_Delete(obj);
    workspace_status_clear(&w->ws->status);
    w->ws->status = back->status;
    workspace_status_init(&back->status);
    workspace_free(back);
}

/* ---- the table ---- */

struct row {
    const char *name;
    void (*setup)(struct world *w);
    enum workspace_state state;
    const char *actions[10]; /* in order; NULL ends */
    const char *message;     /* a part of status.message; NULL: no check */
    void (*check)(struct world *w, const struct decide_output *o);
    int unchanged; /* the status must not change */
};

/* -- creation -- */

static void s_fresh(struct world *w)
{
    w->ws->has_finalizer = 0;
    w->has_pvc = 0;
}

static void c_fresh(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_string_equal(o->status.pod_name, "alice-1");
    assert_int_equal(o->status.pod_generation, 1);
    assert_string_equal(o->status.home_claim_name, "alice-home");
    assert_null(o->status.node_name);
    assert_string_equal(o->status.accelerator_resource, "nvidia.com/gpu");
    assert_int_equal(o->status.accelerator_count, 1);
    assert_string_equal(o->status.accelerator_product, "Tesla-T4");
    assert_cond(o, "Valid", COND_TRUE, "Accepted");
    assert_cond(o, "Ready", COND_FALSE, "PodPending");
    assert_cond(o, "Restored", COND_TRUE, "Fresh");
    assert_null(cond(o, "CapacityAvailable"));
    assert_int_equal(o->status.pauses, 0);
    assert_int_equal(o->status.resumes, 0);
    assert_int_equal(o->status.last_resume->requested_ms, 0);
    assert_string_equal(o->status.conditions[0].type, "Valid");
    assert_int_equal(o->requeue_after_ms, 0);
    assert_non_null(strstr(find_event(o, "Created")->message, "alice-1"));
}

static void s_adopt_after_crash(struct world *w)
{
    add_pod(w, "alice-3", 0, NOW - MIN);
}

static void c_adopt_after_crash(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_string_equal(o->status.pod_name, "alice-3");
    assert_int_equal(o->status.pod_generation, 3);
    assert_cond(o, "Restored", COND_TRUE, "Fresh");
}

static void s_adopt_newer(struct world *w)
{
    running(w);
    add_pod(w, "alice-2", READY | CKPT, NOW - MIN);
}

static void c_adopt_newer(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_string_equal(o->status.pod_name, "alice-2");
    assert_int_equal(o->status.pod_generation, 2);
    assert_cond(o, "Restored", COND_TRUE, "FromCheckpoint");
}

static void s_adopt_keeps_generation(struct world *w)
{
    set_state(w, WS_STATE_PENDING, NULL, 5);
    add_pod(w, "alice-2", 0, NOW - MIN);
}

static void c_generation_5(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.pod_generation, 5);
    assert_string_equal(o->status.pod_name, "alice-2");
}

/* The pass that created alice-1 wrote its status; the pod informer has not
 * caught up. */
static void s_stale_cache(struct world *w)
{
    s_fresh(w);
    settle(w);
    w->ws->has_finalizer = 1;
    w->has_pvc = 1;
}

static void c_generation_1(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.pod_generation, 1);
    assert_string_equal(o->status.pod_name, "alice-1");
}

static void s_scheduled(struct world *w)
{
    set_state(w, WS_STATE_PENDING, "alice-1", 1);
    add_pod(w, "alice-1", SCHED, NOW - MIN);
}

static void c_scheduled(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_string_equal(o->status.node_name, "gpu-1");
    assert_cond(o, "CapacityAvailable", COND_TRUE, "Scheduled");
    assert_cond(o, "Ready", COND_FALSE, "PodStarting");
}

static void s_ready(struct world *w)
{
    set_state(w, WS_STATE_PENDING, "alice-1", 1);
    add_pod(w, "alice-1", READY, NOW - MIN);
}

static void c_ready(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_cond(o, "Ready", COND_TRUE, "PodReady");
    assert_cond(o, "CapacityAvailable", COND_TRUE, "Scheduled");
    assert_string_equal(o->status.node_name, "gpu-1");
    assert_int_equal(o->status.waiting_for_capacity_since_ms, 0);
    /* not a resume: no resume timeline */
    assert_int_equal(o->status.last_resume->ready_ms, 0);
}

static void s_not_ready_again(struct world *w)
{
    running(w);
    add_pod(w, "alice-1", SCHED, NOW - MIN);
}

static void c_not_ready_again(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_cond(o, "Ready", COND_FALSE, "PodNotReady");
    assert_string_equal(o->status.node_name, "gpu-1");
}

static void s_pod_lost(struct world *w)
{
    running(w);
}

static void c_pod_lost(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_null(o->status.node_name);
    assert_int_equal(o->status.pod_generation, 1);
}

static void s_old_pod_terminating(struct world *w)
{
    running(w);
    add_pod(w, "alice-1", READY | TERM, NOW - MIN);
}

/* Someone else deleted the pod: recorded, and the status no longer names it. */
static void c_interrupted_deleted(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.interruptions, 1);
    assert_string_equal(o->status.last_interruption->pod, "alice-1");
    assert_string_equal(o->status.last_interruption->reason, "Deleted");
    assert_string_equal(o->status.last_interruption->node_name, "gpu-1");
    assert_int_equal(o->status.last_interruption->at_ms, NOW);
    assert_null(o->status.pod_name);
    assert_non_null(strstr(find_event(o, "PodInterrupted")->message, "pod alice-1 on gpu-1"));
    assert_string_equal(find_event(o, "PodInterrupted")->occasion, "interrupted-uid-alice-1");
}

static void c_interrupted_stopped(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.interruptions, 1);
    assert_string_equal(o->status.last_interruption->reason, "Stopped");
    assert_string_equal(o->status.last_interruption->message, "phase Failed");
}

/* -- what was lost: the home claim, a pod someone else ended -- */

/* Paused; the claim the status recorded (pvc-1) is gone. */
static void s_home_lost_paused(struct world *w)
{
    paused(w);
    set_str(&st(w)->home->claim_uid, "pvc-1");
    w->has_pvc = 0;
}

static void c_home_lost_paused(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_cond(o, "Home", COND_FALSE, "Lost");
    assert_non_null(strstr(cond(o, "Home")->message, "pvc-1"));
    assert_non_null(strstr(cond(o, "Home")->message, ACKNOWLEDGE_HOME_LOSS_ANNOTATION "=pvc-1"));
    assert_string_equal(o->status.home->lost_claim_uid, "pvc-1");
    assert_int_equal(o->status.home->lost_ms, NOW);
    assert_null(o->status.home->claim_uid);
    assert_string_equal(find_event(o, "HomeLost")->occasion, "home-pvc-1");
    assert_non_null(strstr(find_event(o, "HomeLost")->message, "WaitForAcknowledgement"));
}

static void s_home_lost_recreate(struct world *w)
{
    s_home_lost_paused(w);
    w->cls->home_on_loss = HOME_ON_LOSS_RECREATE;
}

/* Recorded lost earlier; now unpaused, not acknowledged. */
static void s_home_lost_resume(struct world *w)
{
    s_home_lost_paused(w);
    w->ws->paused = 0;
    set_str(&st(w)->home->claim_uid, NULL);
    set_str(&st(w)->home->lost_claim_uid, "pvc-1");
    st(w)->home->lost_ms = NOW - MIN;
}

static void c_home_lost_resume(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_cond(o, "Ready", COND_FALSE, "HomeLost");
    assert_int_equal(o->status.resumes, 1);
    assert_null(o->status.pod_name);
}

static void s_home_lost_acknowledged(struct world *w)
{
    s_home_lost_resume(w);
    set_str(&w->ws->acknowledged_home_loss, "pvc-1");
}

static void c_home_lost_acknowledged(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_cond(o, "Restored", COND_TRUE, "FreshHome");
    assert_null(strstr(cond(o, "Restored")->message, "checkpoint ("));
    assert_string_equal(o->status.last_resume->restored_from, "FreshHome");
    assert_string_equal(o->status.home->fresh_pod, "alice-2");
    assert_int_equal(o->status.home->acknowledged_ms, NOW);
    assert_cond(o, "Home", COND_FALSE, "Lost");
    assert_non_null(strstr(cond(o, "Home")->message, "acknowledged"));
}

/* Someone made a claim of the same name: another uid. */
static void s_home_replaced(struct world *w)
{
    s_home_lost_paused(w);
    w->has_pvc = 1;
    w->pvc.uid = "pvc-2";
    w->pvc.created_ms = NOW - 5 * SEC;
}

static void c_home_replaced(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_string_equal(o->status.home->lost_claim_uid, "pvc-1");
    assert_string_equal(o->status.home->claim_uid, "pvc-2");
    assert_int_equal(o->status.home->since_ms, NOW - 5 * SEC);
    /* the class waits for a person: the claim may be a backup, or empty */
    assert_cond(o, "Home", COND_FALSE, "Lost");
}

static void s_evicted(struct world *w)
{
    running(w);
    struct workspace_pod *p = add_pod(w, "alice-1", READY | TERM, NOW - MIN);
    p->disruption_reason = "EvictionByEvictionAPI";
    p->disruption_message = "Eviction API: evicting";
    p->disruption_ms = NOW - 6 * SEC;
}

static void c_evicted(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.interruptions, 1);
    assert_string_equal(o->status.last_interruption->reason, "Evicted");
    assert_string_equal(o->status.last_interruption->message,
                        "DisruptionTarget EvictionByEvictionAPI: Eviction API: evicting");
    assert_int_equal(o->status.last_interruption->at_ms, NOW - 6 * SEC);
    assert_non_null(strstr(find_event(o, "PodInterrupted")->message, "Evicted"));
}

static void s_oom_killed(struct world *w)
{
    running(w);
    struct workspace_pod *p = add_pod(w, "alice-1", STOPPED | SCHED, T0);
    p->terminated_reason = "OOMKilled";
}

static void c_oom_killed(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_string_equal(o->status.last_interruption->reason, "OOMKilled");
}

/* Seen (podUID) and gone before a pass saw it leave: the reconciler kept
 * the pod cache's last sight of it. */
static struct workspace_pod gone_pod;

static void s_gone_node_gc(struct world *w)
{
    running(w);
    set_str(&st(w)->pod_uid, "uid-alice-1");
    gone_pod = (struct workspace_pod){.name = "alice-1",
                                      .uid = "uid-alice-1",
                                      .node_name = "gpu-1",
                                      .phase = "Running",
                                      .deletion_ms = NOW - 2 * SEC,
                                      .disruption_reason = "DeletionByPodGC",
                                      .disruption_message = "PodGC: node no longer exists"};
    w->gone = &gone_pod;
}

static void c_replaced(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.interruptions, 1);
    assert_string_equal(o->status.last_interruption->replaced_by, "alice-2");
    assert_string_equal(o->status.pod_name, "alice-2");
    assert_int_equal(o->status.pod_generation, 2);
    assert_cond(o, "Restored", COND_TRUE, "FromCheckpoint");
    assert_non_null(strstr(cond(o, "Restored")->message, "replaces pod alice-1"));
    assert_null(strstr(cond(o, "Restored")->message, "never paused"));
}

static void c_gone_node_gc(struct world *w, const struct decide_output *o)
{
    c_replaced(w, o);
    assert_string_equal(o->status.last_interruption->reason, "NodeLost");
    assert_non_null(strstr(o->status.last_interruption->message, "DeletionByPodGC"));
}

static void s_gone_node_absent(struct world *w)
{
    running(w);
    set_str(&st(w)->pod_uid, "uid-alice-1");
    w->pod_node_absent = 1;
}

static void c_gone_node_absent(struct world *w, const struct decide_output *o)
{
    c_replaced(w, o);
    assert_string_equal(o->status.last_interruption->reason, "NodeLost");
    assert_string_equal(o->status.last_interruption->message,
                        "node gpu-1: no longer in the cluster");
}

/* The controller's own delete (a capacity timeout that failed it, say): no
 * interruption. */
static void s_own_delete(struct world *w)
{
    running(w);
    set_str(&st(w)->deleted_pod, "alice-1");
    add_pod(w, "alice-1", READY | TERM, NOW - MIN);
}

static void c_no_interruption(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.interruptions, 0);
    assert_null(find_event(o, "PodInterrupted"));
}

static void s_two_live_named(struct world *w)
{
    set_state(w, WS_STATE_PENDING, "alice-1", 2);
    add_pod(w, "alice-1", READY, T0);
    add_pod(w, "alice-2", SCHED, T0 + MIN);
}

static void c_keeps_alice_1(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_string_equal(o->status.pod_name, "alice-1");
    assert_non_null(strstr(find_event(o, "DuplicatePod")->message, "keeping alice-1"));
}

static void s_two_live_unnamed(struct world *w)
{
    add_pod(w, "alice-1", 0, T0);
    add_pod(w, "alice-2", 0, T0 + MIN);
}

static void c_keeps_newest(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_string_equal(o->status.pod_name, "alice-2");
    assert_int_equal(o->status.pod_generation, 2);
}

static void s_three_live(struct world *w)
{
    set_state(w, WS_STATE_RUNNING, "alice-2", 3);
    add_pod(w, "alice-3", SCHED, T0 + 2 * MIN);
    add_pod(w, "alice-2", READY, T0 + MIN);
    add_pod(w, "alice-1", READY, T0);
}

static void s_stopped(struct world *w)
{
    running(w);
    add_pod(w, "alice-1", STOPPED | SCHED, T0);
}

/* -- pause -- */

static void s_pause_running(struct world *w)
{
    running(w);
    w->ws->paused = 1;
    add_pod(w, "alice-1", READY, T0);
}

static void c_pause_running(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.pauses, 1);
    assert_int_equal(o->status.last_pause->requested_ms, NOW);
    assert_int_equal(o->status.last_pause->pod_deleted_ms, NOW);
    assert_int_equal(o->status.last_pause->accelerator_released_ms, 0);
    assert_cond(o, "Ready", COND_FALSE, "Pausing");
}

static void s_pause_unscheduled(struct world *w)
{
    waiting(w, NOW - 5 * MIN);
    w->ws->paused = 1;
    st(w)->pauses = st(w)->resumes = 1;
}

static void c_pause_unscheduled(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.pauses, 2);
    assert_int_equal(o->status.waiting_for_capacity_since_ms, 0);
}

static void s_pausing_terminating(struct world *w)
{
    pausing(w);
    add_pod(w, "alice-1", READY | TERM, T0);
}

static void c_pause_counted_once(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.pauses, 1);
    assert_int_equal(o->status.last_pause->requested_ms, NOW - 10 * MIN);
    assert_int_equal(o->status.last_pause->pod_deleted_ms, NOW - 10 * MIN);
}

static void s_pausing_not_seen(struct world *w)
{
    pausing(w);
    add_pod(w, "alice-1", READY, T0);
}

static void s_pausing_gone(struct world *w)
{
    pausing(w);
}

static void c_paused(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.pauses, 1);
    assert_int_equal(o->status.last_pause->accelerator_released_ms, NOW);
    assert_null(o->status.pod_name);
    assert_null(o->status.node_name);
    assert_int_equal(o->status.pod_generation, 1);
    assert_null(cond(o, "CapacityAvailable"));
    assert_cond(o, "Ready", COND_FALSE, "Paused");
    /* the GPU was given back: none on display; the pause's record keeps it */
    assert_null(o->status.accelerator_product);
    assert_string_equal(o->status.accelerator_resource, "nvidia.com/gpu");
    assert_non_null(strstr(find_event(o, "Paused")->message, "600.0s"));
}

static void s_created_paused(struct world *w)
{
    s_fresh(w);
    w->ws->paused = 1;
}

static void c_created_paused(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.pauses, 0);
    assert_int_equal(o->status.last_pause->requested_ms, 0);
    assert_int_equal(o->status.last_pause->accelerator_released_ms, 0);
    assert_int_equal(o->status.pod_generation, 0);
}

static void s_stays_paused(struct world *w)
{
    pausing(w);
    settle(w);
}

/* -- resume -- */

static void s_resume(struct world *w)
{
    paused(w);
    w->ws->paused = 0;
}

static void c_resume(struct world *w, const struct decide_output *o)
{
    (void)w;
    const struct workspace_status *s = &o->status;
    assert_int_equal(s->resumes, 1);
    assert_int_equal(s->pauses, 1);
    assert_int_equal(s->pod_generation, 2);
    assert_string_equal(s->pod_name, "alice-2");
    assert_int_equal(s->last_resume->requested_ms, NOW);
    assert_int_equal(s->last_resume->pod_created_ms, NOW);
    assert_string_equal(s->last_resume->restored_from, "FromCheckpoint");
    /* released at T0+30s, resumed at T0+60m, one GPU */
    assert_true(s->accelerator_seconds_released == 3570.0);
    assert_cond(o, "Restored", COND_TRUE, "FromCheckpoint");
    assert_non_null(strstr(cond(o, "Restored")->message, "HIBERNATOR_CHECKPOINT_PATH"));
    assert_non_null(strstr(find_event(o, "Resuming")->message, "59m30s"));
}

static void s_resume_terminating(struct world *w)
{
    pausing(w);
    w->ws->paused = 0;
    add_pod(w, "alice-1", READY | TERM, T0);
}

static void c_resume_terminating(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.resumes, 1);
    assert_int_equal(o->status.last_resume->requested_ms, NOW);
    assert_int_equal(o->status.last_resume->pod_created_ms, 0);
    /* the accelerator was never released */
    assert_true(o->status.accelerator_seconds_released == 0);
    assert_int_equal(o->status.pod_generation, 1);
}

static void s_resume_pod_still_live(struct world *w)
{
    pausing(w);
    w->ws->paused = 0;
    add_pod(w, "alice-1", READY, T0);
}

static void c_resume_pod_still_live(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.resumes, 1);
    assert_int_equal(o->status.last_resume->ready_ms, NOW);
    assert_true(o->status.last_resume->seconds_to_ready == 0);
}

static void s_resuming_scheduled(struct world *w)
{
    resuming(w);
    add_pod(w, "alice-2", SCHED | CKPT, NOW - 20 * SEC);
}

static void c_resuming_scheduled(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.last_resume->pod_scheduled_ms, NOW - 18 * SEC);
    assert_int_equal(o->status.last_resume->ready_ms, 0);
    assert_cond(o, "Ready", COND_FALSE, "PodStarting");
}

static void s_resuming_ready(struct world *w)
{
    resuming(w);
    add_pod(w, "alice-2", READY | CKPT, NOW - 20 * SEC);
}

static void c_resuming_ready(struct world *w, const struct decide_output *o)
{
    (void)w;
    const struct workspace_resume_timeline *r = o->status.last_resume;
    assert_int_equal(r->pod_scheduled_ms, NOW - 18 * SEC);
    assert_int_equal(r->ready_ms, NOW - 8 * SEC);
    assert_true(r->seconds_to_ready == 12.0);
    const struct action *e = find_event(o, "Resumed");
    assert_non_null(strstr(e->message, "12.0s"));
    assert_non_null(strstr(e->message, "checkpoint"));
}

static void s_resume_cpu(struct world *w)
{
    s_resume(w);
    w->cls->has_accelerator = 0;
}

static void c_resume_cpu(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_true(o->status.accelerator_seconds_released == 0);
    assert_null(o->status.accelerator_resource);
    assert_null(o->status.accelerator_product);
    assert_int_equal(o->status.accelerator_count, 0);
    assert_int_equal(o->status.resumes, 1);
}

static void s_pause_after_resume(struct world *w)
{
    resuming(w);
    w->ws->paused = 1;
    st(w)->accelerator_seconds_released = 100;
    add_pod(w, "alice-2", READY | CKPT, NOW - 20 * SEC);
}

static void c_pause_after_resume(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.pauses, 2);
    assert_int_equal(o->status.resumes, 1);
    assert_int_equal(o->status.last_pause->requested_ms, NOW);
    assert_true(o->status.accelerator_seconds_released == 100);
}

/* -- capacity -- */

static void s_waiting_new(struct world *w)
{
    resuming(w);
    add_pod(w, "alice-2", UNSCHED | CKPT, NOW - 20 * SEC);
}

static void c_waiting_new(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.waiting_for_capacity_since_ms, NOW);
    assert_int_equal(o->requeue_after_ms, 30 * MIN);
    assert_cond(o, "CapacityAvailable", COND_FALSE, "Unschedulable");
    assert_cond(o, "Ready", COND_FALSE, "WaitingForCapacity");
    assert_string_equal(o->status.message, SCHED_MSG);
}

/* -- Kueue -- */

#define QUOTA_MSG                                                                                  \
    "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "    \
    "flavor t4, 1 more needed"

/* The class sends its pods to Kueue's LocalQueue gpus. */
static void queue_class(struct world *w, const char *extra)
{
    char json[2048];
    snprintf(json, sizeof(json), "%.*s,\"queue\":{\"localQueue\":\"gpus\"%s}}}",
             (int)strlen(class_json) - 2, class_json, extra);
    cJSON *obj = cJSON_Parse(json);
    assert_non_null(obj);
    struct workspace_class *c = NULL;
    char *err = NULL;
    if (workspace_class_decode(obj, &c, &err) < 0)
        fail_msg("class: %s", err ? err : "?");
    cJSON_Delete(obj);
    workspace_class_free(w->cls_owned);
    w->cls = w->cls_owned = c;
}

/* A resume whose pod Kueue holds back: Queued, not WaitingForCapacity, and
 * no capacity clock. */
static void s_queued(struct world *w)
{
    resuming(w);
    queue_class(w, "");
    struct workspace_pod *p = add_pod(w, "alice-2", CKPT, NOW - 20 * SEC);
    p->queue = "gpus";
    p->queue_gated = 1;
    w->has_queue = 1;
    w->queue = (struct queue_view){
        .message = QUOTA_MSG, .position = 2, .pending = 3, .since_ms = NOW - 19 * SEC};
}

static void c_queued(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.waiting_for_capacity_since_ms, 0);
    assert_null(workspace_status_condition(&o->status, "CapacityAvailable"));
    assert_cond(o, "Ready", COND_FALSE, "WaitingForAdmission");
    assert_non_null(strstr(o->status.message, "pod alice-2 waits in Kueue queue gpus, number 2 "
                                              "of 3 waiting there since "));
    assert_int_equal(o->requeue_after_ms, 0);
    const struct workspace_queue_status *q = o->status.queue;
    assert_string_equal(q->name, "gpus");
    assert_int_equal(q->position, 2);
    assert_int_equal(q->pending, 3);
    assert_int_equal(q->since_ms, NOW - 19 * SEC);
    assert_string_equal(q->message, QUOTA_MSG);
}

/* Kueue's words as long as its Workload's condition allows, with a line
 * break and a character of two bytes across the cut: status.queue.message
 * is one line of at most WORKSPACE_MESSAGE_MAX bytes (the CRD's maxLength),
 * cut at a character boundary. */
static char long_quota_msg[4000];

static void s_queued_long_message(struct world *w)
{
    s_queued(w);
    memset(long_quota_msg, 'q', sizeof(long_quota_msg) - 1);
    long_quota_msg[sizeof(long_quota_msg) - 1] = '\0';
    long_quota_msg[10] = '\n';
    long_quota_msg[WORKSPACE_MESSAGE_MAX - 4] = (char)0xc3; /* "é" across the cut */
    long_quota_msg[WORKSPACE_MESSAGE_MAX - 3] = (char)0xa9;
    w->queue.message = long_quota_msg;
}

static void c_queued_long_message(struct world *w, const struct decide_output *o)
{
    (void)w;
    const char *m = o->status.queue->message;
    assert_non_null(m);
    size_t n = strlen(m);
    assert_true(n <= WORKSPACE_MESSAGE_MAX);
    assert_null(strchr(m, '\n'));
    assert_string_equal(m + n - 3, "...");
    assert_true(((unsigned char)m[n - 4] & 0xc0) != 0xc0); /* no lead byte left alone */
}

/* Kueue has not written its verdict yet. */
static void s_queued_no_workload(struct world *w)
{
    s_queued(w);
    w->has_queue = 0;
}

/* The queue is named, the place and the verdict are not known; the wait
 * counts from the pod. */
static void c_queued_no_workload(struct world *w, const struct decide_output *o)
{
    (void)w;
    const struct workspace_queue_status *q = o->status.queue;
    assert_string_equal(q->name, "gpus");
    assert_int_equal(q->position, 0);
    assert_int_equal(q->pending, 0);
    assert_int_equal(q->since_ms, NOW - 20 * SEC);
    assert_null(q->message);
}

/* Admitted, and no node has room: the scheduler's wait, as without Kueue. */
static void s_admitted_unschedulable(struct world *w)
{
    s_queued(w);
    w->pods[0].queue_gated = 0;
    w->pods[0].unschedulable = 1;
    w->pods[0].unschedulable_message = SCHED_MSG;
}

/* Admitted: status.queue, written while it was Queued, goes. */
static void s_admitted_after_queued(struct world *w)
{
    s_admitted_unschedulable(w);
    struct workspace_status *st = &w->ws->status;
    assert_int_equal(workspace_status_own(st), 0);
    st->queue->name = strdup("gpus");
    assert_non_null(st->queue->name);
    st->queue->position = 1;
    st->queue->pending = 1;
    st->queue->since_ms = NOW - 19 * SEC;
}

static void c_queue_cleared(struct world *w, const struct decide_output *o)
{
    (void)w;
    const struct workspace_queue_status *q = o->status.queue;
    assert_null(q->name);
    assert_int_equal(q->position, 0);
    assert_int_equal(q->since_ms, 0);
    cJSON *enc = cJSON_CreateObject();
    assert_int_equal(status_fields_encode(workspace_status_fields, &o->status, enc), 0);
    assert_null(cJSON_GetObjectItem(enc, "queue"));
    cJSON_Delete(enc);
}

/* A queue the class does not allow. */
static void s_queue_not_allowed(struct world *w)
{
    queue_class(w, ",\"allowedLocalQueues\":[\"big\"]");
    w->ws->local_queue = strdup("night");
}

static void s_queue_without_class_queue(struct world *w)
{
    w->ws->local_queue = strdup("gpus");
}

static void s_waiting_10m(struct world *w)
{
    waiting(w, NOW - 10 * MIN);
}

static void c_waiting_10m(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.waiting_for_capacity_since_ms, NOW - 10 * MIN);
    assert_int_equal(o->requeue_after_ms, 20 * MIN);
}

static void s_timeout_fail(struct world *w)
{
    waiting(w, NOW - 30 * MIN);
    w->cls->on_capacity_timeout = CAPACITY_TIMEOUT_FAIL;
}

static void c_timeout_fail(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_cond(o, "CapacityAvailable", COND_FALSE, "CapacityTimeout");
    assert_cond(o, "Ready", COND_FALSE, "CapacityTimeout");
    assert_string_equal(o->status.message, "no capacity after 30m: " SCHED_MSG);
    assert_int_equal(o->requeue_after_ms, 0);
}

static void s_timeout_wait(struct world *w)
{
    waiting(w, NOW - 31 * MIN);
}

static void c_timeout_wait(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_cond(o, "CapacityAvailable", COND_FALSE, "CapacityTimeout");
    assert_string_equal(o->status.message, "still waiting for capacity after 30m (since "
                                           "2027-01-01T00:29:00Z): " SCHED_MSG);
    assert_int_equal(o->requeue_after_ms, 0);
    assert_int_equal(o->status.waiting_for_capacity_since_ms, NOW - 31 * MIN);
}

static void s_timeout_wait_again(struct world *w)
{
    waiting(w, NOW - 40 * MIN);
    settle(w);
    w->now += MIN;
}

static void s_failed_gone(struct world *w)
{
    failed_for_capacity(w);
}

static void c_failed_gone(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_null(o->status.pod_name);
    assert_int_equal(o->status.pod_generation, 2);
    assert_cond(o, "CapacityAvailable", COND_FALSE, "CapacityTimeout");
}

static void s_failed_pod_shows(struct world *w)
{
    failed_for_capacity(w);
    add_pod(w, "alice-2", UNSCHED | CKPT, NOW - 40 * MIN);
    settle(w);
}

static void s_failed_spec_changed(struct world *w)
{
    failed_for_capacity(w);
    set_str(&st(w)->pod_name, NULL);
    w->ws->generation = 2;
}

/* The spec changed while the failed pod still shows: it is waited for
 * again, on a new clock, instead of failing at once. */
static void s_failed_spec_changed_pod_shows(struct world *w)
{
    failed_for_capacity(w);
    st(w)->waiting_for_capacity_since_ms = NOW - 40 * MIN;
    w->ws->generation = 2;
    add_pod(w, "alice-2", UNSCHED | CKPT, NOW - 40 * MIN);
}

static void c_failed_spec_changed_pod_shows(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.waiting_for_capacity_since_ms, NOW);
    assert_int_equal(o->requeue_after_ms, 30 * MIN);
}

/* The spec changed before a pass saw the failed pod go. */
static void s_failed_spec_changed_early(struct world *w)
{
    failed_for_capacity(w);
    w->ws->generation = 2;
}

static void c_failed_spec_changed(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_string_equal(o->status.pod_name, "alice-3");
    assert_int_equal(o->status.pod_generation, 3);
    assert_null(cond(o, "CapacityAvailable"));
    assert_int_equal(o->status.observed_generation, 2);
}

static void s_capacity_found(struct world *w)
{
    resuming(w);
    st(w)->state = WS_STATE_WAITING_FOR_CAPACITY;
    st(w)->waiting_for_capacity_since_ms = NOW - 5 * MIN;
    set_cond(w, "CapacityAvailable", COND_FALSE, "Unschedulable", SCHED_MSG);
    add_pod(w, "alice-2", SCHED | CKPT, NOW - 20 * SEC);
}

static void c_capacity_found(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_int_equal(o->status.waiting_for_capacity_since_ms, 0);
    assert_cond(o, "CapacityAvailable", COND_TRUE, "Scheduled");
    assert_int_equal(o->requeue_after_ms, 0);
}

/* -- capacity fallback -- */

/* onCapacityTimeout FallBack, with NVIDIA-L4 besides the class's Tesla-T4. */
static void fallback_class(struct workspace_class *c)
{
    c->on_capacity_timeout = CAPACITY_TIMEOUT_FALL_BACK;
    alternatives(c);
}

static void s_timeout_fallback(struct world *w)
{
    waiting(w, NOW - 30 * MIN);
    fallback_class(w->cls);
}

static void c_timeout_fallback(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_true(o->status.accelerator_fallback);
    assert_string_equal(o->status.pod_name, "alice-2");
    assert_cond(o, "CapacityAvailable", COND_FALSE, "CapacityTimeout");
    assert_non_null(strstr(cond(o, "CapacityAvailable")->message,
                           "no Tesla-T4 free within 30m (capacity timeout); falling back to any "
                           "of Tesla-T4, NVIDIA-L4"));
    assert_cond(o, "Ready", COND_FALSE, "PodTerminating");
    const struct action *e = find_event(o, "CapacityFallback");
    assert_string_equal(e->event_type, "Warning");
    assert_non_null(strstr(e->message, "no Tesla-T4 free within 30m (capacity timeout)"));
    assert_non_null(strstr(e->message, "any of Tesla-T4, NVIDIA-L4"));
    assert_int_equal(o->requeue_after_ms, 0);
}

/* The waiting pod is gone: the fallback pod, from files and the checkpoint. */
static void s_fallback_create(struct world *w)
{
    s_timeout_fallback(w);
    settle(w);
    remove_pod(w, find_pod(w, "alice-2"));
    w->now += 2 * SEC;
}

static void c_fallback_create(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_true(o->status.accelerator_fallback);
    assert_null(o->status.accelerator_product); /* any: known once scheduled */
    assert_string_equal(o->status.accelerator_resource, "nvidia.com/gpu");
    assert_int_equal(o->status.waiting_for_capacity_since_ms, 0);
    assert_cond(o, "Restored", COND_TRUE, "FromCheckpoint");
    assert_non_null(strstr(cond(o, "Restored")->message,
                           "not from a snapshot: after the capacity timeout (30m) it may run on "
                           "any of Tesla-T4, NVIDIA-L4"));
    assert_string_equal(o->status.last_resume->restored_from, "FromCheckpoint");
    assert_null(find_event(o, "CapacityFallback")); /* said once, when it was decided */
}

/* The pass that decided it wrote no status (the controller died after the
 * delete): the wait's clock still says the timeout passed. */
static void s_fallback_decision_lost(struct world *w)
{
    resuming(w);
    fallback_class(w->cls);
    st(w)->state = WS_STATE_WAITING_FOR_CAPACITY;
    st(w)->waiting_for_capacity_since_ms = NOW - 31 * MIN;
    set_cond(w, "CapacityAvailable", COND_FALSE, "Unschedulable", SCHED_MSG);
}

/* A fallback pod that waits too is never replaced: it waits. */
static void s_fallback_pod_waits(struct world *w)
{
    waiting(w, NOW - 31 * MIN);
    fallback_class(w->cls);
    w->pods[0].capacity_fallback = 1;
    st(w)->accelerator_fallback = 1;
    set_str(&st(w)->accelerator_product, NULL);
}

static void c_fallback_pod_waits(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_true(o->status.accelerator_fallback);
    assert_null(o->status.accelerator_product);
    assert_cond(o, "CapacityAvailable", COND_FALSE, "CapacityTimeout");
    assert_null(find_event(o, "CapacityFallback"));
}

/* The fallback pod got an L4: the node cache says so. */
static void s_fallback_on_l4(struct world *w)
{
    resuming(w);
    fallback_class(w->cls);
    st(w)->accelerator_fallback = 1;
    add_pod(w, "alice-2", READY | CKPT | FALLBACK, NOW - 20 * SEC);
    w->nodes[0] = (struct decide_node){.name = "gpu-1", .product = "NVIDIA-L4"};
    w->n_nodes = 1;
}

static void c_fallback_on_l4(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_string_equal(o->status.accelerator_product, "NVIDIA-L4");
    assert_true(o->status.accelerator_fallback);
    assert_string_equal(o->status.node_name, "gpu-1");
    assert_non_null(find_event(o, "Resumed"));
}

/* A pod pinned to the class's product on a node the cache knows. */
static void s_node_product(struct world *w)
{
    running(w);
    add_pod(w, "alice-1", READY, NOW - 2 * MIN);
    set_str(&st(w)->accelerator_product, NULL);
    w->nodes[0] = (struct decide_node){.name = "gpu-1", .product = "Tesla-T4"};
    w->nodes[1] = (struct decide_node){.name = "gpu-2", .product = "NVIDIA-L4"};
    w->n_nodes = 2;
}

static void c_node_product(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_string_equal(o->status.accelerator_product, "Tesla-T4");
    assert_false(o->status.accelerator_fallback);
}

/* Wait and Fail do what they did, alternatives or not. */
static void s_timeout_wait_alternatives(struct world *w)
{
    s_timeout_wait(w);
    alternatives(w->cls);
}

static void s_timeout_fail_alternatives(struct world *w)
{
    s_timeout_fail(w);
    alternatives(w->cls);
}

/* -- validation -- */

static void s_no_class(struct world *w)
{
    w->cls = NULL;
    w->has_pvc = 0;
}

static void c_invalid(struct world *w, const struct decide_output *o)
{
    (void)w;
    const struct condition *c = cond(o, "Valid");
    assert_int_equal(c->status, COND_FALSE);
    assert_string_equal(o->status.message, c->message);
    const struct action *e = find_event(o, c->reason);
    assert_non_null(e);
    assert_string_equal(e->event_type, "Warning");
    assert_string_equal(e->message, c->message);
    assert_null(o->status.pod_name);
    assert_int_equal(o->status.pod_generation, 0);
}

static void s_bad_image(struct world *w)
{
    set_str(&w->ws->image, "docker.io/evil:1");
}

static void s_bad_size(struct world *w)
{
    set_str(&w->ws->home_size, "lots");
}

static void s_too_large(struct world *w)
{
    set_str(&w->ws->home_size, "200Gi");
}

static void s_reserved_env(struct world *w)
{
    struct workspace *ws = w->ws;
    ws->env = calloc(3, sizeof(*ws->env));
    ws->n_env = 3;
    static const char *const names[] = {"A", "B", "HIBERNATOR_X"};
    for (int i = 0; i < 3; i++) {
        ws->env[i].name = strdup(names[i]);
        ws->env[i].value = strdup("v");
    }
}

static void s_checkpoint_env(struct world *w)
{
    s_reserved_env(w);
    set_str(&w->cls->checkpoint_env, "CKPT");
    set_str(&w->ws->env[0].name, "CKPT");
    set_str(&w->ws->env[2].name, "C");
}

static void s_long_name(struct world *w)
{
    set_str(&w->ws->name, "a123456789b123456789c123456789d123456789e123456789f123456789g123");
}

static void s_invalid_running(struct world *w)
{
    running(w);
    w->cls = NULL;
    add_pod(w, "alice-1", READY, T0);
}

static void c_invalid_running(struct world *w, const struct decide_output *o)
{
    (void)w;
    /* the session goes on and says so: Running, with the class's absence
     * in Valid and the status message */
    assert_string_equal(o->status.pod_name, "alice-1");
    assert_string_equal(o->status.node_name, "gpu-1");
    const struct condition *v = workspace_status_condition(&o->status, "Valid");
    assert_non_null(v);
    assert_int_equal(v->status, COND_FALSE);
    assert_string_equal(v->reason, "ClassNotFound");
    assert_non_null(strstr(o->status.message, "spec.className"));
    for (size_t i = 0; i < o->n_actions; i++)
        assert_true(o->actions[i].type == ACTION_EVENT);
}

static void s_invalid_reported(struct world *w)
{
    s_bad_image(w);
    settle(w);
}

static void s_fixed(struct world *w)
{
    s_bad_image(w);
    settle(w);
    set_str(&w->ws->image, "ghcr.io/acme/ide:3");
    w->ws->generation = 2;
}

static void c_fixed(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_cond(o, "Valid", COND_TRUE, "Accepted");
    assert_string_equal(o->status.message, "pod alice-1 is waiting to be scheduled");
}

static void s_invalid_paused(struct world *w)
{
    running(w);
    w->cls = NULL;
    w->ws->paused = 1;
    add_pod(w, "alice-1", READY, T0);
}

static void c_invalid_paused(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_cond(o, "Valid", COND_FALSE, "ClassNotFound");
    assert_int_equal(o->status.pauses, 1);
    /* Without its class no snapshot can be taken, and the Pausing Event
     * says so rather than promising what the class would have kept. */
    const struct action *ev = find_event(o, "Pausing");
    assert_non_null(ev);
    assert_non_null(strstr(ev->message, "the workspace's class is not found, so no snapshot can be "
                                        "taken (the memory is not kept): stopping pod alice-1"));
}

static void s_deleting(struct world *w);

/* Created a second ago with its class, which the class cache has not shown
 * yet. */
static void s_class_not_yet_seen(struct world *w)
{
    s_no_class(w);
    w->ws->created_ms = NOW - 1000;
}

static void c_class_not_yet_seen(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_null(cond(o, "Valid"));
    assert_int_equal(o->requeue_after_ms, 4000);
}

/* Still no class 5 s after creation: missing after all. */
static void s_class_missing_after_grace(struct world *w)
{
    s_no_class(w);
    w->ws->created_ms = NOW - 5000;
}

/* The spec could not be read (the decoder's spec_error). */
static void s_spec_unreadable(struct world *w)
{
    set_str(&w->ws->spec_error, "spec.idle.after: \"99999999999999999999h\" is not a duration");
}

/* ...while a pod runs and the spec, as far as it was read, says paused:
 * nothing is deleted, nothing is created. */
static void s_spec_unreadable_running(struct world *w)
{
    running(w);
    add_pod(w, "alice-1", READY, T0);
    w->ws->paused = 1;
    s_spec_unreadable(w);
}

static void c_frozen_running(struct world *w, const struct decide_output *o)
{
    (void)w;
    assert_string_equal(o->status.pod_name, "alice-1");
    assert_int_equal(o->status.pauses, 0);
    for (size_t i = 0; i < o->n_actions; i++)
        assert_int_equal(o->actions[i].type, ACTION_EVENT);
}

static void s_class_unreadable(struct world *w)
{
    w->cls = NULL;
    w->class_error = "spec.idle.warnBefore: must be shorter than the shortest idle time";
    w->has_pvc = 0;
}

static void c_class_unreadable(struct world *w, const struct decide_output *o)
{
    c_invalid(w, o);
    assert_cond(o, "Valid", COND_FALSE, "InvalidClass");
    const struct condition *c = cond(o, "Valid");
    assert_non_null(strstr(c->message, "WorkspaceClass \"gpu-t4\""));
    assert_non_null(strstr(c->message, "spec.idle.warnBefore"));
}

static void s_class_unreadable_running(struct world *w)
{
    running(w);
    add_pod(w, "alice-1", READY, T0);
    add_pod(w, "alice-2", READY, T0 + MIN); /* an extra pod is not removed either */
    w->ws->paused = 1;
    w->cls = NULL;
    w->class_error =
        "spec.activity.timeout: must be more than 0 and at most spec.activity.interval";
}

static void s_class_fixed(struct world *w)
{
    s_class_unreadable(w);
    settle(w);
    w->cls = w->cls_owned;
    w->class_error = NULL;
}

static void s_deleting_class_unreadable(struct world *w)
{
    s_deleting(w);
    w->cls = NULL;
    w->class_error = "spec.idle.after: must be at least 10s";
}

/* -- deletion -- */

static void s_deleting(struct world *w)
{
    running(w);
    w->ws->deletion_ms = NOW - MIN;
}

static void s_deleting_live(struct world *w)
{
    s_deleting(w);
    add_pod(w, "alice-1", READY, T0);
    add_pod(w, "alice-0", TERM, T0);
}

static void s_deleting_terminating(struct world *w)
{
    s_deleting(w);
    add_pod(w, "alice-1", READY | TERM, T0);
}

static void s_deleting_retain(struct world *w)
{
    s_deleting(w);
    w->cls->home_on_delete = HOME_ON_DELETE_RETAIN;
}

static void s_deleting_no_class(struct world *w)
{
    s_deleting(w);
    w->cls = NULL;
    add_pod(w, "alice-1", READY, T0);
}

static void s_deleting_no_class_gone(struct world *w)
{
    s_deleting(w);
    w->cls = NULL;
    w->cls_owned->home_on_delete = HOME_ON_DELETE_RETAIN;
}

static void s_deleting_no_claim(struct world *w)
{
    s_deleting(w);
    w->has_pvc = 0;
}

static void s_deleting_claim_going(struct world *w)
{
    s_deleting(w);
    w->pvc.deletion_ms = NOW - MIN;
}

static void s_deleting_no_finalizer(struct world *w)
{
    s_deleting(w);
    w->ws->has_finalizer = 0;
}

static const struct row rows[] = {
    /* rules 1, 3, 5c: from nothing */
    {"create from scratch",
     s_fresh,
     WS_STATE_PENDING,
     {"AddFinalizer", "CreatePVC alice-home", "CreatePod alice-1", "Event Normal Created"},
     "pod alice-1 is waiting to be scheduled",
     c_fresh,
     0},
    {"create with finalizer and claim in place",
     NULL,
     WS_STATE_PENDING,
     {"CreatePod alice-1", "Event Normal Created"},
     NULL,
     c_generation_1,
     0},
    /* rule 4: adoption */
    {"adopt after a crash between create and status write",
     s_adopt_after_crash,
     WS_STATE_PENDING,
     {NULL},
     "pod alice-3 is waiting to be scheduled",
     c_adopt_after_crash,
     0},
    {"adopt a pod newer than the status names",
     s_adopt_newer,
     WS_STATE_RUNNING,
     {NULL},
     "pod alice-2 is ready",
     c_adopt_newer,
     0},
    {"adopt keeps a higher pod generation",
     s_adopt_keeps_generation,
     WS_STATE_PENDING,
     {NULL},
     NULL,
     c_generation_5,
     0},
    {"created pod not in the cache yet: same name again",
     s_stale_cache,
     WS_STATE_PENDING,
     {"CreatePod alice-1"},
     NULL,
     c_generation_1,
     1},
    /* rule 5a */
    {"scheduled, not ready",
     s_scheduled,
     WS_STATE_PENDING,
     {NULL},
     "starting on gpu-1",
     c_scheduled,
     0},
    {"ready", s_ready, WS_STATE_RUNNING, {NULL}, "pod alice-1 is ready on gpu-1", c_ready, 0},
    {"running pod not ready any more",
     s_not_ready_again,
     WS_STATE_RUNNING,
     {NULL},
     "pod alice-1 on gpu-1 is not ready",
     c_not_ready_again,
     0},
    /* rules 5b, 5c */
    {"pod gone while running: created again under its name",
     s_pod_lost,
     WS_STATE_PENDING,
     {"CreatePod alice-1"},
     NULL,
     c_pod_lost,
     0},
    {"old pod terminating: wait, create nothing",
     s_old_pod_terminating,
     WS_STATE_PENDING,
     {"Event Warning PodInterrupted"},
     "waiting for pod alice-1 to stop",
     c_interrupted_deleted,
     0},
    /* rule 4: more than one live pod */
    {"two live pods: keep the one the status names",
     s_two_live_named,
     WS_STATE_RUNNING,
     {"DeletePod alice-2 grace=0", "Event Warning DuplicatePod"},
     NULL,
     c_keeps_alice_1,
     0},
    {"two live pods, none named: keep the newest",
     s_two_live_unnamed,
     WS_STATE_PENDING,
     {"DeletePod alice-1 grace=0", "Event Warning DuplicatePod"},
     NULL,
     c_keeps_newest,
     0},
    {"three live pods",
     s_three_live,
     WS_STATE_RUNNING,
     {"DeletePod alice-3 grace=0", "DeletePod alice-1 grace=0", "Event Warning DuplicatePod"},
     "alice-2",
     NULL,
     0},
    {"stopped pod (evicted) is removed, then replaced",
     s_stopped,
     WS_STATE_PENDING,
     {"DeletePod alice-1 grace=0", "Event Warning PodInterrupted"},
     "waiting for pod alice-1 to stop",
     c_interrupted_stopped,
     0},
    /* rule 6 */
    {"pause a running pod",
     s_pause_running,
     WS_STATE_PAUSING,
     {"Event Normal Pausing", "DeletePod alice-1 grace=60"},
     "pod alice-1 is stopping",
     c_pause_running,
     0},
    {"pause a pod that never got a node: no grace",
     s_pause_unscheduled,
     WS_STATE_PAUSING,
     {"Event Normal Pausing", "DeletePod alice-2 grace=0"},
     NULL,
     c_pause_unscheduled,
     0},
    {"pausing, pod terminating: wait",
     s_pausing_terminating,
     WS_STATE_PAUSING,
     {NULL},
     "pod alice-1 is stopping",
     c_pause_counted_once,
     0},
    {"pausing, deletion not seen yet: delete again, no event",
     s_pausing_not_seen,
     WS_STATE_PAUSING,
     {"DeletePod alice-1 grace=60"},
     NULL,
     c_pause_counted_once,
     0},
    {"pausing, pod gone: paused",
     s_pausing_gone,
     WS_STATE_PAUSED,
     {"Event Normal Paused"},
     "paused",
     c_paused,
     0},
    {"created paused: no pause counted",
     s_created_paused,
     WS_STATE_PAUSED,
     {"AddFinalizer", "CreatePVC alice-home", "Event Normal Paused"},
     NULL,
     c_created_paused,
     0},
    {"paused stays paused", s_stays_paused, WS_STATE_PAUSED, {NULL}, NULL, NULL, 1},
    /* rule 5c: resume */
    {"resume creates exactly one pod, from the checkpoint",
     s_resume,
     WS_STATE_RESUMING,
     {"Event Normal Resuming", "CreatePod alice-2 checkpoint"},
     NULL,
     c_resume,
     0},
    {"resume while the old pod terminates creates nothing",
     s_resume_terminating,
     WS_STATE_RESUMING,
     {"Event Normal Resuming"},
     "waiting for pod alice-1 to stop",
     c_resume_terminating,
     0},
    {"resume before the pausing pod was deleted",
     s_resume_pod_still_live,
     WS_STATE_RUNNING,
     {"Event Normal Resuming", "Event Normal Resumed"},
     NULL,
     c_resume_pod_still_live,
     0},
    {"resuming, pod scheduled",
     s_resuming_scheduled,
     WS_STATE_RESUMING,
     {NULL},
     NULL,
     c_resuming_scheduled,
     0},
    {"resuming, pod ready: resumed",
     s_resuming_ready,
     WS_STATE_RUNNING,
     {"Event Normal Resumed"},
     NULL,
     c_resuming_ready,
     0},
    {"resume on a class without accelerator",
     s_resume_cpu,
     WS_STATE_RESUMING,
     {"Event Normal Resuming", "CreatePod alice-2 checkpoint"},
     NULL,
     c_resume_cpu,
     0},
    {"pause during a resume counts a new pause",
     s_pause_after_resume,
     WS_STATE_PAUSING,
     {"Event Normal Pausing", "DeletePod alice-2 grace=60"},
     NULL,
     c_pause_after_resume,
     0},
    /* rule 5a: capacity */
    {"waiting for capacity: no new pod, the scheduler's words",
     s_waiting_new,
     WS_STATE_WAITING_FOR_CAPACITY,
     {NULL},
     SCHED_MSG,
     c_waiting_new,
     0},
    /* Kueue */
    {"queued: Kueue holds the pod; its queue, place and quota said",
     s_queued,
     WS_STATE_QUEUED,
     {NULL},
     QUOTA_MSG,
     c_queued,
     0},
    {"queued, Kueue's words too long for a status message",
     s_queued_long_message,
     WS_STATE_QUEUED,
     {NULL},
     "waits in Kueue queue gpus",
     c_queued_long_message,
     0},
    {"queued, no Workload seen yet",
     s_queued_no_workload,
     WS_STATE_QUEUED,
     {NULL},
     "waits in Kueue queue gpus since",
     c_queued_no_workload,
     0},
    {"admitted, no node: waiting for capacity",
     s_admitted_unschedulable,
     WS_STATE_WAITING_FOR_CAPACITY,
     {NULL},
     SCHED_MSG,
     NULL,
     0},
    {"admitted after it was queued: status.queue goes",
     s_admitted_after_queued,
     WS_STATE_WAITING_FOR_CAPACITY,
     {NULL},
     SCHED_MSG,
     c_queue_cleared,
     0},
    {"a queue the class does not allow",
     s_queue_not_allowed,
     WS_STATE_FAILED,
     {"Event Warning QueueNotAllowed"},
     "spec.localQueue: \"night\" is not a queue class \"gpu-t4\" allows (allowed: gpus, big)",
     NULL,
     0},
    {"a queue, and the class has none",
     s_queue_without_class_queue,
     WS_STATE_FAILED,
     {"Event Warning QueueNotAllowed"},
     "spec.localQueue: \"gpus\": class \"gpu-t4\" sends its pods to no queue",
     NULL,
     0},
    {"still waiting: re-check when the timeout is due",
     s_waiting_10m,
     WS_STATE_WAITING_FOR_CAPACITY,
     {NULL},
     SCHED_MSG,
     c_waiting_10m,
     0},
    {"capacity timeout, Fail: delete the pending pod",
     s_timeout_fail,
     WS_STATE_FAILED,
     {"DeletePod alice-2 grace=0", "Event Warning CapacityTimeout"},
     NULL,
     c_timeout_fail,
     0},
    {"capacity timeout, Wait: say so once",
     s_timeout_wait,
     WS_STATE_WAITING_FOR_CAPACITY,
     {"Event Warning CapacityTimeout"},
     NULL,
     c_timeout_wait,
     0},
    {"capacity timeout, Wait, later pass: no second event",
     s_timeout_wait_again,
     WS_STATE_WAITING_FOR_CAPACITY,
     {NULL},
     "still waiting for capacity after 30m",
     NULL,
     1},
    {"after Fail, pod gone: stay failed, no loop",
     s_failed_gone,
     WS_STATE_FAILED,
     {NULL},
     "no capacity after 30m",
     c_failed_gone,
     0},
    {"after Fail, pod still shows: delete it again",
     s_failed_pod_shows,
     WS_STATE_FAILED,
     {"DeletePod alice-2 grace=0"},
     NULL,
     NULL,
     1},
    {"after Fail, the spec changed: try again with a new pod",
     s_failed_spec_changed,
     WS_STATE_RESUMING,
     {"CreatePod alice-3 checkpoint"},
     NULL,
     c_failed_spec_changed,
     0},
    {"after Fail, the spec changed before the pod was seen gone",
     s_failed_spec_changed_early,
     WS_STATE_RESUMING,
     {"CreatePod alice-3 checkpoint"},
     NULL,
     c_failed_spec_changed,
     0},
    {"after Fail, the spec changed while the pod still shows",
     s_failed_spec_changed_pod_shows,
     WS_STATE_WAITING_FOR_CAPACITY,
     {NULL},
     SCHED_MSG,
     c_failed_spec_changed_pod_shows,
     0},
    {"capacity found: the wait ends",
     s_capacity_found,
     WS_STATE_RESUMING,
     {NULL},
     NULL,
     c_capacity_found,
     0},
    /* rule 5a: onCapacityTimeout FallBack */
    {"capacity timeout, Wait, alternatives listed: still waits",
     s_timeout_wait_alternatives,
     WS_STATE_WAITING_FOR_CAPACITY,
     {"Event Warning CapacityTimeout"},
     NULL,
     c_timeout_wait,
     0},
    {"capacity timeout, Fail, alternatives listed: still fails",
     s_timeout_fail_alternatives,
     WS_STATE_FAILED,
     {"DeletePod alice-2 grace=0", "Event Warning CapacityTimeout"},
     NULL,
     c_timeout_fail,
     0},
    {"capacity timeout, FallBack: the pinned pod goes, once",
     s_timeout_fallback,
     WS_STATE_RESUMING,
     {"DeletePod alice-2 grace=0", "Event Warning CapacityFallback"},
     "waiting for pod alice-2 to stop before starting a new one",
     c_timeout_fallback,
     0},
    {"FallBack, the pinned pod gone: a pod for any allowed product, from the checkpoint",
     s_fallback_create,
     WS_STATE_RESUMING,
     {"CreatePod alice-2 checkpoint fallback"},
     NULL,
     c_fallback_create,
     0},
    {"FallBack decided in a pass whose status was lost: the fallback pod still comes",
     s_fallback_decision_lost,
     WS_STATE_RESUMING,
     {"CreatePod alice-2 checkpoint fallback"},
     NULL,
     c_fallback_create,
     0},
    {"a fallback pod that waits past the timeout is not replaced again",
     s_fallback_pod_waits,
     WS_STATE_WAITING_FOR_CAPACITY,
     {"Event Warning CapacityTimeout"},
     "still waiting for capacity after 30m",
     c_fallback_pod_waits,
     0},
    {"the fallback pod is ready on an L4: the status names the L4",
     s_fallback_on_l4,
     WS_STATE_RUNNING,
     {"Event Normal Resumed"},
     NULL,
     c_fallback_on_l4,
     0},
    {"the node cache names the product of the pod's node",
     s_node_product,
     WS_STATE_RUNNING,
     {NULL},
     NULL,
     c_node_product,
     0},
    /* rule 2 */
    {"class missing",
     s_no_class,
     WS_STATE_FAILED,
     {"Event Warning ClassNotFound"},
     "spec.className: WorkspaceClass \"gpu-t4\" not found",
     c_invalid,
     0},
    {"image not allowed",
     s_bad_image,
     WS_STATE_FAILED,
     {"Event Warning ImageNotAllowed"},
     "spec.image: \"docker.io/evil:1\" is not allowed by class \"gpu-t4\" (allowed: "
     "quay.io/jupyter/*, ghcr.io/acme/*)",
     c_invalid,
     0},
    {"home size not a quantity",
     s_bad_size,
     WS_STATE_FAILED,
     {"Event Warning InvalidHomeSize"},
     "spec.home.size: \"lots\" is not a size",
     c_invalid,
     0},
    {"home size above the class maximum",
     s_too_large,
     WS_STATE_FAILED,
     {"Event Warning HomeTooLarge"},
     "spec.home.size: 200Gi is larger than the class maximum 100Gi",
     c_invalid,
     0},
    {"reserved env name",
     s_reserved_env,
     WS_STATE_FAILED,
     {"Event Warning ReservedEnv"},
     "spec.env[2].name: \"HIBERNATOR_X\" is reserved",
     c_invalid,
     0},
    {"the class's checkpoint env name",
     s_checkpoint_env,
     WS_STATE_FAILED,
     {"Event Warning ReservedEnv"},
     "spec.env[0].name: \"CKPT\" is reserved",
     c_invalid,
     0},
    {"name too long for a label",
     s_long_name,
     WS_STATE_FAILED,
     {"Event Warning NameTooLong"},
     "metadata.name: ",
     c_invalid,
     0},
    {"class gone while running: the pod stays, the workspace Running",
     s_invalid_running,
     WS_STATE_RUNNING,
     {"Event Warning ClassNotFound"},
     "spec.className",
     c_invalid_running,
     0},
    {"invalid, already reported: no second event",
     s_invalid_reported,
     WS_STATE_FAILED,
     {NULL},
     "spec.image",
     NULL,
     1},
    {"fixing the field recovers",
     s_fixed,
     WS_STATE_PENDING,
     {"CreatePod alice-1", "Event Normal Created"},
     NULL,
     c_fixed,
     0},
    {"invalid and paused: the pause is still done",
     s_invalid_paused,
     WS_STATE_PAUSING,
     {"Event Warning ClassNotFound", "Event Normal Pausing", "DeletePod alice-1 grace=30"},
     "spec.className",
     c_invalid_paused,
     0},
    {"class not in the cache a second after creation: waited for, not reported",
     s_class_not_yet_seen,
     WS_STATE_PENDING,
     {NULL},
     NULL,
     c_class_not_yet_seen,
     0},
    {"class still missing 5 s after creation: reported",
     s_class_missing_after_grace,
     WS_STATE_FAILED,
     {"Event Warning ClassNotFound"},
     "spec.className: WorkspaceClass \"gpu-t4\" not found",
     c_invalid,
     0},
    {"spec unreadable: reported, nothing created",
     s_spec_unreadable,
     WS_STATE_FAILED,
     {"Event Warning InvalidSpec"},
     "spec.idle.after: \"99999999999999999999h\" is not a duration",
     c_invalid,
     0},
    {"spec unreadable while running: nothing deleted, not even a pause",
     s_spec_unreadable_running,
     WS_STATE_FAILED,
     {"Event Warning InvalidSpec"},
     "spec.idle.after",
     c_frozen_running,
     0},
    {"class unreadable: every workspace of it says which field",
     s_class_unreadable,
     WS_STATE_FAILED,
     {"Event Warning InvalidClass"},
     "spec.className: WorkspaceClass \"gpu-t4\" cannot be used: spec.idle.warnBefore",
     c_class_unreadable,
     0},
    {"class unreadable while running and paused: nothing deleted or created",
     s_class_unreadable_running,
     WS_STATE_FAILED,
     {"Event Warning InvalidClass"},
     "spec.activity.timeout",
     c_frozen_running,
     0},
    {"class fixed: the workspace recovers",
     s_class_fixed,
     WS_STATE_PENDING,
     {"CreatePVC alice-home", "CreatePod alice-1", "Event Normal Created"},
     NULL,
     NULL,
     0},
    /* rule 0 */
    {"deleting: stop the pods",
     s_deleting_live,
     WS_STATE_RUNNING,
     {"DeletePod alice-1 grace=60"},
     NULL,
     NULL,
     1},
    {"deleting: wait for pods to go",
     s_deleting_terminating,
     WS_STATE_RUNNING,
     {NULL},
     NULL,
     NULL,
     1},
    {"deleting, onDelete Delete",
     s_deleting,
     WS_STATE_RUNNING,
     {"DeletePVC alice-home", "RemoveFinalizer"},
     NULL,
     NULL,
     1},
    {"deleting, onDelete Retain",
     s_deleting_retain,
     WS_STATE_RUNNING,
     {"ReleasePVC alice-home", "RemoveFinalizer"},
     NULL,
     NULL,
     1},
    {"deleting without a class: default grace",
     s_deleting_no_class,
     WS_STATE_RUNNING,
     {"DeletePod alice-1 grace=30"},
     NULL,
     NULL,
     1},
    {"deleting with an unreadable class: the claim is kept, not deleted",
     s_deleting_class_unreadable,
     WS_STATE_RUNNING,
     {"ReleasePVC alice-home", "RemoveFinalizer"},
     NULL,
     NULL,
     1},
    {"deleting without a class: the claim goes",
     s_deleting_no_class_gone,
     WS_STATE_RUNNING,
     {"DeletePVC alice-home", "RemoveFinalizer"},
     NULL,
     NULL,
     1},
    {"deleting, no claim",
     s_deleting_no_claim,
     WS_STATE_RUNNING,
     {"RemoveFinalizer"},
     NULL,
     NULL,
     1},
    {"deleting, claim already going",
     s_deleting_claim_going,
     WS_STATE_RUNNING,
     {"RemoveFinalizer"},
     NULL,
     NULL,
     1},
    {"deleting, finalizer already gone",
     s_deleting_no_finalizer,
     WS_STATE_RUNNING,
     {"DeletePVC alice-home"},
     NULL,
     NULL,
     1},
    /* what was lost */
    {"paused, the home claim deleted: said, not made again",
     s_home_lost_paused,
     WS_STATE_PAUSED,
     {"Event Warning HomeLost"},
     NULL,
     c_home_lost_paused,
     0},
    {"paused, the home claim deleted, onLoss Recreate: a new claim at once",
     s_home_lost_recreate,
     WS_STATE_PAUSED,
     {"Event Warning HomeLost", "CreatePVC alice-home"},
     NULL,
     NULL,
     0},
    {"resume on a lost home not acknowledged: no pod",
     s_home_lost_resume,
     WS_STATE_RESUMING,
     {"Event Normal Resuming"},
     "no pod starts",
     c_home_lost_resume,
     0},
    {"resume on a lost home acknowledged: a new claim, a pod without the checkpoint",
     s_home_lost_acknowledged,
     WS_STATE_RESUMING,
     {"Event Normal HomeLossAcknowledged", "CreatePVC alice-home", "Event Normal Resuming",
      "CreatePod alice-2"},
     NULL,
     c_home_lost_acknowledged,
     0},
    {"the home claim replaced under another uid",
     s_home_replaced,
     WS_STATE_PAUSED,
     {"Event Warning HomeLost"},
     NULL,
     c_home_replaced,
     0},
    {"evicted: the DisruptionTarget condition says so",
     s_evicted,
     WS_STATE_PENDING,
     {"Event Warning PodInterrupted"},
     NULL,
     c_evicted,
     0},
    {"OOM-killed and stopped",
     s_oom_killed,
     WS_STATE_PENDING,
     {"DeletePod alice-1 grace=0", "Event Warning PodInterrupted"},
     NULL,
     c_oom_killed,
     0},
    {"seen, then gone: the pod cache's last sight says the node went",
     s_gone_node_gc,
     WS_STATE_PENDING,
     {"Event Warning PodInterrupted", "CreatePod alice-2 checkpoint", "Event Normal Created"},
     NULL,
     c_gone_node_gc,
     0},
    {"seen, then gone with its node",
     s_gone_node_absent,
     WS_STATE_PENDING,
     {"Event Warning PodInterrupted", "CreatePod alice-2 checkpoint", "Event Normal Created"},
     NULL,
     c_gone_node_absent,
     0},
    {"the controller's own delete is no interruption",
     s_own_delete,
     WS_STATE_PENDING,
     {NULL},
     "waiting for pod alice-1 to stop",
     c_no_interruption,
     0},
};

static void check_actions(const struct row *r, const struct decide_output *o)
{
    size_t want = 0;
    while (want < sizeof(r->actions) / sizeof(r->actions[0]) && r->actions[want])
        want++;
    char got[DECIDE_MAX_ACTIONS][160];
    for (size_t i = 0; i < o->n_actions; i++)
        action_str(&o->actions[i], got[i], sizeof(got[i]));
    int same = want == o->n_actions;
    for (size_t i = 0; same && i < want; i++)
        same = strcmp(got[i], r->actions[i]) == 0;
    if (same)
        return;
    char msg[DECIDE_MAX_ACTIONS * 170] = "";
    size_t used = 0;
    for (size_t i = 0; i < o->n_actions && used < sizeof(msg); i++) {
        int w = snprintf(msg + used, sizeof(msg) - used, "\n    %s", got[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    fail_msg("%s: actions differ; got:%s", r->name, msg);
}

static void run_row(const struct row *r)
{
    struct world w;
    world_init(&w);
    if (r->setup)
        r->setup(&w);
    struct decide_output o;
    decide(&w, &o);
    check_shape(&w, &o);
    check_actions(r, &o);
    if (o.status.state != r->state)
        fail_msg("%s: state %s, want %s", r->name, workspace_state_name(o.status.state),
                 workspace_state_name(r->state));
    if (r->message && (!o.status.message || !strstr(o.status.message, r->message)))
        fail_msg("%s: message \"%s\", want \"%s\"", r->name,
                 o.status.message ? o.status.message : "(null)", r->message);
    if (r->unchanged && o.status_changed)
        fail_msg("%s: status changed", r->name);
    if (!w.ws->deletion_ms && !r->unchanged && !o.status_changed)
        fail_msg("%s: status did not change", r->name);
    if (w.ws->deletion_ms)
        assert_true(workspace_status_equal(&o.status, st(&w)));
    if (r->check)
        r->check(&w, &o);

    /* The same world again with the new status: a fixed point. */
    if (!w.ws->deletion_ms) {
        struct decide_output again;
        struct workspace_status saved;
        assert_int_equal(workspace_status_copy(st(&w), &saved), 0);
        write_status(&w, &o);
        decide(&w, &again);
        if (again.status_changed)
            fail_msg("%s: a second pass on the same world changed the status", r->name);
        decide_output_clear(&again);

        /* And once the actions are done: no change, no event. */
        apply(&w, &o);
        decide(&w, &again);
        if (again.status_changed || count_events(&again) > 0)
            fail_msg("%s: the pass after the actions changed the status (%d) or emitted %zu "
                     "events",
                     r->name, again.status_changed, count_events(&again));
        for (size_t i = 0; i < again.n_actions; i++)
            assert_int_not_equal(again.actions[i].type, ACTION_CREATE_POD);
        decide_output_clear(&again);
        workspace_status_clear(&saved);
    }
    decide_output_clear(&o);
    world_free(&w);
}

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        run_row(&rows[i]);
}

/* ---- Available, and the accelerator kubectl get shows ---- */

static void with_restored(struct world *w, enum condition_status status, const char *reason)
{
    assert_int_equal(workspace_status_set_condition(st(w), "Restored", status, reason,
                                                    "how pod alice-1 starts", w->ws->generation,
                                                    NOW - MIN),
                     0);
}

static void s_ready_fresh(struct world *w)
{
    s_ready(w);
    with_restored(w, COND_TRUE, "Fresh");
}

static void s_ready_fresh_home(struct world *w)
{
    s_ready(w);
    with_restored(w, COND_TRUE, "FreshHome");
}

static void s_ready_restoring(struct world *w)
{
    s_ready(w);
    with_restored(w, COND_UNKNOWN, "Restoring");
}

static void s_ready_cold(struct world *w)
{
    s_ready(w);
    with_restored(w, COND_TRUE, "ColdStart");
}

static void s_ready_from_snapshot(struct world *w)
{
    s_ready(w);
    with_restored(w, COND_TRUE, "FromSnapshot");
}

static void s_resumed_from_checkpoint(struct world *w)
{
    s_resuming_ready(w);
    with_restored(w, COND_TRUE, "FromCheckpoint");
}

/* Available=True only once the pod is ready and how its session came back
 * is known; status.accelerator.product only while a pod holds or waits for
 * the accelerator. */
static void test_available(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        void (*setup)(struct world *w);
        enum condition_status want;
        const char *reason;
        const char *product; /* NULL: none shown */
    } cases[] = {
        {"created: not ready, the GPU asked for", s_fresh, COND_FALSE, "NotReady", "Tesla-T4"},
        {"scheduled, starting", s_scheduled, COND_FALSE, "NotReady", "Tesla-T4"},
        {"ready, never paused: fresh", s_ready_fresh, COND_TRUE, "Fresh", "Tesla-T4"},
        {"ready on a new home: fresh", s_ready_fresh_home, COND_TRUE, "Fresh", "Tesla-T4"},
        {"ready, how it started not recorded", s_ready, COND_TRUE, "PodReady", "Tesla-T4"},
        {"ready, the restore's verdict unknown", s_ready_restoring, COND_FALSE, "Restoring",
         "Tesla-T4"},
        {"ready, cold-started: from files", s_ready_cold, COND_TRUE, "FromCheckpoint", "Tesla-T4"},
        {"ready, restored", s_ready_from_snapshot, COND_TRUE, "FromSnapshot", "Tesla-T4"},
        {"ready again after a crash: not available", s_not_ready_again, COND_FALSE, "NotReady",
         "Tesla-T4"},
        {"pausing: the pod still holds the GPU", s_pause_running, COND_FALSE, "NotReady",
         "Tesla-T4"},
        {"paused: the GPU given back", s_pausing_gone, COND_FALSE, "Paused", NULL},
        {"created paused: nothing held", s_created_paused, COND_FALSE, "Paused", NULL},
        {"resuming: the GPU asked for again", s_resume, COND_FALSE, "NotReady", "Tesla-T4"},
        {"resumed from files and the checkpoint", s_resumed_from_checkpoint, COND_TRUE,
         "FromCheckpoint", "Tesla-T4"},
        {"waiting for capacity: the GPU awaited", s_waiting_new, COND_FALSE, "NotReady",
         "Tesla-T4"},
        {"failed for capacity, pod gone: nothing awaited", s_failed_gone, COND_FALSE, "NotReady",
         NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct world w;
        world_init(&w);
        cases[i].setup(&w);
        struct decide_output o;
        decide(&w, &o);
        const struct condition *c = cond(&o, "Available");
        if (!c || c->status != cases[i].want || strcmp(c->reason, cases[i].reason) != 0)
            fail_msg("%s: Available %d/%s, want %d/%s", cases[i].name, c ? (int)c->status : -1,
                     c ? c->reason : "(none)", cases[i].want, cases[i].reason);
        if (!c->message || !c->message[0])
            fail_msg("%s: Available has no message", cases[i].name);
        const char *product = o.status.accelerator_product;
        if ((product == NULL) != (cases[i].product == NULL) ||
            (product && strcmp(product, cases[i].product) != 0))
            fail_msg("%s: accelerator.product %s, want %s", cases[i].name,
                     product ? product : "(none)", cases[i].product ? cases[i].product : "(none)");
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* ---- lastTransitionTime ---- */

static void test_transition_times(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    w.now = T0;
    settle(&w); /* creates alice-1 */
    add_pod(&w, "alice-1", 0, T0);
    const struct condition *c = workspace_status_condition(st(&w), "Ready");
    assert_int_equal(c->last_transition_ms, T0);
    assert_int_equal(workspace_status_condition(st(&w), "Valid")->last_transition_ms, T0);

    /* scheduled: Ready stays False, its time stays */
    w.pods[0].node_name = "gpu-1";
    w.pods[0].scheduled = 1;
    w.now = T0 + 5 * SEC;
    settle(&w);
    c = workspace_status_condition(st(&w), "Ready");
    assert_string_equal(c->reason, "PodStarting");
    assert_int_equal(c->last_transition_ms, T0);
    assert_int_equal(workspace_status_condition(st(&w), "CapacityAvailable")->last_transition_ms,
                     T0 + 5 * SEC);

    /* ready: the time moves */
    w.pods[0].ready = 1;
    w.now = T0 + 20 * SEC;
    settle(&w);
    c = workspace_status_condition(st(&w), "Ready");
    assert_int_equal(c->status, COND_TRUE);
    assert_int_equal(c->last_transition_ms, T0 + 20 * SEC);

    /* later passes: nothing moves */
    w.now = T0 + 60 * MIN;
    struct decide_output o;
    decide(&w, &o);
    assert_false(o.status_changed);
    assert_int_equal(cond(&o, "Ready")->last_transition_ms, T0 + 20 * SEC);
    assert_int_equal(cond(&o, "Valid")->last_transition_ms, T0);
    assert_int_equal(cond(&o, "CapacityAvailable")->last_transition_ms, T0 + 5 * SEC);
    assert_int_equal(cond(&o, "Restored")->last_transition_ms, T0);
    decide_output_clear(&o);
    world_free(&w);
}

/* ---- random worlds: the safety rules ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

/* A second sequence for the capacity fallback's dimensions, so that adding
 * them left the worlds of the first as they were. */
static uint64_t rng2_state = 0x2545f4914f6cdd1du;

static unsigned rnd2(unsigned n)
{
    rng2_state ^= rng2_state << 13;
    rng2_state ^= rng2_state >> 7;
    rng2_state ^= rng2_state << 17;
    return (unsigned)(rng2_state % n);
}

static size_t count_actions(const struct decide_output *o, enum action_type type)
{
    size_t n = 0;
    for (size_t i = 0; i < o->n_actions; i++)
        n += o->actions[i].type == type;
    return n;
}

/* The latest probe round (ok), with the application's last activity. */
static void probe_round(struct world *w, int64_t at, int64_t last_activity, int busy)
{
    w->has_obs = 1;
    w->obs.probed_at_ms = at;
    probe_result_init(&w->obs.result, "jupyter");
    w->obs.result.last_activity_ms = last_activity;
    w->obs.result.busy = busy;
    w->obs.result.connections = 1;
}

static void failed_round(struct world *w, int64_t at, const char *error)
{
    w->has_obs = 1;
    w->obs.probed_at_ms = at;
    probe_result_fail(&w->obs.result, "jupyter", "%s", error);
}

/* Idle detection in a random world: a class with or without a probe, a
 * latest round (ok or failed, from any time), the record and the
 * announcement a pass may have written, the annotations and the spec. */
static void random_activity(struct world *w)
{
    struct workspace *ws = w->ws;
    struct workspace_status *s = st(w);
    struct workspace_class *c = w->cls_owned;
    static const enum activity_application apps[] = {ACTIVITY_APP_NONE, ACTIVITY_APP_JUPYTER,
                                                     ACTIVITY_APP_CODE_SERVER};
    c->activity.application = apps[rnd(3)];
    if (rnd(4) == 0)
        set_str(&c->activity.prometheus_url, "http://prometheus:9090");
    c->idle.auto_pause = rnd(5) != 0;
    if (rnd(4) == 0) {
        c->idle.schedule.windows[0] = (struct pause_window){
            .days = rnd(128), .start_minute = (int)rnd(1440), .end_minute = (int)rnd(1440)};
        c->idle.schedule.n_windows = 1;
    }
    if (rnd(6) == 0)
        w->zone = NULL;
    if (rnd(3) == 0) {
        /* most often: a running session on a ready pod */
        s->state = WS_STATE_RUNNING;
        set_str(&s->pod_name, "alice-1");
        struct workspace_pod *p = find_pod(w, "alice-1");
        if (!p)
            p = add_pod(w, "alice-1", READY, NOW - 300 * MIN);
        p->ready = p->scheduled = 1;
        p->node_name = "gpu-1";
        p->phase = "Running";
        p->deletion_ms = 0;
        p->unschedulable = 0;
    }
    if (rnd(4) != 0) {
        /* rounds have milliseconds; the status has whole seconds */
        int64_t at = (rnd(2) ? NOW - (int64_t)rnd(240) * 30 * SEC : NOW - (int64_t)rnd(300) * SEC) -
                     (int64_t)rnd(1000);
        if (rnd(5) == 0) {
            failed_round(w, at, "GET http://10.0.0.5:8888/api/status: HTTP 503");
        } else {
            probe_round(w, at, rnd(4) ? at - (int64_t)rnd(240) * MIN - (int64_t)rnd(1000) : 0,
                        rnd(5) == 0);
            if (rnd(4) == 0) {
                snprintf(w->obs.result.source, sizeof(w->obs.result.source), "jupyter+gpu");
                w->obs.result.gpu_utilisation = rnd(20);
                w->obs.result.no_data = rnd(3) == 0;
            }
        }
    }
    if (rnd(2))
        s->state_since_ms = NOW - (int64_t)rnd(240) * MIN;
    if (rnd(2)) {
        s->activity->last_activity_ms = NOW - (int64_t)rnd(240) * MIN;
        set_str(&s->activity->last_activity_source, rnd(2) ? "jupyter" : "start");
    }
    if (rnd(3) == 0) {
        set_cond(w, "Idle", COND_TRUE, "PauseScheduled", "m");
        s->activity->pause_at_ms = NOW + ((int64_t)rnd(21) - 10) * MIN;
        s->activity->idle_since_ms = NOW - (int64_t)rnd(240) * MIN;
    }
    if (rnd(5) == 0)
        ws->annotated_activity_ms = NOW + ((int64_t)rnd(21) - 15) * 10 * MIN;
    if (rnd(5) == 0)
        ws->keep_alive_until_ms = NOW + ((int64_t)rnd(41) - 20) * 30 * MIN;
    if (rnd(5) == 0)
        ws->idle_after_ms = (int64_t)rnd(5) * 30 * MIN;
    if (rnd(5) == 0) {
        ws->auto_paused_ms = NOW - (int64_t)rnd(120) * MIN;
        set_str(&ws->auto_pause_message, "idle for 1h");
    }
}

static void random_world(struct world *w)
{
    world_init(w);
    struct workspace *ws = w->ws;
    struct workspace_status *s = st(w);
    ws->generation = 1 + rnd(3);
    ws->paused = rnd(2);
    ws->has_finalizer = rnd(4) != 0;
    if (rnd(8) == 0)
        ws->deletion_ms = NOW - MIN;
    if (rnd(10) == 0)
        w->cls = NULL;
    w->cls_owned->on_capacity_timeout = rnd(2) ? CAPACITY_TIMEOUT_FAIL : CAPACITY_TIMEOUT_WAIT;
    if (rnd2(3) == 0)
        w->cls_owned->on_capacity_timeout = CAPACITY_TIMEOUT_FALL_BACK;
    if (rnd2(2) || w->cls_owned->on_capacity_timeout == CAPACITY_TIMEOUT_FALL_BACK)
        alternatives(w->cls_owned);
    w->cls_owned->home_on_delete = rnd(2) ? HOME_ON_DELETE_RETAIN : HOME_ON_DELETE_DELETE;
    w->cls_owned->has_accelerator = rnd(4) != 0;
    if (rnd(8) == 0)
        set_str(&ws->image, "docker.io/evil:1");
    w->has_pvc = rnd(4) != 0;

    static const char *const pod_names[] = {NULL, "alice-1", "alice-2", "alice-3"};
    s->state = (enum workspace_state)rnd(WS_STATE_FAILED + 1);
    set_str(&s->pod_name, pod_names[rnd(4)]);
    s->pod_generation = rnd(4);
    s->observed_generation = ws->generation - rnd(2);
    s->resumes = rnd(3);
    s->pauses = s->resumes + rnd(2);
    s->accelerator_fallback = rnd2(4) == 0;
    if (rnd(2))
        s->waiting_for_capacity_since_ms = NOW - (int64_t)rnd(60) * MIN;
    if (rnd(2))
        s->last_pause->accelerator_released_ms = NOW - (int64_t)rnd(600) * MIN;
    if (rnd(2))
        s->last_resume->requested_ms = NOW - (int64_t)rnd(60) * MIN;
    if (rnd(2))
        s->last_resume->ready_ms = NOW - (int64_t)rnd(60) * MIN;
    static const char *const cap_reasons[] = {NULL, "Unschedulable", "CapacityTimeout",
                                              "Scheduled"};
    const char *cap = cap_reasons[rnd(4)];
    if (cap)
        set_cond(w, "CapacityAvailable", strcmp(cap, "Scheduled") ? COND_FALSE : COND_TRUE, cap,
                 "m");
    if (rnd(2))
        set_cond(w, "Valid", rnd(2) ? COND_TRUE : COND_FALSE, "ImageNotAllowed", "m");

    unsigned used = 0;
    size_t n = rnd(4);
    for (size_t i = 0; i < n; i++) {
        unsigned k = 1 + rnd(4);
        if (used & (1u << k))
            continue;
        used |= 1u << k;
        char name[16];
        snprintf(name, sizeof(name), "alice-%u", k);
        int flags = (int)rnd(64) | (rnd2(4) == 0 ? FALLBACK : 0);
        add_pod(w, name, flags, NOW - (int64_t)rnd(100) * MIN);
    }
    random_activity(w);
}

static int pod_is_live(const struct workspace_pod *p)
{
    return !p->deletion_ms && strcmp(p->phase, "Failed") != 0;
}

/* An automatic pause only for a Running workspace with a ready pod, on a
 * round that succeeded, and never beside a pod being created or deleted. */
static void check_auto_pause(const struct world *w, const struct decide_output *o,
                             const struct action *a)
{
    const struct workspace *ws = w->ws;
    assert_false(ws->paused);
    assert_false(ws->deletion_ms);
    assert_true(w->cls != NULL);
    assert_int_equal(o->status.state, WS_STATE_RUNNING);
    int ready = 0;
    for (size_t i = 0; i < w->n_pods; i++)
        ready |= w->pods[i].ready && !w->pods[i].deletion_ms &&
                 strcmp(w->pods[i].phase, "Failed") != 0 && o->status.pod_name &&
                 strcmp(w->pods[i].name, o->status.pod_name) == 0;
    if (!ready)
        fail_msg("automatic pause without a ready pod");
    assert_true(w->has_obs && w->obs.result.ok);
    assert_true(w->obs.probed_at_ms <= w->now);
    assert_true(o->status.activity->pause_at_ms &&
                w->obs.probed_at_ms >= o->status.activity->pause_at_ms);
    assert_int_equal(a->time_ms, w->now);
    assert_non_null(a->message);
    size_t n_auto = 0;
    for (size_t i = 0; i < o->n_actions; i++) {
        enum action_type t = o->actions[i].type;
        if (t == ACTION_CREATE_POD || t == ACTION_DELETE_POD)
            fail_msg("automatic pause beside %s", action_type_name(t));
        n_auto += t == ACTION_AUTO_PAUSE;
    }
    assert_int_equal(n_auto, 1);
}

static void check_safety(struct world *w, const struct decide_output *o)
{
    const struct workspace *ws = w->ws;
    const struct workspace_status *old = st(w);
    size_t n_live = 0;
    for (size_t i = 0; i < w->n_pods; i++)
        n_live += pod_is_live(&w->pods[i]);
    int invalid = !w->cls || (ws->image && !workspace_class_allows_image(w->cls, ws->image));
    const struct condition *old_cap = workspace_status_condition(old, "CapacityAvailable");
    int failed_for_capacity =
        old->state == WS_STATE_FAILED && old_cap && strcmp(old_cap->reason, "CapacityTimeout") == 0;

    size_t creates = 0;
    for (size_t i = 0; i < o->n_actions; i++) {
        const struct action *a = &o->actions[i];
        switch (a->type) {
        case ACTION_CREATE_POD:
            creates++;
            /* never beside another pod, never for a workspace that should not run */
            assert_int_equal(w->n_pods, 0);
            assert_false(ws->paused);
            assert_false(ws->deletion_ms);
            assert_false(invalid);
            /* a fallback only where the class says so */
            if (a->capacity_fallback)
                assert_int_equal(w->cls->on_capacity_timeout, CAPACITY_TIMEOUT_FALL_BACK);
            break;
        case ACTION_DELETE_POD: {
            struct workspace_pod *p = find_pod(w, a->name);
            assert_non_null(p);
            if (!pod_is_live(p) || ws->deletion_ms || ws->paused)
                break;
            /* a running session is only stopped when it has a twin, or when
             * its wait for capacity timed out under a Fail policy, or under
             * FallBack when it is not a fallback itself */
            int fail = w->cls && w->cls->on_capacity_timeout == CAPACITY_TIMEOUT_FAIL;
            int fall_back = w->cls && w->cls->on_capacity_timeout == CAPACITY_TIMEOUT_FALL_BACK &&
                            !p->capacity_fallback;
            int timeout =
                (fail || fall_back) && !p->ready && (p->unschedulable || failed_for_capacity);
            if (!(n_live > 1 || timeout || failed_for_capacity))
                fail_msg("deleted live pod %s", p->name);
            assert_false(invalid);
            break;
        }
        case ACTION_CREATE_PVC:
            assert_false(invalid);
            assert_false(w->has_pvc);
            break;
        case ACTION_DELETE_PVC:
        case ACTION_RELEASE_PVC:
        case ACTION_REMOVE_FINALIZER:
            assert_true(ws->deletion_ms);
            assert_int_equal(w->n_pods, 0);
            break;
        case ACTION_ADD_FINALIZER:
            assert_false(ws->has_finalizer);
            break;
        case ACTION_EVENT:
            assert_false(ws->deletion_ms);
            break;
        case ACTION_AUTO_PAUSE:
            check_auto_pause(w, o, a);
            break;
        case ACTION_AUTO_RESUME:
            /* only a paused, valid workspace that asks for it, of a class that allows it */
            assert_true(ws->paused);
            assert_false(invalid);
            assert_non_null(ws->prewarm);
            assert_true(w->cls->prewarm.enabled);
            assert_true(a->for_ms > w->now);
            break;
        case ACTION_SNAPSHOT_BEGIN:
        case ACTION_SNAPSHOT_DELETE:
        case ACTION_APP_CHECKPOINT:
            fail_msg("a snapshot without a backend");
            break;
        case ACTION_RAISE_PRIORITY:
            /* only a pod of a class with a pre-warm priority */
            assert_non_null(w->cls);
            assert_non_null(w->cls->queue.prewarm_priority_class);
            break;
        }
    }
    assert_true(creates <= 1);
    if (ws->deletion_ms)
        assert_false(o->status_changed);
}

static void test_random_worlds(void **state)
{
    (void)state;
    size_t auto_pauses = 0, warnings = 0, cancels = 0, fallbacks = 0;
    for (int iter = 0; iter < 20000; iter++) {
        struct world w;
        random_world(&w);
        struct decide_output o;
        decide(&w, &o);
        check_shape(&w, &o);
        check_safety(&w, &o);
        auto_pauses += count_actions(&o, ACTION_AUTO_PAUSE);
        warnings += find_event(&o, "IdleWarning") != NULL;
        cancels += find_event(&o, "IdleCancelled") != NULL;
        fallbacks += find_event(&o, "CapacityFallback") != NULL;

        /* the same world again: a fixed point, and events do not repeat
         * (but for pods that are still there to be removed) */
        if (!w.ws->deletion_ms) {
            write_status(&w, &o);
            struct decide_output again;
            decide(&w, &again);
            if (again.status_changed) {
                fail_msg("iteration %d: status changed on the second pass: %s -> %s", iter,
                         status_text(st(&w)), status_text(&again.status));
            }
            for (size_t i = 0; i < again.n_actions; i++) {
                const struct action *a = &again.actions[i];
                if (a->type == ACTION_EVENT && strcmp(a->reason, "DuplicatePod") != 0 &&
                    strcmp(a->reason, "PodStopped") != 0)
                    fail_msg("iteration %d: event %s repeated", iter, a->reason);
            }
            decide_output_clear(&again);
        }
        decide_output_clear(&o);
        world_free(&w);
    }
    /* the search reaches the idle rules it is meant to check */
    fprintf(stderr,
            "random worlds: %zu automatic pauses, %zu warnings, %zu cancellations, %zu capacity "
            "fallbacks\n",
            auto_pauses, warnings, cancels, fallbacks);
    assert_true(auto_pauses > 0 && warnings > 0 && cancels > 0 && fallbacks > 0);
}

/* ---- a small cluster: whole lifecycles ---- */

struct cluster {
    struct world w;
    int capacity;      /* a GPU is free */
    int alt_capacity;  /* an NVIDIA-L4 is free (node gpu-l4) */
    int drop_writes;   /* the controller dies before writing status */
    int cache_lag;     /* a created pod shows up one pass late */
    char *lagging;     /* the pod the next pass does not see */
    int max_live_seen; /* never more than one */
};

/* One reconcile: decide on what the cache shows, act, write the status. */
static void reconcile(struct cluster *c, struct decide_output *o)
{
    struct world *w = &c->w;
    struct workspace_pod hidden;
    int is_hidden = 0;
    if (c->lagging) {
        struct workspace_pod *p = find_pod(w, c->lagging);
        if (p) {
            hidden = *p;
            remove_pod(w, p);
            is_hidden = 1;
        }
        free(c->lagging);
        c->lagging = NULL;
    }
    decide(w, o);
    check_shape(w, o);
    check_safety(w, o);
    if (is_hidden)
        w->pods[w->n_pods++] = hidden;
    size_t before = w->n_pods;
    apply(w, o);
    if (c->cache_lag && w->n_pods > before)
        c->lagging = strdup(w->pods[w->n_pods - 1].name);
    int live = 0;
    for (size_t i = 0; i < w->n_pods; i++)
        live += !w->pods[i].deletion_ms;
    if (live > c->max_live_seen)
        c->max_live_seen = live;
    if (!c->drop_writes && o->status_changed)
        write_status(w, o);
}

/* The scheduler, the kubelet and the API server, one step. */
static void tick(struct cluster *c)
{
    struct world *w = &c->w;
    for (size_t i = 0; i < w->n_pods;) {
        struct workspace_pod *p = &w->pods[i];
        if (p->deletion_ms) {
            remove_pod(w, p);
            continue;
        }
        if (!p->scheduled) {
            if (!c->capacity && c->alt_capacity && p->capacity_fallback) {
                p->scheduled = 1;
                p->node_name = "gpu-l4";
                p->scheduled_ms = w->now;
                p->unschedulable = 0;
                p->unschedulable_message = NULL;
            } else if (c->capacity) {
                p->scheduled = 1;
                p->node_name = "gpu-1";
                p->scheduled_ms = w->now;
                p->unschedulable = 0;
                p->unschedulable_message = NULL;
            } else {
                p->unschedulable = 1;
                p->unschedulable_message = SCHED_MSG;
            }
        } else if (!p->ready) {
            p->ready = 1;
            p->ready_ms = w->now;
            p->phase = "Running";
        }
        i++;
    }
}

static enum workspace_state step(struct cluster *c, int64_t advance_ms)
{
    c->w.now += advance_ms;
    struct decide_output o;
    reconcile(c, &o);
    enum workspace_state s = o.status.state;
    decide_output_clear(&o);
    tick(c);
    return s;
}

static void lifecycle(int drop_first_resume_write, int cache_lag)
{
    struct cluster c = {.capacity = 1};
    world_init(&c.w);
    struct world *w = &c.w;
    w->ws->has_finalizer = 0;
    w->has_pvc = 0;
    w->now = T0;
    c.cache_lag = cache_lag;

    assert_int_equal(step(&c, 0), WS_STATE_PENDING);
    assert_true(w->ws->has_finalizer && w->has_pvc);
    assert_int_equal(step(&c, SEC), WS_STATE_PENDING);
    assert_int_equal(step(&c, SEC), WS_STATE_RUNNING);
    assert_int_equal(step(&c, SEC), WS_STATE_RUNNING);
    assert_string_equal(st(w)->pod_name, "alice-1");

    /* 18:00, idle: pause */
    w->ws->paused = 1;
    w->ws->generation++;
    assert_int_equal(step(&c, 60 * MIN), WS_STATE_PAUSING);
    int64_t paused_at = w->now;
    assert_int_equal(step(&c, 5 * SEC), WS_STATE_PAUSED);
    assert_int_equal(st(w)->last_pause->accelerator_released_ms, paused_at + 5 * SEC);
    /* the ledger of the pause: alice-1 held the GPU from its scheduling at
     * T0 until it was gone */
    const struct workspace_pause_timeline *lp = st(w)->last_pause;
    assert_int_equal(lp->work_ended_ms, paused_at);
    assert_int_equal(lp->pod_deleted_ms, paused_at);
    assert_int_equal(lp->held_since_ms, T0);
    assert_string_equal(lp->node_name, "gpu-1");
    assert_string_equal(lp->product, "Tesla-T4");
    assert_string_equal(lp->memory, "files");
    assert_int_equal(st(w)->accelerator_held_since_ms, 0);
    double held = (double)(paused_at + 5 * SEC - T0) / 1000.0;
    assert_true(st(w)->accelerator_seconds_held == held);
    assert_int_equal(st(w)->n_history, 1);
    assert_int_equal(st(w)->history[0].pause.requested_ms, paused_at);
    assert_int_equal(st(w)->history[0].pause.held_since_ms, T0);
    assert_int_equal(st(w)->history[0].resume.requested_ms, 0);
    assert_int_equal(step(&c, 60 * MIN), WS_STATE_PAUSED);

    /* next morning, no GPU free */
    c.capacity = 0;
    w->ws->paused = 0;
    w->ws->generation++;
    c.drop_writes = drop_first_resume_write;
    enum workspace_state s = step(&c, 14 * 60 * MIN);
    assert_true(s == WS_STATE_RESUMING);
    c.drop_writes = 0;
    int64_t resumed_at = w->now;
    s = step(&c, SEC);
    assert_true(s == WS_STATE_WAITING_FOR_CAPACITY || s == WS_STATE_RESUMING);
    assert_int_equal(step(&c, 10 * MIN), WS_STATE_WAITING_FOR_CAPACITY);
    assert_int_equal(step(&c, 10 * MIN), WS_STATE_WAITING_FOR_CAPACITY);
    if (drop_first_resume_write)
        resumed_at += SEC; /* the lost write's request time was lost with it */

    /* a GPU frees up; the scheduler places the pod */
    c.capacity = 1;
    int64_t scheduled_at = w->now;
    tick(&c);
    assert_int_equal(step(&c, MIN), WS_STATE_RESUMING);
    assert_int_equal(step(&c, 4 * SEC), WS_STATE_RUNNING);
    assert_int_equal(step(&c, SEC), WS_STATE_RUNNING);

    const struct workspace_status *fin = st(w);
    assert_string_equal(fin->pod_name, "alice-2");
    assert_int_equal(fin->pod_generation, 2);
    assert_int_equal(fin->pauses, 1);
    assert_int_equal(fin->resumes, 1);
    assert_string_equal(fin->last_resume->restored_from, "FromCheckpoint");
    assert_true(fin->last_resume->ready_ms > fin->last_resume->requested_ms);
    assert_int_equal(fin->last_resume->requested_ms, resumed_at);
    /* released at paused_at + 5s, resume asked at resumed_at */
    assert_true(fin->accelerator_seconds_released ==
                (double)(resumed_at - (paused_at + 5 * SEC)) / 1000.0);
    assert_int_equal(c.max_live_seen, 1);
    /* the ledger: alice-2 holds the GPU since it was placed; one pause in
     * the history, completed with its resume */
    assert_int_equal(fin->accelerator_held_since_ms, scheduled_at);
    assert_true(fin->accelerator_seconds_held == held);
    assert_int_equal(fin->n_history, 1);
    const struct workspace_pause_record *rec = &fin->history[0];
    assert_int_equal(rec->pause.requested_ms, paused_at);
    assert_int_equal(rec->pause.accelerator_released_ms, paused_at + 5 * SEC);
    assert_string_equal(rec->pause.memory, "files");
    assert_int_equal(rec->resume.requested_ms, resumed_at);
    assert_int_equal(rec->resume.pod_scheduled_ms, fin->last_resume->pod_scheduled_ms);
    assert_int_equal(rec->resume.ready_ms, fin->last_resume->ready_ms);
    assert_true(rec->resume.seconds_to_ready == fin->last_resume->seconds_to_ready);
    assert_string_equal(rec->resume.restored_from, "FromCheckpoint");

    /* kubectl delete */
    w->ws->deletion_ms = w->now + MIN;
    step(&c, MIN);
    assert_int_equal(w->n_pods, 0);
    struct decide_output o;
    decide(w, &o);
    assert_int_equal(o.n_actions, 2);
    assert_int_equal(o.actions[0].type, ACTION_DELETE_PVC);
    assert_int_equal(o.actions[1].type, ACTION_REMOVE_FINALIZER);
    decide_output_clear(&o);

    free(c.lagging);
    world_free(w);
}

/* No Tesla-T4 free at the resume, an NVIDIA-L4 is: after the capacity
 * timeout the workspace runs on the L4 from its checkpoint; the next resume
 * asks for the class's product again. */
static void test_lifecycle_fallback(void **state)
{
    (void)state;
    struct cluster c = {.capacity = 1, .alt_capacity = 1};
    world_init(&c.w);
    struct world *w = &c.w;
    fallback_class(w->cls);
    w->nodes[0] = (struct decide_node){.name = "gpu-1", .product = "Tesla-T4"};
    w->nodes[1] = (struct decide_node){.name = "gpu-l4", .product = "NVIDIA-L4"};
    w->n_nodes = 2;
    w->now = T0;
    assert_int_equal(step(&c, 0), WS_STATE_PENDING);
    assert_int_equal(step(&c, SEC), WS_STATE_PENDING);
    assert_int_equal(step(&c, SEC), WS_STATE_RUNNING);
    assert_string_equal(st(w)->accelerator_product, "Tesla-T4");
    w->ws->paused = 1;
    w->ws->generation++;
    assert_int_equal(step(&c, 60 * MIN), WS_STATE_PAUSING);
    assert_int_equal(step(&c, 5 * SEC), WS_STATE_PAUSED);

    c.capacity = 0;
    w->ws->paused = 0;
    w->ws->generation++;
    assert_int_equal(step(&c, 60 * MIN), WS_STATE_RESUMING);
    assert_string_equal(st(w)->pod_name, "alice-2");
    assert_int_equal(step(&c, SEC), WS_STATE_WAITING_FOR_CAPACITY);
    assert_int_equal(step(&c, 20 * MIN), WS_STATE_WAITING_FOR_CAPACITY);
    assert_false(st(w)->accelerator_fallback);
    /* The timeout: the pinned pod goes... */
    assert_int_equal(step(&c, 10 * MIN), WS_STATE_RESUMING);
    assert_true(st(w)->accelerator_fallback);
    /* ...and the fallback comes, lands on the L4 and runs. */
    assert_int_equal(step(&c, SEC), WS_STATE_RESUMING);
    assert_int_equal(w->n_pods, 1);
    assert_true(w->pods[0].capacity_fallback);
    assert_int_equal(step(&c, SEC), WS_STATE_RESUMING);
    assert_int_equal(step(&c, SEC), WS_STATE_RUNNING);
    assert_string_equal(st(w)->node_name, "gpu-l4");
    assert_string_equal(st(w)->accelerator_product, "NVIDIA-L4");
    assert_true(st(w)->accelerator_fallback);
    assert_string_equal(st(w)->last_resume->restored_from, "FromCheckpoint");
    assert_int_equal(c.max_live_seen, 1);

    /* A T4 frees up: the fallback keeps its L4; nothing moves it. */
    c.capacity = 1;
    assert_int_equal(step(&c, 60 * MIN), WS_STATE_RUNNING);
    assert_string_equal(st(w)->accelerator_product, "NVIDIA-L4");

    /* Pause, then resume with a T4 free: the class's product again. */
    w->ws->paused = 1;
    w->ws->generation++;
    assert_int_equal(step(&c, MIN), WS_STATE_PAUSING);
    assert_int_equal(step(&c, 5 * SEC), WS_STATE_PAUSED);
    assert_false(st(w)->accelerator_fallback);
    w->ws->paused = 0;
    w->ws->generation++;
    assert_int_equal(step(&c, 60 * MIN), WS_STATE_RESUMING);
    assert_false(w->pods[0].capacity_fallback);
    assert_int_equal(step(&c, SEC), WS_STATE_RESUMING);
    assert_int_equal(step(&c, SEC), WS_STATE_RUNNING);
    assert_string_equal(st(w)->node_name, "gpu-1");
    assert_string_equal(st(w)->accelerator_product, "Tesla-T4");
    assert_false(st(w)->accelerator_fallback);
    assert_int_equal(c.max_live_seen, 1);
    free(c.lagging);
    world_free(w);
}

static void test_lifecycle(void **state)
{
    (void)state;
    lifecycle(0, 0);
}

static void test_lifecycle_crash_after_create(void **state)
{
    (void)state;
    lifecycle(1, 0);
}

static void test_lifecycle_cache_lag(void **state)
{
    (void)state;
    lifecycle(0, 1);
}

/* ---- the GPU-hours ledger ---- */

/* alice paused at T0 on gpu-1 (paused()), as the pass that saw its pod gone
 * wrote it. */
static void ledger_paused(struct world *w)
{
    paused(w);
    set_str(&st(w)->accelerator_resource, "nvidia.com/gpu");
    set_str(&st(w)->accelerator_product, "Tesla-T4");
    st(w)->accelerator_count = 1;
    set_str(&st(w)->last_pause->node_name, "gpu-1");
    set_str(&st(w)->last_pause->reason, "User");
    st(w)->last_pause->work_ended_ms = T0;
}

static char *gpu_resources[POD_MAX_EXTENDED] = {"nvidia.com/gpu"};

/* Another workspace's pod, placed on node at `at`. */
static struct workspace_pod other_pod(const char *ns, const char *ws, const char *name,
                                      const char *node, int64_t at)
{
    struct workspace_pod p = {.ns = (char *)ns,
                              .name = (char *)name,
                              .workspace = (char *)ws,
                              .node_name = (char *)node,
                              .phase = "Running",
                              .scheduled = 1,
                              .scheduled_ms = at};
    p.extended[0] = gpu_resources[0];
    return p;
}

static void test_ledger_taker(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    ledger_paused(&w);
    w.now = T0 + 5 * MIN;
    struct decide_output o;

    /* nobody seen yet: the record of the pause, and a look every minute */
    decide(&w, &o);
    assert_int_equal(o.requeue_after_ms, MIN);
    assert_int_equal(o.status.n_history, 1);
    assert_int_equal(o.status.history[0].pause.requested_ms, T0);
    assert_string_equal(o.status.history[0].pause.node_name, "gpu-1");
    assert_null(o.status.history[0].pause.accelerator_taken_by);
    assert_string_equal(o.status.last_pause->memory, "files");
    assert_int_equal(count_events(&o), 0);
    write_status(&w, &o);
    decide_output_clear(&o);

    /* the reconciler's candidate is checked again: its own pod, another
     * node, or one placed before the delete do not count */
    struct workspace_pod own = other_pod("team-a", "alice", "alice-2", "gpu-1", T0 + MIN);
    struct workspace_pod elsewhere = other_pod("team-b", "bob", "bob-1", "gpu-2", T0 + MIN);
    struct workspace_pod before = other_pod("team-b", "bob", "bob-1", "gpu-1", T0 - MIN);
    const struct workspace_pod *wrong[] = {&own, &elsewhere, &before};
    for (size_t i = 0; i < 3; i++) {
        w.taker = wrong[i];
        decide(&w, &o);
        assert_false(o.status_changed);
        assert_int_equal(o.requeue_after_ms, MIN);
        decide_output_clear(&o);
    }

    /* bob-1 took it: said in lastPause and in the record, and no more looks */
    struct workspace_pod bob = other_pod("team-b", "bob", "bob-1", "gpu-1", T0 + 40 * SEC);
    w.taker = &bob;
    decide(&w, &o);
    assert_true(o.status_changed);
    assert_int_equal(o.status.last_pause->accelerator_taken_ms, T0 + 40 * SEC);
    assert_string_equal(o.status.last_pause->accelerator_taken_by, "team-b/bob-1");
    assert_int_equal(o.status.history[0].pause.accelerator_taken_ms, T0 + 40 * SEC);
    assert_string_equal(o.status.history[0].pause.accelerator_taken_by, "team-b/bob-1");
    assert_int_equal(o.requeue_after_ms, 0);
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    write_status(&w, &o);
    decide_output_clear(&o);
    /* settled, and a later pod does not take its place */
    struct workspace_pod carol = other_pod("team-c", "carol", "carol-1", "gpu-1", T0 + 50 * SEC);
    w.taker = &carol;
    decide(&w, &o);
    assert_false(o.status_changed);
    assert_string_equal(o.status.last_pause->accelerator_taken_by, "team-b/bob-1");
    decide_output_clear(&o);
    world_free(&w);

    /* the looks stop a day after the release */
    world_init(&w);
    ledger_paused(&w);
    int64_t released = st(&w)->last_pause->accelerator_released_ms;
    w.now = released + 24 * 60 * MIN - 30 * SEC;
    decide(&w, &o);
    assert_int_equal(o.requeue_after_ms, 30 * SEC);
    write_status(&w, &o);
    decide_output_clear(&o);
    w.now = released + 24 * 60 * MIN;
    decide(&w, &o);
    assert_int_equal(o.requeue_after_ms, 0);
    assert_false(o.status_changed);
    decide_output_clear(&o);
    /* and on a class without an accelerator there is nothing to follow */
    set_str(&st(&w)->accelerator_resource, NULL);
    w.now = released + MIN;
    decide(&w, &o);
    assert_int_equal(o.requeue_after_ms, 0);
    decide_output_clear(&o);
    world_free(&w);
}

/* A whole pause and resume where another workspace gets the GPU between
 * them: the timeline in order, the record completed by the resume. */
static void test_ledger_pause_resume(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    running(&w);
    add_pod(&w, "alice-1", READY, T0);
    w.now = T0 + 60 * MIN;
    settle(&w);
    assert_int_equal(st(&w)->accelerator_held_since_ms, T0 + 2 * SEC);

    w.ws->paused = 1;
    settle(&w); /* counted, pod deleted */
    int64_t asked = w.now;
    w.pods[0].deletion_ms = w.now;
    w.now += 20 * SEC;
    settle(&w); /* still terminating: still held */
    assert_int_equal(st(&w)->accelerator_held_since_ms, T0 + 2 * SEC);
    assert_int_equal(st(&w)->n_history, 0);
    remove_pod(&w, &w.pods[0]);
    w.now += 10 * SEC;
    settle(&w); /* gone */
    const struct workspace_pause_timeline *lp = st(&w)->last_pause;
    assert_int_equal(st(&w)->state, WS_STATE_PAUSED);
    assert_true(lp->work_ended_ms <= lp->requested_ms);
    assert_true(lp->requested_ms <= lp->pod_deleted_ms);
    assert_true(lp->pod_deleted_ms <= lp->accelerator_released_ms);
    assert_int_equal(lp->requested_ms, asked);
    assert_int_equal(lp->accelerator_released_ms, asked + 30 * SEC);
    assert_int_equal(lp->held_since_ms, T0 + 2 * SEC);
    assert_int_equal(st(&w)->accelerator_held_since_ms, 0);
    double held = (double)(asked + 30 * SEC - (T0 + 2 * SEC)) / 1000.0;
    assert_true(st(&w)->accelerator_seconds_held == held);
    assert_int_equal(st(&w)->pauses_kept.files, 1);

    /* bob's pod is placed on gpu-1 */
    struct workspace_pod bob = other_pod("team-b", "bob", "bob-1", "gpu-1", asked + 31 * SEC);
    w.taker = &bob;
    w.now += 5 * SEC;
    settle(&w);
    assert_string_equal(st(&w)->last_pause->accelerator_taken_by, "team-b/bob-1");
    w.taker = NULL;

    /* gpu-1 leaves the cluster while alice is paused: seen once, kept */
    assert_int_equal(st(&w)->last_pause->node_removed_ms, 0);
    w.pause_node_absent = 1;
    w.now += 60 * SEC;
    int64_t node_gone = w.now;
    settle(&w);
    assert_int_equal(st(&w)->last_pause->node_removed_ms, node_gone);
    w.now += 60 * SEC;
    settle(&w);
    assert_int_equal(st(&w)->last_pause->node_removed_ms, node_gone);
    w.pause_node_absent = 0;

    /* resumed two hours later */
    w.ws->paused = 0;
    w.now = asked + 120 * MIN;
    settle(&w);
    int64_t resumed = w.now;
    assert_true(st(&w)->accelerator_seconds_released ==
                (double)(resumed - (asked + 30 * SEC)) / 1000.0);
    assert_int_equal(st(&w)->history[0].resume.requested_ms, 0); /* not ready yet */
    add_pod(&w, "alice-2", READY | CKPT, resumed + SEC);
    w.now = resumed + 20 * SEC;
    settle(&w);
    assert_int_equal(st(&w)->state, WS_STATE_RUNNING);
    assert_int_equal(st(&w)->accelerator_held_since_ms, resumed + 3 * SEC);
    assert_true(st(&w)->accelerator_seconds_held == held); /* the new hold is open */
    assert_int_equal(st(&w)->n_history, 1);
    const struct workspace_pause_record *r = &st(&w)->history[0];
    assert_int_equal(r->pause.requested_ms, asked);
    assert_string_equal(r->pause.reason, "User");
    assert_string_equal(r->pause.accelerator_taken_by, "team-b/bob-1");
    assert_int_equal(r->pause.node_removed_ms, node_gone);
    assert_int_equal(r->resume.requested_ms, resumed);
    assert_int_equal(r->resume.pod_scheduled_ms, resumed + 3 * SEC);
    assert_int_equal(r->resume.ready_ms, resumed + 13 * SEC);
    assert_true(r->resume.seconds_to_ready == 13.0);
    assert_string_equal(r->resume.restored_from, "FromCheckpoint");
    assert_int_equal(st(&w)->resumes_from.from_checkpoint, 1);
    assert_int_equal(ledger_resumes_from_total(st(&w)), 1);
    assert_int_equal(ledger_pauses_kept_total(st(&w)), 1);

    /* the next pause pushes a second record in front */
    w.ws->paused = 1;
    w.now += 60 * MIN;
    settle(&w);
    remove_pod(&w, find_pod(&w, "alice-2"));
    w.now += 5 * SEC;
    settle(&w);
    assert_int_equal(st(&w)->n_history, 2);
    assert_int_equal(st(&w)->history[0].pause.requested_ms, w.now - 5 * SEC);
    assert_int_equal(st(&w)->history[0].pause.held_since_ms, resumed + 3 * SEC);
    assert_null(st(&w)->history[0].pause.accelerator_taken_by);
    assert_string_equal(st(&w)->history[1].pause.accelerator_taken_by, "team-b/bob-1");
    /* each counted once over all those passes */
    assert_int_equal(st(&w)->pauses_kept.files, 2);
    assert_int_equal(ledger_resumes_from_total(st(&w)), 1);
    world_free(&w);
}

/* The counters that outlive the history (status.accounting.resumesFrom,
 * pausesKept): a resume is counted by its restoredFrom in the pass that
 * records its readyAt, a pause by its memory in the pass that first sets
 * it; once each, whether decide() runs again on the status it wrote or
 * again on the status before it (a crash before the write). */
static void assert_counted_once(struct world *w, const struct decide_output *o)
{
    /* redone on the status before the write: the same counts */
    struct decide_output again;
    decide(w, &again);
    assert_memory_equal(&again.status.resumes_from, &o->status.resumes_from,
                        sizeof(o->status.resumes_from));
    assert_memory_equal(&again.status.pauses_kept, &o->status.pauses_kept,
                        sizeof(o->status.pauses_kept));
    decide_output_clear(&again);
    /* decided again on what it wrote: nothing changes */
    write_status(w, o);
    decide(w, &again);
    assert_false(again.status_changed);
    assert_memory_equal(&again.status.resumes_from, &o->status.resumes_from,
                        sizeof(o->status.resumes_from));
    assert_memory_equal(&again.status.pauses_kept, &o->status.pauses_kept,
                        sizeof(o->status.pauses_kept));
    decide_output_clear(&again);
}

static void test_ledger_resume_sources(void **state)
{
    (void)state;
    static const char *const sources[] = {"FromSnapshot", "ColdStart", "FromCheckpoint", "Fresh",
                                          "FreshHome"};
    for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
        struct world w;
        world_init(&w);
        resuming(&w);
        set_str(&st(&w)->last_resume->restored_from, sources[i]);
        st(&w)->pauses = st(&w)->resumes = 3;
        st(&w)->resumes_from.fresh = 2; /* counted before */
        add_pod(&w, "alice-2", READY | CKPT, NOW - 20 * SEC);
        struct decide_output o;
        decide(&w, &o);
        assert_int_equal(o.status.last_resume->ready_ms, NOW - 8 * SEC);
        const struct workspace_resume_sources *c = &o.status.resumes_from;
        int64_t want[5] = {0, 0, 0, 2, 0};
        want[i]++;
        int64_t got[5] = {c->from_snapshot, c->cold_start, c->from_checkpoint, c->fresh,
                          c->fresh_home};
        for (size_t k = 0; k < 5; k++)
            if (got[k] != want[k])
                fail_msg("%s: counter %zu is %lld, not %lld", sources[i], k, (long long)got[k],
                         (long long)want[k]);
        assert_counted_once(&w, &o);
        decide_output_clear(&o);
        world_free(&w);
    }

    /* Not yet ready, or ready with the source unknown: nothing counted. */
    struct world w;
    world_init(&w);
    resuming(&w);
    add_pod(&w, "alice-2", SCHED | CKPT, NOW - 20 * SEC);
    set_str(&st(&w)->last_resume->restored_from, "ColdStart");
    struct decide_output o;
    decide(&w, &o);
    assert_int_equal(o.status.last_resume->ready_ms, 0);
    assert_int_equal(o.status.resumes_from.cold_start, 0);
    decide_output_clear(&o);
    world_free(&w);

    /* A first start of a workspace created paused is no resume. */
    world_init(&w);
    s_created_paused(&w);
    settle(&w);
    w.ws->paused = 0;
    w.now += MIN;
    settle(&w);
    assert_int_equal(st(&w)->resumes, 0);
    assert_non_null(st(&w)->pod_name);
    add_pod(&w, st(&w)->pod_name, READY, w.now);
    w.now += MIN;
    settle(&w);
    assert_int_not_equal(st(&w)->last_resume->ready_ms, 0);
    assert_int_equal(ledger_resumes_from_total(st(&w)), 0);
    world_free(&w);
}

static void test_ledger_pause_memories(void **state)
{
    (void)state;
    static const struct {
        const char *phase; /* the pause's snapshot; NULL: none */
        const char *memory;
    } kept[] = {{NULL, "files"}, {"Ready", "snapshot"}, {"Failed", "snapshotFailed"}};
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        struct world w;
        world_init(&w);
        pausing(&w); /* its pod is gone */
        st(&w)->pauses = 4;
        st(&w)->resumes = 3;
        st(&w)->pauses_kept.files = 3; /* counted before */
        if (kept[i].phase) {
            struct workspace_snapshot *sn = st(&w)->snapshot;
            set_str(&sn->attempt, "alice-p1-1");
            set_str(&sn->name, "alice-p1-1-snap");
            set_str(&sn->phase, kept[i].phase);
            sn->attempts = 1;
            sn->requested_ms = NOW - 11 * MIN;
            st(&w)->last_pause->requested_ms = NOW - 12 * MIN;
            if (strcmp(kept[i].phase, "Ready") == 0) {
                sn->ready_ms = NOW - 10 * MIN;
                sn->seconds = 60;
            } else {
                sn->failed_ms = NOW - 10 * MIN;
            }
        }
        struct decide_output o;
        decide(&w, &o);
        assert_string_equal(o.status.last_pause->memory, kept[i].memory);
        const struct workspace_pause_memories *c = &o.status.pauses_kept;
        int64_t want[3] = {0, 3, 0};
        want[i == 0 ? 1 : i == 1 ? 0 : 2]++;
        if (c->snapshot != want[0] || c->files != want[1] || c->snapshot_failed != want[2])
            fail_msg("%s: snapshot %lld, files %lld, snapshotFailed %lld", kept[i].memory,
                     (long long)c->snapshot, (long long)c->files, (long long)c->snapshot_failed);
        assert_counted_once(&w, &o);
        decide_output_clear(&o);

        /* Resumed: the pause is not counted again. */
        w.ws->paused = 0;
        w.now += 10 * MIN;
        settle(&w);
        assert_int_equal(st(&w)->resumes, 4);
        assert_int_equal(ledger_pauses_kept_total(st(&w)), 4);
        world_free(&w);
    }
}

/* A hold also ends outside a pause (the pod stopped); its seconds count, no
 * pause claims it. A pod without a node holds nothing. */
/* ActionFailed is the reconciler's (workspace/action_failure.h): decide()
 * carries it as it is, so the reconciler's set and removal after the
 * actions are the only changes to it, and a stable world stays stable. */
static void test_action_failed_carried(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    running(&w);
    add_pod(&w, "alice-1", READY, T0);
    struct decide_output o;
    decide(&w, &o);
    write_status(&w, &o);
    decide_output_clear(&o);
    set_cond(&w, "ActionFailed", COND_TRUE, "DeletePod",
             "DeletePod alice-1: pods \"alice-1\" is forbidden (HTTP 403)");
    decide(&w, &o);
    assert_false(o.status_changed);
    const struct condition *c = cond(&o, "ActionFailed");
    assert_non_null(c);
    assert_string_equal(c->reason, "DeletePod");
    assert_int_equal(c->last_transition_ms, T0);
    decide_output_clear(&o);
    world_free(&w);
}

/* Totals someone else wrote into the status are brought back within the
 * workspace's life, once, with a Warning; the ledger then carries on. */
static void test_ledger_forged(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    ledger_paused(&w);
    w.ws->created_ms = T0 - 10 * MIN; /* created, ran, paused by its user */
    w.ws->generation = 2;
    w.now = T0 + 5 * MIN;
    struct decide_output o;
    decide(&w, &o);
    assert_null(find_event(&o, "LedgerCorrected"));
    write_status(&w, &o);
    decide_output_clear(&o);

    st(&w)->resumes = INT64_C(99999999999);
    st(&w)->accelerator_seconds_held = 1e15;
    st(&w)->accelerator_seconds_released = 1e15;
    decide(&w, &o);
    const struct action *e = find_event(&o, "LedgerCorrected");
    assert_non_null(e);
    assert_string_equal(e->event_type, "Warning");
    assert_non_null(strstr(e->message, "pauses/resumes"));
    assert_non_null(strstr(e->message, "accelerator-seconds"));
    assert_int_equal(o.status.pauses, 1);
    assert_int_equal(o.status.resumes, 0); /* the pause is still open */
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    /* creation to now and the clock slack, one accelerator: 16 minutes */
    assert_true(o.status.accelerator_seconds_held == 16 * 60);
    assert_true(o.status.accelerator_seconds_released == 0);
    assert_true(o.status_changed);
    write_status(&w, &o);
    decide_output_clear(&o);

    /* corrected once: deciding again changes nothing and says nothing */
    decide(&w, &o);
    assert_false(o.status_changed);
    assert_int_equal(count_events(&o), 0);
    decide_output_clear(&o);

    /* the resume counts from there */
    w.ws->paused = 0;
    w.ws->generation = 3;
    decide(&w, &o);
    assert_null(find_event(&o, "LedgerCorrected"));
    assert_int_equal(o.status.resumes, 1);
    assert_true(o.status.accelerator_seconds_released == 270);
    decide_output_clear(&o);
    world_free(&w);
}

static void test_ledger_hold_without_pause(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    running(&w);
    add_pod(&w, "alice-1", READY, T0);
    w.now = T0 + 10 * MIN;
    settle(&w);
    w.pods[0].phase = "Failed";
    w.now += MIN;
    settle(&w);
    assert_int_equal(st(&w)->accelerator_held_since_ms, 0);
    assert_true(st(&w)->accelerator_seconds_held == (double)(11 * MIN - 2 * SEC) / 1000.0);
    assert_int_equal(st(&w)->last_pause->held_since_ms, 0);
    assert_int_equal(st(&w)->n_history, 0);
    world_free(&w);

    world_init(&w);
    waiting(&w, NOW - MIN);
    settle(&w);
    assert_int_equal(st(&w)->accelerator_held_since_ms, 0);
    world_free(&w);
}

/* ---- idle detection (docs/idle.md) ---- */

/* The class probes Jupyter; the workspace has been Running since `since` on
 * ready pod alice-1, with the record the pass that saw it start wrote. */
static void idle_world(struct world *w, int64_t since)
{
    w->cls_owned->activity.application = ACTIVITY_APP_JUPYTER;
    running(w);
    st(w)->state_since_ms = since;
    st(w)->activity->last_activity_ms = since;
    set_str(&st(w)->activity->last_activity_source, "start");
    add_pod(w, "alice-1", READY, since - MIN);
}

/* One reconcile at now, checked against the rules every answer keeps. */
static void idle_pass(struct world *w, int64_t now, struct decide_output *o)
{
    w->now = now;
    decide(w, o);
    check_shape(w, o);
    check_safety(w, o);
}

/* The actions done and the status written and read back, as the next
 * reconcile sees them. */
static void commit(struct world *w, struct decide_output *o)
{
    apply(w, o);
    write_status(w, o);
    decide_output_clear(o);
}

/* The only event of the pass is reason, of type. */
static const struct action *only_event(const struct decide_output *o, const char *type,
                                       const char *reason)
{
    const struct action *e = find_event(o, reason);
    if (!e || count_events(o) != 1)
        fail_msg("want exactly one event %s, got %zu (%s)", reason, count_events(o),
                 e ? "including it" : "not it");
    assert_string_equal(e->event_type, type);
    return e;
}

/* The same world once more: nothing changes, nothing is said again. */
static void assert_settled(struct world *w)
{
    struct decide_output again;
    idle_pass(w, w->now, &again);
    if (again.status_changed || count_events(&again) > 0)
        fail_msg("second pass: status changed %d, %zu events", again.status_changed,
                 count_events(&again));
    decide_output_clear(&again);
}

static void assert_time(int64_t got, const char *want)
{
    int64_t ms = 0;
    assert_int_equal(timefmt_parse_rfc3339(want, &ms), 0);
    if (got != ms) {
        char g[TIMEFMT_RFC3339_SIZE] = "?";
        timefmt_format_rfc3339(got, g, sizeof(g));
        fail_msg("time %s (%lld ms past), want %s", g, (long long)(((got % 1000) + 1000) % 1000),
                 want);
    }
}

static void test_idle_entering_running(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    w.cls_owned->activity.application = ACTIVITY_APP_JUPYTER;
    set_state(&w, WS_STATE_PENDING, "alice-1", 1);
    add_pod(&w, "alice-1", READY, NOW - MIN);
    /* the record of an earlier session, and a round from before the start */
    struct workspace_activity *old = st(&w)->activity;
    old->last_activity_ms = NOW - 5 * 60 * MIN;
    set_str(&old->last_activity_source, "jupyter");
    old->last_probe_ms = NOW - 4 * 60 * MIN;
    set_str(&old->last_probe_result, "Idle");
    old->idle_since_ms = NOW - 5 * 60 * MIN;
    old->pause_at_ms = NOW - 4 * 60 * MIN;
    probe_round(&w, NOW - 2 * MIN, NOW - 3 * MIN, 0);

    struct decide_output o;
    idle_pass(&w, NOW + 250, &o);
    assert_int_equal(o.status.state, WS_STATE_RUNNING);
    const struct workspace_activity *a = o.status.activity;
    assert_int_equal(a->last_activity_ms, NOW + 250);
    assert_string_equal(a->last_activity_source, "start");
    assert_int_equal(a->last_probe_ms, 0);
    assert_null(a->last_probe_result);
    assert_int_equal(a->idle_since_ms, 0);
    assert_int_equal(a->pause_at_ms, 0);
    assert_int_equal(a->idle_after_seconds, 3600);
    assert_cond(&o, "Idle", COND_UNKNOWN, "Probing");
    assert_null(cond(&o, "ActivityProbe"));
    assert_true(o.probe_wanted);
    assert_false(o.probe_now);
    assert_int_equal(o.requeue_after_ms, MIN); /* the probe interval */
    assert_int_equal(count_events(&o), 0);
    assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 0);
    commit(&w, &o);
    assert_settled(&w);
    world_free(&w);

    /* a resume resets it too */
    world_init(&w);
    s_resuming_ready(&w);
    w.cls_owned->activity.application = ACTIVITY_APP_JUPYTER;
    st(&w)->activity->last_activity_ms = T0;
    set_str(&st(&w)->activity->last_activity_source, "gpu");
    idle_pass(&w, NOW, &o);
    assert_int_equal(o.status.state, WS_STATE_RUNNING);
    assert_int_equal(o.status.activity->last_activity_ms, NOW);
    assert_string_equal(o.status.activity->last_activity_source, "start");
    assert_true(o.probe_wanted);
    decide_output_clear(&o);
    world_free(&w);
}

static void test_idle_probe_wanted(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int app, gpu, flags, paused;
        enum workspace_state old;
        int want;
    } cases[] = {
        {"jupyter, ready", ACTIVITY_APP_JUPYTER, 0, READY, 0, WS_STATE_RUNNING, 1},
        {"code-server, ready", ACTIVITY_APP_CODE_SERVER, 0, READY, 0, WS_STATE_RUNNING, 1},
        {"GPU metrics only, ready", ACTIVITY_APP_NONE, 1, READY, 0, WS_STATE_RUNNING, 1},
        {"no source", ACTIVITY_APP_NONE, 0, READY, 0, WS_STATE_RUNNING, 0},
        {"running, pod not ready", ACTIVITY_APP_JUPYTER, 0, SCHED, 0, WS_STATE_RUNNING, 0},
        {"pending", ACTIVITY_APP_JUPYTER, 0, SCHED, 0, WS_STATE_PENDING, 0},
        {"pausing", ACTIVITY_APP_JUPYTER, 0, READY, 1, WS_STATE_RUNNING, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct world w;
        world_init(&w);
        running(&w);
        st(&w)->state = cases[i].old;
        st(&w)->state_since_ms = T0;
        w.cls_owned->activity.application = (enum activity_application)cases[i].app;
        if (cases[i].gpu)
            set_str(&w.cls_owned->activity.prometheus_url, "http://prometheus:9090");
        w.ws->paused = cases[i].paused;
        add_pod(&w, "alice-1", cases[i].flags, T0);
        probe_round(&w, NOW - SEC, NOW - 10 * MIN, 0);
        struct decide_output o;
        idle_pass(&w, NOW, &o);
        if (o.probe_wanted != cases[i].want)
            fail_msg("%s: probe_wanted %d", cases[i].name, o.probe_wanted);
        if (!cases[i].want && o.status.state == WS_STATE_RUNNING && cases[i].flags == READY)
            assert_cond(&o, "Idle", COND_UNKNOWN, "NoActivitySource");
        if (cases[i].want)
            assert_cond(&o, "ActivityProbe", COND_TRUE, "Succeeded");
        else
            assert_null(cond(&o, "ActivityProbe"));
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* From the start through the warning to the automatic pause, with times
 * that have milliseconds (as probes and servers give them) while the status
 * keeps whole seconds. */
static void test_idle_pause_flow(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    w.cls_owned->activity.application = ACTIVITY_APP_JUPYTER;
    set_state(&w, WS_STATE_PENDING, "alice-1", 1);
    add_pod(&w, "alice-1", READY, T0 - MIN);
    struct decide_output o;
    idle_pass(&w, T0 + 250, &o); /* Running from here */
    commit(&w, &o);

    /* the first round: the server's last activity is from before the start */
    probe_round(&w, T0 + 30 * SEC + 700, T0 - 3 * MIN + 123, 0);
    idle_pass(&w, T0 + 31 * SEC, &o);
    assert_cond(&o, "Idle", COND_FALSE, "Active");
    assert_cond(&o, "ActivityProbe", COND_TRUE, "Succeeded");
    assert_string_equal(o.status.activity->last_probe_result, "Idle");
    assert_int_equal(o.status.activity->last_probe_ms, T0 + 30 * SEC + 700);
    assert_string_equal(o.status.activity->last_activity_source, "start");
    assert_int_equal(o.requeue_after_ms, T0 + 55 * MIN - (T0 + 31 * SEC));
    assert_int_equal(count_events(&o), 0);
    commit(&w, &o);

    /* the user works until 00:20:00.400 */
    int64_t last = T0 + 20 * MIN + 400;
    probe_round(&w, T0 + 20 * MIN + 30 * SEC + 100, last, 0);
    idle_pass(&w, T0 + 20 * MIN + 31 * SEC, &o);
    assert_cond(&o, "Idle", COND_FALSE, "Active");
    assert_int_equal(o.status.activity->last_activity_ms, last);
    assert_string_equal(o.status.activity->last_activity_source, "jupyter");
    /* re-checked exactly when the warning is due */
    int64_t warn_at = last + 55 * MIN;
    assert_int_equal(w.now + o.requeue_after_ms, warn_at);
    commit(&w, &o);

    /* the warning, from the round a minute before */
    probe_round(&w, warn_at - MIN, last, 0);
    idle_pass(&w, warn_at, &o);
    assert_int_equal(o.status.state, WS_STATE_RUNNING);
    assert_cond(&o, "Idle", COND_TRUE, "PauseScheduled");
    assert_non_null(strstr(cond(&o, "Idle")->message, "pausing at 2027-01-01T01:20:00Z"));
    int64_t pause_at = last + 60 * MIN;
    assert_int_equal(o.status.activity->pause_at_ms, pause_at);
    assert_int_equal(o.status.activity->idle_since_ms, last);
    assert_int_equal(o.status.activity->last_activity_ms, last);
    const struct action *e = only_event(&o, "Warning", "IdleWarning");
    assert_non_null(strstr(e->message, "2027-01-01T01:20:00Z"));
    assert_non_null(strstr(e->message, "no activity since 2027-01-01T00:20:00Z (jupyter)"));
    assert_int_equal(o.requeue_after_ms, 5 * MIN);
    assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 0);
    commit(&w, &o);
    assert_settled(&w);

    /* more idle rounds: the announcement stands, nothing is said again */
    for (int64_t t = warn_at + 30 * SEC; t < pause_at; t += 60 * SEC + 3) {
        probe_round(&w, t - 400, last, 0);
        idle_pass(&w, t, &o);
        assert_cond(&o, "Idle", COND_TRUE, "PauseScheduled");
        /* the probe time is recorded every five minutes; nothing else moves */
        int probe_recorded = o.status.activity->last_probe_ms != st(&w)->activity->last_probe_ms;
        if ((o.status_changed && !probe_recorded) || count_events(&o) > 0)
            fail_msg("idle round at +%llds: status changed %d, %zu events",
                     (long long)((t - warn_at) / 1000), o.status_changed, count_events(&o));
        assert_int_equal(o.status.activity->pause_at_ms, pause_at);
        assert_int_equal(w.now + o.requeue_after_ms, pause_at);
        assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 0);
        commit(&w, &o);
    }

    /* the pause time, the last round older than it: probe once more first */
    idle_pass(&w, pause_at, &o);
    assert_true(o.probe_now);
    assert_true(o.probe_wanted);
    assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 0);
    assert_int_equal(count_events(&o), 0);
    assert_false(o.status_changed);
    decide_output_clear(&o);

    /* the confirming round finds nothing: one automatic pause */
    probe_round(&w, pause_at + 500, last, 0);
    idle_pass(&w, pause_at + 1200, &o);
    assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 1);
    assert_int_equal(count_events(&o), 0);
    const struct action *ap = NULL;
    for (size_t i = 0; i < o.n_actions; i++)
        if (o.actions[i].type == ACTION_AUTO_PAUSE)
            ap = &o.actions[i];
    assert_int_equal(ap->time_ms, pause_at + 1200);
    assert_string_equal(ap->reason, "IdleTimeout");
    static const char *const figures[] = {
        "idle for 1h1s (no activity since 2027-01-01T00:20:00Z, jupyter)",
        "idle-after 1h",
        "1 connection(s)",
        "confirmed by the probe at 2027-01-01T01:20:00Z",
    };
    for (size_t i = 0; i < sizeof(figures) / sizeof(figures[0]); i++)
        if (!strstr(ap->message, figures[i]))
            fail_msg("auto-pause message \"%s\" lacks \"%s\"", ap->message, figures[i]);
    char *message = strdup(ap->message);
    commit(&w, &o);
    assert_true(w.ws->paused);

    /* the pause goes through as the controller's own */
    idle_pass(&w, pause_at + 2 * SEC, &o);
    assert_int_equal(o.status.state, WS_STATE_PAUSING);
    assert_int_equal(o.status.pauses, 1);
    assert_string_equal(o.status.last_pause->reason, "IdleTimeout");
    assert_string_equal(o.status.last_pause->message, message);
    assert_int_equal(o.status.last_pause->requested_ms, pause_at + 1200);
    e = only_event(&o, "Normal", "IdleTimeout");
    assert_non_null(strstr(e->message, message));
    assert_null(find_event(&o, "Pausing"));
    assert_int_equal(count_actions(&o, ACTION_DELETE_POD), 1);
    assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 0);
    /* Running is over: the judgement goes, the record of the last work stays */
    assert_null(cond(&o, "Idle"));
    assert_null(cond(&o, "ActivityProbe"));
    assert_int_equal(o.status.activity->idle_since_ms, 0);
    assert_int_equal(o.status.activity->pause_at_ms, 0);
    assert_int_equal(o.status.activity->last_probe_ms, 0);
    assert_null(o.status.activity->last_probe_result);
    assert_int_equal(o.status.activity->last_activity_ms / 1000, last / 1000);
    assert_string_equal(o.status.activity->last_activity_source, "jupyter");
    assert_false(o.probe_wanted);
    /* the ledger: work ended with the last activity the decision saw */
    assert_int_equal(o.status.last_pause->work_ended_ms / 1000, last / 1000);
    commit(&w, &o);
    assert_settled(&w);
    free(message);
    world_free(&w);
}

static void announce(struct world *w, int64_t now)
{
    struct decide_output o;
    idle_pass(w, now, &o);
    assert_cond(&o, "Idle", COND_TRUE, "PauseScheduled");
    assert_non_null(find_event(&o, "IdleWarning"));
    commit(w, &o);
}

static void test_idle_cancelled(void **state)
{
    (void)state;
    static const char *const how[] = {"jupyter", "annotation", "keepAlive"};
    for (size_t k = 0; k < 3; k++) {
        struct world w;
        world_init(&w);
        idle_world(&w, T0);
        probe_round(&w, T0 + 54 * MIN + 30 * SEC, 0, 0);
        announce(&w, T0 + 55 * MIN);
        assert_time(st(&w)->activity->pause_at_ms, "2027-01-01T01:00:00Z");

        int64_t act = T0 + 56 * MIN + 700;
        if (k == 0)
            probe_round(&w, T0 + 57 * MIN, act, 0);
        else if (k == 1)
            w.ws->annotated_activity_ms = act;
        else
            w.ws->keep_alive_until_ms = T0 + 3 * 60 * MIN;
        struct decide_output o;
        idle_pass(&w, T0 + 57 * MIN + 100, &o);
        assert_cond(&o, "Idle", COND_FALSE, k == 2 ? "KeepAlive" : "Active");
        assert_int_equal(o.status.activity->pause_at_ms, 0);
        const struct action *e = only_event(&o, "Normal", "IdleCancelled");
        assert_non_null(strstr(e->message, "2027-01-01T01:00:00Z"));
        assert_string_equal(o.status.activity->last_activity_source, how[k]);
        assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 0);
        if (k < 2) {
            /* recorded exactly, and the next warning is due 55m after it */
            assert_int_equal(o.status.activity->last_activity_ms, act);
            assert_int_equal(w.now + o.requeue_after_ms, act + 55 * MIN);
        } else {
            assert_int_equal(o.status.activity->keep_alive_until_ms, T0 + 3 * 60 * MIN);
            assert_int_equal(w.now + o.requeue_after_ms, T0 + 3 * 60 * MIN);
        }
        commit(&w, &o);
        assert_settled(&w);
        world_free(&w);
    }
}

static void test_idle_probe_failure(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    idle_world(&w, T0);
    failed_round(&w, T0 + 54 * MIN + 30 * SEC, "GET http://10.0.0.5:8888/api/status: HTTP 403");
    struct decide_output o;
    idle_pass(&w, T0 + 55 * MIN, &o);
    assert_cond(&o, "Idle", COND_UNKNOWN, "ProbeFailed");
    assert_cond(&o, "ActivityProbe", COND_FALSE, "Failed");
    assert_string_equal(cond(&o, "ActivityProbe")->message,
                        "jupyter: GET http://10.0.0.5:8888/api/status: HTTP 403");
    assert_string_equal(o.status.activity->last_probe_result, "Failed");
    assert_string_equal(o.status.activity->last_probe_error,
                        "jupyter: GET http://10.0.0.5:8888/api/status: HTTP 403");
    assert_int_equal(o.status.activity->last_probe_ms, T0 + 54 * MIN + 30 * SEC);
    assert_int_equal(o.status.activity->pause_at_ms, 0);
    assert_int_equal(count_events(&o), 0);
    assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 0);
    assert_int_equal(o.requeue_after_ms, MIN);
    assert_true(o.probe_wanted);
    commit(&w, &o);
    assert_settled(&w);

    /* probes recover: announced, late, with the full warning */
    probe_round(&w, T0 + 56 * MIN, 0, 0);
    announce(&w, T0 + 56 * MIN + SEC);
    assert_int_equal(st(&w)->activity->pause_at_ms, T0 + 61 * MIN + SEC);
    assert_null(st(&w)->activity->last_probe_error);

    /* the confirming round fails: no pause, the announcement is withdrawn */
    failed_round(&w, T0 + 61 * MIN + 2 * SEC, "GET http://10.0.0.5:8888/api/kernels: timed out");
    idle_pass(&w, T0 + 61 * MIN + 3 * SEC, &o);
    assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 0);
    assert_cond(&o, "Idle", COND_UNKNOWN, "ProbeFailed");
    assert_cond(&o, "ActivityProbe", COND_FALSE, "Failed");
    assert_int_equal(o.status.activity->pause_at_ms, 0);
    only_event(&o, "Normal", "IdleCancelled");
    commit(&w, &o);
    assert_settled(&w);

    /* still failing at any later time: never a pause */
    for (int64_t t = T0 + 62 * MIN; t < T0 + 5 * 60 * MIN; t += 7 * MIN) {
        failed_round(&w, t - SEC, "GET http://10.0.0.5:8888/api/status: connection refused");
        idle_pass(&w, t, &o);
        assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 0);
        assert_null(find_event(&o, "IdleWarning"));
        commit(&w, &o);
    }

    /* and once it answers again, a new warning with the full lead */
    probe_round(&w, T0 + 5 * 60 * MIN, 0, 0);
    idle_pass(&w, T0 + 5 * 60 * MIN + SEC, &o);
    only_event(&o, "Warning", "IdleWarning");
    assert_int_equal(o.status.activity->pause_at_ms, T0 + 5 * 60 * MIN + SEC + 5 * MIN);
    assert_cond(&o, "ActivityProbe", COND_TRUE, "Succeeded");
    decide_output_clear(&o);
    world_free(&w);
}

static void test_idle_pause_reason(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int64_t auto_paused; /* the annotation; 0: none */
        int64_t last_resume; /* status.lastResume.requestedAt */
        const char *reason;
    } cases[] = {
        {"no annotation: the user's", 0, 0, "User"},
        {"annotation older than the last resume", NOW - 2 * 60 * MIN, NOW - 60 * MIN, "User"},
        {"annotation from the future", NOW + MIN, 0, "User"},
        {"annotation after the last resume: the controller's", NOW - 30 * SEC, NOW - 60 * MIN,
         "IdleTimeout"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct world w;
        world_init(&w);
        idle_world(&w, NOW - 3 * 60 * MIN);
        w.ws->paused = 1;
        w.ws->auto_paused_ms = cases[i].auto_paused;
        if (cases[i].auto_paused)
            set_str(&w.ws->auto_pause_message, "idle for 1h (no activity since\n"
                                               "2027-01-01T00:00:00Z, start)");
        st(&w)->last_resume->requested_ms = cases[i].last_resume;
        st(&w)->last_resume->ready_ms = cases[i].last_resume ? cases[i].last_resume + MIN : 0;
        st(&w)->pauses = st(&w)->resumes = cases[i].last_resume ? 1 : 0;
        struct decide_output o;
        idle_pass(&w, NOW, &o);
        assert_int_equal(o.status.state, WS_STATE_PAUSING);
        if (!o.status.last_pause->reason || strcmp(o.status.last_pause->reason, cases[i].reason))
            fail_msg("%s: reason %s", cases[i].name, o.status.last_pause->reason);
        if (strcmp(cases[i].reason, "User") == 0) {
            assert_null(o.status.last_pause->message);
            assert_int_equal(o.status.last_pause->requested_ms, NOW);
            /* the user's pause: work ended when they asked */
            assert_int_equal(o.status.last_pause->work_ended_ms, NOW);
            assert_non_null(strstr(only_event(&o, "Normal", "Pausing")->message, "alice-1"));
        } else {
            /* one line, as status and events keep it */
            assert_string_equal(o.status.last_pause->message,
                                "idle for 1h (no activity since 2027-01-01T00:00:00Z, start)");
            assert_int_equal(o.status.last_pause->requested_ms, cases[i].auto_paused);
            /* the controller's: with the last activity it went by */
            assert_int_equal(o.status.last_pause->work_ended_ms, NOW - 3 * 60 * MIN);
            only_event(&o, "Normal", "IdleTimeout");
        }
        commit(&w, &o);
        assert_settled(&w);
        world_free(&w);
    }

    /* an overlong reason is cut to what the API accepts */
    struct world w;
    world_init(&w);
    idle_world(&w, NOW - 3 * 60 * MIN);
    w.ws->paused = 1;
    w.ws->auto_paused_ms = NOW - SEC;
    char *long_msg = malloc(5000);
    memset(long_msg, 'x', 4999);
    long_msg[4999] = '\0';
    w.ws->auto_pause_message = long_msg;
    struct decide_output o;
    idle_pass(&w, NOW, &o);
    assert_string_equal(o.status.last_pause->reason, "IdleTimeout");
    assert_true(strlen(o.status.last_pause->message) <= 1024);
    decide_output_clear(&o);
    world_free(&w);
}

static void test_idle_leaving_running(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    idle_world(&w, T0);
    probe_round(&w, T0 + 20 * MIN, T0 + 10 * MIN, 0);
    struct decide_output o;
    idle_pass(&w, T0 + 20 * MIN + SEC, &o);
    commit(&w, &o);
    probe_round(&w, T0 + 65 * MIN, T0 + 10 * MIN, 0);
    announce(&w, T0 + 65 * MIN + SEC);

    /* the pod is gone: Pending again, a new pod under the same name */
    remove_pod(&w, find_pod(&w, "alice-1"));
    idle_pass(&w, T0 + 66 * MIN, &o);
    assert_int_equal(o.status.state, WS_STATE_PENDING);
    assert_null(cond(&o, "Idle"));
    assert_null(cond(&o, "ActivityProbe"));
    const struct workspace_activity *a = o.status.activity;
    assert_int_equal(a->idle_since_ms, 0);
    assert_int_equal(a->pause_at_ms, 0);
    assert_int_equal(a->last_probe_ms, 0);
    assert_null(a->last_probe_result);
    assert_null(a->last_probe_error);
    assert_int_equal(a->last_activity_ms, T0 + 10 * MIN);
    assert_string_equal(a->last_activity_source, "jupyter");
    assert_false(o.probe_wanted);
    assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 0);
    commit(&w, &o);
    assert_settled(&w);
    world_free(&w);
}

/* status.activity is a record that moves in steps, not with every round. */
static void test_idle_record_steps(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    idle_world(&w, T0);
    struct decide_output o;

    /* moved by 9 minutes: recorded */
    probe_round(&w, T0 + 10 * MIN, T0 + 9 * MIN, 0);
    idle_pass(&w, T0 + 10 * MIN + SEC, &o);
    assert_int_equal(o.status.activity->last_activity_ms, T0 + 9 * MIN);
    assert_int_equal(o.status.activity->last_probe_ms, T0 + 10 * MIN);
    assert_string_equal(o.status.activity->last_probe_result, "Idle");
    commit(&w, &o);

    /* busy: the result changed, so the probe time moves; 2 minutes of
     * activity are recorded */
    probe_round(&w, T0 + 11 * MIN, T0 + 9 * MIN, 1);
    idle_pass(&w, T0 + 11 * MIN + SEC, &o);
    assert_string_equal(o.status.activity->last_probe_result, "Active");
    assert_int_equal(o.status.activity->last_probe_ms, T0 + 11 * MIN);
    assert_int_equal(o.status.activity->last_activity_ms, T0 + 11 * MIN);
    commit(&w, &o);

    /* busy 30 s later: nothing to write */
    probe_round(&w, T0 + 11 * MIN + 30 * SEC, T0 + 9 * MIN, 1);
    idle_pass(&w, T0 + 11 * MIN + 31 * SEC, &o);
    assert_int_equal(o.status.activity->last_activity_ms, T0 + 11 * MIN);
    assert_int_equal(o.status.activity->last_probe_ms, T0 + 11 * MIN);
    assert_false(o.status_changed);
    commit(&w, &o);

    /* busy a minute after the record: the activity moves, the probe time not */
    probe_round(&w, T0 + 12 * MIN, T0 + 9 * MIN, 1);
    idle_pass(&w, T0 + 12 * MIN + SEC, &o);
    assert_int_equal(o.status.activity->last_activity_ms, T0 + 12 * MIN);
    assert_int_equal(o.status.activity->last_probe_ms, T0 + 11 * MIN);
    commit(&w, &o);

    /* five minutes after the recorded probe time, with the same result */
    probe_round(&w, T0 + 16 * MIN, T0 + 9 * MIN, 1);
    idle_pass(&w, T0 + 16 * MIN + SEC, &o);
    assert_int_equal(o.status.activity->last_probe_ms, T0 + 16 * MIN);
    commit(&w, &o);

    /* idle with the last activity 40 s after the record: not recorded yet */
    probe_round(&w, T0 + 17 * MIN, T0 + 16 * MIN + 40 * SEC, 0);
    idle_pass(&w, T0 + 17 * MIN + SEC, &o);
    assert_int_equal(o.status.activity->last_activity_ms, T0 + 16 * MIN);
    assert_string_equal(o.status.activity->last_probe_result, "Idle");
    commit(&w, &o);

    /* ... until the announcement, which records it exactly */
    probe_round(&w, T0 + 71 * MIN + 40 * SEC, T0 + 16 * MIN + 40 * SEC, 0);
    idle_pass(&w, T0 + 71 * MIN + 40 * SEC, &o);
    assert_cond(&o, "Idle", COND_TRUE, "PauseScheduled");
    assert_int_equal(o.status.activity->last_activity_ms, T0 + 16 * MIN + 40 * SEC);
    assert_int_equal(o.status.activity->idle_since_ms, T0 + 16 * MIN + 40 * SEC);
    assert_int_equal(o.status.activity->pause_at_ms, T0 + 76 * MIN + 40 * SEC);
    decide_output_clear(&o);
    world_free(&w);
}

/* A user at work: the notebook's last activity moves every round while no
 * kernel is busy. The record moves about once a minute, and so should the
 * status writes. */
static void test_idle_record_user_at_work(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    idle_world(&w, T0);
    w.cls_owned->activity.interval_ms = 15 * SEC;
    struct decide_output o;
    size_t writes = 0, passes = 0;
    for (int64_t t = T0 + 10 * MIN; t < T0 + 20 * MIN; t += 15 * SEC) {
        probe_round(&w, t, t - 5 * SEC, 0); /* typed 5 s before the round */
        idle_pass(&w, t + 200, &o);
        assert_cond(&o, "Idle", COND_FALSE, "Active");
        writes += o.status_changed;
        passes++;
        commit(&w, &o);
    }
    /* 40 rounds in 10 minutes: about one write a minute */
    if (writes > 15)
        fail_msg("%zu status writes in %zu rounds over 10 minutes (status.activity.idleSince "
                 "follows every round)",
                 writes, passes);
    world_free(&w);
}

static void test_idle_policy_condition(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    idle_world(&w, T0);
    probe_round(&w, T0 + 5 * MIN, T0 + 4 * MIN, 0);
    struct decide_output o;

    w.ws->idle_after_ms = 3 * 60 * MIN;
    idle_pass(&w, T0 + 5 * MIN + SEC, &o);
    assert_cond(&o, "IdlePolicy", COND_FALSE, "OutOfBounds");
    const char *want = "spec.idle.after: 3h is longer than the class maximum 1h; 1h applies";
    assert_string_equal(cond(&o, "IdlePolicy")->message, want);
    assert_string_equal(only_event(&o, "Warning", "IdlePolicyOutOfBounds")->message, want);
    assert_int_equal(o.status.activity->idle_after_seconds, 3600);
    assert_int_equal(o.status.state, WS_STATE_RUNNING);
    assert_int_equal(count_actions(&o, ACTION_DELETE_POD), 0);
    commit(&w, &o);
    assert_settled(&w);

    w.ws->idle_after_ms = 5 * MIN;
    w.ws->generation++;
    idle_pass(&w, T0 + 6 * MIN, &o);
    want = "spec.idle.after: 5m is shorter than the class minimum 15m; 15m applies";
    assert_string_equal(cond(&o, "IdlePolicy")->message, want);
    assert_string_equal(only_event(&o, "Warning", "IdlePolicyOutOfBounds")->message, want);
    assert_int_equal(o.status.activity->idle_after_seconds, 900);
    /* the clamped value is the one that applies: 15m after 00:04 */
    assert_int_equal(w.now + o.requeue_after_ms, T0 + 14 * MIN);
    commit(&w, &o);
    assert_settled(&w);

    w.ws->idle_after_ms = 30 * MIN;
    w.ws->generation++;
    idle_pass(&w, T0 + 7 * MIN, &o);
    assert_cond(&o, "IdlePolicy", COND_TRUE, "Accepted");
    assert_non_null(strstr(cond(&o, "IdlePolicy")->message, "30m"));
    assert_int_equal(count_events(&o), 0);
    assert_int_equal(o.status.activity->idle_after_seconds, 1800);
    commit(&w, &o);

    w.ws->idle_after_ms = 0;
    w.ws->generation++;
    idle_pass(&w, T0 + 8 * MIN, &o);
    assert_null(cond(&o, "IdlePolicy"));
    assert_int_equal(o.status.activity->idle_after_seconds, 3600);
    decide_output_clear(&o);
    world_free(&w);
}

static void keep_alive_bound(int64_t spec_value)
{
    struct world w;
    world_init(&w);
    idle_world(&w, T0);
    probe_round(&w, NOW - SEC, T0, 0);
    w.ws->keep_alive_until_ms = spec_value;
    struct decide_output o;
    idle_pass(&w, NOW, &o);
    assert_cond(&o, "Idle", COND_FALSE, "KeepAlive");
    /* 12h (maxKeepAlive) from when it was first seen */
    assert_int_equal(o.status.activity->keep_alive_until_ms, NOW + 12 * 60 * MIN);
    assert_int_equal(o.status.activity->keep_alive_requested_ms / 1000, spec_value / 1000);
    assert_int_equal(o.requeue_after_ms, 12 * 60 * MIN);
    commit(&w, &o);

    /* seen again later: the bound stays where it was put */
    probe_round(&w, NOW + 10 * MIN, T0, 0);
    idle_pass(&w, NOW + 10 * MIN + SEC, &o);
    if (o.status.activity->keep_alive_until_ms != NOW + 12 * 60 * MIN)
        fail_msg(
            "keepAliveUntil %s: the bound moved by %llds on a later pass",
            spec_value % 1000 ? "with a fraction" : "",
            (long long)((o.status.activity->keep_alive_until_ms - (NOW + 12 * 60 * MIN)) / 1000));
    assert_int_equal(o.status.activity->keep_alive_requested_ms / 1000, spec_value / 1000);
    commit(&w, &o);

    /* a new value is bounded from when it is seen */
    w.ws->keep_alive_until_ms = NOW + 3 * 60 * MIN;
    idle_pass(&w, NOW + 20 * MIN, &o);
    assert_int_equal(o.status.activity->keep_alive_until_ms, NOW + 3 * 60 * MIN);
    commit(&w, &o);

    /* once over, it counts as activity at its end */
    probe_round(&w, NOW + 3 * 60 * MIN + 10 * SEC, T0, 0);
    idle_pass(&w, NOW + 3 * 60 * MIN + 11 * SEC, &o);
    assert_cond(&o, "Idle", COND_FALSE, "Active");
    assert_int_equal(o.status.activity->last_activity_ms, NOW + 3 * 60 * MIN);
    assert_string_equal(o.status.activity->last_activity_source, "keepAlive");
    decide_output_clear(&o);
    world_free(&w);
}

static void test_idle_keep_alive(void **state)
{
    (void)state;
    keep_alive_bound(NOW + 24 * 60 * MIN);
}

/* RFC 3339 allows fractions ("date +%FT%T.%NZ"); the status keeps seconds. */
static void test_idle_keep_alive_fraction(void **state)
{
    (void)state;
    keep_alive_bound(NOW + 24 * 60 * MIN + 500);
}

static void test_idle_pause_windows(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    idle_world(&w, T0);
    struct pause_schedule *s = &w.cls_owned->idle.schedule;
    s->windows[0] = (struct pause_window){0, 19 * 60, 8 * 60};
    s->n_windows = 1;
    set_str(&w.cls_owned->idle.time_zone, "Europe/Berlin");
    /* 2027-01-01 12:00 UTC, idle since 09:00 */
    int64_t noon = T0 + 12 * 60 * MIN, nine = T0 + 9 * 60 * MIN;
    st(&w)->state_since_ms = nine;
    st(&w)->activity->last_activity_ms = nine;
    probe_round(&w, noon - 30 * SEC, nine, 0);

    w.zone = NULL; /* still being loaded */
    struct decide_output o;
    idle_pass(&w, noon, &o);
    assert_cond(&o, "Idle", COND_UNKNOWN, "TimeZoneUnavailable");
    assert_non_null(strstr(cond(&o, "Idle")->message, "Europe/Berlin"));
    assert_int_equal(o.status.activity->pause_at_ms, 0);
    assert_int_equal(count_events(&o), 0);
    decide_output_clear(&o);

    w.zone = tz_utc(); /* loaded (UTC stands in for it here) */
    idle_pass(&w, noon, &o);
    assert_cond(&o, "Idle", COND_TRUE, "OutsidePauseWindow");
    assert_time(o.status.activity->pause_at_ms, "2027-01-01T19:00:00Z");
    assert_int_equal(count_events(&o), 0);
    assert_int_equal(o.requeue_after_ms, 6 * 60 * MIN + 55 * MIN);
    commit(&w, &o);
    assert_settled(&w);

    /* warnBefore ahead of the window: the announcement */
    probe_round(&w, T0 + 18 * 60 * MIN + 54 * MIN, nine, 0);
    idle_pass(&w, T0 + 18 * 60 * MIN + 55 * MIN, &o);
    assert_cond(&o, "Idle", COND_TRUE, "PauseScheduled");
    only_event(&o, "Warning", "IdleWarning");
    assert_time(o.status.activity->pause_at_ms, "2027-01-01T19:00:00Z");
    decide_output_clear(&o);

    /* automatic pausing off: idle, never announced */
    w.cls_owned->idle.auto_pause = 0;
    idle_pass(&w, T0 + 18 * 60 * MIN + 55 * MIN, &o);
    assert_cond(&o, "Idle", COND_TRUE, "AutoPauseDisabled");
    assert_int_equal(count_events(&o), 0);
    assert_int_equal(o.status.activity->pause_at_ms, 0);
    assert_int_equal(o.requeue_after_ms, 0);
    decide_output_clear(&o);
    world_free(&w);
}

/* The automatic pause is made on a settled world: a pass that also removes
 * a pod (a stopped one, a duplicate) decides again once that is done. */
static void test_idle_auto_pause_alone(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        const char *pod;
        int flags;
    } cases[] = {
        {"a stopped pod beside the live one", "alice-0", STOPPED | SCHED},
        {"a duplicate pod", "alice-2", READY},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct world w;
        world_init(&w);
        idle_world(&w, T0);
        probe_round(&w, T0 + 54 * MIN, 0, 0);
        announce(&w, T0 + 55 * MIN);
        add_pod(&w, cases[i].pod, cases[i].flags, T0 + 50 * MIN);
        probe_round(&w, T0 + 60 * MIN + SEC, 0, 0);
        struct decide_output o;
        w.now = T0 + 60 * MIN + 2 * SEC;
        decide(&w, &o);
        size_t deletes = count_actions(&o, ACTION_DELETE_POD);
        size_t pauses = count_actions(&o, ACTION_AUTO_PAUSE);
        if (deletes && pauses)
            fail_msg("%s: an automatic pause in the same pass as DeletePod", cases[i].name);
        assert_int_equal(deletes, 1);
        /* once the pod is gone, the pause */
        commit(&w, &o);
        remove_pod(&w, find_pod(&w, cases[i].pod));
        idle_pass(&w, T0 + 60 * MIN + 3 * SEC, &o);
        assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 1);
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* The controller paused it; the user set spec.paused back to false before a
 * pass saw the pause. That is a resume: the round that confirmed the pause
 * must not pause it again, and a later pause by the user is the user's. */
static void test_idle_quick_resume(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    idle_world(&w, T0);
    probe_round(&w, T0 + 54 * MIN, 0, 0);
    announce(&w, T0 + 55 * MIN);
    probe_round(&w, T0 + 60 * MIN + SEC, 0, 0);
    struct decide_output o;
    idle_pass(&w, T0 + 60 * MIN + 2 * SEC, &o);
    assert_int_equal(count_actions(&o, ACTION_AUTO_PAUSE), 1);
    commit(&w, &o);
    assert_true(w.ws->paused);

    w.ws->paused = 0; /* kubectl patch ... spec.paused=false */
    idle_pass(&w, T0 + 60 * MIN + 5 * SEC, &o);
    assert_int_equal(o.status.state, WS_STATE_RUNNING);
    if (count_actions(&o, ACTION_AUTO_PAUSE))
        fail_msg("paused again at once on the round that confirmed the first pause");
    assert_int_equal(count_actions(&o, ACTION_DELETE_POD), 0);
    commit(&w, &o);

    /* an hour later the user pauses it */
    probe_round(&w, T0 + 90 * MIN, T0 + 89 * MIN, 0);
    idle_pass(&w, T0 + 90 * MIN + SEC, &o);
    commit(&w, &o);
    w.ws->paused = 1;
    idle_pass(&w, T0 + 91 * MIN, &o);
    assert_int_equal(o.status.state, WS_STATE_PAUSING);
    assert_string_equal(o.status.last_pause->reason, "User");
    only_event(&o, "Normal", "Pausing");
    decide_output_clear(&o);
    world_free(&w);
}

static void test_action_names(void **state)
{
    (void)state;
    for (int t = ACTION_ADD_FINALIZER; t <= ACTION_EVENT; t++)
        assert_string_not_equal(action_type_name((enum action_type)t), "Unknown");
    decide_output_clear(NULL);
}

static int setup_regex(void **state)
{
    (void)state;
    return regcomp(&reason_re, "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                   REG_EXTENDED | REG_NOSUB);
}

static int free_regex(void **state)
{
    (void)state;
    regfree(&reason_re);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_available),
        cmocka_unit_test(test_transition_times),
        cmocka_unit_test(test_random_worlds),
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_lifecycle_crash_after_create),
        cmocka_unit_test(test_lifecycle_cache_lag),
        cmocka_unit_test(test_ledger_taker),
        cmocka_unit_test(test_ledger_pause_resume),
        cmocka_unit_test(test_ledger_hold_without_pause),
        cmocka_unit_test(test_ledger_forged),
        cmocka_unit_test(test_action_failed_carried),
        cmocka_unit_test(test_lifecycle_fallback),
        cmocka_unit_test(test_action_names),
        cmocka_unit_test(test_idle_entering_running),
        cmocka_unit_test(test_idle_probe_wanted),
        cmocka_unit_test(test_idle_pause_flow),
        cmocka_unit_test(test_idle_cancelled),
        cmocka_unit_test(test_idle_probe_failure),
        cmocka_unit_test(test_idle_pause_reason),
        cmocka_unit_test(test_idle_leaving_running),
        cmocka_unit_test(test_idle_record_steps),
        cmocka_unit_test(test_idle_record_user_at_work),
        cmocka_unit_test(test_idle_policy_condition),
        cmocka_unit_test(test_idle_keep_alive),
        cmocka_unit_test(test_idle_keep_alive_fraction),
        cmocka_unit_test(test_idle_pause_windows),
        cmocka_unit_test(test_idle_auto_pause_alone),
        cmocka_unit_test(test_idle_quick_resume),
        cmocka_unit_test(test_ledger_resume_sources),
        cmocka_unit_test(test_ledger_pause_memories),
    };
    return cmocka_run_group_tests(tests, setup_regex, free_regex);
}
