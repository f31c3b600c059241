/*
 * Own-write waits (controller/expectations): after a write the next pass for
 * the key waits until the cache or a watch event shows the resourceVersion
 * the write returned, or until the timeout. Each case is a script of steps
 * on one set of expectations.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "controller/expectations.h"

enum op {
    END,
    RECORD,  /* key, rv, now -> result */
    OBSERVE, /* key, rv: a watch event */
    CHECK,   /* key, rv (the cache's, NULL: not cached), now -> state, wait */
    FORGET,  /* key */
};

struct step {
    enum op op;
    const char *key;
    const char *rv;
    int64_t now;
    int result; /* RECORD */
    enum expectation_state state;
    int64_t wait; /* CHECK with EXPECTATION_WAIT */
    size_t len;   /* records kept after the step */
};

struct script {
    const char *name;
    struct step steps[10];
};

#define A "ns/a"
#define B "ns/b"

static const struct script scripts[] = {
    {"nothing recorded: decide",
     {
         {CHECK, A, "7", 0, 0, EXPECTATION_NONE, 0, 0},
     }},
    {"the cache shows the write: seen, then nothing to wait for",
     {
         {RECORD, A, "10", 1000, 0, 0, 0, 1},
         {CHECK, A, "9", 1100, 0, EXPECTATION_WAIT, 9900, 1},
         {CHECK, A, "10", 1200, 0, EXPECTATION_SEEN, 0, 0},
         {CHECK, A, "10", 1300, 0, EXPECTATION_NONE, 0, 0},
     }},
    {"the event carried the write and the cache moved on: seen",
     {
         {RECORD, A, "10", 0, 0, 0, 0, 1},
         {OBSERVE, A, "10", 0, 0, 0, 0, 0},
         {CHECK, A, "11", 50, 0, EXPECTATION_NONE, 0, 0},
     }},
    {"events with other versions say nothing: the watch may still be behind",
     {
         {RECORD, A, "10", 0, 0, 0, 0, 1},
         {OBSERVE, A, "8", 0, 0, 0, 0, 1},
         {OBSERVE, A, "9", 0, 0, 0, 0, 1},
         {CHECK, A, "9", 20, 0, EXPECTATION_WAIT, 9980, 1},
         {OBSERVE, A, "10", 0, 0, 0, 0, 0},
         {CHECK, A, "12", 30, 0, EXPECTATION_NONE, 0, 0},
     }},
    {"never seen (a relist skipped it): the wait ends after 10 s",
     {
         {RECORD, A, "10", 0, 0, 0, 0, 1},
         {CHECK, A, "12", 9999, 0, EXPECTATION_WAIT, 1, 1},
         {CHECK, A, "12", 10000, 0, EXPECTATION_EXPIRED, 0, 0},
         {CHECK, A, "12", 10001, 0, EXPECTATION_NONE, 0, 0},
     }},
    {"a second write of the pass: its version is the one to wait for, and the timeout restarts",
     {
         {RECORD, A, "10", 0, 0, 0, 0, 1},
         {RECORD, A, "12", 500, 0, 0, 0, 1},
         {CHECK, A, "10", 600, 0, EXPECTATION_WAIT, 9900, 1},
         {OBSERVE, A, "10", 0, 0, 0, 0, 1},
         {CHECK, A, "10", 10400, 0, EXPECTATION_WAIT, 100, 1},
         {CHECK, A, "12", 10450, 0, EXPECTATION_SEEN, 0, 0},
     }},
    {"a write that changed nothing keeps the version the cache has: seen at once",
     {
         {RECORD, A, "10", 0, 0, 0, 0, 1},
         {CHECK, A, "10", 0, 0, EXPECTATION_SEEN, 0, 0},
     }},
    {"not in the cache yet: wait",
     {
         {RECORD, A, "10", 0, 0, 0, 0, 1},
         {CHECK, A, NULL, 5, 0, EXPECTATION_WAIT, 9995, 1},
     }},
    {"keys are apart",
     {
         {RECORD, A, "10", 0, 0, 0, 0, 1},
         {RECORD, B, "11", 0, 0, 0, 0, 2},
         {OBSERVE, B, "10", 0, 0, 0, 0, 2},
         {CHECK, B, "9", 1, 0, EXPECTATION_WAIT, 9999, 2},
         {CHECK, A, "10", 1, 0, EXPECTATION_SEEN, 0, 1},
         {CHECK, B, "11", 1, 0, EXPECTATION_SEEN, 0, 0},
     }},
    {"the workspace was deleted: forgotten",
     {
         {RECORD, A, "10", 0, 0, 0, 0, 1},
         {FORGET, A, NULL, 0, 0, 0, 0, 0},
         {CHECK, A, "9", 1, 0, EXPECTATION_NONE, 0, 0},
         {FORGET, B, NULL, 0, 0, 0, 0, 0},
     }},
    {"an answer without a resourceVersion records nothing",
     {
         {RECORD, A, NULL, 0, -EINVAL, 0, 0, 0},
         {RECORD, A, "", 0, -EINVAL, 0, 0, 0},
         {RECORD, NULL, "10", 0, -EINVAL, 0, 0, 0},
         {CHECK, A, "9", 1, 0, EXPECTATION_NONE, 0, 0},
     }},
};

static void run_script(const struct script *s)
{
    struct expectations x;
    expectations_init(&x, 0);
    print_message("  %s\n", s->name);
    for (size_t i = 0; i < sizeof(s->steps) / sizeof(s->steps[0]) && s->steps[i].op != END; i++) {
        const struct step *st = &s->steps[i];
        switch (st->op) {
        case RECORD:
            assert_int_equal(expectations_record(&x, st->key, st->rv, st->now), st->result);
            if (st->result == 0)
                assert_string_equal(expectations_recorded(&x, st->key), st->rv);
            break;
        case OBSERVE:
            expectations_observe(&x, st->key, st->rv);
            break;
        case CHECK: {
            int64_t wait = -1;
            enum expectation_state got = expectations_check(&x, st->key, st->rv, st->now, &wait);
            assert_string_equal(expectation_state_name(got), expectation_state_name(st->state));
            if (got == EXPECTATION_WAIT)
                assert_int_equal(wait, st->wait);
            else
                assert_int_equal(wait, -1); /* untouched */
            break;
        }
        case FORGET:
            expectations_forget(&x, st->key);
            break;
        case END:
            break;
        }
        assert_int_equal(expectations_len(&x), st->len);
    }
    expectations_free(&x);
}

static void test_scripts(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++)
        run_script(&scripts[i]);
}

/* The timeout is the caller's when given. */
static void test_timeout(void **state)
{
    (void)state;
    struct expectations x;
    expectations_init(&x, 250);
    assert_int_equal(expectations_record(&x, A, "3", 1000), 0);
    int64_t wait = 0;
    assert_int_equal(expectations_check(&x, A, "2", 1200, &wait), EXPECTATION_WAIT);
    assert_int_equal(wait, 50);
    assert_int_equal(expectations_check(&x, A, "2", 1250, NULL), EXPECTATION_EXPIRED);
    expectations_free(&x);
    expectations_init(&x, -1);
    assert_int_equal(x.timeout_ms, EXPECTATIONS_TIMEOUT_MS);
    expectations_free(&x);
}

/* Records still held are freed with the set (the sanitizer build checks). */
static void test_free_with_records(void **state)
{
    (void)state;
    struct expectations x;
    expectations_init(&x, 0);
    char key[32];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "ns/w%d", i);
        assert_int_equal(expectations_record(&x, key, "1", 0), 0);
    }
    assert_int_equal(expectations_len(&x), 100);
    expectations_free(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scripts),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_free_with_records),
    };
    return cmocka_run_group_tests_name("own-write expectations", tests, NULL, NULL);
}
