/*
 * The node agent (hibernator-node, include/node/agent.h) on the real node,
 * with the real kubelet, containerd v2.3, CRIU and the cluster's registry:
 * a Jupyter kernel's memory survives a checkpoint, an image, the pod's
 * deletion and a restore into a new pod.
 *
 *   test_checkpoint_restore   x = 42 and 64 MiB in a kernel; a
 *                             ContainerSnapshot; Ready with an image the
 *                             registry holds, the kubelet's archive gone;
 *                             the pod deleted; a new pod from the image:
 *                             the server's start time and the kernel are
 *                             the same, print(x) says 42
 *   test_refused              a ContainerSnapshot naming another uid of the
 *                             pod (PodReplaced), and a container CRIU
 *                             refuses (an unlinked open file over CRIU's
 *                             1 MiB ghost limit): Ready=False, final
 *   test_agent_down           the agent off the node while a
 *                             ContainerSnapshot is made, back again: it goes
 *                             on from the API server alone
 *   test_archive_lost         Checkpointed with an archive the node no longer
 *                             has (a crash, a cleaned disk): the agent finds
 *                             it missing when it stores and checkpoints the
 *                             running pod again
 *   test_agent_killed         the agent SIGKILLed while the kubelet
 *                             checkpoints, and while the image is pushed:
 *                             Ready each time, no archive left on the node
 *   test_deleted              a deleted ContainerSnapshot: its image is gone
 *                             from the registry, then the object
 *   test_controller_killed    the controller killed right after each step of
 *                             a pause and a resume with memory: the status
 *                             records what the objects hold, x comes back
 *   test_refused_workspace    a checkpoint CRIU refuses, through the
 *                             controller: the class's onFailure pauses
 *                             without memory and says why
 *   test_image_gone           the image deleted from the registry while
 *                             paused: the restore cannot pull it, the pod is
 *                             replaced from files, the status says why
 *
 * The agent is the DaemonSet of deploy/node/ as deploy/local/node-agent.sh
 * installs it (kubectl apply -k; its ServiceAccount and RBAC, nothing
 * more), left installed for the tier's other programs. The whole demo
 * through the controller is it_demo's. On this machine CRIU cannot dump a
 * process of another uid than its own (its prlimit64 needs
 * CAP_SYS_RESOURCE, which the machine's capability set lacks): the
 * notebook runs as root here.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "jupyter.h"
#include "workspaces.h"

#define NOTEBOOK_IMAGE "hibernator.local/notebook:dev"
#define RUNTIME_DIR "/root/.local/share/jupyter/runtime"
/* A workspace's server runs in its home: its runtime files are there. */
#define HOME_RUNTIME_DIR "/home/jovyan/.local/share/jupyter/runtime"
#define TOKEN "it-node-agent"

static const char *registry; /* host:port */
static const char *password; /* it_registry()'s */

/* ---- the agent ------------------------------------------------------------- */

#define AGENT_NS "hibernator-node"
#define AGENT_PODS "-n " AGENT_NS " -l app.kubernetes.io/component=node-agent"

/* The DaemonSet of deploy/node/ as deploy/local/node-agent.sh installs it
 * (kubectl apply -k; the image imported), running on the real node. */
static void agent_install(void)
{
    uint64_t t0 = harness_now_ms();
    assert_int_equal(harness_sh(NULL, "'%s/deploy/local/node-agent.sh' up --dir '%s' >&2",
                                SOURCE_DIR, harness_cluster_dir()),
                     0);
    print_message("node agent DaemonSet running: %.1f s\n",
                  (double)(harness_now_ms() - t0) / 1000.0);
}

/* The agent's pod: its name and its container's runtime id (no
 * "containerd://"), its restart count. */
static void agent_pod(char name[128], char cid[256], int *restarts)
{
    char *out = NULL;
    assert_int_equal(harness_kubectl(&out,
                                     "get pods " AGENT_PODS " --field-selector "
                                     "status.phase=Running -o jsonpath='{.items[0].metadata.name} "
                                     "{.items[0].status.containerStatuses[0].containerID} "
                                     "{.items[0].status.containerStatuses[0].restartCount}'"),
                     0);
    char id[256] = "";
    int n = 0;
    if (sscanf(out, "%127s %255s %d", name, id, &n) != 3)
        fail_msg("no running agent pod: %s", out);
    free(out);
    assert_true(strncmp(id, "containerd://", 13) == 0);
    snprintf(cid, 256, "%s", id + 13);
    *restarts = n;
}

/* SIGKILL to the agent's process through containerd (no shutdown of its
 * own); the kubelet starts the container again. */
static void agent_kill(void)
{
    char pod[128], cid[256];
    int restarts = 0;
    agent_pod(pod, cid, &restarts);
    assert_int_equal(harness_sh(NULL, "ctr -a '%s' -n k8s.io tasks kill -s SIGKILL %s",
                                getenv("HIBERNATOR_CONTAINERD_SOCK"), cid),
                     0);
    print_message("  agent %s killed (SIGKILL)\n", pod);
}

/* The agent off the node (its DaemonSet's pods select no node) and back. */
static void agent_down(void)
{
    assert_int_equal(harness_kubectl(NULL, "-n " AGENT_NS " patch daemonset hibernator-node "
                                           "--type=merge -p '{\"spec\":{\"template\":{\"spec\":"
                                           "{\"nodeSelector\":{\"hibernator.dev/no-agent\":"
                                           "\"true\"}}}}}'"),
                     0);
    assert_int_equal(harness_kubectl(NULL, "wait --for=delete pod " AGENT_PODS " --timeout=60s"),
                     0);
}

static void agent_up(void)
{
    assert_int_equal(harness_kubectl(NULL, "-n " AGENT_NS " patch daemonset hibernator-node "
                                           "--type=merge -p '{\"spec\":{\"template\":{\"spec\":"
                                           "{\"nodeSelector\":{\"hibernator.dev/no-agent\":"
                                           "null}}}}}'"),
                     0);
    assert_int_equal(harness_kubectl(NULL, "-n " AGENT_NS " rollout status "
                                           "daemonset/hibernator-node --timeout=120s"),
                     0);
}

/* ---- pods and cells ------------------------------------------------------------ */

/* A Jupyter server on the real node, as root (see the top), its token
 * TOKEN; extra: more of the container's command, run before it. */
static void notebook_pod(const char *name, const char *image, const char *before)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "%sexec python3 -m jupyter_server --ip=0.0.0.0 --port=8888 --no-browser "
             "--allow-root --ServerApp.root_dir=/root --ServerApp.allow_remote_access=True",
             before ? before : "");
    assert_int_equal(
        harness_apply("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s}\n"
                      "spec:\n"
                      "  nodeName: %s\n"
                      "  restartPolicy: OnFailure\n"
                      "  terminationGracePeriodSeconds: 2\n"
                      "  tolerations: [{key: hibernator.dev/real-node, operator: Exists, "
                      "effect: NoSchedule}]\n"
                      "  imagePullSecrets: [{name: checkpoints}]\n"
                      "  containers:\n"
                      "  - name: workspace\n"
                      "    image: \"%s\"\n"
                      "    imagePullPolicy: IfNotPresent\n"
                      "    command: [/bin/sh, -c, \"%s\"]\n"
                      "    env: [{name: JUPYTER_TOKEN, value: " TOKEN "}]\n",
                      name, ns, getenv("HIBERNATOR_REAL_NODE"), image, cmd),
        0);
    assert_int_equal(
        harness_kubectl(NULL, "-n %s wait --for=condition=Ready pod/%s --timeout=120s", ns, name),
        0);
}

static char *status_of(const char *pod)
{
    return jupyter_status(pod, TOKEN);
}

static const char *runtime_dir = RUNTIME_DIR;

static char *run_cell(const char *pod, const char *kernel, const char *code)
{
    return jupyter_run_cell(pod, TOKEN, runtime_dir, kernel, code);
}

/* ---- ContainerSnapshots ---------------------------------------------------------- */

static void snapshot_create(const char *name, const char *pod, const char *uid)
{
    assert_int_equal(
        harness_apply("apiVersion: hibernator.dev/v1alpha1\nkind: ContainerSnapshot\n"
                      "metadata: {name: %s, namespace: %s, finalizers: "
                      "[hibernator.dev/checkpoint-image]}\n"
                      "spec: {nodeName: %s, podName: %s, podUID: \"%s\", containerName: "
                      "workspace, repository: \"%s/%s/%s\", tag: %s}\n",
                      name, ns, getenv("HIBERNATOR_REAL_NODE"), pod, uid, registry, ns, pod, name),
        0);
}

static char *snapshot_field(const char *name, const char *jsonpath)
{
    char *out = NULL;
    if (harness_kubectl(&out, "-n %s get containersnapshot %s -o jsonpath='%s'", ns, name,
                        jsonpath) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* Waits for Ready True or False; returns "True <reason>" or "False <reason>". */
static char *snapshot_wait(const char *name, int timeout_s)
{
    for (int i = 0; i < timeout_s * 2; i++) {
        char *r = snapshot_field(name, "{.status.conditions[?(@.type==\"Ready\")].status} "
                                       "{.status.conditions[?(@.type==\"Ready\")].reason}");
        if (r && (strncmp(r, "True ", 5) == 0 || strncmp(r, "False ", 6) == 0))
            return r;
        free(r);
        usleep(500 * 1000);
    }
    fail_msg("ContainerSnapshot %s not done after %d s", name, timeout_s);
    return NULL;
}

/* ---- the tests ---------------------------------------------------------------- */

static char stored_image[512]; /* test_checkpoint_restore's, for test_deleted */

/* How many checkpoints the agent (its current container) started for the
 * ContainerSnapshot name of this test's namespace: "checkpointing" and
 * "checkpointing again" lines. */
static int agent_checkpoints(const char *name)
{
    char *out = NULL;
    harness_sh(&out,
               "kubectl --kubeconfig '%s' logs " AGENT_PODS " --tail=-1 2>/dev/null | "
               "grep -F '%s/%s' | grep -c 'checkpointing'",
               harness_kubeconfig(), ns, name);
    int n = out ? atoi(out) : -1;
    free(out);
    return n;
}

static void test_checkpoint_restore(void **state)
{
    (void)state;
    notebook_pod("nb", NOTEBOOK_IMAGE, NULL);
    free(status_of("nb")); /* it answers */
    char *out = run_cell("nb", NULL,
                         "import os; x = 42; buf = bytearray(os.urandom(1 << 20)) * 64; "
                         "print(x, len(buf))");
    char kernel[64];
    snprintf(kernel, sizeof(kernel), "%.*s", (int)strcspn(out, "\n"), out);
    assert_non_null(strstr(out, "42 67108864"));
    free(out);
    char *status = status_of("nb");
    char started[64];
    jupyter_started_of(status, started);
    free(status);
    char *uid = jupyter_pod_field("nb", "{.metadata.uid}");
    uint64_t t0 = harness_now_ms();
    snapshot_create("nb-p1-1", "nb", uid);
    free(uid);
    char *ready = snapshot_wait("nb-p1-1", 180);
    uint64_t t_ready = harness_now_ms();
    assert_string_equal(ready, "True Stored");
    free(ready);
    char *image = snapshot_field("nb-p1-1", "{.status.image}");
    char *size = snapshot_field("nb-p1-1", "{.status.sizeBytes}");
    char *archive = snapshot_field("nb-p1-1", "{.status.archive}");
    char *message = snapshot_field("nb-p1-1", "{.status.conditions[?(@.type==\"Ready\")].message}");
    print_message("  checkpoint + image + push: %.1f s; %s bytes; %s\n",
                  (double)(t_ready - t0) / 1000.0, size, message);
    snprintf(stored_image, sizeof(stored_image), "%s", image);
    /* The image is the registry's; the node keeps no archive. */
    char path[300];
    snprintf(path, sizeof(path), "%s/nb", ns);
    const char *digest = strchr(image, '@');
    assert_non_null(digest);
    assert_int_equal(it_registry_head(path, digest + 1), 200);
    assert_int_equal(it_registry_head(path, "nb-p1-1"), 200);
    struct stat st;
    assert_true(archive && archive[0] == '/');
    assert_int_not_equal(stat(archive, &st), 0);
    assert_true(atoll(size) > 64ll << 20);
    free(size);
    free(archive);
    free(message);
    /* One checkpoint: none after the image was stored (the agent's cache
     * lags its own Ready write by a moment; it waits for it). */
    usleep(3000 * 1000);
    assert_int_equal(agent_checkpoints("nb-p1-1"), 1);

    /* The pod goes; a new one is created from the image. */
    assert_int_equal(harness_kubectl(NULL, "-n %s delete pod nb --wait=true", ns), 0);
    t0 = harness_now_ms();
    notebook_pod("nb-restored", image, NULL);
    uint64_t t_pod = harness_now_ms();
    status = status_of("nb-restored");
    char started_after[64];
    jupyter_started_of(status, started_after);
    print_message("  restored pod Ready %.1f s after it was created; server started %s "
                  "(before: %s)\n",
                  (double)(t_pod - t0) / 1000.0, started_after, started);
    assert_string_equal(started_after, started);
    assert_non_null(strstr(status, "\"kernels\": 1"));
    free(status);
    out = run_cell("nb-restored", kernel, "print(x, len(buf))");
    assert_non_null(strstr(out, kernel));
    assert_non_null(strstr(out, "42"));
    assert_non_null(strstr(out, "67108864"));
    free(out);
    free(image);
}

static void test_refused(void **state)
{
    (void)state;
    /* Another uid than the pod's. */
    notebook_pod("other", NOTEBOOK_IMAGE, NULL);
    snapshot_create("other-p1-1", "other", "00000000-0000-0000-0000-000000000000");
    char *r = snapshot_wait("other-p1-1", 60);
    assert_string_equal(r, "False PodReplaced");
    free(r);
    /* An unlinked open file of 2 MiB: CRIU keeps at most 1 MiB of such
     * ("ghost") files in a dump unless told otherwise, and refuses. */
    notebook_pod("ghost", NOTEBOOK_IMAGE,
                 "python3 -c 'import os,time; f=open(\\\"/tmp/g\\\",\\\"w\\\"); "
                 "f.write(\\\"x\\\"*(2<<20)); f.flush(); os.unlink(\\\"/tmp/g\\\"); "
                 "time.sleep(100000)' & ");
    char *uid = jupyter_pod_field("ghost", "{.metadata.uid}");
    snapshot_create("ghost-p1-1", "ghost", uid);
    free(uid);
    r = snapshot_wait("ghost-p1-1", 120);
    char *message =
        snapshot_field("ghost-p1-1", "{.status.conditions[?(@.type==\"Ready\")].message}");
    assert_non_null(message);
    print_message("  refused: %s\n", message ? message : "(none)");
    assert_string_equal(r, "False CheckpointFailed");
    assert_non_null(strstr(message, "the kubelet answered"));
    free(message);
    free(r);
    /* Nothing was stored, and the pod still runs. */
    char *phase = jupyter_pod_field("ghost", "{.status.phase}");
    assert_string_equal(phase, "Running");
    free(phase);
}

static void test_agent_down(void **state)
{
    (void)state;
    agent_down();
    notebook_pod("later", NOTEBOOK_IMAGE, NULL);
    char *uid = jupyter_pod_field("later", "{.metadata.uid}");
    snapshot_create("later-p1-1", "later", uid);
    free(uid);
    sleep(2);
    char *r = snapshot_field("later-p1-1", "{.status.conditions}");
    assert_string_equal(r, ""); /* nobody acted */
    free(r);
    agent_up();
    r = snapshot_wait("later-p1-1", 180);
    assert_string_equal(r, "True Stored");
    free(r);
}

static void test_archive_lost(void **state)
{
    (void)state;
    agent_down();
    notebook_pod("lost", NOTEBOOK_IMAGE, NULL);
    char *uid = jupyter_pod_field("lost", "{.metadata.uid}");
    snapshot_create("lost-p1-1", "lost", uid);
    free(uid);
    const char *gone = "/var/lib/kubelet/checkpoints/checkpoint-lost_x-workspace-gone.tar";
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s patch containersnapshot lost-p1-1 --subresource=status "
                                     "--type=merge -p '{\"status\":{\"archive\":\"%s\","
                                     "\"conditions\":[{\"type\":\"Checkpointed\",\"status\":"
                                     "\"True\",\"reason\":\"Checkpointed\",\"message\":\"a "
                                     "crash\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}'",
                                     ns, gone),
                     0);
    agent_up();
    char *r = snapshot_wait("lost-p1-1", 180);
    assert_string_equal(r, "True Stored");
    free(r);
    char *archive = snapshot_field("lost-p1-1", "{.status.archive}");
    print_message("  the lost archive replaced by %s\n", archive);
    assert_string_not_equal(archive, gone);
    free(archive);
}

/* The kubelet's archives of a pod left on the node. */
static int archives_of(const char *pod)
{
    char *out = NULL;
    harness_sh(&out, "ls '%s/real-node/kubelet/checkpoints' | grep -c '^checkpoint-%s_%s-' || true",
               harness_cluster_dir(), pod, ns);
    int n = out ? atoi(out) : -1;
    free(out);
    return n;
}

/* Waits until a ContainerSnapshot says Checkpointed=True. */
static void wait_checkpointed(const char *name)
{
    for (int i = 0; i < 2400; i++) {
        char *c = snapshot_field(name, "{.status.conditions[?(@.type==\"Checkpointed\")].status}");
        int yes = c && strcmp(c, "True") == 0;
        free(c);
        if (yes)
            return;
        usleep(100 * 1000);
    }
    fail_msg("%s: not Checkpointed after 240 s", name);
}

/* The agent killed (SIGKILL through containerd, no shutdown of its own)
 * while the kubelet checkpoints, and while the image is pushed. The
 * kubelet starts it again; it goes on from the objects alone: Ready, the
 * image in the registry, and no archive of the pod left on the node (an
 * archive written for the killed call is swept). */
static void test_agent_killed(void **state)
{
    (void)state;
    notebook_pod("killed", NOTEBOOK_IMAGE, NULL);
    free(status_of("killed"));
    char *out = run_cell("killed", NULL,
                         "import os; x = 42; buf = bytearray(os.urandom(1 << 20)) * 128; print(x)");
    free(out);
    char *uid = jupyter_pod_field("killed", "{.metadata.uid}");

    /* While the kubelet checkpoints (CRIU dumps ~200 MB for seconds). */
    snapshot_create("killed-p1-1", "killed", uid);
    usleep(1500 * 1000);
    char *c = snapshot_field("killed-p1-1", "{.status.conditions}");
    assert_string_equal(c, ""); /* nothing recorded yet */
    free(c);
    agent_kill();
    char *r = snapshot_wait("killed-p1-1", 300);
    assert_string_equal(r, "True Stored");
    free(r);

    /* While the image is pushed. */
    snapshot_create("killed-p1-2", "killed", uid);
    wait_checkpointed("killed-p1-2");
    agent_kill();
    r = snapshot_wait("killed-p1-2", 300);
    assert_string_equal(r, "True Stored");
    free(r);
    free(uid);

    char path[300];
    snprintf(path, sizeof(path), "%s/killed", ns);
    for (int i = 1; i <= 2; i++) {
        char name[32];
        snprintf(name, sizeof(name), "killed-p1-%d", i);
        char *image = snapshot_field(name, "{.status.image}");
        assert_int_equal(it_registry_head(path, strchr(image, '@') + 1), 200);
        free(image);
    }
    /* Nothing of the pod's memory stays on the node's disk. */
    int left = archives_of("killed");
    for (int i = 0; i < 50 && left > 0; i++, usleep(200 * 1000))
        left = archives_of("killed");
    assert_int_equal(left, 0);
}

static void test_deleted(void **state)
{
    (void)state;
    assert_true(stored_image[0]);
    char path[300];
    snprintf(path, sizeof(path), "%s/nb", ns);
    const char *digest = strchr(stored_image, '@') + 1;
    assert_int_equal(it_registry_head(path, digest), 200);
    assert_int_equal(
        harness_kubectl(NULL, "-n %s delete containersnapshot nb-p1-1 --timeout=60s", ns), 0);
    assert_int_equal(it_registry_head(path, digest), 404);
    assert_int_equal(it_registry_head(path, "nb-p1-1"), 404);
}

/* ---- through the controller ---------------------------------------------------- */

#define CLASS "it-nb-checkpoint"

/* The class of deploy/local/notebook-checkpoint-class.yaml, idle after 45
 * s, and the controller for the test's namespace. */
static void memory_class(void)
{
    static int applied;
    if (applied)
        return;
    applied = 1;
    assert_int_equal(
        harness_apply("apiVersion: hibernator.dev/v1alpha1\nkind: WorkspaceClass\n"
                      "metadata: {name: " CLASS "}\n"
                      "spec:\n"
                      "  images: {allowed: [\"hibernator.local/notebook:*\"], default: \"%s\"}\n"
                      "  port: 8888\n"
                      "  env: [{name: NOTEBOOK_USER, value: root}]\n"
                      "  resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {memory: 2Gi}}\n"
                      "  tolerations: [{key: hibernator.dev/real-node, operator: Exists, effect: "
                      "NoSchedule}]\n"
                      "  home: {size: 1Gi, storageClassName: standard, mountPath: /home/jovyan, "
                      "onDelete: Delete}\n"
                      "  checkpoint: {path: /home/jovyan/.hibernator/checkpoint, envVar: "
                      "HIBERNATOR_CHECKPOINT_PATH}\n"
                      "  pause: {gracePeriodSeconds: 10}\n"
                      "  resume: {capacityTimeout: 5m, onCapacityTimeout: Fail}\n"
                      "  snapshot: {backend: ContainerCheckpoint, repository: \"%s/checkpoints\", "
                      "pullSecretName: checkpoints, timeout: 5m, onFailure: PauseWithoutMemory, "
                      "restoreCheckTimeout: 2m}\n"
                      "  activity:\n"
                      "    application: Jupyter\n"
                      "    url: \"http://{podIP}:{port}\"\n"
                      "    tokenSecretRef: {name: \"{workspace}-jupyter\"}\n"
                      "    interval: 5s\n"
                      "    timeout: 3s\n"
                      "  idle: {after: 45s, minAfter: 10s, minRunning: 0s, warnBefore: 5s}\n",
                      NOTEBOOK_IMAGE, registry),
        0);
    static char ns_flag[200];
    snprintf(ns_flag, sizeof(ns_flag), "--namespace=%s", ns);
    static const char *args[2];
    args[0] = ns_flag;
    args[1] = NULL;
    controller_extra_args(args);
}

/* The controller for the test's namespace; failpoint as controller_start()'s. */
static int controller_running;

static void controller_up(const char *failpoint)
{
    memory_class();
    controller_start(failpoint);
    controller_running = 1;
}

static void controller_down(void)
{
    controller_stop();
    controller_running = 0;
}

/* A failpoint reached: the controller exited by itself (status 3). */
static void controller_exited(const char *failpoint)
{
    int st = controller_wait_exit(180000);
    controller_running = 0;
    print_message("  failpoint %s: the controller exited with %d\n", failpoint, st);
    assert_int_equal(st, 3);
}

/* A running notebook workspace with x = 42 and 256 MiB in a kernel; its
 * kernel id in kernel. */
static void workspace_with_kernel(const char *name, int mib, char kernel[64])
{
    if (!controller_running)
        controller_up(NULL);
    runtime_dir = HOME_RUNTIME_DIR;
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s create secret generic %s-jupyter "
                                     "--from-literal=token=" TOKEN,
                                     ns, name),
                     0);
    apply_ws(name, CLASS, 0, NULL);
    cJSON *ws = wait_state(name, "Running", 180000);
    char pod[128];
    snprintf(pod, sizeof(pod), "%s", str_at(ws, "status.podName"));
    cJSON_Delete(ws);
    free(status_of(pod));
    char code[200], want[64];
    snprintf(code, sizeof(code),
             "import os; x = 42; buf = bytearray(os.urandom(1 << 20)) * %d; print(x, len(buf))",
             mib);
    snprintf(want, sizeof(want), "42 %lld", (long long)mib << 20);
    char *out = run_cell(pod, NULL, code);
    snprintf(kernel, 64, "%.*s", (int)strcspn(out, "\n"), out);
    assert_non_null(strstr(out, want));
    free(out);
}

/* A ContainerSnapshot's Ready condition, its image and its name's
 * workspace label; fails when there is not exactly one for the pause. */
static char *csnap_image(const char *name)
{
    char *image = snapshot_field(name, "{.status.image}");
    assert_non_null(image);
    assert_true(image[0]);
    return image;
}

/* The workspace's status says what the backend's objects say: the
 * pause's ContainerSnapshot, Ready, its image in the registry, the pod
 * gone and its deletion recorded: when it was sent, or, when no running
 * controller saw it (seen 0), said to be unobserved, never made up. */
static void check_paused_with(const char *name, const char *attempt, int seen)
{
    cJSON *ws = wait_state(name, "Paused", 300000);
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    assert_string_equal(str_at(ws, "status.snapshot.attempt"), attempt);
    assert_string_equal(str_at(ws, "status.snapshot.phase"), "Ready");
    if (seen) {
        assert_non_null(str_at(ws, "status.lastPause.podDeletedAt"));
    } else {
        assert_null(str_at(ws, "status.lastPause.podDeletedAt"));
        assert_string_equal(str_at(ws, "status.lastPause.unobserved"), "podDeletedAt");
    }
    char *image = csnap_image(attempt);
    assert_string_equal(str_at(ws, "status.snapshot.image"), image);
    char path[300];
    snprintf(path, sizeof(path), "checkpoints/%s/%s", ns, name);
    assert_int_equal(it_registry_head(path, strchr(image, '@') + 1), 200);
    free(image);
    cJSON_Delete(ws);
    assert_int_equal(live_pods(name), 0);
}

static void check_restored(const char *name, const char *kernel, const char *want)
{
    /* The Restored condition of this resume (the last resume's stays
     * FromSnapshot while paused): observed at the generation of the
     * unpause, with a pod. */
    cJSON *ws = NULL;
    for (int i = 0; i < 1500; i++) {
        ws = ws_json(name);
        const cJSON *c = ws ? condition(ws, "Restored") : NULL;
        const char *reason = c ? str_at(c, "reason") : NULL;
        const char *state = ws ? str_at(ws, "status.state") : NULL;
        if (reason && !strcmp(reason, "FromSnapshot") && str_at(ws, "status.podName") && state &&
            !strcmp(state, "Running") &&
            num_at(c, "observedGeneration") == num_at(ws, "metadata.generation"))
            break;
        cJSON_Delete(ws);
        ws = NULL;
        usleep(200 * 1000);
    }
    if (!ws)
        fail_msg("workspace %s: not Restored=True/FromSnapshot for this resume", name);
    char pod[128];
    snprintf(pod, sizeof(pod), "%s", str_at(ws, "status.podName"));
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromSnapshot");
    /* What the application showed: the paused process, with its kernel. */
    const char *proof = cond_field(ws, "Restored", "message");
    print_message("  %s: %s\n", name, proof);
    /* After a controller killed at SnapshotBegin, the next one recorded the
     * attempt before any probe of its own had answered: no start to
     * compare, and it says so. */
    assert_true(strstr(proof, "that was paused") || strstr(proof, "was not recorded"));
    /* Its kernel, when the last probe before the snapshot saw it (a round
     * every 5 s: one that started just before the pause may not be in it). */
    assert_null(strstr(proof, "not listed now"));
    if (strstr(proof, "kernel"))
        assert_non_null(strstr(proof, "listing the 1 kernel it listed before the pause"));
    cJSON_Delete(ws);
    assert_int_equal(live_pods(name), 1);
    char *out = run_cell(pod, kernel, "print(x, len(buf))");
    assert_non_null(strstr(out, want));
    free(out);
}

/* The controller killed at each step of a pause and a resume with memory
 * (its failpoints: it exits right after the step's write), then started
 * again: what the status records is what the backend's objects hold, and
 * the kernel's x comes back each time.
 *
 *   SnapshotBegin  the ContainerSnapshot is created; the agent makes it
 *                  Ready while no controller runs, the pod runs on
 *   DeletePod      the snapshot is Ready and the pod deleted, the status
 *                  not written yet
 *   CreatePod      the resume's pod from the image is created, nothing
 *                  recorded yet
 */
static void test_controller_killed(void **state)
{
    (void)state;
    char kernel[64];
    workspace_with_kernel("crash", 64, kernel);
    const char *want = "42 67108864";

    controller_down();
    controller_up("SnapshotBegin");
    set_paused("crash", 1);
    controller_exited("SnapshotBegin");
    char *r = snapshot_wait("crash-p1-1", 240);
    assert_string_equal(r, "True Stored");
    free(r);
    assert_int_equal(live_pods("crash"), 1); /* nobody deleted it */
    controller_up(NULL);
    check_paused_with("crash", "crash-p1-1", 1);

    controller_down();
    controller_up("CreatePod");
    set_paused("crash", 0);
    controller_exited("CreatePod");
    controller_up(NULL);
    check_restored("crash", kernel, want);

    controller_down();
    controller_up("DeletePod");
    set_paused("crash", 1);
    controller_exited("DeletePod");
    assert_int_equal(live_pods("crash"), 0);
    controller_up(NULL);
    check_paused_with("crash", "crash-p2-1", 0);
    set_paused("crash", 0);
    check_restored("crash", kernel, want);
}

/* A checkpoint CRIU refuses, through the controller: a process in the
 * workspace's container holds an unlinked 2 MiB file (over CRIU's ghost
 * limit); the pause's ContainerSnapshot ends Ready=False with the
 * kubelet's words, and the class's onFailure (PauseWithoutMemory) pauses
 * without memory and says why: SnapshotReady=False/Failed, a
 * SnapshotFailed Event, lastPause.memory: snapshotFailed. */
static void test_refused_workspace(void **state)
{
    (void)state;
    /* Not "ghost": test_refused's ContainerSnapshot ghost-p1-1 is there. */
    char kernel[64];
    workspace_with_kernel("refusal", 16, kernel);
    cJSON *ws = ws_json("refusal");
    char pod[128];
    snprintf(pod, sizeof(pod), "%s", str_at(ws, "status.podName"));
    cJSON_Delete(ws);
    /* The kernel opens the file and unlinks it. */
    char *out = run_cell(pod, kernel,
                         "import os; g = open(\"/tmp/g\", \"w\"); g.write(\"x\" * (2 << 20)); "
                         "g.flush(); os.unlink(\"/tmp/g\"); print(\"held\")");
    assert_non_null(strstr(out, "held"));
    free(out);
    set_paused("refusal", 1);
    ws = wait_state("refusal", "Paused", 300000);
    const char *why = cond_field(ws, "SnapshotReady", "message");
    const char *reason = cond_field(ws, "SnapshotReady", "reason");
    print_message("  %s: %s\n", reason ? reason : "-", why ? why : "(no message)");
    assert_string_equal(reason, "Failed");
    assert_non_null(strstr(why, "the kubelet answered"));
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshotFailed");
    assert_string_equal(str_at(ws, "status.snapshot.phase"), "Failed");
    assert_null(str_at(ws, "status.snapshot.image"));
    cJSON_Delete(ws);
    assert_int_equal(live_pods("refusal"), 0);
    char *reasons = event_reasons("refusal");
    assert_non_null(strstr(reasons, "SnapshotFailed"));
    free(reasons);
    /* The resume starts from files, and says why. */
    set_paused("refusal", 0);
    ws = wait_state("refusal", "Running", 180000);
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromCheckpoint");
    cJSON_Delete(ws);
}

static void test_image_gone(void **state)
{
    (void)state;
    char kernel[64];
    workspace_with_kernel("gone", 16, kernel);
    cJSON *ws = wait_state("gone", "Paused", 300000);
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    char digest[128];
    snprintf(digest, sizeof(digest), "%s", strchr(str_at(ws, "status.snapshot.image"), '@') + 1);
    cJSON_Delete(ws);
    /* Someone empties the registry meanwhile. */
    char *out = NULL;
    harness_sh(&out,
               "curl -s -o /dev/null -w '%%{http_code}' -X DELETE --cacert '%s/pki/ca.crt' -u "
               "'hibernator:%s' 'https://%s/v2/checkpoints/%s/gone/manifests/%s'",
               harness_cluster_dir(), password, registry, ns, digest);
    assert_string_equal(out, "202");
    free(out);
    set_paused("gone", 0);
    ws = wait_state("gone", "Running", 300000);
    const char *restored = cond_field(ws, "Restored", "message");
    print_message("  %s\n", restored);
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromCheckpoint");
    assert_non_null(strstr(restored, "snapshot"));
    cJSON_Delete(ws);
    char *reasons = event_reasons("gone");
    assert_non_null(strstr(reasons, "RestoreCrashLoop"));
    free(reasons);
}

static int group_setup(void **state)
{
    (void)state;
    harness_require_real_node();
    registry = it_registry()->host;
    password = it_registry()->password;
    it_deploy("it-node-agent");
    ns = harness_namespace("it-agent");
    agent_install();
    if (harness_kubectl(NULL,
                        "-n %s create secret docker-registry checkpoints --docker-server=%s "
                        "--docker-username=hibernator --docker-password=%s",
                        ns, registry, password) != 0)
        return -1;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    /* The controller lets the Workspaces go, the agent the ContainerSnapshots
     * (their images first); then the namespace can. */
    if (!controller_running)
        controller_up(NULL);
    harness_kubectl(NULL, "-n %s delete workspaces --all --timeout=90s", ns);
    harness_kubectl(NULL, "-n %s delete containersnapshots --all --timeout=90s", ns);
    controller_down();
    it_show_logs();
    /* The agent's log beside the controller's, for a failed run. */
    harness_sh(NULL,
               "kubectl --kubeconfig '%s' logs " AGENT_PODS " --tail=-1 > '%s/agent.log' 2>&1",
               harness_kubeconfig(), tmpdir);
    if (getenv("IT_AGENT_LOG"))
        harness_sh(NULL, "cat '%s/agent.log' >&2", tmpdir);
    harness_namespace_delete(ns);
    free(ns);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checkpoint_restore), cmocka_unit_test(test_refused),
        cmocka_unit_test(test_agent_down),         cmocka_unit_test(test_archive_lost),
        cmocka_unit_test(test_agent_killed),       cmocka_unit_test(test_deleted),
        cmocka_unit_test(test_controller_killed),  cmocka_unit_test(test_refused_workspace),
        cmocka_unit_test(test_image_gone),
    };
    if (getenv("IT_ONLY"))
        cmocka_set_test_filter(getenv("IT_ONLY"));
    return cmocka_run_group_tests_name("node agent", tests, group_setup, group_teardown);
}
