#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/duration.h"

static void test_parse_table(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int rc;
        int64_t ms;
    } cases[] = {
        {"0", 0, 0},
        {"0s", 0, 0},
        {"15s", 0, 15000},
        {"500ms", 0, 500},
        {"1m30s", 0, 90000},
        {"2h", 0, 7200000},
        {"1d", 0, 86400000},
        {"1h1m1s1ms", 0, 3661001},
        {"10m", 0, 600000},
        {"", -EINVAL, 0},
        {"s", -EINVAL, 0},
        {"15", -EINVAL, 0},
        {"-1s", -EINVAL, 0},
        {"1x", -EINVAL, 0},
        {"1.5s", -EINVAL, 0},
        {"1s ", -EINVAL, 0},
        {"99999999999999999999s", -EINVAL, 0},
        {"99999999999999999999h", -EINVAL, 0},
        /* The bounds the CRDs' pattern shares: 5 parts of 5 digits. */
        {"99999d99999h99999m99999s", 0,
         99999LL * 86400000 + 99999LL * 3600000 + 99999LL * 60000 + 99999LL * 1000},
        {"100000s", -EINVAL, 0},
        {"000001s", -EINVAL, 0},
        {"1s1s1s1s1s", 0, 5000},
        {"1s1s1s1s1s1s", -EINVAL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t ms = -1;
        int rc = duration_parse_ms(cases[i].in, &ms);
        if (rc != cases[i].rc)
            fail_msg("%s: rc %d, want %d", cases[i].in, rc, cases[i].rc);
        if (rc == 0 && ms != cases[i].ms)
            fail_msg("%s: %lld ms, want %lld", cases[i].in, (long long)ms, (long long)cases[i].ms);
    }
}

static void test_format_round_trip(void **state)
{
    (void)state;
    static const int64_t values[] = {0, 1, 999, 1000, 61000, 3600000, 90061001};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char s[64];
        int64_t back = -1;
        assert_int_equal(duration_format_ms(values[i], s, sizeof(s)), 0);
        assert_int_equal(duration_parse_ms(s, &back), 0);
        assert_int_equal(back, values[i]);
    }
    char s[64];
    duration_format_ms(5400000, s, sizeof(s));
    assert_string_equal(s, "1h30m");
    char tiny[3];
    assert_int_equal(duration_format_ms(5400000, tiny, sizeof(tiny)), -ENOBUFS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_table),
        cmocka_unit_test(test_format_round_trip),
    };
    return cmocka_run_group_tests_name("duration", tests, NULL, NULL);
}
