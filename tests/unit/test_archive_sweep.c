/* Which archives of the kubelet's checkpoints directory the node agent
 * sweeps (node/archive_sweep.h), from a table of names, times and records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "node/archive_sweep.h"

static const struct sweep_container containers[] = {
    {"team-a", "nb-1", "workspace"},
    {"x", "p", "y"},
};

static const char *const recorded[] = {
    "/var/lib/kubelet/checkpoints/checkpoint-nb-1_team-a-workspace-2026-12-07T06:00:00Z.tar",
    NULL, /* a snapshot without status.archive */
};

static const struct sweep_container busy[] = {
    {"team-c", "nb-3", "workspace"},
};

static const struct sweep_container with_busy[] = {
    {"team-a", "nb-1", "workspace"},
    {"x", "p", "y"},
    {"team-c", "nb-3", "workspace"},
};

static const struct sweep_rules rules = {
    .containers = containers,
    .n_containers = 2,
    .recorded = recorded,
    .n_recorded = 2,
    .cutoff_ms = 1000000,
};

static void test_table(void **state)
{
    (void)state;
    static const struct {
        const char *what, *name;
        int64_t mtime_ms;
        int want;
    } rows[] = {
        {"unrecorded, old: a crash's leftover",
         "checkpoint-nb-1_team-a-workspace-2026-12-07T06:01:00Z.tar", 5, 1},
        {"with a zone offset", "checkpoint-nb-1_team-a-workspace-2026-12-07T06:01:00+01:00.tar", 5,
         1},
        {"recorded (by its path's name)",
         "checkpoint-nb-1_team-a-workspace-2026-12-07T06:00:00Z.tar", 5, 0},
        {"too recent: a call may be writing it",
         "checkpoint-nb-1_team-a-workspace-2026-12-07T06:01:00Z.tar", 1000000, 0},
        {"another container's (forensic)",
         "checkpoint-nb-2_team-a-workspace-2026-12-07T06:01:00Z.tar", 5, 0},
        {"another namespace", "checkpoint-nb-1_team-b-workspace-2026-12-07T06:01:00Z.tar", 5, 0},
        {"another container of the pod", "checkpoint-nb-1_team-a-sidecar-2026-12-07T06:01:00Z.tar",
         5, 0},
        /* pod p in namespace x-y, container z: not pod p of x, container y */
        {"a longer namespace is not a prefix's container",
         "checkpoint-p_x-y-z-2026-12-07T06:01:00Z.tar", 5, 0},
        {"pod p of x, container y", "checkpoint-p_x-y-2026-12-07T06:01:00Z.tar", 5, 1},
        {"not a time after the container", "checkpoint-nb-1_team-a-workspace-latest.tar", 5, 0},
        {"not a .tar", "checkpoint-nb-1_team-a-workspace-2026-12-07T06:01:00Z.tar.part", 5, 0},
        {"not the kubelet's prefix", "nb-1_team-a-workspace-2026-12-07T06:01:00Z.tar", 5, 0},
        {"a path, not a name", "x/checkpoint-p_x-y-2026-12-07T06:01:00Z.tar", 5, 0},
        {"empty", "", 5, 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int got = archive_sweep_is_leftover(rows[i].name, rows[i].mtime_ms, &rules);
        if (got != rows[i].want)
            fail_msg("%s: %s: got %d, want %d", rows[i].what, rows[i].name, got, rows[i].want);
    }
    assert_int_equal(archive_sweep_is_leftover(NULL, 5, &rules), 0);
}

/* A container whose checkpoint is in flight keeps its archives, whatever
 * their age; the others' leftovers still go. */
static void test_busy(void **state)
{
    (void)state;
    struct sweep_rules r = rules;
    r.containers = with_busy;
    r.n_containers = 3;
    assert_int_equal(archive_sweep_is_leftover(
                         "checkpoint-nb-3_team-c-workspace-2026-12-07T06:01:00Z.tar", 5, &r),
                     1);
    r.busy = busy;
    r.n_busy = 1;
    assert_int_equal(archive_sweep_is_leftover(
                         "checkpoint-nb-3_team-c-workspace-2026-12-07T06:01:00Z.tar", 5, &r),
                     0);
    assert_int_equal(archive_sweep_is_leftover(
                         "checkpoint-nb-1_team-a-workspace-2026-12-07T06:01:00Z.tar", 5, &r),
                     1);
}

static void test_rfc3339(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int want;
    } rows[] = {
        {"2026-12-07T06:01:00Z", 1},
        {"2026-12-07T06:01:00+01:00", 1},
        {"2026-12-07T06:01:00-07:30", 1},
        {"2026-12-07 06:01:00Z", 0},
        {"2026-12-07T06:01:00", 0},
        {"2026-12-07T06:01:00.5Z", 0},
        {"2026-12-07T06:01:0aZ", 0},
        {"2026-12-07T06:01:00+0100", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        size_t n = 0;
        while (rows[i].s[n])
            n++;
        if (archive_sweep_is_rfc3339(rows[i].s, n) != rows[i].want)
            fail_msg("%s: want %d", rows[i].s, rows[i].want);
    }
}

static void test_no_containers(void **state)
{
    (void)state;
    struct sweep_rules none = {.cutoff_ms = 1000000};
    assert_int_equal(
        archive_sweep_is_leftover("checkpoint-p_x-y-2026-12-07T06:01:00Z.tar", 5, &none), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_no_containers),
        cmocka_unit_test(test_busy),
    };
    return cmocka_run_group_tests_name("archive_sweep", tests, NULL, NULL);
}
