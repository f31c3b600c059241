/*
 * The real-node demo as `hack/run-local --real-node` sets it up: the
 * classes of deploy/local/demo.yaml as written (REGISTRY replaced by the
 * cluster's registry), the node agent's DaemonSet as
 * deploy/local/node-agent.sh installs it (kubectl apply -k deploy/node/),
 * the Secret "checkpoints" in the namespace, and the controller
 * (--namespace). Nothing plays a backend: the kubelet checkpoints through
 * CRIU, containerd restores.
 *
 *   test_idle_cycle   a real Jupyter Server (hibernator.local/notebook:dev)
 *                     with x = 42 and 256 MiB in a kernel, left alone, is
 *                     announced (Idle=True/PauseScheduled, an IdleWarning
 *                     event), checkpointed and Paused on its own within the
 *                     class's durations (printed): the pod gone, the image
 *                     in the registry; resumed, Restored=True/FromSnapshot,
 *                     and the same kernel prints 42
 *   test_drill        `kubectl workspace drill --class demo-canary`: PASS,
 *                     exit 0 (the canary's value in memory is the same
 *                     after the resume, and the controller says
 *                     FromSnapshot)
 *
 * Needs the real node (HIBERNATOR_REAL_NODE) with its registry, the
 * notebook, canary and controller images (deploy/local/images.sh); skips
 * without the node unless HIBERNATOR_REQUIRE_CLUSTER is set. On this
 * machine CRIU dumps only processes of its own uid: the classes run their
 * applications as root (docs/snapshots.md).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "jupyter.h"
#include "workspaces.h"

#define TOKEN "it-demo-0123456789abcdef"
#define RUNTIME_DIR "/home/jovyan/.local/share/jupyter/runtime"

static const char *registry, *password; /* it_registry()'s */

static void start_controller(void)
{
    static char flag[300];
    static const char *args[2];
    snprintf(flag, sizeof(flag), "--namespace=%s", ns);
    args[0] = flag;
    args[1] = NULL;
    controller_extra_args(args);
    controller_start(NULL);
}

static void test_idle_cycle(void **state)
{
    (void)state;
    uint64_t t0 = harness_now_ms();
    apply_ws("notebook", "demo-notebook", 0, NULL);
    cJSON *ws = wait_reason("notebook", "Ready", "PodReady", 120000);
    char pod[128];
    snprintf(pod, sizeof(pod), "%s", str_at(ws, "status.podName"));
    cJSON_Delete(ws);
    uint64_t ready = harness_now_ms();
    free(jupyter_status(pod, TOKEN));
    char *out = jupyter_run_cell(pod, TOKEN, RUNTIME_DIR, NULL,
                                 "import os; x = 42; buf = bytearray(os.urandom(1 << 20)) * 256; "
                                 "print(x, len(buf))");
    char kernel[64];
    snprintf(kernel, sizeof(kernel), "%.*s", (int)strcspn(out, "\n"), out);
    assert_non_null(strstr(out, "42 268435456"));
    free(out);
    uint64_t cell = harness_now_ms();

    /* Nobody uses it: announced, checkpointed and paused on its own. The
     * class: idle after 60 s, announced 20 s ahead, probes every 5 s. */
    ws = wait_reason("notebook", "Idle", "PauseScheduled", 120000);
    uint64_t announced = harness_now_ms();
    cJSON_Delete(ws);
    ws = wait_state("notebook", "Paused", 300000);
    uint64_t paused = harness_now_ms();
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    assert_string_equal(str_at(ws, "status.lastPause.reason"), "IdleTimeout");
    char image[512];
    snprintf(image, sizeof(image), "%s", str_at(ws, "status.snapshot.image"));
    double seconds = num_at(ws, "status.snapshot.seconds");
    cJSON_Delete(ws);
    char *reasons = event_reasons("notebook");
    assert_non_null(strstr(reasons, "IdleWarning,"));
    assert_non_null(strstr(reasons, "IdleTimeout,"));
    assert_non_null(strstr(reasons, "SnapshotReady,"));
    free(reasons);
    print_message("it_demo: ready %.1f s after create; after the cell, announced %.1f s and "
                  "paused %.1f s later (snapshot %.1f s); %s\n",
                  (ready - t0) / 1000.0, (announced - cell) / 1000.0, (paused - cell) / 1000.0,
                  seconds, image);
    /* 60 s idle after the cell, a probe interval, the confirming probe, the
     * checkpoint and push of ~300 MB, the pod's deletion. */
    assert_true(paused - cell >= 55000);
    assert_true(paused - cell <= 240000);
    assert_int_equal(live_pods("notebook"), 0);
    char path[300];
    snprintf(path, sizeof(path), "checkpoints/%s/notebook", ns);
    const char *digest = strchr(image, '@');
    assert_non_null(digest);
    assert_int_equal(it_registry_head(path, digest + 1), 200);

    /* Resumed: the same server, the same kernel, the same x. */
    t0 = harness_now_ms();
    set_paused("notebook", 0);
    ws = wait_reason("notebook", "Restored", "FromSnapshot", 240000);
    uint64_t back = harness_now_ms();
    snprintf(pod, sizeof(pod), "%s", str_at(ws, "status.podName"));
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromSnapshot");
    /* What the application showed: the paused server (its start) with the
     * kernel the probes saw before the idle pause. */
    const char *proof = cond_field(ws, "Restored", "message");
    print_message("it_demo: %s\n", proof);
    assert_non_null(
        strstr(proof, "that was paused, listing the 1 kernel it listed before the pause"));
    cJSON_Delete(ws);
    out = jupyter_run_cell(pod, TOKEN, RUNTIME_DIR, kernel, "print(x, len(buf))");
    print_message("it_demo: Restored=True/FromSnapshot %.1f s after the resume; the kernel says: "
                  "%s",
                  (back - t0) / 1000.0, strchr(out, '\n') ? strchr(out, '\n') + 1 : out);
    assert_non_null(strstr(out, kernel));
    assert_non_null(strstr(out, "42 268435456"));
    free(out);
}

/* The drill of the demo's canary class: the memory really comes back. */
static void test_drill(void **state)
{
    (void)state;
    char *out = NULL;
    int r =
        harness_sh(&out, "'%s' drill --kubeconfig '%s' -n %s --class demo-canary --timeout 4m 2>&1",
                   KUBECTL_WORKSPACE_BIN, harness_kubeconfig(), ns);
    fprintf(stderr, "%s", out ? out : "");
    assert_int_equal(r, 0);
    assert_non_null(strstr(out, "drill: ready in"));
    assert_non_null(strstr(out, "(restored from snapshot)"));
    assert_non_null(
        strstr(out, "PASS: memory restored (same canary value, restored from snapshot)"));
    free(out);
}

static int group_setup(void **state)
{
    (void)state;
    harness_require_real_node();
    registry = it_registry()->host;
    password = it_registry()->password;
    it_deploy("it-demo");
    char *out = NULL;
    if (harness_sh(&out, "'%s/deploy/local/node-agent.sh' up --dir '%s' 2>&1", SOURCE_DIR,
                   harness_cluster_dir()) != 0) {
        fprintf(stderr, "it_demo: node-agent.sh up: %s\n", out);
        exit(1);
    }
    free(out);
    if (harness_sh(&out,
                   "sed 's|REGISTRY/|%s/|' '%s/deploy/local/demo.yaml' | kubectl --kubeconfig "
                   "'%s' apply -f - 2>&1",
                   registry, SOURCE_DIR, harness_kubeconfig()) != 0) {
        fprintf(stderr, "it_demo: deploy/local/demo.yaml: %s\n", out);
        exit(1);
    }
    free(out);
    ns = harness_namespace("it-demo");
    if (harness_kubectl(NULL,
                        "-n %s create secret generic notebook-jupyter --from-literal=token=" TOKEN,
                        ns) != 0 ||
        harness_kubectl(NULL,
                        "-n %s create secret docker-registry checkpoints --docker-server=%s "
                        "--docker-username=hibernator --docker-password=%s",
                        ns, registry, password) != 0)
        return -1;
    start_controller();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    /* The controller releases the Workspaces, the agent the
     * ContainerSnapshots (their images first). */
    harness_kubectl(NULL, "-n %s delete workspaces --all --wait=true --timeout=120s", ns);
    harness_kubectl(NULL, "-n %s wait --for=delete containersnapshots --all --timeout=60s", ns);
    controller_stop();
    it_show_logs();
    harness_namespace_delete(ns);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle_cycle),
        cmocka_unit_test(test_drill),
    };
    if (getenv("IT_ONLY"))
        cmocka_set_test_filter(getenv("IT_ONLY"));
    return cmocka_run_group_tests_name("demo", tests, group_setup, group_teardown);
}
