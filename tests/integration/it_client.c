/*
 * The API client against the real API server: every verb, pagination,
 * preconditions, both patch types, the status subresource, a GET of a path
 * that answers with bytes (kube_get_path), the errors a controller must
 * tell apart (404, 409 conflict, 422 invalid), requests going out by
 * priority under the rate limit, a burst held to max_in_flight, answers
 * of a megabyte beside small calls on the shared connection, and a watch's
 * burst of events beside the writes that caused them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "kube/client.h"

struct fixture {
    uv_loop_t loop;
    struct kube_config *config;
    struct kube_client *client;
    char *ns;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    uv_loop_init(&f->loop);
    f->config = harness_config(NULL);
    f->client = harness_client(&f->loop, f->config);
    f->ns = harness_namespace("it-client");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    harness_namespace_delete(f->ns);
    kube_client_close(f->client);
    harness_loop_close(&f->loop);
    kube_config_free(f->config);
    free(f->ns);
    free(f);
    return 0;
}

static cJSON *configmap(const char *name, const char *value)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", "ConfigMap");
    cJSON *meta = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(meta, "name", name);
    cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
    cJSON_AddStringToObject(labels, "suite", "it-client");
    cJSON *data = cJSON_AddObjectToObject(o, "data");
    cJSON_AddStringToObject(data, "v", value);
    return o;
}

static const char *json_str(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

static void create_cm(struct fixture *f, const char *name, const char *value,
                      struct harness_call *call)
{
    cJSON *cm = configmap(name, value);
    assert_int_equal(
        kube_create(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, cm, harness_call_cb, call, NULL),
        0);
    cJSON_Delete(cm);
    harness_call_wait(&f->loop, call);
    assert_int_equal(call->status, 0);
    assert_int_equal(call->http_code, 201);
}

static void test_create_get_delete(void **state)
{
    struct fixture *f = *state;
    struct harness_call call = {0};
    create_cm(f, "one", "1", &call);
    harness_call_clear(&call);

    assert_int_equal(
        kube_get(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, "one", harness_call_cb, &call, NULL),
        0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, 0);
    assert_string_equal(json_str(call.body, "data", "v"), "1");
    harness_call_clear(&call);

    /* Creating it again: AlreadyExists, a 409 that is not a conflict to retry. */
    cJSON *cm = configmap("one", "again");
    assert_int_equal(
        kube_create(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, cm, harness_call_cb, &call, NULL),
        0);
    cJSON_Delete(cm);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, -EIO);
    assert_int_equal(call.http_code, 409);
    assert_string_equal(call.reason, "AlreadyExists");
    harness_call_clear(&call);

    struct kube_delete_options del = {.propagation_policy = "Background",
                                      .grace_period_seconds = 0};
    assert_int_equal(kube_delete(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, "one", &del,
                                 harness_call_cb, &call, NULL),
                     0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, 0);
    harness_call_clear(&call);

    assert_int_equal(
        kube_get(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, "one", harness_call_cb, &call, NULL),
        0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.http_code, 404);
    assert_string_equal(call.reason, "NotFound");
    assert_non_null(strstr(call.message, "\"one\" not found"));
    harness_call_clear(&call);
}

static void test_delete_preconditions(void **state)
{
    struct fixture *f = *state;
    struct harness_call call = {0};
    create_cm(f, "pre", "x", &call);
    char uid[64];
    snprintf(uid, sizeof(uid), "%s", json_str(call.body, "metadata", "uid"));
    harness_call_clear(&call);

    struct kube_delete_options wrong = {.precondition_uid = "00000000-0000-0000-0000-000000000000",
                                        .grace_period_seconds = -1};
    assert_int_equal(kube_delete(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, "pre", &wrong,
                                 harness_call_cb, &call, NULL),
                     0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.http_code, 409);
    assert_string_equal(call.reason, "Conflict");
    harness_call_clear(&call);

    struct kube_delete_options right = {.precondition_uid = uid, .grace_period_seconds = -1};
    assert_int_equal(kube_delete(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, "pre", &right,
                                 harness_call_cb, &call, NULL),
                     0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, 0);
    harness_call_clear(&call);
}

static void test_patches_and_conflicts(void **state)
{
    struct fixture *f = *state;
    struct harness_call call = {0};
    create_cm(f, "p", "a", &call);
    char rv[64];
    snprintf(rv, sizeof(rv), "%s", json_str(call.body, "metadata", "resourceVersion"));
    harness_call_clear(&call);

    assert_int_equal(kube_patch(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, "p", NULL,
                                KUBE_PATCH_MERGE, "{\"data\":{\"v\":\"b\"}}", harness_call_cb,
                                &call, NULL),
                     0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, 0);
    assert_string_equal(json_str(call.body, "data", "v"), "b");
    harness_call_clear(&call);

    /* A merge patch carrying the old resourceVersion is refused: optimistic locking. */
    char patch[256];
    snprintf(patch, sizeof(patch),
             "{\"metadata\":{\"resourceVersion\":\"%s\"},\"data\":{\"v\":\"c\"}}", rv);
    assert_int_equal(kube_patch(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, "p", NULL,
                                KUBE_PATCH_MERGE, patch, harness_call_cb, &call, NULL),
                     0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.http_code, 409);
    assert_string_equal(call.reason, "Conflict");
    harness_call_clear(&call);

    /* JSON patch: a failing "test" leaves the object alone. */
    assert_int_equal(kube_patch(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, "p", NULL,
                                KUBE_PATCH_JSON,
                                "[{\"op\":\"test\",\"path\":\"/data/v\",\"value\":\"zzz\"},"
                                "{\"op\":\"replace\",\"path\":\"/data/v\",\"value\":\"d\"}]",
                                harness_call_cb, &call, NULL),
                     0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, -EIO);
    assert_true(call.http_code == 422 || call.http_code == 409 || call.http_code == 500);
    harness_call_clear(&call);

    assert_int_equal(kube_patch(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, "p", NULL,
                                KUBE_PATCH_JSON,
                                "[{\"op\":\"test\",\"path\":\"/data/v\",\"value\":\"b\"},"
                                "{\"op\":\"replace\",\"path\":\"/data/v\",\"value\":\"d\"}]",
                                harness_call_cb, &call, NULL),
                     0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, 0);
    assert_string_equal(json_str(call.body, "data", "v"), "d");

    /* PUT with a stale resourceVersion: 409 Conflict. */
    cJSON *obj = call.body;
    call.body = NULL;
    harness_call_clear(&call);
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    cJSON_ReplaceItemInObjectCaseSensitive(meta, "resourceVersion", cJSON_CreateString(rv));
    assert_int_equal(kube_replace(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, "p", NULL, obj,
                                  harness_call_cb, &call, NULL),
                     0);
    cJSON_Delete(obj);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.http_code, 409);
    harness_call_clear(&call);
}

static void test_pagination(void **state)
{
    struct fixture *f = *state;
    enum { N = 23 };
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "page-%02d", i);
        struct harness_call call = {0};
        create_cm(f, name, "x", &call);
        harness_call_clear(&call);
    }
    int seen = 0, pages = 0;
    char *cont = NULL;
    do {
        struct harness_call call = {0};
        struct kube_list_options o = {
            .label_selector = "suite=it-client", .limit = 5, .continue_token = cont};
        assert_int_equal(kube_list(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, &o, harness_call_cb,
                                   &call, NULL),
                         0);
        harness_call_wait(&f->loop, &call);
        assert_int_equal(call.status, 0);
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(call.body, "items");
        assert_true(cJSON_GetArraySize(items) <= 5);
        seen += cJSON_GetArraySize(items);
        pages++;
        free(cont);
        const char *c = json_str(call.body, "metadata", "continue");
        cont = c && c[0] ? strdup(c) : NULL;
        harness_call_clear(&call);
    } while (cont);
    assert_int_equal(seen, N);
    assert_int_equal(pages, (N + 4) / 5);
}

static void test_status_subresource(void **state)
{
    struct fixture *f = *state;
    struct harness_call call = {0};
    /* Namespaces have a status subresource on every cluster. */
    assert_int_equal(
        kube_get(f->client, &KUBE_RESOURCE_NAMESPACES, NULL, f->ns, harness_call_cb, &call, NULL),
        0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, 0);
    harness_call_clear(&call);
    assert_int_equal(
        kube_patch(f->client, &KUBE_RESOURCE_NAMESPACES, NULL, f->ns, "status", KUBE_PATCH_MERGE,
                   "{\"status\":{\"conditions\":[{\"type\":\"Probe\",\"status\":\"True\"}]}}",
                   harness_call_cb, &call, NULL),
        0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, 0);
    const cJSON *conds = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(call.body, "status"), "conditions");
    assert_int_equal(cJSON_GetArraySize(conds), 1);
    harness_call_clear(&call);
}

struct raw_read {
    struct harness_call *call;
    char text[64]; /* the raw answer, up to 63 bytes */
};

/* Keeps the raw answer and records the call. */
static void raw_cb(void *data, struct kube_response *resp)
{
    struct raw_read *rr = data;
    if (resp->raw)
        snprintf(rr->text, sizeof(rr->text), "%.*s", (int)resp->raw_len, resp->raw);
    harness_call_cb(rr->call, resp);
}

static void test_limits_and_cancel(void **state)
{
    struct fixture *f = *state;
    /* A response larger than the client's limit fails cleanly. */
    struct kube_client_options o = {.qps = 100, .burst = 100, .max_response_bytes = 512};
    struct kube_client *small = NULL;
    assert_int_equal(kube_client_new(&f->loop, f->config, &o, &small, NULL), 0);
    struct harness_call call = {0};
    assert_int_equal(
        kube_list(small, &KUBE_RESOURCE_NAMESPACES, NULL, NULL, harness_call_cb, &call, NULL), 0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, -EFBIG);
    harness_call_clear(&call);

    /* A cancelled request never calls back. */
    struct harness_call never = {0};
    struct kube_request *r = NULL;
    assert_int_equal(
        kube_get(small, &KUBE_RESOURCE_NAMESPACES, NULL, f->ns, harness_call_cb, &never, &r), 0);
    kube_request_cancel(r);
    harness_run_for(&f->loop, 300);
    assert_int_equal(never.done, 0);
    kube_client_close(small);
}

struct answers {
    int order[8];
    int status[8];
    int n;
};

struct answer {
    struct answers *all;
    int id;
};

static void on_answer(void *data, struct kube_response *resp)
{
    struct answer *a = data;
    a->all->status[a->id] = resp->status;
    a->all->order[a->all->n++] = a->id;
}

/* Requests made together go out most urgent first, whatever their order; an
 * Event-like low request that waits too long is dropped and counted. */
static void test_priorities(void **state)
{
    struct fixture *f = *state;
    /* One request at a time, so the answers come in the order sent (at
     * 10 a second alone, a slow answer under a sanitizer and a loaded
     * machine could arrive after the next one's). */
    struct kube_client_options o = {.qps = 10, .burst = 1, .max_in_flight = 1};
    struct kube_client *c = NULL;
    assert_int_equal(kube_client_new(&f->loop, f->config, &o, &c, NULL), 0);
    static const enum kube_priority made[] = {KUBE_PRIORITY_LOW, KUBE_PRIORITY_LOW,
                                              KUBE_PRIORITY_NORMAL, KUBE_PRIORITY_CRITICAL};
    struct answers all = {0};
    struct answer a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct answer){&all, i};
        struct kube_request *r = NULL;
        assert_int_equal(kube_get(c, &KUBE_RESOURCE_NAMESPACES, NULL, f->ns, on_answer, &a[i], &r),
                         0);
        assert_non_null(r);
        kube_request_set_priority(r, made[i]);
    }
    /* One token per 100 ms, one request at a time: the answers come in the
     * order sent. */
    for (int i = 0; i < 100 && all.n < 4; i++)
        harness_run_for(&f->loop, 50);
    assert_int_equal(all.n, 4);
    assert_int_equal(all.order[0], 3);
    assert_int_equal(all.order[1], 2);
    assert_int_equal(all.order[2], 0);
    assert_int_equal(all.order[3], 1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(all.status[i], 0);
    assert_int_equal(kube_client_requests_dropped(c), 0);
    kube_client_close(c);

    /* Low requests give way: behind a critical one at 2 per second, they
     * have waited longer than 150 ms by the next token. */
    o = (struct kube_client_options){.qps = 2, .burst = 1, .low_max_wait_ms = 150};
    assert_int_equal(kube_client_new(&f->loop, f->config, &o, &c, NULL), 0);
    all = (struct answers){0};
    for (int i = 0; i < 3; i++) {
        a[i] = (struct answer){&all, i};
        struct kube_request *r = NULL;
        assert_int_equal(kube_get(c, &KUBE_RESOURCE_NAMESPACES, NULL, f->ns, on_answer, &a[i], &r),
                         0);
        kube_request_set_priority(r, i == 0 ? KUBE_PRIORITY_CRITICAL : KUBE_PRIORITY_LOW);
    }
    for (int i = 0; i < 100 && all.n < 3; i++)
        harness_run_for(&f->loop, 50);
    assert_int_equal(all.n, 3);
    assert_int_equal(all.status[0], 0);
    assert_int_equal(all.status[1], -EAGAIN);
    assert_int_equal(all.status[2], -EAGAIN);
    assert_int_equal(kube_client_requests_dropped(c), 2);
    assert_int_equal(kube_client_requests_sent(c), 1);
    kube_client_close(c);
}

struct burst {
    struct kube_client *client;
    int answered, failed;
    unsigned most_in_flight;
    int watch_bytes;
};

static void on_burst_answer(void *data, struct kube_response *resp)
{
    struct burst *b = data;
    b->answered++;
    b->failed += resp->status != 0;
    unsigned n = kube_client_requests_in_flight(b->client);
    if (n > b->most_in_flight)
        b->most_in_flight = n;
}

static int on_burst_watch_bytes(void *data, const char *bytes, size_t len)
{
    (void)bytes;
    struct burst *b = data;
    b->watch_bytes += (int)len;
    return 0;
}

static void on_burst_watch_done(void *data, struct kube_response *resp)
{
    (void)data;
    (void)resp;
}

#define BURST 300
#define BURST_SLOTS 8

/* Hundreds of requests made at once, the rate limit out of the way: at
 * most max_in_flight of them run at a time (a watch aside, which neither
 * counts nor waits), the rest wait their turn, and every one is answered. */
static void test_in_flight_bound(void **state)
{
    struct fixture *f = *state;
    struct kube_client_options o = {.qps = 1e6, .burst = 1000000, .max_in_flight = BURST_SLOTS};
    struct burst b = {0};
    assert_int_equal(kube_client_new(&f->loop, f->config, &o, &b.client, NULL), 0);
    struct kube_watch_options wo = {.timeout_seconds = 60};
    struct kube_request *watch = NULL;
    assert_int_equal(kube_watch(b.client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, &wo,
                                on_burst_watch_bytes, on_burst_watch_done, &b, &watch),
                     0);
    for (int i = 0; i < BURST; i++)
        assert_int_equal(
            kube_get(b.client, &KUBE_RESOURCE_NAMESPACES, NULL, f->ns, on_burst_answer, &b, NULL),
            0);
    /* One of them is created while the burst waits: the watch saw it. */
    struct harness_call call = {0};
    create_cm(f, "burst", "1", &call);
    harness_call_clear(&call);
    for (int i = 0; i < 600 && (b.answered < BURST || b.watch_bytes == 0); i++)
        harness_run_for(&f->loop, 50);
    print_message("  %d answered, %d failed, at most %u in flight (the watch included)\n",
                  b.answered, b.failed, b.most_in_flight);
    assert_int_equal(b.answered, BURST);
    assert_int_equal(b.failed, 0);
    assert_true(b.watch_bytes > 0);
    assert_true(b.most_in_flight <= BURST_SLOTS + 1);
    assert_true(b.most_in_flight >= 2);
    kube_request_cancel(watch);
    kube_client_close(b.client);
}

/* ---- big answers on the shared connection ---- */

struct big_round {
    int lists_left, gets_left, failed;
    uint64_t started_ms, slowest_list_ms;
};

static void on_big_list(void *data, struct kube_response *resp)
{
    struct big_round *r = data;
    uint64_t took = harness_now_ms() - r->started_ms;
    if (took > r->slowest_list_ms)
        r->slowest_list_ms = took;
    if (resp->status != 0) {
        r->failed++;
        print_message("  a list failed: %s\n",
                      resp->transport_error ? resp->transport_error : "(an API error)");
    }
    r->lists_left--;
}

static void on_small_get(void *data, struct kube_response *resp)
{
    struct big_round *r = data;
    r->failed += resp->status != 0;
    r->gets_left--;
}

static int big_round_done(void *data)
{
    const struct big_round *r = data;
    return r->lists_left == 0 && r->gets_left == 0;
}

#define BIG_OBJECTS 48
#define BIG_VALUE 24000
#define BIG_ROUNDS 12
#define BIG_LISTS 3
#define SMALL_CALLS 30
#define STALL_ROUNDS 4
#define WATCH_BURST 40
#define WATCH_BURST_VALUE 6000 /* bytes */

/* Rounds of lists of a megabyte and more (big objects that do not
 * compress much: 886 KB gzipped) side by side with small calls, and a watch
 * if asked, on the one shared HTTP/2 connection, by a client with the given
 * list receive buffer (0: the default). Every call must be answered whole
 * and no list may wait for its timeout. Returns the client's pokes. */
static uint64_t big_answers(struct fixture *f, long list_buffer_bytes, int rounds, int with_watch)
{
    struct kube_client_options o = {
        .qps = 1e6, .burst = 1000000, .list_buffer_bytes = list_buffer_bytes};
    struct kube_client *c = NULL;
    assert_int_equal(kube_client_new(&f->loop, f->config, &o, &c, NULL), 0);
    char *value = malloc(BIG_VALUE + 1);
    assert_non_null(value);
    uint64_t x = 0x9e3779b97f4a7c15u;
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < BIG_OBJECTS; i++) {
        for (int k = 0; k < BIG_VALUE; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            value[k] = alphabet[x & 63];
        }
        value[BIG_VALUE] = '\0';
        char name[32];
        snprintf(name, sizeof(name), "big-%02d", i);
        /* Made by an earlier call of this fixture (a second batch of
         * rounds): there already, as wanted. */
        struct harness_call call = {0};
        cJSON *cm = configmap(name, value);
        assert_int_equal(kube_create(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, cm,
                                     harness_call_cb, &call, NULL),
                         0);
        cJSON_Delete(cm);
        harness_call_wait(&f->loop, &call);
        if (call.http_code != 201 && call.http_code != 409)
            fail_msg("creating %s: HTTP %ld", name, call.http_code);
        harness_call_clear(&call);
    }
    free(value);
    struct burst b = {0};
    struct kube_watch_options wo = {.timeout_seconds = 300};
    struct kube_request *watch = NULL;
    if (with_watch)
        assert_int_equal(kube_watch(c, &KUBE_RESOURCE_CONFIGMAPS, f->ns, &wo, on_burst_watch_bytes,
                                    on_burst_watch_done, &b, &watch),
                         0);
    uint64_t slowest = 0;
    int failed = 0;
    for (int round = 0; round < rounds; round++) {
        struct big_round r = {
            .lists_left = BIG_LISTS, .gets_left = SMALL_CALLS, .started_ms = harness_now_ms()};
        struct kube_list_options lo = {.label_selector = "suite=it-client"};
        for (int i = 0; i < BIG_LISTS; i++)
            assert_int_equal(
                kube_list(c, &KUBE_RESOURCE_CONFIGMAPS, f->ns, &lo, on_big_list, &r, NULL), 0);
        for (int i = 0; i < SMALL_CALLS; i++)
            assert_int_equal(
                kube_get(c, &KUBE_RESOURCE_NAMESPACES, NULL, f->ns, on_small_get, &r, NULL), 0);
        assert_true(harness_run_until(&f->loop, big_round_done, &r, 60000));
        if (r.slowest_list_ms > slowest)
            slowest = r.slowest_list_ms;
        failed += r.failed;
    }
    uint64_t pokes = kube_client_pokes(c);
    print_message("  %d rounds of %d lists of %d objects of %d bytes and %d small calls%s, "
                  "list buffer %s: the slowest list took %llu ms, %d calls failed, %llu pokes\n",
                  rounds, BIG_LISTS, BIG_OBJECTS, BIG_VALUE, SMALL_CALLS,
                  with_watch ? " beside a watch" : "", list_buffer_bytes ? "1 KiB" : "the default",
                  (unsigned long long)slowest, failed, (unsigned long long)pokes);
    assert_int_equal(failed, 0);
    assert_true(slowest < 10000);
    kube_request_cancel(watch);
    kube_client_close(c);
    return pokes;
}

static void test_big_answers(void **state)
{
    big_answers(*state, 0, BIG_ROUNDS, 1);
}

/* With libcurl's least receive buffer (1 KiB) nearly every DATA frame of a
 * list pauses libcurl's HTTP/2 layer, and the last list of a round ends
 * held in libcurl's input, where without the poke it waited for its
 * timeout (30 s; 3 of 3 rounds when measured). The client sees the list
 * quiet and pokes the connection: every list ends within seconds, and the
 * pokes that did it are counted. A run where no list stalled in 12 rounds
 * is reported skipped, not passed. */
static void test_stalled_connection(void **state)
{
    /* Whether a list stalls depends on the timing of the frames (under
     * AddressSanitizer on a loaded machine, 4 rounds once had none): more
     * rounds until one does; each round's lists must end in seconds. */
    for (int batch = 0; batch < 3; batch++)
        if (big_answers(*state, 1024, STALL_ROUNDS, 0) >= 1)
            return;
    print_message("  no list stalled in %d rounds: the poke was not exercised\n", 3 * STALL_ROUNDS);
    skip();
}

/* What a burst's watch has seen: each event is a line of JSON (the API
 * server ends each with a newline); the ConfigMaps wb-00.. are counted by
 * name, so an event seen twice (a watch resumed) counts once. */
struct watch_burst {
    char line[16 * 1024]; /* an event of a 6 KB ConfigMap is under 7 KB */
    size_t line_len;
    int lines;                 /* events of any ConfigMap */
    uint64_t seen;             /* bit i: wb-<i> seen */
    char resource_version[64]; /* of the last event */
    int ended;                 /* the API server ended the watch */
    int restarts;              /* watches resumed after such an end */
    uint64_t last_event_ms;    /* harness_now_ms() */
};

static void watch_burst_event(struct watch_burst *w)
{
    w->lines++;
    w->last_event_ms = harness_now_ms();
    cJSON *ev = cJSON_ParseWithLength(w->line, w->line_len);
    const cJSON *meta = cJSON_GetObjectItem(cJSON_GetObjectItem(ev, "object"), "metadata");
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(meta, "name"));
    const char *rv = cJSON_GetStringValue(cJSON_GetObjectItem(meta, "resourceVersion"));
    if (rv)
        snprintf(w->resource_version, sizeof(w->resource_version), "%s", rv);
    int i;
    if (name && sscanf(name, "wb-%d", &i) == 1 && i >= 0 && i < WATCH_BURST)
        w->seen |= (uint64_t)1 << i;
    cJSON_Delete(ev);
}

static int on_watch_burst_bytes(void *data, const char *bytes, size_t len)
{
    struct watch_burst *w = data;
    for (size_t i = 0; i < len; i++) {
        if (bytes[i] == '\n') {
            watch_burst_event(w);
            w->line_len = 0;
        } else if (w->line_len < sizeof(w->line)) {
            w->line[w->line_len++] = bytes[i];
        }
    }
    return 0;
}

static void on_watch_burst_done(void *data, struct kube_response *resp)
{
    struct watch_burst *w = data;
    (void)resp;
    w->ended = 1;
}

static int watch_burst_seen(const struct watch_burst *w)
{
    int n = 0;
    for (int i = 0; i < WATCH_BURST; i++)
        n += (w->seen >> i) & 1;
    return n;
}

static int watch_burst_done(void *data)
{
    const struct watch_burst *w = data;
    return w->ended || watch_burst_seen(w) == WATCH_BURST;
}

static struct kube_request *watch_burst_start(struct kube_client *c, const char *ns,
                                              struct watch_burst *w)
{
    /* The label leaves out the namespace's kube-root-ca.crt. */
    struct kube_watch_options wo = {.timeout_seconds = 300,
                                    .label_selector = "suite=it-client",
                                    .resource_version =
                                        w->resource_version[0] ? w->resource_version : NULL};
    struct kube_request *watch = NULL;
    w->ended = 0;
    w->line_len = 0;
    assert_int_equal(kube_watch(c, &KUBE_RESOURCE_CONFIGMAPS, ns, &wo, on_watch_burst_bytes,
                                on_watch_burst_done, w, &watch),
                     0);
    return watch;
}

/* A client with the given watch receive buffer (0: the default) watches a
 * namespace of its own and creates WATCH_BURST ConfigMaps of 6 KB there, all
 * at once, as a controller's writes come back to it through its watch: the
 * answers and the events share the connection. Every event must arrive
 * within seconds of the last answer, with nothing else on the connection.
 * The API server may end a watch whose reader falls behind (its watch
 * cache closes an "unresponsive" watcher when the event cannot be handed
 * over in time: seen once in a run of four test lanes, 27 of 40 events
 * and then nothing); the end is delivered, and the test then does what
 * the informer does, a watch from the last event's resourceVersion.
 * Returns the client's pokes. */
static uint64_t watch_burst(struct fixture *f, long watch_buffer_bytes)
{
    struct kube_client_options o = {
        .qps = 1e6, .burst = 1000000, .watch_buffer_bytes = watch_buffer_bytes};
    struct kube_client *c = NULL;
    assert_int_equal(kube_client_new(&f->loop, f->config, &o, &c, NULL), 0);
    char *ns = harness_namespace("it-client-watch");
    struct watch_burst *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    struct kube_request *watch = watch_burst_start(c, ns, w);
    /* The watch starts at the API server's "now": events before it got
     * there are not sent. A first ConfigMap, seen through the watch, says it
     * is there (on a loaded machine half a second was not always enough:
     * 17 of 40 events and no stall to poke). */
    struct burst first = {.client = c};
    cJSON *marker = configmap("wb-first", "x");
    assert_int_equal(
        kube_create(c, &KUBE_RESOURCE_CONFIGMAPS, ns, marker, on_burst_answer, &first, NULL), 0);
    cJSON_Delete(marker);
    for (int i = 0; i < 600 && (first.answered < 1 || w->lines < 1); i++) {
        harness_run_for(&f->loop, 50);
        if (w->ended && w->lines < 1)
            watch = watch_burst_start(c, ns, w);
        if (first.answered >= 1 && w->lines < 1 && i % 20 == 19) {
            /* Created before the watch began: another, until one is seen. */
            char name[32];
            snprintf(name, sizeof(name), "wb-first-%d", i);
            marker = configmap(name, "x");
            assert_int_equal(kube_create(c, &KUBE_RESOURCE_CONFIGMAPS, ns, marker, on_burst_answer,
                                         &first, NULL),
                             0);
            cJSON_Delete(marker);
        }
    }
    assert_true(w->lines >= 1);
    char *value = malloc(WATCH_BURST_VALUE + 1);
    assert_non_null(value);
    memset(value, 'x', WATCH_BURST_VALUE);
    value[WATCH_BURST_VALUE] = '\0';
    struct burst b = {.client = c};
    for (int i = 0; i < WATCH_BURST; i++) {
        char name[32];
        snprintf(name, sizeof(name), "wb-%02d", i);
        cJSON *cm = configmap(name, value);
        assert_int_equal(
            kube_create(c, &KUBE_RESOURCE_CONFIGMAPS, ns, cm, on_burst_answer, &b, NULL), 0);
        cJSON_Delete(cm);
    }
    free(value);
    for (int i = 0; i < 400 && b.answered < WATCH_BURST; i++) {
        harness_run_for(&f->loop, 50);
        if (w->ended) {
            w->restarts++;
            watch = watch_burst_start(c, ns, w);
        }
    }
    assert_int_equal(b.answered, WATCH_BURST);
    assert_int_equal(b.failed, 0);
    uint64_t t0 = harness_now_ms();
    for (;;) {
        uint64_t spent = harness_now_ms() - t0;
        if (watch_burst_seen(w) == WATCH_BURST || spent >= 20000)
            break;
        harness_run_until(&f->loop, watch_burst_done, w, 20000 - spent);
        if (w->ended && watch_burst_seen(w) < WATCH_BURST) {
            print_message("  the API server ended the watch after %d of %d events; resumed from "
                          "resourceVersion %s\n",
                          watch_burst_seen(w), WATCH_BURST, w->resource_version);
            w->restarts++;
            watch = watch_burst_start(c, ns, w);
        }
    }
    uint64_t waited = (w->last_event_ms > t0 ? w->last_event_ms : t0) - t0;
    uint64_t pokes = kube_client_pokes(c);
    int seen = watch_burst_seen(w);
    print_message("  watch buffer %s: %d of %d events, the last %llu ms after the last answer, "
                  "%llu pokes, %d watches resumed\n",
                  watch_buffer_bytes ? "1 KiB" : "the default", seen, WATCH_BURST,
                  (unsigned long long)waited, (unsigned long long)pokes, w->restarts);
    if (!w->ended)
        kube_request_cancel(watch);
    kube_client_close(c);
    harness_namespace_delete(ns);
    free(ns);
    free(w);
    assert_int_equal(seen, WATCH_BURST);
    assert_true(waited < 10000);
    return pokes;
}

/* With a 1 KiB watch buffer every event's frame pauses libcurl's HTTP/2
 * layer, and the last event could stay in libcurl's input once the
 * creates' answers had come (3 of 3 runs waited out 20 s before the poke
 * existed). A watch whose write filled its buffer and then went quiet is
 * poked once. What is asserted is the behaviour: every event arrives, well
 * within the 20 s, with either buffer; whether a run needed the poke
 * depends on how the frames happened to arrive (printed, not asserted). */
static void test_watch_burst(void **state)
{
    watch_burst(*state, 0);
    watch_burst(*state, 1024);
}

/* A path that answers with bytes, not an API object: the API server's own
 * /healthz, a limit on what is read, and a pod proxy's error. */
static void test_get_path(void **state)
{
    struct fixture *f = *state;
    struct harness_call call = {0};
    struct raw_read rr = {&call, ""};
    assert_int_equal(kube_get_path(f->client, "/healthz", 1024, raw_cb, &rr, NULL), 0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, 0);
    assert_int_equal(call.http_code, 200);
    assert_string_equal(rr.text, "ok");
    harness_call_clear(&call);

    /* More than allowed: -EFBIG, nothing passed on. */
    call = (struct harness_call){0};
    rr.text[0] = '\0';
    assert_int_equal(kube_get_path(f->client, "/openapi/v2", 512, raw_cb, &rr, NULL), 0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, -EFBIG);
    assert_string_equal(rr.text, "");
    harness_call_clear(&call);

    /* A pod that does not exist: the API server's 404, as an API error. */
    call = (struct harness_call){0};
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/nobody:8080/proxy/canary", f->ns);
    assert_int_equal(kube_get_path(f->client, path, 1024, raw_cb, &rr, NULL), 0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, -EIO);
    assert_int_equal(call.http_code, 404);
    harness_call_clear(&call);

    /* Not a path. */
    assert_int_equal(kube_get_path(f->client, "healthz", 1024, raw_cb, &rr, NULL), -EINVAL);
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_get_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patches_and_conflicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pagination, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_subresource, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_and_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_priorities, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_flight_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stalled_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_burst, setup, teardown),
    };
    return cmocka_run_group_tests_name("api client", tests, NULL, NULL);
}
