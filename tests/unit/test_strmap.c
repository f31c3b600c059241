/* strmap against a plain array as the reference, through many random
 * puts and removes (backward-shift deletion is where such maps break). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "util/strmap.h"

#define KEYS 2000

static void test_against_reference(void **state)
{
    (void)state;
    static intptr_t ref[KEYS]; /* 0: absent */
    struct strmap m;
    strmap_init(&m);
    srand(42);
    size_t live = 0;
    for (int step = 0; step < 200000; step++) {
        int k = rand() % KEYS;
        char key[16];
        snprintf(key, sizeof(key), "ns/k%d", k);
        if (rand() % 3) {
            intptr_t v = step + 1;
            void *old = NULL;
            int r = strmap_put(&m, key, (void *)v, &old);
            assert_int_equal(r, ref[k] ? 1 : 0);
            if (ref[k])
                assert_ptr_equal(old, (void *)ref[k]);
            else
                live++;
            ref[k] = v;
        } else {
            void *v = strmap_remove(&m, key);
            assert_ptr_equal(v, ref[k] ? (void *)ref[k] : NULL);
            if (ref[k])
                live--;
            ref[k] = 0;
        }
        if (step % 5000 == 0) {
            for (int i = 0; i < KEYS; i++) {
                snprintf(key, sizeof(key), "ns/k%d", i);
                assert_ptr_equal(strmap_get(&m, key), ref[i] ? (void *)ref[i] : NULL);
            }
        }
    }
    assert_int_equal(strmap_len(&m), live);
    size_t seen = 0;
    const char *key;
    void *value;
    for (size_t it = 0; strmap_next(&m, &it, &key, &value);) {
        int k = atoi(key + 4);
        assert_ptr_equal(value, (void *)ref[k]);
        seen++;
    }
    assert_int_equal(seen, live);
    strmap_free(&m);
    assert_int_equal(strmap_len(&m), 0);
    assert_null(strmap_get(&m, "ns/k1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
    };
    return cmocka_run_group_tests_name("strmap", tests, NULL, NULL);
}
