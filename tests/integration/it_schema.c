/*
 * The Kubernetes-facing artefacts against the real API server: the CRDs in
 * deploy/crds/ accept the examples and apply their defaults, refuse each
 * object of tests/data/invalid/ with an error that names the offending field
 * (schema, CEL and transition rules, status subresource), and the RBAC of
 * deploy/ gives the controller's service account exactly what it needs.
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

#define INVALID_DIR SOURCE_DIR "/tests/data/invalid"
#define TEST_LABEL "hibernator.dev/test=it-schema"
#define CONTROLLER_SA "system:serviceaccount:hibernator-system:hibernator"
/* The fields of the ledger lastPause and a history record share. */
#define LEDGER_PAUSE                                                                               \
    "\"reason\":\"IdleTimeout\",\"workEndedAt\":\"2026-11-29T17:00:00Z\",\"heldSince\":"           \
    "\"2026-11-29T09:00:00Z\",\"podDeletedAt\":\"2026-11-29T18:02:00Z\","                          \
    "\"acceleratorReleasedAt\":\"2026-11-29T18:02:05Z\",\"snapshotReadyAt\":"                      \
    "\"2026-11-29T18:01:59Z\",\"snapshotSeconds\":119.5,\"memory\":\"snapshot\",\"nodeName\":"     \
    "\"gpu-node-1\",\"product\":\"Tesla-T4\",\"acceleratorTakenAt\":\"2026-11-29T18:02:04Z\","     \
    "\"acceleratorTakenBy\":\"team-b/bob-nb-3\",\"nodeRemovedAt\":\"2026-11-29T23:00:00Z\""

static char *ns;

static int group_setup(void **state)
{
    (void)state;
    assert_int_equal(harness_kubectl(NULL, "apply -f '%s/deploy/crds/'", SOURCE_DIR), 0);
    assert_int_equal(harness_kubectl(NULL, "wait --for=condition=Established --timeout=60s "
                                           "crd/workspaces.hibernator.dev "
                                           "crd/workspaceclasses.hibernator.dev"),
                     0);
    ns = harness_namespace("it-schema");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    /* The Deployment's pods can never run here (no image, no toleration). */
    harness_kubectl(NULL, "delete deployment hibernator -n hibernator-system --ignore-not-found");
    harness_kubectl(NULL, "delete workspaceclasses -l " TEST_LABEL);
    if (ns)
        harness_kubectl(NULL,
                        "delete -k '%s/deploy/examples/' -n %s --ignore-not-found --wait=false",
                        SOURCE_DIR, ns);
    harness_kubectl(NULL, "delete -f '%s/deploy/local/classes.yaml' --ignore-not-found",
                    SOURCE_DIR);
    harness_namespace_delete(ns);
    free(ns);
    ns = NULL;
    return 0;
}

/* ---- reading objects back ------------------------------------------------ */

static cJSON *get_json(const char *what)
{
    char *out = NULL;
    assert_int_equal(harness_kubectl(&out, "get %s -n %s -o json", what, ns), 0);
    cJSON *o = cJSON_Parse(out);
    free(out);
    assert_non_null(o);
    return o;
}

/* The value at a dotted path ("spec.home.size"), or NULL. */
static const cJSON *at(const cJSON *o, const char *path)
{
    char *copy = strdup(path);
    assert_non_null(copy);
    char *save = NULL;
    for (char *k = strtok_r(copy, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
        o = cJSON_GetObjectItemCaseSensitive(o, k);
    free(copy);
    return o;
}

static void assert_str_at(const cJSON *o, const char *path, const char *want)
{
    const cJSON *v = at(o, path);
    if (!cJSON_IsString(v))
        fail_msg("%s: not a string", path);
    if (strcmp(v->valuestring, want) != 0)
        fail_msg("%s: \"%s\", want \"%s\"", path, v->valuestring, want);
}

static void assert_num_at(const cJSON *o, const char *path, double want)
{
    const cJSON *v = at(o, path);
    if (!cJSON_IsNumber(v))
        fail_msg("%s: not a number", path);
    if (v->valuedouble != want)
        fail_msg("%s: %g, want %g", path, v->valuedouble, want);
}

/* ---- the CRDs themselves ------------------------------------------------- */

static void test_names_and_columns(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(harness_kubectl(&out, "api-resources --api-group=hibernator.dev "
                                           "--categories=hibernator -o wide --no-headers"),
                     0);
    assert_non_null(strstr(out, "workspaces "));
    assert_non_null(strstr(out, "workspaceclasses "));
    assert_non_null(strstr(out, " ws "));
    assert_non_null(strstr(out, " wsc "));
    free(out);

    assert_int_equal(
        harness_kubectl(NULL, "apply -n %s -f '%s/base-workspace.yaml'", ns, INVALID_DIR), 0);
    assert_int_equal(harness_kubectl(NULL,
                                     "patch ws victim -n %s --subresource=status --type=merge "
                                     "-p '{\"status\":{\"state\":\"Running\",\"nodeName\":"
                                     "\"gpu-node-1\",\"message\":\"notebook ready\","
                                     "\"accelerator\":{\"product\":\"Tesla-T4\"}}}'",
                                     ns),
                     0);
    assert_int_equal(harness_kubectl(&out, "get ws victim -n %s -o wide", ns), 0);
    print_message("%s", out);
    const char *head[] = {"NAME",        "CLASS", "STATE",   "NODE",
                          "ACCELERATOR", "SINCE", "MESSAGE", "AGE"};
    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
        assert_non_null(strstr(out, head[i]));
    assert_non_null(strstr(out, "cpu-small"));
    assert_non_null(strstr(out, "Running"));
    assert_non_null(strstr(out, "gpu-node-1"));
    assert_non_null(strstr(out, "Tesla-T4"));
    assert_non_null(strstr(out, "notebook ready"));
    free(out);
    /* Message is a wide column only. */
    assert_int_equal(harness_kubectl(&out, "get ws victim -n %s", ns), 0);
    assert_null(strstr(out, "MESSAGE"));
    free(out);
    /* Status goes through the subresource: a spec write does not change it. */
    assert_int_equal(
        harness_kubectl(NULL,
                        "patch ws victim -n %s --type=merge "
                        "-p '{\"spec\":{\"paused\":true},\"status\":{\"state\":\"Failed\"}}'",
                        ns),
        0);
    cJSON *ws = get_json("workspace victim");
    assert_str_at(ws, "status.state", "Running");
    assert_true(cJSON_IsTrue(at(ws, "spec.paused")));
    cJSON_Delete(ws);
    assert_int_equal(harness_kubectl(NULL, "delete ws victim -n %s", ns), 0);
}

/* ---- valid objects ------------------------------------------------------- */

static void test_examples_apply(void **state)
{
    (void)state;
    char *out = NULL;
    int st = harness_kubectl(&out, "apply -k '%s/deploy/examples/' -n %s 2>&1", SOURCE_DIR, ns);
    print_message("%s", out);
    assert_int_equal(st, 0);
    free(out);
    st = harness_kubectl(&out, "apply -f '%s/deploy/local/classes.yaml' 2>&1", SOURCE_DIR);
    print_message("%s", out);
    assert_int_equal(st, 0);
    free(out);

    assert_int_equal(harness_kubectl(&out, "get wsc cpu-small gpu-t4 --no-headers"), 0);
    assert_non_null(strstr(out, "Tesla-T4"));
    free(out);
    cJSON *ws = get_json("workspace llm-eval");
    assert_str_at(ws, "spec.className", "gpu-t4");
    assert_str_at(ws, "spec.home.size", "40Gi");
    cJSON_Delete(ws);
    ws = get_json("workspace scratch");
    assert_str_at(ws, "spec.className", "cpu-small");
    cJSON_Delete(ws);
    ws = get_json("workspace jupyterlab");
    assert_str_at(ws, "spec.className", "jupyterlab-t4-gke");
    cJSON_Delete(ws);
    ws = get_json("workspace ide");
    assert_str_at(ws, "spec.className", "code-server");
    cJSON_Delete(ws);
    cJSON *gke = get_json("workspaceclass jupyterlab-t4-gke");
    assert_str_at(gke, "spec.snapshot.backend", "GKE");
    assert_str_at(gke, "spec.snapshot.storageConfigName", "notebook-snapshots");
    assert_str_at(gke, "spec.runtimeClassName", "gvisor");
    cJSON_Delete(gke);

    /* The local classes keep the examples' shape and add kwok's toleration. */
    cJSON *cls = get_json("workspaceclass gpu-t4");
    assert_str_at(cls, "spec.accelerator.product", "Tesla-T4");
    const cJSON *tol = cJSON_GetArrayItem(at(cls, "spec.tolerations"), 0);
    assert_str_at(tol, "key", "kwok.x-k8s.io/node");
    cJSON_Delete(cls);
}

static void test_defaults(void **state)
{
    (void)state;
    assert_int_equal(harness_apply("apiVersion: hibernator.dev/v1alpha1\n"
                                   "kind: WorkspaceClass\n"
                                   "metadata:\n"
                                   "  name: it-schema-defaults\n"
                                   "  labels: {hibernator.dev/test: it-schema}\n"
                                   "spec:\n"
                                   "  images: {allowed: [\"registry.local/nb:*\"], default: "
                                   "registry.local/nb:1}\n"
                                   "  accelerator: {resourceName: nvidia.com/gpu, product: A100}\n"
                                   "  home: {size: 1Gi}\n"),
                     0);
    cJSON *cls = get_json("workspaceclass it-schema-defaults");
    assert_num_at(cls, "spec.port", 8888);
    assert_num_at(cls, "spec.accelerator.count", 1);
    assert_str_at(cls, "spec.accelerator.productLabel", "nvidia.com/gpu.product");
    assert_str_at(cls, "spec.home.mountPath", "/home/jovyan");
    assert_str_at(cls, "spec.home.onDelete", "Delete");
    assert_num_at(cls, "spec.pause.gracePeriodSeconds", 60);
    assert_str_at(cls, "spec.resume.capacityTimeout", "30m");
    assert_str_at(cls, "spec.resume.onCapacityTimeout", "Wait");
    /* maxSize defaults to size in the controller, not in the schema: a
     * schema default cannot refer to another field. */
    assert_null(at(cls, "spec.home.maxSize"));
    /* Idle policy: on, after an hour; no activity source until one is named. */
    assert_str_at(cls, "spec.activity.application", "None");
    assert_str_at(cls, "spec.activity.url", "http://{podIP}:{port}");
    assert_str_at(cls, "spec.activity.interval", "60s");
    assert_str_at(cls, "spec.activity.timeout", "5s");
    assert_true(cJSON_IsTrue(at(cls, "spec.idle.autoPause")));
    assert_str_at(cls, "spec.idle.after", "1h");
    assert_str_at(cls, "spec.idle.minRunning", "10m");
    assert_str_at(cls, "spec.idle.warnBefore", "5m");
    assert_str_at(cls, "spec.idle.maxKeepAlive", "12h");
    assert_num_at(cls, "spec.idle.gpuUtilisationThreshold", 5);
    assert_null(at(cls, "spec.idle.pauseWindows"));
    cJSON_Delete(cls);

    assert_int_equal(harness_apply("apiVersion: hibernator.dev/v1alpha1\n"
                                   "kind: Workspace\n"
                                   "metadata: {name: defaults, namespace: %s}\n"
                                   "spec: {className: it-schema-defaults}\n",
                                   ns),
                     0);
    cJSON *ws = get_json("workspace defaults");
    assert_true(cJSON_IsFalse(at(ws, "spec.paused")));
    assert_null(at(ws, "spec.home"));
    cJSON_Delete(ws);
}

/* Accepted on purpose: each is close to a rule's edge. */
static void test_valid_edges(void **state)
{
    (void)state;
    /* '?' is one character, '*' crosses '/'; a size may be a plain integer
     * and maxSize a different unit of the same amount. */
    assert_int_equal(harness_apply("apiVersion: hibernator.dev/v1alpha1\n"
                                   "kind: WorkspaceClass\n"
                                   "metadata:\n"
                                   "  name: it-schema-edges\n"
                                   "  labels: {hibernator.dev/test: it-schema}\n"
                                   "spec:\n"
                                   "  images:\n"
                                   "    allowed: [\"registry.local/team-?/*\"]\n"
                                   "    default: registry.local/team-a/deep/path/nb:1@sha256:abc\n"
                                   "  port: 65535\n"
                                   "  accelerator: {resourceName: amd.com/gpu, count: 16, "
                                   "product: MI300X, nodeSelector: {example.com/pool: gpu}, "
                                   "alternativeProducts: [MI250X, MI210, MI100, MI60, MI50, "
                                   "MI25, MI8, MI6]}\n"
                                   "  resources: {requests: {cpu: 500m, memory: 1Gi}, "
                                   "limits: {cpu: 1, memory: 1Gi}}\n"
                                   "  tolerations: [{operator: Exists}]\n"
                                   "  home: {size: 1073741824, maxSize: 1Gi}\n"
                                   "  pause: {gracePeriodSeconds: 3600}\n"
                                   "  resume: {capacityTimeout: 1h30m, onCapacityTimeout: Fail}\n"),
                     0);
    /* FallBack with something to fall back to. */
    assert_int_equal(harness_apply("apiVersion: hibernator.dev/v1alpha1\n"
                                   "kind: WorkspaceClass\n"
                                   "metadata:\n"
                                   "  name: it-schema-fallback\n"
                                   "  labels: {hibernator.dev/test: it-schema}\n"
                                   "spec:\n"
                                   "  images: {allowed: [\"registry.local/nb:*\"], default: "
                                   "registry.local/nb:1}\n"
                                   "  accelerator: {resourceName: nvidia.com/gpu, product: "
                                   "Tesla-V100, alternativeProducts: [NVIDIA-L4]}\n"
                                   "  home: {size: 1Gi}\n"
                                   "  resume: {onCapacityTimeout: FallBack}\n"),
                     0);
    /* A home may grow, also through a change of unit. */
    const char *ws = "apiVersion: hibernator.dev/v1alpha1\n"
                     "kind: Workspace\n"
                     "metadata: {name: grows, namespace: %s}\n"
                     "spec: {className: it-schema-edges, home: {size: %s}}\n";
    assert_int_equal(harness_apply(ws, ns, "1Gi"), 0);
    assert_int_equal(harness_apply(ws, ns, "1024Mi"), 0);
    assert_int_equal(harness_apply(ws, ns, "2G"), 0);
    /* Every state the controller writes is accepted by the status schema. */
    static const char *const states[] = {
        "Pending", "Running", "Pausing", "Paused", "Resuming", "WaitingForCapacity", "Failed"};
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
        assert_int_equal(harness_kubectl(NULL,
                                         "patch ws grows -n %s --subresource=status "
                                         "--type=merge -p '{\"status\":{\"state\":\"%s\"}}'",
                                         ns, states[i]),
                         0);
    /* The whole status shape of docs/api.md. */
    assert_int_equal(
        harness_kubectl(
            NULL,
            "patch ws grows -n %s --subresource=status --type=merge -p '{\"status\":{"
            "\"observedGeneration\":3,\"state\":\"Running\",\"message\":\"\","
            "\"podName\":\"grows-2\",\"podGeneration\":2,\"nodeName\":\"gpu-node-1\","
            "\"homeClaimName\":\"grows-home\",\"accelerator\":{\"resourceName\":"
            "\"nvidia.com/gpu\",\"count\":1,\"product\":\"Tesla-T4\",\"fallback\":true},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"PodReady\","
            "\"message\":\"\",\"observedGeneration\":3,"
            "\"lastTransitionTime\":\"2026-11-30T10:00:00Z\"}],"
            "\"lastPause\":{\"requestedAt\":\"2026-11-29T18:00:00Z\",\"podDeletedAt\":"
            "\"2026-11-29T18:02:00Z\",\"acceleratorReleasedAt\":\"2026-11-29T18:02:05Z\"},"
            "\"lastResume\":{\"requestedAt\":\"2026-11-30T09:00:00Z\",\"podCreatedAt\":"
            "\"2026-11-30T09:00:01Z\",\"podScheduledAt\":\"2026-11-30T09:00:02Z\",\"readyAt\":"
            "\"2026-11-30T09:00:12Z\",\"secondsToReady\":12.4,\"restoredFrom\":"
            "\"FromCheckpoint\"},\"waitingForCapacitySince\":\"2026-11-30T09:00:02Z\","
            "\"accounting\":{\"pauses\":3,\"resumes\":2,\"acceleratorSecondsReleased\":86400}}}'",
            ns),
        0);
    /* The ledger: every field of lastPause, accounting and a history record. */
    assert_int_equal(
        harness_kubectl(NULL,
                        "patch ws grows -n %s --subresource=status --type=merge -p '{\"status\":{"
                        "\"lastPause\":{" LEDGER_PAUSE "},"
                        "\"accounting\":{\"acceleratorSecondsHeld\":7200.5,"
                        "\"acceleratorHeldSince\":\"2026-11-30T09:00:02Z\"},"
                        "\"history\":[{\"pausedAt\":\"2026-11-29T18:00:00Z\"," LEDGER_PAUSE ","
                        "\"resumeRequestedAt\":\"2026-11-30T09:00:00Z\",\"podScheduledAt\":"
                        "\"2026-11-30T09:00:02Z\",\"readyAt\":\"2026-11-30T09:00:12Z\","
                        "\"secondsToReady\":12.4,\"restoredFrom\":\"FromSnapshot\"}]}}'",
                        ns),
        0);
    cJSON *o = get_json("workspace grows");
    /* Nothing was pruned: the schema knows every field. */
    assert_num_at(o, "status.lastResume.secondsToReady", 12.4);
    assert_true(cJSON_IsTrue(at(o, "status.accelerator.fallback")));
    assert_str_at(o, "status.lastResume.restoredFrom", "FromCheckpoint");
    assert_num_at(o, "status.accounting.acceleratorSecondsReleased", 86400);
    assert_str_at(o, "status.lastPause.acceleratorReleasedAt", "2026-11-29T18:02:05Z");
    assert_str_at(o, "status.homeClaimName", "grows-home");
    static const char *const ledger_fields[] = {
        "workEndedAt",
        "heldSince",
        "snapshotReadyAt",
        "snapshotSeconds",
        "memory",
        "nodeName",
        "product",
        "acceleratorTakenAt",
        "acceleratorTakenBy",
        "nodeRemovedAt",
        "reason",
        "podDeletedAt",
        "acceleratorReleasedAt",
    };
    const cJSON *rec = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "status"), "history"),
        0);
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(o, "status"), "lastPause");
    for (size_t i = 0; i < sizeof(ledger_fields) / sizeof(ledger_fields[0]); i++) {
        if (!cJSON_GetObjectItemCaseSensitive(lp, ledger_fields[i]))
            fail_msg("status.lastPause.%s was pruned", ledger_fields[i]);
        if (!cJSON_GetObjectItemCaseSensitive(rec, ledger_fields[i]))
            fail_msg("status.history[0].%s was pruned", ledger_fields[i]);
    }
    assert_int_equal(cJSON_GetArraySize(rec), 19);
    assert_str_at(o, "status.lastPause.acceleratorTakenBy", "team-b/bob-nb-3");
    assert_str_at(o, "status.lastResume.requestedAt", "2026-11-30T09:00:00Z");
    assert_num_at(o, "status.accounting.acceleratorSecondsHeld", 7200.5);
    assert_str_at(o, "status.accounting.acceleratorHeldSince", "2026-11-30T09:00:02Z");
    assert_num_at(o, "status.accounting.pauses", 3);
    cJSON_Delete(o);
}

/* ---- invalid objects ----------------------------------------------------- */

enum op {
    CREATE, /* kubectl apply of a new object */
    UPDATE, /* apply base-workspace.yaml, then the file over it */
    STATUS, /* merge patch of base-workspace's status subresource */
};

struct invalid_case {
    const char *file; /* in tests/data/invalid/ */
    enum op op;
    const char *field; /* the error must name it */
    const char *words; /* and say this (NULL: anything) */
};

static const struct invalid_case invalid_cases[] = {
    /* Workspace: schema */
    {"ws-missing-class.yaml", CREATE, "spec.className", "Required value"},
    {"ws-bad-env-name.yaml", CREATE, "spec.env[1].name", "should match"},
    {"ws-duplicate-env.yaml", CREATE, "spec.env[1]", "Duplicate value"},
    {"ws-too-many-env.yaml", CREATE, "spec.env", "at most 32 items"},
    {"ws-bad-quantity.yaml", CREATE, "spec.home.size", "should match"},
    {"ws-zero-size.yaml", CREATE, "spec.home.size", "greater than zero"},
    {"ws-bad-image.yaml", CREATE, "spec.image", "should match"},
    {"ws-paused-not-bool.yaml", CREATE, "spec.paused", "boolean"},
    {"ws-long-name.yaml", CREATE, "metadata.name", "at most 63 characters"},
    {"ws-bad-keep-alive.yaml", CREATE, "spec.keepAliveUntil", "date-time"},
    {"ws-bad-idle-after.yaml", CREATE, "spec.idle.after", "should match"},
    {"ws-prewarm-bad-at.yaml", CREATE, "spec.preWarm.at", "should match"},
    {"ws-prewarm-no-at.yaml", CREATE, "spec.preWarm.at", "Required value"},
    {"ws-prewarm-bad-day.yaml", CREATE, "spec.preWarm.days[0]", "Unsupported value"},
    {"ws-prewarm-duplicate-day.yaml", CREATE, "spec.preWarm.days[1]", "Duplicate value"},
    {"ws-prewarm-bad-time-zone.yaml", CREATE, "spec.preWarm.timeZone",
     "may not have a . or .. part"},
    /* Workspace: transition rules */
    {"ws-class-change.yaml", UPDATE, "spec.className", "immutable"},
    {"ws-home-shrink.yaml", UPDATE, "spec.home.size", "may only grow (was 20Gi)"},
    {"ws-home-removed.yaml", UPDATE, "spec.home", "may not be removed"},
    /* Workspace: status subresource */
    {"status-bad-state.json", STATUS, "status.state", "Unsupported value: \"Sleeping\""},
    {"status-bad-condition.json", STATUS, "status.conditions[0].status", "Unsupported value"},
    {"status-bad-condition.json", STATUS, "status.conditions[0].reason", "should match"},
    {"status-bad-condition.json", STATUS, "status.conditions[0].message", "Required value"},
    {"status-bad-time.json", STATUS, "status.lastPause.requestedAt", "date-time"},
    {"status-bad-memory.json", STATUS, "status.lastPause.memory", "Unsupported value"},
    {"status-history-too-long.json", STATUS, "status.history", "at most 20 items"},
    /* WorkspaceClass: schema */
    {"class-count-zero.yaml", CREATE, "spec.accelerator.count", "greater than or equal to 1"},
    {"class-count-17.yaml", CREATE, "spec.accelerator.count", "less than or equal to 16"},
    {"class-missing-product.yaml", CREATE, "spec.accelerator.product", "Required value"},
    {"class-bad-resource-name.yaml", CREATE, "spec.accelerator.resourceName", "should match"},
    {"class-bad-port.yaml", CREATE, "spec.port", "less than or equal to 65535"},
    {"class-bad-duration.yaml", CREATE, "spec.resume.capacityTimeout", "should match"},
    {"class-bad-on-capacity-timeout.yaml", CREATE, "spec.resume.onCapacityTimeout",
     "Unsupported value: \"Preempt\""},
    {"class-grace-too-long.yaml", CREATE, "spec.pause.gracePeriodSeconds", "3600"},
    {"class-images-allowed-empty.yaml", CREATE, "spec.images.allowed", "at least 1 items"},
    {"class-default-image-missing.yaml", CREATE, "spec.images.default", "Required value"},
    {"class-bad-quantity.yaml", CREATE, "spec.resources.requests.memory", "should match"},
    {"class-missing-home.yaml", CREATE, "spec.home", "Required value"},
    {"class-bad-on-delete.yaml", CREATE, "spec.home.onDelete", "Unsupported value"},
    {"class-bad-checkpoint-env.yaml", CREATE, "spec.checkpoint.envVar", "should match"},
    {"class-bad-env-name.yaml", CREATE, "spec.env[1].name", "should match"},
    {"class-reserved-env.yaml", CREATE, "spec.env", "HIBERNATOR_ are reserved"},
    {"class-env-checkpoint-var.yaml", CREATE, "spec.env", "checkpoint.envVar"},
    /* WorkspaceClass: CEL rules */
    {"class-default-image-not-allowed.yaml", CREATE, "spec.images.default",
     "matches none of images.allowed"},
    {"class-max-below-size.yaml", CREATE, "spec.home.maxSize", "may not be smaller"},
    {"class-bad-window-time.yaml", CREATE, "spec.idle.pauseWindows.windows[0].end", "should match"},
    {"class-bad-window-day.yaml", CREATE, "spec.idle.pauseWindows.windows[0].days[0]",
     "Unsupported value"},
    {"class-bad-time-zone.yaml", CREATE, "spec.idle.pauseWindows.timeZone", "should match"},
    {"class-bad-gpu-threshold.yaml", CREATE, "spec.idle.gpuUtilisationThreshold",
     "less than or equal to 100"},
    {"class-gpu-without-url.yaml", CREATE, "spec.activity.gpu.prometheusURL", "Required value"},
    {"class-bad-activity-url.yaml", CREATE, "spec.activity.url", "should match"},
    {"class-request-above-limit.yaml", CREATE, "spec.resources", "may not exceed the limit"},
    {"class-toleration-exists-value.yaml", CREATE, "spec.tolerations[0].value",
     "operator Exists has no value"},
    {"class-fallback-without-alternatives.yaml", CREATE, "spec.resume.onCapacityTimeout",
     "FallBack needs at least one product in accelerator.alternativeProducts"},
    {"class-fallback-without-accelerator.yaml", CREATE, "spec.resume.onCapacityTimeout",
     "FallBack needs at least one product in accelerator.alternativeProducts"},
    {"class-alternative-is-product.yaml", CREATE, "spec.accelerator.alternativeProducts",
     "may not list accelerator.product"},
    /* WorkspaceClass: what the controller refuses across fields, in CEL too */
    {"class-warn-before-too-long.yaml", CREATE, "spec.idle.warnBefore",
     "must be shorter than the shortest idle time"},
    {"class-idle-after-too-short.yaml", CREATE, "spec.idle.after", "must be at least 10s"},
    {"class-min-after-above-after.yaml", CREATE, "spec.idle.minAfter",
     "may not be longer than idle.after"},
    {"class-probe-timeout-above-interval.yaml", CREATE, "spec.activity.timeout",
     "at most activity.interval"},
    {"class-snapshot-timeout-too-short.yaml", CREATE, "spec.snapshot.timeout",
     "must be at least 1s"},
    {"class-restore-check-timeout-too-short.yaml", CREATE, "spec.snapshot.restoreCheckTimeout",
     "must be at least 1s"},
    {"class-time-zone-dot-dot.yaml", CREATE, "spec.idle.pauseWindows.timeZone",
     "may not have a . or .. part"},
    {"class-home-too-large.yaml", CREATE, "spec.home.maxSize", "must be less than 8Ei"},
    /* WorkspaceClass: pre-warms */
    {"class-prewarm-lead-too-short.yaml", CREATE, "spec.preWarm.lead",
     "must be between 10s and 12h"},
    {"class-prewarm-lead-too-long.yaml", CREATE, "spec.preWarm.lead",
     "must be between 10s and 12h"},
    {"class-prewarm-grace-too-short.yaml", CREATE, "spec.preWarm.grace",
     "must be between 10s and 12h"},
    {"class-prewarm-max-concurrent-zero.yaml", CREATE, "spec.preWarm.maxConcurrent",
     "greater than or equal to 1"},
    {"class-prewarm-bad-lead.yaml", CREATE, "spec.preWarm.lead", "should match"},
    /* WorkspaceClass: alternative products, schema */
    {"class-bad-alternative-product.yaml", CREATE, "spec.accelerator.alternativeProducts[1]",
     "should match"},
    {"class-duplicate-alternative-product.yaml", CREATE, "spec.accelerator.alternativeProducts[1]",
     "Duplicate value"},
    {"class-too-many-alternative-products.yaml", CREATE, "spec.accelerator.alternativeProducts",
     "at most 8 items"},
};

static int run_invalid(const struct invalid_case *c, char **ret_out)
{
    if (c->op == STATUS)
        return harness_kubectl(ret_out,
                               "patch workspace victim -n %s --subresource=status --type=merge "
                               "--patch-file '%s/%s' 2>&1",
                               ns, INVALID_DIR, c->file);
    return harness_kubectl(ret_out, "apply -n %s -f '%s/%s' 2>&1", ns, INVALID_DIR, c->file);
}

static void test_invalid_objects(void **state)
{
    (void)state;
    size_t n = sizeof(invalid_cases) / sizeof(invalid_cases[0]);
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        const struct invalid_case *c = &invalid_cases[i];
        /* The update and status cases start from a valid object each time;
         * re-applying it also proves the last case changed nothing. */
        if (c->op != CREATE)
            assert_int_equal(
                harness_kubectl(NULL, "apply -n %s -f '%s/base-workspace.yaml'", ns, INVALID_DIR),
                0);
        char *out = NULL;
        int st = run_invalid(c, &out);
        /* "is invalid": refused by the API server's validation (422), not by
         * kubectl for a reason of its own, such as a file it cannot parse. */
        int ok = st != 0 && strstr(out, "is invalid") && strstr(out, c->field) &&
                 (!c->words || strstr(out, c->words));
        if (!ok) {
            print_error("%s: want refused naming %s (%s); kubectl exit %d:\n%s", c->file, c->field,
                        c->words ? c->words : "", st, out);
            failed++;
        }
        free(out);
    }
    print_message("%zu invalid objects, %zu refused as expected\n", n, n - failed);
    assert_int_equal(failed, 0);

    /* Nothing of the refused creates exists, and the victim kept its spec. */
    char *out = NULL;
    assert_int_equal(harness_kubectl(&out, "get ws -n %s -o name", ns), 0);
    assert_null(strstr(out, "no-class"));
    assert_null(strstr(out, "bad-env"));
    free(out);
    assert_int_equal(harness_kubectl(&out, "get wsc -o name"), 0);
    assert_null(strstr(out, "invalid-"));
    free(out);
    cJSON *ws = get_json("workspace victim");
    assert_str_at(ws, "spec.className", "cpu-small");
    assert_str_at(ws, "spec.home.size", "20Gi");
    cJSON_Delete(ws);
}

/* ---- RBAC ---------------------------------------------------------------- */

struct access {
    const char *query; /* arguments of kubectl auth can-i */
    int allowed;
};

static const struct access controller_access[] = {
    {"get workspaces.hibernator.dev -A", 1},
    {"list workspaces.hibernator.dev -A", 1},
    {"watch workspaces.hibernator.dev -A", 1},
    {"update workspaces.hibernator.dev -n team-a", 1},
    {"patch workspaces.hibernator.dev -n team-a", 1},
    {"get workspaces.hibernator.dev --subresource=status -n team-a", 1},
    {"update workspaces.hibernator.dev --subresource=status -n team-a", 1},
    {"patch workspaces.hibernator.dev --subresource=status -n team-a", 1},
    {"update workspaces.hibernator.dev --subresource=finalizers -n team-a", 1},
    {"get workspaceclasses.hibernator.dev", 1},
    {"list workspaceclasses.hibernator.dev", 1},
    {"watch workspaceclasses.hibernator.dev", 1},
    {"get pods -A", 1},
    {"list pods -A", 1},
    {"watch pods -A", 1},
    {"create pods -n team-a", 1},
    {"delete pods -n team-a", 1},
    {"patch pods -n team-a", 1}, /* a pre-warm's Kueue priority label */
    {"get persistentvolumeclaims -A", 1},
    {"list persistentvolumeclaims -A", 1},
    {"watch persistentvolumeclaims -A", 1},
    {"create persistentvolumeclaims -n team-a", 1},
    {"delete persistentvolumeclaims -n team-a", 1},
    {"patch persistentvolumeclaims -n team-a", 1},
    {"create events -n team-a", 1},
    {"patch events -n team-a", 1},
    {"create events.events.k8s.io -n team-a", 1},
    {"patch events.events.k8s.io -n team-a", 1},
    {"get leases.coordination.k8s.io -n hibernator-system", 1},
    {"create leases.coordination.k8s.io -n hibernator-system", 1},
    {"update leases.coordination.k8s.io -n hibernator-system", 1},
    {"get secrets -n team-a", 1}, /* the Jupyter token a class names, by name */
    {"get nodes", 1},             /* which accelerator a pod got: read only */
    {"list nodes", 1},
    {"watch nodes", 1},
    {"create podsnapshotmanualtriggers.podsnapshot.gke.io -n team-a", 1},
    {"create podsnapshotpolicies.podsnapshot.gke.io -n team-a", 1},
    {"patch podsnapshotpolicies.podsnapshot.gke.io -n team-a", 1}, /* to the desired spec */
    {"watch podsnapshots.podsnapshot.gke.io -A", 1},
    {"delete podsnapshots.podsnapshot.gke.io -n team-a", 1},
    {"create containersnapshots.hibernator.dev -n team-a", 1},
    {"delete containersnapshots.hibernator.dev -n team-a", 1},
    {"watch containersnapshots.hibernator.dev -A", 1},
    {"watch workloads.kueue.x-k8s.io -A", 1},
    /* get localqueues/pendingworkloads (visibility.kueue.x-k8s.io): kubectl
     * cannot name it where no APIService serves the group, as here; it_kueue
     * shows the controller's account may (Kueue's visibility server asks
     * the API server, and the places come back). */
    /* What it must not do. */
    {"create workspaces.hibernator.dev -n team-a", 0},
    {"delete workspaces.hibernator.dev -n team-a", 0},
    {"create workspaceclasses.hibernator.dev", 0},
    {"update workspaceclasses.hibernator.dev", 0},
    {"delete workspaceclasses.hibernator.dev", 0},
    {"update pods -n team-a", 0},
    {"create pods --subresource=exec -n team-a", 0},
    {"update persistentvolumeclaims -n team-a", 0},
    {"list secrets -A", 0},
    {"create podsnapshots.podsnapshot.gke.io -n team-a", 0},
    {"update podsnapshots.podsnapshot.gke.io -n team-a", 0},
    {"create podsnapshotstorageconfigs.podsnapshot.gke.io", 0},
    {"patch containersnapshots.hibernator.dev -n team-a", 0},
    {"update workloads.kueue.x-k8s.io -n team-a", 0},
    {"delete workloads.kueue.x-k8s.io -n team-a", 0},
    {"patch containersnapshots.hibernator.dev --subresource=status -n team-a", 0},
    {"create nodes --subresource=checkpoint", 0},
    {"watch secrets -A", 0},
    {"get configmaps -n team-a", 0},
    {"patch nodes", 0},
    {"update nodes", 0},
    {"create nodes", 0},
    {"delete nodes", 0},
    {"patch nodes --subresource=status", 0},
    {"get persistentvolumes", 0},
    {"delete events -n team-a", 0},
    {"get leases.coordination.k8s.io -n team-a", 0},
    {"update leases.coordination.k8s.io -n kube-system", 0},
    {"delete leases.coordination.k8s.io -n hibernator-system", 0},
    {"create serviceaccounts/token -n hibernator-system", 0},
    {"escalate clusterroles.rbac.authorization.k8s.io", 0},
    {"update customresourcedefinitions.apiextensions.k8s.io", 0},
};

#define NODE_AGENT_SA "system:serviceaccount:hibernator-node:hibernator-node"

/* The node agent (deploy/node/rbac.yaml): what it may and may not do. */
static const struct access node_agent_access[] = {
    {"watch containersnapshots.hibernator.dev -A", 1},
    {"watch workloads.kueue.x-k8s.io -A", 0},
    {"patch containersnapshots.hibernator.dev -n team-a", 1}, /* its finalizer */
    {"patch containersnapshots.hibernator.dev --subresource=status -n team-a", 1},
    {"get pods -n team-a", 1},
    {"get nodes", 1},
    {"create nodes --subresource=checkpoint", 1},
    {"create containersnapshots.hibernator.dev -n team-a", 0},
    {"delete containersnapshots.hibernator.dev -n team-a", 0},
    {"update containersnapshots.hibernator.dev -n team-a", 0},
    {"list pods -A", 0},
    {"delete pods -n team-a", 0},
    {"create pods --subresource=exec -n team-a", 0},
    {"get secrets -n hibernator-node", 0},
    {"get secrets -n hibernator-system", 0},
    {"list secrets -A", 0},
    {"get nodes --subresource=proxy", 0},
    {"create nodes --subresource=proxy", 0},
    {"list nodes", 0},
    {"patch nodes", 0},
    {"get workspaces.hibernator.dev -n team-a", 0},
    {"patch workspaces.hibernator.dev --subresource=status -n team-a", 0},
    {"create events -n team-a", 0},
};

static size_t check_access(const char *who, const struct access *table, size_t n)
{
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        char *out = NULL;
        harness_kubectl(&out, "auth can-i --as=%s %s 2>/dev/null", who, table[i].query);
        const char *want = table[i].allowed ? "yes\n" : "no\n";
        if (strcmp(out, want) != 0) {
            print_error("%s can-i %s: got \"%s\", want %s", who, table[i].query, out, want);
            failed++;
        }
        free(out);
    }
    return failed;
}

static void test_rbac(void **state)
{
    (void)state;
    char *out = NULL;
    int st = harness_kubectl(&out, "apply -k '%s/deploy/' 2>&1", SOURCE_DIR);
    print_message("%s", out);
    assert_int_equal(st, 0);
    free(out);
    st = harness_kubectl(&out, "apply -k '%s/deploy/node/' 2>&1", SOURCE_DIR);
    print_message("%s", out);
    assert_int_equal(st, 0);
    free(out);
    size_t agent_n = sizeof(node_agent_access) / sizeof(node_agent_access[0]);
    size_t agent_failed = check_access(NODE_AGENT_SA, node_agent_access, agent_n);
    print_message("%zu node agent access checks, %zu as expected\n", agent_n,
                  agent_n - agent_failed);
    assert_int_equal(agent_failed, 0);

    size_t n = sizeof(controller_access) / sizeof(controller_access[0]);
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        const struct access *a = &controller_access[i];
        /* stdout is exactly "yes" or "no"; anything else is an error, which
         * must not pass for a "no". Warnings go to stderr. */
        harness_kubectl(&out, "auth can-i --as=%s %s 2>/dev/null", CONTROLLER_SA, a->query);
        const char *want = a->allowed ? "yes\n" : "no\n";
        if (strcmp(out, want) != 0) {
            print_error("can-i %s: got \"%s\", want %s", a->query, out, want);
            failed++;
        }
        free(out);
    }
    print_message("%zu access checks, %zu as expected\n", n, n - failed);
    assert_int_equal(failed, 0);

    /* The restricted Pod Security level of hibernator-system admits the
     * controller's pods: both replicas are created (they stay Pending here,
     * nothing can pull the image). */
    uint64_t deadline = harness_now_ms() + 60000;
    for (;;) {
        assert_int_equal(harness_kubectl(&out, "get pods -n hibernator-system --no-headers -o name "
                                               "-l app.kubernetes.io/name=hibernator"),
                         0);
        size_t pods = 0;
        for (const char *p = out; (p = strstr(p, "pod/")); p++)
            pods++;
        free(out);
        if (pods == 2)
            break;
        if (harness_now_ms() > deadline) {
            harness_kubectl(&out, "get events -n hibernator-system");
            fail_msg("%zu controller pods after 60 s; events:\n%s", pods, out);
        }
        usleep(250 * 1000);
    }
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_columns), cmocka_unit_test(test_examples_apply),
        cmocka_unit_test(test_defaults),          cmocka_unit_test(test_valid_edges),
        cmocka_unit_test(test_invalid_objects),   cmocka_unit_test(test_rbac),
    };
    return cmocka_run_group_tests_name("schema and RBAC", tests, group_setup, group_teardown);
}
