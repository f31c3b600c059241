#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/api_error.h"

#define ELLIPSIS "\xe2\x80\xa6"

struct parse_case {
    const char *name;
    long http_code;
    const char *body; /* NULL: no body at all */
    long code;
    const char *reason;
    const char *message;
};

static const struct parse_case parse_cases[] = {
    {"not found", 404,
     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
     "\"message\":\"pods \\\"x\\\" not found\",\"reason\":\"NotFound\","
     "\"details\":{\"name\":\"x\",\"kind\":\"pods\"},\"code\":404}",
     404, "NotFound", "pods \"x\" not found"},
    {"conflict", 409,
     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"Operation "
     "cannot be fulfilled on workspaces.hibernator.dev \\\"w\\\": the object has been modified; "
     "please apply your changes to the latest version and try again\",\"reason\":\"Conflict\","
     "\"code\":409}",
     409, "Conflict",
     "Operation cannot be fulfilled on workspaces.hibernator.dev \"w\": the object has been "
     "modified; please apply your changes to the latest version and try again"},
    {"already exists", 409,
     "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"pods \\\"x\\\" already "
     "exists\",\"reason\":\"AlreadyExists\",\"code\":409}",
     409, "AlreadyExists", "pods \"x\" already exists"},
    {"expired", 410,
     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
     "\"message\":\"too old resource version: 1 (4242)\",\"reason\":\"Expired\",\"code\":410}",
     410, "Expired", "too old resource version: 1 (4242)"},
    {"invalid", 422,
     "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Workspace.hibernator.dev "
     "\\\"w\\\" is invalid: spec.image: Required value\",\"reason\":\"Invalid\",\"code\":422}",
     422, "Invalid", "Workspace.hibernator.dev \"w\" is invalid: spec.image: Required value"},
    {"forbidden", 403,
     "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"pods is forbidden: User "
     "\\\"system:anonymous\\\" cannot list resource \\\"pods\\\"\",\"reason\":\"Forbidden\","
     "\"details\":{\"kind\":\"pods\"},\"code\":403}",
     403, "Forbidden",
     "pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\""},
    {"proxy html", 502,
     "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad "
     "Gateway</h1></center>\r\n</body>\r\n</html>\r\n",
     502, "InternalError",
     "HTTP 502: <html> <head><title>502 Bad Gateway</title></head> <body> <center><h1>502 Bad "
     "Gateway</h1></center> </body> </html>"},
    {"empty body", 503, "", 503, "ServiceUnavailable", "HTTP 503"},
    {"no body", 401, NULL, 401, "Unauthorized", "HTTP 401"},
    {"blank body", 504, " \r\n\t ", 504, "Timeout", "HTTP 504"},
    {"plain text", 429, "Too many requests, please try again later.\n", 429, "TooManyRequests",
     "HTTP 429: Too many requests, please try again later."},
    {"truncated status", 404, "{\"kind\":\"Status\",\"code\":404,\"reas", 404, "NotFound",
     "HTTP 404: {\"kind\":\"Status\",\"code\":404,\"reas"},
    {"json but not a status", 500, "{\"error\":\"boom\"}", 500, "InternalError",
     "HTTP 500: {\"error\":\"boom\"}"},
    {"other kind", 400, "{\"kind\":\"Pod\",\"status\":\"Failure\"}", 400, "BadRequest",
     "HTTP 400: {\"kind\":\"Pod\",\"status\":\"Failure\"}"},
    {"json array", 405, "[1,2]", 405, "MethodNotAllowed", "HTTP 405: [1,2]"},
    {"status without kind", 409,
     "{\"status\":\"Failure\",\"message\":\"conflict\",\"reason\":\"Conflict\",\"code\":409}", 409,
     "Conflict", "conflict"},
    /* The body's code wins over the HTTP code, as client-go reads it... */
    {"body code disagrees", 500,
     "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"m\",\"reason\":\"Conflict\","
     "\"code\":409}",
     409, "Conflict", "m"},
    /* ...but a missing or zero code means the HTTP code. */
    {"body code missing", 403,
     "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"m\",\"reason\":\"Forbidden\"}", 403,
     "Forbidden", "m"},
    {"body code zero", 422,
     "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"m\",\"code\":0}", 422, "Invalid",
     "m"},
    {"body code nonsense", 404,
     "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"m\",\"code\":\"404\"}", 404,
     "NotFound", "m"},
    {"body code fractional", 404,
     "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"m\",\"code\":409.5}", 404,
     "NotFound", "m"},
    {"no reason", 409,
     "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"m\",\"code\":409}", 409, "Conflict",
     "m"},
    {"bad reason", 404,
     "{\"kind\":\"Status\",\"message\":\"m\",\"reason\":\"Not Found!\",\"code\":404}", 404,
     "NotFound", "m"},
    {"no message", 404, "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404}", 404,
     "NotFound", "HTTP 404: NotFound"},
    {"blank message", 500, "{\"kind\":\"Status\",\"message\":\"  \\n \",\"code\":500}", 500,
     "InternalError", "HTTP 500: InternalError"},
    {"unlisted 5xx", 502, "", 502, "InternalError", "HTTP 502"},
    {"unlisted 4xx", 418, "short and stout", 418, "Unknown", "HTTP 418: short and stout"},
    {"control characters", 400, "bad\x01\x02request\x1b[31m\x7f!", 400, "BadRequest",
     "HTTP 400: bad request [31m !"},
    {"invalid utf-8", 400, "caf\xc3\xa9 \xff\xfe ok \xe2\x82", 400, "BadRequest",
     "HTTP 400: caf\xc3\xa9 ?? ok ??"},
    {"bidi override", 400,
     "a\xe2\x80\xae"
     "b\xe2\x81\xa6"
     "c",
     400, "BadRequest", "HTTP 400: a b c"},
    {"status message lines", 422,
     "{\"kind\":\"Status\",\"message\":\"line one\\nline two\\r\\n\\tindented\",\"code\":422}", 422,
     "Invalid", "line one line two indented"},
    {"bearer echoed", 401, "invalid header Authorization: Bearer abcdefgh12345678xyz for /api", 401,
     "Unauthorized", "HTTP 401: invalid header Authorization: Bearer [redacted] for /api"},
    {"jwt echoed", 401,
     "{\"kind\":\"Status\",\"message\":\"token=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln is "
     "bad\",\"code\":401}",
     401, "Unauthorized", "token=[redacted] is bad"},
    {"bearer prose kept", 401, "Bearer token required", 401, "Unauthorized",
     "HTTP 401: Bearer token required"},
};

static void test_parse_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
        const struct parse_case *c = &parse_cases[i];
        struct kube_api_error e = {0};
        size_t len = c->body ? strlen(c->body) : 0;
        int r = kube_api_error_parse(c->http_code, c->body, len, &e);
        if (r != 0 || e.code != c->code || strcmp(e.reason, c->reason) != 0 ||
            strcmp(e.message, c->message) != 0)
            fail_msg("case \"%s\": r=%d code=%ld reason=\"%s\" message=\"%s\"", c->name, r, e.code,
                     e.reason ? e.reason : "(null)", e.message ? e.message : "(null)");
        kube_api_error_clear(&e);
    }
}

static void test_parse_body_not_terminated(void **state)
{
    (void)state;
    /* Only len bytes belong to the body; what follows must not be read. */
    char *body = malloc(4);
    assert_non_null(body);
    memcpy(body, "oops", 4);
    struct kube_api_error e = {0};
    assert_int_equal(kube_api_error_parse(500, body, 4, &e), 0);
    assert_string_equal(e.message, "HTTP 500: oops");
    kube_api_error_clear(&e);

    static const char status[] =
        "{\"kind\":\"Status\",\"message\":\"gone\",\"reason\":\"Expired\",\"code\":410}";
    char *copy = malloc(sizeof(status) - 1);
    assert_non_null(copy);
    memcpy(copy, status, sizeof(status) - 1);
    assert_int_equal(kube_api_error_parse(410, copy, sizeof(status) - 1, &e), 0);
    assert_string_equal(e.reason, "Expired");
    assert_string_equal(e.message, "gone");
    kube_api_error_clear(&e);
    free(copy);
    free(body);
}

static int is_valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = *p < 0x80         ? 1
                   : (*p >> 5) == 6  ? 2
                   : (*p >> 4) == 14 ? 3
                   : (*p >> 3) == 30 ? 4
                                     : 0;
        if (n == 0)
            return 0;
        for (size_t i = 1; i < n; i++)
            if ((p[i] & 0xc0) != 0x80)
                return 0;
        p += n;
    }
    return 1;
}

static char *status_with_message(const char *unit, size_t repeat)
{
    size_t ulen = strlen(unit);
    size_t cap = 64 + ulen * repeat;
    char *json = malloc(cap);
    assert_non_null(json);
    size_t off = (size_t)sprintf(json, "{\"kind\":\"Status\",\"code\":500,\"message\":\"");
    for (size_t i = 0; i < repeat; i++, off += ulen)
        memcpy(json + off, unit, ulen);
    strcpy(json + off, "\"}");
    return json;
}

static void test_huge_message_cut(void **state)
{
    (void)state;
    struct kube_api_error e = {0};

    char *json = status_with_message("a", 100000);
    assert_int_equal(kube_api_error_parse(500, json, strlen(json), &e), 0);
    assert_int_equal(strlen(e.message), 1024 + strlen(ELLIPSIS));
    assert_int_equal(strncmp(e.message, "aaaa", 4), 0);
    assert_string_equal(e.message + 1024, ELLIPSIS);
    kube_api_error_clear(&e);
    free(json);

    /* Cut on a character boundary: 3-byte characters do not fit 1024 evenly. */
    json = status_with_message("\xe2\x82\xac", 5000);
    assert_int_equal(kube_api_error_parse(500, json, strlen(json), &e), 0);
    assert_int_equal(strlen(e.message), 1023 + strlen(ELLIPSIS));
    assert_true(is_valid_utf8(e.message));
    kube_api_error_clear(&e);
    free(json);

    /* Exactly at the limit: kept whole. */
    json = status_with_message("b", 1024);
    assert_int_equal(kube_api_error_parse(500, json, strlen(json), &e), 0);
    assert_int_equal(strlen(e.message), 1024);
    kube_api_error_clear(&e);
    free(json);
}

static void test_huge_body_excerpt(void **state)
{
    (void)state;
    size_t len = 1 << 20;
    char *body = malloc(len);
    assert_non_null(body);
    memset(body, 'x', len);
    struct kube_api_error e = {0};
    assert_int_equal(kube_api_error_parse(502, body, len, &e), 0);
    assert_int_equal(strlen(e.message), strlen("HTTP 502: ") + 200 + strlen(ELLIPSIS));
    assert_int_equal(strncmp(e.message, "HTTP 502: xxx", 13), 0);
    kube_api_error_clear(&e);
    free(body);
}

struct truth_case {
    long code;
    const char *reason;
    int conflict;
    int gone;
};

static void test_truth_table(void **state)
{
    (void)state;
    static const struct truth_case cases[] = {
        {409, "Conflict", 1, 0}, {409, "AlreadyExists", 0, 0}, {409, NULL, 1, 0},
        {409, "", 1, 0},         {409, "Unknown", 1, 0},       {500, "Conflict", 1, 0},
        {410, "Expired", 0, 1},  {410, "Gone", 0, 1},          {410, NULL, 0, 1},
        {410, "", 0, 1},         {0, "Expired", 0, 1},         {500, "Expired", 0, 1},
        {410, "NotFound", 0, 0}, {404, "NotFound", 0, 0},      {200, NULL, 0, 0},
        {0, NULL, 0, 0},         {422, "Invalid", 0, 0},       {500, "InternalError", 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kube_api_error e = {.code = cases[i].code, .reason = (char *)cases[i].reason};
        if (kube_api_error_is_conflict(&e) != cases[i].conflict ||
            kube_api_error_is_gone(&e) != cases[i].gone)
            fail_msg("code %ld reason %s: conflict=%d gone=%d", cases[i].code,
                     cases[i].reason ? cases[i].reason : "(null)", kube_api_error_is_conflict(&e),
                     kube_api_error_is_gone(&e));
    }
    assert_false(kube_api_error_is_conflict(NULL));
    assert_false(kube_api_error_is_gone(NULL));
}

static void test_truth_after_parse(void **state)
{
    (void)state;
    struct kube_api_error e = {0};
    assert_int_equal(kube_api_error_parse(409, "", 0, &e), 0);
    assert_true(kube_api_error_is_conflict(&e));
    kube_api_error_clear(&e);

    static const char exists[] = "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\",\"code\":409}";
    assert_int_equal(kube_api_error_parse(409, exists, strlen(exists), &e), 0);
    assert_false(kube_api_error_is_conflict(&e));
    kube_api_error_clear(&e);

    assert_int_equal(kube_api_error_parse(410, "gone", 4, &e), 0);
    assert_true(kube_api_error_is_gone(&e));
    kube_api_error_clear(&e);
}

static void test_default_reasons(void **state)
{
    (void)state;
    static const struct {
        long code;
        const char *reason;
    } cases[] = {
        {400, "BadRequest"},    {401, "Unauthorized"},     {403, "Forbidden"},
        {404, "NotFound"},      {405, "MethodNotAllowed"}, {409, "Conflict"},
        {410, "Gone"},          {422, "Invalid"},          {429, "TooManyRequests"},
        {500, "InternalError"}, {502, "InternalError"},    {503, "ServiceUnavailable"},
        {504, "Timeout"},       {418, "Unknown"},          {0, "Unknown"},
        {-1, "Unknown"},        {200, "Unknown"},          {600, "Unknown"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_string_equal(kube_api_error_default_reason(cases[i].code), cases[i].reason);
}

static void test_from_status_error_event(void **state)
{
    (void)state;
    cJSON *event = cJSON_Parse(
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
        "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: 5 "
        "(77)\",\"reason\":\"Expired\",\"code\":410}}");
    assert_non_null(event);
    struct kube_api_error e = {0};
    assert_int_equal(
        kube_api_error_from_status(cJSON_GetObjectItemCaseSensitive(event, "object"), &e), 0);
    assert_int_equal(e.code, 410);
    assert_string_equal(e.reason, "Expired");
    assert_string_equal(e.message, "too old resource version: 5 (77)");
    assert_true(kube_api_error_is_gone(&e));
    assert_false(kube_api_error_is_conflict(&e));
    kube_api_error_clear(&e);
    cJSON_Delete(event);

    /* An older server's bare 410 without a reason. */
    cJSON *bare = cJSON_Parse("{\"kind\":\"Status\",\"code\":410}");
    assert_int_equal(kube_api_error_from_status(bare, &e), 0);
    assert_int_equal(e.code, 410);
    assert_string_equal(e.reason, "Gone");
    assert_string_equal(e.message, "HTTP 410: Gone");
    assert_true(kube_api_error_is_gone(&e));
    kube_api_error_clear(&e);
    cJSON_Delete(bare);

    /* No code at all: 0, and the reason alone speaks. */
    cJSON *nocode = cJSON_Parse("{\"kind\":\"Status\",\"reason\":\"Expired\"}");
    assert_int_equal(kube_api_error_from_status(nocode, &e), 0);
    assert_int_equal(e.code, 0);
    assert_string_equal(e.message, "Expired");
    assert_true(kube_api_error_is_gone(&e));
    kube_api_error_clear(&e);
    cJSON_Delete(nocode);
}

static void test_from_status_rejects(void **state)
{
    (void)state;
    static const char *const not_status[] = {
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"}}",
        "{\"metadata\":{\"name\":\"x\"}}",
        "{\"kind\":5,\"code\":410}",
        "{\"status\":{\"phase\":\"Running\"}}",
        "[{\"kind\":\"Status\"}]",
        "\"Status\"",
        "410",
    };
    for (size_t i = 0; i < sizeof(not_status) / sizeof(not_status[0]); i++) {
        cJSON *obj = cJSON_Parse(not_status[i]);
        assert_non_null(obj);
        struct kube_api_error e = {.code = 7};
        assert_int_equal(kube_api_error_from_status(obj, &e), -EINVAL);
        /* Untouched on failure. */
        assert_int_equal(e.code, 7);
        assert_null(e.reason);
        assert_null(e.message);
        cJSON_Delete(obj);
    }
    struct kube_api_error e = {0};
    assert_int_equal(kube_api_error_from_status(NULL, &e), -EINVAL);
}

static void test_clear(void **state)
{
    (void)state;
    kube_api_error_clear(NULL);
    struct kube_api_error e = {0};
    kube_api_error_clear(&e);
    assert_int_equal(kube_api_error_parse(404, "x", 1, &e), 0);
    kube_api_error_clear(&e);
    assert_null(e.reason);
    assert_null(e.message);
    assert_int_equal(e.code, 0);
    kube_api_error_clear(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_table),
        cmocka_unit_test(test_parse_body_not_terminated),
        cmocka_unit_test(test_huge_message_cut),
        cmocka_unit_test(test_huge_body_excerpt),
        cmocka_unit_test(test_truth_table),
        cmocka_unit_test(test_truth_after_parse),
        cmocka_unit_test(test_default_reasons),
        cmocka_unit_test(test_from_status_error_event),
        cmocka_unit_test(test_from_status_rejects),
        cmocka_unit_test(test_clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
