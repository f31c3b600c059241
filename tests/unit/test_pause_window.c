/* Pause windows from tables: whether pausing is allowed at an instant and
 * when that changes, in UTC and in zones with DST, plus a brute-force check
 * of random schedules minute by minute where the wall clock never jumps. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/timefmt.h"
#include "util/tz.h"
#include "workspace/pause_window.h"

#define NEVER NULL

static struct tz *zone(const char *name)
{
    if (strcmp(name, "UTC") == 0)
        return tz_utc();
    char path[256];
    snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static unsigned char data[TZ_FILE_MAX];
    size_t len = fread(data, 1, sizeof(data), f);
    fclose(f);
    struct tz *z = NULL;
    assert_int_equal(tz_parse(name, data, len, &z, NULL), 0);
    return z;
}

static int64_t at(const char *rfc3339)
{
    int64_t ms;
    if (timefmt_parse_rfc3339(rfc3339, &ms) != 0)
        fail_msg("bad instant in the table: %s", rfc3339);
    return ms;
}

/* "Fri,Sat,Sun 19:00-08:00; * 08:00-19:00" ("*": every day), read with
 * the parsers under test. */
static void schedule(const char *spec, struct pause_schedule *ret)
{
    memset(ret, 0, sizeof(*ret));
    char copy[512];
    snprintf(copy, sizeof(copy), "%s", spec);
    char *save = NULL;
    for (char *w = strtok_r(copy, ";", &save); w; w = strtok_r(NULL, ";", &save)) {
        while (*w == ' ')
            w++;
        if (*w == '\0')
            continue;
        struct pause_window *pw = &ret->windows[ret->n_windows++];
        char *sp = strchr(w, ' ');
        assert_non_null(sp);
        *sp = '\0';
        if (strcmp(w, "*") != 0) {
            char *dsave = NULL;
            for (char *d = strtok_r(w, ",", &dsave); d; d = strtok_r(NULL, ",", &dsave)) {
                int wday;
                assert_int_equal(pause_window_parse_day(d, &wday, NULL), 0);
                pw->days |= 1u << wday;
            }
        }
        char *range = sp + 1;
        char *dash = strchr(range, '-');
        assert_non_null(dash);
        *dash = '\0';
        assert_int_equal(pause_window_parse_time(range, &pw->start_minute, NULL), 0);
        assert_int_equal(pause_window_parse_time(dash + 1, &pw->end_minute, NULL), 0);
    }
}

struct row {
    const char *zone;
    const char *windows;
    const char *now;
    int allowed;
    const char *change; /* NEVER: INT64_MAX */
};

/* 2026-01-07 is a Wednesday; 2026-01-09 a Friday, 01-12 a Monday. */
static const struct row rows[] = {
    /* No windows: always. */
    {"UTC", "", "2026-01-07T12:00:00Z", 1, NEVER},
    {"Europe/Berlin", "", "2026-03-29T01:00:00Z", 1, NEVER},

    /* Every night, wrapping over midnight; boundaries to the millisecond. */
    {"UTC", "* 19:00-08:00", "2026-01-07T12:00:00Z", 0, "2026-01-07T19:00:00Z"},
    {"UTC", "* 19:00-08:00", "2026-01-07T18:59:59.999Z", 0, "2026-01-07T19:00:00Z"},
    {"UTC", "* 19:00-08:00", "2026-01-07T19:00:00Z", 1, "2026-01-08T08:00:00Z"},
    {"UTC", "* 19:00-08:00", "2026-01-07T20:00:00Z", 1, "2026-01-08T08:00:00Z"},
    {"UTC", "* 19:00-08:00", "2026-01-08T07:59:59.999Z", 1, "2026-01-08T08:00:00Z"},
    {"UTC", "* 19:00-08:00", "2026-01-08T08:00:00Z", 0, "2026-01-08T19:00:00Z"},
    {"UTC", "* 19:00-00:00", "2026-01-07T23:59:00Z", 1, "2026-01-08T00:00:00Z"},
    {"UTC", "Tue 23:00-01:00", "2026-01-07T00:30:00Z", 1, "2026-01-07T01:00:00Z"},
    {"UTC", "Sun 22:00-02:00", "2026-01-11T23:00:00Z", 1, "2026-01-12T02:00:00Z"},
    {"UTC", "Sun 22:00-02:00", "2026-01-12T03:00:00Z", 0, "2026-01-18T22:00:00Z"},

    /* start == end: 24 hours from start. */
    {"UTC", "* 00:00-00:00", "2026-01-07T12:00:00Z", 1, NEVER},
    {"UTC", "* 08:00-08:00", "2026-01-07T12:00:00Z", 1, NEVER},
    {"UTC", "Mon 00:00-00:00", "2026-01-11T12:00:00Z", 0, "2026-01-12T00:00:00Z"},
    {"UTC", "Mon 00:00-00:00", "2026-01-12T12:00:00Z", 1, "2026-01-13T00:00:00Z"},
    {"UTC", "Wed 08:00-08:00", "2026-01-07T07:00:00Z", 0, "2026-01-07T08:00:00Z"},
    {"UTC", "Wed 08:00-08:00", "2026-01-07T09:00:00Z", 1, "2026-01-08T08:00:00Z"},
    {"UTC", "Wed 08:00-08:00", "2026-01-08T08:00:00Z", 0, "2026-01-14T08:00:00Z"},

    /* Days name the day a window starts on. */
    {"UTC", "Fri 19:00-08:00", "2026-01-10T07:00:00Z", 1, "2026-01-10T08:00:00Z"},
    {"UTC", "Fri 19:00-08:00", "2026-01-10T20:00:00Z", 0, "2026-01-16T19:00:00Z"},
    /* Three nights, not the weekend. */
    {"UTC", "Fri,Sat,Sun 19:00-08:00", "2026-01-10T12:00:00Z", 0, "2026-01-10T19:00:00Z"},
    {"UTC", "Fri,Sat,Sun 19:00-08:00", "2026-01-12T07:00:00Z", 1, "2026-01-12T08:00:00Z"},
    {"UTC", "Fri,Sat,Sun 19:00-08:00", "2026-01-08T20:00:00Z", 0, "2026-01-09T19:00:00Z"},
    /* Friday 19:00 to Monday 08:00: nights plus weekend days, merged. */
    {"UTC", "Fri,Sat,Sun 19:00-08:00; Sat,Sun 08:00-19:00", "2026-01-09T20:00:00Z", 1,
     "2026-01-12T08:00:00Z"},
    {"UTC", "Fri,Sat,Sun 19:00-08:00; Sat,Sun 08:00-19:00", "2026-01-10T12:00:00Z", 1,
     "2026-01-12T08:00:00Z"},
    {"UTC", "Fri,Sat,Sun 19:00-08:00; Sat,Sun 08:00-19:00", "2026-01-09T18:00:00Z", 0,
     "2026-01-09T19:00:00Z"},
    {"UTC", "Fri,Sat,Sun 19:00-08:00; Sat,Sun 08:00-19:00", "2026-01-12T08:00:00Z", 0,
     "2026-01-16T19:00:00Z"},
    /* Outside office hours, Monday to Friday 08:00-19:00. */
    {"UTC", "* 19:00-08:00; Sat,Sun 08:00-19:00", "2026-01-12T12:00:00Z", 0,
     "2026-01-12T19:00:00Z"},
    {"UTC", "* 19:00-08:00; Sat,Sun 08:00-19:00", "2026-01-09T19:30:00Z", 1,
     "2026-01-12T08:00:00Z"},
    {"UTC", "* 19:00-08:00; Sat,Sun 08:00-19:00", "2026-01-11T12:00:00Z", 1,
     "2026-01-12T08:00:00Z"},
    {"UTC", "* 19:00-08:00; Sat,Sun 08:00-19:00", "2026-01-13T07:00:00Z", 1,
     "2026-01-13T08:00:00Z"},

    /* Overlapping and touching windows merge. */
    {"UTC", "* 10:00-12:00; * 11:00-13:00; * 13:00-14:00", "2026-01-07T10:30:00Z", 1,
     "2026-01-07T14:00:00Z"},
    {"UTC", "* 10:00-12:00; * 11:00-13:00; * 13:00-14:00", "2026-01-07T09:00:00Z", 0,
     "2026-01-07T10:00:00Z"},
    {"UTC", "* 10:00-12:00; * 11:00-13:00; * 13:00-14:00", "2026-01-07T14:00:00Z", 0,
     "2026-01-08T10:00:00Z"},
    {"UTC", "Mon,Tue,Wed,Thu,Fri,Sat 00:00-00:00; Sun 00:00-23:59", "2026-01-12T00:00:00Z", 1,
     "2026-01-18T23:59:00Z"},
    {"UTC", "Mon,Tue,Wed,Thu,Fri,Sat 00:00-00:00; Sun 00:00-23:59", "2026-01-11T23:59:30Z", 0,
     "2026-01-12T00:00:00Z"},

    /* Exact to the minute. */
    {"UTC", "* 09:17-09:18", "2026-01-07T09:00:00Z", 0, "2026-01-07T09:17:00Z"},
    {"UTC", "* 09:17-09:18", "2026-01-07T09:17:30Z", 1, "2026-01-07T09:18:00Z"},

    /* Berlin: CET in winter, CEST in summer. */
    {"Europe/Berlin", "* 19:00-08:00", "2026-01-07T12:00:00Z", 0, "2026-01-07T18:00:00Z"},
    {"Europe/Berlin", "* 19:00-08:00", "2026-07-01T12:00:00Z", 0, "2026-07-01T17:00:00Z"},
    {"Europe/Berlin", "* 19:00-08:00", "2026-07-01T20:00:00Z", 1, "2026-07-02T06:00:00Z"},
    /* Spring forward, Sunday 29 March 2026, 02:00 CET -> 03:00 CEST at
     * 01:00Z: the night is an hour shorter. */
    {"Europe/Berlin", "* 19:00-08:00", "2026-03-28T20:00:00Z", 1, "2026-03-29T06:00:00Z"},
    {"Europe/Berlin", "* 01:30-03:00", "2026-03-28T23:00:00Z", 0, "2026-03-29T00:30:00Z"},
    {"Europe/Berlin", "* 01:30-03:00", "2026-03-29T00:45:00Z", 1, "2026-03-29T01:00:00Z"},
    {"Europe/Berlin", "* 01:30-03:00", "2026-03-29T01:00:00Z", 0, "2026-03-29T23:30:00Z"},
    /* Entirely in the skipped hour: empty that night. */
    {"Europe/Berlin", "* 02:00-02:30", "2026-03-29T00:30:00Z", 0, "2026-03-30T00:00:00Z"},
    /* Starting in the skipped hour: open from the jump. */
    {"Europe/Berlin", "* 02:30-04:00", "2026-03-29T00:30:00Z", 0, "2026-03-29T01:00:00Z"},
    {"Europe/Berlin", "* 02:30-04:00", "2026-03-29T01:00:00Z", 1, "2026-03-29T02:00:00Z"},
    /* A whole day that is 23 hours long. */
    {"Europe/Berlin", "Sun 00:00-00:00", "2026-03-28T22:59:59Z", 0, "2026-03-28T23:00:00Z"},
    {"Europe/Berlin", "Sun 00:00-00:00", "2026-03-29T12:00:00Z", 1, "2026-03-29T22:00:00Z"},
    /* Fall back, Sunday 25 October 2026, 03:00 CEST -> 02:00 CET at 01:00Z:
     * the night is an hour longer. */
    {"Europe/Berlin", "* 19:00-08:00", "2026-10-24T18:00:00Z", 1, "2026-10-25T07:00:00Z"},
    /* 02:30-03:00 opens at the first 02:30 (CEST) and closes at 03:00 CET,
     * the repeated 02:00-02:30 included: one span. */
    {"Europe/Berlin", "* 02:30-03:00", "2026-10-25T00:00:00Z", 0, "2026-10-25T00:30:00Z"},
    {"Europe/Berlin", "* 02:30-03:00", "2026-10-25T01:15:00Z", 1, "2026-10-25T02:00:00Z"},
    /* 01:00-02:30 closes at the first 02:30 and does not open again when
     * the clock shows 02:00 a second time. */
    {"Europe/Berlin", "* 01:00-02:30", "2026-10-24T23:30:00Z", 1, "2026-10-25T00:30:00Z"},
    {"Europe/Berlin", "* 01:00-02:30", "2026-10-25T01:10:00Z", 0, "2026-10-26T00:00:00Z"},
    /* Office hours across the spring weekend. */
    {"Europe/Berlin", "* 19:00-08:00; Sat,Sun 08:00-19:00", "2026-03-27T18:30:00Z", 1,
     "2026-03-30T06:00:00Z"},

    /* New York falls back on Sunday 1 November 2026; the window started on
     * Saturday in EDT ends on Sunday in EST. */
    {"America/New_York", "Fri,Sat,Sun 19:00-08:00", "2026-11-01T06:30:00Z", 1,
     "2026-11-01T13:00:00Z"},
    {"America/New_York", "Fri,Sat,Sun 19:00-08:00", "2026-10-31T22:30:00Z", 0,
     "2026-10-31T23:00:00Z"},
    /* Lord Howe moves 30 minutes, 02:00 -> 02:30, on 4 October 2026. */
    {"Australia/Lord_Howe", "* 02:00-03:00", "2026-10-03T15:00:00Z", 0, "2026-10-03T15:30:00Z"},
    {"Australia/Lord_Howe", "* 02:00-03:00", "2026-10-03T15:45:00Z", 1, "2026-10-03T16:00:00Z"},
    /* India: no DST, a half-hour offset. */
    {"Asia/Kolkata", "* 19:00-08:00", "2026-01-07T12:00:00Z", 0, "2026-01-07T13:30:00Z"},
};

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        struct tz *z = zone(r->zone);
        struct pause_schedule s;
        schedule(r->windows, &s);
        int allowed = -1;
        int64_t change = 0;
        assert_int_equal(pause_schedule_next(&s, z, at(r->now), &allowed, &change), 0);
        int64_t want = r->change ? at(r->change) : INT64_MAX;
        if (allowed != r->allowed || change != want) {
            char got[TIMEFMT_RFC3339_SIZE] = "never";
            if (change != INT64_MAX)
                timefmt_format_rfc3339(change, got, sizeof(got));
            fail_msg("row %zu (%s \"%s\" at %s): allowed %d until %s (%lld ms); want %d until %s",
                     i, r->zone, r->windows, r->now, allowed, got, (long long)change, r->allowed,
                     r->change ? r->change : "never");
        }
        tz_free(z);
    }
}

/* Where the wall clock never jumps (UTC, India since 1945) a window is
 * exactly "the clock reads between start and end on a day it may start",
 * which a minute-by-minute scan can check for any schedule. */
static int oracle_allowed(const struct pause_schedule *s, int64_t local_min)
{
    if (s->n_windows == 0)
        return 1;
    int64_t day = local_min >= 0 ? local_min / 1440 : -((-local_min + 1439) / 1440);
    int mod = (int)(local_min - day * 1440);
    int wday = (int)(((day + 4) % 7 + 7) % 7);
    int yday = (wday + 6) % 7;
    for (size_t i = 0; i < s->n_windows; i++) {
        const struct pause_window *w = &s->windows[i];
        int today = w->days == 0 || (w->days & (1u << wday));
        int yesterday = w->days == 0 || (w->days & (1u << yday));
        if (w->start_minute < w->end_minute) {
            if (today && mod >= w->start_minute && mod < w->end_minute)
                return 1;
        } else {
            if (today && mod >= w->start_minute)
                return 1;
            if (yesterday && mod < w->end_minute)
                return 1;
        }
    }
    return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;

static unsigned next_rand(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static void test_random_against_scan(void **state)
{
    (void)state;
    static const struct {
        const char *zone;
        int32_t offset_min;
    } zones[] = {{"UTC", 0}, {"Asia/Kolkata", 330}};
    int seen_allowed = 0, seen_refused = 0, seen_never = 0;
    for (size_t zi = 0; zi < 2; zi++) {
        struct tz *z = zone(zones[zi].zone);
        for (int round = 0; round < 300; round++) {
            struct pause_schedule s = {0};
            s.n_windows = next_rand(4);
            for (size_t i = 0; i < s.n_windows; i++) {
                /* Mostly whole hours, so windows meet and overlap often. */
                int quarter = next_rand(3) == 0;
                s.windows[i].start_minute = (int)next_rand(24) * 60 + (quarter ? 15 : 0);
                s.windows[i].end_minute = (int)next_rand(24) * 60;
                s.windows[i].days = next_rand(3) == 0 ? 0 : next_rand(128);
            }
            int64_t now_ms = at("2026-01-01T00:00:00Z") + (int64_t)next_rand(60 * 24 * 28) * 60000 +
                             (int64_t)next_rand(60000);
            int allowed;
            int64_t change;
            assert_int_equal(pause_schedule_next(&s, z, now_ms, &allowed, &change), 0);

            int64_t local_min = (now_ms / 60000) + zones[zi].offset_min;
            int want_allowed = oracle_allowed(&s, local_min);
            int64_t want_change = INT64_MAX;
            for (int64_t m = local_min + 1; m <= local_min + 8 * 1440; m++)
                if (oracle_allowed(&s, m) != want_allowed) {
                    want_change = (m - zones[zi].offset_min) * 60000;
                    break;
                }
            seen_allowed += allowed;
            seen_refused += !allowed;
            seen_never += change == INT64_MAX;
            if (allowed != want_allowed || change != want_change) {
                fprintf(stderr, "windows:");
                for (size_t i = 0; i < s.n_windows; i++)
                    fprintf(stderr, " {days 0x%x %d-%d}", s.windows[i].days,
                            s.windows[i].start_minute, s.windows[i].end_minute);
                fail_msg("%s round %d at %lld: %d/%lld, scan says %d/%lld", zones[zi].zone, round,
                         (long long)now_ms, allowed, (long long)change, want_allowed,
                         (long long)want_change);
            }
        }
        tz_free(z);
    }
    /* The draw covers every kind of answer. */
    assert_true(seen_allowed > 50 && seen_refused > 50 && seen_never > 20);
}

static void test_parse_time(void **state)
{
    (void)state;
    int m = -1;
    assert_int_equal(pause_window_parse_time("00:00", &m, NULL), 0);
    assert_int_equal(m, 0);
    assert_int_equal(pause_window_parse_time("08:00", &m, NULL), 0);
    assert_int_equal(m, 480);
    assert_int_equal(pause_window_parse_time("23:59", &m, NULL), 0);
    assert_int_equal(m, 1439);
    static const char *const bad[] = {"24:00",
                                      "8:00",
                                      "08:60",
                                      "0800",
                                      "08:00 ",
                                      "",
                                      "ab:cd",
                                      "+8:00",
                                      "08-00",
                                      "08:0",
                                      "-1:00",
                                      "08:00:00",
                                      "\xd9\xa1\xd9\xa2:00",
                                      "08:\n0"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *err = NULL;
        m = -1;
        assert_int_equal(pause_window_parse_time(bad[i], &m, &err), -EINVAL);
        assert_int_equal(m, -1);
        assert_non_null(err);
        assert_non_null(strstr(err, "is not a time of day HH:MM"));
        free(err);
    }
    char *err = NULL;
    assert_int_equal(pause_window_parse_time("24:00", &m, &err), -EINVAL);
    assert_string_equal(err, "\"24:00\" is not a time of day HH:MM (00:00 to 23:59)");
    free(err);
    err = NULL;
    assert_int_equal(pause_window_parse_time(NULL, &m, &err), -EINVAL);
    assert_non_null(err);
    free(err);
    /* Control characters are not copied into the message. */
    err = NULL;
    assert_int_equal(pause_window_parse_time("08:\n0", &m, &err), -EINVAL);
    assert_null(strchr(err, '\n'));
    free(err);
    /* Nothing inside the quotes can read as an escape of the closing one. */
    err = NULL;
    assert_int_equal(pause_window_parse_time("08:0\\", &m, &err), -EINVAL);
    assert_string_equal(err, "\"08:0?\" is not a time of day HH:MM (00:00 to 23:59)");
    free(err);
}

static void test_parse_day(void **state)
{
    (void)state;
    static const char *const names[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    for (int d = 0; d < 7; d++) {
        int w = -1;
        assert_int_equal(pause_window_parse_day(names[d], &w, NULL), 0);
        assert_int_equal(w, d);
    }
    static const char *const bad[] = {"mon", "MON", "Monday", "Mo", "", " Mon", "Mon ", "1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *err = NULL;
        int w = -1;
        assert_int_equal(pause_window_parse_day(bad[i], &w, &err), -EINVAL);
        assert_int_equal(w, -1);
        assert_non_null(err);
        free(err);
    }
    char *err = NULL;
    int w;
    assert_int_equal(pause_window_parse_day("mon", &w, &err), -EINVAL);
    assert_string_equal(err, "\"mon\" is not a day (Mon, Tue, Wed, Thu, Fri, Sat or Sun)");
    free(err);
}

static void test_invalid_schedules(void **state)
{
    (void)state;
    struct pause_schedule s = {0};
    int allowed;
    int64_t change;
    int64_t now = at("2026-01-07T12:00:00Z");
    s.n_windows = 1;
    s.windows[0] = (struct pause_window){0, 1140, 480};
    assert_int_equal(pause_schedule_next(&s, tz_utc(), now, &allowed, &change), 0);

    s.windows[0] = (struct pause_window){0, 1440, 480};
    assert_int_equal(pause_schedule_next(&s, tz_utc(), now, &allowed, &change), -EINVAL);
    s.windows[0] = (struct pause_window){0, 1140, -1};
    assert_int_equal(pause_schedule_next(&s, tz_utc(), now, &allowed, &change), -EINVAL);
    s.windows[0] = (struct pause_window){0x80, 1140, 480};
    assert_int_equal(pause_schedule_next(&s, tz_utc(), now, &allowed, &change), -EINVAL);
    s.windows[0] = (struct pause_window){0, 1140, 480};
    s.n_windows = PAUSE_SCHEDULE_MAX_WINDOWS + 1;
    assert_int_equal(pause_schedule_next(&s, tz_utc(), now, &allowed, &change), -EINVAL);
    s.n_windows = 1;
    assert_int_equal(pause_schedule_next(NULL, tz_utc(), now, &allowed, &change), -EINVAL);
    assert_int_equal(pause_schedule_next(&s, NULL, now, &allowed, &change), -EINVAL);
    assert_int_equal(pause_schedule_next(&s, tz_utc(), now, NULL, &change), -EINVAL);
    assert_int_equal(pause_schedule_next(&s, tz_utc(), INT64_MAX, &allowed, &change), -ERANGE);
    assert_int_equal(pause_schedule_next(&s, tz_utc(), INT64_MIN, &allowed, &change), -ERANGE);
    /* Before 1970 works like any other time. */
    assert_int_equal(
        pause_schedule_next(&s, tz_utc(), at("1969-12-31T12:00:00Z"), &allowed, &change), 0);
    assert_int_equal(allowed, 0);
    assert_int_equal(change, at("1969-12-31T19:00:00Z"));

    /* Sixteen windows, the most allowed, every weekday and minute used. */
    s.n_windows = PAUSE_SCHEDULE_MAX_WINDOWS;
    for (int i = 0; i < PAUSE_SCHEDULE_MAX_WINDOWS; i++)
        s.windows[i] = (struct pause_window){
            .days = 1u << (i % 7), .start_minute = i * 90, .end_minute = i * 90 + 45};
    assert_int_equal(pause_schedule_next(&s, tz_utc(), now, &allowed, &change), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_time),
        cmocka_unit_test(test_parse_day),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_random_against_scan),
        cmocka_unit_test(test_invalid_schedules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
