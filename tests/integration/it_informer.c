/*
 * The informer against the real API server: events arrive in order; after
 * the API server restarts mid-watch, and after etcd is compacted past the
 * watch's resourceVersion (410 Gone), the cache converges to exactly what a
 * fresh list says, with no lost and no phantom objects. And the node cache
 * built on it: the labels it keeps, a new label kept later, and what it
 * says of a node that comes, changes and goes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "kube/informer.h"
#include "kube/node_cache.h"
#include "util/buf.h"

#define LABEL "suite=it-informer"

struct event {
    char type; /* 'A', 'U', 'D' */
    char name[64];
    char value[32];
};

struct fixture {
    uv_loop_t loop;
    struct kube_config *config;
    struct kube_client *client;
    struct informer *inf;
    char *ns;
    struct event events[256];
    int n_events;
    int synced;
};

static void record(struct fixture *f, char type, const struct cache_entry *e)
{
    assert_true(f->n_events < 256);
    struct event *ev = &f->events[f->n_events++];
    ev->type = type;
    snprintf(ev->name, sizeof(ev->name), "%s", e->name);
    cJSON *obj = cJSON_Parse(e->obj);
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "data"), "v");
    snprintf(ev->value, sizeof(ev->value), "%s", cJSON_IsString(v) ? v->valuestring : "");
    cJSON_Delete(obj);
}

static void on_add(void *data, const struct cache_entry *e)
{
    record(data, 'A', e);
}

static void on_update(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    (void)old_e;
    record(data, 'U', e);
}

static void on_delete(void *data, const struct cache_entry *e)
{
    record(data, 'D', e);
}

static void on_synced(void *data)
{
    ((struct fixture *)data)->synced = 1;
}

static int is_synced(void *data)
{
    return ((struct fixture *)data)->synced;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    uv_loop_init(&f->loop);
    f->config = harness_config(NULL);
    f->client = harness_client(&f->loop, f->config);
    f->ns = harness_namespace("it-informer");
    *state = f;
    return 0;
}

static void start_informer(struct fixture *f)
{
    struct informer_options o = {
        .resource = &KUBE_RESOURCE_CONFIGMAPS,
        .ns = f->ns,
        .label_selector = LABEL,
        .page_size = 7, /* several pages even for small tests */
        .handlers = {on_add, on_update, on_delete, on_synced, f},
    };
    assert_int_equal(informer_new(&f->loop, f->client, &o, &f->inf), 0);
    assert_int_equal(informer_start(f->inf), 0);
    assert_true(harness_run_until(&f->loop, is_synced, f, 30000));
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    harness_namespace_delete(f->ns);
    informer_free(f->inf);
    kube_client_close(f->client);
    harness_loop_close(&f->loop);
    kube_config_free(f->config);
    free(f->ns);
    free(f);
    return 0;
}

/* kubectl, blocking: the loop (and so the informer) does not run meanwhile. */
static void cm_apply(struct fixture *f, const char *name, const char *value)
{
    assert_int_equal(harness_apply("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                                   "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
                                   "\"labels\":{\"suite\":\"it-informer\"}},"
                                   "\"data\":{\"v\":\"%s\"}}",
                                   name, f->ns, value),
                     0);
}

static void cm_delete(struct fixture *f, const char *name)
{
    assert_int_equal(harness_kubectl(NULL, "-n %s delete configmap %s", f->ns, name), 0);
}

static int count_events(void *data)
{
    return ((struct fixture *)data)->n_events >= 5;
}

static void test_events_in_order(void **state)
{
    struct fixture *f = *state;
    cm_apply(f, "before", "0");
    start_informer(f);
    assert_int_equal(f->n_events, 1); /* the list's add */
    assert_int_equal(informer_len(f->inf), 1);

    cm_apply(f, "a", "1");
    cm_apply(f, "a", "2");
    cm_apply(f, "b", "1");
    cm_delete(f, "a");
    assert_true(harness_run_until(&f->loop, count_events, f, 30000));
    harness_run_for(&f->loop, 300); /* nothing more may arrive */
    assert_int_equal(f->n_events, 5);
    const struct event want[] = {
        {'A', "before", "0"}, {'A', "a", "1"}, {'U', "a", "2"}, {'A', "b", "1"}, {'D', "a", ""}};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(f->events[i].type, want[i].type);
        assert_string_equal(f->events[i].name, want[i].name);
        if (want[i].type != 'D')
            assert_string_equal(f->events[i].value, want[i].value);
    }
    assert_null(informer_get(f->inf, f->ns, "a"));
    assert_non_null(informer_get(f->inf, f->ns, "b"));
    assert_int_equal(informer_len(f->inf), 2);
}

/* name -> resourceVersion of every object a fresh list returns, as "n=rv;" text. */
static char *fresh_list(struct fixture *f)
{
    struct harness_call call = {0};
    struct kube_list_options o = {.label_selector = LABEL};
    assert_int_equal(
        kube_list(f->client, &KUBE_RESOURCE_CONFIGMAPS, f->ns, &o, harness_call_cb, &call, NULL),
        0);
    harness_call_wait(&f->loop, &call);
    assert_int_equal(call.status, 0);
    /* Items come sorted by name from etcd; the text is comparable. */
    struct buf b;
    buf_init(&b, 1 << 20);
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(call.body, "items"))
    {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(item, "metadata");
        assert_int_equal(
            buf_printf(&b, "%s=%s;", cJSON_GetObjectItemCaseSensitive(m, "name")->valuestring,
                       cJSON_GetObjectItemCaseSensitive(m, "resourceVersion")->valuestring),
            0);
    }
    harness_call_clear(&call);
    return buf_steal(&b);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

struct collect {
    char *items[256];
    int n;
};

static void collect_entry(void *data, const struct cache_entry *e)
{
    struct collect *c = data;
    char *s = NULL;
    assert_true(asprintf(&s, "%s=%s;", e->name, e->resource_version) > 0);
    c->items[c->n++] = s;
}

static char *cache_text(struct fixture *f)
{
    struct collect c = {0};
    informer_foreach(f->inf, collect_entry, &c);
    qsort(c.items, (size_t)c.n, sizeof(char *), cmp_str);
    struct buf b;
    buf_init(&b, 1 << 20);
    for (int i = 0; i < c.n; i++) {
        assert_int_equal(buf_append_str(&b, c.items[i]), 0);
        free(c.items[i]);
    }
    return buf_steal(&b);
}

static int converged(void *data)
{
    struct fixture *f = data;
    char *want = fresh_list(f), *have = cache_text(f);
    int same = strcmp(want, have) == 0;
    free(want);
    free(have);
    return same;
}

static int count_of(struct fixture *f, char type, const char *name)
{
    int n = 0;
    for (int i = 0; i < f->n_events; i++)
        n += f->events[i].type == type && strcmp(f->events[i].name, name) == 0;
    return n;
}

/* Names k0..k9 exist; while the informer is away, k0..k2 go, k3 changes, n0..n2 come. */
static void churn_while_away(struct fixture *f, int compact)
{
    for (int i = 0; i < 10; i++) {
        char name[8];
        snprintf(name, sizeof(name), "k%d", i);
        cm_apply(f, name, "1");
    }
    start_informer(f);
    assert_int_equal(informer_len(f->inf), 10);
    f->n_events = 0;

    assert_int_equal(harness_cluster("restart-apiserver"), 0);
    cm_delete(f, "k0");
    cm_delete(f, "k1");
    cm_delete(f, "k2");
    cm_apply(f, "k3", "2");
    cm_apply(f, "n0", "1");
    cm_apply(f, "n1", "1");
    cm_apply(f, "n2", "1");
    if (compact)
        assert_int_equal(harness_cluster("compact-etcd"), 0);

    uint64_t t0 = harness_now_ms();
    assert_true(harness_run_until(&f->loop, converged, f, 60000));
    print_message("converged %llu ms after the loop resumed; lists=%llu relists=%llu "
                  "watch errors=%llu\n",
                  (unsigned long long)(harness_now_ms() - t0),
                  (unsigned long long)informer_stats(f->inf).lists,
                  (unsigned long long)informer_stats(f->inf).relists,
                  (unsigned long long)informer_stats(f->inf).watch_errors);
    harness_run_for(&f->loop, 500);
    assert_true(converged(f));

    /* Exactly the changes, each once: nothing lost, nothing invented. */
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof(name), "k%d", i);
        assert_int_equal(count_of(f, 'D', name), 1);
        snprintf(name, sizeof(name), "n%d", i);
        assert_int_equal(count_of(f, 'A', name), 1);
        assert_int_equal(count_of(f, 'D', name), 0);
    }
    assert_int_equal(count_of(f, 'U', "k3"), 1);
    for (int i = 4; i < 10; i++) {
        char name[8];
        snprintf(name, sizeof(name), "k%d", i);
        assert_int_equal(count_of(f, 'D', name), 0);
        assert_int_equal(count_of(f, 'A', name), 0);
    }
    assert_int_equal(informer_len(f->inf), 10);
}

static void test_apiserver_restart(void **state)
{
    struct fixture *f = *state;
    churn_while_away(f, 0);
    assert_true(informer_stats(f->inf).watch_errors + informer_stats(f->inf).relists >= 1);
}

static void test_gone_relists(void **state)
{
    struct fixture *f = *state;
    churn_while_away(f, 1);
    assert_true(informer_stats(f->inf).relists >= 1);
}

/* ---- objects the codec cannot read ------------------------------------------- */

/* Refuses a ConfigMap whose data.v is "bad", as a controller's codec
 * refuses a value the API server accepted. */
static int picky_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "data"), "v");
    if (cJSON_IsString(v) && strcmp(v->valuestring, "bad") == 0) {
        *ret_err = strdup("data.v: \"bad\" is refused");
        return -EINVAL;
    }
    return informer_codec_json.decode(obj, data, ret, ret_err);
}

static const struct informer_codec picky_codec = {picky_decode, free, NULL};

static void start_picky_informer(struct fixture *f)
{
    struct informer_options o = {
        .resource = &KUBE_RESOURCE_CONFIGMAPS,
        .ns = f->ns,
        .label_selector = LABEL,
        .page_size = 7,
        .codec = &picky_codec,
        .handlers = {on_add, on_update, on_delete, on_synced, f},
    };
    assert_int_equal(informer_new(&f->loop, f->client, &o, &f->inf), 0);
    assert_int_equal(informer_start(f->inf), 0);
    assert_true(harness_run_until(&f->loop, is_synced, f, 30000));
}

static void assert_unreadable(struct fixture *f, const char *name)
{
    const struct cache_entry *e = informer_get(f->inf, f->ns, name);
    assert_non_null(e);
    assert_null(e->obj);
    assert_non_null(e->error);
    assert_string_equal(e->error, "data.v: \"bad\" is refused");
}

static int has_events(void *data)
{
    struct fixture *f = data;
    return f->n_events >= 1;
}

/* An object the codec refuses is kept and named, never ends the watch,
 * never reads as deleted (not after a relist either), and a fix is seen. */
static void test_unreadable_objects(void **state)
{
    struct fixture *f = *state;
    cm_apply(f, "good1", "1");
    cm_apply(f, "bad1", "bad");
    start_picky_informer(f);
    assert_int_equal(informer_len(f->inf), 2);
    assert_unreadable(f, "bad1");
    assert_non_null(informer_get(f->inf, f->ns, "good1")->obj);
    assert_int_equal(informer_stats(f->inf).unreadable, 1);

    /* Through the watch: an unreadable object, then a readable one behind it. */
    f->n_events = 0;
    cm_apply(f, "bad2", "bad");
    cm_apply(f, "good2", "1");
    uint64_t t0 = harness_now_ms();
    while (f->n_events < 2 && harness_now_ms() - t0 < 30000)
        harness_run_for(&f->loop, 50);
    assert_int_equal(f->n_events, 2);
    assert_int_equal(f->events[0].type, 'A');
    assert_string_equal(f->events[0].name, "bad2");
    assert_int_equal(f->events[1].type, 'A');
    assert_string_equal(f->events[1].name, "good2");
    assert_unreadable(f, "bad2");
    assert_int_equal(informer_stats(f->inf).watch_errors, 0);
    assert_int_equal(informer_stats(f->inf).unreadable, 2);
    /* The cache reflects the unreadable object's resourceVersion too. */
    assert_true(converged(f));

    /* A fix is an update with the decoded object. */
    f->n_events = 0;
    cm_apply(f, "bad1", "2");
    assert_true(harness_run_until(&f->loop, has_events, f, 30000));
    assert_int_equal(f->events[0].type, 'U');
    assert_string_equal(f->events[0].value, "2");
    assert_non_null(informer_get(f->inf, f->ns, "bad1")->obj);

    /* After 410 Gone the relist keeps the unreadable object, says nothing
     * new of it, and deletes nothing. */
    f->n_events = 0;
    uint64_t unreadable = informer_stats(f->inf).unreadable;
    assert_int_equal(harness_cluster("restart-apiserver"), 0);
    cm_apply(f, "good3", "1");
    assert_int_equal(harness_cluster("compact-etcd"), 0);
    assert_true(harness_run_until(&f->loop, converged, f, 60000));
    harness_run_for(&f->loop, 500);
    assert_unreadable(f, "bad2");
    assert_int_equal(count_of(f, 'D', "bad2"), 0);
    assert_int_equal(count_of(f, 'A', "good3"), 1);
    assert_int_equal(informer_stats(f->inf).unreadable, unreadable);

    /* Deleting it is a delete like any other. */
    f->n_events = 0;
    cm_delete(f, "bad2");
    assert_true(harness_run_until(&f->loop, has_events, f, 30000));
    assert_int_equal(count_of(f, 'D', "bad2"), 1);
    assert_null(informer_get(f->inf, f->ns, "bad2"));
}

/* ---- the node cache -------------------------------------------------------- */

struct node_watch {
    struct node_cache *nc;
    int lists;        /* callbacks for a whole list */
    char changed[16]; /* node callbacks for the test's node, in order: 'c' each */
    size_t n_changed;
    const char *node;
};

static void on_node(void *data, const char *node)
{
    struct node_watch *w = data;
    if (!node)
        w->lists++;
    else if (strcmp(node, w->node) == 0 && w->n_changed < sizeof(w->changed) - 1)
        w->changed[w->n_changed++] = 'c';
}

static int node_synced(void *data)
{
    return node_cache_synced(((struct node_watch *)data)->nc);
}

static int node_label_is(void *data)
{
    struct node_watch *w = data;
    const char *v = node_cache_label(w->nc, w->node, "nvidia.com/gpu.product");
    return v && strcmp(v, "NVIDIA-L4") == 0;
}

static int node_gone(void *data)
{
    struct node_watch *w = data;
    return node_cache_lookup(w->nc, w->node) == NODE_ABSENT;
}

/* A resource the API server does not serve (no CRD): the informer says so
 * from its first answer, which is what lets a snapshot backend say that
 * no snapshot of it can exist; once the CRD is installed, it lists. */
static const struct kube_resource UNSERVED = {"it-informer.hibernator.dev", "v1", "probes", "Probe",
                                              1};

static int not_served(void *data)
{
    return informer_not_served(((struct fixture *)data)->inf);
}

static int served_and_synced(void *data)
{
    const struct fixture *f = data;
    return f->synced && !informer_not_served(f->inf);
}

static void test_not_served(void **state)
{
    struct fixture *f = *state;
    struct informer_options o = {
        .resource = &UNSERVED,
        .ns = f->ns,
        .handlers = {on_add, on_update, on_delete, on_synced, f},
    };
    assert_int_equal(informer_new(&f->loop, f->client, &o, &f->inf), 0);
    assert_int_equal(informer_not_served(f->inf), 0); /* nothing asked yet */
    assert_int_equal(informer_start(f->inf), 0);
    assert_true(harness_run_until(&f->loop, not_served, f, 30000));
    assert_int_equal(informer_has_synced(f->inf), 0);
    print_message("  not served: the list answered 404\n");

    assert_int_equal(harness_apply("apiVersion: apiextensions.k8s.io/v1\n"
                                   "kind: CustomResourceDefinition\n"
                                   "metadata: {name: probes.it-informer.hibernator.dev}\n"
                                   "spec:\n"
                                   "  group: it-informer.hibernator.dev\n"
                                   "  names: {kind: Probe, plural: probes, singular: probe}\n"
                                   "  scope: Namespaced\n"
                                   "  versions:\n"
                                   "  - name: v1\n"
                                   "    served: true\n"
                                   "    storage: true\n"
                                   "    schema: {openAPIV3Schema: {type: object}}\n"),
                     0);
    int listed = harness_run_until(&f->loop, served_and_synced, f, 60000);
    harness_kubectl(NULL, "delete crd probes.it-informer.hibernator.dev --wait=false");
    assert_true(listed);
    print_message("  served once its CRD is installed: listed\n");
}

static void test_node_cache(void **state)
{
    struct fixture *f = *state;
    char node[64];
    snprintf(node, sizeof(node), "it-informer-%ld", (long)getpid());
    struct node_watch w = {.node = node};
    assert_int_equal(node_cache_new(&f->loop, f->client, on_node, &w, &w.nc), 0);
    assert_int_equal(node_cache_lookup(w.nc, "gpu-node-1"), NODE_UNKNOWN);
    assert_int_equal(node_cache_keep_label(w.nc, "nvidia.com/gpu.product"), 0);
    assert_int_equal(node_cache_keep_label(w.nc, "nvidia.com/gpu.product"), 0);
    assert_int_equal(node_cache_keep_label(w.nc, ""), -EINVAL);
    assert_int_equal(node_cache_start(w.nc), 0);
    assert_true(harness_run_until(&f->loop, node_synced, &w, 30000));
    assert_int_equal(w.lists, 1);

    /* The cluster's nodes, with the kept label only. */
    assert_int_equal(node_cache_lookup(w.nc, "gpu-node-1"), NODE_PRESENT);
    assert_int_equal(node_cache_lookup(w.nc, "no-such-node"), NODE_ABSENT);
    assert_string_equal(node_cache_label(w.nc, "gpu-node-1", "nvidia.com/gpu.product"), "Tesla-T4");
    assert_null(node_cache_label(w.nc, "cpu-node-1", "nvidia.com/gpu.product"));
    assert_null(node_cache_label(w.nc, "gpu-node-1", "cloud.google.com/gke-accelerator"));

    /* Another label: listed again, then kept too. */
    assert_int_equal(node_cache_keep_label(w.nc, "cloud.google.com/gke-accelerator"), 0);
    assert_false(node_cache_synced(w.nc));
    assert_int_equal(node_cache_lookup(w.nc, "gpu-node-1"), NODE_UNKNOWN);
    assert_true(harness_run_until(&f->loop, node_synced, &w, 30000));
    assert_int_equal(w.lists, 2);
    assert_string_equal(node_cache_label(w.nc, "gpu-node-1", "cloud.google.com/gke-accelerator"),
                        "nvidia-tesla-t4");
    assert_string_equal(node_cache_label(w.nc, "gpu-node-1", "nvidia.com/gpu.product"), "Tesla-T4");

    /* A node comes, its product changes, it goes: each is said. */
    assert_int_equal(harness_apply("apiVersion: v1\nkind: Node\n"
                                   "metadata:\n  name: %s\n"
                                   "  labels: {type: it-informer, nvidia.com/gpu.product: "
                                   "Tesla-V100}\n"
                                   "spec:\n  unschedulable: true\n",
                                   node),
                     0);
    assert_int_equal(
        harness_kubectl(NULL, "label node %s --overwrite nvidia.com/gpu.product=NVIDIA-L4", node),
        0);
    assert_true(harness_run_until(&f->loop, node_label_is, &w, 30000));
    /* A change of another label is not one of the cache's. */
    assert_int_equal(harness_kubectl(NULL, "label node %s other=1", node), 0);
    harness_run_for(&f->loop, 500);
    assert_int_equal(harness_kubectl(NULL, "delete node %s", node), 0);
    assert_true(harness_run_until(&f->loop, node_gone, &w, 30000));
    harness_run_for(&f->loop, 300);
    /* added, relabelled, deleted: the other label was not the cache's business */
    assert_int_equal(w.n_changed, 3);
    assert_int_equal(w.lists, 2);
    node_cache_free(w.nc);
}

int main(void)
{
    harness_require_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_events_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apiserver_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gone_relists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_objects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_served, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_cache, setup, teardown),
    };
    return cmocka_run_group_tests_name("informer", tests, NULL, NULL);
}
