/*
 * strpool: one copy per text, counted holds, a let-go pool freed with its
 * last text, and drop telling a pooled text from a copy of the caller's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/strpool.h"

static void test_one_copy_per_text(void **state)
{
    (void)state;
    struct strpool p;
    strpool_init(&p);
    char a[] = "Paused", b[] = "Paused";
    const char *x = strpool_get(&p, a), *y = strpool_get(&p, b), *z = strpool_get(&p, "Running");
    assert_non_null(x);
    assert_ptr_equal(x, y);
    assert_ptr_not_equal(x, a);
    assert_string_equal(z, "Running");
    assert_int_equal(strpool_len(&p), 2);
    strpool_put(&p, x);
    assert_int_equal(strpool_len(&p), 2); /* y still holds it */
    assert_string_equal(y, "Paused");
    strpool_put(&p, y);
    assert_int_equal(strpool_len(&p), 1);
    /* A text that is not the pool's is ignored by put. */
    strpool_put(&p, "Running");
    assert_int_equal(strpool_len(&p), 1);
    strpool_put(&p, z);
    assert_int_equal(strpool_len(&p), 0);
    assert_null(strpool_get(&p, NULL));
    strpool_free(&p);
}

static void test_drop(void **state)
{
    (void)state;
    struct strpool p;
    strpool_init(&p);
    const char *held = strpool_get(&p, "Ready");
    char *own = strdup("Ready"); /* same text, the caller's copy: freed, not given back */
    strpool_drop(&p, own);
    assert_int_equal(strpool_len(&p), 1);
    strpool_drop(&p, (char *)held);
    assert_int_equal(strpool_len(&p), 0);
    strpool_drop(&p, NULL);
    strpool_free(&p);
}

/* An own copy becomes a hold on the pool's, freed (the sanitizer build
 * shows a leak otherwise); NULL stays NULL. */
static void test_adopt(void **state)
{
    (void)state;
    struct strpool p;
    strpool_init(&p);
    const char *held = strpool_get(&p, "gpu-t4");
    char *own = strdup("gpu-t4"), *none = NULL;
    assert_int_equal(strpool_adopt(&p, &own), 0);
    assert_ptr_equal(own, held);
    assert_int_equal(strpool_adopt(&p, &none), 0);
    assert_null(none);
    assert_int_equal(strpool_len(&p), 1);
    strpool_drop(&p, own);
    strpool_put(&p, held);
    assert_int_equal(strpool_len(&p), 0);
    strpool_free(&p);
}

/* Holders may outlive the maker: the pool goes with its last text (the
 * sanitizer build shows a leak or a use after free otherwise). */
static void test_let_go(void **state)
{
    (void)state;
    struct strpool *p = strpool_new();
    assert_non_null(p);
    const char *a = strpool_get(p, "team-a"), *b = strpool_get(p, "team-b");
    strpool_let_go(p);
    assert_string_equal(a, "team-a");
    strpool_put(p, a);
    strpool_put(p, b); /* the last: p is freed */

    p = strpool_new();
    assert_non_null(p);
    strpool_let_go(p); /* empty: freed at once */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_copy_per_text),
        cmocka_unit_test(test_drop),
        cmocka_unit_test(test_adopt),
        cmocka_unit_test(test_let_go),
    };
    return cmocka_run_group_tests_name("strpool", tests, NULL, NULL);
}
