/*
 * Every file in deploy/examples/ applied as written to the local cluster,
 * with the controller running: each object is accepted by the API server,
 * and the controller posts no Warning Event and no condition refusing a
 * field for any workspace in it.
 *
 * Twice: on the classes hack/run-local installs (deploy/local/classes.yaml,
 * the example classes with kwok's toleration) for the files that hold only
 * Workspaces, which then run on the kwok nodes; and every file in the
 * kustomization's order, the example classes included, whose pods then wait
 * for capacity (they do not tolerate kwok's nodes, so no activity probe ever
 * goes to a kwok pod's address, where nothing listens).
 *
 * A file that needs something first says so in its first line; the test
 * provides exactly what the table below lists, and checks that the first
 * line names it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "workspaces.h"

#define EXAMPLES SOURCE_DIR "/deploy/examples"

/* What an example needs first: the words its first line says, and the
 * kubectl arguments that provide it ("%s" is the namespace). */
struct need {
    const char *file;
    const char *words;
    const char *kubectl;
};

static const struct need needs[] = {
    {"workspace-cpu.yaml", "Secret scratch-jupyter",
     "-n %s create secret generic scratch-jupyter --from-literal=token=it-examples"},
    {"workspace-gpu.yaml", "Secret llm-eval-jupyter",
     "-n %s create secret generic llm-eval-jupyter --from-literal=token=it-examples"},
    {"jupyterlab-t4-gke.yaml", "Secret jupyterlab-jupyter",
     "-n %s create secret generic jupyterlab-jupyter --from-literal=token=it-examples"},
    {"jupyterlab-t4-gke.yaml", "RuntimeClass gvisor",
     "apply -f - <<'EOF'\n"
     "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n"
     "EOF\n# %s"},
    {"jupyterlab-t4-gke.yaml", "StorageClass standard-rwo",
     "apply -f - <<'EOF'\n"
     "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: standard-rwo}\n"
     "provisioner: kubernetes.io/host-path\nreclaimPolicy: Delete\n"
     "EOF\n# %s"},
    {"jupyterlab-t4-gke.yaml", "PodSnapshotStorageConfig notebook-snapshots",
     "apply -f - <<'EOF'\n"
     "apiVersion: podsnapshot.gke.io/v1\nkind: PodSnapshotStorageConfig\n"
     "metadata: {name: notebook-snapshots}\n"
     "spec: {snapshotStorageConfig: {gcs: {bucket: it-examples, path: hibernator}}}\n"
     "EOF\n# %s"},
};

/* The workspaces applied so far in this test. */
static struct {
    char *ns;
    char *name;
} applied[32];
static size_t n_applied;

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s: cannot open", path);
    char *text = calloc(1, 1 << 20);
    assert_non_null(text);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

/* The example files in the kustomization's order (malloc'd names). */
static size_t example_files(char **files, size_t max)
{
    char *k = read_file(EXAMPLES "/kustomization.yaml");
    size_t n = 0;
    for (char *line = strtok(k, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "- ", 2) == 0 && n < max) {
            files[n] = strdup(line + 2);
            assert_non_null(files[n]);
            n++;
        }
    }
    free(k);
    assert_true(n >= 4);
    return n;
}

/* Provides what file needs first in ns, after checking its first line says so. */
static void provide(const char *file, const char *namespace)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", EXAMPLES, file);
    char *text = read_file(path);
    text[strcspn(text, "\n")] = '\0';
    for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
        if (strcmp(needs[i].file, file) != 0)
            continue;
        if (!strstr(text, needs[i].words))
            fail_msg("deploy/examples/%s: its first line does not say it needs %s:\n  %s", file,
                     needs[i].words, text);
        char *out = NULL;
        int st = harness_kubectl(&out, needs[i].kubectl, namespace);
        if (st != 0)
            fail_msg("providing %s for %s failed: %s", needs[i].words, file, out ? out : "");
        free(out);
    }
    free(text);
}

/* Applies the file as written in namespace; every object must be accepted
 * and readable back; the Workspaces are added to applied[]. */
static void apply_example(const char *file, const char *namespace)
{
    provide(file, namespace);
    char *out = NULL;
    int st =
        harness_kubectl(&out, "-n %s apply -f '%s/%s' -o name 2>&1", namespace, EXAMPLES, file);
    if (st != 0)
        fail_msg("kubectl apply -f deploy/examples/%s: %s", file, out ? out : "");
    int objects = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        objects++;
        if (harness_kubectl(NULL, "-n %s get %s", namespace, line) != 0)
            fail_msg("deploy/examples/%s: %s is not there after apply", file, line);
        const char *ws = "workspace.hibernator.dev/";
        if (strncmp(line, ws, strlen(ws)) == 0) {
            assert_true(n_applied < sizeof(applied) / sizeof(applied[0]));
            applied[n_applied].ns = strdup(namespace);
            applied[n_applied].name = strdup(line + strlen(ws));
            assert_non_null(applied[n_applied].ns);
            assert_non_null(applied[n_applied].name);
            n_applied++;
        }
    }
    if (objects == 0)
        fail_msg("deploy/examples/%s: kubectl apply made no object", file);
    free(out);
}

static int holds_class(const char *file)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", EXAMPLES, file);
    char *text = read_file(path);
    int r = strstr(text, "\nkind: WorkspaceClass") != NULL;
    free(text);
    return r;
}

/* A condition the controller writes when it refuses a field or cannot act. */
static const char *refusal(const cJSON *ws)
{
    static char why[1024];
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(ws, "status"), "conditions"))
    {
        const char *type = str_at(c, "type"), *status = str_at(c, "status");
        const char *reason = str_at(c, "reason"), *message = str_at(c, "message");
        if (!type || !status)
            continue;
        int bad =
            (strcmp(type, "Valid") == 0 && strcmp(status, "True") != 0) ||
            (strcmp(type, "IdlePolicy") == 0 && strcmp(status, "True") != 0) ||
            (strcmp(type, "ActivityProbe") == 0 && strcmp(status, "False") == 0) ||
            strcmp(type, "ActionFailed") == 0 ||
            (strcmp(type, "Idle") == 0 && reason && strcmp(reason, "TimeZoneUnavailable") == 0);
        if (bad) {
            snprintf(why, sizeof(why), "%s=%s/%s: %s", type, status, reason ? reason : "",
                     message ? message : "");
            return why;
        }
    }
    return NULL;
}

/* Waits until the controller has judged the workspace's generation and the
 * workspace is in one of the states (comma-separated); returns it. */
static cJSON *wait_judged(const char *name, const char *states)
{
    char what[300];
    snprintf(what, sizeof(what), "workspace %s", name);
    uint64_t end = harness_now_ms() + 60000;
    char seen[128] = "(none)";
    while (harness_now_ms() < end) {
        cJSON *ws = get_json(what);
        const char *state = ws ? str_at(ws, "status.state") : NULL;
        double gen = ws ? num_at(ws, "metadata.generation") : -1;
        double seen_gen = ws ? num_at(ws, "status.observedGeneration") : -2;
        if (state) {
            snprintf(seen, sizeof(seen), "%s", state);
            char want[128];
            snprintf(want, sizeof(want), ",%s,", states);
            char have[80];
            snprintf(have, sizeof(have), ",%s,", state);
            if (gen == seen_gen && strstr(want, have))
                return ws;
        }
        const char *why = ws ? refusal(ws) : NULL;
        if (why)
            fail_msg("workspace %s/%s: %s", ns, name, why);
        cJSON_Delete(ws);
        usleep(200 * 1000);
    }
    fail_msg("workspace %s/%s: state %s, wanted one of %s", ns, name, seen, states);
    return NULL;
}

/* The controller's Warning Events about the workspace, one a line ("" when none). */
static char *controller_warnings(const char *name)
{
    char *out = NULL;
    assert_int_equal(
        harness_kubectl(&out,
                        "-n %s get events --field-selector type=Warning,involvedObject.name=%s "
                        "-o jsonpath='{range .items[?(@.reportingComponent==\"hibernator.dev/"
                        "controller\")]}{.reason}: {.message}{\"\\n\"}{end}'",
                        ns, name),
        0);
    return out;
}

/* Each workspace applied reaches one of states with no refusal, and the
 * controller posted no Warning about it. */
static void check_applied(const char *states)
{
    for (size_t i = 0; i < n_applied; i++) {
        ns = applied[i].ns;
        cJSON *ws = wait_judged(applied[i].name, states);
        const char *why = refusal(ws);
        if (why)
            fail_msg("workspace %s/%s: %s", ns, applied[i].name, why);
        cJSON_Delete(ws);
    }
    /* Events are posted with the status of the same pass; give the last of
     * them a moment to be listed. */
    sleep(2);
    for (size_t i = 0; i < n_applied; i++) {
        ns = applied[i].ns;
        char *warnings = controller_warnings(applied[i].name);
        if (warnings[0])
            fail_msg("workspace %s/%s: the controller posted Warning events:\n%s", ns,
                     applied[i].name, warnings);
        free(warnings);
    }
}

/* Deletes the workspaces applied (also after a failure: a workspace left
 * on a kwok node must not meet an example class whose probe would go to
 * its pod's address). */
static int forget_applied(void **state)
{
    (void)state;
    for (size_t i = 0; i < n_applied; i++) {
        harness_kubectl(NULL,
                        "-n %s delete workspace %s --ignore-not-found --wait=true --timeout=60s",
                        applied[i].ns, applied[i].name);
        free(applied[i].ns);
        free(applied[i].name);
    }
    n_applied = 0;
    ns = NULL;
    return 0;
}

/* hack/run-local's setup: the local classes, then the example workspaces. */
static void test_workspaces_on_local_classes(void **state)
{
    (void)state;
    char *out = NULL;
    int st = harness_kubectl(&out, "apply -f '%s/deploy/local/classes.yaml' 2>&1", SOURCE_DIR);
    if (st != 0)
        fail_msg("deploy/local/classes.yaml: %s", out);
    free(out);
    char *namespace = harness_namespace("it-examples-local");
    char *files[32];
    size_t n = example_files(files, 32);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (!holds_class(files[i])) {
            apply_example(files[i], namespace);
            used++;
        }
        free(files[i]);
    }
    assert_true(used >= 2);
    check_applied("Running");
    harness_namespace_delete(namespace);
    free(namespace);
}

/* Every file, in the kustomization's order, the example classes included. */
static void test_every_file_as_written(void **state)
{
    (void)state;
    char *namespace = harness_namespace("it-examples");
    char *files[32];
    size_t n = example_files(files, 32);
    for (size_t i = 0; i < n; i++) {
        apply_example(files[i], namespace);
        free(files[i]);
    }
    check_applied("Running,WaitingForCapacity");
    harness_namespace_delete(namespace);
    free(namespace);
}

static int group_setup(void **state)
{
    (void)state;
    it_deploy("it-examples");
    controller_start(NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    controller_stop();
    /* The cluster as hack/run-local leaves it: the local twins of the
     * example classes, nothing of GKE's. */
    harness_kubectl(NULL, "apply -f '%s/deploy/local/classes.yaml'", SOURCE_DIR);
    harness_kubectl(NULL, "delete runtimeclass gvisor --ignore-not-found");
    harness_kubectl(NULL, "delete storageclass standard-rwo --ignore-not-found");
    harness_kubectl(NULL, "delete podsnapshotstorageconfig notebook-snapshots --ignore-not-found");
    it_show_logs();
    return 0;
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_workspaces_on_local_classes, forget_applied),
        cmocka_unit_test_teardown(test_every_file_as_written, forget_applied),
    };
    return cmocka_run_group_tests_name("examples", tests, group_setup, group_teardown);
}
