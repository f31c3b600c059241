/*
 * Idle detection end to end: a real Jupyter Server (Debian's
 * python3-jupyter-server) on loopback, the controller under deploy/'s RBAC,
 * workspaces on the local cluster whose class points the activity probe at
 * that server. kwok's pods have no network of their own, so the classes'
 * URL templates name the loopback server instead of {podIP}: the same code
 * path, a different template.
 *
 *   - idle server → announced (Idle=True, IdleWarning) → paused at
 *     idle-after, within an asserted margin, reason IdleTimeout;
 *   - a kernel busy in time.sleep with no browser attached → not paused;
 *   - a wrong token → ActivityProbe=False (unauthorized), not paused, the
 *     token nowhere in status or events;
 *   - the server down, or the token Secret missing → not paused;
 *   - activity during the warning cancels the pause; keep-alive holds it;
 *   - resume after an automatic pause starts a fresh idle clock;
 *   - code-server's heartbeat and GPU utilisation from a Prometheus query
 *     (stand-ins in tests/tools/fake_activity.c: data sources, not the API
 *     server).
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "activity/record.h"
#include "harness.h"
#include "util/timefmt.h"
#include "workspace/class.h"
#include "workspace/replay.h"
#include "workspaces.h"

#define TOKEN "it-idle-7d1f0c3a9b"
#define WRONG_TOKEN "it-idle-not-the-token"
/* The policy of the test classes: short, so the test takes a minute. */
#define IDLE_AFTER_S 15
#define WARN_BEFORE_S 5
/* How late a pause may come after its announced time: one probe round
 * (interval 1s, timeout 2s) and the write. */
#define PAUSE_MARGIN_S 4

struct server {
    pid_t pid;
    int port;
};

static struct server idle_jupyter, busy_jupyter, down_jupyter, fake;

/* ---- processes --------------------------------------------------------------- */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static size_t sink(char *p, size_t size, size_t n, void *data)
{
    (void)p;
    (void)data;
    return size * n;
}

/* GET with the token; the HTTP status, 0 when nothing answered. */
static long http_get(int port, const char *path)
{
    char url[256], auth[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    snprintf(auth, sizeof(auth), "Authorization: token %s", TOKEN);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 2000L);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return code;
}

static void jupyter_start(struct server *s, const char *name)
{
    s->port = free_port();
    char dir[512], log[600], port[32];
    snprintf(dir, sizeof(dir), "%s/%s", tmpdir, name);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(log, sizeof(log), "%s/%s.log", tmpdir, name);
    snprintf(port, sizeof(port), "--ServerApp.port=%d", s->port);
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        char env[600];
        snprintf(env, sizeof(env), "%s/runtime", dir);
        setenv("JUPYTER_RUNTIME_DIR", env, 1);
        snprintf(env, sizeof(env), "%s/data", dir);
        setenv("JUPYTER_DATA_DIR", env, 1);
        snprintf(env, sizeof(env), "%s/config", dir);
        setenv("JUPYTER_CONFIG_DIR", env, 1);
        setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1", 1);
        execl("/usr/bin/python3", "python3", "-m", "jupyter_server", "--allow-root",
              "--ServerApp.ip=127.0.0.1", port, "--ServerApp.token=" TOKEN,
              "--ServerApp.open_browser=False", "--ServerApp.port_retries=0",
              "--ServerApp.root_dir", dir, (char *)NULL);
        _exit(127);
    }
    uint64_t end = harness_now_ms() + 60000;
    while (harness_now_ms() < end && http_get(s->port, "/api/status") != 200)
        usleep(200 * 1000);
    assert_int_equal(http_get(s->port, "/api/status"), 200);
}

static void server_stop(struct server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    }
}

/* A kernel running time.sleep with nobody attached; 0 when the server
 * reports it busy. */
static int make_busy(struct server *s)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 '%s/tests/tools/jupyter_busy.py' http://127.0.0.1:%d %s "
             "'%s/busy-jupyter/runtime' 3600 >/dev/null",
             SOURCE_DIR, s->port, TOKEN, tmpdir);
    return system(cmd);
}

static void fake_start(struct server *s)
{
    s->port = harness_start_server(FAKE_ACTIVITY_BIN, &s->pid);
}

static void fake_put(const char *path, const char *body)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd),
             "curl -sf -X PUT -H 'Content-Type: application/json' -d '%s' "
             "http://127.0.0.1:%d%s >/dev/null",
             body, fake.port, path);
    assert_int_equal(system(cmd), 0);
}

/* ---- reading back ------------------------------------------------------------ */

static int64_t time_at(const cJSON *o, const char *path)
{
    const char *s = str_at(o, path);
    int64_t ms = 0;
    if (!s || timefmt_parse_rfc3339(s, &ms) < 0)
        return 0;
    return ms;
}

static const char *annotation(const cJSON *ws, const char *key)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "metadata"),
                                         "annotations"),
        key);
    return cJSON_IsString(a) ? a->valuestring : NULL;
}

static int64_t annotation_time(const cJSON *ws, const char *key)
{
    int64_t ms = 0;
    const char *s = annotation(ws, key);
    return s && timefmt_parse_rfc3339(s, &ms) == 0 ? ms : 0;
}

static void assert_not_paused(const char *name)
{
    cJSON *ws = ws_json(name);
    assert_non_null(ws);
    assert_string_equal(str_at(ws, "status.state"), "Running");
    const cJSON *paused =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ws, "spec"), "paused");
    assert_false(cJSON_IsTrue(paused));
    assert_null(annotation(ws, "hibernator.dev/auto-paused-at"));
    cJSON_Delete(ws);
}

/* ---- what-if and logs ----------------------------------------------------- */

/* All that can be read from f, as a string (the caller frees it). */
static char *read_all(FILE *f)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_non_null(mem);
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, got, mem);
    fclose(mem);
    return text;
}

/* The text of the file at path, or NULL (the caller frees it). */
static char *file_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *text = read_all(f);
    fclose(f);
    return text;
}

/* kubectl workspace what-if -o json in the test's namespace, parsed. */
static cJSON *what_if_json(void)
{
    char *line = NULL;
    assert_true(asprintf(&line, "'%s' --kubeconfig '%s' -n %s what-if -o json 2>/dev/null",
                         KUBECTL_WORKSPACE_BIN, harness_kubeconfig(), ns) > 0);
    FILE *p = popen(line, "r");
    free(line);
    assert_non_null(p);
    char *text = read_all(p);
    assert_int_equal(pclose(p), 0);
    cJSON *w = cJSON_Parse(text);
    if (!w)
        fail_msg("what-if -o json: %s", text);
    free(text);
    return w;
}

/* ---- tests ------------------------------------------------------------------- */

/* Idle, busy, wrong token and server down, side by side: they share the
 * minute the idle one takes to be paused. */
static void test_jupyter(void **state)
{
    (void)state;
    apply_ws("idle", "it-jupyter", 0, NULL);
    apply_ws("busy", "it-jupyter-busy", 0, NULL);
    apply_ws("badtoken", "it-jupyter-badtoken", 0, NULL);
    apply_ws("down", "it-jupyter-down", 0, NULL);
    apply_ws("nosecret", "it-jupyter-nosecret", 0, NULL);
    cJSON *ws = wait_state("idle", "Running", 60000);
    int64_t running_since = time_at(ws, "status.stateSince");
    cJSON_Delete(ws);
    for (const char *const *n = (const char *const[]){"busy", "badtoken", "down", "nosecret", NULL};
         *n; n++)
        cJSON_Delete(wait_state(*n, "Running", 60000));

    /* Announced first, with the time. */
    ws = wait_reason("idle", "Idle", "PauseScheduled", (IDLE_AFTER_S + 20) * 1000);
    assert_string_equal(cond_field(ws, "Idle", "status"), "True");
    int64_t pause_at = time_at(ws, "status.activity.pauseAt");
    assert_true(pause_at > 0);
    /* pauseAt keeps the decision's milliseconds; the message names its second. */
    assert_non_null(strchr(str_at(ws, "status.activity.pauseAt"), '.'));
    char pause_second[20];
    snprintf(pause_second, sizeof(pause_second), "%s", str_at(ws, "status.activity.pauseAt"));
    assert_non_null(strstr(cond_field(ws, "Idle", "message"), pause_second));
    cJSON_Delete(ws);

    /* Then paused, at idle-after from the start (no activity since). */
    ws = wait_state("idle", "Paused", (IDLE_AFTER_S + 30) * 1000);
    assert_string_equal(str_at(ws, "status.lastPause.reason"), "IdleTimeout");
    assert_non_null(strstr(str_at(ws, "status.lastPause.message"), "idle-after 15s"));
    int64_t paused_at = annotation_time(ws, "hibernator.dev/auto-paused-at");
    int64_t requested = time_at(ws, "status.lastPause.requestedAt");
    /* The annotation has the decision's milliseconds, the status whole seconds. */
    assert_int_equal(paused_at / 1000, requested / 1000);
    assert_true(paused_at >= pause_at);
    /* Whole seconds on both sides: ±1 s of rounding. */
    int64_t idle_for = paused_at - running_since;
    print_message("  idle workspace: running at %lld, announced pause at +%lld ms, paused at "
                  "+%lld ms (idle-after %d s)\n",
                  (long long)running_since, (long long)(pause_at - running_since),
                  (long long)idle_for, IDLE_AFTER_S);
    assert_true(idle_for >= (IDLE_AFTER_S - 1) * 1000);
    assert_true(idle_for <= (IDLE_AFTER_S + PAUSE_MARGIN_S) * 1000);
    assert_true(paused_at >= pause_at - 1000);
    assert_true(paused_at <= pause_at + PAUSE_MARGIN_S * 1000);
    cJSON_Delete(ws);
    char *reasons = event_reasons("idle");
    char *warn = strstr(reasons, "IdleWarning,");
    assert_non_null(warn);
    assert_non_null(strstr(warn, "IdleTimeout,"));
    assert_null(strstr(reasons, "Pausing,")); /* the automatic pause names itself */
    free(reasons);

    /* A resume starts a fresh clock: not paused again on the old idle time. */
    set_paused("idle", 0);
    ws = wait_state("idle", "Running", 60000);
    assert_string_equal(str_at(ws, "status.activity.lastActivitySource"), "start");
    cJSON_Delete(ws);
    usleep((IDLE_AFTER_S - WARN_BEFORE_S - 3) * 1000 * 1000);
    ws = ws_json("idle");
    assert_string_equal(str_at(ws, "status.state"), "Running");
    assert_string_equal(cond_field(ws, "Idle", "status"), "False");
    cJSON_Delete(ws);

    /* The others: more than twice the idle time since they started, still
     * running. */
    ws = ws_json("busy");
    assert_string_equal(cond_field(ws, "Idle", "status"), "False");
    assert_string_equal(cond_field(ws, "Idle", "reason"), "Active");
    assert_string_equal(str_at(ws, "status.activity.lastActivitySource"), "jupyter");
    assert_string_equal(str_at(ws, "status.activity.lastProbeResult"), "Active");
    cJSON_Delete(ws);
    assert_not_paused("busy");

    ws = ws_json("badtoken");
    assert_string_equal(cond_field(ws, "ActivityProbe", "status"), "False");
    assert_non_null(strstr(cond_field(ws, "ActivityProbe", "message"), "unauthorized"));
    assert_string_equal(cond_field(ws, "Idle", "status"), "Unknown");
    assert_string_equal(cond_field(ws, "Idle", "reason"), "ProbeFailed");
    cJSON_Delete(ws);
    assert_not_paused("badtoken");

    ws = ws_json("down");
    assert_string_equal(cond_field(ws, "ActivityProbe", "status"), "False");
    assert_string_equal(cond_field(ws, "Idle", "reason"), "ProbeFailed");
    assert_string_equal(str_at(ws, "status.activity.lastProbeResult"), "Failed");
    cJSON_Delete(ws);
    assert_not_paused("down");

    ws = ws_json("nosecret");
    assert_string_equal(cond_field(ws, "ActivityProbe", "status"), "False");
    assert_non_null(strstr(cond_field(ws, "ActivityProbe", "message"), "token Secret"));
    assert_non_null(strstr(cond_field(ws, "ActivityProbe", "message"), "not found"));
    assert_string_equal(cond_field(ws, "Idle", "reason"), "ProbeFailed");
    cJSON_Delete(ws);
    assert_not_paused("nosecret");

    /* Tokens never reach status or events. */
    char *all = NULL, *events = NULL;
    harness_kubectl(&all, "-n %s get workspaces -o json", ns);
    harness_kubectl(&events, "-n %s get events -o json", ns);
    assert_null(strstr(all, TOKEN));
    assert_null(strstr(all, WRONG_TOKEN));
    assert_null(strstr(events, TOKEN));
    assert_null(strstr(events, WRONG_TOKEN));
    free(all);
    free(events);

    /* The activity record: written when the pause began, in a ConfigMap of
     * the workspace's own that goes with it; idle before the pause, paused
     * after it (docs/idle.md, "The activity record"). */
    cJSON *cm = get_json("configmap idle-activity");
    assert_non_null(cm);
    const char *record = str_at(cm, "data.record");
    assert_non_null(record);
    print_message("  activity record of idle: %s\n", record);
    assert_true(strncmp(record, "v1 ", 3) == 0);
    assert_non_null(strstr(record, " i"));
    assert_non_null(strstr(record, " p"));
    const cJSON *owner = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cm, "metadata"), "ownerReferences"), 0);
    assert_string_equal(str_at(owner, "kind"), "Workspace");
    assert_string_equal(str_at(owner, "name"), "idle");
    cJSON_Delete(cm);

    /* kubectl workspace what-if replays what was recorded: the idle
     * workspace's pause is there under its class as it is, and no policy
     * pauses a busy kernel. The record's last run lasts until what-if's
     * "now": a moment later, so the replay's steps have room. */
    usleep(2 * 1000 * 1000);
    cJSON *w = what_if_json();
    const cJSON *rows = cJSON_GetObjectItem(w, "policies");
    const cJSON *current = cJSON_GetArrayItem(rows, 0);
    assert_string_equal(str_at(current, "policy"), "current");
    print_message("  what-if, current: %.0f workspaces, %.0f pauses\n",
                  num_at(current, "workspaces"), num_at(current, "pauses"));
    assert_true(num_at(current, "workspaces") >= 1);
    assert_true(num_at(current, "pauses") >= 1);
    const cJSON *row;
    cJSON_ArrayForEach(row, rows) assert_true(num_at(row, "pausesWhileBusy") == 0);
    cJSON_Delete(w);
}

/* Activity in the warning window cancels; a keep-alive holds. */
static void test_cancel_and_keep_alive(void **state)
{
    (void)state;
    char until[TIMEFMT_RFC3339_SIZE], extra[128];
    timefmt_format_rfc3339((int64_t)time(NULL) * 1000 + 3600 * 1000, until, sizeof(until));
    snprintf(extra, sizeof(extra), "  keepAliveUntil: \"%s\"\n", until);
    apply_ws("cancel", "it-jupyter", 0, NULL);
    apply_ws("keep", "it-jupyter", 0, extra);
    cJSON_Delete(wait_state("cancel", "Running", 60000));
    cJSON_Delete(wait_reason("cancel", "Idle", "PauseScheduled", (IDLE_AFTER_S + 20) * 1000));

    char now[TIMEFMT_RFC3339_SIZE];
    timefmt_format_rfc3339((int64_t)time(NULL) * 1000, now, sizeof(now));
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s annotate workspace cancel --overwrite "
                                     "hibernator.dev/last-activity=%s",
                                     ns, now),
                     0);
    cJSON *ws = wait_reason("cancel", "Idle", "Active", 10000);
    assert_string_equal(str_at(ws, "status.activity.lastActivitySource"), "annotation");
    assert_null(str_at(ws, "status.activity.pauseAt"));
    cJSON_Delete(ws);
    char *reasons = event_reasons("cancel");
    if (!strstr(reasons, "IdleWarning,IdleCancelled,"))
        print_message("events of cancel: %s\n", reasons);
    assert_non_null(strstr(reasons, "IdleWarning,IdleCancelled,"));
    free(reasons);
    /* Past the pause time it was announced for: still running. */
    usleep((WARN_BEFORE_S + 3) * 1000 * 1000);
    assert_not_paused("cancel");

    ws = ws_json("keep");
    assert_string_equal(cond_field(ws, "Idle", "reason"), "KeepAlive");
    assert_non_null(str_at(ws, "status.activity.keepAliveUntil"));
    cJSON_Delete(ws);
    assert_not_paused("keep");
}

/* code-server's heartbeat, and the GPU: utilisation above the threshold is
 * activity even when the notebook is idle; no data is not. */
static void test_code_server_and_gpu(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof(path), "/control/gpu/%s/gpu-busy-1", ns);
    fake_put(path, "{\"value\":\"87.5\"}");
    apply_ws("code", "it-code-server", 0, NULL);
    apply_ws("gpu-busy", "it-jupyter-gpu", 0, NULL);
    apply_ws("gpu-nodata", "it-jupyter-gpu", 0, NULL);
    cJSON_Delete(wait_state("code", "Running", 60000));
    cJSON_Delete(wait_state("gpu-busy", "Running", 60000));

    cJSON *ws = wait_state("code", "Paused", (IDLE_AFTER_S + 30) * 1000);
    assert_string_equal(str_at(ws, "status.lastPause.reason"), "IdleTimeout");
    cJSON_Delete(ws);
    ws = wait_state("gpu-nodata", "Paused", (IDLE_AFTER_S + 30) * 1000);
    assert_non_null(strstr(str_at(ws, "status.lastPause.message"), "GPU utilisation: no data"));
    cJSON_Delete(ws);

    ws = ws_json("gpu-busy");
    assert_string_equal(cond_field(ws, "Idle", "reason"), "Active");
    assert_string_equal(str_at(ws, "status.activity.lastActivitySource"), "gpu");
    cJSON_Delete(ws);
    assert_not_paused("gpu-busy");
}

/* ---- a compressed day ---- */

/* A day of one person at a GPU notebook, compressed: a second stands for
 * about ten minutes (the class's idle time of 10 s for an hour and a half).
 * The person works from 20 s to 26 s and from 40 s to 46 s after the start
 * (code-server heartbeats every second), finds the workspace paused each
 * time and resumes it. Afterwards the controller's own ledger and the
 * replay of its activity record under the same class (what what-if does)
 * must agree: the same pauses, each asked for within two probe intervals
 * of the controller's, and the accelerator time held within one a hold. */
#define DAY_S 55
static const struct {
    int from_s, to_s;
} day_person[] = {{20, 26}, {40, 46}};

static void test_compressed_day(void **state)
{
    (void)state;
    apply_ws("day", "it-day", 0, NULL);
    cJSON *ws = wait_state("day", "Running", 60000);
    cJSON_Delete(ws);
    uint64_t t0 = harness_now_ms();
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "/control/code-server/%s/day", ns);
    int resumed[2] = {0, 0};
    while (harness_now_ms() < t0 + DAY_S * 1000) {
        int64_t t = (int64_t)(harness_now_ms() - t0) / 1000;
        for (size_t i = 0; i < 2; i++) {
            if (t < day_person[i].from_s || t >= day_person[i].to_s)
                continue;
            fake_put(prefix, "{\"heartbeatNow\":true}");
            if (!resumed[i]) {
                /* a person who finds it paused resumes it */
                ws = ws_json("day");
                if (cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(ws, "spec"), "paused")))
                    set_paused("day", 0);
                cJSON_Delete(ws);
                resumed[i] = 1;
            }
        }
        usleep(1000 * 1000);
    }
    ws = wait_state("day", "Paused", 60000);
    const cJSON *history = cJSON_GetObjectItem(cJSON_GetObjectItem(ws, "status"), "history");
    int n = cJSON_GetArraySize(history);
    double held = num_at(ws, "status.accounting.acceleratorSecondsHeld");
    print_message("  the controller: %d pauses, %.2f accelerator-seconds held\n", n, held);
    assert_int_equal(n, 3); /* before each arrival, and at the end of the day */

    /* The record and the class, as what-if reads them. */
    cJSON *cm = get_json("configmap day-activity");
    assert_non_null(cm);
    struct activity_record rec = {0};
    const char *why = NULL;
    print_message("  its record: %s\n", str_at(cm, "data.record"));
    assert_int_equal(activity_record_parse(str_at(cm, "data.record"), &rec, &why), 0);
    cJSON_Delete(cm);
    char *class_text = NULL;
    assert_int_equal(harness_kubectl(&class_text, "get workspaceclass it-day -o json"), 0);
    cJSON *cj = cJSON_Parse(class_text);
    free(class_text);
    struct workspace_class *cls = NULL;
    assert_int_equal(workspace_class_decode(cj, &cls, NULL), 0);
    cJSON_Delete(cj);
    struct replay_span *spans = NULL;
    size_t n_spans = 0;
    assert_int_equal(replay_spans_from_record(&rec, &spans, &n_spans), 0);
    /* The world's times, as this cluster and this controller took them
     * (the slowest of the pauses): a pod's start, the controller's step
     * from the pause's request to the pod's delete, the pod's stop. */
    double ready_s = num_at(cJSON_GetArrayItem(history, 0), "secondsToReady");
    int64_t step_ms = 1, stop_ms = 1;
    for (int i = 0; i < n; i++) {
        const cJSON *h = cJSON_GetArrayItem(history, i);
        int64_t asked = time_at(h, "pausedAt"), deleted = time_at(h, "podDeletedAt"),
                freed = time_at(h, "acceleratorReleasedAt");
        print_message(
            "  pause %d: asked at %lld, pod deleted %+lld ms, accelerator free %+lld ms\n", n - i,
            (long long)asked, (long long)(deleted - asked), (long long)(freed - asked));
        if (deleted - asked > step_ms)
            step_ms = deleted - asked;
        if (freed - deleted > stop_ms)
            stop_ms = freed - deleted;
    }
    struct replay_input in = {
        .cls = cls,
        .start_ms = rec.start_s * 1000,
        /* the last run (paused) holds on, as what-if reads it */
        .end_ms = (activity_record_end(&rec) + 30) * 1000,
        .start_paused = rec.runs[0].state == 'p',
        .start_ready = 1,
        .spans = spans,
        .n_spans = n_spans,
        .times = {.cold_start_ms = (int64_t)(ready_s > 0 ? ready_s * 1000 : 1000),
                  .step_ms = step_ms,
                  .stop_ms = stop_ms},
    };
    struct replay_result r;
    assert_int_equal(replay_run(&in, &r), 0);
    print_message("  the replay: %lld pauses, %.0f accelerator-seconds held\n", (long long)r.pauses,
                  r.held_s);
    assert_int_equal(r.pauses, n);
    for (int i = 0; i < n; i++) {
        /* history is newest first */
        int64_t real = time_at(cJSON_GetArrayItem(history, n - 1 - i), "pausedAt");
        int64_t replayed = r.pause_requested_ms[i];
        print_message("  pause %d: the controller at %lld, the replay at %lld (%+lld ms)\n", i + 1,
                      (long long)real, (long long)replayed, (long long)(replayed - real));
        assert_true(llabs(replayed - real) <= 2 * 1000 + 1000); /* two rounds, whole seconds */
    }
    /* The accelerator time held agrees within the probe interval (1 s) a
     * hold: the replay begins with the pod ready when the record began
     * running, and takes the controller's step and the pod's stop as
     * measured; the status's times are whole seconds (a pod's schedule
     * time, a pause's), so each hold may differ by up to one. */
    print_message("  held: the controller %.2f s, the replay %.2f s\n", held, r.held_s);
    assert_true(fabs(r.held_s - held) <= 1.0 * n);
    free(spans);
    activity_record_free(&rec);
    workspace_class_free(cls);
    cJSON_Delete(ws);
}

/* A record nobody can read, as anyone who may write ConfigMaps can leave
 * one, through the API server: what-if names it and leaves it out; the
 * controller, which reads the records once at its start, says so, starts
 * the record afresh and writes it over the bad one. */
static void test_bad_record(void **state)
{
    (void)state;
    const char *bad = "v1 1764000000 p30 x12 i-4";
    controller_stop();
    assert_int_equal(harness_apply("apiVersion: v1\n"
                                   "kind: ConfigMap\n"
                                   "metadata:\n"
                                   "  name: garbled-activity\n"
                                   "  namespace: %s\n"
                                   "  labels: {hibernator.dev/activity-record: v1}\n"
                                   "data:\n"
                                   "  record: \"%s\"\n",
                                   ns, bad),
                     0);
    apply_ws("garbled", "it-day", 1, NULL);

    cJSON *w = what_if_json();
    const cJSON *note;
    int named = 0;
    cJSON_ArrayForEach(note, cJSON_GetObjectItem(w, "notes"))
    {
        print_message("  what-if note: %s\n", note->valuestring);
        if (strstr(note->valuestring, "/garbled: its record cannot be read"))
            named = 1;
    }
    assert_true(named);
    cJSON_Delete(w);

    controller_start(NULL);
    char want[300];
    snprintf(want, sizeof(want), "workspace=%s/garbled", ns);
    int said = 0;
    for (uint64_t end = harness_now_ms() + 30000; !said && harness_now_ms() < end;) {
        char *log = file_text(controller_log_path());
        const char *at = log ? strstr(log, "activity record cannot be read") : NULL;
        const char *eol = at ? strchr(at, '\n') : NULL;
        const char *key = at ? strstr(at, want) : NULL;
        said = key && (!eol || key < eol);
        free(log);
        if (!said)
            usleep(200 * 1000);
    }
    assert_true(said);
    cJSON_Delete(wait_state("garbled", "Paused", 60000));

    int read_back = 0;
    for (uint64_t end = harness_now_ms() + 30000; !read_back && harness_now_ms() < end;) {
        cJSON *cm = get_json("configmap garbled-activity");
        const char *text = cm ? str_at(cm, "data.record") : NULL;
        struct activity_record rec = {0};
        read_back = text && strcmp(text, bad) != 0 && activity_record_parse(text, &rec, NULL) == 0;
        if (read_back)
            print_message("  written anew: %s\n", text);
        activity_record_free(&rec);
        cJSON_Delete(cm);
        if (!read_back)
            usleep(500 * 1000);
    }
    assert_true(read_back);
}

/* ---- set-up ------------------------------------------------------------------ */

static int clean_slate(void **state)
{
    (void)state;
    delete_all_workspaces(60);
    return 0;
}

static void apply_idle_class(const char *name, const char *activity)
{
    char extra[2048];
    snprintf(extra, sizeof(extra),
             "  idle: {after: %ds, minAfter: 10s, minRunning: 0s, warnBefore: %ds}\n"
             "  activity:\n"
             "    interval: 1s\n"
             "    timeout: 1s\n"
             "%s",
             IDLE_AFTER_S, WARN_BEFORE_S, activity);
    apply_class(name, extra);
}

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    it_deploy("it-idle");
    ns = harness_namespace("it-idle");
    jupyter_start(&idle_jupyter, "idle-jupyter");
    /* jupyter_busy.py makes sure the server hears its kernel; should a
     * server still not report the kernel busy, a fresh one is tried. */
    int busy = -1;
    for (int attempt = 0; attempt < 5 && busy != 0; attempt++) {
        char dir[600];
        snprintf(dir, sizeof(dir), "rm -rf '%s/busy-jupyter'", tmpdir);
        assert_int_equal(system(dir), 0);
        jupyter_start(&busy_jupyter, "busy-jupyter");
        busy = make_busy(&busy_jupyter);
        if (busy != 0)
            server_stop(&busy_jupyter);
    }
    assert_int_equal(busy, 0);
    jupyter_start(&down_jupyter, "down-jupyter");
    server_stop(&down_jupyter); /* its port now refuses connections */
    fake_start(&fake);

    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s create secret generic jupyter-token "
                                     "--from-literal=token=%s",
                                     ns, TOKEN),
                     0);
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s create secret generic wrong-token "
                                     "--from-literal=token=%s",
                                     ns, WRONG_TOKEN),
                     0);
    char act[1024];
    const char *jupyter = "    application: Jupyter\n"
                          "    url: http://127.0.0.1:%d\n"
                          "    tokenSecretRef: {name: \"%s\"}\n";
    snprintf(act, sizeof(act), jupyter, idle_jupyter.port, "jupyter-token");
    apply_idle_class("it-jupyter", act);
    snprintf(act, sizeof(act), jupyter, busy_jupyter.port, "jupyter-token");
    apply_idle_class("it-jupyter-busy", act);
    snprintf(act, sizeof(act), jupyter, idle_jupyter.port, "wrong-token");
    apply_idle_class("it-jupyter-badtoken", act);
    snprintf(act, sizeof(act), jupyter, down_jupyter.port, "jupyter-token");
    apply_idle_class("it-jupyter-down", act);
    snprintf(act, sizeof(act), jupyter, idle_jupyter.port, "{workspace}-missing");
    apply_idle_class("it-jupyter-nosecret", act);
    snprintf(act, sizeof(act),
             "    application: CodeServer\n"
             "    url: http://127.0.0.1:%d/{namespace}/{workspace}\n",
             fake.port);
    apply_idle_class("it-code-server", act);
    snprintf(act, sizeof(act),
             "    application: Jupyter\n"
             "    url: http://127.0.0.1:%d\n"
             "    tokenSecretRef: {name: jupyter-token}\n"
             "    gpu: {prometheusURL: \"http://127.0.0.1:%d\"}\n",
             idle_jupyter.port, fake.port);
    apply_idle_class("it-jupyter-gpu", act);
    snprintf(act, sizeof(act),
             "  accelerator: {resourceName: nvidia.com/gpu, count: 1, product: Tesla-T4}\n"
             "  idle: {after: 10s, minAfter: 10s, minRunning: 0s, warnBefore: 2s}\n"
             "  activity:\n"
             "    interval: 1s\n"
             "    timeout: 1s\n"
             "    application: CodeServer\n"
             "    url: http://127.0.0.1:%d/{namespace}/{workspace}\n",
             fake.port);
    apply_class("it-day", act);
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    server_stop(&idle_jupyter);
    server_stop(&busy_jupyter);
    server_stop(&fake);
    harness_kubectl(NULL, "delete namespace %s --wait=false", ns);
    it_show_logs();
    free(ns);
    curl_global_cleanup();
    return 0;
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_jupyter, clean_slate),
        cmocka_unit_test_setup(test_cancel_and_keep_alive, clean_slate),
        cmocka_unit_test_setup(test_code_server_and_gpu, clean_slate),
        cmocka_unit_test_setup(test_compressed_day, clean_slate),
        cmocka_unit_test_setup(test_bad_record, clean_slate),
    };
    return cmocka_run_group_tests_name("idle detection", tests, group_setup, group_teardown);
}
