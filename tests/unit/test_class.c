#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
    "\"checkpoint\":{\"path\":\"/home/user/.ckpt\",\"envVar\":\"CKPT\"},"
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
    workspace_class_free(c);
    cJSON_Delete(obj);
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
        {"spec.tolerations", "{}", "spec.tolerations: must be a list"},
        {"spec.runtimeClassName", "5", "spec.runtimeClassName: must be a string"},
        {"spec.home", NULL, "spec.home: required"},
        {"spec.home.size", NULL, "spec.home.size: required"},
        {"spec.home.size", "\"ten gigs\"", "spec.home.size: \"ten gigs\" is not a valid size"},
        {"spec.home.size", "\"0\"", "spec.home.size:"},
        {"spec.home.size", "{}", "spec.home.size: must be a quantity"},
        {"spec.home.maxSize", "\"5Gi\"", "spec.home.maxSize: 5Gi is smaller than spec.home.size"},
        {"spec.home.onDelete", "\"Orphan\"", "spec.home.onDelete: must be Delete or Retain"},
        {"spec.home.mountPath", "\"home\"", "spec.home.mountPath: must be an absolute path"},
        {"spec.checkpoint.envVar", "[]", "spec.checkpoint.envVar: must be a string"},
        {"spec.pause.gracePeriodSeconds", "0", "spec.pause.gracePeriodSeconds: must be between"},
        {"spec.pause.gracePeriodSeconds", "3601", "spec.pause.gracePeriodSeconds:"},
        {"spec.resume.capacityTimeout", "\"soon\"", "spec.resume.capacityTimeout: \"soon\""},
        {"spec.resume.capacityTimeout", "30", "spec.resume.capacityTimeout: must be a duration"},
        {"spec.resume.onCapacityTimeout", "\"Retry\"",
         "spec.resume.onCapacityTimeout: must be Wait or Fail"},
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
        {"8Ei", -EINVAL, 0},
        {"1k", 0, 1000},
        {"500M", 0, 500000000},
        {"1G", 0, 1000000000},
        {"1.5T", 0, INT64_C(1500000000000)},
        {"2P", 0, INT64_C(2000000000000000)},
        {"9E", 0, INT64_C(9000000000000000000)},
        {"10E", -EINVAL, 0},
        {"1e3", 0, 1000},
        {"1E3", 0, 1000},
        {"12e-1", 0, 2}, /* 1.2 bytes rounds up */
        {"1.1", 0, 2},
        {"0.0001Ki", 0, 1},
        {"100Gi", 0, INT64_C(100) << 30},
        {"000000000000000000000001Gi", 0, INT64_C(1) << 30},
        {"1.50000000000000000000000Gi", 0, INT64_C(1610612736)},
        {"9223372036854775807", 0, INT64_MAX},
        {"9223372036854775808", -EINVAL, 0},
        {"99999999999999999999", -EINVAL, 0},
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
        {"1e1000", -EINVAL, 0},
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_full),
        cmocka_unit_test(test_decode_defaults),
        cmocka_unit_test(test_decode_accelerator_defaults),
        cmocka_unit_test(test_decode_errors),
        cmocka_unit_test(test_decode_not_object),
        cmocka_unit_test(test_quantity),
        cmocka_unit_test(test_image_globs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
