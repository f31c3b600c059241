/*
 * Pausing with GKE Pod Snapshots, end to end on the local cluster: the
 * controller under deploy/'s RBAC, the snapshot simulator playing GKE's
 * snapshot controller on the real podsnapshot.gke.io CRDs
 * (tests/simulator/, docs/simulator.md).
 *
 *   - the GPU cycle: pause → trigger → PodSnapshot Ready → only then the pod
 *     is deleted → GPU free → resume with the snapshot → restored
 *     FromSnapshot on the same GPU product;
 *   - the pause's order: the application asked to write its checkpoint
 *     (tests/tools/fake_activity stands in) and answering before the trigger
 *     exists, the policy's postCheckpoint: stop, the pod Completed and then
 *     deleted after Ready, never while running; nothing written home after
 *     the snapshot (the simulator would make the restore crash-loop); a
 *     checkpoint endpoint that hangs cut at its timeout and reported;
 *   - the checkpoint fails: the pod is NOT deleted (Retry), or the pause
 *     completes without memory (PauseWithoutMemory);
 *   - a restore is reported FromSnapshot only once the restored application
 *     answers the class's probe (a code-server stand-in on loopback), and the
 *     resume's readyAt is when it answered; one that never answers within
 *     restoreCheckTimeout is RestoreUnresponsive and replaced from files;
 *   - a silent cold start → ColdStart with a Warning; a crash-looping restore
 *     → replaced once by a pod from files, its snapshot deleted first and its
 *     trigger only after the PodSnapshot is gone (GKE's finalizer held it);
 *   - the controller killed between the trigger and Ready, and between Ready
 *     and the pod delete: the same snapshot, one trigger, no early delete; a
 *     PodSnapshot that went while the controller was down: its trigger goes
 *     once the controller is back; killed after the trigger and again right
 *     after the pod's delete: the pause is recorded with its Ready snapshot
 *     (never as files), restored FromSnapshot, each Event posted once;
 *   - the capacity fallback, on two GPU nodes of the test's own: no V100 free
 *     after the capacity timeout → the workspace runs on an L4 from its
 *     checkpoint, the status names the L4, the next snapshot is the L4's and
 *     the resume from it is pinned to the L4;
 *   - a deleted workspace leaves no trigger and no PodSnapshot, not even a
 *     trigger that never made one;
 *   - a workspace name of 63 characters: its trigger and pods are named within
 *     63, and it pauses with a Ready snapshot, resumes from it, and leaves
 *     nothing behind when deleted.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "util/timefmt.h"
#include "workspace/names.h"
#include "workspaces.h"

/* The fallback test's nodes, deleted by the teardown if the test could not. */
static char v100_node[64], l4_node[64];

/* The restore check's stand-in application (tests/tools/fake_activity). */
static pid_t app_pid;
static int app_port;
/* Stand-ins for the application's checkpoint endpoint (tests/tools/
 * fake_activity): one answers at once, one hangs. */
struct stand_in {
    pid_t pid;
    int port;
};
static struct stand_in app_ok, app_hang;
/* A kubectl watch a failed test may leave running; stopped by the next
 * test's set-up and the teardown. */
static pid_t pod_watch;

#define HOME_WRITTEN "simulator.hibernator.dev/home-written-at"

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

static int count_events(const char *name, const char *reason);

/* ---- the application's checkpoint ------------------------------------------ */

static void stand_in_start(struct stand_in *a)
{
    a->port = harness_start_server(FAKE_ACTIVITY_BIN, &a->pid);
}

static void stand_in_stop(struct stand_in *a)
{
    if (a->pid > 0) {
        kill(a->pid, SIGTERM);
        waitpid(a->pid, NULL, 0);
        a->pid = 0;
    }
}

static void stand_in_mode(const struct stand_in *a, const char *body)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "curl -sf -X PUT -H 'Content-Type: application/json' -d '%s' "
             "http://127.0.0.1:%d/control/mode >/dev/null",
             body, a->port);
    assert_int_equal(system(cmd), 0);
}

/* The stand-in's checkpoint record: first arrival and last "written"
 * answer, Unix ms (0: none). */
static void stand_in_checkpoint(const struct stand_in *a, int64_t *first, int64_t *written)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "curl -sf http://127.0.0.1:%d/control/stats", a->port);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    pclose(f);
    cJSON *st = cJSON_Parse(buf);
    assert_non_null(st);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(st, "checkpoint");
    *first = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "firstAt"));
    *written = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "writtenAt"));
    cJSON_Delete(st);
}

static int64_t time_of(const char *rfc3339)
{
    int64_t ms = 0;
    return rfc3339 && timefmt_parse_rfc3339(rfc3339, &ms) == 0 ? ms : 0;
}

/* A kubectl watch of one pod's phase and deletion, into a file. */
static void watch_pod(const char *pod, const char *file)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            _exit(127);
        dup2(fd, 1);
        char sel[300];
        snprintf(sel, sizeof(sel), "metadata.name=%s", pod);
        execlp("kubectl", "kubectl", "--kubeconfig", harness_kubeconfig(), "-n", ns, "get", "pods",
               "--field-selector", sel, "-w", "-o",
               "jsonpath={.status.phase} {.metadata.deletionTimestamp}{\"\\n\"}", (char *)NULL);
        _exit(127);
    }
    usleep(500 * 1000); /* the watch is set up */
    pod_watch = pid;
}

static void watch_stop(void)
{
    if (pod_watch > 0) {
        kill(pod_watch, SIGTERM);
        waitpid(pod_watch, NULL, 0);
        pod_watch = 0;
    }
}

/* What the watch saw, one "phase deletionTimestamp" line per change. */
static char *watch_end(const char *file)
{
    watch_stop();
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    char *text = calloc(1, 65536);
    assert_non_null(text);
    size_t n = fread(text, 1, 65535, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* A watch of resource (selected by flag value) written to file as
 * jsonpath lines, one per change; a deleted object's last line has the
 * resource version of its deletion. Returns the watch's pid. */
static pid_t watch_objects(const char *resource, const char *flag, const char *value,
                           const char *jsonpath, const char *file)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            _exit(127);
        dup2(fd, 1);
        char path[300];
        snprintf(path, sizeof(path), "jsonpath=%s{\"\\n\"}", jsonpath);
        execlp("kubectl", "kubectl", "--kubeconfig", harness_kubeconfig(), "-n", ns, "get",
               resource, flag, value, "-w", "-o", path, (char *)NULL);
        _exit(127);
    }
    usleep(500 * 1000); /* the watch is set up */
    return pid;
}

/* Stops a watch_objects() and returns what it wrote (the caller frees). */
static char *watch_objects_end(pid_t pid, const char *file)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    char *text = calloc(1, 65536);
    assert_non_null(text);
    size_t n = fread(text, 1, 65535, f);
    text[n] = '\0';
    fclose(f);
    unlink(file);
    return text;
}

/* The home claim's last write as the simulator knows it, 0: none. */
static int64_t home_written(const char *claim)
{
    char *out = NULL;
    harness_kubectl(&out,
                    "-n %s get pvc %s -o jsonpath='{.metadata.annotations."
                    "simulator\\.hibernator\\.dev/home-written-at}'",
                    ns, claim);
    int64_t t = time_of(out);
    free(out);
    return t;
}

/* ---- tests ------------------------------------------------------------------- */

/*
 * The pause with memory, in order: the application is asked to write its
 * checkpoint and answers (slowly) before the snapshot's trigger exists; the
 * policy stops the pod at its checkpoint; the pod is Completed, never
 * deleted while running, and deleted after Ready; the stand-in's write to
 * home (at its checkpoint) is older than the snapshot, so the restore works.
 */
static void test_checkpoint_before_snapshot(void **state)
{
    (void)state;
    stand_in_mode(&app_ok, "{\"delayMs\":1500}");
    apply_ws("order", "it-cpu-ckpt", 0, NULL);
    cJSON *ws = wait_state("order", "Running", 60000);
    char pod[128], file[256];
    snprintf(pod, sizeof(pod), "%s", str_at(ws, "status.podName"));
    cJSON_Delete(ws);
    snprintf(file, sizeof(file), "/tmp/it-snapshot-watch-%d", (int)getpid());
    watch_pod(pod, file);

    set_paused("order", 1);
    ws = wait_reason("order", "SnapshotReady", "Checkpointing", 30000);
    assert_string_equal(str_at(ws, "status.snapshot.appCheckpoint.attempt"), "order-p1-1");
    cJSON_Delete(ws);
    /* Asked first: no trigger before the answer. Whether one exists by now
     * depends on how long this look took (the answer comes 1.5 s after the
     * request); the order is checked below from the objects' own times. */
    print_message("  trigger while Checkpointing was seen: %s\n",
                  trigger_exists("order-p1-1") == 0 ? "none yet" : "made already");

    ws = wait_state("order", "Paused", 60000);
    char *seen = watch_end(file);
    unlink(file);
    print_message("  the pod as watched:\n%s", seen);
    int64_t first = 0, written = 0;
    stand_in_checkpoint(&app_ok, &first, &written);
    char *created = NULL;
    harness_kubectl(&created,
                    "-n %s get podsnapshotmanualtriggers order-p1-1 "
                    "-o jsonpath={.metadata.creationTimestamp}",
                    ns);
    int64_t trigger_ms = time_of(created);
    free(created);
    print_message("  checkpoint asked %lld ms, written %lld ms, trigger created %lld ms (Unix)\n",
                  (long long)first, (long long)written, (long long)trigger_ms);
    /* the application answered before the trigger was made (its time is
     * in whole seconds) */
    assert_true(first > 0 && written >= first + 1400);
    assert_true(trigger_ms >= written / 1000 * 1000);
    assert_string_equal(str_at(ws, "status.snapshot.appCheckpoint.result"), "Written");
    assert_true(time_of(str_at(ws, "status.snapshot.appCheckpoint.answeredAt")) <=
                time_of(str_at(ws, "status.snapshot.requestedAt")));
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    assert_true(time_of(str_at(ws, "status.lastPause.podDeletedAt")) >=
                time_of(str_at(ws, "status.snapshot.readyAt")));
    cJSON_Delete(ws);

    /* the policy stops the pod at its checkpoint */
    char *post = NULL;
    harness_kubectl(&post,
                    "-n %s get podsnapshotpolicies -o "
                    "jsonpath='{range .items[*]}{.spec.triggerConfig.postCheckpoint}{\" \"}{end}'",
                    ns);
    print_message("  postCheckpoint of the namespace's policies: %s\n", post);
    assert_non_null(strstr(post, "stop"));
    assert_null(strstr(post, "resume"));
    free(post);
    /* Completed before its delete; never deleted while running */
    assert_non_null(strstr(seen, "Succeeded \n"));
    assert_null(strstr(seen, "Running 2"));
    free(seen);
    char *reasons = event_reasons("order");
    assert_null(strstr(reasons, "PodInterrupted"));
    assert_null(strstr(reasons, "PodStopped"));
    assert_null(strstr(reasons, "Checkpoint"));
    free(reasons);

    /* The stand-in application wrote home at its checkpoint: before the
     * snapshot. The restore finds the files its memory expects. */
    char when[TIMEFMT_RFC3339_MICRO_SIZE];
    assert_int_equal(timefmt_format_rfc3339_micro(written, when, sizeof(when)), 0);
    assert_int_equal(harness_kubectl(NULL, "-n %s annotate pvc order-home %s=%s --overwrite", ns,
                                     HOME_WRITTEN, when),
                     0);
    set_paused("order", 0);
    ws = wait_reason("order", "Restored", "FromSnapshot", 60000);
    cJSON_Delete(ws);
    sleep(3); /* a restore that crashes does so at once */
    ws = ws_json("order");
    assert_string_equal(cond_field(ws, "Restored", "reason"), "FromSnapshot");
    cJSON_Delete(ws);
    assert_int_equal(count_events("order", "RestoreCrashLoop"), 0);
    stand_in_mode(&app_ok, "{}");
}

/*
 * Nothing writes home after the snapshot: the pod is not given a grace
 * period to save on SIGTERM once its memory is taken (the simulator plays
 * such an application, and fails a restore over files changed after its
 * checkpoint, as GKE's restores crash-loop then).
 */
static void test_no_write_after_snapshot(void **state)
{
    (void)state;
    apply_ws("quiet", "it-cpu-snap", 0, NULL);
    cJSON_Delete(wait_state("quiet", "Running", 60000));
    set_paused("quiet", 1);
    cJSON_Delete(wait_state("quiet", "Paused", 60000));
    int64_t written = home_written("quiet-home");
    print_message("  home written after the snapshot at %lld (0: never)\n", (long long)written);
    set_paused("quiet", 0);
    /* Until the resume settles: restored, or its crash seen. */
    char reason[64] = "";
    int restored = 0;
    uint64_t end = harness_now_ms() + 90000;
    while (harness_now_ms() < end) {
        cJSON *ws = ws_json("quiet");
        const char *r = ws ? cond_field(ws, "Restored", "reason") : NULL;
        snprintf(reason, sizeof(reason), "%s", r ? r : "");
        cJSON_Delete(ws);
        if (strcmp(reason, "RestoreCrashed") == 0 || strcmp(reason, "FromCheckpoint") == 0 ||
            count_events("quiet", "RestoreCrashLoop") > 0)
            break;
        if (strcmp(reason, "FromSnapshot") == 0) {
            if (restored++) /* still so 3 s later: a crash comes at once */
                break;
            sleep(3);
            continue;
        }
        usleep(200 * 1000);
    }
    char *reasons = event_reasons("quiet");
    print_message("  Restored: %s; events: %s\n", reason, reasons);
    free(reasons);
    assert_int_equal(count_events("quiet", "RestoreCrashLoop"), 0);
    assert_string_equal(reason, "FromSnapshot");
    assert_int_equal(written, 0);
}

/* An endpoint that never answers: cut at the class's timeout, reported,
 * and the snapshot taken anyway. */
static void test_checkpoint_hangs(void **state)
{
    (void)state;
    apply_ws("hang", "it-cpu-ckpt-hang", 0, NULL);
    cJSON_Delete(wait_state("hang", "Running", 60000));
    uint64_t paused_at = harness_now_ms();
    set_paused("hang", 1);
    cJSON *ws = wait_state("hang", "Paused", 60000);
    uint64_t took = harness_now_ms() - paused_at;
    const char *asked = str_at(ws, "status.snapshot.appCheckpoint.requestedAt");
    const char *gave_up = str_at(ws, "status.snapshot.appCheckpoint.answeredAt");
    print_message("  asked %s, gave up %s; paused after %llu ms\n", asked ? asked : "-",
                  gave_up ? gave_up : "-", (unsigned long long)took);
    assert_non_null(str_at(ws, "status.snapshot.appCheckpoint.result"));
    assert_string_equal(str_at(ws, "status.snapshot.appCheckpoint.result"), "Timeout");
    int64_t waited = time_of(gave_up) - time_of(asked);
    assert_true(waited >= 1000 && waited <= 5000); /* timeout 2s, in whole seconds */
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    cJSON_Delete(ws);
    char *reasons = event_reasons("hang");
    assert_non_null(strstr(reasons, "CheckpointTimeout,"));
    free(reasons);
    int64_t first = 0, written = 0;
    stand_in_checkpoint(&app_hang, &first, &written);
    assert_true(first > 0);
    assert_int_equal(written, 0);
}

/* Unpaused while the application is asked for its checkpoint: the pause
 * is over. The status says so (no Checkpointing left behind, the request
 * recorded as cancelled), and the pod runs on: never deleted, no snapshot
 * asked for after the unpause. */
static void test_unpause_while_checkpointing(void **state)
{
    (void)state;
    apply_ws("calm", "it-cpu-ckpt-slow", 0, NULL);
    cJSON *ws = wait_state("calm", "Running", 60000);
    char uid[64];
    snprintf(uid, sizeof(uid), "%s",
             str_at(ws, "status.podUID") ? str_at(ws, "status.podUID") : "");
    cJSON_Delete(ws);
    set_paused("calm", 1);
    cJSON_Delete(wait_reason("calm", "SnapshotReady", "Checkpointing", 30000));
    set_paused("calm", 0);
    /* Well within the request's 30 s timeout. */
    uint64_t end = harness_now_ms() + 8000;
    char reason[64] = "", state_[32] = "";
    while (harness_now_ms() < end) {
        ws = ws_json("calm");
        const char *r = ws ? cond_field(ws, "SnapshotReady", "reason") : NULL;
        const char *s = ws ? str_at(ws, "status.state") : NULL;
        snprintf(reason, sizeof(reason), "%s", r ? r : "");
        snprintf(state_, sizeof(state_), "%s", s ? s : "");
        cJSON_Delete(ws);
        if (strcmp(reason, "Checkpointing") != 0 && strcmp(state_, "Running") == 0)
            break;
        usleep(200 * 1000);
    }
    print_message("  after the unpause: state %s, SnapshotReady %s\n", state_, reason);
    assert_string_equal(state_, "Running");
    assert_string_not_equal(reason, "Checkpointing");
    assert_string_not_equal(reason, "InProgress");
    ws = ws_json("calm");
    assert_non_null(ws);
    assert_string_equal(str_at(ws, "status.snapshot.appCheckpoint.attempt"), "calm-p1-1");
    assert_string_equal(str_at(ws, "status.snapshot.appCheckpoint.result"), "Cancelled");
    cJSON_Delete(ws);
    /* The pod runs on: a few seconds later, the same pod, no trigger. */
    sleep(4);
    ws = ws_json("calm");
    assert_non_null(ws);
    assert_string_equal(str_at(ws, "status.state"), "Running");
    assert_string_equal(str_at(ws, "status.podUID"), uid);
    assert_string_not_equal(cond_field(ws, "SnapshotReady", "reason"), "Checkpointing");
    cJSON_Delete(ws);
    assert_int_equal(all_pods("calm"), 1);
    assert_int_equal(trigger_exists("calm-p1-1"), 0);
    assert_int_equal(count_events("calm", "PodInterrupted"), 0);
}

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
    /* the ledger: the pause kept the memory, its snapshot Ready before the delete */
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    assert_string_equal(str_at(ws, "status.lastPause.snapshotReadyAt"),
                        str_at(ws, "status.snapshot.readyAt"));
    assert_true(num_at(ws, "status.lastPause.snapshotSeconds") ==
                num_at(ws, "status.snapshot.seconds"));
    assert_string_equal(str_at(ws, "status.lastPause.nodeName"), source_node);
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
    /* the history's record of the pause, completed by its resume */
    const cJSON *rec = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "status"), "history"),
        0);
    assert_string_equal(str_at(rec, "memory"), "snapshot");
    assert_string_equal(str_at(rec, "restoredFrom"), "FromSnapshot");
    assert_string_equal(str_at(rec, "readyAt"), str_at(ws, "status.lastResume.readyAt"));
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
    simulator_set_mode("keep-1", "checkpoint-failed");
    simulator_set_mode("drop-1", "checkpoint-failed");
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
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshotFailed");
    cJSON_Delete(ws);
    assert_int_equal(all_pods("drop"), 0);
    phase = NULL;
    harness_kubectl(&phase, "-n %s get pvc drop-home -o jsonpath={.status.phase}", ns);
    assert_string_equal(phase, "Bound"); /* the files stay for the resume */
    free(phase);
}

/* The workspaces of class made, running, then paused, side by side. */
static void run_then_pause(const char *const *names, int n, const char *class_name)
{
    for (int i = 0; i < n; i++)
        apply_ws(names[i], class_name, 0, NULL);
    for (int i = 0; i < n; i++)
        cJSON_Delete(wait_state(names[i], "Running", 60000));
    for (int i = 0; i < n; i++)
        set_paused(names[i], 1);
    for (int i = 0; i < n; i++)
        cJSON_Delete(wait_state(names[i], "Paused", 60000));
}

static void test_cold_start_and_crash_loop(void **state)
{
    (void)state;
    /* crash: PodRestored=True, then a crash loop; rfail: the restore fails
     * (PodRestored=False/FailedToRestore) and crash-loops; rsilent: the
     * same without any PodRestored. */
    static const char *const names[] = {"cold", "crash", "rfail", "rsilent"};
    static const char *const modes[] = {"cold-start", "crash-loop", "restore-failed",
                                        "restore-failed-silent"};
    run_then_pause(names, 4, "it-cpu-snap");
    for (int i = 0; i < 4; i++) {
        char pod[64];
        snprintf(pod, sizeof(pod), "%s-2", names[i]);
        simulator_set_mode(pod, modes[i]);
    }
    for (int i = 0; i < 4; i++)
        set_paused(names[i], 0);

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

    /* A restore that failed is replaced the same way, whether the backend
     * said so (its words kept) or said nothing. */
    for (int i = 2; i < 4; i++) {
        ws = wait_reason(names[i], "Restored", "FromCheckpoint", 90000);
        const char *msg = cond_field(ws, "Restored", "message");
        print_message("  %s: %s\n", modes[i], msg);
        assert_non_null(strstr(msg, "crashed"));
        cJSON_Delete(ws);
        char *said = NULL;
        harness_kubectl(&said,
                        "-n %s get events --field-selector involvedObject.name=%s,"
                        "involvedObject.kind=Workspace,reason=RestoreCrashLoop "
                        "-o jsonpath='{.items[*].message}'",
                        ns, names[i]);
        print_message("  %s: RestoreCrashLoop: %s\n", modes[i], said ? said : "");
        /* The backend's own words, where it said any. */
        assert_true(said && (strstr(said, "FailedToRestore") != NULL) == (i == 2));
        free(said);
        reasons = event_reasons(names[i]);
        assert_non_null(strstr(reasons, "RestoreCrashLoop,"));
        free(reasons);
        assert_true(live_pods(names[i]) <= 1);
    }

    /* Ready without PodRestored: a cold start, said once. */
    ws = wait_reason("cold", "Restored", "ColdStart", 90000);
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "ColdStart");
    cJSON_Delete(ws);
    reasons = event_reasons("cold");
    assert_non_null(strstr(reasons, "ColdStart,"));
    free(reasons);
}

/* The stand-in answers code-server's /healthz for every workspace; stopped
 * by the teardown if the test could not. */
static void app_start(void)
{
    app_port = harness_start_server(FAKE_ACTIVITY_BIN, &app_pid);
}

static void app_stop(void)
{
    if (app_pid > 0) {
        kill(app_pid, SIGTERM);
        waitpid(app_pid, NULL, 0);
    }
    app_pid = 0;
}

/* The stand-in's answers: failStatus 0 answers, anything else fails. */
static void app_fail_with(int status)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "curl -sf -X PUT -H 'Content-Type: application/json' -d '{\"failStatus\":%d}' "
             "http://127.0.0.1:%d/control/mode >/dev/null",
             status, app_port);
    assert_int_equal(system(cmd), 0);
}

/* A loopback port nothing listens on: the application that never answers. */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* Waits until the restore of name is decided one way or the other (Restored
 * leaves Restoring, or Ready says the application is awaited); returns the
 * workspace (caller frees). */
static cJSON *wait_restore_judged(const char *name, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    for (;;) {
        cJSON *ws = ws_json(name);
        const char *restored = ws ? cond_field(ws, "Restored", "reason") : "";
        const char *ready = ws ? cond_field(ws, "Ready", "reason") : "";
        if (ws && ((restored[0] && strcmp(restored, "Restoring") != 0) ||
                   strcmp(ready, "AwaitingApplication") == 0))
            return ws;
        cJSON_Delete(ws);
        if (harness_now_ms() > end)
            fail_msg("the restore of %s was not judged within %llu ms", name,
                     (unsigned long long)timeout_ms);
        usleep(200 * 1000);
    }
}

/*
 * A restore counts once the application answers: the restored pod of
 * "alive" waits (Restored=Unknown, Ready=False/AwaitingApplication) while the
 * stand-in fails, and is FromSnapshot, readyAt at its answer, once it
 * answers. "dead" probes a port nobody listens on: after restoreCheckTimeout
 * it is RestoreUnresponsive, its pod and snapshot go, and the next pod starts
 * from files and the checkpoint.
 */
static void test_restore_check(void **state)
{
    (void)state;
    app_start();
    const char *snap =
        "  snapshot: {backend: GKE, storageConfigName: it-snapshot, timeout: 60s, "
        "retryAfter: 10m, restoreCheckTimeout: 4s}\n"
        "  activity: {application: CodeServer, url: \"http://127.0.0.1:%d/{workspace}\", "
        "interval: 1s, timeout: 1s}\n";
    char extra[512];
    snprintf(extra, sizeof(extra), snap, app_port);
    apply_class("it-cpu-snap-app", extra);
    snprintf(extra, sizeof(extra), snap, closed_port());
    apply_class("it-cpu-snap-deadapp", extra);
    apply_ws("alive", "it-cpu-snap-app", 0, NULL);
    apply_ws("dead", "it-cpu-snap-deadapp", 0, NULL);
    cJSON_Delete(wait_state("alive", "Running", 60000));
    cJSON_Delete(wait_state("dead", "Running", 60000));
    set_paused("alive", 1);
    set_paused("dead", 1);
    cJSON_Delete(wait_state("alive", "Paused", 60000));
    cJSON_Delete(wait_state("dead", "Paused", 60000));

    /* The restored application does not answer yet. */
    app_fail_with(503);
    set_paused("alive", 0);
    set_paused("dead", 0);
    cJSON *ws = wait_restore_judged("alive", 60000);
    if (strcmp(cond_field(ws, "Restored", "reason"), "FromSnapshot") == 0)
        fail_msg("Restored became True/FromSnapshot although the app never answered");
    assert_string_equal(cond_field(ws, "Restored", "status"), "Unknown");
    assert_string_equal(cond_field(ws, "Ready", "reason"), "AwaitingApplication");
    assert_string_equal(str_at(ws, "status.state"), "Resuming");
    cJSON_Delete(ws);
    /* Now it answers: the session is back, ready when it answered. */
    int64_t answering = (int64_t)(harness_now_ms() / 1000 * 1000);
    app_fail_with(0);
    ws = wait_reason("alive", "Restored", "FromSnapshot", 30000);
    assert_string_equal(str_at(ws, "status.state"), "Running");
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromSnapshot");
    int64_t ready = 0;
    assert_int_equal(timefmt_parse_rfc3339(str_at(ws, "status.lastResume.readyAt"), &ready), 0);
    if (ready < answering)
        fail_msg("lastResume.readyAt %s is before the application answered",
                 str_at(ws, "status.lastResume.readyAt"));
    cJSON_Delete(ws);

    /* Never answers: reported, and replaced from files once the snapshot is gone. */
    ws = wait_restore_judged("dead", 60000);
    if (strcmp(cond_field(ws, "Restored", "reason"), "FromSnapshot") == 0)
        fail_msg("Restored became True/FromSnapshot although the app never answered");
    cJSON_Delete(ws);
    ws = wait_reason("dead", "Restored", "FromCheckpoint", 60000);
    assert_non_null(strstr(cond_field(ws, "Restored", "message"), "did not answer"));
    assert_non_null(str_at(ws, "status.snapshot.restoreFailedAt"));
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromCheckpoint");
    cJSON_Delete(ws);
    cJSON_Delete(wait_state("dead", "Running", 30000));
    char *reasons = event_reasons("dead");
    assert_non_null(strstr(reasons, "RestoreUnresponsive,"));
    free(reasons);
    assert_int_equal(live_pods("dead"), 1);
    app_stop();
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

/* How many Events of reason the workspace has. */
static int count_events(const char *name, const char *reason)
{
    char *reasons = event_reasons(name);
    int n = 0;
    size_t len = strlen(reason);
    for (char *r = reasons; r && *r;) {
        char *comma = strchr(r, ',');
        size_t l = comma ? (size_t)(comma - r) : strlen(r);
        n += l == len && strncmp(r, reason, len) == 0;
        r = comma ? comma + 1 : r + l;
    }
    free(reasons);
    return n;
}

/* Killed right after the trigger was created, then right after the pod's
 * delete (each before its status write): the next controller reads the
 * pause from the API server's objects (the Ready PodSnapshot, the pod gone),
 * not from the status that was never written. The pause kept its memory,
 * the resume restores it, and each transition's Event is there once. */
static void test_crash_after_delete(void **state)
{
    (void)state;
    apply_ws("afterdel", "it-cpu-snap", 0, NULL);
    cJSON_Delete(wait_state("afterdel", "Running", 60000));
    controller_stop();
    controller_start("SnapshotBegin");
    set_paused("afterdel", 1);
    assert_int_equal(controller_wait_exit(30000), 3);
    controller_start("DeletePod");
    assert_int_equal(controller_wait_exit(60000), 3);
    cJSON *ws = ws_json("afterdel");
    const char *phase = str_at(ws, "status.snapshot.phase");
    print_message("  after the crash the status says snapshot %s; %d pod(s) live\n",
                  phase ? phase : "(none)", live_pods("afterdel"));
    cJSON_Delete(ws);
    assert_int_equal(live_pods("afterdel"), 0);
    controller_start(NULL);

    ws = wait_state("afterdel", "Paused", 60000);
    uint64_t end = harness_now_ms() + 30000;
    while (!str_at(ws, "status.lastPause.memory") && harness_now_ms() < end) {
        cJSON_Delete(ws);
        usleep(200 * 1000);
        ws = ws_json("afterdel");
    }
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    assert_string_equal(str_at(ws, "status.snapshot.phase"), "Ready");
    assert_string_equal(cond_field(ws, "SnapshotReady", "status"), "True");
    assert_string_equal(str_at(ws, "status.lastPause.snapshotReadyAt"),
                        str_at(ws, "status.snapshot.readyAt"));
    /* When the pod went is known only if the next controller still saw it
     * terminating (kwok removes it at once): a time nobody saw is left
     * unset, never made up. The release is when the pod was seen gone. */
    const char *deleted = str_at(ws, "status.lastPause.podDeletedAt");
    const char *released = str_at(ws, "status.lastPause.acceleratorReleasedAt");
    print_message("  podDeletedAt %s, acceleratorReleasedAt %s\n", deleted ? deleted : "(unknown)",
                  released ? released : "(none)");
    assert_non_null(released);
    if (deleted)
        assert_true(strcmp(deleted, released) <= 0);
    cJSON_Delete(ws);
    assert_int_equal(
        count_objects("podsnapshotmanualtriggers", "hibernator.dev/workspace=afterdel"), 1);

    set_paused("afterdel", 0);
    ws = wait_reason("afterdel", "Restored", "FromSnapshot", 60000);
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromSnapshot");
    const cJSON *rec = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "status"), "history"),
        0);
    assert_string_equal(str_at(rec, "memory"), "snapshot");
    cJSON_Delete(ws);
    char *reasons = event_reasons("afterdel");
    print_message("  events: %s\n", reasons);
    free(reasons);
    assert_int_equal(count_events("afterdel", "SnapshotNotUsed"), 0);
    assert_int_equal(count_events("afterdel", "Pausing"), 1);
    assert_int_equal(count_events("afterdel", "SnapshotReady"), 1);
    assert_int_equal(count_events("afterdel", "Paused"), 1);
    assert_int_equal(count_events("afterdel", "Resuming"), 1);
    assert_int_equal(count_events("afterdel", "Resumed"), 1);
}

/* Output of kubectl (jsonpath) of one object, trimmed; "" when absent. */
static char *jsonpath_of(const char *what, const char *name, const char *path)
{
    char *out = NULL;
    harness_kubectl(&out, "-n %s get %s %s --ignore-not-found -o jsonpath='%s'", ns, what, name,
                    path);
    if (!out)
        out = strdup("");
    return out;
}

/* Killed at each step of a snapshot pause, and back only once GKE has
 * finished the snapshot: the pod stopped at its checkpoint (Succeeded) or
 * gone, the PodSnapshot Ready. What the pause kept is read from the
 * backend's objects, never from the pod's phase: memory "snapshot", the
 * snapshot recorded and kept, the resume FromSnapshot, no SnapshotNotUsed,
 * every transition's Event once, no timeline field silently missing. */
/* GKE finishes a snapshot without the controller: the PodSnapshot of
 * trigger Ready, pod completed (or already gone, after a DeletePod crash),
 * and a while more before anyone looks. */
static void wait_finished_without_controller(const char *trigger, const char *pod)
{
    uint64_t end = harness_now_ms() + 60000;
    char *ready = NULL, *phase = NULL;
    for (;;) {
        free(ready);
        free(phase);
        char selector[96];
        snprintf(selector, sizeof(selector), "-l gke-pod-snapshot-triggered-by=%s", trigger);
        ready = jsonpath_of("podsnapshots", selector,
                            "{.items[0].status.conditions[?(@.type==\"Ready\")].status}");
        phase = jsonpath_of("pod", pod, "{.status.phase}");
        int settled =
            strcmp(ready, "True") == 0 && (strcmp(phase, "Succeeded") == 0 || phase[0] == '\0');
        if (settled || harness_now_ms() > end)
            break;
        usleep(200 * 1000);
    }
    print_message("    PodSnapshot Ready=%s, pod phase %s\n", ready, phase[0] ? phase : "(gone)");
    assert_string_equal(ready, "True");
    free(ready);
    free(phase);
    sleep(2);
}

static void test_crash_then_late_return(void **state)
{
    (void)state;
    static const char *const points[] = {"SnapshotBegin", "before:DeletePod", "DeletePod"};
    for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
        char name[32], trigger[48];
        snprintf(name, sizeof(name), "late-%zu", i);
        snprintf(trigger, sizeof(trigger), "%s-p1-1", name);
        print_message("  killed at %s, back after the snapshot is Ready\n", points[i]);
        apply_ws(name, "it-cpu-snap", 0, NULL);
        cJSON *ws = wait_state(name, "Running", 60000);
        char pod[64];
        snprintf(pod, sizeof(pod), "%s", str_at(ws, "status.podName"));
        cJSON_Delete(ws);
        controller_stop();
        controller_start(points[i]);
        set_paused(name, 1);
        assert_int_equal(controller_wait_exit(60000), 3);
        wait_finished_without_controller(trigger, pod);
        controller_start(NULL);

        ws = wait_state(name, "Paused", 60000);
        assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
        assert_string_equal(str_at(ws, "status.snapshot.attempt"), trigger);
        assert_string_equal(str_at(ws, "status.snapshot.phase"), "Ready");
        assert_string_equal(cond_field(ws, "SnapshotReady", "status"), "True");
        const char *deleted = str_at(ws, "status.lastPause.podDeletedAt");
        const char *unobserved = str_at(ws, "status.lastPause.unobserved");
        print_message("    podDeletedAt %s, unobserved %s\n", deleted ? deleted : "-",
                      unobserved ? unobserved : "-");
        assert_true(deleted || (unobserved && strstr(unobserved, "podDeletedAt")));
        cJSON_Delete(ws);
        char *events = event_reasons(name);
        print_message("    events: %s\n", events);
        free(events);
        assert_int_equal(count_events(name, "Pausing"), 1);
        assert_int_equal(count_events(name, "SnapshotReady"), 1);
        assert_int_equal(count_events(name, "Paused"), 1);

        set_paused(name, 0);
        ws = wait_reason(name, "Restored", "FromSnapshot", 60000);
        assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromSnapshot");
        cJSON_Delete(ws);
        assert_int_equal(count_events(name, "SnapshotNotUsed"), 0);
        char sel[96];
        snprintf(sel, sizeof(sel), "gke-pod-snapshot-triggered-by=%s", trigger);
        assert_int_equal(count_objects("podsnapshots", sel), 1);
        assert_int_equal(count_events(name, "Resumed"), 1);
        set_paused(name, 1);
        cJSON_Delete(wait_state(name, "Paused", 60000));
    }
}

/* Two faults: the controller killed right after it created a pause's
 * trigger, and the class changed (backend None) or deleted before a
 * controller is back. The snapshot GKE took meanwhile is still found by
 * the name the workspace's counters give and recorded as the pause's
 * memory, kept while paused, and the resume says why it is not used. */
static void test_crash_then_class_changed(void **state)
{
    (void)state;
    const char *snap = "  snapshot: {backend: GKE, storageConfigName: it-snapshot, timeout: 60s}\n";
    for (int gone = 0; gone <= 1; gone++) {
        char name[32], cls[32], trigger[48], sel[96];
        snprintf(name, sizeof(name), "dbl-%d", gone);
        snprintf(cls, sizeof(cls), "it-dbl-%d", gone);
        snprintf(trigger, sizeof(trigger), "%s-p1-1", name);
        snprintf(sel, sizeof(sel), "gke-pod-snapshot-triggered-by=%s", trigger);
        print_message("  killed at SnapshotBegin, then the class %s\n",
                      gone ? "deleted" : "set to backend None");
        apply_class(cls, snap);
        apply_ws(name, cls, 0, NULL);
        cJSON *ws = wait_state(name, "Running", 60000);
        char pod[64];
        snprintf(pod, sizeof(pod), "%s", str_at(ws, "status.podName"));
        cJSON_Delete(ws);
        controller_stop();
        controller_start("SnapshotBegin");
        set_paused(name, 1);
        assert_int_equal(controller_wait_exit(60000), 3);
        wait_finished_without_controller(trigger, pod);
        if (gone)
            assert_int_equal(harness_kubectl(NULL, "delete wsc %s --wait=true", cls), 0);
        else
            assert_int_equal(harness_kubectl(NULL,
                                             "patch wsc %s --type=merge -p '{\"spec\":{\"snapshot\""
                                             ":{\"backend\":\"None\"}}}'",
                                             cls),
                             0);
        controller_start(NULL);

        ws = wait_state(name, "Paused", 60000);
        print_message("    paused: memory %s, attempt %s, snapshot %s\n",
                      str_at(ws, "status.lastPause.memory"), str_at(ws, "status.snapshot.attempt"),
                      str_at(ws, "status.snapshot.phase"));
        assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
        assert_string_equal(str_at(ws, "status.snapshot.attempt"), trigger);
        assert_string_equal(str_at(ws, "status.snapshot.phase"), "Ready");
        cJSON_Delete(ws);
        assert_int_equal(count_events(name, "Paused"), 1);
        sleep(2); /* paused: the snapshot stays (the class may take it back) */
        assert_int_equal(count_objects("podsnapshots", sel), 1);

        set_paused(name, 0);
        if (gone) {
            cJSON_Delete(wait_reason(name, "Valid", "ClassNotFound", 60000));
            apply_class(cls, snap); /* made again, as it was */
        }
        ws = wait_reason(name, "Restored", "FromCheckpoint", 60000);
        const char *why = cond_field(ws, "Restored", "message");
        print_message("    resumed: %s\n", why);
        assert_non_null(
            strstr(why, gone ? "was taken of is not known" : "no longer has a snapshot backend"));
        assert_string_equal(cond_field(ws, "SnapshotReady", "reason"), "NotUsed");
        cJSON_Delete(ws);
        assert_int_equal(count_events(name, "SnapshotNotUsed"), 1);
    }
}

/* A workspace of class cls paused with a Ready snapshot: returns its
 * trigger's selector in sel. */
static void paused_with_ready_snapshot(const char *name, const char *cls, char *sel, size_t size)
{
    apply_ws(name, cls, 0, NULL);
    cJSON_Delete(wait_state(name, "Running", 60000));
    set_paused(name, 1);
    cJSON *ws = wait_state(name, "Paused", 60000);
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    snprintf(sel, size, "gke-pod-snapshot-triggered-by=%s", str_at(ws, "status.snapshot.attempt"));
    cJSON_Delete(ws);
    assert_int_equal(count_objects("podsnapshots", sel), 1);
}

/* Classes changed under paused workspaces with Ready snapshots
 * (docs/state-machine.md, "Changing a class under paused workspaces"):
 * the backend set to None, the storage config changed, the class deleted
 * and made again. Each resume says where it came from and why. */
static void test_class_changes(void **state)
{
    (void)state;
    const char *snap = "  snapshot: {backend: GKE, storageConfigName: it-snapshot, timeout: 60s}\n";
    char sel[128];

    print_message("  the backend set to None while paused\n");
    apply_class("it-chg-none", snap);
    paused_with_ready_snapshot("chg-none", "it-chg-none", sel, sizeof(sel));
    assert_int_equal(harness_kubectl(NULL, "patch wsc it-chg-none --type=merge -p "
                                           "'{\"spec\":{\"snapshot\":{\"backend\":\"None\"}}}'"),
                     0);
    sleep(2); /* paused: the snapshot stays (the backend may come back) */
    assert_int_equal(count_objects("podsnapshots", sel), 1);
    set_paused("chg-none", 0);
    cJSON *ws = wait_reason("chg-none", "Restored", "FromCheckpoint", 60000);
    assert_non_null(
        strstr(cond_field(ws, "Restored", "message"), "no longer has a snapshot backend"));
    assert_string_equal(cond_field(ws, "SnapshotReady", "status"), "False");
    assert_string_equal(cond_field(ws, "SnapshotReady", "reason"), "NotUsed");
    cJSON_Delete(ws);
    assert_int_equal(count_events("chg-none", "SnapshotNotUsed"), 1);
    uint64_t end = harness_now_ms() + 60000;
    while (count_objects("podsnapshots", sel) != 0 && harness_now_ms() < end)
        usleep(500 * 1000);
    assert_int_equal(count_objects("podsnapshots", sel), 0);

    print_message("  the storage config changed while paused\n");
    apply_class("it-chg-storage", snap);
    paused_with_ready_snapshot("chg-storage", "it-chg-storage", sel, sizeof(sel));
    assert_int_equal(harness_kubectl(NULL, "patch wsc it-chg-storage --type=merge -p "
                                           "'{\"spec\":{\"snapshot\":{\"storageConfigName\":"
                                           "\"elsewhere\"}}}'"),
                     0);
    set_paused("chg-storage", 0);
    ws = wait_reason("chg-storage", "Restored", "FromSnapshot", 60000);
    assert_string_equal(cond_field(ws, "SnapshotReady", "reason"), "Ready");
    cJSON_Delete(ws);
    assert_int_equal(count_events("chg-storage", "SnapshotNotUsed"), 0);
    /* The next pause: the snapshot kept under the old storage config goes
     * before the policy names the new one (GKE frees a PodSnapshot's files
     * through its policy's storage config), as an independent watch of
     * both sees it in the API server's order (resource versions). */
    assert_int_equal(harness_apply("apiVersion: podsnapshot.gke.io/v1\n"
                                   "kind: PodSnapshotStorageConfig\n"
                                   "metadata: {name: elsewhere}\n"
                                   "spec: {snapshotStorageConfig: {gcs: {bucket: other}}}\n"),
                     0);
    char snaps_file[128], policy_file[128];
    snprintf(snaps_file, sizeof(snaps_file), "/tmp/it-snapshot-snaps-%d", (int)getpid());
    snprintf(policy_file, sizeof(policy_file), "/tmp/it-snapshot-policy-%d", (int)getpid());
    pid_t snaps_watch = watch_objects("podsnapshots", "-l", sel,
                                      "{.metadata.resourceVersion} {.metadata.name}", snaps_file);
    pid_t policy_watch = watch_objects(
        "podsnapshotpolicies", "--field-selector", "metadata.name=chg-storage-snapshots",
        "{.metadata.resourceVersion} {.spec.storageConfigName}", policy_file);
    set_paused("chg-storage", 1);
    ws = wait_state("chg-storage", "Paused", 90000);
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    char new_sel[128];
    snprintf(new_sel, sizeof(new_sel), "gke-pod-snapshot-triggered-by=%s",
             str_at(ws, "status.snapshot.attempt"));
    cJSON_Delete(ws);
    char *snaps_seen = watch_objects_end(snaps_watch, snaps_file);
    char *policy_seen = watch_objects_end(policy_watch, policy_file);
    print_message("    the old snapshot as watched:\n%s    the policy as watched:\n%s", snaps_seen,
                  policy_seen);
    assert_int_equal(count_objects("podsnapshots", sel), 0);
    assert_int_equal(count_objects("podsnapshots", new_sel), 1);
    char *path = NULL;
    assert_int_equal(
        harness_kubectl(&path,
                        "-n %s get podsnapshots -l %s -o "
                        "jsonpath={.items[0].status.storageStatus.gcs.observedGCSPath}",
                        ns, new_sel),
        0);
    assert_non_null(strstr(path, "gs://other/"));
    free(path);
    long long gone_rv = 0, moved_rv = 0;
    for (char *line = strtok(snaps_seen, "\n"); line; line = strtok(NULL, "\n"))
        gone_rv = atoll(line) > gone_rv ? atoll(line) : gone_rv; /* the last: its deletion */
    for (char *line = strtok(policy_seen, "\n"); line; line = strtok(NULL, "\n"))
        if (strstr(line, " elsewhere") && !moved_rv)
            moved_rv = atoll(line);
    free(snaps_seen);
    free(policy_seen);
    print_message("    old snapshot deleted at %lld, policy moved at %lld\n", gone_rv, moved_rv);
    assert_true(gone_rv > 0 && moved_rv > 0);
    assert_true(gone_rv < moved_rv);

    print_message("  the class deleted and made again while paused\n");
    apply_class("it-chg-gone", snap);
    paused_with_ready_snapshot("chg-gone", "it-chg-gone", sel, sizeof(sel));
    assert_int_equal(harness_kubectl(NULL, "delete wsc it-chg-gone --wait=true"), 0);
    set_paused("chg-gone", 0);
    ws = wait_reason("chg-gone", "Valid", "ClassNotFound", 60000);
    cJSON_Delete(ws);
    sleep(2);
    assert_int_equal(all_pods("chg-gone"), 0);
    assert_int_equal(count_objects("podsnapshots", sel), 1);
    apply_class("it-chg-gone", snap);
    ws = wait_reason("chg-gone", "Restored", "FromSnapshot", 60000);
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromSnapshot");
    cJSON_Delete(ws);

    print_message("  the class deleted while the workspace runs\n");
    assert_int_equal(harness_kubectl(NULL, "delete wsc it-chg-gone --wait=true"), 0);
    ws = wait_reason("chg-gone", "Valid", "ClassNotFound", 60000);
    assert_string_equal(str_at(ws, "status.state"), "Running");
    cJSON_Delete(ws);
    assert_int_equal(live_pods("chg-gone"), 1);
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

/* A Workspace name of 63 characters, the most the CRD allows: its trigger is
 * cut to fit the label GKE puts on the PodSnapshot (with the simulator's
 * label left out, the pause would wait for a snapshot it cannot see), its
 * pods to 63 (a pod's name is its hostname). The whole cycle: pause with a
 * Ready snapshot, resume from it, delete leaving no trigger and no
 * PodSnapshot. */
static void test_longest_name(void **state)
{
    (void)state;
    static const char name[] = "research.a-workspace-name-of-the-longest-length-the-api-allows1";
    assert_int_equal(strlen(name), 63);
    char pod1[NAMES_SIZE], pod2[NAMES_SIZE], trigger[NAMES_SIZE], policy[NAMES_SIZE];
    assert_true(names_pod(name, 1, pod1) > 0 && names_pod(name, 2, pod2) > 0);
    assert_true(names_snapshot_handle(name, 1, 1, trigger) > 0);
    assert_true(names_snapshot_policy(name, policy) > 0);
    assert_true(strlen(pod1) <= 63 && strlen(pod2) <= 63 && strlen(trigger) <= 63);

    apply_ws(name, "it-gpu-snap", 0, NULL);
    cJSON *ws = wait_state(name, "Running", 60000);
    assert_string_equal(str_at(ws, "status.podName"), pod1);
    cJSON_Delete(ws);

    set_paused(name, 1);
    ws = wait_state(name, "Paused", 90000);
    assert_string_equal(str_at(ws, "status.snapshot.attempt"), trigger);
    assert_string_equal(str_at(ws, "status.snapshot.phase"), "Ready");
    assert_string_equal(cond_field(ws, "SnapshotReady", "status"), "True");
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    const char *snap = str_at(ws, "status.snapshot.name");
    assert_non_null(snap);
    char snapshot[256];
    snprintf(snapshot, sizeof(snapshot), "%s", snap);
    cJSON_Delete(ws);
    print_message("  trigger %s, PodSnapshot %s\n", trigger, snapshot);
    char selector[NAMES_SIZE + 64];
    snprintf(selector, sizeof(selector), "gke-pod-snapshot-triggered-by=%s", trigger);
    assert_int_equal(count_objects("podsnapshots", selector), 1);
    assert_int_equal(trigger_exists(trigger), 1);
    char what[NAMES_SIZE + 64];
    snprintf(what, sizeof(what), "podsnapshotpolicy %s", policy);
    cJSON *pol = get_json(what);
    assert_non_null(pol);
    cJSON_Delete(pol);
    assert_int_equal(all_pods(name), 0);

    set_paused(name, 0);
    ws = wait_reason(name, "Restored", "FromSnapshot", 60000);
    assert_string_equal(str_at(ws, "status.state"), "Running");
    assert_string_equal(str_at(ws, "status.podName"), pod2);
    cJSON_Delete(ws);
    snprintf(what, sizeof(what), "pod %s", pod2);
    cJSON *pod = get_json(what);
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
                                         "annotations"),
        "podsnapshot.gke.io/ps-name");
    assert_true(cJSON_IsString(ann));
    assert_string_equal(ann->valuestring, snapshot);
    cJSON_Delete(pod);

    delete_ws(name);
    assert_true(wait_gone(name, 60000));
    snprintf(what, sizeof(what), "hibernator.dev/workspace=%s", name);
    uint64_t end = harness_now_ms() + 60000;
    int triggers = -1, snapshots = -1;
    do {
        if (triggers >= 0)
            usleep(250 * 1000);
        triggers = count_objects("podsnapshotmanualtriggers", what);
        snapshots = count_objects("podsnapshots", selector);
    } while ((triggers || snapshots) && harness_now_ms() < end);
    assert_int_equal(triggers, 0);
    assert_int_equal(snapshots, 0);
}

/* A fake GPU node of this test: one GPU of the given product (NVIDIA's
 * label, and GKE's cloud.google.com/gke-accelerator with GKE's name for the
 * same model), tainted so that only the fallback class's pods land on it. */
static void gpu_node(const char *name, const char *product, const char *gke_accelerator)
{
    assert_int_equal(
        harness_apply("apiVersion: v1\nkind: Node\n"
                      "metadata:\n  name: %s\n"
                      "  annotations: {kwok.x-k8s.io/node: fake}\n"
                      "  labels: {type: kwok-it, nvidia.com/gpu.product: %s,\n"
                      "    cloud.google.com/gke-accelerator: %s}\n"
                      "spec:\n  taints:\n"
                      "  - {key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}\n"
                      "  - {key: it-snapshot, value: only, effect: NoSchedule}\n"
                      "status:\n"
                      "  capacity: {cpu: '8', memory: 30Gi, pods: '110', nvidia.com/gpu: '1'}\n"
                      "  allocatable: {cpu: '8', memory: 30Gi, pods: '110', nvidia.com/gpu: '1'}\n",
                      name, product, gke_accelerator),
        0);
    assert_int_equal(
        harness_kubectl(NULL, "wait --for=condition=Ready node/%s --timeout=60s", name), 0);
}

static void delete_nodes(void)
{
    if (v100_node[0])
        harness_kubectl(NULL, "delete node %s --wait=false", v100_node);
    if (l4_node[0])
        harness_kubectl(NULL, "delete node %s --wait=false", l4_node);
    v100_node[0] = l4_node[0] = '\0';
}

/* status.history's newest record, or NULL. */
static const cJSON *newest_record(const cJSON *ws)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(ws, "status");
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "history"), 0);
}

/* The pod's spec or metadata member whose key has dots in it. */
static const char *pod_member(const cJSON *pod, const char *parent, const char *obj,
                              const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, parent), obj), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* status.accelerator.fallback: absent means false. */
static int fallback_of(const cJSON *ws)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "status"),
                                         "accelerator"),
        "fallback"));
}

static cJSON *current_pod(const cJSON *ws)
{
    char what[300];
    snprintf(what, sizeof(what), "pod %s", str_at(ws, "status.podName"));
    cJSON *pod = get_json(what);
    assert_non_null(pod);
    return pod;
}

/* A V100 class that falls back to an L4 after a 10 s wait for capacity. */
static void fallback_class(void)
{
    assert_int_equal(
        harness_apply(
            "apiVersion: hibernator.dev/v1alpha1\nkind: WorkspaceClass\n"
            "metadata: {name: it-gpu-fallback}\n"
            "spec:\n"
            "  images: {allowed: [\"registry.local/notebook:*\"], default: "
            "\"registry.local/notebook:v1\"}\n"
            "  accelerator: {resourceName: nvidia.com/gpu, count: 1, product: Tesla-V100, "
            "alternativeProducts: [NVIDIA-L4]}\n"
            "  tolerations:\n"
            "  - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}\n"
            "  - {key: it-snapshot, operator: Exists, effect: NoSchedule}\n"
            "  home: {size: 1Gi}\n"
            "  pause: {gracePeriodSeconds: 1}\n"
            "  resume: {capacityTimeout: 10s, onCapacityTimeout: FallBack}\n"
            "  snapshot: {backend: GKE, storageConfigName: it-snapshot, timeout: 60s}\n"),
        0);
}

static void test_capacity_fallback(void **state)
{
    (void)state;
    snprintf(v100_node, sizeof(v100_node), "it-snap-v100-%ld", (long)getpid());
    snprintf(l4_node, sizeof(l4_node), "it-snap-l4-%ld", (long)getpid());
    gpu_node(v100_node, "Tesla-V100", "nvidia-tesla-v100");
    gpu_node(l4_node, "NVIDIA-L4", "nvidia-l4");
    fallback_class();

    /* Running on the V100, paused with a snapshot of it. */
    apply_ws("fb", "it-gpu-fallback", 0, NULL);
    cJSON *ws = wait_state("fb", "Running", 60000);
    assert_string_equal(str_at(ws, "status.nodeName"), v100_node);
    assert_string_equal(str_at(ws, "status.accelerator.product"), "Tesla-V100");
    cJSON_Delete(ws);
    set_paused("fb", 1);
    ws = wait_state("fb", "Paused", 60000);
    assert_string_equal(str_at(ws, "status.snapshot.gpuProduct"), "Tesla-V100");
    cJSON_Delete(ws);

    /* No V100 to be had: the resume waits, then falls back to the L4. */
    assert_int_equal(harness_kubectl(NULL, "cordon %s", v100_node), 0);
    set_paused("fb", 0);
    ws = wait_state("fb", "WaitingForCapacity", 30000);
    cJSON_Delete(ws);
    ws = wait_reason("fb", "Restored", "FromCheckpoint", 60000);
    assert_non_null(strstr(cond_field(ws, "Restored", "message"), "capacity timeout (10s)"));
    cJSON_Delete(ws);
    ws = wait_state("fb", "Running", 60000);
    assert_string_equal(str_at(ws, "status.nodeName"), l4_node);
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromCheckpoint");
    assert_true(fallback_of(ws));
    cJSON *pod = current_pod(ws);
    assert_string_equal(
        pod_member(pod, "metadata", "annotations", "hibernator.dev/capacity-fallback"), "true");
    /* GKE's explicit bypass: no restore at all. */
    assert_string_equal(pod_member(pod, "metadata", "annotations", "podsnapshot.gke.io/ps-name"),
                        "");
    assert_null(pod_member(pod, "spec", "nodeSelector", "nvidia.com/gpu.product"));
    cJSON_Delete(pod);
    cJSON_Delete(ws);
    /* Which GPU it got comes from the node, read by the controller. */
    uint64_t deadline = harness_now_ms() + 30000;
    for (;;) {
        ws = ws_json("fb");
        const char *product = str_at(ws, "status.accelerator.product");
        if (product && strcmp(product, "NVIDIA-L4") == 0)
            break;
        if (harness_now_ms() > deadline)
            fail_msg("status.accelerator.product is %s, want NVIDIA-L4",
                     product ? product : "(none)");
        cJSON_Delete(ws);
        usleep(200 * 1000);
    }
    cJSON_Delete(ws);
    char *reasons = event_reasons("fb");
    char *r = strstr(reasons, "CapacityFallback,");
    assert_non_null(r);
    assert_null(strstr(r + 1, "CapacityFallback,")); /* once */
    free(reasons);

    /* Paused on the L4: the snapshot is the L4's. */
    set_paused("fb", 1);
    ws = wait_state("fb", "Paused", 60000);
    assert_string_equal(str_at(ws, "status.snapshot.gpuProduct"), "NVIDIA-L4");
    assert_string_equal(str_at(ws, "status.snapshot.nodeName"), l4_node);
    assert_false(fallback_of(ws));
    char snapshot[256];
    snprintf(snapshot, sizeof(snapshot), "%s", str_at(ws, "status.snapshot.name"));
    cJSON_Delete(ws);

    /* The resume restores it onto an L4, though the class asks for V100s. */
    set_paused("fb", 0);
    ws = wait_reason("fb", "Restored", "FromSnapshot", 60000);
    assert_string_equal(str_at(ws, "status.state"), "Running");
    assert_string_equal(str_at(ws, "status.nodeName"), l4_node);
    assert_string_equal(str_at(ws, "status.accelerator.product"), "NVIDIA-L4");
    assert_false(fallback_of(ws));
    pod = current_pod(ws);
    assert_string_equal(pod_member(pod, "spec", "nodeSelector", "nvidia.com/gpu.product"),
                        "NVIDIA-L4");
    assert_string_equal(pod_member(pod, "metadata", "annotations", "podsnapshot.gke.io/ps-name"),
                        snapshot);
    cJSON_Delete(pod);
    cJSON_Delete(ws);

    /* Paused again, then the L4 node leaves the cluster: the ledger says so. */
    set_paused("fb", 1);
    ws = wait_state("fb", "Paused", 60000);
    assert_string_equal(str_at(ws, "status.lastPause.nodeName"), l4_node);
    assert_null(str_at(ws, "status.lastPause.nodeRemovedAt"));
    cJSON_Delete(ws);
    assert_int_equal(harness_kubectl(NULL, "delete node %s --wait=true", l4_node), 0);
    uint64_t removed_by = harness_now_ms() + 60000;
    for (;;) {
        ws = ws_json("fb");
        const char *removed = ws ? str_at(ws, "status.lastPause.nodeRemovedAt") : NULL;
        if (removed && str_at(newest_record(ws), "nodeRemovedAt"))
            break;
        if (harness_now_ms() > removed_by)
            fail_msg("no status.lastPause.nodeRemovedAt after the node %s was deleted", l4_node);
        cJSON_Delete(ws);
        usleep(200 * 1000);
    }
    assert_string_equal(str_at(ws, "status.lastPause.nodeRemovedAt"),
                        str_at(newest_record(ws), "nodeRemovedAt"));
    cJSON_Delete(ws);
    l4_node[0] = '\0';

    delete_ws("fb");
    delete_nodes();
}

/* The policy's retention in GKE's format: one number, one unit. The API
 * server refuses anything else (GKE's pattern ^(\d+)\s*(y|mo|d|h|min)$). */
static void test_retention_format(void **state)
{
    (void)state;
    apply_ws("keep36", "it-cpu-snap-36h", 0, NULL);
    cJSON_Delete(wait_state("keep36", "Running", 60000));
    set_paused("keep36", 1);
    char *out = NULL;
    uint64_t end = harness_now_ms() + 20000;
    do {
        free(out);
        out = NULL;
        harness_kubectl(&out,
                        "-n %s get podsnapshotpolicies -l hibernator.dev/workspace=keep36 "
                        "-o jsonpath={.items[*].spec.retentionConfig.lastAccessTimeout}",
                        ns);
        if (out && *out)
            break;
        usleep(200 * 1000);
    } while (harness_now_ms() < end);
    if (!out || !*out) {
        cJSON *ws = ws_json("keep36");
        fail_msg("no policy for keep36; ActionFailed: %s",
                 cond_field(ws, "ActionFailed", "message")
                     ? cond_field(ws, "ActionFailed", "message")
                     : "(none)");
    }
    assert_string_equal(out, "36h");
    free(out);
    cJSON *ws = wait_state("keep36", "Paused", 60000);
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
    cJSON_Delete(ws);
}

/* GKE ends a trigger with Triggered=False/Error as well as /Failed: either
 * is a failure, seen at once rather than at the class's timeout (60 s). */
static void test_trigger_error(void **state)
{
    (void)state;
    simulator_set_mode("terr-1", "trigger-error");
    apply_ws("terr", "it-cpu-snap-nomem", 0, NULL);
    cJSON_Delete(wait_state("terr", "Running", 60000));
    set_paused("terr", 1);
    cJSON *ws = wait_reason("terr", "SnapshotReady", "Failed", 20000);
    print_message("  trigger Error: %s\n", str_at(ws, "status.snapshot.message"));
    assert_non_null(strstr(str_at(ws, "status.snapshot.message"), "injected"));
    cJSON_Delete(ws);
    ws = wait_state("terr", "Paused", 30000);
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshotFailed");
    cJSON_Delete(ws);
}

/* A checkpoint that hangs (never Ready, never failed) is ended by the
 * class's snapshot timeout. */
static void test_hang(void **state)
{
    (void)state;
    simulator_set_mode("hang-1", "hang");
    apply_ws("hang", "it-cpu-snap-8s", 0, NULL);
    cJSON_Delete(wait_state("hang", "Running", 60000));
    set_paused("hang", 1);
    cJSON *ws = wait_state("hang", "Paused", 60000);
    assert_string_equal(cond_field(ws, "SnapshotReady", "status"), "False");
    assert_string_equal(cond_field(ws, "SnapshotReady", "reason"), "Timeout");
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshotFailed");
    cJSON_Delete(ws);
}

/* A class naming GKE's accelerator label: the snapshot records GKE's product
 * value, and the resume is restored on a node GKE labels with it. */
static void test_gke_accelerator(void **state)
{
    (void)state;
    apply_ws("gacc", "it-gke-acc", 0, NULL);
    cJSON_Delete(wait_state("gacc", "Running", 60000));
    set_paused("gacc", 1);
    cJSON *ws = wait_state("gacc", "Paused", 60000);
    assert_string_equal(str_at(ws, "status.snapshot.phase"), "Ready");
    assert_string_equal(str_at(ws, "status.snapshot.gpuProduct"), "nvidia-tesla-t4");
    cJSON_Delete(ws);
    set_paused("gacc", 0);
    ws = wait_reason("gacc", "Restored", "FromSnapshot", 60000);
    char what[300], node[128];
    snprintf(what, sizeof(what), "pod %s", str_at(ws, "status.podName"));
    snprintf(node, sizeof(node), "node %s", str_at(ws, "status.nodeName"));
    cJSON_Delete(ws);
    cJSON *pod = get_json(what);
    assert_string_equal(pod_member(pod, "spec", "nodeSelector", "cloud.google.com/gke-accelerator"),
                        "nvidia-tesla-t4");
    cJSON_Delete(pod);
    cJSON *n = get_json(node);
    const cJSON *labels =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(n, "metadata"), "labels");
    const cJSON *acc = cJSON_GetObjectItemCaseSensitive(labels, "cloud.google.com/gke-accelerator");
    assert_true(cJSON_IsString(acc));
    assert_string_equal(acc->valuestring, "nvidia-tesla-t4");
    cJSON_Delete(n);
}

/* ---- restore compatibility: what GKE matches on besides the GPU ---------------- */

static char p100_a[64], p100_b[64];

/* A node of the test's own GPU model (Tesla-P100), with a machine type, a
 * node pool and a node version (kwok keeps the status it is created with). */
static void compat_node(const char *name, const char *type, const char *pool, const char *version)
{
    assert_int_equal(
        harness_apply(
            "apiVersion: v1\nkind: Node\n"
            "metadata:\n  name: %s\n"
            "  annotations: {kwok.x-k8s.io/node: fake}\n"
            "  labels: {type: kwok-it, it-snapshot-compat: \"true\",\n"
            "    nvidia.com/gpu.product: Tesla-P100,\n"
            "    cloud.google.com/gke-accelerator: nvidia-tesla-p100,\n"
            "    node.kubernetes.io/instance-type: %s, cloud.google.com/gke-nodepool: %s,\n"
            "    cloud.google.com/machine-family: n1}\n"
            "spec:\n  taints:\n"
            "  - {key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}\n"
            "  - {key: it-snapshot, value: only, effect: NoSchedule}\n"
            "status:\n"
            "  nodeInfo: {kubeletVersion: %s}\n"
            "  capacity: {cpu: '8', memory: 30Gi, pods: '110', nvidia.com/gpu: '1'}\n"
            "  allocatable: {cpu: '8', memory: 30Gi, pods: '110', nvidia.com/gpu: '1'}\n",
            name, type, pool, version),
        0);
    assert_int_equal(
        harness_kubectl(NULL, "wait --for=condition=Ready node/%s --timeout=60s", name), 0);
}

/*
 * GKE restores a snapshot only onto a node like the one it was taken on
 * (machine family and type, GPU model, driver and node version: llm-d's
 * guide). The snapshot records its node's; the restore is steered onto the
 * same machine type (a second P100 node of another type stays free) and
 * restored; after the node pool's upgrade (the node's version changed) the
 * paused workspace says before the resume that the memory cannot come
 * back, and the resume starts from files saying why.
 */
static void test_restore_compatibility(void **state)
{
    (void)state;
    /* Nodes an earlier run left (it failed half way) would count. */
    harness_kubectl(NULL, "delete nodes -l it-snapshot-compat=true --wait=true");
    snprintf(p100_a, sizeof(p100_a), "it-snap-p100a-%ld", (long)getpid());
    snprintf(p100_b, sizeof(p100_b), "it-snap-p100b-%ld", (long)getpid());
    compat_node(p100_a, "n1-standard-8", "pool-a", "v1.35.3-gke.1234000");
    assert_int_equal(
        harness_apply(
            "apiVersion: hibernator.dev/v1alpha1\nkind: WorkspaceClass\n"
            "metadata: {name: it-gpu-p100}\n"
            "spec:\n"
            "  images: {allowed: [\"registry.local/notebook:*\"], default: "
            "\"registry.local/notebook:v1\"}\n"
            "  accelerator: {resourceName: nvidia.com/gpu, count: 1, product: Tesla-P100}\n"
            "  tolerations:\n"
            "  - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}\n"
            "  - {key: it-snapshot, operator: Exists, effect: NoSchedule}\n"
            "  home: {size: 1Gi}\n"
            "  pause: {gracePeriodSeconds: 1}\n"
            "  snapshot: {backend: GKE, storageConfigName: it-snapshot, timeout: 60s}\n"),
        0);
    apply_ws("compat", "it-gpu-p100", 0, NULL);
    cJSON_Delete(wait_state("compat", "Running", 60000));
    set_paused("compat", 1);
    cJSON *ws = wait_state("compat", "Paused", 60000);
    assert_string_equal(str_at(ws, "status.snapshot.node.machineType"), "n1-standard-8");
    assert_string_equal(str_at(ws, "status.snapshot.node.machineFamily"), "n1");
    assert_string_equal(str_at(ws, "status.snapshot.node.nodePool"), "pool-a");
    assert_string_equal(str_at(ws, "status.snapshot.node.version"), "v1.35.3-gke.1234000");
    cJSON_Delete(ws);

    /* Another P100 node, of another machine type: the restore is not
     * steered there (GKE would cold-start it), but onto the first. */
    compat_node(p100_b, "n1-highmem-16", "pool-b", "v1.35.3-gke.1234000");
    set_paused("compat", 0);
    ws = wait_reason("compat", "Restored", "FromSnapshot", 60000);
    assert_string_equal(str_at(ws, "status.nodeName"), p100_a);
    cJSON *pod = current_pod(ws);
    assert_string_equal(pod_member(pod, "spec", "nodeSelector", "node.kubernetes.io/instance-type"),
                        "n1-standard-8");
    cJSON_Delete(pod);
    cJSON_Delete(ws);

    /* Paused again, then the pool is upgraded: the node runs another version. */
    set_paused("compat", 1);
    cJSON_Delete(wait_state("compat", "Paused", 60000));
    assert_int_equal(harness_kubectl(NULL,
                                     "patch node %s --subresource=status --type=merge -p "
                                     "'{\"status\":{\"nodeInfo\":{\"kubeletVersion\":"
                                     "\"v1.36.1-gke.500\"}}}'",
                                     p100_a),
                     0);
    assert_int_equal(harness_kubectl(NULL,
                                     "patch node %s --subresource=status --type=merge -p "
                                     "'{\"status\":{\"nodeInfo\":{\"kubeletVersion\":"
                                     "\"v1.36.1-gke.500\"}}}'",
                                     p100_b),
                     0);
    ws = wait_reason("compat", "SnapshotReady", "NotRestorable", 60000);
    const char *msg = cond_field(ws, "SnapshotReady", "message");
    print_message("  before the resume: %s\n", msg);
    assert_non_null(strstr(msg, "v1.35.3-gke.1234000"));
    assert_non_null(strstr(msg, "v1.36.1-gke.500"));
    cJSON_Delete(ws);
    char *reasons = event_reasons("compat");
    assert_non_null(strstr(reasons, "SnapshotNotRestorable,"));
    free(reasons);
    /* what-if says it too, before anybody resumes. */
    char *whatif = NULL;
    assert_int_equal(harness_sh(&whatif, "'%s' --kubeconfig '%s' -n %s what-if 2>&1",
                                KUBECTL_WORKSPACE_BIN, harness_kubeconfig(), ns),
                     0);
    print_message("  what-if: %s", strstr(whatif, "compat") ? strstr(whatif, "compat") : whatif);
    assert_non_null(strstr(whatif, "/compat: its paused snapshot cannot come back"));
    assert_non_null(strstr(whatif, "v1.36.1-gke.500"));
    free(whatif);
    set_paused("compat", 0);
    ws = wait_reason("compat", "Restored", "FromCheckpoint", 60000);
    assert_non_null(strstr(cond_field(ws, "Restored", "message"), "cannot come back"));
    pod = current_pod(ws);
    assert_string_equal(pod_member(pod, "metadata", "annotations", "podsnapshot.gke.io/ps-name"),
                        "");
    cJSON_Delete(pod);
    cJSON_Delete(ws);
    delete_ws("compat");
    harness_kubectl(NULL, "delete nodes -l it-snapshot-compat=true --wait=false");
    harness_kubectl(NULL, "delete workspaceclass it-gpu-p100 --wait=false");
}

/* ---- snapshot groups: no restore nobody asked for ---------------------------- */

/* The pod the status names has no PodRestored condition, also a few seconds
 * after it became Ready (GKE's condition may follow Ready). Returns it. */
static cJSON *assert_current_not_restored(const char *name)
{
    usleep(3000 * 1000);
    cJSON *ws = ws_json(name);
    cJSON *pod = current_pod(ws);
    const cJSON *c = condition(pod, "PodRestored");
    if (c)
        fail_msg("pod %s was restored by the backend though it was to start from files: %s",
                 str_at(ws, "status.podName"),
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "message")));
    cJSON_Delete(ws);
    return pod;
}

/* Running, paused with a Ready snapshot, resumed from it, paused again with
 * a failed checkpoint (PauseWithoutMemory): the first snapshot is kept. */
static void pause_fail_second(const char *name)
{
    char pod2[64];
    snprintf(pod2, sizeof(pod2), "%s-2", name);
    apply_ws(name, "it-cpu-snap-nomem", 0, NULL);
    cJSON_Delete(wait_state(name, "Running", 60000));
    set_paused(name, 1);
    cJSON_Delete(wait_state(name, "Paused", 60000));
    set_paused(name, 0);
    cJSON_Delete(wait_reason(name, "Restored", "FromSnapshot", 60000));
    cJSON_Delete(wait_state(name, "Running", 60000));
    simulator_set_mode(pod2, "checkpoint-failed");
    set_paused(name, 1);
    cJSON *ws = wait_state(name, "Paused", 60000);
    assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshotFailed");
    cJSON_Delete(ws);
    char sel[128];
    snprintf(sel, sizeof(sel), "gke-pod-snapshot-triggered-by=%s-p1-1", name);
    assert_int_equal(count_objects("podsnapshots", sel), 1); /* Ready, kept */
}

/* The resume after a failed snapshot starts from files: GKE must not lay the
 * older snapshot of the first pause over the newer files. */
static void test_no_restore_after_failed_snapshot(void **state)
{
    (void)state;
    pause_fail_second("grp");
    set_paused("grp", 0);
    cJSON *ws = wait_state("grp", "Running", 60000);
    assert_string_equal(str_at(ws, "status.podName"), "grp-3");
    cJSON_Delete(ws);
    cJSON *pod = assert_current_not_restored("grp");
    assert_string_equal(pod_member(pod, "metadata", "annotations", "podsnapshot.gke.io/ps-name"),
                        "");
    cJSON_Delete(pod);
    ws = ws_json("grp");
    assert_string_equal(cond_field(ws, "Restored", "reason"), "FromCheckpoint");
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromCheckpoint");
    cJSON_Delete(ws);
}

/* Every node cordoned (1) or not (0): a new pod waits unscheduled meanwhile. */
static void cordon_all(int on)
{
    char *nodes = NULL;
    assert_int_equal(harness_kubectl(&nodes, "get nodes -o name"), 0);
    for (char *line = strtok(nodes, "\n"); line; line = strtok(NULL, "\n"))
        assert_int_equal(harness_kubectl(NULL, "%s %s", on ? "cordon" : "uncordon", line), 0);
    free(nodes);
}

/* A pod GKE restores though nobody asked (here: a policy without its
 * grouping rules, as an older controller made them, and a pod without the
 * explicit bypass, as an older controller made it), crash-looping from the
 * old memory: reported as such, replaced, the snapshots it could come from
 * deleted, and the next pod starts from files. */
static void test_unasked_restore(void **state)
{
    (void)state;
    pause_fail_second("ua");
    assert_int_equal(
        harness_kubectl(NULL,
                        "-n %s patch podsnapshotpolicy ua-snapshots --type=merge -p "
                        "'{\"spec\":{\"snapshotGroupingRules\":null,\"selector\":{\"matchLabels\":"
                        "{\"hibernator.dev/workspace\":\"ua\"},\"matchExpressions\":null}}}'",
                        ns),
        0);
    simulator_set_mode("ua-3", "crash-loop");
    /* The pod waits unscheduled while it loses the bypass; GKE decides on
     * a restore once the pod runs. */
    cordon_all(1);
    set_paused("ua", 0);
    uint64_t end = harness_now_ms() + 60000;
    while (harness_kubectl(NULL, "-n %s get pod ua-3 2>/dev/null", ns) != 0 &&
           harness_now_ms() < end)
        usleep(200 * 1000);
    int removed = harness_kubectl(NULL, "-n %s annotate pod ua-3 podsnapshot.gke.io/ps-name-", ns);
    /* GKE would restore it only onto a node like the snapshot's: the
     * snapshot's own node is the one let free first. */
    char *origin = NULL;
    harness_kubectl(&origin,
                    "-n %s get podsnapshots -l gke-pod-snapshot-triggered-by=ua-p1-1 "
                    "-o jsonpath='{.items[0].metadata.annotations.podsnapshot\\.gke\\.io/"
                    "origin-node}'",
                    ns);
    int freed = origin && origin[0] ? harness_kubectl(NULL, "uncordon %s", origin) : -1;
    if (freed == 0) {
        end = harness_now_ms() + 60000;
        char *node = NULL;
        while (harness_now_ms() < end) {
            free(node);
            node = NULL;
            harness_kubectl(&node, "-n %s get pod ua-3 -o jsonpath={.spec.nodeName}", ns);
            if (node && node[0])
                break;
            usleep(200 * 1000);
        }
        free(node);
    }
    cordon_all(0);
    assert_int_equal(removed, 0);
    assert_int_equal(freed, 0);
    free(origin);
    /* UnwantedRestore lasts only until the replacement runs: its Event
     * says it. */
    cJSON *ws = wait_reason("ua", "Restored", "FromCheckpoint", 90000);
    cJSON_Delete(ws);
    char *said = NULL;
    harness_kubectl(&said,
                    "-n %s get events --field-selector involvedObject.name=ua,"
                    "involvedObject.kind=Workspace,reason=UnwantedRestore "
                    "-o jsonpath='{.items[*].message}'",
                    ns);
    assert_non_null(strstr(said ? said : "", "ua-3"));
    free(said);
    cJSON_Delete(wait_state("ua", "Running", 90000));
    cJSON_Delete(assert_current_not_restored("ua"));
    ws = ws_json("ua");
    assert_string_equal(cond_field(ws, "Restored", "reason"), "FromCheckpoint");
    cJSON_Delete(ws);
    char *reasons = event_reasons("ua");
    assert_non_null(strstr(reasons, "UnwantedRestore,"));
    free(reasons);
    assert_int_equal(count_objects("podsnapshots", "gke-pod-snapshot-triggered-by=ua-p1-1"), 0);
    assert_true(live_pods("ua") <= 1);
}

/* The capacity fallback's pod starts from files, also when it lands on the
 * snapshot's own GPU product (freed just as the wait ran out). */
static void test_fallback_not_restored(void **state)
{
    (void)state;
    snprintf(v100_node, sizeof(v100_node), "it-snap-v100-%ld", (long)getpid());
    snprintf(l4_node, sizeof(l4_node), "it-snap-l4-%ld", (long)getpid());
    gpu_node(v100_node, "Tesla-V100", "nvidia-tesla-v100");
    gpu_node(l4_node, "NVIDIA-L4", "nvidia-l4");
    fallback_class();
    apply_ws("fbr", "it-gpu-fallback", 0, NULL);
    cJSON_Delete(wait_state("fbr", "Running", 60000));
    set_paused("fbr", 1);
    cJSON *ws = wait_state("fbr", "Paused", 60000);
    assert_string_equal(str_at(ws, "status.snapshot.gpuProduct"), "Tesla-V100");
    cJSON_Delete(ws);
    assert_int_equal(harness_kubectl(NULL, "cordon %s", v100_node), 0);
    set_paused("fbr", 0);
    cJSON_Delete(wait_state("fbr", "WaitingForCapacity", 30000));
    /* The wait runs out while the controller is down and the V100 comes free. */
    controller_stop();
    usleep(11000 * 1000);
    assert_int_equal(
        harness_kubectl(NULL, "-n %s delete pod fbr-2 --grace-period=0 --force --wait=true", ns),
        0);
    assert_int_equal(harness_kubectl(NULL, "uncordon %s", v100_node), 0);
    controller_start(NULL);
    ws = wait_state("fbr", "Running", 60000);
    assert_true(fallback_of(ws));
    assert_string_equal(str_at(ws, "status.nodeName"), v100_node);
    cJSON_Delete(ws);
    cJSON *pod = assert_current_not_restored("fbr");
    assert_string_equal(
        pod_member(pod, "metadata", "annotations", "hibernator.dev/capacity-fallback"), "true");
    cJSON_Delete(pod);
    ws = ws_json("fbr");
    assert_string_equal(cond_field(ws, "Restored", "reason"), "FromCheckpoint");
    cJSON_Delete(ws);
    delete_ws("fbr");
    delete_nodes();
}

/* ---- a namespace deleted with its paused workspaces ---------------------------- */

/* One column of the namespace's objects of the resource, each item followed
 * by a newline (malloc'd; NULL: it cannot say). */
static char *column_in(const char *resource, const char *namespace, const char *field)
{
    char *out = NULL;
    int rc = harness_kubectl(&out,
                             "-n %s get %s -o jsonpath='{range .items[*]}{%s}{\"\\n\"}{end}' "
                             "2>/dev/null",
                             namespace, resource, field);
    if (rc != 0) {
        free(out);
        return NULL;
    }
    return out ? out : strdup("");
}

/* PodSnapshots whose spec.policyName names no policy of the namespace; -1:
 * the namespace cannot say (gone). *ret_snapshots: how many there are.
 * The policies are read first: nothing creates a PodSnapshot while the
 * namespace goes, so one listed after a policy was missing existed while it
 * was missing. The other order counts a PodSnapshot and its policy deleted
 * one after the other between the two reads. */
static int snapshots_without_policy(const char *namespace, int *ret_snapshots)
{
    char *pols = column_in("podsnapshotpolicies", namespace, ".metadata.name");
    char *snaps = column_in("podsnapshots", namespace, ".spec.policyName");
    int n = 0, bad = 0;
    if (snaps && pols) {
        for (char *line = strtok(snaps, "\n"); line; line = strtok(NULL, "\n")) {
            n++;
            char want[200];
            snprintf(want, sizeof(want), "%s\n", line);
            int found = strncmp(pols, want, strlen(want)) == 0;
            char with_nl[202];
            snprintf(with_nl, sizeof(with_nl), "\n%s", want);
            found = found || strstr(pols, with_nl) != NULL;
            bad += !found;
        }
    }
    int ok = snaps && pols;
    free(snaps);
    free(pols);
    *ret_snapshots = n;
    return ok ? bad : -1;
}

/*
 * The namespace controller deletes every object of a namespace at once; GKE's
 * finalizer on each PodSnapshot frees its files through the policy, so the
 * policies (which carry the controller's finalizer) must outlive the
 * PodSnapshots. Sampled from outside while the namespace goes: never a
 * PodSnapshot without a policy; at the end the simulator recorded no file
 * left in the bucket.
 */
static char *home_ns; /* the group's namespace while a test uses another */

/* The group's namespace back, and the simulator acting in it: also after a
 * failed test, so the next one does not run in a namespace that is gone. */
static int back_home(void **state)
{
    (void)state;
    if (home_ns) {
        free(ns);
        ns = home_ns;
        home_ns = NULL;
        simulator_stop();
        simulator_start("3s", "6s");
    }
    return 0;
}

static void test_namespace_deleted(void **state)
{
    (void)state;
    home_ns = ns;
    ns = harness_namespace("it-snap-nsdel");
    /* The simulator acts in one namespace: this test's, meanwhile. */
    simulator_stop();
    simulator_start("3s", "6s");
    static const char *const names[] = {"nd-1", "nd-2", "nd-3"};
    run_then_pause(names, 3, "it-cpu-snap");
    for (int i = 0; i < 3; i++) {
        cJSON *ws = ws_json(names[i]);
        assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
        cJSON_Delete(ws);
        char *fin = NULL;
        harness_kubectl(
            &fin, "-n %s get podsnapshotpolicy %s-snapshots -o jsonpath={.metadata.finalizers}", ns,
            names[i]);
        assert_non_null(strstr(fin ? fin : "", "hibernator.dev/podsnapshots"));
        free(fin);
    }
    char *uids = NULL;
    assert_int_equal(
        harness_kubectl(&uids, "-n %s get podsnapshots -o jsonpath='{.items[*].metadata.uid}'", ns),
        0);
    assert_int_equal(harness_kubectl(NULL, "delete namespace %s --wait=false", ns), 0);
    uint64_t t0 = harness_now_ms(), end = t0 + 180000, last_snapshot_ms = 0, policies_gone_ms = 0;
    int samples = 0, bad = 0;
    while (harness_now_ms() < end) {
        int snaps = 0, orphans = snapshots_without_policy(ns, &snaps);
        if (orphans < 0)
            break; /* the namespace is gone */
        samples++;
        if (snaps > 0)
            last_snapshot_ms = harness_now_ms();
        char *pols = column_in("podsnapshotpolicies", ns, ".metadata.name");
        if (pols && !pols[0] && !policies_gone_ms)
            policies_gone_ms = harness_now_ms();
        free(pols);
        bad += orphans > 0;
        if (harness_kubectl(NULL, "get namespace %s", ns) != 0)
            break;
        usleep(250 * 1000);
    }
    assert_int_not_equal(harness_kubectl(NULL, "get namespace %s", ns), 0);
    print_message("  namespace gone after %.1f s; %d samples; last PodSnapshot seen at %.1f s, "
                  "policies all gone at %.1f s; samples with a PodSnapshot whose policy was "
                  "gone: %d\n",
                  (double)(harness_now_ms() - t0) / 1000.0, samples,
                  last_snapshot_ms ? (double)(last_snapshot_ms - t0) / 1000.0 : 0.0,
                  policies_gone_ms ? (double)(policies_gone_ms - t0) / 1000.0 : 0.0, bad);
    assert_int_equal(bad, 0);
    /* What the simulator left in the bucket for these PodSnapshots. */
    char *ann = NULL;
    harness_kubectl(&ann,
                    "get podsnapshotstorageconfig it-snapshot -o jsonpath={.metadata.annotations}");
    int orphaned = 0, n = 0;
    for (char *u = strtok(uids ? uids : "", " '"); u; u = strtok(NULL, " '")) {
        n++;
        orphaned += ann && strstr(ann, u) != NULL;
    }
    print_message("  %d PodSnapshots; files left in the bucket: %d\n", n, orphaned);
    assert_int_equal(n, 3);
    assert_int_equal(orphaned, 0);
    free(ann);
    free(uids);
}

/* ---- the policy's lifecycle -------------------------------------------------- */

static int policy_exists(const char *policy)
{
    char *out = NULL;
    int rc = harness_kubectl(&out, "-n %s get podsnapshotpolicies %s --ignore-not-found -o name",
                             ns, policy);
    int n = rc == 0 ? out && out[0] != '\0' : -1;
    free(out);
    return n;
}

static int wait_policy_gone(const char *policy, uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    while (harness_now_ms() < end) {
        if (policy_exists(policy) == 0)
            return 1;
        usleep(250 * 1000);
    }
    return 0;
}

/* The name of the PodSnapshot a trigger made. */
static void snapshot_name(const char *trigger, char out[128])
{
    char *o = NULL;
    harness_kubectl(&o,
                    "-n %s get podsnapshots -l gke-pod-snapshot-triggered-by=%s "
                    "-o jsonpath={.items[0].metadata.name}",
                    ns, trigger);
    snprintf(out, 128, "%s", o ? o : "");
    free(o);
    assert_true(out[0] != '\0');
}

static void release_finalizer(const char *snapshot)
{
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s patch podsnapshot %s --type=merge "
                                     "-p '{\"metadata\":{\"finalizers\":null}}'",
                                     ns, snapshot),
                     0);
}

/* GKE's finalizer finds the bucket through the policy: a deleted Workspace's
 * policy stays until its last PodSnapshot is gone, then goes; also when that
 * happens while the controller is down. It has no owner reference. */
static void test_policy_outlives_snapshots(void **state)
{
    (void)state;
    const char *names[] = {"pol", "polr"};
    char snaps[2][128];
    for (int i = 0; i < 2; i++) {
        char pod[64];
        snprintf(pod, sizeof(pod), "%s-1", names[i]);
        simulator_set_mode(pod, "stuck-finalizer");
        apply_ws(names[i], "it-cpu-snap", 0, NULL);
    }
    for (int i = 0; i < 2; i++) {
        cJSON_Delete(wait_state(names[i], "Running", 60000));
        set_paused(names[i], 1);
    }
    for (int i = 0; i < 2; i++) {
        char trigger[64];
        cJSON_Delete(wait_state(names[i], "Paused", 60000));
        snprintf(trigger, sizeof(trigger), "%s-p1-1", names[i]);
        snapshot_name(trigger, snaps[i]);
    }
    char *refs = NULL;
    harness_kubectl(&refs,
                    "-n %s get podsnapshotpolicy pol-snapshots "
                    "-o jsonpath={.metadata.ownerReferences}",
                    ns);
    assert_string_equal(refs ? refs : "", "");
    free(refs);
    delete_ws("pol");
    delete_ws("polr");
    assert_true(wait_gone("pol", 60000));
    assert_true(wait_gone("polr", 60000));
    usleep(3000 * 1000);
    assert_int_equal(policy_exists("pol-snapshots"), 1);
    assert_int_equal(policy_exists("polr-snapshots"), 1);

    /* The last PodSnapshot goes: then the policy. */
    release_finalizer(snaps[0]);
    assert_true(wait_policy_gone("pol-snapshots", 30000));
    assert_int_equal(policy_exists("polr-snapshots"), 1);

    /* Gone while the controller is down: the policy goes once it is back. */
    controller_stop();
    release_finalizer(snaps[1]);
    char what[200];
    snprintf(what, sizeof(what), "podsnapshot/%s", snaps[1]);
    assert_int_equal(harness_kubectl(NULL, "-n %s wait --for=delete %s --timeout=30s", ns, what),
                     0);
    controller_start(NULL);
    assert_true(wait_policy_gone("polr-snapshots", 30000));

    /* The class goes first, then the Workspace: the policy still outlives
     * the PodSnapshot that names it. */
    char snap_c[128];
    apply_class("it-polc", "  snapshot: {backend: GKE, storageConfigName: it-snapshot, "
                           "timeout: 60s}\n");
    simulator_set_mode("polc-1", "stuck-finalizer");
    apply_ws("polc", "it-polc", 0, NULL);
    cJSON_Delete(wait_state("polc", "Running", 60000));
    set_paused("polc", 1);
    cJSON_Delete(wait_state("polc", "Paused", 60000));
    snapshot_name("polc-p1-1", snap_c);
    assert_int_equal(harness_kubectl(NULL, "delete wsc it-polc --wait=true"), 0);
    delete_ws("polc");
    assert_true(wait_gone("polc", 60000));
    usleep(3000 * 1000);
    assert_int_equal(policy_exists("polc-snapshots"), 1);
    release_finalizer(snap_c);
    assert_true(wait_policy_gone("polc-snapshots", 30000));
    print_message("  the class deleted first: the policy went after its PodSnapshot\n");
}

/* ---- set-up ------------------------------------------------------------------ */

static int clean_slate(void **state)
{
    (void)state;
    watch_stop();
    cordon_all(0); /* a test that failed half way may have left them cordoned */
    delete_all_workspaces(60);
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    it_deploy("it-snapshot");
    install_snapshot_crds("it-snapshot");
    ns = harness_namespace("it-snapshot");
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
    snprintf(s, sizeof(s), snap, ", lastAccessTimeout: 36h");
    apply_class("it-cpu-snap-36h", s);
    apply_class("it-cpu-snap-8s",
                "  snapshot: {backend: GKE, storageConfigName: it-snapshot, timeout: 8s, "
                "retryAfter: 10m, onFailure: PauseWithoutMemory}\n");
    snprintf(s, sizeof(s), snap, "");
    snprintf(extra, sizeof(extra),
             "  accelerator: {resourceName: nvidia.com/gpu, count: 1, "
             "productLabel: cloud.google.com/gke-accelerator, product: nvidia-tesla-t4}\n%s",
             s);
    apply_class("it-gke-acc", extra);
    stand_in_start(&app_ok);
    stand_in_start(&app_hang);
    stand_in_mode(&app_hang, "{\"delayMs\":600000}");
    snprintf(s, sizeof(s), snap, "");
    snprintf(extra, sizeof(extra),
             "%s  checkpoint: {request: {url: 'http://127.0.0.1:%d/{workspace}/checkpoint', "
             "timeout: 10s}}\n",
             s, app_ok.port);
    apply_class("it-cpu-ckpt", extra);
    snprintf(extra, sizeof(extra),
             "%s  checkpoint: {request: {url: 'http://127.0.0.1:%d/{workspace}/checkpoint', "
             "method: PUT, timeout: 2s}}\n",
             s, app_hang.port);
    apply_class("it-cpu-ckpt-hang", extra);
    snprintf(extra, sizeof(extra),
             "%s  checkpoint: {request: {url: 'http://127.0.0.1:%d/{workspace}/checkpoint', "
             "method: PUT, timeout: 30s}}\n",
             s, app_hang.port);
    apply_class("it-cpu-ckpt-slow", extra);
    /* GKE's finalizer holds a deleted PodSnapshot for 6 s: long enough to
     * see, a few times, that its trigger waits for it. */
    simulator_start("3s", "6s");
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    delete_nodes();
    app_stop();
    simulator_stop();
    stand_in_stop(&app_ok);
    stand_in_stop(&app_hang);
    watch_stop();
    harness_namespace_delete(ns);
    it_show_logs();
    free(ns);
    return 0;
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_gpu_cycle, clean_slate),
        cmocka_unit_test_setup(test_checkpoint_before_snapshot, clean_slate),
        cmocka_unit_test_setup(test_no_write_after_snapshot, clean_slate),
        cmocka_unit_test_setup(test_checkpoint_hangs, clean_slate),
        cmocka_unit_test_setup(test_unpause_while_checkpointing, clean_slate),
        cmocka_unit_test_setup(test_checkpoint_failed, clean_slate),
        cmocka_unit_test_setup(test_cold_start_and_crash_loop, clean_slate),
        cmocka_unit_test_setup(test_restore_check, clean_slate),
        cmocka_unit_test_setup(test_crash_points, clean_slate),
        cmocka_unit_test_setup(test_crash_after_delete, clean_slate),
        cmocka_unit_test_setup(test_crash_then_late_return, clean_slate),
        cmocka_unit_test_setup(test_class_changes, clean_slate),
        cmocka_unit_test_setup(test_crash_then_class_changed, clean_slate),
        cmocka_unit_test_setup(test_capacity_fallback, clean_slate),
        cmocka_unit_test_setup(test_delete_leaves_nothing, clean_slate),
        cmocka_unit_test_setup(test_longest_name, clean_slate),
        cmocka_unit_test_setup(test_retention_format, clean_slate),
        cmocka_unit_test_setup(test_trigger_error, clean_slate),
        cmocka_unit_test_setup(test_hang, clean_slate),
        cmocka_unit_test_setup(test_gke_accelerator, clean_slate),
        cmocka_unit_test_setup(test_no_restore_after_failed_snapshot, clean_slate),
        cmocka_unit_test_setup(test_unasked_restore, clean_slate),
        cmocka_unit_test_setup(test_fallback_not_restored, clean_slate),
        cmocka_unit_test_setup(test_policy_outlives_snapshots, clean_slate),
        cmocka_unit_test_setup_teardown(test_namespace_deleted, clean_slate, back_home),
        cmocka_unit_test_setup(test_restore_compatibility, clean_slate),
    };
    /* IT_ONLY=<pattern>: run only the tests whose names match. */
    if (getenv("IT_ONLY"))
        cmocka_set_test_filter(getenv("IT_ONLY"));
    return cmocka_run_group_tests_name("pod snapshots", tests, group_setup, group_teardown);
}
