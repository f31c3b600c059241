/*
 * What `kubectl get` and `kubectl wait` show a person or a dashboard, read
 * from the real API server (its printer columns, the CRD's
 * additionalPrinterColumns) with the controller and the snapshot simulator:
 *
 *   - `kubectl get ws -o wide` tells a running, a paused, a restored and a
 *     cold-resumed workspace apart: whether it is available, where its
 *     session came from, and the accelerator only while one is held or
 *     awaited (a paused workspace shows none); `kubectl get ws` leaves the
 *     node, idle time and message to -o wide;
 *   - `kubectl wait --for=condition=Available` returns only once the restore
 *     verdict is known: never while Restored is Unknown (a cold start is
 *     told from a restore 30 s after the pod is ready).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "workspaces.h"

/* ---- kubectl get's table -------------------------------------------------- */

/* The cell of row name under column (a header as kubectl prints it), cut
 * from the table by the header's offsets (kubectl aligns cells under their
 * header); "" for an empty cell or "<none>". NULL when the column or the row
 * is missing. Caller frees. */
static char *table_cell(const char *table, const char *name, const char *column)
{
    const char *eol = strchr(table, '\n');
    if (!eol)
        return NULL;
    size_t header_len = (size_t)(eol - table), start = 0, end = 0;
    int found = 0;
    for (size_t i = 0; i < header_len;) {
        while (i < header_len && table[i] == ' ')
            i++;
        size_t j = i;
        while (j < header_len && table[j] != ' ')
            j++;
        if (found) {
            end = i;
            break;
        }
        if (j - i == strlen(column) && strncmp(table + i, column, j - i) == 0) {
            found = 1;
            start = i;
            end = (size_t)-1;
        }
        i = j;
    }
    if (!found)
        return NULL;
    for (const char *line = eol + 1; *line;) {
        const char *next = strchr(line, '\n');
        size_t len = next ? (size_t)(next - line) : strlen(line);
        if (len > strlen(name) && strncmp(line, name, strlen(name)) == 0 &&
            line[strlen(name)] == ' ') {
            size_t b = start < len ? start : len, e = end < len ? end : len;
            while (b < e && line[b] == ' ')
                b++;
            while (e > b && line[e - 1] == ' ')
                e--;
            char *cell = strndup(line + b, e - b);
            assert_non_null(cell);
            if (strcmp(cell, "<none>") == 0)
                cell[0] = '\0';
            return cell;
        }
        line = next ? next + 1 : line + len;
    }
    return NULL;
}

static void assert_cell(const char *table, const char *name, const char *column, const char *want)
{
    char *cell = table_cell(table, name, column);
    if (!cell)
        fail_msg("kubectl get ws: no column %s or no row %s in\n%s", column, name, table);
    if (strcmp(cell, want) != 0)
        fail_msg("kubectl get ws: %s's %s is \"%s\", expected \"%s\" in\n%s", name, column, cell,
                 want, table);
    free(cell);
}

static char *get_table(const char *flags)
{
    char *out = NULL;
    assert_int_equal(harness_kubectl(&out, "-n %s get workspaces %s", ns, flags), 0);
    assert_non_null(out);
    return out;
}

/* ---- the workspaces ------------------------------------------------------- */

/* Runs, pauses with a snapshot, and resumes each of names[n] (pod <name>-2
 * cold-started by the simulator when cold[i]); returns when the resumes are
 * asked for. */
static void pause_and_resume(const char *const *names, const int *cold, size_t n)
{
    for (size_t i = 0; i < n; i++)
        apply_ws(names[i], "it-dash-snap", 0, NULL);
    for (size_t i = 0; i < n; i++)
        cJSON_Delete(wait_state(names[i], "Running", 60000));
    for (size_t i = 0; i < n; i++)
        set_paused(names[i], 1);
    for (size_t i = 0; i < n; i++) {
        cJSON *ws = wait_state(names[i], "Paused", 60000);
        assert_string_equal(str_at(ws, "status.lastPause.memory"), "snapshot");
        cJSON_Delete(ws);
        if (cold[i]) {
            char pod[128];
            snprintf(pod, sizeof(pod), "%s-2", names[i]);
            simulator_set_mode(pod, "cold-start");
        }
    }
    for (size_t i = 0; i < n; i++)
        set_paused(names[i], 0);
}

/* ---- the tests ------------------------------------------------------------ */

static void test_columns(void **state)
{
    (void)state;
    apply_ws("run", "it-dash-gpu", 0, NULL);
    apply_ws("pz", "it-dash-gpu", 0, NULL);
    const char *names[] = {"snap", "cold"};
    const int cold[] = {0, 1};
    pause_and_resume(names, cold, 2);
    cJSON *ws = wait_state("pz", "Running", 60000);
    cJSON_Delete(ws);
    set_paused("pz", 1);
    cJSON_Delete(wait_state("pz", "Paused", 60000));
    cJSON_Delete(wait_state("run", "Running", 60000));
    cJSON_Delete(wait_reason("snap", "Restored", "FromSnapshot", 60000));
    cJSON_Delete(wait_reason("cold", "Restored", "ColdStart", 90000));

    ws = ws_json("run");
    char node[64];
    snprintf(node, sizeof(node), "%s", str_at(ws, "status.nodeName"));
    cJSON_Delete(ws);

    char *wide = get_table("-o wide");
    print_message("  kubectl get ws -o wide:\n%s", wide);
    assert_cell(wide, "run", "STATE", "Running");
    assert_cell(wide, "run", "AVAILABLE", "True");
    assert_cell(wide, "run", "FROM", "Fresh");
    assert_cell(wide, "run", "ACCELERATOR", "Tesla-T4");
    assert_cell(wide, "run", "NODE", node);

    /* Paused: the GPU was given back, so none is shown. */
    assert_cell(wide, "pz", "STATE", "Paused");
    assert_cell(wide, "pz", "AVAILABLE", "False");
    assert_cell(wide, "pz", "ACCELERATOR", "");
    assert_cell(wide, "pz", "NODE", "");

    /* Restored and cold-resumed: both Running and available, told apart. */
    assert_cell(wide, "snap", "STATE", "Running");
    assert_cell(wide, "snap", "AVAILABLE", "True");
    assert_cell(wide, "snap", "FROM", "FromSnapshot");
    assert_cell(wide, "cold", "STATE", "Running");
    assert_cell(wide, "cold", "AVAILABLE", "True");
    assert_cell(wide, "cold", "FROM", "ColdStart");
    free(wide);

    /* The narrow view leaves the node, the idle time and the message to -o
     * wide, and keeps to a terminal's width. */
    char *narrow = get_table("");
    print_message("  kubectl get ws:\n%s", narrow);
    assert_cell(narrow, "pz", "AVAILABLE", "False");
    assert_cell(narrow, "cold", "FROM", "ColdStart");
    const char *hidden[] = {"NODE", "PLACE", "IDLE-SINCE", "MESSAGE"};
    for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++) {
        char *cell = table_cell(narrow, "run", hidden[i]);
        if (cell)
            fail_msg("kubectl get ws shows %s without -o wide:\n%s", hidden[i], narrow);
    }
    for (const char *line = narrow; *line;) {
        const char *next = strchr(line, '\n');
        size_t len = next ? (size_t)(next - line) : strlen(line);
        if (len > 100)
            fail_msg("kubectl get ws: a line of %zu characters:\n%s", len, narrow);
        line = next ? next + 1 : line + len;
    }
    free(narrow);
}

/* kubectl wait --for=condition=Available, started as the resume is asked
 * for, returns only once the restore verdict is known. */
static void test_wait_available(void **state)
{
    (void)state;
    const char *names[] = {"wsnap", "wcold"};
    const int cold[] = {0, 1};
    pause_and_resume(names, cold, 2);
    uint64_t t0 = harness_now_ms();
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(harness_kubectl(NULL,
                                         "-n %s wait --for=condition=Available workspace/%s "
                                         "--timeout=120s",
                                         ns, names[i]),
                         0);
        cJSON *ws = ws_json(names[i]);
        print_message("  %s available after %.1f s: Ready %s, Restored %s/%s\n", names[i],
                      (double)(harness_now_ms() - t0) / 1000.0, cond_field(ws, "Ready", "status"),
                      cond_field(ws, "Restored", "status"), cond_field(ws, "Restored", "reason"));
        assert_string_equal(cond_field(ws, "Ready", "status"), "True");
        assert_string_equal(cond_field(ws, "Restored", "status"), "True");
        assert_string_equal(cond_field(ws, "Restored", "reason"),
                            cold[i] ? "ColdStart" : "FromSnapshot");
        assert_string_equal(cond_field(ws, "Available", "reason"),
                            cold[i] ? "FromCheckpoint" : "FromSnapshot");
        cJSON_Delete(ws);
        /* "Did its memory come back?" as docs/operations.md reads it. */
        char *from = NULL;
        assert_int_equal(harness_kubectl(&from,
                                         "-n %s get workspace/%s -o jsonpath='{.status."
                                         "conditions[?(@.type==\"Available\")].reason}'",
                                         ns, names[i]),
                         0);
        assert_string_equal(from, cold[i] ? "FromCheckpoint" : "FromSnapshot");
        free(from);
    }
    /* Paused, with the accelerator free: the state says it. */
    set_paused("wsnap", 1);
    assert_int_equal(harness_kubectl(NULL,
                                     "-n %s wait --for=jsonpath='{.status.state}'=Paused "
                                     "workspace/wsnap --timeout=60s",
                                     ns),
                     0);
    assert_int_equal(all_pods("wsnap"), 0);
}

static int clean_slate(void **state)
{
    (void)state;
    delete_all_workspaces(60);
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    it_deploy("it-dashboard");
    install_snapshot_crds("it-dashboard");
    ns = harness_namespace("it-dashboard");
    assert_int_equal(harness_kubectl(NULL, "-n %s create configmap snapshot-simulator", ns), 0);
    apply_class("it-dash-gpu",
                "  accelerator: {resourceName: nvidia.com/gpu, count: 1, product: Tesla-T4}\n");
    apply_class("it-dash-snap", "  snapshot: {backend: GKE, storageConfigName: it-dashboard, "
                                "timeout: 60s, retryAfter: 10m}\n");
    simulator_start("1s", NULL);
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    simulator_stop();
    harness_namespace_delete(ns);
    it_show_logs();
    free(ns);
    return 0;
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_columns, clean_slate),
        cmocka_unit_test_setup(test_wait_available, clean_slate),
    };
    /* IT_ONLY=<pattern>: run only the tests whose names match. */
    if (getenv("IT_ONLY"))
        cmocka_set_test_filter(getenv("IT_ONLY"));
    return cmocka_run_group_tests_name("kubectl get and wait", tests, group_setup, group_teardown);
}
