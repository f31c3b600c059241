#include "workspace/class.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/duration.h"
#include "util/json.h"
#include "util/tz.h"

#define DEFAULT_PORT 8888
#define DEFAULT_PRODUCT_LABEL "nvidia.com/gpu.product"
#define DEFAULT_MOUNT_PATH "/home/jovyan"
#define DEFAULT_CHECKPOINT_DIR "/.hibernator/checkpoint"
#define DEFAULT_CHECKPOINT_TIMEOUT_MS 60000
#define MAX_CHECKPOINT_TIMEOUT_MS 3600000
#define DEFAULT_CHECKPOINT_ENV "HIBERNATOR_CHECKPOINT_PATH"
#define DEFAULT_PAUSE_GRACE_SECONDS 60
#define DEFAULT_CAPACITY_TIMEOUT "30m"
#define MAX_ALLOWED_IMAGES 32
#define DEFAULT_ACTIVITY_URL "http://{podIP}:{port}"
#define DEFAULT_GPU_QUERY "DCGM_FI_DEV_GPU_UTIL{namespace=\"{namespace}\",pod=\"{pod}\"}"
#define DEFAULT_PROBE_INTERVAL_MS (60 * 1000)
#define DEFAULT_PROBE_TIMEOUT_MS (5 * 1000)
#define MIN_PROBE_INTERVAL_MS 1000
#define DEFAULT_IDLE_AFTER_MS (60 * 60 * 1000)
#define DEFAULT_MIN_AFTER_MS (15 * 60 * 1000)
#define MIN_IDLE_AFTER_MS (10 * 1000)
#define DEFAULT_MIN_RUNNING_MS (10 * 60 * 1000)
#define DEFAULT_WARN_BEFORE_MS (5 * 60 * 1000)
#define DEFAULT_MAX_KEEP_ALIVE_MS (12 * 60 * 60 * 1000)
#define DEFAULT_GPU_THRESHOLD 5
#define DEFAULT_SNAPSHOT_TIMEOUT_MS (15 * 60 * 1000)
#define DEFAULT_SNAPSHOT_RETRY_AFTER_MS (10 * 60 * 1000)
#define DEFAULT_RESTORE_CHECK_TIMEOUT_MS (2 * 60 * 1000)
#define DEFAULT_SNAPSHOT_LAST_ACCESS_MS (7LL * 24 * 60 * 60 * 1000)
#define DEFAULT_SNAPSHOTS_KEPT 2
#define DEFAULT_PREWARM_GRACE_MS (30 * 60 * 1000)
#define DEFAULT_PREWARM_MAX_CONCURRENT 1
#define DEFAULT_PREWARM_SKIP_AFTER_DAYS 7
#define MIN_PREWARM_DURATION_MS (10 * 1000)
#define MAX_PREWARM_DURATION_MS (12 * 60 * 60 * 1000)
#define MAX_SNAPSHOTS_KEPT 10
#define MAX_ACCELERATOR_COUNT CLASS_MAX_ACCELERATOR_COUNT
#define MAX_ALTERNATIVE_PRODUCTS 8
#define MAX_PAUSE_GRACE_SECONDS 3600
/* spec.env, bounded as a Workspace's spec.env (deploy/crds/). */
#define MAX_CLASS_ENV 32
#define MAX_ENV_NAME 128
#define MAX_ENV_VALUE 4096
#define RESERVED_ENV_PREFIX "HIBERNATOR_"

/* The first problem found, as "<field>: <what is wrong>". */
struct decoder {
    int rc;
    char *err;
};

static int decoder_fail(struct decoder *d, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int decoder_fail(struct decoder *d, int rc, const char *fmt, ...)
{
    if (d->rc < 0)
        return d->rc;
    d->rc = rc;
    if (rc == -EINVAL) {
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&d->err, fmt, ap) < 0) {
            d->err = NULL;
            d->rc = -ENOMEM;
        }
        va_end(ap);
    }
    return d->rc;
}

static int decoder_oom(struct decoder *d)
{
    return decoder_fail(d, -ENOMEM, "%s", "");
}

/* Optional object: NULL when absent or null; an error when something else. */
static const cJSON *get_object(struct decoder *d, const cJSON *obj, const char *name,
                               const char *field)
{
    const cJSON *v = json_member(obj, name);
    if (!v || cJSON_IsNull(v))
        return NULL;
    if (!cJSON_IsObject(v)) {
        decoder_fail(d, -EINVAL, "%s: must be an object", field);
        return NULL;
    }
    return v;
}

/* Copies an optional string (NULL when absent); required ones must be
 * non-empty. Returns 0 or the decoder's error. */
static int get_string(struct decoder *d, const cJSON *obj, const char *name, const char *field,
                      int required, const char *dflt, char **ret)
{
    const cJSON *v = obj ? json_member(obj, name) : NULL;
    const char *s = NULL;
    if (v && !cJSON_IsNull(v)) {
        if (!cJSON_IsString(v) || !v->valuestring)
            return decoder_fail(d, -EINVAL, "%s: must be a string", field);
        s = v->valuestring;
        if (s[0] == '\0')
            s = NULL;
    }
    if (!s && required)
        return decoder_fail(d, -EINVAL, "%s: required", field);
    if (!s)
        s = dflt;
    if (!s) {
        *ret = NULL;
        return 0;
    }
    *ret = strdup(s);
    return *ret ? 0 : decoder_oom(d);
}

static int get_int(struct decoder *d, const cJSON *obj, const char *name, const char *field,
                   int64_t lo, int64_t hi, int64_t dflt, int64_t *ret)
{
    const cJSON *v = obj ? json_member(obj, name) : NULL;
    if (!v || cJSON_IsNull(v)) {
        *ret = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble))
        return decoder_fail(d, -EINVAL, "%s: must be a whole number", field);
    if (v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return decoder_fail(d, -EINVAL, "%s: must be between %lld and %lld", field, (long long)lo,
                            (long long)hi);
    *ret = (int64_t)v->valuedouble;
    return 0;
}

/* A quantity written as a JSON number: a whole number of at least 0 and at
 * most max. Returns 1 when it is one, 0 when it is larger, -1 otherwise. */
static int json_number_upto(const cJSON *v, int64_t max)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble != floor(v->valuedouble))
        return -1;
    return v->valuedouble <= (double)max;
}

/* A request or limit written as a number goes to the pod as cJSON prints
 * it, which is exact for at most 15 significant digits ("%1.15g" with a
 * tolerance: 9007199254740991 would come out as 9007199254740990). */
#define RESOURCE_MAX_JSON_NUMBER INT64_C(999999999999999)
/* QUANTITY_MAX, in words; a message closes the parenthesis. */
#define TOO_LARGE "is larger than the controller can carry (at most 9223372036854775807"
#define NUMBER_TOO_LARGE                                                                           \
    "%s: the number is larger than the controller can carry exactly (at most %lld); write it "     \
    "as a string such as \"16Gi\""

/* Sizes are quantities: a string ("10Gi") or, as Kubernetes allows, a
 * number. The written form is kept for messages. */
static int get_quantity(struct decoder *d, const cJSON *obj, const char *name, const char *field,
                        int required, char **ret_text, int64_t *ret_bytes)
{
    const cJSON *v = obj ? json_member(obj, name) : NULL;
    char *text = NULL;
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return decoder_fail(d, -EINVAL, "%s: required", field);
        *ret_text = NULL;
        *ret_bytes = 0;
        return 0;
    }
    int exact = json_number_upto(v, QUANTITY_MAX_JSON_NUMBER);
    if (cJSON_IsString(v) && v->valuestring) {
        text = strdup(v->valuestring);
    } else if (exact == 1) {
        if (asprintf(&text, "%lld", (long long)v->valuedouble) < 0)
            text = NULL;
    } else if (exact == 0) {
        return decoder_fail(d, -EINVAL, NUMBER_TOO_LARGE, field,
                            (long long)QUANTITY_MAX_JSON_NUMBER);
    } else {
        return decoder_fail(d, -EINVAL, "%s: must be a quantity such as \"10Gi\"", field);
    }
    if (!text)
        return decoder_oom(d);
    int64_t bytes = 0;
    int r = quantity_parse_bytes(text, &bytes);
    if (r == -ERANGE)
        decoder_fail(d, -EINVAL, "%s: \"%s\" " TOO_LARGE " bytes, just under 8Ei)", field, text);
    else if (r == -EDOM)
        decoder_fail(d, -EINVAL,
                     "%s: \"%s\" has more significant digits than the controller reads exactly "
                     "(at most 19)",
                     field, text);
    else if (r < 0 || bytes <= 0)
        decoder_fail(d, -EINVAL, "%s: \"%s\" is not a valid size", field, text);
    if (d->rc < 0) {
        free(text);
        return d->rc;
    }
    *ret_text = text;
    *ret_bytes = bytes;
    return 0;
}

static int get_enum(struct decoder *d, const cJSON *obj, const char *name, const char *field,
                    const char *const *names, size_t n, int dflt, int *ret)
{
    const cJSON *v = obj ? json_member(obj, name) : NULL;
    if (!v || cJSON_IsNull(v)) {
        *ret = dflt;
        return 0;
    }
    if (cJSON_IsString(v) && v->valuestring)
        for (size_t i = 0; i < n; i++)
            if (strcmp(v->valuestring, names[i]) == 0) {
                *ret = (int)i;
                return 0;
            }
    /* "must be A or B", "must be A, B or C" */
    char list[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && used < sizeof(list); i++) {
        int w = snprintf(list + used, sizeof(list) - used, "%s%s",
                         i == 0       ? ""
                         : i + 1 == n ? " or "
                                      : ", ",
                         names[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return decoder_fail(d, -EINVAL, "%s: must be %s", field, list);
}

static void labels_free(struct label *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(l[i].key);
        free(l[i].value);
    }
    free(l);
}

static int get_string_map(struct decoder *d, const cJSON *obj, const char *name, const char *field,
                          struct label **ret, size_t *ret_n)
{
    const cJSON *m = get_object(d, obj, name, field);
    if (d->rc < 0)
        return d->rc;
    *ret = NULL;
    *ret_n = 0;
    if (!m)
        return 0;
    size_t n = (size_t)cJSON_GetArraySize(m);
    if (n == 0)
        return 0;
    struct label *l = calloc(n, sizeof(*l));
    if (!l)
        return decoder_oom(d);
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, m)
    {
        if (!cJSON_IsString(e) || !e->valuestring || !e->string) {
            labels_free(l, i);
            return decoder_fail(d, -EINVAL, "%s: values must be strings", field);
        }
        l[i].key = strdup(e->string);
        l[i].value = strdup(e->valuestring);
        i++;
        if (!l[i - 1].key || !l[i - 1].value) {
            labels_free(l, i);
            return decoder_oom(d);
        }
    }
    *ret = l;
    *ret_n = i;
    return 0;
}

static int decode_images(struct decoder *d, const cJSON *spec, struct workspace_class *c)
{
    const cJSON *images = get_object(d, spec, "images", "spec.images");
    if (d->rc < 0)
        return d->rc;
    if (!images)
        return decoder_fail(d, -EINVAL, "spec.images: required");
    const cJSON *allowed = json_member(images, "allowed");
    if (!cJSON_IsArray(allowed))
        return decoder_fail(d, -EINVAL, "spec.images.allowed: required, a list of patterns");
    size_t n = (size_t)cJSON_GetArraySize(allowed);
    if (n < 1 || n > MAX_ALLOWED_IMAGES)
        return decoder_fail(d, -EINVAL, "spec.images.allowed: must list 1 to %d patterns",
                            MAX_ALLOWED_IMAGES);
    c->allowed_images = calloc(n, sizeof(*c->allowed_images));
    if (!c->allowed_images)
        return decoder_oom(d);
    const cJSON *e;
    cJSON_ArrayForEach(e, allowed)
    {
        if (!cJSON_IsString(e) || !e->valuestring || !e->valuestring[0])
            return decoder_fail(d, -EINVAL, "spec.images.allowed[%zu]: must be a non-empty string",
                                c->n_allowed_images);
        c->allowed_images[c->n_allowed_images] = strdup(e->valuestring);
        if (!c->allowed_images[c->n_allowed_images])
            return decoder_oom(d);
        c->n_allowed_images++;
    }
    if (get_string(d, images, "default", "spec.images.default", 1, NULL, &c->default_image) < 0)
        return d->rc;
    if (!workspace_class_allows_image(c, c->default_image))
        return decoder_fail(d, -EINVAL,
                            "spec.images.default: \"%s\" does not match spec.images.allowed",
                            c->default_image);
    return 0;
}

/* spec.accelerator.alternativeProducts: label values like the product,
 * none of them the product itself, none twice. */
static int decode_alternatives(struct decoder *d, const cJSON *acc, struct workspace_class *c)
{
    const cJSON *alts = json_member(acc, "alternativeProducts");
    if (!alts || cJSON_IsNull(alts))
        return 0;
    if (!cJSON_IsArray(alts))
        return decoder_fail(d, -EINVAL, "spec.accelerator.alternativeProducts: must be a list");
    size_t n = (size_t)cJSON_GetArraySize(alts);
    if (n > MAX_ALTERNATIVE_PRODUCTS)
        return decoder_fail(d, -EINVAL,
                            "spec.accelerator.alternativeProducts: may list at most %d products",
                            MAX_ALTERNATIVE_PRODUCTS);
    if (n == 0)
        return 0;
    c->alternative_products = calloc(n, sizeof(*c->alternative_products));
    if (!c->alternative_products)
        return decoder_oom(d);
    const cJSON *e;
    cJSON_ArrayForEach(e, alts)
    {
        size_t i = c->n_alternative_products;
        if (!cJSON_IsString(e) || !e->valuestring || !e->valuestring[0])
            return decoder_fail(d, -EINVAL,
                                "spec.accelerator.alternativeProducts[%zu]: must be a non-empty "
                                "string",
                                i);
        if (workspace_class_allows_product(c, e->valuestring))
            return decoder_fail(d, -EINVAL,
                                "spec.accelerator.alternativeProducts[%zu]: \"%s\" is listed "
                                "already (as spec.accelerator.product or an alternative)",
                                i, e->valuestring);
        if (!(c->alternative_products[i] = strdup(e->valuestring)))
            return decoder_oom(d);
        c->n_alternative_products++;
    }
    return 0;
}

static int decode_accelerator(struct decoder *d, const cJSON *spec, struct workspace_class *c)
{
    const cJSON *acc = get_object(d, spec, "accelerator", "spec.accelerator");
    if (d->rc < 0 || !acc)
        return d->rc;
    c->has_accelerator = 1;
    int64_t count;
    if (get_string(d, acc, "resourceName", "spec.accelerator.resourceName", 1, NULL,
                   &c->accelerator_resource) < 0 ||
        get_int(d, acc, "count", "spec.accelerator.count", 1, MAX_ACCELERATOR_COUNT, 1, &count) <
            0 ||
        get_string(d, acc, "productLabel", "spec.accelerator.productLabel", 0,
                   DEFAULT_PRODUCT_LABEL, &c->product_label) < 0 ||
        get_string(d, acc, "product", "spec.accelerator.product", 1, NULL, &c->product) < 0 ||
        get_string_map(d, acc, "nodeSelector", "spec.accelerator.nodeSelector", &c->node_selector,
                       &c->n_node_selector) < 0)
        return d->rc;
    c->accelerator_count = (int)count;
    return decode_alternatives(d, acc, c);
}

static int copy_json(struct decoder *d, const cJSON *spec, const char *name, const char *field,
                     int want_array, cJSON **ret)
{
    const cJSON *v = json_member(spec, name);
    *ret = NULL;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (want_array ? !cJSON_IsArray(v) : !cJSON_IsObject(v))
        return decoder_fail(d, -EINVAL, "%s: must be %s", field,
                            want_array ? "a list" : "an object");
    *ret = cJSON_Duplicate(v, 1);
    return *ret ? 0 : decoder_oom(d);
}

/* spec.resources: copied into the pod as written, so each request and limit
 * must be a quantity the API server keeps as it is: it silently lowers a
 * binary-suffixed value above INT64_MAX to INT64_MAX. A number must come
 * back out of cJSON as it went in. */
static int decode_resources(struct decoder *d, const cJSON *spec, struct workspace_class *c)
{
    static const char *const parts[] = {"requests", "limits"};
    if (copy_json(d, spec, "resources", "spec.resources", 0, &c->resources) < 0 || !c->resources)
        return d->rc;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        const cJSON *list = json_member(c->resources, parts[i]);
        if (!list || cJSON_IsNull(list))
            continue;
        if (!cJSON_IsObject(list))
            return decoder_fail(d, -EINVAL, "spec.resources.%s: must be an object", parts[i]);
        const cJSON *q;
        cJSON_ArrayForEach(q, list)
        {
            /* A name longer than a resource name can be is cut here. */
            char field[320];
            snprintf(field, sizeof(field), "spec.resources.%s.%s", parts[i],
                     q->string ? q->string : "");
            int exact = json_number_upto(q, RESOURCE_MAX_JSON_NUMBER);
            if (exact == 1)
                continue;
            if (exact == 0)
                return decoder_fail(d, -EINVAL, NUMBER_TOO_LARGE, field,
                                    (long long)RESOURCE_MAX_JSON_NUMBER);
            if (!cJSON_IsString(q) || !q->valuestring)
                return decoder_fail(d, -EINVAL, "%s: must be a quantity such as \"8Gi\"", field);
            int64_t value;
            int r = quantity_parse_value(q->valuestring, &value);
            if (r == -ERANGE)
                return decoder_fail(d, -EINVAL, "%s: \"%s\" " TOO_LARGE ")", field, q->valuestring);
            /* -EDOM: digits past the 19th, below the limit whatever they
             * say; the text goes to the pod as it is. */
            if (r < 0 && r != -EDOM)
                return decoder_fail(d, -EINVAL, "%s: \"%s\" is not a quantity such as \"8Gi\"",
                                    field, q->valuestring);
        }
    }
    return 0;
}

static int decode_home(struct decoder *d, const cJSON *spec, struct workspace_class *c)
{
    static const char *const on_delete[] = {"Delete", "Retain"};
    static const char *const on_loss[] = {"WaitForAcknowledgement", "Recreate", "RecreateOnResume"};
    const cJSON *home = get_object(d, spec, "home", "spec.home");
    if (d->rc < 0)
        return d->rc;
    if (!home)
        return decoder_fail(d, -EINVAL, "spec.home: required");
    int od, ol;
    if (get_quantity(d, home, "size", "spec.home.size", 1, &c->home_size, &c->home_size_bytes) <
            0 ||
        get_quantity(d, home, "maxSize", "spec.home.maxSize", 0, &c->home_max_size,
                     &c->home_max_bytes) < 0 ||
        get_string(d, home, "storageClassName", "spec.home.storageClassName", 0, NULL,
                   &c->storage_class_name) < 0 ||
        get_string(d, home, "mountPath", "spec.home.mountPath", 0, DEFAULT_MOUNT_PATH,
                   &c->home_mount_path) < 0 ||
        get_enum(d, home, "onDelete", "spec.home.onDelete", on_delete, 2, HOME_ON_DELETE_DELETE,
                 &od) < 0 ||
        get_enum(d, home, "onLoss", "spec.home.onLoss", on_loss, 3,
                 HOME_ON_LOSS_WAIT_FOR_ACKNOWLEDGEMENT, &ol) < 0)
        return d->rc;
    c->home_on_delete = (enum home_on_delete)od;
    c->home_on_loss = (enum home_on_loss)ol;
    if (c->home_mount_path[0] != '/')
        return decoder_fail(d, -EINVAL, "spec.home.mountPath: must be an absolute path");
    if (!c->home_max_size) {
        c->home_max_size = strdup(c->home_size);
        if (!c->home_max_size)
            return decoder_oom(d);
        c->home_max_bytes = c->home_size_bytes;
    } else if (c->home_max_bytes < c->home_size_bytes) {
        return decoder_fail(d, -EINVAL, "spec.home.maxSize: %s is smaller than spec.home.size %s",
                            c->home_max_size, c->home_size);
    }
    return 0;
}

static int get_duration(struct decoder *d, const cJSON *obj, const char *name, const char *field,
                        int64_t dflt_ms, int64_t *ret_ms);

/* spec.checkpoint.request: absent, nothing is asked before a snapshot. */
static int decode_checkpoint_request(struct decoder *d, const cJSON *cp, struct workspace_class *c)
{
    static const char *const methods[] = {"POST", "PUT"};
    struct checkpoint_request *r = &c->checkpoint_request;
    const cJSON *req = cp ? get_object(d, cp, "request", "spec.checkpoint.request") : NULL;
    if (d->rc < 0 || !req)
        return d->rc;
    int m = 0;
    if (get_string(d, req, "url", "spec.checkpoint.request.url", 1, NULL, &r->url_template) < 0 ||
        get_enum(d, req, "method", "spec.checkpoint.request.method", methods, 2, 0, &m) < 0 ||
        get_duration(d, req, "timeout", "spec.checkpoint.request.timeout",
                     DEFAULT_CHECKPOINT_TIMEOUT_MS, &r->timeout_ms) < 0)
        return d->rc;
    if (!(r->method = strdup(methods[m])))
        return decoder_oom(d);
    if (strncmp(r->url_template, "http://", 7) != 0 && strncmp(r->url_template, "https://", 8) != 0)
        return decoder_fail(
            d, -EINVAL, "spec.checkpoint.request.url: \"%s\" must start with http:// or https://",
            r->url_template);
    if (r->timeout_ms < 1000 || r->timeout_ms > MAX_CHECKPOINT_TIMEOUT_MS)
        return decoder_fail(d, -EINVAL,
                            "spec.checkpoint.request.timeout: must be between 1s and 1h");
    return 0;
}

static int decode_checkpoint(struct decoder *d, const cJSON *spec, struct workspace_class *c)
{
    const cJSON *cp = get_object(d, spec, "checkpoint", "spec.checkpoint");
    if (d->rc < 0)
        return d->rc;
    char *dflt_path = NULL;
    if (asprintf(&dflt_path, "%s%s", strcmp(c->home_mount_path, "/") == 0 ? "" : c->home_mount_path,
                 DEFAULT_CHECKPOINT_DIR) < 0)
        return decoder_oom(d);
    get_string(d, cp, "path", "spec.checkpoint.path", 0, dflt_path, &c->checkpoint_path);
    free(dflt_path);
    if (d->rc < 0 || get_string(d, cp, "envVar", "spec.checkpoint.envVar", 0,
                                DEFAULT_CHECKPOINT_ENV, &c->checkpoint_env) < 0)
        return d->rc;
    return decode_checkpoint_request(d, cp, c);
}

/* An environment variable name as the CRD's pattern: [A-Za-z_][A-Za-z0-9_]*. */
static int env_name_valid(const char *s)
{
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (const char *p = s; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return 0;
    return 1;
}

/* spec.env: the same rules as a Workspace's spec.env (names of the pattern,
 * unique, not reserved: HIBERNATOR_* and the class's checkpoint envVar are
 * set by the controller), and bounded. After decode_checkpoint(). */
static int decode_env(struct decoder *d, const cJSON *spec, struct workspace_class *c)
{
    const cJSON *env = json_member(spec, "env");
    if (!env || cJSON_IsNull(env))
        return 0;
    if (!cJSON_IsArray(env))
        return decoder_fail(d, -EINVAL, "spec.env: must be a list");
    size_t n = (size_t)cJSON_GetArraySize(env);
    if (n > MAX_CLASS_ENV)
        return decoder_fail(d, -EINVAL, "spec.env: at most %d entries", MAX_CLASS_ENV);
    if (n == 0)
        return 0;
    c->env = calloc(n, sizeof(*c->env));
    if (!c->env)
        return decoder_oom(d);
    const cJSON *e;
    cJSON_ArrayForEach(e, env)
    {
        size_t i = c->n_env;
        if (!cJSON_IsObject(e))
            return decoder_fail(d, -EINVAL, "spec.env[%zu]: must be an object", i);
        const char *name = json_string(e, "name");
        const cJSON *value = json_member(e, "value");
        if (!name || !name[0])
            return decoder_fail(d, -EINVAL, "spec.env[%zu].name: required", i);
        if (strlen(name) > MAX_ENV_NAME || !env_name_valid(name))
            return decoder_fail(d, -EINVAL,
                                "spec.env[%zu].name: must match [A-Za-z_][A-Za-z0-9_]* "
                                "(at most %d characters)",
                                i, MAX_ENV_NAME);
        if (strncmp(name, RESERVED_ENV_PREFIX, strlen(RESERVED_ENV_PREFIX)) == 0)
            return decoder_fail(d, -EINVAL,
                                "spec.env[%zu].name: \"%s\" is reserved: names starting with "
                                "" RESERVED_ENV_PREFIX " are set by the controller",
                                i, name);
        if (c->checkpoint_env && strcmp(name, c->checkpoint_env) == 0)
            return decoder_fail(d, -EINVAL,
                                "spec.env[%zu].name: \"%s\" is reserved: spec.checkpoint.envVar "
                                "passes the checkpoint path in it",
                                i, name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->env[j].name, name) == 0)
                return decoder_fail(d, -EINVAL, "spec.env[%zu].name: \"%s\" is set twice", i, name);
        if (value && !cJSON_IsNull(value) && !cJSON_IsString(value))
            return decoder_fail(d, -EINVAL, "spec.env[%zu].value: must be a string", i);
        const char *v = cJSON_IsString(value) && value->valuestring ? value->valuestring : "";
        if (strlen(v) > MAX_ENV_VALUE)
            return decoder_fail(d, -EINVAL, "spec.env[%zu].value: at most %d characters", i,
                                MAX_ENV_VALUE);
        c->env[i].name = strdup(name);
        c->env[i].value = strdup(v);
        c->n_env++;
        if (!c->env[i].name || !c->env[i].value)
            return decoder_oom(d);
    }
    return 0;
}

static int decode_timing(struct decoder *d, const cJSON *spec, struct workspace_class *c)
{
    static const char *const on_timeout[] = {"Wait", "Fail", "FallBack"};
    const cJSON *pause = get_object(d, spec, "pause", "spec.pause");
    if (d->rc < 0 ||
        get_int(d, pause, "gracePeriodSeconds", "spec.pause.gracePeriodSeconds", 1,
                MAX_PAUSE_GRACE_SECONDS, DEFAULT_PAUSE_GRACE_SECONDS, &c->pause_grace_seconds) < 0)
        return d->rc;
    const cJSON *resume = get_object(d, spec, "resume", "spec.resume");
    if (d->rc < 0)
        return d->rc;
    const cJSON *timeout = resume ? json_member(resume, "capacityTimeout") : NULL;
    const char *text = DEFAULT_CAPACITY_TIMEOUT;
    if (timeout && !cJSON_IsNull(timeout)) {
        if (!cJSON_IsString(timeout) || !timeout->valuestring)
            return decoder_fail(d, -EINVAL,
                                "spec.resume.capacityTimeout: must be a duration such as \"30m\"");
        text = timeout->valuestring;
    }
    if (duration_parse_ms(text, &c->capacity_timeout_ms) < 0)
        return decoder_fail(d, -EINVAL,
                            "spec.resume.capacityTimeout: \"%s\" is not a duration such as \"30m\"",
                            text);
    int action;
    if (get_enum(d, resume, "onCapacityTimeout", "spec.resume.onCapacityTimeout", on_timeout, 3,
                 CAPACITY_TIMEOUT_WAIT, &action) < 0)
        return d->rc;
    c->on_capacity_timeout = (enum capacity_timeout_action)action;
    if (c->on_capacity_timeout == CAPACITY_TIMEOUT_FALL_BACK && c->n_alternative_products == 0)
        return decoder_fail(d, -EINVAL,
                            "spec.resume.onCapacityTimeout: FallBack needs at least one product "
                            "in spec.accelerator.alternativeProducts to fall back to");
    return 0;
}

/* An optional duration string; dflt when absent (dflt_ms < 0: required
 * to be absent-able with *ret = -1). */
static int get_duration(struct decoder *d, const cJSON *obj, const char *name, const char *field,
                        int64_t dflt_ms, int64_t *ret_ms)
{
    const cJSON *v = obj ? json_member(obj, name) : NULL;
    if (!v || cJSON_IsNull(v)) {
        *ret_ms = dflt_ms;
        return 0;
    }
    if (!cJSON_IsString(v) || !v->valuestring)
        return decoder_fail(d, -EINVAL, "%s: must be a duration such as \"30m\"", field);
    if (duration_parse_ms(v->valuestring, ret_ms) < 0)
        return decoder_fail(d, -EINVAL, "%s: \"%s\" is not a duration such as \"30m\"", field,
                            v->valuestring);
    return 0;
}

static int decode_windows(struct decoder *d, const cJSON *pw, struct idle_class_policy *p)
{
    if (get_string(d, pw, "timeZone", "spec.idle.pauseWindows.timeZone", 0, "UTC", &p->time_zone) <
        0)
        return d->rc;
    if (!tz_name_valid(p->time_zone))
        return decoder_fail(d, -EINVAL,
                            "spec.idle.pauseWindows.timeZone: \"%s\" is not a time zone name "
                            "such as \"Europe/Berlin\"",
                            p->time_zone);
    const cJSON *list = pw ? json_member(pw, "windows") : NULL;
    if (!list || cJSON_IsNull(list))
        return 0;
    if (!cJSON_IsArray(list))
        return decoder_fail(d, -EINVAL, "spec.idle.pauseWindows.windows: must be a list");
    int n = cJSON_GetArraySize(list);
    if (n > PAUSE_SCHEDULE_MAX_WINDOWS)
        return decoder_fail(d, -EINVAL, "spec.idle.pauseWindows.windows: at most %d windows",
                            PAUSE_SCHEDULE_MAX_WINDOWS);
    for (int i = 0; i < n; i++) {
        const cJSON *w = cJSON_GetArrayItem(list, i);
        struct pause_window *cw = &p->schedule.windows[p->schedule.n_windows];
        const char *start = json_string(w, "start"), *end = json_string(w, "end");
        if (!cJSON_IsObject(w))
            return decoder_fail(d, -EINVAL, "spec.idle.pauseWindows.windows[%d]: must be an object",
                                i);
        static const char *const which[] = {"start", "end"};
        const char *text[] = {start, end};
        int *minute[] = {&cw->start_minute, &cw->end_minute};
        for (int k = 0; k < 2; k++) {
            char *why = NULL;
            if (pause_window_parse_time(text[k], minute[k], &why) < 0) {
                decoder_fail(d, why ? -EINVAL : -ENOMEM,
                             "spec.idle.pauseWindows.windows[%d].%s: %s", i, which[k],
                             why ? why : "");
                free(why);
                return d->rc;
            }
        }
        const cJSON *dl = json_member(w, "days");
        cw->days = 0;
        if (dl && !cJSON_IsNull(dl)) {
            if (!cJSON_IsArray(dl))
                return decoder_fail(d, -EINVAL,
                                    "spec.idle.pauseWindows.windows[%d].days: must be a list", i);
            int j = 0;
            const cJSON *day;
            cJSON_ArrayForEach(day, dl)
            {
                int wday;
                char *why = NULL;
                if (pause_window_parse_day(cJSON_IsString(day) ? day->valuestring : NULL, &wday,
                                           &why) < 0) {
                    decoder_fail(d, why ? -EINVAL : -ENOMEM,
                                 "spec.idle.pauseWindows.windows[%d].days[%d]: %s", i, j,
                                 why ? why : "");
                    free(why);
                    return d->rc;
                }
                cw->days |= 1u << wday;
                j++;
            }
        }
        p->schedule.n_windows++;
    }
    return 0;
}

static int decode_activity(struct decoder *d, const cJSON *spec, struct workspace_class *c)
{
    static const char *const apps[] = {"None", "Jupyter", "CodeServer"};
    struct activity_config *a = &c->activity;
    const cJSON *act = get_object(d, spec, "activity", "spec.activity");
    if (d->rc < 0)
        return d->rc;
    const cJSON *app = act ? json_member(act, "application") : NULL;
    a->application = ACTIVITY_APP_NONE;
    if (app && !cJSON_IsNull(app)) {
        size_t i = 0;
        while (i < 3 && !(cJSON_IsString(app) && strcmp(app->valuestring, apps[i]) == 0))
            i++;
        if (i == 3)
            return decoder_fail(d, -EINVAL,
                                "spec.activity.application: must be None, Jupyter or CodeServer");
        a->application = (enum activity_application)i;
    }
    if (get_string(d, act, "url", "spec.activity.url", 0, DEFAULT_ACTIVITY_URL, &a->url_template) <
            0 ||
        get_duration(d, act, "interval", "spec.activity.interval", DEFAULT_PROBE_INTERVAL_MS,
                     &a->interval_ms) < 0 ||
        get_duration(d, act, "timeout", "spec.activity.timeout", DEFAULT_PROBE_TIMEOUT_MS,
                     &a->timeout_ms) < 0)
        return d->rc;
    if (strncmp(a->url_template, "http://", 7) != 0 && strncmp(a->url_template, "https://", 8) != 0)
        return decoder_fail(d, -EINVAL,
                            "spec.activity.url: \"%s\" must start with http:// or https://",
                            a->url_template);
    if (a->interval_ms < MIN_PROBE_INTERVAL_MS)
        return decoder_fail(d, -EINVAL, "spec.activity.interval: must be at least 1s");
    if (a->timeout_ms <= 0 || a->timeout_ms > a->interval_ms)
        return decoder_fail(d, -EINVAL,
                            "spec.activity.timeout: must be more than 0 and at most "
                            "spec.activity.interval");
    const cJSON *ref = get_object(d, act, "tokenSecretRef", "spec.activity.tokenSecretRef");
    if (d->rc < 0)
        return d->rc;
    if (ref && (get_string(d, ref, "name", "spec.activity.tokenSecretRef.name", 1, NULL,
                           &a->token_secret_name) < 0 ||
                get_string(d, ref, "key", "spec.activity.tokenSecretRef.key", 0, "token",
                           &a->token_secret_key) < 0))
        return d->rc;
    const cJSON *gpu = get_object(d, act, "gpu", "spec.activity.gpu");
    if (d->rc < 0)
        return d->rc;
    if (gpu) {
        if (get_string(d, gpu, "prometheusURL", "spec.activity.gpu.prometheusURL", 1, NULL,
                       &a->prometheus_url) < 0 ||
            get_string(d, gpu, "query", "spec.activity.gpu.query", 0, DEFAULT_GPU_QUERY,
                       &a->gpu_query_template) < 0)
            return d->rc;
        if (strncmp(a->prometheus_url, "http://", 7) != 0 &&
            strncmp(a->prometheus_url, "https://", 8) != 0)
            return decoder_fail(d, -EINVAL,
                                "spec.activity.gpu.prometheusURL: \"%s\" must start with http:// "
                                "or https://",
                                a->prometheus_url);
    }
    return 0;
}

static int decode_idle(struct decoder *d, const cJSON *spec, struct workspace_class *c)
{
    struct idle_class_policy *p = &c->idle;
    const cJSON *idle = get_object(d, spec, "idle", "spec.idle");
    if (d->rc < 0)
        return d->rc;
    const cJSON *ap = idle ? json_member(idle, "autoPause") : NULL;
    if (ap && !cJSON_IsNull(ap) && !cJSON_IsBool(ap))
        return decoder_fail(d, -EINVAL, "spec.idle.autoPause: must be true or false");
    p->auto_pause = !ap || cJSON_IsNull(ap) || cJSON_IsTrue(ap);
    int64_t threshold;
    if (get_duration(d, idle, "after", "spec.idle.after", DEFAULT_IDLE_AFTER_MS, &p->after_ms) <
            0 ||
        get_duration(d, idle, "minAfter", "spec.idle.minAfter", -1, &p->min_after_ms) < 0 ||
        get_duration(d, idle, "maxAfter", "spec.idle.maxAfter", -1, &p->max_after_ms) < 0 ||
        get_duration(d, idle, "minRunning", "spec.idle.minRunning", DEFAULT_MIN_RUNNING_MS,
                     &p->min_running_ms) < 0 ||
        get_duration(d, idle, "warnBefore", "spec.idle.warnBefore", DEFAULT_WARN_BEFORE_MS,
                     &p->warn_before_ms) < 0 ||
        get_duration(d, idle, "maxKeepAlive", "spec.idle.maxKeepAlive", DEFAULT_MAX_KEEP_ALIVE_MS,
                     &p->max_keep_alive_ms) < 0 ||
        get_int(d, idle, "gpuUtilisationThreshold", "spec.idle.gpuUtilisationThreshold", 0, 100,
                DEFAULT_GPU_THRESHOLD, &threshold) < 0)
        return d->rc;
    p->gpu_threshold_percent = (int)threshold;
    if (p->after_ms < MIN_IDLE_AFTER_MS)
        return decoder_fail(d, -EINVAL, "spec.idle.after: must be at least 10s");
    if (p->min_after_ms < 0)
        p->min_after_ms = p->after_ms < DEFAULT_MIN_AFTER_MS ? p->after_ms : DEFAULT_MIN_AFTER_MS;
    if (p->max_after_ms < 0)
        p->max_after_ms = p->after_ms;
    if (p->min_after_ms < MIN_IDLE_AFTER_MS)
        return decoder_fail(d, -EINVAL, "spec.idle.minAfter: must be at least 10s");
    if (p->min_after_ms > p->after_ms)
        return decoder_fail(d, -EINVAL,
                            "spec.idle.minAfter: may not be longer than spec.idle.after");
    if (p->max_after_ms < p->after_ms)
        return decoder_fail(d, -EINVAL,
                            "spec.idle.maxAfter: may not be shorter than spec.idle.after");
    if (p->warn_before_ms >= p->min_after_ms)
        return decoder_fail(d, -EINVAL,
                            "spec.idle.warnBefore: must be shorter than the shortest idle time "
                            "(spec.idle.minAfter, or spec.idle.after)");
    const cJSON *pw = get_object(d, idle, "pauseWindows", "spec.idle.pauseWindows");
    if (d->rc < 0)
        return d->rc;
    return decode_windows(d, pw, p);
}

/* A DNS-1123 subdomain (most objects' names): at most 253 characters,
 * dot-separated labels of lower-case letters, digits and '-', each
 * beginning and ending with a letter or digit. */
static int dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return 0;
    for (const char *label = s;;) {
        const char *p = label;
        while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-')
            p++;
        if (p == label || *label == '-' || p[-1] == '-')
            return 0;
        if (*p == '\0')
            return 1;
        if (*p != '.')
            return 0;
        label = p + 1;
    }
}

/* An OCI repository "host[:port]/path": the host letters, digits, '.' and
 * '-', a port of 1-65535, each path component runs of lower-case letters and
 * digits joined by '.', '_', '__' or any number of '-' (the OCI
 * distribution spec's grammar, as the CRD's pattern says). */
static int repository_valid(const char *r)
{
    const char *slash = strchr(r, '/');
    if (!slash || slash == r || strlen(r) > 200)
        return 0;
    const char *p = r;
    for (; p < slash && *p != ':'; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '-'))
            return 0;
    if (p == r)
        return 0;
    if (*p == ':') {
        const char *q = ++p;
        long port = 0;
        for (; p < slash; p++) {
            if (*p < '0' || *p > '9')
                return 0;
            port = port * 10 + (*p - '0');
            if (port > 65535) /* a TCP port; the CRD's pattern allows 5 digits */
                return 0;
        }
        if (p == q || port < 1)
            return 0;
    }
    for (p = slash; *p == '/';) {
        p++;
        const char *start = p;
        while (*p && *p != '/') {
            /* a run of letters and digits ... */
            const char *run = p;
            while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
                p++;
            if (p == run)
                return 0;
            if (!*p || *p == '/')
                break;
            /* ... then one separator: '.', '_', '__' or any number of '-' */
            const char *sep = p;
            if (*p == '.')
                p++;
            else if (*p == '_')
                p += p[1] == '_' ? 2 : 1;
            else
                while (*p == '-')
                    p++;
            if (p == sep || !((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
                return 0;
        }
        if (p == start)
            return 0;
    }
    return *p == '\0';
}

static const struct snapshot_backend_traits backend_traits[] = {
    [SNAPSHOT_BACKEND_NONE] = {.name = "None"},
    [SNAPSHOT_BACKEND_GKE] = {.name = "GKE", .required_field = "storageConfigName"},
    /* The node agent's DaemonSet runs on the nodes of this label
     * (deploy/node/daemonset.yaml). */
    [SNAPSHOT_BACKEND_CONTAINER_CHECKPOINT] = {.name = "ContainerCheckpoint",
                                               .required_field = "repository",
                                               .restores_from_image = 1,
                                               .node_label = "hibernator.dev/container-checkpoint"},
};
#define N_BACKENDS (sizeof(backend_traits) / sizeof(backend_traits[0]))

const struct snapshot_backend_traits *snapshot_backend_traits(enum snapshot_backend_kind kind)
{
    size_t k = (size_t)kind;
    return k < N_BACKENDS && backend_traits[k].name ? &backend_traits[k] : NULL;
}

/* Whether backend (as decoded so far) cannot do without spec.snapshot's
 * field. */
static int requires(int backend, const char *field)
{
    const struct snapshot_backend_traits *t =
        backend >= 0 ? snapshot_backend_traits((enum snapshot_backend_kind)backend) : NULL;
    return t && t->required_field && strcmp(t->required_field, field) == 0;
}

static int decode_snapshot(struct decoder *d, const cJSON *spec, struct workspace_class *c)
{
    const char *backends[N_BACKENDS];
    for (size_t k = 0; k < N_BACKENDS; k++)
        backends[k] = backend_traits[k].name;
    static const char *const on_failure[] = {"Retry", "PauseWithoutMemory"};
    struct snapshot_config *sc = &c->snapshot;
    const cJSON *snap = get_object(d, spec, "snapshot", "spec.snapshot");
    int backend, failure;
    int64_t keep;
    if (d->rc < 0 ||
        get_enum(d, snap, "backend", "spec.snapshot.backend", backends, N_BACKENDS,
                 SNAPSHOT_BACKEND_NONE, &backend) < 0 ||
        get_enum(d, snap, "onFailure", "spec.snapshot.onFailure", on_failure, 2,
                 SNAPSHOT_ON_FAILURE_RETRY, &failure) < 0 ||
        get_string(d, snap, "storageConfigName", "spec.snapshot.storageConfigName",
                   requires(backend, "storageConfigName"), NULL, &sc->storage_config_name) < 0 ||
        get_string(d, snap, "repository", "spec.snapshot.repository",
                   requires(backend, "repository"), NULL, &sc->repository) < 0 ||
        get_string(d, snap, "pullSecretName", "spec.snapshot.pullSecretName", 0, NULL,
                   &sc->pull_secret_name) < 0 ||
        get_duration(d, snap, "timeout", "spec.snapshot.timeout", DEFAULT_SNAPSHOT_TIMEOUT_MS,
                     &sc->timeout_ms) < 0 ||
        get_duration(d, snap, "retryAfter", "spec.snapshot.retryAfter",
                     DEFAULT_SNAPSHOT_RETRY_AFTER_MS, &sc->retry_after_ms) < 0 ||
        get_duration(d, snap, "restoreCheckTimeout", "spec.snapshot.restoreCheckTimeout",
                     DEFAULT_RESTORE_CHECK_TIMEOUT_MS, &sc->restore_check_timeout_ms) < 0 ||
        get_duration(d, snap, "lastAccessTimeout", "spec.snapshot.lastAccessTimeout",
                     DEFAULT_SNAPSHOT_LAST_ACCESS_MS, &sc->last_access_timeout_ms) < 0 ||
        get_int(d, snap, "keep", "spec.snapshot.keep", 1, MAX_SNAPSHOTS_KEPT,
                DEFAULT_SNAPSHOTS_KEPT, &keep) < 0)
        return d->rc;
    sc->backend = (enum snapshot_backend_kind)backend;
    sc->on_failure = (enum snapshot_on_failure)failure;
    sc->keep = (int)keep;
    if (sc->timeout_ms < 1000)
        return decoder_fail(d, -EINVAL, "spec.snapshot.timeout: must be at least 1s");
    if (sc->retry_after_ms < 1000)
        return decoder_fail(d, -EINVAL, "spec.snapshot.retryAfter: must be at least 1s");
    if (sc->restore_check_timeout_ms < 1000)
        return decoder_fail(d, -EINVAL, "spec.snapshot.restoreCheckTimeout: must be at least 1s");
    if (sc->repository && !repository_valid(sc->repository))
        return decoder_fail(d, -EINVAL,
                            "spec.snapshot.repository: not an OCI repository "
                            "host[:port]/path (a port of 1-65535, lower-case path components), "
                            "at most 200 characters: %s",
                            sc->repository);
    if (sc->pull_secret_name && !dns_subdomain(sc->pull_secret_name))
        return decoder_fail(d, -EINVAL,
                            "spec.snapshot.pullSecretName: not a Secret's name (a DNS-1123 "
                            "subdomain: lower-case letters, digits, '-' and '.'): %s",
                            sc->pull_secret_name);
    return 0;
}

static int decode_prewarm(struct decoder *d, const cJSON *spec, struct workspace_class *c)
{
    struct prewarm_class_policy *p = &c->prewarm;
    const cJSON *pw = get_object(d, spec, "preWarm", "spec.preWarm");
    if (d->rc < 0 || !pw)
        return d->rc;
    const cJSON *en = json_member(pw, "enabled");
    if (en && !cJSON_IsNull(en) && !cJSON_IsBool(en))
        return decoder_fail(d, -EINVAL, "spec.preWarm.enabled: must be true or false");
    p->enabled = !en || cJSON_IsNull(en) || cJSON_IsTrue(en);
    if (get_duration(d, pw, "lead", "spec.preWarm.lead", 0, &p->lead_ms) < 0 ||
        get_duration(d, pw, "grace", "spec.preWarm.grace", DEFAULT_PREWARM_GRACE_MS, &p->grace_ms) <
            0 ||
        get_int(d, pw, "maxConcurrent", "spec.preWarm.maxConcurrent", 1, 10000,
                DEFAULT_PREWARM_MAX_CONCURRENT, &p->max_concurrent) < 0 ||
        get_int(d, pw, "skipAfterDays", "spec.preWarm.skipAfterDays", 1, 366,
                DEFAULT_PREWARM_SKIP_AFTER_DAYS, &p->skip_after_days) < 0)
        return d->rc;
    if (p->lead_ms &&
        (p->lead_ms < MIN_PREWARM_DURATION_MS || p->lead_ms > MAX_PREWARM_DURATION_MS))
        return decoder_fail(d, -EINVAL, "spec.preWarm.lead: must be between 10s and 12h");
    if (p->grace_ms < MIN_PREWARM_DURATION_MS || p->grace_ms > MAX_PREWARM_DURATION_MS)
        return decoder_fail(d, -EINVAL, "spec.preWarm.grace: must be between 10s and 12h");
    return 0;
}

/* A DNS-1123 label (a LocalQueue's or a WorkloadPriorityClass's name as
 * Kueue's CRDs want it in a label value): at most 63 characters. */
static int dns_label(const char *s)
{
    return strlen(s) <= 63 && !strchr(s, '.') && dns_subdomain(s);
}

int workspace_class_allows_queue(const struct workspace_class *c, const char *name)
{
    if (!c || !name || !c->queue.local_queue)
        return 0;
    if (strcmp(c->queue.local_queue, name) == 0)
        return 1;
    for (size_t i = 0; i < c->queue.n_allowed; i++)
        if (strcmp(c->queue.allowed[i], name) == 0)
            return 1;
    return 0;
}

static int decode_queue(struct decoder *d, const cJSON *spec, struct workspace_class *c)
{
    struct queue_config *q = &c->queue;
    const cJSON *qo = get_object(d, spec, "queue", "spec.queue");
    if (d->rc < 0 || !qo)
        return d->rc;
    if (get_string(d, qo, "localQueue", "spec.queue.localQueue", 1, NULL, &q->local_queue) < 0 ||
        get_string(d, qo, "priorityClass", "spec.queue.priorityClass", 0, NULL,
                   &q->priority_class) < 0)
        return d->rc;
    if (!dns_label(q->local_queue))
        return decoder_fail(d, -EINVAL,
                            "spec.queue.localQueue: not a LocalQueue's name (a DNS-1123 label: "
                            "lower-case letters, digits and '-', at most 63): %s",
                            q->local_queue);
    if (q->priority_class && !dns_label(q->priority_class))
        return decoder_fail(d, -EINVAL,
                            "spec.queue.priorityClass: not a WorkloadPriorityClass's name (a "
                            "DNS-1123 label: lower-case letters, digits and '-', at most 63): %s",
                            q->priority_class);
    if (get_string(d, qo, "preWarmPriorityClass", "spec.queue.preWarmPriorityClass", 0, NULL,
                   &q->prewarm_priority_class) < 0)
        return d->rc;
    if (q->prewarm_priority_class && !dns_label(q->prewarm_priority_class))
        return decoder_fail(
            d, -EINVAL,
            "spec.queue.preWarmPriorityClass: not a WorkloadPriorityClass's name "
            "(a DNS-1123 label: lower-case letters, digits and '-', at most 63): %s",
            q->prewarm_priority_class);
    if (q->prewarm_priority_class && !q->priority_class)
        return decoder_fail(d, -EINVAL,
                            "spec.queue.preWarmPriorityClass: needs spec.queue.priorityClass (a "
                            "pre-warm's pod is raised to it at its owner's time, and Kueue cannot "
                            "take a priority class away from a pod)");
    if (q->prewarm_priority_class && strcmp(q->prewarm_priority_class, q->priority_class) == 0)
        return decoder_fail(d, -EINVAL,
                            "spec.queue.preWarmPriorityClass: is spec.queue.priorityClass; name a "
                            "lower one, or leave it out");
    if (get_duration(d, qo, "evictionHold", "spec.queue.evictionHold", 0, &q->eviction_hold_ms) < 0)
        return d->rc;
    if (q->eviction_hold_ms > MAX_EVICTION_HOLD_MS || q->eviction_hold_ms < 0)
        return decoder_fail(d, -EINVAL, "spec.queue.evictionHold: at most 30m");
    if (q->eviction_hold_ms > 0 && c->snapshot.backend == SNAPSHOT_BACKEND_NONE)
        return decoder_fail(d, -EINVAL,
                            "spec.queue.evictionHold: holds an evicted pod for its snapshot, and "
                            "the class has none (spec.snapshot is absent)");
    const cJSON *list = json_member(qo, "allowedLocalQueues");
    if (!list || cJSON_IsNull(list))
        return 0;
    if (!cJSON_IsArray(list))
        return decoder_fail(d, -EINVAL, "spec.queue.allowedLocalQueues: must be a list");
    size_t n = (size_t)cJSON_GetArraySize(list);
    if (n > MAX_ALLOWED_QUEUES)
        return decoder_fail(d, -EINVAL, "spec.queue.allowedLocalQueues: may list at most %d queues",
                            MAX_ALLOWED_QUEUES);
    if (n == 0)
        return 0;
    if (!(q->allowed = calloc(n, sizeof(*q->allowed))))
        return decoder_oom(d);
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        size_t i = q->n_allowed;
        if (!cJSON_IsString(e) || !e->valuestring || !dns_label(e->valuestring))
            return decoder_fail(d, -EINVAL,
                                "spec.queue.allowedLocalQueues[%zu]: not a LocalQueue's name (a "
                                "DNS-1123 label: lower-case letters, digits and '-', at most 63)",
                                i);
        if (workspace_class_allows_queue(c, e->valuestring))
            return decoder_fail(d, -EINVAL,
                                "spec.queue.allowedLocalQueues[%zu]: \"%s\" is listed already "
                                "(as spec.queue.localQueue or before)",
                                i, e->valuestring);
        if (!(q->allowed[i] = strdup(e->valuestring)))
            return decoder_oom(d);
        q->n_allowed++;
    }
    return 0;
}

int64_t workspace_class_eviction_hold_seconds(const struct workspace_class *c)
{
    if (!c || c->snapshot.backend == SNAPSHOT_BACKEND_NONE || c->queue.eviction_hold_ms <= 0)
        return 0;
    return (c->queue.eviction_hold_ms + 999) / 1000;
}

int workspace_class_decode(const cJSON *obj, struct workspace_class **ret_class, char **ret_err)
{
    struct decoder d = {0};
    struct workspace_class *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    if (!cJSON_IsObject(obj)) {
        decoder_fail(&d, -EINVAL, "object: must be a JSON object");
        goto out;
    }
    const cJSON *meta = get_object(&d, obj, "metadata", "metadata");
    if (d.rc < 0 || get_string(&d, meta, "name", "metadata.name", 1, NULL, &c->name) < 0)
        goto out;
    const cJSON *spec = get_object(&d, obj, "spec", "spec");
    if (d.rc < 0)
        goto out;
    if (!spec) {
        decoder_fail(&d, -EINVAL, "spec: required");
        goto out;
    }
    int64_t port;
    if (decode_images(&d, spec, c) < 0 ||
        get_int(&d, spec, "port", "spec.port", 1, 65535, DEFAULT_PORT, &port) < 0 ||
        decode_accelerator(&d, spec, c) < 0 || decode_resources(&d, spec, c) < 0 ||
        copy_json(&d, spec, "tolerations", "spec.tolerations", 1, &c->tolerations) < 0 ||
        get_string(&d, spec, "runtimeClassName", "spec.runtimeClassName", 0, NULL,
                   &c->runtime_class_name) < 0 ||
        decode_home(&d, spec, c) < 0 || decode_checkpoint(&d, spec, c) < 0 ||
        decode_env(&d, spec, c) < 0 || decode_timing(&d, spec, c) < 0 ||
        decode_activity(&d, spec, c) < 0 || decode_idle(&d, spec, c) < 0 ||
        decode_snapshot(&d, spec, c) < 0 || decode_prewarm(&d, spec, c) < 0 ||
        decode_queue(&d, spec, c) < 0)
        goto out;
    c->port = (int)port;
out:
    if (d.rc < 0) {
        workspace_class_free(c);
        if (d.rc == -EINVAL && ret_err)
            *ret_err = d.err;
        else
            free(d.err);
        return d.rc;
    }
    *ret_class = c;
    return 0;
}

void workspace_class_free(struct workspace_class *c)
{
    if (!c)
        return;
    free(c->name);
    for (size_t i = 0; i < c->n_allowed_images; i++)
        free(c->allowed_images[i]);
    free(c->allowed_images);
    free(c->default_image);
    free(c->accelerator_resource);
    free(c->product_label);
    free(c->product);
    for (size_t i = 0; i < c->n_alternative_products; i++)
        free(c->alternative_products[i]);
    free(c->alternative_products);
    labels_free(c->node_selector, c->n_node_selector);
    cJSON_Delete(c->resources);
    cJSON_Delete(c->tolerations);
    free(c->runtime_class_name);
    for (size_t i = 0; i < c->n_env; i++) {
        free(c->env[i].name);
        free(c->env[i].value);
    }
    free(c->env);
    free(c->home_size);
    free(c->home_max_size);
    free(c->storage_class_name);
    free(c->home_mount_path);
    free(c->checkpoint_path);
    free(c->checkpoint_env);
    free(c->checkpoint_request.url_template);
    free(c->checkpoint_request.method);
    free(c->activity.url_template);
    free(c->activity.token_secret_name);
    free(c->activity.token_secret_key);
    free(c->activity.prometheus_url);
    free(c->activity.gpu_query_template);
    free(c->idle.time_zone);
    free(c->snapshot.storage_config_name);
    free(c->snapshot.repository);
    free(c->snapshot.pull_secret_name);
    free(c->queue.local_queue);
    free(c->queue.priority_class);
    free(c->queue.prewarm_priority_class);
    for (size_t i = 0; i < c->queue.n_allowed; i++)
        free(c->queue.allowed[i]);
    free(c->queue.allowed);
    free(c);
}

int workspace_class_allows_image(const struct workspace_class *c, const char *image)
{
    if (!c || !image || !image[0])
        return 0;
    /* No FNM_PATHNAME: a '*' crosses '/', so one pattern covers every image
     * below a registry path, tags and digests included. */
    for (size_t i = 0; i < c->n_allowed_images; i++)
        if (fnmatch(c->allowed_images[i], image, 0) == 0)
            return 1;
    return 0;
}

int workspace_class_allows_product(const struct workspace_class *c, const char *product)
{
    if (!c || !c->has_accelerator || !product)
        return 0;
    if (c->product && strcmp(c->product, product) == 0)
        return 1;
    for (size_t i = 0; i < c->n_alternative_products; i++)
        if (strcmp(c->alternative_products[i], product) == 0)
            return 1;
    return 0;
}

/* The value of a quantity: a decimal mantissa of at most 19 significant
 * digits, times a binary or decimal multiplier, computed exactly (1.5Gi is
 * 1610612736, not whatever a double makes of it) and rounded up to a whole
 * unit, as Kubernetes rounds up. Digits past the 19th are not read exactly:
 * such a value is -ERANGE when it is above QUANTITY_MAX whatever they say,
 * -EDOM otherwise. with_fraction_suffixes: "n", "u" and "m" are suffixes
 * (a resource's quantity), else refused (sizes in bytes).
 * Long: one scan of the text, its suffix table and the overflow checks read best together. */
static int parse_quantity(const char *s, int with_fraction_suffixes, int64_t *ret)
{
    static const struct {
        const char *suffix;
        unsigned binary_shift;
        int decimal_exp;
        int fraction;
    } suffixes[] = {
        {"Ki", 10, 0, 0}, {"Mi", 20, 0, 0}, {"Gi", 30, 0, 0}, {"Ti", 40, 0, 0},
        {"Pi", 50, 0, 0}, {"Ei", 60, 0, 0}, {"n", 0, -9, 1},  {"u", 0, -6, 1},
        {"m", 0, -3, 1},  {"k", 0, 3, 0},   {"M", 0, 6, 0},   {"G", 0, 9, 0},
        {"T", 0, 12, 0},  {"P", 0, 15, 0},  {"E", 0, 18, 0},  {"", 0, 0, 0},
    };
    if (!s)
        return -EINVAL;
    const char *p = s;
    if (*p == '+')
        p++;

    /* Mantissa digits without leading zeros (integer part) or trailing zeros
     * (fraction); scale counts the fraction digits kept. Past 19 digits:
     * dropped_int counts the integer digits left out (each a factor of
     * 10), inexact says a non-zero digit was left out. */
    char digits[19];
    size_t nd = 0, n_seen = 0;
    int scale = 0, dropped_int = 0, inexact = 0;
    for (; *p >= '0' && *p <= '9'; p++, n_seen++) {
        if (nd == 0 && *p == '0')
            continue;
        if (nd < sizeof(digits)) {
            digits[nd++] = *p;
            continue;
        }
        if (dropped_int < 1000)
            dropped_int++;
        inexact |= *p != '0';
    }
    if (*p == '.') {
        p++;
        const char *frac = p;
        while (*p >= '0' && *p <= '9')
            p++;
        const char *end = p;
        n_seen += (size_t)(end - frac);
        while (end > frac && end[-1] == '0')
            end--;
        for (const char *q = frac; q < end; q++) {
            if (nd == 0 && *q == '0') {
                scale++;
                continue;
            }
            if (nd == sizeof(digits) || dropped_int) {
                inexact = 1; /* the last one left out is not a 0 */
                break;
            }
            digits[nd++] = *q;
            scale++;
        }
    }
    if (n_seen == 0)
        return -EINVAL;

    unsigned shift = 0;
    int exp10 = 0;
    if ((*p == 'e' || *p == 'E') && p[1] != '\0' && p[1] != 'i') {
        /* A decimal exponent ("1e3"); "E" alone is exa, handled below. */
        p++;
        int neg = 0;
        if (*p == '+' || *p == '-')
            neg = *p++ == '-';
        if (*p < '0' || *p > '9')
            return -EINVAL;
        int e = 0;
        for (; *p >= '0' && *p <= '9'; p++)
            if (e < 10000) /* far past any value's reach either way */
                e = e * 10 + (*p - '0');
        if (*p)
            return -EINVAL;
        exp10 = neg ? -e : e;
    } else {
        size_t i;
        for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
            if (strcmp(p, suffixes[i].suffix) == 0)
                break;
        if (i == sizeof(suffixes) / sizeof(suffixes[0]) ||
            (suffixes[i].fraction && !with_fraction_suffixes))
            return -EINVAL;
        shift = suffixes[i].binary_shift;
        exp10 = suffixes[i].decimal_exp;
    }

    unsigned __int128 v = 0;
    for (size_t i = 0; i < nd; i++)
        v = v * 10 + (unsigned)(digits[i] - '0');
    if (v == 0 && !inexact) {
        *ret = 0;
        return 0;
    }
    /* Digits were left out: v (at least 10^18) and one more in its last
     * place bound the value. */
    unsigned __int128 hi = inexact ? v + 1 : v;
    v <<= shift; /* < 10^19 * 2^60 < 2^124 */
    hi <<= shift;
    int net = exp10 - scale + dropped_int;
    for (; net > 0; net--) {
        v *= 10;
        hi *= 10;
        if (v > (unsigned __int128)QUANTITY_MAX)
            return -ERANGE;
    }
    if (net < 0) {
        unsigned __int128 div = 1;
        int tiny = 0;
        for (; net < 0; net++) {
            if (div > hi) {
                tiny = 1;
                break;
            }
            div *= 10;
        }
        v = tiny ? 1 : (v + div - 1) / div;
        hi = tiny ? 1 : (hi + div - 1) / div;
    }
    if (v > (unsigned __int128)QUANTITY_MAX)
        return -ERANGE;
    if (inexact)
        return hi > (unsigned __int128)QUANTITY_MAX ? -ERANGE : -EDOM;
    *ret = (int64_t)v;
    return 0;
}

int quantity_parse_bytes(const char *s, int64_t *ret_bytes)
{
    return parse_quantity(s, 0, ret_bytes);
}

int quantity_parse_value(const char *s, int64_t *ret_value)
{
    return parse_quantity(s, 1, ret_value);
}
