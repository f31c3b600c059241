#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workspace/class.h"

static const char *const full_class =
    "{\"apiVersion\":\"hibernator.dev/v1alpha1\",\"kind\":\"WorkspaceClass\","
    "\"metadata\":{\"name\":\"gpu-t4\"},"
    "\"spec\":{"
    "\"images\":{\"allowed\":[\"quay.io/jupyter/*\",\"ghcr.io/acme/ide:*\"],"
    "\"default\":\"quay.io/jupyter/base-notebook:2025-10-20\"},"
    "\"port\":8080,"
    "\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\",\"count\":2,"
    "\"productLabel\":\"gpu.example/product\",\"product\":\"Tesla-T4\","
    "\"nodeSelector\":{\"cloud.google.com/gke-accelerator\":\"nvidia-tesla-t4\"}},"
    "\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"8Gi\"},\"limits\":{\"memory\":"
    "\"16Gi\"}},"
    "\"runtimeClassName\":\"gvisor\","
    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"
    "\"NoSchedule\"}],"
    "\"home\":{\"size\":\"10Gi\",\"maxSize\":\"100Gi\",\"storageClassName\":\"standard\","
    "\"mountPath\":\"/home/user\",\"onDelete\":\"Retain\"},"
    "\"checkpoint\":{\"path\":\"/home/user/.ckpt\",\"envVar\":\"CKPT\","
    "\"request\":{\"url\":\"http://{podIP}:{port}/ckpt\",\"method\":\"PUT\",\"timeout\":\"20s\"}},"
    "\"pause\":{\"gracePeriodSeconds\":120},"
    "\"resume\":{\"capacityTimeout\":\"90s\",\"onCapacityTimeout\":\"Fail\"}}}";

static const char *const minimal_class =
    "{\"metadata\":{\"name\":\"cpu-small\"},"
    "\"spec\":{\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],"
    "\"default\":\"quay.io/jupyter/base-notebook:latest\"},"
    "\"home\":{\"size\":\"10Gi\"}}}";

static struct workspace_class *decode_ok(const char *json)
{
    cJSON *obj = cJSON_Parse(json);
    assert_non_null(obj);
    struct workspace_class *c = NULL;
    char *err = NULL;
    int r = workspace_class_decode(obj, &c, &err);
    if (r != 0)
        fail_msg("decode: %d %s", r, err ? err : "");
    cJSON_Delete(obj);
    assert_null(err);
    return c;
}

static void test_decode_full(void **state)
{
    (void)state;
    struct workspace_class *c = decode_ok(full_class);
    assert_string_equal(c->name, "gpu-t4");
    assert_int_equal(c->n_allowed_images, 2);
    assert_string_equal(c->allowed_images[1], "ghcr.io/acme/ide:*");
    assert_string_equal(c->default_image, "quay.io/jupyter/base-notebook:2025-10-20");
    assert_int_equal(c->port, 8080);
    assert_true(c->has_accelerator);
    assert_string_equal(c->accelerator_resource, "nvidia.com/gpu");
    assert_int_equal(c->accelerator_count, 2);
    assert_string_equal(c->product_label, "gpu.example/product");
    assert_string_equal(c->product, "Tesla-T4");
    assert_int_equal(c->n_node_selector, 1);
    assert_string_equal(c->node_selector[0].key, "cloud.google.com/gke-accelerator");
    assert_string_equal(c->node_selector[0].value, "nvidia-tesla-t4");
    assert_non_null(c->resources);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(c->resources, "requests"), "cpu")->valuestring,
        "2");
    assert_true(cJSON_IsArray(c->tolerations));
    assert_int_equal(cJSON_GetArraySize(c->tolerations), 1);
    assert_string_equal(c->runtime_class_name, "gvisor");
    assert_string_equal(c->home_size, "10Gi");
    assert_int_equal(c->home_size_bytes, INT64_C(10) << 30);
    assert_string_equal(c->home_max_size, "100Gi");
    assert_int_equal(c->home_max_bytes, INT64_C(100) << 30);
    assert_string_equal(c->storage_class_name, "standard");
    assert_string_equal(c->home_mount_path, "/home/user");
    assert_int_equal(c->home_on_delete, HOME_ON_DELETE_RETAIN);
    assert_string_equal(c->checkpoint_path, "/home/user/.ckpt");
    assert_string_equal(c->checkpoint_env, "CKPT");
    assert_string_equal(c->checkpoint_request.url_template, "http://{podIP}:{port}/ckpt");
    assert_string_equal(c->checkpoint_request.method, "PUT");
    assert_int_equal(c->checkpoint_request.timeout_ms, 20000);
    assert_int_equal(c->pause_grace_seconds, 120);
    assert_int_equal(c->capacity_timeout_ms, 90000);
    assert_int_equal(c->on_capacity_timeout, CAPACITY_TIMEOUT_FAIL);
    workspace_class_free(c);
}

static void test_decode_defaults(void **state)
{
    (void)state;
    struct workspace_class *c = decode_ok(minimal_class);
    assert_string_equal(c->name, "cpu-small");
    assert_int_equal(c->port, 8888);
    assert_false(c->has_accelerator);
    assert_null(c->accelerator_resource);
    assert_null(c->product);
    assert_int_equal(c->n_node_selector, 0);
    assert_null(c->resources);
    assert_null(c->tolerations);
    assert_null(c->runtime_class_name);
    assert_string_equal(c->home_max_size, "10Gi");
    assert_int_equal(c->home_max_bytes, c->home_size_bytes);
    assert_null(c->storage_class_name);
    assert_string_equal(c->home_mount_path, "/home/jovyan");
    assert_int_equal(c->home_on_delete, HOME_ON_DELETE_DELETE);
    assert_string_equal(c->checkpoint_path, "/home/jovyan/.hibernator/checkpoint");
    assert_string_equal(c->checkpoint_env, "HIBERNATOR_CHECKPOINT_PATH");
    assert_null(c->checkpoint_request.url_template); /* nothing is asked */
    assert_int_equal(c->pause_grace_seconds, 60);
    assert_int_equal(c->capacity_timeout_ms, 30 * 60 * 1000);
    assert_int_equal(c->on_capacity_timeout, CAPACITY_TIMEOUT_WAIT);
    workspace_class_free(c);
}

static void test_decode_accelerator_defaults(void **state)
{
    (void)state;
    cJSON *obj = cJSON_Parse(minimal_class);
    cJSON *spec = cJSON_GetObjectItem(obj, "spec");
    cJSON *acc = cJSON_AddObjectToObject(spec, "accelerator");
    cJSON_AddStringToObject(acc, "resourceName", "nvidia.com/gpu");
    cJSON_AddStringToObject(acc, "product", "NVIDIA-L4");
    /* null counts as absent, as the API server may send it */
    cJSON_AddNullToObject(acc, "count");
    struct workspace_class *c = NULL;
    char *err = NULL;
    assert_int_equal(workspace_class_decode(obj, &c, &err), 0);
    assert_int_equal(c->accelerator_count, 1);
    assert_string_equal(c->product_label, "nvidia.com/gpu.product");
    assert_string_equal(c->product, "NVIDIA-L4");
    assert_int_equal(c->snapshot.restore_check_timeout_ms, 2 * 60 * 1000); /* the default */
    workspace_class_free(c);
    cJSON_Delete(obj);
}

/* A FallBack class: the products it allows, the class's own first. */
static void test_decode_alternative_products(void **state)
{
    (void)state;
    cJSON *obj = cJSON_Parse(full_class);
    cJSON *spec = cJSON_GetObjectItem(obj, "spec");
    cJSON *alts =
        cJSON_AddArrayToObject(cJSON_GetObjectItem(spec, "accelerator"), "alternativeProducts");
    cJSON_AddItemToArray(alts, cJSON_CreateString("NVIDIA-L4"));
    cJSON_AddItemToArray(alts, cJSON_CreateString("NVIDIA-A100"));
    cJSON *resume = cJSON_GetObjectItem(spec, "resume");
    cJSON_ReplaceItemInObject(resume, "onCapacityTimeout", cJSON_CreateString("FallBack"));
    struct workspace_class *c = NULL;
    char *err = NULL;
    if (workspace_class_decode(obj, &c, &err) != 0)
        fail_msg("decode: %s", err ? err : "");
    assert_int_equal(c->on_capacity_timeout, CAPACITY_TIMEOUT_FALL_BACK);
    assert_int_equal(c->n_alternative_products, 2);
    assert_string_equal(c->alternative_products[0], "NVIDIA-L4");
    assert_string_equal(c->alternative_products[1], "NVIDIA-A100");
    assert_true(workspace_class_allows_product(c, "Tesla-T4"));
    assert_true(workspace_class_allows_product(c, "NVIDIA-A100"));
    assert_false(workspace_class_allows_product(c, "NVIDIA-H100"));
    assert_false(workspace_class_allows_product(c, NULL));
    workspace_class_free(c);
    cJSON_Delete(obj);

    /* Alternatives alone change nothing of Wait, and a CPU class allows none. */
    c = decode_ok(minimal_class);
    assert_int_equal(c->n_alternative_products, 0);
    assert_false(workspace_class_allows_product(c, "Tesla-T4"));
    workspace_class_free(c);
}

/* Sets (or with value NULL removes) a dotted path in obj. */
static void set_path(cJSON *obj, const char *path, const char *value)
{
    char *copy = strdup(path);
    char *save = NULL;
    char *part = strtok_r(copy, ".", &save);
    cJSON *at = obj;
    for (;;) {
        char *next = strtok_r(NULL, ".", &save);
        if (!next) {
            cJSON_DeleteItemFromObjectCaseSensitive(at, part);
            if (value) {
                cJSON *v = cJSON_Parse(value);
                assert_non_null(v);
                cJSON_AddItemToObject(at, part, v);
            }
            break;
        }
        cJSON *child = cJSON_GetObjectItemCaseSensitive(at, part);
        if (!child)
            child = cJSON_AddObjectToObject(at, part);
        at = child;
        part = next;
    }
    free(copy);
}

/* spec.env: kept in order, a missing value is empty; none is no list. */
/* The ContainerCheckpoint backend: the repository as given, the pull
 * Secret optional; the repository grammar is the OCI one. */
static void test_decode_container_checkpoint(void **state)
{
    (void)state;
    static const char *const good[] = {
        "registry.example.com/checkpoints",
        "10.231.0.1:5000/checkpoints/team-a",
        "r/a.b_c-d/e__f",
        "localhost:1/x",
        "localhost:65535/x",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cJSON *obj = cJSON_Parse(minimal_class);
        assert_non_null(obj);
        cJSON *snap = cJSON_AddObjectToObject(cJSON_GetObjectItem(obj, "spec"), "snapshot");
        assert_non_null(cJSON_AddStringToObject(snap, "backend", "ContainerCheckpoint"));
        assert_non_null(cJSON_AddStringToObject(snap, "repository", good[i]));
        if (i == 0)
            assert_non_null(cJSON_AddStringToObject(snap, "pullSecretName", "checkpoints"));
        if (i == 1)
            assert_non_null(cJSON_AddStringToObject(snap, "pullSecretName", "team-a.pull-1"));
        char *json = cJSON_PrintUnformatted(obj);
        cJSON_Delete(obj);
        struct workspace_class *c = decode_ok(json);
        free(json);
        assert_int_equal(c->snapshot.backend, SNAPSHOT_BACKEND_CONTAINER_CHECKPOINT);
        assert_string_equal(c->snapshot.repository, good[i]);
        if (i == 0)
            assert_string_equal(c->snapshot.pull_secret_name, "checkpoints");
        else if (i == 1)
            assert_string_equal(c->snapshot.pull_secret_name, "team-a.pull-1");
        else
            assert_null(c->snapshot.pull_secret_name);
        workspace_class_free(c);
    }
}

/* spec.queue: the LocalQueue, the others a workspace may name, a
 * priority class. */
static void test_decode_queue(void **state)
{
    (void)state;
    cJSON *obj = cJSON_Parse(minimal_class);
    assert_non_null(obj);
    cJSON *q = cJSON_AddObjectToObject(cJSON_GetObjectItem(obj, "spec"), "queue");
    assert_non_null(cJSON_AddStringToObject(q, "localQueue", "gpus"));
    assert_non_null(cJSON_AddStringToObject(q, "priorityClass", "interactive"));
    const char *const others[] = {"big-gpus", "night"};
    assert_non_null(
        cJSON_AddItemToObject(q, "allowedLocalQueues", cJSON_CreateStringArray(others, 2)));
    char *json = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    struct workspace_class *c = decode_ok(json);
    free(json);
    assert_string_equal(c->queue.local_queue, "gpus");
    assert_string_equal(c->queue.priority_class, "interactive");
    assert_int_equal(c->queue.n_allowed, 2);
    assert_true(workspace_class_allows_queue(c, "gpus"));
    assert_true(workspace_class_allows_queue(c, "night"));
    assert_false(workspace_class_allows_queue(c, "other"));
    assert_false(workspace_class_allows_queue(c, NULL));
    workspace_class_free(c);
    /* No spec.queue: no queue at all. */
    c = decode_ok(minimal_class);
    assert_null(c->queue.local_queue);
    assert_false(workspace_class_allows_queue(c, "gpus"));
    workspace_class_free(c);
}

static void test_decode_env(void **state)
{
    (void)state;
    struct workspace_class *c = decode_ok(minimal_class);
    assert_int_equal(c->n_env, 0);
    assert_null(c->env);
    workspace_class_free(c);

    cJSON *obj = cJSON_Parse(full_class);
    set_path(obj, "spec.env",
             "[{\"name\":\"NOTEBOOK_ARGS\",\"value\":\"--KernelManager.transport=ipc\"},"
             "{\"name\":\"_EMPTY\"}]");
    char *text = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    c = decode_ok(text);
    cJSON_free(text);
    assert_int_equal(c->n_env, 2);
    assert_string_equal(c->env[0].name, "NOTEBOOK_ARGS");
    assert_string_equal(c->env[0].value, "--KernelManager.transport=ipc");
    assert_string_equal(c->env[1].name, "_EMPTY");
    assert_string_equal(c->env[1].value, "");
    workspace_class_free(c);
}

static void test_decode_errors(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        const char *value; /* NULL: remove */
        const char *err_prefix;
    } cases[] = {
        {"metadata.name", NULL, "metadata.name: required"},
        {"metadata", "[]", "metadata: must be an object"},
        {"spec", NULL, "spec: required"},
        {"spec.images", NULL, "spec.images: required"},
        {"spec.images.allowed", NULL, "spec.images.allowed:"},
        {"spec.images.allowed", "[]", "spec.images.allowed: must list 1 to 32"},
        {"spec.images.allowed",
         "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\",\"l\",\"m\",\"n\","
         "\"o\",\"p\",\"q\",\"r\",\"s\",\"t\",\"u\",\"v\",\"w\",\"x\",\"y\",\"z\",\"1\",\"2\","
         "\"3\",\"4\",\"5\",\"6\",\"7\"]",
         "spec.images.allowed: must list 1 to 32"},
        {"spec.images.allowed", "[\"quay.io/*\", 7]", "spec.images.allowed[1]:"},
        {"spec.images.default", NULL, "spec.images.default: required"},
        {"spec.images.default", "\"docker.io/evil:latest\"", "spec.images.default: \"docker.io"},
        {"spec.port", "0", "spec.port: must be between 1 and 65535"},
        {"spec.port", "65536", "spec.port:"},
        {"spec.port", "80.5", "spec.port: must be a whole number"},
        {"spec.port", "\"8888\"", "spec.port: must be a whole number"},
        {"spec.accelerator", "{\"product\":\"T4\"}", "spec.accelerator.resourceName: required"},
        {"spec.accelerator", "{\"resourceName\":\"nvidia.com/gpu\"}",
         "spec.accelerator.product: required"},
        {"spec.accelerator", "{\"resourceName\":\"g\",\"product\":\"T4\",\"count\":17}",
         "spec.accelerator.count: must be between 1 and 16"},
        {"spec.accelerator", "{\"resourceName\":\"g\",\"product\":\"T4\",\"count\":0}",
         "spec.accelerator.count:"},
        {"spec.accelerator",
         "{\"resourceName\":\"g\",\"product\":\"T4\",\"nodeSelector\":{\"a\":1}}",
         "spec.accelerator.nodeSelector: values must be strings"},
        {"spec.accelerator", "true", "spec.accelerator: must be an object"},
        {"spec.resources", "[]", "spec.resources: must be an object"},
        {"spec.resources.limits.memory", "\"1234567890123456789012345Gi\"",
         "spec.resources.limits.memory: \"1234567890123456789012345Gi\" is larger than the "
         "controller can carry (at most 9223372036854775807)"},
        {"spec.resources.requests.cpu", "\"10E\"",
         "spec.resources.requests.cpu: \"10E\" is larger than the controller can carry"},
        {"spec.resources.limits", "{\"nvidia.com/gpu\":\"1e100\"}",
         "spec.resources.limits.nvidia.com/gpu: \"1e100\" is larger than the controller can "
         "carry"},
        {"spec.resources.requests.memory", "\"8 GB\"",
         "spec.resources.requests.memory: \"8 GB\" is not a quantity such as \"8Gi\""},
        {"spec.resources.requests.memory", "1000000000000000",
         "spec.resources.requests.memory: the number is larger than the controller can carry "
         "exactly (at most 999999999999999); write it as a string"},
        {"spec.resources.requests.memory", "-1",
         "spec.resources.requests.memory: must be a quantity"},
        {"spec.resources.requests.memory", "true",
         "spec.resources.requests.memory: must be a quantity"},
        {"spec.resources.limits", "[]", "spec.resources.limits: must be an object"},
        {"spec.tolerations", "{}", "spec.tolerations: must be a list"},
        {"spec.runtimeClassName", "5", "spec.runtimeClassName: must be a string"},
        {"spec.home", NULL, "spec.home: required"},
        {"spec.home.size", NULL, "spec.home.size: required"},
        {"spec.home.size", "\"ten gigs\"", "spec.home.size: \"ten gigs\" is not a valid size"},
        {"spec.home.size", "\"0\"", "spec.home.size:"},
        {"spec.home.size", "{}", "spec.home.size: must be a quantity"},
        {"spec.home.size", "\"8Ei\"",
         "spec.home.size: \"8Ei\" is larger than the controller can carry (at most "
         "9223372036854775807 bytes, just under 8Ei)"},
        {"spec.home.maxSize", "\"1234567890123456789012345Gi\"",
         "spec.home.maxSize: \"1234567890123456789012345Gi\" is larger than the controller can "
         "carry"},
        {"spec.home.size", "9007199254740993",
         "spec.home.size: the number is larger than the controller can carry exactly"},
        {"spec.home.size", "\"1.00000000000000000001Gi\"",
         "spec.home.size: \"1.00000000000000000001Gi\" has more significant digits than the "
         "controller reads exactly"},
        {"spec.home.maxSize", "\"5Gi\"", "spec.home.maxSize: 5Gi is smaller than spec.home.size"},
        {"spec.home.onDelete", "\"Orphan\"", "spec.home.onDelete: must be Delete or Retain"},
        {"spec.home.mountPath", "\"home\"", "spec.home.mountPath: must be an absolute path"},
        {"spec.checkpoint.envVar", "[]", "spec.checkpoint.envVar: must be a string"},
        {"spec.checkpoint.request", "[]", "spec.checkpoint.request: must be an object"},
        {"spec.checkpoint.request", "{\"method\":\"POST\"}",
         "spec.checkpoint.request.url: required"},
        {"spec.checkpoint.request.url", "\"ftp://x/ckpt\"",
         "spec.checkpoint.request.url: \"ftp://x/ckpt\" must start with http:// or https://"},
        {"spec.checkpoint.request.method", "\"GET\"",
         "spec.checkpoint.request.method: must be POST or PUT"},
        {"spec.checkpoint.request.timeout", "\"0s\"",
         "spec.checkpoint.request.timeout: must be between 1s and 1h"},
        {"spec.checkpoint.request.timeout", "\"2h\"",
         "spec.checkpoint.request.timeout: must be between 1s and 1h"},
        {"spec.checkpoint.request.timeout", "\"soon\"",
         "spec.checkpoint.request.timeout: \"soon\""},
        {"spec.pause.gracePeriodSeconds", "0", "spec.pause.gracePeriodSeconds: must be between"},
        {"spec.pause.gracePeriodSeconds", "3601", "spec.pause.gracePeriodSeconds:"},
        {"spec.resume.capacityTimeout", "\"soon\"", "spec.resume.capacityTimeout: \"soon\""},
        {"spec.resume.capacityTimeout", "30", "spec.resume.capacityTimeout: must be a duration"},
        {"spec.resume.onCapacityTimeout", "\"Retry\"",
         "spec.resume.onCapacityTimeout: must be Wait, Fail or FallBack"},
        /* FallBack needs somewhere to fall back to. */
        {"spec.resume.onCapacityTimeout", "\"FallBack\"",
         "spec.resume.onCapacityTimeout: FallBack needs at least one product in "
         "spec.accelerator.alternativeProducts"},
        {"spec.accelerator.alternativeProducts", "\"NVIDIA-L4\"",
         "spec.accelerator.alternativeProducts: must be a list"},
        {"spec.accelerator.alternativeProducts", "[\"NVIDIA-L4\", 4]",
         "spec.accelerator.alternativeProducts[1]: must be a non-empty string"},
        {"spec.accelerator.alternativeProducts", "[\"NVIDIA-L4\", \"Tesla-T4\"]",
         "spec.accelerator.alternativeProducts[1]: \"Tesla-T4\" is listed already"},
        {"spec.accelerator.alternativeProducts", "[\"NVIDIA-L4\", \"NVIDIA-L4\"]",
         "spec.accelerator.alternativeProducts[1]: \"NVIDIA-L4\" is listed already"},
        {"spec.accelerator.alternativeProducts",
         "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]",
         "spec.accelerator.alternativeProducts: may list at most 8 products"},
        {"spec.env", "{}", "spec.env: must be a list"},
        {"spec.env", "[{\"value\":\"x\"}]", "spec.env[0].name: required"},
        {"spec.env", "[{\"name\":\"A\"},{\"name\":\"1BAD\"}]",
         "spec.env[1].name: must match [A-Za-z_][A-Za-z0-9_]*"},
        {"spec.env", "[{\"name\":\"A-B\"}]", "spec.env[0].name: must match"},
        {"spec.env", "[{\"name\":\"HIBERNATOR_WORKSPACE\",\"value\":\"x\"}]",
         "spec.env[0].name: \"HIBERNATOR_WORKSPACE\" is reserved: names starting with HIBERNATOR_"},
        {"spec.env", "[{\"name\":\"CKPT\",\"value\":\"/tmp\"}]",
         "spec.env[0].name: \"CKPT\" is reserved: spec.checkpoint.envVar"},
        {"spec.env", "[{\"name\":\"A\"},{\"name\":\"A\"}]", "spec.env[1].name: \"A\" is set twice"},
        {"spec.env", "[{\"name\":\"A\",\"value\":7}]", "spec.env[0].value: must be a string"},
        {"spec.env",
         "[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"c\"},{\"name\":\"d\"},"
         "{\"name\":\"e\"},{\"name\":\"f\"},{\"name\":\"g\"},{\"name\":\"h\"},"
         "{\"name\":\"i\"},{\"name\":\"j\"},{\"name\":\"k\"},{\"name\":\"l\"},"
         "{\"name\":\"m\"},{\"name\":\"n\"},{\"name\":\"o\"},{\"name\":\"p\"},"
         "{\"name\":\"q\"},{\"name\":\"r\"},{\"name\":\"s\"},{\"name\":\"t\"},"
         "{\"name\":\"u\"},{\"name\":\"v\"},{\"name\":\"w\"},{\"name\":\"x\"},"
         "{\"name\":\"y\"},{\"name\":\"z\"},{\"name\":\"A\"},{\"name\":\"B\"},"
         "{\"name\":\"C\"},{\"name\":\"D\"},{\"name\":\"E\"},{\"name\":\"F\"},"
         "{\"name\":\"G\"}]",
         "spec.env: at most 32 entries"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *obj = cJSON_Parse(full_class);
        set_path(obj, cases[i].path, cases[i].value);
        struct workspace_class *c = NULL;
        char *err = NULL;
        int r = workspace_class_decode(obj, &c, &err);
        if (r != -EINVAL)
            fail_msg("%s: rc %d, want -EINVAL", cases[i].path, r);
        assert_null(c);
        if (!err || strncmp(err, cases[i].err_prefix, strlen(cases[i].err_prefix)) != 0)
            fail_msg("%s: error \"%s\", want prefix \"%s\"", cases[i].path, err ? err : "(null)",
                     cases[i].err_prefix);
        free(err);
        cJSON_Delete(obj);
    }
}

static void test_decode_not_object(void **state)
{
    (void)state;
    cJSON *arr = cJSON_CreateArray();
    struct workspace_class *c = NULL;
    char *err = NULL;
    assert_int_equal(workspace_class_decode(arr, &c, &err), -EINVAL);
    assert_non_null(err);
    free(err);
    /* The error is optional. */
    assert_int_equal(workspace_class_decode(arr, &c, NULL), -EINVAL);
    cJSON_Delete(arr);
    workspace_class_free(NULL);
}

static void test_quantity(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int rc;
        int64_t bytes;
    } cases[] = {
        {"0", 0, 0},
        {"1000", 0, 1000},
        {"+5", 0, 5},
        {"1Ki", 0, 1024},
        {"10Gi", 0, INT64_C(10) << 30},
        {"1.5Gi", 0, INT64_C(1610612736)},
        {"0.5Ki", 0, 512},
        {".5Ki", 0, 512},
        {"2.Mi", 0, INT64_C(2) << 20},
        {"1Mi", 0, INT64_C(1) << 20},
        {"1Ti", 0, INT64_C(1) << 40},
        {"1Pi", 0, INT64_C(1) << 50},
        {"7Ei", 0, INT64_C(7) << 60},
        {"8Ei", -ERANGE, 0},
        {"1k", 0, 1000},
        {"500M", 0, 500000000},
        {"1G", 0, 1000000000},
        {"1.5T", 0, INT64_C(1500000000000)},
        {"2P", 0, INT64_C(2000000000000000)},
        {"9E", 0, INT64_C(9000000000000000000)},
        {"10E", -ERANGE, 0},
        {"1e3", 0, 1000},
        {"1E3", 0, 1000},
        {"12e-1", 0, 2}, /* 1.2 bytes rounds up */
        {"1.1", 0, 2},
        {"0.0001Ki", 0, 1},
        {"100Gi", 0, INT64_C(100) << 30},
        {"000000000000000000000001Gi", 0, INT64_C(1) << 30},
        {"1.50000000000000000000000Gi", 0, INT64_C(1610612736)},
        {"9223372036854775807", 0, INT64_MAX},
        {"9223372036854775808", -ERANGE, 0},
        {"8191.999999999999999Pi", 0, INT64_C(9223372036854775807)},
        {"9007199254740991Ki", 0, INT64_C(9223372036854774784)},
        {"9007199254740992Ki", -ERANGE, 0},
        {"1234567890123456789012345Gi", -ERANGE, 0},
        {"92233720368547758070", -ERANGE, 0},
        {"9223372036854775807.1", -ERANGE, 0}, /* a 20th digit, above */
        {"9223372036854775806.1", -EDOM, 0},   /* a 20th digit, below */
        {"9223372036854775807.00", 0, INT64_MAX},
        {"1.00000000000000000001Gi", -EDOM, 0},
        {"0.00000000000000000000000001e30", 0, 10000},
        {"1e-1000", 0, 1},
        {"0e1000", 0, 0},
        {"99999999999999999999", -ERANGE, 0},
        {"", -EINVAL, 0},
        {".", -EINVAL, 0},
        {"Gi", -EINVAL, 0},
        {"-1Gi", -EINVAL, 0},
        {"10 Gi", -EINVAL, 0},
        {" 10Gi", -EINVAL, 0},
        {"10gi", -EINVAL, 0},
        {"10GiB", -EINVAL, 0},
        {"10m", -EINVAL, 0},
        {"1e", -EINVAL, 0},
        {"1e1000", -ERANGE, 0},
        {"1e18", 0, INT64_C(1000000000000000000)},
        {"1e19", -ERANGE, 0},
        {"1e3.5", -EINVAL, 0},
        {"1.2.3", -EINVAL, 0},
        {"0x10", -EINVAL, 0},
        {"ten", -EINVAL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t v = -1;
        int r = quantity_parse_bytes(cases[i].in, &v);
        if (r != cases[i].rc)
            fail_msg("\"%s\": rc %d, want %d", cases[i].in, r, cases[i].rc);
        if (r == 0 && v != cases[i].bytes)
            fail_msg("\"%s\": %lld, want %lld", cases[i].in, (long long)v,
                     (long long)cases[i].bytes);
        if (r < 0 && v != -1)
            fail_msg("\"%s\": output written on failure", cases[i].in);
    }
    int64_t v;
    assert_int_equal(quantity_parse_bytes(NULL, &v), -EINVAL);
}

/* A class's requests and limits go to the pod as written, so each must be a
 * value the API server keeps: above INT64_MAX it would lower a
 * binary-suffixed one to INT64_MAX without a word. The whole message of the
 * value found in the wild, then the values either side of the limit. */
static void test_resources_quantity_limits(void **state)
{
    (void)state;
    cJSON *obj = cJSON_Parse(full_class);
    set_path(obj, "spec.resources.limits.memory", "\"1234567890123456789012345Gi\"");
    struct workspace_class *c = NULL;
    char *err = NULL;
    assert_int_equal(workspace_class_decode(obj, &c, &err), -EINVAL);
    assert_null(c);
    assert_string_equal(err, "spec.resources.limits.memory: \"1234567890123456789012345Gi\" is "
                             "larger than the controller can carry (at most "
                             "9223372036854775807)");
    free(err);
    cJSON_Delete(obj);

    static const struct {
        const char *value; /* JSON */
        int ok;
    } cases[] = {
        {"\"9223372036854775807\"", 1}, /* INT64_MAX: the largest carried */
        {"\"9223372036854775808\"", 0},
        {"\"7Ei\"", 1},
        {"\"8Ei\"", 0}, /* 2^63 */
        {"\"8191.999999999999999Pi\"", 1},
        {"\"9007199254740991Ki\"", 1}, /* the largest whole number of Ki */
        {"\"9007199254740992Ki\"", 0},
        {"\"9E\"", 1},
        {"\"10E\"", 0},
        {"\"1e18\"", 1},
        {"\"1e19\"", 0},
        {"\"9223372036854775807000m\"", 1}, /* INT64_MAX in thousandths */
        {"\"9223372036854775807001m\"", 0},
        {"\"9223372036854775807000000000n\"", 1},
        {"\"500m\"", 1},
        {"\"1u\"", 1},
        {"\"1.00000000000000000001\"", 1}, /* digits past the 19th, far below */
        {"\"1e-1000\"", 1},
        {"\"0\"", 1},
        {"999999999999999", 1}, /* the largest number written back exactly */
        {"1000000000000000", 0},
        {"9007199254740991", 0}, /* read exactly, printed as 9007199254740990 */
        {"1e300", 0},
        {"\"1mi\"", 0},
        {"\"\"", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        obj = cJSON_Parse(full_class);
        set_path(obj, "spec.resources.limits.memory", cases[i].value);
        c = NULL;
        err = NULL;
        int r = workspace_class_decode(obj, &c, &err);
        if (cases[i].ok && r != 0)
            fail_msg("%s: refused: %s", cases[i].value, err ? err : "");
        if (!cases[i].ok &&
            (r != -EINVAL || !err || strncmp(err, "spec.resources.limits.memory: ", 30) != 0))
            fail_msg("%s: rc %d, error \"%s\", want refused naming the field", cases[i].value, r,
                     err ? err : "(null)");
        if (r == 0) {
            /* Kept as written: the pod gets the class's own text. */
            const cJSON *got =
                cJSON_GetObjectItem(cJSON_GetObjectItem(c->resources, "limits"), "memory");
            cJSON *want = cJSON_Parse(cases[i].value);
            assert_true(cJSON_Compare(got, want, 1));
            cJSON_Delete(want);
        }
        workspace_class_free(c);
        free(err);
        cJSON_Delete(obj);
    }
}

/* A resource's quantity, rounded up to a whole unit. */
static void test_quantity_value(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int rc;
        int64_t value;
    } cases[] = {
        {"2", 0, 2},
        {"500m", 0, 1},
        {"1500m", 0, 2},
        {"2000m", 0, 2},
        {"1n", 0, 1},
        {"1000000u", 0, 1},
        {"0m", 0, 0},
        {"1Ki", 0, 1024},
        {"9223372036854775807", 0, INT64_MAX},
        {"9223372036854775807000m", 0, INT64_MAX},
        {"9223372036854775807001m", -ERANGE, 0},
        {"1234567890123456789012345Gi", -ERANGE, 0},
        {"1.00000000000000000001", -EDOM, 0},
        {"1mi", -EINVAL, 0},
        {"-1", -EINVAL, 0},
        {"m", -EINVAL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t v = -1;
        int r = quantity_parse_value(cases[i].in, &v);
        if (r != cases[i].rc)
            fail_msg("\"%s\": rc %d, want %d", cases[i].in, r, cases[i].rc);
        if (r == 0 && v != cases[i].value)
            fail_msg("\"%s\": %lld, want %lld", cases[i].in, (long long)v,
                     (long long)cases[i].value);
        if (r < 0 && v != -1)
            fail_msg("\"%s\": output written on failure", cases[i].in);
    }
    int64_t v;
    assert_int_equal(quantity_parse_value(NULL, &v), -EINVAL);
}

static void test_image_globs(void **state)
{
    (void)state;
    char *patterns[] = {"quay.io/jupyter/*", "ghcr.io/acme/ide:v?",
                        "docker.io/library/python:3.1[12]"};
    struct workspace_class c = {.allowed_images = patterns, .n_allowed_images = 3};
    static const struct {
        const char *image;
        int allowed;
    } cases[] = {
        {"quay.io/jupyter/base-notebook:2025-10-20", 1},
        {"quay.io/jupyter/scipy-notebook", 1},
        /* '*' crosses '/' (no FNM_PATHNAME) */
        {"quay.io/jupyter/sub/dir/image:tag", 1},
        {"quay.io/jupyter/x@sha256:0123abcd", 1},
        {"quay.io/jupyterx/base:1", 0},
        {"quay.io/other/base:1", 0},
        {"ghcr.io/acme/ide:v1", 1},
        {"ghcr.io/acme/ide:v10", 0},
        {"docker.io/library/python:3.12", 1},
        {"docker.io/library/python:3.13", 0},
        {"evil.example/quay.io/jupyter/x", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (workspace_class_allows_image(&c, cases[i].image) != cases[i].allowed)
            fail_msg("%s: want %d", cases[i].image, cases[i].allowed);
    assert_false(workspace_class_allows_image(&c, NULL));
    assert_false(workspace_class_allows_image(NULL, "quay.io/jupyter/x"));
}

/* ---- spec.activity and spec.idle ---- */

static const char *const idle_class =
    "{\"metadata\":{\"name\":\"gpu-idle\"},"
    "\"spec\":{\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],"
    "\"default\":\"quay.io/jupyter/base-notebook:latest\"},"
    "\"home\":{\"size\":\"10Gi\"},"
    "\"activity\":{\"application\":\"Jupyter\","
    "\"url\":\"http://{podIP}:{port}/user/{workspace}\","
    "\"tokenSecretRef\":{\"name\":\"{workspace}-token\",\"key\":\"jupyter-token\"},"
    "\"gpu\":{\"prometheusURL\":\"http://prometheus.monitoring:9090\","
    "\"query\":\"max(DCGM_FI_DEV_GPU_UTIL{pod=\\\"{pod}\\\"})\"},"
    "\"interval\":\"30s\",\"timeout\":\"3s\"},"
    "\"idle\":{\"autoPause\":false,\"after\":\"2h\",\"minAfter\":\"30m\",\"maxAfter\":\"8h\","
    "\"minRunning\":\"20m\",\"warnBefore\":\"10m\",\"gpuUtilisationThreshold\":12,"
    "\"maxKeepAlive\":\"24h\","
    "\"pauseWindows\":{\"timeZone\":\"Europe/Berlin\",\"windows\":["
    "{\"start\":\"19:00\",\"end\":\"08:00\"},"
    "{\"days\":[\"Sat\",\"Sun\"],\"start\":\"08:00\",\"end\":\"19:00\"}]}}}}";

#define SEC_MS INT64_C(1000)
#define MIN_MS (60 * SEC_MS)
#define HOUR_MS (60 * MIN_MS)

static void test_decode_idle_full(void **state)
{
    (void)state;
    struct workspace_class *c = decode_ok(idle_class);
    const struct activity_config *a = &c->activity;
    assert_int_equal(a->application, ACTIVITY_APP_JUPYTER);
    assert_string_equal(a->url_template, "http://{podIP}:{port}/user/{workspace}");
    assert_string_equal(a->token_secret_name, "{workspace}-token");
    assert_string_equal(a->token_secret_key, "jupyter-token");
    assert_string_equal(a->prometheus_url, "http://prometheus.monitoring:9090");
    assert_string_equal(a->gpu_query_template, "max(DCGM_FI_DEV_GPU_UTIL{pod=\"{pod}\"})");
    assert_int_equal(a->interval_ms, 30 * SEC_MS);
    assert_int_equal(a->timeout_ms, 3 * SEC_MS);

    const struct idle_class_policy *p = &c->idle;
    assert_false(p->auto_pause);
    assert_int_equal(p->after_ms, 2 * HOUR_MS);
    assert_int_equal(p->min_after_ms, 30 * MIN_MS);
    assert_int_equal(p->max_after_ms, 8 * HOUR_MS);
    assert_int_equal(p->min_running_ms, 20 * MIN_MS);
    assert_int_equal(p->warn_before_ms, 10 * MIN_MS);
    assert_int_equal(p->gpu_threshold_percent, 12);
    assert_int_equal(p->max_keep_alive_ms, 24 * HOUR_MS);
    assert_string_equal(p->time_zone, "Europe/Berlin");
    assert_int_equal(p->schedule.n_windows, 2);
    assert_int_equal(p->schedule.windows[0].days, 0);
    assert_int_equal(p->schedule.windows[0].start_minute, 19 * 60);
    assert_int_equal(p->schedule.windows[0].end_minute, 8 * 60);
    assert_int_equal(p->schedule.windows[1].days, (1u << 6) | (1u << 0));
    assert_int_equal(p->schedule.windows[1].start_minute, 8 * 60);
    assert_int_equal(p->schedule.windows[1].end_minute, 19 * 60);
    workspace_class_free(c);
}

static void test_decode_idle_defaults(void **state)
{
    (void)state;
    struct workspace_class *c = decode_ok(minimal_class);
    const struct activity_config *a = &c->activity;
    assert_int_equal(a->application, ACTIVITY_APP_NONE);
    assert_string_equal(a->url_template, "http://{podIP}:{port}");
    assert_null(a->token_secret_name);
    assert_null(a->prometheus_url);
    assert_int_equal(a->interval_ms, 60 * SEC_MS);
    assert_int_equal(a->timeout_ms, 5 * SEC_MS);
    const struct idle_class_policy *p = &c->idle;
    assert_true(p->auto_pause);
    assert_int_equal(p->after_ms, HOUR_MS);
    assert_int_equal(p->min_after_ms, 15 * MIN_MS);
    assert_int_equal(p->max_after_ms, HOUR_MS);
    assert_int_equal(p->min_running_ms, 10 * MIN_MS);
    assert_int_equal(p->warn_before_ms, 5 * MIN_MS);
    assert_int_equal(p->gpu_threshold_percent, 5);
    assert_int_equal(p->max_keep_alive_ms, 12 * HOUR_MS);
    assert_string_equal(p->time_zone, "UTC");
    assert_int_equal(p->schedule.n_windows, 0);
    workspace_class_free(c);

    /* The defaults that follow other fields: minAfter is min(after, 15m),
     * maxAfter is after; a token key and a GPU query have defaults too. */
    static const struct {
        const char *idle;
        int64_t min_after, max_after;
    } cases[] = {
        {"{\"after\":\"10m\"}", 10 * MIN_MS, 10 * MIN_MS},
        {"{\"after\":\"15m\"}", 15 * MIN_MS, 15 * MIN_MS},
        {"{\"after\":\"3h\"}", 15 * MIN_MS, 3 * HOUR_MS},
        {"{\"after\":\"3h\",\"minAfter\":\"1h\"}", HOUR_MS, 3 * HOUR_MS},
        {"{\"after\":\"3h\",\"maxAfter\":\"4h\"}", 15 * MIN_MS, 4 * HOUR_MS},
        {"{\"after\":null,\"minAfter\":null}", 15 * MIN_MS, HOUR_MS},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *obj = cJSON_Parse(minimal_class);
        set_path(obj, "spec.idle", cases[i].idle);
        set_path(obj, "spec.activity",
                 "{\"tokenSecretRef\":{\"name\":\"nb-token\"},"
                 "\"gpu\":{\"prometheusURL\":\"https://prom.example\"}}");
        char *err = NULL;
        assert_int_equal(workspace_class_decode(obj, &c, &err), 0);
        if (c->idle.min_after_ms != cases[i].min_after ||
            c->idle.max_after_ms != cases[i].max_after)
            fail_msg("%s: minAfter %lld maxAfter %lld", cases[i].idle,
                     (long long)c->idle.min_after_ms, (long long)c->idle.max_after_ms);
        assert_string_equal(c->activity.token_secret_name, "nb-token");
        assert_string_equal(c->activity.token_secret_key, "token");
        assert_string_equal(c->activity.gpu_query_template,
                            "DCGM_FI_DEV_GPU_UTIL{namespace=\"{namespace}\",pod=\"{pod}\"}");
        workspace_class_free(c);
        cJSON_Delete(obj);
    }
}

static void test_decode_idle_errors(void **state)
{
    (void)state;
    static const char seventeen[] =
        "[{\"start\":\"00:00\",\"end\":\"01:00\"},{\"start\":\"01:00\",\"end\":\"02:00\"},"
        "{\"start\":\"02:00\",\"end\":\"03:00\"},{\"start\":\"03:00\",\"end\":\"04:00\"},"
        "{\"start\":\"04:00\",\"end\":\"05:00\"},{\"start\":\"05:00\",\"end\":\"06:00\"},"
        "{\"start\":\"06:00\",\"end\":\"07:00\"},{\"start\":\"07:00\",\"end\":\"08:00\"},"
        "{\"start\":\"08:00\",\"end\":\"09:00\"},{\"start\":\"09:00\",\"end\":\"10:00\"},"
        "{\"start\":\"10:00\",\"end\":\"11:00\"},{\"start\":\"11:00\",\"end\":\"12:00\"},"
        "{\"start\":\"12:00\",\"end\":\"13:00\"},{\"start\":\"13:00\",\"end\":\"14:00\"},"
        "{\"start\":\"14:00\",\"end\":\"15:00\"},{\"start\":\"15:00\",\"end\":\"16:00\"},"
        "{\"start\":\"16:00\",\"end\":\"17:00\"}]";
    static const struct {
        const char *path;
        const char *value; /* NULL: remove */
        const char *err_prefix;
    } cases[] = {
        {"spec.activity", "[]", "spec.activity: must be an object"},
        {"spec.activity.application", "\"VSCode\"",
         "spec.activity.application: must be None, Jupyter or CodeServer"},
        {"spec.activity.application", "1", "spec.activity.application:"},
        {"spec.activity.url", "\"ftp://{podIP}\"",
         "spec.activity.url: \"ftp://{podIP}\" must start with http:// or https://"},
        {"spec.activity.url", "\"{podIP}:{port}\"", "spec.activity.url:"},
        {"spec.activity.interval", "\"soon\"",
         "spec.activity.interval: \"soon\" is not a duration"},
        {"spec.activity.interval", "60", "spec.activity.interval: must be a duration"},
        {"spec.activity.interval", "\"500ms\"", "spec.activity.interval: must be at least 1s"},
        {"spec.activity.timeout", "\"31s\"",
         "spec.activity.timeout: must be more than 0 and at most"},
        {"spec.activity.timeout", "\"0s\"", "spec.activity.timeout:"},
        {"spec.activity.tokenSecretRef", "{\"key\":\"token\"}",
         "spec.activity.tokenSecretRef.name: required"},
        {"spec.activity.tokenSecretRef", "\"nb-token\"",
         "spec.activity.tokenSecretRef: must be an object"},
        {"spec.activity.gpu", "{\"query\":\"up\"}", "spec.activity.gpu.prometheusURL: required"},
        {"spec.activity.gpu", "{\"prometheusURL\":\"prometheus:9090\"}",
         "spec.activity.gpu.prometheusURL: \"prometheus:9090\" must start with http://"},
        {"spec.snapshot", "{\"restoreCheckTimeout\":\"500ms\"}",
         "spec.snapshot.restoreCheckTimeout: must be at least 1s"},
        {"spec.snapshot", "{\"restoreCheckTimeout\":\"soon\"}",
         "spec.snapshot.restoreCheckTimeout: \"soon\" is not a duration"},
        {"spec.snapshot", "{\"backend\":\"CRIU\"}",
         "spec.snapshot.backend: must be None, GKE or ContainerCheckpoint"},
        {"spec.snapshot", "{\"backend\":\"ContainerCheckpoint\"}",
         "spec.snapshot.repository: required"},
        {"spec.snapshot", "{\"backend\":\"ContainerCheckpoint\",\"repository\":\"registry\"}",
         "spec.snapshot.repository: not an OCI repository"},
        {"spec.snapshot",
         "{\"backend\":\"ContainerCheckpoint\",\"repository\":\"r.example:5000/Team\"}",
         "spec.snapshot.repository: not an OCI repository"},
        {"spec.snapshot",
         "{\"backend\":\"ContainerCheckpoint\",\"repository\":\"r.example:5000/a--/b\"}",
         "spec.snapshot.repository: not an OCI repository"},
        {"spec.snapshot",
         "{\"backend\":\"ContainerCheckpoint\",\"repository\":\"r.example:123456/a\"}",
         "spec.snapshot.repository: not an OCI repository"},
        {"spec.snapshot", "{\"backend\":\"ContainerCheckpoint\",\"repository\":\"r.example/a//b\"}",
         "spec.snapshot.repository: not an OCI repository"},
        {"spec.snapshot",
         "{\"backend\":\"ContainerCheckpoint\",\"repository\":\"r.example:99999/a\"}",
         "spec.snapshot.repository: not an OCI repository host[:port]/path (a port of 1-65535"},
        {"spec.snapshot", "{\"backend\":\"ContainerCheckpoint\",\"repository\":\"r.example:0/a\"}",
         "spec.snapshot.repository: not an OCI repository"},
        {"spec.snapshot",
         "{\"backend\":\"ContainerCheckpoint\",\"repository\":\"r.example/a\",\"pullSecretName\":"
         "\"Pull_Secret\"}",
         "spec.snapshot.pullSecretName: not a Secret's name"},
        {"spec.snapshot",
         "{\"backend\":\"ContainerCheckpoint\",\"repository\":\"r.example/a\",\"pullSecretName\":"
         "\"pull..secret\"}",
         "spec.snapshot.pullSecretName: not a Secret's name"},
        {"spec.snapshot",
         "{\"backend\":\"ContainerCheckpoint\",\"repository\":\"r.example/a\",\"pullSecretName\":"
         "\"-pull\"}",
         "spec.snapshot.pullSecretName: not a Secret's name"},
        {"spec.snapshot", "{\"backend\":\"ContainerCheckpoint\",\"repository\":5}",
         "spec.snapshot.repository: must be a string"},
        {"spec.queue", "7", "spec.queue: must be an object"},
        {"spec.queue", "{}", "spec.queue.localQueue: required"},
        {"spec.queue", "{\"localQueue\":\"Team_A\"}",
         "spec.queue.localQueue: not a LocalQueue's name"},
        {"spec.queue", "{\"localQueue\":\"team.a\"}",
         "spec.queue.localQueue: not a LocalQueue's name"},
        {"spec.queue",
         "{\"localQueue\":\"a234567890123456789012345678901234567890123456789012345678901234\"}",
         "spec.queue.localQueue: not a LocalQueue's name"},
        {"spec.queue", "{\"localQueue\":\"gpus\",\"priorityClass\":\"-high\"}",
         "spec.queue.priorityClass: not a WorkloadPriorityClass's name"},
        {"spec.queue", "{\"localQueue\":\"gpus\",\"allowedLocalQueues\":\"big\"}",
         "spec.queue.allowedLocalQueues: must be a list"},
        {"spec.queue", "{\"localQueue\":\"gpus\",\"allowedLocalQueues\":[\"big\",\"Big\"]}",
         "spec.queue.allowedLocalQueues[1]: not a LocalQueue's name"},
        {"spec.queue", "{\"localQueue\":\"gpus\",\"allowedLocalQueues\":[\"big\",\"gpus\"]}",
         "spec.queue.allowedLocalQueues[1]: \"gpus\" is listed already"},
        {"spec.queue", "{\"localQueue\":\"gpus\",\"preWarmPriorityClass\":\"background\"}",
         "spec.queue.preWarmPriorityClass: needs spec.queue.priorityClass"},
        {"spec.queue",
         "{\"localQueue\":\"gpus\",\"priorityClass\":\"hi\",\"preWarmPriorityClass\":\"hi\"}",
         "spec.queue.preWarmPriorityClass: is spec.queue.priorityClass"},
        {"spec.queue",
         "{\"localQueue\":\"gpus\",\"priorityClass\":\"hi\",\"preWarmPriorityClass\":\"Low\"}",
         "spec.queue.preWarmPriorityClass: not a WorkloadPriorityClass's name"},
        {"spec.queue", "{\"localQueue\":\"gpus\",\"evictionHold\":\"2m\"}",
         "spec.queue.evictionHold: holds an evicted pod for its snapshot, and the class has none"},
        {"spec.queue", "{\"localQueue\":\"gpus\",\"evictionHold\":\"31m\"}",
         "spec.queue.evictionHold: at most 30m"},
        {"spec.queue", "{\"localQueue\":\"gpus\",\"evictionHold\":\"soon\"}",
         "spec.queue.evictionHold: \"soon\" is not a duration"},
        {"spec.idle", "7", "spec.idle: must be an object"},
        {"spec.idle.autoPause", "\"no\"", "spec.idle.autoPause: must be true or false"},
        {"spec.idle.after", "\"1 hour\"", "spec.idle.after: \"1 hour\" is not a duration"},
        {"spec.idle.after", "\"5s\"", "spec.idle.after: must be at least 10s"},
        {"spec.idle.minAfter", "\"5s\"", "spec.idle.minAfter: must be at least 10s"},
        {"spec.idle.minAfter", "\"3h\"",
         "spec.idle.minAfter: may not be longer than spec.idle.after"},
        {"spec.idle.maxAfter", "\"1h\"",
         "spec.idle.maxAfter: may not be shorter than spec.idle.after"},
        {"spec.idle.minRunning", "10", "spec.idle.minRunning: must be a duration"},
        {"spec.idle.warnBefore", "\"30m\"", "spec.idle.warnBefore: must be shorter"},
        {"spec.idle.warnBefore", "\"1h\"", "spec.idle.warnBefore: must be shorter"},
        {"spec.idle.maxKeepAlive", "\"forever\"", "spec.idle.maxKeepAlive: \"forever\""},
        {"spec.idle.gpuUtilisationThreshold", "101",
         "spec.idle.gpuUtilisationThreshold: must be between 0 and 100"},
        {"spec.idle.gpuUtilisationThreshold", "-1", "spec.idle.gpuUtilisationThreshold:"},
        {"spec.idle.gpuUtilisationThreshold", "2.5",
         "spec.idle.gpuUtilisationThreshold: must be a whole number"},
        {"spec.idle.pauseWindows", "[]", "spec.idle.pauseWindows: must be an object"},
        {"spec.idle.pauseWindows.timeZone", "\"../etc/passwd\"",
         "spec.idle.pauseWindows.timeZone: \"../etc/passwd\" is not a time zone name"},
        {"spec.idle.pauseWindows.timeZone", "\"/etc/localtime\"",
         "spec.idle.pauseWindows.timeZone: \"/etc/localtime\" is not a time zone name"},
        {"spec.idle.pauseWindows.timeZone", "3", "spec.idle.pauseWindows.timeZone: must be a"},
        {"spec.idle.pauseWindows.windows", "{}", "spec.idle.pauseWindows.windows: must be a list"},
        {"spec.idle.pauseWindows.windows", seventeen,
         "spec.idle.pauseWindows.windows: at most 16 windows"},
        {"spec.idle.pauseWindows.windows", "[7]",
         "spec.idle.pauseWindows.windows[0]: must be an object"},
        {"spec.idle.pauseWindows.windows", "[{\"start\":\"24:00\",\"end\":\"08:00\"}]",
         "spec.idle.pauseWindows.windows[0].start: \"24:00\" is not a time of day"},
        {"spec.idle.pauseWindows.windows",
         "[{\"start\":\"19:00\",\"end\":\"08:00\"},{\"start\":\"08:00\",\"end\":\"7pm\"}]",
         "spec.idle.pauseWindows.windows[1].end: \"7pm\" is not a time of day"},
        {"spec.idle.pauseWindows.windows", "[{\"end\":\"08:00\"}]",
         "spec.idle.pauseWindows.windows[0].start:"},
        {"spec.idle.pauseWindows.windows",
         "[{\"start\":\"19:00\",\"end\":\"08:00\",\"days\":[\"Mon\",\"Funday\"]}]",
         "spec.idle.pauseWindows.windows[0].days[1]: \"Funday\" is not a day"},
        {"spec.idle.pauseWindows.windows",
         "[{\"start\":\"19:00\",\"end\":\"08:00\",\"days\":[\"monday\"]}]",
         "spec.idle.pauseWindows.windows[0].days[0]:"},
        {"spec.idle.pauseWindows.windows",
         "[{\"start\":\"19:00\",\"end\":\"08:00\",\"days\":\"Mon\"}]",
         "spec.idle.pauseWindows.windows[0].days: must be a list"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *obj = cJSON_Parse(idle_class);
        assert_non_null(obj);
        set_path(obj, cases[i].path, cases[i].value);
        struct workspace_class *c = NULL;
        char *err = NULL;
        int r = workspace_class_decode(obj, &c, &err);
        if (r != -EINVAL)
            fail_msg("%s = %s: rc %d, want -EINVAL", cases[i].path, cases[i].value, r);
        assert_null(c);
        if (!err || strncmp(err, cases[i].err_prefix, strlen(cases[i].err_prefix)) != 0)
            fail_msg("%s = %s: error \"%s\", want prefix \"%s\"", cases[i].path, cases[i].value,
                     err ? err : "(null)", cases[i].err_prefix);
        free(err);
        cJSON_Delete(obj);
    }

    /* The class default warnBefore (5m) does not fit a short idle time on
     * its own: the class has to say how early to warn. */
    cJSON *obj = cJSON_Parse(minimal_class);
    set_path(obj, "spec.idle", "{\"after\":\"5m\"}");
    struct workspace_class *c = NULL;
    char *err = NULL;
    assert_int_equal(workspace_class_decode(obj, &c, &err), -EINVAL);
    assert_non_null(strstr(err, "spec.idle.warnBefore"));
    free(err);
    set_path(obj, "spec.idle", "{\"after\":\"5m\",\"warnBefore\":\"1m\"}");
    assert_int_equal(workspace_class_decode(obj, &c, NULL), 0);
    assert_int_equal(c->idle.min_after_ms, 5 * MIN_MS);
    workspace_class_free(c);
    cJSON_Delete(obj);
}

/* Every backend kind has its row: its name decodes back to it, and the
 * field it cannot do without is refused when missing, with the field named. */
static void test_backend_traits(void **state)
{
    (void)state;
    static const enum snapshot_backend_kind kinds[] = {SNAPSHOT_BACKEND_NONE, SNAPSHOT_BACKEND_GKE,
                                                       SNAPSHOT_BACKEND_CONTAINER_CHECKPOINT};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        const struct snapshot_backend_traits *t = snapshot_backend_traits(kinds[i]);
        assert_non_null(t);
        char json[512];
        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"images\":{\"allowed\":[\"quay.io/"
                 "*\"],\"default\":"
                 "\"quay.io/jupyter/base-notebook:latest\"},\"home\":{\"size\":\"1Gi\"},"
                 "\"snapshot\":{\"backend\":\"%s\"%s%s%s}}}",
                 t->name, t->required_field ? ",\"" : "",
                 t->required_field ? t->required_field : "",
                 t->required_field ? "\":\"registry.local/ckpt\"" : "");
        struct workspace_class *c = decode_ok(json);
        assert_int_equal(c->snapshot.backend, kinds[i]);
        workspace_class_free(c);
        if (!t->required_field)
            continue;
        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"images\":{\"allowed\":[\"quay.io/"
                 "*\"],\"default\":"
                 "\"quay.io/jupyter/base-notebook:latest\"},\"home\":{\"size\":\"1Gi\"},"
                 "\"snapshot\":{\"backend\":\"%s\"}}}",
                 t->name);
        cJSON *obj = cJSON_Parse(json);
        char *err = NULL;
        assert_int_equal(workspace_class_decode(obj, &c, &err), -EINVAL);
        char want[96];
        snprintf(want, sizeof(want), "spec.snapshot.%s", t->required_field);
        if (!err || !strstr(err, want))
            fail_msg("%s without %s: %s", t->name, t->required_field, err ? err : "(none)");
        free(err);
        cJSON_Delete(obj);
    }
    assert_null(snapshot_backend_traits((enum snapshot_backend_kind)99));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_full),
        cmocka_unit_test(test_decode_defaults),
        cmocka_unit_test(test_decode_accelerator_defaults),
        cmocka_unit_test(test_decode_alternative_products),
        cmocka_unit_test(test_decode_env),
        cmocka_unit_test(test_decode_container_checkpoint),
        cmocka_unit_test(test_decode_queue),
        cmocka_unit_test(test_decode_errors),
        cmocka_unit_test(test_decode_not_object),
        cmocka_unit_test(test_quantity),
        cmocka_unit_test(test_quantity_value),
        cmocka_unit_test(test_resources_quantity_limits),
        cmocka_unit_test(test_image_globs),
        cmocka_unit_test(test_decode_idle_full),
        cmocka_unit_test(test_decode_idle_defaults),
        cmocka_unit_test(test_decode_idle_errors),
        cmocka_unit_test(test_backend_traits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
