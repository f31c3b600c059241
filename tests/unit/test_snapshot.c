/*
 * The pause with a snapshot backend, through workspace_decide(): the pod is
 * never deleted before its snapshot is Ready (or the class says to pause
 * without memory after a failure), an attempt is named from counters so a
 * crash repeats it instead of taking a second snapshot, failures and the
 * timeout are reported and retried; snapshots go with the workspace, and a
 * GKE trigger goes only after its PodSnapshot. docs/snapshots.md.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "snapshot/gke.h"
#include "workspace/decide.h"
#include "workspace/names.h"

#undef MIN /* sys/param.h's, through uv.h */
#define SEC 1000LL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define T0 1800000000000LL

static struct workspace_class *class_from(const char *snapshot)
{
    char json[2048];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"gpu\"},\"spec\":{"
             "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],\"default\":\"quay.io/jupyter/a:1\"},"
             "\"home\":{\"size\":\"5Gi\"},\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\","
             "\"product\":\"Tesla-T4\"},\"pause\":{\"gracePeriodSeconds\":30}%s}}",
             snapshot);
    cJSON *obj = cJSON_Parse(json);
    struct workspace_class *c = NULL;
    char *err = NULL;
    if (workspace_class_decode(obj, &c, &err) < 0)
        fail_msg("class: %s", err ? err : "?");
    cJSON_Delete(obj);
    return c;
}

#define GKE ",\"snapshot\":{\"backend\":\"GKE\",\"storageConfigName\":\"s\",\"timeout\":\"10m\"}"
#define GKE_NO_MEMORY                                                                              \
    ",\"snapshot\":{\"backend\":\"GKE\",\"storageConfigName\":\"s\",\"timeout\":\"10m\","          \
    "\"onFailure\":\"PauseWithoutMemory\"}"

/* A running workspace just paused by its user: the pause is counted and the
 * pod still runs. */
struct world {
    struct workspace *ws;
    struct workspace_class *cls;
    struct workspace_pod pod;
    struct workspace_pvc pvc;
    int has_pod;
    struct snapshot_view view;
    int has_view;
    struct snapshot_view all[8];
    size_t n_all;
    struct decide_node nodes[2]; /* what the node cache knows */
    size_t n_nodes;
    struct app_checkpoint_seen seen; /* the application's checkpoint request */
    int has_seen;
    int64_t now;
    struct restore_check check; /* the restored application's rounds */
    int has_check;
    /* What the backend holds of an attempt the status may lack: shown to
     * decide() as the reconciler does, when workspace_snapshot_next_attempt()
     * names it. */
    struct snapshot_view next;
    int has_next;
    struct workspace_pod gone; /* the pod cache's last sight of a removed pod */
    int has_gone;
    const char *storage;                       /* the storage config the snapshots are held under */
    struct decide_restore_nodes restore_nodes; /* the nodes that could restore it */
    int has_restore_nodes;
    struct activity_observation obs; /* the latest activity round */
    int has_obs;
};

static void world_init(struct world *w, const char *snapshot)
{
    memset(w, 0, sizeof(*w));
    cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"nb\",\"namespace\":\"team\",\"uid\":\"u1\","
                             "\"generation\":2,\"finalizers\":[\"hibernator.dev/cleanup\"]},"
                             "\"spec\":{\"className\":\"gpu\",\"paused\":true}}");
    assert_int_equal(workspace_decode(obj, &w->ws, NULL), 0);
    cJSON_Delete(obj);
    w->cls = class_from(snapshot);
    struct workspace_status *st = &w->ws->status;
    assert_int_equal(workspace_status_own(st), 0); /* the tests write it */
    st->state = WS_STATE_RUNNING;
    st->observed_generation = 2;
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
                                    .ready_ms = T0 + 5 * SEC};
    w->has_pod = 1;
    w->pvc = (struct workspace_pvc){.ns = "team", .name = "nb-home", .phase = "Bound"};
    w->now = T0 + 10 * MIN;
}

static void world_free(struct world *w)
{
    workspace_free(w->ws);
    workspace_class_free(w->cls);
}

/* One decision; the status it returns becomes the workspace's (the write
 * succeeded) unless keep_status is 0. */
static void decide(struct world *w, struct decide_output *out, int write_status)
{
    const struct workspace_pod *pods[] = {&w->pod};
    struct decide_input in = {
        .ws = w->ws,
        .cls = w->cls,
        .pods = pods,
        .n_pods = w->has_pod ? 1 : 0,
        .pvc = &w->pvc,
        .now_ms = w->now,
        .snapshot = w->has_view ? &w->view : NULL,
        .snapshots = w->all,
        .n_snapshots = w->n_all,
        .nodes = w->nodes,
        .n_nodes = w->n_nodes,
        .restore_check = w->has_check ? &w->check : NULL,
        .app_checkpoint = w->has_seen ? &w->seen : NULL,
        .gone_pod = w->has_gone ? &w->gone : NULL,
        .snapshot_storage = w->storage,
        .restore_nodes = w->has_restore_nodes ? &w->restore_nodes : NULL,
        .activity = w->has_obs ? &w->obs : NULL,
    };
    char next[NAMES_SIZE];
    if (w->has_next && workspace_snapshot_next_attempt(w->ws, next) == 1 &&
        strcmp(next, w->next.attempt) == 0)
        in.next_attempt = &w->next;
    assert_int_equal(workspace_decide(&in, out), 0);
    if (write_status) {
        workspace_status_clear(&w->ws->status);
        assert_int_equal(workspace_status_copy(&out->status, &w->ws->status), 0);
    }
}

static const struct action *find_action(const struct decide_output *o, enum action_type t)
{
    for (size_t i = 0; i < o->n_actions; i++)
        if (o->actions[i].type == t)
            return &o->actions[i];
    return NULL;
}

static const struct action *find_event(const struct decide_output *o, const char *reason)
{
    for (size_t i = 0; i < o->n_actions; i++)
        if (o->actions[i].type == ACTION_EVENT && strcmp(o->actions[i].reason, reason) == 0)
            return &o->actions[i];
    return NULL;
}

static const char *cond_reason(const struct workspace_status *s, const char *type)
{
    const struct condition *c = workspace_status_condition(s, type);
    return c ? c->reason : "(none)";
}

static void test_no_backend_deletes_at_once(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, "");
    struct decide_output o;
    decide(&w, &o, 1);
    const struct action *del = find_action(&o, ACTION_DELETE_POD);
    assert_non_null(del);
    assert_int_equal(del->grace_seconds, 30);
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_null(workspace_status_condition(&o.status, "SnapshotReady"));
    decide_output_clear(&o);
    world_free(&w);
}

static void test_ready_then_delete(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    struct decide_output o;

    /* 1: the pause begins an attempt, named from the counters; the pod stays. */
    decide(&w, &o, 1);
    const struct action *b = find_action(&o, ACTION_SNAPSHOT_BEGIN);
    assert_non_null(b);
    assert_string_equal(b->name, "nb-p1-1");
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_int_equal(o.status.state, WS_STATE_PAUSING);
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "InProgress");
    assert_string_equal(cond_reason(&o.status, "Ready"), "Snapshotting");
    const struct workspace_snapshot *sn = o.status.snapshot;
    assert_string_equal(sn->attempt, "nb-p1-1");
    assert_int_equal(sn->attempts, 1);
    assert_string_equal(sn->phase, "InProgress");
    assert_int_equal(sn->requested_ms, w.now);
    assert_string_equal(sn->node_name, "gpu-node-1");
    assert_string_equal(sn->gpu_product, "Tesla-T4");
    assert_int_equal(strlen(sn->pod_spec_hash), 64);
    assert_int_equal(o.requeue_after_ms, 10 * MIN);
    decide_output_clear(&o);

    /* 2: in progress: nothing to do, wait for the rest of the timeout. */
    w.now += 30 * SEC;
    w.has_view = 1;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_IN_PROGRESS};
    decide(&w, &o, 1);
    assert_int_equal(o.n_actions, 0);
    assert_int_equal(o.requeue_after_ms, 10 * MIN - 30 * SEC);
    assert_false(o.status_changed);
    decide_output_clear(&o);

    /* 3: Ready: recorded, then the pod goes, in the same pass, at once:
     * what it wrote to home after the snapshot (a checkpoint on SIGTERM)
     * would make the restore fail. */
    w.now += 90 * SEC;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1",
                                    .phase = SNAPSHOT_PHASE_READY,
                                    .name = "nb-p1-1-x7k2q",
                                    .ready_ms = w.now - 5 * SEC};
    decide(&w, &o, 1);
    const struct action *del = find_action(&o, ACTION_DELETE_POD);
    assert_non_null(del);
    assert_int_equal(del->grace_seconds, 0);
    assert_non_null(find_event(&o, "SnapshotReady"));
    assert_string_equal(o.status.snapshot->phase, "Ready");
    assert_string_equal(o.status.snapshot->name, "nb-p1-1-x7k2q");
    assert_true(o.status.snapshot->seconds > 114.9 && o.status.snapshot->seconds < 115.1);
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "Ready");
    /* the ledger has the snapshot from now on; what memory the pause kept is
     * said once the pod is gone */
    assert_int_equal(o.status.last_pause->snapshot_ready_ms, o.status.snapshot->ready_ms);
    assert_true(o.status.last_pause->snapshot_seconds == o.status.snapshot->seconds);
    assert_null(o.status.last_pause->memory);
    assert_string_equal(o.status.last_pause->node_name, "gpu-node-1");
    decide_output_clear(&o);

    /* 4: the delete is repeated while the pod shows live, no second attempt. */
    w.now += SEC;
    decide(&w, &o, 1);
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_null(find_event(&o, "SnapshotReady"));
    decide_output_clear(&o);

    /* 5: gone: Paused, the snapshot kept in the status. */
    w.has_pod = 0;
    decide(&w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    assert_string_equal(o.status.snapshot->name, "nb-p1-1-x7k2q");
    assert_string_equal(o.status.last_pause->memory, "snapshot");
    assert_int_equal(o.status.n_history, 1);
    assert_string_equal(o.status.history[0].pause.memory, "snapshot");
    assert_int_equal(o.status.history[0].pause.snapshot_ready_ms, o.status.snapshot->ready_ms);
    decide_output_clear(&o);
    world_free(&w);
}

#define QUEUE_HOLD ",\"queue\":{\"localQueue\":\"team\",\"evictionHold\":\"2m\"}"

/* A running workspace whose pod Kueue evicted `ago` ago: its TerminationTarget
 * condition, and its delete with the pod's grace (30 s, and the 2 min its
 * preStop hook sleeps first). */
static void evicted_by_kueue(struct world *w, int64_t ago)
{
    w->ws->paused = 0;
    w->pod.prestop_sleep_s = 120;
    w->pod.deletion_grace_known = 1;
    w->pod.deletion_grace_s = 150;
    w->pod.deletion_ms = w->now - ago + 150 * SEC;
    w->pod.termination_reason = "WorkloadEvictedDueToPreempted";
    w->pod.termination_message = "Preempted to accommodate a workload (UID: w2) due to "
                                 "prioritization in the ClusterQueue";
}

/* What the shell does with the controller's own pause: spec.paused and the
 * annotations, in one write. */
static void apply_auto_pause(struct world *w, const struct action *a)
{
    w->ws->paused = 1;
    w->ws->auto_paused_ms = a->time_ms;
    free(w->ws->auto_pause_message);
    w->ws->auto_pause_message = strdup(a->message);
    w->ws->auto_pause_cause = workspace_auto_pause_cause(a->reason);
}

/* Kueue preempts the running pod of a class with spec.queue.evictionHold:
 * no interruption; the controller pauses the workspace itself, the pause's
 * snapshot is taken while the hook holds the pod, and the workspace is
 * Paused with reason Preempted and its memory in the snapshot. */
static void test_kueue_eviction_pauses_with_snapshot(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE QUEUE_HOLD);
    w.ws->status.state = WS_STATE_RUNNING;
    evicted_by_kueue(&w, 2 * SEC);
    struct decide_output o;

    /* 1: the pause is written into spec.paused, with Kueue's words. */
    decide(&w, &o, 1);
    const struct action *a = find_action(&o, ACTION_AUTO_PAUSE);
    assert_non_null(a);
    assert_string_equal(a->reason, "Preempted");
    assert_non_null(strstr(a->message, "preempted by Kueue (WorkloadEvictedDueToPreempted: "
                                       "Preempted to accommodate a workload"));
    assert_non_null(strstr(a->message, "holds pod nb-1 for 2m"));
    assert_null(find_event(&o, "PodInterrupted"));
    assert_null(find_action(&o, ACTION_CREATE_POD));
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_int_equal(o.status.interruptions, 0);
    assert_string_equal(o.status.pod_name, "nb-1");
    assert_int_equal(o.status.state, WS_STATE_PAUSING);
    apply_auto_pause(&w, a);
    decide_output_clear(&o);

    /* 2: the pause begins with the held pod: its snapshot is asked for. */
    w.now += SEC;
    decide(&w, &o, 1);
    assert_string_equal(find_action(&o, ACTION_SNAPSHOT_BEGIN)->name, "nb-p1-1");
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_string_equal(o.status.last_pause->reason, "Preempted");
    assert_non_null(strstr(o.status.last_pause->message, "preempted by Kueue"));
    const struct action *ev = find_event(&o, "Preempted");
    assert_non_null(ev);
    assert_string_equal(ev->event_type, "Warning");
    assert_non_null(strstr(ev->message, "keeps running while snapshot nb-p1-1 is taken"));
    assert_int_equal(o.status.interruptions, 0);
    decide_output_clear(&o);

    /* 3: Ready within the hold: the pod goes at once (grace 0 ends the hook). */
    w.now += 20 * SEC;
    w.has_view = 1;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1",
                                    .phase = SNAPSHOT_PHASE_READY,
                                    .name = "nb-p1-1-a",
                                    .ready_ms = w.now - SEC};
    decide(&w, &o, 1);
    assert_int_equal(find_action(&o, ACTION_DELETE_POD)->grace_seconds, 0);
    decide_output_clear(&o);

    /* 4: gone: Paused, the memory kept, the reason Kueue's. */
    w.now += SEC;
    w.has_pod = 0;
    decide(&w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    assert_string_equal(o.status.last_pause->memory, "snapshot");
    assert_string_equal(o.status.last_pause->reason, "Preempted");
    assert_int_equal(o.status.interruptions, 0);
    assert_non_null(strstr(find_event(&o, "Paused")->message, "snapshot nb-p1-1-a holds"));
    decide_output_clear(&o);
    world_free(&w);
}

/* When the hook no longer holds the pod (its sleep is over, or the class
 * gives none), Kueue's eviction is an interruption, as before: the memory
 * is lost and said so. */
static void test_kueue_eviction_without_hold(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE QUEUE_HOLD);
    w.ws->status.state = WS_STATE_RUNNING;
    evicted_by_kueue(&w, 121 * SEC);
    struct decide_output o;
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_AUTO_PAUSE));
    assert_non_null(strstr(find_event(&o, "PodInterrupted")->message, "its memory is lost"));
    assert_int_equal(o.status.interruptions, 1);
    assert_string_equal(o.status.last_interruption->reason, "Preempted");
    decide_output_clear(&o);
    world_free(&w);

    world_init(&w, GKE);
    w.ws->status.state = WS_STATE_RUNNING;
    evicted_by_kueue(&w, 2 * SEC);
    w.pod.prestop_sleep_s = 0;
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_AUTO_PAUSE));
    assert_int_equal(o.status.interruptions, 1);
    decide_output_clear(&o);
    world_free(&w);
}

/* Killed after the trigger was created, before the status was written: the
 * same handle again (AlreadyExists for the shell), never a second one. */
static void test_crash_repeats_the_same_attempt(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    struct decide_output o;
    decide(&w, &o, 0); /* the status write is lost */
    assert_string_equal(find_action(&o, ACTION_SNAPSHOT_BEGIN)->name, "nb-p1-1");
    decide_output_clear(&o);
    /* The pause was not counted either (that write was lost too): counted
     * again, the same number. */
    w.now += 2 * SEC;
    w.has_view = 1;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_IN_PROGRESS};
    decide(&w, &o, 1);
    assert_string_equal(find_action(&o, ACTION_SNAPSHOT_BEGIN)->name, "nb-p1-1");
    assert_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);
    world_free(&w);
}

static void test_failure_retry(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);

    w.now += 40 * SEC;
    w.has_view = 1;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1",
                                    .phase = SNAPSHOT_PHASE_FAILED,
                                    .name = "nb-p1-1-abcde",
                                    .message = "checkpoint of container notebook failed"};
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_DELETE_POD));
    const struct action *ev = find_event(&o, "SnapshotFailed");
    assert_non_null(ev);
    assert_string_equal(ev->event_type, "Warning");
    assert_non_null(strstr(ev->message, "checkpoint of container notebook failed"));
    assert_non_null(strstr(ev->message, "the pod keeps running"));
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "Failed");
    assert_string_equal(o.status.snapshot->phase, "Failed");
    assert_int_equal(o.status.state, WS_STATE_PAUSING);
    assert_int_equal(o.requeue_after_ms, 10 * MIN); /* retryAfter, default */
    decide_output_clear(&o);

    /* The same world again: said once. */
    w.now += SEC;
    decide(&w, &o, 1);
    assert_null(find_event(&o, "SnapshotFailed"));
    assert_int_equal(o.n_actions, 0);
    decide_output_clear(&o);

    /* After retryAfter: attempt 2, a new handle. */
    w.now += 10 * MIN;
    decide(&w, &o, 1);
    const struct action *b = find_action(&o, ACTION_SNAPSHOT_BEGIN);
    assert_non_null(b);
    assert_string_equal(b->name, "nb-p1-2");
    assert_int_equal(o.status.snapshot->attempts, 2);
    assert_string_equal(o.status.snapshot->phase, "InProgress");
    assert_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);

    /* The old attempt's view does not speak for the new one. */
    w.now += SEC;
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_string_equal(o.status.snapshot->phase, "InProgress");
    decide_output_clear(&o);
    world_free(&w);
}

static void test_timeout_pause_without_memory(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE_NO_MEMORY);
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);

    w.now += 10 * MIN;
    w.has_view = 1;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_IN_PROGRESS};
    decide(&w, &o, 1);
    const struct action *ev = find_event(&o, "SnapshotTimeout");
    assert_non_null(ev);
    assert_non_null(strstr(ev->message, "not ready within 10m"));
    assert_non_null(strstr(ev->message, "pausing without memory"));
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "Timeout");
    decide_output_clear(&o);

    w.has_pod = 0;
    decide(&w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "Timeout");
    /* the ledger says the memory was lost to the failed snapshot */
    assert_string_equal(o.status.last_pause->memory, "snapshotFailed");
    assert_int_equal(o.status.last_pause->snapshot_ready_ms, 0);
    assert_string_equal(o.status.history[0].pause.memory, "snapshotFailed");
    decide_output_clear(&o);
    world_free(&w);
}

/* A pod that never became ready holds no session: nothing to snapshot. */
static void test_pod_not_ready_is_not_snapshotted(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    w.pod.ready = 0;
    w.ws->status.state = WS_STATE_PENDING;
    struct decide_output o;
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);
    world_free(&w);
}

/* Unpaused while the snapshot is being taken: the pod keeps running, no
 * delete ever comes. */
static void test_resume_during_snapshot(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.ws->paused = 0;
    w.now += 20 * SEC;
    w.has_view = 1;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1",
                                    .phase = SNAPSHOT_PHASE_READY,
                                    .name = "nb-p1-1-q",
                                    .ready_ms = w.now};
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_int_equal(o.status.state, WS_STATE_RUNNING);
    decide_output_clear(&o);
    world_free(&w);
}

/* ---- the application's checkpoint before the snapshot ---- */

#define GKE_ASK                                                                                    \
    ",\"snapshot\":{\"backend\":\"GKE\",\"storageConfigName\":\"s\",\"timeout\":\"10m\"},"         \
    "\"checkpoint\":{\"request\":{\"url\":\"http://{podIP}:8888/ckpt\",\"timeout\":\"40s\"}}"

/* The request is made once, its answer recorded, and only then the
 * snapshot is asked for, in the pass that sees the answer. */
static void test_app_checkpoint_then_snapshot(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE_ASK);
    struct decide_output o;
    int64_t asked = w.now;

    decide(&w, &o, 1);
    const struct action *a = find_action(&o, ACTION_APP_CHECKPOINT);
    assert_non_null(a);
    assert_string_equal(a->name, "nb-p1-1");
    assert_int_equal(a->time_ms, asked + 40 * SEC);
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "Checkpointing");
    assert_string_equal(cond_reason(&o.status, "Ready"), "Snapshotting");
    assert_string_equal(o.status.snapshot->checkpoint_attempt, "nb-p1-1");
    assert_int_equal(o.status.snapshot->checkpoint_requested_ms, asked);
    assert_null(o.status.snapshot->checkpoint_result);
    assert_int_equal(o.requeue_after_ms, 40 * SEC);
    decide_output_clear(&o);

    /* In flight: nothing more, nothing changed. */
    w.now += 2 * SEC;
    w.has_seen = 1;
    w.seen = (struct app_checkpoint_seen){.attempt = "nb-p1-1"};
    decide(&w, &o, 1);
    assert_int_equal(o.n_actions, 0);
    assert_false(o.status_changed);
    decide_output_clear(&o);

    /* Written: recorded with its time, and the snapshot starts. */
    w.now += SEC;
    w.seen = (struct app_checkpoint_seen){
        .attempt = "nb-p1-1", .answered = 1, .written = 1, .answered_ms = w.now - 500};
    decide(&w, &o, 1);
    const struct action *b = find_action(&o, ACTION_SNAPSHOT_BEGIN);
    assert_non_null(b);
    assert_string_equal(b->name, "nb-p1-1");
    assert_null(find_action(&o, ACTION_APP_CHECKPOINT));
    assert_null(find_event(&o, "CheckpointFailed"));
    assert_string_equal(o.status.snapshot->checkpoint_result, "Written");
    assert_int_equal(o.status.snapshot->checkpoint_answered_ms, w.now - 500);
    assert_int_equal(o.status.snapshot->requested_ms, w.now);
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "InProgress");
    decide_output_clear(&o);

    /* The snapshot runs; the application is not asked again. */
    w.now += 5 * SEC;
    w.has_view = 1;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_IN_PROGRESS};
    decide(&w, &o, 1);
    assert_int_equal(o.n_actions, 0);
    assert_string_equal(o.status.snapshot->checkpoint_result, "Written");
    decide_output_clear(&o);
    world_free(&w);
}

/* Unpaused while the application is asked: the pause is over. The request
 * is recorded as cancelled, SnapshotReady no longer says Checkpointing, the
 * pod runs on; a late answer changes nothing, and the next pause asks
 * again under its own attempt with a fresh record. */
static void test_app_checkpoint_cancelled_by_unpause(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE_ASK);
    struct decide_output o;
    decide(&w, &o, 1);
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "Checkpointing");
    decide_output_clear(&o);

    static const struct {
        const char *name;
        int seen;     /* the request is in flight in this process */
        int64_t wait; /* after the request, before the unpause is seen */
    } rows[] = {
        {"in flight", 1, 2 * SEC},
        {"asked by a process before a restart", 0, 2 * SEC},
        {"past its timeout, never settled", 1, 60 * SEC},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct world v;
        world_init(&v, GKE_ASK);
        decide(&v, &o, 1);
        decide_output_clear(&o);
        v.now += rows[i].wait;
        v.has_seen = rows[i].seen;
        v.seen = (struct app_checkpoint_seen){.attempt = "nb-p1-1"};
        v.ws->paused = 0;
        decide(&v, &o, 1);
        if (find_action(&o, ACTION_APP_CHECKPOINT) || find_action(&o, ACTION_SNAPSHOT_BEGIN) ||
            find_action(&o, ACTION_DELETE_POD))
            fail_msg("%s: an unpaused workspace asks nothing and deletes nothing", rows[i].name);
        const struct workspace_snapshot *sn = o.status.snapshot;
        assert_string_equal(sn->checkpoint_attempt, "nb-p1-1");
        if (!sn->checkpoint_result)
            fail_msg("%s: the request is left without a result", rows[i].name);
        assert_string_equal(sn->checkpoint_result, "Cancelled");
        assert_non_null(strstr(sn->checkpoint_message, "cancelled"));
        assert_int_equal(sn->checkpoint_answered_ms, v.now);
        assert_null(sn->attempt);
        assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "Cancelled");
        assert_int_equal(o.status.state, WS_STATE_RUNNING);
        assert_null(find_event(&o, "CheckpointTimeout"));
        assert_null(find_event(&o, "PodInterrupted"));
        decide_output_clear(&o);
        world_free(&v);
    }

    /* A late answer to the cancelled request: nothing changes. */
    w.ws->paused = 0;
    w.now += 2 * SEC;
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.now += SEC;
    w.has_seen = 1;
    w.seen = (struct app_checkpoint_seen){
        .attempt = "nb-p1-1", .answered = 1, .written = 1, .answered_ms = w.now};
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_string_equal(o.status.snapshot->checkpoint_result, "Cancelled");
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "Cancelled");
    decide_output_clear(&o);

    /* The next pause: its own attempt, a fresh record, asked again. */
    w.ws->paused = 1;
    w.now += MIN;
    decide(&w, &o, 1);
    const struct action *a = find_action(&o, ACTION_APP_CHECKPOINT);
    assert_non_null(a);
    assert_string_equal(a->name, "nb-p2-1");
    assert_string_equal(o.status.snapshot->checkpoint_attempt, "nb-p2-1");
    assert_null(o.status.snapshot->checkpoint_result);
    assert_null(o.status.snapshot->checkpoint_message);
    assert_int_equal(o.status.snapshot->checkpoint_requested_ms, w.now);
    assert_int_equal(o.status.snapshot->checkpoint_answered_ms, 0);
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "Checkpointing");
    decide_output_clear(&o);
    world_free(&w);
}

/* The pass that asked died before its status write: the same process sees
 * its request in flight and does not ask again; the record starts now. */
static void test_app_checkpoint_status_lost(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE_ASK);
    struct decide_output o;
    decide(&w, &o, 0); /* asked; the status write is lost */
    assert_non_null(find_action(&o, ACTION_APP_CHECKPOINT));
    decide_output_clear(&o);
    w.now += SEC;
    w.has_seen = 1;
    w.seen = (struct app_checkpoint_seen){.attempt = "nb-p1-1"};
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_APP_CHECKPOINT));
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_string_equal(o.status.snapshot->checkpoint_attempt, "nb-p1-1");
    assert_int_equal(o.status.snapshot->checkpoint_requested_ms, w.now);
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "Checkpointing");
    decide_output_clear(&o);
    world_free(&w);
}

/* A refusal, a hang past the timeout, and a request a restarted controller
 * does not know: reported, the snapshot taken anyway (or the request made
 * again before the deadline). */
static void test_app_checkpoint_failures(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int seen, answered;
        int64_t after;
        const char *result, *event, *says;
    } rows[] = {
        {"answered 500", 1, 1, 3 * SEC, "Failed", "CheckpointFailed", "HTTP 500: disk full"},
        {"no answer in time", 1, 0, 40 * SEC, "Timeout", "CheckpointTimeout", "within 40s"},
        {"restarted, past the deadline", 0, 0, 41 * SEC, "Timeout", "CheckpointTimeout",
         "within 40s"},
        {"restarted, before the deadline", 0, 0, 10 * SEC, NULL, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct world w;
        world_init(&w, GKE_ASK);
        struct decide_output o;
        int64_t asked = w.now;
        decide(&w, &o, 1);
        decide_output_clear(&o);
        w.now += rows[i].after;
        w.has_seen = rows[i].seen;
        w.seen = (struct app_checkpoint_seen){.attempt = "nb-p1-1",
                                              .answered = rows[i].answered,
                                              .answered_ms = w.now,
                                              .message = "the application answered HTTP 500: "
                                                         "disk full"};
        decide(&w, &o, 1);
        const struct workspace_snapshot *sn = o.status.snapshot;
        if (!rows[i].result) {
            const struct action *a = find_action(&o, ACTION_APP_CHECKPOINT);
            if (!a || a->time_ms != asked + 40 * SEC || find_action(&o, ACTION_SNAPSHOT_BEGIN))
                fail_msg("%s: want the request again with the first deadline", rows[i].name);
            assert_int_equal(sn->checkpoint_requested_ms, asked);
        } else {
            const struct action *ev = find_event(&o, rows[i].event);
            if (!ev || !strstr(ev->message, rows[i].says) ||
                !strstr(ev->message, "taking the snapshot anyway"))
                fail_msg("%s: want %s saying \"%s\", got %s", rows[i].name, rows[i].event,
                         rows[i].says, ev ? ev->message : "none");
            assert_string_equal(ev->event_type, "Warning");
            assert_string_equal(ev->occasion, "nb-p1-1");
            assert_string_equal(sn->checkpoint_result, rows[i].result);
            assert_non_null(strstr(sn->checkpoint_message, rows[i].says));
            assert_non_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
            assert_null(find_action(&o, ACTION_APP_CHECKPOINT));
            assert_null(find_action(&o, ACTION_DELETE_POD));
            /* decided again on the record: said once, no second snapshot */
            struct decide_output again;
            w.has_seen = 0;
            decide(&w, &again, 1);
            assert_null(find_event(&again, rows[i].event));
            assert_null(find_action(&again, ACTION_SNAPSHOT_BEGIN));
            assert_null(find_action(&again, ACTION_APP_CHECKPOINT));
            decide_output_clear(&again);
        }
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* GKE retries a checkpoint by itself (observedCheckpointRetryCount): the
 * attempt is still in progress, said with the count, until the timeout. */
static void test_backend_checkpoint_retries(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.now += 20 * SEC;
    w.has_view = 1;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1",
                                    .phase = SNAPSHOT_PHASE_IN_PROGRESS,
                                    .name = "nb-p1-1-abcde",
                                    .checkpoint_retries = 2};
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_DELETE_POD));
    const struct condition *c = workspace_status_condition(&o.status, "SnapshotReady");
    assert_string_equal(c->reason, "InProgress");
    assert_non_null(strstr(c->message, "retries its checkpoint (retry 2)"));
    assert_string_equal(o.status.snapshot->phase, "InProgress");
    decide_output_clear(&o);
    world_free(&w);
}

/* Under Retry, the container started again after the failed attempt was
 * asked for (a crash restarted it): its session is gone, so the pause goes
 * on without memory rather than snapshot the fresh process as that session. */
static void test_failure_retry_after_restart(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    struct decide_output o;
    decide(&w, &o, 1);
    int64_t requested = o.status.snapshot->requested_ms;
    decide_output_clear(&o);

    w.now += 40 * SEC;
    w.pod.started_ms = requested + 5 * SEC;
    w.pod.restart_count = 1;
    w.has_view = 1;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1",
                                    .phase = SNAPSHOT_PHASE_FAILED,
                                    .name = "nb-p1-1-abcde",
                                    .message = "checkpoint of container notebook failed"};
    decide(&w, &o, 1);
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    int n_failed = 0;
    for (size_t i = 0; i < o.n_actions; i++)
        if (o.actions[i].type == ACTION_EVENT &&
            strcmp(o.actions[i].reason, "SnapshotFailed") == 0 &&
            strstr(o.actions[i].message, "started again"))
            n_failed++;
    assert_int_equal(n_failed, 1);
    const struct condition *c = workspace_status_condition(&o.status, "SnapshotReady");
    assert_non_null(c);
    assert_non_null(strstr(c->message, "its session is gone"));
    assert_string_equal(o.status.snapshot->phase, "Failed");
    decide_output_clear(&o);

    /* A container that started before the attempt (an earlier restart) is
     * still the session: retried as usual. */
    world_free(&w);
    world_init(&w, GKE);
    decide(&w, &o, 1);
    requested = o.status.snapshot->requested_ms;
    decide_output_clear(&o);
    w.now += 40 * SEC;
    w.pod.started_ms = requested - MIN;
    w.has_view = 1;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_FAILED};
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);
    w.now += 10 * MIN;
    decide(&w, &o, 1);
    assert_non_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);
    world_free(&w);
}

/* A snapshot already under the attempt's name, asked for by an earlier
 * Workspace of this name (deleted and made again: its snapshots wait for the
 * backend's finalizer) or of an earlier pod of the pod's name: never this
 * pause's, Ready or not. The attempt fails at once (no wait for the
 * timeout, no pod deleted for it), the stranger is deleted, and the retry
 * gets a name of its own. */
static void test_foreign_snapshot(void **state)
{
    (void)state;
    static const struct {
        const char *why, *owner_uid, *pod_uid, *words;
    } rows[] = {
        {"an earlier workspace's", "u0", "p0", "earlier workspace of this name (uid u0)"},
        {"an earlier pod's", "u1", "p0", "earlier pod named nb-1 (uid p0)"},
    };
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        struct world w;
        world_init(&w, GKE);
        struct decide_output o;
        decide(&w, &o, 1);
        assert_non_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
        decide_output_clear(&o);

        w.now += 2 * SEC;
        w.has_view = 1;
        w.view = (struct snapshot_view){.attempt = "nb-p1-1",
                                        .phase = SNAPSHOT_PHASE_READY,
                                        .name = "nb-p1-1",
                                        .pod = "nb-1",
                                        .pod_uid = rows[r].pod_uid,
                                        .owner_uid = rows[r].owner_uid,
                                        .ready_ms = w.now - HOUR};
        w.all[0] = w.view;
        w.n_all = 1;
        decide(&w, &o, 1);
        const struct workspace_snapshot *sn = o.status.snapshot;
        if (!find_event(&o, "SnapshotFailed") || !sn->phase || strcmp(sn->phase, "Failed") != 0 ||
            !sn->message || !strstr(sn->message, rows[r].words))
            fail_msg("%s: phase %s, message %s", rows[r].why, sn->phase ? sn->phase : "(none)",
                     sn->message ? sn->message : "(none)");
        assert_null(sn->name);
        assert_null(sn->ready_ms ? "ready" : NULL);
        assert_null(find_action(&o, ACTION_DELETE_POD));
        const struct action *del = find_action(&o, ACTION_SNAPSHOT_DELETE);
        assert_non_null(del);
        assert_string_equal(del->name, "nb-p1-1");
        assert_int_equal(o.status.state, WS_STATE_PAUSING);
        decide_output_clear(&o);

        /* The retry, a name of its own. */
        w.now += 10 * MIN;
        w.has_view = 0;
        w.n_all = 0;
        decide(&w, &o, 1);
        const struct action *b = find_action(&o, ACTION_SNAPSHOT_BEGIN);
        assert_non_null(b);
        assert_string_equal(b->name, "nb-p1-2");
        assert_null(find_action(&o, ACTION_DELETE_POD));
        decide_output_clear(&o);
        world_free(&w);
    }

    /* A controller that lost the attempt from its status does not take the
     * stranger for it either. */
    struct world w;
    world_init(&w, GKE);
    struct decide_output o;
    decide(&w, &o, 0); /* the attempt is asked for; the status write is lost */
    assert_non_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    decide_output_clear(&o);
    w.now += 2 * SEC;
    w.has_next = 1;
    w.next = (struct snapshot_view){.attempt = "nb-p1-1",
                                    .phase = SNAPSHOT_PHASE_READY,
                                    .name = "nb-p1-1",
                                    .pod = "nb-1",
                                    .owner_uid = "u0",
                                    .ready_ms = w.now - HOUR};
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_true(!o.status.snapshot->phase || strcmp(o.status.snapshot->phase, "Ready") != 0);
    decide_output_clear(&o);
    world_free(&w);
}

/* Under Retry, a checkpoint GKE failed left the pod running: the next
 * attempt asks the application again, for the new attempt. */
static void test_app_checkpoint_on_retry(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE_ASK);
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.now += 2 * SEC;
    w.has_seen = 1;
    w.seen = (struct app_checkpoint_seen){
        .attempt = "nb-p1-1", .answered = 1, .written = 1, .answered_ms = w.now};
    decide(&w, &o, 1);
    assert_non_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    decide_output_clear(&o);
    w.now += 30 * SEC;
    w.has_view = 1;
    w.view = (struct snapshot_view){
        .attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_FAILED, .message = "checkpoint failed"};
    decide(&w, &o, 1);
    assert_non_null(find_event(&o, "SnapshotFailed"));
    assert_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);
    w.now += 10 * MIN;
    decide(&w, &o, 1);
    const struct action *a = find_action(&o, ACTION_APP_CHECKPOINT);
    assert_non_null(a);
    assert_string_equal(a->name, "nb-p1-2");
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_string_equal(o.status.snapshot->checkpoint_attempt, "nb-p1-2");
    decide_output_clear(&o);
    world_free(&w);
}

/* postCheckpoint: stop. The pod completes when its checkpoint is taken:
 * kept (no delete, no PodStopped) until the snapshot is settled, then
 * deleted; never read as an interruption. */
static void test_pod_completed_by_snapshot(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        enum snapshot_phase settles;
        const char *memory, *reason;
    } rows[] = {
        {"Ready", SNAPSHOT_PHASE_READY, "snapshot", "Ready"},
        {"Failed after it stopped the pod", SNAPSHOT_PHASE_FAILED, "snapshotFailed", "Failed"},
        {"timed out after it stopped the pod", SNAPSHOT_PHASE_IN_PROGRESS, "snapshotFailed",
         "Timeout"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct world w;
        world_init(&w, GKE);
        struct decide_output o;
        decide(&w, &o, 1);
        decide_output_clear(&o);
        /* The checkpoint is taken: the pod completes. */
        w.now += 20 * SEC;
        w.pod.phase = "Succeeded";
        w.pod.ready = 0;
        w.has_view = 1;
        w.view = (struct snapshot_view){
            .attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_IN_PROGRESS, .name = "nb-p1-1-s"};
        decide(&w, &o, 1);
        if (find_action(&o, ACTION_DELETE_POD) || find_event(&o, "PodStopped") ||
            find_action(&o, ACTION_SNAPSHOT_BEGIN))
            fail_msg("%s: the completed pod must wait for its snapshot", rows[i].name);
        assert_int_equal(o.status.state, WS_STATE_PAUSING);
        assert_string_equal(cond_reason(&o.status, "Ready"), "Snapshotting");
        decide_output_clear(&o);

        w.now += rows[i].settles == SNAPSHOT_PHASE_IN_PROGRESS ? 10 * MIN : 10 * SEC;
        w.view = (struct snapshot_view){.attempt = "nb-p1-1",
                                        .phase = rows[i].settles,
                                        .name = "nb-p1-1-s",
                                        .ready_ms = w.now,
                                        .message = "upload failed"};
        decide(&w, &o, 1);
        const struct action *del = find_action(&o, ACTION_DELETE_POD);
        if (!del || del->grace_seconds != 0)
            fail_msg("%s: want the completed pod deleted at once", rows[i].name);
        /* Retry cannot snapshot a pod that no longer runs */
        assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
        assert_string_equal(cond_reason(&o.status, "SnapshotReady"), rows[i].reason);
        assert_null(find_event(&o, "PodStopped"));
        assert_null(find_event(&o, "PodInterrupted"));
        if (rows[i].settles != SNAPSHOT_PHASE_READY)
            assert_non_null(
                strstr(find_event(&o, i == 1 ? "SnapshotFailed" : "SnapshotTimeout")->message,
                       "no running pod is left to snapshot"));
        decide_output_clear(&o);

        w.has_pod = 0;
        w.now += SEC;
        decide(&w, &o, 1);
        assert_int_equal(o.status.state, WS_STATE_PAUSED);
        assert_string_equal(o.status.last_pause->memory, rows[i].memory);
        assert_int_equal(o.status.interruptions, 0);
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* The application exits with code 0 on its own during a pause. GKE marks
 * nothing on a pod it stops (phase Succeeded, exit code 0, reason
 * Completed, as any clean exit): only when it happened tells them apart.
 * Before the snapshot was asked for (the application is being asked for
 * its checkpoint) no snapshot can have stopped it: the pause goes on
 * without memory at once. After it, the two cannot be told apart until
 * the snapshot settles, and its outcome decides (test_pod_completed_by_
 * snapshot): Ready holds the session, Failed pauses without memory. */
static void test_app_exit_before_snapshot(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE_ASK);
    struct decide_output o;
    decide(&w, &o, 1);
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "Checkpointing");
    decide_output_clear(&o);
    w.now += 3 * SEC;
    w.has_seen = 1;
    w.seen = (struct app_checkpoint_seen){.attempt = "nb-p1-1"};
    w.pod.phase = "Succeeded";
    w.pod.ready = 0;
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_null(find_action(&o, ACTION_APP_CHECKPOINT));
    const struct action *del = find_action(&o, ACTION_DELETE_POD);
    assert_non_null(del);
    assert_null(find_event(&o, "PodInterrupted"));
    assert_string_not_equal(cond_reason(&o.status, "Ready"), "Snapshotting");
    assert_string_not_equal(cond_reason(&o.status, "SnapshotReady"), "Checkpointing");
    assert_non_null(o.status.snapshot->checkpoint_result);
    assert_string_equal(o.status.snapshot->checkpoint_result, "Cancelled");
    decide_output_clear(&o);
    w.has_pod = 0;
    w.now += SEC;
    decide(&w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    assert_string_equal(o.status.last_pause->memory, "files");
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    decide_output_clear(&o);
    world_free(&w);
}

/* Unpaused while the snapshot was taken: the snapshot stops the pod all the
 * same. Its end is the snapshot's, not an interruption; a new pod follows. */
static void test_resumed_pod_completed_by_snapshot(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.ws->paused = 0;
    w.now += 5 * SEC;
    decide(&w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_RUNNING);
    decide_output_clear(&o);
    w.now += 20 * SEC;
    w.pod.phase = "Succeeded";
    w.pod.ready = 0;
    decide(&w, &o, 1);
    assert_null(find_event(&o, "PodInterrupted"));
    assert_int_equal(o.status.interruptions, 0);
    const struct action *del = find_action(&o, ACTION_DELETE_POD);
    assert_non_null(del);
    assert_int_equal(del->grace_seconds, 0);
    decide_output_clear(&o);
    w.has_pod = 0;
    w.now += SEC;
    decide(&w, &o, 1);
    assert_non_null(find_action(&o, ACTION_CREATE_POD));
    assert_int_equal(o.status.interruptions, 0);
    decide_output_clear(&o);
    world_free(&w);
}

/* Unpaused after the snapshot was asked for, the pod still running: the
 * backend goes on; SnapshotReady says the pause is over, and the record
 * follows the snapshot to its end. A failure then retries nothing and
 * deletes nothing: the workspace runs. */
static void test_unpaused_snapshot_followed(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.ws->paused = 0;
    w.now += 5 * SEC;
    w.has_view = 1;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_IN_PROGRESS};
    decide(&w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_RUNNING);
    const struct condition *c = workspace_status_condition(&o.status, "SnapshotReady");
    assert_non_null(c);
    assert_non_null(strstr(c->message, "before the pause was cancelled"));
    assert_string_equal(o.status.snapshot->phase, "InProgress");
    decide_output_clear(&o);

    w.now += 10 * SEC;
    w.view = (struct snapshot_view){
        .attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_FAILED, .message = "upload failed"};
    decide(&w, &o, 1);
    assert_string_equal(o.status.snapshot->phase, "Failed");
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "Failed");
    const struct action *ev = find_event(&o, "SnapshotFailed");
    assert_non_null(ev);
    assert_non_null(strstr(ev->message, "unpaused"));
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_int_equal(o.status.state, WS_STATE_RUNNING);
    decide_output_clear(&o);
    world_free(&w);
}

static int deletes(const struct decide_output *o, const char *name);

/* ---- resume ---- */

/* Paused with a Ready snapshot of pod nb-1, then resumed by the user. */
#define IMAGE                                                                                      \
    "r.example/ck/team/nb@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

/* Paused with a Ready snapshot (a checkpoint image, for a ContainerCheckpoint
 * class), then spec.paused false: the next decision is the resume's. */
static void paused_with_snapshot(struct world *w, const char *snapshot)
{
    world_init(w, snapshot);
    w->pod.group = "u1-1";
    struct decide_output o;
    decide(w, &o, 1);
    decide_output_clear(&o);
    w->now += 60 * SEC;
    w->has_view = 1;
    w->view =
        (struct snapshot_view){.attempt = "nb-p1-1",
                               .phase = SNAPSHOT_PHASE_READY,
                               .name = "nb-p1-1-x7k2q",
                               .ready_ms = w->now,
                               .image = strstr(snapshot, "ContainerCheckpoint") ? IMAGE : NULL};
    decide(w, &o, 1);
    decide_output_clear(&o);
    w->has_pod = 0;
    w->now += 10 * SEC;
    decide(w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    decide_output_clear(&o);
    w->ws->paused = 0;
    w->now += 8 * 60 * MIN;
}

/* The pod the resume created comes up: scheduled, ready at ready_ms. */
static void pod_up(struct world *w, const char *name, const char *snapshot, int64_t ready_ms)
{
    w->pod = (struct workspace_pod){.ns = "team",
                                    .name = (char *)name,
                                    .uid = "p2",
                                    .workspace = "nb",
                                    .node_name = "gpu-node-2",
                                    .phase = "Running",
                                    .created_ms = ready_ms - 5 * SEC,
                                    .ready = 1,
                                    .scheduled = 1,
                                    .scheduled_ms = ready_ms - 4 * SEC,
                                    .ready_ms = ready_ms,
                                    .restore_from_checkpoint = 1,
                                    .snapshot = (char *)snapshot};
    w->has_pod = 1;
}

static void test_resume_from_snapshot(void **state)
{
    (void)state;
    struct world w;
    paused_with_snapshot(&w, GKE);
    struct decide_output o;
    decide(&w, &o, 1);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_string_equal(c->name, "nb-2");
    assert_string_equal(c->snapshot, "nb-p1-1-x7k2q");
    assert_true(c->from_checkpoint); /* the checkpoint env stays: a cold start can recover */
    assert_string_equal(cond_reason(&o.status, "Restored"), "Restoring");
    assert_null(find_event(&o, "SnapshotNotUsed"));
    decide_output_clear(&o);

    /* Restored: the backend says so. */
    w.now += 12 * SEC;
    pod_up(&w, "nb-2", "nb-p1-1-x7k2q", w.now - SEC);
    w.pod.restored = 1;
    decide(&w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_RUNNING);
    assert_string_equal(cond_reason(&o.status, "Restored"), "FromSnapshot");
    assert_string_equal(o.status.last_resume->restored_from, "FromSnapshot");
    assert_non_null(find_event(&o, "Resumed"));
    decide_output_clear(&o);
    world_free(&w);
}

/* A workspace name of 63 characters, the most the CRD allows, with a pod an
 * older controller named "<workspace>-1" (65 characters): the trigger's name
 * fits a label value (GKE labels the PodSnapshot with it), the policy keeps
 * its name, the pause completes, and the resume's pod is at most 63. */
static void test_long_name(void **state)
{
    (void)state;
    static const char long_ws[] = "research-team-llm-finetuning-notebook-with-a-long-descriptive-n";
    static const char old_pod[] =
        "research-team-llm-finetuning-notebook-with-a-long-descriptive-n-1";
    assert_int_equal(strlen(long_ws), 63);
    struct world w;
    world_init(&w, GKE);
    free(w.ws->name);
    w.ws->name = strdup(long_ws);
    free(w.ws->status.pod_name);
    w.ws->status.pod_name = strdup(old_pod);
    w.pod.name = (char *)old_pod;
    w.pod.workspace = (char *)long_ws;
    struct decide_output o;

    decide(&w, &o, 1);
    const struct action *b = find_action(&o, ACTION_SNAPSHOT_BEGIN);
    assert_non_null(b);
    char handle[NAMES_SIZE];
    assert_int_equal(names_snapshot_handle(long_ws, 1, 1, handle), 63);
    assert_string_equal(b->name, handle);
    assert_string_equal(o.status.snapshot->attempt, handle);
    cJSON *bodies = gke_snapshot_begin_bodies(w.ws, w.cls, b->name, old_pod, b->group);
    assert_non_null(bodies);
    const cJSON *meta = cJSON_GetObjectItem(cJSON_GetObjectItem(bodies, "trigger"), "metadata");
    assert_string_equal(cJSON_GetObjectItem(meta, "name")->valuestring, handle);
    meta = cJSON_GetObjectItem(cJSON_GetObjectItem(bodies, "policy"), "metadata");
    assert_string_equal(
        cJSON_GetObjectItem(meta, "name")->valuestring,
        "research-team-llm-finetuning-notebook-with-a-long-descriptive-n-snapshots");
    cJSON_Delete(bodies);
    decide_output_clear(&o);

    w.now += 60 * SEC;
    w.has_view = 1;
    w.view = (struct snapshot_view){
        .attempt = handle, .phase = SNAPSHOT_PHASE_READY, .name = "ps-1", .ready_ms = w.now};
    decide(&w, &o, 1);
    const struct action *del = find_action(&o, ACTION_DELETE_POD);
    assert_non_null(del);
    assert_string_equal(del->name, old_pod);
    decide_output_clear(&o);
    w.has_pod = 0;
    w.now += 10 * SEC;
    decide(&w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    decide_output_clear(&o);

    w.ws->paused = 0;
    w.now += MIN;
    decide(&w, &o, 1);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    char pod[NAMES_SIZE];
    assert_int_equal(names_pod(long_ws, 2, pod), 63);
    assert_string_equal(c->name, pod);
    assert_string_equal(c->snapshot, "ps-1");
    assert_int_equal(o.status.pod_generation, 2);
    decide_output_clear(&o);
    world_free(&w);
}

/* Ready without PodRestored: wait a little (it may come after Ready), then
 * say ColdStart, once. */
static void test_cold_start(void **state)
{
    (void)state;
    struct world w;
    paused_with_snapshot(&w, GKE);
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.now += 12 * SEC;
    pod_up(&w, "nb-2", "nb-p1-1-x7k2q", w.now);
    decide(&w, &o, 1);
    assert_string_equal(cond_reason(&o.status, "Restored"), "Restoring");
    assert_int_equal(o.requeue_after_ms, 30 * SEC);
    assert_null(find_event(&o, "ColdStart"));
    decide_output_clear(&o);

    w.now += 30 * SEC;
    decide(&w, &o, 1);
    assert_string_equal(cond_reason(&o.status, "Restored"), "ColdStart");
    assert_string_equal(o.status.last_resume->restored_from, "ColdStart");
    const struct action *ev = find_event(&o, "ColdStart");
    assert_non_null(ev);
    assert_string_equal(ev->event_type, "Warning");
    decide_output_clear(&o);

    w.now += SEC;
    decide(&w, &o, 1);
    assert_null(find_event(&o, "ColdStart"));
    assert_false(o.status_changed);
    decide_output_clear(&o);
    world_free(&w);
}

/* Available, what kubectl wait waits on, is False while the restore's
 * verdict is unknown (Ready already True), then True with where the session
 * came from. */
static void test_available_waits_for_verdict(void **state)
{
    (void)state;
    for (int restored = 0; restored <= 1; restored++) {
        struct world w;
        paused_with_snapshot(&w, GKE);
        struct decide_output o;
        decide(&w, &o, 1);
        assert_string_equal(cond_reason(&o.status, "Available"), "NotReady");
        decide_output_clear(&o);
        w.now += 12 * SEC;
        pod_up(&w, "nb-2", "nb-p1-1-x7k2q", w.now);
        if (!restored) {
            decide(&w, &o, 1);
            assert_string_equal(cond_reason(&o.status, "Ready"), "PodReady");
            assert_string_equal(cond_reason(&o.status, "Restored"), "Restoring");
            const struct condition *c = workspace_status_condition(&o.status, "Available");
            assert_int_equal(c->status, COND_FALSE);
            assert_string_equal(c->reason, "Restoring");
            decide_output_clear(&o);
            w.now += 30 * SEC;
        } else {
            w.pod.restored = 1;
            w.pod.restored_ms = w.now;
        }
        decide(&w, &o, 1);
        const struct condition *c = workspace_status_condition(&o.status, "Available");
        assert_int_equal(c->status, COND_TRUE);
        assert_string_equal(c->reason, restored ? "FromSnapshot" : "FromCheckpoint");
        assert_string_equal(cond_reason(&o.status, "Restored"),
                            restored ? "FromSnapshot" : "ColdStart");
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* A restore that crash-loops is replaced once by a pod from files. */
static void test_restore_crash_loop(void **state)
{
    (void)state;
    struct world w;
    paused_with_snapshot(&w, GKE);
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.now += 20 * SEC;
    pod_up(&w, "nb-2", "nb-p1-1-x7k2q", 0);
    w.pod.ready = 0;
    w.pod.ready_ms = 0;
    w.pod.restart_count = 3;
    w.pod.crash_looping = 1;
    decide(&w, &o, 1);
    const struct action *del = find_action(&o, ACTION_DELETE_POD);
    assert_non_null(del);
    assert_int_equal(del->grace_seconds, 0);
    assert_non_null(find_event(&o, "RestoreCrashLoop"));
    assert_string_equal(cond_reason(&o.status, "Restored"), "RestoreCrashed");
    assert_true(o.status.snapshot->restore_failed_ms > 0);
    decide_output_clear(&o);

    /* Gone, the snapshot still there (its deletion is asked for in this
     * pass): the next pod starts from files and the checkpoint at once, in
     * a snapshot group of its own that no snapshot has, and says why. */
    assert_int_equal(deletes(&o, "nb-p1-1-x7k2q"), 0); /* not listed yet in this world */
    assert_string_equal(w.ws->status.snapshot->group, "u1-1");
    w.has_pod = 0;
    w.now += 5 * SEC;
    w.all[0] = w.view;
    w.all[0].group = "u1-1";
    w.n_all = 1;
    decide(&w, &o, 1);
    assert_int_equal(deletes(&o, "nb-p1-1-x7k2q"), 1);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_string_equal(c->name, "nb-2"); /* the status's pod, made again (state-machine.md 5c) */
    assert_null(c->snapshot);
    assert_true(c->from_checkpoint);
    assert_non_null(c->group);
    assert_string_not_equal(c->group, "u1-1");
    const struct condition *r = workspace_status_condition(&o.status, "Restored");
    assert_string_equal(r->reason, "FromCheckpoint");
    assert_non_null(strstr(r->message, "crashed"));
    assert_non_null(find_event(&o, "SnapshotNotUsed"));
    decide_output_clear(&o);
    world_free(&w);
}

/* A snapshot taken without a group (by an earlier version, under a policy
 * without grouping): after its restore crashed, the next pod waits until
 * it is gone, or the backend could restore it from that very snapshot. */
static void test_restore_crash_loop_without_group(void **state)
{
    (void)state;
    struct world w;
    paused_with_snapshot(&w, GKE);
    free(w.ws->status.snapshot->group);
    w.ws->status.snapshot->group = NULL;
    struct decide_output o;
    decide(&w, &o, 1);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_null(c->group); /* a restore of an ungrouped snapshot: no label, as before */
    assert_string_equal(c->snapshot, "nb-p1-1-x7k2q");
    decide_output_clear(&o);
    w.now += 20 * SEC;
    pod_up(&w, "nb-2", "nb-p1-1-x7k2q", 0);
    w.pod.ready = 0;
    w.pod.restart_count = 3;
    w.pod.crash_looping = 1;
    decide(&w, &o, 1);
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);
    w.has_pod = 0;
    w.now += 5 * SEC;
    w.all[0] = w.view;
    w.n_all = 1;
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_CREATE_POD));
    assert_int_equal(deletes(&o, "nb-p1-1-x7k2q"), 1);
    assert_string_equal(cond_reason(&o.status, "Ready"), "PodTerminating");
    decide_output_clear(&o);
    w.n_all = 0;
    w.now += 5 * SEC;
    decide(&w, &o, 1);
    c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_null(c->snapshot);
    decide_output_clear(&o);
    world_free(&w);
}

/* Snapshot groups: the snapshot records its source pod's group (a pod
 * without one is labelled first); a restore carries it; any other pod gets
 * a group of its own. */
static void test_snapshot_groups(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    w.pod.group = "u1-1";
    w.ws->status.snapshot->restore_failed_ms = 1; /* an earlier snapshot's restore crashed */
    struct decide_output o;
    decide(&w, &o, 1);
    const struct action *b = find_action(&o, ACTION_SNAPSHOT_BEGIN);
    assert_non_null(b);
    assert_string_equal(b->group, "u1-1"); /* the source pod's group */
    assert_string_equal(o.status.snapshot->group, "u1-1");
    assert_int_equal(o.status.snapshot->restore_failed_ms, 0); /* not this one's */
    decide_output_clear(&o);
    world_free(&w);

    world_init(&w, GKE);
    decide(&w, &o, 1);
    b = find_action(&o, ACTION_SNAPSHOT_BEGIN);
    assert_non_null(b);
    assert_null(b->group); /* a pod of an earlier version: no group, as before */
    assert_null(o.status.snapshot->group);
    decide_output_clear(&o);
    world_free(&w);

    paused_with_snapshot(&w, GKE);
    decide(&w, &o, 1);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_string_equal(c->snapshot, "nb-p1-1-x7k2q");
    assert_string_equal(c->group, "u1-1");
    decide_output_clear(&o);
    world_free(&w);

    /* The snapshot failed: from files, in a group no snapshot has. */
    world_init(&w, GKE_NO_MEMORY);
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.now += 60 * SEC;
    w.has_view = 1;
    w.view = (struct snapshot_view){
        .attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_FAILED, .message = "checkpoint failed"};
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.has_pod = 0;
    w.now += 10 * SEC;
    decide(&w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    decide_output_clear(&o);
    w.ws->paused = 0;
    w.now += MIN;
    decide(&w, &o, 1);
    c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_null(c->snapshot);
    assert_string_equal(c->group, "u1-2");
    decide_output_clear(&o);
    world_free(&w);
}

/* A pod that was to start from files and that the backend restored all the
 * same: reported as such (never FromCheckpoint), replaced, the snapshots it
 * could come from deleted, the next pod from files once they are gone. */
static void test_unwanted_restore(void **state)
{
    (void)state;
    for (int grouped = 0; grouped < 2; grouped++) {
        struct world w;
        paused_with_snapshot(&w, GKE);
        /* Not used (as if it had failed): a resume from files. */
        free(w.ws->status.snapshot->phase);
        w.ws->status.snapshot->phase = strdup("Failed");
        struct decide_output o;
        decide(&w, &o, 1);
        const struct action *c = find_action(&o, ACTION_CREATE_POD);
        assert_non_null(c);
        assert_null(c->snapshot);
        char group[64];
        snprintf(group, sizeof(group), "%s", c->group);
        decide_output_clear(&o);
        /* The workspace's snapshots: the pause's, and (grouped) one of the
         * pod's own group, as if the grouping held and one matched. */
        w.all[0] = w.view;
        w.all[0].group = "u1-1";
        w.all[1] = (struct snapshot_view){.attempt = "nb-p0-1",
                                          .phase = SNAPSHOT_PHASE_READY,
                                          .name = "older",
                                          .ready_ms = w.view.ready_ms - HOUR,
                                          .group = grouped ? group : "u1-0"};
        w.n_all = 2;
        w.now += 20 * SEC;
        pod_up(&w, "nb-2", NULL, w.now - 2 * SEC);
        w.pod.group = group;
        w.pod.restored = 1;
        decide(&w, &o, 1);
        const struct action *del = find_action(&o, ACTION_DELETE_POD);
        assert_non_null(del);
        assert_int_equal(del->grace_seconds, 0);
        assert_string_equal(cond_reason(&o.status, "Restored"), "UnwantedRestore");
        const struct action *ev = find_event(&o, "UnwantedRestore");
        assert_non_null(ev);
        assert_string_equal(ev->event_type, "Warning");
        assert_string_equal(o.status.snapshot->rejected_group, grouped ? group : "*");
        assert_null(o.status.last_resume->restored_from);
        /* The rejected ones go: all, or those of the pod's group. */
        assert_int_equal(deletes(&o, "older"), 1);
        assert_int_equal(deletes(&o, "nb-p1-1-x7k2q"), grouped ? 0 : 1);
        decide_output_clear(&o);
        /* Decided again: nothing new to say. */
        decide(&w, &o, 1);
        assert_null(find_event(&o, "UnwantedRestore"));
        decide_output_clear(&o);

        /* Gone; a rejected snapshot is still being deleted: wait. */
        w.has_pod = 0;
        w.all[1].deleting_ms = w.now;
        w.now += 2 * SEC;
        decide(&w, &o, 1);
        assert_null(find_action(&o, ACTION_CREATE_POD));
        assert_string_equal(cond_reason(&o.status, "Ready"), "PodTerminating");
        decide_output_clear(&o);
        /* Gone: the next pod from files. */
        w.all[0].deleting_ms = grouped ? 0 : w.now;
        w.n_all = grouped ? 1 : 0;
        w.now += 2 * SEC;
        decide(&w, &o, 1);
        c = find_action(&o, ACTION_CREATE_POD);
        assert_non_null(c);
        assert_null(c->snapshot);
        assert_string_equal(cond_reason(&o.status, "Restored"), "FromCheckpoint");
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* A pod of an earlier version (no snapshot group) that was restored unasked
 * back then and runs: the session went on in it, so it is kept, and said. */
static void test_unwanted_restore_of_an_older_pod(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    w.ws->paused = 0;
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.pod.restored = 1;
    w.now += MIN;
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_DELETE_POD));
    const struct condition *r = workspace_status_condition(&o.status, "Restored");
    assert_string_equal(r->reason, "UnwantedRestore");
    assert_int_equal(r->status, COND_TRUE);
    assert_non_null(find_event(&o, "UnwantedRestore"));
    assert_int_equal(o.status.snapshot->rejected_ms, 0);
    decide_output_clear(&o);
    w.now += MIN;
    decide(&w, &o, 1);
    assert_null(find_event(&o, "UnwantedRestore"));
    decide_output_clear(&o);
    /* It crash-loops: now it goes. */
    w.pod.ready = 0;
    w.pod.crash_looping = 1;
    w.pod.restart_count = 3;
    w.now += MIN;
    decide(&w, &o, 1);
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    assert_string_equal(o.status.snapshot->rejected_group, "*");
    decide_output_clear(&o);
    world_free(&w);
}

/* A pod from files that crash-loops without PodRestored: the application's
 * own failure, reported once, and the pod is not replaced. */
static void test_crash_loop_without_restore(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    w.ws->paused = 0;
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.pod.ready = 0;
    w.pod.restart_count = 4;
    w.pod.crash_looping = 1;
    w.now += MIN;
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_string_equal(cond_reason(&o.status, "Ready"), "CrashLoop");
    assert_non_null(find_event(&o, "CrashLoop"));
    decide_output_clear(&o);
    w.now += MIN;
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_null(find_event(&o, "CrashLoop"));
    decide_output_clear(&o);
    world_free(&w);
}

/* PodRestored=False: the backend attempted a restore and says it failed
 * (agent-sandbox's client: "restore attempted but pending or failed"). A
 * restore asked for that runs without its memory is a cold start said at
 * once with the backend's words; one that crash-loops is replaced; a pod
 * from files that the backend tried to restore all the same and that
 * crash-loops is that restore's crash, and it is replaced too. */
static void test_restore_failed_condition(void **state)
{
    (void)state;
    /* 1. Asked for, running without the memory. */
    struct world w;
    paused_with_snapshot(&w, GKE);
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.now += 12 * SEC;
    pod_up(&w, "nb-2", "nb-p1-1-x7k2q", w.now);
    w.pod.restore_failed = 1;
    w.pod.restore_failure = "FailedToRestore: Snapshot not found";
    decide(&w, &o, 1); /* no wait for the condition: it is there */
    const struct condition *r = workspace_status_condition(&o.status, "Restored");
    assert_string_equal(r->reason, "ColdStart");
    assert_non_null(strstr(r->message, "FailedToRestore: Snapshot not found"));
    assert_string_equal(o.status.last_resume->restored_from, "ColdStart");
    const struct action *ev = find_event(&o, "ColdStart");
    assert_non_null(ev);
    assert_non_null(strstr(ev->message, "reporting its restore failed"));
    decide_output_clear(&o);
    world_free(&w);

    /* 2. Asked for, crash-looping: replaced, the backend's words kept. */
    paused_with_snapshot(&w, GKE);
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.now += 20 * SEC;
    pod_up(&w, "nb-2", "nb-p1-1-x7k2q", 0);
    w.pod.ready = 0;
    w.pod.restart_count = 3;
    w.pod.crash_looping = 1;
    w.pod.restore_failed = 1;
    w.pod.restore_failure = "RestoreFailed: OCI runtime restore failed: failed to load kernel";
    decide(&w, &o, 1);
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    r = workspace_status_condition(&o.status, "Restored");
    assert_string_equal(r->reason, "RestoreCrashed");
    assert_non_null(strstr(r->message, "failed to load kernel"));
    decide_output_clear(&o);
    world_free(&w);

    /* 3. From files, PodRestored=False, crash-looping: the unasked restore's
     * crash, replaced (never a crash loop forever); 4. from files,
     * PodRestored=False, running: the failed restore left a fresh start,
     * as asked: kept. */
    for (int crashing = 1; crashing >= 0; crashing--) {
        world_init(&w, GKE);
        w.ws->paused = 0;
        decide(&w, &o, 1);
        decide_output_clear(&o);
        w.pod.restore_failed = 1;
        w.pod.restore_failure = NULL;
        if (crashing) {
            w.pod.ready = 0;
            w.pod.crash_looping = 1;
            w.pod.restart_count = 3;
        }
        w.now += MIN;
        decide(&w, &o, 1);
        if (crashing) {
            assert_non_null(find_action(&o, ACTION_DELETE_POD));
            r = workspace_status_condition(&o.status, "Restored");
            assert_string_equal(r->reason, "UnwantedRestore");
            assert_non_null(strstr(r->message, "PodRestored=False"));
            assert_non_null(find_event(&o, "UnwantedRestore"));
        } else {
            assert_null(find_action(&o, ACTION_DELETE_POD));
            assert_null(find_event(&o, "UnwantedRestore"));
            assert_string_not_equal(cond_reason(&o.status, "Restored"), "UnwantedRestore");
        }
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* ---- does the restored session answer? ---- */

#define GKE_APP                                                                                    \
    ",\"snapshot\":{\"backend\":\"GKE\",\"storageConfigName\":\"s\",\"timeout\":\"10m\","          \
    "\"restoreCheckTimeout\":\"30s\"},\"activity\":{\"application\":\"CodeServer\","               \
    "\"url\":\"http://{podIP}:8080\",\"interval\":\"10s\",\"timeout\":\"2s\"}"

/* The rows of docs/snapshots.md's restore table that the application probe
 * decides. The pod nb-2 is ready at R - 1 s and GKE says PodRestored at R;
 * restoreCheckTimeout is 30 s, the probe timeout 2 s, so the last word is
 * due at R + 37 s. */
static void test_restore_check(void **state)
{
    (void)state;
    enum { NONE = -1 };
    static const struct {
        const char *name;
        const char *klass;
        int restored;       /* PodRestored=True */
        int64_t at;         /* now, after R */
        int64_t answered;   /* the check's answered_ms after R; NONE: not yet */
        int64_t last_round; /* its last round after R; NONE: no input at all */
        const char *pod;    /* the pod the rounds are of */
        enum workspace_state want_state;
        const char *want_restored; /* the Restored reason */
        const char *want_ready;    /* the Ready reason */
        const char *want_event;    /* a Warning event, or NULL */
        int want_delete;           /* the pod is deleted (grace 0) */
        int want_check;            /* restore_check_wanted */
        int want_probe_now;
        int64_t want_requeue; /* after R; 0: not checked */
    } rows[] = {
        {"no application probe: PodRestored alone counts", GKE, 1, 5 * SEC, NONE, NONE, "nb-2",
         WS_STATE_RUNNING, "FromSnapshot", "PodReady", NULL, 0, 0, 0, 0},
        {"restored, no round yet: wait for the application", GKE_APP, 1, 5 * SEC, NONE, NONE,
         "nb-2", WS_STATE_RESUMING, "Restoring", "AwaitingApplication", NULL, 0, 1, 0, 30 * SEC},
        {"the application answered", GKE_APP, 1, 5 * SEC, 3 * SEC, 3 * SEC, "nb-2",
         WS_STATE_RUNNING, "FromSnapshot", "PodReady", NULL, 0, 0, 0, 0},
        {"rounds fail, the timeout not reached", GKE_APP, 1, 25 * SEC, NONE, 20 * SEC, "nb-2",
         WS_STATE_RESUMING, "Restoring", "AwaitingApplication", NULL, 0, 1, 0, 30 * SEC},
        {"the timeout passed, no round since: one more", GKE_APP, 1, 31 * SEC, NONE, 28 * SEC,
         "nb-2", WS_STATE_RESUMING, "Restoring", "AwaitingApplication", NULL, 0, 1, 1, 37 * SEC},
        {"a round after the timeout failed: unresponsive", GKE_APP, 1, 33 * SEC, NONE, 31 * SEC,
         "nb-2", WS_STATE_RESUMING, "RestoreUnresponsive", "PodTerminating", "RestoreUnresponsive",
         1, 0, 0, 0},
        {"no round could be made by the last word", GKE_APP, 1, 38 * SEC, NONE, NONE, "nb-2",
         WS_STATE_RESUMING, "RestoreUnresponsive", "PodTerminating", "RestoreUnresponsive", 1, 0, 0,
         0},
        {"rounds of another pod do not count", GKE_APP, 1, 5 * SEC, 3 * SEC, 3 * SEC, "nb-1",
         WS_STATE_RESUMING, "Restoring", "AwaitingApplication", NULL, 0, 1, 0, 30 * SEC},
        {"no PodRestored after Ready: ColdStart, unchanged", GKE_APP, 0, 31 * SEC, NONE, NONE,
         "nb-2", WS_STATE_RUNNING, "ColdStart", "PodReady", "ColdStart", 0, 0, 0, 0},
        {"ready, PodRestored not yet, no answer: wait", GKE_APP, 0, 5 * SEC, NONE, 4 * SEC, "nb-2",
         WS_STATE_RESUMING, "Restoring", "AwaitingApplication", NULL, 0, 1, 0, 29 * SEC},
        {"ready, PodRestored not yet, answered: running, Restored unknown", GKE_APP, 0, 5 * SEC,
         3 * SEC, 3 * SEC, "nb-2", WS_STATE_RUNNING, "Restoring", "PodReady", NULL, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct world w;
        paused_with_snapshot(&w, rows[i].klass);
        struct decide_output o;
        decide(&w, &o, 1); /* the resume creates nb-2 */
        decide_output_clear(&o);
        int64_t r = w.now + 12 * SEC;
        pod_up(&w, "nb-2", "nb-p1-1-x7k2q", r - SEC);
        w.pod.restored = rows[i].restored;
        w.pod.restored_ms = rows[i].restored ? r : 0;
        w.now = r + rows[i].at;
        if (rows[i].last_round != NONE) {
            w.has_check = 1;
            w.check = (struct restore_check){
                .pod = rows[i].pod,
                .answered_ms = rows[i].answered == NONE ? 0 : r + rows[i].answered,
                .last_round_ms = r + rows[i].last_round,
                .error = rows[i].answered == NONE ? "code-server: GET /healthz: refused" : NULL};
        }
        decide(&w, &o, 1);
        const char *name = rows[i].name;
        if (o.status.state != rows[i].want_state)
            fail_msg("%s: state %d, want %d", name, o.status.state, rows[i].want_state);
        if (strcmp(cond_reason(&o.status, "Restored"), rows[i].want_restored) != 0 ||
            strcmp(cond_reason(&o.status, "Ready"), rows[i].want_ready) != 0)
            fail_msg("%s: Restored %s, Ready %s; want %s, %s", name,
                     cond_reason(&o.status, "Restored"), cond_reason(&o.status, "Ready"),
                     rows[i].want_restored, rows[i].want_ready);
        const struct action *ev = rows[i].want_event ? find_event(&o, rows[i].want_event) : NULL;
        if (rows[i].want_event && (!ev || strcmp(ev->event_type, "Warning") != 0))
            fail_msg("%s: no Warning %s", name, rows[i].want_event);
        const struct action *del = find_action(&o, ACTION_DELETE_POD);
        if (!!del != rows[i].want_delete || (del && del->grace_seconds != 0))
            fail_msg("%s: delete %s", name, del ? "unexpected or not at once" : "missing");
        if (rows[i].want_delete && !o.status.snapshot->restore_failed_ms)
            fail_msg("%s: the snapshot is not marked", name);
        if (o.restore_check_wanted != rows[i].want_check || o.probe_now != rows[i].want_probe_now)
            fail_msg("%s: restore_check_wanted %d probe_now %d", name, o.restore_check_wanted,
                     o.probe_now);
        if (rows[i].want_requeue && o.requeue_after_ms != r + rows[i].want_requeue - w.now)
            fail_msg("%s: requeue after %lld ms", name, (long long)o.requeue_after_ms);
        if (rows[i].want_state == WS_STATE_RUNNING) {
            /* Ready when the application answered (or the pod was, without a
             * check); the resume ends once it is known how the pod came
             * back (Restored not Restoring): its Resumed Event says it. */
            int64_t want = !strcmp(rows[i].want_restored, "Restoring") ? 0
                           : rows[i].answered == NONE                  ? r - SEC
                                                                       : r + rows[i].answered;
            if (o.status.last_resume->ready_ms != want)
                fail_msg("%s: readyAt %lld, want %lld", name,
                         (long long)o.status.last_resume->ready_ms, (long long)want);
        }
        if (!strcmp(rows[i].want_restored, "RestoreUnresponsive")) {
            const struct condition *c = workspace_status_condition(&o.status, "Restored");
            if (!strstr(c->message, "did not answer within 30s"))
                fail_msg("%s: message %s", name, c->message);
        }
        decide_output_clear(&o);

        /* Decided again on what it wrote: a fixed point, no Event again. */
        w.now += SEC;
        decide(&w, &o, 1);
        if (o.status_changed)
            fail_msg("%s: the status changes when decided again", name);
        for (size_t k = 0; k < o.n_actions; k++)
            if (o.actions[k].type == ACTION_EVENT && strcmp(o.actions[k].reason, "Resumed") != 0)
                fail_msg("%s: Event %s again", name, o.actions[k].reason);
        decide_output_clear(&o);

        if (!strcmp(rows[i].want_restored, "RestoreUnresponsive")) {
            /* The pod gone: the next one starts from files and says why. A
             * pass that does not see that pod yet (a lagging cache) makes it
             * again on what the first wrote, where Restored says
             * FromCheckpoint already, and says the same. */
            w.has_pod = 0;
            w.has_check = 0;
            for (int pass = 0; pass < 2; pass++) {
                w.now += SEC;
                decide(&w, &o, 1);
                const struct condition *c = workspace_status_condition(&o.status, "Restored");
                if (!c || strcmp(c->reason, "FromCheckpoint") != 0 ||
                    !strstr(c->message, "did not answer"))
                    fail_msg("%s: pass %d after the replacement: Restored %s: %s", name, pass,
                             c ? c->reason : "-", c && c->message ? c->message : "-");
                decide_output_clear(&o);
            }
        }
        world_free(&w);
    }
}

#define CC_APP                                                                                     \
    ",\"snapshot\":{\"backend\":\"ContainerCheckpoint\",\"repository\":\"r.example/ck\","          \
    "\"pullSecretName\":\"ck\",\"timeout\":\"10m\",\"restoreCheckTimeout\":\"30s\"},"              \
    "\"activity\":{\"application\":\"Jupyter\",\"url\":\"http://{podIP}:8888\","                   \
    "\"interval\":\"10s\",\"timeout\":\"2s\"}"

/*
 * The ContainerCheckpoint backend through decide(): the pause records the
 * application's own start and, once Ready, the checkpoint image; the resume
 * creates the pod from the image; the restored pod counts as FromSnapshot
 * only when its application answers as the paused process (the same
 * start), and its container says the restore (running) or its failure
 * (waiting on an image it cannot pull: replaced from files).
 */
static void test_container_checkpoint(void **state)
{
    (void)state;
    enum { SAME, SAME_KERNEL_GONE, NEW, STUCK, CLASS_MOVED };
    static const struct {
        const char *name;
        int how;
        const char *want_restored;
        int want_delete;
    } rows[] = {
        {"the same process answers: the session is back", SAME, "FromSnapshot", 0},
        {"the same process answers without a kernel it had: still back, said", SAME_KERNEL_GONE,
         "FromSnapshot", 0},
        {"a new process answers: a cold start, said", NEW, "ColdStart", 0},
        {"the image cannot be pulled: replaced from files", STUCK, "RestoreCrashed", 1},
        {"the class moved to GKE: not restored", CLASS_MOVED, NULL, 0},
    };
    const int64_t started = T0 - 2 * MIN; /* the notebook server's own start */
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *name = rows[i].name;
        struct world w;
        world_init(&w, CC_APP);
        w.has_obs = 1;
        w.obs = (struct activity_observation){.probed_at_ms = w.now - 5 * SEC};
        probe_result_init(&w.obs.result, "jupyter");
        w.obs.result.app_started_ms = started + 123; /* Jupyter says microseconds */
        /* Two kernels, as the probe keeps them: hashed, ascending. */
        const uint32_t k1 = 0x0a0b0c0d, k2 = 0xf0e0d0c0;
        w.obs.result.n_kernels = 2;
        w.obs.result.kernels[0] = k1;
        w.obs.result.kernels[1] = k2;
        struct decide_output o;
        decide(&w, &o, 1);
        const struct action *b = find_action(&o, ACTION_SNAPSHOT_BEGIN);
        assert_non_null(b);
        assert_int_equal(o.status.snapshot->app_started_ms, started + 123);
        assert_string_equal(o.status.snapshot->app_kernels, "0a0b0c0d,f0e0d0c0");
        assert_int_equal(o.status.snapshot->app_kernel_count, 2);
        decide_output_clear(&o);
        w.now += 30 * SEC;
        w.has_view = 1;
        w.view = (struct snapshot_view){.attempt = "nb-p1-1",
                                        .phase = SNAPSHOT_PHASE_READY,
                                        .name = "nb-p1-1",
                                        .ready_ms = w.now,
                                        .image = IMAGE};
        decide(&w, &o, 1);
        assert_string_equal(o.status.snapshot->image, IMAGE);
        decide_output_clear(&o);
        w.has_pod = 0;
        w.now += 10 * SEC;
        decide(&w, &o, 1);
        assert_int_equal(o.status.state, WS_STATE_PAUSED);
        assert_string_equal(o.status.last_pause->memory, "snapshot");
        decide_output_clear(&o);
        /* appStartedAt is kept in whole seconds. */
        w.ws->status.snapshot->app_started_ms = started;

        w.ws->paused = 0;
        w.now += 8 * 60 * MIN;
        if (rows[i].how == CLASS_MOVED) {
            workspace_class_free(w.cls);
            w.cls = class_from(GKE_APP);
        }
        decide(&w, &o, 1);
        const struct action *c = find_action(&o, ACTION_CREATE_POD);
        assert_non_null(c);
        if (rows[i].how == CLASS_MOVED) {
            assert_null(c->snapshot);
            assert_null(c->image);
            const struct action *ev = find_event(&o, "SnapshotNotUsed");
            if (!ev || !strstr(ev->message, "is a checkpoint image"))
                fail_msg("%s: SnapshotNotUsed %s", name, ev ? ev->message : "missing");
            decide_output_clear(&o);
            world_free(&w);
            continue;
        }
        assert_string_equal(c->snapshot, "nb-p1-1");
        assert_string_equal(c->image, IMAGE);
        decide_output_clear(&o);

        int64_t r = w.now + 12 * SEC;
        pod_up(&w, "nb-2", "nb-p1-1", r - SEC);
        if (rows[i].how == STUCK) {
            w.pod.ready = 0;
            w.pod.phase = "Pending";
            w.pod.restore_stuck = w.pod.restore_failed = 1;
            w.pod.restore_failure = "ImagePullBackOff: Back-off pulling image";
        } else {
            w.pod.restored = 1;
            w.pod.restored_ms = r - 2 * SEC;
            w.has_check = 1;
            static const uint32_t both[] = {0x0a0b0c0d, 0xf0e0d0c0}, one[] = {0xf0e0d0c0};
            int same = rows[i].how == SAME || rows[i].how == SAME_KERNEL_GONE;
            w.check =
                (struct restore_check){.pod = "nb-2",
                                       .answered_ms = r,
                                       .last_round_ms = r,
                                       .app_started_ms = same ? started + 456 : r - 3 * SEC,
                                       .kernels = rows[i].how == SAME_KERNEL_GONE ? one : both,
                                       .n_kernels = rows[i].how == SAME_KERNEL_GONE ? 1 : 2};
        }
        w.now = r + SEC;
        decide(&w, &o, 1);
        if (strcmp(cond_reason(&o.status, "Restored"), rows[i].want_restored) != 0)
            fail_msg("%s: Restored %s, want %s", name, cond_reason(&o.status, "Restored"),
                     rows[i].want_restored);
        const struct action *del = find_action(&o, ACTION_DELETE_POD);
        if (!!del != rows[i].want_delete)
            fail_msg("%s: delete %s", name, del ? "unexpected" : "missing");
        const struct condition *said = workspace_status_condition(&o.status, "Restored");
        const char *proof = rows[i].how == SAME
                                ? "that was paused, listing the 2 kernels it listed "
                                  "before the pause"
                            : rows[i].how == SAME_KERNEL_GONE
                                ? "that was paused, but 1 of the 2 kernels it listed before the "
                                  "pause is not listed now"
                                : NULL;
        if (proof && !strstr(said->message, proof))
            fail_msg("%s: %s", name, said->message);
        char *said_then = strdup(said->message);
        if (rows[i].how == NEW) {
            assert_non_null(find_event(&o, "ColdStart"));
            assert_string_equal(o.status.last_resume->restored_from, "ColdStart");
            assert_true(o.status.snapshot->restore_failed_ms > 0);
            const struct condition *cond = workspace_status_condition(&o.status, "Restored");
            if (!strstr(cond->message, "not the one started at"))
                fail_msg("%s: %s", name, cond->message);
        }
        if (rows[i].how == STUCK) {
            const struct condition *cond = workspace_status_condition(&o.status, "Restored");
            if (!strstr(cond->message, "could not be restored") ||
                !strstr(cond->message, "ImagePullBackOff"))
                fail_msg("%s: %s", name, cond->message);
        }
        decide_output_clear(&o);
        /* Decided again with the check's rounds over: the verdict stays. */
        w.has_check = 0;
        w.now += 40 * SEC;
        decide(&w, &o, 1);
        if (rows[i].how != STUCK &&
            strcmp(cond_reason(&o.status, "Restored"), rows[i].want_restored) != 0)
            fail_msg("%s: then Restored %s", name, cond_reason(&o.status, "Restored"));
        if (proof &&
            strcmp(workspace_status_condition(&o.status, "Restored")->message, said_then) != 0)
            fail_msg("%s: the proof was not kept: %s", name,
                     workspace_status_condition(&o.status, "Restored")->message);
        free(said_then);
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* An unresponsive restore walks the crashed restore's path: the snapshot is
 * deleted, the next pod starts from files in a group of its own, and says
 * why; a controller that starts anew meanwhile decides the same. */
static void test_restore_unresponsive_walk(void **state)
{
    (void)state;
    struct world w;
    paused_with_snapshot(&w, GKE_APP);
    struct decide_output o;
    decide(&w, &o, 1);
    decide_output_clear(&o);
    int64_t r = w.now + 12 * SEC;
    pod_up(&w, "nb-2", "nb-p1-1-x7k2q", r - SEC);
    w.pod.restored = 1;
    w.pod.restored_ms = r;
    w.now = r + 33 * SEC;
    w.has_check = 1;
    w.check = (struct restore_check){.pod = "nb-2",
                                     .last_round_ms = r + 31 * SEC,
                                     .error = "code-server: GET /healthz: timed out"};
    w.all[0] = w.view;
    w.n_all = 1;
    decide(&w, &o, 1);
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    assert_int_equal(deletes(&o, "nb-p1-1-x7k2q"), 1);
    assert_non_null(
        strstr(workspace_status_condition(&o.status, "Restored")->message, "timed out"));
    decide_output_clear(&o);

    /* The controller starts anew before the pod is gone: no rounds, the
     * pod still listed; it deletes again, says nothing new. */
    w.has_check = 0;
    w.now += SEC;
    decide(&w, &o, 1);
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    assert_null(find_event(&o, "RestoreUnresponsive"));
    assert_false(o.status_changed);
    decide_output_clear(&o);

    /* Gone, the snapshot still there (being deleted): the next pod starts
     * from files at once, in a snapshot group no snapshot has, and says
     * why. */
    w.has_pod = 0;
    w.now += 5 * SEC;
    decide(&w, &o, 1);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_null(c->snapshot);
    assert_non_null(c->group);
    assert_string_not_equal(c->group, w.ws->status.snapshot->group);
    assert_true(c->from_checkpoint);
    const struct condition *rc = workspace_status_condition(&o.status, "Restored");
    assert_string_equal(rc->reason, "FromCheckpoint");
    assert_non_null(strstr(rc->message, "did not answer"));
    assert_non_null(find_event(&o, "SnapshotNotUsed"));
    decide_output_clear(&o);
    world_free(&w);
}

/* What makes a snapshot unusable: each gives a resume from files, with why. */
static void test_snapshot_not_used(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        const char *want; /* in the Restored message */
    } cases[] = {
        {"image changed", "pod template changed"},
        {"GPU product changed", "was taken on Tesla-T4, the class now asks for NVIDIA-L4"},
        {"snapshot gone", "no longer exists"},
        {"expired", "expired"},
        {"restored within the retention, then expired", "expired"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct world w;
        paused_with_snapshot(&w, GKE);
        if (i == 0)
            w.ws->image = strdup("quay.io/jupyter/b:2");
        if (i == 1) {
            free(w.cls->product);
            w.cls->product = strdup("NVIDIA-L4");
        }
        if (i == 2)
            w.view.phase = SNAPSHOT_PHASE_NONE;
        if (i == 3)
            w.now += 8 * 24 * 60 * MIN;
        if (i == 4) {
            w.view.last_access_ms = w.now + 6 * 24 * 60 * MIN;
            w.now += 14 * 24 * 60 * MIN;
        }
        struct decide_output o;
        decide(&w, &o, 1);
        const struct action *c = find_action(&o, ACTION_CREATE_POD);
        if (!c || c->snapshot)
            fail_msg("%s: want a pod from files", cases[i].name);
        const struct condition *r = workspace_status_condition(&o.status, "Restored");
        if (!r || !strstr(r->message, cases[i].want))
            fail_msg("%s: Restored says \"%s\", want \"%s\"", cases[i].name,
                     r ? r->message : "(none)", cases[i].want);
        assert_non_null(find_event(&o, "SnapshotNotUsed"));
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* GKE ages a snapshot from its last restore (status.lastAccessTime): one
 * restored 6 days after Ready is not expired 8 days after Ready under the
 * default 7-day lastAccessTimeout, and the resume restores it. */
static void test_retention_from_last_access(void **state)
{
    (void)state;
    struct world w;
    paused_with_snapshot(&w, GKE);
    w.view.last_access_ms = w.now + 6 * 24 * 60 * MIN;
    w.now += 8 * 24 * 60 * MIN;
    struct decide_output o;
    decide(&w, &o, 1);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_non_null(c->snapshot);
    assert_null(find_event(&o, "SnapshotNotUsed"));
    assert_int_equal(deletes(&o, "nb-p1-1-x7k2q"), 0);
    decide_output_clear(&o);
    world_free(&w);
}

/* Restore compatibility (docs/snapshots.md): the snapshot records what GKE
 * matches on, of its node; a restore is steered onto a node like it; when
 * nodes carry the product but none the recorded node version, the paused
 * workspace says before the resume that the memory cannot come back, and
 * the resume starts from files saying why. */
static void test_restore_compatibility(void **state)
{
    (void)state;
    for (int compatible = 0; compatible <= 1; compatible++) {
        struct world w;
        world_init(&w, GKE);
        w.pod.group = "u1-1";
        w.nodes[0] = (struct decide_node){.name = "gpu-node-1",
                                          .product = "Tesla-T4",
                                          .machine_family = "n1",
                                          .machine_type = "n1-standard-8",
                                          .node_pool = "gpu-pool",
                                          .version = "v1.35.3-gke.1234000",
                                          .driver_major = "550",
                                          .driver_minor = "90",
                                          .driver_rev = "07"};
        w.n_nodes = 1;
        struct decide_output o;
        decide(&w, &o, 1);
        const struct workspace_snapshot *sn = o.status.snapshot;
        assert_string_equal(sn->node_gpu_driver, "550.90.07");
        assert_string_equal(sn->node_machine_family, "n1");
        assert_string_equal(sn->node_machine_type, "n1-standard-8");
        assert_string_equal(sn->node_pool, "gpu-pool");
        assert_string_equal(sn->node_version, "v1.35.3-gke.1234000");
        decide_output_clear(&o);
        w.now += 60 * SEC;
        w.has_view = 1;
        w.view = (struct snapshot_view){.attempt = "nb-p1-1",
                                        .phase = SNAPSHOT_PHASE_READY,
                                        .name = "nb-p1-1-x7k2q",
                                        .ready_ms = w.now};
        decide(&w, &o, 1);
        decide_output_clear(&o);
        /* Paused; the node pool was upgraded meanwhile (or not). */
        w.has_pod = 0;
        w.n_nodes = 0;
        w.has_restore_nodes = 1;
        w.restore_nodes = (struct decide_restore_nodes){
            .with_product = 2, .matching = compatible ? 1 : 0, .seen = "v1.36.1-gke.500"};
        w.now += 10 * SEC;
        decide(&w, &o, 1);
        assert_int_equal(o.status.state, WS_STATE_PAUSED);
        const struct condition *c = workspace_status_condition(&o.status, "SnapshotReady");
        if (compatible) {
            assert_string_equal(c->reason, "Ready");
            assert_null(find_event(&o, "SnapshotNotRestorable"));
        } else {
            assert_int_equal(c->status, COND_FALSE);
            assert_string_equal(c->reason, "NotRestorable");
            assert_non_null(strstr(c->message, "v1.35.3-gke.1234000"));
            assert_non_null(strstr(c->message, "v1.36.1-gke.500"));
            assert_non_null(find_event(&o, "SnapshotNotRestorable"));
        }
        decide_output_clear(&o);
        w.now += MIN;
        decide(&w, &o, 1);
        assert_null(find_event(&o, "SnapshotNotRestorable")); /* said once */
        decide_output_clear(&o);
        /* The resume. */
        w.ws->paused = 0;
        w.now += MIN;
        decide(&w, &o, 1);
        const struct action *a = find_action(&o, ACTION_CREATE_POD);
        assert_non_null(a);
        if (compatible) {
            assert_string_equal(a->snapshot, "nb-p1-1-x7k2q");
            assert_string_equal(a->machine_type, "n1-standard-8");
            assert_string_equal(a->node_pool, "gpu-pool");
            assert_string_equal(a->gpu_driver, "550.90.07");
        } else {
            assert_null(a->snapshot);
            assert_null(a->machine_type);
            assert_null(a->gpu_driver);
            const struct action *ev = find_event(&o, "SnapshotNotUsed");
            assert_non_null(ev);
            assert_non_null(strstr(ev->message, "cannot come back"));
            assert_string_equal(cond_reason(&o.status, "Restored"), "FromCheckpoint");
        }
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* ---- capacity fallback and the snapshot's product ---- */

/* Tesla-T4 with NVIDIA-L4 as an alternative, onCapacityTimeout FallBack. */
static void fallback_class(struct workspace_class *c)
{
    c->on_capacity_timeout = CAPACITY_TIMEOUT_FALL_BACK;
    c->alternative_products = calloc(1, sizeof(char *));
    assert_non_null(c->alternative_products);
    c->alternative_products[0] = strdup("NVIDIA-L4");
    c->n_alternative_products = 1;
}

static void drop_alternatives(struct workspace_class *c)
{
    for (size_t i = 0; i < c->n_alternative_products; i++)
        free(c->alternative_products[i]);
    free(c->alternative_products);
    c->alternative_products = NULL;
    c->n_alternative_products = 0;
    c->on_capacity_timeout = CAPACITY_TIMEOUT_WAIT;
}

/* Paused with a snapshot on a T4, resumed with no T4 free, fallen back to
 * an L4 after the capacity timeout, paused there with a snapshot: the
 * whole walk of docs/state-machine.md, checked on the way. */
static void walk_to_paused_on_l4(struct world *w)
{
    paused_with_snapshot(w, GKE);
    fallback_class(w->cls);
    struct decide_output o;

    /* The resume restores from the T4 snapshot, pinned to the T4. */
    decide(w, &o, 1);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_string_equal(c->name, "nb-2");
    assert_string_equal(c->snapshot, "nb-p1-1-x7k2q");
    assert_string_equal(c->product, "Tesla-T4");
    assert_false(c->capacity_fallback);
    decide_output_clear(&o);

    /* No T4 free. */
    w->now += 5 * SEC;
    w->pod = (struct workspace_pod){.ns = "team",
                                    .name = "nb-2",
                                    .uid = "p2",
                                    .workspace = "nb",
                                    .phase = "Pending",
                                    .created_ms = w->now - 4 * SEC,
                                    .unschedulable = 1,
                                    .unschedulable_message = "0/3 nodes are available",
                                    .restore_from_checkpoint = 1,
                                    .snapshot = "nb-p1-1-x7k2q"};
    w->has_pod = 1;
    decide(w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_WAITING_FOR_CAPACITY);
    assert_string_equal(o.status.accelerator_product, "Tesla-T4");
    decide_output_clear(&o);

    /* The capacity timeout: the restore pod goes, once said. */
    w->now += 30 * MIN;
    decide(w, &o, 1);
    const struct action *del = find_action(&o, ACTION_DELETE_POD);
    assert_non_null(del);
    assert_string_equal(del->name, "nb-2");
    assert_int_equal(del->grace_seconds, 0);
    assert_non_null(find_event(&o, "CapacityFallback"));
    assert_true(o.status.accelerator_fallback);
    assert_int_equal(o.status.state, WS_STATE_RESUMING);
    decide_output_clear(&o);

    /* Gone: a pod from files and the checkpoint, not from the snapshot,
     * for any allowed product. */
    w->has_pod = 0;
    w->now += 3 * SEC;
    decide(w, &o, 1);
    c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_true(c->capacity_fallback);
    assert_true(c->from_checkpoint);
    assert_null(c->snapshot);
    assert_null(c->product);
    const struct condition *r = workspace_status_condition(&o.status, "Restored");
    assert_string_equal(r->reason, "FromCheckpoint");
    assert_non_null(strstr(r->message, "capacity timeout (30m)"));
    assert_null(find_event(&o, "SnapshotNotUsed"));
    assert_null(find_event(&o, "CapacityFallback"));
    decide_output_clear(&o);

    /* It lands on an L4 and runs: the status says which GPU it got. */
    w->now += 10 * SEC;
    pod_up(w, "nb-2", NULL, w->now - SEC);
    w->pod.capacity_fallback = 1;
    w->nodes[0] = (struct decide_node){.name = "gpu-node-2", .product = "NVIDIA-L4"};
    w->n_nodes = 1;
    decide(w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_RUNNING);
    assert_string_equal(o.status.accelerator_product, "NVIDIA-L4");
    assert_true(o.status.accelerator_fallback);
    assert_string_equal(cond_reason(&o.status, "Restored"), "FromCheckpoint");
    decide_output_clear(&o);

    /* Paused there: the snapshot records the L4. */
    w->now += 60 * MIN;
    w->ws->paused = 1;
    decide(w, &o, 1);
    const struct action *b = find_action(&o, ACTION_SNAPSHOT_BEGIN);
    assert_non_null(b);
    assert_string_equal(b->name, "nb-p2-1");
    assert_string_equal(o.status.snapshot->gpu_product, "NVIDIA-L4");
    assert_string_equal(o.status.snapshot->node_name, "gpu-node-2");
    decide_output_clear(&o);
    w->now += 30 * SEC;
    w->view = (struct snapshot_view){.attempt = "nb-p2-1",
                                     .phase = SNAPSHOT_PHASE_READY,
                                     .name = "nb-p2-1-l4snp",
                                     .ready_ms = w->now};
    decide(w, &o, 1);
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);
    w->has_pod = 0;
    w->now += 5 * SEC;
    decide(w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    assert_false(o.status.accelerator_fallback);
    decide_output_clear(&o);
    w->ws->paused = 0;
    w->now += 60 * MIN;
}

/* The resume from the L4 snapshot is pinned to the L4, though the class's
 * product is the T4, and comes back FromSnapshot. */
/* ---- crashes: the record comes from the API server's objects ---- */

/* A controller dies after an action and before its status write; the next
 * one decides on what the API server shows: the status as it was, the pods,
 * and the backend's view of the attempt. Each row stages one crash point,
 * then checks the first decision of the next controller and what follows
 * until the workspace is settled; every decision is also made twice (the
 * second time on the status the first wrote) to prove a fixed point with no
 * Event repeated. */

#define READY_AT (T0 + 10 * MIN + 50 * SEC) /* the backend's ready time */

static const struct snapshot_view ready_view = {.attempt = "nb-p1-1",
                                                .phase = SNAPSHOT_PHASE_READY,
                                                .name = "nb-p1-1-x7k2q",
                                                .ready_ms = READY_AT};

static const char *event_occasion(const struct decide_output *o, const char *reason)
{
    const struct action *a = find_event(o, reason);
    return a ? a->occasion : NULL;
}

/* A status as its JSON, for a failure's message (left to the process's end). */
static const char *status_text(const struct workspace_status *s)
{
    cJSON *j = workspace_status_to_json(s);
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return text ? text : "?";
}

/* Decides, writes the status, and decides again on it: nothing changes. */
static void decide_settled(struct world *w, struct decide_output *o)
{
    decide(w, o, 1);
    struct decide_output again;
    decide(w, &again, 0);
    if (again.status_changed) {
        fail_msg("the status changed on the same world: %s -> %s", status_text(&w->ws->status),
                 status_text(&again.status));
    }
    for (size_t i = 0; i < again.n_actions; i++)
        if (again.actions[i].type == ACTION_EVENT)
            fail_msg("event %s repeated on the same world", again.actions[i].reason);
    decide_output_clear(&again);
}

/* The pause's pass that saw the snapshot Ready and deleted the pod died
 * before its status write: the status says InProgress, the delete happened.
 * Returns with the pod terminating (deletionTimestamp = delete + grace). */
static void crash_after_delete(struct world *w)
{
    world_init(w, GKE);
    struct decide_output o;
    decide(w, &o, 1); /* SnapshotBegin, written */
    assert_string_equal(o.status.snapshot->phase, "InProgress");
    decide_output_clear(&o);
    w->now = READY_AT + 2 * SEC;
    w->has_view = 1;
    w->view = ready_view;
    decide(w, &o, 0); /* Ready: the pod's delete; the status write is lost */
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    assert_string_equal(event_occasion(&o, "SnapshotReady"), "nb-p1-1");
    decide_output_clear(&o);
    assert_string_equal(w->ws->status.snapshot->phase, "InProgress");
    w->pod.deletion_ms = w->now + 30 * SEC;
    w->now += 5 * SEC; /* the next controller */
}

/* The record of a pause with its snapshot Ready, whatever the crash. */
static void assert_paused_with_snapshot(const struct decide_output *o)
{
    const struct workspace_status *st = &o->status;
    assert_int_equal(st->state, WS_STATE_PAUSED);
    assert_string_equal(st->snapshot->phase, "Ready");
    assert_string_equal(st->snapshot->name, "nb-p1-1-x7k2q");
    assert_int_equal(st->snapshot->ready_ms, READY_AT);
    assert_string_equal(cond_reason(st, "SnapshotReady"), "Ready");
    assert_string_equal(st->last_pause->memory, "snapshot");
    assert_int_equal(st->last_pause->snapshot_ready_ms, READY_AT);
    assert_int_equal(st->n_history, 1);
    assert_string_equal(st->history[0].pause.memory, "snapshot");
}

/* The resume restores from the snapshot and says nothing of files. */
static void assert_resumes_from_snapshot(struct world *w)
{
    w->ws->paused = 0;
    w->now += 30 * MIN;
    struct decide_output o;
    decide_settled(w, &o);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_string_equal(c->snapshot, "nb-p1-1-x7k2q");
    assert_null(find_event(&o, "SnapshotNotUsed"));
    assert_string_equal(cond_reason(&o.status, "Restored"), "Restoring");
    decide_output_clear(&o);
}

static void crash_pod_terminating(struct world *w)
{
    crash_after_delete(w);
    struct decide_output o;
    decide_settled(w, &o);
    /* The backend's Ready is recorded, with its time and its Event under the
     * same occasion as before the crash (posted once). */
    assert_string_equal(o.status.snapshot->phase, "Ready");
    assert_int_equal(o.status.snapshot->ready_ms, READY_AT);
    assert_string_equal(event_occasion(&o, "SnapshotReady"), "nb-p1-1");
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_int_equal(o.status.state, WS_STATE_PAUSING);
    /* when the delete was sent, from the pod: deletionTimestamp - grace */
    assert_int_equal(o.status.last_pause->pod_deleted_ms, READY_AT + 2 * SEC);
    decide_output_clear(&o);

    w->has_pod = 0;
    w->now += 30 * SEC;
    decide_settled(w, &o);
    assert_paused_with_snapshot(&o);
    assert_null(find_event(&o, "SnapshotNotUsed"));
    decide_output_clear(&o);
    assert_resumes_from_snapshot(w);
}

static void crash_pod_gone(struct world *w)
{
    crash_after_delete(w);
    w->has_pod = 0;
    w->now += 60 * SEC;
    struct decide_output o;
    decide_settled(w, &o);
    assert_paused_with_snapshot(&o);
    assert_string_equal(event_occasion(&o, "SnapshotReady"), "nb-p1-1");
    /* No pass saw the delete the lost pass sent: marked, not left out. */
    assert_int_equal(o.status.last_pause->pod_deleted_ms, 0);
    assert_string_equal(o.status.last_pause->unobserved, "podDeletedAt");
    assert_string_equal(o.status.history[0].pause.unobserved, "podDeletedAt");
    decide_output_clear(&o);
    assert_resumes_from_snapshot(w);
}

/* The same, but this process saw the pod go (the pod cache's last sight
 * of it): its deletionTimestamp less its grace period is the delete. */
static void crash_pod_gone_seen(struct world *w)
{
    crash_after_delete(w);
    w->has_pod = 0;
    struct workspace_pod gone = w->pod;
    gone.deletion_ms = READY_AT + 2 * SEC;
    gone.deletion_grace_known = 1;
    gone.deletion_grace_s = 0;
    w->gone = gone;
    w->has_gone = 1;
    w->now += 60 * SEC;
    struct decide_output o;
    decide_settled(w, &o);
    assert_paused_with_snapshot(&o);
    assert_int_equal(o.status.last_pause->pod_deleted_ms, READY_AT + 2 * SEC);
    assert_null(o.status.last_pause->unobserved);
    decide_output_clear(&o);
}

/* The next controller's first pass comes before the backend's caches have
 * synced: nothing is concluded from that, the memory is not yet said. */
static void crash_backend_syncing(struct world *w)
{
    crash_after_delete(w);
    w->has_pod = 0;
    w->now += 20 * MIN; /* past the snapshot timeout: still not a failure */
    w->view = (struct snapshot_view){
        .attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_IN_PROGRESS, .unknown = 1};
    struct decide_output o;
    decide_settled(w, &o);
    /* Paused (and its Event) only once what the pause kept is known. */
    assert_int_equal(o.status.state, WS_STATE_PAUSING);
    assert_null(find_event(&o, "Paused"));
    assert_string_equal(o.status.snapshot->phase, "InProgress");
    assert_null(o.status.last_pause->memory);
    assert_null(find_event(&o, "SnapshotTimeout"));
    assert_int_equal(o.requeue_after_ms, 1000);
    decide_output_clear(&o);

    w->now += SEC;
    w->view = ready_view;
    decide_settled(w, &o);
    assert_paused_with_snapshot(&o);
    decide_output_clear(&o);
    assert_resumes_from_snapshot(w);
}

/* Resumed while the controller was down: the new pod waits for the
 * backend's word on the snapshot, then is restored from it. */
static void crash_then_resume(struct world *w)
{
    crash_after_delete(w);
    w->has_pod = 0;
    w->ws->paused = 0;
    w->now += 60 * SEC;
    w->view = (struct snapshot_view){
        .attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_IN_PROGRESS, .unknown = 1};
    struct decide_output o;
    decide_settled(w, &o);
    assert_null(find_action(&o, ACTION_CREATE_POD));
    assert_int_equal(o.status.state, WS_STATE_RESUMING);
    assert_string_equal(cond_reason(&o.status, "Ready"), "Snapshotting");
    assert_int_equal(o.status.resumes, 1);
    assert_string_equal(event_occasion(&o, "Resuming"), "resume-1");
    assert_null(o.status.last_pause->memory);
    decide_output_clear(&o);

    w->now += SEC;
    w->view = ready_view;
    decide_settled(w, &o);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_string_equal(c->snapshot, "nb-p1-1-x7k2q");
    assert_null(find_event(&o, "SnapshotNotUsed"));
    assert_string_equal(o.status.snapshot->phase, "Ready");
    assert_string_equal(o.status.last_pause->memory, "snapshot");
    assert_int_equal(o.status.last_pause->snapshot_ready_ms, READY_AT);
    assert_string_equal(o.status.history[0].pause.memory, "snapshot");
    decide_output_clear(&o);
}

/* Killed after SnapshotBegin, before the status write: the pause is counted
 * again under the same number (its Event has the same occasion) and the same
 * attempt is begun again; the snapshot then goes its normal way. */
static void crash_after_begin(struct world *w)
{
    world_init(w, GKE);
    struct decide_output o;
    decide(w, &o, 0);
    assert_string_equal(find_action(&o, ACTION_SNAPSHOT_BEGIN)->name, "nb-p1-1");
    assert_string_equal(event_occasion(&o, "Pausing"), "pause-1");
    decide_output_clear(&o);
    w->now += 3 * SEC;
    w->has_view = 1;
    w->view = (struct snapshot_view){.attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_IN_PROGRESS};
    decide_settled(w, &o);
    assert_string_equal(find_action(&o, ACTION_SNAPSHOT_BEGIN)->name, "nb-p1-1");
    assert_string_equal(event_occasion(&o, "Pausing"), "pause-1");
    assert_int_equal(o.status.pauses, 1);
    assert_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);

    w->now = READY_AT + SEC;
    w->view = ready_view;
    decide_settled(w, &o);
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);
    w->has_pod = 0;
    w->now += 30 * SEC;
    decide_settled(w, &o);
    assert_paused_with_snapshot(&o);
    decide_output_clear(&o);
}

/* Killed right after SnapshotBegin; the controller comes back only after
 * GKE has stopped the pod at its checkpoint (phase Succeeded) and made the
 * PodSnapshot. The status holds no attempt: the backend's objects, found by
 * the handle the counters give and the trigger's pod, say what the pause
 * kept. Returns after the crash, the pod completed, the view not yet set. */
#define BEGUN_AT (T0 + 10 * MIN)
static void crash_after_begin_stopped(struct world *w)
{
    world_init(w, GKE);
    struct decide_output o;
    decide(w, &o, 0); /* SnapshotBegin; the status write is lost */
    assert_string_equal(find_action(&o, ACTION_SNAPSHOT_BEGIN)->name, "nb-p1-1");
    decide_output_clear(&o);
    w->pod.phase = "Succeeded";
    w->pod.ready = 0;
    w->has_next = 1;
}

static void assert_paused_after_lost_begin(struct world *w)
{
    struct decide_output o;
    w->pod.deletion_ms = w->now;
    w->pod.deletion_grace_known = 1;
    decide_settled(w, &o);
    assert_int_equal(o.status.state, WS_STATE_PAUSING);
    decide_output_clear(&o);
    w->has_pod = 0;
    w->now += 2 * SEC;
    /* the status holds the attempt now: the reconciler shows its view */
    w->has_view = 1;
    w->view = w->next;
    decide_settled(w, &o);
    assert_paused_with_snapshot(&o);
    assert_non_null(o.status.last_pause->pod_deleted_ms);
    assert_null(o.status.last_pause->unobserved);
    assert_int_equal(o.status.last_pause->requested_ms, BEGUN_AT);
    decide_output_clear(&o);
    assert_resumes_from_snapshot(w);
}

static void crash_begin_stopped_ready(struct world *w)
{
    crash_after_begin_stopped(w);
    w->now = READY_AT + 5 * SEC;
    w->next = ready_view;
    w->next.pod = "nb-1";
    w->next.requested_ms = BEGUN_AT;
    struct decide_output o;
    decide_settled(w, &o);
    /* The pause is counted again under the same number and its snapshot
     * recorded as the pass that died would have; the pod goes now. */
    assert_int_equal(o.status.pauses, 1);
    assert_string_equal(o.status.snapshot->attempt, "nb-p1-1");
    assert_string_equal(o.status.snapshot->phase, "Ready");
    assert_int_equal(o.status.snapshot->requested_ms, BEGUN_AT);
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    const struct action *del = find_action(&o, ACTION_DELETE_POD);
    assert_non_null(del);
    assert_int_equal(del->grace_seconds, 0);
    const struct action *ev = find_event(&o, "Pausing");
    assert_non_null(ev);
    assert_string_equal(ev->occasion, "pause-1");
    assert_null(strstr(ev->message, "already stopping"));
    assert_non_null(strstr(ev->message, "nb-p1-1"));
    assert_string_equal(event_occasion(&o, "SnapshotReady"), "nb-p1-1");
    decide_output_clear(&o);
    assert_paused_after_lost_begin(w);
}

static void crash_begin_stopped_in_progress(struct world *w)
{
    crash_after_begin_stopped(w);
    w->now = BEGUN_AT + 3 * SEC;
    w->next = (struct snapshot_view){.attempt = "nb-p1-1",
                                     .phase = SNAPSHOT_PHASE_IN_PROGRESS,
                                     .pod = "nb-1",
                                     .requested_ms = BEGUN_AT};
    struct decide_output o;
    decide_settled(w, &o);
    /* Completed by the snapshot: kept until it settles, never "stopped". */
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_null(find_event(&o, "PodStopped"));
    assert_int_equal(o.status.state, WS_STATE_PAUSING);
    assert_string_equal(o.status.snapshot->phase, "InProgress");
    assert_string_equal(cond_reason(&o.status, "Ready"), "Snapshotting");
    decide_output_clear(&o);
    w->now = READY_AT + SEC;
    w->next = ready_view;
    w->next.pod = "nb-1";
    w->next.requested_ms = BEGUN_AT;
    w->has_view = 1;
    w->view = w->next;
    decide_settled(w, &o);
    assert_string_equal(o.status.snapshot->phase, "Ready");
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);
    assert_paused_after_lost_begin(w);
}

/* The backend's caches have not synced: the completed pod is neither
 * deleted nor judged, and nothing is recorded as kept. */
static void crash_begin_stopped_syncing(struct world *w)
{
    crash_after_begin_stopped(w);
    w->now = BEGUN_AT + 3 * SEC;
    w->next = (struct snapshot_view){
        .attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_IN_PROGRESS, .unknown = 1};
    struct decide_output o;
    decide_settled(w, &o);
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_int_equal(o.status.state, WS_STATE_PAUSING);
    assert_null(o.status.last_pause->memory);
    assert_int_equal(o.requeue_after_ms, 1000);
    /* The Event says what is known: not "already stopping". */
    const struct action *ev = find_event(&o, "Pausing");
    assert_non_null(ev);
    assert_non_null(strstr(ev->message, "cannot say yet"));
    decide_output_clear(&o);
    w->now = READY_AT + SEC;
    w->next = ready_view;
    w->next.pod = "nb-1";
    w->next.requested_ms = BEGUN_AT;
    decide_settled(w, &o);
    assert_string_equal(o.status.snapshot->phase, "Ready");
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);
    assert_paused_after_lost_begin(w);
}

/* After SnapshotBegin the class changed (backend None) or went before a
 * controller was back: the snapshot the lost pass asked for is still found
 * by its name and recorded as kept; the resume then says why it is not
 * used (the class no longer takes snapshots; the class gone, then made
 * again: the template it was taken of is not known). */
static void crash_begin_class_changed(struct world *w, int gone)
{
    crash_after_begin_stopped(w);
    /* What the running pod held, as the status says (no class to ask). */
    assert_non_null(w->ws->status.accelerator_product = strdup("Tesla-T4"));
    workspace_class_free(w->cls);
    w->cls = gone ? NULL : class_from("");
    w->now = READY_AT + 5 * SEC;
    w->next = ready_view;
    w->next.pod = "nb-1";
    w->next.requested_ms = BEGUN_AT;
    struct decide_output o;
    decide_settled(w, &o);
    assert_string_equal(o.status.snapshot->attempt, "nb-p1-1");
    assert_string_equal(o.status.snapshot->phase, "Ready");
    assert_string_equal(o.status.snapshot->class_name, "gpu");
    if (gone)
        assert_null(o.status.snapshot->pod_spec_hash);
    else
        assert_non_null(o.status.snapshot->pod_spec_hash);
    const struct action *del = find_action(&o, ACTION_DELETE_POD);
    assert_non_null(del);
    assert_int_equal(del->grace_seconds, 0);
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    decide_output_clear(&o);
    w->has_pod = 0;
    w->now += 2 * SEC;
    w->has_view = 1;
    w->view = w->next;
    decide_settled(w, &o);
    assert_paused_with_snapshot(&o);
    const struct action *paused = find_event(&o, "Paused");
    assert_non_null(paused);
    assert_non_null(strstr(paused->message, "nb-p1-1-x7k2q"));
    decide_output_clear(&o);
    /* Paused, the snapshot is kept (the class may take it back). */
    w->all[0] = w->view;
    w->n_all = 1;
    if (gone)
        w->cls = class_from(GKE); /* made again, as it was */
    w->ws->paused = 0;
    w->now += 30 * MIN;
    decide(w, &o, 1);
    const struct action *nu = find_event(&o, "SnapshotNotUsed");
    assert_non_null(nu);
    print_message("    %s\n", nu->message);
    assert_non_null(strstr(nu->message, gone ? "the pod template snapshot nb-p1-1-x7k2q was taken "
                                               "of is not known"
                                             : "no longer has a snapshot backend"));
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_null(c->snapshot);
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "NotUsed");
    decide_output_clear(&o);
}

static void crash_begin_class_none(struct world *w)
{
    crash_begin_class_changed(w, 0);
}

static void crash_begin_class_gone(struct world *w)
{
    crash_begin_class_changed(w, 1);
}

/* After SnapshotBegin the class went, and no backend can say what it holds
 * (none could start): the pause waits for one no longer than a snapshot
 * of a class-less workspace may take, then goes on without memory. */
static void crash_begin_class_gone_unknown(struct world *w)
{
    crash_after_begin_stopped(w);
    workspace_class_free(w->cls);
    w->cls = NULL;
    w->now = BEGUN_AT + 3 * SEC;
    w->next = (struct snapshot_view){
        .attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_IN_PROGRESS, .unknown = 1};
    struct decide_output o;
    decide_settled(w, &o);
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_int_equal(o.status.state, WS_STATE_PAUSING);
    decide_output_clear(&o);
    w->now = BEGUN_AT + 16 * MIN;
    decide(w, &o, 1);
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    assert_null(o.status.snapshot->attempt);
    decide_output_clear(&o);
}

/* A trigger of another pod under the same handle is not this pause's. */
static void crash_begin_other_pod(struct world *w)
{
    crash_after_begin_stopped(w);
    w->now = READY_AT + 5 * SEC;
    w->next = ready_view;
    w->next.pod = "nb-7";
    struct decide_output o;
    decide_settled(w, &o);
    assert_null(o.status.snapshot->attempt);
    decide_output_clear(&o);
}

/* The retry's SnapshotBegin was lost: attempt 1 failed (recorded), attempt
 * 2 stopped the pod and is Ready. */
static void crash_retry_begin(struct world *w)
{
    world_init(w, GKE);
    struct decide_output o;
    decide(w, &o, 1); /* attempt 1 */
    decide_output_clear(&o);
    w->now += 20 * SEC;
    w->has_view = 1;
    w->view = (struct snapshot_view){
        .attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_FAILED, .message = "checkpoint failed"};
    decide(w, &o, 1); /* Failed, recorded; Retry waits retryAfter */
    assert_string_equal(o.status.snapshot->phase, "Failed");
    decide_output_clear(&o);
    w->now += 11 * MIN;
    decide(w, &o, 0); /* attempt 2 begins; the status write is lost */
    assert_string_equal(find_action(&o, ACTION_SNAPSHOT_BEGIN)->name, "nb-p1-2");
    decide_output_clear(&o);
    int64_t begun = w->now;
    w->now += 50 * SEC;
    w->pod.phase = "Succeeded";
    w->pod.ready = 0;
    w->has_next = 1;
    w->next = (struct snapshot_view){.attempt = "nb-p1-2",
                                     .phase = SNAPSHOT_PHASE_READY,
                                     .name = "nb-p1-2-abcde",
                                     .ready_ms = w->now - SEC,
                                     .pod = "nb-1",
                                     .requested_ms = begun};
    decide_settled(w, &o);
    assert_string_equal(o.status.snapshot->attempt, "nb-p1-2");
    assert_int_equal(o.status.snapshot->attempts, 2);
    assert_string_equal(o.status.snapshot->phase, "Ready");
    assert_non_null(find_action(&o, ACTION_DELETE_POD));
    decide_output_clear(&o);
    w->has_pod = 0;
    w->now += 2 * SEC;
    w->view = w->next;
    decide_settled(w, &o);
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    assert_string_equal(o.status.last_pause->memory, "snapshot");
    decide_output_clear(&o);
}

/* Killed after the resume's CreatePod, before the status write: the resume
 * is counted again under the same number, the pod is adopted (not created
 * twice), and it is judged as a restore. */
static void crash_after_create(struct world *w)
{
    paused_with_snapshot(w, GKE);
    struct decide_output o;
    decide(w, &o, 0);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_string_equal(c->name, "nb-2");
    assert_string_equal(event_occasion(&o, "Resuming"), "resume-1");
    decide_output_clear(&o);

    w->now += 4 * SEC;
    pod_up(w, "nb-2", "nb-p1-1-x7k2q", w->now + 60 * SEC);
    w->pod.ready = 0;
    w->pod.ready_ms = 0;
    decide_settled(w, &o);
    assert_null(find_action(&o, ACTION_CREATE_POD));
    assert_string_equal(event_occasion(&o, "Resuming"), "resume-1");
    assert_int_equal(o.status.resumes, 1);
    assert_string_equal(o.status.pod_name, "nb-2");
    assert_int_equal(o.status.pod_generation, 2);
    assert_int_equal(o.status.last_resume->pod_created_ms, w->pod.created_ms);
    assert_string_equal(cond_reason(&o.status, "Restored"), "Restoring");
    decide_output_clear(&o);

    w->now += 20 * SEC;
    w->pod.ready = 1;
    w->pod.ready_ms = w->now - SEC;
    w->pod.restored = 1;
    decide_settled(w, &o);
    assert_string_equal(cond_reason(&o.status, "Restored"), "FromSnapshot");
    assert_string_equal(o.status.last_resume->restored_from, "FromSnapshot");
    assert_string_equal(event_occasion(&o, "Resumed"), "resume-1");
    assert_string_equal(o.status.history[0].pause.memory, "snapshot");
    decide_output_clear(&o);
}

static void test_crash_points(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        void (*run)(struct world *w);
    } rows[] = {
        {"after DeletePod, the pod still terminating", crash_pod_terminating},
        {"after DeletePod, the pod gone", crash_pod_gone},
        {"after DeletePod, the pod gone as this process saw", crash_pod_gone_seen},
        {"after DeletePod, the backend's caches still syncing", crash_backend_syncing},
        {"after DeletePod, resumed while the controller was down", crash_then_resume},
        {"after SnapshotBegin", crash_after_begin},
        {"after SnapshotBegin, back once the snapshot stopped the pod and is Ready",
         crash_begin_stopped_ready},
        {"after SnapshotBegin, back while the stopped pod's snapshot is in progress",
         crash_begin_stopped_in_progress},
        {"after SnapshotBegin, back while the backend's caches sync", crash_begin_stopped_syncing},
        {"after SnapshotBegin, a trigger of that name for another pod", crash_begin_other_pod},
        {"after SnapshotBegin, then the class set to backend None", crash_begin_class_none},
        {"after SnapshotBegin, then the class deleted (made again later)", crash_begin_class_gone},
        {"after SnapshotBegin, then the class deleted, no backend can say",
         crash_begin_class_gone_unknown},
        {"after a retry's SnapshotBegin", crash_retry_begin},
        {"after the resume's CreatePod", crash_after_create},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        print_message("crash %s\n", rows[i].name);
        struct world w;
        rows[i].run(&w);
        world_free(&w);
    }
}

/* A class whose backend is switched to None while a workspace is paused
 * with a Ready snapshot: the resume says the snapshot is not used and why
 * (naming the class change), SnapshotReady follows (False/NotUsed), and
 * the snapshot, kept while the pause was open (the class might take its
 * backend back), is deleted once the resume began. */
static void test_class_backend_removed(void **state)
{
    (void)state;
    struct world w;
    paused_with_snapshot(&w, GKE);
    w.all[0] = w.view;
    w.n_all = 1;
    /* Still paused: the snapshot stays. */
    workspace_class_free(w.cls);
    w.cls = class_from("");
    w.ws->paused = 1;
    struct decide_output o;
    decide_settled(&w, &o);
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    assert_null(find_action(&o, ACTION_SNAPSHOT_DELETE));
    decide_output_clear(&o);
    /* The resume. */
    w.ws->paused = 0;
    decide(&w, &o, 1);
    const struct action *resuming = find_event(&o, "Resuming");
    assert_non_null(resuming);
    assert_non_null(strstr(resuming->message, "no longer has a snapshot backend"));
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_null(c->snapshot);
    const struct action *nu = find_event(&o, "SnapshotNotUsed");
    assert_non_null(nu);
    assert_non_null(strstr(nu->message, "class gpu no longer has a snapshot backend"));
    assert_string_equal(cond_reason(&o.status, "Restored"), "FromCheckpoint");
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "NotUsed");
    const struct action *del = find_action(&o, ACTION_SNAPSHOT_DELETE);
    assert_non_null(del);
    assert_string_equal(del->name, "nb-p1-1-x7k2q");
    decide_output_clear(&o);
    world_free(&w);
}

/* A resume on a home known to be lost does not promise the snapshot. */
/* The workspace's spec.className changed while it was paused with a
 * snapshot: the snapshot recorded the class it was taken under, and the
 * resume names both when the new class cannot restore it. */
static void test_workspace_class_changed(void **state)
{
    (void)state;
    struct world w;
    paused_with_snapshot(&w, GKE);
    assert_string_equal(w.ws->status.snapshot->class_name, "gpu");
    free(w.ws->class_name);
    assert_non_null(w.ws->class_name = strdup("cpu"));
    workspace_class_free(w.cls);
    w.cls = class_from(""); /* class cpu: no snapshot backend */
    w.ws->paused = 0;
    struct decide_output o;
    decide(&w, &o, 1);
    const struct action *nu = find_event(&o, "SnapshotNotUsed");
    assert_non_null(nu);
    assert_non_null(strstr(nu->message, "class changed from gpu to cpu"));
    assert_non_null(strstr(nu->message, "class cpu has no snapshot backend"));
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_null(c->snapshot);
    assert_string_equal(cond_reason(&o.status, "Restored"), "FromCheckpoint");
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "NotUsed");
    decide_output_clear(&o);
    world_free(&w);
}

static void test_resuming_on_lost_home(void **state)
{
    (void)state;
    struct world w;
    paused_with_snapshot(&w, GKE);
    struct workspace_status *st = &w.ws->status;
    st->home->lost_ms = w.now - MIN;
    free(st->home->lost_claim_uid);
    st->home->lost_claim_uid = strdup("pvc-old");
    free(st->home->claim_uid);
    st->home->claim_uid = NULL;
    struct decide_output o;
    decide(&w, &o, 0);
    const struct action *resuming = find_event(&o, "Resuming");
    assert_non_null(resuming);
    assert_null(strstr(resuming->message, "restored from snapshot"));
    assert_non_null(strstr(resuming->message, "new, empty home"));
    decide_output_clear(&o);
    world_free(&w);
}

/* The class changes (backend None) or goes while its pause's snapshot is
 * being taken: the pod is still kept until that snapshot is settled, never
 * deleted before it is Ready, and the pause records what it kept. */
static void test_class_changed_mid_pause(void **state)
{
    (void)state;
    for (int gone = 0; gone <= 1; gone++) {
        print_message("  the class %s while the snapshot is taken\n",
                      gone ? "is deleted" : "says backend: None");
        struct world w;
        world_init(&w, GKE);
        struct decide_output o;
        decide(&w, &o, 1); /* SnapshotBegin */
        assert_non_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
        decide_output_clear(&o);
        workspace_class_free(w.cls);
        w.cls = gone ? NULL : class_from("");
        w.now += 20 * SEC;
        w.has_view = 1;
        w.view = (struct snapshot_view){.attempt = "nb-p1-1", .phase = SNAPSHOT_PHASE_IN_PROGRESS};
        decide_settled(&w, &o);
        assert_null(find_action(&o, ACTION_DELETE_POD));
        assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
        assert_int_equal(o.status.state, WS_STATE_PAUSING);
        decide_output_clear(&o);
        /* GKE stops the pod at its checkpoint: still kept. */
        w.pod.phase = "Succeeded";
        w.pod.ready = 0;
        w.now += 5 * SEC;
        decide_settled(&w, &o);
        assert_null(find_action(&o, ACTION_DELETE_POD));
        decide_output_clear(&o);
        w.now = READY_AT + SEC;
        w.view = ready_view;
        decide_settled(&w, &o);
        const struct action *del = find_action(&o, ACTION_DELETE_POD);
        assert_non_null(del);
        assert_int_equal(del->grace_seconds, 0);
        assert_string_equal(o.status.snapshot->phase, "Ready");
        decide_output_clear(&o);
        w.has_pod = 0;
        w.now += 2 * SEC;
        decide_settled(&w, &o);
        assert_int_equal(o.status.state, WS_STATE_PAUSED);
        assert_string_equal(o.status.last_pause->memory, "snapshot");
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* A snapshot is laid only over the home claim it was taken with: after a
 * lost home, the first pod starts FreshHome and says why the snapshot is
 * not used; a snapshot whose claim is not the current one is not used
 * either. */
static void test_snapshot_home_claim(void **state)
{
    (void)state;
    struct world w;
    /* The claim is recorded with the snapshot. */
    world_init(&w, GKE);
    w.pvc.uid = "pvc-1";
    struct decide_output o;
    decide(&w, &o, 1);
    assert_string_equal(o.status.home->claim_uid, "pvc-1");
    decide_output_clear(&o);
    decide(&w, &o, 1); /* SnapshotBegin */
    assert_string_equal(o.status.snapshot->home_claim_uid, "pvc-1");
    decide_output_clear(&o);
    w.now += 30 * SEC;
    w.has_view = 1;
    w.view = (struct snapshot_view){.attempt = "nb-p1-1",
                                    .phase = SNAPSHOT_PHASE_READY,
                                    .name = "nb-p1-1-x7k2q",
                                    .ready_ms = w.now};
    decide(&w, &o, 1);
    decide_output_clear(&o);
    w.has_pod = 0;
    w.now += 5 * SEC;
    decide(&w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_PAUSED);
    assert_string_equal(o.status.snapshot->phase, "Ready");
    decide_output_clear(&o);

    /* The claim is replaced while paused, and the loss acknowledged. */
    w.pvc.uid = "pvc-2";
    w.now += MIN;
    decide(&w, &o, 1);
    assert_non_null(find_event(&o, "HomeLost"));
    assert_string_equal(o.status.home->claim_uid, "pvc-2");
    decide_output_clear(&o);
    w.ws->acknowledged_home_loss = strdup("pvc-1");
    w.ws->paused = 0;
    w.now += MIN;
    decide(&w, &o, 1);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_null(c->snapshot);
    assert_false(c->from_checkpoint);
    assert_string_equal(cond_reason(&o.status, "Restored"), "FreshHome");
    const struct action *e = find_event(&o, "SnapshotNotUsed");
    assert_non_null(e);
    assert_non_null(strstr(e->message, "pvc-1"));
    /* The snapshot's condition says the same as the Event: not used, and
     * why, not a Ready snapshot a FreshHome start never restored. */
    const struct condition *sr = workspace_status_condition(&o.status, "SnapshotReady");
    assert_non_null(sr);
    assert_int_equal(sr->status, COND_FALSE);
    assert_string_equal(sr->reason, "NotUsed");
    assert_non_null(strstr(sr->message, "pvc-1"));
    decide_output_clear(&o);
    world_free(&w);
}

static void test_fallback_walk(void **state)
{
    (void)state;
    struct world w;
    walk_to_paused_on_l4(&w);
    struct decide_output o;
    decide(&w, &o, 1);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_string_equal(c->name, "nb-3");
    assert_string_equal(c->snapshot, "nb-p2-1-l4snp");
    assert_string_equal(c->product, "NVIDIA-L4");
    assert_false(c->capacity_fallback);
    assert_string_equal(o.status.accelerator_product, "NVIDIA-L4");
    assert_false(o.status.accelerator_fallback);
    assert_string_equal(cond_reason(&o.status, "Restored"), "Restoring");
    decide_output_clear(&o);

    /* Scheduled, not yet known to the node cache: the pin says L4. */
    w.now += 10 * SEC;
    pod_up(&w, "nb-3", "nb-p2-1-l4snp", w.now - SEC);
    w.pod.ready = 0;
    w.pod.ready_ms = 0;
    w.n_nodes = 0;
    decide(&w, &o, 1);
    assert_string_equal(o.status.accelerator_product, "NVIDIA-L4");
    decide_output_clear(&o);

    w.now += 5 * SEC;
    pod_up(&w, "nb-3", "nb-p2-1-l4snp", w.now - SEC);
    w.pod.restored = 1;
    w.n_nodes = 1;
    decide(&w, &o, 1);
    assert_int_equal(o.status.state, WS_STATE_RUNNING);
    assert_string_equal(cond_reason(&o.status, "Restored"), "FromSnapshot");
    assert_string_equal(o.status.last_resume->restored_from, "FromSnapshot");
    assert_string_equal(o.status.accelerator_product, "NVIDIA-L4");
    decide_output_clear(&o);
    world_free(&w);
}

/* The class no longer allows the snapshot's product: files, and why. */
static void test_snapshot_product_no_longer_allowed(void **state)
{
    (void)state;
    struct world w;
    walk_to_paused_on_l4(&w);
    drop_alternatives(w.cls);
    struct decide_output o;
    decide(&w, &o, 1);
    const struct action *c = find_action(&o, ACTION_CREATE_POD);
    assert_non_null(c);
    assert_null(c->snapshot);
    assert_null(c->product); /* the class's product */
    assert_string_equal(o.status.accelerator_product, "Tesla-T4");
    const struct condition *r = workspace_status_condition(&o.status, "Restored");
    assert_string_equal(r->reason, "FromCheckpoint");
    assert_non_null(strstr(r->message, "was taken on NVIDIA-L4, the class now asks for Tesla-T4"));
    assert_non_null(find_event(&o, "SnapshotNotUsed"));
    decide_output_clear(&o);
    world_free(&w);
}

/* A snapshot recorded with the hash that covered the product still matches
 * the pod template; one whose hash matches neither form does not. */
static void test_snapshot_hash_with_product(void **state)
{
    (void)state;
    for (int legacy_ok = 0; legacy_ok <= 1; legacy_ok++) {
        struct world w;
        paused_with_snapshot(&w, GKE);
        struct workspace_snapshot *sn = w.ws->status.snapshot;
        char hash[POD_SPEC_HASH_SIZE];
        assert_int_equal(workspace_pod_spec_hash_with_product(
                             w.ws, w.cls, legacy_ok ? "Tesla-T4" : "NVIDIA-L4", hash),
                         0);
        free(sn->pod_spec_hash);
        sn->pod_spec_hash = strdup(hash);
        struct decide_output o;
        decide(&w, &o, 1);
        const struct action *c = find_action(&o, ACTION_CREATE_POD);
        assert_non_null(c);
        if (legacy_ok) {
            assert_string_equal(c->snapshot, "nb-p1-1-x7k2q");
        } else {
            assert_null(c->snapshot);
            assert_non_null(strstr(workspace_status_condition(&o.status, "Restored")->message,
                                   "pod template changed"));
        }
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* ---- retention ---- */

static int deletes(const struct decide_output *o, const char *name)
{
    int n = 0;
    for (size_t i = 0; i < o->n_actions; i++)
        n += o->actions[i].type == ACTION_SNAPSHOT_DELETE && strcmp(o->actions[i].name, name) == 0;
    return n;
}

static size_t n_deletes(const struct decide_output *o)
{
    size_t n = 0;
    for (size_t i = 0; i < o->n_actions; i++)
        n += o->actions[i].type == ACTION_SNAPSHOT_DELETE;
    return n;
}

static void retention_of(const char *snapshot);

static void test_retention(void **state)
{
    (void)state;
    retention_of(GKE);
    retention_of(CC_APP); /* the same rules; its deletes remove images (the node agent) */
}

/* What a class's retention deletes, from the views its backend lists. */
static void retention_of(const char *snapshot)
{
    print_message("  %s\n", strstr(snapshot, "GKE") ? "GKE" : "ContainerCheckpoint");
    struct world w;
    paused_with_snapshot(&w, snapshot); /* keep: 2 */
    int64_t ready = w.ws->status.snapshot->ready_ms;
    w.all[0] = w.view; /* the pause's, newest */
    w.all[1] = (struct snapshot_view){.attempt = "nb-p0-1",
                                      .phase = SNAPSHOT_PHASE_READY,
                                      .name = "older",
                                      .ready_ms = ready - 60 * MIN};
    w.all[2] = (struct snapshot_view){.attempt = "nb-pm-1",
                                      .phase = SNAPSHOT_PHASE_READY,
                                      .name = "oldest",
                                      .ready_ms = ready - 120 * MIN};
    w.all[3] = (struct snapshot_view){
        .attempt = "nb-px-1", .phase = SNAPSHOT_PHASE_FAILED, .name = "failed", .ready_ms = 0};
    w.n_all = 4;
    struct decide_output o;

    /* While resuming, the pause's snapshot stays; beyond keep and failed go. */
    decide(&w, &o, 1);
    assert_int_equal(deletes(&o, "oldest"), 1);
    assert_int_equal(deletes(&o, "failed"), 1);
    assert_int_equal(deletes(&o, "older"), 0);
    assert_int_equal(deletes(&o, "nb-p1-1-x7k2q"), 0);
    decide_output_clear(&o);

    /* Expired ones go too, the one in use excepted. */
    w.n_all = 2;
    w.all[1].ready_ms = w.now - 8 * 24 * 60 * MIN;
    decide(&w, &o, 1);
    assert_int_equal(deletes(&o, "older"), 1);
    assert_int_equal(deletes(&o, "nb-p1-1-x7k2q"), 0);
    decide_output_clear(&o);

    /* Stuck in the backend's finalizer for over 5 minutes: said, once. */
    w.all[1] = (struct snapshot_view){.attempt = "nb-p0-1",
                                      .phase = SNAPSHOT_PHASE_READY,
                                      .name = "older",
                                      .deleting_ms = w.now - 6 * MIN};
    decide(&w, &o, 1);
    assert_int_equal(n_deletes(&o), 0);
    const struct condition *c = workspace_status_condition(&o.status, "SnapshotCleanup");
    assert_non_null(c);
    assert_string_equal(c->reason, "FinalizerStuck");
    assert_non_null(strstr(c->message, "older"));
    assert_non_null(find_event(&o, "SnapshotStuck"));
    decide_output_clear(&o);
    w.now += SEC;
    decide(&w, &o, 1);
    assert_null(find_event(&o, "SnapshotStuck"));
    decide_output_clear(&o);
    world_free(&w);
}

/* The latest pause's Ready snapshot is never counted out by the class's
 * keep, even when the status does not name it (a controller died after
 * the trigger, before its status write): newer snapshots of the name do
 * not push it out, and it is the one a resume is for. */
static void test_retention_keeps_latest_pause(void **state)
{
    (void)state;
    struct world w;
    paused_with_snapshot(&w, GKE); /* keep: 2 */
    w.ws->paused = 1;
    struct workspace_snapshot *sn = w.ws->status.snapshot;
    free(sn->attempt);
    sn->attempt = strdup("nb-p0-1"); /* the status names an older attempt */
    assert_non_null(sn->attempt);
    int64_t ready = w.view.ready_ms;
    w.all[0] = w.view; /* nb-p1-1: the latest pause's, and the oldest Ready */
    w.all[1] = (struct snapshot_view){.attempt = "nb-p0-2",
                                      .phase = SNAPSHOT_PHASE_READY,
                                      .name = "newer",
                                      .ready_ms = ready + MIN};
    w.all[2] = (struct snapshot_view){.attempt = "nb-p0-3",
                                      .phase = SNAPSHOT_PHASE_READY,
                                      .name = "newest",
                                      .ready_ms = ready + 2 * MIN};
    w.n_all = 3;
    struct decide_output o;
    decide(&w, &o, 1);
    assert_int_equal(deletes(&o, "nb-p1-1-x7k2q"), 0);
    decide_output_clear(&o);

    /* Another workspace's snapshot of the same rank is counted out. */
    w.all[0].attempt = "nb-p0-9";
    decide(&w, &o, 1);
    assert_int_equal(deletes(&o, "nb-p1-1-x7k2q"), 1);
    decide_output_clear(&o);
    world_free(&w);
}

/* The class's storage config changed while snapshots were kept under the
 * old one: the next pause deletes them (the backend frees their files
 * through the storage its policy names, which the pause's snapshot brings
 * to the new one) and takes its snapshot once they are gone; the pod keeps
 * running meanwhile. Held up past the snapshot timeout, it goes ahead and
 * says which may be left behind. */
static void test_storage_changed(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE); /* storageConfigName "s", timeout 10m */
    w.storage = "old";
    w.all[0] = (struct snapshot_view){
        .attempt = "nb-p0-1", .phase = SNAPSHOT_PHASE_READY, .name = "older", .ready_ms = T0};
    w.all[1] = (struct snapshot_view){
        .attempt = "nb-pm-1", .phase = SNAPSHOT_PHASE_FAILED, .name = "failed"};
    w.n_all = 2;
    int64_t asked = w.now;
    struct decide_output o;

    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_null(find_action(&o, ACTION_DELETE_POD));
    assert_int_equal(deletes(&o, "older"), 1);
    assert_int_equal(deletes(&o, "failed"), 1);
    assert_int_equal(o.status.state, WS_STATE_PAUSING);
    const struct condition *c = workspace_status_condition(&o.status, "SnapshotReady");
    assert_non_null(c);
    assert_string_equal(c->reason, "StorageChanging");
    assert_non_null(strstr(c->message, "from \"old\" to \"s\""));
    assert_non_null(strstr(c->message, "older, failed"));
    assert_int_equal(o.requeue_after_ms, 5 * SEC);
    assert_null(o.status.snapshot->attempt);
    decide_output_clear(&o);

    /* In the backend's finalizer: not asked again, still waiting. */
    w.now += 5 * SEC;
    w.all[0].deleting_ms = w.now - SEC;
    w.all[1].deleting_ms = w.now - SEC;
    decide(&w, &o, 1);
    assert_int_equal(n_deletes(&o), 0);
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "StorageChanging");
    decide_output_clear(&o);

    /* Gone (the policy still names the old storage): the snapshot begins,
     * and its begin brings the policy to the new one. */
    w.now += 20 * SEC;
    w.n_all = 0;
    decide(&w, &o, 1);
    const struct action *b = find_action(&o, ACTION_SNAPSHOT_BEGIN);
    assert_non_null(b);
    assert_string_equal(b->name, "nb-p1-1");
    assert_string_equal(cond_reason(&o.status, "SnapshotReady"), "InProgress");
    assert_null(find_event(&o, "SnapshotStorageChanged"));
    decide_output_clear(&o);
    world_free(&w);

    /* Stuck past the snapshot timeout: taken all the same, said once. */
    world_init(&w, GKE);
    w.storage = "old";
    w.all[0] = (struct snapshot_view){.attempt = "nb-p0-1",
                                      .phase = SNAPSHOT_PHASE_READY,
                                      .name = "older",
                                      .ready_ms = T0,
                                      .deleting_ms = w.now};
    w.n_all = 1;
    asked = w.now;
    decide(&w, &o, 1);
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    decide_output_clear(&o);
    w.now = asked + 10 * MIN;
    decide(&w, &o, 1);
    assert_non_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    const struct action *e = find_event(&o, "SnapshotStorageChanged");
    assert_non_null(e);
    assert_string_equal(e->event_type, "Warning");
    assert_non_null(strstr(e->message, "older"));
    assert_non_null(strstr(e->message, "may be left in the old storage"));
    decide_output_clear(&o);
    w.now += SEC;
    decide(&w, &o, 1);
    assert_null(find_event(&o, "SnapshotStorageChanged"));
    assert_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
    decide_output_clear(&o);
    world_free(&w);

    /* The same storage, or no policy yet: the snapshot begins at once and
     * keep decides about the older ones. */
    const char *same[] = {"s", NULL};
    for (size_t i = 0; i < 2; i++) {
        world_init(&w, GKE);
        w.storage = same[i];
        w.all[0] = (struct snapshot_view){
            .attempt = "nb-p0-1", .phase = SNAPSHOT_PHASE_READY, .name = "older", .ready_ms = T0};
        w.n_all = 1;
        decide(&w, &o, 1);
        assert_non_null(find_action(&o, ACTION_SNAPSHOT_BEGIN));
        assert_int_equal(deletes(&o, "older"), 0);
        decide_output_clear(&o);
        world_free(&w);
    }
}

/* Deleting the workspace deletes every snapshot and does not wait for them. */
static void test_delete_with_workspace(void **state)
{
    (void)state;
    struct world w;
    paused_with_snapshot(&w, GKE);
    w.ws->paused = 1;
    w.ws->deletion_ms = w.now;
    w.all[0] = w.view;
    w.all[1] = (struct snapshot_view){.attempt = "nb-p0-1",
                                      .phase = SNAPSHOT_PHASE_READY,
                                      .name = "older",
                                      .deleting_ms = w.now - 10 * MIN};
    w.n_all = 2;
    struct decide_output o;
    decide(&w, &o, 0);
    assert_int_equal(deletes(&o, "nb-p1-1-x7k2q"), 1);
    assert_int_equal(deletes(&o, "older"), 0); /* already going */
    assert_non_null(find_action(&o, ACTION_REMOVE_FINALIZER));
    decide_output_clear(&o);
    world_free(&w);
}

/* More snapshots than one pass deletes: the finalizer stays until each
 * one's deletion has been asked for, or the rest would be found by nobody. */
static void test_delete_many_with_workspace(void **state)
{
    (void)state;
    static const char *const names[] = {"s1", "s2", "s3", "s4", "s5", "s6"};
    struct world w;
    paused_with_snapshot(&w, GKE);
    w.ws->paused = 1;
    w.ws->deletion_ms = w.now;
    for (size_t i = 0; i < 6; i++)
        w.all[i] = (struct snapshot_view){.attempt = names[i],
                                          .phase = SNAPSHOT_PHASE_READY,
                                          .name = names[i],
                                          .ready_ms = w.now - (int64_t)(i + 1) * MIN};
    w.n_all = 6;
    struct decide_output o;
    decide(&w, &o, 0);
    assert_int_equal(n_deletes(&o), 4);
    assert_null(find_action(&o, ACTION_REMOVE_FINALIZER));
    assert_null(find_action(&o, ACTION_DELETE_PVC));
    assert_true(o.requeue_after_ms > 0);
    /* The next pass: those four are being deleted (GKE's finalizer holds
     * them); the last two go and so may the workspace. */
    for (size_t i = 0; i < o.n_actions; i++)
        for (size_t k = 0; k < 6; k++)
            if (o.actions[i].type == ACTION_SNAPSHOT_DELETE &&
                strcmp(o.actions[i].name, names[k]) == 0)
                w.all[k].deleting_ms = w.now;
    decide_output_clear(&o);
    w.now += SEC;
    decide(&w, &o, 0);
    assert_int_equal(n_deletes(&o), 2);
    assert_non_null(find_action(&o, ACTION_REMOVE_FINALIZER));
    decide_output_clear(&o);
    world_free(&w);
}

/* What becomes of a GKE trigger, from what the caches say of it and its
 * PodSnapshot: it goes after its PodSnapshot, never before. */
static void test_trigger_fate(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        struct gke_trigger_facts facts;
        enum gke_trigger_fate want;
    } cases[] = {
        {"its PodSnapshot was just deleted",
         {.snapshot_deleted = 1, .served = 1},
         GKE_TRIGGER_DELETE},
        {"deleted before the trigger named it", {.snapshot_deleted = 1}, GKE_TRIGGER_DELETE},
        {"its PodSnapshot is cached", {.snapshot_cached = 1, .served = 1}, GKE_TRIGGER_KEEP},
        {"its PodSnapshot is cached, not named yet", {.snapshot_cached = 1}, GKE_TRIGGER_KEEP},
        {"its PodSnapshot is still in GKE's finalizer while the workspace is deleted",
         {.snapshot_cached = 1, .served = 1, .workspace_deleting = 1},
         GKE_TRIGGER_KEEP},
        {"it names a PodSnapshot the cache lacks: ask", {.served = 1}, GKE_TRIGGER_CHECK},
        {"the same while the workspace is deleted: ask, the cache may be behind",
         {.served = 1, .workspace_deleting = 1},
         GKE_TRIGGER_CHECK},
        {"not served yet (or failed): GKE may still serve it, decide() reads it",
         {},
         GKE_TRIGGER_KEEP},
        {"never served, the workspace is deleted", {.workspace_deleting = 1}, GKE_TRIGGER_DELETE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        print_message("  %s\n", cases[i].name);
        assert_string_equal(gke_trigger_fate_name(gke_trigger_fate(&cases[i].facts)),
                            gke_trigger_fate_name(cases[i].want));
    }
}

/* The policy goes only after every PodSnapshot that names it, and only with
 * its workspace. */
static void test_policy_fate(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        struct gke_policy_facts facts;
        enum gke_policy_fate want;
    } cases[] = {
        {"the workspace lives", {0}, GKE_POLICY_KEEP},
        {"the workspace lives, snapshots", {.snapshots_left = 2}, GKE_POLICY_KEEP},
        {"deleted, a PodSnapshot still in GKE's finalizer",
         {.workspace_deleting = 1, .snapshots_left = 1},
         GKE_POLICY_KEEP},
        {"deleted, a trigger left (it could still make a PodSnapshot)",
         {.workspace_deleting = 1, .triggers_left = 1},
         GKE_POLICY_KEEP},
        {"deleted, nothing names it", {.workspace_deleting = 1}, GKE_POLICY_DELETE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        print_message("  %s\n", cases[i].name);
        assert_int_equal(gke_policy_fate(&cases[i].facts), cases[i].want);
    }
}

/* The begin bodies: the policy groups snapshots by the pod label, selects
 * only pods that carry it, has no owner reference and has the controller's
 * finalizer; a pod without the
 * label is labelled first. */
static void test_begin_bodies(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, GKE);
    cJSON *bodies = gke_snapshot_begin_bodies(w.ws, w.cls, "nb-p1-1", "nb-1", "u1-1");
    assert_non_null(bodies);
    char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(bodies, "policy"));
    assert_non_null(strstr(text, "\"snapshotGroupingRules\":{\"groupByLabelValue\":{\"labels\":"
                                 "[\"hibernator.dev/snapshot-group\"]}}"));
    assert_non_null(strstr(text, "{\"key\":\"hibernator.dev/snapshot-group\","
                                 "\"operator\":\"Exists\"}"));
    assert_null(strstr(text, "ownerReferences"));
    /* It outlives its PodSnapshots whoever deletes it. */
    assert_non_null(strstr(text, "\"finalizers\":[\"hibernator.dev/podsnapshots\"]"));
    free(text);
    text = cJSON_PrintUnformatted(cJSON_GetObjectItem(bodies, "trigger"));
    assert_non_null(strstr(text, "ownerReferences")); /* triggers stay owned */
    free(text);
    assert_null(cJSON_GetObjectItem(bodies, "keepPolicy"));
    cJSON_Delete(bodies);
    /* A source pod of an earlier version: the policy as that version made
     * it (no owner reference), an existing one left as it is. */
    bodies = gke_snapshot_begin_bodies(w.ws, w.cls, "nb-p1-1", "nb-1", NULL);
    text = cJSON_PrintUnformatted(cJSON_GetObjectItem(bodies, "policy"));
    assert_null(strstr(text, "snapshotGroupingRules"));
    assert_null(strstr(text, "matchExpressions"));
    assert_null(strstr(text, "ownerReferences"));
    free(text);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(bodies, "keepPolicy")));
    cJSON_Delete(bodies);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_backend_deletes_at_once),
        cmocka_unit_test(test_ready_then_delete),
        cmocka_unit_test(test_kueue_eviction_pauses_with_snapshot),
        cmocka_unit_test(test_kueue_eviction_without_hold),
        cmocka_unit_test(test_crash_repeats_the_same_attempt),
        cmocka_unit_test(test_failure_retry),
        cmocka_unit_test(test_failure_retry_after_restart),
        cmocka_unit_test(test_foreign_snapshot),
        cmocka_unit_test(test_backend_checkpoint_retries),
        cmocka_unit_test(test_restore_failed_condition),
        cmocka_unit_test(test_timeout_pause_without_memory),
        cmocka_unit_test(test_pod_not_ready_is_not_snapshotted),
        cmocka_unit_test(test_resume_during_snapshot),
        cmocka_unit_test(test_app_checkpoint_then_snapshot),
        cmocka_unit_test(test_app_checkpoint_status_lost),
        cmocka_unit_test(test_app_checkpoint_cancelled_by_unpause),
        cmocka_unit_test(test_unpaused_snapshot_followed),
        cmocka_unit_test(test_app_exit_before_snapshot),
        cmocka_unit_test(test_app_checkpoint_failures),
        cmocka_unit_test(test_app_checkpoint_on_retry),
        cmocka_unit_test(test_pod_completed_by_snapshot),
        cmocka_unit_test(test_resumed_pod_completed_by_snapshot),
        cmocka_unit_test(test_resume_from_snapshot),
        cmocka_unit_test(test_long_name),
        cmocka_unit_test(test_cold_start),
        cmocka_unit_test(test_available_waits_for_verdict),
        cmocka_unit_test(test_restore_crash_loop),
        cmocka_unit_test(test_restore_check),
        cmocka_unit_test(test_container_checkpoint),
        cmocka_unit_test(test_restore_unresponsive_walk),
        cmocka_unit_test(test_restore_crash_loop_without_group),
        cmocka_unit_test(test_snapshot_groups),
        cmocka_unit_test(test_unwanted_restore),
        cmocka_unit_test(test_unwanted_restore_of_an_older_pod),
        cmocka_unit_test(test_crash_loop_without_restore),
        cmocka_unit_test(test_snapshot_not_used),
        cmocka_unit_test(test_retention_from_last_access),
        cmocka_unit_test(test_restore_compatibility),
        cmocka_unit_test(test_snapshot_home_claim),
        cmocka_unit_test(test_crash_points),
        cmocka_unit_test(test_class_backend_removed),
        cmocka_unit_test(test_workspace_class_changed),
        cmocka_unit_test(test_class_changed_mid_pause),
        cmocka_unit_test(test_resuming_on_lost_home),
        cmocka_unit_test(test_fallback_walk),
        cmocka_unit_test(test_snapshot_product_no_longer_allowed),
        cmocka_unit_test(test_snapshot_hash_with_product),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_retention_keeps_latest_pause),
        cmocka_unit_test(test_storage_changed),
        cmocka_unit_test(test_delete_with_workspace),
        cmocka_unit_test(test_delete_many_with_workspace),
        cmocka_unit_test(test_trigger_fate),
        cmocka_unit_test(test_policy_fate),
        cmocka_unit_test(test_begin_bodies),
    };
    return cmocka_run_group_tests_name("pause and resume with a snapshot", tests, NULL, NULL);
}
