#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kube/lease.h"

#define ME "hibernator-0"
#define OTHER "hibernator-1"
#define NOW_UNIX_MS INT64_C(1767323045123)
#define NOW "2026-01-02T03:04:05.123000Z"
#define ACQ "2026-01-01T00:00:00.000000Z"
#define R1 "2026-01-02T03:03:50.000000Z"
#define PAST "2001-09-09T01:46:40.000000Z"
#define FUTURE "2099-12-31T23:59:59.999999Z"

static const struct lease_config cfg = {.identity = ME};

/* A record as string literals, for tables. */
struct rec {
    const char *holder;
    int64_t dur;
    const char *acquire;
    const char *renew;
    int64_t trans;
};

static struct lease_record rec_view(const struct rec *r)
{
    return (struct lease_record){
        .holder_identity = (char *)r->holder,
        .lease_duration_seconds = r->dur,
        .acquire_time = (char *)r->acquire,
        .renew_time = (char *)r->renew,
        .lease_transitions = r->trans,
    };
}

static void assert_record(const struct lease_record *got, const struct rec *want)
{
    assert_string_equal(got->holder_identity ? got->holder_identity : "(null)",
                        want->holder ? want->holder : "(null)");
    assert_int_equal(got->lease_duration_seconds, want->dur);
    assert_string_equal(got->acquire_time ? got->acquire_time : "(null)",
                        want->acquire ? want->acquire : "(null)");
    assert_string_equal(got->renew_time ? got->renew_time : "(null)",
                        want->renew ? want->renew : "(null)");
    assert_int_equal(got->lease_transitions, want->trans);
}

struct decide_case {
    const char *name;
    /* what this process knew before the read */
    bool have_observed;
    struct rec observed;
    uint64_t observed_ms;
    bool leader;
    uint64_t renewed_ms;
    /* the read */
    enum lease_read read;
    struct rec current;
    uint64_t now_ms;
    /* what should follow */
    enum lease_action action;
    uint64_t delay_ms;
    struct rec write;
    bool leader_after;
    uint64_t observed_ms_after;
};

static const struct decide_case decide_cases[] = {
    {
        .name = "no lease yet: create it",
        .read = LEASE_READ_NOT_FOUND,
        .now_ms = 100000,
        .action = LEASE_CREATE,
        .delay_ms = 2000,
        .write = {ME, 15, NOW, NOW, 0},
    },
    {
        .name = "held by another, first seen: wait",
        .read = LEASE_READ_FOUND,
        .current = {OTHER, 15, ACQ, R1, 3},
        .now_ms = 100000,
        .action = LEASE_WAIT,
        .delay_ms = 2000,
        .observed_ms_after = 100000,
    },
    {
        .name = "held by another, unchanged 14 s: wait out the last second",
        .have_observed = true,
        .observed = {OTHER, 15, ACQ, R1, 3},
        .observed_ms = 86000,
        .read = LEASE_READ_FOUND,
        .current = {OTHER, 15, ACQ, R1, 3},
        .now_ms = 100000,
        .action = LEASE_WAIT,
        .delay_ms = 1000,
        .observed_ms_after = 86000,
    },
    {
        .name = "held by another, unchanged 15 s: acquire, transitions + 1",
        .have_observed = true,
        .observed = {OTHER, 15, ACQ, R1, 3},
        .observed_ms = 85000,
        .read = LEASE_READ_FOUND,
        .current = {OTHER, 15, ACQ, R1, 3},
        .now_ms = 100000,
        .action = LEASE_ACQUIRE,
        .delay_ms = 2000,
        .write = {ME, 15, NOW, NOW, 4},
        .observed_ms_after = 85000,
    },
    {
        .name = "held by another, renewTime far in the past, first seen: wait (skew)",
        .read = LEASE_READ_FOUND,
        .current = {OTHER, 15, PAST, PAST, 3},
        .now_ms = 100000,
        .action = LEASE_WAIT,
        .delay_ms = 2000,
        .observed_ms_after = 100000,
    },
    {
        .name = "held by another, renewTime far in the future, unchanged 15 s: acquire (skew)",
        .have_observed = true,
        .observed = {OTHER, 15, ACQ, FUTURE, 3},
        .observed_ms = 85000,
        .read = LEASE_READ_FOUND,
        .current = {OTHER, 15, ACQ, FUTURE, 3},
        .now_ms = 100000,
        .action = LEASE_ACQUIRE,
        .delay_ms = 2000,
        .write = {ME, 15, NOW, NOW, 4},
        .observed_ms_after = 85000,
    },
    {
        .name = "a change restarts the local clock even when renewTime moves back",
        .have_observed = true,
        .observed = {OTHER, 15, ACQ, R1, 3},
        .observed_ms = 1000,
        .read = LEASE_READ_FOUND,
        .current = {OTHER, 15, ACQ, PAST, 3},
        .now_ms = 100000,
        .action = LEASE_WAIT,
        .delay_ms = 2000,
        .observed_ms_after = 100000,
    },
    {
        .name = "the holder's own lease duration counts, not ours",
        .have_observed = true,
        .observed = {OTHER, 60, ACQ, R1, 3},
        .observed_ms = 50000,
        .read = LEASE_READ_FOUND,
        .current = {OTHER, 60, ACQ, R1, 3},
        .now_ms = 100000,
        .action = LEASE_WAIT,
        .delay_ms = 2000,
        .observed_ms_after = 50000,
    },
    {
        .name = "a zero lease duration is expired at once",
        .read = LEASE_READ_FOUND,
        .current = {OTHER, 0, ACQ, R1, 3},
        .now_ms = 100000,
        .action = LEASE_ACQUIRE,
        .delay_ms = 2000,
        .write = {ME, 15, NOW, NOW, 4},
        .observed_ms_after = 100000,
    },
    {
        .name = "released lease (empty holder): acquire at once",
        .read = LEASE_READ_FOUND,
        .current = {"", 1, R1, R1, 4},
        .now_ms = 100000,
        .action = LEASE_ACQUIRE,
        .delay_ms = 2000,
        .write = {ME, 15, NOW, NOW, 5},
        .observed_ms_after = 100000,
    },
    {
        .name = "lease without holder fields: acquire at once",
        .read = LEASE_READ_FOUND,
        .current = {NULL, 0, NULL, NULL, 0},
        .now_ms = 100000,
        .action = LEASE_ACQUIRE,
        .delay_ms = 2000,
        .write = {ME, 15, NOW, NOW, 1},
        .observed_ms_after = 100000,
    },
    {
        .name = "our own name while not leading (restart): take it back, same holder",
        .read = LEASE_READ_FOUND,
        .current = {ME, 15, ACQ, R1, 2},
        .now_ms = 100000,
        .action = LEASE_ACQUIRE,
        .delay_ms = 2000,
        .write = {ME, 15, NOW, NOW, 2},
        .observed_ms_after = 100000,
    },
    {
        .name = "not leading, read failed: wait a retry period",
        .have_observed = true,
        .observed = {OTHER, 15, ACQ, R1, 3},
        .observed_ms = 1000,
        .read = LEASE_READ_FAILED,
        .now_ms = 100000,
        .action = LEASE_WAIT,
        .delay_ms = 2000,
        .observed_ms_after = 1000,
    },
    {
        .name = "leader renews, keeping acquireTime and transitions",
        .have_observed = true,
        .observed = {ME, 15, ACQ, R1, 2},
        .observed_ms = 98000,
        .leader = true,
        .renewed_ms = 98000,
        .read = LEASE_READ_FOUND,
        .current = {ME, 15, ACQ, R1, 2},
        .now_ms = 100000,
        .action = LEASE_RENEW,
        .delay_ms = 2000,
        .write = {ME, 15, ACQ, NOW, 2},
        .leader_after = true,
        .observed_ms_after = 98000,
    },
    {
        .name = "leader, read failed within the deadline: retry",
        .have_observed = true,
        .observed = {ME, 15, ACQ, R1, 2},
        .observed_ms = 95000,
        .leader = true,
        .renewed_ms = 95000,
        .read = LEASE_READ_FAILED,
        .now_ms = 100000,
        .action = LEASE_WAIT,
        .delay_ms = 2000,
        .leader_after = true,
        .observed_ms_after = 95000,
    },
    {
        .name = "leader, read failed close to the deadline: look again at the deadline",
        .have_observed = true,
        .observed = {ME, 15, ACQ, R1, 2},
        .observed_ms = 91000,
        .leader = true,
        .renewed_ms = 91000,
        .read = LEASE_READ_FAILED,
        .now_ms = 100000,
        .action = LEASE_WAIT,
        .delay_ms = 1000,
        .leader_after = true,
        .observed_ms_after = 91000,
    },
    {
        .name = "leader, renewals failing past the deadline: lost",
        .have_observed = true,
        .observed = {ME, 15, ACQ, R1, 2},
        .observed_ms = 90000,
        .leader = true,
        .renewed_ms = 90000,
        .read = LEASE_READ_FAILED,
        .now_ms = 100000,
        .action = LEASE_LOST,
        .delay_ms = 2000,
        .observed_ms_after = 90000,
    },
    {
        .name = "leader, read works again but after the deadline: lost",
        .have_observed = true,
        .observed = {ME, 15, ACQ, R1, 2},
        .observed_ms = 89000,
        .leader = true,
        .renewed_ms = 89000,
        .read = LEASE_READ_FOUND,
        .current = {ME, 15, ACQ, R1, 2},
        .now_ms = 100000,
        .action = LEASE_LOST,
        .delay_ms = 2000,
        .observed_ms_after = 89000,
    },
    {
        .name = "leader, another name on the record: lost at once",
        .have_observed = true,
        .observed = {ME, 15, ACQ, R1, 2},
        .observed_ms = 99000,
        .leader = true,
        .renewed_ms = 99000,
        .read = LEASE_READ_FOUND,
        .current = {OTHER, 15, NOW, NOW, 3},
        .now_ms = 100000,
        .action = LEASE_LOST,
        .delay_ms = 2000,
        .observed_ms_after = 100000,
    },
    {
        .name = "leader, record emptied by someone else: lost",
        .have_observed = true,
        .observed = {ME, 15, ACQ, R1, 2},
        .observed_ms = 99000,
        .leader = true,
        .renewed_ms = 99000,
        .read = LEASE_READ_FOUND,
        .current = {"", 1, NOW, NOW, 2},
        .now_ms = 100000,
        .action = LEASE_LOST,
        .delay_ms = 2000,
        .observed_ms_after = 100000,
    },
    {
        .name = "leader, lease deleted: create it again",
        .have_observed = true,
        .observed = {ME, 15, ACQ, R1, 2},
        .observed_ms = 99000,
        .leader = true,
        .renewed_ms = 99000,
        .read = LEASE_READ_NOT_FOUND,
        .now_ms = 100000,
        .action = LEASE_CREATE,
        .delay_ms = 2000,
        .write = {ME, 15, NOW, NOW, 0},
        .leader_after = true,
        .observed_ms_after = 100000,
    },
};

static void test_decide_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(decide_cases) / sizeof(decide_cases[0]); i++) {
        const struct decide_case *c = &decide_cases[i];
        print_message("case: %s\n", c->name);

        struct lease_state s;
        lease_state_init(&s);
        if (c->have_observed) {
            struct lease_record v = rec_view(&c->observed);
            assert_int_equal(lease_record_copy(&v, &s.observed), 0);
            s.have_observed = true;
        }
        s.observed_ms = c->observed_ms;
        s.leader = c->leader;
        s.renewed_ms = c->renewed_ms;

        struct lease_record cur = rec_view(&c->current);
        struct lease_decision d;
        assert_int_equal(lease_decide(&cfg, &s, c->read, c->read == LEASE_READ_FOUND ? &cur : NULL,
                                      c->now_ms, NOW_UNIX_MS, &d),
                         0);
        assert_string_equal(lease_action_name(d.action), lease_action_name(c->action));
        assert_int_equal(d.delay_ms, c->delay_ms);
        if (d.action == LEASE_CREATE || d.action == LEASE_ACQUIRE || d.action == LEASE_RENEW)
            assert_record(&d.record, &c->write);
        else
            assert_null(d.record.holder_identity);
        assert_int_equal(s.leader, c->leader_after);
        assert_int_equal(s.observed_ms, c->observed_ms_after);
        if (c->read == LEASE_READ_FOUND) {
            assert_true(s.have_observed);
            assert_true(lease_record_equal(&s.observed, &cur));
        }

        lease_decision_clear(&d);
        lease_state_clear(&s);
    }
}

static void test_decide_found_needs_record(void **state)
{
    (void)state;
    struct lease_state s;
    lease_state_init(&s);
    struct lease_decision d;
    assert_int_equal(lease_decide(&cfg, &s, LEASE_READ_FOUND, NULL, 0, NOW_UNIX_MS, &d), -EINVAL);
}

static void test_written(void **state)
{
    (void)state;
    struct lease_state s;
    lease_state_init(&s);
    struct rec mine = {ME, 15, NOW, NOW, 0};
    struct lease_record v = rec_view(&mine);
    assert_int_equal(lease_state_written(&cfg, &s, &v, 5000), 0);
    assert_true(s.leader);
    assert_true(s.have_observed);
    assert_int_equal(s.renewed_ms, 5000);
    assert_int_equal(s.observed_ms, 5000);
    assert_record(&s.observed, &mine);

    /* A write naming someone else (a release) does not make us leader. */
    struct rec released = {"", 1, NOW, NOW, 0};
    v = rec_view(&released);
    s.leader = false;
    assert_int_equal(lease_state_written(&cfg, &s, &v, 7000), 0);
    assert_false(s.leader);
    assert_int_equal(s.renewed_ms, 5000);
    assert_int_equal(s.observed_ms, 7000);
    lease_state_clear(&s);
    lease_state_clear(NULL);
}

static void test_release(void **state)
{
    (void)state;
    struct lease_state s;
    lease_state_init(&s);
    struct lease_decision d;

    /* Nothing to give up while not leading. */
    assert_int_equal(lease_release(&cfg, &s, NOW_UNIX_MS, &d), 0);
    assert_int_equal(d.action, LEASE_WAIT);
    lease_decision_clear(&d);

    struct rec mine = {ME, 15, ACQ, R1, 7};
    struct lease_record v = rec_view(&mine);
    assert_int_equal(lease_state_written(&cfg, &s, &v, 1000), 0);
    assert_int_equal(lease_release(&cfg, &s, NOW_UNIX_MS, &d), 0);
    assert_int_equal(d.action, LEASE_RELEASE);
    struct rec want = {"", 1, NOW, NOW, 7};
    assert_record(&d.record, &want);
    assert_false(s.leader);

    /* The released record, once written, reads as free to everyone. */
    assert_int_equal(lease_state_written(&cfg, &s, &d.record, 1100), 0);
    assert_false(s.leader);
    assert_false(lease_record_held(&s.observed));
    lease_decision_clear(&d);
    lease_decision_clear(NULL);
    lease_state_clear(&s);
}

static void test_config(void **state)
{
    (void)state;
    struct lease_config c = {
        .identity = ME,
        .lease_duration_ms = 30000,
        .renew_deadline_ms = 20000,
        .retry_period_ms = 5000,
    };
    struct lease_state s;
    lease_state_init(&s);
    struct lease_decision d;
    assert_int_equal(lease_decide(&c, &s, LEASE_READ_NOT_FOUND, NULL, 0, NOW_UNIX_MS, &d), 0);
    assert_int_equal(d.action, LEASE_CREATE);
    assert_int_equal(d.delay_ms, 5000);
    assert_int_equal(d.record.lease_duration_seconds, 30);
    assert_int_equal(lease_state_written(&c, &s, &d.record, 0), 0);
    lease_decision_clear(&d);

    /* Renew deadline 20 s: still leading at 19.999 s after the last renew. */
    assert_int_equal(lease_decide(&c, &s, LEASE_READ_FAILED, NULL, 19999, NOW_UNIX_MS, &d), 0);
    assert_int_equal(d.action, LEASE_WAIT);
    assert_int_equal(d.delay_ms, 1);
    assert_int_equal(lease_decide(&c, &s, LEASE_READ_FAILED, NULL, 20000, NOW_UNIX_MS, &d), 0);
    assert_int_equal(d.action, LEASE_LOST);
    lease_state_clear(&s);

    /* A timestamp that cannot be written is an error, not a bad record. */
    lease_state_init(&s);
    assert_int_equal(lease_decide(&c, &s, LEASE_READ_NOT_FOUND, NULL, 0, INT64_MAX, &d), -ERANGE);
    lease_state_clear(&s);
}

/* Two processes against one simulated lease object, driven in steps of
 * 100 ms (the wall clock moves with the monotonic one, so renewals change
 * renewTime): creation, standby waiting while the leader renews, takeover 15 s
 * after the leader stops renewing, release and immediate takeover back. */
struct sim_node {
    const char *identity;
    struct lease_config cfg;
    struct lease_state state;
    uint64_t next_ms;
    bool alive;
};

struct sim {
    bool exists;
    struct lease_record record;
    unsigned writes;
};

static void sim_step(struct sim *server, struct sim_node *n, uint64_t now)
{
    if (!n->alive || now < n->next_ms)
        return;
    struct lease_decision d;
    assert_int_equal(
        lease_decide(&n->cfg, &n->state, server->exists ? LEASE_READ_FOUND : LEASE_READ_NOT_FOUND,
                     server->exists ? &server->record : NULL, now, NOW_UNIX_MS + (int64_t)now, &d),
        0);
    if (d.action == LEASE_CREATE || d.action == LEASE_ACQUIRE || d.action == LEASE_RENEW) {
        /* A create of an existing object would be a 409; the simulation
         * never hits it since both nodes read before writing. */
        lease_record_clear(&server->record);
        assert_int_equal(lease_record_copy(&d.record, &server->record), 0);
        server->exists = true;
        server->writes++;
        assert_int_equal(lease_state_written(&n->cfg, &n->state, &d.record, now), 0);
    }
    n->next_ms = now + d.delay_ms;
    lease_decision_clear(&d);
}

static void test_two_nodes(void **state)
{
    (void)state;
    struct sim server = {0};
    struct sim_node a = {.identity = "a", .cfg = {.identity = "a"}, .alive = true};
    struct sim_node b = {.identity = "b", .cfg = {.identity = "b"}, .alive = true, .next_ms = 100};
    lease_state_init(&a.state);
    lease_state_init(&b.state);

    uint64_t now = 0;
    for (; now <= 60000; now += 100) {
        sim_step(&server, &a, now);
        sim_step(&server, &b, now);
        assert_false(a.state.leader && b.state.leader);
    }
    /* a created it and kept it for a minute; b never took over. */
    assert_true(a.state.leader);
    assert_false(b.state.leader);
    assert_string_equal(server.record.holder_identity, "a");
    assert_int_equal(server.record.lease_transitions, 0);
    assert_int_equal(server.writes, 31); /* create + a renewal every 2 s */

    /* a dies at 60 s; its last write was at 60 s and b saw it by 60.1 s. */
    a.alive = false;
    uint64_t died = now - 100;
    uint64_t took_over = 0;
    for (; now <= 120000 && !took_over; now += 100) {
        sim_step(&server, &b, now);
        if (b.state.leader)
            took_over = now;
    }
    assert_true(took_over >= died + 15000);
    assert_true(took_over <= died + 15000 + 500);
    assert_string_equal(server.record.holder_identity, "b");
    assert_int_equal(server.record.lease_transitions, 1);

    /* b releases on shutdown; a restarts and takes over at its first look. */
    struct lease_decision d;
    assert_int_equal(lease_release(&b.cfg, &b.state, NOW_UNIX_MS, &d), 0);
    assert_int_equal(d.action, LEASE_RELEASE);
    lease_record_clear(&server.record);
    assert_int_equal(lease_record_copy(&d.record, &server.record), 0);
    lease_decision_clear(&d);
    b.alive = false;

    lease_state_clear(&a.state);
    lease_state_init(&a.state);
    a.alive = true;
    a.next_ms = now;
    sim_step(&server, &a, now);
    assert_true(a.state.leader);
    assert_int_equal(server.record.lease_transitions, 2);

    lease_record_clear(&server.record);
    lease_state_clear(&a.state);
    lease_state_clear(&b.state);
}

static void test_json(void **state)
{
    (void)state;
    const char *text =
        "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
        "\"metadata\":{\"name\":\"hibernator\",\"namespace\":\"hibernator-system\","
        "\"resourceVersion\":\"42\"},"
        "\"spec\":{\"holderIdentity\":\"hibernator-1\",\"leaseDurationSeconds\":15,"
        "\"acquireTime\":\"" ACQ "\",\"renewTime\":\"" R1 "\",\"leaseTransitions\":3}}";
    cJSON *obj = cJSON_Parse(text);
    assert_non_null(obj);
    struct lease_record r;
    assert_int_equal(lease_record_from_json(obj, &r), 0);
    struct rec want = {OTHER, 15, ACQ, R1, 3};
    assert_record(&r, &want);

    cJSON *spec = lease_record_to_spec_json(&r);
    assert_non_null(spec);
    assert_true(cJSON_Compare(spec, cJSON_GetObjectItem(obj, "spec"), 1));
    cJSON_Delete(spec);
    lease_record_clear(&r);
    cJSON_Delete(obj);

    /* No spec, mistyped fields: read as absent. */
    obj = cJSON_Parse("{\"spec\":{\"holderIdentity\":7,\"leaseDurationSeconds\":\"15\","
                      "\"leaseTransitions\":1e300,\"renewTime\":null}}");
    assert_non_null(obj);
    assert_int_equal(lease_record_from_json(obj, &r), 0);
    struct rec empty = {NULL, 0, NULL, NULL, 0};
    assert_record(&r, &empty);
    assert_false(lease_record_held(&r));
    lease_record_clear(&r);
    cJSON_Delete(obj);

    obj = cJSON_Parse("{\"metadata\":{}}");
    assert_int_equal(lease_record_from_json(obj, &r), 0);
    assert_null(r.holder_identity);
    cJSON_Delete(obj);
    obj = cJSON_Parse("[1]");
    assert_int_equal(lease_record_from_json(obj, &r), -EINVAL);
    cJSON_Delete(obj);

    /* A release writes holderIdentity "" explicitly and omits absent times. */
    struct lease_record rel = {.holder_identity = NULL, .lease_duration_seconds = 1};
    spec = lease_record_to_spec_json(&rel);
    assert_non_null(spec);
    char *out = cJSON_PrintUnformatted(spec);
    assert_string_equal(
        out, "{\"holderIdentity\":\"\",\"leaseDurationSeconds\":1,\"leaseTransitions\":0}");
    cJSON_free(out);
    cJSON_Delete(spec);
}

static void test_record_equal(void **state)
{
    (void)state;
    struct rec a = {ME, 15, ACQ, R1, 1};
    struct rec b = {ME, 15, ACQ, R1, 1};
    struct lease_record va = rec_view(&a), vb = rec_view(&b);
    assert_true(lease_record_equal(&va, &vb));
    vb.renew_time = NOW;
    assert_false(lease_record_equal(&va, &vb));
    vb = rec_view(&b);
    vb.lease_transitions = 2;
    assert_false(lease_record_equal(&va, &vb));
    struct lease_record n1 = {0}, n2 = {.holder_identity = "", .acquire_time = ""};
    assert_true(lease_record_equal(&n1, &n2));
    lease_record_clear(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide_table), cmocka_unit_test(test_decide_found_needs_record),
        cmocka_unit_test(test_written),      cmocka_unit_test(test_release),
        cmocka_unit_test(test_config),       cmocka_unit_test(test_two_nodes),
        cmocka_unit_test(test_json),         cmocka_unit_test(test_record_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
