#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/timefmt.h"

static int64_t parse_ok(const char *s)
{
    int64_t ms = -1;
    assert_int_equal(timefmt_parse_rfc3339(s, &ms), 0);
    return ms;
}

static void test_parse_utc(void **state)
{
    (void)state;
    assert_int_equal(parse_ok("1970-01-01T00:00:00Z"), 0);
    assert_int_equal(parse_ok("2026-01-02T03:04:05Z"), INT64_C(1767323045000));
    assert_int_equal(parse_ok("2026-01-02t03:04:05z"), INT64_C(1767323045000));
}

static void test_parse_fraction(void **state)
{
    (void)state;
    assert_int_equal(parse_ok("2026-01-02T03:04:05.1Z"), INT64_C(1767323045100));
    assert_int_equal(parse_ok("2026-01-02T03:04:05.123Z"), INT64_C(1767323045123));
    /* Finer than a millisecond is truncated, not rounded. */
    assert_int_equal(parse_ok("2026-01-02T03:04:05.123999Z"), INT64_C(1767323045123));
    assert_int_equal(parse_ok("2026-01-02T03:04:05.999999999Z"), INT64_C(1767323045999));
}

static void test_parse_offsets(void **state)
{
    (void)state;
    int64_t utc = parse_ok("2026-01-02T03:04:05Z");
    assert_int_equal(parse_ok("2026-01-02T05:04:05+02:00"), utc);
    assert_int_equal(parse_ok("2026-01-01T22:34:05-04:30"), utc);
    assert_int_equal(parse_ok("2026-01-02T03:04:05+00:00"), utc);
    assert_int_equal(parse_ok("2026-01-02T03:04:05-00:00"), utc);
}

static void test_parse_calendar(void **state)
{
    (void)state;
    assert_int_equal(parse_ok("2024-02-29T00:00:00Z"), INT64_C(1709164800000));
    assert_int_equal(parse_ok("2000-02-29T00:00:00Z"), INT64_C(951782400000));
    assert_int_equal(parse_ok("1969-12-31T23:59:59Z"), -1000);
    assert_int_equal(parse_ok("2038-01-19T03:14:08Z"), INT64_C(2147483648000));
}

static void test_parse_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "2026-01-02",
        "2026-01-02T03:04:05",  /* no zone */
        "2026-01-02 03:04:05Z", /* space instead of T */
        "2026-13-02T03:04:05Z", /* month */
        "2026-00-02T03:04:05Z",
        "2026-02-29T03:04:05Z", /* not a leap year */
        "1900-02-29T00:00:00Z", /* century rule */
        "2026-04-31T03:04:05Z",
        "2026-01-02T24:00:00Z",
        "2026-01-02T03:60:05Z",
        "2026-01-02T03:04:60Z",     /* leap second */
        "2026-01-02T03:04:05.Z",    /* empty fraction */
        "2026-01-02T03:04:05+0200", /* offset without colon */
        "2026-01-02T03:04:05+24:00",
        "2026-01-02T03:04:05Zjunk",
        "26-01-02T03:04:05Z",
        "2026-1-02T03:04:05Z",
        "+2026-01-02T03:04:05Z",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ms = 42;
        assert_int_equal(timefmt_parse_rfc3339(bad[i], &ms), -EINVAL);
        assert_int_equal(ms, 42); /* untouched on failure */
    }
    int64_t ms;
    assert_int_equal(timefmt_parse_rfc3339(NULL, &ms), -EINVAL);
}

static void test_format(void **state)
{
    (void)state;
    char out[TIMEFMT_RFC3339_SIZE];
    assert_int_equal(timefmt_format_rfc3339(INT64_C(1767323045999), out, sizeof(out)), 0);
    assert_string_equal(out, "2026-01-02T03:04:05Z");
    assert_int_equal(timefmt_format_rfc3339(0, out, sizeof(out)), 0);
    assert_string_equal(out, "1970-01-01T00:00:00Z");
    /* Before the epoch the second is rounded down, not towards zero. */
    assert_int_equal(timefmt_format_rfc3339(-1, out, sizeof(out)), 0);
    assert_string_equal(out, "1969-12-31T23:59:59Z");
    assert_int_equal(timefmt_format_rfc3339(INT64_C(1709164800000), out, sizeof(out)), 0);
    assert_string_equal(out, "2024-02-29T00:00:00Z");
}

static void test_format_micro(void **state)
{
    (void)state;
    char out[TIMEFMT_RFC3339_MICRO_SIZE];
    assert_int_equal(timefmt_format_rfc3339_micro(INT64_C(1767323045123), out, sizeof(out)), 0);
    assert_string_equal(out, "2026-01-02T03:04:05.123000Z");
    assert_int_equal(timefmt_format_rfc3339_micro(-1, out, sizeof(out)), 0);
    assert_string_equal(out, "1969-12-31T23:59:59.999000Z");
}

static void test_format_limits(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(timefmt_format_rfc3339(0, out, TIMEFMT_RFC3339_SIZE - 1), -ENOBUFS);
    assert_int_equal(timefmt_format_rfc3339_micro(0, out, TIMEFMT_RFC3339_MICRO_SIZE - 1),
                     -ENOBUFS);
    assert_int_equal(timefmt_format_rfc3339(INT64_C(253402300800000), out, sizeof(out)), -ERANGE);
    assert_int_equal(timefmt_format_rfc3339(INT64_C(253402300799999), out, sizeof(out)), 0);
    assert_string_equal(out, "9999-12-31T23:59:59Z");
    assert_int_equal(timefmt_format_rfc3339(INT64_C(-62167219200001), out, sizeof(out)), -ERANGE);
    assert_int_equal(timefmt_format_rfc3339(INT64_C(-62167219200000), out, sizeof(out)), 0);
    assert_string_equal(out, "0000-01-01T00:00:00Z");
    assert_int_equal(timefmt_format_rfc3339(INT64_MAX, out, sizeof(out)), -ERANGE);
    assert_int_equal(timefmt_format_rfc3339(INT64_MIN, out, sizeof(out)), -ERANGE);
}

static void test_round_trip(void **state)
{
    (void)state;
    char out[TIMEFMT_RFC3339_MICRO_SIZE];
    /* Every day across leap years and century boundaries, at odd times. */
    for (int64_t ms = INT64_C(-2208988800000); ms < INT64_C(4102444800000);
         ms += INT64_C(86400000) * 7 + 3723456) {
        assert_int_equal(timefmt_format_rfc3339_micro(ms, out, sizeof(out)), 0);
        assert_int_equal(parse_ok(out), ms);
        assert_int_equal(timefmt_format_rfc3339(ms, out, sizeof(out)), 0);
        int64_t floor_s = ms >= 0 ? ms / 1000 * 1000 : -((-ms + 999) / 1000) * 1000;
        assert_int_equal(parse_ok(out), floor_s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_utc),     cmocka_unit_test(test_parse_fraction),
        cmocka_unit_test(test_parse_offsets), cmocka_unit_test(test_parse_calendar),
        cmocka_unit_test(test_parse_rejects), cmocka_unit_test(test_format),
        cmocka_unit_test(test_format_micro),  cmocka_unit_test(test_format_limits),
        cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
