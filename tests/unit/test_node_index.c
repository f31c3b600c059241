/*
 * The node index: pods by the node they run on, paused workspaces by the
 * node their last pause left. It must follow the caches exactly across
 * adds, updates (a pod scheduled, a pause taken, a workspace resumed or
 * paused from another node) and deletes, relists included: checked step by
 * step by hand, then against a fresh scan of a model cache after every
 * change of a long random sequence.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/node_index.h"
#include "workspace/ledger.h"

#define T0 INT64_C(1798761600000)

/* The keys a lookup gives, sorted and joined with spaces (caller frees). */
struct keys {
    char *k[256];
    size_t n;
};

static void collect(void *data, const char *key)
{
    struct keys *ks = data;
    assert_true(ks->n < 256);
    ks->k[ks->n] = strdup(key);
    assert_non_null(ks->k[ks->n]);
    ks->n++;
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *joined(struct keys *ks)
{
    qsort(ks->k, ks->n, sizeof(ks->k[0]), by_string);
    size_t len = 1;
    for (size_t i = 0; i < ks->n; i++)
        len += strlen(ks->k[i]) + 1;
    char *out = calloc(1, len);
    assert_non_null(out);
    for (size_t i = 0; i < ks->n; i++) {
        if (i)
            strcat(out, " ");
        strcat(out, ks->k[i]);
        free(ks->k[i]);
    }
    ks->n = 0;
    return out;
}

static char *pods_on(const struct node_index *x, const char *node)
{
    struct keys ks = {.n = 0};
    node_index_pods_on(x, node, collect, &ks);
    assert_int_equal(ks.n, node_index_pods_count(x, node));
    return joined(&ks);
}

static char *paused_from(const struct node_index *x, const char *node)
{
    struct keys ks = {.n = 0};
    node_index_paused_from(x, node, collect, &ks);
    assert_int_equal(ks.n, node_index_paused_count(x, node));
    return joined(&ks);
}

#define assert_lookup(got, want)                                                                   \
    do {                                                                                           \
        char *g_ = (got);                                                                          \
        assert_string_equal(g_, want);                                                             \
        free(g_);                                                                                  \
    } while (0)

static struct workspace_pod pod(char *node)
{
    return (struct workspace_pod){.ns = "a", .name = "p", .node_name = node};
}

/* A workspace that never paused, its status empty. */
static struct workspace never_paused(char *name)
{
    struct workspace ws = {.ns = "a", .name = name};
    workspace_status_init(&ws.status);
    return ws;
}

/* A workspace whose last pause (in lp, the caller's) released an
 * accelerator on node. */
static struct workspace paused_on(char *node, struct workspace_pause_timeline *lp)
{
    struct workspace ws = never_paused("w");
    *lp = (struct workspace_pause_timeline){0};
    ws.status.last_pause = lp;
    ws.status.pauses = 1;
    ws.status.accelerator_resource = "nvidia.com/gpu";
    ws.status.last_pause->accelerator_released_ms = T0;
    ws.status.last_pause->node_name = node;
    return ws;
}

static void test_pods(void **state)
{
    (void)state;
    struct node_index x;
    node_index_init(&x);
    struct workspace_pod on1 = pod("n1"), on2 = pod("n2"), pending = pod(NULL);
    assert_int_equal(node_index_pod(&x, "a/p1", &on1), 0);
    assert_int_equal(node_index_pod(&x, "a/p2", &on1), 0);
    assert_int_equal(node_index_pod(&x, "b/p1", &pending), 0);
    assert_lookup(pods_on(&x, "n1"), "a/p1 a/p2");
    assert_lookup(pods_on(&x, "n2"), "");
    assert_lookup(pods_on(&x, NULL), "");
    /* An update that keeps the node, one that schedules a pod, a delete. */
    assert_int_equal(node_index_pod(&x, "a/p1", &on1), 0);
    assert_int_equal(node_index_pod(&x, "b/p1", &on2), 0);
    assert_int_equal(node_index_pod(&x, "a/p2", NULL), 0);
    assert_lookup(pods_on(&x, "n1"), "a/p1");
    assert_lookup(pods_on(&x, "n2"), "b/p1");
    /* Deleting what is not there changes nothing. */
    assert_int_equal(node_index_pod(&x, "c/none", NULL), 0);
    assert_int_equal(node_index_pod(&x, "a/p1", NULL), 0);
    assert_int_equal(node_index_pod(&x, "b/p1", NULL), 0);
    assert_lookup(pods_on(&x, "n1"), "");
    assert_lookup(pods_on(&x, "n2"), "");
    node_index_free(&x);
}

static void test_paused(void **state)
{
    (void)state;
    struct node_index x;
    node_index_init(&x);
    struct workspace_pause_timeline lp[2];
    struct workspace w = paused_on("gpu-1", &lp[0]);
    struct workspace running = never_paused("r");
    assert_int_equal(node_index_workspace(&x, "a/w", &w), 0);
    assert_int_equal(node_index_workspace(&x, "a/r", &running), 0);
    assert_int_equal(node_index_workspace(&x, "a/unreadable", NULL), 0);
    assert_lookup(paused_from(&x, "gpu-1"), "a/w");

    /* Taken: it still waits for the node to leave. */
    w.status.last_pause->accelerator_taken_ms = T0 + 1000;
    assert_int_equal(node_index_workspace(&x, "a/w", &w), 0);
    assert_lookup(paused_from(&x, "gpu-1"), "a/w");
    /* The node left too: nothing more to learn of it. */
    w.status.last_pause->node_removed_ms = T0 + 2000;
    assert_int_equal(node_index_workspace(&x, "a/w", &w), 0);
    assert_lookup(paused_from(&x, "gpu-1"), "");

    /* Resumed, then paused from another node: it moves. */
    struct workspace again = paused_on("gpu-2", &lp[1]), blank = never_paused("w");
    assert_int_equal(node_index_workspace(&x, "a/w", &blank), 0);
    assert_int_equal(node_index_workspace(&x, "a/w", &again), 0);
    assert_int_equal(node_index_workspace(&x, "a/v", &again), 0);
    assert_lookup(paused_from(&x, "gpu-1"), "");
    assert_lookup(paused_from(&x, "gpu-2"), "a/v a/w");
    again.status.resumes = 1; /* pauses == resumes: the pause is over */
    assert_int_equal(node_index_workspace(&x, "a/v", &again), 0);
    assert_lookup(paused_from(&x, "gpu-2"), "a/w");
    assert_int_equal(node_index_workspace(&x, "a/w", NULL), 0);
    assert_lookup(paused_from(&x, "gpu-2"), "");
    node_index_free(&x);
}

/* ---- against a model cache ---- */

#define N_KEYS 40
static char *const nodes[] = {NULL, "", "n1", "n2", "n3", "gpu-a"};
#define N_NODES (sizeof(nodes) / sizeof(nodes[0]))

struct model {
    int pod_present[N_KEYS];
    struct workspace_pod pods[N_KEYS];
    int ws_present[N_KEYS]; /* 2: present but unreadable */
    struct workspace ws[N_KEYS];
    struct workspace_pause_timeline last_pause[N_KEYS]; /* ws[k]'s */
    char keys[N_KEYS][16];
};

static void random_pod(struct workspace_pod *p)
{
    *p = pod(nodes[rand() % N_NODES]);
}

static void random_ws(struct workspace *w, struct workspace_pause_timeline *lp)
{
    *w = paused_on(nodes[rand() % N_NODES], lp);
    w->status.pauses = rand() % 3;
    w->status.resumes = rand() % 3;
    if (rand() % 4 == 0)
        w->status.last_pause->accelerator_released_ms = 0;
    if (rand() % 3 == 0)
        w->status.last_pause->accelerator_taken_ms = T0 + 1;
    if (rand() % 3 == 0)
        w->status.last_pause->node_removed_ms = T0 + 2;
    if (rand() % 4 == 0)
        w->status.accelerator_resource = NULL;
}

static const struct workspace *ws_obj(const struct model *m, size_t k)
{
    return m->ws_present[k] == 1 ? &m->ws[k] : NULL;
}

/* What a scan of the whole model finds for node ("" is no node: an
 * unscheduled pod). */
static char *scan_pods(const struct model *m, const char *node)
{
    struct keys ks = {.n = 0};
    for (size_t k = 0; k < N_KEYS; k++)
        if (m->pod_present[k] && m->pods[k].node_name && node && node[0] &&
            strcmp(m->pods[k].node_name, node) == 0)
            collect(&ks, m->keys[k]);
    return joined(&ks);
}

/* Every workspace whose last pause still waits, at the moment it released
 * the accelerator, to learn something of node. */
static char *scan_paused(const struct model *m, const char *node)
{
    struct keys ks = {.n = 0};
    for (size_t k = 0; k < N_KEYS; k++) {
        const struct workspace *w = ws_obj(m, k);
        if (!w || !node)
            continue;
        const struct workspace_status *s = &w->status;
        int64_t at = s->last_pause->accelerator_released_ms;
        if ((ledger_awaits_taker(s, at) || ledger_awaits_node_removal(s, at)) &&
            strcmp(s->last_pause->node_name, node) == 0)
            collect(&ks, m->keys[k]);
    }
    return joined(&ks);
}

static void check(const struct node_index *x, const struct model *m, int step)
{
    for (size_t i = 0; i < N_NODES; i++) {
        char *want = scan_pods(m, nodes[i]), *got = pods_on(x, nodes[i]);
        if (strcmp(want, got) != 0)
            fail_msg("step %d, pods on %s: want [%s] got [%s]", step, nodes[i], want, got);
        free(want);
        free(got);
        want = scan_paused(m, nodes[i]);
        got = paused_from(x, nodes[i]);
        if (strcmp(want, got) != 0)
            fail_msg("step %d, paused from %s: want [%s] got [%s]", step, nodes[i], want, got);
        free(want);
        free(got);
    }
}

/* One change of one key as the informer reports it (or, with relist, the
 * differences a relist reports, which are the same calls). */
static void change(struct node_index *x, struct model *m, size_t k)
{
    if (rand() % 2) {
        if (m->pod_present[k] && rand() % 3 == 0) {
            m->pod_present[k] = 0;
            assert_int_equal(node_index_pod(x, m->keys[k], NULL), 0);
        } else {
            m->pod_present[k] = 1;
            random_pod(&m->pods[k]);
            assert_int_equal(node_index_pod(x, m->keys[k], &m->pods[k]), 0);
        }
        return;
    }
    if (m->ws_present[k] && rand() % 3 == 0) {
        m->ws_present[k] = 0;
        assert_int_equal(node_index_workspace(x, m->keys[k], NULL), 0);
    } else {
        m->ws_present[k] = rand() % 6 == 0 ? 2 : 1;
        random_ws(&m->ws[k], &m->last_pause[k]);
        assert_int_equal(node_index_workspace(x, m->keys[k], ws_obj(m, k)), 0);
    }
}

static char *on_version(const struct node_index *x, const char *version)
{
    struct keys ks = {.n = 0};
    node_index_paused_on_version(x, version, collect, &ks);
    return joined(&ks);
}

/* Paused workspaces with a Ready snapshot, by the node version it was
 * taken on: only while paused, only a Ready one. */
static void test_snapshot_version(void **state)
{
    (void)state;
    struct node_index x;
    node_index_init(&x);
    struct workspace_snapshot sn = {.phase = "Ready", .node_version = "v1.35"};
    struct workspace w = never_paused("w");
    w.status.snapshot = &sn;
    w.status.state = WS_STATE_PAUSED;
    assert_int_equal(node_index_workspace(&x, "a/w", &w), 0);
    assert_lookup(on_version(&x, "v1.35"), "a/w");
    assert_lookup(on_version(&x, "v1.36"), "");
    /* Resuming (spec.paused false, no longer Paused): out. */
    w.status.state = WS_STATE_RESUMING;
    assert_int_equal(node_index_workspace(&x, "a/w", &w), 0);
    assert_lookup(on_version(&x, "v1.35"), "");
    /* Asked to pause, snapshot in progress: out; Ready: in. */
    w.paused = 1;
    sn.phase = "InProgress";
    assert_int_equal(node_index_workspace(&x, "a/w", &w), 0);
    assert_lookup(on_version(&x, "v1.35"), "");
    sn.phase = "Ready";
    assert_int_equal(node_index_workspace(&x, "a/w", &w), 0);
    assert_lookup(on_version(&x, "v1.35"), "a/w");
    /* Deleted. */
    assert_int_equal(node_index_workspace(&x, "a/w", NULL), 0);
    assert_lookup(on_version(&x, "v1.35"), "");
    node_index_free(&x);
}

static void test_random(void **state)
{
    (void)state;
    static struct model m;
    memset(&m, 0, sizeof(m));
    for (size_t k = 0; k < N_KEYS; k++)
        snprintf(m.keys[k], sizeof(m.keys[k]), "ns%zu/o%zu", k % 3, k);
    struct node_index x;
    node_index_init(&x);
    srand(11);
    for (int step = 0; step < 4000; step++) {
        if (rand() % 50 == 0) {
            /* A relist: many keys change at once before anyone looks. */
            for (size_t k = 0; k < N_KEYS; k++)
                if (rand() % 2)
                    change(&x, &m, k);
        } else {
            change(&x, &m, (size_t)rand() % N_KEYS);
        }
        check(&x, &m, step);
    }
    node_index_free(&x);
    /* Freed, the index is empty and usable again. */
    node_index_init(&x);
    assert_lookup(pods_on(&x, "n1"), "");
    node_index_free(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pods),
        cmocka_unit_test(test_paused),
        cmocka_unit_test(test_snapshot_version),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests_name("node index", tests, NULL, NULL);
}
