/*
 * The real-node demo's class as written (deploy/local/demo.yaml, what
 * `hack/run-local --real-node` installs), on the local cluster's real node
 * with the snapshot simulator and the controller (--namespace):
 *
 *   test_idle_cycle   a real Jupyter Server (hibernator.local/notebook:dev)
 *                     left alone is announced (Idle=True/PauseScheduled, an
 *                     IdleWarning event), snapshotted and Paused on its own
 *                     within the class's durations (printed); a resume is
 *                     a ColdStart, said: the simulator keeps no memory, so
 *                     the server answers (with the token of the Secret) as
 *                     a new process, and its own start time tells.
 *
 * Needs the real node (HIBERNATOR_REAL_NODE) and the notebook image
 * imported (deploy/local/images.sh import notebook); skips without the node
 * unless HIBERNATOR_REQUIRE_CLUSTER is set.
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
#include "workspaces.h"

#define TOKEN "it-demo-0123456789abcdef"

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

/* GET http://<pod ip>:8888/api/status with the token: the HTTP code. */
static int api_status(const char *ws_name)
{
    cJSON *ws = ws_json(ws_name);
    const char *pod = ws ? str_at(ws, "status.podName") : NULL;
    char *ip = NULL;
    if (pod)
        harness_kubectl(&ip, "-n %s get pod %s -o jsonpath={.status.podIP}", ns, pod);
    cJSON_Delete(ws);
    int code = 0;
    if (ip && ip[0]) {
        char cmd[512];
        snprintf(cmd, sizeof(cmd),
                 "curl -s -o /dev/null -w '%%{http_code}' -m 3 -H 'Authorization: token " TOKEN
                 "' http://%s:8888/api/status",
                 ip);
        FILE *p = popen(cmd, "r");
        if (p) {
            if (fscanf(p, "%d", &code) != 1)
                code = 0;
            pclose(p);
        }
    }
    free(ip);
    return code;
}

static void test_idle_cycle(void **state)
{
    (void)state;
    char *out = NULL;
    int st = harness_kubectl(&out, "apply -f '%s/deploy/local/demo.yaml' 2>&1", SOURCE_DIR);
    if (st != 0)
        fail_msg("deploy/local/demo.yaml: %s", out);
    free(out);
    ns = harness_namespace("it-demo");
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s create secret generic notebook-jupyter "
                                     "--from-literal=token=" TOKEN,
                                     ns),
                     0);
    simulator_start("2s", "1s");
    start_controller();
    uint64_t t0 = harness_now_ms();
    apply_ws("notebook", "demo-notebook", 0, NULL);
    cJSON *ws = wait_reason("notebook", "Ready", "PodReady", 120000);
    cJSON_Delete(ws);
    uint64_t ready = harness_now_ms();
    int code = 0;
    for (int i = 0; i < 50 && code != 200; i++, usleep(200 * 1000))
        code = api_status("notebook");
    assert_int_equal(code, 200);

    /* Nobody uses it: announced, snapshotted and paused on its own. The
     * class: idle after 60 s, announced 20 s ahead, probes every 5 s. */
    ws = wait_reason("notebook", "Idle", "PauseScheduled", 90000);
    uint64_t announced = harness_now_ms();
    cJSON_Delete(ws);
    ws = wait_state("notebook", "Paused", 90000);
    uint64_t paused = harness_now_ms();
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    cJSON_Delete(ws);
    char *reasons = event_reasons("notebook");
    assert_non_null(strstr(reasons, "IdleWarning,"));
    assert_non_null(strstr(reasons, "IdleTimeout,"));
    assert_non_null(strstr(reasons, "SnapshotReady,"));
    free(reasons);
    print_message("it_demo: ready %.1f s after create; announced %.1f s and paused %.1f s after "
                  "ready\n",
                  (ready - t0) / 1000.0, (announced - ready) / 1000.0, (paused - ready) / 1000.0);
    /* 60 s idle (the start counts as activity), a probe interval, the
     * confirming probe, a 2 s snapshot, the pod's deletion. */
    assert_true(paused - ready >= 55000);
    assert_true(paused - ready <= 120000);

    set_paused("notebook", 0);
    ws = wait_reason("notebook", "Restored", "ColdStart", 120000);
    const char *why = cond_field(ws, "Restored", "message");
    print_message("it_demo: %s\n", why);
    assert_non_null(strstr(why, "its application answers as a process started at"));
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "ColdStart");
    cJSON_Delete(ws);
    code = 0;
    for (int i = 0; i < 50 && code != 200; i++, usleep(200 * 1000))
        code = api_status("notebook");
    assert_int_equal(code, 200);
}

static int cleanup(void **state)
{
    (void)state;
    if (ns) {
        /* The controller and the simulator release the finalizers. */
        harness_kubectl(NULL, "-n %s delete workspaces --all --wait=true --timeout=60s", ns);
        harness_kubectl(NULL, "delete namespace %s --wait=false", ns);
    }
    controller_stop();
    simulator_stop();
    it_show_logs();
    return 0;
}

int main(void)
{
    harness_require_real_node();
    it_deploy("it-demo");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_idle_cycle, cleanup),
    };
    return cmocka_run_group_tests_name("demo", tests, NULL, NULL);
}
