/*
 * An action that keeps failing, as the Workspace's status reports it: the
 * record the reconciler keeps, the condition ActionFailed it writes into
 * the status as read, and its removal once the actions succeed. Steps of a
 * workspace's life are a table; each status is written out and read back
 * as the API server would give it, and reporting the same failure again
 * must change nothing (no status write per retry).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workspace/action_failure.h"

/* 2027-01-01T00:00:00Z */
#define T0 INT64_C(1798761600000)
#define SEC INT64_C(1000)

#define FORBIDDEN                                                                                  \
    "pods \"alice-1\" is forbidden: User \"system:serviceaccount:hibernator-system:hibernator\" "  \
    "cannot delete resource \"pods\" in API group \"\" in the namespace \"team-a\""

/* The status after a write and a read back (times in whole seconds). */
static void round_trip(struct workspace_status *st)
{
    cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"alice\"},\"spec\":{\"className\":\"c\"}}");
    cJSON *status = workspace_status_to_json(st);
    assert_non_null(obj);
    assert_non_null(status);
    cJSON_AddItemToObject(obj, "status", status);
    struct workspace *back = NULL;
    assert_int_equal(workspace_decode(obj, &back, NULL), 0);
    cJSON_Delete(obj);
    workspace_status_clear(st);
    *st = back->status;
    workspace_status_init(&back->status);
    workspace_free(back);
}

enum step_kind {
    FAIL,    /* an action failed: note it, report it in the status */
    SUCCEED, /* a pass carried out all its actions */
};

struct step {
    const char *name;
    enum step_kind kind;
    int64_t at; /* after T0 */
    const char *action, *target;
    long code;
    const char *message;
    int64_t generation;
    /* expected */
    int changed;        /* the status changed (a write is needed) */
    uint64_t count;     /* failures in a row */
    int64_t first;      /* the record's first failure, after T0 */
    const char *reason; /* NULL: no ActionFailed condition */
    const char *text;   /* the condition's message (and status.message) */
    int64_t since;      /* its lastTransitionTime, after T0 */
};

static const struct step life[] = {
    {"a pause's delete is forbidden", FAIL, 0, "DeletePod", "alice-1", 403, FORBIDDEN, 2, 1, 1, 0,
     "DeletePod", "DeletePod alice-1: " FORBIDDEN " (HTTP 403)", 0},
    {"again, after backoff: nothing to write", FAIL, 5 * SEC, "DeletePod", "alice-1", 403,
     FORBIDDEN, 2, 0, 2, 0, "DeletePod", "DeletePod alice-1: " FORBIDDEN " (HTTP 403)", 0},
    {"and again: still since the first", FAIL, 60 * SEC, "DeletePod", "alice-1", 403, FORBIDDEN, 2,
     0, 3, 0, "DeletePod", "DeletePod alice-1: " FORBIDDEN " (HTTP 403)", 0},
    {"the user edits the spec: the condition names the new generation", FAIL, 70 * SEC, "DeletePod",
     "alice-1", 403, FORBIDDEN, 3, 1, 4, 0, "DeletePod",
     "DeletePod alice-1: " FORBIDDEN " (HTTP 403)", 0},
    {"the verb is granted: the pass succeeds, the condition goes", SUCCEED, 90 * SEC, NULL, NULL, 0,
     NULL, 3, 1, 0, 0, NULL, NULL, 0},
    {"nothing left to remove", SUCCEED, 95 * SEC, NULL, NULL, 0, NULL, 3, 0, 0, 0, NULL, NULL, 0},
    {"a create fails without an HTTP answer", FAIL, 100 * SEC, "CreatePod", "alice-2", 0,
     "Connection refused", 3, 1, 1, 100 * SEC, "CreatePod", "CreatePod alice-2: Connection refused",
     100 * SEC},
    {"another action fails: its own since", FAIL, 130 * SEC, "SnapshotBegin", "alice-p1-1", 403,
     "podsnapshotmanualtriggers.podsnapshot.gke.io is forbidden", 3, 1, 1, 130 * SEC,
     "SnapshotBegin",
     "SnapshotBegin alice-p1-1: podsnapshotmanualtriggers.podsnapshot.gke.io is forbidden "
     "(HTTP 403)",
     130 * SEC},
    {"the same action on another object starts over", FAIL, 140 * SEC, "SnapshotBegin",
     "alice-p1-2", 403, "podsnapshotmanualtriggers.podsnapshot.gke.io is forbidden", 3, 1, 1,
     140 * SEC, "SnapshotBegin",
     "SnapshotBegin alice-p1-2: podsnapshotmanualtriggers.podsnapshot.gke.io is forbidden "
     "(HTTP 403)",
     130 * SEC},
    {"the finalizer: the Workspace itself", FAIL, 150 * SEC, "AddFinalizer", NULL, 500,
     "etcdserver: request timed out", 3, 1, 1, 150 * SEC, "AddFinalizer",
     "AddFinalizer: etcdserver: request timed out (HTTP 500)", 150 * SEC},
};

static void test_life(void **state)
{
    (void)state;
    struct workspace_status st = {0};
    struct action_failure f = {0};
    for (size_t i = 0; i < sizeof(life) / sizeof(life[0]); i++) {
        const struct step *s = &life[i];
        int changed;
        if (s->kind == FAIL) {
            assert_int_equal(
                action_failure_note(&f, s->action, s->target, s->code, s->message, T0 + s->at), 0);
            changed = action_failure_report(&st, &f, s->generation, T0 + s->at);
        } else {
            action_failure_clear(&f);
            changed = action_failure_resolved(&st);
        }
        round_trip(&st);
        const struct condition *c = workspace_status_condition(&st, ACTION_FAILED_CONDITION);
        if (changed != s->changed || f.count != s->count ||
            (s->count && f.first_failed_ms != T0 + s->first) || !c != !s->reason)
            fail_msg("%s: changed %d, count %llu, first %lld, condition %s", s->name, changed,
                     (unsigned long long)f.count, (long long)(f.first_failed_ms - T0),
                     c ? c->reason : "(none)");
        if (!c)
            continue;
        assert_int_equal(c->status, COND_TRUE);
        assert_string_equal(c->reason, s->reason);
        assert_string_equal(c->message, s->text);
        assert_string_equal(st.message, s->text);
        assert_int_equal(c->observed_generation, s->generation);
        assert_int_equal(c->last_transition_ms, T0 + s->since);
        /* reported once is reported: a retry that fails alike writes nothing */
        assert_int_equal(action_failure_report(&st, &f, s->generation, T0 + s->at + SEC), 0);
    }
    action_failure_clear(&f);
    workspace_status_clear(&st);
}

/* The API server's message is one line of at most 1024 bytes in the
 * condition, cut at a character boundary. */
static void test_message_bounded(void **state)
{
    (void)state;
    char big[4096];
    size_t n = 0;
    while (n + 3 < sizeof(big) - 1) {
        memcpy(big + n, "\xc3\xa9\n", 3); /* é and a newline */
        n += 3;
    }
    big[n] = '\0';
    struct action_failure f = {0};
    assert_int_equal(action_failure_note(&f, "CreatePod", "alice-2", 422, big, T0), 0);
    assert_null(strchr(f.message, '\n'));
    assert_true(strlen(f.message) <= 1024);
    struct workspace_status st = {0};
    assert_int_equal(action_failure_report(&st, &f, 1, T0), 1);
    const struct condition *c = workspace_status_condition(&st, ACTION_FAILED_CONDITION);
    assert_non_null(c);
    assert_true(strlen(c->message) <= 1024);
    assert_null(strchr(c->message, '\n'));
    size_t len = strlen(c->message);
    assert_string_equal(c->message + len - 3, "...");
    /* no broken character before the cut */
    assert_true(((unsigned char)c->message[len - 4] & 0xc0) != 0xc0);
    action_failure_clear(&f);
    workspace_status_clear(&st);
}

/* The condition stands beside decide()'s, and only it goes. */
static void test_other_conditions_stay(void **state)
{
    (void)state;
    struct workspace_status st = {0};
    assert_int_equal(workspace_status_set_condition(&st, "Ready", COND_TRUE, "PodReady",
                                                    "pod alice-1 is ready", 1, T0),
                     0);
    struct action_failure f = {0};
    assert_int_equal(action_failure_note(&f, "DeletePod", "alice-1", 403, FORBIDDEN, T0), 0);
    assert_int_equal(action_failure_report(&st, &f, 2, T0), 1);
    assert_int_equal(st.n_conditions, 2);
    assert_int_equal(action_failure_resolved(&st), 1);
    assert_int_equal(st.n_conditions, 1);
    assert_string_equal(st.conditions[0].type, "Ready");
    assert_int_equal(action_failure_resolved(&st), 0);
    action_failure_clear(&f);
    action_failure_clear(NULL);
    workspace_status_clear(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_life),
        cmocka_unit_test(test_message_bounded),
        cmocka_unit_test(test_other_conditions_stay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
