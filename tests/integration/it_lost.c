/*
 * What was lost, said on the real API server: a home claim deleted while the
 * workspace is paused (the class waits for a person, or makes a new claim at
 * once), and a pod that someone else ended: evicted through the Eviction API,
 * deleted by hand, and its node deleted under it (a kwok node of this test's
 * own). Each asserts the condition or the status record, the Event, and what
 * the next pod starts from: never "from the application's checkpoint" on an
 * empty home, never "never paused" after an interruption.
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
#include "workspaces.h"

/* This test's GPU node, deleted by the teardown if the test could not. */
static char lost_node[64];

/* The uid of the workspace's home claim, into out; fails when there is none. */
static void claim_uid(const char *ws, char *out, size_t size)
{
    char what[128];
    snprintf(what, sizeof(what), "pvc %s-home", ws);
    cJSON *pvc = get_json(what);
    assert_non_null(pvc);
    snprintf(out, size, "%s", str_at(pvc, "metadata.uid"));
    cJSON_Delete(pvc);
    assert_true(out[0] != '\0');
}

/* Waits until the workspace's path holds want (a number). */
static cJSON *wait_number(const char *name, const char *path, double want, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    for (;;) {
        cJSON *ws = ws_json(name);
        if (ws && num_at(ws, path) == want)
            return ws;
        cJSON_Delete(ws);
        if (harness_now_ms() >= end)
            fail_msg("%s: %s is not %g after %llu ms", name, path, want,
                     (unsigned long long)timeout_ms);
        usleep(250 * 1000);
    }
}

/* Waits until an event with reason is posted for the workspace; returns its
 * message (caller frees). */
static char *wait_event(const char *name, const char *reason, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    for (;;) {
        char *out = NULL;
        harness_kubectl(&out,
                        "-n %s get events --field-selector involvedObject.name=%s,"
                        "involvedObject.kind=Workspace,reason=%s "
                        "-o jsonpath='{.items[0].message}'",
                        ns, name, reason);
        if (out && out[0])
            return out;
        free(out);
        if (harness_now_ms() >= end)
            fail_msg("%s: no %s event after %llu ms", name, reason, (unsigned long long)timeout_ms);
        usleep(250 * 1000);
    }
}

static int has_checkpoint_env(const char *pod)
{
    char *out = NULL;
    harness_kubectl(&out, "-n %s get pod %s -o jsonpath='{.spec.containers[0].env}'", ns, pod);
    int has = out && strstr(out, "HIBERNATOR_CHECKPOINT_PATH") != NULL;
    free(out);
    return has;
}

/* Runs a workspace of cls, pauses it and deletes its home claim; returns
 * the claim's uid in old_uid. */
static void pause_and_lose_home(const char *name, const char *cls, char *old_uid, size_t size)
{
    apply_ws(name, cls, 0, NULL);
    cJSON_Delete(wait_state(name, "Running", 60000));
    claim_uid(name, old_uid, size);
    set_paused(name, 1);
    cJSON *ws = wait_state(name, "Paused", 60000);
    assert_string_equal(str_at(ws, "status.home.claimUID"), old_uid);
    cJSON_Delete(ws);
    /* No pod uses it: it goes at once. */
    assert_int_equal(harness_kubectl(NULL, "-n %s delete pvc %s-home --wait=true", ns, name), 0);
}

/* The default class setting: nothing starts on a new, empty home until a
 * person acknowledges the loss; then the pod starts FreshHome. */
static void test_home_lost_waits_for_acknowledgement(void **state)
{
    (void)state;
    char old_uid[64];
    pause_and_lose_home("hw", "it-lost-cpu", old_uid, sizeof(old_uid));
    cJSON *ws = wait_reason("hw", "Home", "Lost", 30000);
    assert_string_equal(cond_field(ws, "Home", "status"), "False");
    assert_non_null(strstr(cond_field(ws, "Home", "message"), old_uid));
    assert_string_equal(str_at(ws, "status.home.lostClaimUID"), old_uid);
    assert_non_null(str_at(ws, "status.home.lostAt"));
    assert_null(str_at(ws, "status.home.claimUID"));
    assert_string_equal(str_at(ws, "status.state"), "Paused");
    cJSON_Delete(ws);
    char *msg = wait_event("hw", "HomeLost", 10000);
    assert_non_null(strstr(msg, old_uid));
    free(msg);
    /* Not made again behind anyone's back. */
    usleep(2000 * 1000);
    assert_null(get_json("pvc hw-home"));

    /* A resume waits for the acknowledgement: no pod. */
    set_paused("hw", 0);
    ws = wait_reason("hw", "Ready", "HomeLost", 30000);
    assert_string_equal(str_at(ws, "status.state"), "Resuming");
    cJSON_Delete(ws);
    assert_int_equal(all_pods("hw"), 0);
    assert_null(get_json("pvc hw-home"));

    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s annotate workspace hw "
                                     "hibernator.dev/acknowledge-home-loss=%s",
                                     ns, old_uid),
                     0);
    ws = wait_state("hw", "Running", 60000);
    assert_string_equal(cond_field(ws, "Restored", "reason"), "FreshHome");
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FreshHome");
    assert_non_null(str_at(ws, "status.home.acknowledgedAt"));
    const char *pod = str_at(ws, "status.podName");
    assert_non_null(pod);
    assert_false(has_checkpoint_env(pod));
    cJSON_Delete(ws);
    char new_uid[64];
    claim_uid("hw", new_uid, sizeof(new_uid));
    assert_string_not_equal(new_uid, old_uid);
    ws = wait_reason("hw", "Home", "Recreated", 30000);
    assert_string_equal(str_at(ws, "status.home.claimUID"), new_uid);
    cJSON_Delete(ws);
    msg = wait_event("hw", "Resumed", 10000);
    assert_non_null(strstr(msg, "new, empty home"));
    assert_null(strstr(msg, "checkpoint"));
    free(msg);
    msg = event_reasons("hw");
    assert_non_null(strstr(msg, "HomeLossAcknowledged,"));
    free(msg);
    delete_ws("hw");
}

/* onLoss Recreate: a new claim at once while paused, and the resume says the
 * home is new. */
static void test_home_lost_recreated(void **state)
{
    (void)state;
    char old_uid[64], new_uid[64] = "";
    pause_and_lose_home("hr", "it-lost-recreate", old_uid, sizeof(old_uid));
    cJSON_Delete(wait_reason("hr", "Home", "Recreated", 30000));
    claim_uid("hr", new_uid, sizeof(new_uid));
    assert_string_not_equal(new_uid, old_uid);
    char *msg = wait_event("hr", "HomeLost", 10000);
    assert_non_null(strstr(msg, "Recreate"));
    free(msg);
    assert_int_equal(all_pods("hr"), 0);

    set_paused("hr", 0);
    cJSON *ws = wait_state("hr", "Running", 60000);
    assert_string_equal(cond_field(ws, "Restored", "reason"), "FreshHome");
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FreshHome");
    assert_string_equal(str_at(ws, "status.home.lostClaimUID"), old_uid);
    assert_string_equal(str_at(ws, "status.home.claimUID"), new_uid);
    cJSON_Delete(ws);
    delete_ws("hr");
}

/* The interruption's record, Event and replacement, once pod was ended by
 * someone else for reason. */
static void check_interrupted(const char *name, const char *pod, const char *reason,
                              const char *said)
{
    cJSON *ws = wait_number(name, "status.interruptions.count", 1, 120000);
    assert_string_equal(str_at(ws, "status.interruptions.last.pod"), pod);
    assert_string_equal(str_at(ws, "status.interruptions.last.reason"), reason);
    assert_non_null(str_at(ws, "status.interruptions.last.at"));
    assert_non_null(str_at(ws, "status.interruptions.last.podUID"));
    if (said)
        assert_non_null(strstr(str_at(ws, "status.interruptions.last.message"), said));
    cJSON_Delete(ws);
    char *msg = wait_event(name, "PodInterrupted", 10000);
    assert_non_null(strstr(msg, pod));
    assert_non_null(strstr(msg, reason));
    free(msg);
}

/* The replacement: a new name, told where the checkpoint is, and Restored
 * names the pod it replaces. */
static void check_replacement(const char *name, const char *pod, const char *next, int ready)
{
    cJSON *ws = ready ? wait_state(name, "Running", 60000) : ws_json(name);
    uint64_t end = harness_now_ms() + 30000;
    while (!ready &&
           (!str_at(ws, "status.podName") || strcmp(str_at(ws, "status.podName"), next) != 0)) {
        cJSON_Delete(ws);
        if (harness_now_ms() >= end)
            fail_msg("%s: no pod %s", name, next);
        usleep(250 * 1000);
        ws = ws_json(name);
    }
    assert_string_equal(str_at(ws, "status.podName"), next);
    assert_true(num_at(ws, "status.podGeneration") == 2);
    assert_string_equal(str_at(ws, "status.interruptions.last.replacedBy"), next);
    assert_string_equal(cond_field(ws, "Restored", "reason"), "FromCheckpoint");
    const char *m = cond_field(ws, "Restored", "message");
    assert_non_null(strstr(m, pod));
    assert_non_null(strstr(m, "without the controller asking"));
    assert_null(strstr(m, "never paused"));
    cJSON_Delete(ws);
    assert_true(has_checkpoint_env(next));
}

static void test_evicted(void **state)
{
    (void)state;
    apply_ws("ev", "it-lost-cpu", 0, NULL);
    cJSON_Delete(wait_state("ev", "Running", 60000));
    char body[512];
    snprintf(body, sizeof(body), "%s/eviction.json", tmpdir);
    FILE *f = fopen(body, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\","
            "\"metadata\":{\"name\":\"ev-1\",\"namespace\":\"%s\"}}",
            ns);
    fclose(f);
    assert_int_equal(harness_kubectl(NULL,
                                     "create --raw /api/v1/namespaces/%s/pods/ev-1/eviction "
                                     "-f %s",
                                     ns, body),
                     0);
    check_interrupted("ev", "ev-1", "Evicted", "EvictionByEvictionAPI");
    check_replacement("ev", "ev-1", "ev-2", 1);
    delete_ws("ev");
}

static void test_deleted_by_hand(void **state)
{
    (void)state;
    apply_ws("bh", "it-lost-cpu", 0, NULL);
    cJSON_Delete(wait_state("bh", "Running", 60000));
    assert_int_equal(harness_kubectl(NULL, "-n %s delete pod bh-1 --wait=false", ns), 0);
    check_interrupted("bh", "bh-1", "Deleted", NULL);
    check_replacement("bh", "bh-1", "bh-2", 1);
    /* Said once. */
    char *reasons = event_reasons("bh");
    char *first = strstr(reasons, "PodInterrupted,");
    assert_non_null(first);
    assert_null(strstr(first + 1, "PodInterrupted,"));
    free(reasons);
    delete_ws("bh");
}

/* The node is deleted under the pod: the pod garbage collector removes the
 * orphaned pod (DisruptionTarget DeletionByPodGC); the replacement waits for
 * a node of its product. */
static void test_node_deleted(void **state)
{
    (void)state;
    snprintf(lost_node, sizeof(lost_node), "it-lost-%ld", (long)getpid());
    assert_int_equal(
        harness_apply("apiVersion: v1\nkind: Node\n"
                      "metadata:\n  name: %s\n"
                      "  annotations: {kwok.x-k8s.io/node: fake}\n"
                      "  labels: {type: kwok-it, nvidia.com/gpu.product: IT-Lost-GPU,\n"
                      "    cloud.google.com/gke-accelerator: it-lost-gpu}\n"
                      "spec:\n  taints:\n"
                      "  - {key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}\n"
                      "status:\n"
                      "  capacity: {cpu: '8', memory: 30Gi, pods: '110', nvidia.com/gpu: '1'}\n"
                      "  allocatable: {cpu: '8', memory: 30Gi, pods: '110', nvidia.com/gpu: '1'}\n",
                      lost_node),
        0);
    assert_int_equal(
        harness_kubectl(NULL, "wait --for=condition=Ready node/%s --timeout=60s", lost_node), 0);
    apply_ws("nd", "it-lost-gpu", 0, NULL);
    cJSON *ws = wait_state("nd", "Running", 60000);
    assert_string_equal(str_at(ws, "status.nodeName"), lost_node);
    cJSON_Delete(ws);
    assert_int_equal(harness_kubectl(NULL, "delete node %s --wait=false", lost_node), 0);
    lost_node[0] = '\0';
    check_interrupted("nd", "nd-1", "NodeLost", NULL);
    check_replacement("nd", "nd-1", "nd-2", 0);
    delete_ws("nd");
}

/* ---- set-up ---------------------------------------------------------------- */

static int clean_slate(void **state)
{
    (void)state;
    delete_all_workspaces(60);
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    it_deploy("it-lost");
    apply_class("it-lost-cpu", "");
    assert_int_equal(
        harness_apply("apiVersion: hibernator.dev/v1alpha1\nkind: WorkspaceClass\n"
                      "metadata: {name: it-lost-recreate}\n"
                      "spec:\n"
                      "  images: {allowed: [\"registry.local/notebook:*\"], default: "
                      "\"registry.local/notebook:v1\"}\n"
                      "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: "
                      "NoSchedule}]\n"
                      "  home: {size: 1Gi, onLoss: Recreate}\n"
                      "  pause: {gracePeriodSeconds: 1}\n"),
        0);
    apply_class("it-lost-gpu", "  accelerator: {resourceName: nvidia.com/gpu, count: 1, "
                               "product: IT-Lost-GPU}\n");
    ns = harness_namespace("it-lost");
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    if (lost_node[0])
        harness_kubectl(NULL, "delete node %s --wait=false", lost_node);
    harness_namespace_delete(ns);
    it_show_logs();
    free(ns);
    return 0;
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_home_lost_waits_for_acknowledgement, clean_slate),
        cmocka_unit_test_setup(test_home_lost_recreated, clean_slate),
        cmocka_unit_test_setup(test_evicted, clean_slate),
        cmocka_unit_test_setup(test_deleted_by_hand, clean_slate),
        cmocka_unit_test_setup(test_node_deleted, clean_slate),
    };
    return cmocka_run_group_tests_name("what was lost", tests, group_setup, group_teardown);
}
