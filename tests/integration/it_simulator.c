/*
 * The snapshot simulator (tests/simulator) against the real local API server,
 * with no controller involved: the podsnapshot.gke.io CRDs are applied, the
 * simulator runs as a process, and the test plays the client GKE would
 * serve — creates policies, pods (run by kwok) and manual triggers, and reads
 * back what the simulator made of them: the PodSnapshot with its labels,
 * finalizer and conditions in the right order, the trigger's outcome, every
 * failure mode, restores (explicit, implicit, refused), crash loops,
 * deletion through the finalizer, retention, postCheckpoint: stop, a restore
 * over a home written after its checkpoint (crash-loops), the
 * admission policy that keeps PodSnapshots GKE's, and a restart halfway
 * through a checkpoint.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "harness.h"
#include "kube/informer.h"
#include "util/log.h"
#include "util/timefmt.h"
#include "workspaces.h"

#define STORAGE_BUCKET "it-sim-bucket"
/* The pods of a restore land on one machine type (deploy/local/nodes.yaml's
 * cpu-node-1): GKE restores only onto a node like the snapshot's. */
#define ONE_MACHINE "node.kubernetes.io/instance-type: e2-standard-4"

static pid_t sim_pid;
static int sim_runs;
static char storage_name[64];

/* ---- the simulator process ------------------------------------------------- */

static void sim_start(const char *mode)
{
    char log[600];
    snprintf(log, sizeof(log), "%s/simulator-%d.log", tmpdir, sim_runs++);
    const char *argv[] = {SNAPSHOT_SIMULATOR_BIN,
                          "--kubeconfig",
                          harness_kubeconfig(),
                          "--namespace",
                          ns,
                          "--mode",
                          mode,
                          "--checkpoint-delay=1s",
                          "--slow-delay=6s",
                          "--delete-delay=2s",
                          "--restart-interval=1s",
                          "--log-level=debug",
                          NULL};
    sim_pid = fork();
    assert_true(sim_pid >= 0);
    if (sim_pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        execv(SNAPSHOT_SIMULATOR_BIN, (char *const *)argv);
        _exit(127);
    }
}

/* Stops the simulator with sig; returns its exit status (128+n when killed). */
static int sim_stop(int sig)
{
    if (sim_pid <= 0)
        return -1;
    kill(sim_pid, sig);
    int st = 0;
    uint64_t end = harness_now_ms() + 30000;
    while (waitpid(sim_pid, &st, WNOHANG) == 0) {
        if (harness_now_ms() > end) {
            kill(sim_pid, SIGKILL);
            waitpid(sim_pid, &st, 0);
            break;
        }
        usleep(50 * 1000);
    }
    sim_pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- watching PodSnapshots: the order of their Ready reasons --------------- */

static uv_loop_t loop;
static struct kube_config *config;
static struct kube_client *client;
static struct informer *snap_inf;
static struct {
    char name[64];
    char reason[64];
} history[512];
static size_t n_history;

static const struct kube_resource res_snapshots = {"podsnapshot.gke.io", "v1", "podsnapshots",
                                                   "PodSnapshot", 1};

static void record(const struct cache_entry *e)
{
    cJSON *o = cJSON_Parse(e->obj);
    const cJSON *c = condition(o, "Ready");
    const char *reason = c ? str_at(c, "reason") : "-";
    reason = reason ? reason : "-";
    for (size_t i = n_history; i-- > 0;) {
        if (strcmp(history[i].name, e->name) == 0) {
            if (strcmp(history[i].reason, reason) == 0) {
                cJSON_Delete(o);
                return;
            }
            break;
        }
    }
    if (n_history < sizeof(history) / sizeof(history[0])) {
        snprintf(history[n_history].name, sizeof(history[0].name), "%s", e->name);
        snprintf(history[n_history].reason, sizeof(history[0].reason), "%s", reason);
        n_history++;
    }
    cJSON_Delete(o);
}

static void on_snap_add(void *data, const struct cache_entry *e)
{
    (void)data;
    record(e);
}

static void on_snap_update(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    (void)data;
    (void)old_e;
    record(e);
}

/* The Ready reasons a snapshot went through, e.g. "-,AwaitingCheckpoint,AllSnapshotsAvailable". */
static void reasons_of(const char *name, char *out, size_t size)
{
    harness_run_for(&loop, 500);
    out[0] = '\0';
    for (size_t i = 0; i < n_history; i++) {
        if (strcmp(history[i].name, name) != 0)
            continue;
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", len ? "," : "", history[i].reason);
    }
}

/* ---- reading the cluster ------------------------------------------------------ */

static const char *condition_field(const cJSON *o, const char *type, const char *field)
{
    const cJSON *c = condition(o, type);
    return c ? str_at(c, field) : NULL;
}

static int cond_matches(const cJSON *o, const char *type, const char *status, const char *reason)
{
    const char *st = condition_field(o, type, "status"), *re = condition_field(o, type, "reason");
    return st && strcmp(st, status) == 0 && (!reason || (re && strcmp(re, reason) == 0));
}

/* Waits until `what` (kubectl get argument) has the condition; returns it. */
static cJSON *wait_cond(const char *what, const char *type, const char *status, const char *reason,
                        uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    char seen[300] = "(not found)";
    while (harness_now_ms() < end) {
        cJSON *o = get_json(what);
        if (o && cond_matches(o, type, status, reason))
            return o;
        if (o) {
            const char *st = condition_field(o, type, "status"),
                       *re = condition_field(o, type, "reason"),
                       *me = condition_field(o, type, "message");
            snprintf(seen, sizeof(seen), "%s/%s: %s", st ? st : "-", re ? re : "-", me ? me : "");
        }
        cJSON_Delete(o);
        usleep(200 * 1000);
    }
    fail_msg("%s: condition %s is %s; wanted %s/%s", what, type, seen, status,
             reason ? reason : "*");
    return NULL;
}

/* Waits until the dotted path in `what` is a string (equal to want, if given). */
static cJSON *wait_path(const char *what, const char *path, const char *want, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    char seen[300] = "(not found)";
    while (harness_now_ms() < end) {
        cJSON *o = get_json(what);
        const char *v = str_at(o, path);
        if (v && (!want || strcmp(v, want) == 0))
            return o;
        snprintf(seen, sizeof(seen), "%s", v ? v : "(absent)");
        cJSON_Delete(o);
        usleep(200 * 1000);
    }
    fail_msg("%s: %s is %s; wanted %s", what, path, seen, want ? want : "a value");
    return NULL;
}

static int gone(const char *what, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    while (harness_now_ms() < end) {
        cJSON *o = get_json(what);
        if (!o)
            return 1;
        cJSON_Delete(o);
        usleep(200 * 1000);
    }
    return 0;
}

/* The GKEPodSnapshotting events of a pod, one "Type|message" a line. */
static char *events_of(const char *pod)
{
    char *out = NULL;
    harness_kubectl(
        &out,
        "-n %s get events --field-selector involvedObject.name=%s,reason=GKEPodSnapshotting "
        "-o jsonpath='{range .items[*]}{.type}|{.message}{\"\\n\"}{end}'",
        ns, pod);
    return out;
}

static int has_event(const char *pod, const char *type, const char *text)
{
    char *out = events_of(pod);
    int found = 0;
    for (char *line = out; line && *line && !found;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        size_t tl = strlen(type);
        found = strncmp(line, type, tl) == 0 && line[tl] == '|' && strstr(line, text);
        line = nl ? nl + 1 : line + strlen(line);
    }
    free(out);
    return found;
}

static void wait_event(const char *pod, const char *type, const char *text, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    while (harness_now_ms() < end) {
        if (has_event(pod, type, text))
            return;
        usleep(200 * 1000);
    }
    char *all = events_of(pod);
    fail_msg("pod %s: no %s event with \"%s\"; events:\n%s", pod, type, text, all ? all : "");
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

/* ---- making things --------------------------------------------------------------- */

/* A pod kwok runs. labels and annotations are YAML flow-map bodies ("a: b, c: d"). */
/* restart: the pod's restartPolicy (NULL: the API server's default, Always). */
static void create_pod_restarting(const char *name, const char *labels, const char *annotations,
                                  const char *image, const char *restart)
{
    assert_int_equal(harness_apply("apiVersion: v1\nkind: Pod\n"
                                   "metadata:\n  name: %s\n  namespace: %s\n"
                                   "  labels: {%s}\n  annotations: {%s}\n"
                                   "spec:\n"
                                   "  restartPolicy: %s\n"
                                   "  nodeSelector: {" ONE_MACHINE "}\n"
                                   "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, "
                                   "effect: NoSchedule}]\n"
                                   "  containers: [{name: main, image: \"%s\"}]\n",
                                   name, ns, labels, annotations ? annotations : "",
                                   restart ? restart : "Always", image),
                     0);
}

static void create_pod(const char *name, const char *labels, const char *annotations,
                       const char *image)
{
    create_pod_restarting(name, labels, annotations, image, NULL);
}

/* The same, and waits until it is Ready. */
static void make_pod(const char *name, const char *labels, const char *annotations,
                     const char *image)
{
    create_pod(name, labels, annotations, image);
    assert_int_equal(
        harness_kubectl(NULL, "-n %s wait --for=condition=Ready pod/%s --timeout=60s", ns, name),
        0);
}

static void make_trigger(const char *name, const char *pod)
{
    assert_int_equal(harness_apply("apiVersion: podsnapshot.gke.io/v1\n"
                                   "kind: PodSnapshotManualTrigger\n"
                                   "metadata: {name: %s, namespace: %s}\n"
                                   "spec: {targetPod: %s}\n",
                                   name, ns, pod),
                     0);
}

/* The name GKE's stand-in gives the trigger's snapshot (docs/simulator.md). */
static void expected_snapshot_name(const char *trigger_uid, char out[37])
{
    char seed[300];
    snprintf(seed, sizeof(seed), "podsnapshot:%s", trigger_uid);
    unsigned char d[32];
    unsigned n = 0;
    assert_int_equal(EVP_Digest(seed, strlen(seed), d, &n, EVP_sha256(), NULL), 1);
    d[6] = (unsigned char)((d[6] & 0x0f) | 0x50);
    d[8] = (unsigned char)((d[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", d[0],
             d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13],
             d[14], d[15]);
}

/* Triggers a snapshot of pod and waits until the trigger names it; returns the name. */
static void snapshot_of(const char *trigger, const char *pod, char out[128])
{
    make_trigger(trigger, pod);
    char what[200];
    snprintf(what, sizeof(what), "podsnapshotmanualtrigger %s", trigger);
    cJSON *tr = wait_path(what, "status.snapshotCreated.name", NULL, 30000);
    snprintf(out, 128, "%s", str_at(tr, "status.snapshotCreated.name"));
    cJSON_Delete(tr);
}

/* A Ready snapshot of a fresh pod. */
static void ready_snapshot(const char *pod, const char *labels, const char *annotations,
                           const char *image, char out[128])
{
    make_pod(pod, labels, annotations, image);
    char trigger[100], what[200];
    snprintf(trigger, sizeof(trigger), "t-%s", pod);
    snapshot_of(trigger, pod, out);
    snprintf(what, sizeof(what), "podsnapshot %s", out);
    cJSON_Delete(wait_cond(what, "Ready", "True", "AllSnapshotsAvailable", 30000));
}

/* ---- tests ----------------------------------------------------------------------- */

static void test_checkpoint(void **state)
{
    (void)state;
    make_pod("nb-ok", "app: nb", NULL, "it.invalid/ok:1");
    uint64_t t0 = harness_now_ms();
    char name[128], what[200], expect[37];
    snapshot_of("t-ok", "nb-ok", name);
    cJSON *tr = get_json("podsnapshotmanualtrigger t-ok");
    expected_snapshot_name(str_at(tr, "metadata.uid"), expect);
    assert_string_equal(name, expect);
    cJSON_Delete(tr);

    snprintf(what, sizeof(what), "podsnapshot %s", name);
    cJSON *snap = wait_cond(what, "Ready", "True", "AllSnapshotsAvailable", 30000);
    uint64_t took = harness_now_ms() - t0;
    print_message("checkpoint took %.1f s (--checkpoint-delay=1s)\n", (double)took / 1000.0);
    assert_true(took >= 900);
    assert_true(cond_matches(snap, "Checkpoint", "True", "Succeeded"));
    assert_string_equal(str_at(snap, "spec.policyName"), "notebooks");
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(snap, "metadata"), "labels");
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(labels, "gke-pod-snapshot-triggered-by")->valuestring,
        "t-ok");
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(snap, "metadata"), "annotations");
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(ann, "podsnapshot.gke.io/origin-pod")->valuestring,
        "nb-ok");
    const cJSON *fin = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(snap, "metadata"), "finalizers");
    assert_int_equal(cJSON_GetArraySize(fin), 1);
    assert_string_equal(cJSON_GetArrayItem(fin, 0)->valuestring,
                        "podsnapshot.gke.io/podsnapshot-finalizer");
    assert_true(num_at(snap, "status.observedGeneration") == 1);
    assert_non_null(strstr(str_at(snap, "status.storageStatus.gcs.observedGCSPath"),
                           "gs://" STORAGE_BUCKET "/"));
    /* The condition's time says when it became Ready. */
    assert_non_null(condition_field(snap, "Ready", "lastTransitionTime"));
    cJSON_Delete(snap);

    /* Ready=False/AwaitingCheckpoint first, then Ready. */
    char seq[600];
    reasons_of(name, seq, sizeof(seq));
    print_message("Ready reasons: %s\n", seq);
    char *await = strstr(seq, "AwaitingCheckpoint");
    assert_non_null(await);
    assert_non_null(strstr(await, "AllSnapshotsAvailable"));

    cJSON_Delete(
        wait_cond("podsnapshotmanualtrigger t-ok", "Triggered", "True", "Complete", 10000));
    wait_event("nb-ok", "Normal", "Successfully checkpointed the pod to PodSnapshot", 10000);
}

static void test_trigger_failures(void **state)
{
    (void)state;
    make_trigger("t-nopod", "no-such-pod");
    cJSON *tr =
        wait_cond("podsnapshotmanualtrigger t-nopod", "Triggered", "False", "Failed", 30000);
    assert_non_null(strstr(condition_field(tr, "Triggered", "message"), "no-such-pod"));
    assert_null(str_at(tr, "status.snapshotCreated.name"));
    cJSON_Delete(tr);

    make_pod("lonely", "app: other", NULL, "it.invalid/lonely:1");
    make_trigger("t-nopolicy", "lonely");
    tr = wait_cond("podsnapshotmanualtrigger t-nopolicy", "Triggered", "False", "Failed", 30000);
    print_message("no policy: %s\n", condition_field(tr, "Triggered", "message"));
    assert_non_null(strstr(condition_field(tr, "Triggered", "message"), "PodSnapshotPolicy"));
    cJSON_Delete(tr);

    char *out = NULL;
    harness_kubectl(&out,
                    "-n %s get podsnapshots -l 'gke-pod-snapshot-triggered-by in "
                    "(t-nopod,t-nopolicy)' -o name",
                    ns);
    assert_string_equal(out, "");
    free(out);
}

static void check_failed(const char *pod, const char *trigger)
{
    char name[128], what[200];
    snapshot_of(trigger, pod, name);
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    cJSON *snap = wait_cond(what, "Checkpoint", "False", "Failed", 30000);
    assert_true(cond_matches(snap, "Ready", "False", NULL));
    assert_non_null(strstr(condition_field(snap, "Checkpoint", "message"), "failed"));
    cJSON_Delete(snap);
    snprintf(what, sizeof(what), "podsnapshotmanualtrigger %s", trigger);
    cJSON_Delete(wait_cond(what, "Triggered", "False", "Failed", 10000));
    wait_event(pod, "Warning", "Failed to checkpoint the pod", 10000);
}

static void test_checkpoint_failed(void **state)
{
    (void)state;
    make_pod("nb-fail", "app: nb", "simulator.hibernator.dev/mode: checkpoint-failed",
             "it.invalid/fail:1");
    check_failed("nb-fail", "t-fail");
}

/* Tests that cannot annotate a pod before it exists name it in a ConfigMap. */
static void test_mode_from_configmap(void **state)
{
    (void)state;
    assert_int_equal(harness_apply("apiVersion: v1\nkind: ConfigMap\n"
                                   "metadata: {name: snapshot-simulator, namespace: %s}\n"
                                   "data: {nb-cm: checkpoint-failed}\n",
                                   ns),
                     0);
    make_pod("nb-cm", "app: nb", NULL, "it.invalid/cm:1");
    check_failed("nb-cm", "t-cm");
    /* _default covers every pod of the namespace; a pod's own key wins. */
    assert_int_equal(harness_apply("apiVersion: v1\nkind: ConfigMap\n"
                                   "metadata: {name: snapshot-simulator, namespace: %s}\n"
                                   "data: {_default: checkpoint-failed, nb-cm-ok: ok}\n",
                                   ns),
                     0);
    make_pod("nb-cm-default", "app: nb", NULL, "it.invalid/cm-default:1");
    check_failed("nb-cm-default", "t-cm-default");
    char name[128];
    ready_snapshot("nb-cm-ok", "app: nb", NULL, "it.invalid/cm-ok:1", name);
    assert_int_equal(harness_kubectl(NULL, "-n %s delete configmap snapshot-simulator", ns), 0);
}

static void test_slow(void **state)
{
    (void)state;
    make_pod("nb-slow", "app: nb", "simulator.hibernator.dev/mode: slow", "it.invalid/slow:1");
    uint64_t t0 = harness_now_ms();
    char name[128], what[200];
    snapshot_of("t-slow", "nb-slow", name);
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    usleep(3000 * 1000);
    cJSON *snap = get_json(what);
    assert_true(cond_matches(snap, "Ready", "False", "AwaitingCheckpoint"));
    assert_null(condition(snap, "Checkpoint"));
    cJSON_Delete(snap);
    cJSON_Delete(wait_cond(what, "Ready", "True", "AllSnapshotsAvailable", 30000));
    uint64_t took = harness_now_ms() - t0;
    print_message("slow checkpoint took %.1f s (--slow-delay=6s)\n", (double)took / 1000.0);
    assert_true(took >= 5000);
}

static void test_restore(void **state)
{
    (void)state;
    char name[128], ann[300], what[200];
    ready_snapshot("rs-src", "app: nb", NULL, "it.invalid/restore:1", name);
    snprintf(ann, sizeof(ann), "podsnapshot.gke.io/ps-name: %s", name);
    make_pod("rs-dst", "app: nb", ann, "it.invalid/restore:1");
    cJSON *pod = wait_cond("pod rs-dst", "PodRestored", "True", NULL, 30000);
    assert_non_null(strstr(condition_field(pod, "PodRestored", "message"), name));
    cJSON_Delete(pod);
    wait_event("rs-dst", "Normal", "Successfully restored the pod from PodSnapshot", 10000);
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    cJSON_Delete(wait_path(what, "status.lastAccessTime", NULL, 10000));

    /* kwok leaves the condition alone: still there after a while and after
     * the pod changes (a label), and the pod is still Ready and Running. */
    usleep(3000 * 1000);
    assert_int_equal(harness_kubectl(NULL, "-n %s label pod rs-dst touched=yes", ns), 0);
    usleep(2000 * 1000);
    pod = get_json("pod rs-dst");
    assert_true(cond_matches(pod, "PodRestored", "True", NULL));
    assert_true(cond_matches(pod, "Ready", "True", NULL));
    assert_string_equal(str_at(pod, "status.phase"), "Running");
    cJSON_Delete(pod);
}

static void assert_not_restored(const char *pod_name)
{
    usleep(3000 * 1000);
    char what[200];
    snprintf(what, sizeof(what), "pod %s", pod_name);
    cJSON *pod = get_json(what);
    assert_null(condition(pod, "PodRestored"));
    assert_true(cond_matches(pod, "Ready", "True", NULL));
    cJSON_Delete(pod);
}

static void test_cold_start(void **state)
{
    (void)state;
    char name[128], ann[400];
    ready_snapshot("cs-src", "app: nb", NULL, "it.invalid/cold:1", name);

    /* The injected failure: GKE skips the restore and says so. */
    snprintf(ann, sizeof(ann),
             "podsnapshot.gke.io/ps-name: %s, simulator.hibernator.dev/mode: cold-start", name);
    make_pod("cs-dst", "app: nb", ann, "it.invalid/cold:1");
    wait_event("cs-dst", "Warning", "falling back to a cold start", 30000);
    assert_not_restored("cs-dst");

    /* The real reasons: no such snapshot, and a pod spec that changed. */
    make_pod("cs-missing", "app: nb", "podsnapshot.gke.io/ps-name: no-such-snapshot",
             "it.invalid/cold:1");
    wait_event("cs-missing", "Warning", "not found; falling back to a cold start", 30000);
    snprintf(ann, sizeof(ann), "podsnapshot.gke.io/ps-name: %s", name);
    make_pod("cs-changed", "app: nb", ann, "it.invalid/cold:2");
    wait_event("cs-changed", "Warning", "spec does not match", 30000);
    assert_not_restored("cs-changed");
}

/* Without ps-name GKE restores a new pod a policy selects from the newest
 * Ready snapshot taken of the same spec. */
static void test_implicit_restore(void **state)
{
    (void)state;
    char name[128];
    ready_snapshot("im-src", "app: nb", NULL, "it.invalid/implicit:1", name);
    make_pod("im-new", "app: nb", NULL, "it.invalid/implicit:1");
    cJSON *pod = wait_cond("pod im-new", "PodRestored", "True", NULL, 30000);
    assert_non_null(strstr(condition_field(pod, "PodRestored", "message"), name));
    cJSON_Delete(pod);
    /* Another spec: a fresh start, and nothing to say about it. */
    make_pod("im-other", "app: nb", NULL, "it.invalid/implicit:2");
    assert_not_restored("im-other");
    char *ev = events_of("im-other");
    assert_string_equal(ev, "");
    free(ev);
}

/* A policy with snapshotGroupingRules: the PodSnapshot carries the source
 * pod's grouping label, and a new pod is restored by default only from a
 * snapshot of its own group; ps-name still names any snapshot. */
static void test_grouping(void **state)
{
    (void)state;
    char name[128], what[200], ann[200];
    ready_snapshot("gr-src", "app: grp, group: g1", NULL, "it.invalid/group:1", name);
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    cJSON *snap = get_json(what);
    const char *group = str_at(snap, "metadata.labels.group");
    if (!group || strcmp(group, "g1") != 0)
        fail_msg("PodSnapshot %s has group label %s, want g1 (the source pod's)", name,
                 group ? group : "(none)");
    assert_null(str_at(snap, "metadata.labels.app")); /* only the listed keys */
    cJSON_Delete(snap);
    /* Another group: a fresh start. */
    make_pod("gr-other", "app: grp, group: g2", NULL, "it.invalid/group:1");
    assert_not_restored("gr-other");
    /* The same group: restored from it. */
    make_pod("gr-same", "app: grp, group: g1", NULL, "it.invalid/group:1");
    cJSON *pod = wait_cond("pod gr-same", "PodRestored", "True", NULL, 30000);
    assert_non_null(strstr(condition_field(pod, "PodRestored", "message"), name));
    cJSON_Delete(pod);
    /* Named: restored, whatever its group. */
    snprintf(ann, sizeof(ann), "podsnapshot.gke.io/ps-name: %s", name);
    make_pod("gr-named", "app: grp, group: g3", ann, "it.invalid/group:1");
    cJSON_Delete(wait_cond("pod gr-named", "PodRestored", "True", NULL, 30000));
}

/* A GPU snapshot restores only onto the same GPU model. The node with another
 * model is this test's own, tainted so that no other pod lands on it. */
static char l4_node[64];

/* machine: the node's machine type it must land on, NULL: any. */
static void gpu_pod_on(const char *name, const char *product, const char *machine,
                       const char *annotations)
{
    char type[128] = "";
    if (machine)
        snprintf(type, sizeof(type), ", node.kubernetes.io/instance-type: %s", machine);
    assert_int_equal(
        harness_apply("apiVersion: v1\nkind: Pod\n"
                      "metadata:\n  name: %s\n  namespace: %s\n"
                      "  labels: {app: nb}\n  annotations: {%s}\n"
                      "spec:\n"
                      "  nodeSelector: {cloud.google.com/gke-accelerator: %s%s}\n"
                      "  tolerations:\n"
                      "  - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}\n"
                      "  - {key: it-simulator, operator: Exists, effect: NoSchedule}\n"
                      "  containers:\n"
                      "  - name: main\n    image: it.invalid/gpu:1\n"
                      "    resources: {limits: {nvidia.com/gpu: 1}}\n",
                      name, ns, annotations, product, type),
        0);
    assert_int_equal(
        harness_kubectl(NULL, "-n %s wait --for=condition=Ready pod/%s --timeout=60s", ns, name),
        0);
}

static void gpu_pod(const char *name, const char *product, const char *annotations)
{
    gpu_pod_on(name, product, NULL, annotations);
}

static void test_gpu_model(void **state)
{
    (void)state;
    snprintf(l4_node, sizeof(l4_node), "it-sim-l4-%ld", (long)getpid());
    assert_int_equal(
        harness_apply("apiVersion: v1\nkind: Node\n"
                      "metadata:\n  name: %s\n"
                      "  annotations: {kwok.x-k8s.io/node: fake}\n"
                      "  labels: {type: kwok-it, nvidia.com/gpu.product: NVIDIA-L4,\n"
                      "    cloud.google.com/gke-accelerator: nvidia-l4}\n"
                      "spec:\n  taints:\n"
                      "  - {key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}\n"
                      "  - {key: it-simulator, value: only, effect: NoSchedule}\n"
                      "status:\n"
                      "  capacity: {cpu: '8', memory: 30Gi, pods: '110', "
                      "nvidia.com/gpu: '1'}\n"
                      "  allocatable: {cpu: '8', memory: 30Gi, pods: '110', "
                      "nvidia.com/gpu: '1'}\n",
                      l4_node),
        0);
    assert_int_equal(
        harness_kubectl(NULL, "wait --for=condition=Ready node/%s --timeout=60s", l4_node), 0);

    gpu_pod_on("gpu-src", "nvidia-tesla-t4", "n1-standard-8", "");
    char name[128], what[200], ann[300];
    snapshot_of("t-gpu-src", "gpu-src", name);
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    cJSON_Delete(wait_cond(what, "Ready", "True", "AllSnapshotsAvailable", 30000));
    /* The source must let its GPU go for the restore on a T4 below. */
    assert_int_equal(
        harness_kubectl(NULL, "-n %s delete pod gpu-src --wait=true --timeout=60s", ns), 0);

    snprintf(ann, sizeof(ann), "podsnapshot.gke.io/ps-name: %s", name);
    gpu_pod("gpu-l4", "nvidia-l4", ann);
    /* The simulator reads GKE's label, cloud.google.com/gke-accelerator. */
    wait_event("gpu-l4", "Warning", "GPU product nvidia-l4 differs", 30000);
    assert_not_restored("gpu-l4");
    assert_int_equal(harness_kubectl(NULL, "-n %s delete pod gpu-l4 --wait=true --timeout=60s", ns),
                     0);

    /* The same GPU model on another machine type: GKE matches that too. */
    gpu_pod_on("gpu-t4-other", "nvidia-tesla-t4", "n1-standard-16", ann);
    wait_event("gpu-t4-other", "Warning", "machine type n1-standard-16 differs", 30000);
    assert_not_restored("gpu-t4-other");
    assert_int_equal(
        harness_kubectl(NULL, "-n %s delete pod gpu-t4-other --wait=true --timeout=60s", ns), 0);

    gpu_pod_on("gpu-t4", "nvidia-tesla-t4", "n1-standard-8", ann);
    cJSON_Delete(wait_cond("pod gpu-t4", "PodRestored", "True", NULL, 30000));
    assert_int_equal(harness_kubectl(NULL, "-n %s delete pod gpu-t4 --wait=true --timeout=60s", ns),
                     0);
    assert_int_equal(harness_kubectl(NULL, "delete node %s", l4_node), 0);
    l4_node[0] = '\0';
}

static void test_crash_loop(void **state)
{
    (void)state;
    char name[128], ann[400];
    ready_snapshot("cl-src", "app: nb", NULL, "it.invalid/crash:1", name);
    snprintf(ann, sizeof(ann),
             "podsnapshot.gke.io/ps-name: %s, simulator.hibernator.dev/mode: crash-loop", name);
    /* Ready only for a moment, if at all: do not wait for it. */
    create_pod("cl-dst", "app: nb", ann, "it.invalid/crash:1");
    cJSON_Delete(wait_cond("pod cl-dst", "PodRestored", "True", NULL, 30000));
    /* Waiting in CrashLoopBackOff, not Ready, and restarting again and again. */
    uint64_t end = harness_now_ms() + 20000;
    double restarts = 0;
    while (harness_now_ms() < end && restarts < 3) {
        cJSON *pod = get_json("pod cl-dst");
        const cJSON *cs = cJSON_GetArrayItem(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "status"),
                                             "containerStatuses"),
            0);
        restarts = num_at(cs, "restartCount");
        assert_true(cond_matches(pod, "Ready", "False", NULL));
        assert_true(cond_matches(pod, "ContainersReady", "False", NULL));
        assert_string_equal(str_at(cs, "state.waiting.reason"), "CrashLoopBackOff");
        assert_string_equal(str_at(pod, "status.phase"), "Running");
        cJSON_Delete(pod);
        usleep(300 * 1000);
    }
    print_message("restart count reached %.0f\n", restarts);
    assert_true(restarts >= 3);
}

/* A restore that fails before the checkpointed process runs: PodRestored=False
 * (reason FailedToRestore) with a Warning event, or no condition at all;
 * either way the container crash-loops. */
static void test_restore_failed(void **state)
{
    (void)state;
    char name[128], ann[400];
    ready_snapshot("rf-src", "app: nb", NULL, "it.invalid/restore-failed:1", name);
    static const char *const modes[] = {"restore-failed", "restore-failed-silent"};
    for (int i = 0; i < 2; i++) {
        char pod_name[64], what[100];
        snprintf(pod_name, sizeof(pod_name), "rf-dst-%d", i);
        snprintf(what, sizeof(what), "pod %s", pod_name);
        snprintf(ann, sizeof(ann),
                 "podsnapshot.gke.io/ps-name: %s, simulator.hibernator.dev/mode: %s", name,
                 modes[i]);
        create_pod(pod_name, "app: nb", ann, "it.invalid/restore-failed:1");
        uint64_t end = harness_now_ms() + 30000;
        double restarts = 0;
        cJSON *pod = NULL;
        while (harness_now_ms() < end && restarts < 2) {
            cJSON_Delete(pod);
            pod = get_json(what);
            const cJSON *cs = cJSON_GetArrayItem(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "status"),
                                                 "containerStatuses"),
                0);
            restarts = num_at(cs, "restartCount");
            if (restarts < 2)
                usleep(300 * 1000);
        }
        print_message("  %s: restart count %.0f, PodRestored %s\n", modes[i], restarts,
                      condition(pod, "PodRestored") ? condition_field(pod, "PodRestored", "status")
                                                    : "absent");
        assert_true(restarts >= 2);
        assert_true(cond_matches(pod, "Ready", "False", NULL));
        if (i == 0) {
            assert_true(cond_matches(pod, "PodRestored", "False", "FailedToRestore"));
            assert_non_null(strstr(condition_field(pod, "PodRestored", "message"), name));
            char *ev = events_of(pod_name);
            assert_non_null(strstr(ev, "OCI runtime restore failed"));
            free(ev);
        } else {
            assert_null(condition(pod, "PodRestored"));
        }
        cJSON_Delete(pod);
    }
}

/* GKE frees a PodSnapshot's files through its policy's storage config: with
 * the policy deleted first, the finalizer goes at once (no waiting out
 * --delete-delay) and the files are left in the bucket, recorded on the
 * storage config; with the policy there, nothing is recorded. */
static void test_policy_gone_orphans(void **state)
{
    (void)state;
    assert_int_equal(harness_apply("apiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotPolicy\n"
                                   "metadata: {name: orphans, namespace: %s}\n"
                                   "spec:\n  storageConfigName: %s\n"
                                   "  selector: {matchLabels: {app: orphan}}\n"
                                   "  triggerConfig: {type: manual}\n",
                                   ns, storage_name),
                     0);
    char name[128], what[200], *uid = NULL, *out = NULL;
    ready_snapshot("or-src", "app: orphan", NULL, "it.invalid/orphan:1", name);
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    assert_int_equal(
        harness_kubectl(&uid, "-n %s get podsnapshot %s -o jsonpath={.metadata.uid}", ns, name), 0);
    assert_int_equal(harness_kubectl(NULL, "-n %s delete podsnapshotpolicy orphans", ns), 0);
    uint64_t t0 = harness_now_ms();
    assert_int_equal(
        harness_kubectl(NULL, "-n %s delete podsnapshot %s --wait=true --timeout=30s", ns, name),
        0);
    uint64_t took = harness_now_ms() - t0;
    print_message("  the policy gone: PodSnapshot let go after %.1f s (--delete-delay=2s)\n",
                  (double)took / 1000.0);
    char jsonpath[300];
    snprintf(jsonpath, sizeof(jsonpath),
             "{.metadata.annotations.orphaned\\.simulator\\.hibernator\\.dev/%s}", uid);
    uint64_t end = harness_now_ms() + 10000;
    while (harness_now_ms() < end) {
        free(out);
        out = NULL;
        harness_kubectl(&out, "get podsnapshotstorageconfig %s -o jsonpath='%s'", storage_name,
                        jsonpath);
        if (out && out[0])
            break;
        usleep(200 * 1000);
    }
    print_message("  recorded as left in the bucket: %s\n", out ? out : "");
    assert_non_null(strstr(out, "gs://" STORAGE_BUCKET "/it/"));
    assert_non_null(strstr(out, name));
    free(out);
    free(uid);
}

static void test_delete(void **state)
{
    (void)state;
    char name[128], what[200];
    ready_snapshot("del-src", "app: nb", NULL, "it.invalid/del:1", name);
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    assert_int_equal(harness_kubectl(NULL, "-n %s delete podsnapshot %s --wait=false", ns, name),
                     0);
    /* GKE frees the storage first: the object stays, terminating, a while. */
    cJSON *snap = get_json(what);
    assert_non_null(snap);
    assert_non_null(str_at(snap, "metadata.deletionTimestamp"));
    cJSON_Delete(snap);
    assert_true(gone(what, 20000));
}

static void test_stuck_finalizer(void **state)
{
    (void)state;
    char name[128], what[200];
    ready_snapshot("stuck-src", "app: nb", "simulator.hibernator.dev/mode: stuck-finalizer",
                   "it.invalid/stuck:1", name);
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    assert_int_equal(harness_kubectl(NULL, "-n %s delete podsnapshot %s --wait=false", ns, name),
                     0);
    usleep(6000 * 1000);
    cJSON *snap = get_json(what);
    assert_non_null(snap);
    assert_non_null(str_at(snap, "metadata.deletionTimestamp"));
    cJSON_Delete(snap);
    /* Only taking the finalizer away by hand ends it. */
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s patch podsnapshot %s --type=json "
                                     "-p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'",
                                     ns, name),
                     0);
    assert_true(gone(what, 10000));
}

/* The container's restartCount and its last (or current) termination's exit code. */
static void container_end(const cJSON *pod, int64_t *restarts, const char **state,
                          int64_t *exit_code)
{
    const cJSON *cs = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "status"),
                                         "containerStatuses"),
        0);
    assert_non_null(cs);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(cs, "restartCount");
    *restarts = cJSON_IsNumber(n) ? (int64_t)n->valuedouble : -1;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(cs, "state");
    *state = cJSON_GetObjectItemCaseSensitive(st, "running")      ? "running"
             : cJSON_GetObjectItemCaseSensitive(st, "terminated") ? "terminated"
                                                                  : "waiting";
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(st, "terminated");
    if (!t)
        t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cs, "lastState"),
                                             "terminated");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(t, "exitCode");
    *exit_code = cJSON_IsNumber(code) ? (int64_t)code->valuedouble : -1;
}

/* postCheckpoint: stop ends the container with exit 0 once the checkpoint
 * is taken; what follows is the kubelet's restart policy (the real node's
 * test it_restart_policy shows the kubelet's side): under OnFailure and
 * Never the pod is Succeeded, under Always the container runs again. */
static void test_post_checkpoint_stop(void **state)
{
    (void)state;
    static const struct {
        const char *pod, *restart, *phase, *state;
        int64_t restarts;
    } rows[] = {
        {"stop-onfailure", "OnFailure", "Succeeded", "terminated", 0},
        {"stop-never", "Never", "Succeeded", "terminated", 0},
        {"stop-always", "Always", "Running", "running", 1},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char name[128], trigger[100], what[200];
        create_pod_restarting(rows[i].pod, "app: stop", NULL, "it.invalid/stop:1", rows[i].restart);
        assert_int_equal(harness_kubectl(NULL,
                                         "-n %s wait --for=condition=Ready pod/%s --timeout=60s",
                                         ns, rows[i].pod),
                         0);
        snprintf(trigger, sizeof(trigger), "t-%s", rows[i].pod);
        snapshot_of(trigger, rows[i].pod, name);
        snprintf(what, sizeof(what), "podsnapshot %s", name);
        cJSON_Delete(wait_cond(what, "Ready", "True", "AllSnapshotsAvailable", 30000));
        /* Ready comes after the stop: the pod shows it by now, and again
         * a while later (a restarted container is not stopped twice). */
        for (int look = 0; look < 2; look++) {
            if (look)
                usleep(2000 * 1000);
            snprintf(what, sizeof(what), "pod %s", rows[i].pod);
            cJSON *pod = get_json(what);
            int64_t restarts, code;
            const char *cstate;
            container_end(pod, &restarts, &cstate, &code);
            print_message("  restartPolicy %s: phase %s, container %s, restartCount %lld, exit "
                          "code %lld\n",
                          rows[i].restart, str_at(pod, "status.phase"), cstate, (long long)restarts,
                          (long long)code);
            assert_string_equal(str_at(pod, "status.phase"), rows[i].phase);
            assert_string_equal(cstate, rows[i].state);
            assert_int_equal(restarts, rows[i].restarts);
            assert_int_equal(code, 0);
            cJSON_Delete(pod);
        }
    }
}

/* ps-name "" is GKE's explicit bypass: no restore, not even from a
 * snapshot the policy would pick by itself, and nothing said about it. */
static void test_restore_bypass(void **state)
{
    (void)state;
    char name[128];
    ready_snapshot("by-src", "app: nb", NULL, "it.invalid/bypass:1", name);
    make_pod("by-new", "app: nb", "podsnapshot.gke.io/ps-name: \"\"", "it.invalid/bypass:1");
    assert_not_restored("by-new");
    char *ev = events_of("by-new");
    assert_string_equal(ev, "");
    free(ev);
    /* The same pod without the annotation is restored (the control). */
    make_pod("by-control", "app: nb", NULL, "it.invalid/bypass:1");
    cJSON *pod = wait_cond("pod by-control", "PodRestored", "True", NULL, 30000);
    assert_non_null(strstr(condition_field(pod, "PodRestored", "message"), name));
    cJSON_Delete(pod);
}

/* A pod of the given policy's label mounting claim (created here), Ready. */
static void make_pod_with_home(const char *name, const char *labels, const char *claim,
                               const char *image)
{
    assert_int_equal(harness_apply("apiVersion: v1\nkind: PersistentVolumeClaim\n"
                                   "metadata: {name: %s, namespace: %s}\n"
                                   "spec: {accessModes: [ReadWriteOnce], "
                                   "resources: {requests: {storage: 1Mi}}}\n",
                                   claim, ns),
                     0);
    assert_int_equal(
        harness_apply("apiVersion: v1\nkind: Pod\n"
                      "metadata:\n  name: %s\n  namespace: %s\n  labels: {%s}\n"
                      "spec:\n"
                      "  restartPolicy: OnFailure\n"
                      "  nodeSelector: {" ONE_MACHINE "}\n"
                      "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, "
                      "effect: NoSchedule}]\n"
                      "  volumes: [{name: home, persistentVolumeClaim: {claimName: %s}}]\n"
                      "  containers: [{name: main, image: \"%s\", "
                      "volumeMounts: [{name: home, mountPath: /home/u}]}]\n",
                      name, ns, labels, claim, image),
        0);
    assert_int_equal(
        harness_kubectl(NULL, "-n %s wait --for=condition=Ready pod/%s --timeout=60s", ns, name),
        0);
}

/* The claim's home-written-at mark ("" when none); the caller frees it. */
static char *claim_written(const char *claim)
{
    char *out = NULL;
    harness_kubectl(&out,
                    "-n %s get pvc %s -o jsonpath='{.metadata.annotations."
                    "simulator\\.hibernator\\.dev/home-written-at}'",
                    ns, claim);
    return out ? out : strdup("");
}

/* A pod from the same spec, restoring from snapshot: whether it crash-loops. */
static int restore_crashes(const char *name, const char *labels, const char *claim,
                           const char *image, const char *snapshot)
{
    assert_int_equal(
        harness_apply("apiVersion: v1\nkind: Pod\n"
                      "metadata:\n  name: %s\n  namespace: %s\n  labels: {%s}\n"
                      "  annotations: {podsnapshot.gke.io/ps-name: %s}\n"
                      "spec:\n"
                      "  nodeSelector: {" ONE_MACHINE "}\n"
                      "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, "
                      "effect: NoSchedule}]\n"
                      "  volumes: [{name: home, persistentVolumeClaim: {claimName: %s}}]\n"
                      "  containers: [{name: main, image: \"%s\", "
                      "volumeMounts: [{name: home, mountPath: /home/u}]}]\n",
                      name, ns, labels, snapshot, claim, image),
        0);
    char what[200];
    snprintf(what, sizeof(what), "pod %s", name);
    cJSON_Delete(wait_cond(what, "PodRestored", "True", NULL, 30000));
    usleep(1000 * 1000);
    cJSON *pod = get_json(what);
    const cJSON *cs = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "status"),
                                         "containerStatuses"),
        0);
    const char *waiting = str_at(cs, "state.waiting.reason");
    int crashes = waiting && strcmp(waiting, "CrashLoopBackOff") == 0;
    print_message("  %s: PodRestored, then %s\n", name, crashes ? "CrashLoopBackOff" : "running");
    cJSON_Delete(pod);
    return crashes;
}

/*
 * The old pause order: postCheckpoint resume, the snapshot Ready, then the
 * pod deleted with a grace period, in which an application that saves on
 * SIGTERM writes its home (the simulator plays it and marks the claim). The
 * restore over the changed home crash-loops, as GKE's did in
 * gke-labs/pod-migration#15.
 */
static void test_home_written_after_checkpoint(void **state)
{
    (void)state;
    char name[128];
    make_pod_with_home("hw-src", "app: nb", "hw-home", "it.invalid/home:1");
    snapshot_of("t-hw-src", "hw-src", name);
    char what[200];
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    cJSON_Delete(wait_cond(what, "Ready", "True", "AllSnapshotsAvailable", 30000));
    assert_int_equal(
        harness_kubectl(NULL, "-n %s delete pod hw-src --grace-period=30 --wait=true", ns), 0);
    uint64_t end = harness_now_ms() + 10000;
    char *written = claim_written("hw-home");
    while (!written[0] && harness_now_ms() < end) {
        free(written);
        usleep(100 * 1000);
        written = claim_written("hw-home");
    }
    print_message("  hw-home written at %s\n", written[0] ? written : "(never)");
    assert_true(written[0] != '\0');
    free(written);
    assert_true(restore_crashes("hw-dst", "app: nb", "hw-home", "it.invalid/home:1", name));
}

/* The new order: postCheckpoint stop. The pod completes at its checkpoint
 * and writes nothing when deleted; the home the test's stand-in wrote
 * before the checkpoint does not matter; the restore runs. */
static void test_home_untouched_after_stop(void **state)
{
    (void)state;
    char name[128];
    make_pod_with_home("hs-src", "app: stop", "hs-home", "it.invalid/home:2");
    /* the application's own checkpoint, written before the snapshot */
    char when[TIMEFMT_RFC3339_MICRO_SIZE];
    assert_int_equal(
        timefmt_format_rfc3339_micro((int64_t)harness_now_ms() - 1000, when, sizeof(when)), 0);
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s annotate pvc hs-home "
                                     "simulator.hibernator.dev/home-written-at=%s",
                                     ns, when),
                     0);
    snapshot_of("t-hs-src", "hs-src", name);
    char what[200];
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    cJSON_Delete(wait_cond(what, "Ready", "True", "AllSnapshotsAvailable", 30000));
    cJSON_Delete(wait_path("pod hs-src", "status.phase", "Succeeded", 20000));
    assert_int_equal(
        harness_kubectl(NULL, "-n %s delete pod hs-src --grace-period=30 --wait=true", ns), 0);
    usleep(1000 * 1000);
    char *out = claim_written("hs-home");
    assert_string_equal(out, when); /* nothing wrote it since */
    free(out);
    assert_false(restore_crashes("hs-dst", "app: stop", "hs-home", "it.invalid/home:2", name));
}

static void test_policy_status(void **state)
{
    (void)state;
    cJSON *p = wait_cond("podsnapshotpolicy notebooks", "Ready", "True", NULL, 10000);
    assert_true(num_at(p, "status.observedGeneration") >= 1);
    cJSON_Delete(p);
    char what[200];
    snprintf(what, sizeof(what), "podsnapshotstorageconfig %s", storage_name);
    cJSON_Delete(wait_cond(what, "Ready", "True", NULL, 10000));
    assert_int_equal(harness_apply("apiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotPolicy\n"
                                   "metadata: {name: orphan, namespace: %s}\n"
                                   "spec:\n  storageConfigName: no-such-storage\n"
                                   "  selector: {matchLabels: {app: orphan}}\n"
                                   "  triggerConfig: {type: manual}\n",
                                   ns),
                     0);
    cJSON_Delete(
        wait_cond("podsnapshotpolicy orphan", "Ready", "False", "StorageConfigNotFound", 10000));
}

/* PodSnapshots are GKE's: a ServiceAccount that RBAC lets write them is still
 * refused by the admission policy, but may delete them. */
static void test_admission(void **state)
{
    (void)state;
    char name[128];
    ready_snapshot("adm-src", "app: nb", NULL, "it.invalid/adm:1", name);
    assert_int_equal(harness_apply("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n"
                                   "metadata: {name: podsnapshots-all, namespace: %s}\n"
                                   "rules: [{apiGroups: [podsnapshot.gke.io], resources: "
                                   "[podsnapshots, podsnapshots/status], verbs: ['*']}]\n"
                                   "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: "
                                   "RoleBinding\n"
                                   "metadata: {name: podsnapshots-all, namespace: %s}\n"
                                   "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, "
                                   "name: podsnapshots-all}\n"
                                   "subjects: [{kind: ServiceAccount, name: default, namespace: "
                                   "%s}]\n",
                                   ns, ns, ns),
                     0);
    char *out = NULL;
    int rc = harness_kubectl(&out,
                             "--as=system:serviceaccount:%s:default -n %s label podsnapshot %s "
                             "mine=yes 2>&1",
                             ns, ns, name);
    print_message("write as a ServiceAccount: %s", out);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, "managed by GKE"));
    free(out);
    assert_int_equal(harness_kubectl(NULL,
                                     "--as=system:serviceaccount:%s:default -n %s delete "
                                     "podsnapshot %s --wait=false",
                                     ns, ns, name),
                     0);
    char what[200];
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    assert_true(gone(what, 20000));
}

/* Killed halfway through a checkpoint, the simulator carries on with the
 * same snapshot; --mode sets the default for pods nobody chose a mode for. */
static void test_restart(void **state)
{
    (void)state;
    make_pod("rst-src", "app: nb", "simulator.hibernator.dev/mode: slow", "it.invalid/rst:1");
    char name[128], what[200];
    snapshot_of("t-rst", "rst-src", name);
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    cJSON_Delete(wait_cond(what, "Ready", "False", "AwaitingCheckpoint", 10000));
    assert_int_equal(sim_stop(SIGKILL), 128 + SIGKILL);
    sim_start("checkpoint-failed");
    cJSON_Delete(wait_cond(what, "Ready", "True", "AllSnapshotsAvailable", 30000));
    char *out = NULL;
    harness_kubectl(&out, "-n %s get podsnapshots -l gke-pod-snapshot-triggered-by=t-rst -o name",
                    ns);
    assert_int_equal(count_lines(out), 1);
    free(out);

    /* The global default applies to a pod without a mode of its own. */
    make_pod("rst-default", "app: nb", NULL, "it.invalid/rst-default:1");
    check_failed("rst-default", "t-rst-default");
    assert_int_equal(sim_stop(SIGTERM), 0);
    sim_start("ok");
}

/* A policy's lastAccessTimeout deletes snapshots nobody restored from. */
static void test_retention(void **state)
{
    (void)state;
    char name[128], what[200];
    ready_snapshot("ret-1", "app: ret", NULL, "it.invalid/ret:1", name);
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    uint64_t t0 = harness_now_ms();
    assert_true(gone(what, 120000));
    print_message("stale snapshot deleted after %.0f s (lastAccessTimeout 1min)\n",
                  (double)(harness_now_ms() - t0) / 1000.0);
}

/* ---- GKE's schemas and refusals ------------------------------------------------ */

/* Sends manifest (YAML) to the API server as a server-side dry run; returns
 * kubectl's exit status and its output (JSON of the object as stored, or the
 * refusal), malloc'd in *ret_out. */
static int dry_run(const char *manifest, char **ret_out)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/dry-run.yaml", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(manifest, f);
    fclose(f);
    return harness_kubectl(ret_out, "-n %s create --dry-run=server -o json -f %s 2>&1", ns, path);
}

static void refused(const char *manifest, const char *field)
{
    char *out = NULL;
    int rc = dry_run(manifest, &out);
    if (rc == 0 || !out || !strstr(out, field))
        fail_msg("expected a refusal naming %s, got (exit %d): %s", field, rc, out ? out : "");
    free(out);
}

/* Accepted; returns the object as the API server would store it. */
static cJSON *accepted(const char *manifest)
{
    char *out = NULL;
    int rc = dry_run(manifest, &out);
    if (rc != 0)
        fail_msg("refused: %s", out ? out : "");
    cJSON *o = cJSON_Parse(out);
    free(out);
    assert_non_null(o);
    return o;
}

static void policy_with(const char *extra, char *out, size_t size)
{
    snprintf(out, size,
             "apiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotPolicy\n"
             "metadata: {name: schema-check}\n"
             "spec:\n  storageConfigName: s\n  selector: {matchLabels: {app: x}}\n%s",
             extra);
}

/* The stand-in CRDs are GKE's (gke-labs/pod-migration patches/crds): what
 * GKE's API server refuses, defaults and serves, ours does. */
static void test_gke_schemas(void **state)
{
    (void)state;
    char m[1024];
    /* retentionConfig.lastAccessTimeout: one number, one unit. */
    const char *bad_timeouts[] = {"1d12h", "90m", "36", "2s", "1h30min"};
    for (size_t i = 0; i < sizeof(bad_timeouts) / sizeof(bad_timeouts[0]); i++) {
        char extra[300];
        snprintf(extra, sizeof(extra),
                 "  triggerConfig: {type: manual}\n"
                 "  retentionConfig: {lastAccessTimeout: \"%s\"}\n",
                 bad_timeouts[i]);
        policy_with(extra, m, sizeof(m));
        refused(m, "spec.retentionConfig.lastAccessTimeout");
    }
    const char *good_timeouts[] = {"36h", "90min", "7d", "2 min", "1y", "3mo"};
    for (size_t i = 0; i < sizeof(good_timeouts) / sizeof(good_timeouts[0]); i++) {
        char extra[300];
        snprintf(extra, sizeof(extra),
                 "  triggerConfig: {type: manual}\n"
                 "  retentionConfig: {lastAccessTimeout: \"%s\"}\n",
                 good_timeouts[i]);
        policy_with(extra, m, sizeof(m));
        cJSON_Delete(accepted(m));
    }
    /* GKE's defaults, applied by the API server. */
    policy_with("  triggerConfig: {type: manual}\n"
                "  snapshotGroupingRules: {groupByLabelValue: {labels: [team], "
                "groupRetentionPolicy: {}}}\n",
                m, sizeof(m));
    cJSON *o = accepted(m);
    assert_string_equal(str_at(o, "spec.triggerConfig.postCheckpoint"), "resume");
    assert_string_equal(str_at(o, "spec.snapshotScope"), "whole-pod");
    assert_true(num_at(o, "spec.snapshotGroupingRules.groupByLabelValue.groupRetentionPolicy."
                          "maxSnapshotCountPerGroup") == 0);
    cJSON_Delete(o);
    /* Every trigger type GKE's runtime serves; onDelete, in the published
     * enum, is not (GKE 1.36: gke-labs/pod-migration pull request 5). */
    const char *types[] = {"readinessProbe", "workload", "manual"};
    for (size_t i = 0; i < 3; i++) {
        char extra[200];
        snprintf(extra, sizeof(extra), "  triggerConfig: {type: %s}\n", types[i]);
        policy_with(extra, m, sizeof(m));
        cJSON_Delete(accepted(m));
    }
    policy_with("  triggerConfig: {type: onDelete}\n", m, sizeof(m));
    refused(m, "onDelete is not supported");
    policy_with("  triggerConfig: {type: onCommit}\n", m, sizeof(m));
    refused(m, "spec.triggerConfig.type");
    policy_with("  triggerConfig: {type: manual}\n"
                "  snapshotGroupingRules: {groupByLabelValue: {labels: []}}\n",
                m, sizeof(m));
    refused(m, "spec.snapshotGroupingRules.groupByLabelValue.labels");
    policy_with("  triggerConfig: {type: manual}\n"
                "  snapshotGroupingRules: {groupByLabelValue: {labels: [a], "
                "groupRetentionPolicy: {maxSnapshotCountPerGroup: -1}}}\n",
                m, sizeof(m));
    refused(m, "maxSnapshotCountPerGroup");
    /* Required fields. */
    refused("apiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotPolicy\n"
            "metadata: {name: schema-check}\n"
            "spec: {selector: {}, triggerConfig: {type: manual}}\n",
            "spec.storageConfigName");
    refused("apiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotPolicy\n"
            "metadata: {name: schema-check}\n"
            "spec: {storageConfigName: s, selector: {}, triggerConfig: {type: manual}, "
            "retentionConfig: {}}\n",
            "spec.retentionConfig.lastAccessTimeout");
    refused("apiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotManualTrigger\n"
            "metadata: {name: schema-check}\nspec: {}\n",
            "spec.targetPod");
    refused("apiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshot\n"
            "metadata: {name: schema-check}\nspec: {}\n",
            "spec.policyName");
    /* The storage config: tokenSource defaulted, bucket names as GCS has them. */
    const char *sc = "apiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotStorageConfig\n"
                     "metadata: {name: schema-check-%ld}\n"
                     "spec: {snapshotStorageConfig: {gcs: {bucket: %s%s}}}\n";
    snprintf(m, sizeof(m), sc, (long)getpid(), "my-bucket.v1_x", "");
    o = accepted(m);
    assert_string_equal(str_at(o, "spec.snapshotStorageConfig.gcs.tokenSource"), "podKSA");
    cJSON_Delete(o);
    snprintf(m, sizeof(m), sc, (long)getpid(), "b", ", tokenSource: federatedP4SA");
    cJSON_Delete(accepted(m));
    snprintf(m, sizeof(m), sc, (long)getpid(), "b", ", tokenSource: nodeSA");
    refused(m, "spec.snapshotStorageConfig.gcs.tokenSource");
    snprintf(m, sizeof(m), sc, (long)getpid(), "My_Bucket", "");
    refused(m, "spec.snapshotStorageConfig.gcs.bucket");
    refused("apiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotStorageConfig\n"
            "metadata: {name: schema-check}\nspec: {}\n",
            "spec.snapshotStorageConfig");
    /* GKE's reference: gcs is required. */
    refused("apiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotStorageConfig\n"
            "metadata: {name: schema-check}\nspec: {snapshotStorageConfig: {}}\n",
            "spec.snapshotStorageConfig.gcs");

    /* A PodSnapshot's status as GKE writes it, and a GCS path GKE's refuses. */
    char name[128], *out = NULL;
    ready_snapshot("schema-src", "app: nb", NULL, "it.invalid/schema:1", name);
    assert_int_equal(harness_kubectl(&out,
                                     "-n %s patch podsnapshot %s --subresource=status --type=merge "
                                     "--dry-run=server -p '{\"status\":{\"storageStatus\":{\"gcs\":"
                                     "{\"observedGCSPath\":\"s3://elsewhere/x\"}}}}' 2>&1",
                                     ns, name) != 0,
                     1);
    assert_non_null(strstr(out, "observedGCSPath"));
    free(out);
    out = NULL;
    /* selectableFields: PodSnapshots are listed by their policy. */
    assert_int_equal(harness_kubectl(&out,
                                     "-n %s get podsnapshots --field-selector "
                                     "spec.policyName=notebooks -o name 2>&1",
                                     ns),
                     0);
    assert_non_null(strstr(out, name));
    free(out);
    out = NULL;
    /* GKE's short names and printer columns. */
    assert_int_equal(harness_kubectl(&out, "-n %s get psp,psmt,ps 2>&1", ns), 0);
    assert_non_null(strstr(out, "STORAGECONFIG"));
    assert_non_null(strstr(out, "TARGET POD"));
    assert_non_null(strstr(out, "LABELS"));
    free(out);
    out = NULL;
    assert_int_equal(harness_kubectl(&out, "get pssc %s -o name", storage_name), 0);
    free(out);
}

/* GKE ends a trigger it could not serve with Triggered=False and reason
 * Failed or Error (GKE's clients read both). */
static void test_trigger_error(void **state)
{
    (void)state;
    make_pod("nb-err", "app: nb", "simulator.hibernator.dev/mode: trigger-error",
             "it.invalid/err:1");
    make_trigger("t-err", "nb-err");
    cJSON *tr = wait_cond("podsnapshotmanualtrigger t-err", "Triggered", "False", "Error", 30000);
    print_message("trigger-error: %s\n", condition_field(tr, "Triggered", "message"));
    assert_null(str_at(tr, "status.snapshotCreated.name"));
    cJSON_Delete(tr);
    char *out = NULL;
    harness_kubectl(&out, "-n %s get podsnapshots -l gke-pod-snapshot-triggered-by=t-err -o name",
                    ns);
    assert_string_equal(out, "");
    free(out);
}

/* A checkpoint that never ends: the PodSnapshot stays Ready=False/
 * AwaitingCheckpoint, and neither it nor its trigger ever says it failed. */
static void test_hang(void **state)
{
    (void)state;
    make_pod("nb-hang", "app: nb", "simulator.hibernator.dev/mode: hang", "it.invalid/hang:1");
    char name[128], what[200];
    snapshot_of("t-hang", "nb-hang", name);
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    usleep(4000 * 1000); /* four times --checkpoint-delay */
    cJSON *snap = get_json(what);
    assert_true(cond_matches(snap, "Ready", "False", "AwaitingCheckpoint"));
    assert_null(condition(snap, "Checkpoint"));
    cJSON_Delete(snap);
    cJSON *tr = get_json("podsnapshotmanualtrigger t-hang");
    assert_null(condition(tr, "Triggered"));
    cJSON_Delete(tr);
}

/* GKE writes the trigger's name into the PodSnapshot's label
 * gke-pod-snapshot-triggered-by; a label value holds 63 characters, so a
 * longer trigger name fails the trigger and makes no PodSnapshot. */
static void test_long_trigger_name(void **state)
{
    (void)state;
    char trigger[80], what[200];
    memset(trigger, 'a', 64);
    trigger[64] = '\0';
    make_pod("nb-long", "app: nb", NULL, "it.invalid/long:1");
    make_trigger(trigger, "nb-long");
    snprintf(what, sizeof(what), "podsnapshotmanualtrigger %s", trigger);
    cJSON *tr = wait_cond(what, "Triggered", "False", "Error", 30000);
    const char *msg = condition_field(tr, "Triggered", "message");
    print_message("64-character trigger: %s\n", msg ? msg : "(no message)");
    assert_non_null(msg);
    assert_non_null(strstr(msg, "must be no more than 63 characters"));
    assert_null(str_at(tr, "status.snapshotCreated.name"));
    cJSON_Delete(tr);
    char *out = NULL;
    harness_kubectl(&out,
                    "-n %s get podsnapshots -o jsonpath='{range .items[*]}"
                    "{.metadata.annotations.podsnapshot\\.gke\\.io/origin-pod}{\"\\n\"}{end}'",
                    ns);
    assert_null(strstr(out ? out : "", "nb-long"));
    free(out);

    /* 63 characters fit. */
    trigger[63] = '\0';
    char name[128];
    snapshot_of(trigger, "nb-long", name);
    snprintf(what, sizeof(what), "podsnapshot %s", name);
    cJSON *snap = wait_cond(what, "Ready", "True", "AllSnapshotsAvailable", 30000);
    assert_string_equal(str_at(snap, "metadata.labels.gke-pod-snapshot-triggered-by"), trigger);
    cJSON_Delete(snap);
}

/* ---- setup ----------------------------------------------------------------------- */

static bool set_up;

static int setup(void **state)
{
    (void)state;
    harness_require_cluster();
    log_setup(LOG_LEVEL_WARN, LOG_FORMAT_TEXT, stderr);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/it-simulator.XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char cmd[2048];
    snprintf(
        cmd, sizeof(cmd),
        "kubectl --kubeconfig '%s' apply -f '%s/deploy/local/podsnapshot-crds.yaml' >/dev/null "
        "&& kubectl --kubeconfig '%s' wait --for=condition=Established --timeout=60s "
        "crd/podsnapshots.podsnapshot.gke.io crd/podsnapshotmanualtriggers.podsnapshot.gke.io "
        "crd/podsnapshotpolicies.podsnapshot.gke.io "
        "crd/podsnapshotstorageconfigs.podsnapshot.gke.io >/dev/null",
        harness_kubeconfig(), SOURCE_DIR, harness_kubeconfig());
    assert_int_equal(system(cmd), 0);
    ns = harness_namespace("it-sim");
    snprintf(storage_name, sizeof(storage_name), "it-sim-%ld", (long)getpid());
    assert_int_equal(
        harness_apply(
            "apiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotStorageConfig\n"
            "metadata: {name: %s}\n"
            "spec: {snapshotStorageConfig: {gcs: {bucket: " STORAGE_BUCKET ", path: it}}}\n"
            "---\napiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotPolicy\n"
            "metadata: {name: notebooks, namespace: %s}\n"
            "spec:\n  storageConfigName: %s\n  selector: {matchLabels: {app: nb}}\n"
            "  triggerConfig: {type: manual, postCheckpoint: resume}\n"
            "---\napiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotPolicy\n"
            "metadata: {name: stoppers, namespace: %s}\n"
            "spec:\n  storageConfigName: %s\n  selector: {matchLabels: {app: stop}}\n"
            "  triggerConfig: {type: manual, postCheckpoint: stop}\n"
            "---\napiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotPolicy\n"
            "metadata: {name: retained, namespace: %s}\n"
            "spec:\n  storageConfigName: %s\n  selector: {matchLabels: {app: ret}}\n"
            "  triggerConfig: {type: manual}\n"
            "  retentionConfig: {lastAccessTimeout: 1min}\n"
            "---\napiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotPolicy\n"
            "metadata: {name: grouped, namespace: %s}\n"
            "spec:\n  storageConfigName: %s\n"
            "  selector: {matchLabels: {app: grp}, matchExpressions: "
            "[{key: group, operator: Exists}]}\n"
            "  triggerConfig: {type: manual}\n"
            "  snapshotGroupingRules: {groupByLabelValue: {labels: [group]}}\n",
            storage_name, ns, storage_name, ns, storage_name, ns, storage_name, ns, storage_name),
        0);

    uv_loop_init(&loop);
    config = harness_config(NULL);
    client = harness_client(&loop, config);
    struct informer_options io = {
        .resource = &res_snapshots,
        .ns = ns,
        .handlers = {.on_add = on_snap_add, .on_update = on_snap_update},
    };
    assert_int_equal(informer_new(&loop, client, &io, &snap_inf), 0);
    assert_int_equal(informer_start(snap_inf), 0);
    harness_run_for(&loop, 500);

    sim_start("ok");
    set_up = true;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (!set_up) {
        /* cmocka runs the group's teardown after a setup that failed. */
        harness_namespace_delete(ns);
        return 0;
    }
    /* Namespace deletion needs the simulator to release GKE's finalizers. */
    harness_kubectl(NULL, "delete namespace %s --wait=true --timeout=90s", ns);
    harness_kubectl(NULL, "delete podsnapshotstorageconfig %s", storage_name);
    if (l4_node[0])
        harness_kubectl(NULL, "delete node %s", l4_node);
    int st = sim_stop(SIGTERM);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "tail -n 40 %s/simulator-*.log >&2", tmpdir);
    if (getenv("IT_SHOW_LOGS") || st != 0)
        (void)system(cmd);
    informer_free(snap_inf);
    kube_client_close(client);
    harness_loop_close(&loop);
    kube_config_free(config);
    /* A clean exit on SIGTERM (under ASan: no leaks either). */
    assert_int_equal(st, 0);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checkpoint),
        cmocka_unit_test(test_trigger_failures),
        cmocka_unit_test(test_checkpoint_failed),
        cmocka_unit_test(test_mode_from_configmap),
        cmocka_unit_test(test_slow),
        cmocka_unit_test(test_restore),
        cmocka_unit_test(test_cold_start),
        cmocka_unit_test(test_implicit_restore),
        cmocka_unit_test(test_restore_bypass),
        cmocka_unit_test(test_grouping),
        cmocka_unit_test(test_gpu_model),
        cmocka_unit_test(test_crash_loop),
        cmocka_unit_test(test_restore_failed),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_policy_gone_orphans),
        cmocka_unit_test(test_stuck_finalizer),
        cmocka_unit_test(test_post_checkpoint_stop),
        cmocka_unit_test(test_home_written_after_checkpoint),
        cmocka_unit_test(test_home_untouched_after_stop),
        cmocka_unit_test(test_policy_status),
        cmocka_unit_test(test_admission),
        cmocka_unit_test(test_restart),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_gke_schemas),
        cmocka_unit_test(test_trigger_error),
        cmocka_unit_test(test_hang),
        cmocka_unit_test(test_long_trigger_name),
    };
    /* IT_ONLY=<glob> runs only the tests whose names match. */
    if (getenv("IT_ONLY"))
        cmocka_set_test_filter(getenv("IT_ONLY"));
    return cmocka_run_group_tests(tests, setup, teardown);
}
