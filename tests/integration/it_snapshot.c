/*
 * Pausing with GKE Pod Snapshots, end to end on the local cluster: the
 * controller under deploy/'s RBAC, the snapshot simulator playing GKE's
 * snapshot controller on the real podsnapshot.gke.io CRDs
 * (tests/simulator/, docs/simulator.md).
 *
 *   - the GPU cycle: pause → trigger → PodSnapshot Ready → only then the pod
 *     is deleted → GPU free → resume with the snapshot → restored
 *     FromSnapshot on the same GPU product;
 *   - the checkpoint fails: the pod is NOT deleted (Retry), or the pause
 *     completes without memory (PauseWithoutMemory);
 *   - a silent cold start → ColdStart with a Warning; a crash-looping restore
 *     → replaced once by a pod from files, its snapshot deleted first and its
 *     trigger only after the PodSnapshot is gone (GKE's finalizer held it);
 *   - the controller killed between the trigger and Ready, and between Ready
 *     and the pod delete: the same snapshot, one trigger, no early delete; a
 *     PodSnapshot that went while the controller was down: its trigger goes
 *     once the controller is back;
 *   - a deleted workspace leaves no trigger and no PodSnapshot, not even a
 *     trigger that never made one.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "util/timefmt.h"
#include "workspaces.h"

static pid_t simulator;

/* ---- helpers ----------------------------------------------------------------- */

static int count_objects(const char *what, const char *selector)
{
    char *out = NULL;
    harness_kubectl(&out, "-n %s get %s -l %s -o name", ns, what, selector);
    int n = 0;
    for (char *p = out; p && *p; p++)
        n += *p == '\n';
    free(out);
    return n;
}

/* Whether the trigger exists: 1, 0, or -1 when kubectl failed. */
static int trigger_exists(const char *trigger)
{
    char *out = NULL;
    int rc = harness_kubectl(
        &out, "-n %s get podsnapshotmanualtriggers %s --ignore-not-found -o name", ns, trigger);
    int n = rc == 0 ? out && out[0] != '\0' : -1;
    free(out);
    return n;
}

/*
 * Follows the PodSnapshot of trigger until both are gone: the trigger must
 * outlive its PodSnapshot. The trigger is looked at first, then the
 * PodSnapshot; a PodSnapshot never comes back, so a trigger seen gone with
 * its PodSnapshot still there afterwards went first. Returns how often the
 * PodSnapshot was seen held by GKE's finalizer while its trigger was there.
 */
static int follow_deletion(const char *trigger, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    int held = 0, seen = 0;
    for (;;) {
        int t = trigger_exists(trigger);
        char *out = NULL;
        int rc = harness_kubectl(&out,
                                 "-n %s get podsnapshots -l gke-pod-snapshot-triggered-by=%s "
                                 "-o jsonpath='{range .items[*]}{.metadata.name}:"
                                 "{.metadata.deletionTimestamp}{\"\\n\"}{end}'",
                                 ns, trigger);
        if (t >= 0 && rc == 0) {
            int snapshots = 0, deleting = 0;
            for (char *line = out; line && *line;) {
                char *nl = strchr(line, '\n');
                char *colon = strchr(line, ':');
                snapshots++;
                deleting += colon && (!nl || colon < nl) && colon[1] != '\n' && colon[1] != '\0';
                line = nl ? nl + 1 : NULL;
            }
            seen |= snapshots > 0;
            if (!t && snapshots)
                fail_msg("trigger %s was deleted before its PodSnapshot", trigger);
            held += t && deleting;
            if (!t && !snapshots) {
                free(out);
                break;
            }
        }
        free(out);
        if (harness_now_ms() > end)
            fail_msg("trigger %s and its PodSnapshot are still there after %llu ms", trigger,
                     (unsigned long long)timeout_ms);
        usleep(100 * 1000);
    }
    assert_true(seen);
    return held;
}

/* The simulator's failure mode for the pods of one workspace. */
static void set_mode(const char *pod, const char *mode)
{
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s patch configmap snapshot-simulator --type=merge "
                                     "-p '{\"data\":{\"%s\":\"%s\"}}'",
                                     ns, pod, mode),
                     0);
}

static void simulator_start(void)
{
    char log[600];
    snprintf(log, sizeof(log), "%s/simulator.log", tmpdir);
    simulator = fork();
    assert_true(simulator >= 0);
    if (simulator == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        /* GKE's finalizer holds a deleted PodSnapshot for 6 s: long enough
         * to see, a few times, that its trigger waits for it. */
        execl(SNAPSHOT_SIMULATOR_BIN, SNAPSHOT_SIMULATOR_BIN, "--kubeconfig", harness_kubeconfig(),
              "--namespace", ns, "--checkpoint-delay", "3s", "--delete-delay", "6s", "--log-level",
              "debug", (char *)NULL);
        _exit(127);
    }
}

/* ---- tests ------------------------------------------------------------------- */

static void test_gpu_cycle(void **state)
{
    (void)state;
    apply_ws("cycle", "it-gpu-snap", 0, NULL);
    cJSON *ws = wait_state("cycle", "Running", 60000);
    const char *node = str_at(ws, "status.nodeName");
    char source_node[64];
    snprintf(source_node, sizeof(source_node), "%s", node ? node : "");
    cJSON_Delete(ws);

    set_paused("cycle", 1);
    /* While the snapshot is taken the pod keeps running. */
    ws = wait_reason("cycle", "SnapshotReady", "InProgress", 30000);
    assert_string_equal(str_at(ws, "status.snapshot.attempt"), "cycle-p1-1");
    assert_string_equal(str_at(ws, "status.snapshot.gpuProduct"), "Tesla-T4");
    assert_string_equal(str_at(ws, "status.snapshot.nodeName"), source_node);
    cJSON_Delete(ws);
    assert_int_equal(live_pods("cycle"), 1);

    ws = wait_state("cycle", "Paused", 60000);
    assert_string_equal(str_at(ws, "status.snapshot.phase"), "Ready");
    assert_string_equal(cond_field(ws, "SnapshotReady", "status"), "True");
    const char *snap = str_at(ws, "status.snapshot.name");
    assert_non_null(snap);
    char snapshot[256];
    snprintf(snapshot, sizeof(snapshot), "%s", snap);
    int64_t ready = 0, deleted = 0;
    timefmt_parse_rfc3339(str_at(ws, "status.snapshot.readyAt"), &ready);
    timefmt_parse_rfc3339(str_at(ws, "status.lastPause.podDeletedAt"), &deleted);
    print_message("  snapshot %s: %.1f s; pod deleted %lld ms after Ready\n", snapshot,
                  num_at(ws, "status.snapshot.seconds"), (long long)(deleted - ready));
    assert_true(deleted >= ready);
    cJSON_Delete(ws);
    char *reasons = event_reasons("cycle");
    char *r = strstr(reasons, "Pausing,");
    assert_non_null(r);
    r = strstr(r, "SnapshotReady,");
    assert_non_null(r);
    assert_non_null(strstr(r, "Paused,"));
    free(reasons);
    assert_int_equal(count_objects("podsnapshotmanualtriggers", "hibernator.dev/workspace=cycle"),
                     1);
    assert_int_equal(all_pods("cycle"), 0);

    set_paused("cycle", 0);
    ws = wait_reason("cycle", "Restored", "FromSnapshot", 60000);
    assert_string_equal(str_at(ws, "status.state"), "Running");
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromSnapshot");
    assert_string_equal(str_at(ws, "status.accelerator.product"), "Tesla-T4");
    char what[300];
    snprintf(what, sizeof(what), "pod %s", str_at(ws, "status.podName"));
    cJSON_Delete(ws);
    cJSON *pod = get_json(what);
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
                                         "annotations"),
        "podsnapshot.gke.io/ps-name");
    assert_true(cJSON_IsString(ann));
    assert_string_equal(ann->valuestring, snapshot);
    /* Pinned to the snapshot's GPU product. */
    const cJSON *product = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "spec"),
                                         "nodeSelector"),
        "nvidia.com/gpu.product");
    assert_true(cJSON_IsString(product));
    assert_string_equal(product->valuestring, "Tesla-T4");
    cJSON_Delete(pod);
}

static void test_checkpoint_failed(void **state)
{
    (void)state;
    set_mode("keep-1", "checkpoint-failed");
    set_mode("drop-1", "checkpoint-failed");
    apply_ws("keep", "it-gpu-snap", 0, NULL);
    apply_ws("drop", "it-cpu-snap-nomem", 0, NULL);
    cJSON_Delete(wait_state("keep", "Running", 60000));
    cJSON_Delete(wait_state("drop", "Running", 60000));
    set_paused("keep", 1);
    set_paused("drop", 1);

    cJSON *ws = wait_reason("keep", "SnapshotReady", "Failed", 60000);
    assert_string_equal(str_at(ws, "status.state"), "Pausing");
    assert_non_null(strstr(str_at(ws, "status.snapshot.message"), "failed"));
    cJSON_Delete(ws);
    assert_int_equal(live_pods("keep"), 1); /* nothing lost: the session still runs */
    assert_int_equal(all_pods("keep"), 1);
    char *phase = NULL;
    harness_kubectl(&phase, "-n %s get pvc keep-home -o jsonpath={.status.phase}", ns);
    assert_string_equal(phase, "Bound");
    free(phase);
    char *reasons = event_reasons("keep");
    assert_non_null(strstr(reasons, "SnapshotFailed,"));
    free(reasons);

    ws = wait_state("drop", "Paused", 60000);
    assert_string_equal(cond_field(ws, "SnapshotReady", "status"), "False");
    assert_string_equal(cond_field(ws, "SnapshotReady", "reason"), "Failed");
    cJSON_Delete(ws);
    assert_int_equal(all_pods("drop"), 0);
    phase = NULL;
    harness_kubectl(&phase, "-n %s get pvc drop-home -o jsonpath={.status.phase}", ns);
    assert_string_equal(phase, "Bound"); /* the files stay for the resume */
    free(phase);
}

static void test_cold_start_and_crash_loop(void **state)
{
    (void)state;
    apply_ws("cold", "it-cpu-snap", 0, NULL);
    apply_ws("crash", "it-cpu-snap", 0, NULL);
    cJSON_Delete(wait_state("cold", "Running", 60000));
    cJSON_Delete(wait_state("crash", "Running", 60000));
    set_paused("cold", 1);
    set_paused("crash", 1);
    cJSON_Delete(wait_state("cold", "Paused", 60000));
    cJSON_Delete(wait_state("crash", "Paused", 60000));
    set_mode("cold-2", "cold-start");
    set_mode("crash-2", "crash-loop");
    set_paused("cold", 0);
    set_paused("crash", 0);

    /* The crashed restore's snapshot is deleted; its trigger, through which
     * the controller sees it, stays until GKE has let the PodSnapshot go, so
     * no new pod starts while GKE could still restore it from that. */
    int held = follow_deletion("crash-p1-1", 90000);
    print_message("  PodSnapshot seen held by its finalizer %d times with its trigger there\n",
                  held);
    assert_true(held > 0);

    /* A restore that crash-loops is replaced once by a pod from files. */
    cJSON *ws = wait_reason("crash", "Restored", "FromCheckpoint", 90000);
    assert_non_null(strstr(cond_field(ws, "Restored", "message"), "crashed"));
    cJSON_Delete(ws);
    char *reasons = event_reasons("crash");
    assert_non_null(strstr(reasons, "RestoreCrashLoop,"));
    free(reasons);
    assert_true(live_pods("crash") <= 1);

    /* Ready without PodRestored: a cold start, said once. */
    ws = wait_reason("cold", "Restored", "ColdStart", 90000);
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "ColdStart");
    cJSON_Delete(ws);
    reasons = event_reasons("cold");
    assert_non_null(strstr(reasons, "ColdStart,"));
    free(reasons);
}

/* Killed right after the trigger was created (before the status write), and
 * right before the pod delete: the same snapshot, one trigger, the pod
 * deleted only after Ready. */
static void test_crash_points(void **state)
{
    (void)state;
    apply_ws("crashy", "it-cpu-snap", 0, NULL);
    cJSON_Delete(wait_state("crashy", "Running", 60000));
    controller_stop();
    controller_start("SnapshotBegin");
    set_paused("crashy", 1);
    assert_int_equal(controller_wait_exit(30000), 3);
    assert_int_equal(live_pods("crashy"), 1);
    controller_start("before:DeletePod");
    assert_int_equal(controller_wait_exit(60000), 3);
    assert_int_equal(live_pods("crashy"), 1);
    controller_start(NULL);
    cJSON *ws = wait_state("crashy", "Paused", 60000);
    assert_string_equal(str_at(ws, "status.snapshot.attempt"), "crashy-p1-1");
    assert_string_equal(str_at(ws, "status.snapshot.phase"), "Ready");
    cJSON_Delete(ws);
    assert_int_equal(count_objects("podsnapshotmanualtriggers", "hibernator.dev/workspace=crashy"),
                     1);
    assert_int_equal(count_objects("podsnapshots", "gke-pod-snapshot-triggered-by=crashy-p1-1"), 1);

    /* The PodSnapshot goes while the controller is down: nothing deletes its
     * trigger then. Back, the controller finds the trigger without it once
     * its caches have synced, and deletes it. */
    controller_stop();
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s delete podsnapshots -l "
                                     "gke-pod-snapshot-triggered-by=crashy-p1-1 --wait=true "
                                     "--timeout=60s",
                                     ns),
                     0);
    assert_int_equal(trigger_exists("crashy-p1-1"), 1);
    controller_start(NULL);
    uint64_t end = harness_now_ms() + 30000;
    while (trigger_exists("crashy-p1-1") != 0 && harness_now_ms() < end)
        usleep(200 * 1000);
    assert_int_equal(trigger_exists("crashy-p1-1"), 0);
}

/* Deleting a workspace takes its snapshots and every trigger, also one that
 * never made a PodSnapshot and that nothing else would delete (no owner). */
static void test_delete_leaves_nothing(void **state)
{
    (void)state;
    apply_ws("gone", "it-cpu-snap", 0, NULL);
    cJSON_Delete(wait_state("gone", "Running", 60000));
    set_paused("gone", 1);
    cJSON_Delete(wait_state("gone", "Paused", 60000));
    assert_int_equal(count_objects("podsnapshots", "gke-pod-snapshot-triggered-by=gone-p1-1"), 1);
    assert_int_equal(harness_apply("apiVersion: podsnapshot.gke.io/v1\n"
                                   "kind: PodSnapshotManualTrigger\n"
                                   "metadata:\n"
                                   "  name: gone-p9-1\n"
                                   "  namespace: %s\n"
                                   "  labels: {app.kubernetes.io/managed-by: hibernator, "
                                   "hibernator.dev/workspace: gone}\n"
                                   "spec: {targetPod: gone-nowhere}\n",
                                   ns),
                     0);
    assert_int_equal(count_objects("podsnapshotmanualtriggers", "hibernator.dev/workspace=gone"),
                     2);
    delete_ws("gone");
    assert_true(wait_gone("gone", 60000));
    uint64_t end = harness_now_ms() + 60000;
    int triggers = -1, snapshots = -1;
    do {
        if (triggers >= 0)
            usleep(250 * 1000);
        triggers = count_objects("podsnapshotmanualtriggers", "hibernator.dev/workspace=gone");
        snapshots = count_objects("podsnapshots", "gke-pod-snapshot-triggered-by=gone-p1-1");
    } while ((triggers || snapshots) && harness_now_ms() < end);
    assert_int_equal(triggers, 0);
    assert_int_equal(snapshots, 0);
}

/* ---- set-up ------------------------------------------------------------------ */

static int clean_slate(void **state)
{
    (void)state;
    harness_kubectl(NULL, "-n %s delete workspaces --all --wait=true --timeout=60s", ns);
    return 0;
}

static void apply_class(const char *name, const char *extra)
{
    assert_int_equal(
        harness_apply("apiVersion: hibernator.dev/v1alpha1\nkind: WorkspaceClass\n"
                      "metadata: {name: %s}\n"
                      "spec:\n"
                      "  images: {allowed: [\"registry.local/notebook:*\"], default: "
                      "\"registry.local/notebook:v1\"}\n"
                      "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: "
                      "NoSchedule}]\n"
                      "  home: {size: 1Gi}\n"
                      "  pause: {gracePeriodSeconds: 1}\n"
                      "%s",
                      name, extra),
        0);
}

static int group_setup(void **state)
{
    (void)state;
    it_deploy("it-snapshot");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "kubectl --kubeconfig '%s' apply -f '%s/deploy/local/podsnapshot-crds.yaml' "
             ">/dev/null && kubectl --kubeconfig '%s' wait --for=condition=Established "
             "--timeout=60s crd/podsnapshots.podsnapshot.gke.io >/dev/null",
             harness_kubeconfig(), SOURCE_DIR, harness_kubeconfig());
    assert_int_equal(system(cmd), 0);
    ns = harness_namespace("it-snapshot");
    assert_int_equal(harness_apply("apiVersion: podsnapshot.gke.io/v1\n"
                                   "kind: PodSnapshotStorageConfig\n"
                                   "metadata: {name: it-snapshot}\n"
                                   "spec: {snapshotStorageConfig: {gcs: {bucket: local}}}\n"),
                     0);
    assert_int_equal(harness_kubectl(NULL, "-n %s create configmap snapshot-simulator", ns), 0);
    const char *snap = "  snapshot: {backend: GKE, storageConfigName: it-snapshot, timeout: 60s, "
                       "retryAfter: 10m%s}\n";
    char extra[512], s[256];
    snprintf(s, sizeof(s), snap, "");
    snprintf(extra, sizeof(extra),
             "  accelerator: {resourceName: nvidia.com/gpu, count: 1, product: Tesla-T4}\n%s", s);
    apply_class("it-gpu-snap", extra);
    apply_class("it-cpu-snap", s);
    snprintf(s, sizeof(s), snap, ", onFailure: PauseWithoutMemory");
    apply_class("it-cpu-snap-nomem", s);
    simulator_start();
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    if (simulator > 0) {
        kill(simulator, SIGTERM);
        waitpid(simulator, NULL, 0);
    }
    harness_kubectl(NULL, "delete namespace %s --wait=false", ns);
    it_show_logs();
    free(ns);
    return 0;
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_gpu_cycle, clean_slate),
        cmocka_unit_test_setup(test_checkpoint_failed, clean_slate),
        cmocka_unit_test_setup(test_cold_start_and_crash_loop, clean_slate),
        cmocka_unit_test_setup(test_crash_points, clean_slate),
        cmocka_unit_test_setup(test_delete_leaves_nothing, clean_slate),
    };
    return cmocka_run_group_tests_name("pod snapshots", tests, group_setup, group_teardown);
}
