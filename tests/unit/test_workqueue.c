#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kube/workqueue.h"

static struct workqueue *new_queue(uint64_t now_ms)
{
    struct workqueue *q = NULL;
    assert_int_equal(workqueue_new(NULL, now_ms, &q), 0);
    assert_non_null(q);
    return q;
}

/* Gets the next key at now_ms and checks it is want; done is left to the caller. */
static const char *get_expect(struct workqueue *q, uint64_t now_ms, const char *want)
{
    const char *key = NULL;
    assert_int_equal(workqueue_get(q, now_ms, &key), 0);
    assert_string_equal(key, want);
    return key;
}

static void get_none(struct workqueue *q, uint64_t now_ms)
{
    const char *key = NULL;
    assert_int_equal(workqueue_get(q, now_ms, &key), -EAGAIN);
    assert_null(key);
}

static void test_dedupe(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    assert_int_equal(workqueue_add(q, "ns/a"), 0);
    assert_int_equal(workqueue_add(q, "ns/a"), 0);
    assert_int_equal(workqueue_add(q, "ns/b"), 0);
    assert_int_equal(workqueue_add(q, "ns/a"), 0);
    assert_int_equal(workqueue_len(q), 2);

    const char *a = get_expect(q, 0, "ns/a");
    const char *b = get_expect(q, 0, "ns/b");
    get_none(q, 0);
    assert_int_equal(workqueue_len(q), 0);
    workqueue_done(q, a);
    workqueue_done(q, b);
    get_none(q, 0);

    struct workqueue_metrics m;
    workqueue_get_metrics(q, &m);
    assert_int_equal(m.adds_total, 2);
    assert_int_equal(m.depth, 0);
    assert_int_equal(m.processing, 0);
    assert_int_equal(workqueue_add(q, NULL), -EINVAL);
    workqueue_free(q);
}

static void test_fifo_and_key_copied(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    char buf[32];
    for (int i = 0; i < 5; i++) {
        snprintf(buf, sizeof(buf), "ns/k%d", i);
        assert_int_equal(workqueue_add(q, buf), 0);
    }
    memset(buf, 'x', sizeof(buf) - 1);
    for (int i = 0; i < 5; i++) {
        char want[32];
        snprintf(want, sizeof(want), "ns/k%d", i);
        workqueue_done(q, get_expect(q, 0, want));
    }
    workqueue_free(q);
}

static void test_dirty_requeue(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    assert_int_equal(workqueue_add(q, "ns/a"), 0);
    const char *a = get_expect(q, 0, "ns/a");

    /* Added while processing: held back, not handed out a second time. */
    assert_int_equal(workqueue_add(q, "ns/a"), 0);
    assert_int_equal(workqueue_add(q, "ns/a"), 0);
    assert_int_equal(workqueue_len(q), 0);
    get_none(q, 0);
    struct workqueue_metrics m;
    workqueue_get_metrics(q, &m);
    assert_int_equal(m.depth, 1);
    assert_int_equal(m.processing, 1);

    workqueue_done(q, a);
    assert_int_equal(workqueue_len(q), 1);
    a = get_expect(q, 0, "ns/a");
    get_none(q, 0);
    workqueue_done(q, a);
    get_none(q, 0);

    /* done for a key not in processing changes nothing. */
    workqueue_done(q, "ns/a");
    workqueue_done(q, "ns/unknown");
    workqueue_done(q, NULL);
    get_none(q, 0);
    workqueue_get_metrics(q, &m);
    assert_int_equal(m.adds_total, 2);
    workqueue_free(q);
}

static void test_add_after_earlier_wins(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    assert_int_equal(workqueue_next_deadline(q), UINT64_MAX);
    assert_int_equal(workqueue_add_after(q, "ns/a", 100, 1000), 0);
    assert_int_equal(workqueue_next_deadline(q), 1100);
    assert_int_equal(workqueue_add_after(q, "ns/a", 50, 1000), 0);
    assert_int_equal(workqueue_next_deadline(q), 1050);
    assert_int_equal(workqueue_add_after(q, "ns/a", 200, 1000), 0);
    assert_int_equal(workqueue_next_deadline(q), 1050);
    assert_int_equal(workqueue_len(q), 0);

    get_none(q, 1049);
    const char *a = get_expect(q, 1050, "ns/a");
    assert_int_equal(workqueue_next_deadline(q), UINT64_MAX);
    get_none(q, 5000);
    workqueue_done(q, a);
    get_none(q, 5000);

    struct workqueue_metrics m;
    workqueue_get_metrics(q, &m);
    assert_int_equal(m.retries_total, 3);
    assert_int_equal(m.adds_total, 1);
    workqueue_free(q);
}

static void test_add_after_order(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    assert_int_equal(workqueue_add_after(q, "ns/x", 30, 0), 0);
    assert_int_equal(workqueue_add_after(q, "ns/y", 10, 0), 0);
    assert_int_equal(workqueue_add_after(q, "ns/z", 20, 0), 0);
    assert_int_equal(workqueue_add_after(q, "ns/w", 20, 0), 0);
    /* A zero delay is a plain add. */
    assert_int_equal(workqueue_add_after(q, "ns/now", 0, 0), 0);
    assert_int_equal(workqueue_len(q), 1);

    struct workqueue_metrics m;
    workqueue_get_metrics(q, &m);
    assert_int_equal(m.waiting, 4);

    assert_int_equal(workqueue_promote(q, 25), 3);
    assert_int_equal(workqueue_next_deadline(q), 30);
    const char *order[] = {"ns/now", "ns/y", "ns/z", "ns/w", "ns/x"};
    for (size_t i = 0; i < 5; i++)
        workqueue_done(q, get_expect(q, 100, order[i]));
    get_none(q, 100);
    workqueue_free(q);
}

static void test_delayed_collapses_with_queued(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    assert_int_equal(workqueue_add(q, "ns/a"), 0);
    assert_int_equal(workqueue_add_after(q, "ns/a", 10, 0), 0);
    /* Still queued when the deadline passes: one hand-out. */
    workqueue_done(q, get_expect(q, 20, "ns/a"));
    get_none(q, 20);

    /* Due while processing: marked dirty, handed out after done. */
    assert_int_equal(workqueue_add_after(q, "ns/a", 10, 20), 0);
    const char *a = NULL;
    assert_int_equal(workqueue_add(q, "ns/b"), 0);
    a = get_expect(q, 20, "ns/b");
    workqueue_done(q, a);
    assert_int_equal(workqueue_add(q, "ns/a"), 0);
    a = get_expect(q, 20, "ns/a");
    get_none(q, 30);
    workqueue_done(q, a);
    workqueue_done(q, get_expect(q, 30, "ns/a"));
    get_none(q, 30);
    workqueue_free(q);
}

static void test_rate_limited_exponential(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    uint64_t now = 0;
    const uint64_t want[] = {5, 10, 20, 40, 80, 160, 320, 640, 1280};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        uint64_t delay = 0;
        assert_int_equal(workqueue_add_rate_limited(q, "ns/a", now, &delay), 0);
        assert_int_equal(delay, want[i]);
        assert_int_equal(workqueue_num_requeues(q, "ns/a"), i + 1);
        get_none(q, now + want[i] - 1);
        const char *a = get_expect(q, now + want[i], "ns/a");
        now += want[i];
        workqueue_done(q, a);
    }
    /* Failures survive done: the key stays known while it has any. */
    assert_int_equal(workqueue_num_requeues(q, "ns/a"), 9);
    assert_int_equal(workqueue_num_requeues(q, "ns/other"), 0);

    struct workqueue_metrics m;
    workqueue_get_metrics(q, &m);
    assert_int_equal(m.retries_total, 9);
    assert_int_equal(m.adds_total, 9);
    workqueue_free(q);
}

static void test_rate_limited_cap(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    uint64_t now = 0;
    for (unsigned i = 0; i < 40; i++) {
        uint64_t delay = 0;
        uint64_t want = i < 18 ? (UINT64_C(5) << i) : UINT64_C(1000000);
        assert_int_equal(workqueue_add_rate_limited(q, "ns/a", now, &delay), 0);
        assert_int_equal(delay, want);
        now += delay;
        workqueue_done(q, get_expect(q, now, "ns/a"));
    }
    /* 5 ms * 2^17 = 655.36 s is the last step under the 1000 s cap. */
    assert_int_equal(workqueue_num_requeues(q, "ns/a"), 40);
    workqueue_free(q);
}

static void test_forget_resets(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    uint64_t delay = 0;
    for (int i = 0; i < 3; i++)
        assert_int_equal(workqueue_add_rate_limited(q, "ns/a", 0, &delay), 0);
    assert_int_equal(delay, 20);
    assert_int_equal(workqueue_num_requeues(q, "ns/a"), 3);
    /* The three adds collapse into the earliest deadline. */
    assert_int_equal(workqueue_next_deadline(q), 5);

    workqueue_forget(q, "ns/a");
    assert_int_equal(workqueue_num_requeues(q, "ns/a"), 0);
    /* Forget does not unqueue. */
    workqueue_done(q, get_expect(q, 5, "ns/a"));
    get_none(q, 100);

    assert_int_equal(workqueue_add_rate_limited(q, "ns/a", 100, &delay), 0);
    assert_int_equal(delay, 5);
    workqueue_forget(q, "ns/unknown");
    workqueue_forget(q, NULL);
    workqueue_free(q);
}

static void test_token_bucket_kicks_in(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    char key[32];
    uint64_t delay = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "ns/k%d", i);
        assert_int_equal(workqueue_add_rate_limited(q, key, 0, &delay), 0);
        assert_int_equal(delay, 5);
    }
    /* The 101st add in the same instant owes one token at 10 qps. */
    assert_int_equal(workqueue_add_rate_limited(q, "ns/k100", 0, &delay), 0);
    assert_int_equal(delay, 100);
    assert_int_equal(workqueue_add_rate_limited(q, "ns/k101", 0, &delay), 0);
    assert_int_equal(delay, 200);
    /* The larger of the two limits wins: a key's own backoff stays 5 ms
     * here, the bucket says 300 ms. */
    assert_int_equal(workqueue_add_rate_limited(q, "ns/k0", 0, &delay), 0);
    assert_int_equal(delay, 300);

    assert_int_equal(workqueue_promote(q, 5), 100);
    assert_int_equal(workqueue_next_deadline(q), 100);
    assert_int_equal(workqueue_promote(q, 99), 0);
    assert_int_equal(workqueue_promote(q, 100), 1);

    /* Time pays the debt back: 400 ms later the bucket has refilled 4
     * tokens, enough to clear the 3 owed and take one now. */
    assert_int_equal(workqueue_add_rate_limited(q, "ns/fresh", 400, &delay), 0);
    assert_int_equal(delay, 5);
    workqueue_free(q);
}

static void test_custom_options(void **state)
{
    (void)state;
    struct workqueue *q = NULL;
    struct workqueue_options opts = {.base_delay_ms = 100, .max_delay_ms = 350, .qps = -1};
    assert_int_equal(workqueue_new(&opts, 0, &q), 0);
    uint64_t delay = 0;
    const uint64_t want[] = {100, 200, 350, 350};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(workqueue_add_rate_limited(q, "a", 0, &delay), 0);
        assert_int_equal(delay, want[i]);
    }
    /* Unlimited bucket: no key waits for tokens. */
    char key[16];
    for (int i = 0; i < 500; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(workqueue_add_rate_limited(q, key, 0, &delay), 0);
        assert_int_equal(delay, 100);
    }
    workqueue_free(q);
}

static void test_shutdown(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    assert_int_equal(workqueue_add(q, "ns/a"), 0);
    assert_int_equal(workqueue_add(q, "ns/b"), 0);
    assert_int_equal(workqueue_add_after(q, "ns/later", 10, 0), 0);
    const char *a = get_expect(q, 0, "ns/a");
    assert_int_equal(workqueue_add(q, "ns/a"), 0);

    workqueue_shutdown(q);
    assert_true(workqueue_shutting_down(q));
    assert_int_equal(workqueue_next_deadline(q), UINT64_MAX);
    assert_int_equal(workqueue_add(q, "ns/c"), -ESHUTDOWN);
    assert_int_equal(workqueue_add_after(q, "ns/c", 5, 0), -ESHUTDOWN);
    assert_int_equal(workqueue_add_rate_limited(q, "ns/c", 0, NULL), -ESHUTDOWN);

    /* What was queued drains; the dirty key comes back after done. */
    const char *b = get_expect(q, 100, "ns/b");
    const char *key = NULL;
    assert_int_equal(workqueue_get(q, 100, &key), -ESHUTDOWN);
    workqueue_done(q, a);
    a = get_expect(q, 100, "ns/a");
    workqueue_done(q, a);
    workqueue_done(q, b);
    assert_int_equal(workqueue_get(q, 100, &key), -ESHUTDOWN);
    workqueue_free(q);
}

static void test_free_with_everything_in_flight(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    assert_int_equal(workqueue_add(q, "a"), 0);
    assert_int_equal(workqueue_add(q, "b"), 0);
    assert_int_equal(workqueue_add_after(q, "c", 10, 0), 0);
    assert_int_equal(workqueue_add_rate_limited(q, "d", 0, NULL), 0);
    get_expect(q, 0, "a");
    assert_int_equal(workqueue_add(q, "a"), 0);
    assert_null(workqueue_free(q));
    assert_null(workqueue_free(NULL));
}

#define MANY 20000

static void test_many_keys(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    char key[32];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < MANY; i++) {
            snprintf(key, sizeof(key), "ns-%d/ws-%d", i % 97, i);
            assert_int_equal(workqueue_add(q, key), 0);
        }
    }
    assert_int_equal(workqueue_len(q), MANY);
    for (int i = 0; i < MANY; i++) {
        snprintf(key, sizeof(key), "ns-%d/ws-%d", i % 97, i);
        const char *got = get_expect(q, 0, key);
        /* Every other key fails once, so it stays known after done. */
        if (i % 2 == 0)
            assert_int_equal(workqueue_add_rate_limited(q, got, 0, NULL), 0);
        workqueue_done(q, got);
    }
    for (int i = 0; i < MANY; i++) {
        snprintf(key, sizeof(key), "ns-%d/ws-%d", i % 97, i);
        assert_int_equal(workqueue_num_requeues(q, key), i % 2 == 0 ? 1 : 0);
    }
    /* Hand out the retried half, forgetting every fourth key: entries leave
     * the table from the middle of probe runs. */
    size_t n = 0;
    const char *got;
    while (workqueue_get(q, 1000000, &got) == 0) {
        int i = 0;
        assert_int_equal(sscanf(got, "ns-%*d/ws-%d", &i), 1);
        assert_int_equal(i % 2, 0);
        if (i % 4 == 0)
            workqueue_forget(q, got);
        workqueue_done(q, got);
        n++;
    }
    assert_int_equal(n, MANY / 2);
    for (int i = 0; i < MANY; i++) {
        snprintf(key, sizeof(key), "ns-%d/ws-%d", i % 97, i);
        assert_int_equal(workqueue_num_requeues(q, key), i % 4 == 2 ? 1 : 0);
    }
    struct workqueue_metrics m;
    workqueue_get_metrics(q, &m);
    assert_int_equal(m.depth, 0);
    assert_int_equal(m.processing, 0);
    assert_int_equal(m.waiting, 0);
    assert_int_equal(m.adds_total, MANY + MANY / 2);
    workqueue_free(q);
}

/* ---- the libuv driver on a real loop ---- */

struct consumer {
    struct workqueue_driver *d;
    uv_loop_t *loop;
    char seen[8][16];
    uint64_t seen_at[8];
    int n;
    int readded;
    int ready_calls;
    int shutdown_seen;
    uint64_t start;
};

static void consumer_ready(void *data)
{
    struct consumer *c = data;
    c->ready_calls++;
    const char *key;
    int r;
    while ((r = workqueue_driver_get(c->d, &key)) == 0) {
        assert_true(c->n < 8);
        snprintf(c->seen[c->n], sizeof(c->seen[c->n]), "%s", key);
        c->seen_at[c->n] = uv_now(c->loop);
        c->n++;
        if (strcmp(key, "a") == 0 && !c->readded) {
            /* Added while processing: comes back after done. */
            c->readded = 1;
            assert_int_equal(workqueue_driver_add(c->d, "a"), 0);
        }
        if (strcmp(key, "b") == 0)
            assert_int_equal(workqueue_driver_add_rate_limited(c->d, "r"), 0);
        workqueue_driver_done(c->d, key);
    }
    if (r == -ESHUTDOWN) {
        c->shutdown_seen = 1;
        workqueue_driver_close(c->d);
        return;
    }
    assert_int_equal(r, -EAGAIN);
    if (c->n == 5)
        workqueue_driver_shutdown(c->d);
}

static void test_driver_on_loop(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct consumer c = {.loop = &loop};
    assert_int_equal(workqueue_driver_new(&loop, NULL, consumer_ready, &c, &c.d), 0);

    uv_update_time(&loop);
    c.start = uv_now(&loop);
    assert_int_equal(workqueue_driver_add_after(c.d, "c", 200), 0);
    assert_int_equal(workqueue_driver_add_after(c.d, "b", 100), 0);
    assert_int_equal(workqueue_driver_add(c.d, "a"), 0);
    assert_int_equal(workqueue_driver_add(c.d, "a"), 0);
    assert_int_equal(workqueue_len(workqueue_driver_queue(c.d)), 1);

    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);

    const char *want[] = {"a", "a", "b", "r", "c"};
    assert_int_equal(c.n, 5);
    for (int i = 0; i < 5; i++)
        assert_string_equal(c.seen[i], want[i]);
    /* Timers never fire early. */
    assert_true(c.seen_at[2] - c.start >= 100);
    assert_true(c.seen_at[4] - c.start >= 200);
    assert_true(c.shutdown_seen);
}

struct timings {
    int added, retried;
    uint64_t queued[8], worked[8];
    int n_queued, n_worked;
};

static void t_added(void *data)
{
    ((struct timings *)data)->added++;
}

static void t_retried(void *data)
{
    ((struct timings *)data)->retried++;
}

static void t_started(void *data, uint64_t ms)
{
    struct timings *t = data;
    if (t->n_queued < 8)
        t->queued[t->n_queued++] = ms;
}

static void t_finished(void *data, uint64_t ms)
{
    struct timings *t = data;
    if (t->n_worked < 8)
        t->worked[t->n_worked++] = ms;
}

/* Queue and work times for the metrics: from queued to handed out, from
 * handed out to done, and what is still being processed. */
static void test_timing(void **state)
{
    (void)state;
    struct workqueue *q = new_queue(0);
    struct timings t = {0};
    struct workqueue_observer o = {t_added, t_retried, t_started, t_finished, &t};
    workqueue_set_observer(q, &o);

    workqueue_set_clock(q, 100);
    assert_int_equal(workqueue_add(q, "a"), 0);
    assert_int_equal(workqueue_add(q, "a"), 0); /* a duplicate is not an add */
    workqueue_set_clock(q, 200);
    assert_int_equal(workqueue_add(q, "b"), 0);
    assert_int_equal(t.added, 2);
    const char *a = get_expect(q, 350, "a");
    const char *b = get_expect(q, 400, "b");
    assert_int_equal(t.n_queued, 2);
    assert_int_equal(t.queued[0], 250);
    assert_int_equal(t.queued[1], 200);

    uint64_t total, longest;
    workqueue_processing_time(q, 600, &total, &longest);
    assert_int_equal(total, 250 + 200);
    assert_int_equal(longest, 250);

    workqueue_set_clock(q, 1000);
    workqueue_done(q, a);
    assert_int_equal(t.n_worked, 1);
    assert_int_equal(t.worked[0], 650);
    workqueue_processing_time(q, 1000, &total, &longest);
    assert_int_equal(total, 600);
    assert_int_equal(longest, 600);

    /* A delayed add is a retry; its queue time starts at its deadline. */
    assert_int_equal(workqueue_add_after(q, "c", 500, 1000), 0);
    assert_int_equal(t.retried, 1);
    assert_int_equal(t.added, 2);
    get_expect(q, 1700, "c");
    assert_int_equal(t.added, 3);
    assert_int_equal(t.queued[2], 200);

    /* The clock never goes back. */
    workqueue_set_clock(q, 10);
    workqueue_done(q, b);
    assert_int_equal(t.worked[1], 1300);

    workqueue_set_observer(q, NULL);
    assert_int_equal(workqueue_add(q, "d"), 0);
    assert_int_equal(t.added, 3);
    workqueue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dedupe),
        cmocka_unit_test(test_fifo_and_key_copied),
        cmocka_unit_test(test_dirty_requeue),
        cmocka_unit_test(test_add_after_earlier_wins),
        cmocka_unit_test(test_add_after_order),
        cmocka_unit_test(test_delayed_collapses_with_queued),
        cmocka_unit_test(test_rate_limited_exponential),
        cmocka_unit_test(test_rate_limited_cap),
        cmocka_unit_test(test_forget_resets),
        cmocka_unit_test(test_token_bucket_kicks_in),
        cmocka_unit_test(test_custom_options),
        cmocka_unit_test(test_shutdown),
        cmocka_unit_test(test_free_with_everything_in_flight),
        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_driver_on_loop),
        cmocka_unit_test(test_timing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
