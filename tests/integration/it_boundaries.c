/*
 * Bad input through the real API server. A generator walks the schemas of
 * deploy/crds/ and makes, for every field of a WorkspaceClass's and a
 * Workspace's spec, the values at and past its limits (lengths, patterns,
 * enums, numbers, durations at the decoder's bounds and past them,
 * quantities, times), plus the relations between fields that a schema cannot
 * express. Each goes to the API server in an otherwise valid object. Either
 * the API server refuses it, naming the field, or the controller reports it
 * on the object: the Workspace (or a Workspace of the class) gets a Valid
 * condition for its generation, never ClassNotFound, and when it is False
 * its message names the field. Meanwhile the controller keeps serving every
 * other workspace: one of them pauses and resumes at the end, and a class
 * the controller refuses stops being refused once it is fixed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "kube/client.h"
#include "workspaces.h"
#include "yaml_json.h"

static const struct kube_resource workspaces = {"hibernator.dev", "v1alpha1", "workspaces",
                                                "Workspace", 1};
static const struct kube_resource classes = {"hibernator.dev", "v1alpha1", "workspaceclasses",
                                             "WorkspaceClass", 0};

#define TEST_LABEL "it-boundaries"

/* A class that uses every section of the schema, valid as it is. Its
 * workspaces are created paused, so nothing needs a node. */
static const char base_class[] =
    "{\"apiVersion\":\"hibernator.dev/v1alpha1\",\"kind\":\"WorkspaceClass\","
    "\"metadata\":{\"labels\":{\"hibernator.dev/test\":\"" TEST_LABEL "\"}},"
    "\"spec\":{"
    "\"images\":{\"allowed\":[\"registry.local/notebook:*\"],"
    "\"default\":\"registry.local/notebook:v1\"},"
    "\"port\":8888,"
    "\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\",\"count\":1,"
    "\"productLabel\":\"nvidia.com/gpu.product\",\"product\":\"Tesla-T4\","
    "\"alternativeProducts\":[\"NVIDIA-L4\"],\"nodeSelector\":{\"pool\":\"gpu\"}},"
    "\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},"
    "\"limits\":{\"memory\":\"1Gi\"}},"
    "\"runtimeClassName\":\"gvisor\","
    "\"tolerations\":[{\"key\":\"kwok.x-k8s.io/node\",\"operator\":\"Exists\","
    "\"effect\":\"NoSchedule\"}],"
    "\"home\":{\"size\":\"1Gi\",\"maxSize\":\"10Gi\",\"storageClassName\":\"standard\","
    "\"mountPath\":\"/home/jovyan\",\"onDelete\":\"Delete\"},"
    "\"checkpoint\":{\"path\":\"/home/jovyan/.ckpt\",\"envVar\":\"CKPT\"},"
    "\"pause\":{\"gracePeriodSeconds\":1},"
    "\"resume\":{\"capacityTimeout\":\"30m\",\"onCapacityTimeout\":\"FallBack\"},"
    "\"snapshot\":{\"backend\":\"None\",\"timeout\":\"15m\",\"onFailure\":\"Retry\","
    "\"retryAfter\":\"10m\",\"keep\":2,\"lastAccessTimeout\":\"7d\"},"
    "\"activity\":{\"application\":\"None\",\"url\":\"http://{podIP}:{port}\","
    "\"interval\":\"60s\",\"timeout\":\"5s\","
    "\"tokenSecretRef\":{\"name\":\"{workspace}-jupyter\",\"key\":\"token\"},"
    "\"gpu\":{\"prometheusURL\":\"http://127.0.0.1:9/\",\"query\":\"up\"}},"
    "\"idle\":{\"autoPause\":true,\"after\":\"1h\",\"minAfter\":\"30m\",\"maxAfter\":\"8h\","
    "\"minRunning\":\"10m\",\"warnBefore\":\"5m\",\"gpuUtilisationThreshold\":10,"
    "\"maxKeepAlive\":\"24h\",\"pauseWindows\":{\"timeZone\":\"Europe/Berlin\","
    "\"windows\":[{\"days\":[\"Mon\"],\"start\":\"18:00\",\"end\":\"08:00\"}]}}}}";

static const char base_ws[] =
    "{\"apiVersion\":\"hibernator.dev/v1alpha1\",\"kind\":\"Workspace\","
    "\"metadata\":{\"labels\":{\"hibernator.dev/test\":\"" TEST_LABEL "\"}},"
    "\"spec\":{\"paused\":true,\"image\":\"registry.local/notebook:v2\","
    "\"keepAliveUntil\":\"2030-01-01T00:00:00Z\",\"idle\":{\"after\":\"2h\"},"
    "\"home\":{\"size\":\"2Gi\"},\"env\":[{\"name\":\"PROJECT\",\"value\":\"x\"}]}}";

/* ---- the cases ------------------------------------------------------------ */

struct bcase {
    char kind;  /* 'c': a class's field, 'w': a workspace's */
    char *path; /* "spec.idle.after", "spec.env[0].name" */
    cJSON *value;
    char *label; /* the value as text, for the report */
};

struct cases {
    struct bcase *v;
    size_t n, cap;
};

static void add_case(struct cases *cs, char kind, const char *path, cJSON *value)
{
    assert_non_null(value);
    if (cs->n == cs->cap) {
        cs->cap = cs->cap ? 2 * cs->cap : 64;
        cs->v = realloc(cs->v, cs->cap * sizeof(*cs->v));
        assert_non_null(cs->v);
    }
    char *text = cJSON_PrintUnformatted(value);
    assert_non_null(text);
    if (strlen(text) > 40)
        strcpy(text + 32, "...(long)");
    cs->v[cs->n++] = (struct bcase){kind, strdup(path), value, text};
}

static cJSON *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, c, n);
    s[n] = '\0';
    cJSON *v = cJSON_CreateString(s);
    free(s);
    return v;
}

static int has(const cJSON *node, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(node, key) != NULL;
}

static double num(const cJSON *node, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(node, key)->valuedouble;
}

static const char *str(const cJSON *node, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(node, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The values at and past one leaf's limits. */
static void leaf_cases(struct cases *cs, char kind, const char *path, const cJSON *node)
{
    const char *type = str(node, "type");
    const char *pattern = str(node, "pattern");
    if (type && strcmp(type, "integer") == 0) {
        if (has(node, "minimum")) {
            add_case(cs, kind, path, cJSON_CreateNumber(num(node, "minimum") - 1));
            add_case(cs, kind, path, cJSON_CreateNumber(num(node, "minimum")));
        } else {
            add_case(cs, kind, path, cJSON_CreateNumber(-1));
        }
        if (has(node, "maximum")) {
            add_case(cs, kind, path, cJSON_CreateNumber(num(node, "maximum")));
            add_case(cs, kind, path, cJSON_CreateNumber(num(node, "maximum") + 1));
        }
        add_case(cs, kind, path, cJSON_CreateNumber(99999999999.0));
        return;
    }
    if (type && strcmp(type, "boolean") == 0)
        return;
    if (type && strcmp(type, "object") == 0) {
        /* Maps of labels or quantities. */
        add_case(cs, kind, path, cJSON_Parse("{\"bad key!\":\"v\"}"));
        add_case(cs, kind, path, cJSON_Parse("{\"nvidia.com/gpu\":\"1e100\"}"));
        /* A quantity the API server accepts and would lower to INT64_MAX in a pod. */
        add_case(cs, kind, path, cJSON_Parse("{\"memory\":\"1234567890123456789012345Gi\"}"));
        return;
    }
    if (has(node, "enum")) {
        add_case(cs, kind, path, cJSON_CreateString("NotAValue"));
        return;
    }
    if (has(node, "maxLength")) {
        size_t max = (size_t)num(node, "maxLength");
        add_case(cs, kind, path, repeat('a', max + 1));
        /* At the limit: digits for a number-like pattern, letters else. */
        add_case(cs, kind, path, repeat(pattern && strstr(pattern, "0-9]{1,5}") ? '1' : 'a', max));
    } else {
        add_case(cs, kind, path, repeat('a', 20000));
    }
    if (has(node, "minLength") && num(node, "minLength") >= 1)
        add_case(cs, kind, path, cJSON_CreateString(""));
    if (pattern && strstr(pattern, "(ms|s|m|h|d)")) {
        static const char *const durations[] = {
            "0s",           "1ms",     "9s",
            "10s",          "99999d",  "99999d99999h99999m99999s99999ms",
            "0ms0s",        "100000d", "99999999999999999999h",
            "1s1s1s1s1s1s", "1.5h",    "-1h"};
        for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++)
            add_case(cs, kind, path, cJSON_CreateString(durations[i]));
    } else if (has(node, "x-kubernetes-int-or-string")) {
        static const char *const quantities[] = {
            "0",    "1e100", "99999999999Ei", "0.000001",
            "-1Gi", "1Gi1",  "8Ei",           "1.00000000000000000001Gi"};
        for (size_t i = 0; i < sizeof(quantities) / sizeof(quantities[0]); i++)
            add_case(cs, kind, path, cJSON_CreateString(quantities[i]));
        add_case(cs, kind, path, cJSON_CreateNumber(0));
        add_case(cs, kind, path, cJSON_CreateNumber(1e300));
    } else if (str(node, "format") && strcmp(str(node, "format"), "date-time") == 0) {
        static const char *const times[] = {"9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z",
                                            "2026-02-30T00:00:00Z", "1970-01-01T00:00:00Z",
                                            "2026-01-01T00:00:00.999999999+14:00"};
        for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
            add_case(cs, kind, path, cJSON_CreateString(times[i]));
    } else if (pattern) {
        add_case(cs, kind, path, cJSON_CreateString("-bad value-"));
        add_case(cs, kind, path, cJSON_CreateString("a/../../etc/passwd"));
    }
}

static void walk(struct cases *cs, char kind, const char *path, const cJSON *node)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(node, "properties");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(node, "items");
    char sub[512];
    if (props) {
        const cJSON *p;
        cJSON_ArrayForEach(p, props)
        {
            snprintf(sub, sizeof(sub), "%s.%s", path, p->string);
            walk(cs, kind, sub, p);
        }
    } else if (items) {
        snprintf(sub, sizeof(sub), "%s[0]", path);
        walk(cs, kind, sub, items);
    } else {
        leaf_cases(cs, kind, path, node);
    }
}

static void schema_cases(struct cases *cs, char kind, const char *file)
{
    char path[512], *err = NULL;
    snprintf(path, sizeof(path), "%s/deploy/crds/%s", SOURCE_DIR, file);
    cJSON *docs = yaml_json_load_file(path, &err);
    if (!docs)
        fail_msg("%s: %s", path, err ? err : "cannot read");
    const cJSON *crd = cJSON_GetArrayItem(docs, 0);
    const cJSON *v0 = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(crd, "spec"), "versions"),
        0);
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(v0, "schema"), "openAPIV3Schema");
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(schema, "properties"), "spec");
    assert_non_null(spec);
    walk(cs, kind, "spec", spec);
    cJSON_Delete(docs);
}

/* What a schema cannot say: relations between a class's fields, and
 * minimums of durations the decoder keeps. */
static void relation_cases(struct cases *cs)
{
    static const struct {
        const char *path, *json;
    } rel[] = {
        {"spec.idle", "{\"after\":\"1h\",\"minAfter\":\"30m\",\"warnBefore\":\"30m\"}"},
        {"spec.idle", "{\"after\":\"1h\",\"minAfter\":\"2h\"}"},
        {"spec.idle", "{\"after\":\"1h\",\"maxAfter\":\"30m\"}"},
        {"spec.idle", "{\"after\":\"5s\"}"},
        {"spec.activity", "{\"interval\":\"10s\",\"timeout\":\"30s\"}"},
        {"spec.activity", "{\"interval\":\"500ms\",\"timeout\":\"100ms\"}"},
        {"spec.activity", "{\"url\":\"http://{nosuchfield}/\"}"},
        {"spec.snapshot", "{\"backend\":\"GKE\"}"},
        {"spec.snapshot", "{\"backend\":\"ContainerCheckpoint\"}"},
        /* The CRD's pattern allows five digits for a port. */
        {"spec.snapshot",
         "{\"backend\":\"ContainerCheckpoint\",\"repository\":\"registry.local:99999/ckpt\"}"},
        {"spec.snapshot",
         "{\"backend\":\"ContainerCheckpoint\",\"repository\":\"registry.local:0/ckpt\"}"},
        {"spec.snapshot", "{\"backend\":\"ContainerCheckpoint\",\"repository\":"
                          "\"registry.local/ckpt\",\"pullSecretName\":\"Pull_Secret\"}"},
        {"spec.snapshot", "{\"timeout\":\"500ms\",\"retryAfter\":\"0s\"}"},
        {"spec.resume", "{\"onCapacityTimeout\":\"FallBack\"}"},
        {"spec.accelerator",
         "{\"resourceName\":\"nvidia.com/gpu\",\"count\":1,\"productLabel\":\"p\",\"product\":"
         "\"Tesla-T4\",\"alternativeProducts\":[\"Tesla-T4\"]}"},
        {"spec.images", "{\"allowed\":[\"registry.local/notebook:*\"],\"default\":\"other:1\"}"},
        {"spec.home", "{\"size\":\"20Gi\",\"maxSize\":\"10Gi\"}"},
        {"spec.idle.pauseWindows", "{\"timeZone\":\"Nowhere/Atlantis\"}"},
        /* a set the CRD keeps unique, with the class's own queue in it */
        {"spec.queue", "{\"localQueue\":\"gpus\",\"allowedLocalQueues\":[\"gpus\"]}"},
        /* a duration the CRD's pattern takes, longer than the decoder's 30m,
         * and a hold on a class without a snapshot backend */
        {"spec.queue", "{\"localQueue\":\"gpus\",\"evictionHold\":\"45m\"}"},
        {"spec.queue", "{\"localQueue\":\"gpus\",\"evictionHold\":\"1m\"}"},
        /* a pre-warm's priority without the class's own, and the same one */
        {"spec.queue", "{\"localQueue\":\"gpus\",\"preWarmPriorityClass\":\"low\"}"},
        {"spec.queue", "{\"localQueue\":\"gpus\",\"priorityClass\":\"low\","
                       "\"preWarmPriorityClass\":\"low\"}"},
    };
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
        add_case(cs, 'c', rel[i].path, cJSON_Parse(rel[i].json));
}

/* ---- putting a value into an object ---------------------------------------- */

/* Sets path (relative to root; "[0]" steps into arrays) to a copy of value;
 * objects on the way are merged into, so relation cases replace only the
 * fields they name. */
static void set_at(cJSON *root, const char *path, const cJSON *value)
{
    char *copy = strdup(path), *save = NULL;
    cJSON *node = root;
    for (char *tok = strtok_r(copy, ".", &save); tok; tok = strtok_r(NULL, ".", &save)) {
        char *bracket = strchr(tok, '[');
        if (bracket)
            *bracket = '\0';
        int last = save == NULL || *save == '\0';
        cJSON *child = cJSON_GetObjectItemCaseSensitive(node, tok);
        if (last && !bracket) {
            if (cJSON_IsObject(value) && cJSON_IsObject(child)) {
                const cJSON *f;
                cJSON_ArrayForEach(f, value)
                {
                    cJSON_DeleteItemFromObjectCaseSensitive(child, f->string);
                    cJSON_AddItemToObject(child, f->string, cJSON_Duplicate(f, 1));
                }
            } else {
                cJSON_DeleteItemFromObjectCaseSensitive(node, tok);
                cJSON_AddItemToObject(node, tok, cJSON_Duplicate(value, 1));
            }
            break;
        }
        if (!child) {
            child = bracket ? cJSON_CreateArray() : cJSON_CreateObject();
            cJSON_AddItemToObject(node, tok, child);
        }
        if (bracket) {
            if (cJSON_GetArraySize(child) == 0)
                cJSON_AddItemToArray(child, last ? cJSON_CreateNull() : cJSON_CreateObject());
            if (last) {
                cJSON_ReplaceItemInArray(child, 0, cJSON_Duplicate(value, 1));
                break;
            }
            child = cJSON_GetArrayItem(child, 0);
        }
        node = child;
    }
    free(copy);
}

/* ---- the run ----------------------------------------------------------------- */

static uv_loop_t loop;
static struct kube_config *admin;
static struct kube_client *client;

static int create(const struct kube_resource *res, const cJSON *obj, char *why, size_t size)
{
    struct harness_call call = {0};
    assert_int_equal(
        kube_create(client, res, res->namespaced ? ns : NULL, obj, harness_call_cb, &call, NULL),
        0);
    harness_call_wait(&loop, &call);
    int st = call.status;
    snprintf(why, size, "%ld %s", call.http_code, call.message);
    if (st < 0 && call.http_code != 422 && call.http_code != 400)
        fail_msg("create: HTTP %ld %s %s", call.http_code, call.message, call.transport_error);
    harness_call_clear(&call);
    return st;
}

static void delete_obj(const struct kube_resource *res, const char *name)
{
    struct harness_call call = {0};
    assert_int_equal(kube_delete(client, res, res->namespaced ? ns : NULL, name, NULL,
                                 harness_call_cb, &call, NULL),
                     0);
    harness_call_wait(&loop, &call);
    harness_call_clear(&call);
}

/* Waits until the workspace's Valid condition speaks of its generation;
 * returns the workspace (caller deletes). */
static cJSON *wait_valid(const char *name)
{
    uint64_t t0 = harness_now_ms();
    for (;;) {
        struct harness_call call = {0};
        assert_int_equal(kube_get(client, &workspaces, ns, name, harness_call_cb, &call, NULL), 0);
        harness_call_wait(&loop, &call);
        assert_int_equal(call.status, 0);
        cJSON *ws = call.body;
        call.body = NULL;
        harness_call_clear(&call);
        double gen = num_at(ws, "metadata.generation");
        const cJSON *valid = condition(ws, "Valid");
        const cJSON *og = cJSON_GetObjectItemCaseSensitive(valid, "observedGeneration");
        if (valid && cJSON_IsNumber(og) && og->valuedouble >= gen &&
            num_at(ws, "status.observedGeneration") >= gen)
            return ws;
        cJSON_Delete(ws);
        if (harness_now_ms() - t0 > 30000)
            fail_msg("workspace %s: no Valid condition for its generation in 30 s", name);
        harness_run_for(&loop, 20);
    }
}

/* "spec.idle.pauseWindows.windows[0].start" -> "spec.idle": what an error
 * must name at least (the field, or the object it belongs to). */
static void field_prefix(const char *path, char *out, size_t size)
{
    snprintf(out, size, "%s", path);
    char *dot = strchr(out, '.');
    if (dot)
        dot = strchr(dot + 1, '.');
    if (dot)
        *dot = '\0';
    char *bracket = strchr(out, '[');
    if (bracket)
        *bracket = '\0';
}

struct tally {
    int refused, reported_invalid, accepted_valid;
};

static void run_case(const struct bcase *c, int i, struct tally *t)
{
    char cname[32], wname[32], why[600], prefix[256];
    snprintf(cname, sizeof(cname), "bnd-c%d", i);
    snprintf(wname, sizeof(wname), "bnd-w%d", i);
    field_prefix(c->path, prefix, sizeof(prefix));

    cJSON *cls = cJSON_Parse(base_class);
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(cls, "metadata"), "name", cname);
    cJSON *ws = cJSON_Parse(base_ws);
    cJSON *wmeta = cJSON_GetObjectItemCaseSensitive(ws, "metadata");
    cJSON_AddStringToObject(wmeta, "name", wname);
    cJSON_AddStringToObject(wmeta, "namespace", ns);
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(ws, "spec"), "className", cname);
    set_at(c->kind == 'c' ? cls : ws, c->path, c->value);
    /* A workspace naming another class needs no class of its own. */
    int with_class = !(c->kind == 'w' && strcmp(c->path, "spec.className") == 0);

    int refused = 0, class_created = 0;
    if (with_class) {
        refused = create(&classes, cls, why, sizeof(why)) < 0;
        class_created = !refused;
        if (refused && c->kind == 'w')
            fail_msg("the base class was refused: %s", why);
    }
    if (!refused)
        refused = create(&workspaces, ws, why, sizeof(why)) < 0;
    if (refused) {
        if (!strstr(why, prefix))
            fail_msg("%s = %s: refused without naming %s: %s", c->path, c->label, prefix, why);
        t->refused++;
    } else {
        cJSON *got = wait_valid(wname);
        const char *status = cond_field(got, "Valid", "status");
        const char *reason = cond_field(got, "Valid", "reason");
        const char *message = cond_field(got, "Valid", "message");
        if (strcmp(reason, "ClassNotFound") == 0 && with_class)
            fail_msg("%s = %s: the class exists but reads as missing: %s", c->path, c->label,
                     message);
        if (strcmp(status, "False") == 0) {
            /* The field, or (for a class's images) the rule it broke. */
            if (!strstr(message, prefix) && strcmp(reason, "ImageNotAllowed") != 0 &&
                strcmp(reason, "ClassNotFound") != 0)
                fail_msg("%s = %s: Valid=False/%s without naming %s: %s", c->path, c->label, reason,
                         prefix, message);
            t->reported_invalid++;
            print_message("  %-45s %-34s reported: %s: %s\n", c->path, c->label, reason, message);
        } else {
            t->accepted_valid++;
        }
        /* Paused from the start: nothing may ever run. */
        assert_int_equal(all_pods(wname), 0);
        cJSON_Delete(got);
        delete_obj(&workspaces, wname);
    }
    if (class_created)
        delete_obj(&classes, cname);
    cJSON_Delete(cls);
    cJSON_Delete(ws);
}

static int group_setup(void **state)
{
    (void)state;
    it_deploy("it-boundaries");
    ns = harness_namespace("it-bnd");
    uv_loop_init(&loop);
    admin = harness_config(NULL);
    client = harness_client(&loop, admin);
    apply_class("bnd-ok", "");
    controller_start(NULL);
    return 0;
}

static void apply_class_crd(int relaxed);

static int group_teardown(void **state)
{
    (void)state;
    apply_class_crd(0);
    controller_stop();
    it_show_logs();
    harness_kubectl(NULL,
                    "delete workspaceclasses -l hibernator.dev/test=" TEST_LABEL " --wait=false");
    harness_kubectl(NULL, "delete workspaceclass bnd-ok --ignore-not-found --wait=false");
    harness_namespace_delete(ns);
    kube_client_close(client);
    harness_loop_close(&loop);
    kube_config_free(admin);
    return 0;
}

/* Every boundary of both schemas, and the relations, through the API server. */
static void test_every_boundary(void **state)
{
    (void)state;
    apply_ws("healthy", "bnd-ok", 0, NULL);
    cJSON_Delete(wait_state("healthy", "Running", 60000));

    struct cases cs = {0};
    schema_cases(&cs, 'c', "workspaceclasses.yaml");
    schema_cases(&cs, 'w', "workspaces.yaml");
    relation_cases(&cs);
    struct tally t = {0};
    uint64_t t0 = harness_now_ms();
    for (size_t i = 0; i < cs.n; i++)
        run_case(&cs.v[i], (int)i, &t);
    print_message("%zu cases in %.1f s: %d refused by the API server naming the field, "
                  "%d reported by the controller (Valid=False naming the field), %d accepted "
                  "and valid\n",
                  cs.n, (double)(harness_now_ms() - t0) / 1000, t.refused, t.reported_invalid,
                  t.accepted_valid);
    assert_int_equal(t.refused + t.reported_invalid + t.accepted_valid, (int)cs.n);
    /* The generator must have reached both outcomes. */
    assert_true(t.refused > 0);
    assert_true(t.reported_invalid > 0);

    /* All the while, the controller served everything else. */
    assert_int_equal(controller_wait_exit(1), -1);
    set_paused("healthy", 1);
    cJSON_Delete(wait_state("healthy", "Paused", 60000));
    set_paused("healthy", 0);
    cJSON_Delete(wait_state("healthy", "Running", 60000));

    for (size_t i = 0; i < cs.n; i++) {
        free(cs.v[i].path);
        free(cs.v[i].label);
        cJSON_Delete(cs.v[i].value);
    }
    free(cs.v);
}

/* Applies the WorkspaceClass CRD, without the CEL rules of spec.idle when
 * relaxed: a CRD older than the controller, which lets through a class the
 * controller refuses. */
static void apply_class_crd(int relaxed)
{
    char path[512], *err = NULL;
    snprintf(path, sizeof(path), "%s/deploy/crds/workspaceclasses.yaml", SOURCE_DIR);
    cJSON *docs = yaml_json_load_file(path, &err);
    assert_non_null(docs);
    cJSON *crd = cJSON_GetArrayItem(docs, 0);
    if (relaxed) {
        cJSON *v0 =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                                   cJSON_GetObjectItemCaseSensitive(crd, "spec"), "versions"),
                               0);
        cJSON *schema = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(v0, "schema"), "openAPIV3Schema");
        cJSON *idle = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(schema, "properties"), "spec"),
                "properties"),
            "idle");
        assert_non_null(cJSON_GetObjectItemCaseSensitive(idle, "x-kubernetes-validations"));
        cJSON_DeleteItemFromObjectCaseSensitive(idle, "x-kubernetes-validations");
    }
    char *json = cJSON_PrintUnformatted(crd);
    assert_int_equal(harness_apply("%s", json), 0);
    free(json);
    cJSON_Delete(docs);
    /* The API server validates with the new schema once it serves it. */
    harness_run_for(&loop, 2000);
}

/* A class the controller refuses (warnBefore not shorter than minAfter),
 * let through by a CRD older than the controller, is reported on its
 * workspaces, changes to it hide no later class, and fixing it recovers. */
static void test_refused_class_recovers(void **state)
{
    (void)state;
    apply_class_crd(1);
    apply_class("bnd-bad", "  idle: {after: 1h, minAfter: 30m, warnBefore: 30m}\n");
    apply_ws("bad-1", "bnd-bad", 0, NULL);
    cJSON *ws = wait_reason("bad-1", "Valid", "InvalidClass", 30000);
    assert_non_null(strstr(cond_field(ws, "Valid", "message"), "spec.idle.warnBefore"));
    assert_string_equal(str_at(ws, "status.state"), "Failed");
    cJSON_Delete(ws);
    assert_int_equal(live_pods("bad-1"), 0);

    /* A change to the bad class (an annotation) and a new class after it. */
    assert_int_equal(
        harness_kubectl(NULL, "annotate workspaceclass bnd-bad example.com/touched=yes"), 0);
    apply_class("bnd-new", "");
    apply_ws("new-1", "bnd-new", 0, NULL);
    cJSON_Delete(wait_state("new-1", "Running", 60000));

    /* The event said it once. */
    char *reasons = event_reasons("bad-1");
    assert_non_null(strstr(reasons, "InvalidClass,"));
    assert_null(strstr(strstr(reasons, "InvalidClass,") + 1, "InvalidClass,"));
    free(reasons);

    apply_class("bnd-bad", "  idle: {after: 1h, minAfter: 30m, warnBefore: 5m}\n");
    apply_class_crd(0);
    ws = wait_reason("bad-1", "Valid", "Accepted", 30000);
    cJSON_Delete(ws);
    cJSON_Delete(wait_state("bad-1", "Running", 60000));
    delete_ws("bad-1");
    delete_ws("new-1");
    harness_kubectl(NULL, "delete workspaceclass bnd-bad bnd-new --wait=false");
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_class_recovers),
        cmocka_unit_test(test_every_boundary),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
