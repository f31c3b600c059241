/*
 * The GPU-hours ledger's lookup: which pod took the accelerator a pause
 * released, and how long the controller keeps looking.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workspace/ledger.h"

/* 2027-01-01T00:00:00Z */
#define T0 INT64_C(1798761600000)
#define SEC INT64_C(1000)
#define DAY (24 * 3600 * SEC)

static char *gpu[POD_MAX_EXTENDED] = {"example.com/nic", "nvidia.com/gpu"};
static char *nic[POD_MAX_EXTENDED] = {"example.com/nic"};

/* team-a/alice, paused by its user at T0: the delete at T0+1.5s, the pod
 * seen gone at T0+30s, on gpu-1 with one nvidia.com/gpu. */
static struct workspace *paused_alice(void)
{
    struct workspace *ws = calloc(1, sizeof(*ws));
    assert_non_null(ws);
    ws->ns = strdup("team-a");
    ws->name = strdup("alice");
    struct workspace_status *s = &ws->status;
    s->state = WS_STATE_PAUSED;
    s->pauses = 3;
    s->resumes = 2;
    s->accelerator_resource = strdup("nvidia.com/gpu");
    s->accelerator_count = 1;
    s->last_pause.requested_ms = T0;
    s->last_pause.pod_deleted_ms = T0 + 1500;
    s->last_pause.accelerator_released_ms = T0 + 30 * SEC;
    s->last_pause.node_name = strdup("gpu-1");
    return ws;
}

static void set(char **field, const char *v)
{
    free(*field);
    *field = v ? strdup(v) : NULL;
}

static void test_awaits_taker(void **state)
{
    (void)state;
    struct workspace *ws = paused_alice();
    struct workspace_status *s = &ws->status;
    int64_t released = s->last_pause.accelerator_released_ms;
    assert_true(ledger_awaits_taker(s, released));
    assert_true(ledger_awaits_taker(s, released + DAY - 1));
    assert_false(ledger_awaits_taker(s, released + DAY)); /* a day is enough */

    s->resumes = 3; /* resumed: the question is closed */
    assert_false(ledger_awaits_taker(s, released + SEC));
    s->resumes = 2;
    s->last_pause.accelerator_taken_ms = released + 5 * SEC; /* answered */
    assert_false(ledger_awaits_taker(s, released + SEC));
    s->last_pause.accelerator_taken_ms = 0;
    s->last_pause.accelerator_released_ms = 0; /* still pausing */
    assert_false(ledger_awaits_taker(s, released + SEC));
    s->last_pause.accelerator_released_ms = released;
    set(&s->last_pause.node_name, NULL); /* never got a node */
    assert_false(ledger_awaits_taker(s, released + SEC));
    set(&s->last_pause.node_name, "gpu-1");
    set(&s->accelerator_resource, NULL); /* no accelerator to give back */
    assert_false(ledger_awaits_taker(s, released + SEC));
    workspace_free(ws);
}

static void test_awaits_node_removal(void **state)
{
    (void)state;
    struct workspace *ws = paused_alice();
    struct workspace_status *s = &ws->status;
    int64_t released = s->last_pause.accelerator_released_ms;
    assert_true(ledger_awaits_node_removal(s, released));
    assert_true(ledger_awaits_node_removal(s, released + DAY - 1));
    assert_false(ledger_awaits_node_removal(s, released + DAY)); /* a day is enough */
    /* taken by another pod: the node's fate is still of interest */
    s->last_pause.accelerator_taken_ms = released + 5 * SEC;
    assert_true(ledger_awaits_node_removal(s, released + SEC));
    s->last_pause.node_removed_ms = released + 9 * SEC; /* answered */
    assert_false(ledger_awaits_node_removal(s, released + 10 * SEC));
    s->last_pause.node_removed_ms = 0;
    s->resumes = 3; /* resumed: the question is closed */
    assert_false(ledger_awaits_node_removal(s, released + SEC));
    s->resumes = 2;
    s->last_pause.accelerator_released_ms = 0; /* still pausing */
    assert_false(ledger_awaits_node_removal(s, released + SEC));
    s->last_pause.accelerator_released_ms = released;
    set(&s->last_pause.node_name, NULL); /* never got a node */
    assert_false(ledger_awaits_node_removal(s, released + SEC));
    set(&s->last_pause.node_name, "");
    assert_false(ledger_awaits_node_removal(s, released + SEC));
    workspace_free(ws);
}

struct pick_row {
    const char *what;
    const char *ns, *workspace, *name, *node;
    char **extended;
    int64_t scheduled_ms;
    int took;
};

static const struct pick_row pick_rows[] = {
    {"another workspace's GPU pod on the node, after the release", "team-b", "bob", "bob-1",
     "gpu-1", gpu, T0 + 31 * SEC, 1},
    {"scheduled between the delete and the controller seeing the pod gone", "team-b", "bob",
     "bob-1", "gpu-1", gpu, T0 + 20 * SEC, 1},
    {"in the second of the delete (pod times have whole seconds)", "team-b", "bob", "bob-1",
     "gpu-1", gpu, T0 + SEC, 1},
    {"before the delete: it was there already", "team-b", "bob", "bob-1", "gpu-1", gpu, T0, 0},
    {"no scheduling time known", "team-b", "bob", "bob-1", "gpu-1", gpu, 0, 0},
    {"another node", "team-b", "bob", "bob-1", "gpu-2", gpu, T0 + 31 * SEC, 0},
    {"no node", "team-b", "bob", "bob-1", NULL, gpu, T0 + 31 * SEC, 0},
    {"another resource only", "team-b", "bob", "bob-1", "gpu-1", nic, T0 + 31 * SEC, 0},
    {"no extended resource", "team-b", "bob", "bob-1", "gpu-1", NULL, T0 + 31 * SEC, 0},
    {"the workspace's own next pod", "team-a", "alice", "alice-4", "gpu-1", gpu, T0 + 31 * SEC, 0},
    {"a workspace of the same name elsewhere", "team-b", "alice", "alice-1", "gpu-1", gpu,
     T0 + 31 * SEC, 1},
    {"a workspace of the same namespace", "team-a", "carol", "carol-1", "gpu-1", gpu, T0 + 31 * SEC,
     1},
};

static struct workspace_pod pod_of(const struct pick_row *r)
{
    struct workspace_pod p = {.ns = (char *)r->ns,
                              .name = (char *)r->name,
                              .workspace = (char *)r->workspace,
                              .node_name = (char *)r->node,
                              .phase = "Pending",
                              .scheduled = r->node != NULL,
                              .scheduled_ms = r->scheduled_ms};
    for (size_t i = 0; r->extended && i < POD_MAX_EXTENDED; i++)
        p.extended[i] = r->extended[i];
    return p;
}

static void test_taker_pick_table(void **state)
{
    (void)state;
    struct workspace *ws = paused_alice();
    int64_t now = T0 + 40 * SEC;
    for (size_t i = 0; i < sizeof(pick_rows) / sizeof(pick_rows[0]); i++) {
        const struct pick_row *r = &pick_rows[i];
        struct workspace_pod p = pod_of(r);
        const struct workspace_pod *got = ledger_taker_pick(ws, now, NULL, &p);
        if ((got == &p) != r->took)
            fail_msg("%s: took %d, want %d", r->what, got == &p, r->took);
        /* a pod that did not take it leaves the one found so far */
        struct workspace_pod other = pod_of(&pick_rows[0]);
        other.scheduled_ms = T0 + 3600 * SEC;
        got = ledger_taker_pick(ws, now, &other, &p);
        assert_ptr_equal(got, r->took ? &p : &other);
    }

    /* no pod deletion recorded (the pod went by itself): from the release */
    ws->status.last_pause.pod_deleted_ms = 0;
    struct workspace_pod p = pod_of(&pick_rows[1]);
    assert_null(ledger_taker_pick(ws, now, NULL, &p));
    p.scheduled_ms = T0 + 30 * SEC;
    assert_ptr_equal(ledger_taker_pick(ws, now, NULL, &p), &p);

    /* nothing is looked for once the question is closed */
    ws->status.last_pause.accelerator_taken_ms = T0 + 31 * SEC;
    assert_null(ledger_taker_pick(ws, now, NULL, &p));
    ws->status.last_pause.accelerator_taken_ms = 0;
    assert_null(ledger_taker_pick(ws, T0 + 30 * SEC + DAY, NULL, &p));
    assert_null(ledger_taker_pick(ws, now, NULL, NULL));
    workspace_free(ws);
}

static void test_taker_first(void **state)
{
    (void)state;
    struct workspace *ws = paused_alice();
    /* the pods of a cache, in its order: the first scheduled wins, the
     * smaller namespace/name on a tie; the others do not count */
    struct workspace_pod pods[] = {
        pod_of(&pick_rows[0]), pod_of(&pick_rows[0]), pod_of(&pick_rows[0]),
        pod_of(&pick_rows[3]), pod_of(&pick_rows[9]),
    };
    pods[0].scheduled_ms = T0 + 50 * SEC;
    pods[1].name = "dave-1";
    pods[1].ns = "team-d";
    pods[1].scheduled_ms = T0 + 40 * SEC;
    pods[2].name = "dan-1";
    pods[2].ns = "team-d";
    pods[2].scheduled_ms = T0 + 40 * SEC;
    const struct workspace_pod *first = NULL;
    for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++)
        first = ledger_taker_pick(ws, T0 + 60 * SEC, first, &pods[i]);
    assert_ptr_equal(first, &pods[2]);
    /* the other way round: the same answer */
    first = NULL;
    for (size_t i = sizeof(pods) / sizeof(pods[0]); i-- > 0;)
        first = ledger_taker_pick(ws, T0 + 60 * SEC, first, &pods[i]);
    assert_ptr_equal(first, &pods[2]);
    workspace_free(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_awaits_taker),
        cmocka_unit_test(test_awaits_node_removal),
        cmocka_unit_test(test_taker_pick_table),
        cmocka_unit_test(test_taker_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
