/*
 * Event names (controller/events): an Event is named after the workspace
 * (its uid), its reason and the transition it reports, so the same
 * transition decided again after a crash gets the same name and the API
 * server refuses the second POST with AlreadyExists; any other transition,
 * and the same transition of a workspace created again under the same name,
 * gets another.
 */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/events.h"

static const struct event_subject nb = {"hibernator.dev/v1alpha1", "Workspace", "team", "nb",
                                        "0b6f1c9e-1111-4c1a-9d1e-2f7d00000001"};

static void name_of(const struct event_subject *s, const char *reason, const char *occasion,
                    char out[EVENTS_NAME_SIZE])
{
    assert_int_equal(events_name(s, reason, occasion, out, EVENTS_NAME_SIZE), 0);
}

/* A DNS subdomain (RFC 1123), as the API server checks an Event's name. */
static void assert_dns_subdomain(const char *name)
{
    regex_t re;
    assert_int_equal(regcomp(&re,
                             "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
                             REG_EXTENDED | REG_NOSUB),
                     0);
    int match = regexec(&re, name, 0, NULL, 0) == 0;
    regfree(&re);
    if (!match || strlen(name) > 253)
        fail_msg("not a DNS subdomain of at most 253 characters: \"%s\"", name);
}

static void test_same_transition_same_name(void **state)
{
    (void)state;
    char a[EVENTS_NAME_SIZE], b[EVENTS_NAME_SIZE];
    name_of(&nb, "Pausing", "pause-3", a);
    name_of(&nb, "Pausing", "pause-3", b);
    assert_string_equal(a, b);
    /* "<workspace>.<16 hex digits>" */
    assert_int_equal(strlen(a), strlen("nb.") + 16);
    assert_memory_equal(a, "nb.", 3);
    assert_int_equal(strspn(a + 3, "0123456789abcdef"), 16);
    assert_dns_subdomain(a);
}

static void test_other_transitions_other_names(void **state)
{
    (void)state;
    char base[EVENTS_NAME_SIZE], other[EVENTS_NAME_SIZE];
    name_of(&nb, "Pausing", "pause-3", base);
    const struct {
        const char *uid, *reason, *occasion;
    } others[] = {
        {nb.uid, "Pausing", "pause-4"},     /* the next pause */
        {nb.uid, "Paused", "pause-3"},      /* another step of it */
        {nb.uid, "IdleTimeout", "pause-3"}, /* the controller's own pause */
        {"0b6f1c9e-2222-4c1a-9d1e-2f7d00000002", "Pausing", "pause-3"}, /* created again */
        /* the fields are kept apart: moving a character across does not collide */
        {nb.uid, "Pausin", "gpause-3"},
    };
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        struct event_subject s = nb;
        s.uid = others[i].uid;
        name_of(&s, others[i].reason, others[i].occasion, other);
        if (strcmp(base, other) == 0)
            fail_msg("%s/%s/%s has the name of Pausing/pause-3", others[i].uid, others[i].reason,
                     others[i].occasion);
        assert_dns_subdomain(other);
    }
}

/* A workspace's name may be a whole DNS subdomain: it is cut, never at a
 * dash or a dot, so the Event's name stays one. */
static void test_long_name_is_cut(void **state)
{
    (void)state;
    char longname[254];
    memset(longname, 'a', 253);
    longname[253] = '\0';
    longname[236] = '-'; /* the last character kept, were it cut there */
    longname[235] = '.';
    struct event_subject s = nb;
    s.name = longname;
    char out[EVENTS_NAME_SIZE];
    name_of(&s, "Resumed", "resume-1", out);
    assert_true(strlen(out) <= 253);
    assert_dns_subdomain(out);
    assert_memory_equal(out, longname, 235 - 1);
}

static void test_refuses_what_it_cannot_name(void **state)
{
    (void)state;
    char out[EVENTS_NAME_SIZE];
    struct event_subject unnamed = nb;
    unnamed.name = NULL;
    assert_int_equal(events_name(&unnamed, "Pausing", "pause-1", out, sizeof(out)), -EINVAL);
    assert_int_equal(events_name(&nb, NULL, "pause-1", out, sizeof(out)), -EINVAL);
    assert_int_equal(events_name(&nb, "Pausing", NULL, out, sizeof(out)), -EINVAL);
    assert_int_equal(events_name(&nb, "Pausing", "pause-1", out, 100), -EINVAL);
}

/* ---- the Event's body: whole or not at all ---- */

/* cJSON's allocations, the Nth (from 0) failing; fail_at < 0: none fails. */
static long calls, fail_at = -1;

static void *failing_malloc(size_t n)
{
    if (fail_at >= 0 && calls++ == fail_at)
        return NULL;
    return malloc(n);
}

static void fail_from(long n)
{
    calls = 0;
    fail_at = n;
    cJSON_Hooks hooks = {failing_malloc, free};
    cJSON_InitHooks(&hooks);
}

static void fail_none(void)
{
    fail_at = -1;
    cJSON_InitHooks(NULL);
}

/* o.a.b (b NULL: o.a), which must be a string ("(missing)" otherwise, so
 * that a comparison with it fails with a readable message). */
static const char *string_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : "(missing)";
}

/* Every field a posted Event carries. */
static void check_whole(const cJSON *ev, int named)
{
    char name[EVENTS_NAME_SIZE];
    name_of(&nb, "Pausing", "pause-1", name);
    if (named)
        assert_string_equal(string_at(ev, "metadata", "name"), name);
    else
        assert_string_equal(string_at(ev, "metadata", "generateName"), "nb.");
    assert_string_equal(string_at(ev, "metadata", "namespace"), "team");
    assert_string_equal(string_at(ev, "involvedObject", "apiVersion"), nb.api_version);
    assert_string_equal(string_at(ev, "involvedObject", "kind"), "Workspace");
    assert_string_equal(string_at(ev, "involvedObject", "namespace"), "team");
    assert_string_equal(string_at(ev, "involvedObject", "name"), "nb");
    assert_string_equal(string_at(ev, "involvedObject", "uid"), nb.uid);
    assert_string_equal(string_at(ev, "type", NULL), "Normal");
    assert_string_equal(string_at(ev, "reason", NULL), "Pausing");
    assert_string_equal(string_at(ev, "message", NULL), "pausing: idle for 30m");
    assert_string_equal(string_at(ev, "firstTimestamp", NULL), "2026-01-02T03:04:05Z");
    assert_string_equal(string_at(ev, "lastTimestamp", NULL), "2026-01-02T03:04:05Z");
    assert_string_equal(string_at(ev, "eventTime", NULL), "2026-01-02T03:04:05.678000Z");
    assert_string_equal(string_at(ev, "action", NULL), "Pausing");
    assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(ev, "count")));
    assert_string_equal(string_at(ev, "source", "component"), "hibernator");
    assert_string_equal(string_at(ev, "reportingComponent", NULL), "hibernator.dev/controller");
    assert_string_equal(string_at(ev, "reportingInstance", NULL), "hibernator-0");
}

/* The body is built with allocation N failing, N = 0, 1, ... until a run
 * makes no Nth allocation: every run either fails with -ENOMEM and hands
 * out nothing, or hands out the whole Event. */
static void each_failure(const char *occasion)
{
    int failed = 0;
    for (long n = 0; n < 10000; n++) {
        cJSON *ev = NULL;
        fail_from(n);
        int e = events_body(&nb, "Normal", "Pausing", "pausing: idle for 30m", occasion,
                            "hibernator-0", 1767323045678, &ev);
        long made = calls;
        fail_none();
        if (e == 0) {
            check_whole(ev, occasion != NULL);
            cJSON_Delete(ev);
        } else {
            assert_int_equal(e, -ENOMEM);
            assert_null(ev);
            failed++;
        }
        if (made <= n) {
            assert_true(failed > 0);
            return;
        }
    }
    fail(); /* never ran out of allocations to fail */
}

static void test_body_whole_or_nothing(void **state)
{
    (void)state;
    each_failure("pause-1");
    each_failure(NULL);
}

/* A subject without a uid gives an Event without one, as before. */
static void test_body_leaves_out_what_is_missing(void **state)
{
    (void)state;
    struct event_subject s = nb;
    s.uid = NULL;
    cJSON *ev = NULL;
    assert_int_equal(events_body(&s, "Normal", "Pausing", "m", NULL, "i", 0, &ev), 0);
    assert_null(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(ev, "involvedObject"), "uid"));
    assert_string_equal(string_at(ev, "involvedObject", "name"), "nb");
    cJSON_Delete(ev);
    assert_int_equal(events_body(&s, "Normal", NULL, "m", NULL, "i", 0, &ev), -EINVAL);
    assert_int_equal(events_body(NULL, "Normal", "Pausing", "m", NULL, "i", 0, &ev), -EINVAL);
}

/* Which unrecorded Events a transition waits for (posted again on the next
 * pass) and which it goes on without. */
static void test_retriable(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        int status;
        long code;
        const char *reason;
        int retriable;
    } rows[] = {
        {"recorded", 0, 201, NULL, 0},
        {"recorded before (409 AlreadyExists)", -EIO, 409, "AlreadyExists", 0},
        {"the API server away", -ECONNREFUSED, 0, NULL, 1},
        {"no answer in time", -ETIMEDOUT, 0, NULL, 1},
        {"throttled (429)", -EIO, 429, "TooManyRequests", 1},
        {"the API server failing (503)", -EIO, 503, "ServiceUnavailable", 1},
        {"shed by the client's rate limit", -EAGAIN, 0, NULL, 1},
        {"forbidden (a terminating namespace)", -EIO, 403, "Forbidden", 0},
        {"invalid (422)", -EIO, 422, "Invalid", 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct kube_response r = {.status = rows[i].status, .http_code = rows[i].code};
        r.error.reason = (char *)rows[i].reason;
        if (events_retriable(&r) != rows[i].retriable)
            fail_msg("%s: want retriable %d", rows[i].what, rows[i].retriable);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_transition_same_name),
        cmocka_unit_test(test_other_transitions_other_names),
        cmocka_unit_test(test_long_name_is_cut),
        cmocka_unit_test(test_refuses_what_it_cannot_name),
        cmocka_unit_test(test_body_whole_or_nothing),
        cmocka_unit_test(test_body_leaves_out_what_is_missing),
        cmocka_unit_test(test_retriable),
    };
    return cmocka_run_group_tests_name("event names", tests, NULL, NULL);
}
