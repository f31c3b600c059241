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
 *     server);
 *   - a day of the week benchmark's people, compressed, through the
 *     controller: its ledger agrees with the replay of the same traces and
 *     with the replay of the activity record it kept (what-if);
 *   - an activity record nobody can read, through the API server.
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
#include "week_trace.h"
#include "workspace/class.h"
#include "workspace/replay.h"
#include "workspaces.h"

#define TOKEN "it-idle-7d1f0c3a9b"
#define WRONG_TOKEN "it-idle-not-the-token"
/* The policy of the test classes: short, so the test takes a minute. */
#define IDLE_AFTER_S 15
#define WARN_BEFORE_S 5
#define CANCEL_WARN_BEFORE_S 10
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

/* A request with the token (Jupyter Server reads it, the fake activity
 * server does not); the HTTP status, 0 when nothing answered. */
static long http_send(int port, const char *method, const char *path, const char *body)
{
    char url[512], auth[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    snprintf(auth, sizeof(auth), "Authorization: token %s", TOKEN);
    CURL *c = curl_easy_init();
    assert_non_null(c);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    if (body)
        h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 2000L);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return code;
}

static long http_get(int port, const char *path)
{
    return http_send(port, "GET", path, NULL);
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
    assert_int_equal(http_send(fake.port, "PUT", path, body) / 100, 2);
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
    apply_ws("cancel", "it-jupyter-warned", 0, NULL);
    apply_ws("keep", "it-jupyter", 0, extra);
    cJSON_Delete(wait_state("cancel", "Running", 60000));
    cJSON *announced = wait_reason("cancel", "Idle", "PauseScheduled", (IDLE_AFTER_S + 20) * 1000);
    int64_t pause_at = time_at(announced, "status.activity.pauseAt");
    assert_true(pause_at > 0);
    cJSON_Delete(announced);

    char now[TIMEFMT_RFC3339_SIZE];
    int64_t active_ms = (int64_t)time(NULL) * 1000;
    timefmt_format_rfc3339(active_ms, now, sizeof(now));
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s annotate workspace cancel --overwrite "
                                     "hibernator.dev/last-activity=%s",
                                     ns, now),
                     0);
    cJSON *ws = wait_reason("cancel", "Idle", "Active", 30000);
    assert_string_equal(str_at(ws, "status.activity.lastActivitySource"), "annotation");
    assert_null(str_at(ws, "status.activity.pauseAt"));
    cJSON_Delete(ws);
    char *reasons = event_reasons("cancel");
    if (!strstr(reasons, "IdleWarning,IdleCancelled,"))
        print_message("events of cancel: %s\n", reasons);
    assert_non_null(strstr(reasons, "IdleWarning,IdleCancelled,"));
    free(reasons);
    /* Past the pause time it was announced for: not paused then. On a
     * loaded machine the new idle period (from the activity above) may
     * have ended meanwhile: a pause, if any, is that one's. */
    while ((int64_t)time(NULL) * 1000 < pause_at + 3000)
        usleep(200 * 1000);
    ws = ws_json("cancel");
    if (strcmp(str_at(ws, "status.state"), "Running") != 0) {
        int64_t asked = time_at(ws, "status.lastPause.requestedAt");
        print_message("cancel: %s, its pause asked %.1f s after the activity\n",
                      str_at(ws, "status.state"), (double)(asked - active_ms) / 1000.0);
        assert_true(asked >= active_ms + (IDLE_AFTER_S - 1) * 1000);
    } else {
        assert_not_paused("cancel");
    }
    cJSON_Delete(ws);

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

/* ---- a day of the week, compressed ---- */

/* A day of the week benchmark's people (tests/traces/week_trace.h), one of
 * each kind (the first whose day has no moment that may go either way:
 * day_pick()), driven through the controller with time compressed:
 * a second stands for twelve minutes, and the class's durations are the
 * week's "idle 2h" policy scaled the same way (idle after 10 s for two
 * hours, warnBefore and minRunning 1 s for 10 and 15 minutes). Each person
 * lives their kind's own day (training on Monday, the overnight kernel and
 * working late on Thursday) from 07:30 to 10:00 the next morning, 132.5 s,
 * the workspace paused at 07:30 as a night would leave it:
 *   - a person at the notebook: code-server heartbeats (requests to the
 *     Jupyter Server for the overnight one), and a person who finds the
 *     workspace paused resumes it;
 *   - the GPU busy: samples above the threshold for the workspace's pods
 *     from the fake Prometheus;
 *   - the kernel busy: a real kernel on a Jupyter Server of its own, busy
 *     in time.sleep until the span's end.
 * At 10:00 the ledger is read (the holds still open counted until then),
 * and every workspace is paused by hand, so that it writes its activity
 * record. Then, for each, the controller's ledger beside two replays under
 * the same class: of the trace itself (what the week benchmark computes)
 * and of the activity record the controller kept (what what-if computes). */
#define DAY_SCALE 720 /* simulated ms a real ms */
#define DAY_FROM (7 * WEEK_HOUR + 30 * WEEK_MINUTE)
#define DAY_LENGTH (26 * WEEK_HOUR + 30 * WEEK_MINUTE)
#define DAY_PODS 8 /* the GPU samples cover pods <workspace>-1 .. -8 */

static const struct {
    enum week_kind kind;
    int day; /* 0: Monday */
} day_people[] = {
    {WEEK_OFFICE, 0}, {WEEK_TRAIN, 0}, {WEEK_ABANDONED, 0}, {WEEK_OVERNIGHT, 3}, {WEEK_LATE, 3},
};
#define DAY_PEOPLE (sizeof(day_people) / sizeof(day_people[0]))

struct day_person {
    const char *name; /* the workspace: the kind's name */
    int jupyter;      /* the overnight kernel needs a real Jupyter Server */
    /* the day's spans, in real ms after the day's start */
    struct replay_span spans[WEEK_MAX_SPANS];
    size_t n;
    int present_span;       /* the person span going on, -1: none */
    int gpu_busy;           /* as last sent */
    size_t kernels_started; /* kernel spans begun, in order */
    uint64_t heartbeat_at;
    /* How late this test's own resume patches reached the API server,
     * summed: the replay resumes at the span's start, a loaded machine's
     * kubectl seconds later (measured: 5.4 and 8.0 s with four lanes and
     * the real node at once). */
    int64_t resume_late_ms;
};

static struct server day_jupyter;

/* The spans of trace in [from, from + DAY_LENGTH), in real ms after the
 * day's start. */
static void day_spans(struct day_person *p, const struct week_trace *t, int64_t from)
{
    p->n = 0;
    for (size_t i = 0; i < t->n; i++) {
        int64_t s = t->spans[i].start_ms - from, e = t->spans[i].end_ms - from;
        if (s < 0)
            s = 0;
        if (e > DAY_LENGTH)
            e = DAY_LENGTH;
        if (e <= s)
            continue;
        p->spans[p->n++] = (struct replay_span){s / DAY_SCALE, e / DAY_SCALE, t->spans[i].use};
    }
}

/* The index of the span of USE going on at t (real ms after the start),
 * -1 when none. */
static int span_at(const struct day_person *p, int64_t t, unsigned use)
{
    for (size_t i = 0; i < p->n; i++)
        if ((p->spans[i].use & use) && p->spans[i].start_ms <= t && t < p->spans[i].end_ms)
            return (int)i;
    return -1;
}

static void day_gpu(struct day_person *p, int busy)
{
    for (int k = 1; k <= DAY_PODS; k++) {
        char path[300];
        snprintf(path, sizeof(path), "/control/gpu/%s/%s-%d", ns, p->name, k);
        if (busy)
            fake_put(path, "{\"value\":\"90\"}");
        else
            assert_int_equal(http_send(fake.port, "DELETE", path, NULL) / 100, 2);
    }
    p->gpu_busy = busy;
}

/* One moment of the person's day: heartbeats while present (and a resume
 * when they find it paused), the GPU's samples, the kernel's cell. */
static void day_step(struct day_person *p, int64_t t, int64_t start)
{
    int present = span_at(p, t, REPLAY_PERSON);
    if (present >= 0 && harness_now_ms() >= p->heartbeat_at) {
        char path[300];
        if (p->jupyter) {
            /* any authenticated request of a browser moves the server's
             * last_activity */
            assert_int_equal(http_send(day_jupyter.port, "GET", "/api/contents", NULL), 200);
        } else {
            snprintf(path, sizeof(path), "/control/code-server/%s/%s", ns, p->name);
            fake_put(path, "{\"heartbeatNow\":true}");
        }
        p->heartbeat_at = harness_now_ms() + 500;
    }
    if (present >= 0 && present != p->present_span) {
        cJSON *ws = ws_json(p->name);
        if (cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(ws, "spec"), "paused"))) {
            set_paused(p->name, 0);
            int64_t late = harness_wall_ms() - (start + p->spans[present].start_ms);
            p->resume_late_ms += late > 0 ? late : 0;
        }
        cJSON_Delete(ws);
    }
    p->present_span = present;
    int gpu = span_at(p, t, REPLAY_GPU) >= 0;
    if (gpu != p->gpu_busy)
        day_gpu(p, gpu);
    size_t kernels = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct replay_span *s = &p->spans[i];
        if (!(s->use & REPLAY_KERNEL) || (s->use & REPLAY_GPU) || s->start_ms > t)
            continue;
        if (++kernels <= p->kernels_started)
            continue;
        /* a cell that runs until the span's end, nobody attached */
        char cmd[1024];
        snprintf(cmd, sizeof(cmd),
                 "/usr/bin/python3 '%s/tests/tools/jupyter_busy.py' http://127.0.0.1:%d %s "
                 "'%s/day-jupyter/runtime' @%.3f >/dev/null 2>&1 &",
                 SOURCE_DIR, day_jupyter.port, TOKEN, tmpdir, (double)(start + s->end_ms) / 1000);
        assert_int_equal(system(cmd), 0);
        p->kernels_started = kernels;
    }
}

/* Moments the controller and a replay may take either way on a loaded
 * machine: a person who comes, or work that starts, this close to the idle
 * deadline (a probe round, the time a patch takes); and how long a kernel
 * may take to start before it is busy (jupyter_busy.py starts a Python
 * kernel and waits until the server reports it busy). */
#define DAY_MARGIN_MS 2500
#define DAY_KERNEL_START_MS 5000

static void day_replay(const struct day_person *p, const struct workspace_class *cls,
                       int64_t kernel_late_ms, struct replay_result *r)
{
    struct replay_span spans[WEEK_MAX_SPANS];
    for (size_t k = 0; k < p->n; k++) {
        spans[k] = p->spans[k];
        if (p->spans[k].use == REPLAY_KERNEL)
            spans[k].start_ms += kernel_late_ms;
    }
    struct replay_input in = {.cls = cls,
                              .start_ms = 0,
                              .end_ms = DAY_LENGTH / DAY_SCALE,
                              .start_paused = 1,
                              .spans = spans,
                              .n_spans = p->n,
                              .times = {.cold_start_ms = 1000}};
    assert_int_equal(replay_run(&in, r), 0);
}

/* The first person of kind whose day, replayed under cls, has no coin toss
 * in it: no span beginning within DAY_MARGIN_MS of a pause, and the same
 * pauses when the kernel is DAY_KERNEL_START_MS late. Their spans are left
 * in p. */
static int day_pick(const struct week_trace *traces, enum week_kind kind, int day,
                    const struct workspace_class *cls, struct day_person *p)
{
    for (int i = week_first_of(kind); i < WEEK_WORKSPACES && traces[i].kind == kind; i++) {
        day_spans(p, &traces[i], WEEK_MONDAY + day * WEEK_DAY + DAY_FROM);
        struct replay_result r, late;
        day_replay(p, cls, 0, &r);
        day_replay(p, cls, DAY_KERNEL_START_MS, &late);
        int clear = late.pauses == r.pauses;
        for (int64_t k = 0; clear && k < r.pauses && k < REPLAY_PAUSE_TIMES; k++)
            for (size_t s = 0; s < p->n; s++)
                if (llabs(p->spans[s].start_ms - r.pause_requested_ms[k]) < DAY_MARGIN_MS)
                    clear = 0;
        if (clear)
            return i;
    }
    fail_msg("no %s person's day is clear of moments that may go either way", week_kind_name(kind));
    return -1;
}

/* The times a replay takes, as this cluster and controller took them for
 * the pauses in history (the slowest, printed): the controller's step from
 * a pause's request to the pod's delete, the pod's stop, a pod's start. */
static void measured_times(const cJSON *history, struct replay_times *t)
{
    int n = cJSON_GetArraySize(history);
    t->step_ms = 1;
    t->stop_ms = 1;
    t->cold_start_ms = 1000;
    for (int i = 0; i < n; i++) {
        const cJSON *h = cJSON_GetArrayItem(history, i);
        int64_t asked = time_at(h, "pausedAt"), deleted = time_at(h, "podDeletedAt"),
                freed = time_at(h, "acceleratorReleasedAt");
        double ready_s = num_at(h, "secondsToReady");
        int64_t resumed = time_at(h, "resumeRequestedAt");
        print_message("    pause %d (%s): asked at %lld, pod deleted %+lld ms, accelerator free "
                      "%+lld ms",
                      n - i, str_at(h, "reason"), (long long)asked, (long long)(deleted - asked),
                      (long long)(freed - asked));
        if (resumed)
            print_message(", resumed %+lld ms, ready in %.3f s", (long long)(resumed - asked),
                          ready_s);
        print_message("\n");
        if (deleted - asked > t->step_ms)
            t->step_ms = deleted - asked;
        if (freed - deleted > t->stop_ms)
            t->stop_ms = freed - deleted;
        if (ready_s * 1000 > (double)t->cold_start_ms)
            t->cold_start_ms = (int64_t)(ready_s * 1000);
    }
}

/* Sets the replay's pauses beside the controller's (history is newest
 * first; those asked for before end): the same number, each asked for
 * within two probe rounds and the status's whole second. */
static void assert_same_pauses(const char *what, const cJSON *history, int64_t end,
                               const struct replay_result *r)
{
    int64_t real[REPLAY_PAUSE_TIMES];
    int n = 0;
    for (int i = cJSON_GetArraySize(history) - 1; i >= 0 && n < REPLAY_PAUSE_TIMES; i--) {
        int64_t at = time_at(cJSON_GetArrayItem(history, i), "pausedAt");
        if (at < end - 1000)
            real[n++] = at;
    }
    print_message("    %s: %d pauses, the replay %lld\n", what, n, (long long)r->pauses);
    assert_int_equal(r->pauses, n);
    for (int i = 0; i < n; i++) {
        print_message("      pause %d: the controller at %+lld ms, the replay %+lld ms\n", i + 1,
                      (long long)(real[i] - end), (long long)(r->pause_requested_ms[i] - end));
        assert_true(llabs(r->pause_requested_ms[i] - real[i]) <= 2 * 1000 + 1000);
    }
}

/* The accelerator time held agrees within the probe interval (1 s) for
 * each moment a hold begins or ends: a hold ends at a probe round (the
 * controller's and the replay's may be a round apart, the person's last
 * heartbeat up to half a second before their span's end) and begins at a
 * whole second of the status (the pod's PodScheduled time, the record's
 * second), or a person's resume behind the replay's by the time a patch
 * takes. */
static void assert_same_held(const char *what, double held, const struct replay_result *r,
                             double extra)
{
    /* One second more for the record's first run, which starts at a whole
     * second, and its last, which ends at the round that noted it: on a
     * loaded machine both may round the same way (measured: -4.1 s against
     * 4 s with two pauses and a resume). */
    double slack = 1.0 * (double)(r->pauses + r->person_resumes + 2) + extra;
    print_message("    %s: held %.1f s, the controller %.1f s (%+.1f s, within %.0f s)\n", what,
                  r->held_s, held, r->held_s - held, slack);
    assert_true(fabs(r->held_s - held) <= slack);
}

static void test_week_day(void **state)
{
    (void)state;
    static struct week_trace traces[WEEK_WORKSPACES];
    week_traces_make(1, traces); /* the week benchmark's default seed */
    struct workspace_class *cls = NULL, *jcls = NULL;
    const char *const names[] = {"it-day", "it-day-jupyter"};
    struct workspace_class **classes[] = {&cls, &jcls};
    for (int k = 0; k < 2; k++) {
        char *text = NULL;
        assert_int_equal(harness_kubectl(&text, "get workspaceclass %s -o json", names[k]), 0);
        cJSON *cj = cJSON_Parse(text);
        free(text);
        assert_int_equal(workspace_class_decode(cj, classes[k], NULL), 0);
        cJSON_Delete(cj);
    }
    struct day_person people[DAY_PEOPLE];
    memset(people, 0, sizeof(people));
    for (size_t i = 0; i < DAY_PEOPLE; i++) {
        struct day_person *p = &people[i];
        p->name = week_kind_name(day_people[i].kind);
        p->jupyter = day_people[i].kind == WEEK_OVERNIGHT;
        p->present_span = -1;
        int who =
            day_pick(traces, day_people[i].kind, day_people[i].day, p->jupyter ? jcls : cls, p);
        print_message("  %s: person %d of the week, %s\n", p->name, who,
                      day_people[i].day ? "Thursday" : "Monday");
        day_gpu(p, 0);
        apply_ws(p->name, p->jupyter ? "it-day-jupyter" : "it-day", 1, NULL);
    }
    for (size_t i = 0; i < DAY_PEOPLE; i++)
        cJSON_Delete(wait_state(people[i].name, "Paused", 60000));
    /* 07:30: everyone's workspace paused since the night, nobody there yet */
    uint64_t t0 = harness_now_ms();
    int64_t start = harness_wall_ms();
    const int64_t length = DAY_LENGTH / DAY_SCALE;
    for (int64_t t; (t = (int64_t)(harness_now_ms() - t0)) < length;) {
        for (size_t i = 0; i < DAY_PEOPLE; i++)
            day_step(&people[i], t, start);
        usleep(100 * 1000);
    }
    /* 10:00 the next morning: the day ends. The ledger as it reads now: the
     * holds that ended, and the one going on until now. */
    int64_t end = start + length;
    double held[DAY_PEOPLE];
    cJSON *all = get_json("workspaces");
    assert_non_null(all);
    for (size_t i = 0; i < DAY_PEOPLE; i++) {
        const cJSON *item, *ws = NULL;
        cJSON_ArrayForEach(item, cJSON_GetObjectItem(all, "items"))
        {
            if (strcmp(str_at(item, "metadata.name"), people[i].name) == 0)
                ws = item;
        }
        assert_non_null(ws);
        int64_t since = time_at(ws, "status.accounting.acceleratorHeldSince");
        held[i] = num_at(ws, "status.accounting.acceleratorSecondsHeld") +
                  (since ? (double)(end - since) / 1000 : 0);
    }
    cJSON_Delete(all);
    /* Every workspace paused by hand, so that each writes its activity
     * record. */
    for (size_t i = 0; i < DAY_PEOPLE; i++)
        set_paused(people[i].name, 1);

    double held_sum = 0, trace_sum = 0, record_sum = 0;
    for (size_t i = 0; i < DAY_PEOPLE; i++) {
        struct day_person *p = &people[i];
        cJSON *ws = wait_state(p->name, "Paused", 60000);
        const cJSON *history = cJSON_GetObjectItem(cJSON_GetObjectItem(ws, "status"), "history");
        struct replay_times times = {0};
        measured_times(history, &times);
        print_message("  %s: the controller held %.1f s (step %lld ms, stop %lld ms, start %lld "
                      "ms)\n",
                      p->name, held[i], (long long)times.step_ms, (long long)times.stop_ms,
                      (long long)times.cold_start_ms);

        /* the trace itself, as the week benchmark replays it */
        struct replay_span spans[WEEK_MAX_SPANS];
        for (size_t k = 0; k < p->n; k++)
            spans[k] = (struct replay_span){start + p->spans[k].start_ms,
                                            start + p->spans[k].end_ms, p->spans[k].use};
        struct replay_input in = {
            .cls = p->jupyter ? jcls : cls,
            .start_ms = start,
            .end_ms = end,
            .start_paused = 1,
            .spans = spans,
            .n_spans = p->n,
            .times = times,
        };
        struct replay_result r;
        assert_int_equal(replay_run(&in, &r), 0);
        assert_same_pauses("the trace", history, end, &r);
        if (p->resume_late_ms)
            print_message("    its resumes reached the API server %.1f s late in all\n",
                          (double)p->resume_late_ms / 1000.0);
        assert_same_held("the trace", held[i], &r, (double)p->resume_late_ms / 1000.0);
        trace_sum += r.held_s;

        /* the record the controller kept, as what-if replays it */
        char what[200];
        snprintf(what, sizeof(what), "configmap %s-activity", p->name);
        cJSON *cm = get_json(what);
        assert_non_null(cm);
        struct activity_record rec = {0};
        assert_int_equal(activity_record_parse(str_at(cm, "data.record"), &rec, NULL), 0);
        print_message("    its record: %s\n", str_at(cm, "data.record"));
        cJSON_Delete(cm);
        struct replay_span *rspans = NULL;
        size_t n_rspans = 0;
        assert_int_equal(replay_spans_from_record(&rec, &rspans, &n_rspans), 0);
        in.start_ms = rec.start_s * 1000;
        in.start_paused = rec.runs[0].state == 'p';
        in.spans = rspans;
        in.n_spans = n_rspans;
        assert_int_equal(replay_run(&in, &r), 0);
        /* Rounds that got no answer while it ran (the probe's timeout on a
         * loaded machine): the record says nothing of what the controller
         * knew then, so its pauses may differ; the trace's replay above is
         * compared all the same. */
        unsigned unanswered = 0, waits = 0;
        for (size_t k = 1; k < rec.n; k++) {
            if (rec.runs[k].state == 'u' && rec.runs[k - 1].state != 'p' &&
                rec.runs[k - 1].state != 'w')
                unanswered += (unsigned)rec.runs[k].seconds;
            waits += rec.runs[k].state == 'w';
        }
        if (unanswered) {
            print_message("    its record: %u s of rounds without an answer while running: not "
                          "compared (%lld pauses in its replay)\n",
                          unanswered, (long long)r.pauses);
        } else {
            assert_same_pauses("its record", history, end, &r);
            /* A wait ('w') ends at the ready pod's first round, a second or
             * two after the hold began (measured: -5.5 s against 5 s with a
             * pause and two resumes): a second more for each. */
            assert_same_held("its record", held[i], &r, (double)waits);
        }
        record_sum += r.held_s;
        held_sum += held[i];
        free(rspans);
        activity_record_free(&rec);
        cJSON_Delete(ws);
    }
    print_message("  the day: held %.1f s by the controller, %.1f s in the trace's replay, %.1f s "
                  "in the record's\n",
                  held_sum, trace_sum, record_sum);
    workspace_class_free(cls);
    workspace_class_free(jcls);
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

static void apply_idle_class(const char *name, const char *activity, int warn_s)
{
    char extra[2048];
    snprintf(extra, sizeof(extra),
             "  idle: {after: %ds, minAfter: %ds, minRunning: 0s, warnBefore: %ds}\n"
             "  activity:\n"
             "    interval: 1s\n"
             "    timeout: 1s\n"
             "%s",
             IDLE_AFTER_S, warn_s < 10 ? 10 : warn_s + 1, warn_s, activity);
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
    apply_idle_class("it-jupyter", act, WARN_BEFORE_S);
    /* A longer warning, for the activity that takes an announced pause back:
     * on a loaded machine the annotation may take seconds to reach the
     * controller. */
    apply_idle_class("it-jupyter-warned", act, CANCEL_WARN_BEFORE_S);
    snprintf(act, sizeof(act), jupyter, busy_jupyter.port, "jupyter-token");
    apply_idle_class("it-jupyter-busy", act, WARN_BEFORE_S);
    snprintf(act, sizeof(act), jupyter, idle_jupyter.port, "wrong-token");
    apply_idle_class("it-jupyter-badtoken", act, WARN_BEFORE_S);
    snprintf(act, sizeof(act), jupyter, down_jupyter.port, "jupyter-token");
    apply_idle_class("it-jupyter-down", act, WARN_BEFORE_S);
    snprintf(act, sizeof(act), jupyter, idle_jupyter.port, "{workspace}-missing");
    apply_idle_class("it-jupyter-nosecret", act, WARN_BEFORE_S);
    snprintf(act, sizeof(act),
             "    application: CodeServer\n"
             "    url: http://127.0.0.1:%d/{namespace}/{workspace}\n",
             fake.port);
    apply_idle_class("it-code-server", act, WARN_BEFORE_S);
    snprintf(act, sizeof(act),
             "    application: Jupyter\n"
             "    url: http://127.0.0.1:%d\n"
             "    tokenSecretRef: {name: jupyter-token}\n"
             "    gpu: {prometheusURL: \"http://127.0.0.1:%d\"}\n",
             idle_jupyter.port, fake.port);
    apply_idle_class("it-jupyter-gpu", act, WARN_BEFORE_S);
    /* The week's day: "idle 2h" at a second for twelve minutes, on a node
     * of its own with a GPU for each of its people. */
    assert_int_equal(harness_apply("apiVersion: v1\n"
                                   "kind: Node\n"
                                   "metadata:\n"
                                   "  name: it-idle-day\n"
                                   "  annotations: {kwok.x-k8s.io/node: fake, "
                                   "node.alpha.kubernetes.io/ttl: \"0\"}\n"
                                   "  labels: {type: kwok, kubernetes.io/hostname: it-idle-day, "
                                   "nvidia.com/gpu.product: It-Day}\n"
                                   "spec:\n"
                                   "  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: "
                                   "NoSchedule}]\n"
                                   "status:\n"
                                   "  capacity: {cpu: \"8\", memory: 30Gi, pods: \"110\", "
                                   "nvidia.com/gpu: \"%zu\"}\n"
                                   "  allocatable: {cpu: \"8\", memory: 30Gi, pods: \"110\", "
                                   "nvidia.com/gpu: \"%zu\"}\n",
                                   DAY_PEOPLE, DAY_PEOPLE),
                     0);
    jupyter_start(&day_jupyter, "day-jupyter");
    const char *day = "  accelerator: {resourceName: nvidia.com/gpu, count: 1, product: It-Day}\n"
                      "  idle: {after: 10s, minAfter: 10s, minRunning: 1s, warnBefore: 1s}\n"
                      "  activity:\n"
                      "    interval: 1s\n"
                      "    timeout: 1s\n"
                      "    gpu: {prometheusURL: \"http://127.0.0.1:%d\"}\n"
                      "%s";
    char app[512];
    snprintf(app, sizeof(app),
             "    application: CodeServer\n"
             "    url: http://127.0.0.1:%d/{namespace}/{workspace}\n",
             fake.port);
    snprintf(act, sizeof(act), day, fake.port, app);
    apply_class("it-day", act);
    snprintf(app, sizeof(app),
             "    application: Jupyter\n"
             "    url: http://127.0.0.1:%d\n"
             "    tokenSecretRef: {name: jupyter-token}\n",
             day_jupyter.port);
    snprintf(act, sizeof(act), day, fake.port, app);
    apply_class("it-day-jupyter", act);
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    server_stop(&idle_jupyter);
    server_stop(&busy_jupyter);
    server_stop(&day_jupyter);
    server_stop(&fake);
    harness_kubectl(NULL, "delete node it-idle-day --wait=false");
    harness_namespace_delete(ns);
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
        cmocka_unit_test_setup(test_week_day, clean_slate),
        cmocka_unit_test_setup(test_bad_record, clean_slate),
    };
    if (getenv("IT_ONLY"))
        cmocka_set_test_filter(getenv("IT_ONLY"));
    return cmocka_run_group_tests_name("idle detection", tests, group_setup, group_teardown);
}
