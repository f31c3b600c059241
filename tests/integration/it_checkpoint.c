/*
 * The resume from files on the real node, with a real application: the
 * canary (deploy/local/images/canary.sh, hibernator.local/canary:dev) keeps
 * model state in memory, writes it to its home volume as a checkpoint when
 * the controller asks (the class's checkpoint.request) and on SIGTERM, and
 * reads it back at start; GET /canary is a value drawn per process.
 *
 *   test_fallback_checkpoint   a snapshot that fails (the simulator's
 *                              trigger-error, onFailure PauseWithoutMemory):
 *                              the application is asked for its checkpoint
 *                              first, the pod goes, the resume reads the
 *                              state back; the status says which way it went
 *   test_sigterm_checkpoint    a class without a backend nor a request: the
 *                              application saves on SIGTERM within the grace
 *                              period and exits at once
 *   test_drill_files           kubectl workspace drill through the API
 *                              server's pod proxy: COLD START, exit 5 (the
 *                              classes of deploy/local/canary-class.yaml,
 *                              under names of the test's own)
 *   test_drill_simulated       the same with the simulator's "restore" in
 *                              front of the real pod: the controller reports
 *                              FromSnapshot, the process is new, the drill
 *                              says COLD START and why
 *   test_restart_policy        a container exiting 0 under each restart
 *                              policy, as the real kubelet reports it
 *
 * Needs the real node (HIBERNATOR_REAL_NODE, from the cluster's env) and
 * the canary image imported into its containerd; skips without the node
 * unless HIBERNATOR_REQUIRE_CLUSTER is set. Each test works in a namespace
 * of its own and runs its controller with --namespace.
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
#include "workspace/names.h"
#include "workspaces.h"

#define CANARY_IMAGE "hibernator.local/canary:dev"
#define HOME_PATH "/home/canary"
#define CHECKPOINT_PATH HOME_PATH "/.hibernator/checkpoint"

/* A class whose pods run the canary on the real node: they tolerate its
 * taint, and the kwok nodes' taint is not tolerated, so the real node is
 * the only one they fit; home on the default StorageClass (hostPath: a
 * real directory). extra: more lines of spec. */
static void apply_real_class(const char *name, const char *extra)
{
    assert_int_equal(
        harness_apply("apiVersion: hibernator.dev/v1alpha1\nkind: WorkspaceClass\n"
                      "metadata: {name: %s}\n"
                      "spec:\n"
                      "  images: {allowed: [\"hibernator.local/canary:*\"], default: \"%s\"}\n"
                      "  port: 8888\n"
                      "  tolerations: [{key: hibernator.dev/real-node, operator: Equal, "
                      "value: \"true\", effect: NoSchedule}]\n"
                      "  home: {size: 64Mi, storageClassName: standard, mountPath: %s}\n"
                      "%s",
                      name, CANARY_IMAGE, HOME_PATH, extra),
        0);
}

/* deploy/local/canary-class.yaml, its cluster-scoped names made the
 * test's own: canary-real becomes <ns>-files, canary-real-snapshots
 * <ns>-gke, the storage config canary-local <ns>-storage. */
static void apply_class_file(void)
{
    assert_int_equal(
        harness_sh(NULL,
                   "sed -e 's/^  name: canary-real$/  name: %s-files/' "
                   "-e 's/^  name: canary-real-snapshots$/  name: %s-gke/' "
                   "-e 's/canary-local$/%s-storage/' '%s/deploy/local/canary-class.yaml' | "
                   "kubectl --kubeconfig '%s' apply -f - >/dev/null",
                   ns, ns, ns, SOURCE_DIR, harness_kubeconfig()),
        0);
}

/* The IP of the workspace's current pod, once it has one (malloc'd). */
static char *pod_ip(const char *ws_name)
{
    uint64_t end = harness_now_ms() + 60000;
    while (harness_now_ms() < end) {
        cJSON *ws = ws_json(ws_name);
        const char *pod = ws ? str_at(ws, "status.podName") : NULL;
        char *ip = NULL;
        if (pod)
            harness_kubectl(&ip, "-n %s get pod %s -o jsonpath={.status.podIP}", ns, pod);
        cJSON_Delete(ws);
        if (ip && ip[0])
            return ip;
        free(ip);
        usleep(200 * 1000);
    }
    fail_msg("workspace %s: no pod IP", ws_name);
    return NULL;
}

/* GET http://ip:8888/path, retried until the application answers 200. */
static char *app_get(const char *ip, const char *path)
{
    uint64_t end = harness_now_ms() + 30000;
    while (harness_now_ms() < end) {
        char *out = NULL;
        if (harness_sh(&out, "curl -sf -m 3 http://%s:8888%s", ip, path) == 0)
            return out;
        free(out);
        usleep(300 * 1000);
    }
    fail_msg("GET http://%s:8888%s: no answer", ip, path);
    return NULL;
}

static void app_put_state(const char *ip, const char *value)
{
    assert_int_equal(
        harness_sh(NULL, "curl -sf -m 3 -X PUT --data-binary '%s' http://%s:8888/state", value, ip),
        0);
}

/* The home volume's directory on this machine (the hostPath PV). */
static char *home_dir(const char *ws_name)
{
    char claim[NAMES_SIZE];
    assert_true(names_home_claim(ws_name, claim) > 0);
    char *pv = NULL, *path = NULL;
    assert_int_equal(
        harness_kubectl(&pv, "-n %s get pvc %s -o jsonpath={.spec.volumeName}", ns, claim), 0);
    assert_int_equal(harness_kubectl(&path, "get pv %s -o jsonpath={.spec.hostPath.path}", pv), 0);
    free(pv);
    assert_true(path[0] == '/');
    return path;
}

/* The checkpoint file as the application left it on the home volume. */
static cJSON *checkpoint_file(const char *ws_name)
{
    char *dir = home_dir(ws_name), *out = NULL;
    int r = harness_sh(&out, "cat '%s/.hibernator/checkpoint' 2>/dev/null", dir);
    free(dir);
    cJSON *j = r == 0 ? cJSON_Parse(out) : NULL;
    free(out);
    return j;
}

/* A string field of o, by dotted path, must be want (a readable failure
 * when it is absent, where assert_string_equal would crash on NULL). */
static void is(const cJSON *o, const char *path, const char *want)
{
    const char *got = o ? str_at(o, path) : NULL;
    if (!got || strcmp(got, want) != 0)
        fail_msg("%s is %s%s%s, wanted \"%s\"", path, got ? "\"" : "", got ? got : "absent",
                 got ? "\"" : "", want);
}

/* Polls the workspace until the dotted path has the value. */
static cJSON *wait_field(const char *ws_name, const char *path, const char *want,
                         uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    char seen[128] = "(none)";
    while (harness_now_ms() < end) {
        cJSON *ws = ws_json(ws_name);
        const char *v = ws ? str_at(ws, path) : NULL;
        if (v && strcmp(v, want) == 0)
            return ws;
        snprintf(seen, sizeof(seen), "%s", v ? v : "(none)");
        cJSON_Delete(ws);
        usleep(200 * 1000);
    }
    fail_msg("workspace %s: %s is %s, wanted %s", ws_name, path, seen, want);
    return NULL;
}

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

/* A running workspace of cls: its pod's IP, the application answering. */
static char *start_workspace(const char *name, const char *cls)
{
    apply_ws(name, cls, 0, NULL);
    cJSON_Delete(wait_state(name, "Running", 120000));
    char *ip = pod_ip(name);
    free(app_get(ip, "/healthz"));
    return ip;
}

/* GET /state, checked: value and source. Returns the JSON. */
static cJSON *expect_state(const char *ip, const char *value, const char *source)
{
    char *body = app_get(ip, "/state");
    cJSON *st = cJSON_Parse(body);
    if (!st || !str_at(st, "value") || strcmp(str_at(st, "value"), value) != 0 ||
        !str_at(st, "source") || strcmp(str_at(st, "source"), source) != 0)
        fail_msg("GET /state: %s, wanted value %s from %s", body, value, source);
    free(body);
    return st;
}

static void test_fallback_checkpoint(void **state)
{
    (void)state;
    ns = harness_namespace("checkpoint-fallback");
    char cls[300], storage[300], extra[2048], value[300];
    snprintf(cls, sizeof(cls), "%s-gke", ns);
    snprintf(storage, sizeof(storage), "%s-storage", ns);
    snprintf(value, sizeof(value), "weights-%s", ns);
    install_snapshot_crds(storage);
    /* Every snapshot of the namespace fails: its trigger ends in Error. */
    assert_int_equal(harness_apply("apiVersion: v1\nkind: ConfigMap\n"
                                   "metadata: {name: snapshot-simulator, namespace: %s}\n"
                                   "data: {_default: trigger-error}\n",
                                   ns),
                     0);
    snprintf(extra, sizeof(extra),
             "  checkpoint:\n"
             "    path: %s\n"
             "    envVar: HIBERNATOR_CHECKPOINT_PATH\n"
             "    request: {url: \"http://{podIP}:{port}/hibernator/checkpoint\", method: POST, "
             "timeout: 10s}\n"
             "  snapshot: {backend: GKE, storageConfigName: %s, timeout: 60s, onFailure: "
             "PauseWithoutMemory}\n"
             "  pause: {gracePeriodSeconds: 30}\n",
             CHECKPOINT_PATH, storage);
    apply_real_class(cls, extra);
    simulator_start("5s", NULL);
    start_controller();

    char *ip = start_workspace("nb", cls);
    char *canary1 = app_get(ip, "/canary");
    app_put_state(ip, value);
    cJSON *st = expect_state(ip, value, "set");
    assert_null(str_at(st, "told")); /* a first start: no checkpoint to follow */
    cJSON_Delete(st);

    set_paused("nb", 1);
    /* The application is asked first, and the file is on the volume when
     * it has answered. */
    cJSON *ws = wait_field("nb", "status.snapshot.appCheckpoint.result", "Written", 30000);
    cJSON_Delete(ws);
    cJSON *file = checkpoint_file("nb");
    assert_non_null(file);
    is(file, "value", value);
    is(file, "writtenBy", "request"); /* the trigger fails 5 s after this */
    cJSON_Delete(file);

    ws = wait_state("nb", "Paused", 90000);
    is(ws, "status.lastPause.memory", "snapshotFailed");
    assert_string_equal(cond_field(ws, "SnapshotReady", "reason"), "Failed");
    is(ws, "status.snapshot.appCheckpoint.result", "Written");
    cJSON_Delete(ws);
    assert_int_equal(all_pods("nb"), 0);
    /* Without a snapshot to keep the files still, the pod was deleted with
     * its grace period: the application saved once more on SIGTERM. */
    file = checkpoint_file("nb");
    assert_non_null(file);
    is(file, "value", value);
    is(file, "writtenBy", "sigterm");
    cJSON_Delete(file);

    set_paused("nb", 0);
    cJSON_Delete(wait_state("nb", "Running", 120000));
    ws = wait_reason("nb", "Restored", "FromCheckpoint", 60000);
    is(ws, "status.lastResume.restoredFrom", "FromCheckpoint");
    cJSON_Delete(ws);
    free(ip);
    ip = pod_ip("nb");
    st = expect_state(ip, value, "checkpoint");
    is(st, "checkpoint.path", CHECKPOINT_PATH);
    /* FromCheckpoint: the controller told the new pod where it is. */
    is(st, "told", CHECKPOINT_PATH);
    cJSON_Delete(st);
    char *canary2 = app_get(ip, "/canary");
    assert_string_not_equal(canary1, canary2); /* the memory is gone */

    free(canary1);
    free(canary2);
    free(ip);
}

static void test_sigterm_checkpoint(void **state)
{
    (void)state;
    ns = harness_namespace("checkpoint-sigterm");
    char cls[300], value[300];
    snprintf(cls, sizeof(cls), "%s-files", ns);
    snprintf(value, sizeof(value), "weights-%s", ns);
    /* No backend, no request: the application's own save on SIGTERM is
     * all there is. A long grace period, so a process that ignored the
     * signal would show. */
    apply_real_class(cls, "  checkpoint: {path: " CHECKPOINT_PATH
                          ", envVar: HIBERNATOR_CHECKPOINT_PATH}\n"
                          "  pause: {gracePeriodSeconds: 60}\n");
    start_controller();

    char *ip = start_workspace("nb", cls);
    char *canary1 = app_get(ip, "/canary");
    app_put_state(ip, value);

    uint64_t t0 = harness_now_ms();
    set_paused("nb", 1);
    cJSON *ws = wait_state("nb", "Paused", 90000);
    uint64_t took = harness_now_ms() - t0;
    is(ws, "status.lastPause.memory", "files");
    assert_null(str_at(ws, "status.snapshot.appCheckpoint.result"));
    cJSON_Delete(ws);
    fprintf(stderr, "test_sigterm_checkpoint: paused in %.1f s (grace period 60 s)\n",
            (double)took / 1000);
    /* PID 1 handled SIGTERM: the pod went well within its 60 s. */
    if (took > 20000)
        fail_msg("the pause took %llu ms; the application did not stop on SIGTERM",
                 (unsigned long long)took);
    cJSON *file = checkpoint_file("nb");
    assert_non_null(file);
    is(file, "value", value);
    is(file, "writtenBy", "sigterm");
    cJSON_Delete(file);

    set_paused("nb", 0);
    cJSON_Delete(wait_state("nb", "Running", 120000));
    ws = wait_reason("nb", "Restored", "FromCheckpoint", 60000);
    cJSON_Delete(ws);
    free(ip);
    ip = pod_ip("nb");
    cJSON *st = expect_state(ip, value, "checkpoint");
    is(st, "checkpoint.writtenBy", "sigterm");
    is(st, "told", CHECKPOINT_PATH);
    cJSON_Delete(st);
    char *canary2 = app_get(ip, "/canary");
    assert_string_not_equal(canary1, canary2);

    free(canary1);
    free(canary2);
    free(ip);
}

/* After each test, passed or not: the controller and simulator stopped, the
 * test's workspaces (their finalizers, with no controller left to remove
 * them), namespace, class and storage config deleted. */
/* A pod on the real node whose container exits 0 after a moment, as GKE's
 * postCheckpoint: stop ends a workspace's container. */
static void exiting_pod(const char *name, const char *restart)
{
    assert_int_equal(
        harness_apply("apiVersion: v1\nkind: Pod\n"
                      "metadata: {name: %s, namespace: %s}\n"
                      "spec:\n"
                      "  restartPolicy: %s\n"
                      "  terminationGracePeriodSeconds: 1\n"
                      "  tolerations: [{key: hibernator.dev/real-node, operator: Equal, "
                      "value: \"true\", effect: NoSchedule}]\n"
                      "  containers: [{name: main, image: \"%s\", imagePullPolicy: Never,\n"
                      "    command: [/bin/sh, -c, \"sleep 2; exit 0\"]}]\n",
                      name, ns, restart, CANARY_IMAGE),
        0);
}

/* "Running <n> <codes>" with n >= 1 and every exit code 0: restarted after
 * an exit 0, running again, waiting to, or ended again with 0 (then both
 * the current and the last termination say 0: "00"). */
static int always_restarted(const char *seen)
{
    int n = 0;
    char tail[8] = "";
    if (!seen || sscanf(seen, "Running %d %7s", &n, tail) != 2 || n < 1 || !tail[0])
        return 0;
    for (const char *c = tail; *c; c++)
        if (*c != '0')
            return 0;
    return 1;
}

/* The real kubelet's side of the workspace pods' restart policy
 * (docs/snapshots.md, "The pod's restart policy"): a container that exits
 * 0 stays ended under OnFailure (the controller's choice) and Never, the
 * pod Succeeded with restartCount 0; under Always the kubelet starts it
 * again, the pod stays Running and restartCount rises, which is why the
 * workspace pods do not use Always. */
static void test_restart_policy(void **state)
{
    (void)state;
    ns = harness_namespace("restart-policy");
    exiting_pod("exit0-onfailure", "OnFailure");
    exiting_pod("exit0-never", "Never");
    exiting_pod("exit0-always", "Always");
    uint64_t end = harness_now_ms() + 120000;
    int done = 0;
    char *onfailure = NULL, *never = NULL, *always = NULL;
    const char *jsonpath = "{.status.phase} {.status.containerStatuses[0].restartCount} "
                           "{.status.containerStatuses[0].state.terminated.exitCode}"
                           "{.status.containerStatuses[0].lastState.terminated.exitCode}";
    while (!done && harness_now_ms() < end) {
        free(onfailure);
        free(never);
        free(always);
        onfailure = never = always = NULL;
        harness_kubectl(&onfailure, "-n %s get pod exit0-onfailure -o jsonpath='%s'", ns, jsonpath);
        harness_kubectl(&never, "-n %s get pod exit0-never -o jsonpath='%s'", ns, jsonpath);
        harness_kubectl(&always, "-n %s get pod exit0-always -o jsonpath='%s'", ns, jsonpath);
        done = onfailure && strncmp(onfailure, "Succeeded", 9) == 0 && never &&
               strncmp(never, "Succeeded", 9) == 0 && always &&
               strncmp(always, "Running 1", 9) == 0;
        if (!done)
            usleep(500 * 1000);
    }
    print_message("  phase, restartCount, exit code as the kubelet reports them:\n"
                  "    OnFailure: %s\n    Never:     %s\n    Always:    %s\n",
                  onfailure ? onfailure : "?", never ? never : "?", always ? always : "?");
    assert_string_equal(onfailure, "Succeeded 0 0");
    assert_string_equal(never, "Succeeded 0 0");
    if (!always_restarted(always))
        fail_msg("under Always: %s, wanted Running, restartCount 1 or more, exit code 0",
                 always ? always : "?");
    free(onfailure);
    free(never);
    free(always);
}

static int cleanup(void **state)
{
    (void)state;
    controller_stop();
    simulator_stop();
    if (ns) {
        harness_kubectl(NULL,
                        "-n %s get workspaces -o name 2>/dev/null | xargs -r kubectl --kubeconfig "
                        "'%s' -n %s patch --type=merge -p '{\"metadata\":{\"finalizers\":null}}' "
                        ">/dev/null 2>&1",
                        ns, harness_kubeconfig(), ns);
        /* GKE's finalizer on PodSnapshots: no simulator is left to release it. */
        harness_kubectl(
            NULL,
            "-n %s get podsnapshots -o name 2>/dev/null | xargs -r kubectl --kubeconfig "
            "'%s' -n %s patch --type=merge -p '{\"metadata\":{\"finalizers\":null}}' "
            ">/dev/null 2>&1",
            ns, harness_kubeconfig(), ns);
        harness_kubectl(NULL, "delete namespace %s --wait=false >/dev/null 2>&1", ns);
        harness_kubectl(NULL,
                        "delete workspaceclass %s-gke %s-files --ignore-not-found >/dev/null 2>&1",
                        ns, ns);
        harness_kubectl(NULL,
                        "delete podsnapshotstorageconfig %s-storage --ignore-not-found >/dev/null "
                        "2>&1",
                        ns);
        free(ns);
        ns = NULL;
    }
    return 0;
}

/* Runs the plugin's drill of cls in ns; returns its exit status, its
 * stdout in *out. */
static int drill(const char *cls, char **out)
{
    int r = harness_sh(out, "'%s' drill --kubeconfig '%s' -n %s --class %s --timeout 2m 2>&1",
                       KUBECTL_WORKSPACE_BIN, harness_kubeconfig(), ns, cls);
    fprintf(stderr, "%s", *out);
    return r;
}

static void test_drill_files(void **state)
{
    (void)state;
    ns = harness_namespace("checkpoint-drill");
    char cls[300];
    snprintf(cls, sizeof(cls), "%s-files", ns);
    apply_class_file();
    start_controller();
    char *out = NULL;
    int r = drill(cls, &out);
    assert_int_equal(r, 5);
    assert_non_null(strstr(out, "drill: canary before the pause: "));
    assert_non_null(strstr(out, "COLD START: the canary value changed (restored from checkpoint)"));
    free(out);
}

static void test_drill_simulated(void **state)
{
    (void)state;
    ns = harness_namespace("checkpoint-drillsim");
    char cls[300], storage[300];
    snprintf(cls, sizeof(cls), "%s-gke", ns);
    snprintf(storage, sizeof(storage), "%s-storage", ns);
    install_snapshot_crds(storage);
    apply_class_file();
    simulator_start("2s", NULL);
    start_controller();
    char *out = NULL;
    int r = drill(cls, &out);
    /* The simulator restores nothing: the pod it marks restored runs a
     * new process. The controller reports FromSnapshot, the canary says
     * the memory is gone: a cold start, and the drill must say both. */
    assert_int_equal(r, 5);
    assert_non_null(strstr(out, "drill: ready in"));
    assert_non_null(strstr(out, "(restored from snapshot)"));
    assert_non_null(strstr(out, "COLD START: the canary value changed although the controller "
                                "reports a restore from the snapshot: the process is a new one"));
    free(out);
}

int main(void)
{
    harness_require_real_node();
    it_deploy("it-checkpoint");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fallback_checkpoint, cleanup),
        cmocka_unit_test_teardown(test_sigterm_checkpoint, cleanup),
        cmocka_unit_test_teardown(test_drill_files, cleanup),
        cmocka_unit_test_teardown(test_drill_simulated, cleanup),
        cmocka_unit_test_teardown(test_restart_policy, cleanup),
    };
    /* IT_ONLY=<pattern>: run only the tests whose names match. */
    if (getenv("IT_ONLY"))
        cmocka_set_test_filter(getenv("IT_ONLY"));
    int r = cmocka_run_group_tests_name("real node: checkpoints", tests, NULL, NULL);
    it_show_logs();
    return r;
}
