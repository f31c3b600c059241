/* What a decision achieved, from tables of (status read, status decided). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "workspace/outcome.h"
#include "workspace/status_fields.h"

#define NOW 100000

/* Statuses along one GPU pause and resume (times in ms). */
#define RUNNING                                                                                    \
    {                                                                                              \
        .state = WS_STATE_RUNNING, .pauses = 0, .resumes = 0                                       \
    }
#define PAUSE(released)                                                                            \
    {                                                                                              \
        .requested_ms = 10000, .pod_deleted_ms = 20000, .accelerator_released_ms = (released),     \
        .reason = "User"                                                                           \
    }
#define SNAP(attempt_, phase_, requested)                                                          \
    {                                                                                              \
        .attempt = attempt_, .phase = phase_, .requested_ms = requested, .seconds = 3.5            \
    }

static struct condition timeout_cond[] = {
    {.type = "SnapshotReady", .status = COND_FALSE, .reason = "Timeout"}};
static struct condition failed_cond[] = {
    {.type = "SnapshotReady", .status = COND_FALSE, .reason = "Failed"}};

struct row {
    const char *what;
    struct workspace_status old, decided;
    /* expected */
    int paused;
    const char *reason;
    enum pause_memory memory;
    enum restore_source resumed;
    double resume_seconds;
    enum snapshot_result snapshot;
    double snapshot_seconds;
    int wait_ended;
    double wait_seconds;
    double released;
};

static const struct row rows[] = {
    {"nothing happened", RUNNING, RUNNING, .paused = 0},

    /* ---- pauses ---- */
    {"pause completed with its snapshot",
     {.state = WS_STATE_PAUSING,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline)PAUSE(0),
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Ready", 11000)},
     {.state = WS_STATE_PAUSED,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline)PAUSE(21000),
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Ready", 11000)},
     .paused = 1,
     .reason = "user",
     .memory = PAUSE_MEMORY_SNAPSHOT},
    {"pause completed without a snapshot",
     {.state = WS_STATE_PAUSING,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline)PAUSE(0)},
     {.state = WS_STATE_PAUSED,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline)PAUSE(21000)},
     .paused = 1,
     .reason = "user",
     .memory = PAUSE_MEMORY_FILES},
    {"pause completed after its snapshot failed",
     {.state = WS_STATE_PAUSING,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline)PAUSE(0),
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Failed", 11000)},
     {.state = WS_STATE_PAUSED,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline)PAUSE(21000),
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Failed", 11000)},
     .paused = 1,
     .reason = "user",
     .memory = PAUSE_MEMORY_SNAPSHOT_FAILED},
    {"the snapshot is an earlier pause's",
     {.state = WS_STATE_PAUSING,
      .pauses = 2,
      .last_pause = &(struct workspace_pause_timeline)PAUSE(0),
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Ready", 5000)},
     {.state = WS_STATE_PAUSED,
      .pauses = 2,
      .last_pause = &(struct workspace_pause_timeline)PAUSE(21000),
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Ready", 5000)},
     .paused = 1,
     .reason = "user",
     .memory = PAUSE_MEMORY_FILES},
    {"an idle pause",
     {.state = WS_STATE_PAUSING,
      .pauses = 1,
      .last_pause =
          &(struct workspace_pause_timeline){.requested_ms = 10000, .reason = "IdleTimeout"}},
     {.state = WS_STATE_PAUSED,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline){.requested_ms = 10000,
                                                       .accelerator_released_ms = 21000,
                                                       .reason = "IdleTimeout"}},
     .paused = 1,
     .reason = "idle_timeout",
     .memory = PAUSE_MEMORY_FILES},
    {"a reason that is not a word",
     {.state = WS_STATE_PAUSING,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline){.requested_ms = 10000, .reason = "x y"}},
     {.state = WS_STATE_PAUSED,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline){.requested_ms = 10000,
                                                       .accelerator_released_ms = 21000,
                                                       .reason = "x y"}},
     .paused = 1,
     .reason = "other",
     .memory = PAUSE_MEMORY_FILES},
    {"already paused: counted before",
     {.state = WS_STATE_PAUSED,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline)PAUSE(21000)},
     {.state = WS_STATE_PAUSED,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline)PAUSE(21000)},
     .paused = 0},
    {"still pausing",
     {.state = WS_STATE_PAUSING,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline)PAUSE(0)},
     {.state = WS_STATE_PAUSING,
      .pauses = 1,
      .last_pause = &(struct workspace_pause_timeline)PAUSE(0)},
     .paused = 0},

    /* ---- snapshots ---- */
    {"snapshot became Ready",
     {.state = WS_STATE_PAUSING,
      .pauses = 1,
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "InProgress", 11000)},
     {.state = WS_STATE_PAUSING,
      .pauses = 1,
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Ready", 11000)},
     .snapshot = SNAPSHOT_RESULT_READY,
     .snapshot_seconds = 3.5},
    {"snapshot failed",
     {.state = WS_STATE_PAUSING,
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "InProgress", 11000)},
     {.state = WS_STATE_PAUSING,
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Failed", 11000),
      .conditions = failed_cond,
      .n_conditions = 1},
     .snapshot = SNAPSHOT_RESULT_FAILED},
    {"snapshot timed out",
     {.state = WS_STATE_PAUSING,
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "InProgress", 11000)},
     {.state = WS_STATE_PAUSING,
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Failed", 11000),
      .conditions = timeout_cond,
      .n_conditions = 1},
     .snapshot = SNAPSHOT_RESULT_TIMEOUT},
    {"a failed attempt stays failed, its condition gone: counted before",
     {.state = WS_STATE_PAUSING,
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Failed", 11000),
      .conditions = timeout_cond,
      .n_conditions = 1},
     {.state = WS_STATE_RUNNING,
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Failed", 11000)},
     .paused = 0},
    {"the retry's attempt failed too",
     {.state = WS_STATE_PAUSING,
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Failed", 11000)},
     {.state = WS_STATE_PAUSING,
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-2", "Failed", 41000)},
     .snapshot = SNAPSHOT_RESULT_FAILED},
    {"a new attempt started",
     {.state = WS_STATE_PAUSING,
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-1", "Failed", 11000)},
     {.state = WS_STATE_PAUSING,
      .snapshot = &(struct workspace_snapshot)SNAP("w-p1-2", "InProgress", 41000)},
     .paused = 0},

    /* ---- resumes ---- */
    {"resumed from the snapshot",
     {.state = WS_STATE_RESUMING,
      .pauses = 1,
      .resumes = 1,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 50000,
                                                         .restored_from = "FromSnapshot"}},
     {.state = WS_STATE_RUNNING,
      .pauses = 1,
      .resumes = 1,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 50000,
                                                         .ready_ms = 62500,
                                                         .seconds_to_ready = 12.5,
                                                         .restored_from = "FromSnapshot"}},
     .resumed = RESTORE_SOURCE_SNAPSHOT,
     .resume_seconds = 12.5},
    {"ready, the restore not judged yet",
     {.state = WS_STATE_RESUMING,
      .pauses = 1,
      .resumes = 1,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 50000}},
     {.state = WS_STATE_RUNNING,
      .pauses = 1,
      .resumes = 1,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 50000,
                                                         .ready_ms = 62500,
                                                         .seconds_to_ready = 12.5}},
     .paused = 0},
    {"judged a cold start after it was ready",
     {.state = WS_STATE_RUNNING,
      .pauses = 1,
      .resumes = 1,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 50000,
                                                         .ready_ms = 62500,
                                                         .seconds_to_ready = 12.5}},
     {.state = WS_STATE_RUNNING,
      .pauses = 1,
      .resumes = 1,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 50000,
                                                         .ready_ms = 62500,
                                                         .seconds_to_ready = 12.5,
                                                         .restored_from = "ColdStart"}},
     .resumed = RESTORE_SOURCE_COLD_START,
     .resume_seconds = 12.5},
    {"a late PodRestored after a cold start: counted before",
     {.state = WS_STATE_RUNNING,
      .pauses = 1,
      .resumes = 1,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 50000,
                                                         .ready_ms = 62500,
                                                         .restored_from = "ColdStart"}},
     {.state = WS_STATE_RUNNING,
      .pauses = 1,
      .resumes = 1,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 50000,
                                                         .ready_ms = 62500,
                                                         .restored_from = "FromSnapshot"}},
     .paused = 0},
    {"resumed from the checkpoint",
     {.state = WS_STATE_RESUMING,
      .pauses = 1,
      .resumes = 1,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 50000,
                                                         .restored_from = "FromCheckpoint"}},
     {.state = WS_STATE_RUNNING,
      .pauses = 1,
      .resumes = 1,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 50000,
                                                         .ready_ms = 52000,
                                                         .seconds_to_ready = 2,
                                                         .restored_from = "FromCheckpoint"}},
     .resumed = RESTORE_SOURCE_CHECKPOINT,
     .resume_seconds = 2},
    {"created paused, then started fresh",
     {.state = WS_STATE_RESUMING,
      .resumes = 1,
      .last_resume =
          &(struct workspace_resume_timeline){.requested_ms = 50000, .restored_from = "Fresh"}},
     {.state = WS_STATE_RUNNING,
      .resumes = 1,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 50000,
                                                         .ready_ms = 51000,
                                                         .seconds_to_ready = 1,
                                                         .restored_from = "Fresh"}},
     .resumed = RESTORE_SOURCE_FRESH,
     .resume_seconds = 1},
    {"the next resume",
     {.state = WS_STATE_PAUSED,
      .pauses = 2,
      .resumes = 1,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 50000,
                                                         .ready_ms = 51000,
                                                         .restored_from = "FromSnapshot"}},
     {.state = WS_STATE_RUNNING,
      .pauses = 2,
      .resumes = 2,
      .last_resume = &(struct workspace_resume_timeline){.requested_ms = 90000,
                                                         .ready_ms = 91000,
                                                         .seconds_to_ready = 1,
                                                         .restored_from = "FromSnapshot"}},
     .resumed = RESTORE_SOURCE_SNAPSHOT,
     .resume_seconds = 1},

    /* ---- capacity ---- */
    {"the wait for capacity ended",
     {.state = WS_STATE_WAITING_FOR_CAPACITY, .waiting_for_capacity_since_ms = NOW - 30000},
     {.state = WS_STATE_RESUMING},
     .wait_ended = 1,
     .wait_seconds = 30},
    {"paused while waiting",
     {.state = WS_STATE_WAITING_FOR_CAPACITY, .waiting_for_capacity_since_ms = NOW - 1500},
     {.state = WS_STATE_PAUSED},
     .wait_ended = 1,
     .wait_seconds = 1.5},
    {"still waiting",
     {.state = WS_STATE_WAITING_FOR_CAPACITY, .waiting_for_capacity_since_ms = NOW - 30000},
     {.state = WS_STATE_WAITING_FOR_CAPACITY, .waiting_for_capacity_since_ms = NOW - 30000},
     .paused = 0},

    /* ---- accounting ---- */
    {"a resume request adds the paused accelerator time",
     {.state = WS_STATE_PAUSED, .pauses = 1, .accelerator_seconds_released = 100},
     {.state = WS_STATE_RESUMING,
      .pauses = 1,
      .resumes = 1,
      .accelerator_seconds_released = 160.25},
     .released = 60.25},
    {"accounting never counts down",
     {.state = WS_STATE_PAUSED, .accelerator_seconds_released = 100},
     {.state = WS_STATE_PAUSED, .accelerator_seconds_released = 50},
     .paused = 0},
};

/* A row's status as a decoded one reads: the blocks it leaves out absent. */
static struct workspace_status filled(const struct workspace_status *s)
{
    struct workspace_status c = *s;
    status_fields_fill_empty(workspace_status_fields, &c);
    return c;
}

static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        struct workspace_outcome o;
        struct workspace_status old = filled(&r->old), decided = filled(&r->decided);
        workspace_outcome_diff(&old, &decided, NOW, &o);
        print_message("  %s\n", r->what);
        assert_int_equal(o.paused, r->paused);
        if (r->paused) {
            assert_string_equal(o.pause_reason, r->reason);
            assert_string_equal(pause_memory_name(o.pause_memory), pause_memory_name(r->memory));
        }
        assert_string_equal(restore_source_name(o.resumed), restore_source_name(r->resumed));
        assert_true(o.resume_seconds == r->resume_seconds);
        assert_string_equal(snapshot_result_name(o.snapshot), snapshot_result_name(r->snapshot));
        assert_true(o.snapshot_seconds == r->snapshot_seconds);
        assert_int_equal(o.capacity_wait_ended, r->wait_ended);
        assert_true(o.capacity_wait_seconds == r->wait_seconds);
        assert_true(o.accelerator_seconds_released == r->released);
        int any = r->paused || r->resumed || r->snapshot || r->wait_ended || r->released > 0;
        assert_int_equal(workspace_outcome_any(&o), any);
    }
}

/* A decision's status, once written, is the next decision's starting
 * point: whatever the first one counted, the second counts nothing. */
static void test_counted_once(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct workspace_outcome o;
        struct workspace_status decided = filled(&rows[i].decided);
        workspace_outcome_diff(&decided, &decided, NOW + 1000, &o);
        assert_false(workspace_outcome_any(&o));
    }
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(pause_memory_name(PAUSE_MEMORY_FILES), "files");
    assert_string_equal(pause_memory_name(PAUSE_MEMORY_SNAPSHOT), "snapshot");
    assert_string_equal(pause_memory_name(PAUSE_MEMORY_SNAPSHOT_FAILED), "snapshot_failed");
    assert_string_equal(restore_source_name(RESTORE_SOURCE_SNAPSHOT), "snapshot");
    assert_string_equal(restore_source_name(RESTORE_SOURCE_CHECKPOINT), "checkpoint");
    assert_string_equal(restore_source_name(RESTORE_SOURCE_COLD_START), "cold_start");
    assert_string_equal(restore_source_name(RESTORE_SOURCE_FRESH), "fresh");
    assert_string_equal(snapshot_result_name(SNAPSHOT_RESULT_READY), "ready");
    assert_string_equal(snapshot_result_name(SNAPSHOT_RESULT_FAILED), "failed");
    assert_string_equal(snapshot_result_name(SNAPSHOT_RESULT_TIMEOUT), "timeout");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_counted_once),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests_name("decision outcomes", tests, NULL, NULL);
}
