/*
 * kubectl-workspace against the local cluster, with the controller (under
 * deploy/'s RBAC) and the snapshot simulator running, and the drill's
 * stand-in application (tests/tools/canary):
 *
 *   - list, compared with tests/data/cli/it-list.golden (ages normalised);
 *   - pause --wait and resume --wait: the progress and the final line agree
 *     with the status; waiting for capacity shown while the GPUs are taken,
 *     --timeout ends with exit 4, a second --wait follows it to ready;
 *   - keep-alive, describe and report checked for structure and values;
 *   - a workspace the controller refuses, listed and described with the
 *     field it cannot read;
 *   - the drill: PASS against the simulator's restores, COLD START in its
 *     cold-start mode, and the throw-away workspace deleted also on Ctrl-C;
 *   - exit codes and the errors naming what is wrong.
 *
 * Everything waits generously and nothing asserts a duration: on a loaded
 * machine things are slow, not different.
 */
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "util/buf.h"
#include "util/timefmt.h"
#include "workspaces.h"

#define LONG_WAIT 180000
#define STEP_TIMEOUT "5m"

static pid_t canary;
static int canary_port;

/* ---- running the plugin -------------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct buf b;
    buf_init(&b, 16u << 20);
    char chunk[4096];
    size_t n;
    while (f && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        assert_int_equal(buf_append(&b, chunk, n), 0);
    if (f)
        fclose(f);
    char *s = buf_steal(&b);
    buf_free(&b);
    return s;
}

/* Runs a shell command line; stdout and stderr captured (either may be
 * NULL). The plugin is killed after 15 minutes whatever happens. */
static int run(char **out, char **err, const char *cmdline)
{
    char errfile[600];
    snprintf(errfile, sizeof(errfile), "%s/cli-stderr", tmpdir);
    struct buf cmd;
    buf_init(&cmd, 1u << 20);
    assert_int_equal(buf_printf(&cmd, "timeout -s KILL 900 %s 2>'%s'", cmdline, errfile), 0);
    FILE *p = popen(buf_str(&cmd), "r");
    buf_free(&cmd);
    assert_non_null(p);
    struct buf b;
    buf_init(&b, 16u << 20);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        assert_int_equal(buf_append(&b, chunk, n), 0);
    int st = pclose(p);
    char *text = buf_steal(&b);
    buf_free(&b);
    char *etext = slurp(errfile);
    if (getenv("IT_SHOW_CLI"))
        fprintf(stderr, "--- %s\n%s%s", cmdline, text, etext);
    if (out)
        *out = text;
    else
        free(text);
    if (err)
        *err = etext;
    else
        free(etext);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* kubectl-workspace --kubeconfig <admin> -n <ns> ARGS */
static int cli(char **out, char **err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int cli(char **out, char **err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *args = NULL;
    if (vasprintf(&args, fmt, ap) < 0)
        args = NULL;
    va_end(ap);
    assert_non_null(args);
    char *line = NULL;
    assert_true(asprintf(&line, "'%s' --kubeconfig '%s' -n %s %s", KUBECTL_WORKSPACE_BIN,
                         harness_kubeconfig(), ns, args) > 0);
    fprintf(stderr, "  kubectl workspace %s\n", args);
    free(args);
    int rc = run(out, err, line);
    free(line);
    return rc;
}

/* The line of text that starts with prefix ("" when none); caller frees. */
static char *line_starting(const char *text, const char *prefix)
{
    for (const char *l = text; l && *l;) {
        const char *eol = strchr(l, '\n');
        size_t len = eol ? (size_t)(eol - l) : strlen(l);
        if (strncmp(l, prefix, strlen(prefix)) == 0)
            return strndup(l, len);
        l = eol ? eol + 1 : NULL;
    }
    return strdup("");
}

static void must_contain(const char *text, const char *what)
{
    if (!text || !strstr(text, what))
        fail_msg("expected \"%s\" in:\n%s", what, text ? text : "(nothing)");
}

/* The simulator's failure mode for a namespace's pods (NULL: back to normal). */
static void set_default_mode(const char *mode)
{
    if (mode)
        simulator_set_mode("_default", mode);
    else
        assert_int_equal(harness_kubectl(NULL,
                                         "-n %s patch configmap snapshot-simulator --type=json "
                                         "-p '[{\"op\":\"remove\",\"path\":\"/data/_default\"}]'",
                                         ns),
                         0);
}

static int drill_workspaces(void)
{
    char *out = NULL;
    harness_kubectl(&out, "-n %s get workspaces -l hibernator.dev/drill=true -o name", ns);
    int n = 0;
    for (char *p = out; p && *p; p++)
        n += *p == '\n';
    free(out);
    return n;
}

static int wait_no_drill_workspace(uint64_t timeout_ms)
{
    uint64_t end = harness_now_ms() + timeout_ms;
    while (harness_now_ms() < end) {
        if (drill_workspaces() == 0)
            return 1;
        usleep(500 * 1000);
    }
    return 0;
}

/* ---- list --------------------------------------------------------------------------- */

static int is_age(const char *s)
{
    /* kubectl ages: digits and unit letters, e.g. 45s, 5m30s, 2d4h */
    if (!*s)
        return 0;
    for (const char *p = s; *p; p++)
        if (!strchr("0123456789smhdy", *p))
            return 0;
    return s[0] >= '0' && s[0] <= '9';
}

/* Cells split at runs of two or more spaces, ages replaced by <age>, joined
 * by " | ": the golden file holds what the user reads, not when. */
static char *normalise_table(const char *text)
{
    struct buf b;
    buf_init(&b, 1u << 20);
    const char *line = text;
    while (line && *line) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        char *copy = strndup(line, len);
        int first = 1;
        char *p = copy;
        while (*p) {
            char *cell = p;
            char *gap = strstr(p, "  ");
            if (gap) {
                *gap = '\0';
                p = gap + 2;
                while (*p == ' ')
                    p++;
            } else {
                p += strlen(p);
            }
            assert_int_equal(
                buf_printf(&b, "%s%s", first ? "" : " | ", is_age(cell) ? "<age>" : cell), 0);
            first = 0;
        }
        assert_int_equal(buf_append_str(&b, "\n"), 0);
        free(copy);
        line = eol ? eol + 1 : NULL;
    }
    char *s = buf_steal(&b);
    buf_free(&b);
    return s;
}

static void test_list(void **state)
{
    (void)state;
    apply_ws("list-gpu", "it-cli-gpu", 0, NULL);
    apply_ws("list-cpu", "it-cli-cpu", 0, NULL);
    apply_ws("list-paused", "it-cli-cpu", 1, NULL);
    cJSON_Delete(wait_state("list-gpu", "Running", LONG_WAIT));
    cJSON_Delete(wait_state("list-cpu", "Running", LONG_WAIT));
    cJSON_Delete(wait_state("list-paused", "Paused", LONG_WAIT));

    char *out = NULL, *err = NULL;
    assert_int_equal(cli(&out, &err, "list"), 0);
    char *got = normalise_table(out);
    char path[600];
    snprintf(path, sizeof(path), "%s/tests/data/cli/it-list.golden", SOURCE_DIR);
    if (getenv("UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(got, f);
        fclose(f);
    }
    char *want = slurp(path);
    if (strcmp(want, got) != 0)
        fail_msg("list differs from %s:\n--- want\n%s--- got\n%s--- raw\n%s", path, want, got, out);
    free(want);
    free(got);
    free(out);
    free(err);

    /* -A adds the namespace; an empty namespace says so on stderr. */
    char *line = NULL;
    assert_true(asprintf(&line, "'%s' --kubeconfig '%s' list -A", KUBECTL_WORKSPACE_BIN,
                         harness_kubeconfig()) > 0);
    assert_int_equal(run(&out, NULL, line), 0);
    free(line);
    must_contain(out, "NAMESPACE");
    must_contain(out, ns);
    free(out);
    char *empty = harness_namespace("it-cli-empty");
    assert_true(asprintf(&line, "'%s' --kubeconfig '%s' -n %s list", KUBECTL_WORKSPACE_BIN,
                         harness_kubeconfig(), empty) > 0);
    assert_int_equal(run(&out, &err, line), 0);
    assert_string_equal(out, "");
    must_contain(err, "No workspaces found in namespace");
    free(line);
    free(out);
    free(err);
    harness_namespace_delete(empty);
    free(empty);
}

/* ---- pause, resume, describe, report --------------------------------------------- */

static void test_cycle(void **state)
{
    (void)state;
    apply_ws("cycle", "it-cli-gpu", 0, NULL);
    cJSON_Delete(wait_state("cycle", "Running", LONG_WAIT));

    char *out = NULL, *err = NULL;
    assert_int_equal(cli(&out, &err, "pause cycle --wait --timeout " STEP_TIMEOUT), 0);
    must_contain(out, "workspace \"cycle\": pause requested");
    must_contain(out, "paused in ");
    must_contain(out, "(snapshot ");
    free(out);
    free(err);
    cJSON *ws = ws_json("cycle");
    assert_string_equal(str_at(ws, "status.state"), "Paused");
    cJSON_Delete(ws);
    assert_int_equal(cli(&out, NULL, "pause cycle"), 0);
    must_contain(out, "is already paused");
    free(out);
    /* Paused for a few whole seconds, so some accelerator time is given back
     * (the status keeps whole seconds). */
    sleep(3);

    assert_int_equal(cli(&out, &err, "resume cycle --wait --timeout " STEP_TIMEOUT), 0);
    must_contain(out, "workspace \"cycle\": resume requested");
    ws = ws_json("cycle");
    assert_string_equal(str_at(ws, "status.state"), "Running");
    assert_string_equal(str_at(ws, "status.lastResume.restoredFrom"), "FromSnapshot");
    char ready[128];
    snprintf(ready, sizeof(ready), "ready in %.1fs (restored from snapshot)\n",
             num_at(ws, "status.lastResume.secondsToReady"));
    must_contain(out, ready);
    /* The last line is the result. */
    assert_string_equal(out + strlen(out) - strlen(ready), ready);
    free(out);
    free(err);

    assert_int_equal(cli(&out, NULL, "resume cycle"), 0);
    must_contain(out, "is not paused");
    free(out);

    /* describe: structure, and values that agree with the status. Events
     * are posted beside the status writes: give the last one time to land. */
    static const char *const order[] = {"Pausing", "SnapshotReady", "Paused", "Resuming",
                                        "Resumed"};
    char line[300];
    for (int attempt = 0;; attempt++) {
        assert_int_equal(cli(&out, &err, "describe cycle"), 0);
        const char *at = strstr(out, "Events:\n");
        size_t seen = 0;
        while (at && seen < sizeof(order) / sizeof(order[0])) {
            snprintf(line, sizeof(line), "Normal    %s ", order[seen]);
            at = strstr(at, line);
            seen += at != NULL;
        }
        if (seen == sizeof(order) / sizeof(order[0]))
            break;
        /* Oldest first: the pause's events before the resume's. */
        if (attempt == 30)
            fail_msg("event %s missing or out of order in:\n%s", order[seen], out);
        free(out);
        free(err);
        sleep(2);
    }
    must_contain(out, "Name:         cycle\n");
    snprintf(line, sizeof(line), "Namespace:    %s\n", ns);
    must_contain(out, line);
    must_contain(out, "Class:        it-cli-gpu\n");
    must_contain(out, "State:        Running since ");
    must_contain(out, "Accelerator:  1 x nvidia.com/gpu, Tesla-T4\n");
    must_contain(out, "Conditions:\n  TYPE ");
    char *cond = line_starting(out, "  Restored ");
    must_contain(cond, " True ");
    must_contain(cond, " FromSnapshot ");
    free(cond);
    must_contain(out, "Last pause:\n  Reason:               User\n");
    must_contain(out, "  Snapshot ready:       ");
    must_contain(out, "Last resume:\n");
    must_contain(out, "  Restored from:        snapshot (FromSnapshot)\n");
    snprintf(line, sizeof(line), "  Snapshot:\n"); /* not a top-level heading with two spaces */
    assert_null(strstr(out, line));
    snprintf(line, sizeof(line), "Snapshot:\n  Name:                 %s\n",
             str_at(ws, "status.snapshot.name"));
    must_contain(out, line);
    must_contain(out, "Accounting:\n  Pauses:               1\n  Resumes:              1\n");
    free(out);
    free(err);

    /* report: the figures of this one pause and resume. */
    assert_int_equal(cli(&out, &err, "report -o json --from 1h"), 0);
    cJSON *rep = cJSON_Parse(out);
    assert_non_null(rep);
    const cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rep, "groups"), 0);
    assert_non_null(g);
    assert_string_equal(str_at(g, "namespace"), ns);
    assert_string_equal(str_at(g, "class"), "it-cli-gpu");
    assert_true(num_at(g, "workspaces") == 1);
    assert_true(num_at(g, "pauses") == 1);
    assert_true(num_at(g, "resumes") == 1);
    assert_true(num_at(g, "resumesReady") == 1);
    assert_true(num_at(g, "coldStarts") == 0);
    assert_true(num_at(g, "coldStartShare") == 0);
    assert_true(num_at(g, "acceleratorHoursGivenBack") > 0);
    assert_true(num_at(g, "snapshotSeconds") > 0);
    /* The report rounds to a tenth of a second. */
    double want = num_at(ws, "status.lastResume.secondsToReady");
    assert_true(fabs(num_at(g, "secondsToReadyMedian") - want) < 0.051);
    assert_true(fabs(num_at(g, "secondsToReadyP90") - want) < 0.051);
    assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(rep, "notes")));
    cJSON_Delete(rep);
    free(out);
    free(err);

    assert_int_equal(cli(&out, &err, "report -o csv --from 1h"), 0);
    must_contain(out, "namespace,class,workspaces,accelerator_hours_held,"
                      "accelerator_hours_given_back,snapshot_seconds,seconds_to_ready_median,"
                      "seconds_to_ready_p90,cold_start_share,pauses,resumes,resumes_pre_warmed\n");
    snprintf(line, sizeof(line), "%s,it-cli-gpu,1,", ns);
    must_contain(out, line);
    free(out);
    free(err);
    assert_int_equal(cli(&out, &err, "report"), 0);
    must_contain(out, "Accelerator use from ");
    char *header = line_starting(out, "NAMESPACE ");
    must_contain(header, " CLASS ");
    must_contain(header, " GIVEN-BACK-H ");
    free(header);
    free(out);
    free(err);
    /* A range before the workspace existed: it is there, with nothing in it. */
    assert_int_equal(cli(&out, &err, "report -o json --from 30d --to 20d"), 0);
    rep = cJSON_Parse(out);
    g = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rep, "groups"), 0);
    assert_true(num_at(g, "pauses") == 0 && num_at(g, "acceleratorHoursGivenBack") == 0);
    cJSON_Delete(rep);
    free(out);
    free(err);
    cJSON_Delete(ws);
}

/* Waiting for capacity while every GPU is taken; --timeout; then ready. */
static void test_capacity(void **state)
{
    (void)state;
    apply_ws("wanted", "it-cli-gpu", 0, NULL);
    cJSON_Delete(wait_state("wanted", "Running", LONG_WAIT));
    char *out = NULL, *err = NULL;
    assert_int_equal(cli(&out, &err, "pause wanted --wait --timeout " STEP_TIMEOUT), 0);
    free(out);
    free(err);
    /* The local cluster has three GPUs: take them all. */
    const char *blockers[] = {"block-1", "block-2", "block-3"};
    for (size_t i = 0; i < 3; i++)
        apply_ws(blockers[i], "it-cli-gpu", 0, NULL);
    for (size_t i = 0; i < 3; i++)
        cJSON_Delete(wait_state(blockers[i], "Running", LONG_WAIT));

    assert_int_equal(cli(&out, &err, "resume wanted --wait --timeout 20s"), 4);
    must_contain(out, "workspace \"wanted\": resume requested");
    must_contain(err, "error: resume: timed out after 20s; last seen: ");
    free(out);
    free(err);
    cJSON_Delete(wait_state("wanted", "WaitingForCapacity", LONG_WAIT));

    /* Give one back while a second --wait follows the same resume. */
    pid_t freer = fork();
    assert_true(freer >= 0);
    if (freer == 0) {
        sleep(15); /* after the plugin below has seen the wait */
        harness_kubectl(NULL, "-n %s delete workspace block-1 --wait=false", ns);
        _exit(0);
    }
    assert_int_equal(cli(&out, &err, "resume wanted --wait --timeout " STEP_TIMEOUT), 0);
    waitpid(freer, NULL, 0);
    must_contain(out, "resume already requested (state WaitingForCapacity)");
    must_contain(out, "waiting for capacity");
    must_contain(out, "ready in ");
    must_contain(out, "(restored from snapshot)\n");
    const char *w = strstr(out, "waiting for capacity"), *r = strstr(out, "ready in ");
    assert_true(w < r);
    free(out);
    free(err);
}

static void test_keep_alive(void **state)
{
    (void)state;
    apply_ws("keep", "it-cli-cpu", 0, NULL);
    cJSON_Delete(wait_state("keep", "Running", LONG_WAIT));
    char *out = NULL, *err = NULL;
    time_t before = time(NULL);
    assert_int_equal(cli(&out, &err, "keep-alive keep --until 2h"), 0);
    must_contain(out, "workspace \"keep\": no automatic pause before ");
    free(out);
    free(err);
    cJSON *ws = ws_json("keep");
    const char *until = str_at(ws, "spec.keepAliveUntil");
    assert_non_null(until);
    int64_t t = 0;
    assert_int_equal(timefmt_parse_rfc3339(until, &t), 0);
    /* Two hours from when the command ran (whole seconds, a slow machine). */
    assert_true(t / 1000 >= before + 7200 - 1 && t / 1000 <= time(NULL) + 7200);
    cJSON_Delete(ws);

    assert_int_equal(cli(&out, &err, "keep-alive keep --until 2030-01-02T03:04:05Z"), 0);
    free(out);
    free(err);
    ws = ws_json("keep");
    assert_string_equal(str_at(ws, "spec.keepAliveUntil"), "2030-01-02T03:04:05Z");
    cJSON_Delete(ws);

    assert_int_equal(cli(&out, &err, "keep-alive keep --until none"), 0);
    must_contain(out, "keep-alive removed");
    free(out);
    free(err);
    ws = ws_json("keep");
    assert_null(str_at(ws, "spec.keepAliveUntil"));
    cJSON_Delete(ws);

    assert_int_equal(cli(NULL, &err, "keep-alive keep --until yesterday"), 2);
    must_contain(err, "--until: \"yesterday\"");
    free(err);
    assert_int_equal(cli(NULL, &err, "keep-alive nope --until 1h"), 3);
    must_contain(err, "workspace \"nope\" not found in namespace");
    free(err);
}

/* ---- a workspace the controller refuses ------------------------------------------------ */

/* The API server takes "2030-01-01T00:00:00,5Z" as a date-time (a comma
 * before the fraction); the controller reads RFC 3339 only, so it refuses
 * the spec (Valid False, InvalidSpec). The plugin still lists and
 * describes the workspace: what could be read, why the controller refuses
 * it, and the field it could not read. */
static void test_refused(void **state)
{
    (void)state;
    apply_ws("comma", "it-cli-cpu", 0,
             "  image: example.org/nb:1\n  keepAliveUntil: \"2030-01-01T00:00:00,5Z\"\n");
    cJSON_Delete(wait_reason("comma", "Valid", "InvalidSpec", LONG_WAIT));
    char *out = NULL, *err = NULL;
    assert_int_equal(cli(&out, &err, "describe comma"), 0);
    must_contain(out, "Image:        example.org/nb:1\n");
    must_contain(out, "Refused:      the controller cannot act on it: spec.keepAliveUntil: "
                      "\"2030-01-01T00:00:00,5Z\" is not an RFC 3339 time\n");
    must_contain(out, "Not read:\n  spec.keepAliveUntil: ");
    must_contain(out, "InvalidSpec");
    free(out);
    free(err);

    assert_int_equal(cli(&out, &err, "list"), 0);
    char *row = line_starting(out, "comma ");
    if (!row[0])
        fail_msg("no row for comma in:\n%s", out);
    free(row);
    char *note = NULL;
    assert_true(asprintf(&note, "\nNot read:\n  %s/comma: spec.keepAliveUntil: ", ns) > 0);
    must_contain(out, note);
    free(note);
    free(out);
    free(err);
}

/* ---- the drill ---------------------------------------------------------------------- */

static char *canary_url(void)
{
    char *u = NULL;
    assert_true(asprintf(&u, "http://127.0.0.1:%d/canary/{uid}", canary_port) > 0);
    return u;
}

static void test_drill_pass(void **state)
{
    (void)state;
    char *url = canary_url();
    char *out = NULL, *err = NULL;
    int rc = cli(&out, &err,
                 "drill --class it-cli-gpu --timeout " STEP_TIMEOUT " --canary-url '%s'", url);
    if (rc != 0)
        fail_msg("drill: exit %d\n%s%s", rc, out, err);
    must_contain(out, "drill: canary before the pause: ");
    must_contain(out, "drill: canary after the resume: ");
    must_contain(out, "ready in ");
    must_contain(out, "PASS: memory restored (same canary value, restored from snapshot); pause ");
    must_contain(out, ", snapshot ");
    must_contain(out, ", resume to ready ");
    must_contain(out, " deleted\n");
    /* The same value both times. */
    const char *b = strstr(out, "canary before the pause: ") + strlen("canary before the pause: ");
    const char *a = strstr(out, "canary after the resume: ") + strlen("canary after the resume: ");
    assert_int_equal(strncmp(a, b, 32), 0);
    assert_true(wait_no_drill_workspace(LONG_WAIT));
    free(out);
    free(err);
    free(url);
}

static void test_drill_cold_start(void **state)
{
    (void)state;
    set_default_mode("cold-start");
    char *url = canary_url();
    char *out = NULL, *err = NULL;
    int rc = cli(&out, &err,
                 "drill --class it-cli-gpu --timeout " STEP_TIMEOUT " --canary-url '%s'", url);
    set_default_mode(NULL);
    if (rc != 5)
        fail_msg("drill: exit %d, want 5\n%s%s", rc, out, err);
    must_contain(out, "ready in ");
    must_contain(out, "(restored from cold start)");
    must_contain(out, "COLD START: the canary value changed (restored from cold start); pause ");
    assert_true(wait_no_drill_workspace(LONG_WAIT));
    free(out);
    free(err);
    free(url);
}

/* Ctrl-C in the middle: the throw-away workspace goes all the same. The
 * canary URL answers 404, so the drill keeps retrying its first read (for up
 * to its timeout) and is surely still running when the signal comes. */
static void test_drill_interrupted(void **state)
{
    (void)state;
    char *url = NULL;
    assert_true(asprintf(&url, "http://127.0.0.1:%d/nothing-here/{uid}", canary_port) > 0);
    char log[600];
    snprintf(log, sizeof(log), "%s/drill-interrupted.log", tmpdir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(KUBECTL_WORKSPACE_BIN, KUBECTL_WORKSPACE_BIN, "--kubeconfig", harness_kubeconfig(),
              "-n", ns, "drill", "--class", "it-cli-gpu", "--timeout", STEP_TIMEOUT, "--canary-url",
              url, (char *)NULL);
        _exit(127);
    }
    /* Wait until its workspace runs, so there is something to clean up. */
    uint64_t end = harness_now_ms() + LONG_WAIT;
    int running = 0;
    while (!running && harness_now_ms() < end) {
        char *out = NULL;
        harness_kubectl(&out,
                        "-n %s get workspaces -l hibernator.dev/drill=true "
                        "-o jsonpath='{.items[*].status.state}'",
                        ns);
        running = out && strstr(out, "Running");
        free(out);
        if (!running)
            usleep(300 * 1000);
    }
    assert_true(running);
    assert_int_equal(kill(pid, SIGINT), 0);
    int st = 0;
    end = harness_now_ms() + LONG_WAIT;
    while (waitpid(pid, &st, WNOHANG) == 0 && harness_now_ms() < end)
        usleep(200 * 1000);
    char *text = slurp(log);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 130)
        fail_msg("drill after SIGINT: status %d\n%s", st, text);
    must_contain(text, "FAIL: interrupted");
    must_contain(text, " deleted\n");
    assert_null(strstr(text, "canary before the pause: "));
    free(text);
    assert_true(wait_no_drill_workspace(LONG_WAIT));
    free(url);
}

/* ---- errors and configuration -------------------------------------------------------- */

static void test_errors_and_config(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(cli(NULL, &err, "describe nope"), 3);
    must_contain(err, "error: workspace \"nope\" not found in namespace");
    free(err);
    assert_int_equal(cli(NULL, &err, "pause nope"), 3);
    free(err);
    assert_int_equal(cli(NULL, &err, "drill --class no-such-class"), 3);
    must_contain(err, "--class: WorkspaceClass \"no-such-class\" not found");
    free(err);
    assert_int_equal(cli(NULL, &err, "list --context no-such-context"), 1);
    must_contain(err, "context \"no-such-context\": no such context");
    free(err);
    assert_int_equal(cli(NULL, &err, "resume"), 2);
    must_contain(err, "resume needs the workspace's NAME");
    free(err);

    /* KUBECONFIG and the context's namespace, as kubectl finds them. */
    char *line = NULL;
    assert_true(asprintf(&line, "env KUBECONFIG='%s' '%s' list -A", harness_kubeconfig(),
                         KUBECTL_WORKSPACE_BIN) > 0);
    assert_int_equal(run(&out, NULL, line), 0);
    free(line);
    free(out);
    char *ctx = NULL;
    harness_kubectl(&ctx, "config current-context");
    ctx[strcspn(ctx, "\n")] = '\0';
    assert_true(asprintf(&line, "env KUBECONFIG='%s' '%s' --context %s -n %s describe nope",
                         harness_kubeconfig(), KUBECTL_WORKSPACE_BIN, ctx, ns) > 0);
    assert_int_equal(run(NULL, &err, line), 3);
    free(line);
    free(err);
    free(ctx);
}

/* ---- set-up ---------------------------------------------------------------------------- */

static int clean_slate(void **state)
{
    (void)state;
    delete_all_workspaces(120);
    return 0;
}

static pid_t start_canary(void)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    char log[600];
    snprintf(log, sizeof(log), "%s/canary.log", tmpdir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        dup2(fds[1], 1);
        close(fds[0]);
        execl(CANARY_BIN, CANARY_BIN, "--kubeconfig", harness_kubeconfig(), (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[64] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_int_equal(sscanf(line, "port=%d", &canary_port), 1);
    return pid;
}

static int group_setup(void **state)
{
    (void)state;
    it_deploy("it-cli");
    install_snapshot_crds("it-cli");
    ns = harness_namespace("it-cli");
    assert_int_equal(harness_kubectl(NULL, "-n %s create configmap snapshot-simulator", ns), 0);
    apply_class("it-cli-gpu",
                "  accelerator: {resourceName: nvidia.com/gpu, count: 1, product: Tesla-T4}\n"
                "  snapshot: {backend: GKE, storageConfigName: it-cli, timeout: 120s, "
                "retryAfter: 10m}\n");
    apply_class("it-cli-cpu", "");

    simulator_start("2s", NULL);
    canary = start_canary();
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    simulator_stop();
    if (canary > 0) {
        kill(canary, SIGTERM);
        waitpid(canary, NULL, 0);
    }
    harness_namespace_delete(ns);
    it_show_logs();
    free(ns);
    return 0;
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_list, clean_slate),
        cmocka_unit_test_setup(test_cycle, clean_slate),
        cmocka_unit_test_setup(test_capacity, clean_slate),
        cmocka_unit_test_setup(test_keep_alive, clean_slate),
        cmocka_unit_test_setup(test_refused, clean_slate),
        cmocka_unit_test_setup(test_drill_pass, clean_slate),
        cmocka_unit_test_setup(test_drill_cold_start, clean_slate),
        cmocka_unit_test_setup(test_drill_interrupted, clean_slate),
        cmocka_unit_test_setup(test_errors_and_config, clean_slate),
    };
    return cmocka_run_group_tests_name("kubectl-workspace", tests, group_setup, group_teardown);
}
