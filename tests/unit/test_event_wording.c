/*
 * What the Events (and the status message) say at each transition, through
 * workspace_decide(): a table of walks, each a few passes of a small world
 * (a pause with a snapshot, with files only, kept by Retry; a resume from
 * the snapshot, cold, from files; a workspace created paused and then
 * resumed; a first start whose home claim binds; a wait for capacity), and
 * for each the Event it must post, once, with the words it must and must
 * not have. The reasons are workspace/vocabulary.h's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workspace/decide.h"
#include "workspace/vocabulary.h"

#undef MIN /* sys/param.h's, through uv.h */
#define SEC 1000LL
#define MIN (60 * SEC)
#define T0 1800000000000LL
#define MAX_SEEN 64

#define CLASS_HEAD                                                                                 \
    "{\"metadata\":{\"name\":\"gpu\"},\"spec\":{"                                                  \
    "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],\"default\":\"quay.io/jupyter/a:1\"},"        \
    "\"home\":{\"size\":\"5Gi\"},\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\","            \
    "\"product\":\"Tesla-T4\"},\"resume\":{\"capacityTimeout\":\"10m\"},\"pause\":{"               \
    "\"gracePeriodSeconds\":30}"
#define FILES ""
#define GKE_RETRY                                                                                  \
    ",\"snapshot\":{\"backend\":\"GKE\",\"storageConfigName\":\"s\",\"timeout\":\"10m\"}"
#define GKE_NO_MEMORY                                                                              \
    ",\"snapshot\":{\"backend\":\"GKE\",\"storageConfigName\":\"s\",\"timeout\":\"10m\","          \
    "\"onFailure\":\"PauseWithoutMemory\"}"

/* The Events of a walk, in order, across its passes. */
struct seen {
    char *type[MAX_SEEN], *reason[MAX_SEEN], *message[MAX_SEEN];
    size_t n;
};

struct world {
    struct workspace *ws;
    struct workspace_class *cls;
    struct workspace_pod pod;
    char pod_name[64]; /* the pod's name, kept across passes */
    int has_pod;
    struct workspace_pvc pvc;
    struct snapshot_view view;
    int has_view;
    int64_t now;
    struct decide_output last; /* the last pass's output */
    struct seen seen;
};

static void world_init(struct world *w, const char *snapshot, int paused, int running)
{
    memset(w, 0, sizeof(*w));
    char json[2048];
    snprintf(json, sizeof(json), "%s%s}}", CLASS_HEAD, snapshot);
    cJSON *obj = cJSON_Parse(json);
    char *err = NULL;
    if (workspace_class_decode(obj, &w->cls, &err) < 0)
        fail_msg("class: %s", err ? err : "?");
    cJSON_Delete(obj);
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"nb\",\"namespace\":\"team\",\"uid\":\"u1\","
             "\"generation\":1,\"finalizers\":[\"hibernator.dev/cleanup\"]},"
             "\"spec\":{\"className\":\"gpu\",\"paused\":%s}}",
             paused ? "true" : "false");
    obj = cJSON_Parse(json);
    assert_int_equal(workspace_decode(obj, &w->ws, NULL), 0);
    cJSON_Delete(obj);
    w->pvc = (struct workspace_pvc){.ns = "team", .name = "nb-home", .phase = "Bound"};
    w->now = T0;
    if (!running)
        return;
    struct workspace_status *st = &w->ws->status;
    st->state = WS_STATE_RUNNING;
    st->observed_generation = 1;
    st->pod_name = strdup("nb-1");
    st->pod_generation = 1;
    w->pod = (struct workspace_pod){.ns = "team",
                                    .name = "nb-1",
                                    .uid = "p1",
                                    .workspace = "nb",
                                    .node_name = "gpu-node-1",
                                    .phase = "Running",
                                    .created_ms = T0,
                                    .ready = 1,
                                    .scheduled = 1,
                                    .group = "u1-1",
                                    .ready_ms = T0 + 5 * SEC};
    w->has_pod = 1;
    w->now = T0 + 10 * MIN;
}

static void world_free(struct world *w)
{
    decide_output_clear(&w->last);
    for (size_t i = 0; i < w->seen.n; i++) {
        free(w->seen.type[i]);
        free(w->seen.reason[i]);
        free(w->seen.message[i]);
    }
    workspace_free(w->ws);
    workspace_class_free(w->cls);
}

/* One pass after dt: its status becomes the workspace's, its Events are
 * seen (an Event of an occasion already posted is not posted again). */
static void pass(struct world *w, int64_t dt)
{
    w->now += dt;
    const struct workspace_pod *pods[] = {&w->pod};
    struct decide_input in = {.ws = w->ws,
                              .cls = w->cls,
                              .pods = pods,
                              .n_pods = w->has_pod ? 1 : 0,
                              .pvc = &w->pvc,
                              .now_ms = w->now,
                              .snapshot = w->has_view ? &w->view : NULL};
    decide_output_clear(&w->last);
    assert_int_equal(workspace_decide(&in, &w->last), 0);
    workspace_status_clear(&w->ws->status);
    assert_int_equal(workspace_status_copy(&w->last.status, &w->ws->status), 0);
    for (size_t i = 0; i < w->last.n_actions; i++) {
        const struct action *a = &w->last.actions[i];
        if (a->type != ACTION_EVENT)
            continue;
        assert_true(w->seen.n < MAX_SEEN);
        w->seen.type[w->seen.n] = strdup(a->event_type);
        w->seen.reason[w->seen.n] = strdup(a->reason);
        w->seen.message[w->seen.n] = strdup(a->message);
        w->seen.n++;
    }
}

/* The pod the status names comes up on a node; ready or not. */
static void pod_up(struct world *w, const char *snapshot, int ready)
{
    assert_non_null(w->ws->status.pod_name);
    snprintf(w->pod_name, sizeof(w->pod_name), "%s", w->ws->status.pod_name);
    w->pod = (struct workspace_pod){.ns = "team",
                                    .name = w->pod_name,
                                    .uid = "p2",
                                    .workspace = "nb",
                                    .node_name = "gpu-node-2",
                                    .phase = "Running",
                                    .created_ms = w->now - 5 * SEC,
                                    .ready = ready,
                                    .scheduled = 1,
                                    .scheduled_ms = w->now - 4 * SEC,
                                    .ready_ms = ready ? w->now - SEC : 0,
                                    .restore_from_checkpoint = w->ws->status.pauses > 0,
                                    .snapshot = (char *)snapshot};
    w->has_pod = 1;
}

/* ---- the walks ---- */

/* Running, paused by its user; the snapshot (if any) becomes Ready and the
 * pod goes. */
static void pause_walk(struct world *w, const char *snapshot)
{
    world_init(w, snapshot, 1, 1);
    pass(w, 0);
    if (snapshot[0]) {
        w->has_view = 1;
        w->view = (struct snapshot_view){.attempt = "nb-p1-1",
                                         .phase = SNAPSHOT_PHASE_READY,
                                         .name = "nb-p1-1-x7k2q",
                                         .ready_ms = w->now + 60 * SEC};
        pass(w, 60 * SEC);
    }
    w->has_pod = 0;
    pass(w, 10 * SEC);
    assert_int_equal(w->ws->status.state, WS_STATE_PAUSED);
}

static void walk_pause_with_snapshot(struct world *w)
{
    pause_walk(w, GKE_NO_MEMORY);
}

static void walk_pause_with_files(struct world *w)
{
    pause_walk(w, FILES);
}

/* Retry: the snapshot fails and the pod keeps running. */
static void walk_pause_kept_by_retry(struct world *w)
{
    world_init(w, GKE_RETRY, 1, 1);
    pass(w, 0);
    w->has_view = 1;
    w->view = (struct snapshot_view){
        .attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_FAILED, .message = "upload failed"};
    pass(w, 30 * SEC);
    assert_int_equal(w->ws->status.state, WS_STATE_PAUSING);
    assert_true(w->has_pod);
}

/* Paused with a snapshot, resumed 8 hours later. */
static void paused_then_resumed(struct world *w, const char *snapshot)
{
    pause_walk(w, snapshot);
    w->ws->paused = 0;
    w->ws->generation++;
    pass(w, 8 * 60 * MIN);
}

/* The restored pod is ready before the backend says it was restored (GKE
 * sets PodRestored after Ready), then says so. */
static void walk_resume_from_snapshot(struct world *w)
{
    paused_then_resumed(w, GKE_NO_MEMORY);
    pass(w, 10 * SEC);
    pod_up(w, "nb-p1-1-x7k2q", 1);
    pass(w, 2 * SEC);
    w->pod.restored = 1;
    pass(w, 2 * SEC);
    assert_string_equal(w->ws->status.last_resume->restored_from, WS_REASON_FROM_SNAPSHOT);
}

/* The backend started the pod cold: no PodRestored within the grace. */
static void walk_resume_cold(struct world *w)
{
    paused_then_resumed(w, GKE_NO_MEMORY);
    pass(w, 10 * SEC);
    pod_up(w, "nb-p1-1-x7k2q", 1);
    pass(w, 2 * SEC);
    pass(w, 40 * SEC);
    assert_string_equal(w->ws->status.last_resume->restored_from, WS_REASON_COLD_START);
}

/* No snapshot backend: the resume starts from the files and the checkpoint. */
static void walk_resume_from_files(struct world *w)
{
    paused_then_resumed(w, FILES);
    pass(w, 10 * SEC);
    pod_up(w, NULL, 1);
    pass(w, 2 * SEC);
    assert_int_equal(w->ws->status.state, WS_STATE_RUNNING);
}

/* Created paused (never ran), then resumed by its user. */
static void walk_created_paused_then_resumed(struct world *w)
{
    world_init(w, FILES, 1, 0);
    pass(w, 0);
    assert_int_equal(w->ws->status.state, WS_STATE_PAUSED);
    w->ws->paused = 0;
    w->ws->generation++;
    pass(w, 5 * MIN);
    pass(w, 10 * SEC);
    pod_up(w, NULL, 1);
    pass(w, 2 * SEC);
    assert_int_equal(w->ws->status.state, WS_STATE_RUNNING);
}

/* A first start: the pod waits while its home claim binds (the scheduler
 * says "unbound immediate PersistentVolumeClaims"). */
static void walk_first_start_home_binding(struct world *w)
{
    world_init(w, FILES, 0, 0);
    w->pvc.phase = "Pending";
    pass(w, 0);
    pod_up(w, NULL, 0);
    w->pod.scheduled = 0;
    w->pod.scheduled_ms = 0;
    w->pod.node_name = NULL;
    w->pod.unschedulable = 1;
    w->pod.unschedulable_message = "0/3 nodes are available: pod has unbound immediate "
                                   "PersistentVolumeClaims. preemption: 0/3 nodes are available: "
                                   "3 Preemption is not helpful for scheduling.";
    pass(w, 2 * SEC);
    pass(w, 11 * MIN); /* longer than the capacity timeout: no capacity is missing */
}

/* A first start with no GPU free, past the capacity timeout (Wait). */
static void walk_capacity_wait(struct world *w)
{
    world_init(w, FILES, 0, 0);
    pass(w, 0);
    pod_up(w, NULL, 0);
    w->pod.scheduled = 0;
    w->pod.scheduled_ms = 0;
    w->pod.node_name = NULL;
    w->pod.unschedulable = 1;
    w->pod.unschedulable_message = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.";
    pass(w, 2 * SEC);
    pass(w, 11 * MIN);
}

/* ---- the table ---- */

struct row {
    const char *name;
    void (*walk)(struct world *w);
    const char *reason;   /* the Event that must be posted once */
    const char *has[3];   /* words its message has */
    const char * not [2]; /* and has not */
    const char *absent;   /* an Event reason that must not be posted, or NULL */
    enum workspace_state state;
    const char *message_has; /* status.message after the walk, or NULL */
};

static const struct row rows[] = {
    {"pause with snapshot: announced",
     walk_pause_with_snapshot,
     WS_EVENT_PAUSING,
     {"pod nb-1 keeps running", "snapshot nb-p1-1"},
     {"stopping pod"},
     NULL,
     WS_STATE_PAUSED,
     NULL},
    {"pause with snapshot: done",
     walk_pause_with_snapshot,
     WS_EVENT_PAUSED,
     {"snapshot nb-p1-1-x7k2q", "memory"},
     {"files only"},
     NULL,
     WS_STATE_PAUSED,
     NULL},
    {"pause with files: announced",
     walk_pause_with_files,
     WS_EVENT_PAUSING,
     {"stopping pod nb-1", "30s"},
     {"snapshot"},
     NULL,
     WS_STATE_PAUSED,
     NULL},
    {"pause with files: done",
     walk_pause_with_files,
     WS_EVENT_PAUSED,
     {"files", "checkpoint"},
     {"snapshot"},
     NULL,
     WS_STATE_PAUSED,
     NULL},
    {"pause kept by Retry: announced",
     walk_pause_kept_by_retry,
     WS_EVENT_PAUSING,
     {"pod nb-1 keeps running", "snapshot nb-p1-1", "tried again"},
     {"stopping pod"},
     NULL,
     WS_STATE_PAUSING,
     NULL},
    {"pause kept by Retry: the failure",
     walk_pause_kept_by_retry,
     WS_EVENT_SNAPSHOT_FAILED,
     {"upload failed", "keeps running"},
     {"stopping"},
     WS_EVENT_PAUSED,
     WS_STATE_PAUSING,
     NULL},
    {"resume from snapshot: asked",
     walk_resume_from_snapshot,
     WS_EVENT_RESUMING,
     {"resume requested after 8h", "snapshot nb-p1-1-x7k2q"},
     {NULL},
     NULL,
     WS_STATE_RUNNING,
     NULL},
    {"resume from snapshot: ready",
     walk_resume_from_snapshot,
     WS_EVENT_RESUMED,
     {"from snapshot nb-p1-1-x7k2q"},
     {"checkpoint", "cold"},
     WS_EVENT_COLD_START,
     WS_STATE_RUNNING,
     NULL},
    {"resume cold: ready",
     walk_resume_cold,
     WS_EVENT_RESUMED,
     {"cold start", "snapshot nb-p1-1-x7k2q", "files"},
     {"(from snapshot"},
     NULL,
     WS_STATE_RUNNING,
     NULL},
    {"resume from files: asked",
     walk_resume_from_files,
     WS_EVENT_RESUMING,
     {"resume requested after 8h", "files and the application's checkpoint"},
     {"snapshot"},
     NULL,
     WS_STATE_RUNNING,
     NULL},
    {"resume from files: ready",
     walk_resume_from_files,
     WS_EVENT_RESUMED,
     {"from the files and the application's checkpoint"},
     {"snapshot", "fresh"},
     NULL,
     WS_STATE_RUNNING,
     NULL},
    {"created paused, resumed: asked",
     walk_created_paused_then_resumed,
     WS_EVENT_RESUMING,
     {"first start", "created paused"},
     {"after"},
     WS_EVENT_CREATED,
     WS_STATE_RUNNING,
     NULL},
    {"created paused, resumed: ready",
     walk_created_paused_then_resumed,
     WS_EVENT_RESUMED,
     {"first start", "fresh"},
     {"checkpoint", "snapshot"},
     WS_EVENT_CREATED,
     WS_STATE_RUNNING,
     NULL},
    {"first start: created",
     walk_first_start_home_binding,
     WS_EVENT_CREATED,
     {"created pod nb-1", "fresh"},
     {NULL},
     WS_EVENT_CAPACITY_TIMEOUT,
     WS_STATE_PENDING,
     "home claim nb-home"},
    {"capacity wait: timeout",
     walk_capacity_wait,
     WS_EVENT_CAPACITY_TIMEOUT,
     {"still waiting for capacity after 10m", "Insufficient nvidia.com/gpu"},
     {"claim"},
     NULL,
     WS_STATE_WAITING_FOR_CAPACITY,
     "Insufficient nvidia.com/gpu"},
};

static void print_seen(const struct seen *s)
{
    for (size_t i = 0; i < s->n; i++)
        print_message("    %s %s: %s\n", s->type[i], s->reason[i], s->message[i]);
}

static void test_event_wording(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        const struct row *row = &rows[r];
        struct world w;
        row->walk(&w);
        const char *msg = NULL, *why = NULL, *word = "";
        size_t count = 0;
        for (size_t i = 0; i < w.seen.n; i++)
            if (strcmp(w.seen.reason[i], row->reason) == 0) {
                count++;
                msg = w.seen.message[i];
            }
        if (count != 1)
            why = count ? "posted more than once" : "not posted";
        for (size_t k = 0; !why && k < 3 && row->has[k]; k++)
            if (!strstr(msg, row->has[k])) {
                why = "its message lacks";
                word = row->has[k];
            }
        for (size_t k = 0; !why && k < 2 && row->not [k]; k++)
            if (strstr(msg, row->not [k])) {
                why = "its message has";
                word = row->not [k];
            }
        for (size_t i = 0; !why && row->absent && i < w.seen.n; i++)
            if (strcmp(w.seen.reason[i], row->absent) == 0) {
                why = "an Event that must not be posted was:";
                word = row->absent;
            }
        if (!why && w.ws->status.state != row->state) {
            why = "ends in the state";
            word = workspace_state_name(w.ws->status.state);
        }
        const char *sm = w.ws->status.message ? w.ws->status.message : "";
        if (!why && row->message_has && !strstr(sm, row->message_has)) {
            why = "its status.message lacks";
            word = row->message_has;
        }
        if (why) {
            print_message("[%s] %s %s %s (status.message: %s); the Events:\n", row->name,
                          row->reason, why, word, sm);
            print_seen(&w.seen);
            failed++;
        }
        world_free(&w);
    }
    if (failed)
        fail_msg("%d of %zu rows wrong", failed, sizeof(rows) / sizeof(rows[0]));
}

/* The first start whose home claim binds is not a wait for capacity: no
 * capacity clock, no Unschedulable, the Ready reason says why. */
static void test_home_binding_is_not_capacity(void **state)
{
    (void)state;
    struct world w;
    walk_first_start_home_binding(&w);
    const struct condition *ready = workspace_status_condition(&w.ws->status, WS_COND_READY);
    assert_non_null(ready);
    assert_string_equal(ready->reason, WS_REASON_WAITING_FOR_HOME);
    assert_non_null(strstr(ready->message, "nb-home"));
    assert_null(strstr(w.ws->status.message, "capacity"));
    assert_int_equal(w.ws->status.waiting_for_capacity_since_ms, 0);
    assert_null(workspace_status_condition(&w.ws->status, WS_COND_CAPACITY_AVAILABLE));
    /* Bound: the scheduler's word counts again. */
    w.pvc.phase = "Bound";
    w.pod.unschedulable_message = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.";
    pass(&w, 5 * SEC);
    assert_int_equal(w.ws->status.state, WS_STATE_WAITING_FOR_CAPACITY);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_wording),
        cmocka_unit_test(test_home_binding_is_not_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
