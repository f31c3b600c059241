/* snapshot/gke: a snapshot's begin and delete either start, handing out a
 * handle, or say why not (a negative errno) with no handle and no callback,
 * as the API client's starters do. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kube/client.h"
#include "kube/config.h"
#include "snapshot/gke.h"

static int callbacks;

static void on_done(void *data, int status, const char *error)
{
    (void)data;
    (void)status;
    (void)error;
    callbacks++;
}

static void on_changed(void *data, const char *key)
{
    (void)data;
    (void)key;
}

struct fx {
    uv_loop_t loop;
    struct kube_client *client;
    struct gke_snapshots *gke;
};

static int setup(void **state)
{
    static struct fx fx;
    /* Nothing listens there: no request gets far before it is cancelled. */
    struct kube_config cfg = {.server = "https://127.0.0.1:9", .token = "t", .namespace = "team"};
    assert_int_equal(uv_loop_init(&fx.loop), 0);
    assert_int_equal(kube_client_new(&fx.loop, &cfg, NULL, &fx.client, NULL), 0);
    assert_int_equal(gke_snapshots_new(&fx.loop, fx.client, "team", on_changed, NULL, &fx.gke), 0);
    callbacks = 0;
    *state = &fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;
    gke_snapshots_free(fx->gke);
    kube_client_close(fx->client); /* a second close is ignored */
    uv_run(&fx->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&fx->loop), 0);
    /* Neither what was refused nor what was cancelled calls back. */
    assert_int_equal(callbacks, 0);
    return 0;
}

static cJSON *bodies(void)
{
    cJSON *b = cJSON_Parse("{\"policy\": {\"metadata\": {\"name\": \"nb\"}},"
                           " \"trigger\": {\"metadata\": {\"name\": \"nb-p1-1\"}},"
                           " \"keepPolicy\": true}");
    assert_non_null(b);
    return b;
}

static void test_begin_starts_or_says_why(void **state)
{
    struct fx *fx = *state;
    cJSON *ok = bodies(), *no_trigger = bodies();
    cJSON_DeleteItemFromObject(no_trigger, "trigger");
    struct gke_begin *b = NULL;
    assert_int_equal(gke_snapshots_begin(fx->gke, "team", no_trigger, on_done, NULL, &b), -EINVAL);
    assert_null(b);
    assert_int_equal(gke_snapshots_begin(fx->gke, "team", NULL, on_done, NULL, &b), -EINVAL);
    assert_null(b);
    assert_int_equal(gke_snapshots_begin(fx->gke, "team", ok, on_done, NULL, &b), 0);
    assert_non_null(b);
    gke_begin_cancel(b);
    /* A closing client refuses: the caller is told, and gets no handle. */
    kube_client_close(fx->client);
    b = NULL;
    assert_int_equal(gke_snapshots_begin(fx->gke, "team", ok, on_done, NULL, &b), -ESHUTDOWN);
    assert_null(b);
    cJSON_Delete(ok);
    cJSON_Delete(no_trigger);
}

static void test_delete_starts_or_says_why(void **state)
{
    struct fx *fx = *state;
    struct gke_delete *x = NULL;
    assert_int_equal(gke_snapshots_delete(fx->gke, "team", NULL, on_done, NULL, &x), -EINVAL);
    assert_null(x);
    assert_int_equal(gke_snapshots_delete(fx->gke, "team", "nb-p1-1", on_done, NULL, &x), 0);
    assert_non_null(x);
    gke_delete_cancel(x);
    kube_client_close(fx->client);
    x = NULL;
    assert_int_equal(gke_snapshots_delete(fx->gke, "team", "nb-p1-1", on_done, NULL, &x),
                     -ESHUTDOWN);
    assert_null(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_begin_starts_or_says_why, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_starts_or_says_why, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
