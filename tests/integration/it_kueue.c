/*
 * Workspaces under Kueue, on a local cluster with Kueue's manager running
 * (cluster.sh up --kueue): a class sends its pods to a LocalQueue whose
 * ClusterQueue has a quota of one GPU, though the cluster has three. The
 * second workspace's pod is held back by Kueue itself (its admission gate):
 * the Workspace says Queued, with the queue and Kueue's own words on the
 * quota that holds it, never WaitingForCapacity; when the first pauses,
 * the quota goes back and the second runs. A workspace naming a queue its
 * class does not allow is refused, naming the field. A workspace Kueue
 * preempts for one of higher priority is an interruption that says so.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "workspaces.h"

static char cluster_queue[96];

/* The quota: one T4 for this test's namespace, in a ClusterQueue of its
 * own (ClusterQueues are cluster-scoped; a lane's other tests have theirs). */
static void apply_queue(void)
{
    snprintf(cluster_queue, sizeof(cluster_queue), "%s", ns);
    assert_int_equal(
        harness_apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
                      "metadata: {name: it-t4}\n"
                      "spec: {nodeLabels: {nvidia.com/gpu.product: Tesla-T4}}\n"
                      "---\n"
                      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
                      "metadata: {name: %s}\n"
                      "spec:\n"
                      "  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}\n"
                      "  preemption: {withinClusterQueue: LowerPriority}\n"
                      "  resourceGroups:\n"
                      "  - coveredResources: [cpu, memory, nvidia.com/gpu]\n"
                      "    flavors:\n"
                      "    - name: it-t4\n"
                      "      resources:\n"
                      "      - {name: cpu, nominalQuota: \"16\"}\n"
                      "      - {name: memory, nominalQuota: 64Gi}\n"
                      "      - {name: nvidia.com/gpu, nominalQuota: \"1\"}\n"
                      "---\n"
                      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
                      "metadata: {name: gpus, namespace: %s}\n"
                      "spec: {clusterQueue: %s}\n"
                      "---\n"
                      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\n"
                      "metadata: {name: it-kueue-high}\n"
                      "value: 1000\n"
                      "---\n"
                      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\n"
                      "metadata: {name: it-kueue-background}\n"
                      "value: -10\n",
                      cluster_queue, ns, ns, cluster_queue),
        0);
}

/* Two teams, a ClusterQueue each with one T4 of quota, in one cohort
 * (borrowing up to one more), each with a LocalQueue in the test's
 * namespace; the cluster has three T4s. */
static void apply_team_queues(void)
{
    for (int i = 0; i < 2; i++) {
        char cq[128];
        snprintf(cq, sizeof(cq), "%s-team-%c", ns, 'a' + i);
        assert_int_equal(
            harness_apply(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
                "metadata: {name: %s}\n"
                "spec:\n"
                "  cohortName: %s\n"
                "  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}\n"
                "  resourceGroups:\n"
                "  - coveredResources: [cpu, memory, nvidia.com/gpu]\n"
                "    flavors:\n"
                "    - name: it-t4\n"
                "      resources:\n"
                "      - {name: cpu, nominalQuota: \"16\"}\n"
                "      - {name: memory, nominalQuota: 64Gi}\n"
                "      - {name: nvidia.com/gpu, nominalQuota: \"1\", borrowingLimit: \"1\"}\n"
                "---\n"
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
                "metadata: {name: team-%c, namespace: %s}\n"
                "spec: {clusterQueue: %s}\n",
                cq, ns, ns, 'a' + i, ns, cq),
            0);
    }
}

/* Waits until the workspace's status.message holds words; prints it. */
static void wait_message(const char *name, const char *words)
{
    uint64_t end = harness_now_ms() + 30000;
    for (;;) {
        cJSON *ws = ws_json(name);
        const char *msg = ws ? str_at(ws, "status.message") : NULL;
        if (msg && strstr(msg, words)) {
            print_message("  %s: %s\n", name, msg);
            cJSON_Delete(ws);
            return;
        }
        if (harness_now_ms() >= end)
            fail_msg("%s: no \"%s\" in: %s", name, words, msg ? msg : "(none)");
        cJSON_Delete(ws);
        usleep(300 * 1000);
    }
}

/* Waits until the workspace's path holds at least want (a number). */
static cJSON *wait_number_at(const char *name, const char *path, double want, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    for (;;) {
        cJSON *ws = ws_json(name);
        if (ws && num_at(ws, path) >= want)
            return ws;
        cJSON_Delete(ws);
        if (harness_now_ms() >= end)
            fail_msg("%s: %s below %g", name, path, want);
        usleep(300 * 1000);
    }
}

/* Polls the workspaces second and third until one holds first_words at
 * path and the other holds second_words (NULL: anything); returns the name
 * of the one holding first_words. Which is first is Kueue's to choose. */
static const char *first_of_pair(const char *path, const char *first_words,
                                 const char *second_words, uint64_t timeout_ms)
{
    static const char *const names[2] = {"second", "third"};
    uint64_t end = harness_now_ms() + timeout_ms;
    for (;;) {
        cJSON *ws[2] = {ws_json(names[0]), ws_json(names[1])};
        const char *v[2];
        for (int i = 0; i < 2; i++)
            v[i] = ws[i] ? str_at(ws[i], path) : NULL;
        const char *found = NULL;
        for (int i = 0; i < 2 && !found; i++)
            if (v[i] && strstr(v[i], first_words) &&
                (!second_words || (v[1 - i] && strstr(v[1 - i], second_words))))
                found = names[i];
        if (!found && harness_now_ms() >= end)
            fail_msg("%s: second has \"%s\", third \"%s\"; wanted \"%s\" and %s%s%s", path,
                     v[0] ? v[0] : "(none)", v[1] ? v[1] : "(none)", first_words,
                     second_words ? "\"" : "", second_words ? second_words : "anything",
                     second_words ? "\"" : "");
        cJSON_Delete(ws[0]);
        cJSON_Delete(ws[1]);
        if (found)
            return found;
        usleep(300 * 1000);
    }
}

static void test_queued_then_admitted(void **state)
{
    (void)state;
    apply_ws("first", "it-kueue", 0, NULL);
    cJSON *ws = wait_state("first", "Running", 90000);
    cJSON_Delete(ws);
    /* Its pod went through the queue: Kueue's label and finalizer on it. */
    char *labels = NULL;
    assert_int_equal(harness_kubectl(&labels,
                                     "-n %s get pod first-1 -o jsonpath="
                                     "'{.metadata.labels.kueue\\.x-k8s\\.io/queue-name} "
                                     "{.metadata.finalizers}'",
                                     ns),
                     0);
    print_message("  first-1: %s\n", labels);
    assert_non_null(strstr(labels, "gpus "));
    assert_non_null(strstr(labels, "kueue.x-k8s.io/managed"));
    free(labels);

    apply_ws("second", "it-kueue", 0, NULL);
    ws = wait_state("second", "Queued", 60000);
    const char *msg = str_at(ws, "status.message");
    print_message("  second: Queued: %s\n", msg);
    assert_non_null(strstr(msg, "pod second-1 waits in Kueue queue gpus"));
    assert_string_equal(cond_field(ws, "Ready", "reason"), "WaitingForAdmission");
    assert_null(condition(ws, "CapacityAvailable"));
    cJSON_Delete(ws);
    /* Kueue's verdict comes with its Workload. */
    uint64_t end = harness_now_ms() + 30000;
    for (;;) {
        ws = ws_json("second");
        msg = ws ? str_at(ws, "status.message") : NULL;
        if (msg && strstr(msg, "insufficient unused quota for nvidia.com/gpu"))
            break;
        if (harness_now_ms() >= end)
            fail_msg("no quota words: %s", msg ? msg : "(none)");
        cJSON_Delete(ws);
        usleep(300 * 1000);
    }
    print_message("  second: %s\n", msg);
    cJSON_Delete(ws);
    /* A third, resumed with `kubectl workspace resume --wait`, waits behind
     * it: each says its place, from Kueue's visibility API, in its message
     * and in status.queue, and the plugin prints the place as it moves. */
    apply_ws("third", "it-kueue", 1, NULL);
    cJSON_Delete(wait_state("third", "Paused", 60000));
    char resume_log[] = "/tmp/it-kueue-resume.XXXXXX";
    int fd = mkstemp(resume_log);
    assert_true(fd >= 0);
    close(fd);
    char *pid = NULL;
    assert_int_equal(harness_sh(&pid,
                                "'%s' --kubeconfig '%s' -n %s resume third --wait --timeout 5m "
                                ">'%s' 2>&1 & echo $!",
                                KUBECTL_WORKSPACE_BIN, harness_kubeconfig(), ns, resume_log),
                     0);
    pid_t resume_pid = pid ? (pid_t)atoi(pid) : 0;
    free(pid);
    assert_true(resume_pid > 0);
    cJSON_Delete(wait_state("third", "Queued", 60000));
    /* Their places, in Kueue's order (Kueue's to choose; it has listed the
     * newer one first for a while): one is number 1 of 2, the other 2. */
    const char *ahead = first_of_pair("status.message", "number 1 of 2 waiting there",
                                      "number 2 of 2 waiting there", 60000);
    const char *behind = strcmp(ahead, "second") == 0 ? "third" : "second";
    print_message("  %s is number 1 of 2, %s number 2 of 2\n", ahead, behind);
    ws = ws_json(behind);
    assert_non_null(ws);
    assert_string_equal(str_at(ws, "status.queue.name"), "gpus");
    assert_int_equal((int)num_at(ws, "status.queue.position"), 2);
    assert_int_equal((int)num_at(ws, "status.queue.pending"), 2);
    assert_non_null(str_at(ws, "status.queue.waitingSince"));
    print_message("  %s: status.queue %s, number %d of %d since %s\n", behind,
                  str_at(ws, "status.queue.name"), (int)num_at(ws, "status.queue.position"),
                  (int)num_at(ws, "status.queue.pending"), str_at(ws, "status.queue.waitingSince"));
    cJSON_Delete(ws);
    /* Held by the queue, not by the scheduler: three GPUs, two free. */
    char *gates = NULL;
    harness_kubectl(&gates, "-n %s get pod second-1 -o jsonpath='{.spec.schedulingGates}'", ns);
    assert_non_null(strstr(gates, "kueue.x-k8s.io/admission"));
    free(gates);

    /* The first pauses: its quota goes back, and Kueue admits one of the
     * two; the other moves up to number 1 of 1. */
    uint64_t t0 = harness_now_ms();
    set_paused("first", 1);
    cJSON_Delete(wait_state("first", "Paused", 60000));
    uint64_t t_paused = harness_now_ms();
    const char *admitted = first_of_pair("status.state", "Running", NULL, 120000);
    const char *waiting = strcmp(admitted, "second") == 0 ? "third" : "second";
    uint64_t t_running = harness_now_ms();
    print_message("  first paused %.1f s after the request; %s Running %.1f s after that\n",
                  (double)(t_paused - t0) / 1000.0, admitted,
                  (double)(t_running - t_paused) / 1000.0);
    ws = ws_json(admitted);
    assert_string_equal(cond_field(ws, "Ready", "reason"), "PodReady");
    /* status.queue went with the wait. */
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(ws, "status"), "queue"));
    cJSON_Delete(ws);
    wait_message(waiting, "number 1 of 1 waiting there");
    ws = ws_json(waiting);
    assert_int_equal((int)num_at(ws, "status.queue.position"), 1);
    cJSON_Delete(ws);
    /* The plugin following the third's resume printed its place as it
     * changed: number N of 2, then number 1 of 1 or its start. */
    const char *last = strcmp(waiting, "third") == 0 ? "number 1 of 1 waiting there" : "ready in";
    char *printed = NULL;
    for (int i = 0; i < 150; i++) {
        free(printed);
        printed = NULL;
        harness_sh(&printed, "cat '%s'", resume_log);
        if (printed && strstr(printed, last))
            break;
        usleep(200 * 1000);
    }
    print_message("  kubectl workspace resume third --wait printed:\n%s", printed ? printed : "");
    const char *two = printed ? strstr(printed, "queued: pod third-1 waits in Kueue queue gpus, "
                                                "number ")
                              : NULL;
    assert_non_null(two);
    assert_non_null(strstr(two, " of 2 waiting there"));
    assert_non_null(strstr(two, last));
    free(printed);
    kill(resume_pid, SIGTERM); /* it would wait on for the third's turn */
    unlink(resume_log);
    delete_ws("first");
    delete_ws("second");
    delete_ws("third");
}

/* Kueue preempts a running workspace for one of higher priority in the
 * same queue: until a preemption keeps the memory (docs/kueue.md), it is an
 * interruption that says Kueue's words and what was lost, and the
 * workspace waits its turn again. */
static void test_preempted(void **state)
{
    (void)state;
    apply_ws("low", "it-kueue", 0, NULL);
    cJSON_Delete(wait_state("low", "Running", 90000));
    apply_ws("high", "it-kueue-high", 0, NULL);
    cJSON *ws = wait_number_at("low", "status.interruptions.count", 1, 90000);
    const char *reason = str_at(ws, "status.interruptions.last.reason");
    const char *msg = str_at(ws, "status.interruptions.last.message");
    print_message("  low: interrupted: %s: %s\n", reason ? reason : "?", msg ? msg : "?");
    assert_string_equal(reason, "Preempted");
    assert_non_null(strstr(msg, "TerminationTarget (Kueue) WorkloadEvictedDueToPreempted: "
                                "Preempted to accommodate a workload"));
    cJSON_Delete(ws);
    char *reasons = event_reasons("low");
    assert_non_null(strstr(reasons, "PodInterrupted"));
    free(reasons);
    cJSON_Delete(wait_state("high", "Running", 90000));
    cJSON_Delete(wait_state("low", "Queued", 60000));
    delete_ws("high");
    cJSON_Delete(wait_state("low", "Running", 90000));
    delete_ws("low");
}

/* The workspace's Events say it was preempted (a pause), not interrupted. */
static void expect_preempted_events(const char *name)
{
    char *reasons = event_reasons(name);
    print_message("  %s: events %s\n", name, reasons);
    assert_non_null(strstr(reasons, "Preempted,"));
    assert_null(strstr(reasons, "PodInterrupted"));
    free(reasons);
}

/* A class with spec.queue.evictionHold: the pod Kueue preempts stays
 * (its preStop hook; kwok plays the kubelet's hold), the controller pauses
 * the workspace itself instead of recording an interruption, and the
 * workspace is Paused with reason Preempted. The GKE simulator refuses to
 * snapshot a terminating pod (whether GKE does is not public,
 * docs/kueue.md), so on this class the pause keeps files only, and says
 * why; the real node's tier keeps the memory (it_preempt). */
static void test_preempted_with_hold(void **state)
{
    (void)state;
    apply_ws("held", "it-kueue-held", 0, NULL);
    cJSON_Delete(wait_state("held", "Running", 90000));
    char *hook = NULL;
    assert_int_equal(harness_kubectl(&hook,
                                     "-n %s get pod held-1 -o jsonpath='{.spec.containers[0]."
                                     "lifecycle.preStop.sleep.seconds} "
                                     "{.spec.terminationGracePeriodSeconds}'",
                                     ns),
                     0);
    assert_string_equal(hook, "30 31");
    free(hook);
    uint64_t t0 = harness_now_ms();
    apply_ws("high", "it-kueue-high", 0, NULL);
    cJSON *ws = wait_state("held", "Paused", 120000);
    print_message("  held: Paused %.1f s after the preemptor was applied: %s\n",
                  (double)(harness_now_ms() - t0) / 1000.0, str_at(ws, "status.message"));
    assert_string_equal(str_at(ws, "status.lastPause.reason"), "Preempted");
    assert_non_null(strstr(str_at(ws, "status.lastPause.message"),
                           "preempted by Kueue (WorkloadEvictedDueToPreempted: Preempted to "
                           "accommodate a workload"));
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshotFailed");
    assert_true(num_at(ws, "status.interruptions.count") <= 0);
    const char *failed = str_at(ws, "status.snapshot.message");
    print_message("  held: snapshot: %s\n", failed ? failed : "?");
    assert_non_null(failed);
    assert_non_null(strstr(failed, "is terminating"));
    cJSON_Delete(ws);
    expect_preempted_events("held");
    /* Paused like any other: spec.paused, which a person sets back. */
    ws = ws_json("held");
    assert_true(cJSON_IsTrue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "spec"), "paused")));
    cJSON_Delete(ws);
    cJSON_Delete(wait_state("high", "Running", 90000));
    set_paused("held", 0);
    cJSON_Delete(wait_state("held", "Queued", 60000));
    delete_ws("high");
    ws = wait_state("held", "Running", 90000);
    assert_string_equal(cond_field(ws, "Restored", "reason"), "FromCheckpoint");
    cJSON_Delete(ws);
    delete_ws("held");
}

/* The controller dies right after its pause for a held eviction is
 * written (spec.paused with the auto-pause annotations, one patch), before
 * any status, snapshot or Event: the next controller finds the pause's
 * cause in the annotations and records it as the first would have:
 * Paused, lastPause.reason Preempted with Kueue's words, the Preempted
 * Event, no interruption. */
static void test_eviction_pause_crash(void **state)
{
    (void)state;
    apply_ws("crashheld", "it-kueue-held", 0, NULL);
    cJSON_Delete(wait_state("crashheld", "Running", 90000));
    controller_stop();
    controller_start("AutoPause");
    apply_ws("high", "it-kueue-high", 0, NULL);
    assert_int_equal(controller_wait_exit(90000), 3);
    cJSON *ws = ws_json("crashheld");
    assert_non_null(ws);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(ws, "metadata");
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
    const char *cause = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(ann, "hibernator.dev/auto-pause-cause"));
    print_message("  crashheld: the controller exited after its patch: auto-pause-cause %s, "
                  "state %s\n",
                  cause ? cause : "(none)", str_at(ws, "status.state"));
    assert_string_equal(cause, "Preempted");
    assert_true(cJSON_IsTrue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "spec"), "paused")));
    assert_string_equal(str_at(ws, "status.state"), "Running");
    cJSON_Delete(ws);
    controller_start(NULL);
    ws = wait_state("crashheld", "Paused", 120000);
    assert_string_equal(str_at(ws, "status.lastPause.reason"), "Preempted");
    assert_non_null(strstr(str_at(ws, "status.lastPause.message"),
                           "preempted by Kueue (WorkloadEvictedDueToPreempted"));
    /* The simulator refuses a terminating pod (docs/simulator.md). */
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshotFailed");
    assert_true(num_at(ws, "status.interruptions.count") <= 0);
    cJSON_Delete(ws);
    expect_preempted_events("crashheld");
    cJSON_Delete(wait_state("high", "Running", 90000));
    delete_ws("high");
    delete_ws("crashheld");
}

static char *pod_label(const char *pod, const char *key_jsonpath)
{
    char *out = NULL;
    harness_kubectl(&out, "-n %s get pod %s -o jsonpath='{.metadata.labels.%s}'", ns, pod,
                    key_jsonpath);
    return out;
}

/* A pre-warm within quota: the queue's one GPU is used by a workspace of
 * Kueue's default priority; a pre-warm of a class with
 * preWarmPriorityClass (-10) waits in the queue and preempts nobody until
 * its owner's time, when the controller raises its pod to the class's
 * priority (1000) and Kueue preempts the other for it. */
static void test_prewarm_within_quota(void **state)
{
    (void)state;
    apply_ws("busy", "it-kueue", 0, NULL);
    cJSON_Delete(wait_state("busy", "Running", 90000));
    char hhmm[6];
    uint64_t owner = harness_owner_time(65, hhmm);
    char extra[64];
    snprintf(extra, sizeof(extra), "  preWarm: {at: \"%s\"}\n", hhmm);
    apply_ws("warm", "it-kueue-warm", 1, extra);
    print_message("  the owner of warm starts at %s UTC\n", hhmm);
    cJSON *ws = wait_state("warm", "Queued", 90000);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "status"),
                                         "lastResume"),
        "preWarmed")));
    char pod[64];
    snprintf(pod, sizeof(pod), "%s", str_at(ws, "status.podName"));
    cJSON_Delete(ws);
    char *label = pod_label(pod, "kueue\\.x-k8s\\.io/priority-class");
    print_message("  %s queued at %s\n", pod, label);
    assert_string_equal(label, "it-kueue-background");
    free(label);
    /* Until the owner's time, nobody is preempted for it (a reading that
     * came back after the owner's time says nothing of before). */
    int readings = 0;
    while (harness_wall_ms() + 1000 < (int64_t)owner) {
        ws = ws_json("busy");
        if (harness_wall_ms() < (int64_t)owner) {
            assert_string_equal(str_at(ws, "status.state"), "Running");
            assert_true(num_at(ws, "status.interruptions.count") <= 0);
            readings++;
        }
        cJSON_Delete(ws);
        usleep(1000 * 1000);
    }
    print_message("  busy Running in %d readings up to the owner's time\n", readings);
    assert_true(readings > 0);
    /* Then it is the owner's: raised, and Kueue makes room for it. */
    cJSON_Delete(wait_state("warm", "Running", 90000));
    label = pod_label(pod, "kueue\\.x-k8s\\.io/priority-class");
    print_message("  %s runs at %s, %.1f s after the owner's time\n", pod, label,
                  (double)(harness_wall_ms() - (int64_t)owner) / 1000.0);
    assert_string_equal(label, "it-kueue-high");
    free(label);
    ws = wait_number_at("busy", "status.interruptions.count", 1, 60000);
    assert_string_equal(str_at(ws, "status.interruptions.last.reason"), "Preempted");
    cJSON_Delete(ws);
    delete_ws("warm");
    delete_ws("busy");
}

/* The place a Queued workspace's message gives ("number N of"), 0: none. */
static int place_of(const char *name)
{
    cJSON *ws = ws_json(name);
    const char *msg = ws ? str_at(ws, "status.message") : NULL;
    const char *at = msg ? strstr(msg, ", number ") : NULL;
    int n = at ? atoi(at + 9) : 0;
    cJSON_Delete(ws);
    return n;
}

static int is_state(const char *name, const char *state)
{
    cJSON *ws = ws_json(name);
    const char *s = ws ? str_at(ws, "status.state") : NULL;
    int r = s && strcmp(s, state) == 0;
    cJSON_Delete(ws);
    return r;
}

/* Two teams of three, one GPU of quota each, three GPUs in the cluster:
 * team A's two resumes both run (the second borrows team B's idle quota);
 * then four resumes at once wait, each saying its queue and its place;
 * each pause hands the GPU to the next one Kueue admits, team B's own
 * quota first (its workload needs no borrowing), so both teams get their
 * turn. */
static void test_two_teams(void **state)
{
    (void)state;
    apply_team_queues();
    const char *names[] = {"a1", "a2", "a3", "b1", "b2", "b3"};
    for (int i = 0; i < 6; i++)
        apply_ws(names[i], names[i][0] == 'a' ? "it-kueue-a" : "it-kueue-b", 1, NULL);
    for (int i = 0; i < 6; i++)
        cJSON_Delete(wait_state(names[i], "Paused", 60000));

    /* Borrowing: team B's quota is idle, team A runs two. */
    set_paused("a1", 0);
    set_paused("a2", 0);
    cJSON_Delete(wait_state("a1", "Running", 90000));
    cJSON_Delete(wait_state("a2", "Running", 90000));
    /* Kueue writes the ClusterQueue's status a moment after it admits. */
    char *usage = NULL;
    for (uint64_t end = harness_now_ms() + 30000;;) {
        free(usage);
        usage = NULL;
        harness_kubectl(&usage,
                        "get clusterqueue %s-team-a -o jsonpath='{.status.flavorsUsage[0]."
                        "resources[?(@.name==\"nvidia.com/gpu\")]}'",
                        ns);
        if ((usage && strstr(usage, "\"total\":\"2\"")) || harness_now_ms() >= end)
            break;
        usleep(500 * 1000);
    }
    print_message("  team A's GPU usage: %s\n", usage);
    assert_non_null(strstr(usage, "\"borrowed\":\"1\""));
    assert_non_null(strstr(usage, "\"total\":\"2\""));
    free(usage);

    /* Four resumes at once: the quota is used, all four wait in their
     * team's queue with their place; the third GPU stays free. */
    uint64_t t0 = harness_now_ms();
    for (int i = 2; i < 6; i++)
        set_paused(names[i], 0);
    for (int i = 2; i < 6; i++) {
        cJSON *ws = wait_state(names[i], "Queued", 60000);
        char want[64];
        snprintf(want, sizeof(want), "waits in Kueue queue team-%c", names[i][0]);
        assert_non_null(strstr(str_at(ws, "status.message"), want));
        cJSON_Delete(ws);
    }
    wait_message("a3", "number 1 of 1 waiting there");
    wait_message("b3", "of 3 waiting there");
    int seen = 0;
    for (int i = 3; i < 6; i++) {
        int p = place_of(names[i]);
        print_message("  %s: number %d in team-b\n", names[i], p);
        assert_true(p >= 1 && p <= 3);
        seen |= 1 << p;
    }
    assert_int_equal(seen, (1 << 1) | (1 << 2) | (1 << 3));

    /* Each pause hands the GPU on. a1's goes to team B (its own quota);
     * team A, borrowing no more, keeps a2 and waits with a3. */
    const char *b_first = NULL;
    for (int i = 3; i < 6; i++)
        if (place_of(names[i]) == 1)
            b_first = names[i];
    assert_non_null(b_first);
    set_paused("a1", 1);
    cJSON_Delete(wait_state(b_first, "Running", 90000));
    print_message("  a1 paused: %s runs %.1f s after the four resumes\n", b_first,
                  (double)(harness_now_ms() - t0) / 1000.0);
    assert_true(is_state("a3", "Queued"));
    set_paused("a2", 1);
    cJSON_Delete(wait_state("a3", "Running", 90000));
    set_paused(b_first, 1);
    /* The next of team B. */
    uint64_t end = harness_now_ms() + 90000;
    int running_b = 0;
    while (!running_b && harness_now_ms() < end) {
        for (int i = 3; i < 6; i++)
            running_b += strcmp(names[i], b_first) != 0 && is_state(names[i], "Running");
        if (!running_b)
            usleep(300 * 1000);
    }
    assert_int_equal(running_b, 1);
    for (int i = 0; i < 6; i++)
        delete_ws(names[i]);
    for (int i = 0; i < 2; i++)
        harness_kubectl(NULL, "delete clusterqueue %s-team-%c --ignore-not-found --wait=false", ns,
                        'a' + i);
}

/* A queue the class does not allow, through the API server. */
static void test_queue_not_allowed(void **state)
{
    (void)state;
    apply_ws("elsewhere", "it-kueue", 0, "  localQueue: night\n");
    cJSON *ws = wait_reason("elsewhere", "Valid", "QueueNotAllowed", 30000);
    const char *msg = cond_field(ws, "Valid", "message");
    print_message("  %s\n", msg);
    assert_non_null(strstr(msg, "spec.localQueue: \"night\" is not a queue class \"it-kueue\" "
                                "allows (allowed: gpus, big)"));
    assert_int_equal(all_pods("elsewhere"), 0);
    cJSON_Delete(ws);
    delete_ws("elsewhere");
}

static int group_setup(void **state)
{
    (void)state;
    harness_require_cluster();
    if (!getenv("HIBERNATOR_KUEUE_VISIBILITY_URL")) {
        fprintf(stderr, "the cluster runs no Kueue (cluster.sh up --kueue): %s\n",
                getenv("HIBERNATOR_REQUIRE_CLUSTER") ? "failing" : "skipping");
        exit(getenv("HIBERNATOR_REQUIRE_CLUSTER") ? 1 : 77);
    }
    it_deploy("it-kueue");
    apply_class("it-kueue", "  accelerator: {resourceName: nvidia.com/gpu, count: 1, "
                            "product: Tesla-T4}\n"
                            "  resume: {capacityTimeout: 30m, onCapacityTimeout: Wait}\n"
                            "  queue: {localQueue: gpus, allowedLocalQueues: [big]}\n");
    apply_class("it-kueue-high", "  accelerator: {resourceName: nvidia.com/gpu, count: 1, "
                                 "product: Tesla-T4}\n"
                                 "  resume: {capacityTimeout: 30m, onCapacityTimeout: Wait}\n"
                                 "  queue: {localQueue: gpus, priorityClass: it-kueue-high}\n");
    apply_class("it-kueue-warm", "  accelerator: {resourceName: nvidia.com/gpu, count: 1, "
                                 "product: Tesla-T4}\n"
                                 "  resume: {capacityTimeout: 30m, onCapacityTimeout: Wait}\n"
                                 "  preWarm: {lead: 1m}\n"
                                 "  queue: {localQueue: gpus, priorityClass: it-kueue-high, "
                                 "preWarmPriorityClass: it-kueue-background}\n");
    apply_class("it-kueue-a", "  accelerator: {resourceName: nvidia.com/gpu, count: 1, "
                              "product: Tesla-T4}\n"
                              "  resume: {capacityTimeout: 30m, onCapacityTimeout: Wait}\n"
                              "  queue: {localQueue: team-a}\n");
    apply_class("it-kueue-b", "  accelerator: {resourceName: nvidia.com/gpu, count: 1, "
                              "product: Tesla-T4}\n"
                              "  resume: {capacityTimeout: 30m, onCapacityTimeout: Wait}\n"
                              "  queue: {localQueue: team-b}\n");
    install_snapshot_crds("it-kueue");
    apply_class("it-kueue-held", "  accelerator: {resourceName: nvidia.com/gpu, count: 1, "
                                 "product: Tesla-T4}\n"
                                 "  resume: {capacityTimeout: 30m, onCapacityTimeout: Wait}\n"
                                 "  snapshot: {backend: GKE, storageConfigName: it-kueue, "
                                 "timeout: 60s, onFailure: PauseWithoutMemory}\n"
                                 "  queue: {localQueue: gpus, evictionHold: 30s}\n");
    ns = harness_namespace("it-kueue");
    assert_int_equal(harness_kubectl(NULL, "-n %s create configmap snapshot-simulator", ns), 0);
    simulator_start("1s", NULL);
    apply_queue();
    /* No APIService routes to Kueue's visibility server on this cluster. */
    static char flag[300];
    snprintf(flag, sizeof(flag), "--kueue-visibility-server=%s",
             getenv("HIBERNATOR_KUEUE_VISIBILITY_URL"));
    static const char *args[] = {flag, NULL};
    controller_extra_args(args);
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    simulator_stop();
    harness_namespace_delete(ns);
    harness_kubectl(NULL, "delete clusterqueue %s --ignore-not-found --wait=false", cluster_queue);
    harness_kubectl(NULL, "delete workloadpriorityclass it-kueue-high it-kueue-background "
                          "--ignore-not-found");
    it_show_logs();
    free(ns);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queued_then_admitted),
        cmocka_unit_test(test_queue_not_allowed),
        cmocka_unit_test(test_preempted),
        cmocka_unit_test(test_preempted_with_hold),
        cmocka_unit_test(test_eviction_pause_crash),
        cmocka_unit_test(test_two_teams),
        cmocka_unit_test(test_prewarm_within_quota),
    };
    if (getenv("IT_ONLY"))
        cmocka_set_test_filter(getenv("IT_ONLY"));
    return cmocka_run_group_tests_name("kueue", tests, group_setup, group_teardown);
}
