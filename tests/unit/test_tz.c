/* Time zones from TZif files: offsets and wall clocks checked against glibc
 * (localtime_r with TZ set, which only this test uses) over two centuries,
 * slim and version 1 variants of the same zones, POSIX TZ footers, gaps and
 * overlaps, malformed files, and the loader on a real loop. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/tz.h"

#define ZONEINFO "/usr/share/zoneinfo"
#define Y1900 INT64_C(-2208988800)
#define Y1970 INT64_C(0)
#define Y2022 INT64_C(1640995200)
#define Y2037 INT64_C(2114380800)
#define Y2101 INT64_C(4133980800)

static const char *const zones[] = {
    "Europe/Berlin",     "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata",
    "America/Sao_Paulo", "Pacific/Apia",     "Europe/Dublin",
};

/* ---- helpers ------------------------------------------------------------ */

static unsigned char *read_whole(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *data = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            data = realloc(data, cap);
            assert_non_null(data);
        }
        size_t n = fread(data + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    fclose(f);
    *ret_len = len;
    return data;
}

static unsigned char *read_zone(const char *name, size_t *ret_len)
{
    char path[512];
    snprintf(path, sizeof(path), ZONEINFO "/%s", name);
    return read_whole(path, ret_len);
}

static void write_whole(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static struct tz *parse_ok(const char *name, const void *data, size_t len)
{
    struct tz *z = NULL;
    char *err = NULL;
    int k = tz_parse(name, data, len, &z, &err);
    if (k != 0)
        fail_msg("tz_parse(%s): %d %s", name, k, err ? err : "");
    assert_non_null(z);
    return z;
}

/* glibc as the reference: TZ is a zone name, an absolute file path or a
 * POSIX TZ string. */
static void glibc_use(const char *tzspec)
{
    assert_int_equal(setenv("TZ", tzspec, 1), 0);
    tzset();
}

static struct tm glibc_local(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    assert_non_null(localtime_r(&tt, &tm));
    return tm;
}

static void check_instant(const struct tz *z, int64_t t, const char *what)
{
    struct tm tm = glibc_local(t);
    struct tz_civil c;
    int32_t off = 0;
    assert_int_equal(tz_offset_at(z, t, &off), 0);
    assert_int_equal(tz_civil_at(z, t, &c), 0);
    if (off != tm.tm_gmtoff || c.year != tm.tm_year + 1900 || c.month != tm.tm_mon + 1 ||
        c.mday != tm.tm_mday || c.wday != tm.tm_wday || c.hour != tm.tm_hour ||
        c.minute != tm.tm_min || c.second != tm.tm_sec || c.utc_offset_s != off)
        fail_msg("%s %s at %lld: offset %d, %04d-%02d-%02d (wday %d) %02d:%02d:%02d; glibc %ld, "
                 "%04d-%02d-%02d (wday %d) %02d:%02d:%02d",
                 tz_name(z), what, (long long)t, (int)off, c.year, c.month, c.mday, c.wday, c.hour,
                 c.minute, c.second, (long)tm.tm_gmtoff, tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_wday, tm.tm_hour, tm.tm_min, tm.tm_sec);

    /* Going back from the reading (to the minute) lands on its first
     * showing: the same minute, no later than t, at :00 unless the clock
     * jumped into that minute (old offsets with seconds). */
    int64_t back;
    assert_int_equal(tz_local_to_utc(z, c.year, c.month, c.mday, c.hour, c.minute, &back), 0);
    struct tz_civil cb;
    int32_t before = 0;
    assert_int_equal(tz_civil_at(z, back, &cb), 0);
    assert_int_equal(tz_offset_at(z, back - 1, &before), 0);
    if (back > t || cb.year != c.year || cb.month != c.month || cb.mday != c.mday ||
        cb.hour != c.hour || cb.minute != c.minute || (cb.second != 0 && before == off))
        fail_msg("%s: local_to_utc(civil(%lld)) = %lld", tz_name(z), (long long)t, (long long)back);
}

/* Walks [from, to) in uneven steps comparing every sample with glibc; where
 * glibc's offset changes between two samples, the transition is found by
 * bisection and both sides of it are compared too. Returns the number of
 * transitions seen. */
static int compare_with_glibc(const struct tz *z, const char *tzspec, int64_t from, int64_t to)
{
    glibc_use(tzspec);
    int transitions = 0;
    const int64_t step = 6 * 3600 + 1237;
    int64_t prev = from;
    long prev_off = glibc_local(prev).tm_gmtoff;
    check_instant(z, prev, "sample");
    for (int64_t t = from + step; t < to; t += step) {
        long off = glibc_local(t).tm_gmtoff;
        check_instant(z, t, "sample");
        if (off != prev_off) {
            int64_t lo = prev, hi = t; /* offset(lo) == prev_off, offset(hi) != prev_off */
            while (hi - lo > 1) {
                int64_t mid = lo + (hi - lo) / 2;
                if (glibc_local(mid).tm_gmtoff == prev_off)
                    lo = mid;
                else
                    hi = mid;
            }
            check_instant(z, hi - 1, "before transition");
            check_instant(z, hi, "at transition");
            check_instant(z, hi + 1, "after transition");
            transitions++;
        }
        prev = t;
        prev_off = off;
    }
    return transitions;
}

/* ---- a small TZif reader and writer for the variants ------------------ */

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

struct counts {
    uint32_t isut, isstd, leap, time, type, chr;
};

static struct counts get_counts(const unsigned char *h)
{
    return (struct counts){get32(h + 20), get32(h + 24), get32(h + 28),
                           get32(h + 32), get32(h + 36), get32(h + 40)};
}

static size_t block_len(struct counts c, size_t ts)
{
    return c.time * (ts + 1) + c.type * 6 + c.chr + c.leap * (ts + 4) + c.isstd + c.isut;
}

/* Offset of the second header of a version 2+ file. */
static size_t second_header(const unsigned char *d)
{
    return 44 + block_len(get_counts(d), 4);
}

struct out {
    unsigned char *p;
    size_t len;
};

static void emit(struct out *o, const void *data, size_t n)
{
    o->p = realloc(o->p, o->len + n + 1);
    assert_non_null(o->p);
    memcpy(o->p + o->len, data, n);
    o->len += n;
}

static void emit_header(struct out *o, char version, struct counts c)
{
    unsigned char h[44] = {'T', 'Z', 'i', 'f', (unsigned char)version};
    put32(h + 20, c.isut);
    put32(h + 24, c.isstd);
    put32(h + 28, c.leap);
    put32(h + 32, c.time);
    put32(h + 36, c.type);
    put32(h + 40, c.chr);
    emit(o, h, sizeof(h));
}

/* A slim file, as zic -b slim writes it, from a fat one: the 32-bit block
 * reduced to one placeholder type, the 64-bit transitions kept only before
 * cutoff, the footer (appended by the caller) deciding everything later. */
static unsigned char *make_slim(const unsigned char *fat, int64_t cutoff, size_t *ret_len)
{
    size_t h2 = second_header(fat);
    struct counts c = get_counts(fat + h2);
    const unsigned char *times = fat + h2 + 44;
    const unsigned char *idx = times + c.time * 8;
    const unsigned char *types = idx + c.time;

    uint32_t keep = 0;
    while (keep < c.time && (int64_t)((uint64_t)get32(times + keep * 8) << 32 |
                                      get32(times + keep * 8 + 4)) < cutoff)
        keep++;

    struct out o = {0};
    emit_header(&o, fat[4], (struct counts){0, 0, 0, 0, 1, 1});
    static const unsigned char placeholder[7] = {0};
    emit(&o, placeholder, sizeof(placeholder));
    emit_header(&o, fat[4], (struct counts){0, 0, 0, keep, c.type, c.chr});
    emit(&o, times, keep * 8);
    emit(&o, idx, keep);
    emit(&o, types, c.type * 6 + c.chr);
    return *ret_len = o.len, o.p;
}

static size_t file_footer(const unsigned char *fat, size_t len, const unsigned char **ret)
{
    size_t h2 = second_header(fat);
    size_t off = h2 + 44 + block_len(get_counts(fat + h2), 8);
    *ret = fat + off;
    return len - off;
}

/* The version 1 part of a file alone, marked version 1. */
static unsigned char *make_v1(const unsigned char *fat, size_t *ret_len)
{
    size_t n = second_header(fat);
    unsigned char *p = malloc(n);
    assert_non_null(p);
    memcpy(p, fat, n);
    p[4] = 0;
    *ret_len = n;
    return p;
}

/* A version 2 file with no transitions, one type and the given footer. */
static unsigned char *make_footer_only(int32_t utoff, const char *footer, size_t *ret_len)
{
    struct out o = {0};
    emit_header(&o, '2', (struct counts){0, 0, 0, 0, 1, 1});
    static const unsigned char placeholder[7] = {0};
    emit(&o, placeholder, sizeof(placeholder));
    emit_header(&o, '2', (struct counts){0, 0, 0, 0, 1, 4});
    unsigned char type[6];
    put32(type, (uint32_t)utoff);
    type[4] = 0;
    type[5] = 0;
    emit(&o, type, sizeof(type));
    emit(&o, "ABC", 4);
    emit(&o, "\n", 1);
    emit(&o, footer, strlen(footer));
    emit(&o, "\n", 1);
    return *ret_len = o.len, o.p;
}

/* ---- against glibc ------------------------------------------------------ */

static void test_zones_match_glibc(void **state)
{
    (void)state;
    static const int min_transitions[] = {250, 350, 230, 5, 90, 24, 250};
    for (size_t i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
        size_t len;
        unsigned char *data = read_zone(zones[i], &len);
        struct tz *z = parse_ok(zones[i], data, len);
        assert_string_equal(tz_name(z), zones[i]);
        int n = compare_with_glibc(z, zones[i], Y1900, Y2101);
        /* Proof the walk saw the zones' histories: Kolkata changed a few
         * times before 1946, Sao Paulo and Apia stopped DST in 2019 and
         * 2021, the others change twice a year to 2100. */
        assert_true(n >= min_transitions[i]);
        tz_free(z);
        free(data);
    }
}

static void test_slim_and_v1_match_glibc(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_tz.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    for (size_t i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
        size_t len, slim_len, v1_len;
        unsigned char *fat = read_zone(zones[i], &len);

        /* Cut where each zone's current rule had long taken over. */
        unsigned char *slim = make_slim(fat, Y2022, &slim_len);
        const unsigned char *footer;
        size_t footer_len = file_footer(fat, len, &footer);
        slim = realloc(slim, slim_len + footer_len);
        assert_non_null(slim);
        memcpy(slim + slim_len, footer, footer_len);
        slim_len += footer_len;
        assert_true(slim_len < len);
        struct tz *z = parse_ok(zones[i], slim, slim_len);
        snprintf(path, sizeof(path), "%s/slim", dir);
        write_whole(path, slim, slim_len);
        compare_with_glibc(z, path, Y1970, Y2101);
        /* And the fat file's own answers for the same years. */
        compare_with_glibc(z, zones[i], Y1970, Y2101);
        tz_free(z);
        free(slim);

        /* Version 1: 32-bit data only, no footer; past 2037 the last type
         * holds, as glibc has it too. */
        unsigned char *v1 = make_v1(fat, &v1_len);
        z = parse_ok(zones[i], v1, v1_len);
        snprintf(path, sizeof(path), "%s/v1", dir);
        write_whole(path, v1, v1_len);
        compare_with_glibc(z, path, Y1970, Y2101);
        tz_free(z);
        free(v1);
        free(fat);
    }
    snprintf(path, sizeof(path), "%s/slim", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/v1", dir);
    unlink(path);
    rmdir(dir);
}

/* Footers alone (no transitions: the footer decides all time), against
 * glibc reading the same string from TZ. */
static void test_footers_match_glibc(void **state)
{
    (void)state;
    static const char *const footers[] = {
        "EST5EDT,M3.2.0,M11.1.0",
        "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
        "IST-1GMT0,M10.5.0,M3.5.0/1", /* negative DST */
        "<-02>2<-01>,M3.5.0/-1,M10.5.0/0",
        "<-03>3<-02>,M3.5.0/-2,M10.5.0/-1",
        "CET-1CEST,J60/2,300/3",
        "CET-1CEST,59/2,J300/3",
        "AAA3BBB,M3.5.0/26,M10.5.0/27",
        "AAA-3BBB-4:30,M2.1.6/-23,M11.5.3/100:30",
        "<+0545>-5:45",
        "<-0330>3:30<-0230>,M3.2.0/0:01,M11.1.0/0:01",
        "NZST-12NZDT,M9.5.0,M4.1.0/3",
        "<+13>-13",
        "XXX+24YYY+23,M1.2.0,M12.1.6/25",
    };
    for (size_t i = 0; i < sizeof(footers) / sizeof(footers[0]); i++) {
        size_t len;
        unsigned char *data = make_footer_only(0, footers[i], &len);
        struct tz *z = parse_ok(footers[i], data, len);
        compare_with_glibc(z, footers[i], Y1970, Y2101);
        tz_free(z);
        free(data);
    }

    size_t len;
    unsigned char *data;
    struct tz *z;

    /* DST all year (RFC 8536 3.3.1): glibc goes back to standard time for
     * the first hours of each UTC year, so this one is checked alone. */
    unsigned char *all = make_footer_only(0, "EST5EDT,0/0,J365/25", &len);
    z = parse_ok("EST5EDT,0/0,J365/25", all, len);
    for (int64_t t = Y1970; t < Y2101; t += 3 * 3600 + 7) {
        int32_t off = 0;
        assert_int_equal(tz_offset_at(z, t, &off), 0);
        if (off != -4 * 3600)
            fail_msg("all-year DST: offset %d at %lld", (int)off, (long long)t);
    }
    tz_free(z);
    free(all);

    /* A change that lands in the next year: DST of 1977 ends on 1 January
     * 1978 at 01:00 DST, 00:00 standard time; 1978's starts at 02:00. glibc
     * only looks at the changes of the UTC year, so checked by hand. */
    data = make_footer_only(0, "XXX+24YYY+23,M1.1.0,M12.5.6/25", &len);
    z = parse_ok("XXX+24YYY+23,M1.1.0,M12.5.6/25", data, len);
    static const struct {
        int64_t t;
        int32_t off;
    } cross[] = {
        {252547200 - 3600, -82800},                      /* 1977-12-31 23:00 std, 24:00 DST */
        {252547200 - 1, -82800},    {252547200, -86400}, /* 1978-01-01 00:00 std */
        {252547200 + 7199, -86400}, {252547200 + 7200, -82800}, /* 02:00 std: DST again */
    };
    for (size_t i = 0; i < sizeof(cross) / sizeof(cross[0]); i++) {
        int32_t off = 0;
        assert_int_equal(tz_offset_at(z, cross[i].t, &off), 0);
        if (off != cross[i].off)
            fail_msg("year-crossing rule at %lld: %d, want %d", (long long)cross[i].t, (int)off,
                     (int)cross[i].off);
    }
    tz_free(z);
    free(data);

    /* No rule given: the current US rules, as tzcode has it. glibc takes
     * the history from its posixrules file instead, so compare from 2007. */
    data = make_footer_only(0, "EST5EDT", &len);
    z = parse_ok("EST5EDT", data, len);
    compare_with_glibc(z, "EST5EDT", INT64_C(1173600000), Y2101);
    tz_free(z);
    free(data);
}

/* ---- known instants ---------------------------------------------------- */

static void test_utc(void **state)
{
    (void)state;
    struct tz *z = tz_utc();
    assert_non_null(z);
    assert_string_equal(tz_name(z), "UTC");
    int32_t off = 1;
    assert_int_equal(tz_offset_at(z, 1767323045, &off), 0);
    assert_int_equal(off, 0);
    struct tz_civil c;
    assert_int_equal(tz_civil_at(z, 0, &c), 0);
    assert_int_equal(c.year, 1970);
    assert_int_equal(c.wday, 4); /* a Thursday */
    assert_int_equal(tz_civil_at(z, 1767323045, &c), 0);
    assert_int_equal(c.year, 2026);
    assert_int_equal(c.month, 1);
    assert_int_equal(c.mday, 2);
    assert_int_equal(c.wday, 5);
    assert_int_equal(c.hour, 3);
    assert_int_equal(c.minute, 4);
    assert_int_equal(c.second, 5);
    assert_int_equal(tz_civil_at(z, -1, &c), 0);
    assert_int_equal(c.year, 1969);
    assert_int_equal(c.month, 12);
    assert_int_equal(c.mday, 31);
    assert_int_equal(c.hour, 23);
    assert_int_equal(c.second, 59);
    assert_int_equal(c.wday, 3);
    assert_int_equal(tz_civil_at(z, TZ_UNIX_MIN, &c), 0);
    assert_int_equal(c.year, 1);
    assert_int_equal(tz_civil_at(z, TZ_UNIX_MAX, &c), 0);
    assert_int_equal(c.year, 9999);
    assert_int_equal(tz_civil_at(z, TZ_UNIX_MAX + 1, &c), -ERANGE);
    assert_int_equal(tz_offset_at(z, TZ_UNIX_MIN - 1, &off), -ERANGE);
    assert_int_equal(tz_offset_at(NULL, 0, &off), -EINVAL);

    int64_t t;
    assert_int_equal(tz_local_to_utc(z, 2026, 1, 2, 3, 4, &t), 0);
    assert_int_equal(t, 1767323040);
    /* Days outside the month count on. */
    assert_int_equal(tz_local_to_utc(z, 2025, 12, 33, 3, 4, &t), 0);
    assert_int_equal(t, 1767323040);
    assert_int_equal(tz_local_to_utc(z, 2026, 2, -29, 3, 4, &t), 0);
    assert_int_equal(t, 1767323040);
    assert_int_equal(tz_local_to_utc(z, 2024, 3, 0, 0, 0, &t), 0); /* leap day */
    assert_int_equal(t, 1709164800);
    assert_int_equal(tz_local_to_utc(z, 2026, 13, 1, 0, 0, &t), -EINVAL);
    assert_int_equal(tz_local_to_utc(z, 2026, 1, 1, 24, 0, &t), -EINVAL);
    assert_int_equal(tz_local_to_utc(z, 2026, 1, 1, 0, 60, &t), -EINVAL);
    assert_int_equal(tz_local_to_utc(z, 10000, 1, 1, 0, 0, &t), -ERANGE);
    tz_free(z); /* static: ignored */
    tz_free(NULL);
    assert_int_equal(tz_offset_at(tz_utc(), 0, &off), 0);
}

struct local_case {
    const char *zone;
    int year, month, mday, hour, minute;
    int64_t want;
};

static void test_gaps_and_overlaps(void **state)
{
    (void)state;
    static const struct local_case cases[] = {
        /* Ordinary readings. */
        {"Europe/Berlin", 2026, 1, 15, 12, 0, 1768474800}, /* 11:00Z */
        {"Europe/Berlin", 2026, 7, 15, 12, 0, 1784109600}, /* 10:00Z */
        {"Asia/Kolkata", 2026, 1, 1, 5, 30, 1767225600},   /* 00:00Z */
        /* Spring forward, 02:00 -> 03:00: the instant the clock jumps. */
        {"Europe/Berlin", 2026, 3, 29, 2, 0, 1774746000},
        {"Europe/Berlin", 2026, 3, 29, 2, 30, 1774746000},
        {"Europe/Berlin", 2026, 3, 29, 2, 59, 1774746000},
        {"Europe/Berlin", 2026, 3, 29, 3, 0, 1774746000},
        {"Europe/Berlin", 2026, 3, 29, 1, 59, 1774745940},
        {"America/New_York", 2026, 3, 8, 2, 30, 1772953200},
        /* Fall back, 03:00 -> 02:00: the earlier showing. */
        {"Europe/Berlin", 2026, 10, 25, 2, 30, 1792888200},
        {"Europe/Berlin", 2026, 10, 25, 2, 0, 1792886400},
        {"Europe/Berlin", 2026, 10, 25, 3, 0, 1792893600},
        {"America/New_York", 2026, 11, 1, 1, 30, 1793511000},
        /* Half-hour DST. */
        {"Australia/Lord_Howe", 2026, 10, 4, 2, 15, 1791041400},
        {"Australia/Lord_Howe", 2026, 4, 5, 1, 45, 1775313900},
        /* Negative DST in the file, the same wall clock as anywhere. */
        {"Europe/Dublin", 2026, 3, 29, 1, 30, 1774746000},
        {"Europe/Dublin", 2026, 10, 25, 1, 30, 1792888200},
        /* Samoa skipped 30 December 2011 entirely. */
        {"Pacific/Apia", 2011, 12, 30, 12, 0, 1325239200},
        {"Pacific/Apia", 2011, 12, 29, 23, 59, 1325239140},
        {"Pacific/Apia", 2011, 12, 31, 0, 0, 1325239200},
        /* Sao Paulo: the old DST nights, then none. */
        {"America/Sao_Paulo", 2018, 11, 4, 0, 30, 1541300400},
        {"America/Sao_Paulo", 2026, 11, 1, 0, 30, 1793503800},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct local_case *c = &cases[i];
        size_t len;
        unsigned char *data = read_zone(c->zone, &len);
        struct tz *z = parse_ok(c->zone, data, len);
        int64_t t = 0;
        assert_int_equal(tz_local_to_utc(z, c->year, c->month, c->mday, c->hour, c->minute, &t), 0);
        if (t != c->want)
            fail_msg("%s %04d-%02d-%02d %02d:%02d: %lld, want %lld", c->zone, c->year, c->month,
                     c->mday, c->hour, c->minute, (long long)t, (long long)c->want);
        tz_free(z);
        free(data);
    }
}

/* ---- malformed input ---------------------------------------------------- */

static void expect_invalid(const char *name, const void *data, size_t len, const char *needle)
{
    struct tz *z = NULL;
    char *err = NULL;
    int k = tz_parse(name, data, len, &z, &err);
    if (k != -EINVAL)
        fail_msg("%s: tz_parse gave %d, want -EINVAL (%s)", needle, k, err ? err : "");
    assert_null(z);
    assert_non_null(err);
    char quoted[300];
    snprintf(quoted, sizeof(quoted), "time zone \"%s\"", name);
    if (!strstr(err, quoted) || (needle && !strstr(err, needle)))
        fail_msg("message \"%s\" lacks \"%s\" or \"%s\"", err, quoted, needle ? needle : "");
    free(err);
}

/* Berlin with its footer replaced. */
static unsigned char *with_footer(const unsigned char *fat, size_t len, const char *footer,
                                  size_t *ret_len)
{
    const unsigned char *f;
    size_t flen = file_footer(fat, len, &f);
    size_t head = len - flen;
    size_t n = strlen(footer);
    unsigned char *p = malloc(head + n + 2);
    assert_non_null(p);
    memcpy(p, fat, head);
    p[head] = '\n';
    memcpy(p + head + 1, footer, n);
    p[head + 1 + n] = '\n';
    *ret_len = head + n + 2;
    return p;
}

static void test_malformed(void **state)
{
    (void)state;
    const char *name = "Europe/Berlin";
    size_t len;
    unsigned char *fat = read_zone(name, &len);
    unsigned char *p = malloc(len + 16);
    assert_non_null(p);

    /* Every truncation. */
    for (size_t n = 0; n < len; n++)
        expect_invalid(name, fat, n, n < len - 1 ? NULL : "footer");
    expect_invalid(name, fat, 10, "truncated");

    memcpy(p, fat, len);
    p[0] = 'X';
    expect_invalid(name, p, len, "not a TZif file");

    memcpy(p, fat, len);
    p[4] = '1';
    expect_invalid(name, p, len, "version");

    size_t h2 = second_header(fat);
    memcpy(p, fat, len);
    p[h2 + 4] = '3';
    expect_invalid(name, p, len, "version");

    /* Huge counts, in either header. */
    static const size_t count_at[] = {20, 24, 28, 32, 36, 40};
    for (size_t i = 0; i < 6; i++) {
        memcpy(p, fat, len);
        put32(p + count_at[i], 0xffffffffu);
        expect_invalid(name, p, len, NULL);
        memcpy(p, fat, len);
        put32(p + h2 + count_at[i], 0xffffffffu);
        expect_invalid(name, p, len, NULL);
        memcpy(p, fat, len);
        put32(p + h2 + count_at[i], 5000);
        expect_invalid(name, p, len, NULL);
    }
    memcpy(p, fat, len);
    put32(p + h2 + 32, 4097);
    expect_invalid(name, p, len, "transitions");
    memcpy(p, fat, len);
    put32(p + h2 + 36, 257);
    expect_invalid(name, p, len, "local time types");
    memcpy(p, fat, len);
    put32(p + h2 + 40, 300);
    expect_invalid(name, p, len, "abbreviation");

    struct counts c = get_counts(fat + h2);
    unsigned char *times = p + h2 + 44;
    unsigned char *idx = times + c.time * 8;
    unsigned char *types = idx + c.time;

    memcpy(p, fat, len);
    memcpy(times + 8 * 5, times + 8 * 4, 8); /* two equal transitions */
    expect_invalid(name, p, len, "transition 5");

    memcpy(p, fat, len);
    idx[3] = (unsigned char)c.type;
    expect_invalid(name, p, len, "transition 3");

    memcpy(p, fat, len);
    put32(types + 6, 100000); /* +27:46 */
    expect_invalid(name, p, len, "UT offset");

    memcpy(p, fat, len);
    types[6 + 4] = 2;
    expect_invalid(name, p, len, "DST flag");

    memcpy(p, fat, len);
    types[6 + 5] = (unsigned char)c.chr;
    expect_invalid(name, p, len, "abbreviation");

    memcpy(p, fat, len);
    put32(p + h2 + 36, 0);
    put32(p + h2 + 32, 0);
    put32(p + h2 + 24, 0);
    put32(p + h2 + 20, 0);
    expect_invalid(name, p, len, NULL);

    /* Trailing bytes after the footer, or after a version 1 file. */
    memcpy(p, fat, len);
    memcpy(p + len, "junk", 4);
    expect_invalid(name, p, len + 4, "after the footer");
    size_t v1_len;
    unsigned char *v1 = make_v1(fat, &v1_len);
    v1 = realloc(v1, v1_len + 1);
    v1[v1_len] = 0;
    expect_invalid(name, v1, v1_len + 1, "after the data");
    free(v1);

    /* Leap-second records: one made here, and a right/ zone where tzdata
     * ships them (newer Debian moves them to tzdata-legacy). */
    {
        struct out o = {0};
        emit_header(&o, '2', (struct counts){0, 0, 0, 0, 1, 1});
        static const unsigned char placeholder[7] = {0};
        emit(&o, placeholder, sizeof(placeholder));
        emit_header(&o, '2', (struct counts){0, 0, 1, 0, 1, 4});
        static const unsigned char type_abbr_leap[6 + 4 + 12] = {
            0, 0, 0, 0, 0, 0, 'U', 'T', 'C', 0, 0, 0, 0, 0, 0x04, 0xb2, 0x58, 0x00, 0, 0, 0, 1};
        emit(&o, type_abbr_leap, sizeof(type_abbr_leap));
        emit(&o, "\nUTC0\n", 6);
        expect_invalid("Etc/Leap", o.p, o.len, "leap-second");
        free(o.p);
    }
    if (access(ZONEINFO "/right/Europe/Berlin", R_OK) == 0) {
        size_t right_len;
        unsigned char *right = read_zone("right/Europe/Berlin", &right_len);
        expect_invalid("right/Europe/Berlin", right, right_len, "leap-second");
        free(right);
    }

    static const char *const bad_footers[] = {
        "CET",
        "CET-1CEST,M3.5.0,M10.5.0/3x",
        "CET-1CEST,M3.5.0",
        "CET-1CEST,M13.5.0,M10.5.0/3",
        "CET-1CEST,M0.5.0,M10.5.0/3",
        "CET-1CEST,M3.6.0,M10.5.0/3",
        "CET-1CEST,M3.0.0,M10.5.0/3",
        "CET-1CEST,M3.5.7,M10.5.0/3",
        "CET-1CEST,M3.5,M10.5.0/3",
        "CET-1CEST,J0,J300",
        "CET-1CEST,J366,J300",
        "CET-1CEST,366,J300",
        "CET-1CEST,M3.5.0/168,M10.5.0/3",
        "CET-1CEST,M3.5.0/-168,M10.5.0/3",
        "CET-1CEST,M3.5.0/2:60,M10.5.0/3",
        "CET-25",
        "CET-1:60",
        "CE-1",
        "<+0>-3",
        "<+03-3",
        "<+03>",
        "1CET",
        "CET-1CEST,,",
        "CET-1 CEST",
        "CET-1CEST-2,M3.5.0,M10.5.0/3,",
        "CET-1CEST,M3.5.0,M10.5.0/",
        "CET-0001",
        "CET-1\tX",
        "CET-1CEST,M3.5.0,M10.5.0/3CET-1CEST,M3.5.0,M10.5.0/3CET-1CEST,M3.5.0,M10.5.0/"
        "3CET-1CEST,M3."
        "5.0,M10.5.0/3",
    };
    for (size_t i = 0; i < sizeof(bad_footers) / sizeof(bad_footers[0]); i++) {
        size_t n;
        unsigned char *b = with_footer(fat, len, bad_footers[i], &n);
        expect_invalid(name, b, n, "footer");
        free(b);
    }
    /* A footer with no closing newline, or a NUL inside. */
    memcpy(p, fat, len);
    expect_invalid(name, p, len - 1, "newline");
    {
        size_t n;
        unsigned char *b = with_footer(fat, len, "CET-1CEST,M3.5.0,M10.5.0/3", &n);
        b[n - 5] = '\0';
        expect_invalid(name, b, n, "footer");
        free(b);
    }

    /* Valid footers parse, including the RFC 8536 extensions, and an empty
     * one leaves the last transition's type in force. */
    static const char *const good_footers[] = {
        "",
        "CET-1CEST,M3.5.0,M10.5.0/3",
        "<+03>-3",
        "<-03>3<-02>,M3.5.0/-2,M10.5.0/-1",
        "EST5EDT,0/0,J365/25",
        "AAA+24:00:00BBB,M3.5.0/167,M10.5.0/-167",
        "<+0545>-05:45:00",
    };
    for (size_t i = 0; i < sizeof(good_footers) / sizeof(good_footers[0]); i++) {
        size_t n;
        unsigned char *b = with_footer(fat, len, good_footers[i], &n);
        struct tz *z = parse_ok(name, b, n);
        tz_free(z);
        free(b);
    }
    {
        size_t n;
        unsigned char *b = with_footer(fat, len, "", &n);
        struct tz *z = parse_ok(name, b, n);
        int32_t off = 0;
        assert_int_equal(tz_offset_at(z, INT64_C(4102444800) + 180 * 86400, &off), 0);
        assert_int_equal(off, 3600); /* the last transition (2037) is to CET */
        tz_free(z);
        free(b);
    }

    /* Size limit and arguments. */
    struct tz *z = NULL;
    char *err = NULL;
    unsigned char *big = calloc(1, TZ_FILE_MAX + 1);
    assert_non_null(big);
    assert_int_equal(tz_parse(name, big, TZ_FILE_MAX + 1, &z, &err), -EFBIG);
    assert_non_null(err);
    assert_non_null(strstr(err, "Europe/Berlin"));
    free(err);
    free(big);
    assert_int_equal(tz_parse(name, fat, 10, &z, NULL), -EINVAL);
    assert_int_equal(tz_parse(NULL, fat, len, &z, NULL), -EINVAL);
    assert_int_equal(tz_parse(name, fat, len, NULL, NULL), -EINVAL);
    assert_null(z);

    free(p);
    free(fat);
}

static void test_name_valid(void **state)
{
    (void)state;
    static const char *const good[] = {
        "UTC",       "Europe/Berlin", "America/Argentina/Buenos_Aires",
        "Etc/GMT+5", "Etc/GMT-14",    "America/Port-au-Prince",
        "right/UTC", "a.b",           "..a",
        "a..",
    };
    static const char *const bad[] = {
        "",          "/etc/passwd",    "../etc/passwd",   "Europe/../../etc/passwd", "..",
        "Europe/..", "./UTC",          "Europe/./Berlin", "Europe//Berlin",          "Europe/",
        "a b",       "Europe\\Berlin", "Europe/Berlin\n", "Europe/Berl\xc3\xadn",    "a:b",
        "~root",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (!tz_name_valid(good[i]))
            fail_msg("refused \"%s\"", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (tz_name_valid(bad[i]))
            fail_msg("accepted \"%s\"", bad[i]);
    assert_false(tz_name_valid(NULL));
    char long_name[300];
    memset(long_name, 'a', sizeof(long_name));
    long_name[255] = '\0';
    assert_true(tz_name_valid(long_name));
    long_name[255] = 'a';
    long_name[256] = '\0';
    assert_false(tz_name_valid(long_name));
}

/* ---- the loader --------------------------------------------------------- */

struct load_result {
    int calls;
    int status;
    struct tz *tz;
    char error[512];
};

static void on_loaded(void *data, int status, struct tz *z, const char *error)
{
    struct load_result *r = data;
    r->calls++;
    r->status = status;
    r->tz = z;
    snprintf(r->error, sizeof(r->error), "%s", error ? error : "");
    if (status == 0)
        assert_null(error);
    else
        assert_null(z);
}

static struct load_result load(const char *dir, const char *name)
{
    uv_loop_t loop;
    struct load_result r = {0};
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(tz_load(&loop, dir, name, on_loaded, &r), 0);
    assert_int_equal(r.calls, 0); /* never from within tz_load() */
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(r.calls, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
    return r;
}

static void test_load(void **state)
{
    (void)state;
    struct load_result r = load(NULL, "Europe/Berlin");
    assert_int_equal(r.status, 0);
    assert_string_equal(tz_name(r.tz), "Europe/Berlin");
    int32_t off;
    assert_int_equal(tz_offset_at(r.tz, 1784109600, &off), 0);
    assert_int_equal(off, 7200);
    tz_free(r.tz);

    r = load(ZONEINFO, "Australia/Lord_Howe");
    assert_int_equal(r.status, 0);
    assert_int_equal(tz_offset_at(r.tz, 1784109600, &off), 0);
    assert_int_equal(off, 37800);
    tz_free(r.tz);

    r = load("/nonexistent", "UTC");
    assert_int_equal(r.status, 0);
    assert_ptr_equal(r.tz, tz_utc());
    r = load("/nonexistent", "Etc/UTC");
    assert_int_equal(r.status, 0);
    assert_ptr_equal(r.tz, tz_utc());

    r = load(NULL, "Europe/Nowhere");
    assert_int_equal(r.status, -ENOENT);
    assert_non_null(strstr(r.error, "\"Europe/Nowhere\""));
    assert_non_null(strstr(r.error, "no such time zone"));

    r = load(NULL, "Europe");
    assert_true(r.status < 0);
    assert_non_null(strstr(r.error, "\"Europe\""));

    r = load(NULL, "");
    assert_int_equal(r.status, -EINVAL);
    r = load(NULL, NULL);
    assert_int_equal(r.status, -EINVAL);

    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(tz_load(NULL, NULL, "UTC", on_loaded, NULL), -EINVAL);
    assert_int_equal(tz_load(&loop, NULL, "UTC", NULL, NULL), -EINVAL);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* The loader refuses a name that leaves the directory before any read:
 * the file it would reach is a valid zone, so a read would have succeeded.
 * Also a file too big and one that is not TZif. */
static void test_load_refusals(void **state)
{
    (void)state;
    char root[] = "/tmp/test_tz_load.XXXXXX";
    assert_non_null(mkdtemp(root));
    char zdir[300], etc[300], passwd[300], big[300], junk[300];
    snprintf(zdir, sizeof(zdir), "%s/zoneinfo", root);
    snprintf(etc, sizeof(etc), "%s/etc", root);
    snprintf(passwd, sizeof(passwd), "%s/etc/passwd", root);
    snprintf(big, sizeof(big), "%s/zoneinfo/Big", root);
    snprintf(junk, sizeof(junk), "%s/zoneinfo/Junk", root);
    assert_int_equal(mkdir(zdir, 0700), 0);
    assert_int_equal(mkdir(etc, 0700), 0);
    size_t len;
    unsigned char *berlin = read_zone("Europe/Berlin", &len);
    write_whole(passwd, berlin, len);

    struct load_result r = load(zdir, "../etc/passwd");
    assert_int_equal(r.status, -EINVAL);
    assert_non_null(strstr(r.error, "\"../etc/passwd\""));
    assert_non_null(strstr(r.error, "not a valid zone name"));
    r = load(zdir, "/etc/passwd");
    assert_int_equal(r.status, -EINVAL);
    r = load(zdir, "bad\nname");
    assert_int_equal(r.status, -EINVAL);
    assert_null(strchr(r.error, '\n'));

    /* Just over the limit: refused; a valid zone padded to exactly the
     * limit is read whole (and then refused for the padding, not the size). */
    unsigned char *data = calloc(1, TZ_FILE_MAX + 1);
    assert_non_null(data);
    memcpy(data, berlin, len);
    write_whole(big, data, TZ_FILE_MAX + 1);
    r = load(zdir, "Big");
    assert_int_equal(r.status, -EFBIG);
    assert_non_null(strstr(r.error, "\"Big\""));
    assert_non_null(strstr(r.error, "256 KiB"));
    write_whole(big, data, TZ_FILE_MAX);
    r = load(zdir, "Big");
    assert_int_equal(r.status, -EINVAL);
    assert_non_null(strstr(r.error, "after the footer"));

    write_whole(junk, "not a zone\n", 11);
    r = load(zdir, "Junk");
    assert_int_equal(r.status, -EINVAL);
    assert_non_null(strstr(r.error, "time zone \"Junk\": "));

    unlink(junk);
    unlink(big);
    unlink(passwd);
    rmdir(etc);
    rmdir(zdir);
    rmdir(root);
    free(data);
    free(berlin);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utc),
        cmocka_unit_test(test_zones_match_glibc),
        cmocka_unit_test(test_slim_and_v1_match_glibc),
        cmocka_unit_test(test_footers_match_glibc),
        cmocka_unit_test(test_gaps_and_overlaps),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_name_valid),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_load_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
