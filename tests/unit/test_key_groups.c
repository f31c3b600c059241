/*
 * key_groups: a key is in one group at most, moves when its group changes,
 * and an emptied group goes; lookups cost the group, not every key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/key_groups.h"

struct seen {
    char keys[8][32];
    int n;
};

static void collect(void *data, const char *key)
{
    struct seen *s = data;
    assert_true(s->n < 8);
    snprintf(s->keys[s->n++], sizeof(s->keys[0]), "%s", key);
}

static int saw(const struct seen *s, const char *key)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->keys[i], key) == 0)
            return 1;
    return 0;
}

static void test_groups(void **state)
{
    (void)state;
    struct key_groups g;
    key_groups_init(&g);
    assert_int_equal(key_groups_set(&g, "ns/snap-1", "ns/trigger-a"), 0);
    assert_int_equal(key_groups_set(&g, "ns/snap-2", "ns/trigger-a"), 0);
    assert_int_equal(key_groups_set(&g, "ns/snap-3", "ns/trigger-b"), 0);
    assert_int_equal(key_groups_count(&g, "ns/trigger-a"), 2);
    assert_int_equal(key_groups_count(&g, "ns/trigger-b"), 1);
    assert_int_equal(key_groups_count(&g, "other/trigger-a"), 0);
    assert_int_equal(key_groups_count(&g, NULL), 0);
    assert_string_equal(key_groups_of(&g, "ns/snap-2"), "ns/trigger-a");

    struct seen s = {0};
    key_groups_foreach(&g, "ns/trigger-a", collect, &s);
    assert_int_equal(s.n, 2);
    assert_true(saw(&s, "ns/snap-1") && saw(&s, "ns/snap-2"));

    /* The same group again changes nothing; another moves the key. */
    assert_int_equal(key_groups_set(&g, "ns/snap-1", "ns/trigger-a"), 0);
    assert_int_equal(key_groups_count(&g, "ns/trigger-a"), 2);
    assert_int_equal(key_groups_set(&g, "ns/snap-1", "ns/trigger-b"), 0);
    assert_int_equal(key_groups_count(&g, "ns/trigger-a"), 1);
    assert_int_equal(key_groups_count(&g, "ns/trigger-b"), 2);

    /* NULL or "": in no group; the emptied group goes. */
    assert_int_equal(key_groups_set(&g, "ns/snap-2", NULL), 0);
    assert_null(key_groups_of(&g, "ns/snap-2"));
    assert_int_equal(key_groups_count(&g, "ns/trigger-a"), 0);
    s.n = 0;
    key_groups_foreach(&g, "ns/trigger-a", collect, &s);
    key_groups_foreach(&g, NULL, collect, &s);
    assert_int_equal(s.n, 0);
    assert_int_equal(key_groups_set(&g, "ns/snap-3", ""), 0);
    assert_int_equal(key_groups_count(&g, "ns/trigger-b"), 1);
    key_groups_free(&g);
    /* Empty again after free, and usable. */
    assert_int_equal(key_groups_count(&g, "ns/trigger-b"), 0);
    assert_int_equal(key_groups_set(&g, "k", "n"), 0);
    key_groups_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups),
    };
    return cmocka_run_group_tests_name("key_groups", tests, NULL, NULL);
}
