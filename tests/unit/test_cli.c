/*
 * kubectl-workspace: argument parsing, time and duration text, tables, the
 * progress of a resume, the drill's verdict, the report's arithmetic, and
 * golden outputs of list, describe and report computed from the fixed JSON
 * in tests/data/cli/ at a fixed "now". UPDATE_GOLDEN=1 rewrites the golden
 * files (then read the diff before committing it).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/api.h"
#include "cli/args.h"
#include "cli/canary.h"
#include "cli/describe.h"
#include "cli/drill.h"
#include "cli/ledger.h"
#include "cli/list.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/table.h"
#include "cli/timetext.h"
#include "cli/whatif.h"
#include "util/json.h"
#include "util/timefmt.h"
#include "workspace/workspace.h"

#define CLI_DIR TEST_DATA_DIR "/cli"

/* 2026-03-10T12:00:00Z, the "now" of every golden file. */
static int64_t now_ms(void)
{
    int64_t t = 0;
    assert_int_equal(timefmt_parse_rfc3339("2026-03-10T12:00:00Z", &t), 0);
    return t;
}

static int64_t at(const char *rfc3339)
{
    int64_t t = 0;
    assert_int_equal(timefmt_parse_rfc3339(rfc3339, &t), 0);
    return t;
}

/* ---- helpers ----------------------------------------------------------------- */

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static cJSON *load_json(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", CLI_DIR, name);
    char *text = read_file(path);
    if (!text)
        fail_msg("cannot read %s", path);
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j)
        fail_msg("%s is not JSON", path);
    return j;
}

/* Compares text with the golden file, or writes it with UPDATE_GOLDEN=1. */
static void golden(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", CLI_DIR, name);
    if (getenv("UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        return;
    }
    char *want = read_file(path);
    if (!want)
        fail_msg("%s missing (run with UPDATE_GOLDEN=1 to create it)", path);
    if (strcmp(want, text) != 0) {
        /* Name the first line that differs. */
        const char *a = want, *b = text;
        int line = 1;
        while (*a && *a == *b) {
            line += *a == '\n';
            a++;
            b++;
        }
        const char *ae = strchr(a, '\n'), *be = strchr(b, '\n');
        fail_msg("%s differs at line %d:\n want: %.*s\n  got: %.*s\n(UPDATE_GOLDEN=1 rewrites)",
                 name, line, (int)(ae ? ae - a : (long)strlen(a)), a,
                 (int)(be ? be - b : (long)strlen(b)), b);
    }
    free(want);
}

struct capture {
    char *text;
    size_t len;
    FILE *f;
};

static FILE *capture_start(struct capture *c)
{
    memset(c, 0, sizeof(*c));
    c->f = open_memstream(&c->text, &c->len);
    assert_non_null(c->f);
    return c->f;
}

static char *capture_end(struct capture *c)
{
    fclose(c->f);
    return c->text;
}

/* ---- arguments --------------------------------------------------------------- */

static int parse(const char *line, struct cli_args *a, char *err, size_t size)
{
    char *copy = strdup(line);
    char *argv[32] = {"kubectl-workspace"};
    int argc = 1;
    for (char *tok = strtok(copy, " "); tok && argc < 31; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    err[0] = '\0';
    int r = cli_args_parse(argc, argv, now_ms(), a, err, size);
    /* Strings in a point into argv: keep the copy for the caller's checks. */
    static char *keep[64];
    static int n_keep;
    free(keep[n_keep % 64]);
    keep[n_keep++ % 64] = copy;
    return r;
}

static void test_args_commands(void **state)
{
    (void)state;
    struct cli_args a;
    char err[512];
    assert_int_equal(parse("list", &a, err, sizeof(err)), 0);
    assert_int_equal(a.command, CLI_CMD_LIST);
    assert_null(a.ns);

    assert_int_equal(parse("-n team-a list", &a, err, sizeof(err)), 0);
    assert_string_equal(a.ns, "team-a");
    assert_int_equal(parse("list --namespace=team-b", &a, err, sizeof(err)), 0);
    assert_string_equal(a.ns, "team-b");
    assert_int_equal(parse("list -nteam-c", &a, err, sizeof(err)), 0);
    assert_string_equal(a.ns, "team-c");
    assert_int_equal(parse("list -A", &a, err, sizeof(err)), 0);
    assert_true(a.all_namespaces);

    assert_int_equal(parse("resume alice --wait --timeout 90s --kubeconfig /k --context c", &a, err,
                           sizeof(err)),
                     0);
    assert_int_equal(a.command, CLI_CMD_RESUME);
    assert_string_equal(a.name, "alice");
    assert_true(a.wait);
    assert_int_equal(a.timeout_ms, 90000);
    assert_string_equal(a.kubeconfig, "/k");
    assert_string_equal(a.context, "c");

    assert_int_equal(parse("resume alice --wait", &a, err, sizeof(err)), 0);
    assert_int_equal(a.timeout_ms, CLI_DEFAULT_WAIT_TIMEOUT_MS);
    assert_int_equal(parse("pause bob --wait=false", &a, err, sizeof(err)), 0);
    assert_false(a.wait);

    assert_int_equal(parse("drill --class gpu-t4 --canary-url http://127.0.0.1:9/canary/{uid}", &a,
                           err, sizeof(err)),
                     0);
    assert_int_equal(a.command, CLI_CMD_DRILL);
    assert_string_equal(a.class_name, "gpu-t4");
    assert_string_equal(a.canary_url, "http://127.0.0.1:9/canary/{uid}");
    assert_int_equal(a.timeout_ms, CLI_DEFAULT_DRILL_TIMEOUT_MS);

    assert_int_equal(parse("help resume", &a, err, sizeof(err)), 0);
    assert_true(a.help);
    assert_int_equal(a.command, CLI_CMD_RESUME);
    assert_int_equal(parse("describe x -h", &a, err, sizeof(err)), 0);
    assert_true(a.help);
    assert_int_equal(parse("", &a, err, sizeof(err)), 0);
    assert_int_equal(a.command, CLI_CMD_NONE);
    assert_int_equal(parse("--version", &a, err, sizeof(err)), 0);
    assert_int_equal(a.command, CLI_CMD_VERSION);
    assert_int_equal(parse("describe -- -odd-name", &a, err, sizeof(err)), 0);
    assert_string_equal(a.name, "-odd-name");
}

/* Each way to give a flag its value, before and after the command. */
static void test_args_value_forms(void **state)
{
    (void)state;
    struct cli_args a;
    char err[512];
    static const char *const lines[] = {
        "list --namespace=team-d", "list --namespace team-d", "list -n team-d", "list -n=team-d",
        "list -nteam-d",           "--namespace team-d list", "-n=team-d list",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (parse(lines[i], &a, err, sizeof(err)) != 0)
            fail_msg("\"%s\": %s", lines[i], err);
        assert_string_equal(a.ns, "team-d");
    }
    /* A value may start with '-'; a boolean's value only comes after '='. */
    assert_int_equal(parse("list --context -c- -A=false", &a, err, sizeof(err)), 0);
    assert_string_equal(a.context, "-c-");
    assert_false(a.all_namespaces);
    assert_int_equal(parse("list --all-namespaces=true", &a, err, sizeof(err)), 0);
    assert_true(a.all_namespaces);
    assert_int_equal(parse("pause a --wait false", &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "unexpected argument \"false\""));
    assert_int_equal(parse("report -ojson --from=2026-03-01 --to 2026-03-02", &a, err, sizeof(err)),
                     0);
    assert_int_equal(a.output, CLI_OUTPUT_JSON);
    assert_int_equal(a.to_ms, at("2026-03-02T00:00:00Z"));
}

/* The scanner's state is global: a parse that stopped inside an element
 * ("-zq") must not leak into the next one, and argv keeps its order. */
static void test_args_parse_again(void **state)
{
    (void)state;
    struct cli_args a;
    char err[512];
    char *argv[] = {"kubectl-workspace", "-n", "x", "pause", "--wait", "w", "-zq", NULL};
    char *orig[8];
    memcpy(orig, argv, sizeof(argv));
    for (int round = 0; round < 3; round++) {
        assert_int_equal(cli_args_parse(7, argv, now_ms(), &a, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, "unknown flag: -z");
        assert_memory_equal(argv, orig, sizeof(argv));
        assert_int_equal(cli_args_parse(6, argv, now_ms(), &a, err, sizeof(err)), 0);
        assert_string_equal(a.ns, "x");
        assert_string_equal(a.name, "w");
        assert_true(a.wait);
        assert_memory_equal(argv, orig, sizeof(argv));
    }
    assert_int_equal(cli_args_parse(1, argv, now_ms(), &a, err, sizeof(err)), 0);
    assert_int_equal(a.command, CLI_CMD_NONE);
}

/* Every usage error names the flag or argument at fault. */
static void test_args_errors(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        const char *names;
    } cases[] = {
        {"frobnicate", "unknown command \"frobnicate\""},
        {"list --bogus", "unknown flag: --bogus"},
        {"list -z", "unknown flag: -z"},
        {"list --wait", "--wait is not a flag of list"},
        {"what-if --from 1d", "--from is not a flag of what-if"},
        {"what-if bob", "unexpected argument \"bob\""},
        {"pause", "pause needs the workspace's NAME"},
        {"pause a b", "unexpected argument \"b\""},
        {"list extra", "unexpected argument \"extra\""},
        {"list -n", "-n needs a value"},
        {"list -n x -A", "-n/--namespace and -A/--all-namespaces"},
        {"resume a --timeout 10m", "--timeout only applies with --wait"},
        {"resume a --wait --timeout soon", "--timeout: \"soon\" is not a duration"},
        {"resume a --wait --timeout 0", "--timeout: \"0\""},
        {"keep-alive a", "keep-alive needs --until"},
        {"keep-alive a --until tomorrow", "--until: \"tomorrow\" is neither a time"},
        {"keep-alive a --until 2026-03-10T11:00:00Z",
         "--until: 2026-03-10T11:00:00Z is in the past"},
        {"keep-alive a --until 2026-02-30", "--until: \"2026-02-30\""},
        {"report -o yaml", "-o: \"yaml\" is not one of table, csv, json"},
        {"report --from 2d --to 3d", "--from must be before --to"},
        {"report --from 1h --to 2026-03-10T00:00:00Z", "--from must be before --to"},
        {"report --from now", "--from must be before --to (default: now)"},
        {"drill", "drill needs --class CLASS"},
        {"drill --class c --canary-url ftp://x", "--canary-url: \"ftp://x\" is not an http"},
        {"drill --class c --canary-port 70000", "--canary-port: \"70000\" is not a port"},
        {"list --kubeconfig=", "--kubeconfig: empty path"},
        {"list --wait=maybe", "--wait is not a flag of list"},
        {"pause a --wait=maybe", "--wait: \"maybe\" is not true or false"},
        {"list -Ax", "flags do not combine"},
        {"list -A -h -zq", "unknown flag: -z"},
        {"list --bogus=1", "unknown flag: --bogus"},
        /* A long flag is spelled in full: no prefixes, even unambiguous ones. */
        {"list --names=x", "unknown flag: --names"},
        {"resume a --wait --time 1m", "unknown flag: --time"},
        {"list --c x", "unknown flag: --c"},
        /* A flag's value missing at the end, each way it can be spelled. */
        {"list --namespace", "--namespace needs a value"},
        {"list --kubeconfig", "--kubeconfig needs a value"},
        {"resume a --wait --timeout", "--timeout needs a value"},
        {"drill --class", "--class needs a value"},
        {"report -o", "-o needs a value"},
        {"list --all-namespaces=maybe", "--all-namespaces: \"maybe\" is not true or false"},
        {"list -A=maybe", "-A: \"maybe\" is not true or false"},
        {"help frob", "help: unknown command \"frob\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cli_args a;
        char err[512];
        int r = parse(cases[i].line, &a, err, sizeof(err));
        if (r != -EINVAL)
            fail_msg("\"%s\": accepted, want an error naming %s", cases[i].line, cases[i].names);
        if (!strstr(err, cases[i].names))
            fail_msg("\"%s\": error \"%s\" does not say \"%s\"", cases[i].line, err,
                     cases[i].names);
    }
}

static void test_args_times(void **state)
{
    (void)state;
    struct cli_args a;
    char err[512];
    assert_int_equal(parse("keep-alive a --until 2h", &a, err, sizeof(err)), 0);
    assert_int_equal(a.until_ms, now_ms() + 2 * 3600 * 1000);
    assert_false(a.until_clear);
    assert_int_equal(parse("keep-alive a --until 2026-03-11T03:00:00+01:00", &a, err, sizeof(err)),
                     0);
    assert_int_equal(a.until_ms, at("2026-03-11T02:00:00Z"));
    assert_int_equal(parse("keep-alive a --until none", &a, err, sizeof(err)), 0);
    assert_true(a.until_clear);

    assert_int_equal(parse("report", &a, err, sizeof(err)), 0);
    assert_int_equal(a.to_ms, now_ms());
    assert_int_equal(a.from_ms, now_ms() - CLI_DEFAULT_REPORT_SPAN_MS);
    assert_int_equal(a.output, CLI_OUTPUT_TABLE);
    assert_int_equal(parse("report --from 2026-03-01 --to 1d -o csv", &a, err, sizeof(err)), 0);
    assert_int_equal(a.from_ms, at("2026-03-01T00:00:00Z"));
    assert_int_equal(a.to_ms, at("2026-03-09T12:00:00Z"));
    assert_int_equal(a.output, CLI_OUTPUT_CSV);
    assert_int_equal(parse("report --to 2026-03-05T00:00:00Z -o json", &a, err, sizeof(err)), 0);
    assert_int_equal(a.from_ms, at("2026-02-26T00:00:00Z"));
    assert_int_equal(a.output, CLI_OUTPUT_JSON);

    assert_int_equal(parse("what-if -A -o csv", &a, err, sizeof(err)), 0);
    assert_int_equal(a.command, CLI_CMD_WHAT_IF);
    assert_true(a.all_namespaces);
    assert_int_equal(a.output, CLI_OUTPUT_CSV);
}

/* ---- time and duration text --------------------------------------------------- */

static void test_timetext_age(void **state)
{
    (void)state;
    /* k8s.io/apimachinery/pkg/util/duration's own table, and the edges. */
    static const struct {
        int64_t ms;
        const char *want;
    } cases[] = {
        {-3000, "<invalid>"},
        {-1500, "0s"},
        {0, "0s"},
        {1000, "1s"},
        {70 * 1000, "70s"},
        {119 * 1000, "119s"},
        {120 * 1000, "2m"},
        {190 * 1000, "3m10s"},
        {10 * 60 * 1000, "10m"},
        {70 * 60 * 1000, "70m"},
        {179 * 60 * 1000, "179m"},
        {3 * 3600 * 1000, "3h"},
        {(5 * 60 + 30) * 60 * 1000LL, "5h30m"},
        {47 * 3600 * 1000LL, "47h"},
        {49 * 3600 * 1000LL, "2d1h"},
        {(8 * 24 + 2) * 3600 * 1000LL, "8d"},
        {367 * 24 * 3600 * 1000LL, "367d"},
        {(365 * 2 * 24 + 25) * 3600 * 1000LL, "2y1d"},
        {(365 * 8 * 24 + 2) * 3600 * 1000LL, "8y"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[TIMETEXT_SIZE];
        timetext_age(cases[i].ms, out);
        if (strcmp(out, cases[i].want) != 0)
            fail_msg("%lld ms: \"%s\", want \"%s\"", (long long)cases[i].ms, out, cases[i].want);
    }
    char out[TIMETEXT_SIZE];
    timetext_age_at(0, now_ms(), out);
    assert_string_equal(out, "-");
    timetext_seconds(12.44, out);
    assert_string_equal(out, "12.4s");
    timetext_seconds(0, out);
    assert_string_equal(out, "0.0s");
    timetext_seconds(-1, out);
    assert_string_equal(out, "-");
    timetext_seconds(7200, out);
    assert_string_equal(out, "120m");
    timetext_time(at("2026-03-10T07:52:40Z"), out);
    assert_string_equal(out, "2026-03-10T07:52:40Z");
}

static void test_timetext_parse(void **state)
{
    (void)state;
    int64_t t;
    int64_t now = now_ms();
    assert_int_equal(timetext_parse_duration("1h30m", &t), 0);
    assert_int_equal(t, 5400000);
    assert_int_equal(timetext_parse_duration("7d", &t), 0);
    assert_int_equal(t, 7 * 86400000LL);
    assert_int_equal(timetext_parse_duration("1.5h", &t), -EINVAL);
    assert_int_equal(timetext_parse_until("90m", now, &t), 0);
    assert_int_equal(t, now + 5400000);
    assert_int_equal(timetext_parse_until("2026-03-12", now, &t), 0);
    assert_int_equal(t, at("2026-03-12T00:00:00Z"));
    assert_int_equal(timetext_parse_until("now", now, &t), -EINVAL);
    assert_int_equal(timetext_parse_point("now", now, &t), 0);
    assert_int_equal(t, now);
    assert_int_equal(timetext_parse_point("12h", now, &t), 0);
    assert_int_equal(t, at("2026-03-10T00:00:00Z"));
    assert_int_equal(timetext_parse_point("2024-02-29", now, &t), 0);
    assert_int_equal(timetext_parse_point("2025-02-29", now, &t), -EINVAL);
    assert_int_equal(timetext_parse_point("2026-13-01", now, &t), -EINVAL);
    assert_int_equal(timetext_parse_point("2026-3-01", now, &t), -EINVAL);
    assert_int_equal(timetext_parse_point("-1h", now, &t), -EINVAL);
    assert_int_equal(timetext_parse_point("", now, &t), -EINVAL);
    assert_int_equal(timetext_parse_point("yesterday", now, &t), -EINVAL);
}

/* ---- tables -------------------------------------------------------------------- */

static void test_table_layout(void **state)
{
    (void)state;
    static const char *const headers[] = {"NAME", "STATE", "MESSAGE"};
    struct table *t = table_new(3, headers);
    assert_non_null(t);
    static const char *const r1[] = {"a", "Running", "ok"};
    static const char *const r2[] = {"a-much-longer-name", NULL, "two\nlines\x1b[31m"};
    static const char *const r3[] = {"ünïcode", "Paused", "x,\"y\""};
    assert_int_equal(table_add_row(t, r1), 0);
    assert_int_equal(table_add_row(t, r2), 0);
    assert_int_equal(table_add_row(t, r3), 0);
    assert_int_equal(table_rows(t), 3);

    struct capture c;
    table_print(t, capture_start(&c), 0);
    char *text = capture_end(&c);
    /* Widest cell + 3, at least 10; the last column is not padded; control
     * characters become spaces; widths count characters, not bytes. */
    assert_string_equal(text, "NAME                 STATE     MESSAGE\n"
                              "a                    Running   ok\n"
                              "a-much-longer-name             two lines [31m\n"
                              "ünïcode              Paused    x,\"y\"\n");
    free(text);

    table_print(t, capture_start(&c), 2);
    text = capture_end(&c);
    assert_true(strncmp(text, "  NAME ", 7) == 0);
    free(text);

    table_print_csv(t, capture_start(&c));
    text = capture_end(&c);
    assert_string_equal(text, "NAME,STATE,MESSAGE\n"
                              "a,Running,ok\n"
                              "a-much-longer-name,,two lines [31m\n"
                              "ünïcode,Paused,\"x,\"\"y\"\"\"\n");
    free(text);
    table_free(t);

    assert_int_equal(text_width("ünïcode"), 7);
    text_print_clean(capture_start(&c), "a\x9b"
                                        "b\xc2\x9b"
                                        "c\x7f");
    text = capture_end(&c);
    assert_string_equal(text, "a\x9b"
                              "b  c ");
    free(text);
    /* A bidi override would reorder the rest of the line on the terminal. */
    text_print_clean(capture_start(&c), "x\xe2\x80\xaey\xe2\x81\xa6z");
    text = capture_end(&c);
    assert_string_equal(text, "x   y   z");
    free(text);
}

/* ---- progress ----------------------------------------------------------------- */

/* A workspace of this status, as the plugin decodes it. */
static struct workspace *ws_with(const char *status_json, int64_t generation)
{
    char *text = NULL;
    assert_true(asprintf(&text,
                         "{\"metadata\":{\"name\":\"w\",\"generation\":%lld},"
                         "\"spec\":{\"className\":\"c\",\"paused\":false},\"status\":%s}",
                         (long long)generation, status_json) > 0);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    struct workspace *ws = NULL;
    assert_int_equal(workspace_decode_lenient(j, &ws), 0);
    cJSON_Delete(j);
    assert_int_equal(ws->n_unread, 0);
    return ws;
}

static void observe(struct progress *p, const char *status, int64_t generation, int64_t t,
                    enum progress_phase want)
{
    struct workspace *ws = ws_with(status, generation);
    progress_observe(p, ws, t);
    workspace_free(ws);
    if (p->phase != want)
        fail_msg("phase %d (%s), want %d for %s", p->phase, p->detail, want, status);
}

static void test_progress_resume(void **state)
{
    (void)state;
    int64_t t0 = now_ms();
    /* The answer to the patch: generation 6, the old status (an earlier
     * resume's readyAt included, which must not count). */
    const char *paused = "{\"observedGeneration\":5,\"state\":\"Paused\","
                         "\"accounting\":{\"pauses\":2,\"resumes\":1},"
                         "\"lastResume\":{\"requestedAt\":\"2026-03-09T10:00:00Z\","
                         "\"readyAt\":\"2026-03-09T10:00:05Z\",\"secondsToReady\":5,"
                         "\"restoredFrom\":\"FromCheckpoint\"}}";
    struct workspace *after = ws_with(paused, 6);
    struct progress p;
    progress_begin(&p, PROGRESS_RESUME, after, t0);
    workspace_free(after);
    assert_true(p.counted_expected);
    observe(&p, paused, 6, t0 + 100, PROGRESS_REQUESTED);
    /* Seen, but still the old count: not this resume yet. */
    observe(&p,
            "{\"observedGeneration\":6,\"state\":\"Paused\",\"accounting\":{\"pauses\":2,"
            "\"resumes\":1},\"lastResume\":{\"readyAt\":\"2026-03-09T10:00:05Z\"}}",
            6, t0 + 200, PROGRESS_REQUESTED);
    observe(&p,
            "{\"observedGeneration\":6,\"state\":\"WaitingForCapacity\","
            "\"accounting\":{\"pauses\":2,\"resumes\":2},"
            "\"lastResume\":{\"requestedAt\":\"2026-03-10T12:00:00Z\"},"
            "\"conditions\":[{\"type\":\"CapacityAvailable\",\"status\":\"False\","
            "\"reason\":\"Unschedulable\",\"message\":\"0/3 nodes are available\"}]}",
            6, t0 + 5000, PROGRESS_WAITING_FOR_CAPACITY);
    assert_string_equal(p.detail, "0/3 nodes are available");
    char line[256];
    progress_line(&p, t0 + 12000, line, sizeof(line));
    assert_string_equal(line, "[   12s] waiting for capacity: 0/3 nodes are available");
    /* Under Kueue: its queue, and the place moving. */
    observe(&p,
            "{\"observedGeneration\":6,\"state\":\"Queued\","
            "\"accounting\":{\"pauses\":2,\"resumes\":2},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
            "\"reason\":\"WaitingForAdmission\",\"message\":\"pod w-3 waits in Kueue queue gpus, "
            "number 2 of 2 waiting there since 2026-03-10T12:00:01Z: quota\"}]}",
            6, t0 + 13000, PROGRESS_QUEUED);
    progress_line(&p, t0 + 14000, line, sizeof(line));
    assert_string_equal(line, "[   14s] queued: pod w-3 waits in Kueue queue gpus, number 2 of 2 "
                              "waiting there since 2026-03-10T12:00:01Z: quota");
    observe(&p,
            "{\"observedGeneration\":6,\"state\":\"Resuming\","
            "\"accounting\":{\"pauses\":2,\"resumes\":2},"
            "\"conditions\":[{\"type\":\"Restored\",\"status\":\"Unknown\","
            "\"reason\":\"Restoring\"},{\"type\":\"Ready\",\"status\":\"False\","
            "\"reason\":\"PodStarting\",\"message\":\"pod w-3 is starting on n1\"}]}",
            6, t0 + 20000, PROGRESS_STARTING);
    assert_string_equal(p.detail, "restoring from the snapshot: pod w-3 is starting on n1");
    /* Ready, but the restore's outcome is not known yet. */
    observe(&p,
            "{\"observedGeneration\":6,\"state\":\"Running\","
            "\"accounting\":{\"pauses\":2,\"resumes\":2},"
            "\"lastResume\":{\"requestedAt\":\"2026-03-10T12:00:00Z\","
            "\"readyAt\":\"2026-03-10T12:00:25Z\",\"secondsToReady\":25.3},"
            "\"conditions\":[{\"type\":\"Restored\",\"status\":\"Unknown\","
            "\"reason\":\"Restoring\"}]}",
            6, t0 + 26000, PROGRESS_CONFIRMING);
    observe(&p,
            "{\"observedGeneration\":6,\"state\":\"Running\","
            "\"accounting\":{\"pauses\":2,\"resumes\":2},"
            "\"lastResume\":{\"requestedAt\":\"2026-03-10T12:00:00Z\","
            "\"readyAt\":\"2026-03-10T12:00:25Z\",\"secondsToReady\":25.3,"
            "\"restoredFrom\":\"FromSnapshot\"},"
            "\"conditions\":[{\"type\":\"Restored\",\"status\":\"True\","
            "\"reason\":\"FromSnapshot\"}]}",
            6, t0 + 27000, PROGRESS_DONE);
    progress_result(&p, line, sizeof(line));
    assert_string_equal(line, "ready in 25.3s (restored from snapshot)");

    /* A second --wait on a resume under way follows that resume. */
    const char *waiting = "{\"observedGeneration\":6,\"state\":\"WaitingForCapacity\","
                          "\"accounting\":{\"pauses\":2,\"resumes\":2},"
                          "\"lastResume\":{\"requestedAt\":\"2026-03-10T12:00:00Z\"}}";
    after = ws_with(waiting, 6);
    progress_begin(&p, PROGRESS_RESUME, after, t0 + 30000);
    workspace_free(after);
    assert_true(p.counted_expected);
    observe(&p, waiting, 6, t0 + 30000, PROGRESS_WAITING_FOR_CAPACITY);
    observe(&p,
            "{\"observedGeneration\":6,\"state\":\"Running\","
            "\"accounting\":{\"pauses\":2,\"resumes\":2},"
            "\"lastResume\":{\"requestedAt\":\"2026-03-10T12:00:00Z\","
            "\"readyAt\":\"2026-03-10T12:00:40Z\",\"secondsToReady\":40.2,"
            "\"restoredFrom\":\"ColdStart\"},"
            "\"conditions\":[{\"type\":\"Restored\",\"status\":\"True\","
            "\"reason\":\"ColdStart\"}]}",
            6, t0 + 45000, PROGRESS_DONE);
    progress_result(&p, line, sizeof(line));
    assert_string_equal(line, "ready in 40.2s (restored from cold start)");
}

static void test_progress_pause_and_start(void **state)
{
    (void)state;
    int64_t t0 = now_ms();
    const char *running = "{\"observedGeneration\":3,\"state\":\"Running\","
                          "\"accounting\":{\"pauses\":0,\"resumes\":0}}";
    struct workspace *after = ws_with(running, 4);
    struct progress p;
    progress_begin(&p, PROGRESS_PAUSE, after, t0);
    workspace_free(after);
    /* An old Paused state of a generation before the request is not this pause. */
    observe(&p, "{\"observedGeneration\":3,\"state\":\"Paused\"}", 4, t0, PROGRESS_REQUESTED);
    observe(&p,
            "{\"observedGeneration\":4,\"state\":\"Pausing\",\"conditions\":"
            "[{\"type\":\"SnapshotReady\",\"status\":\"False\",\"reason\":\"Checkpointing\"}]}",
            4, t0 + 500, PROGRESS_PAUSING);
    assert_string_equal(p.detail, "the application is writing its checkpoint");
    observe(&p,
            "{\"observedGeneration\":4,\"state\":\"Pausing\",\"conditions\":"
            "[{\"type\":\"SnapshotReady\",\"status\":\"False\",\"reason\":\"InProgress\"}]}",
            4, t0 + 1000, PROGRESS_PAUSING);
    assert_string_equal(p.detail, "taking the snapshot");
    observe(&p,
            "{\"observedGeneration\":4,\"state\":\"Paused\","
            "\"lastPause\":{\"requestedAt\":\"2026-03-10T12:00:00Z\"},"
            "\"snapshot\":{\"requestedAt\":\"2026-03-10T12:00:01Z\","
            "\"readyAt\":\"2026-03-10T12:00:04Z\",\"seconds\":3.2}}",
            4, t0 + 8200, PROGRESS_DONE);
    char line[256];
    progress_result(&p, line, sizeof(line));
    assert_string_equal(line, "paused in 8.2s (snapshot 3.2s)");

    /* A new workspace: Running and Ready; Failed ends it. */
    after = ws_with("{}", 1);
    progress_begin(&p, PROGRESS_RUNNING, after, t0);
    workspace_free(after);
    observe(&p, "{\"observedGeneration\":1,\"state\":\"Pending\"}", 1, t0, PROGRESS_STARTING);
    observe(&p,
            "{\"observedGeneration\":1,\"state\":\"Running\",\"conditions\":[{\"type\":"
            "\"Ready\",\"status\":\"True\",\"reason\":\"PodReady\"},{\"type\":\"Restored\","
            "\"status\":\"True\",\"reason\":\"Fresh\"}]}",
            1, t0 + 4100, PROGRESS_DONE);
    progress_result(&p, line, sizeof(line));
    assert_string_equal(line, "running in 4.1s");
    progress_begin(&p, PROGRESS_RUNNING, after = ws_with("{}", 1), t0);
    workspace_free(after);
    observe(&p, "{\"observedGeneration\":1,\"state\":\"Failed\",\"message\":\"spec.image: no\"}", 1,
            t0, PROGRESS_FAILED);
    assert_string_equal(p.detail, "spec.image: no");
}

/* ---- drill, percentiles, canary URLs ------------------------------------------ */

static void test_drill_judge(void **state)
{
    (void)state;
    assert_int_equal(drill_judge("v1", "v1", "FromSnapshot"), DRILL_PASS);
    assert_int_equal(drill_judge("v1", "v2", "FromSnapshot"), DRILL_COLD_START);
    assert_int_equal(drill_judge("v1", "v1", "ColdStart"), DRILL_COLD_START);
    assert_int_equal(drill_judge("v1", "v1", "FromCheckpoint"), DRILL_COLD_START);
    assert_int_equal(drill_judge("v1", "v2", "ColdStart"), DRILL_COLD_START);
    assert_int_equal(drill_judge("v1", NULL, "FromSnapshot"), DRILL_FAIL);
    assert_int_equal(drill_judge("v1", "v1", NULL), DRILL_FAIL);
    assert_int_equal(drill_judge("v1", "v1", "Restoring"), DRILL_FAIL);
}

static void test_drill_cold_start_why(void **state)
{
    (void)state;
    char why[256];
    drill_cold_start_why("v1", "v2", "FromSnapshot", why, sizeof(why));
    assert_string_equal(why, "the canary value changed although the controller reports a restore "
                             "from the snapshot: the process is a new one, its memory did not "
                             "come back");
    drill_cold_start_why("v1", "v2", "FromCheckpoint", why, sizeof(why));
    assert_string_equal(why, "the canary value changed (restored from checkpoint)");
    drill_cold_start_why("v1", "v1", "ColdStart", why, sizeof(why));
    assert_string_equal(why, "the same canary value (restored from cold start)");
    drill_cold_start_why("v1", "v2", "Fresh", why, sizeof(why));
    assert_string_equal(why, "the canary value changed (restored from fresh start)");
}

static void test_percentile(void **state)
{
    (void)state;
    const double four[] = {1, 2, 3, 4};
    assert_true(fabs(report_percentile(four, 4, 0.5) - 2.5) < 1e-9);
    assert_true(fabs(report_percentile(four, 4, 0.9) - 3.7) < 1e-9);
    const double one[] = {6};
    assert_true(report_percentile(one, 1, 0.9) == 6);
    double ten[10];
    for (int i = 0; i < 10; i++)
        ten[i] = i + 1;
    assert_true(fabs(report_percentile(ten, 10, 0.9) - 9.1) < 1e-9);
    assert_true(isnan(report_percentile(ten, 0, 0.5)));
}

static void test_canary_url(void **state)
{
    (void)state;
    struct canary_target t = {"team a", "w", "w-2", "0a1b", 8888};
    char *u = canary_url("http://127.0.0.1:9/canary/{uid}?pod={pod}&ns={namespace}&x={other}", &t);
    assert_string_equal(u, "http://127.0.0.1:9/canary/0a1b?pod=w-2&ns=team%20a&x={other}");
    free(u);
}

static void test_canary_http_error(void **state)
{
    (void)state;
    /* A body that would break the drill's one-line verdict or steer the
     * terminal: line breaks, an escape sequence, DEL. */
    char *m = canary_http_error(503, "not\r\nready \x1b[2Jyet\x7f");
    assert_string_equal(m, "HTTP 503: not  ready  [2Jyet ");
    free(m);

    /* Only the first CANARY_ERROR_BODY bytes are quoted. */
    char body[CANARY_ERROR_BODY + 50];
    memset(body, 'x', sizeof(body) - 1);
    body[sizeof(body) - 1] = '\0';
    m = canary_http_error(500, body);
    assert_int_equal(strlen(m), strlen("HTTP 500: ") + CANARY_ERROR_BODY);
    free(m);

    m = canary_http_error(404, "");
    assert_string_equal(m, "HTTP 404: ");
    free(m);
}

/* ---- the report's arithmetic, by hand -------------------------------------------- */

static void test_report_intervals(void **state)
{
    (void)state;
    /* Two GPUs; range 10:00..12:00 (now 12:00). */
    cJSON *list = cJSON_Parse(
        "{\"items\":[{\"metadata\":{\"name\":\"w\",\"namespace\":\"n\"},"
        "\"spec\":{\"className\":\"g\"},\"status\":{"
        "\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\",\"count\":2},"
        "\"accounting\":{\"pauses\":2,\"resumes\":1,"
        "\"acceleratorHeldSince\":\"2026-03-10T11:50:00Z\"},"
        "\"history\":["
        /* held 11:00-11:30 (30m), given back 11:30-11:50 (20m) */
        "{\"pausedAt\":\"2026-03-10T11:29:00Z\",\"heldSince\":\"2026-03-10T11:00:00Z\","
        "\"acceleratorReleasedAt\":\"2026-03-10T11:30:00Z\",\"snapshotSeconds\":40,"
        "\"snapshotReadyAt\":\"2026-03-10T11:29:40Z\","
        "\"resumeRequestedAt\":\"2026-03-10T11:49:00Z\","
        "\"podScheduledAt\":\"2026-03-10T11:50:00Z\",\"readyAt\":\"2026-03-10T11:50:10Z\","
        "\"secondsToReady\":70,\"restoredFrom\":\"FromSnapshot\"},"
        /* held 08:00-10:30, of which 10:00-10:30 is in range; given back until 11:00 */
        "{\"pausedAt\":\"2026-03-10T10:29:00Z\",\"heldSince\":\"2026-03-10T08:00:00Z\","
        "\"acceleratorReleasedAt\":\"2026-03-10T10:30:00Z\","
        "\"podScheduledAt\":\"2026-03-10T11:00:00Z\"}"
        "]}}]}");
    assert_non_null(list);
    struct report *r = NULL;
    assert_int_equal(
        report_compute(list, at("2026-03-10T10:00:00Z"), at("2026-03-10T12:00:00Z"), now_ms(), &r),
        0);
    assert_int_equal(r->n_groups, 1);
    const struct report_group *g = &r->groups[0];
    /* 2 x (30m + 30m + the current 10m) */
    assert_true(fabs(g->held_s - 2 * 70 * 60) < 1e-6);
    /* 2 x (20m + 30m) */
    assert_true(fabs(g->given_back_s - 2 * 50 * 60) < 1e-6);
    assert_true(fabs(g->snapshot_s - 40) < 1e-6);
    assert_int_equal(g->pauses, 2);
    assert_int_equal(g->resumes, 1);
    assert_int_equal(g->n_ready, 1);
    assert_true(g->ready_p50 == 70);
    assert_int_equal(g->restores, 1);
    assert_int_equal(g->lost_memory, 0);
    assert_int_equal(r->n_notes, 0); /* 2 pauses, 2 records: nothing missing */
    report_free(r);

    /* The same before the range: nothing held or given back in it. */
    assert_int_equal(
        report_compute(list, at("2026-03-09T00:00:00Z"), at("2026-03-09T12:00:00Z"), now_ms(), &r),
        0);
    assert_true(r->groups[0].held_s == 0 && r->groups[0].given_back_s == 0);
    assert_int_equal(r->groups[0].pauses, 0);
    report_free(r);
    cJSON_Delete(list);
}

/* A storm of 30 pauses in the last hour: the history keeps 20, none of them
 * a cold start, while the counters of status.accounting say 2 of the 30
 * resumes were. A range that begins before the oldest kept record counts
 * from the counters (the whole life, said in a note); one within the kept
 * history counts from the records. The percentiles are the records'. */
static cJSON *storm(int64_t cold, int64_t from_snapshot)
{
    char *text = NULL, *records = strdup("");
    assert_non_null(records);
    int64_t base = at("2026-03-10T11:00:00Z");
    for (int i = 0; i < WORKSPACE_HISTORY_MAX; i++) {
        /* newest first: pause i at 11:58 - 2i min, ready 60 s after the resume */
        int64_t paused = base + (int64_t)(58 - 2 * i) * 60000;
        char p[TIMEFMT_RFC3339_SIZE], rel[TIMEFMT_RFC3339_SIZE], res[TIMEFMT_RFC3339_SIZE],
            ready[TIMEFMT_RFC3339_SIZE];
        timefmt_rfc3339_text(paused, p);
        timefmt_rfc3339_text(paused + 10000, rel);
        timefmt_rfc3339_text(paused + 60000, res);
        timefmt_rfc3339_text(paused + 70000, ready);
        char *more = NULL;
        assert_true(asprintf(&more,
                             "%s%s{\"pausedAt\":\"%s\",\"acceleratorReleasedAt\":\"%s\","
                             "\"memory\":\"snapshot\",\"resumeRequestedAt\":\"%s\","
                             "\"podScheduledAt\":\"%s\",\"readyAt\":\"%s\","
                             "\"secondsToReady\":%d,\"restoredFrom\":\"FromSnapshot\"}",
                             records, i ? "," : "", p, rel, res, res, ready, 10 + i) > 0);
        free(records);
        records = more;
    }
    assert_true(asprintf(&text,
                         "{\"items\":[{\"metadata\":{\"name\":\"storm\",\"namespace\":\"team-c\","
                         "\"creationTimestamp\":\"2026-03-01T00:00:00Z\",\"generation\":61},"
                         "\"spec\":{\"className\":\"gpu-t4\"},\"status\":{"
                         "\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\",\"count\":1},"
                         "\"accounting\":{\"pauses\":30,\"resumes\":30,"
                         "\"resumesFrom\":{\"fromSnapshot\":%lld,\"coldStart\":%lld},"
                         "\"pausesKept\":{\"snapshot\":30}},"
                         "\"history\":[%s]}}]}",
                         (long long)from_snapshot, (long long)cold, records) > 0);
    free(records);
    cJSON *list = cJSON_Parse(text);
    free(text);
    assert_non_null(list);
    return list;
}

static void test_report_counters(void **state)
{
    (void)state;
    cJSON *list = storm(2, 28);
    struct report *r = NULL;
    /* the last 7 days: before the oldest kept record (10:20) */
    assert_int_equal(report_compute(list, at("2026-03-03T12:00:00Z"), now_ms(), now_ms(), &r), 0);
    const struct report_group *g = &r->groups[0];
    assert_int_equal(g->whole_life, 1);
    assert_int_equal(g->restores, 30);
    assert_int_equal(g->lost_memory, 2);
    assert_int_equal(g->resumes_from[1], 2);
    assert_int_equal(g->resumes_from[0], 28);
    assert_int_equal(g->pauses_kept[0], 30);
    assert_int_equal(g->pauses, 30);
    assert_int_equal(g->resumes, 30);
    assert_int_equal(g->n_ready, 20); /* the percentiles: the kept records only */
    assert_true(fabs(g->ready_p50 - 19.5) < 1e-9);
    assert_int_equal(g->percentiles_since_ms, at("2026-03-10T11:20:00Z"));
    struct capture c, nc;
    FILE *nf = capture_start(&nc);
    assert_int_equal(report_print(r, CLI_OUTPUT_TABLE, capture_start(&c), nf), 0);
    char *text = capture_end(&c);
    free(capture_end(&nc));
    assert_non_null(strstr(text, "7%"));
    assert_non_null(strstr(text,
                           "team-c/storm: history reaches back to 2026-03-10T11:20:00Z only "
                           "(20 of 30 pauses kept); its PAUSES, RESUMES, PRE-WARMED and "
                           "COLD-START come from status.accounting and cover its whole life"));
    assert_non_null(strstr(text, "team-c/gpu-t4: READY-P50 and READY-P90 are of the 20 resumes "
                                 "ready in the range that the kept histories hold, complete since "
                                 "2026-03-10T11:20:00Z only"));
    free(text);
    nf = capture_start(&nc);
    assert_int_equal(report_print(r, CLI_OUTPUT_JSON, capture_start(&c), nf), 0);
    text = capture_end(&c);
    free(capture_end(&nc));
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    const cJSON *jg = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "groups"), 0);
    assert_int_equal(cJSON_GetObjectItem(jg, "coldStarts")->valueint, 2);
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(jg, "resumesFrom"), "coldStart")->valueint, 2);
    assert_string_equal(cJSON_GetObjectItem(jg, "percentilesSince")->valuestring,
                        "2026-03-10T11:20:00Z");
    assert_int_equal(cJSON_GetObjectItem(jg, "wholeLifeCounts")->valueint, 1);
    cJSON_Delete(j);
    free(text);
    report_free(r);

    /* A range the kept history covers: the records count, by time. */
    assert_int_equal(report_compute(list, at("2026-03-10T11:30:00Z"), now_ms(), now_ms(), &r), 0);
    g = &r->groups[0];
    assert_int_equal(g->whole_life, 0);
    assert_int_equal(g->short_histories, 0);
    assert_int_equal(g->lost_memory, 0);
    assert_int_equal(g->pauses, 15); /* 11:30 .. 11:58 */
    assert_int_equal(r->n_notes, 0);
    report_free(r);
    cJSON_Delete(list);

    /* Counters short of the kept history (counting began after it, or a
     * controller from before them): the records count, as before. */
    list = storm(0, 5);
    assert_int_equal(report_compute(list, at("2026-03-03T12:00:00Z"), now_ms(), now_ms(), &r), 0);
    g = &r->groups[0];
    assert_int_equal(g->whole_life, 0);
    assert_int_equal(g->short_histories, 1);
    assert_int_equal(g->restores, 20);
    assert_int_equal(g->pauses, 20);
    assert_non_null(strstr(r->notes[0], "use before then is not counted"));
    report_free(r);
    cJSON_Delete(list);
}

/* ---- golden outputs ----------------------------------------------------------- */

static void test_golden_list(void **state)
{
    (void)state;
    cJSON *list = load_json("workspaces.json");
    struct capture c;
    assert_int_equal(list_print(list, 1, now_ms(), capture_start(&c)), 5);
    char *text = capture_end(&c);
    golden("list-all.golden", text);
    free(text);

    /* -n team-a: the API server filters; so does the test. */
    cJSON *items = cJSON_GetObjectItemCaseSensitive(list, "items");
    for (int i = cJSON_GetArraySize(items) - 1; i >= 0; i--) {
        const cJSON *ws = cJSON_GetArrayItem(items, i);
        const char *ns = json_string(json_member(ws, "metadata"), "namespace");
        if (strcmp(ns, "team-a") != 0)
            cJSON_DeleteItemFromArray(items, i);
    }
    assert_int_equal(list_print(list, 0, now_ms(), capture_start(&c)), 3);
    text = capture_end(&c);
    golden("list-team-a.golden", text);
    free(text);
    cJSON_Delete(list);

    cJSON *empty = cJSON_Parse("{\"items\":[]}");
    assert_int_equal(list_print(empty, 0, now_ms(), capture_start(&c)), 0);
    text = capture_end(&c);
    assert_string_equal(text, "");
    free(text);
    cJSON_Delete(empty);
}

static const cJSON *item(const cJSON *list, const char *name)
{
    const cJSON *ws;
    cJSON_ArrayForEach(ws, json_member(list, "items"))
    {
        if (strcmp(json_string(json_member(ws, "metadata"), "name"), name) == 0)
            return ws;
    }
    fail_msg("no workspace %s in the fixture", name);
    return NULL;
}

static void test_golden_describe(void **state)
{
    (void)state;
    cJSON *list = load_json("workspaces.json");
    cJSON *events = load_json("events.json");
    cJSON *none = cJSON_Parse("{\"items\":[]}");
    struct capture c;
    static const struct {
        const char *name;
        int events; /* 0: none, 1: the fixture, -1: could not be read */
    } cases[] = {
        {"alice-nb", 1}, {"bob-ide", 1}, {"carol-gpu", 0}, {"dave-cpu", -1}, {"erin", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const cJSON *ev = cases[i].events > 0 ? events : cases[i].events == 0 ? none : NULL;
        assert_int_equal(describe_print(item(list, cases[i].name), ev, now_ms(), capture_start(&c)),
                         0);
        char *text = capture_end(&c);
        char name[128];
        snprintf(name, sizeof(name), "describe-%s.golden", cases[i].name);
        golden(name, text);
        free(text);
    }
    cJSON_Delete(none);
    cJSON_Delete(events);
    cJSON_Delete(list);
}

/* A paused workspace whose snapshot no node can restore is named in the
 * notes: every policy's next resume of it starts from files. */
static void test_what_if_unrestorable(void **state)
{
    (void)state;
    cJSON *list = cJSON_Parse(
        "{\"items\":[{\"metadata\":{\"namespace\":\"team-a\",\"name\":\"old-pool\"},"
        "\"status\":{\"conditions\":[{\"type\":\"SnapshotReady\",\"status\":\"False\","
        "\"reason\":\"NotRestorable\",\"message\":\"snapshot s1 was taken on a node of "
        "version v1.35\"}]}},{\"metadata\":{\"namespace\":\"team-a\",\"name\":\"fine\"},"
        "\"status\":{\"conditions\":[{\"type\":\"SnapshotReady\",\"status\":\"True\","
        "\"reason\":\"Ready\"}]}}]}");
    cJSON *none = cJSON_Parse("{\"items\":[]}");
    struct whatif *w = NULL;
    assert_int_equal(whatif_compute(list, none, none, now_ms(), NULL, &w), 0);
    int named = 0;
    for (size_t i = 0; i < w->n_notes; i++) {
        named += strstr(w->notes[i], "team-a/old-pool: its paused snapshot cannot come back "
                                     "(snapshot s1 was taken on a node of version v1.35)") != NULL;
        assert_null(strstr(w->notes[i], "team-a/fine"));
    }
    assert_int_equal(named, 1);
    whatif_free(w);
    cJSON_Delete(none);
    cJSON_Delete(list);
}

/* what-if over recorded activity: one row a policy, golden in each format;
 * the records it cannot use are named in the notes. */
static void test_golden_what_if(void **state)
{
    (void)state;
    cJSON *list = load_json("workspaces.json");
    cJSON *classes = load_json("classes.json");
    cJSON *records = load_json("activity.json");
    struct whatif *w = NULL;
    assert_int_equal(whatif_compute(list, classes, records, now_ms(), NULL, &w), 0);
    assert_int_equal(w->n_rows, 8);
    /* bob-ide and alice-nb replayed; the other two named */
    assert_int_equal(w->rows[0].workspaces, 2);
    assert_string_equal(w->rows[0].policy, "current");
    int missing = 0, unreadable = 0;
    for (size_t i = 0; i < w->n_notes; i++) {
        missing +=
            strstr(w->notes[i], "team-a/gone: an activity record without its workspace") != NULL;
        unreadable += strstr(w->notes[i], "team-a/carol-gpu: its record cannot be read") != NULL;
    }
    assert_int_equal(missing, 1);
    assert_int_equal(unreadable, 1);
    /* A shorter idle time gives back more; nothing is paused while busy. */
    assert_true(w->rows[1].returned_s >= w->rows[4].returned_s);
    for (size_t i = 0; i < w->n_rows; i++)
        assert_int_equal(w->rows[i].busy_pauses, 0);
    /* bob-ide's owner comes at 09:00 CET on Tuesday: the pre-warm (current)
     * has the notebook ready; without it, not. */
    assert_int_equal(w->rows[0].prewarms, 2); /* Monday and Tuesday */
    assert_true(w->rows[0].first_arrivals_ready > w->rows[7].first_arrivals_ready);
    static const struct {
        enum cli_output format;
        const char *golden;
    } formats[] = {{CLI_OUTPUT_TABLE, "what-if.golden"},
                   {CLI_OUTPUT_CSV, "what-if-csv.golden"},
                   {CLI_OUTPUT_JSON, "what-if-json.golden"}};
    for (size_t i = 0; i < 3; i++) {
        struct capture c, notes;
        FILE *nf = capture_start(&notes);
        assert_int_equal(whatif_print(w, formats[i].format, capture_start(&c), nf), 0);
        char *text = capture_end(&c);
        char *note_text = capture_end(&notes);
        /* CSV keeps its notes apart, the others carry them */
        if (formats[i].format == CLI_OUTPUT_CSV)
            assert_non_null(strstr(note_text, "note: team-a/gone:"));
        else
            assert_string_equal(note_text, "");
        golden(formats[i].golden, text);
        free(text);
        free(note_text);
    }
    whatif_free(w);
    cJSON_Delete(records);
    cJSON_Delete(classes);
    cJSON_Delete(list);
}

static void test_golden_report(void **state)
{
    (void)state;
    cJSON *list = load_json("workspaces.json");
    struct report *r = NULL;
    assert_int_equal(report_compute(list, at("2026-03-03T12:00:00Z"), now_ms(), now_ms(), &r), 0);
    /* Hand-checked figures (docs/kubectl-workspace.md explains each). */
    assert_int_equal(r->n_groups, 2);
    const struct report_group *gpu = &r->groups[0];
    assert_string_equal(gpu->ns, "team-a");
    assert_string_equal(gpu->class_name, "gpu-t4");
    assert_int_equal(gpu->workspaces, 3);
    assert_true(fabs(gpu->held_s - 174518) < 1e-6);
    assert_true(fabs(gpu->given_back_s - 930552) < 1e-6);
    assert_true(fabs(gpu->snapshot_s - 468.9) < 1e-6);
    assert_true(fabs(gpu->ready_p50 - 84.5) < 1e-6);
    assert_true(fabs(gpu->ready_p90 - 135.0) < 1e-6);
    assert_int_equal(gpu->restores, 4);
    assert_int_equal(gpu->lost_memory, 2);
    assert_int_equal(gpu->pauses, 5);
    assert_int_equal(gpu->resumes, 5);
    const struct report_group *cpu = &r->groups[1];
    assert_string_equal(cpu->ns, "team-b");
    assert_int_equal(cpu->workspaces, 2);
    assert_true(cpu->held_s == 0 && cpu->given_back_s == 0);
    assert_int_equal(cpu->pauses, 2);
    assert_int_equal(cpu->lost_memory, 1);
    /* bob-ide's short history (no counters by outcome: its counts stay the
     * range's), carol-gpu's missing one, and what team-a/gpu-t4's
     * percentiles cover */
    assert_int_equal(gpu->short_histories, 1);
    assert_int_equal(gpu->whole_life, 0);
    assert_int_equal(gpu->percentiles_since_ms, at("2026-03-05T09:00:00Z"));
    assert_int_equal(cpu->short_histories, 0);
    assert_int_equal(cpu->percentiles_since_ms, at("2026-03-03T12:00:00Z"));
    assert_int_equal(r->n_notes, 3);
    assert_string_equal(r->notes[2], "team-a/gpu-t4: READY-P50 and READY-P90 are of the 4 resumes "
                                     "ready in the range that the kept histories hold, complete "
                                     "since 2026-03-05T09:00:00Z only");

    struct capture c;
    static const struct {
        enum cli_output format;
        const char *file;
    } outputs[] = {
        {CLI_OUTPUT_TABLE, "report.golden"},
        {CLI_OUTPUT_CSV, "report-csv.golden"},
        {CLI_OUTPUT_JSON, "report-json.golden"},
    };
    for (size_t i = 0; i < sizeof(outputs) / sizeof(outputs[0]); i++) {
        struct capture notes;
        FILE *nf = capture_start(&notes);
        assert_int_equal(report_print(r, outputs[i].format, capture_start(&c), nf), 0);
        char *text = capture_end(&c);
        char *note_text = capture_end(&notes);
        if (outputs[i].format == CLI_OUTPUT_CSV)
            assert_non_null(strstr(note_text, "note: team-a/bob-ide: history reaches back"));
        else
            assert_string_equal(note_text, "");
        golden(outputs[i].file, text);
        if (outputs[i].format == CLI_OUTPUT_JSON) {
            cJSON *j = cJSON_Parse(text);
            assert_non_null(j);
            cJSON_Delete(j);
        }
        free(text);
        free(note_text);
    }
    report_free(r);
    cJSON_Delete(list);
}

static void test_ledger_fallback(void **state)
{
    (void)state;
    /* Without status.history: the last pause, its snapshot, and the resume after it. */
    cJSON *list = load_json("workspaces.json");
    struct workspace *ws = NULL;
    struct ledger l;
    assert_int_equal(workspace_decode_lenient(item(list, "carol-gpu"), &ws), 0);
    ledger_read(ws, &l);
    assert_false(l.from_history);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.records[0].pause.requested_ms, at("2026-03-09T20:00:00Z"));
    assert_int_equal(l.records[0].pause.accelerator_released_ms, at("2026-03-09T20:02:10Z"));
    assert_int_equal(l.records[0].pause.snapshot_ready_ms, at("2026-03-09T20:01:55Z"));
    assert_true(l.records[0].pause.snapshot_seconds == 114.0);
    assert_int_equal(l.records[0].resume.requested_ms, at("2026-03-10T11:50:00Z"));
    assert_int_equal(l.accelerators, 1);
    workspace_free(ws);
    assert_int_equal(workspace_decode_lenient(item(list, "dave-cpu"), &ws), 0);
    ledger_read(ws, &l);
    assert_int_equal(l.n, 0);
    assert_int_equal(l.accelerators, 0);
    assert_int_equal(ws->status.pauses, 0);
    workspace_free(ws);
    cJSON_Delete(list);
}

/* A workspace Kueue holds back: describe shows its queue, its place and
 * why it is not admitted (status.queue). */
static void test_describe_queued(void **state)
{
    (void)state;
    cJSON *ws = cJSON_Parse(
        "{\"apiVersion\":\"hibernator.dev/v1alpha1\",\"kind\":\"Workspace\","
        "\"metadata\":{\"name\":\"gina\",\"namespace\":\"team-a\",\"generation\":3},"
        "\"spec\":{\"className\":\"gpu-t4-queued\",\"paused\":false},"
        "\"status\":{\"observedGeneration\":3,\"state\":\"Queued\","
        "\"stateSince\":\"2026-03-10T11:58:00Z\",\"podName\":\"gina-4\","
        "\"queue\":{\"name\":\"gpus\",\"position\":2,\"pending\":3,"
        "\"waitingSince\":\"2026-03-10T11:58:00Z\",\"message\":\"couldn't assign flavors to "
        "pod set main: insufficient unused quota for nvidia.com/gpu in flavor t4, 1 more "
        "needed\"}}}");
    assert_non_null(ws);
    struct capture c;
    assert_int_equal(describe_print(ws, NULL, now_ms(), capture_start(&c)), 0);
    char *text = capture_end(&c);
    assert_non_null(strstr(text, "State:        Queued since "));
    assert_non_null(strstr(text, "Queue:        gpus, number 2 of 3, since "));
    assert_non_null(strstr(text, "Not admitted: couldn't assign flavors to pod set main: "
                                 "insufficient unused quota for nvidia.com/gpu in flavor t4, 1 "
                                 "more needed\n"));
    free(text);

    /* No visibility API: the place is not known, and says so. */
    cJSON *q = cJSON_GetObjectItem(cJSON_GetObjectItem(ws, "status"), "queue");
    cJSON_DeleteItemFromObject(q, "position");
    cJSON_DeleteItemFromObject(q, "pending");
    cJSON_DeleteItemFromObject(q, "message");
    assert_int_equal(describe_print(ws, NULL, now_ms(), capture_start(&c)), 0);
    text = capture_end(&c);
    assert_non_null(strstr(text, "Queue:        gpus, place not known, since "));
    assert_null(strstr(text, "Not admitted:"));
    free(text);
    cJSON_Delete(ws);
}

/* A pause whose pod went while no controller ran: describe says the
 * deletion was not observed instead of leaving it out. */
static void test_describe_unobserved(void **state)
{
    (void)state;
    cJSON *ws = cJSON_Parse(
        "{\"apiVersion\":\"hibernator.dev/v1alpha1\",\"kind\":\"Workspace\","
        "\"metadata\":{\"name\":\"hal\",\"namespace\":\"team-a\",\"generation\":2},"
        "\"spec\":{\"className\":\"gpu-t4\",\"paused\":true},"
        "\"status\":{\"observedGeneration\":2,\"state\":\"Paused\","
        "\"stateSince\":\"2026-03-10T11:50:00Z\",\"lastPause\":{\"requestedAt\":"
        "\"2026-03-10T11:40:00Z\",\"reason\":\"User\",\"memory\":\"snapshot\","
        "\"snapshotReadyAt\":\"2026-03-10T11:40:30Z\",\"snapshotSeconds\":30,"
        "\"acceleratorReleasedAt\":\"2026-03-10T11:41:00Z\",\"unobserved\":\"podDeletedAt\"}}}");
    assert_non_null(ws);
    struct capture c;
    assert_int_equal(describe_print(ws, NULL, now_ms(), capture_start(&c)), 0);
    char *text = capture_end(&c);
    assert_non_null(strstr(text, "not observed (the pod went while no controller was running)\n"));
    free(text);
    cJSON_Delete(ws);
}

/* An object the controller refuses (a spec it cannot read) or cannot read
 * at all (no name) is still listed and described, with what could not be
 * read named field by field. */
static void test_lenient(void **state)
{
    (void)state;
    cJSON *list = load_json("broken.json");
    struct capture c;
    assert_int_equal(list_print(list, 1, now_ms(), capture_start(&c)), 2);
    char *text = capture_end(&c);
    assert_non_null(strstr(text, "team-b      frank     -         "));
    assert_non_null(strstr(text, "\nNot read:\n"));
    assert_non_null(strstr(text, "team-b/frank: spec.image: must be a string\n"));
    assert_non_null(
        strstr(text, "team-b/frank: status.state: \"Hibernating\" is not a known state\n"));
    assert_non_null(strstr(text, "team-b/(no name): metadata.name: required\n"));
    golden("list-broken.golden", text);
    free(text);

    const cJSON *frank = cJSON_GetArrayItem(json_member(list, "items"), 0);
    assert_int_equal(describe_print(frank, NULL, now_ms(), capture_start(&c)), 0);
    text = capture_end(&c);
    /* What could be read is shown; the rest is named. */
    assert_non_null(strstr(text, "Class:        cpu-small\n"));
    assert_non_null(strstr(text, "Home:         frank-home, 5Gi\n"));
    assert_non_null(strstr(
        text, "Refused:      the controller cannot act on it: spec.image: must be a string\n"));
    assert_non_null(strstr(text, "  spec.paused: must be true or false\n"));
    assert_non_null(strstr(text, "  spec.idle.after: \"soon\" is not a duration such as \"2h\"\n"));
    assert_non_null(strstr(text, "  status.lastPause.requestedAt: not an RFC 3339 time\n"));
    assert_non_null(strstr(text, "  status.accounting.pauses: not a whole number\n"));
    assert_non_null(strstr(text, "State:        (not read, see above)\n"));
    golden("describe-frank.golden", text);
    free(text);

    const cJSON *unnamed = cJSON_GetArrayItem(json_member(list, "items"), 1);
    assert_int_equal(describe_print(unnamed, NULL, now_ms(), capture_start(&c)), 0);
    text = capture_end(&c);
    assert_non_null(strstr(text, "Name:         -\n"));
    assert_non_null(
        strstr(text, "Refused:      the controller cannot read it: metadata.name: required\n"));
    free(text);

    struct report *r = NULL;
    assert_int_equal(report_compute(list, at("2026-03-03T12:00:00Z"), now_ms(), now_ms(), &r), 0);
    assert_int_equal(r->n_groups, 1);
    assert_int_equal(r->groups[0].workspaces, 2);
    report_free(r);
    cJSON_Delete(list);
}

/* A signal stops every wait until it is acknowledged (a drill's clean-up
 * then runs); one that came while no wait was running still counts. */
static int never_done(void *data)
{
    (void)data;
    return 0;
}

static void test_interrupts_are_sticky(void **state)
{
    (void)state;
    struct cli_api api;
    memset(&api, 0, sizeof(api));
    assert_int_equal(uv_loop_init(&api.loop), 0);
    assert_int_equal(cli_api_sleep(&api, 10), 0);
    api.interrupted = 1; /* as the signal handler does, between two waits */
    assert_int_equal(cli_api_sleep(&api, 10), -EINTR);
    assert_int_equal(cli_api_run_until(&api, never_done, NULL, cli_api_now(&api) + 10, NULL),
                     -EINTR);
    cli_api_acknowledge_interrupts(&api);
    assert_int_equal(cli_api_run_until(&api, never_done, NULL, cli_api_now(&api) + 10, NULL),
                     -ETIMEDOUT);
    api.interrupted++; /* a second Ctrl-C stops the clean-up too */
    assert_int_equal(cli_api_sleep(&api, 10), -EINTR);
    assert_int_equal(uv_loop_close(&api.loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args_commands),
        cmocka_unit_test(test_args_errors),
        cmocka_unit_test(test_args_value_forms),
        cmocka_unit_test(test_args_parse_again),
        cmocka_unit_test(test_args_times),
        cmocka_unit_test(test_timetext_age),
        cmocka_unit_test(test_timetext_parse),
        cmocka_unit_test(test_table_layout),
        cmocka_unit_test(test_progress_resume),
        cmocka_unit_test(test_progress_pause_and_start),
        cmocka_unit_test(test_drill_judge),
        cmocka_unit_test(test_drill_cold_start_why), /* one test a line */
        cmocka_unit_test(test_percentile),
        cmocka_unit_test(test_canary_url),
        cmocka_unit_test(test_canary_http_error),
        cmocka_unit_test(test_report_intervals),
        cmocka_unit_test(test_report_counters),
        cmocka_unit_test(test_ledger_fallback),
        cmocka_unit_test(test_golden_list),
        cmocka_unit_test(test_golden_describe),
        cmocka_unit_test(test_golden_report),
        cmocka_unit_test(test_golden_what_if),
        cmocka_unit_test(test_what_if_unrestorable),
        cmocka_unit_test(test_lenient),
        cmocka_unit_test(test_describe_queued),
        cmocka_unit_test(test_describe_unobserved),
        cmocka_unit_test(test_interrupts_are_sticky),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
