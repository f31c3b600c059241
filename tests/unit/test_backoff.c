#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/backoff.h"

static void test_doubles_to_cap(void **state)
{
    (void)state;
    struct backoff b;
    backoff_init(&b, 800, 30000, 2.0, 0.0);
    const uint64_t want[] = {800, 1600, 3200, 6400, 12800, 25600, 30000, 30000};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_int_equal(backoff_next(&b, 0.5), want[i]);
}

static void test_reset(void **state)
{
    (void)state;
    struct backoff b;
    backoff_init(&b, 100, 1000, 2.0, 0.0);
    backoff_next(&b, 0.0);
    backoff_next(&b, 0.0);
    assert_int_equal(backoff_next(&b, 0.0), 400);
    backoff_reset(&b);
    assert_int_equal(backoff_next(&b, 0.0), 100);
}

static void test_jitter(void **state)
{
    (void)state;
    struct backoff b;
    backoff_init(&b, 1000, 10000, 2.0, 0.5);
    /* d * (1 + jitter * u) */
    assert_int_equal(backoff_next(&b, 0.0), 1000);
    assert_int_equal(backoff_next(&b, 0.5), 2500);
    assert_int_equal(backoff_next(&b, 0.25), 4500);
    /* 8000 * 1.4 = 11200 is capped; the un-jittered growth caps too. */
    assert_int_equal(backoff_next(&b, 0.8), 10000);
    assert_int_equal(b.next_ms, 10000);
    assert_int_equal(backoff_next(&b, 0.0), 10000);
}

static void test_no_overflow(void **state)
{
    (void)state;
    struct backoff b;
    backoff_init(&b, 1, UINT64_MAX, 10.0, 1.0);
    uint64_t prev = 0;
    for (int i = 0; i < 40; i++) {
        uint64_t d = backoff_next(&b, 0.999);
        assert_true(d >= prev);
        prev = d;
    }
    assert_int_equal(prev, UINT64_MAX);
}

static void test_odd_inputs(void **state)
{
    (void)state;
    struct backoff b;
    /* A shrinking factor or out-of-range jitter and u are clamped. */
    backoff_init(&b, 100, 1000, 0.5, 7.0);
    assert_int_equal(backoff_next(&b, -3.0), 100);
    assert_int_equal(backoff_next(&b, 5.0), 199);
    assert_int_equal(b.next_ms, 100);
}

static void test_random_range(void **state)
{
    (void)state;
    double lo = 1.0, hi = 0.0;
    for (int i = 0; i < 10000; i++) {
        double u = backoff_random();
        assert_true(u >= 0.0 && u < 1.0);
        if (u < lo)
            lo = u;
        if (u > hi)
            hi = u;
    }
    assert_true(lo < 0.01);
    assert_true(hi > 0.99);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doubles_to_cap), cmocka_unit_test(test_reset),
        cmocka_unit_test(test_jitter),         cmocka_unit_test(test_no_overflow),
        cmocka_unit_test(test_odd_inputs),     cmocka_unit_test(test_random_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
