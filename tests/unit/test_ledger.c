/*
 * The GPU-hours ledger's lookup: which pod took the accelerator a pause
 * released, and how long the controller keeps looking; and its bounds: a
 * ledger someone else wrote into the status is brought within what the
 * workspace's life allows, one the controller wrote is never changed.
 */
#include <math.h>
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
    assert_int_equal(workspace_status_own(s), 0);
    s->state = WS_STATE_PAUSED;
    s->pauses = 3;
    s->resumes = 2;
    s->accelerator_resource = strdup("nvidia.com/gpu");
    s->accelerator_count = 1;
    s->last_pause->requested_ms = T0;
    s->last_pause->pod_deleted_ms = T0 + 1500;
    s->last_pause->accelerator_released_ms = T0 + 30 * SEC;
    s->last_pause->node_name = strdup("gpu-1");
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
    int64_t released = s->last_pause->accelerator_released_ms;
    assert_true(ledger_awaits_taker(s, released));
    assert_true(ledger_awaits_taker(s, released + DAY - 1));
    assert_false(ledger_awaits_taker(s, released + DAY)); /* a day is enough */

    s->resumes = 3; /* resumed: the question is closed */
    assert_false(ledger_awaits_taker(s, released + SEC));
    s->resumes = 2;
    s->last_pause->accelerator_taken_ms = released + 5 * SEC; /* answered */
    assert_false(ledger_awaits_taker(s, released + SEC));
    s->last_pause->accelerator_taken_ms = 0;
    s->last_pause->accelerator_released_ms = 0; /* still pausing */
    assert_false(ledger_awaits_taker(s, released + SEC));
    s->last_pause->accelerator_released_ms = released;
    set(&s->last_pause->node_name, NULL); /* never got a node */
    assert_false(ledger_awaits_taker(s, released + SEC));
    set(&s->last_pause->node_name, "gpu-1");
    set(&s->accelerator_resource, NULL); /* no accelerator to give back */
    assert_false(ledger_awaits_taker(s, released + SEC));
    workspace_free(ws);
}

static void test_awaits_node_removal(void **state)
{
    (void)state;
    struct workspace *ws = paused_alice();
    struct workspace_status *s = &ws->status;
    int64_t released = s->last_pause->accelerator_released_ms;
    assert_true(ledger_awaits_node_removal(s, released));
    assert_true(ledger_awaits_node_removal(s, released + DAY - 1));
    assert_false(ledger_awaits_node_removal(s, released + DAY)); /* a day is enough */
    /* taken by another pod: the node's fate is still of interest */
    s->last_pause->accelerator_taken_ms = released + 5 * SEC;
    assert_true(ledger_awaits_node_removal(s, released + SEC));
    s->last_pause->node_removed_ms = released + 9 * SEC; /* answered */
    assert_false(ledger_awaits_node_removal(s, released + 10 * SEC));
    s->last_pause->node_removed_ms = 0;
    s->resumes = 3; /* resumed: the question is closed */
    assert_false(ledger_awaits_node_removal(s, released + SEC));
    s->resumes = 2;
    s->last_pause->accelerator_released_ms = 0; /* still pausing */
    assert_false(ledger_awaits_node_removal(s, released + SEC));
    s->last_pause->accelerator_released_ms = released;
    set(&s->last_pause->node_name, NULL); /* never got a node */
    assert_false(ledger_awaits_node_removal(s, released + SEC));
    set(&s->last_pause->node_name, "");
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
    ws->status.last_pause->pod_deleted_ms = 0;
    struct workspace_pod p = pod_of(&pick_rows[1]);
    assert_null(ledger_taker_pick(ws, now, NULL, &p));
    p.scheduled_ms = T0 + 30 * SEC;
    assert_ptr_equal(ledger_taker_pick(ws, now, NULL, &p), &p);

    /* nothing is looked for once the question is closed */
    ws->status.last_pause->accelerator_taken_ms = T0 + 31 * SEC;
    assert_null(ledger_taker_pick(ws, now, NULL, &p));
    ws->status.last_pause->accelerator_taken_ms = 0;
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

/* ---- bounds ---- */

#define MIN (60 * SEC)
#define HOUR (3600 * SEC)

/* A history of n records paused at T0 - 1 h, T0 - 2 h, ... (newest first). */
static void give_history(struct workspace_status *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        s->last_pause->requested_ms = T0 - (int64_t)(n - i) * HOUR;
        assert_int_equal(workspace_status_push_history(s), 0);
    }
    s->last_pause->requested_ms = T0;
}

struct bound_row {
    const char *name;
    /* the status as read */
    int64_t pauses, resumes;
    double held, released;
    int64_t held_since, released_at; /* relative to T0, 1: unset */
    size_t history;
    /* the limits: created this long before T0 (0: unknown), generation, count */
    int64_t age_ms, generation;
    int count;
    /* expected */
    unsigned fixed;
    int64_t want_pauses, want_resumes;
    double want_held, want_released;
    int64_t want_held_since, want_released_at;
    size_t want_history;
};

#define UNSET 1
/* Created a day before T0 with generation 9: room for 8 counts and
 * 86460 accelerator-seconds (a day and the clock slack) per accelerator;
 * times may be a minute (the slack) before creation. */
static const struct bound_row bound_rows[] = {
    {"as the controller wrote it", 3, 2, 3600, 7200, UNSET, -HOUR, 2, DAY, 9, 1, 0, 3, 2, 3600,
     7200, UNSET, -HOUR, 2},
    {"resumes forged far past pauses (the last pause is open)", 3, 99999999999, 3600, 7200, UNSET,
     -HOUR, 2, DAY, 9, 1, LEDGER_FIXED_COUNTS, 3, 2, 3600, 7200, UNSET, -HOUR, 2},
    {"pauses forged far past resumes (open)", 99999999999, 2, 0, 0, UNSET, UNSET, 0, DAY, 9, 1,
     LEDGER_FIXED_COUNTS, 3, 2, 0, 0, UNSET, UNSET, 0},
    {"negative counters", -5, -7, 0, 0, UNSET, UNSET, 0, DAY, 9, 1, LEDGER_FIXED_COUNTS, 0, 0, 0, 0,
     UNSET, UNSET, 0},
    {"both forged alike: generation bounds them, a pause stays open", 99999999999, 99999999998, 0,
     0, UNSET, UNSET, 0, DAY, 9, 1, LEDGER_FIXED_COUNTS, 4, 3, 0, 0, UNSET, UNSET, 0},
    {"both forged alike, closed", 99999999999, 99999999999, 0, 0, UNSET, UNSET, 0, DAY, 9, 1,
     LEDGER_FIXED_COUNTS, 4, 4, 0, 0, UNSET, UNSET, 0},
    {"generation 1: nothing could have been counted", 1, 1, 0, 0, UNSET, UNSET, 0, DAY, 1, 1,
     LEDGER_FIXED_COUNTS, 0, 0, 0, 0, UNSET, UNSET, 0},
    {"generation 2: one pause, open", 1, 0, 0, 0, UNSET, UNSET, 0, DAY, 2, 1, 0, 1, 0, 0, 0, UNSET,
     UNSET, 0},
    {"unknown creation: the generation is not trusted alone", 50, 50, 0, 0, UNSET, UNSET, 0, 0, 1,
     1, 0, 50, 50, 0, 0, UNSET, UNSET, 0},
    {"seconds held forged", 1, 1, 1e15, 0, UNSET, UNSET, 0, DAY, 9, 1, LEDGER_FIXED_SECONDS, 1, 1,
     86460, 0, UNSET, UNSET, 0},
    {"seconds released forged, held kept", 1, 1, 60000, 1e15, UNSET, UNSET, 0, DAY, 9, 1,
     LEDGER_FIXED_SECONDS, 1, 1, 60000, 26460, UNSET, UNSET, 0},
    {"two accelerators double the room", 1, 1, 150000, 0, UNSET, UNSET, 0, DAY, 9, 2, 0, 1, 1,
     150000, 0, UNSET, UNSET, 0},
    {"negative and not-a-number seconds", 1, 1, -5, NAN, UNSET, UNSET, 0, DAY, 9, 1,
     LEDGER_FIXED_SECONDS, 1, 1, 0, 0, UNSET, UNSET, 0},
    {"no accelerator count: nothing can be held", 1, 1, 10, 10, UNSET, UNSET, 0, DAY, 9, 0,
     LEDGER_FIXED_SECONDS, 1, 1, 0, 0, UNSET, UNSET, 0},
    {"unknown creation: seconds only not negative", 1, 1, 1e15, -1, UNSET, UNSET, 0, 0, 9, 1,
     LEDGER_FIXED_SECONDS, 1, 1, 1e15, 0, UNSET, UNSET, 0},
    {"held since before creation (1970)", 1, 1, 0, 0, -T0 + SEC, UNSET, 0, DAY, 9, 1,
     LEDGER_FIXED_TIMES, 1, 1, 0, 0, -DAY - MIN, UNSET, 0},
    {"held since in the future", 1, 1, 0, 0, DAY, UNSET, 0, DAY, 9, 1, LEDGER_FIXED_TIMES, 1, 1, 0,
     0, 0, UNSET, 0},
    {"released before creation", 1, 0, 0, 0, UNSET, -10 * DAY, 1, DAY, 9, 1, LEDGER_FIXED_TIMES, 1,
     0, 0, 0, UNSET, -DAY - MIN, 1},
    {"more records than pauses", 2, 2, 0, 0, UNSET, UNSET, 5, DAY, 9, 1, LEDGER_FIXED_HISTORY, 2, 2,
     0, 0, UNSET, UNSET, 2},
    {"records from before creation", 5, 5, 0, 0, UNSET, UNSET, 5, 3 * HOUR + 1, 11, 1,
     LEDGER_FIXED_HISTORY, 5, 5, 0, 0, UNSET, UNSET, 3},
    {"everything at once", 99999999999, 99999999999, 1e15, 1e15, -T0 + SEC, DAY, 20, DAY, 5, 1,
     LEDGER_FIXED_COUNTS | LEDGER_FIXED_SECONDS | LEDGER_FIXED_TIMES | LEDGER_FIXED_HISTORY, 2, 2,
     86460, 0, -DAY - MIN, 0, 2},
};

static int64_t at(int64_t rel)
{
    return rel == UNSET ? 0 : T0 + rel;
}

static void test_bound_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bound_rows) / sizeof(bound_rows[0]); i++) {
        const struct bound_row *r = &bound_rows[i];
        struct workspace_status s;
        workspace_status_init(&s);
        assert_int_equal(workspace_status_own(&s), 0);
        give_history(&s, r->history);
        s.pauses = r->pauses;
        s.resumes = r->resumes;
        s.accelerator_seconds_held = r->held;
        s.accelerator_seconds_released = r->released;
        s.accelerator_held_since_ms = at(r->held_since);
        s.last_pause->accelerator_released_ms = at(r->released_at);
        struct ledger_limits l = {.created_ms = r->age_ms ? T0 - r->age_ms : 0,
                                  .generation = r->generation,
                                  .accelerator_count = r->count};
        unsigned fixed = ledger_bound(&s, &l, T0);
        if (fixed != r->fixed || s.pauses != r->want_pauses || s.resumes != r->want_resumes ||
            s.accelerator_seconds_held != r->want_held ||
            s.accelerator_seconds_released != r->want_released ||
            s.accelerator_held_since_ms != at(r->want_held_since) ||
            s.last_pause->accelerator_released_ms != at(r->want_released_at) ||
            s.n_history != r->want_history)
            fail_msg("%s: fixed %#x, pauses %lld, resumes %lld, held %g, released %g, held since "
                     "%lld, released at %lld, %zu records",
                     r->name, fixed, (long long)s.pauses, (long long)s.resumes,
                     s.accelerator_seconds_held, s.accelerator_seconds_released,
                     (long long)(s.accelerator_held_since_ms - T0),
                     (long long)(s.last_pause->accelerator_released_ms - T0), s.n_history);
        /* the newest records stay */
        for (size_t k = 0; k < s.n_history; k++)
            assert_int_equal(s.history[k].pause.requested_ms, T0 - (int64_t)(k + 1) * HOUR);
        /* bounded once is bounded */
        assert_int_equal(ledger_bound(&s, &l, T0), 0);
        workspace_status_clear(&s);
    }
}

/* The counters by outcome: not negative, together at most the resumes
 * (resumesFrom) or the pauses (pausesKept), the last named lowered first;
 * counted only for the outcomes the schema names. */
static void test_bound_outcomes(void **state)
{
    (void)state;
    struct workspace_status s;
    workspace_status_init(&s);
    assert_int_equal(workspace_status_own(&s), 0);
    s.pauses = 5;
    s.resumes = 4;
    struct ledger_limits l = {.created_ms = T0 - DAY, .generation = 10, .accelerator_count = 1};

    /* as the controller counts them: kept */
    assert_int_equal(ledger_count_resume(&s, "FromSnapshot"), 1);
    assert_int_equal(ledger_count_resume(&s, "ColdStart"), 1);
    assert_int_equal(ledger_count_resume(&s, "FreshHome"), 1);
    assert_int_equal(ledger_count_resume(&s, "Restoring"), 0);
    assert_int_equal(ledger_count_resume(&s, NULL), 0);
    assert_int_equal(ledger_count_pause(&s, "snapshot"), 1);
    assert_int_equal(ledger_count_pause(&s, "files"), 1);
    assert_int_equal(ledger_count_pause(&s, "snapshotFailed"), 1);
    assert_int_equal(ledger_count_pause(&s, "memory"), 0);
    assert_int_equal(ledger_resumes_from_total(&s), 3);
    assert_int_equal(ledger_pauses_kept_total(&s), 3);
    assert_int_equal(ledger_bound(&s, &l, T0), 0);

    /* forged: more than were counted at all, negatives */
    s.resumes_from = (struct workspace_resume_sources){.from_snapshot = 3,
                                                       .cold_start = -2,
                                                       .from_checkpoint = 1,
                                                       .fresh = 7,
                                                       .fresh_home = INT64_MAX};
    s.pauses_kept =
        (struct workspace_pause_memories){.snapshot = INT64_MAX, .files = 9, .snapshot_failed = -1};
    assert_int_equal(ledger_bound(&s, &l, T0), LEDGER_FIXED_OUTCOMES);
    assert_int_equal(s.resumes_from.from_snapshot, 3);
    assert_int_equal(s.resumes_from.cold_start, 0);
    assert_int_equal(s.resumes_from.from_checkpoint, 1);
    assert_int_equal(s.resumes_from.fresh, 0);
    assert_int_equal(s.resumes_from.fresh_home, 0);
    assert_int_equal(s.pauses_kept.snapshot, 5);
    assert_int_equal(s.pauses_kept.files, 0);
    assert_int_equal(s.pauses_kept.snapshot_failed, 0);
    assert_int_equal(ledger_bound(&s, &l, T0), 0);

    /* the counts lowered by the generation lower these too */
    l.generation = 4; /* two pauses and a resume at most, the last pause open */
    assert_int_equal(ledger_bound(&s, &l, T0), LEDGER_FIXED_COUNTS | LEDGER_FIXED_OUTCOMES);
    assert_int_equal(s.resumes, 1);
    assert_int_equal(ledger_resumes_from_total(&s), 1);
    assert_int_equal(s.resumes_from.from_snapshot, 1);
    assert_int_equal(s.pauses, 2);
    assert_int_equal(s.pauses_kept.snapshot, 2);
    workspace_status_clear(&s);
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static int64_t rnd(int64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int64_t)(rng % (uint64_t)n);
}

/* Ledgers the controller could have written, from random lives (spec
 * edits, pauses, resumes, holds of random length, the controller's clock up
 * to 30 s behind the API server's), are never changed. */
static void test_bound_keeps_real_ledgers(void **state)
{
    (void)state;
    for (int life = 0; life < 2000; life++) {
        struct workspace_status s;
        workspace_status_init(&s);
        assert_int_equal(workspace_status_own(&s), 0);
        int count = 1 + (int)rnd(4);
        int64_t skew = rnd(30 * SEC);
        int64_t created = T0 - T0 % SEC;
        int64_t gen = 1, t = created;
        int paused = rnd(2) == 0;
        /* A pod is scheduled (the API server's clock) and the controller,
         * on its own clock, records the hold no later than its now. */
        int64_t last = created - skew; /* the controller's last pass */
#define HOLD(t)                                                                                    \
    do {                                                                                           \
        int64_t sched = (t) + rnd(10 * SEC), pass = (t)-skew + rnd(20 * SEC);                      \
        s.accelerator_held_since_ms = sched <= pass ? sched : pass;                                \
        last = pass > last ? pass : last;                                                          \
    } while (0)
        if (!paused)
            HOLD(t);
        for (int step = (int)rnd(60); step > 0; step--) {
            t += rnd(2 * HOUR) + 30 * SEC;
            int64_t now = t - skew; /* the controller's clock */
            if (now < last)
                now = last;
            last = now;
            gen++; /* spec.paused changed, or another edit */
            if (rnd(4) == 0)
                continue;
            paused = !paused;
            if (paused && s.accelerator_held_since_ms) {
                /* counted, the hold ends, the accelerator is released */
                s.pauses++;
                *s.last_pause = (struct workspace_pause_timeline){.requested_ms = now};
                if (now > s.accelerator_held_since_ms)
                    s.accelerator_seconds_held +=
                        (double)(now - s.accelerator_held_since_ms) / 1000.0 * count;
                s.accelerator_held_since_ms = 0;
                s.last_pause->accelerator_released_ms = now;
                static const char *const kept[] = {"snapshot", "files", "snapshotFailed"};
                ledger_count_pause(&s, kept[rnd(3)]);
                assert_int_equal(workspace_status_push_history(&s), 0);
            } else if (!paused) {
                if (s.pauses > s.resumes) {
                    s.resumes++;
                    int64_t rel = s.last_pause->accelerator_released_ms;
                    if (now > rel)
                        s.accelerator_seconds_released += (double)(now - rel) / 1000.0 * count;
                    /* it ends, or is cancelled by the next pause */
                    static const char *const from[] = {"FromSnapshot", "ColdStart",
                                                       "FromCheckpoint", "Fresh", "FreshHome"};
                    if (rnd(5))
                        ledger_count_resume(&s, from[rnd(5)]);
                }
                HOLD(t);
            }
        }
#undef HOLD
        struct ledger_limits l = {
            .created_ms = created, .generation = gen, .accelerator_count = count};
        unsigned fixed = ledger_bound(&s, &l, last + rnd(HOUR));
        if (fixed)
            fail_msg("life %d: a real ledger was corrected (%#x): pauses %lld, resumes %lld, "
                     "generation %lld",
                     life, fixed, (long long)s.pauses, (long long)s.resumes, (long long)gen);
        workspace_status_clear(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_awaits_taker),     cmocka_unit_test(test_awaits_node_removal),
        cmocka_unit_test(test_taker_pick_table), cmocka_unit_test(test_taker_first),
        cmocka_unit_test(test_bound_table),      cmocka_unit_test(test_bound_keeps_real_ledgers),
        cmocka_unit_test(test_bound_outcomes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
