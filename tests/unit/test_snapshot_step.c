/* The node agent's next step for a ContainerSnapshot, from a table of the
 * object's conditions and what the agent sees; then every combination
 * against the rules the header states. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "node/snapshot_step.h"

#define N SNAPSHOT_COND_NONE
#define T SNAPSHOT_COND_TRUE
#define F SNAPSHOT_COND_FALSE

static void test_table(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        struct snapshot_facts f;
        enum snapshot_step want;
    } rows[] = {
        /* deleting, finalizer, checkpointed, ready, has_archive, archive_exists, has_image, pod,
           busy */
        {"new: look at the pod first", {0, 1, N, N, 0, 0, 0, POD_UNKNOWN, 0}, STEP_CHECK_POD},
        {"new, the pod runs", {0, 1, N, N, 0, 0, 0, POD_RUNS, 0}, STEP_CHECKPOINT},
        {"new, the pod is gone", {0, 1, N, N, 0, 0, 0, POD_GONE, 0}, STEP_FAIL_POD},
        {"new, another pod of the name", {0, 1, N, N, 0, 0, 0, POD_REPLACED, 0}, STEP_FAIL_POD},
        {"new, on another node", {0, 1, N, N, 0, 0, 0, POD_OTHER_NODE, 0}, STEP_FAIL_POD},
        {"new, container stopped", {0, 1, N, N, 0, 0, 0, POD_NOT_RUNNING, 0}, STEP_FAIL_POD},
        {"work in flight", {0, 1, N, N, 0, 0, 0, POD_RUNS, 1}, STEP_WAIT},
        {"in flight while deleting", {1, 1, T, N, 1, 1, 0, POD_RUNS, 1}, STEP_WAIT},
        {"checkpointed: store", {0, 1, T, N, 1, 1, 0, POD_UNKNOWN, 0}, STEP_STORE},
        {"checkpointed, archive not looked at",
         {0, 1, T, N, 1, -1, 0, POD_UNKNOWN, 0},
         STEP_CHECK_POD},
        {"checkpointed, archive gone: again", {0, 1, T, N, 1, 0, 0, POD_RUNS, 0}, STEP_CHECKPOINT},
        {"checkpointed, archive and pod gone", {0, 1, T, N, 1, 0, 0, POD_GONE, 0}, STEP_FAIL_POD},
        {"ready, archive left", {0, 1, T, T, 1, 1, 1, POD_UNKNOWN, 0}, STEP_DELETE_ARCHIVE},
        {"ready, archive gone", {0, 1, T, T, 1, 0, 1, POD_UNKNOWN, 0}, STEP_NONE},
        {"failed, archive left", {0, 1, T, F, 1, 1, 0, POD_UNKNOWN, 0}, STEP_DELETE_ARCHIVE},
        {"failed before the checkpoint", {0, 1, N, F, 0, 0, 0, POD_GONE, 0}, STEP_NONE},
        {"deleting with an image", {1, 1, T, T, 1, 0, 1, POD_UNKNOWN, 0}, STEP_CLEANUP},
        {"deleting with an archive", {1, 1, T, N, 1, 1, 0, POD_UNKNOWN, 0}, STEP_CLEANUP},
        {"deleting, nothing left", {1, 1, T, T, 1, 0, 0, POD_UNKNOWN, 0}, STEP_REMOVE_FINALIZER},
        {"deleting, never checkpointed", {1, 1, N, N, 0, 0, 0, POD_RUNS, 0}, STEP_REMOVE_FINALIZER},
        {"deleting, finalizer gone", {1, 0, T, T, 1, 1, 1, POD_UNKNOWN, 0}, STEP_NONE},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        enum snapshot_step got = snapshot_step(&rows[i].f);
        if (got != rows[i].want)
            fail_msg("%s: %s, want %s", rows[i].what, snapshot_step_name(got),
                     snapshot_step_name(rows[i].want));
    }
}

/* Every combination: the rules that matter after a crash anywhere. */
static void test_every_combination(void **state)
{
    (void)state;
    int n = 0;
    for (int del = 0; del < 2; del++)
        for (int fin = 0; fin < 2; fin++)
            for (int cp = N; cp <= F; cp++)
                for (int rd = N; rd <= F; rd++)
                    for (int ha = 0; ha < 2; ha++)
                        for (int ae = -1; ae < 2; ae++)
                            for (int hi = 0; hi < 2; hi++)
                                for (int pod = POD_UNKNOWN; pod <= POD_NOT_RUNNING; pod++)
                                    for (int busy = 0; busy < 2; busy++) {
                                        struct snapshot_facts f = {del,
                                                                   fin,
                                                                   (enum snapshot_cond)cp,
                                                                   (enum snapshot_cond)rd,
                                                                   ha,
                                                                   ae,
                                                                   hi,
                                                                   (enum pod_check)pod,
                                                                   busy};
                                        enum snapshot_step s = snapshot_step(&f);
                                        n++;
                                        /* Nothing starts while work is in flight. */
                                        if (busy)
                                            assert_int_equal(s, STEP_WAIT);
                                        /* A deleted object is never checkpointed or
                                         * stored. */
                                        if (del)
                                            assert_true(s != STEP_CHECKPOINT && s != STEP_STORE &&
                                                        s != STEP_CHECK_POD);
                                        /* A finished one (Ready either way) is never
                                         * taken again. */
                                        if (rd != N)
                                            assert_true(s != STEP_CHECKPOINT && s != STEP_STORE &&
                                                        s != STEP_FAIL_POD);
                                        /* Only a pod the agent saw running is
                                         * checkpointed. */
                                        if (s == STEP_CHECKPOINT)
                                            assert_int_equal(pod, POD_RUNS);
                                        /* The finalizer goes only with nothing left. */
                                        if (s == STEP_REMOVE_FINALIZER)
                                            assert_true(!hi && !(ha && ae > 0));
                                        /* Stored only from an archive that is there. */
                                        if (s == STEP_STORE)
                                            assert_true(ha && ae > 0 && cp == T);
                                    }
    assert_int_equal(n, 2 * 2 * 3 * 3 * 2 * 3 * 2 * 6 * 2);
}

static void test_words(void **state)
{
    (void)state;
    for (int p = POD_UNKNOWN; p <= POD_NOT_RUNNING; p++) {
        int cannot = p != POD_UNKNOWN && p != POD_RUNS;
        assert_int_equal(pod_check_reason((enum pod_check)p) != NULL, cannot);
        assert_int_equal(pod_check_words((enum pod_check)p) != NULL, cannot);
    }
    assert_string_equal(snapshot_step_name(STEP_REMOVE_FINALIZER), "RemoveFinalizer");
    assert_string_equal(snapshot_step_name((enum snapshot_step)99), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_every_combination),
        cmocka_unit_test(test_words),
    };
    return cmocka_run_group_tests_name("node agent steps", tests, NULL, NULL);
}
