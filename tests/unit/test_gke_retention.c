#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "snapshot/gke_retention.h"
#include "util/duration.h"

#define S 1000LL
#define M (60 * S)
#define H (60 * M)
#define D (24 * H)

static void test_table(void **state)
{
    (void)state;
    static const struct {
        int64_t ms;
        const char *out;
    } cases[] = {
        {36 * H, "36h"},
        {D + 12 * H, "36h"},
        {90 * M, "90min"},
        {7 * D, "7d"},
        {24 * H, "1d"},
        {25 * H, "25h"},
        {90 * S, "2min"},
        {61 * S, "2min"},
        {60 * S, "1min"},
        {M - 1, "1min"},
        {1, "1min"},
        {0, "0min"},
        {H + 1, "61min"},
        {D + 1, "1441min"},
        {365 * D, "365d"},
        {(int64_t)GKE_RETENTION_MAX_DAYS * D - M, "52559999min"},
        {(int64_t)GKE_RETENTION_MAX_DAYS * D, "36500d"},
        {5 * 99999 * D, "36500d"},
        {INT64_MAX, "36500d"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[GKE_RETENTION_SIZE];
        assert_int_equal(gke_retention_format(cases[i].ms, out), 0);
        assert_string_equal(out, cases[i].out);
    }
    char out[GKE_RETENTION_SIZE];
    assert_int_equal(gke_retention_format(-1, out), -EINVAL);
}

/* Reads GKE's format back (no y or mo: never written). */
static int64_t read_back(const char *s)
{
    char *end = NULL;
    long long n = strtoll(s, &end, 10);
    if (strcmp(end, "d") == 0)
        return n * D;
    if (strcmp(end, "h") == 0)
        return n * H;
    if (strcmp(end, "min") == 0)
        return n * M;
    fail_msg("unit of %s", s);
    return -1;
}

/* Every duration a class can name (the decoder's) comes out in GKE's
 * pattern, never shorter than asked and less than a minute longer, below
 * the cap. */
static void test_every_class_duration(void **state)
{
    (void)state;
    regex_t re;
    assert_int_equal(regcomp(&re, "^([0-9]+)[[:space:]]*(y|mo|d|h|min)$", REG_EXTENDED), 0);
    static const char *const units[] = {"ms", "s", "m", "h", "d"};
    unsigned seed = 17;
    for (int i = 0; i < 20000; i++) {
        char in[64] = "";
        int parts = 1 + (int)(rand_r(&seed) % 3);
        for (int p = 0; p < parts; p++) {
            size_t len = strlen(in);
            snprintf(in + len, sizeof(in) - len, "%u%s", rand_r(&seed) % 100000,
                     units[rand_r(&seed) % 5]);
        }
        int64_t ms = 0;
        assert_int_equal(duration_parse_ms(in, &ms), 0);
        char out[GKE_RETENTION_SIZE];
        assert_int_equal(gke_retention_format(ms, out), 0);
        if (regexec(&re, out, 0, NULL, 0) != 0)
            fail_msg("%s -> %s does not match GKE's pattern", in, out);
        int64_t back = read_back(out);
        if (ms < (int64_t)GKE_RETENTION_MAX_DAYS * D) {
            if (back < ms || back - ms >= M)
                fail_msg("%s (%lld ms) -> %s", in, (long long)ms, out);
        } else {
            assert_string_equal(out, "36500d");
        }
    }
    regfree(&re);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_every_class_duration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
