/*
 * activity_record: the run-length timeline of what the controller saw of a
 * workspace's use, its text, and its limits.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "activity/record.h"
#include "workspace/replay.h"

/* 2027-01-04T00:00:00Z, a Monday */
#define MON INT64_C(1799020800)
#define HOUR 3600

static char *text_of(const struct activity_record *r, int64_t until, size_t max)
{
    char *t = NULL;
    assert_int_equal(activity_record_text(r, until, max, &t), 0);
    return t;
}

/* Notes at probe rounds: runs merge, a change starts a run, time never
 * goes back. */
static void test_runs(void **state)
{
    (void)state;
    struct activity_record r = {0};
    assert_int_equal(activity_record_note(&r, MON, 'p'), 0);
    assert_int_equal(activity_record_note(&r, MON + 8 * HOUR, 'w'), 0);
    assert_int_equal(activity_record_note(&r, MON + 8 * HOUR + 120, 'a'), 0);
    for (int m = 1; m <= 60; m++) /* a round a minute, all active */
        assert_int_equal(activity_record_note(&r, MON + 8 * HOUR + 120 + 60 * m, 'a'), 0);
    assert_int_equal(activity_record_note(&r, MON + 9 * HOUR + 120, 'k'), 0);
    assert_int_equal(activity_record_note(&r, MON + 9 * HOUR + 420, 'i'), 0);
    /* an older round changes nothing */
    assert_int_equal(activity_record_note(&r, MON + 9 * HOUR, 'g'), 0);
    assert_int_equal(activity_record_note(&r, MON + 10 * HOUR, 'z'), -EINVAL);
    char *t = text_of(&r, MON + 10 * HOUR, 4096);
    assert_string_equal(t, "v1 1799020800 p28800 w120 a3600 k300 i3180");
    assert_int_equal(activity_record_end(&r), MON + 9 * HOUR + 420);

    /* and back */
    struct activity_record back = {0};
    assert_int_equal(activity_record_parse(t, &back, NULL), 0);
    assert_int_equal(back.start_s, MON);
    assert_int_equal(back.n, 5);
    assert_int_equal(activity_record_end(&back), MON + 10 * HOUR);
    char *again = text_of(&back, 0, 4096);
    assert_string_equal(again, t);
    free(again);
    free(t);
    activity_record_free(&back);
    activity_record_free(&r);

    /* a state that lasted no second is replaced, and merges with the one before */
    assert_int_equal(activity_record_note(&r, MON, 'i'), 0);
    assert_int_equal(activity_record_note(&r, MON + 60, 'a'), 0);
    assert_int_equal(activity_record_note(&r, MON + 60, 'i'), 0);
    assert_int_equal(activity_record_note(&r, MON + 120, 'i'), 0);
    t = text_of(&r, MON + 120, 4096);
    assert_string_equal(t, "v1 1799020800 i120");
    free(t);
    activity_record_free(&r);
}

/* Rounds a second apart with heartbeats between them: a person's run ends
 * at their last heartbeat, not at the round that saw it, and the idle
 * after it begins there; other changes are noted at the round. */
static void test_note_time(void **state)
{
    (void)state;
    struct activity_record r = {0};
    struct {
        int64_t round, activity;
        char state;
        int64_t want_at;
    } rounds[] = {
        {100, 0, 'i', 100},   /* the first note: at the round */
        {110, 108, 'a', 108}, /* the person came at 108 */
        {111, 110, 'a', 110}, {112, 111, 'a', 111},
        {113, 111, 'i', 111}, /* gone after 111: idle from there */
        {114, 111, 'i', 114}, /* idle stays idle */
        {120, 0, 'k', 120},   /* a busy kernel: at the round */
        {125, 111, 'i', 125}, /* after a kernel, at the round */
        {126, 90, 'a', 125},  /* an activity older than the record's end: at its end */
        {127, 140, 'a', 127}, /* one from the future: at the round */
    };
    for (size_t i = 0; i < sizeof(rounds) / sizeof(rounds[0]); i++) {
        int64_t at =
            activity_record_note_time(&r, rounds[i].round, rounds[i].state, rounds[i].activity);
        if (at != rounds[i].want_at)
            fail_msg("round %lld: noted at %lld, wanted %lld", (long long)rounds[i].round,
                     (long long)at, (long long)rounds[i].want_at);
        assert_int_equal(activity_record_note(&r, at, rounds[i].state), 0);
    }
    char *t = text_of(&r, 130, 4096);
    assert_string_equal(t, "v1 100 i8 a3 i9 k5 a5");
    free(t);
    activity_record_free(&r);
}

/* A resume's wait lasts until the first probe round of the running pod,
 * however short the resume itself was. */
static void test_resume_wait(void **state)
{
    (void)state;
    struct activity_record r = {0};
    const struct {
        int64_t at;
        char state, noted;
    } notes[] = {
        {100, 'w', 'w'}, /* a workspace created, its pod starting */
        {100, 'u', 'u'}, /* running, not yet probed: no resume */
        {101, 'i', 'i'}, {110, 'p', 'p'}, {120, 'w', 'w'}, /* a person resumes it */
        {120, 'u', 'w'},                  /* ready within the second, not yet probed */
        {121, 'a', 'a'},                  /* the round sees them */
        {125, 'p', 'p'}, {130, 'u', 'u'}, /* no resume seen: not a wait */
    };
    for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++) {
        char noted = activity_record_note_state(&r, notes[i].state);
        if (noted != notes[i].noted)
            fail_msg("note %zu: '%c' noted as '%c', wanted '%c'", i, notes[i].state, noted,
                     notes[i].noted);
        assert_int_equal(activity_record_note(&r, notes[i].at, noted), 0);
    }
    char *t = text_of(&r, 131, 4096);
    assert_string_equal(t, "v1 100 u1 i9 p10 w1 a4 p5 u1");
    free(t);
    activity_record_free(&r);
}

/* A week of office hours, noted at every probe round, fits in a few KiB;
 * a record over its limit keeps its newest whole runs. */
static void test_a_week_fits(void **state)
{
    (void)state;
    struct activity_record r = {0};
    for (int64_t t = MON; t < MON + 7 * 24 * HOUR; t += 60) {
        int64_t in_day = (t - MON) % (24 * HOUR);
        int weekday = (int)((t - MON) / (24 * HOUR)) < 5;
        char s = 'p';
        if (weekday && in_day >= 9 * HOUR && in_day < 17 * HOUR)
            s = in_day % HOUR < 20 * 60                       ? 'k'
                : (in_day >= 12 * HOUR && in_day < 13 * HOUR) ? 'i'
                                                              : 'a';
        assert_int_equal(activity_record_note(&r, t, s), 0);
    }
    char *t = text_of(&r, MON + 7 * 24 * HOUR, 65536);
    print_message("  a week at a round a minute: %zu runs, %zu bytes\n", r.n, strlen(t));
    assert_true(strlen(t) < 2048);
    free(t);

    /* Capped: the newest runs, whole, and a start moved to the first kept. */
    t = text_of(&r, MON + 7 * 24 * HOUR, 200);
    assert_true(strlen(t) < 200);
    struct activity_record back = {0};
    assert_int_equal(activity_record_parse(t, &back, NULL), 0);
    assert_true(back.start_s > MON);
    assert_int_equal(activity_record_end(&back), MON + 7 * 24 * HOUR);
    assert_int_equal(back.runs[back.n - 1].state, 'p');
    free(t);
    activity_record_free(&back);
    assert_int_equal(activity_record_text(&r, 0, 10, &t), -EINVAL);
    activity_record_free(&r);
}

static void test_bad_text(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *why;
    } bad[] = {
        {"", "version"},
        {"v2 1799020800 p60", "version"},
        {"v1 soon p60", "start"},
        {"v1 -5 p60", "start"},
        {"v1 1799020800 x60", "state"},
        {"v1 1799020800 p", "length"},
        {"v1 1799020800 p60  i60", "state"},
        {"v1 1799020800 p60,i60", "separated"},
        {"v1 1799020800 p99999999999", "longer"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct activity_record r = {0};
        const char *why = NULL;
        assert_int_equal(activity_record_parse(bad[i].text, &r, &why), -EINVAL);
        if (!why || !strstr(why, bad[i].why))
            fail_msg("\"%s\": \"%s\", wanted a word on the %s", bad[i].text, why ? why : "",
                     bad[i].why);
        assert_null(r.runs);
    }
}

/* What a replay reads of it: people where a person was seen or waited,
 * the kernel and the GPU where they were busy, and the rounds that got no
 * answer. */
static void test_spans(void **state)
{
    (void)state;
    struct activity_record r = {0};
    assert_int_equal(activity_record_parse("v1 1799020800 p28800 w120 a3600 k300 a60 g600 i3180 "
                                           "u60 p100",
                                           &r, NULL),
                     0);
    struct replay_span *spans = NULL;
    size_t n = 0;
    assert_int_equal(replay_spans_from_record(&r, &spans, &n), 0);
    assert_int_equal(n, 5);
    int64_t t0 = (MON + 8 * HOUR) * 1000;
    assert_int_equal(spans[0].start_ms, t0);
    assert_int_equal(spans[0].end_ms, t0 + 3720 * 1000); /* w + a */
    assert_int_equal(spans[0].use, REPLAY_PERSON);
    assert_int_equal(spans[1].use, REPLAY_KERNEL);
    assert_int_equal(spans[1].end_ms - spans[1].start_ms, 300 * 1000);
    assert_int_equal(spans[2].use, REPLAY_PERSON);
    assert_int_equal(spans[3].use, REPLAY_GPU);
    assert_int_equal(spans[3].end_ms - spans[3].start_ms, 600 * 1000);
    assert_int_equal(spans[4].use, REPLAY_UNANSWERED);
    assert_int_equal(spans[4].start_ms, t0 + (120 + 3600 + 300 + 60 + 600 + 3180) * 1000);
    assert_int_equal(spans[4].end_ms - spans[4].start_ms, 60 * 1000);
    free(spans);
    activity_record_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs),        cmocka_unit_test(test_note_time),
        cmocka_unit_test(test_resume_wait), cmocka_unit_test(test_a_week_fits),
        cmocka_unit_test(test_bad_text),    cmocka_unit_test(test_spans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
