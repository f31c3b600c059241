/*
 * The controller in-cluster, on the local cluster's real node (label
 * realnode), installed as a platform team installs it: `kubectl apply -k` of
 * hack/in-cluster (deploy/ plus the real node's toleration and node
 * selector), the image built from deploy/Containerfile without a registry
 * (deploy/local/images.sh). The only change the test makes is
 * --namespace=<its namespace> in the Deployment's args (a kustomize patch in
 * its temp dir), so that other work on a shared node is left alone.
 *
 *   - two replicas Running on the real node, one leader on the Lease in
 *     hibernator-system; /healthz and /readyz served on :8081 and the
 *     kubelet's probes passing; the unmodified in-cluster config (the
 *     kubernetes Service, the mounted ServiceAccount token and CA); uid
 *     65532 and a read-only root;
 *   - a workspace on a kwok GPU node paused and resumed by it, the status
 *     read back from the API server; nothing forbidden by deploy/rbac.yaml;
 *   - the leader's process killed (SIGKILL through containerd, no release)
 *     while a pause waits for its snapshot (the snapshot simulator): the
 *     standby takes the Lease and finishes the pause, one trigger, no
 *     second pod; the resume after it;
 *   - the leader's pod deleted (SIGTERM): the Lease released, the standby
 *     leading within a retry period, the pod gone well within its grace.
 *
 * Without HIBERNATOR_REAL_NODE (cluster.sh up --real-node) it skips, unless
 * HIBERNATOR_REQUIRE_CLUSTER is set. The install's Deployment, Service,
 * PodDisruptionBudget and Lease are removed at the end; the CRDs, the
 * namespace, the ServiceAccount and the RBAC stay (every test's it_deploy
 * applies them too).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "workspaces.h"

#define SYSTEM_NS "hibernator-system"
#define SELECTOR "app.kubernetes.io/name=hibernator,app.kubernetes.io/component=controller"

static const char *real_node;
static char cls[128], snap_cls[128];

/* ---- helpers ----------------------------------------------------------- */

static void require_real_node(void)
{
    real_node = harness_require_real_node();
}

/* The controller's pods, as JSON (caller frees). */
static cJSON *controller_pods(void)
{
    char *out = NULL;
    assert_int_equal(harness_kubectl(&out, "-n " SYSTEM_NS " get pods -l " SELECTOR " -o json"), 0);
    cJSON *j = cJSON_Parse(out);
    free(out);
    assert_non_null(j);
    return j;
}

static int pod_ready(const cJSON *pod)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(pod, "status"), "conditions"))
    {
        const char *t = str_at(c, "type"), *s = str_at(c, "status");
        if (t && s && strcmp(t, "Ready") == 0)
            return strcmp(s, "True") == 0;
    }
    return 0;
}

/* The container's first status (restartCount, containerID). */
static const cJSON *container_status(const cJSON *pod)
{
    return cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "status"),
                                         "containerStatuses"),
        0);
}

/* The pods this test's install runs: on the real node, not terminating,
 * started with our --namespace. */
static int ours(const cJSON *pod)
{
    if (cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
                                         "deletionTimestamp"))
        return 0;
    const char *node = str_at(pod, "spec.nodeName");
    if (!node || strcmp(node, real_node) != 0)
        return 0;
    char want[256];
    snprintf(want, sizeof(want), "--namespace=%s", ns);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(pod, "spec"), "containers"),
                           0),
        "args");
    const cJSON *a;
    cJSON_ArrayForEach(a,
                       args) if (cJSON_IsString(a) && strcmp(a->valuestring, want) == 0) return 1;
    return 0;
}

/* Counts our pods that are Ready. */
static int ready_pods(void)
{
    cJSON *pods = controller_pods();
    int n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(pods, "items")) n +=
        ours(p) && pod_ready(p);
    cJSON_Delete(pods);
    return n;
}

static int wait_ready_pods(int want, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    int n;
    while ((n = ready_pods()) != want && harness_now_ms() < end)
        usleep(250 * 1000);
    return n == want;
}

/* The Lease's holder (malloc'd, "" when none). */
static char *lease_holder(void)
{
    char *out = NULL;
    harness_kubectl(&out,
                    "-n " SYSTEM_NS " get lease hibernator -o jsonpath={.spec.holderIdentity}");
    return out ? out : strdup("");
}

/* The pod a holder identity names: "<pod>_<12 hex>" (manager.c). */
static void holder_pod(const char *holder, char *out, size_t size)
{
    snprintf(out, size, "%s", holder);
    char *us = strrchr(out, '_');
    if (us)
        *us = '\0';
}

/* GET http://ip:port/path; the body (malloc'd) and the code. */
static char *http_get(const char *ip, int port, const char *path, int *ret_code)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "curl -s -m 5 -w '\\n%%{http_code}' http://%s:%d%s", ip, port, path);
    FILE *f = popen(cmd, "r");
    char *body = calloc(1, 4096);
    assert_non_null(body);
    size_t n = f ? fread(body, 1, 4095, f) : 0;
    if (f)
        pclose(f);
    body[n] = '\0';
    char *nl = strrchr(body, '\n');
    *ret_code = nl ? atoi(nl + 1) : 0;
    if (nl)
        *nl = '\0';
    return body;
}

/* The logs of every container the install ran, this test's part of them,
 * in one string (caller frees). */
static char *all_logs(void)
{
    char *out = NULL;
    harness_kubectl(&out, "-n " SYSTEM_NS " logs -l " SELECTOR " --tail=-1 --prefix 2>&1");
    return out ? out : strdup("");
}

/* Nothing the controller did was refused: deploy/rbac.yaml suffices. */
static void assert_nothing_forbidden(void)
{
    char *logs = all_logs();
    char *hit = strstr(logs, "forbidden");
    if (!hit)
        hit = strstr(logs, "Forbidden");
    if (!hit)
        hit = strstr(logs, "code=403");
    if (hit) {
        char *start = hit;
        while (start > logs && start[-1] != '\n')
            start--;
        char *end = strchr(hit, '\n');
        if (end)
            *end = '\0';
        fail_msg("the in-cluster controller was refused: %s", start);
    }
    free(logs);
}

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

/* ---- set-up: the install ------------------------------------------------ */

/* Writes tmpdir/kustomization.yaml: hack/in-cluster plus --namespace=ns. */
static void write_overlay(void)
{
    /* kustomize takes a base only by a relative path: up from tmpdir (no
     * symlinks: both are absolute, made by mkdtemp and CMake). */
    char up[256] = "";
    for (const char *p = tmpdir; *p; p++)
        if (*p == '/')
            strncat(up, "../", sizeof(up) - strlen(up) - 1);
    const char *source = SOURCE_DIR;
    char path[600];
    snprintf(path, sizeof(path), "%s/kustomization.yaml", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: kustomize.config.k8s.io/v1beta1\n"
            "kind: Kustomization\n"
            "resources:\n"
            "- %s%s/hack/in-cluster\n"
            "patches:\n"
            "- target: {kind: Deployment, name: hibernator}\n"
            "  patch: |-\n"
            "    - op: add\n"
            "      path: /spec/template/spec/containers/0/args/-\n"
            "      value: --namespace=%s\n",
            up, source + 1, ns); /* SOURCE_DIR without its leading '/' */
    assert_int_equal(fclose(f), 0);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/it-incluster.XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    ns = harness_namespace("incluster");
    /* Built once per source tree (minutes cold), imported when containerd
     * lacks it; hack/test imports it before the tests. */
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s/deploy/local/images.sh' import controller", SOURCE_DIR);
    assert_int_equal(system(cmd), 0);
    write_overlay();

    uint64_t t0 = harness_now_ms();
    snprintf(cmd, sizeof(cmd), "kubectl --kubeconfig '%s' apply -k '%s' >/dev/null",
             harness_kubeconfig(), tmpdir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(harness_kubectl(NULL, "-n " SYSTEM_NS " rollout status deployment/hibernator "
                                           "--timeout=180s >/dev/null"),
                     0);
    if (!wait_ready_pods(2, 60000))
        fail_msg("not 2 Ready replicas of this test's install on %s", real_node);
    print_message("Deployment applied to 2 replicas Ready: %.1f s\n",
                  (double)(harness_now_ms() - t0) / 1000.0);

    /* Classes of this test only (cluster-scoped: named after the namespace). */
    snprintf(cls, sizeof(cls), "%s-gpu", ns);
    snprintf(snap_cls, sizeof(snap_cls), "%s-gpu-snap", ns);
    const char *gpu =
        "  accelerator: {resourceName: nvidia.com/gpu, count: 1, product: Tesla-T4}\n";
    apply_class(cls, gpu);
    install_snapshot_crds(ns);
    char extra[512];
    snprintf(extra, sizeof(extra),
             "%s  snapshot: {backend: GKE, storageConfigName: %s, timeout: 60s, retryAfter: 10m}\n",
             gpu, ns);
    apply_class(snap_cls, extra);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    /* The workspaces first, while the controller can still finalize them
     * and the simulator (GKE) releases their PodSnapshots' finalizer. */
    harness_kubectl(NULL, "-n %s delete workspaces --all --wait=true --timeout=60s >/dev/null", ns);
    harness_kubectl(NULL,
                    "-n %s wait --for=delete podsnapshots --all --timeout=30s >/dev/null 2>&1", ns);
    simulator_stop();
    if (getenv("IT_SHOW_LOGS")) {
        char *logs = all_logs();
        fprintf(stderr, "%s\n", logs);
        free(logs);
    }
    harness_kubectl(NULL,
                    "-n " SYSTEM_NS " delete deployment/hibernator service/hibernator-metrics "
                    "poddisruptionbudget/hibernator --ignore-not-found "
                    "--wait=true --timeout=60s >/dev/null");
    harness_kubectl(NULL, "-n " SYSTEM_NS " wait --for=delete pod -l " SELECTOR
                          " --timeout=60s >/dev/null 2>&1");
    /* Last: a replica still stopping could write it again. */
    harness_kubectl(NULL, "-n " SYSTEM_NS " delete lease/hibernator --ignore-not-found >/dev/null");
    harness_kubectl(NULL, "delete workspaceclass %s %s --ignore-not-found >/dev/null", cls,
                    snap_cls);
    harness_kubectl(NULL, "delete podsnapshotstorageconfig %s --ignore-not-found >/dev/null", ns);
    harness_kubectl(NULL, "delete namespace %s --wait=false >/dev/null", ns);
    free(ns);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    (void)system(cmd);
    return 0;
}

/* ---- tests ---------------------------------------------------------------- */

/* Two replicas on the real node, one leader, probes served and passing, the
 * in-cluster config, the pod's security context holding. */
static void test_installed(void **state)
{
    (void)state;
    char *holder = lease_holder();
    char leader[256];
    holder_pod(holder, leader, sizeof(leader));
    cJSON *pods = controller_pods();
    int n = 0, leaders = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(pods, "items"))
    {
        if (!ours(p))
            continue;
        n++;
        const char *name = str_at(p, "metadata.name");
        const char *ip = str_at(p, "status.podIP");
        assert_non_null(name);
        assert_non_null(ip);
        int is_leader = strcmp(name, leader) == 0;
        leaders += is_leader;
        /* the kubelet's probes pass: Ready, never restarted */
        assert_true(pod_ready(p));
        assert_int_equal(num_at(container_status(p), "restartCount"), 0);
        int code;
        char *body = http_get(ip, 8081, "/healthz", &code);
        assert_int_equal(code, 200);
        free(body);
        body = http_get(ip, 8081, "/readyz", &code);
        assert_int_equal(code, 200);
        assert_non_null(strstr(body, is_leader ? "leader" : "standby"));
        free(body);
        /* the unmodified in-cluster config: the kubernetes Service */
        char *out = NULL;
        harness_kubectl(&out, "-n " SYSTEM_NS " logs %s", name);
        assert_non_null(out);
        assert_non_null(strstr(out, "config=in-cluster"));
        assert_non_null(strstr(out, "server=https://10.96.0.1:443"));
        free(out);
        /* uid 65532, no capabilities, a read-only root */
        out = NULL;
        assert_int_equal(harness_kubectl(&out,
                                         "-n " SYSTEM_NS " exec %s -- sh -c 'id -u; grep ^CapEff: "
                                         "/proc/1/status; touch /probe 2>&1 || true'",
                                         name),
                         0);
        assert_non_null(out);
        assert_true(strncmp(out, "65532\n", 6) == 0);
        assert_non_null(strstr(out, "CapEff:\t0000000000000000"));
        assert_non_null(strstr(out, "Read-only file system"));
        free(out);
    }
    cJSON_Delete(pods);
    assert_int_equal(n, 2);
    if (leaders != 1)
        fail_msg("Lease holder %s is none of this install's pods", holder);
    free(holder);
    assert_nothing_forbidden();
}

/* A pause and a resume through the in-cluster controller. */
static void test_pause_resume(void **state)
{
    (void)state;
    apply_ws("cycle", cls, 0, NULL);
    cJSON *ws = wait_state("cycle", "Running", 60000);
    assert_string_equal(str_at(ws, "status.podName"), "cycle-1");
    assert_non_null(strstr(str_at(ws, "status.nodeName"), "gpu-node"));
    assert_string_equal(str_at(ws, "status.accelerator.product"), "Tesla-T4");
    cJSON_Delete(ws);

    set_paused("cycle", 1);
    ws = wait_state("cycle", "Paused", 60000);
    assert_int_equal(all_pods("cycle"), 0);
    assert_non_null(str_at(ws, "status.lastPause.podDeletedAt"));
    assert_true(num_at(ws, "status.accounting.pauses") == 1);
    cJSON_Delete(ws);

    set_paused("cycle", 0);
    ws = wait_state("cycle", "Running", 60000);
    assert_string_equal(str_at(ws, "status.podName"), "cycle-2");
    assert_string_equal(cond_field(ws, "Restored", "reason"), "FromCheckpoint");
    assert_true(num_at(ws, "status.accounting.resumes") == 1);
    cJSON_Delete(ws);
    assert_int_equal(live_pods("cycle"), 1);
    assert_nothing_forbidden();
}

/* The leader dies (SIGKILL, its Lease not released) while a pause waits for
 * its snapshot: the standby takes over and finishes it. */
static void test_failover(void **state)
{
    (void)state;
    simulator_start("3s", NULL);
    apply_ws("fo", snap_cls, 0, NULL);
    cJSON_Delete(wait_state("fo", "Running", 60000));

    char *holder = lease_holder();
    char leader[256];
    holder_pod(holder, leader, sizeof(leader));
    char *cid = NULL;
    assert_int_equal(harness_kubectl(&cid,
                                     "-n " SYSTEM_NS " get pod %s -o "
                                     "jsonpath={.status.containerStatuses[0].containerID}",
                                     leader),
                     0);
    assert_non_null(cid);
    assert_true(strncmp(cid, "containerd://", 13) == 0);

    set_paused("fo", 1);
    /* In the middle: the trigger is made, the snapshot not Ready yet. */
    cJSON *ws = wait_reason("fo", "SnapshotReady", "InProgress", 30000);
    assert_string_equal(str_at(ws, "status.state"), "Pausing");
    cJSON_Delete(ws);
    assert_int_equal(live_pods("fo"), 1);

    char cmd[512];
    snprintf(cmd, sizeof(cmd), "ctr -a '%s' -n k8s.io tasks kill -s SIGKILL %s",
             getenv("HIBERNATOR_CONTAINERD_SOCK"), cid + 13);
    uint64_t killed = harness_now_ms();
    assert_int_equal(system(cmd), 0);

    /* The standby takes the Lease: not before the lease runs out (no
     * release), within the lease duration (15 s) and a few retry periods. */
    char *now = NULL;
    char pod[256] = "";
    for (;;) {
        free(now);
        now = lease_holder();
        holder_pod(now, pod, sizeof(pod));
        if (now[0] && strcmp(now, holder) != 0)
            break;
        if (harness_now_ms() - killed > 40000)
            fail_msg("the Lease is still held by %s 40 s after its pod was killed", now);
        usleep(200 * 1000);
    }
    double failover = (double)(harness_now_ms() - killed) / 1000.0;
    /* The standby, or the killed container restarted by the kubelet in
     * the same pod (a new process, a new identity): whichever comes
     * first after the lease ran out. */
    print_message("failover: %s took the Lease from %s %.1f s after the kill (%s)\n", now, holder,
                  failover, strcmp(pod, leader) == 0 ? "the restarted leader pod" : "the standby");
    assert_true(failover >= 10.0);

    /* It finishes the pause: the snapshot Ready, the pod deleted after it,
     * one trigger. */
    ws = wait_state("fo", "Paused", 60000);
    assert_string_equal(str_at(ws, "status.snapshot.phase"), "Ready");
    assert_string_equal(str_at(ws, "status.snapshot.attempt"), "fo-p1-1");
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    cJSON_Delete(ws);
    assert_int_equal(all_pods("fo"), 0);
    assert_int_equal(count_objects("podsnapshotmanualtriggers", "hibernator.dev/workspace=fo"), 1);
    print_message("pause finished %.1f s after the kill\n",
                  (double)(harness_now_ms() - killed) / 1000.0);

    /* and resumes it from the snapshot, with one pod */
    set_paused("fo", 0);
    ws = wait_reason("fo", "Restored", "FromSnapshot", 60000);
    assert_string_equal(str_at(ws, "status.podName"), "fo-2");
    cJSON_Delete(ws);
    assert_int_equal(all_pods("fo"), 1);

    /* The killed container was restarted by the kubelet: both Ready. */
    if (!wait_ready_pods(2, 60000))
        fail_msg("the killed replica did not come back Ready");
    char *restarts = NULL;
    harness_kubectl(&restarts,
                    "-n " SYSTEM_NS " get pod %s -o jsonpath={.status.containerStatuses[0]."
                    "restartCount}",
                    leader);
    assert_non_null(restarts);
    assert_string_equal(restarts, "1");
    free(restarts);
    char *still = lease_holder();
    assert_string_equal(still, now);
    free(still);
    free(now);
    free(holder);
    free(cid);
    assert_nothing_forbidden();
}

/* A leader deleted as a node drain or a rollout deletes it: SIGTERM to
 * the controller, PID 1 of its container, which releases the Lease and
 * exits; the standby leads within a retry period, not a lease duration,
 * and the pod is gone long before its 30 s grace period. */
static void test_graceful_handover(void **state)
{
    (void)state;
    char *holder = lease_holder();
    char leader[256];
    holder_pod(holder, leader, sizeof(leader));
    assert_true(leader[0] != '\0');
    uint64_t t0 = harness_now_ms();
    assert_int_equal(
        harness_kubectl(NULL, "-n " SYSTEM_NS " delete pod %s --wait=false >/dev/null", leader), 0);
    char *now = NULL;
    for (;;) {
        free(now);
        now = lease_holder();
        if (now[0] && strcmp(now, holder) != 0)
            break;
        if (harness_now_ms() - t0 > 30000)
            fail_msg("the Lease is still held by %s 30 s after its pod's delete", now);
        usleep(100 * 1000);
    }
    double handover = (double)(harness_now_ms() - t0) / 1000.0;
    assert_int_equal(harness_kubectl(NULL,
                                     "-n " SYSTEM_NS " wait --for=delete pod/%s --timeout=60s "
                                     ">/dev/null 2>&1",
                                     leader),
                     0);
    double gone = (double)(harness_now_ms() - t0) / 1000.0;
    print_message("graceful: %s led %.1f s after the delete; the old pod gone after %.1f s\n", now,
                  handover, gone);
    /* released: well within the lease duration (15 s) */
    assert_true(handover < 10.0);
    /* SIGTERM handled: not the 30 s grace period */
    assert_true(gone < 20.0);
    /* The Deployment's new replica stands by. */
    if (!wait_ready_pods(2, 60000))
        fail_msg("no second Ready replica after the delete");
    free(now);
    free(holder);
    assert_nothing_forbidden();
}

int main(void)
{
    require_real_node();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_installed),
        cmocka_unit_test(test_pause_resume),
        cmocka_unit_test(test_failover),
        cmocka_unit_test(test_graceful_handover),
    };
    return cmocka_run_group_tests_name("controller in-cluster", tests, group_setup, group_teardown);
}
