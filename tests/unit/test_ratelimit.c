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

enum { CRITICAL = 1u << 0, NORMAL = 1u << 1, LOW = 1u << 2 };

static void test_priority_most_urgent_first(void **state)
{
    (void)state;
    struct priority_bucket pb;
    uint64_t wait;
    priority_bucket_init(&pb, 20.0, 30, 0);
    assert_int_equal(priority_bucket_next(&pb, CRITICAL | NORMAL | LOW, 0, &wait), 0);
    assert_int_equal(priority_bucket_next(&pb, NORMAL | LOW, 0, &wait), 1);
    assert_int_equal(priority_bucket_next(&pb, LOW, 0, &wait), 2);
    assert_int_equal(priority_bucket_next(&pb, 0, 0, &wait), -1);
    assert_true(wait == UINT64_MAX);
}

/* A burst of less urgent requests leaves tokens for the more urgent ones:
 * burst 30, normal keeps 7, low keeps 15. */
static void test_priority_keeps_tokens_for_the_urgent(void **state)
{
    (void)state;
    struct priority_bucket pb;
    uint64_t wait;
    priority_bucket_init(&pb, 20.0, 30, 0);
    int sent = 0;
    while (priority_bucket_next(&pb, LOW, 0, &wait) == 2)
        sent++;
    assert_int_equal(sent, 15);
    assert_int_equal(wait, 50); /* one more token makes 16 */
    sent = 0;
    while (priority_bucket_next(&pb, NORMAL | LOW, 0, &wait) == 1)
        sent++;
    assert_int_equal(sent, 8);
    /* Normal waits for its eighth token back: 7 + 1 at 20 per second. */
    assert_int_equal(wait, 50);
    sent = 0;
    while (priority_bucket_next(&pb, CRITICAL | NORMAL | LOW, 0, &wait) == 0)
        sent++;
    assert_int_equal(sent, 7);
    assert_int_equal(wait, 50);
    /* Empty: normal needs 8 tokens again, 400 ms. */
    assert_int_equal(priority_bucket_next(&pb, NORMAL, 0, &wait), -1);
    assert_int_equal(wait, 400);
    assert_int_equal(priority_bucket_next(&pb, LOW, 0, &wait), -1);
    assert_int_equal(wait, 800);
}

/* While a class waits for a token nothing less urgent is sent, and the wait
 * given is the urgent class's. */
static void test_priority_strict(void **state)
{
    (void)state;
    struct priority_bucket pb;
    uint64_t wait;
    priority_bucket_init(&pb, 10.0, 4, 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(priority_bucket_next(&pb, CRITICAL, 0, &wait), 0);
    assert_int_equal(priority_bucket_next(&pb, CRITICAL | NORMAL | LOW, 0, &wait), -1);
    assert_int_equal(wait, 100);
    assert_int_equal(priority_bucket_next(&pb, CRITICAL | NORMAL | LOW, 99, &wait), -1);
    assert_int_equal(wait, 1);
    assert_int_equal(priority_bucket_next(&pb, CRITICAL | NORMAL | LOW, 100, &wait), 0);
    /* With nothing urgent left, normal waits for 1 + 1 kept. */
    assert_int_equal(priority_bucket_next(&pb, NORMAL | LOW, 100, &wait), -1);
    assert_int_equal(wait, 200);
    assert_int_equal(priority_bucket_next(&pb, NORMAL | LOW, 300, &wait), 1);
}

/* 100 of each class fall due at once, at the API client's default 20 qps and
 * burst 30, and each is sent as soon as it is told it may: every critical
 * request is out by (100 - 30) / 20 = 3.5 s, before any other. */
static void test_priority_hundred_at_once(void **state)
{
    (void)state;
    struct priority_bucket pb;
    priority_bucket_init(&pb, 20.0, 30, 1000);
    unsigned left[3] = {100, 100, 100};
    uint64_t last[3] = {0, 0, 0}, first[3] = {UINT64_MAX, UINT64_MAX, UINT64_MAX};
    uint64_t now = 1000;
    while (left[0] + left[1] + left[2]) {
        unsigned waiting = (left[0] ? CRITICAL : 0) | (left[1] ? NORMAL : 0) | (left[2] ? LOW : 0);
        uint64_t wait;
        int c = priority_bucket_next(&pb, waiting, now, &wait);
        if (c < 0) {
            assert_true(wait > 0 && wait != UINT64_MAX);
            now += wait;
            continue;
        }
        if (c == 0)
            /* The nth critical request goes at the nth token. */
            assert_true(now - 1000 <= (100 - left[0] < 30 ? 0 : (100 - left[0] - 29) * 50));
        left[c]--;
        if (first[c] == UINT64_MAX)
            first[c] = now;
        last[c] = now;
    }
    assert_int_equal(last[0], 1000 + 3500);
    assert_true(first[1] > last[0]);
    assert_true(first[2] > last[1]);
}

static void test_priority_unlimited_and_small_burst(void **state)
{
    (void)state;
    struct priority_bucket pb;
    uint64_t wait;
    priority_bucket_init(&pb, 0.0, 0, 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(priority_bucket_next(&pb, LOW, 0, &wait), 2);
    /* Burst 1: nothing can be kept back, every class gets its turn. */
    priority_bucket_init(&pb, 10.0, 1, 0);
    assert_int_equal(priority_bucket_next(&pb, LOW, 0, &wait), 2);
    assert_int_equal(priority_bucket_next(&pb, LOW, 0, &wait), -1);
    assert_int_equal(wait, 100);
    assert_int_equal(priority_bucket_next(&pb, LOW, 100, &wait), 2);
    /* Burst 0 counts as 1. */
    priority_bucket_init(&pb, 10.0, 0, 0);
    assert_int_equal(priority_bucket_next(&pb, NORMAL, 0, &wait), 1);
    assert_int_equal(priority_bucket_next(&pb, NORMAL, 0, &wait), -1);
    assert_int_equal(wait, 100);
}

static void test_priority_clock_step_back(void **state)
{
    (void)state;
    struct priority_bucket pb;
    uint64_t wait;
    priority_bucket_init(&pb, 10.0, 1, 5000);
    assert_int_equal(priority_bucket_next(&pb, CRITICAL, 5000, &wait), 0);
    assert_int_equal(priority_bucket_next(&pb, CRITICAL, 1000, &wait), -1);
    assert_int_equal(wait, 100);
    assert_int_equal(priority_bucket_next(&pb, CRITICAL, 5100, &wait), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_debt),
        cmocka_unit_test(test_refill),
        cmocka_unit_test(test_steady_rate),
        cmocka_unit_test(test_unlimited),
        cmocka_unit_test(test_clock_step_back),
        cmocka_unit_test(test_priority_most_urgent_first),
        cmocka_unit_test(test_priority_keeps_tokens_for_the_urgent),
        cmocka_unit_test(test_priority_strict),
        cmocka_unit_test(test_priority_hundred_at_once),
        cmocka_unit_test(test_priority_unlimited_and_small_burst),
        cmocka_unit_test(test_priority_clock_step_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
