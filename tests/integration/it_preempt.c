/*
 * Kueue's preemption as a pause with memory, on the real node: Kueue's
 * manager (cluster.sh up --real-node --kueue), the real kubelet running
 * the pod's preStop hook, the node agent checkpointing through the
 * kubelet, CRIU and containerd, the cluster's registry.
 *
 *   test_preempted_with_memory  a Jupyter kernel with x = 42 in a class
 *                               with spec.queue.evictionHold; a workspace
 *                               of higher priority in the same queue, whose
 *                               quota fits one: Kueue preempts the first,
 *                               its hook holds it, the controller pauses it
 *                               with a snapshot (Paused, reason Preempted,
 *                               memory snapshot, no interruption); once the
 *                               other pauses, the first resumes through its
 *                               queue FromSnapshot and the same kernel
 *                               prints 42
 *
 * Needs the real node with its registry, the notebook and controller
 * images (deploy/local/images.sh) and Kueue; skips without them unless
 * HIBERNATOR_REQUIRE_CLUSTER is set. The notebook runs as root (CRIU on
 * this machine, docs/snapshots.md).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "jupyter.h"
#include "workspaces.h"

#define TOKEN "it-preempt-0123456789abcdef"
#define RUNTIME_DIR "/home/jovyan/.local/share/jupyter/runtime"
#define HIGH_PRIORITY "it-preempt-high"

static char cluster_queue[96];

/* A notebook class of the real node (deploy/local/demo.yaml's, without
 * the idle pause) sending its pods to LocalQueue "nb" with extra_queue. */
static void apply_notebook_class(const char *name, const char *extra_queue)
{
    const char *registry = it_registry()->host;
    assert_int_equal(
        harness_apply("apiVersion: hibernator.dev/v1alpha1\nkind: WorkspaceClass\n"
                      "metadata: {name: %s}\n"
                      "spec:\n"
                      "  images: {allowed: [\"hibernator.local/notebook:*\"], "
                      "default: \"hibernator.local/notebook:dev\"}\n"
                      "  port: 8888\n"
                      "  env: [{name: NOTEBOOK_USER, value: root}]\n"
                      "  resources: {requests: {cpu: 100m, memory: 256Mi}, "
                      "limits: {memory: 2Gi}}\n"
                      "  tolerations: [{key: hibernator.dev/real-node, operator: Exists, "
                      "effect: NoSchedule}]\n"
                      "  home: {size: 1Gi, storageClassName: standard, mountPath: /home/jovyan, "
                      "onDelete: Delete}\n"
                      "  pause: {gracePeriodSeconds: 10}\n"
                      "  resume: {capacityTimeout: 10m, onCapacityTimeout: Wait}\n"
                      "  snapshot: {backend: ContainerCheckpoint, repository: %s/checkpoints, "
                      "pullSecretName: checkpoints, timeout: 5m, onFailure: PauseWithoutMemory, "
                      "restoreCheckTimeout: 2m}\n"
                      "  activity: {application: Jupyter, url: \"http://{podIP}:{port}\", "
                      "tokenSecretRef: {name: \"{workspace}-jupyter\"}}\n"
                      "  idle: {autoPause: false}\n"
                      "  queue: {localQueue: nb%s}\n",
                      name, registry, extra_queue),
        0);
}

/* A quota of one notebook (150m of CPU, each asks 100m) for this test's
 * namespace; the higher priority preempts within it. */
static void apply_queue(void)
{
    snprintf(cluster_queue, sizeof(cluster_queue), "%s", ns);
    assert_int_equal(
        harness_apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
                      "metadata: {name: it-preempt-node}\n"
                      "---\n"
                      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
                      "metadata: {name: %s}\n"
                      "spec:\n"
                      "  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}\n"
                      "  preemption: {withinClusterQueue: LowerPriority}\n"
                      "  resourceGroups:\n"
                      "  - coveredResources: [cpu, memory]\n"
                      "    flavors:\n"
                      "    - name: it-preempt-node\n"
                      "      resources:\n"
                      "      - {name: cpu, nominalQuota: 150m}\n"
                      "      - {name: memory, nominalQuota: 1Gi}\n"
                      "---\n"
                      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
                      "metadata: {name: nb, namespace: %s}\n"
                      "spec: {clusterQueue: %s}\n"
                      "---\n"
                      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\n"
                      "metadata: {name: " HIGH_PRIORITY "}\n"
                      "value: 1000\n",
                      cluster_queue, ns, ns, cluster_queue),
        0);
}

static char *pod_of(const char *name)
{
    cJSON *ws = wait_reason(name, "Ready", "PodReady", 240000);
    char *pod = strdup(str_at(ws, "status.podName"));
    assert_non_null(pod);
    cJSON_Delete(ws);
    return pod;
}

static void test_preempted_with_memory(void **state)
{
    (void)state;
    apply_ws("low", "it-preempt-low", 0, NULL);
    char *pod = pod_of("low");
    char *hook = NULL;
    assert_int_equal(harness_kubectl(&hook,
                                     "-n %s get pod %s -o jsonpath='{.spec.containers[0]."
                                     "lifecycle.preStop.sleep.seconds} "
                                     "{.spec.terminationGracePeriodSeconds}'",
                                     ns, pod),
                     0);
    assert_string_equal(hook, "60 70");
    free(hook);
    free(jupyter_status(pod, TOKEN));
    char *out = jupyter_run_cell(pod, TOKEN, RUNTIME_DIR, NULL,
                                 "import os; x = 42; buf = bytearray(os.urandom(1 << 20)) * 64; "
                                 "print(x, len(buf))");
    char kernel[64];
    snprintf(kernel, sizeof(kernel), "%.*s", (int)strcspn(out, "\n"), out);
    assert_non_null(strstr(out, "42 67108864"));
    free(out);

    /* The preemptor: the quota fits one, so Kueue evicts the first. */
    uint64_t t0 = harness_now_ms();
    apply_ws("high", "it-preempt-high", 0, NULL);
    cJSON *ws = wait_state("low", "Paused", 300000);
    uint64_t paused = harness_now_ms();
    assert_string_equal(str_at(ws, "status.lastPause.reason"), "Preempted");
    assert_non_null(strstr(str_at(ws, "status.lastPause.message"),
                           "preempted by Kueue (WorkloadEvictedDueToPreempted"));
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    assert_true(num_at(ws, "status.interruptions.count") <= 0);
    double seconds = num_at(ws, "status.snapshot.seconds");
    print_message("it_preempt: Paused %.1f s after the preemptor was applied (snapshot %.1f s, "
                  "the hook allowed 60 s): %s\n",
                  (double)(paused - t0) / 1000.0, seconds, str_at(ws, "status.lastPause.message"));
    cJSON_Delete(ws);
    char *reasons = event_reasons("low");
    print_message("it_preempt: low's events: %s\n", reasons);
    assert_non_null(strstr(reasons, "Preempted,"));
    assert_non_null(strstr(reasons, "SnapshotReady,"));
    assert_null(strstr(reasons, "PodInterrupted"));
    free(reasons);
    /* Gone within the hook's 60 s: the controller's grace-0 delete after
     * the Ready snapshot ends the hold. */
    assert_true(paused - t0 < 60000);
    free(pod_of("high"));

    /* The preemptor pauses; the first resumes through its queue with its
     * memory: the same kernel, the same x. */
    set_paused("high", 1);
    cJSON_Delete(wait_state("high", "Paused", 120000));
    t0 = harness_now_ms();
    set_paused("low", 0);
    /* Whatever the restore came to, say it before judging it. */
    uint64_t until = harness_now_ms() + 300000;
    for (;;) {
        ws = ws_json("low");
        /* the first start's Restored=True/Fresh is still there at first */
        if ((strcmp(cond_field(ws, "Restored", "status"), "True") == 0 &&
             strcmp(cond_field(ws, "Restored", "reason"), "Fresh") != 0) ||
            harness_now_ms() >= until)
            break;
        cJSON_Delete(ws);
        usleep(500 * 1000);
    }
    uint64_t back = harness_now_ms();
    print_message("it_preempt: Restored=%s/%s: %s\n", cond_field(ws, "Restored", "status"),
                  cond_field(ws, "Restored", "reason"), cond_field(ws, "Restored", "message"));
    if (strcmp(cond_field(ws, "Restored", "reason"), "FromSnapshot") != 0) {
        reasons = event_reasons("low");
        print_message("it_preempt: low's events: %s\n", reasons);
        free(reasons);
        harness_sh(NULL, "kubectl --kubeconfig '%s' -n %s get events --sort-by=.lastTimestamp >&2",
                   harness_kubeconfig(), ns);
    }
    assert_string_equal(cond_field(ws, "Restored", "reason"), "FromSnapshot");
    char *pod2 = strdup(str_at(ws, "status.podName"));
    assert_non_null(pod2);
    cJSON_Delete(ws);
    out = jupyter_run_cell(pod2, TOKEN, RUNTIME_DIR, kernel, "print(x, len(buf))");
    print_message("it_preempt: FromSnapshot %.1f s after the resume; the kernel says: %s",
                  (double)(back - t0) / 1000.0, strchr(out, '\n') ? strchr(out, '\n') + 1 : out);
    assert_non_null(strstr(out, kernel));
    assert_non_null(strstr(out, "42 67108864"));
    free(out);
    free(pod2);
    free(pod);
}

static int group_setup(void **state)
{
    (void)state;
    harness_require_real_node();
    if (!getenv("HIBERNATOR_KUEUE_VISIBILITY_URL")) {
        fprintf(stderr, "the cluster runs no Kueue (cluster.sh up --kueue): %s\n",
                getenv("HIBERNATOR_REQUIRE_CLUSTER") ? "failing" : "skipping");
        exit(getenv("HIBERNATOR_REQUIRE_CLUSTER") ? 1 : 77);
    }
    it_deploy("it-preempt");
    char *out = NULL;
    if (harness_sh(&out, "'%s/deploy/local/node-agent.sh' up --dir '%s' 2>&1", SOURCE_DIR,
                   harness_cluster_dir()) != 0) {
        fprintf(stderr, "it_preempt: node-agent.sh up: %s\n", out);
        exit(1);
    }
    free(out);
    apply_notebook_class("it-preempt-low", ", evictionHold: 1m");
    apply_notebook_class("it-preempt-high", ", priorityClass: " HIGH_PRIORITY);
    ns = harness_namespace("it-preempt");
    apply_queue();
    if (harness_kubectl(NULL, "-n %s create secret generic low-jupyter --from-literal=token=" TOKEN,
                        ns) != 0 ||
        harness_kubectl(NULL,
                        "-n %s create secret generic high-jupyter --from-literal=token=" TOKEN,
                        ns) != 0 ||
        harness_kubectl(NULL,
                        "-n %s create secret docker-registry checkpoints --docker-server=%s "
                        "--docker-username=hibernator --docker-password=%s",
                        ns, it_registry()->host, it_registry()->password) != 0)
        return -1;
    static char flag[300];
    static const char *args[2];
    snprintf(flag, sizeof(flag), "--namespace=%s", ns);
    args[0] = flag;
    args[1] = NULL;
    controller_extra_args(args);
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (ns) {
        /* The controller releases the Workspaces, the agent the
         * ContainerSnapshots (their images first). The held class's pod
         * takes its hook's minute to go: a delete waits for it. */
        harness_kubectl(NULL, "-n %s delete workspaces --all --wait=true --timeout=180s", ns);
        harness_kubectl(NULL, "-n %s wait --for=delete containersnapshots --all --timeout=60s", ns);
    }
    controller_stop();
    it_show_logs();
    harness_namespace_delete(ns);
    if (cluster_queue[0])
        harness_kubectl(NULL, "delete clusterqueue %s --ignore-not-found --wait=false",
                        cluster_queue);
    harness_kubectl(NULL, "delete workloadpriorityclass " HIGH_PRIORITY " --ignore-not-found");
    harness_kubectl(NULL,
                    "delete workspaceclass it-preempt-low it-preempt-high --ignore-not-found");
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preempted_with_memory),
    };
    return cmocka_run_group_tests_name("preemption on the real node", tests, group_setup,
                                       group_teardown);
}
