#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "activity/code_server.h"
#include "activity/jupyter.h"
#include "activity/probe_result.h"
#include "activity/prometheus.h"

typedef int (*parse_fn)(const char *body, size_t len, struct probe_result *r);

/* 2026-01-02T03:04:05Z */
#define T0 INT64_C(1767323045000)

/* The error text must never carry control characters or quotes from the
 * body, and must fit the field. */
static void assert_error_clean(const struct probe_result *r)
{
    size_t n = strnlen(r->error, sizeof(r->error));
    assert_true(n < sizeof(r->error));
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)r->error[i];
        assert_true(c >= 0x20 && c < 0x7f);
    }
}

struct parse_case {
    const char *name;
    parse_fn parse;
    const char *body;
    int rc;
    int64_t last_activity_ms;
    int busy;
    int connections;
    double gpu;
    int no_data;
    const char *error_has; /* substring expected in r.error when rc < 0 */
};

static void run_cases(const struct parse_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct parse_case *c = &cases[i];
        struct probe_result r;
        memset(&r, 0x5a, sizeof(r)); /* parsers must overwrite everything */
        int rc = c->parse(c->body, strlen(c->body), &r);
        if (rc != c->rc)
            fail_msg("%s: rc %d, want %d (error: %.*s)", c->name, rc, c->rc, (int)sizeof(r.error),
                     r.error);
        assert_true(memchr(r.error, '\0', sizeof(r.error)) != NULL);
        assert_true(memchr(r.source, '\0', sizeof(r.source)) != NULL);
        if (rc < 0) {
            assert_int_equal(r.ok, 0);
            assert_int_equal(r.busy, 0);
            assert_error_clean(&r);
            if (c->error_has && !strstr(r.error, c->error_has))
                fail_msg("%s: error \"%s\" lacks \"%s\"", c->name, r.error, c->error_has);
            continue;
        }
        if (r.ok != 1 || r.error[0] != '\0')
            fail_msg("%s: not ok: %s", c->name, r.error);
        if (r.last_activity_ms != c->last_activity_ms)
            fail_msg("%s: last_activity %lld, want %lld", c->name, (long long)r.last_activity_ms,
                     (long long)c->last_activity_ms);
        if (r.busy != c->busy)
            fail_msg("%s: busy %d, want %d", c->name, r.busy, c->busy);
        if (r.connections != c->connections)
            fail_msg("%s: connections %d, want %d", c->name, r.connections, c->connections);
        if (r.gpu_utilisation != c->gpu)
            fail_msg("%s: gpu %g, want %g", c->name, r.gpu_utilisation, c->gpu);
        if (r.no_data != c->no_data)
            fail_msg("%s: no_data %d, want %d", c->name, r.no_data, c->no_data);
    }
}

#define RUN(cases) run_cases(cases, sizeof(cases) / sizeof(cases[0]))

static void test_jupyter_status(void **state)
{
    (void)state;
    static const struct parse_case cases[] = {
        {"real server", jupyter_parse_status,
         "{\"connections\": 1, \"kernels\": 2, \"last_activity\": "
         "\"2026-01-02T03:04:05.123456Z\", \"started\": \"2026-01-01T10:00:00.000000Z\"}",
         0, T0 + 123, 0, 1, 0, 0, NULL},
        {"offset time, no connections", jupyter_parse_status,
         "{\"started\":\"2026-01-01T00:00:00Z\",\"last_activity\":\"2026-01-02T05:04:05+02:00\","
         "\"kernels\":0}\n",
         0, T0, 0, 0, 0, 0, NULL},
        {"missing last_activity", jupyter_parse_status, "{\"kernels\":0,\"connections\":0}",
         -EBADMSG, 0, 0, 0, 0, 0, "GET /api/status: last_activity is missing"},
        {"last_activity a number", jupyter_parse_status, "{\"last_activity\":1767323045}", -EBADMSG,
         0, 0, 0, 0, 0, "not an RFC 3339"},
        {"last_activity garbage", jupyter_parse_status, "{\"last_activity\":\"yesterday\"}",
         -EBADMSG, 0, 0, 0, 0, 0, "not an RFC 3339"},
        {"connections a string", jupyter_parse_status,
         "{\"last_activity\":\"2026-01-02T03:04:05Z\",\"connections\":\"1\"}", -EBADMSG, 0, 0, 0, 0,
         0, "connections"},
        {"connections negative", jupyter_parse_status,
         "{\"last_activity\":\"2026-01-02T03:04:05Z\",\"connections\":-1}", -EBADMSG, 0, 0, 0, 0, 0,
         "connections"},
        {"connections huge", jupyter_parse_status,
         "{\"last_activity\":\"2026-01-02T03:04:05Z\",\"connections\":1e300}", -EBADMSG, 0, 0, 0, 0,
         0, "connections"},
        {"array", jupyter_parse_status, "[]", -EBADMSG, 0, 0, 0, 0, 0, "expected a JSON object"},
        {"login page", jupyter_parse_status,
         "<!DOCTYPE html>\n<html><head><title>Jupyter Server</title></head>", -EBADMSG, 0, 0, 0, 0,
         0, "jupyter: GET /api/status: response is not JSON"},
        {"truncated", jupyter_parse_status, "{\"last_activity\":\"2026-01-02T03:04:05Z\"", -EBADMSG,
         0, 0, 0, 0, 0, "not JSON"},
        {"trailing", jupyter_parse_status, "{\"last_activity\":\"2026-01-02T03:04:05Z\"} {}",
         -EBADMSG, 0, 0, 0, 0, 0, "trailing data"},
        {"empty", jupyter_parse_status, "", -EBADMSG, 0, 0, 0, 0, 0, "empty response"},
    };
    RUN(cases);
}

static void test_jupyter_kernels(void **state)
{
    (void)state;
    static const struct parse_case cases[] = {
        {"no kernels", jupyter_parse_kernels, "[]", 0, 0, 0, 0, 0, 0, NULL},
        {"one idle kernel", jupyter_parse_kernels,
         "[{\"id\": \"5f3c2a8e-1b4d-4e8f-9a6b-0c7d2e1f3a4b\", \"name\": \"python3\", "
         "\"last_activity\": \"2026-01-02T03:04:05.000000Z\", \"execution_state\": \"idle\", "
         "\"connections\": 1}]",
         0, T0, 0, 1, 0, 0, NULL},
        {"busy kernel, no browser", jupyter_parse_kernels,
         "[{\"id\":\"a\",\"name\":\"python3\",\"last_activity\":\"2026-01-02T03:04:05Z\","
         "\"execution_state\":\"busy\",\"connections\":0}]",
         0, T0, 1, 0, 0, 0, NULL},
        /* What Jupyter Server reports for a kernel started through the
         * REST API that nothing talks to, for as long as it lives: its
         * last_activity (the start) counts, it is not busy. */
        {"starting kernel is not busy", jupyter_parse_kernels,
         "[{\"id\":\"a\",\"last_activity\":\"2026-01-02T03:04:05Z\","
         "\"execution_state\":\"starting\"}]",
         0, T0, 0, 0, 0, 0, NULL},
        {"restarting kernel is not busy", jupyter_parse_kernels,
         "[{\"id\":\"a\",\"last_activity\":\"2026-01-02T03:04:05Z\","
         "\"execution_state\":\"restarting\"}]",
         0, T0, 0, 0, 0, 0, NULL},
        {"a busy kernel beside one starting", jupyter_parse_kernels,
         "[{\"id\":\"a\",\"last_activity\":\"2026-01-02T03:04:05Z\","
         "\"execution_state\":\"starting\",\"connections\":0},"
         "{\"id\":\"b\",\"last_activity\":\"2026-01-02T03:00:00Z\","
         "\"execution_state\":\"busy\",\"connections\":0}]",
         0, T0, 1, 0, 0, 0, NULL},
        {"dead and unknown states are not busy", jupyter_parse_kernels,
         "[{\"last_activity\":\"2026-01-02T03:04:05Z\",\"execution_state\":\"dead\"},"
         "{\"last_activity\":\"2026-01-02T03:04:05Z\",\"execution_state\":\"hibernating\"}]",
         0, T0, 0, 0, 0, 0, NULL},
        {"max activity over kernels, one busy", jupyter_parse_kernels,
         "[{\"id\":\"a\",\"name\":\"python3\",\"last_activity\":\"2026-01-01T00:00:00Z\","
         "\"execution_state\":\"idle\",\"connections\":1},"
         "{\"id\":\"b\",\"name\":\"ir\",\"last_activity\":\"2026-01-02T03:04:05.500Z\","
         "\"execution_state\":\"idle\",\"connections\":2},"
         "{\"id\":\"c\",\"name\":\"julia\",\"last_activity\":\"2026-01-02T03:00:00Z\","
         "\"execution_state\":\"busy\",\"connections\":0}]",
         0, T0 + 500, 1, 3, 0, 0, NULL},
        {"object instead of array", jupyter_parse_kernels, "{\"kernels\":[]}", -EBADMSG, 0, 0, 0, 0,
         0, "GET /api/kernels: expected a JSON array"},
        {"kernel not an object", jupyter_parse_kernels, "[\"a\"]", -EBADMSG, 0, 0, 0, 0, 0,
         "kernel 0 is not an object"},
        {"state missing", jupyter_parse_kernels,
         "[{\"last_activity\":\"2026-01-02T03:04:05Z\",\"execution_state\":\"idle\"},"
         "{\"last_activity\":\"2026-01-02T03:04:05Z\"}]",
         -EBADMSG, 0, 0, 0, 0, 0, "kernel 1: execution_state"},
        {"state a number", jupyter_parse_kernels,
         "[{\"last_activity\":\"2026-01-02T03:04:05Z\",\"execution_state\":1}]", -EBADMSG, 0, 0, 0,
         0, 0, "execution_state"},
        {"last_activity missing", jupyter_parse_kernels, "[{\"execution_state\":\"busy\"}]",
         -EBADMSG, 0, 0, 0, 0, 0, "kernel 0: last_activity is missing"},
        {"last_activity null", jupyter_parse_kernels,
         "[{\"execution_state\":\"idle\",\"last_activity\":null}]", -EBADMSG, 0, 0, 0, 0, 0,
         "last_activity is not"},
        {"connections fractional", jupyter_parse_kernels,
         "[{\"execution_state\":\"idle\",\"last_activity\":\"2026-01-02T03:04:05Z\","
         "\"connections\":1.5}]",
         -EBADMSG, 0, 0, 0, 0, 0, "connections"},
        {"garbage", jupyter_parse_kernels, "[{]", -EBADMSG, 0, 0, 0, 0, 0, "not JSON"},
    };
    RUN(cases);
}

/* The kernels a Jupyter server lists, kept by their ids' hashes: all of
 * them up to PROBE_KERNELS_MAX, ascending; past that the smallest, with
 * the count of all; a kernel without an id makes the list unknown (the
 * activity it reports still counts); other sources do not say. */
static void test_jupyter_kernel_ids(void **state)
{
    (void)state;
    char body[4096];
    size_t len = 0;
    uint32_t want[12];
    len += (size_t)snprintf(body + len, sizeof(body) - len, "[");
    for (int i = 0; i < 12; i++) {
        char id[48];
        snprintf(id, sizeof(id), "1a2b3c4d-0000-4000-8000-%012d", i);
        want[i] = jupyter_kernel_hash(id);
        len += (size_t)snprintf(body + len, sizeof(body) - len,
                                "%s{\"id\":\"%s\",\"execution_state\":\"idle\","
                                "\"last_activity\":\"2026-01-02T03:04:05Z\",\"connections\":0}",
                                i ? "," : "", id);
    }
    len += (size_t)snprintf(body + len, sizeof(body) - len, "]");
    /* sorted, as the probe keeps them */
    for (int i = 1; i < 12; i++)
        for (int j = i; j > 0 && want[j - 1] > want[j]; j--) {
            uint32_t t = want[j];
            want[j] = want[j - 1];
            want[j - 1] = t;
        }
    struct probe_result r;
    assert_int_equal(jupyter_parse_kernels(body, len, &r), 0);
    assert_int_equal(r.n_kernels, 12);
    for (int i = 0; i < PROBE_KERNELS_MAX; i++)
        assert_int_equal(r.kernels[i], want[i]);

    const char *two = "[{\"id\":\"b\",\"execution_state\":\"idle\",\"last_activity\":"
                      "\"2026-01-02T03:04:05Z\",\"connections\":0},{\"id\":\"a\","
                      "\"execution_state\":\"busy\",\"last_activity\":\"2026-01-02T03:04:05Z\","
                      "\"connections\":1}]";
    assert_int_equal(jupyter_parse_kernels(two, strlen(two), &r), 0);
    assert_int_equal(r.n_kernels, 2);
    uint32_t a = jupyter_kernel_hash("a"), b = jupyter_kernel_hash("b");
    assert_int_equal(r.kernels[0], a < b ? a : b);
    assert_int_equal(r.kernels[1], a < b ? b : a);

    const char *no_id = "[{\"execution_state\":\"busy\",\"last_activity\":"
                        "\"2026-01-02T03:04:05Z\",\"connections\":0}]";
    assert_int_equal(jupyter_parse_kernels(no_id, strlen(no_id), &r), 0);
    assert_int_equal(r.n_kernels, -1);
    assert_true(r.busy);

    assert_int_equal(jupyter_parse_kernels("[]", 2, &r), 0);
    assert_int_equal(r.n_kernels, 0);

    /* Merged with a source that does not say: the kernels stay. */
    struct probe_result gpu;
    probe_result_init(&gpu, "gpu");
    assert_int_equal(gpu.n_kernels, -1);
    assert_int_equal(jupyter_parse_kernels(two, strlen(two), &r), 0);
    probe_result_merge(&r, &gpu);
    assert_int_equal(r.n_kernels, 2);
    probe_result_merge(&gpu, &r);
    assert_int_equal(gpu.n_kernels, 2);
}

static void test_code_server(void **state)
{
    (void)state;
    static const struct parse_case cases[] = {
        {"alive", code_server_parse_healthz,
         "{\"status\":\"alive\",\"lastHeartbeat\":1767323045000}", 0, T0, 0, 1, 0, 0, NULL},
        {"expired", code_server_parse_healthz,
         "{\"status\":\"expired\",\"lastHeartbeat\":1767323045000}", 0, T0, 0, 0, 0, 0, NULL},
        {"never heartbeat", code_server_parse_healthz,
         "{\"status\":\"expired\",\"lastHeartbeat\":0}", 0, 0, 0, 0, 0, 0, NULL},
        {"unknown status", code_server_parse_healthz,
         "{\"status\":\"sleeping\",\"lastHeartbeat\":1767323045000}", -EBADMSG, 0, 0, 0, 0, 0,
         "code-server: GET /healthz: unknown status \"sleeping\""},
        {"status with control bytes", code_server_parse_healthz,
         "{\"status\":\"a\\u001b[31m\\\"b\",\"lastHeartbeat\":1}", -EBADMSG, 0, 0, 0, 0, 0,
         "unknown status \"a?[31m?b\""},
        {"status missing", code_server_parse_healthz, "{\"lastHeartbeat\":1767323045000}", -EBADMSG,
         0, 0, 0, 0, 0, "status is missing"},
        {"heartbeat missing", code_server_parse_healthz, "{\"status\":\"alive\"}", -EBADMSG, 0, 0,
         0, 0, 0, "lastHeartbeat"},
        {"heartbeat a string", code_server_parse_healthz,
         "{\"status\":\"alive\",\"lastHeartbeat\":\"1767323045000\"}", -EBADMSG, 0, 0, 0, 0, 0,
         "lastHeartbeat"},
        {"heartbeat huge", code_server_parse_healthz,
         "{\"status\":\"alive\",\"lastHeartbeat\":1e300}", -EBADMSG, 0, 0, 0, 0, 0,
         "lastHeartbeat"},
        {"heartbeat beyond 2^53", code_server_parse_healthz,
         "{\"status\":\"alive\",\"lastHeartbeat\":9007199254740994}", -EBADMSG, 0, 0, 0, 0, 0,
         "lastHeartbeat"},
        {"heartbeat negative", code_server_parse_healthz,
         "{\"status\":\"alive\",\"lastHeartbeat\":-5}", -EBADMSG, 0, 0, 0, 0, 0, "lastHeartbeat"},
        {"heartbeat fractional", code_server_parse_healthz,
         "{\"status\":\"alive\",\"lastHeartbeat\":1.5}", -EBADMSG, 0, 0, 0, 0, 0, "lastHeartbeat"},
        {"plain text", code_server_parse_healthz, "OK", -EBADMSG, 0, 0, 0, 0, 0, "not JSON"},
        {"array", code_server_parse_healthz, "[]", -EBADMSG, 0, 0, 0, 0, 0, "expected a JSON"},
    };
    RUN(cases);
}

#define PROM_OK(result)                                                                            \
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[" result "]}}"
#define PROM_SAMPLE(gpu, v)                                                                        \
    "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_UTIL\",\"gpu\":\"" gpu "\","                      \
    "\"namespace\":\"ml\",\"pod\":\"ws-alice-0\",\"container\":\"notebook\"},"                     \
    "\"value\":[1732900000.123,\"" v "\"]}"

static void test_prometheus(void **state)
{
    (void)state;
    static const struct parse_case cases[] = {
        {"one gpu", prometheus_parse_gpu_util, PROM_OK(PROM_SAMPLE("0", "87")), 0, 0, 0, 0, 87, 0,
         NULL},
        {"max over gpus", prometheus_parse_gpu_util,
         PROM_OK(PROM_SAMPLE("0", "12.5") "," PROM_SAMPLE("1", "63") "," PROM_SAMPLE("2", "0")), 0,
         0, 0, 0, 63, 0, NULL},
        {"all zero", prometheus_parse_gpu_util,
         PROM_OK(PROM_SAMPLE("0", "0") "," PROM_SAMPLE("1", "0")), 0, 0, 0, 0, 0, 0, NULL},
        {"exponent form", prometheus_parse_gpu_util, PROM_OK(PROM_SAMPLE("0", "1e+02")), 0, 0, 0, 0,
         100, 0, NULL},
        {"empty vector", prometheus_parse_gpu_util, PROM_OK(""), 0, 0, 0, 0, 0, 1, NULL},
        {"all NaN", prometheus_parse_gpu_util, PROM_OK(PROM_SAMPLE("0", "NaN")), 0, 0, 0, 0, 0, 1,
         NULL},
        {"NaN skipped", prometheus_parse_gpu_util,
         PROM_OK(PROM_SAMPLE("0", "NaN") "," PROM_SAMPLE("1", "40")), 0, 0, 0, 0, 40, 0, NULL},
        {"with warnings", prometheus_parse_gpu_util,
         "{\"status\":\"success\",\"warnings\":[\"partial\"],\"data\":{\"resultType\":\"vector\","
         "\"result\":[" PROM_SAMPLE("0", "5") "]}}",
         0, 0, 0, 0, 5, 0, NULL},
        {"+Inf", prometheus_parse_gpu_util, PROM_OK(PROM_SAMPLE("0", "+Inf")), -EBADMSG, 0, 0, 0, 0,
         0, "sample 0: value is not a number"},
        {"lower-case nan", prometheus_parse_gpu_util, PROM_OK(PROM_SAMPLE("0", "nan")), -EBADMSG, 0,
         0, 0, 0, 0, "not a number"},
        {"hex", prometheus_parse_gpu_util, PROM_OK(PROM_SAMPLE("0", "0x10")), -EBADMSG, 0, 0, 0, 0,
         0, "not a number"},
        {"overflow", prometheus_parse_gpu_util, PROM_OK(PROM_SAMPLE("0", "1e400")), -EBADMSG, 0, 0,
         0, 0, 0, "not a number"},
        {"huge", prometheus_parse_gpu_util, PROM_OK(PROM_SAMPLE("0", "1e300")), -EBADMSG, 0, 0, 0,
         0, 0, "outside 0..100"},
        {"negative", prometheus_parse_gpu_util,
         PROM_OK(PROM_SAMPLE("0", "3") "," PROM_SAMPLE("1", "-1")), -EBADMSG, 0, 0, 0, 0, 0,
         "sample 1: utilisation outside"},
        {"empty string", prometheus_parse_gpu_util, PROM_OK(PROM_SAMPLE("0", "")), -EBADMSG, 0, 0,
         0, 0, 0, "not a number"},
        {"trailing junk", prometheus_parse_gpu_util, PROM_OK(PROM_SAMPLE("0", "87%")), -EBADMSG, 0,
         0, 0, 0, 0, "not a number"},
        {"leading space", prometheus_parse_gpu_util, PROM_OK(PROM_SAMPLE("0", " 87")), -EBADMSG, 0,
         0, 0, 0, 0, "not a number"},
        {"value a number", prometheus_parse_gpu_util,
         PROM_OK("{\"metric\":{},\"value\":[1732900000.123,87]}"), -EBADMSG, 0, 0, 0, 0, 0,
         "value is not a string"},
        {"value short", prometheus_parse_gpu_util, PROM_OK("{\"metric\":{},\"value\":[\"87\"]}"),
         -EBADMSG, 0, 0, 0, 0, 0, "pair"},
        {"range query", prometheus_parse_gpu_util,
         "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}", -EBADMSG, 0,
         0, 0, 0, 0, "not \"vector\""},
        {"scalar", prometheus_parse_gpu_util,
         "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"2\"]}}",
         -EBADMSG, 0, 0, 0, 0, 0, "not \"vector\""},
        {"no data", prometheus_parse_gpu_util, "{\"status\":\"success\"}", -EBADMSG, 0, 0, 0, 0, 0,
         "resultType is missing"},
        {"result not array", prometheus_parse_gpu_util,
         "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":{}}}", -EBADMSG, 0,
         0, 0, 0, 0, "data.result is not an array"},
        {"odd status", prometheus_parse_gpu_util, "{\"status\":\"pending\"}", -EBADMSG, 0, 0, 0, 0,
         0, "status is neither"},
        {"error response", prometheus_parse_gpu_util,
         "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"invalid parameter "
         "\\\"query\\\": 1:14: parse error: unexpected <EOF>\"}",
         -EREMOTEIO, 0, 0, 0, 0, 0,
         "gpu: GET /api/v1/query: Prometheus error bad_data: invalid parameter ?query?: 1:14"},
        {"error without message", prometheus_parse_gpu_util,
         "{\"status\":\"error\",\"errorType\":\"timeout\"}", -EREMOTEIO, 0, 0, 0, 0, 0,
         "Prometheus error timeout: (no message)"},
        {"proxy html", prometheus_parse_gpu_util, "<html><body>502 Bad Gateway</body></html>",
         -EBADMSG, 0, 0, 0, 0, 0, "response is not JSON"},
    };
    RUN(cases);
}

/* A long, hostile error text is cut and cleaned, never copied whole. */
static void test_prometheus_error_bounded(void **state)
{
    (void)state;
    size_t n = 4096;
    char *body = malloc(n + 128);
    assert_non_null(body);
    int off = snprintf(body, 128, "{\"status\":\"error\",\"errorType\":\"execution\",\"error\":\"");
    memset(body + off, 'x', n);
    strcpy(body + off + n, "\"}");
    /* Escaped control characters decode to raw bytes the excerpt must clean. */
    memcpy(body + off, "\\n\\u0007", 8);

    struct probe_result r;
    assert_int_equal(prometheus_parse_gpu_util(body, strlen(body), &r), -EREMOTEIO);
    assert_int_equal(r.ok, 0);
    assert_error_clean(&r);
    assert_non_null(strstr(r.error, "execution: ??"));
    assert_non_null(strstr(r.error, "..."));
    assert_true(strlen(r.error) < 220);
    free(body);
}

/* The error for a non-JSON body quotes only a short, cleaned excerpt. */
static void test_excerpt_bounded(void **state)
{
    (void)state;
    char body[2048];
    memset(body, 'A', sizeof(body));
    memcpy(body, "\x01<html>\"token\"\xff", 15);

    struct probe_result r;
    assert_int_equal(jupyter_parse_status(body, sizeof(body), &r), -EBADMSG);
    assert_error_clean(&r);
    assert_non_null(strstr(r.error, "?<html>?token??AAA"));
    assert_non_null(strstr(r.error, "...\""));
    const char *q = strchr(r.error, '"');
    assert_non_null(q);
    assert_true(strlen(q) <= PROBE_EXCERPT_MAX + 5);
}

static void test_body_limit_and_nul(void **state)
{
    (void)state;
    struct probe_result r;
    static const char body[] = "{\"status\":\"alive\",\"lastHeartbeat\":1}";

    assert_int_equal(code_server_parse_healthz(body, (size_t)PROBE_BODY_MAX + 1, &r), -EMSGSIZE);
    assert_int_equal(r.ok, 0);
    assert_non_null(strstr(r.error, "exceeds"));

    assert_int_equal(code_server_parse_healthz(NULL, 0, &r), -EBADMSG);
    assert_int_equal(r.ok, 0);

    /* Length, not NUL, bounds the parse: a cut body is refused ... */
    assert_int_equal(code_server_parse_healthz(body, sizeof(body) - 3, &r), -EBADMSG);
    /* ... and bytes past len are never read as part of it. */
    assert_int_equal(code_server_parse_healthz(body, sizeof(body) - 1, &r), 0);
    assert_int_equal(r.last_activity_ms, 1);
    /* A stray NUL after the document is trailing data. */
    assert_int_equal(code_server_parse_healthz(body, sizeof(body), &r), -EBADMSG);

    /* Deep nesting is refused by cJSON's depth limit, not by the stack. */
    size_t depth = 100000;
    char *deep = malloc(depth);
    assert_non_null(deep);
    memset(deep, '[', depth);
    assert_int_equal(jupyter_parse_kernels(deep, depth, &r), -EBADMSG);
    free(deep);
}

static void test_fail_and_init(void **state)
{
    (void)state;
    struct probe_result r;

    probe_result_fail(&r, "jupyter", "connect: %s", "Connection refused");
    assert_int_equal(r.ok, 0);
    assert_string_equal(r.source, "jupyter");
    assert_string_equal(r.error, "jupyter: connect: Connection refused");
    assert_int_equal(r.busy, 0);
    assert_int_equal(r.last_activity_ms, 0);

    char longmsg[600];
    memset(longmsg, 'e', sizeof(longmsg) - 1);
    longmsg[sizeof(longmsg) - 1] = '\0';
    probe_result_fail(&r, "a-source-name-much-longer-than-thirty-two-bytes", "%s", longmsg);
    assert_int_equal(strlen(r.source), PROBE_SOURCE_SIZE - 1);
    assert_int_equal(strlen(r.error), PROBE_ERROR_SIZE - 1);

    probe_result_init(&r, "gpu");
    assert_int_equal(r.ok, 1);
    assert_string_equal(r.error, "");
    assert_string_equal(r.source, "gpu");
}

static struct probe_result ok_result(const char *source, int64_t last, int busy, int conns,
                                     double gpu, int no_data)
{
    struct probe_result r;
    probe_result_init(&r, source);
    r.last_activity_ms = last;
    r.busy = busy;
    r.connections = conns;
    r.gpu_utilisation = gpu;
    r.no_data = no_data;
    return r;
}

static void test_merge(void **state)
{
    (void)state;
    struct probe_result status = ok_result("jupyter", T0, 0, 1, 0, 0);
    struct probe_result kernels = ok_result("jupyter", T0 + 5000, 1, 2, 0, 0);
    struct probe_result code = ok_result("code-server", T0 - 1000, 0, 1, 0, 0);
    struct probe_result gpu = ok_result("gpu", 0, 0, 0, 42.5, 0);
    struct probe_result all = {0};

    probe_result_merge(&all, &status);
    assert_memory_equal(&all, &status, sizeof(all));
    probe_result_merge(&all, &kernels);
    probe_result_merge(&all, &code);
    probe_result_merge(&all, &gpu);
    assert_int_equal(all.ok, 1);
    assert_string_equal(all.error, "");
    assert_int_equal(all.busy, 1);
    assert_int_equal(all.last_activity_ms, T0 + 5000);
    assert_int_equal(all.connections, 4);
    assert_true(all.gpu_utilisation == 42.5);
    assert_int_equal(all.no_data, 0);
    assert_string_equal(all.source, "jupyter+code-server+gpu");

    /* Unknown activity (0) never hides a known one. */
    struct probe_result a = ok_result("jupyter", T0, 0, 0, 0, 0);
    struct probe_result unknown = ok_result("code-server", 0, 0, 0, 0, 0);
    probe_result_merge(&a, &unknown);
    assert_int_equal(a.last_activity_ms, T0);

    /* "No GPU samples" survives a merge with sources that have no GPU. */
    struct probe_result g1 = ok_result("gpu", 0, 0, 0, 0, 1);
    struct probe_result g2 = ok_result("gpu", 0, 0, 0, 0, 1);
    probe_result_merge(&g1, &g2);
    assert_int_equal(g1.no_data, 1);
    assert_string_equal(g1.source, "gpu");
    probe_result_merge(&g1, &status);
    assert_int_equal(g1.no_data, 1);

    /* Connections saturate. */
    struct probe_result c1 = ok_result("jupyter", 0, 0, 2147483000, 0, 0);
    struct probe_result c2 = ok_result("code-server", 0, 0, 2147483000, 0, 0);
    probe_result_merge(&c1, &c2);
    assert_int_equal(c1.connections, 2147483647);
}

static void test_merge_failure_visible(void **state)
{
    (void)state;
    struct probe_result idle = ok_result("code-server", T0, 0, 0, 0, 0);
    struct probe_result busy = ok_result("jupyter", T0, 1, 0, 0, 0);
    struct probe_result broken;
    struct probe_result broken2;
    probe_result_fail(&broken, "gpu", "GET /api/v1/query: HTTP 503");
    probe_result_fail(&broken2, "jupyter", "GET /api/kernels: HTTP 403");

    /* A failure after successes fails the whole. */
    struct probe_result m = idle;
    probe_result_merge(&m, &broken);
    assert_int_equal(m.ok, 0);
    assert_string_equal(m.error, "gpu: GET /api/v1/query: HTTP 503");
    assert_string_equal(m.source, "code-server+gpu");
    assert_int_equal(m.last_activity_ms, T0);

    /* A success after a failure does not clear it; busy still shows. */
    struct probe_result all = {0};
    probe_result_merge(&all, &broken);
    probe_result_merge(&all, &busy);
    assert_int_equal(all.ok, 0);
    assert_int_equal(all.busy, 1);
    assert_string_equal(all.error, "gpu: GET /api/v1/query: HTTP 503");

    /* Errors of several failed sources are all kept. */
    probe_result_merge(&all, &broken2);
    assert_string_equal(all.error,
                        "gpu: GET /api/v1/query: HTTP 503; jupyter: GET /api/kernels: HTTP 403");

    /* Many failures stay within the field. */
    for (int i = 0; i < 20; i++)
        probe_result_merge(&all, &broken2);
    assert_int_equal(all.ok, 0);
    assert_true(strlen(all.error) < PROBE_ERROR_SIZE);

    /* Parsers' failures merge the same way. */
    struct probe_result p, q;
    assert_int_equal(jupyter_parse_kernels("nope", 4, &p), -EBADMSG);
    assert_int_equal(code_server_parse_healthz("{\"status\":\"alive\",\"lastHeartbeat\":1}",
                                               strlen("{\"status\":\"alive\",\"lastHeartbeat\":1}"),
                                               &q),
                     0);
    probe_result_merge(&q, &p);
    assert_int_equal(q.ok, 0);
    assert_non_null(strstr(q.error, "jupyter: GET /api/kernels: response is not JSON"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jupyter_status),
        cmocka_unit_test(test_jupyter_kernels),
        cmocka_unit_test(test_jupyter_kernel_ids),
        cmocka_unit_test(test_code_server),
        cmocka_unit_test(test_prometheus),
        cmocka_unit_test(test_prometheus_error_bounded),
        cmocka_unit_test(test_excerpt_bounded),
        cmocka_unit_test(test_body_limit_and_nul),
        cmocka_unit_test(test_fail_and_init),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_merge_failure_visible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
