#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/strpool.h"
#include "util/timefmt.h"
#include "workspace/workspace.h"

/* 2027-01-01T00:00:00Z */
#define T0 INT64_C(1798761600000)

static const char *const full_ws =
    "{\"apiVersion\":\"hibernator.dev/v1alpha1\",\"kind\":\"Workspace\","
    "\"metadata\":{\"name\":\"alice-nb\",\"namespace\":\"team-a\",\"uid\":\"u-1\","
    "\"resourceVersion\":\"42\",\"generation\":3,"
    "\"finalizers\":[\"other.example/x\",\"hibernator.dev/cleanup\"],"
    "\"deletionTimestamp\":\"2027-01-01T00:00:05Z\"},"
    "\"spec\":{\"className\":\"gpu-t4\",\"image\":\"quay.io/jupyter/scipy-notebook:1\","
    "\"paused\":true,\"home\":{\"size\":\"20Gi\"},"
    "\"env\":[{\"name\":\"PROJECT\",\"value\":\"llm-eval\"},{\"name\":\"EMPTY\"}]},"
    "\"status\":{\"observedGeneration\":2,\"state\":\"Paused\",\"podName\":\"alice-nb-2\","
    "\"podGeneration\":2,\"accounting\":{\"pauses\":1}}}";

static struct workspace *decode(const char *json, int want_rc, char **ret_err)
{
    cJSON *obj = cJSON_Parse(json);
    assert_non_null(obj);
    struct workspace *ws = NULL;
    char *err = NULL;
    int r = workspace_decode(obj, &ws, &err);
    cJSON_Delete(obj);
    if (r != want_rc)
        fail_msg("decode: rc %d (%s), want %d", r, err ? err : "", want_rc);
    if (ret_err)
        *ret_err = err;
    else
        free(err);
    return ws;
}

/* The lenient decoder keeps what it can read and names the rest; the
 * strict one refuses the same object as before. */
static void test_decode_lenient(void **state)
{
    (void)state;
    const char *json =
        "{\"metadata\":{\"namespace\":\"n\",\"deletionTimestamp\":\"soon\"},"
        "\"spec\":{\"className\":\"c\",\"image\":\"img\",\"paused\":1,\"keepAliveUntil\":\"x\","
        "\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"value\":\"2\"},{\"name\":\"B\"}]},"
        "\"status\":{\"state\":\"Running\",\"podName\":7,\"stateSince\":\"later\","
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"Maybe\"},{\"type\":\"Ready\"},{}],"
        "\"history\":[3,{\"pausedAt\":\"2027-01-01T00:00:00Z\",\"snapshotSeconds\":4}],"
        "\"snapshot\":\"ready\"}}";
    cJSON *obj = cJSON_Parse(json);
    assert_non_null(obj);
    struct workspace *ws = NULL;
    char *err = NULL;
    assert_int_equal(workspace_decode(obj, &ws, &err), -EINVAL);
    assert_string_equal(err, "metadata.name: required");
    free(err);

    assert_int_equal(workspace_decode_lenient(obj, &ws), 0);
    cJSON_Delete(obj);
    assert_true(ws->unreadable);
    assert_null(ws->name);
    assert_string_equal(ws->ns, "n");
    assert_int_equal(ws->deletion_ms, 0);
    /* The spec's readable fields are kept; spec_error is what decide() reports. */
    assert_string_equal(ws->class_name, "c");
    assert_string_equal(ws->image, "img");
    assert_false(ws->paused);
    assert_string_equal(ws->spec_error, "spec.paused: must be true or false");
    assert_int_equal(ws->n_env, 2);
    assert_string_equal(ws->env[1].name, "B");
    assert_int_equal(ws->status.state, WS_STATE_RUNNING);
    assert_null(ws->status.pod_name);
    assert_int_equal(ws->status.n_conditions, 1);
    assert_int_equal(ws->status.conditions[0].status, COND_UNKNOWN);
    assert_int_equal(ws->status.n_history, 1);
    /* A figure without its time is not read (snapshotReadyAt is missing). */
    assert_true(ws->status.history[0].pause.snapshot_seconds == 0);
    static const char *const want[] = {
        "metadata.name: required",
        "metadata.deletionTimestamp: not an RFC 3339 time",
        "spec.paused: must be true or false",
        "spec.keepAliveUntil: \"x\" is not an RFC 3339 time",
        "spec.env[1].name: required",
        "status.podName: not a string",
        "status.conditions[0].status: not True, False or Unknown",
        "status.conditions[1]: skipped: a repeated type",
        "status.conditions[2]: skipped: no type",
        "status.stateSince: not an RFC 3339 time",
        "status.snapshot: not an object",
        "status.history[0]: skipped: not an object",
    };
    assert_int_equal(ws->n_unread, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < ws->n_unread; i++)
        assert_string_equal(ws->unread[i], want[i]);
    workspace_free(ws);

    /* A readable object: nothing noted, the same as the strict decode. */
    obj = cJSON_Parse(full_ws);
    assert_int_equal(workspace_decode_lenient(obj, &ws), 0);
    cJSON_Delete(obj);
    assert_int_equal(ws->n_unread, 0);
    assert_false(ws->unreadable);
    assert_null(ws->spec_error);
    assert_true(ws->paused);
    workspace_free(ws);
}

static void test_decode_full(void **state)
{
    (void)state;
    struct workspace *ws = decode(full_ws, 0, NULL);
    assert_string_equal(ws->name, "alice-nb");
    assert_null(ws->spec_error);
    assert_string_equal(ws->ns, "team-a");
    assert_string_equal(ws->uid, "u-1");
    assert_string_equal(ws->resource_version, "42");
    assert_int_equal(ws->generation, 3);
    assert_int_equal(ws->deletion_ms, T0 + 5000);
    assert_true(ws->has_finalizer);
    assert_string_equal(ws->class_name, "gpu-t4");
    assert_string_equal(ws->image, "quay.io/jupyter/scipy-notebook:1");
    assert_true(ws->paused);
    assert_string_equal(ws->home_size, "20Gi");
    assert_int_equal(ws->n_env, 2);
    assert_string_equal(ws->env[0].name, "PROJECT");
    assert_string_equal(ws->env[0].value, "llm-eval");
    assert_string_equal(ws->env[1].name, "EMPTY");
    assert_string_equal(ws->env[1].value, "");
    assert_int_equal(ws->status.observed_generation, 2);
    assert_int_equal(ws->status.state, WS_STATE_PAUSED);
    assert_string_equal(ws->status.pod_name, "alice-nb-2");
    assert_int_equal(ws->status.pod_generation, 2);
    assert_int_equal(ws->status.pauses, 1);
    workspace_free(ws);
}

static void test_decode_defaults(void **state)
{
    (void)state;
    struct workspace *ws = decode("{\"metadata\":{\"name\":\"w\",\"namespace\":\"n\"},"
                                  "\"spec\":{\"className\":\"c\",\"image\":\"\",\"home\":{}}}",
                                  0, NULL);
    assert_int_equal(ws->deletion_ms, 0);
    assert_false(ws->has_finalizer);
    assert_false(ws->paused);
    assert_null(ws->image);
    assert_null(ws->home_size);
    assert_int_equal(ws->n_env, 0);
    assert_int_equal(ws->status.state, WS_STATE_NONE);
    assert_null(ws->status.pod_name);
    workspace_free(ws);

    /* home.size may be a number (int-or-string quantity) */
    ws = decode("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"className\":\"c\","
                "\"home\":{\"size\":1073741824}}}",
                0, NULL);
    assert_string_equal(ws->home_size, "1073741824");
    workspace_free(ws);
    /* the largest number read exactly */
    ws = decode("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"className\":\"c\","
                "\"home\":{\"size\":9007199254740991}}}",
                0, NULL);
    assert_string_equal(ws->home_size, "9007199254740991");
    assert_null(ws->spec_error);
    workspace_free(ws);
    workspace_free(NULL);
}

/* The object itself cannot be read: an error. */
static void test_decode_errors(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        const char *err_prefix;
    } cases[] = {
        {"[]", "object:"},
        {"{\"spec\":{\"className\":\"c\"}}", "metadata: required"},
        {"{\"metadata\":{},\"spec\":{\"className\":\"c\"}}", "metadata.name: required"},
        {"{\"metadata\":{\"name\":\"w\",\"deletionTimestamp\":\"yesterday\"},"
         "\"spec\":{\"className\":\"c\"}}",
         "metadata.deletionTimestamp:"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *err = NULL;
        struct workspace *ws = decode(cases[i].json, -EINVAL, &err);
        assert_null(ws);
        if (!err || strncmp(err, cases[i].err_prefix, strlen(cases[i].err_prefix)) != 0)
            fail_msg("case %zu: error \"%s\", want prefix \"%s\"", i, err ? err : "(null)",
                     cases[i].err_prefix);
        free(err);
    }
}

/* Decodes json, which must decode with its spec refused; checks the error
 * and that nothing of the spec but the class name is kept. */
static void expect_spec_error(const char *json, const char *err_prefix, const char *class_name)
{
    struct workspace *ws = decode(json, 0, NULL);
    assert_non_null(ws);
    if (!ws->spec_error || strncmp(ws->spec_error, err_prefix, strlen(err_prefix)) != 0)
        fail_msg("%s: spec error \"%s\", want prefix \"%s\"", json,
                 ws->spec_error ? ws->spec_error : "(null)", err_prefix);
    assert_string_equal(ws->name, "w");
    if (class_name)
        assert_string_equal(ws->class_name, class_name);
    else
        assert_null(ws->class_name);
    assert_null(ws->image);
    assert_null(ws->home_size);
    assert_int_equal(ws->n_env, 0);
    assert_false(ws->paused);
    assert_int_equal(ws->idle_after_ms, 0);
    assert_int_equal(ws->keep_alive_until_ms, 0);
    /* The status is still read: the controller writes on top of it. */
    assert_int_equal(ws->status.pauses, 4);
    workspace_free(ws);
}

/* A spec that cannot be read: the workspace still decodes, with the spec
 * error naming the field, so it can be reported on the object. */
static void test_decode_spec_errors(void **state)
{
    (void)state;
    static const struct {
        const char *spec;
        const char *err_prefix;
        const char *class_name;
    } cases[] = {
        {"{}", "spec.className: required", NULL},
        {"{\"className\":\"c\",\"image\":3}", "spec.image: must be a string", "c"},
        {"{\"className\":\"c\",\"paused\":\"yes\"}", "spec.paused:", "c"},
        {"{\"className\":\"c\",\"paused\":true,\"home\":[]}", "spec.home: must be an object", "c"},
        {"{\"className\":\"c\",\"home\":{\"size\":{}}}", "spec.home.size:", "c"},
        /* Past 2^53 the number read may not be the one sent. */
        {"{\"className\":\"c\",\"home\":{\"size\":9007199254740993}}",
         "spec.home.size: the number is larger than the controller can carry exactly (at most "
         "9007199254740991)",
         "c"},
        {"{\"className\":\"c\",\"env\":{}}", "spec.env: must be a list", "c"},
        {"{\"className\":\"c\",\"env\":[{\"name\":\"A\"},{\"value\":\"x\"}]}",
         "spec.env[1].name: required", "c"},
        {"{\"className\":\"c\",\"env\":[{\"name\":\"A\",\"value\":1}]}",
         "spec.env[0].value: must be a string", "c"},
        {"{\"className\":\"c\",\"image\":\"x\",\"idle\":{\"after\":\"99999999999999999999h\"}}",
         "spec.idle.after: \"99999999999999999999h\" is not a duration", "c"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[512];
        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"w\"},\"spec\":%s,"
                 "\"status\":{\"accounting\":{\"pauses\":4}}}",
                 cases[i].spec);
        expect_spec_error(json, cases[i].err_prefix, cases[i].class_name);
    }
    expect_spec_error("{\"metadata\":{\"name\":\"w\"},\"status\":{\"accounting\":{\"pauses\":4}}}",
                      "spec: required", NULL);

    /* More than 32 env entries */
    cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"className\":\"c\"}}");
    cJSON *env = cJSON_AddArrayToObject(cJSON_GetObjectItem(obj, "spec"), "env");
    for (int i = 0; i < 33; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", "X");
        cJSON_AddItemToArray(env, e);
    }
    struct workspace *ws = NULL;
    char *err = NULL;
    assert_int_equal(workspace_decode(obj, &ws, &err), 0);
    assert_null(err);
    assert_string_equal(ws->spec_error, "spec.env: at most 32 entries");
    assert_int_equal(ws->n_env, 0);
    workspace_free(ws);
    cJSON_Delete(obj);
}

/* A cache's workspaces share their repeated strings: the same pointer for
 * the same text, the same status when encoded, and every hold given back
 * when they are freed. */
static void test_shared_strings(void **state)
{
    (void)state;
    static const char *const json =
        "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"team-a\",\"uid\":\"%s\"},"
        "\"spec\":{\"className\":\"gpu-t4\",\"paused\":true},"
        "\"status\":{\"state\":\"Paused\",\"message\":\"the workspace is paused\","
        "\"homeClaimName\":\"%s-home\",\"conditions\":[{\"type\":\"Ready\","
        "\"status\":\"False\",\"reason\":\"Paused\",\"message\":\"the workspace is "
        "paused\",\"lastTransitionTime\":\"2027-01-01T00:00:00Z\"}],"
        "\"lastPause\":{\"reason\":\"User\",\"nodeName\":\"gpu-node-1\","
        "\"message\":\"by %s\"}}}";
    struct strpool *pool = strpool_new();
    assert_non_null(pool);
    struct workspace *ws[2];
    char *before[2];
    for (int i = 0; i < 2; i++) {
        char text[1024], name[8];
        snprintf(name, sizeof(name), "w%d", i);
        snprintf(text, sizeof(text), json, name, name, name, name);
        ws[i] = decode(text, 0, NULL);
        cJSON *st = workspace_status_to_json(&ws[i]->status);
        before[i] = cJSON_PrintUnformatted(st);
        cJSON_Delete(st);
        assert_int_equal(workspace_share_strings(ws[i], pool), 0);
        st = workspace_status_to_json(&ws[i]->status);
        char *after = cJSON_PrintUnformatted(st);
        cJSON_Delete(st);
        assert_string_equal(after, before[i]);
        free(after);
        free(before[i]);
    }
    assert_ptr_equal(ws[0]->ns, ws[1]->ns);
    assert_ptr_equal(ws[0]->class_name, ws[1]->class_name);
    assert_ptr_equal(ws[0]->status.message, ws[1]->status.message);
    assert_ptr_equal(ws[0]->status.conditions[0].message, ws[0]->status.message);
    assert_ptr_equal(ws[0]->status.conditions[0].reason, ws[1]->status.conditions[0].reason);
    assert_ptr_equal(ws[0]->status.last_pause->node_name, ws[1]->status.last_pause->node_name);
    /* Not shared: names, the claim, a pause's message with its figures. */
    assert_ptr_not_equal(ws[0]->status.home_claim_name, ws[1]->status.home_claim_name);
    assert_string_equal(ws[1]->status.last_pause->message, "by w1");
    assert_string_equal(ws[1]->name, "w1");
    /* team-a, gpu-t4, the message, Ready, Paused, User, gpu-node-1 */
    assert_int_equal(strpool_len(pool), 7);
    workspace_free(ws[0]);
    assert_int_equal(strpool_len(pool), 7);
    workspace_free(ws[1]);
    assert_int_equal(strpool_len(pool), 0);
    strpool_let_go(pool);
}

static void test_state_names(void **state)
{
    (void)state;
    for (int s = WS_STATE_PENDING; s <= WS_STATE_FAILED; s++) {
        const char *name = workspace_state_name((enum workspace_state)s);
        assert_true(name[0] != '\0');
        assert_int_equal(workspace_state_from_name(name), s);
    }
    assert_string_equal(workspace_state_name(WS_STATE_WAITING_FOR_CAPACITY), "WaitingForCapacity");
    assert_string_equal(workspace_state_name(WS_STATE_NONE), "");
    assert_int_equal(workspace_state_from_name("Sleeping"), WS_STATE_NONE);
    assert_int_equal(workspace_state_from_name(NULL), WS_STATE_NONE);
}

static void set_cond(struct workspace_status *s, const char *type, enum condition_status st,
                     const char *reason, const char *msg, int64_t at)
{
    assert_int_equal(workspace_status_set_condition(s, type, st, reason, msg, 7, at), 0);
}

/* A status with every field set; times in whole seconds. */
static void full_status(struct workspace_status *s)
{
    *s = (struct workspace_status){
        .observed_generation = 7,
        .state = WS_STATE_RUNNING,
        .message = strdup("pod alice-nb-2 is ready on gpu-node-1"),
        .pod_name = strdup("alice-nb-2"),
        .pod_generation = 2,
        .node_name = strdup("gpu-node-1"),
        .home_claim_name = strdup("alice-nb-home"),
        .accelerator_resource = strdup("nvidia.com/gpu"),
        .accelerator_count = 1,
        .accelerator_product = strdup("Tesla-T4"),
        .waiting_for_capacity_since_ms = T0 + 3602000,
        .pauses = 3,
        .resumes = 2,
        .accelerator_seconds_released = 86400.25,
    };
    assert_int_equal(workspace_status_own(s), 0);
    *s->last_pause = (struct workspace_pause_timeline){.requested_ms = T0 + 1000,
                                                       .pod_deleted_ms = T0 + 2000,
                                                       .accelerator_released_ms = T0 + 65000};
    *s->last_resume = (struct workspace_resume_timeline){
        T0 + 3600000, T0 + 3601000, T0 + 3605000, T0 + 3612000, 12.4, strdup("FromCheckpoint"), 0};
    /* Set out of order on purpose: the encoding orders them. */
    set_cond(s, "Restored", COND_TRUE, "FromCheckpoint", "pod starts from the checkpoint",
             T0 + 3601000);
    set_cond(s, "Zeta", COND_UNKNOWN, "Other", "", T0);
    set_cond(s, "Ready", COND_TRUE, "PodReady", "ready", T0 + 3612000);
    set_cond(s, "Alpha", COND_FALSE, "Other", "x", T0);
    set_cond(s, "CapacityAvailable", COND_TRUE, "Scheduled", "scheduled", T0 + 3605000);
    set_cond(s, "Valid", COND_TRUE, "Accepted", "ok", T0);
}

static void test_status_round_trip(void **state)
{
    (void)state;
    struct workspace_status s;
    full_status(&s);
    cJSON *st = workspace_status_to_json(&s);
    assert_non_null(st);

    /* Spot checks of the encoding. */
    assert_string_equal(cJSON_GetObjectItem(st, "state")->valuestring, "Running");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(st, "lastPause"), "acceleratorReleasedAt")
            ->valuestring,
        "2027-01-01T00:01:05Z");
    assert_true(
        cJSON_GetObjectItem(cJSON_GetObjectItem(st, "lastResume"), "secondsToReady")->valuedouble ==
        12.4);
    static const char *const order[] = {"Valid",    "Ready", "CapacityAvailable",
                                        "Restored", "Alpha", "Zeta"};
    cJSON *conds = cJSON_GetObjectItem(st, "conditions");
    assert_int_equal(cJSON_GetArraySize(conds), 6);
    for (int i = 0; i < 6; i++) {
        cJSON *c = cJSON_GetArrayItem(conds, i);
        assert_string_equal(cJSON_GetObjectItem(c, "type")->valuestring, order[i]);
        /* metav1.Condition requires these, even when empty */
        assert_non_null(cJSON_GetObjectItem(c, "reason"));
        assert_non_null(cJSON_GetObjectItem(c, "message"));
        assert_int_equal((int)cJSON_GetObjectItem(c, "observedGeneration")->valuedouble, 7);
    }
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(conds, 5), "status")->valuestring,
                        "Unknown");

    /* decode(encode(s)) == s, through a whole object as the API returns it */
    cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"alice-nb\"},"
                             "\"spec\":{\"className\":\"gpu-t4\"}}");
    cJSON_AddItemToObject(obj, "status", st);
    struct workspace *ws = NULL;
    assert_int_equal(workspace_decode(obj, &ws, NULL), 0);
    assert_true(workspace_status_equal(&ws->status, &s));
    assert_int_equal(ws->status.last_resume->ready_ms, T0 + 3612000);
    assert_true(ws->status.accelerator_seconds_released == 86400.25);
    assert_string_equal(ws->status.last_resume->restored_from, "FromCheckpoint");
    const struct condition *c = workspace_status_condition(&ws->status, "CapacityAvailable");
    assert_non_null(c);
    assert_int_equal(c->status, COND_TRUE);
    assert_int_equal(c->last_transition_ms, T0 + 3605000);
    assert_int_equal(c->observed_generation, 7);
    workspace_free(ws);
    cJSON_Delete(obj);
    workspace_status_clear(&s);
}

static void test_status_omits_unset(void **state)
{
    (void)state;
    struct workspace_status s;
    workspace_status_init(&s);
    assert_int_equal(workspace_status_own(&s), 0);
    cJSON *j = workspace_status_to_json(&s);
    char *text = cJSON_PrintUnformatted(j);
    assert_string_equal(text, "{}");
    cJSON_free(text);
    cJSON_Delete(j);

    s.pauses = 1;
    s.message = strdup("");
    j = workspace_status_to_json(&s);
    text = cJSON_PrintUnformatted(j);
    assert_string_equal(text, "{\"accounting\":{\"pauses\":1}}");
    cJSON_free(text);
    cJSON_Delete(j);
    workspace_status_clear(&s);
}

static void test_status_lenient_decode(void **state)
{
    (void)state;
    struct workspace *ws =
        decode("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"className\":\"c\"},"
               "\"status\":{\"state\":\"Sleeping\",\"podName\":7,\"podGeneration\":1.5,"
               "\"waitingForCapacitySince\":\"not a time\",\"lastPause\":[],"
               "\"conditions\":[{\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"True\"},"
               "{\"type\":\"Ready\",\"status\":\"False\"},7]}}",
               0, NULL);
    assert_int_equal(ws->status.state, WS_STATE_NONE);
    assert_null(ws->status.pod_name);
    assert_int_equal(ws->status.pod_generation, 0);
    assert_int_equal(ws->status.waiting_for_capacity_since_ms, 0);
    /* untyped conditions and duplicates are dropped */
    assert_int_equal(ws->status.n_conditions, 1);
    assert_int_equal(ws->status.conditions[0].status, COND_TRUE);
    workspace_free(ws);
}

static void test_status_equal_and_copy(void **state)
{
    (void)state;
    struct workspace_status a, b;
    full_status(&a);
    assert_int_equal(workspace_status_copy(&a, &b), 0);
    assert_true(workspace_status_equal(&a, &b));

    /* independent: changing the copy leaves the original */
    free(b.pod_name);
    b.pod_name = strdup("alice-nb-3");
    assert_false(workspace_status_equal(&a, &b));
    assert_string_equal(a.pod_name, "alice-nb-2");
    workspace_status_clear(&b);

    /* doubles compare as written: a thousandth of a second counts, a
     * difference beyond the 15 significant digits cJSON writes does not */
    assert_int_equal(workspace_status_copy(&a, &b), 0);
    b.accelerator_seconds_released += 0.001;
    assert_false(workspace_status_equal(&a, &b));
    b.last_resume->seconds_to_ready = 12.4;
    b.accelerator_seconds_released = nextafter(a.accelerator_seconds_released, 1e9);
    assert_true(workspace_status_equal(&a, &b));
    workspace_status_clear(&b);

    /* a condition's message */
    assert_int_equal(workspace_status_copy(&a, &b), 0);
    set_cond(&b, "Ready", COND_TRUE, "PodReady", "ready!", 0);
    assert_false(workspace_status_equal(&a, &b));
    workspace_status_clear(&b);

    /* the order conditions were set in does not matter */
    struct workspace_status x = {0}, y = {0};
    set_cond(&x, "Ready", COND_TRUE, "R", "m", T0);
    set_cond(&x, "Valid", COND_TRUE, "V", "m", T0);
    set_cond(&y, "Valid", COND_TRUE, "V", "m", T0);
    set_cond(&y, "Ready", COND_TRUE, "R", "m", T0);
    assert_true(workspace_status_equal(&x, &y));
    workspace_status_clear(&x);
    workspace_status_clear(&y);

    /* sub-second differences do not show in the encoding */
    assert_int_equal(workspace_status_copy(&a, &b), 0);
    b.last_pause->requested_ms += 500;
    assert_true(workspace_status_equal(&a, &b));
    workspace_status_clear(&b);

    workspace_status_clear(&a);
    workspace_status_clear(NULL);
}

static void test_set_condition(void **state)
{
    (void)state;
    struct workspace_status s;
    workspace_status_init(&s);
    assert_int_equal(workspace_status_own(&s), 0);
    assert_int_equal(
        workspace_status_set_condition(&s, "Ready", COND_FALSE, "PodPending", "waiting", 1, T0), 0);
    const struct condition *c = workspace_status_condition(&s, "Ready");
    assert_non_null(c);
    assert_int_equal(c->last_transition_ms, T0);
    assert_int_equal(c->observed_generation, 1);

    /* same status, new reason, message and generation: the time stays */
    assert_int_equal(workspace_status_set_condition(&s, "Ready", COND_FALSE, "PodStarting",
                                                    "starting", 2, T0 + 5000),
                     0);
    c = workspace_status_condition(&s, "Ready");
    assert_int_equal(c->last_transition_ms, T0);
    assert_string_equal(c->reason, "PodStarting");
    assert_string_equal(c->message, "starting");
    assert_int_equal(c->observed_generation, 2);

    /* status changes: the time moves */
    assert_int_equal(
        workspace_status_set_condition(&s, "Ready", COND_TRUE, "PodReady", "ready", 2, T0 + 9000),
        0);
    c = workspace_status_condition(&s, "Ready");
    assert_int_equal(c->last_transition_ms, T0 + 9000);
    assert_int_equal(s.n_conditions, 1);

    assert_int_equal(
        workspace_status_set_condition(&s, "Valid", COND_TRUE, "Accepted", "", 2, T0 + 9000), 0);
    assert_int_equal(s.n_conditions, 2);
    assert_int_equal(workspace_status_remove_condition(&s, "Ready"), 1);
    assert_int_equal(workspace_status_remove_condition(&s, "Ready"), 0);
    assert_null(workspace_status_condition(&s, "Ready"));
    assert_non_null(workspace_status_condition(&s, "Valid"));
    assert_int_equal(s.n_conditions, 1);
    workspace_status_clear(&s);
}

/* ---- the GPU-hours ledger: lastPause, accounting, history ---- */

/* Every field of a pause's ledger set, in whole seconds from base. */
static void set_pause(struct workspace_pause_timeline *t, int64_t base, const char *taker)
{
    workspace_pause_timeline_clear(t);
    *t = (struct workspace_pause_timeline){
        .requested_ms = base + 60000,
        .pod_deleted_ms = base + 62000,
        .accelerator_released_ms = base + 70000,
        .reason = strdup("IdleTimeout"),
        .message = strdup("idle for 1h"),
        .work_ended_ms = base,
        .held_since_ms = base - 3600000,
        .snapshot_ready_ms = base + 61000,
        .snapshot_seconds = 0, /* a figure once ready, also when 0 */
        .memory = strdup("snapshot"),
        .node_name = strdup("gpu-node-1"),
        .product = strdup("Tesla-T4"),
        .accelerator_taken_ms = base + 71000,
        .accelerator_taken_by = strdup(taker),
        .node_removed_ms = base + 7200000,
    };
}

/* full_status() with the ledger: the last pause, resumed, and the one
 * before, whose resume was never ready. */
static void ledger_status(struct workspace_status *s)
{
    full_status(s);
    s->pauses = 2;
    s->resumes = 2;
    s->accelerator_seconds_held = 7200.5;
    s->accelerator_held_since_ms = T0 + 3605000;
    set_pause(s->last_pause, T0 - 86400000, "team-b/bob-1");
    assert_int_equal(workspace_status_push_history(s), 0);
    set_pause(s->last_pause, T0, "team-b/bob-2");
    assert_int_equal(workspace_status_push_history(s), 0);
    assert_int_equal(workspace_status_sync_history(s), 0);
}

static const char *const record_fields[] = {
    "pausedAt",           "reason",          "workEndedAt",
    "heldSince",          "podDeletedAt",    "acceleratorReleasedAt",
    "snapshotReadyAt",    "snapshotSeconds", "memory",
    "nodeName",           "product",         "acceleratorTakenAt",
    "acceleratorTakenBy", "nodeRemovedAt",   "resumeRequestedAt",
    "podScheduledAt",     "readyAt",         "secondsToReady",
    "restoredFrom",
};

static int is_record_field(const char *name)
{
    for (size_t i = 0; i < sizeof(record_fields) / sizeof(record_fields[0]); i++)
        if (strcmp(name, record_fields[i]) == 0)
            return 1;
    return 0;
}

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_status_ledger_round_trip(void **state)
{
    (void)state;
    struct workspace_status s;
    ledger_status(&s);
    cJSON *st = workspace_status_to_json(&s);
    assert_non_null(st);

    cJSON *lp = cJSON_GetObjectItem(st, "lastPause");
    assert_string_equal(str_of(lp, "workEndedAt"), "2027-01-01T00:00:00Z");
    assert_string_equal(str_of(lp, "heldSince"), "2026-12-31T23:00:00Z");
    assert_string_equal(str_of(lp, "snapshotReadyAt"), "2027-01-01T00:01:01Z");
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(lp, "snapshotSeconds")));
    assert_string_equal(str_of(lp, "memory"), "snapshot");
    assert_string_equal(str_of(lp, "nodeName"), "gpu-node-1");
    assert_string_equal(str_of(lp, "product"), "Tesla-T4");
    assert_string_equal(str_of(lp, "acceleratorTakenAt"), "2027-01-01T00:01:11Z");
    assert_string_equal(str_of(lp, "acceleratorTakenBy"), "team-b/bob-2");
    assert_string_equal(str_of(lp, "nodeRemovedAt"), "2027-01-01T02:00:00Z");
    cJSON *acct = cJSON_GetObjectItem(st, "accounting");
    assert_true(cJSON_GetObjectItem(acct, "acceleratorSecondsHeld")->valuedouble == 7200.5);
    assert_string_equal(str_of(acct, "acceleratorHeldSince"), "2027-01-01T01:00:05Z");

    /* history: newest first, each record exactly the fields a report reads */
    cJSON *h = cJSON_GetObjectItem(st, "history");
    assert_int_equal(cJSON_GetArraySize(h), 2);
    cJSON *newest = cJSON_GetArrayItem(h, 0), *older = cJSON_GetArrayItem(h, 1);
    assert_int_equal(cJSON_GetArraySize(newest), 19);
    const cJSON *f;
    cJSON_ArrayForEach(f, newest)
    {
        if (!is_record_field(f->string))
            fail_msg("history record field %s", f->string);
    }
    assert_string_equal(str_of(newest, "pausedAt"), "2027-01-01T00:01:00Z");
    assert_string_equal(str_of(newest, "acceleratorTakenBy"), "team-b/bob-2");
    /* the resume that followed: full_status()'s lastResume */
    assert_string_equal(str_of(newest, "resumeRequestedAt"), "2027-01-01T01:00:00Z");
    assert_string_equal(str_of(newest, "podScheduledAt"), "2027-01-01T01:00:05Z");
    assert_string_equal(str_of(newest, "readyAt"), "2027-01-01T01:00:12Z");
    assert_true(cJSON_GetObjectItem(newest, "secondsToReady")->valuedouble == 12.4);
    assert_string_equal(str_of(newest, "restoredFrom"), "FromCheckpoint");
    assert_null(cJSON_GetObjectItem(newest, "message"));
    assert_null(cJSON_GetObjectItem(newest, "podCreatedAt"));
    /* the older pause was recorded before any resume */
    assert_string_equal(str_of(older, "acceleratorTakenBy"), "team-b/bob-1");
    assert_null(cJSON_GetObjectItem(older, "resumeRequestedAt"));
    assert_null(cJSON_GetObjectItem(older, "secondsToReady"));
    assert_int_equal(cJSON_GetArraySize(older), 14);

    /* decode(encode(s)) == s */
    cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"alice-nb\"},"
                             "\"spec\":{\"className\":\"gpu-t4\"}}");
    cJSON_AddItemToObject(obj, "status", st);
    struct workspace *ws = NULL;
    assert_int_equal(workspace_decode(obj, &ws, NULL), 0);
    assert_true(workspace_status_equal(&ws->status, &s));
    assert_int_equal(ws->status.n_history, 2);
    assert_string_equal(ws->status.history[1].pause.node_name, "gpu-node-1");
    assert_int_equal(ws->status.history[0].resume.ready_ms, T0 + 3612000);
    assert_int_equal(ws->status.last_pause->node_removed_ms, T0 + 7200000);
    assert_true(ws->status.accelerator_seconds_held == 7200.5);
    workspace_free(ws);
    cJSON_Delete(obj);

    /* a copy is independent, and a record's change shows */
    struct workspace_status c;
    assert_int_equal(workspace_status_copy(&s, &c), 0);
    assert_true(workspace_status_equal(&s, &c));
    free(c.history[1].pause.accelerator_taken_by);
    c.history[1].pause.accelerator_taken_by = strdup("team-c/carol-1");
    assert_false(workspace_status_equal(&s, &c));
    assert_string_equal(s.history[1].pause.accelerator_taken_by, "team-b/bob-1");

    workspace_status_clear(&c);
    workspace_status_clear(&s);
}

static void test_status_history(void **state)
{
    (void)state;
    struct workspace_status s;
    workspace_status_init(&s);
    assert_int_equal(workspace_status_own(&s), 0);
    assert_null(workspace_status_last_record(&s));
    assert_int_equal(workspace_status_sync_history(&s), 0);

    /* at most WORKSPACE_HISTORY_MAX, the newest first */
    for (int i = 0; i < 25; i++) {
        s.pauses++;
        set_pause(s.last_pause, T0 + i * 3600000, "ns/p");
        assert_int_equal(workspace_status_push_history(&s), 0);
        s.resumes++;
    }
    assert_int_equal(s.n_history, WORKSPACE_HISTORY_MAX);
    assert_int_equal(s.history[0].pause.requested_ms, T0 + 24 * 3600000 + 60000);
    assert_int_equal(s.history[19].pause.requested_ms, T0 + 5 * 3600000 + 60000);
    assert_null(s.history[0].pause.message);

    /* the record of the last pause: the same second, not the one before */
    assert_ptr_equal(workspace_status_last_record(&s), &s.history[0]);
    s.last_pause->requested_ms += 999;
    assert_ptr_equal(workspace_status_last_record(&s), &s.history[0]);
    s.last_pause->requested_ms += 1;
    assert_null(workspace_status_last_record(&s));
    assert_int_equal(workspace_status_sync_history(&s), 0); /* no record: nothing */
    s.last_pause->requested_ms -= 1000;

    /* it mirrors the pause (what is learnt later too), and the resume only
     * once that is ready */
    s.resumes = s.pauses - 1;
    s.last_pause->accelerator_taken_ms = 0;
    free(s.last_pause->accelerator_taken_by);
    s.last_pause->accelerator_taken_by = NULL;
    *s.last_resume = (struct workspace_resume_timeline){.requested_ms = T0 + 30 * 3600000};
    assert_int_equal(workspace_status_sync_history(&s), 0);
    assert_int_equal(s.history[0].pause.accelerator_taken_ms, 0);
    assert_null(s.history[0].pause.accelerator_taken_by);
    assert_int_equal(s.history[0].resume.requested_ms, 0); /* a resume of an earlier pause */
    s.resumes = s.pauses;
    assert_int_equal(workspace_status_sync_history(&s), 0);
    assert_int_equal(s.history[0].resume.requested_ms, 0); /* not ready yet */
    s.last_resume->pod_created_ms = T0 + 30 * 3600000 + 1000;
    s.last_resume->ready_ms = T0 + 30 * 3600000 + 9000;
    s.last_resume->seconds_to_ready = 9;
    s.last_resume->restored_from = strdup("FromSnapshot");
    assert_int_equal(workspace_status_sync_history(&s), 0);
    const struct workspace_pause_record *r = &s.history[0];
    assert_int_equal(r->resume.requested_ms, T0 + 30 * 3600000);
    assert_int_equal(r->resume.ready_ms, T0 + 30 * 3600000 + 9000);
    assert_int_equal(r->resume.pod_created_ms, 0);
    assert_string_equal(r->resume.restored_from, "FromSnapshot");
    assert_string_equal(r->pause.memory, "snapshot");
    assert_null(r->pause.message);
    /* the records before stay as they were */
    assert_string_equal(s.history[1].pause.accelerator_taken_by, "ns/p");
    workspace_status_clear(&s);
}

static void test_status_history_lenient(void **state)
{
    (void)state;
    /* not a list: no history */
    struct workspace *ws = decode("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"className\":\"c\"},"
                                  "\"status\":{\"history\":{\"pausedAt\":\"x\"}}}",
                                  0, NULL);
    assert_int_equal(ws->status.n_history, 0);
    workspace_free(ws);

    /* more than the limit: the newest are kept; what is not a record is not */
    char json[8192] = "{\"metadata\":{\"name\":\"w\"},\"spec\":{\"className\":\"c\"},"
                      "\"status\":{\"history\":[7,";
    for (int i = 0; i < 30; i++)
        snprintf(json + strlen(json), sizeof(json) - strlen(json),
                 "%s{\"pausedAt\":\"2027-01-%02dT00:00:00Z\",\"memory\":5}", i ? "," : "", 30 - i);
    strcat(json, "]}}");
    ws = decode(json, 0, NULL);
    assert_int_equal(ws->status.n_history, WORKSPACE_HISTORY_MAX);
    char t[TIMEFMT_RFC3339_SIZE];
    timefmt_format_rfc3339(ws->status.history[0].pause.requested_ms, t, sizeof(t));
    assert_string_equal(t, "2027-01-30T00:00:00Z");
    timefmt_format_rfc3339(ws->status.history[19].pause.requested_ms, t, sizeof(t));
    assert_string_equal(t, "2027-01-11T00:00:00Z");
    assert_null(ws->status.history[0].pause.memory);
    workspace_free(ws);
}

/* ---- idle: spec, annotations, status.activity ---- */

static void test_decode_idle_spec(void **state)
{
    (void)state;
    struct workspace *ws =
        decode("{\"metadata\":{\"name\":\"w\",\"namespace\":\"n\",\"annotations\":{"
               "\"hibernator.dev/last-activity\":\"2027-01-01T00:10:00Z\","
               "\"hibernator.dev/auto-paused-at\":\"2027-01-01T01:00:00.250Z\","
               "\"hibernator.dev/auto-pause-reason\":\"idle for 1h (no activity since "
               "2027-01-01T00:00:00Z, jupyter)\","
               "\"other.example/x\":\"y\"}},"
               "\"spec\":{\"className\":\"c\",\"keepAliveUntil\":\"2027-01-01T03:00:00Z\","
               "\"idle\":{\"after\":\"2h30m\"}}}",
               0, NULL);
    assert_int_equal(ws->keep_alive_until_ms, T0 + 3 * 3600000);
    assert_int_equal(ws->idle_after_ms, 9000000);
    assert_int_equal(ws->annotated_activity_ms, T0 + 600000);
    assert_int_equal(ws->auto_paused_ms, T0 + 3600250);
    assert_string_equal(ws->auto_pause_message,
                        "idle for 1h (no activity since 2027-01-01T00:00:00Z, jupyter)");
    workspace_free(ws);

    /* absent: unset */
    ws = decode("{\"metadata\":{\"name\":\"w\",\"annotations\":{}},"
                "\"spec\":{\"className\":\"c\",\"idle\":{}}}",
                0, NULL);
    assert_int_equal(ws->keep_alive_until_ms, 0);
    assert_int_equal(ws->idle_after_ms, 0);
    assert_int_equal(ws->annotated_activity_ms, 0);
    assert_int_equal(ws->auto_paused_ms, 0);
    assert_null(ws->auto_pause_message);
    workspace_free(ws);

    /* as the controller writes it: microseconds, read to the millisecond */
    ws = decode("{\"metadata\":{\"name\":\"w\",\"annotations\":{"
                "\"hibernator.dev/auto-paused-at\":\"2027-01-01T01:00:00.250999Z\"}},"
                "\"spec\":{\"className\":\"c\"}}",
                0, NULL);
    assert_int_equal(ws->auto_paused_ms, T0 + 3600250);
    workspace_free(ws);
    ws = decode("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"className\":\"c\",\"idle\":null}}", 0,
                NULL);
    assert_int_equal(ws->idle_after_ms, 0);
    workspace_free(ws);
}

/* Anyone may write the annotations: what cannot be read counts as unset
 * and never fails the object. */
static void test_decode_unreadable_annotations(void **state)
{
    (void)state;
    static const char *const values[] = {
        "\"yesterday\"", "\"\"", "\"2027-01-01\"", "\"2027-01-01T00:00:60Z\"", "7", "null", "{}",
    };
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char json[512];
        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"w\",\"annotations\":{"
                 "\"hibernator.dev/last-activity\":%s,\"hibernator.dev/auto-paused-at\":%s,"
                 "\"hibernator.dev/auto-pause-reason\":%s}},"
                 "\"spec\":{\"className\":\"c\"}}",
                 values[i], values[i], strchr(values[i], '"') ? "\"r\"" : values[i]);
        struct workspace *ws = decode(json, 0, NULL);
        if (ws->annotated_activity_ms != 0 || ws->auto_paused_ms != 0)
            fail_msg("%s: read as %lld / %lld", values[i], (long long)ws->annotated_activity_ms,
                     (long long)ws->auto_paused_ms);
        workspace_free(ws);
    }
    /* annotations that are not an object */
    struct workspace *ws =
        decode("{\"metadata\":{\"name\":\"w\",\"annotations\":[\"x\"]},\"spec\":{\"className\":"
               "\"c\"}}",
               0, NULL);
    assert_int_equal(ws->annotated_activity_ms, 0);
    workspace_free(ws);
}

static void test_decode_idle_errors(void **state)
{
    (void)state;
    static const struct {
        const char *spec;
        const char *err_prefix;
    } cases[] = {
        {"\"keepAliveUntil\":\"tomorrow\"", "spec.keepAliveUntil: \"tomorrow\" is not an RFC 3339"},
        {"\"keepAliveUntil\":\"2027-01-01 03:00\"", "spec.keepAliveUntil:"},
        {"\"idle\":[]", "spec.idle: must be an object"},
        {"\"idle\":\"2h\"", "spec.idle: must be an object"},
        {"\"idle\":{\"after\":\"2 hours\"}", "spec.idle.after: \"2 hours\" is not a duration"},
        {"\"idle\":{\"after\":\"-1h\"}", "spec.idle.after:"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[512];
        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"w\"},\"spec\":{\"className\":\"c\",%s}}",
                 cases[i].spec);
        struct workspace *ws = decode(json, 0, NULL);
        if (!ws->spec_error ||
            strncmp(ws->spec_error, cases[i].err_prefix, strlen(cases[i].err_prefix)) != 0)
            fail_msg("%s: spec error \"%s\", want prefix \"%s\"", cases[i].spec,
                     ws->spec_error ? ws->spec_error : "(null)", cases[i].err_prefix);
        assert_int_equal(ws->keep_alive_until_ms, 0);
        assert_int_equal(ws->idle_after_ms, 0);
        workspace_free(ws);
    }
}

/* full_status() with an automatic pause and a running workspace's record. */
static void idle_status(struct workspace_status *s)
{
    full_status(s);
    s->last_pause->reason = strdup("IdleTimeout");
    s->last_pause->message = strdup("idle for 1h0m5s (no activity since 2027-01-01T00:00:00Z, "
                                    "jupyter), idle-after 1h; 0 connection(s)");
    *s->activity = (struct workspace_activity){
        .last_activity_ms = T0 + 7200000,
        .last_activity_source = strdup("jupyter"),
        .last_probe_ms = T0 + 7260000,
        .last_probe_result = strdup("Failed"),
        .last_probe_error = strdup("jupyter: GET /api/status: HTTP 403"),
        .idle_since_ms = T0 + 7200000,
        .pause_at_ms = T0 + 10800250,
        .idle_after_seconds = 3600,
        .keep_alive_until_ms = T0 + 3600000,
        .keep_alive_requested_ms = T0 + 86400000,
    };
}

static const char *member_str(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, a), b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_status_activity_round_trip(void **state)
{
    (void)state;
    struct workspace_status s;
    idle_status(&s);
    cJSON *st = workspace_status_to_json(&s);
    assert_non_null(st);
    assert_string_equal(member_str(st, "lastPause", "reason"), "IdleTimeout");
    assert_non_null(strstr(member_str(st, "lastPause", "message"), "idle-after 1h"));
    static const struct {
        const char *key, *value;
    } strs[] = {
        {"lastActivityTime", "2027-01-01T02:00:00Z"},
        {"lastActivitySource", "jupyter"},
        {"lastProbeTime", "2027-01-01T02:01:00Z"},
        {"lastProbeResult", "Failed"},
        {"lastProbeError", "jupyter: GET /api/status: HTTP 403"},
        {"idleSince", "2027-01-01T02:00:00Z"},
        {"pauseAt", "2027-01-01T03:00:00.250000Z"}, /* as decided, to the millisecond */
        {"keepAliveUntil", "2027-01-01T01:00:00Z"},
        {"keepAliveRequested", "2027-01-02T00:00:00Z"},
    };
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        const char *got = member_str(st, "activity", strs[i].key);
        if (!got || strcmp(got, strs[i].value) != 0)
            fail_msg("activity.%s: %s, want %s", strs[i].key, got ? got : "(none)", strs[i].value);
    }
    const cJSON *secs =
        cJSON_GetObjectItem(cJSON_GetObjectItem(st, "activity"), "idleAfterSeconds");
    assert_true(cJSON_IsNumber(secs) && secs->valuedouble == 3600);

    cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"alice-nb\"},"
                             "\"spec\":{\"className\":\"gpu-t4\"}}");
    cJSON_AddItemToObject(obj, "status", st);
    struct workspace *ws = NULL;
    assert_int_equal(workspace_decode(obj, &ws, NULL), 0);
    assert_true(workspace_status_equal(&ws->status, &s));
    const struct workspace_activity *a = ws->status.activity;
    assert_int_equal(a->last_activity_ms, T0 + 7200000);
    assert_string_equal(a->last_activity_source, "jupyter");
    assert_int_equal(a->last_probe_ms, T0 + 7260000);
    assert_string_equal(a->last_probe_result, "Failed");
    assert_string_equal(a->last_probe_error, "jupyter: GET /api/status: HTTP 403");
    assert_int_equal(a->idle_since_ms, T0 + 7200000);
    assert_int_equal(a->pause_at_ms, T0 + 10800250);
    assert_int_equal(a->idle_after_seconds, 3600);
    assert_int_equal(a->keep_alive_until_ms, T0 + 3600000);
    assert_int_equal(a->keep_alive_requested_ms, T0 + 86400000);
    assert_string_equal(ws->status.last_pause->reason, "IdleTimeout");
    assert_string_equal(ws->status.last_pause->message, s.last_pause->message);
    workspace_free(ws);
    cJSON_Delete(obj);

    /* the copy is deep and compares equal; a changed activity field is a
     * different status */
    struct workspace_status c;
    assert_int_equal(workspace_status_copy(&s, &c), 0);
    assert_true(workspace_status_equal(&s, &c));
    assert_ptr_not_equal(c.activity->last_activity_source, s.activity->last_activity_source);
    assert_ptr_not_equal(c.last_pause->message, s.last_pause->message);
    c.activity->pause_at_ms = 0;
    assert_false(workspace_status_equal(&s, &c));
    workspace_status_clear(&c);
    assert_int_equal(workspace_status_copy(&s, &c), 0);
    free(c.last_pause->reason);
    c.last_pause->reason = strdup("User");
    assert_false(workspace_status_equal(&s, &c));
    workspace_status_clear(&c);

    /* an empty record is left out */
    struct workspace_status empty;
    workspace_status_init(&empty);
    cJSON *j = workspace_status_to_json(&empty);
    assert_null(cJSON_GetObjectItem(j, "activity"));
    cJSON_Delete(j);
    workspace_status_clear(&s);
}

static void test_status_activity_lenient(void **state)
{
    (void)state;
    struct workspace *ws =
        decode("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"className\":\"c\"},"
               "\"status\":{\"activity\":{\"lastActivityTime\":\"recently\","
               "\"lastActivitySource\":7,\"pauseAt\":3,\"idleAfterSeconds\":\"1h\"},"
               "\"lastPause\":{\"reason\":[],\"message\":\"m\"}}}",
               0, NULL);
    const struct workspace_activity *a = ws->status.activity;
    assert_int_equal(a->last_activity_ms, 0);
    assert_null(a->last_activity_source);
    assert_int_equal(a->pause_at_ms, 0);
    assert_int_equal(a->idle_after_seconds, 0);
    assert_null(ws->status.last_pause->reason);
    assert_string_equal(ws->status.last_pause->message, "m");
    workspace_free(ws);
}

static void test_message_one_line(void **state)
{
    (void)state;
    char s[] = "pod\tfailed:\nimage pull\r\x1b[31mred\x7f\xc3\xa9";
    workspace_message_one_line(s);
    /* Control characters (C0 and DEL) become spaces; UTF-8 stays. */
    assert_string_equal(s, "pod failed: image pull  [31mred \xc3\xa9");

    /* Longer than WORKSPACE_MESSAGE_MAX: cut on a character boundary, "...". */
    char long_msg[WORKSPACE_MESSAGE_MAX + 10];
    memset(long_msg, 'a', sizeof(long_msg) - 1);
    long_msg[sizeof(long_msg) - 1] = '\0';
    /* A two-byte character straddles the cut at WORKSPACE_MESSAGE_MAX - 3. */
    long_msg[WORKSPACE_MESSAGE_MAX - 4] = '\xc3';
    long_msg[WORKSPACE_MESSAGE_MAX - 3] = '\xa9';
    long_msg[5] = '\n';
    workspace_message_one_line(long_msg);
    assert_int_equal(strlen(long_msg), WORKSPACE_MESSAGE_MAX - 1);
    assert_int_equal(long_msg[5], ' ');
    assert_string_equal(long_msg + WORKSPACE_MESSAGE_MAX - 4, "...");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_full),
        cmocka_unit_test(test_decode_defaults),
        cmocka_unit_test(test_decode_errors),
        cmocka_unit_test(test_decode_spec_errors),
        cmocka_unit_test(test_state_names),
        cmocka_unit_test(test_shared_strings),
        cmocka_unit_test(test_status_round_trip),
        cmocka_unit_test(test_status_omits_unset),
        cmocka_unit_test(test_status_lenient_decode),
        cmocka_unit_test(test_status_equal_and_copy),
        cmocka_unit_test(test_set_condition),
        cmocka_unit_test(test_decode_idle_spec),
        cmocka_unit_test(test_decode_unreadable_annotations),
        cmocka_unit_test(test_decode_idle_errors),
        cmocka_unit_test(test_status_activity_round_trip),
        cmocka_unit_test(test_status_activity_lenient),
        cmocka_unit_test(test_status_ledger_round_trip),
        cmocka_unit_test(test_status_history),
        cmocka_unit_test(test_status_history_lenient),
        cmocka_unit_test(test_decode_lenient),
        cmocka_unit_test(test_message_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
