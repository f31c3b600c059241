/*
 * The Workspace lifecycle end to end, on the local cluster with the real
 * scheduler and kwok GPU nodes, with the controller running under the
 * ServiceAccount and RBAC from deploy/ (so the RBAC is proven sufficient):
 * create → Running on a GPU node → pause → GPU free for another workspace →
 * resume from checkpoint; waiting for capacity with exactly one pod, and
 * the GPU-hours ledger of a pause whose GPU went to the waiting workspace;
 * the capacity timeout; invalid workspaces; and crashes at each step.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "util/timefmt.h"
#include "workspaces.h"

/* ---- the GPU-hours ledger -------------------------------------------------- */

/* A time at a dotted path, in Unix ms; fails the test when absent. */
static int64_t time_at(const cJSON *o, const char *path)
{
    const char *s = str_at(o, path);
    int64_t ms = 0;
    if (!s || timefmt_parse_rfc3339(s, &ms) < 0)
        fail_msg("%s: not a time (%s)", path, s ? s : "absent");
    return ms;
}

static const cJSON *history(const cJSON *ws)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "status"),
                                            "history");
}

/* Waits until the workspace's last pause says who took its accelerator. */
static cJSON *wait_taken(const char *name, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    for (;;) {
        cJSON *ws = ws_json(name);
        if (ws && str_at(ws, "status.lastPause.acceleratorTakenBy"))
            return ws;
        cJSON_Delete(ws);
        if (harness_now_ms() >= end)
            fail_msg("%s: no acceleratorTakenBy after %llu ms", name,
                     (unsigned long long)timeout_ms);
        usleep(300 * 1000);
    }
}

/* The ledger of a user's pause whose GPU went to taker. */
static void check_pause_ledger(const cJSON *ws, const char *node, const char *taker)
{
    int64_t held = time_at(ws, "status.lastPause.heldSince");
    int64_t work = time_at(ws, "status.lastPause.workEndedAt");
    int64_t asked = time_at(ws, "status.lastPause.requestedAt");
    int64_t deleted = time_at(ws, "status.lastPause.podDeletedAt");
    int64_t released = time_at(ws, "status.lastPause.acceleratorReleasedAt");
    int64_t taken = time_at(ws, "status.lastPause.acceleratorTakenAt");
    print_message("ledger: held from -%llds, work ended -%llds, asked 0, deleted +%llds, "
                  "released +%llds, taken +%llds by %s\n",
                  (long long)((asked - held) / 1000), (long long)((asked - work) / 1000),
                  (long long)((deleted - asked) / 1000), (long long)((released - asked) / 1000),
                  (long long)((taken - asked) / 1000),
                  str_at(ws, "status.lastPause.acceleratorTakenBy"));
    assert_true(held <= work);
    assert_true(work <= asked);
    assert_true(asked <= deleted);
    assert_true(deleted <= released);
    assert_true(taken >= deleted); /* placed once the pod was deleted */
    assert_string_equal(str_at(ws, "status.lastPause.reason"), "User");
    assert_string_equal(str_at(ws, "status.lastPause.acceleratorTakenBy"), taker);
    assert_string_equal(str_at(ws, "status.lastPause.nodeName"), node);
    assert_string_equal(str_at(ws, "status.lastPause.product"), "Tesla-T4");
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "files");
    /* one GPU held from its scheduling to its release; none now */
    double held_s = num_at(ws, "status.accounting.acceleratorSecondsHeld");
    assert_true(held_s > 0);
    assert_true(fabs(held_s - (double)(released - held) / 1000.0) <= 1.0);
    assert_null(str_at(ws, "status.accounting.acceleratorHeldSince"));
}

/* The ledger once the workspace runs again: one record, with its resume. */
static void check_resumed_ledger(const cJSON *ws, const char *taker)
{
    const cJSON *h = history(ws);
    assert_int_equal(cJSON_GetArraySize(h), 1);
    const cJSON *rec = cJSON_GetArrayItem(h, 0);
    assert_string_equal(str_at(rec, "pausedAt"), str_at(ws, "status.lastPause.requestedAt"));
    assert_string_equal(str_at(rec, "acceleratorReleasedAt"),
                        str_at(ws, "status.lastPause.acceleratorReleasedAt"));
    assert_string_equal(str_at(rec, "acceleratorTakenBy"), taker);
    assert_string_equal(str_at(rec, "memory"), "files");
    assert_string_equal(str_at(rec, "resumeRequestedAt"),
                        str_at(ws, "status.lastResume.requestedAt"));
    assert_string_equal(str_at(rec, "readyAt"), str_at(ws, "status.lastResume.readyAt"));
    assert_non_null(str_at(rec, "podScheduledAt"));
    assert_true(num_at(rec, "secondsToReady") >= 0);
    assert_string_equal(str_at(rec, "restoredFrom"), "FromCheckpoint");
    assert_null(cJSON_GetObjectItemCaseSensitive(rec, "message"));
    /* released: one GPU from the release to the resume request */
    int64_t released = time_at(ws, "status.lastPause.acceleratorReleasedAt");
    int64_t resumed = time_at(ws, "status.lastResume.requestedAt");
    double released_s = num_at(ws, "status.accounting.acceleratorSecondsReleased");
    print_message("ledger: released %.1f s (resume - release: %lld s), held %.1f s, "
                  "resumed in %.1f s\n",
                  released_s, (long long)((resumed - released) / 1000),
                  num_at(ws, "status.accounting.acceleratorSecondsHeld"),
                  num_at(rec, "secondsToReady"));
    assert_true(released_s > 0);
    assert_true(fabs(released_s - (double)(resumed - released) / 1000.0) <= 1.0);
    /* the new pod holds a GPU again, since it was scheduled */
    assert_true(time_at(ws, "status.accounting.acceleratorHeldSince") >= resumed - 1000);
    assert_true(num_at(ws, "status.accounting.acceleratorSecondsHeld") > 0);
}

/* ---- tests --------------------------------------------------------------- */

static void test_gpu_cycle(void **state)
{
    (void)state;
    apply_ws("cycle", "it-gpu", 0, NULL);
    cJSON *ws = wait_state("cycle", "Running", 60000);
    const char *node = str_at(ws, "status.nodeName");
    assert_non_null(node);
    assert_non_null(strstr(node, "gpu-node"));
    assert_string_equal(str_at(ws, "status.accelerator.product"), "Tesla-T4");
    assert_string_equal(str_at(ws, "status.podName"), "cycle-1");
    assert_string_equal(str_at(condition(ws, "Restored"), "reason"), "Fresh");
    cJSON *pvc = get_json("pvc cycle-home");
    assert_non_null(pvc);
    char pvc_uid[64];
    snprintf(pvc_uid, sizeof(pvc_uid), "%s", str_at(pvc, "metadata.uid"));
    cJSON_Delete(pvc);
    cJSON_Delete(ws);

    set_paused("cycle", 1);
    ws = wait_state("cycle", "Paused", 60000);
    assert_int_equal(all_pods("cycle"), 0);
    assert_non_null(str_at(ws, "status.lastPause.requestedAt"));
    assert_non_null(str_at(ws, "status.lastPause.podDeletedAt"));
    assert_non_null(str_at(ws, "status.lastPause.acceleratorReleasedAt"));
    assert_true(num_at(ws, "status.accounting.pauses") == 1);
    /* Paused since: the state's own timestamp, shown by kubectl get ws. */
    assert_non_null(str_at(ws, "status.stateSince"));
    cJSON_Delete(ws);

    set_paused("cycle", 0);
    ws = wait_state("cycle", "Running", 60000);
    assert_string_equal(str_at(ws, "status.podName"), "cycle-2");
    assert_string_equal(str_at(condition(ws, "Restored"), "reason"), "FromCheckpoint");
    assert_non_null(str_at(ws, "status.lastResume.readyAt"));
    assert_true(num_at(ws, "status.lastResume.secondsToReady") >= 0);
    assert_true(num_at(ws, "status.accounting.resumes") == 1);
    assert_true(num_at(ws, "status.accounting.acceleratorSecondsReleased") >= 0);
    print_message("resume to ready: %.1f s\n", num_at(ws, "status.lastResume.secondsToReady"));
    cJSON_Delete(ws);
    /* The resumed pod is told where the checkpoint is. */
    char *out = NULL;
    harness_kubectl(&out, "-n %s get pod cycle-2 -o jsonpath='{.spec.containers[0].env}'", ns);
    assert_non_null(strstr(out, "HIBERNATOR_CHECKPOINT_PATH"));
    free(out);
    /* Same home across the pause. */
    pvc = get_json("pvc cycle-home");
    assert_string_equal(str_at(pvc, "metadata.uid"), pvc_uid);
    cJSON_Delete(pvc);
    assert_int_equal(live_pods("cycle"), 1);

    delete_ws("cycle");
    assert_int_equal(all_pods("cycle"), 0);
    assert_null(get_json("workspace cycle"));
}

static void test_capacity(void **state)
{
    (void)state;
    /* Three GPUs in the cluster: take them all. */
    apply_ws("cap-a", "it-gpu", 0, NULL);
    apply_ws("cap-b", "it-gpu", 0, NULL);
    apply_ws("cap-c", "it-gpu", 0, NULL);
    cJSON_Delete(wait_state("cap-a", "Running", 60000));
    cJSON_Delete(wait_state("cap-b", "Running", 60000));
    cJSON_Delete(wait_state("cap-c", "Running", 60000));

    apply_ws("cap-d", "it-gpu", 0, NULL);
    /* The first word from the scheduler may be about the home claim not yet
     * bound (it binds within a second); the lasting one is about GPUs. */
    cJSON *ws = NULL;
    const cJSON *cond = NULL;
    uint64_t end = harness_now_ms() + 60000;
    do {
        cJSON_Delete(ws);
        ws = wait_state("cap-d", "WaitingForCapacity", 60000);
        cond = condition(ws, "CapacityAvailable");
    } while (!(str_at(cond, "message") && strstr(str_at(cond, "message"), "nvidia.com/gpu")) &&
             harness_now_ms() < end && usleep(300 * 1000) == 0);
    assert_string_equal(str_at(cond, "status"), "False");
    assert_string_equal(str_at(cond, "reason"), "Unschedulable");
    print_message("waiting: %s\n", str_at(cond, "message"));
    assert_non_null(strstr(str_at(cond, "message"), "nvidia.com/gpu"));
    cJSON_Delete(ws);
    /* Still exactly one pod after a while: no competing retries. */
    usleep(3000 * 1000);
    assert_int_equal(all_pods("cap-d"), 1);

    /* Pausing a running workspace frees its GPU for the waiting one. */
    ws = ws_json("cap-a");
    char node_a[256];
    snprintf(node_a, sizeof(node_a), "%s", str_at(ws, "status.nodeName"));
    cJSON_Delete(ws);
    set_paused("cap-a", 1);
    cJSON_Delete(wait_state("cap-a", "Paused", 60000));
    ws = wait_state("cap-d", "Running", 60000);
    assert_int_equal(all_pods("cap-d"), 1);
    /* The ledger says where cap-a's GPU went: to cap-d's pod, on its node. */
    char taker[320];
    snprintf(taker, sizeof(taker), "%s/%s", ns, str_at(ws, "status.podName"));
    assert_string_equal(str_at(ws, "status.nodeName"), node_a);
    assert_non_null(str_at(ws, "status.accounting.acceleratorHeldSince"));
    cJSON_Delete(ws);
    ws = wait_taken("cap-a", 30000);
    check_pause_ledger(ws, node_a, taker);
    /* recorded when the pause completed; the resume is still to come */
    assert_int_equal(cJSON_GetArraySize(history(ws)), 1);
    const cJSON *rec = cJSON_GetArrayItem(history(ws), 0);
    assert_string_equal(str_at(rec, "acceleratorTakenBy"), taker);
    assert_null(str_at(rec, "resumeRequestedAt"));
    double held_s = num_at(ws, "status.accounting.acceleratorSecondsHeld");
    cJSON_Delete(ws);

    /* Now resume cap-a: no GPU free, it waits with one pod. */
    set_paused("cap-a", 0);
    cJSON_Delete(wait_state("cap-a", "WaitingForCapacity", 60000));
    usleep(2000 * 1000);
    assert_int_equal(all_pods("cap-a"), 1);
    delete_ws("cap-b");
    ws = wait_state("cap-a", "Running", 60000);
    assert_string_equal(str_at(condition(ws, "Restored"), "reason"), "FromCheckpoint");
    check_resumed_ledger(ws, taker);
    /* the hold that ended with the pause is counted once */
    assert_true(num_at(ws, "status.accounting.acceleratorSecondsHeld") == held_s);
    cJSON_Delete(ws);

    /* A class that gives up: Failed after its timeout, pod removed, no loop. */
    apply_ws("cap-e", "it-gpu-fail", 0, NULL);
    ws = wait_state("cap-e", "Failed", 60000);
    cond = condition(ws, "CapacityAvailable");
    assert_string_equal(str_at(cond, "reason"), "CapacityTimeout");
    cJSON_Delete(ws);
    usleep(3000 * 1000);
    assert_int_equal(all_pods("cap-e"), 0);
    ws = wait_state("cap-e", "Failed", 1000);
    cJSON_Delete(ws);

    delete_ws("cap-a");
    delete_ws("cap-c");
    delete_ws("cap-d");
    delete_ws("cap-e");
}

static void set_prewarm(const char *name, const char *hhmm)
{
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s patch workspace %s --type=merge -p "
                                     "'{\"spec\":{\"preWarm\":{\"at\":\"%s\"}}}'",
                                     ns, name, hhmm),
                     0);
}

/* A workspace is resumed ahead of its owner and is ready before their time;
 * with the GPUs taken, a person's resume goes first, and a pre-warm that
 * waits for capacity gives way to a person who comes to wait too. */
static void test_prewarm(void **state)
{
    (void)state;
    /* Three GPUs: take them all. */
    apply_ws("pw-x", "it-gpu", 0, NULL);
    apply_ws("pw-y", "it-gpu", 0, NULL);
    apply_ws("pw-z", "it-gpu", 0, NULL);
    /* pw-b (no GPU) has run and is paused; pw-a has never run. */
    apply_ws("pw-b", "it-cpu-warm", 0, NULL);
    apply_ws("pw-a", "it-gpu-warm", 1, NULL);
    apply_ws("pw-p", "it-gpu", 1, NULL);
    apply_ws("pw-q", "it-gpu", 1, NULL);
    cJSON_Delete(wait_state("pw-x", "Running", 60000));
    cJSON_Delete(wait_state("pw-y", "Running", 60000));
    cJSON_Delete(wait_state("pw-z", "Running", 60000));
    cJSON_Delete(wait_state("pw-b", "Running", 60000));
    set_paused("pw-b", 1);
    cJSON_Delete(wait_state("pw-b", "Paused", 60000));
    /* A person resumes pw-p: no GPU, it waits. */
    set_paused("pw-p", 0);
    cJSON_Delete(wait_state("pw-p", "WaitingForCapacity", 60000));

    /* The owners of pw-a and pw-b start at the next minute that leaves the
     * lead (1m) ahead of now: the pre-warms are due within a minute. */
    char hhmm[6];
    uint64_t owner = harness_owner_time(65, hhmm);
    print_message("owners start at %s UTC\n", hhmm);
    set_prewarm("pw-b", hhmm);
    set_prewarm("pw-a", hhmm);
    cJSON *ws = wait_reason("pw-b", "PreWarm", "Planned", 30000);
    char want[32];
    snprintf(want, sizeof(want), "%s", str_at(ws, "status.preWarm.nextFor"));
    cJSON_Delete(ws);

    /* The controller dies right after the pre-warm's write, before any
     * status says so: the next one finds the workspace resumed by a
     * pre-warm (its annotations), counts it once, and no second one. */
    controller_stop();
    controller_start("AutoResume");
    assert_int_equal(controller_wait_exit(90000), 3);
    ws = ws_json("pw-b");
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(ws, "spec"), "paused")));
    /* ... and no status counts it yet: the crash fell in the gap. */
    const cJSON *counted = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(ws, "status"), "preWarm"), "count");
    print_message("after the crash: state %s, pre-warms counted: %s\n", str_at(ws, "status.state"),
                  counted ? "some" : "none");
    assert_null(counted);
    cJSON_Delete(ws);
    controller_start(NULL);

    /* pw-b: resumed ahead of its owner, ready before their time. */
    ws = wait_state("pw-b", "Running", 90000);
    assert_true((uint64_t)time(NULL) * 1000 < owner);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(ws, "status"), "lastResume"), "preWarmed")));
    assert_int_equal((int64_t)num_at(ws, "status.preWarm.count"), 1);
    assert_string_equal(str_at(ws, "status.preWarm.lastFor"), want);
    const cJSON *ann = cJSON_GetObjectItem(cJSON_GetObjectItem(ws, "metadata"), "annotations");
    assert_true(cJSON_IsString(cJSON_GetObjectItem(ann, "hibernator.dev/pre-warmed-at")));
    cJSON_Delete(ws);
    ws = ws_json("pw-b");
    uint64_t end = harness_now_ms() + 20000;
    while (num_at(ws, "status.preWarm.readyInTime") != 1 && harness_now_ms() < end) {
        cJSON_Delete(ws);
        usleep(300 * 1000);
        ws = ws_json("pw-b");
    }
    assert_int_equal((int64_t)num_at(ws, "status.preWarm.readyInTime"), 1);
    cJSON_Delete(ws);
    char *reasons = event_reasons("pw-b");
    print_message("pw-b events: %s\n", reasons);
    free(reasons);

    /* pw-a is due too, but a person's resume of its class waits: it waits
     * for its turn, and creates no pod. */
    ws = wait_reason("pw-a", "PreWarm", "WaitingForTurn", 60000);
    print_message("pw-a: %s\n", cond_field(ws, "PreWarm", "message"));
    assert_string_equal(str_at(ws, "status.state"), "Paused");
    cJSON_Delete(ws);
    assert_int_equal(all_pods("pw-a"), 0);

    /* A GPU frees: the person gets it, then the pre-warm starts and waits
     * for capacity itself. */
    set_paused("pw-x", 1);
    cJSON_Delete(wait_state("pw-p", "Running", 60000));
    ws = wait_state("pw-a", "WaitingForCapacity", 60000);
    assert_true((uint64_t)time(NULL) * 1000 < owner + 5000);
    assert_int_equal(all_pods("pw-a"), 1);
    cJSON_Delete(ws);

    /* Another person comes to wait: the pre-warm gives way. */
    set_paused("pw-q", 0);
    ws = wait_state("pw-a", "Paused", 60000);
    assert_string_equal(str_at(ws, "status.lastPause.reason"), "PreWarmYielded");
    assert_string_equal(str_at(ws, "status.preWarm.lastOutcome"), "Yielded");
    cJSON_Delete(ws);
    assert_int_equal(all_pods("pw-a"), 0);
    /* The next GPU is the person's. */
    set_paused("pw-y", 1);
    cJSON_Delete(wait_state("pw-q", "Running", 60000));
    ws = ws_json("pw-a");
    assert_string_equal(str_at(ws, "status.state"), "Paused");
    cJSON_Delete(ws);
    reasons = event_reasons("pw-a");
    print_message("pw-a events: %s\n", reasons);
    assert_non_null(strstr(reasons, "PreWarmYielded,"));
    free(reasons);

    /* What the API server accepts and the controller cannot use is said on
     * the object: a zone that does not exist, a class without pre-warms. */
    apply_ws("pw-zone", "it-cpu-warm", 1, "  preWarm: {at: \"08:30\", timeZone: Mars/Olympus}\n");
    apply_ws("pw-class", "it-cpu", 1, "  preWarm: {at: \"08:30\"}\n");
    ws = wait_reason("pw-zone", "PreWarm", "TimeZoneUnavailable", 30000);
    end = harness_now_ms() + 20000;
    while (!strstr(cond_field(ws, "PreWarm", "message"), "cannot be loaded") &&
           harness_now_ms() < end) {
        cJSON_Delete(ws);
        usleep(300 * 1000);
        ws = ws_json("pw-zone");
    }
    print_message("pw-zone: %s\n", cond_field(ws, "PreWarm", "message"));
    assert_non_null(strstr(cond_field(ws, "PreWarm", "message"), "Mars/Olympus"));
    assert_non_null(strstr(cond_field(ws, "PreWarm", "message"), "cannot be loaded"));
    assert_string_equal(cond_field(ws, "PreWarm", "status"), "Unknown");
    cJSON_Delete(ws);
    ws = wait_reason("pw-class", "PreWarm", "NotAllowed", 30000);
    cJSON_Delete(ws);
    reasons = event_reasons("pw-class");
    assert_non_null(strstr(reasons, "PreWarmNotAllowed,"));
    free(reasons);

    const char *names[] = {"pw-a", "pw-b", "pw-p",    "pw-q",    "pw-x",
                           "pw-y", "pw-z", "pw-zone", "pw-class"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        delete_ws(names[i]);
}

static void test_invalid(void **state)
{
    (void)state;
    static const struct {
        const char *name, *cls, *extra, *reason, *field;
    } cases[] = {
        {"bad-class", "no-such-class", NULL, "ClassNotFound", "spec.className"},
        {"bad-image", "it-cpu", "  image: docker.io/evil/miner:latest\n", "ImageNotAllowed",
         "spec.image"},
        {"bad-home", "it-cpu", "  home: {size: 500Gi}\n", "HomeTooLarge", "spec.home.size"},
        {"bad-env", "it-cpu", "  env: [{name: HIBERNATOR_WORKSPACE, value: x}]\n", "ReservedEnv",
         "spec.env[0].name"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        apply_ws(cases[i].name, cases[i].cls, 0, cases[i].extra);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *ws = wait_state(cases[i].name, "Failed", 30000);
        const cJSON *valid = condition(ws, "Valid");
        assert_string_equal(str_at(valid, "status"), "False");
        assert_string_equal(str_at(valid, "reason"), cases[i].reason);
        assert_non_null(strstr(str_at(valid, "message"), cases[i].field));
        print_message("%s: %s\n", cases[i].name, str_at(valid, "message"));
        cJSON_Delete(ws);
        assert_int_equal(all_pods(cases[i].name), 0);
    }
    /* Fixing the field recovers. */
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s patch workspace bad-image --type=json -p "
                                     "'[{\"op\":\"remove\",\"path\":\"/spec/image\"}]'",
                                     ns),
                     0);
    cJSON_Delete(wait_state("bad-image", "Running", 60000));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        delete_ws(cases[i].name);
}

/* Kill the controller right after each kind of write, restart it, and check
 * it converges: one pod (or none when paused), the same home claim. */
enum crash_path { ON_CREATE, ON_PAUSE, ON_RESUME, ON_DELETE };

static void test_crash_points(void **state)
{
    (void)state;
    controller_stop();
    static const struct {
        const char *failpoint;
        enum crash_path path;
    } points[] = {
        {"AddFinalizer", ON_CREATE},    {"CreatePVC", ON_CREATE}, {"CreatePod", ON_CREATE},
        {"DeletePod", ON_PAUSE},        {"CreatePod", ON_RESUME}, {"DeletePVC", ON_DELETE},
        {"RemoveFinalizer", ON_DELETE},
    };
    static const char *const path_names[] = {"create", "pause", "resume", "delete"};
    for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
        char name[32], what[64];
        snprintf(name, sizeof(name), "crash-%zu", i);
        snprintf(what, sizeof(what), "pvc %s-home", name);
        char pvc_uid[64] = "";
        if (points[i].path != ON_CREATE) {
            /* Get to the step before, with a controller that does not crash. */
            controller_start(NULL);
            apply_ws(name, "it-cpu", 0, NULL);
            cJSON_Delete(wait_state(name, "Running", 60000));
            if (points[i].path == ON_RESUME) {
                set_paused(name, 1);
                cJSON_Delete(wait_state(name, "Paused", 60000));
            }
            cJSON *pvc = get_json(what);
            snprintf(pvc_uid, sizeof(pvc_uid), "%s", str_at(pvc, "metadata.uid"));
            cJSON_Delete(pvc);
            controller_stop();
        }
        controller_start(points[i].failpoint);
        switch (points[i].path) {
        case ON_CREATE:
            apply_ws(name, "it-cpu", 0, NULL);
            break;
        case ON_PAUSE:
            set_paused(name, 1);
            break;
        case ON_RESUME:
            set_paused(name, 0);
            break;
        case ON_DELETE:
            harness_kubectl(NULL, "-n %s delete workspace %s --wait=false", ns, name);
            break;
        }
        int st = controller_wait_exit(60000);
        print_message("failpoint %s on %s: controller exited with %d\n", points[i].failpoint,
                      path_names[points[i].path], st);
        assert_int_equal(st, 3);
        controller_start(NULL);
        if (points[i].path == ON_DELETE) {
            /* The deletion finishes: workspace and pod gone. */
            assert_true(wait_gone(name, 60000));
            assert_int_equal(all_pods(name), 0);
        } else {
            int paused = points[i].path == ON_PAUSE;
            cJSON *ws = wait_state(name, paused ? "Paused" : "Running", 60000);
            assert_int_equal(live_pods(name), paused ? 0 : 1);
            assert_int_equal(all_pods(name), paused ? 0 : 1);
            if (points[i].path == ON_RESUME) {
                assert_string_equal(str_at(condition(ws, "Restored"), "reason"), "FromCheckpoint");
                assert_true(num_at(ws, "status.accounting.resumes") == 1);
            }
            cJSON *pvc = get_json(what);
            assert_non_null(pvc);
            if (pvc_uid[0]) /* the home survived the crash untouched */
                assert_string_equal(str_at(pvc, "metadata.uid"), pvc_uid);
            cJSON_Delete(pvc);
            cJSON_Delete(ws);
        }
        controller_stop();
    }
    controller_start(NULL);
    for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
        char name[32];
        snprintf(name, sizeof(name), "crash-%zu", i);
        delete_ws(name);
    }
}

/* A class that keeps homes: deleting the workspace leaves its claim, no
 * longer owned (so the garbage collector leaves it too). */
static void test_retained_home(void **state)
{
    (void)state;
    apply_ws("keep", "it-cpu-retain", 0, NULL);
    cJSON_Delete(wait_state("keep", "Running", 60000));
    delete_ws("keep");
    assert_true(wait_gone("keep", 60000));
    usleep(2000 * 1000); /* give the garbage collector its chance to get it wrong */
    cJSON *pvc = get_json("pvc keep-home");
    assert_non_null(pvc);
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pvc, "metadata"),
                                                 "ownerReferences"));
    cJSON_Delete(pvc);
    assert_int_equal(all_pods("keep"), 0);
    harness_kubectl(NULL, "-n %s delete pvc keep-home", ns);
}

static void test_forbidden_for_controller(void **state)
{
    (void)state;
    /* What the controller may not do, it cannot: its RBAC is the least it needs.
     * It may read a Secret it names (a Jupyter token), never list them. */
    char *out = NULL;
    int st = harness_kubectl(&out, "--kubeconfig '%s' get secrets -n %s 2>&1", kubeconfig, ns);
    assert_int_not_equal(st, 0);
    assert_non_null(strstr(out, "forbidden"));
    free(out);
    st = harness_kubectl(&out, "--kubeconfig '%s' delete nodes gpu-node-1 2>&1", kubeconfig);
    assert_int_not_equal(st, 0);
    assert_non_null(strstr(out, "forbidden"));
    free(out);
}

/* ---- set-up ---------------------------------------------------------------- */

/* Each test starts with no workspace left by an earlier one that failed, so
 * one failure does not leave GPUs taken for the next. */
static int clean_slate(void **state)
{
    (void)state;
    delete_all_workspaces(60);
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    it_deploy("it-lifecycle");
    /* Classes for these tests: tolerate kwok's taint, short capacity timeout for one. */
    const char *cls = "apiVersion: hibernator.dev/v1alpha1\nkind: WorkspaceClass\n"
                      "metadata: {name: %s}\n"
                      "spec:\n"
                      "  images: {allowed: [\"registry.local/notebook:*\"], default: "
                      "\"registry.local/notebook:v1\"}\n"
                      "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: "
                      "NoSchedule}]\n"
                      "  home: {size: 1Gi, maxSize: 10Gi}\n"
                      "  pause: {gracePeriodSeconds: 5}\n"
                      "%s";
    assert_int_equal(harness_apply(cls, "it-cpu", ""), 0);
    assert_int_equal(harness_apply("apiVersion: hibernator.dev/v1alpha1\nkind: WorkspaceClass\n"
                                   "metadata: {name: it-cpu-retain}\n"
                                   "spec:\n"
                                   "  images: {allowed: [\"registry.local/notebook:*\"], "
                                   "default: \"registry.local/notebook:v1\"}\n"
                                   "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, "
                                   "effect: NoSchedule}]\n"
                                   "  home: {size: 1Gi, onDelete: Retain}\n"),
                     0);
    assert_int_equal(harness_apply(cls, "it-gpu",
                                   "  accelerator: {resourceName: nvidia.com/gpu, count: 1, "
                                   "product: Tesla-T4}\n"
                                   "  resume: {capacityTimeout: 30m, onCapacityTimeout: Wait}\n"),
                     0);
    assert_int_equal(harness_apply(cls, "it-cpu-warm", "  preWarm: {lead: 1m}\n"), 0);
    assert_int_equal(harness_apply(cls, "it-gpu-warm",
                                   "  accelerator: {resourceName: nvidia.com/gpu, count: 1, "
                                   "product: Tesla-T4}\n"
                                   "  resume: {capacityTimeout: 30m, onCapacityTimeout: Wait}\n"
                                   "  preWarm: {lead: 1m, maxConcurrent: 2}\n"),
                     0);
    assert_int_equal(harness_apply(cls, "it-gpu-fail",
                                   "  accelerator: {resourceName: nvidia.com/gpu, count: 1, "
                                   "product: Tesla-T4}\n"
                                   "  resume: {capacityTimeout: 5s, onCapacityTimeout: Fail}\n"),
                     0);
    ns = harness_namespace("it-lifecycle");
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    harness_namespace_delete(ns);
    it_show_logs();
    free(ns);
    return 0;
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_gpu_cycle, clean_slate),
        cmocka_unit_test_setup(test_capacity, clean_slate),
        cmocka_unit_test_setup(test_prewarm, clean_slate),
        cmocka_unit_test_setup(test_invalid, clean_slate),
        cmocka_unit_test_setup(test_crash_points, clean_slate),
        cmocka_unit_test_setup(test_retained_home, clean_slate),
        cmocka_unit_test_setup(test_forbidden_for_controller, clean_slate),
    };
    return cmocka_run_group_tests_name("workspace lifecycle", tests, group_setup, group_teardown);
}
