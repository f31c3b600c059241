#include "activity/prometheus.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/text.h"

#define EP_QUERY "GET /api/v1/query"

/* Prometheus error strings can echo the whole query back; keep the quote
 * short so the message stays readable and inside PROBE_ERROR_SIZE. */
#define ERROR_EXCERPT_MAX 120
/* errorType is one short word ("bad_data", "timeout"). */
#define TYPE_EXCERPT_MAX 32

static int fail_shape(struct probe_result *r, const char *what, int index)
{
    if (index < 0)
        probe_result_fail(r, PROMETHEUS_SOURCE, "%s: %s", EP_QUERY, what);
    else
        probe_result_fail(r, PROMETHEUS_SOURCE, "%s: sample %d: %s", EP_QUERY, index, what);
    return -EBADMSG;
}

/* Parses a sample value as Prometheus formats it (Go's strconv: "87",
 * "12.5", "1e+02", "NaN", "+Inf", "-Inf"). Returns 1 for a number, 0 for
 * NaN, -EINVAL for anything else. */
static int parse_sample(const char *s, double *ret)
{
    char *end = NULL;
    double d;

    if (strcmp(s, "NaN") == 0)
        return 0;
    /* strtod would also take hex, "nan(...)", "infinity" and leading
     * spaces; Prometheus writes none of them. */
    if (!s[0] || !(s[0] == '-' || s[0] == '+' || s[0] == '.' || (s[0] >= '0' && s[0] <= '9')))
        return -EINVAL;
    if (strpbrk(s, "xXnN"))
        return -EINVAL;
    errno = 0;
    d = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(d))
        return -EINVAL;
    *ret = d;
    return 1;
}

static int fail_remote(struct probe_result *r, const cJSON *root)
{
    const char *type = json_string(root, "errorType");
    const char *msg = json_string(root, "error");
    char type_q[TEXT_EXCERPT_SIZE(TYPE_EXCERPT_MAX)];
    char msg_q[TEXT_EXCERPT_SIZE(ERROR_EXCERPT_MAX)];

    if (!type)
        type = "unknown";
    text_excerpt(type, strlen(type), TYPE_EXCERPT_MAX, type_q, sizeof(type_q));
    text_excerpt(msg ? msg : "", msg ? strlen(msg) : 0, ERROR_EXCERPT_MAX, msg_q, sizeof(msg_q));
    probe_result_fail(r, PROMETHEUS_SOURCE, "%s: Prometheus error %s: %s", EP_QUERY, type_q,
                      msg_q[0] ? msg_q : "(no message)");
    return -EREMOTEIO;
}

/* Long: each step of the query response (status, data, resultType, each sample) is checked with its
 * own message, in the order the response nests them. */
int prometheus_parse_gpu_util(const char *body, size_t len, struct probe_result *r)
{
    cJSON *root = NULL;
    const cJSON *data, *result, *sample;
    const char *status, *type;
    double max = 0;
    int have = 0;
    int index = 0;
    int rc;

    rc = probe_parse_json(body, len, PROMETHEUS_SOURCE, EP_QUERY, r, &root);
    if (rc < 0)
        return rc;

    if (!cJSON_IsObject(root)) {
        rc = fail_shape(r, "expected a JSON object", -1);
        goto out;
    }
    status = json_string(root, "status");
    if (status && strcmp(status, "error") == 0) {
        rc = fail_remote(r, root);
        goto out;
    }
    if (!status || strcmp(status, "success") != 0) {
        rc = fail_shape(r, "status is neither \"success\" nor \"error\"", -1);
        goto out;
    }
    data = json_member(root, "data");
    type = json_string(data, "resultType");
    if (!type) {
        rc = fail_shape(r, "data.resultType is missing", -1);
        goto out;
    }
    if (strcmp(type, "vector") != 0) {
        rc = fail_shape(r, "data.resultType is not \"vector\" (not an instant vector query?)", -1);
        goto out;
    }
    result = json_member(data, "result");
    if (!cJSON_IsArray(result)) {
        rc = fail_shape(r, "data.result is not an array", -1);
        goto out;
    }

    cJSON_ArrayForEach(sample, result)
    {
        const cJSON *value = json_member(sample, "value");
        const cJSON *v;
        double d = 0;

        if (!cJSON_IsArray(value) || cJSON_GetArraySize(value) != 2 ||
            !cJSON_IsNumber(cJSON_GetArrayItem(value, 0))) {
            rc = fail_shape(r, "value is not a [timestamp, \"number\"] pair", index);
            goto out;
        }
        v = cJSON_GetArrayItem(value, 1);
        if (!cJSON_IsString(v)) {
            rc = fail_shape(r, "value is not a string", index);
            goto out;
        }
        rc = parse_sample(v->valuestring, &d);
        if (rc < 0) {
            rc = fail_shape(r, "value is not a number", index);
            goto out;
        }
        if (rc == 1) {
            if (d < 0 || d > 100) {
                rc = fail_shape(r, "utilisation outside 0..100 percent", index);
                goto out;
            }
            if (!have || d > max)
                max = d;
            have = 1;
        }
        index++;
    }

    probe_result_init(r, PROMETHEUS_SOURCE);
    r->gpu_utilisation = have ? max : 0;
    r->no_data = !have;
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}
