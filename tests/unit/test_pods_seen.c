/* pods_seen: when more pods carry a workspace's label than a decision looks
 * at, the ones left out can never mislead decide(): the pod the status
 * names and a live pod are always among those seen, the same ones on every
 * pass whatever order the cache hands them out in, and the count of those
 * left out is told. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/pods_seen.h"

#define N_PODS (3 * PODS_SEEN_MAX)

static struct workspace_pod pods[N_PODS];
static char names[N_PODS][32];

/* N_PODS pods named ws-pod-00 ..., all terminating. */
static void make_pods(void)
{
    memset(pods, 0, sizeof(pods));
    for (int i = 0; i < N_PODS; i++) {
        snprintf(names[i], sizeof(names[i]), "ws-pod-%02d", i);
        pods[i].name = names[i];
        pods[i].phase = "Running";
        pods[i].deletion_ms = 1000;
    }
}

static int seen(const struct pods_seen *s, const struct workspace_pod *p)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->pods[i] == p)
            return 1;
    return 0;
}

static void offer_all(struct pods_seen *s, const char *named)
{
    pods_seen_init(s, named);
    for (int i = 0; i < N_PODS; i++)
        pods_seen_offer(s, &pods[i]);
}

static void test_all_seen_up_to_the_cap(void **state)
{
    (void)state;
    make_pods();
    struct pods_seen s;
    pods_seen_init(&s, NULL);
    for (int i = 0; i < PODS_SEEN_MAX; i++)
        pods_seen_offer(&s, &pods[i]);
    pods_seen_offer(&s, NULL);
    assert_int_equal(s.n, PODS_SEEN_MAX);
    assert_int_equal(pods_seen_left_out(&s), 0);
    for (int i = 0; i < PODS_SEEN_MAX; i++)
        assert_true(seen(&s, &pods[i]));
}

static void test_left_out_are_counted(void **state)
{
    (void)state;
    make_pods();
    struct pods_seen s;
    offer_all(&s, NULL);
    assert_int_equal(s.n, PODS_SEEN_MAX);
    assert_int_equal(pods_seen_left_out(&s), N_PODS - PODS_SEEN_MAX);
}

/* The pod the status names comes last among many terminating ones: left
 * out, decide() would take it for gone and record an interruption. */
static void test_named_pod_is_seen(void **state)
{
    (void)state;
    make_pods();
    struct workspace_pod *named = &pods[N_PODS - 1];
    named->deletion_ms = 0;
    struct pods_seen s;
    offer_all(&s, named->name);
    assert_true(seen(&s, named));
    /* Even when terminating itself, it ranks first. */
    named->deletion_ms = 1000;
    offer_all(&s, named->name);
    assert_true(seen(&s, named));
}

/* A live pod behind many leaving ones: left out, decide() would see no
 * pod and create a second one. */
static void test_live_pod_is_seen(void **state)
{
    (void)state;
    make_pods();
    for (int i = 0; i < N_PODS / 2; i++) {
        pods[i].deletion_ms = 0;
        pods[i].phase = i % 2 ? "Failed" : "Succeeded";
    }
    struct workspace_pod *live = &pods[N_PODS - 1];
    live->deletion_ms = 0;
    live->phase = "Pending";
    struct pods_seen s;
    offer_all(&s, "not-among-them");
    assert_true(seen(&s, live));
    /* Stopped pods come before terminating ones: they still need deleting. */
    for (size_t i = 0; i < s.n; i++)
        assert_int_equal(s.pods[i]->deletion_ms, 0);
}

/* The same pods are picked whatever order they are offered in. */
static void test_order_does_not_matter(void **state)
{
    (void)state;
    make_pods();
    for (int i = 0; i < N_PODS; i += 3)
        pods[i].deletion_ms = 0;
    struct pods_seen a, b;
    offer_all(&a, names[7]);
    pods_seen_init(&b, names[7]);
    unsigned order[N_PODS];
    for (unsigned i = 0; i < N_PODS; i++)
        order[i] = i;
    srand(42);
    for (int round = 0; round < 50; round++) {
        for (unsigned i = N_PODS - 1; i > 0; i--) {
            unsigned j = (unsigned)rand() % (i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        pods_seen_init(&b, names[7]);
        for (unsigned i = 0; i < N_PODS; i++)
            pods_seen_offer(&b, &pods[order[i]]);
        assert_int_equal(b.n, a.n);
        for (size_t i = 0; i < a.n; i++)
            assert_true(seen(&b, a.pods[i]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_seen_up_to_the_cap), cmocka_unit_test(test_left_out_are_counted),
        cmocka_unit_test(test_named_pod_is_seen),      cmocka_unit_test(test_live_pod_is_seen),
        cmocka_unit_test(test_order_does_not_matter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
