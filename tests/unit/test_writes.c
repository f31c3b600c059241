/* writes: the bodies of the controller's own writes to a Workspace are
 * whole or not there. Each builder runs with an allocator whose Nth call
 * alone fails, for every N until a run makes fewer calls: every run either
 * fails with -ENOMEM or returns a body that carries the resourceVersion and
 * every finalizer it must keep (a dropped add followed by allocations that
 * work is what would lose them). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/writes.h"
#include "workspace/pod.h"

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

/* Runs build with allocation N failing, N = 0, 1, ... until a run makes
 * no Nth allocation; check() looks at every body returned. Returns how many
 * runs failed. */
static int each_failure(int (*build)(void *arg, char **ret_text), void *arg,
                        void (*check)(const char *text, void *arg))
{
    int failed = 0;
    for (long n = 0; n < 10000; n++) {
        char *text = NULL;
        fail_from(n);
        int e = build(arg, &text);
        long made = calls;
        fail_none();
        if (e == 0) {
            check(text, arg);
            free(text);
        } else {
            assert_int_equal(e, -ENOMEM);
            assert_null(text);
            failed++;
        }
        if (made <= n)
            return failed;
    }
    fail(); /* never ran out of allocations to fail */
    return failed;
}

/* o.a.b, which must be a string ("(missing)" otherwise, so that a
 * comparison with it fails with a readable message). */
static const char *string_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, a), b);
    return cJSON_IsString(v) ? v->valuestring : "(missing)";
}

/* ---- status ---- */

static int build_status(void *arg, char **ret_text)
{
    cJSON *obj = NULL;
    int e = writes_status_object("ws", "ns", "42", arg, &obj);
    if (e < 0)
        return e;
    *ret_text = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    return *ret_text ? 0 : -ENOMEM;
}

static void check_status(const char *text, void *arg)
{
    (void)arg;
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    assert_string_equal(string_at(o, "metadata", "resourceVersion"), "42");
    assert_string_equal(string_at(o, "metadata", "name"), "ws");
    assert_string_equal(string_at(o, "metadata", "namespace"), "ns");
    assert_non_null(cJSON_GetObjectItemCaseSensitive(o, "status"));
    cJSON_Delete(o);
}

static void test_status_whole_or_nothing(void **state)
{
    (void)state;
    struct workspace_status st = {.state = WS_STATE_RUNNING};
    assert_true(each_failure(build_status, &st, check_status) > 0);
}

static void test_status_needs_resource_version(void **state)
{
    (void)state;
    struct workspace_status st = {0};
    cJSON *obj = NULL;
    assert_int_equal(writes_status_object("ws", "ns", NULL, &st, &obj), -EINVAL);
    assert_int_equal(writes_status_object("ws", "ns", "", &st, &obj), -EINVAL);
    assert_null(obj);
}

/* ---- finalizers ---- */

struct finalizer_case {
    cJSON *meta;
    int add;
    const char *want; /* the finalizers the patch must set, comma-separated */
};

static int build_finalizer(void *arg, char **ret_text)
{
    struct finalizer_case *c = arg;
    return writes_finalizer_patch(c->meta, c->add, ret_text);
}

static void check_finalizer(const char *text, void *arg)
{
    struct finalizer_case *c = arg;
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    assert_string_equal(string_at(o, "metadata", "resourceVersion"), "7");
    char got[256] = "";
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(o, "metadata"), "finalizers"))
    {
        if (got[0])
            strcat(got, ",");
        strcat(got, f->valuestring);
    }
    assert_string_equal(got, c->want);
    cJSON_Delete(o);
}

static void test_finalizer_keeps_the_others(void **state)
{
    (void)state;
    cJSON *meta = cJSON_Parse("{\"resourceVersion\":\"7\",\"finalizers\":"
                              "[\"a.example/x\",\"hibernator.dev/cleanup\",\"b.example/y\"]}");
    assert_non_null(meta);
    struct finalizer_case remove = {meta, 0, "a.example/x,b.example/y"};
    assert_true(each_failure(build_finalizer, &remove, check_finalizer) > 0);
    struct finalizer_case keep = {meta, 1, "a.example/x,hibernator.dev/cleanup,b.example/y"};
    assert_true(each_failure(build_finalizer, &keep, check_finalizer) > 0);
    cJSON_Delete(meta);

    meta = cJSON_Parse("{\"resourceVersion\":\"7\",\"finalizers\":[\"a.example/x\"]}");
    struct finalizer_case add = {meta, 1, "a.example/x,hibernator.dev/cleanup"};
    assert_true(each_failure(build_finalizer, &add, check_finalizer) > 0);
    cJSON_Delete(meta);
}

static void test_finalizer_needs_resource_version(void **state)
{
    (void)state;
    cJSON *meta = cJSON_Parse("{\"finalizers\":[\"a.example/x\"]}");
    char *text = NULL;
    assert_int_equal(writes_finalizer_patch(meta, 1, &text), -EINVAL);
    assert_null(text);
    cJSON_Delete(meta);
}

/* ---- automatic pause ---- */

/* The cause the next patches are built with. */
static const char *pause_cause;

static int build_auto_pause(void *arg, char **ret_text)
{
    return writes_auto_pause_patch("9", 1700000000123, arg, pause_cause, ret_text);
}

static void check_auto_pause(const char *text, void *arg)
{
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    assert_string_equal(string_at(o, "metadata", "resourceVersion"), "9");
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(o, "metadata"), "annotations");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(ann, AUTO_PAUSE_REASON_ANNOTATION);
    assert_true(cJSON_IsString(reason));
    assert_string_equal(reason->valuestring, arg ? (const char *)arg : "idle");
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(ann, AUTO_PAUSED_AT_ANNOTATION);
    assert_true(cJSON_IsString(at));
    assert_string_equal(at->valuestring, "2023-11-14T22:13:20.123000Z");
    /* An eviction's cause is written; any other pause removes an older one. */
    const cJSON *cause = cJSON_GetObjectItemCaseSensitive(ann, AUTO_PAUSE_CAUSE_ANNOTATION);
    if (workspace_auto_pause_cause(pause_cause))
        assert_string_equal(cJSON_GetStringValue(cause), pause_cause);
    else
        assert_true(cJSON_IsNull(cause));
    assert_true(cJSON_IsTrue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "spec"), "paused")));
    cJSON_Delete(o);
}

static void test_auto_pause_whole_or_nothing(void **state)
{
    (void)state;
    assert_true(each_failure(build_auto_pause, "idle for 30m", check_auto_pause) > 0);
    assert_true(each_failure(build_auto_pause, NULL, check_auto_pause) > 0);
    pause_cause = "Preempted";
    assert_true(each_failure(build_auto_pause, "preempted by Kueue", check_auto_pause) > 0);
    pause_cause = "IdleTimeout"; /* not an eviction: removed */
    assert_true(each_failure(build_auto_pause, "idle for 30m", check_auto_pause) > 0);
    pause_cause = NULL;
    char *text = NULL;
    assert_int_equal(writes_auto_pause_patch(NULL, 0, NULL, NULL, &text), -EINVAL);
    assert_null(text);
}

/* ---- a pod's priority ---- */

static void test_priority_label_patch(void **state)
{
    (void)state;
    char *text = NULL;
    assert_int_equal(writes_priority_label_patch("interactive", "uid-1", &text), 0);
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    assert_string_equal(string_at(o, "metadata", "uid"), "uid-1");
    const cJSON *labels =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "labels");
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, QUEUE_PRIORITY_LABEL)),
        "interactive");
    /* nothing else: a merge patch of the label alone */
    assert_int_equal(cJSON_GetArraySize(o), 1);
    assert_int_equal(cJSON_GetArraySize(labels), 1);
    cJSON_Delete(o);
    free(text);
    text = NULL;
    assert_int_equal(writes_priority_label_patch("interactive", NULL, &text), 0);
    assert_null(strstr(text, "uid"));
    free(text);
    text = NULL;
    assert_int_equal(writes_priority_label_patch("", "u", &text), -EINVAL);
    assert_null(text);
}

/* ---- pre-warm ---- */

static int build_auto_resume(void *arg, char **ret_text)
{
    (void)arg;
    return writes_auto_resume_patch("9", 1700000000123, 1700000900000, ret_text);
}

static void check_auto_resume(const char *text, void *arg)
{
    (void)arg;
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    assert_string_equal(string_at(o, "metadata", "resourceVersion"), "9");
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(o, "metadata"), "annotations");
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(ann, PREWARMED_AT_ANNOTATION);
    assert_true(cJSON_IsString(at));
    assert_string_equal(at->valuestring, "2023-11-14T22:13:20.123000Z");
    const cJSON *owner = cJSON_GetObjectItemCaseSensitive(ann, PREWARM_FOR_ANNOTATION);
    assert_true(cJSON_IsString(owner));
    assert_string_equal(owner->valuestring, "2023-11-14T22:28:20.000000Z");
    assert_true(cJSON_IsFalse(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "spec"), "paused")));
    cJSON_Delete(o);
}

static void test_auto_resume_whole_or_nothing(void **state)
{
    (void)state;
    assert_true(each_failure(build_auto_resume, NULL, check_auto_resume) > 0);
    char *text = NULL;
    assert_int_equal(writes_auto_resume_patch("", 0, 0, &text), -EINVAL);
    assert_null(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_whole_or_nothing),
        cmocka_unit_test(test_status_needs_resource_version),
        cmocka_unit_test(test_finalizer_keeps_the_others),
        cmocka_unit_test(test_finalizer_needs_resource_version),
        cmocka_unit_test(test_auto_pause_whole_or_nothing),
        cmocka_unit_test(test_priority_label_patch),
        cmocka_unit_test(test_auto_resume_whole_or_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
