/*
 * A real Jupyter notebook on the local cluster's real node (label realnode):
 * the image hibernator.local/notebook:dev (deploy/local/images/notebook.sh),
 * a class whose pods tolerate the real node's taint, the home on a hostPath
 * volume of the default StorageClass, and the controller built from this
 * tree (--namespace=the test's) probing Jupyter Server through the pod IP
 * with the token of the class's Secret.
 *
 *   - the pod is Ready on the real node; ActivityProbe=True; Jupyter answers
 *     /api/status with the token and refuses another (403); a workspace
 *     whose server runs with another token is ActivityProbe=False
 *     (unauthorized), Idle=Unknown/ProbeFailed, and never paused;
 *   - the home is written by the server as a non-root user;
 *   - a kernel busy in time.sleep with no browser attached (started through
 *     the REST API, the cell sent with jupyter_client inside the pod) keeps
 *     the workspace running past its idle time, Idle=False/Active;
 *   - once the cell is interrupted, the pause is announced (IdleWarning) and
 *     carried out on time: idle-after after the kernel went idle, within one
 *     probe interval and a margin, although another kernel, started and
 *     never used, is still "starting" as Jupyter reports it;
 *   - a resume starts a new pod on the same home, and its Jupyter Server
 *     answers /api/status with the token and still has the file.
 *
 * Needs HIBERNATOR_REAL_NODE (the cluster's env with --real-node) and the
 * image imported into the node's containerd (deploy/local/images.sh import
 * notebook, or by hand, docs/local-cluster.md).
 */
#include <curl/curl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "util/timefmt.h"
#include "workspaces.h"

#define IMAGE "hibernator.local/notebook:dev"
#define IDLE_AFTER_S 20
#define WARN_BEFORE_S 5
#define INTERVAL_S 2
/* How late a pause may come after its time: a probe round (interval and
 * timeout) and the write, on a loaded machine. */
#define PAUSE_MARGIN_S 4
/* Scheduling, the hostPath volume, the container and Jupyter's start. */
#define START_TIMEOUT_MS (180 * 1000)
#define RUNTIME_DIR "/home/jovyan/.local/share/jupyter/runtime"

static char unused_kernel[64]; /* started, never used */
static char token[33];         /* the class's Secret for "nb" */
static char other_token[33];   /* what "wrong"'s server runs with instead */
static char cls[128];
static char first_pod[128], first_uid[64];
static int64_t nb_created_ms;

/* ---- HTTP to the pod --------------------------------------------------------- */

struct body {
    char *data;
    size_t len;
};

static size_t collect(char *p, size_t size, size_t n, void *data)
{
    struct body *b = data;
    size_t add = size * n;
    if (b->len + add > (1 << 20))
        return 0;
    char *grown = realloc(b->data, b->len + add + 1);
    if (!grown)
        return 0;
    memcpy(grown + b->len, p, add);
    b->data = grown;
    b->len += add;
    b->data[b->len] = '\0';
    return add;
}

/* A request to Jupyter at ip:8888 with tok (none when NULL); returns the
 * HTTP status (0 when nothing answered) and the body in *out when asked. */
static long jupyter_call(const char *method, const char *ip, const char *path, const char *tok,
                         const char *json, char **out)
{
    char url[512], auth[128];
    snprintf(url, sizeof(url), "http://%s:8888%s", ip, path);
    snprintf(auth, sizeof(auth), "Authorization: token %s", tok ? tok : "");
    struct body b = {0};
    CURL *c = curl_easy_init();
    assert_non_null(c);
    struct curl_slist *h = tok ? curl_slist_append(NULL, auth) : NULL;
    if (json)
        h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (json)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (out)
        *out = b.data ? b.data : strdup("");
    else
        free(b.data);
    return code;
}

static long jupyter_get(const char *ip, const char *path, const char *tok, char **out)
{
    return jupyter_call("GET", ip, path, tok, NULL, out);
}

/* The execution_state of kernel id as Jupyter reports it ("" if none). */
static void kernel_state(const char *ip, const char *id, char *state, size_t size)
{
    char path[128], *body = NULL;
    /* no_track_activity: the test's reading is not the user's activity. */
    snprintf(path, sizeof(path), "/api/kernels/%s?no_track_activity=1", id);
    state[0] = '\0';
    if (jupyter_get(ip, path, token, &body) == 200) {
        cJSON *k = cJSON_Parse(body);
        const char *s = k ? str_at(k, "execution_state") : NULL;
        snprintf(state, size, "%s", s ? s : "");
        cJSON_Delete(k);
    }
    free(body);
}

/* ---- the cluster ------------------------------------------------------------- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t time_at(const cJSON *o, const char *path)
{
    const char *s = str_at(o, path);
    int64_t ms = 0;
    return s && timefmt_parse_rfc3339(s, &ms) == 0 ? ms : 0;
}

static int64_t annotation_time(const cJSON *ws, const char *key)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "metadata"),
                                         "annotations"),
        key);
    int64_t ms = 0;
    return cJSON_IsString(a) && timefmt_parse_rfc3339(a->valuestring, &ms) == 0 ? ms : 0;
}

static void random_hex(char *out, size_t bytes)
{
    FILE *f = fopen("/dev/urandom", "r");
    assert_non_null(f);
    unsigned char raw[64];
    assert_true(bytes <= sizeof(raw));
    assert_int_equal(fread(raw, 1, bytes, f), bytes);
    fclose(f);
    for (size_t i = 0; i < bytes; i++)
        sprintf(out + 2 * i, "%02x", raw[i]);
}

/* The workspace's current pod, Ready on the real node: fills its IP, name
 * and uid; fails the test otherwise. */
static void ready_pod(const char *name, char *ip, size_t ip_size, char *pod, size_t pod_size,
                      char *uid, size_t uid_size)
{
    cJSON *ws = ws_json(name);
    assert_non_null(ws);
    const char *p = str_at(ws, "status.podName");
    assert_non_null(p);
    snprintf(pod, pod_size, "%s", p);
    cJSON_Delete(ws);

    char what[200];
    snprintf(what, sizeof(what), "pod %s", pod);
    uint64_t end = harness_now_ms() + START_TIMEOUT_MS;
    for (;;) {
        cJSON *j = get_json(what);
        const char *ready = NULL;
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                                  cJSON_GetObjectItemCaseSensitive(j, "status"), "conditions"))
        {
            const char *t = str_at(c, "type");
            if (t && strcmp(t, "Ready") == 0)
                ready = str_at(c, "status");
        }
        if (ready && strcmp(ready, "True") == 0) {
            assert_string_equal(str_at(j, "spec.nodeName"), getenv("HIBERNATOR_REAL_NODE"));
            snprintf(ip, ip_size, "%s", str_at(j, "status.podIP"));
            snprintf(uid, uid_size, "%s", str_at(j, "metadata.uid"));
            cJSON_Delete(j);
            return;
        }
        if (harness_now_ms() > end) {
            char *out = NULL;
            harness_kubectl(&out, "-n %s describe pod %s", ns, pod);
            print_message("%s\n", out ? out : "");
            free(out);
            fail_msg("pod %s is not Ready on the real node", pod);
        }
        cJSON_Delete(j);
        usleep(500 * 1000);
    }
}

/* Waits until Jupyter at ip answers /api/status with the token. */
static void wait_jupyter(const char *ip)
{
    uint64_t end = harness_now_ms() + 60000;
    while (harness_now_ms() < end && jupyter_get(ip, "/api/status", token, NULL) != 200)
        usleep(300 * 1000);
    char *body = NULL;
    assert_int_equal(jupyter_get(ip, "/api/status", token, &body), 200);
    cJSON *st = cJSON_Parse(body);
    assert_non_null(st);
    assert_non_null(str_at(st, "last_activity"));
    assert_non_null(str_at(st, "started"));
    assert_true(num_at(st, "connections") >= 0);
    cJSON_Delete(st);
    free(body);
}

/* Waits until the pod is gone; returns whether it went. */
static int wait_pod_gone(const char *pod, uint64_t timeout_ms)
{
    char what[200];
    snprintf(what, sizeof(what), "pod %s", pod);
    uint64_t end = harness_now_ms() + timeout_ms;
    while (harness_now_ms() < end) {
        cJSON *j = get_json(what);
        if (!j)
            return 1;
        cJSON_Delete(j);
        usleep(300 * 1000);
    }
    return 0;
}

static void assert_running_unpaused(const char *name)
{
    cJSON *ws = ws_json(name);
    assert_non_null(ws);
    assert_string_equal(str_at(ws, "status.state"), "Running");
    assert_false(cJSON_IsTrue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "spec"), "paused")));
    assert_int_equal(annotation_time(ws, "hibernator.dev/auto-paused-at"), 0);
    cJSON_Delete(ws);
}

/* ---- tests ------------------------------------------------------------------- */

/* The pod on the real node, probed through its IP with the class's token. */
static void test_probe_through_pod_ip(void **state)
{
    (void)state;
    char extra[256];
    nb_created_ms = now_ms();
    apply_ws("nb", cls, 0, NULL);
    /* This one's server runs with a token of its own, not the Secret's. */
    snprintf(extra, sizeof(extra), "  env: [{name: JUPYTER_TOKEN, value: \"%s\"}]\n", other_token);
    apply_ws("wrong", cls, 0, extra);

    cJSON_Delete(wait_state("nb", "Running", START_TIMEOUT_MS));
    char ip[64];
    ready_pod("nb", ip, sizeof(ip), first_pod, sizeof(first_pod), first_uid, sizeof(first_uid));
    print_message("  nb: pod %s at %s on %s, %.1f s after the Workspace\n", first_pod, ip,
                  getenv("HIBERNATOR_REAL_NODE"), (now_ms() - nb_created_ms) / 1000.0);
    wait_jupyter(ip);

    /* Jupyter itself refuses a wrong token, and no token. */
    assert_int_equal(jupyter_get(ip, "/api/status", other_token, NULL), 403);
    assert_int_equal(jupyter_get(ip, "/api/kernels", NULL, NULL), 403);

    /* The controller reached it. */
    cJSON *ws = wait_reason("nb", "ActivityProbe", "Succeeded", 30000);
    assert_string_equal(cond_field(ws, "ActivityProbe", "status"), "True");
    assert_string_equal(str_at(ws, "status.activity.lastProbeResult"), "Idle");
    cJSON_Delete(ws);

    /* The server writes its home (a hostPath volume) as a non-root user. */
    assert_int_equal(jupyter_call("PUT", ip, "/api/contents/marker.txt", token,
                                  "{\"type\":\"file\",\"format\":\"text\","
                                  "\"content\":\"written before the pause\"}",
                                  NULL),
                     201);
    char *out = NULL;
    assert_int_equal(harness_kubectl(&out,
                                     "-n %s exec %s -c workspace -- stat -c %%u:%%g "
                                     "/home/jovyan/marker.txt",
                                     ns, first_pod),
                     0);
    assert_string_equal(out, "1000:100\n");
    free(out);
    out = NULL;
    /* PID 1 is the server itself (the start script execs it). */
    assert_int_equal(harness_kubectl(&out,
                                     "-n %s exec %s -c workspace -- sh -c "
                                     "'cat /proc/1/comm; stat -c %%u:%%g /proc/1'",
                                     ns, first_pod),
                     0);
    assert_string_equal(out, "python3\n1000:100\n");
    free(out);

    /* A kernel started through the REST API that nothing ever talks to:
     * Jupyter Server reports it "starting" for as long as it lives (it
     * learns a kernel's state only from the kernel's status messages, and an
     * unused kernel sends none the server hears), an idle kernel all the
     * same. */
    char *created = NULL;
    assert_int_equal(
        jupyter_call("POST", ip, "/api/kernels", token, "{\"name\":\"python3\"}", &created), 201);
    cJSON *k = cJSON_Parse(created);
    free(created);
    assert_non_null(k);
    snprintf(unused_kernel, sizeof(unused_kernel), "%s", str_at(k, "id"));
    assert_string_equal(str_at(k, "execution_state"), "starting");
    cJSON_Delete(k);

    /* The other one: Jupyter answers 403 to the Secret's token, which the
     * controller reports as a failure, not as idleness. */
    cJSON_Delete(wait_state("wrong", "Running", START_TIMEOUT_MS));
    char wip[64], wpod[128], wuid[64];
    ready_pod("wrong", wip, sizeof(wip), wpod, sizeof(wpod), wuid, sizeof(wuid));
    uint64_t end = harness_now_ms() + 60000;
    while (harness_now_ms() < end && jupyter_get(wip, "/api/status", other_token, NULL) != 200)
        usleep(300 * 1000);
    assert_int_equal(jupyter_get(wip, "/api/status", other_token, NULL), 200);
    assert_int_equal(jupyter_get(wip, "/api/status", token, NULL), 403);
    ws = wait_reason("wrong", "ActivityProbe", "Failed", 30000);
    assert_string_equal(cond_field(ws, "ActivityProbe", "status"), "False");
    assert_non_null(strstr(cond_field(ws, "ActivityProbe", "message"), "unauthorized"));
    assert_string_equal(cond_field(ws, "Idle", "status"), "Unknown");
    assert_string_equal(cond_field(ws, "Idle", "reason"), "ProbeFailed");
    cJSON_Delete(ws);
}

static char kernel_id[64];
static int64_t idle_ms; /* when the kernel went idle again */

/* A long cell with no browser attached keeps the workspace; its end starts
 * the idle clock, and the announced pause comes on time. */
static void test_busy_kernel_then_idle_pause(void **state)
{
    (void)state;
    char ip[64], pod[128], uid[64];
    ready_pod("nb", ip, sizeof(ip), pod, sizeof(pod), uid, sizeof(uid));

    /* The user opens the notebook's folder (API activity, now): the pause
     * cannot come before the cell is running. */
    assert_int_equal(jupyter_get(ip, "/api/contents", token, NULL), 200);

    /* tests/tools/jupyter_busy.py inside the pod: a kernel through the REST
     * API, the cell through jupyter_client, no reply awaited. */
    char *out = NULL;
    int64_t t0 = now_ms();
    assert_int_equal(harness_kubectl(&out,
                                     "-n %s exec -i %s -c workspace -- python3 - "
                                     "http://127.0.0.1:8888 %s " RUNTIME_DIR " 600 < '%s'",
                                     ns, pod, token, SOURCE_DIR "/tests/tools/jupyter_busy.py"),
                     0);
    snprintf(kernel_id, sizeof(kernel_id), "%.*s", (int)strcspn(out, "\n"), out);
    free(out);
    assert_true(strlen(kernel_id) > 0);
    char st[32];
    kernel_state(ip, kernel_id, st, sizeof(st));
    assert_string_equal(st, "busy");
    int64_t busy_ms = now_ms();
    print_message("  nb: kernel busy in time.sleep(600) %.1f s after the call, %.1f s after the "
                  "Workspace\n",
                  (busy_ms - t0) / 1000.0, (busy_ms - nb_created_ms) / 1000.0);
    /* No client of the server's own: the kernel is busy with no browser. */
    char *body = NULL;
    assert_int_equal(jupyter_get(ip, "/api/kernels?no_track_activity=1", token, &body), 200);
    cJSON *ks = cJSON_Parse(body);
    free(body);
    assert_int_equal(cJSON_GetArraySize(ks), 2);
    const cJSON *kernel;
    cJSON_ArrayForEach(kernel, ks)
    {
        int busy = strcmp(str_at(kernel, "id"), kernel_id) == 0;
        assert_string_equal(str_at(kernel, "execution_state"), busy ? "busy" : "starting");
        assert_int_equal(num_at(kernel, "connections"), 0);
    }
    cJSON_Delete(ks);

    /* Seen busy, and kept past its idle time (and past any pause announced
     * before the kernel started). */
    cJSON *ws = wait_reason("nb", "Idle", "Active", 3 * INTERVAL_S * 1000 + 2000);
    cJSON_Delete(ws);
    int64_t hold_until = busy_ms + (IDLE_AFTER_S + INTERVAL_S + PAUSE_MARGIN_S) * 1000;
    if (hold_until < nb_created_ms + (IDLE_AFTER_S + INTERVAL_S + PAUSE_MARGIN_S) * 1000)
        hold_until = nb_created_ms + (IDLE_AFTER_S + INTERVAL_S + PAUSE_MARGIN_S) * 1000;
    while (now_ms() < hold_until) {
        ws = ws_json("nb");
        assert_string_equal(str_at(ws, "status.state"), "Running");
        assert_string_equal(cond_field(ws, "Idle", "status"), "False");
        cJSON_Delete(ws);
        usleep(1000 * 1000);
    }
    ws = ws_json("nb");
    assert_string_equal(cond_field(ws, "Idle", "reason"), "Active");
    assert_string_equal(str_at(ws, "status.activity.lastProbeResult"), "Active");
    assert_string_equal(str_at(ws, "status.activity.lastActivitySource"), "jupyter");
    assert_null(str_at(ws, "status.activity.pauseAt"));
    cJSON_Delete(ws);
    assert_running_unpaused("nb");
    kernel_state(ip, kernel_id, st, sizeof(st));
    assert_string_equal(st, "busy");

    /* Interrupt the cell: the kernel goes idle, the idle clock starts. */
    char path[128];
    snprintf(path, sizeof(path), "/api/kernels/%s/interrupt", kernel_id);
    assert_int_equal(jupyter_call("POST", ip, path, token, "{}", NULL), 204);
    uint64_t end = harness_now_ms() + 30000;
    do {
        kernel_state(ip, kernel_id, st, sizeof(st));
        if (strcmp(st, "idle") == 0)
            break;
        usleep(100 * 1000);
    } while (harness_now_ms() < end);
    assert_string_equal(st, "idle");
    idle_ms = now_ms();
    /* The unused kernel still "starting": it must not hold the pause off. */
    kernel_state(ip, unused_kernel, st, sizeof(st));
    assert_string_equal(st, "starting");

    /* Announced: at idle-after from the end of the work. */
    ws = wait_reason("nb", "Idle", "PauseScheduled", (IDLE_AFTER_S + 20) * 1000);
    assert_string_equal(cond_field(ws, "Idle", "status"), "True");
    int64_t pause_at = time_at(ws, "status.activity.pauseAt");
    /* When the controller announced it (whole seconds), not when this
     * test, polling on a loaded machine, saw it. */
    int64_t announced = 0;
    assert_int_equal(
        timefmt_parse_rfc3339(cond_field(ws, "Idle", "lastTransitionTime"), &announced), 0);
    cJSON_Delete(ws);
    print_message("  nb: idle at +0, announced at +%.1f s for +%.1f s (idle-after %d s)\n",
                  (announced - idle_ms) / 1000.0, (pause_at - idle_ms) / 1000.0, IDLE_AFTER_S);
    /* The last busy round started up to an interval before the kernel went
     * idle; Jupyter's last_activity is the idle status message's time. */
    assert_true(pause_at >= idle_ms + (IDLE_AFTER_S - INTERVAL_S - 1) * 1000);
    assert_true(pause_at <= idle_ms + (IDLE_AFTER_S + 1) * 1000);
    /* With the warning's lead. */
    assert_true(pause_at - announced >= (WARN_BEFORE_S - 1) * 1000);

    /* Carried out on time. */
    ws = wait_state("nb", "Paused", (IDLE_AFTER_S + 30) * 1000);
    int64_t paused_at = annotation_time(ws, "hibernator.dev/auto-paused-at");
    print_message("  nb: paused at +%.1f s\n", (paused_at - idle_ms) / 1000.0);
    assert_string_equal(str_at(ws, "status.lastPause.reason"), "IdleTimeout");
    assert_non_null(strstr(str_at(ws, "status.lastPause.message"), "jupyter"));
    assert_true(paused_at >= pause_at);
    assert_true(paused_at <= pause_at + (INTERVAL_S + PAUSE_MARGIN_S) * 1000);
    assert_true(paused_at - idle_ms <= (IDLE_AFTER_S + INTERVAL_S + PAUSE_MARGIN_S) * 1000);
    cJSON_Delete(ws);
    assert_true(wait_pod_gone(first_pod, 60000));
    char *reasons = event_reasons("nb");
    char *warn = strstr(reasons, "IdleWarning,");
    if (!warn || !strstr(warn, "IdleTimeout,"))
        print_message("  events of nb: %s\n", reasons);
    assert_non_null(warn);
    assert_non_null(strstr(warn, "IdleTimeout,"));
    free(reasons);
}

/* A resume starts a new pod on the same home; its Jupyter answers with the
 * token and has the file written before the pause. */
static void test_resume_from_files(void **state)
{
    (void)state;
    set_paused("nb", 0);
    cJSON *ws = wait_state("nb", "Running", START_TIMEOUT_MS);
    cJSON_Delete(ws);
    char ip[64], pod[128], uid[64];
    ready_pod("nb", ip, sizeof(ip), pod, sizeof(pod), uid, sizeof(uid));
    assert_string_not_equal(pod, first_pod);
    assert_string_not_equal(uid, first_uid);
    wait_jupyter(ip);
    char *body = NULL;
    assert_int_equal(jupyter_get(ip, "/api/contents/marker.txt?content=1", token, &body), 200);
    cJSON *f = cJSON_Parse(body);
    free(body);
    assert_non_null(f);
    assert_string_equal(str_at(f, "content"), "written before the pause");
    cJSON_Delete(f);
    /* A new server: no kernel of the old one. */
    assert_int_equal(jupyter_get(ip, "/api/kernels?no_track_activity=1", token, &body), 200);
    assert_string_equal(body, "[]");
    free(body);

    ws = wait_reason("nb", "ActivityProbe", "Succeeded", 30000);
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromCheckpoint");
    /* A fresh clock: nothing from before the pause. */
    assert_true(time_at(ws, "status.activity.lastActivityTime") >=
                time_at(ws, "status.stateSince") - 1000);
    assert_string_equal(cond_field(ws, "Idle", "status"), "False");
    cJSON_Delete(ws);

    /* The one with another token: long past its idle time, never paused. */
    assert_true(now_ms() - nb_created_ms > (IDLE_AFTER_S + INTERVAL_S + PAUSE_MARGIN_S) * 1000);
    assert_running_unpaused("wrong");
    ws = ws_json("wrong");
    assert_string_equal(cond_field(ws, "ActivityProbe", "status"), "False");
    assert_string_equal(cond_field(ws, "Idle", "reason"), "ProbeFailed");
    assert_string_equal(str_at(ws, "status.activity.lastProbeResult"), "Failed");
    cJSON_Delete(ws);

    /* Tokens never reach status or events. */
    char *all = NULL, *events = NULL;
    /* ("wrong"'s own token is in its spec: the test put it there.) */
    harness_kubectl(&all, "-n %s get workspaces -o jsonpath='{.items[*].status}'", ns);
    harness_kubectl(&events, "-n %s get events -o json", ns);
    assert_non_null(strstr(all, "\"state\":\"Running\""));
    assert_null(strstr(all, token));
    assert_null(strstr(all, other_token));
    assert_null(strstr(events, token));
    assert_null(strstr(events, other_token));
    free(all);
    free(events);
}

/* ---- set-up ------------------------------------------------------------------ */

/* Whether the node's containerd has the image. */
static int image_present(void)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "ctr -a '%s' -n k8s.io images ls -q name==%s 2>/dev/null | grep -qx %s",
             getenv("HIBERNATOR_CONTAINERD_SOCK"), IMAGE, IMAGE);
    return system(cmd) == 0;
}

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (!image_present()) {
        char cmd[512];
        struct stat st;
        snprintf(cmd, sizeof(cmd), "%s/deploy/local/images.sh", SOURCE_DIR);
        if (stat(cmd, &st) == 0) {
            snprintf(cmd, sizeof(cmd), "'%s/deploy/local/images.sh' import notebook >&2",
                     SOURCE_DIR);
            assert_int_equal(system(cmd), 0);
        }
        if (!image_present())
            fail_msg("%s is not in the real node's containerd: deploy/local/images.sh import "
                     "notebook (docs/local-cluster.md)",
                     IMAGE);
    }
    it_deploy("it-notebook");
    ns = harness_namespace("it-notebook");
    snprintf(cls, sizeof(cls), "%s", ns);
    random_hex(token, 16);
    random_hex(other_token, 16);
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s create secret generic nb-jupyter "
                                     "--from-literal=token=%s",
                                     ns, token),
                     0);
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s create secret generic wrong-jupyter "
                                     "--from-literal=token=%s",
                                     ns, token),
                     0);
    assert_int_equal(
        harness_apply("apiVersion: hibernator.dev/v1alpha1\nkind: WorkspaceClass\n"
                      "metadata: {name: %s}\n"
                      "spec:\n"
                      "  images: {allowed: [\"hibernator.local/notebook:*\"], default: \"%s\"}\n"
                      "  port: 8888\n"
                      "  resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {memory: 1Gi}}\n"
                      "  tolerations: [{key: hibernator.dev/real-node, operator: Exists, effect: "
                      "NoSchedule}]\n"
                      "  home: {size: 1Gi, storageClassName: standard, mountPath: /home/jovyan, "
                      "onDelete: Delete}\n"
                      "  checkpoint: {path: /home/jovyan/.hibernator/checkpoint, envVar: "
                      "HIBERNATOR_CHECKPOINT_PATH}\n"
                      "  pause: {gracePeriodSeconds: 10}\n"
                      "  resume: {capacityTimeout: 5m, onCapacityTimeout: Fail}\n"
                      "  activity:\n"
                      "    application: Jupyter\n"
                      "    url: \"http://{podIP}:{port}\"\n"
                      "    tokenSecretRef: {name: \"{workspace}-jupyter\"}\n"
                      "    interval: %ds\n"
                      "    timeout: %ds\n"
                      "  idle: {after: %ds, minAfter: 10s, minRunning: 0s, warnBefore: %ds}\n",
                      cls, IMAGE, INTERVAL_S, INTERVAL_S, IDLE_AFTER_S, WARN_BEFORE_S),
        0);
    static char ns_flag[200];
    snprintf(ns_flag, sizeof(ns_flag), "--namespace=%s", ns);
    static const char *args[2];
    args[0] = ns_flag;
    args[1] = NULL;
    controller_extra_args(args);
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    /* While the controller runs: it removes its finalizers. */
    harness_kubectl(NULL, "-n %s delete workspaces --all --wait=true --timeout=120s", ns);
    controller_stop();
    harness_kubectl(NULL, "delete namespace %s --wait=true --timeout=120s", ns);
    harness_kubectl(NULL, "delete workspaceclass %s --ignore-not-found", cls);
    it_show_logs();
    free(ns);
    curl_global_cleanup();
    return 0;
}

int main(void)
{
    harness_require_real_node();
    /* In order: they follow one workspace from its start to its resume. */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_through_pod_ip),
        cmocka_unit_test(test_busy_kernel_then_idle_pause),
        cmocka_unit_test(test_resume_from_files),
    };
    return cmocka_run_group_tests_name("notebook on the real node", tests, group_setup,
                                       group_teardown);
}
