#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/ratelimit.h"

static void test_burst_then_debt(void **state)
{
    (void)state;
    struct token_bucket tb;
    token_bucket_init(&tb, 10.0, 100, 1000);
    for (int i = 0; i < 100; i++)
        assert_int_equal(token_bucket_reserve(&tb, 1000), 0);
    /* Reservations go into debt: each further one waits another 100 ms. */
    assert_int_equal(token_bucket_reserve(&tb, 1000), 100);
    assert_int_equal(token_bucket_reserve(&tb, 1000), 200);
    assert_int_equal(token_bucket_reserve(&tb, 1000), 300);
}

static void test_refill(void **state)
{
    (void)state;
    struct token_bucket tb;
    token_bucket_init(&tb, 10.0, 2, 0);
    assert_int_equal(token_bucket_reserve(&tb, 0), 0);
    assert_int_equal(token_bucket_reserve(&tb, 0), 0);
    assert_int_equal(token_bucket_reserve(&tb, 0), 100);
    /* The debt of one token is paid at 100 ms; one more token at 200 ms. */
    assert_int_equal(token_bucket_reserve(&tb, 200), 0);
    assert_int_equal(token_bucket_reserve(&tb, 250), 50);
    /* A long pause refills only up to the burst. */
    assert_int_equal(token_bucket_reserve(&tb, 100000), 0);
    assert_int_equal(token_bucket_reserve(&tb, 100000), 0);
    assert_int_equal(token_bucket_reserve(&tb, 100000), 100);
}

static void test_steady_rate(void **state)
{
    (void)state;
    struct token_bucket tb;
    token_bucket_init(&tb, 20.0, 1, 0);
    /* One token every 50 ms: callers that wait as told never wait longer. */
    uint64_t now = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t w = token_bucket_reserve(&tb, now);
        assert_true(w <= 50);
        now += w;
    }
    assert_true(now >= 999 * 50 - 1 && now <= 999 * 50 + 1);
}

static void test_unlimited(void **state)
{
    (void)state;
    struct token_bucket tb;
    token_bucket_init(&tb, 0.0, 0, 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(token_bucket_reserve(&tb, 0), 0);
    token_bucket_init(&tb, -1.0, 5, 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(token_bucket_reserve(&tb, 0), 0);
}

static void test_clock_step_back(void **state)
{
    (void)state;
    struct token_bucket tb;
    token_bucket_init(&tb, 10.0, 1, 5000);
    assert_int_equal(token_bucket_reserve(&tb, 5000), 0);
    /* An earlier time refills nothing and does not move the origin back. */
    assert_int_equal(token_bucket_reserve(&tb, 1000), 100);
    assert_int_equal(token_bucket_reserve(&tb, 5100), 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_debt), cmocka_unit_test(test_refill),
        cmocka_unit_test(test_steady_rate),     cmocka_unit_test(test_unlimited),
        cmocka_unit_test(test_clock_step_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
