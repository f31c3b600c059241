/* snapshot/backend: the table of snapshot backends. The helpers that ask
 * every started backend pass one backend's answers through unchanged (the
 * reconciler with only GKE behaves as when it called GKE directly), and
 * with several they ask the class's first and skip those not started. The
 * GKE adapter starts or refuses as gke_snapshots_*() do, and its handles
 * cancel without a callback. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kube/client.h"
#include "kube/config.h"
#include "snapshot/backend.h"
#include "snapshot/gke_backend.h"

/* ---- a backend that answers from fixed facts ---- */

struct fake {
    struct snapshot_backend base; /* first, as in every backend */
    int start_fails;
    int starts;
    struct snapshot_view view; /* what view() answers (attempt set to the one asked) */
    size_t n_list;             /* list() answers this many views named list_name */
    const char *list_name;
    int storage_rc;
    const char *storage;
    int deleted, live;
};

static struct fake *fake_of(const struct snapshot_backend *b)
{
    return (struct fake *)b;
}

static int fake_start(struct snapshot_backend *b)
{
    fake_of(b)->starts++;
    return fake_of(b)->start_fails ? -EIO : 0;
}

static void fake_view(const struct snapshot_backend *b, const char *ns, const char *attempt,
                      struct snapshot_view *ret)
{
    (void)ns;
    *ret = fake_of(b)->view;
    ret->attempt = attempt;
}

static size_t fake_list(const struct snapshot_backend *b, const char *ns, const char *workspace,
                        struct snapshot_view *out, size_t max)
{
    (void)ns;
    (void)workspace;
    size_t n = 0;
    for (; n < fake_of(b)->n_list && n < max; n++)
        out[n] =
            (struct snapshot_view){.name = fake_of(b)->list_name, .phase = SNAPSHOT_PHASE_READY};
    return n;
}

static int fake_storage(const struct snapshot_backend *b, const char *ns, const char *workspace,
                        const char **ret)
{
    (void)ns;
    (void)workspace;
    *ret = fake_of(b)->storage_rc == 1 ? fake_of(b)->storage : NULL;
    return fake_of(b)->storage_rc;
}

static void fake_deleted(struct snapshot_backend *b, const char *ns, const char *workspace)
{
    (void)ns;
    (void)workspace;
    fake_of(b)->deleted++;
}

static void fake_live(struct snapshot_backend *b, const char *ns, const char *workspace)
{
    (void)ns;
    (void)workspace;
    fake_of(b)->live++;
}

static void fake_walked(const struct snapshot_backend *b, snapshot_walked_cb cb, void *data)
{
    (void)b;
    cb(data, "fakes", 7);
}

static const struct snapshot_backend_ops fake_ops = {
    .name = "Fake Snapshots",
    .start = fake_start,
    .view = fake_view,
    .list = fake_list,
    .storage = fake_storage,
    .workspace_deleted = fake_deleted,
    .workspace_live = fake_live,
    .walked = fake_walked,
};

static void fake_init(struct fake *f)
{
    *f = (struct fake){.base = {.ops = &fake_ops}};
}

/* ---- one backend: its answers as they are ---- */

static void test_one_backend_passes_through(void **state)
{
    (void)state;
    struct fake a;
    fake_init(&a);
    struct snapshot_backend *table[SNAPSHOT_BACKEND_KINDS] = {0};
    table[SNAPSHOT_BACKEND_GKE] = &a.base;
    assert_ptr_equal(snapshot_backend_of(table, SNAPSHOT_BACKEND_GKE), &a.base);
    assert_null(snapshot_backend_of(table, SNAPSHOT_BACKEND_NONE));
    assert_null(snapshot_backend_of(table, (enum snapshot_backend_kind)99));

    /* Not started: nothing is asked; the view is unknown, as a backend
     * says before its caches synced. */
    struct snapshot_view v;
    snapshot_backends_view(table, &a.base, "team", "nb-p1-1", &v);
    assert_true(v.unknown);
    assert_int_equal(v.phase, SNAPSHOT_PHASE_IN_PROGRESS);
    assert_string_equal(v.attempt, "nb-p1-1");
    struct snapshot_view list[4];
    struct snapshot_backend *from[4];
    a.n_list = 2;
    a.list_name = "ps-a";
    assert_int_equal(snapshot_backends_list(table, NULL, "team", "nb", list, from, 4), 0);
    const char *storage = "x";
    assert_int_equal(snapshot_backends_storage(table, NULL, "team", "nb", &storage), -1);
    assert_null(storage);
    snapshot_backends_workspace_deleted(table, "team", "nb");
    snapshot_backends_workspace_live(table, "team", "nb");
    assert_int_equal(a.deleted + a.live, 0);

    /* A failed start is tried again, and only a success counts. */
    a.start_fails = 1;
    assert_int_equal(snapshot_backend_start(&a.base), -EIO);
    assert_false(a.base.started);
    a.start_fails = 0;
    assert_int_equal(snapshot_backend_start(&a.base), 0);
    assert_int_equal(snapshot_backend_start(&a.base), 0);
    assert_int_equal(a.starts, 2);
    assert_true(a.base.started);

    /* Started: each of its views as it is, seen, none or unknown. */
    const struct snapshot_view answers[] = {
        {.phase = SNAPSHOT_PHASE_READY, .name = "ps-1"},
        {.phase = SNAPSHOT_PHASE_NONE},
        {.phase = SNAPSHOT_PHASE_IN_PROGRESS, .unknown = 1},
        {.phase = SNAPSHOT_PHASE_FAILED, .message = "no"},
    };
    for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
        a.view = answers[i];
        snapshot_backends_view(table, NULL, "team", "nb-p1-1", &v);
        assert_int_equal(v.phase, answers[i].phase);
        assert_int_equal(v.unknown, answers[i].unknown);
        assert_ptr_equal(v.name, answers[i].name);
        assert_ptr_equal(v.message, answers[i].message);
        assert_string_equal(v.attempt, "nb-p1-1");
    }
    assert_int_equal(snapshot_backends_list(table, NULL, "team", "nb", list, from, 4), 2);
    assert_ptr_equal(from[0], &a.base);
    assert_ptr_equal(from[1], &a.base);
    assert_int_equal(snapshot_backends_list(table, NULL, "team", "nb", list, NULL, 1), 1);
    const int storage_rcs[] = {-1, 0, 1};
    a.storage = "bucket";
    for (size_t i = 0; i < 3; i++) {
        a.storage_rc = storage_rcs[i];
        assert_int_equal(snapshot_backends_storage(table, NULL, "team", "nb", &storage),
                         storage_rcs[i]);
        if (storage_rcs[i] == 1)
            assert_string_equal(storage, "bucket");
        else
            assert_null(storage);
    }
    snapshot_backends_workspace_deleted(table, "team", "nb");
    snapshot_backends_workspace_live(table, "team", "nb");
    assert_int_equal(a.deleted, 1);
    assert_int_equal(a.live, 1);
}

/* ---- several: the class's first, the others by kind, started ones only ---- */

static void test_several_backends(void **state)
{
    (void)state;
    struct fake a, b;
    fake_init(&a);
    fake_init(&b);
    /* Any two slots do: the helpers walk the whole table. */
    struct snapshot_backend *table[SNAPSHOT_BACKEND_KINDS] = {0};
    table[0] = &a.base;
    table[SNAPSHOT_BACKEND_KINDS - 1] = &b.base;
    assert_int_equal(snapshot_backend_start(&a.base), 0);
    assert_int_equal(snapshot_backend_start(&b.base), 0);

    /* The backend that holds the attempt answers, whichever is first. */
    a.view = (struct snapshot_view){.phase = SNAPSHOT_PHASE_NONE};
    b.view = (struct snapshot_view){.phase = SNAPSHOT_PHASE_READY, .name = "ps-b"};
    struct snapshot_view v;
    snapshot_backends_view(table, &a.base, "team", "nb-p1-1", &v);
    assert_string_equal(v.name, "ps-b");
    /* None holds it and one cannot say: unknown (decide() waits). */
    b.view = (struct snapshot_view){.phase = SNAPSHOT_PHASE_IN_PROGRESS, .unknown = 1};
    snapshot_backends_view(table, &a.base, "team", "nb-p1-1", &v);
    assert_true(v.unknown);
    /* None holds it: nothing is seen. */
    b.view = (struct snapshot_view){.phase = SNAPSHOT_PHASE_NONE};
    snapshot_backends_view(table, &a.base, "team", "nb-p1-1", &v);
    assert_false(v.unknown);
    assert_int_equal(v.phase, SNAPSHOT_PHASE_NONE);

    /* Lists follow each other, the first's first, up to max. */
    a.n_list = 2;
    a.list_name = "ps-a";
    b.n_list = 3;
    b.list_name = "ps-b";
    struct snapshot_view list[4];
    struct snapshot_backend *from[4];
    assert_int_equal(snapshot_backends_list(table, &b.base, "team", "nb", list, from, 4), 4);
    assert_string_equal(list[0].name, "ps-b");
    assert_ptr_equal(from[2], &b.base);
    assert_string_equal(list[3].name, "ps-a");
    assert_ptr_equal(from[3], &a.base);

    /* Storage: the first that knows one; else -1 while one cannot say. */
    a.storage_rc = 1;
    a.storage = "bucket-a";
    b.storage_rc = 1;
    b.storage = "bucket-b";
    const char *storage = NULL;
    assert_int_equal(snapshot_backends_storage(table, &b.base, "team", "nb", &storage), 1);
    assert_string_equal(storage, "bucket-b");
    b.storage_rc = 0;
    assert_int_equal(snapshot_backends_storage(table, &b.base, "team", "nb", &storage), 1);
    assert_string_equal(storage, "bucket-a");
    a.storage_rc = -1;
    assert_int_equal(snapshot_backends_storage(table, &b.base, "team", "nb", &storage), -1);
    a.storage_rc = 0;
    assert_int_equal(snapshot_backends_storage(table, &b.base, "team", "nb", &storage), 0);

    /* A backend not started is not asked. */
    b.base.started = 0;
    assert_int_equal(snapshot_backends_list(table, &b.base, "team", "nb", list, from, 4), 2);
    assert_ptr_equal(from[0], &a.base);
    snapshot_backends_workspace_deleted(table, "team", "nb");
    snapshot_backends_workspace_live(table, "team", "nb");
    assert_int_equal(a.deleted + a.live, 2);
    assert_int_equal(b.deleted + b.live, 0);
}

/* ---- the GKE adapter ---- */

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

struct walked {
    const char *resources[8];
    uint64_t totals[8];
    size_t n;
};

static void on_walked(void *data, const char *resource, uint64_t total)
{
    struct walked *w = data;
    assert_true(w->n < 8);
    w->resources[w->n] = resource;
    w->totals[w->n++] = total;
}

static void test_gke_table(void **state)
{
    (void)state;
    uv_loop_t loop;
    struct kube_client *client = NULL;
    /* Nothing listens there: no request gets far before it is cancelled. */
    struct kube_config cfg = {.server = "https://127.0.0.1:9", .token = "t", .namespace = "team"};
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(kube_client_new(&loop, &cfg, NULL, &client, NULL), 0);
    struct snapshot_backend_options o = {&loop, client, "team", on_changed, NULL};
    struct snapshot_backend *table[SNAPSHOT_BACKEND_KINDS];
    assert_int_equal(snapshot_backends_new(&o, table), 0);
    assert_null(table[SNAPSHOT_BACKEND_NONE]);
    struct snapshot_backend *gke = snapshot_backend_of(table, SNAPSHOT_BACKEND_GKE);
    assert_non_null(gke);
    assert_string_equal(snapshot_backend_name(gke), "GKE Pod Snapshots");
    const char *const *labels = snapshot_backend_node_labels(gke);
    assert_non_null(labels);
    assert_string_equal(labels[0], "cloud.google.com/machine-family");
    assert_non_null(labels[2]);
    assert_null(labels[3]);
    assert_null(snapshot_backend_node_labels(NULL));

    /* GKE's caches under the metric's names, 0 before they start (other
     * backends of the table add their own). */
    struct walked w = {0};
    snapshot_backends_walked(table, on_walked, &w);
    size_t i = 0;
    while (i < w.n && strcmp(w.resources[i], "podsnapshots") != 0)
        i++;
    assert_true(i + 3 <= w.n);
    assert_string_equal(w.resources[i + 1], "podsnapshotmanualtriggers");
    assert_string_equal(w.resources[i + 2], "podsnapshotpolicies");
    assert_int_equal(w.totals[i] + w.totals[i + 1] + w.totals[i + 2], 0);

    /* Begin and delete start or say why, as gke_snapshots_*() do. */
    cJSON *ok = cJSON_Parse("{\"policy\": {\"metadata\": {\"name\": \"nb\"}},"
                            " \"trigger\": {\"metadata\": {\"name\": \"nb-p1-1\"}},"
                            " \"keepPolicy\": true}");
    cJSON *bad = cJSON_Parse("{\"trigger\": {}}");
    assert_non_null(ok);
    assert_non_null(bad);
    struct snapshot_op *op = NULL;
    assert_int_equal(snapshot_backend_begin(gke, "team", bad, on_done, NULL, &op), -EINVAL);
    assert_null(op);
    assert_int_equal(snapshot_backend_begin(NULL, "team", ok, on_done, NULL, &op), -EINVAL);
    assert_int_equal(snapshot_backend_begin(gke, "team", ok, on_done, NULL, &op), 0);
    assert_non_null(op);
    struct snapshot_op *del = NULL;
    assert_int_equal(snapshot_backend_delete(gke, "team", NULL, on_done, NULL, &del), -EINVAL);
    assert_null(del);
    assert_int_equal(snapshot_backend_delete(gke, "team", "ps-1", on_done, NULL, &del), 0);
    assert_non_null(del);
    /* Handles outlive their backend and cancel without a callback. */
    snapshot_backends_free(table);
    assert_null(table[SNAPSHOT_BACKEND_GKE]);
    snapshot_op_cancel(op);
    snapshot_op_cancel(del);
    snapshot_op_cancel(NULL);
    cJSON_Delete(ok);
    cJSON_Delete(bad);
    kube_client_close(client);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(callbacks, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_backend_passes_through),
        cmocka_unit_test(test_several_backends),
        cmocka_unit_test(test_gke_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
