/*
 * The status field table, walked: every field it names round-trips decode ->
 * encode -> decode, is noticed by equality when it changes, is copied deep
 * (the sanitized build catches a copy that shares a pointer: the original
 * is freed before the copy is read and cleared) and is freed by clear (the
 * leak checker of the sanitized build). A field added to the table is
 * covered here without a line of test.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workspace/status_fields.h"
#include "workspace/workspace.h"

#define AT(base, off, type) ((type *)((char *)(base) + (off)))

/* The steps from the status to one field: objects, lists and the field. */
struct path {
    const struct status_field *step[8];
    size_t depth;
    char name[256];
};

/* The struct that holds path's last step in s, making the one element of
 * each list on the way when make is set (a condition needs a type to be
 * kept). NULL when a list on the way is empty and make is not set. */
static void *holder(struct workspace_status *s, const struct path *p, int make)
{
    char *base = (char *)s;
    for (size_t i = 0; i + 1 < p->depth; i++) {
        const struct status_field *f = p->step[i];
        if (f->kind == SF_OBJECT || f->kind == SF_INLINE) {
            base += f->off;
            continue;
        }
        if (f->kind == SF_BLOCK) {
            void **block = AT(base, f->off, void *);
            if (make && (!*block || *block == f->empty)) {
                *block = calloc(1, f->size);
                assert_non_null(*block);
            }
            base = *block; /* the read-only empty one when absent */
            continue;
        }
        char **items = AT(base, f->off, char *);
        size_t *n = AT(base, f->count, size_t);
        if (!*items) {
            if (!make)
                return NULL;
            *items = calloc(1, f->size);
            assert_non_null(*items);
            *n = 1;
            if (f->kind == SF_CONDITIONS)
                ((struct condition *)*items)->type = strdup("Ready");
        }
        assert_int_equal(*n, 1);
        base = *items;
    }
    return base;
}

/* Gives the field a value of its kind that is not its zero. */
static void set_field(void *base, const struct status_field *f)
{
    switch (f->kind) {
    case SF_STR:
    case SF_TEXT:
        free(*AT(base, f->off, char *));
        *AT(base, f->off, char *) = strdup("value");
        break;
    case SF_TIME:
        *AT(base, f->off, int64_t) = 1798761600000; /* 2027-01-01T00:00:00Z */
        break;
    case SF_TIME_MICRO:
        *AT(base, f->off, int64_t) = 1798761600123;
        break;
    case SF_INT64:
        *AT(base, f->off, int64_t) = 42;
        break;
    case SF_INT:
    case SF_BOOL:
        *AT(base, f->off, int) = 1;
        break;
    case SF_DOUBLE:
    case SF_FIGURE:
        *AT(base, f->off, double) = 2.5;
        break;
    case SF_STATE:
        *AT(base, f->off, enum workspace_state) = WS_STATE_PAUSED;
        break;
    case SF_COND_STATUS:
        *AT(base, f->off, enum condition_status) = COND_TRUE;
        break;
    default:
        fail_msg("%s: not a leaf", f->key);
    }
}

static void want_int(const char *name, int64_t have, int64_t want)
{
    if (have != want)
        fail_msg("%s: %lld, wanted %lld", name, (long long)have, (long long)want);
}

static void check_field(const void *base, const struct status_field *f, const char *name)
{
    switch (f->kind) {
    case SF_STR:
    case SF_TEXT: {
        const char *v = *AT(base, f->off, char *);
        if (!v || strcmp(v, "value") != 0)
            fail_msg("%s: \"%s\", wanted \"value\"", name, v ? v : "(null)");
        break;
    }
    case SF_TIME:
        want_int(name, *AT(base, f->off, int64_t), 1798761600000);
        break;
    case SF_TIME_MICRO:
        want_int(name, *AT(base, f->off, int64_t), 1798761600123);
        break;
    case SF_INT64:
        want_int(name, *AT(base, f->off, int64_t), 42);
        break;
    case SF_INT:
    case SF_BOOL:
        want_int(name, (int64_t)*AT(base, f->off, int), 1);
        break;
    case SF_DOUBLE:
    case SF_FIGURE:
        if (*AT(base, f->off, double) != 2.5)
            fail_msg("%s: %g, wanted 2.5", name, *AT(base, f->off, double));
        break;
    case SF_STATE:
        want_int(name, (int64_t)*AT(base, f->off, enum workspace_state), WS_STATE_PAUSED);
        break;
    case SF_COND_STATUS:
        want_int(name, (int64_t)*AT(base, f->off, enum condition_status), COND_TRUE);
        break;
    default:
        fail_msg("%s: not a leaf", name);
    }
}

/* The same structure as the field's status, with the field unset. */
static void baseline(struct workspace_status *s, const struct path *p)
{
    workspace_status_init(s);
    const struct status_field *f = p->step[p->depth - 1];
    void *h = holder(s, p, 1);
    if (f->kind == SF_FIGURE)
        *AT(h, f->when, int64_t) = 1798761600000;
}

static struct workspace *decode_status(const cJSON *status)
{
    cJSON *obj = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(obj, "metadata");
    cJSON_AddStringToObject(meta, "name", "w");
    cJSON *spec = cJSON_AddObjectToObject(obj, "spec");
    cJSON_AddStringToObject(spec, "className", "c");
    cJSON_AddItemToObject(obj, "status", cJSON_Duplicate(status, 1));
    struct workspace *ws = NULL;
    assert_int_equal(workspace_decode(obj, &ws, NULL), 0);
    cJSON_Delete(obj);
    return ws;
}

static void check_leaf(const struct path *p)
{
    const struct status_field *f = p->step[p->depth - 1];
    struct workspace_status s, unset;
    baseline(&s, p);
    baseline(&unset, p);
    set_field(holder(&s, p, 0), f);

    if (f->key) {
        /* decode -> encode -> decode */
        cJSON *j = workspace_status_to_json(&s);
        assert_non_null(j);
        struct workspace *ws = decode_status(j);
        void *h = holder(&ws->status, p, 0);
        if (!h)
            fail_msg("%s: not read back from %s", p->name, cJSON_PrintUnformatted(j));
        check_field(h, f, p->name);
        if (!workspace_status_equal(&s, &ws->status))
            fail_msg("%s: read back unequal", p->name);
        workspace_free(ws);
        cJSON_Delete(j);

        /* equality notices the field */
        if (workspace_status_equal(&s, &unset))
            fail_msg("%s: a change is not noticed by workspace_status_equal()", p->name);
    }

    /* the copy is deep: the original is gone before the copy is read */
    struct workspace_status c;
    assert_int_equal(workspace_status_copy(&s, &c), 0);
    workspace_status_clear(&s);
    check_field(holder(&c, p, 0), f, p->name);
    workspace_status_clear(&c);
    workspace_status_clear(&unset);
}

static size_t walk(const struct status_field *t, struct path *p)
{
    size_t leaves = 0;
    assert_true(p->depth < sizeof(p->step) / sizeof(p->step[0]));
    size_t len = strlen(p->name);
    for (; t->kind != SF_END; t++) {
        p->step[p->depth++] = t;
        if (t->kind != SF_INLINE)
            snprintf(p->name + len, sizeof(p->name) - len, "%s%s", len ? "." : "",
                     t->key ? t->key : "(not encoded)");
        switch (t->kind) {
        case SF_OBJECT:
        case SF_BLOCK:
        case SF_INLINE:
        case SF_LIST:
        case SF_CONDITIONS:
            leaves += walk(t->sub, p);
            break;
        default:
            check_leaf(p);
            leaves++;
        }
        p->depth--;
        p->name[len] = '\0';
    }
    return leaves;
}

static void test_every_field(void **state)
{
    (void)state;
    struct path p = {0};
    size_t leaves = walk(workspace_status_fields, &p);
    /* the walk reaches into every object and list: as many leaves as the
     * tables hold, at least */
    assert_true(leaves >= 100);
}

/* A block nothing is set in is not kept: a decoded status points at the
 * one read-only empty block, and only a copy (made to be written) or
 * workspace_status_own() gives it one of its own. */
static void test_absent_blocks(void **state)
{
    (void)state;
    cJSON *j =
        cJSON_Parse("{\"state\":\"Paused\",\"snapshot\":{},\"activity\":{\"lastProbeAt\":null},"
                    "\"lastPause\":{\"requestedAt\":\"2027-01-01T00:00:00Z\"}}");
    assert_non_null(j);
    struct workspace *a = decode_status(j), *b = decode_status(j);
    cJSON_Delete(j);
    /* absent or empty: the same shared block in both */
    assert_ptr_equal(a->status.snapshot, b->status.snapshot);
    assert_ptr_equal(a->status.activity, b->status.activity);
    assert_ptr_equal(a->status.home, b->status.home);
    assert_ptr_equal(a->status.last_interruption, b->status.last_interruption);
    assert_ptr_equal(a->status.last_resume, b->status.last_resume);
    assert_null(a->status.snapshot->phase);
    /* set: each its own */
    assert_ptr_not_equal(a->status.last_pause, b->status.last_pause);
    assert_int_equal(a->status.last_pause->requested_ms, 1798761600000);

    struct workspace_status c;
    assert_int_equal(workspace_status_copy(&a->status, &c), 0);
    assert_ptr_not_equal(c.snapshot, a->status.snapshot);
    c.snapshot->attempts = 1; /* a copy may be written */
    assert_false(workspace_status_equal(&c, &a->status));
    workspace_status_clear(&c);
    assert_ptr_equal(c.snapshot, b->status.snapshot); /* cleared: empty again */

    assert_int_equal(workspace_status_own(&b->status), 0);
    assert_ptr_not_equal(b->status.snapshot, a->status.snapshot);
    b->status.home->lost_ms = 1;
    assert_false(workspace_status_equal(&a->status, &b->status));
    workspace_free(a);
    workspace_free(b);
}

/* ---- equality without JSON ---- */

#define VARIANTS 6

/* Gives the field its variant v (0: the zero) of values that encode alike
 * or not in the ways that matter: "" and NULL, times within one second,
 * -0.0 and 0, NaN, integers a double cannot tell apart. Returns 0 when the
 * kind has no variant v. */
static int set_variant(void *base, const struct status_field *f, int v)
{
    static const char *const strs[] = {NULL, "", "a", "b"};
    static const int64_t times[] = {0, 1798761600000, 1798761600400, 1798761601000, 999, 1};
    static const int64_t ints[] = {
        0, 1, 42, 9007199254740992, 9007199254740993, 100000000000000016};
    static const int smalls[] = {0, 1, 2, -1};
    const double doubles[] = {0.0, -0.0, NAN, 2.5, 2.5000000000000004, 1e300};
    switch (f->kind) {
    case SF_STR:
    case SF_TEXT:
        if (v >= 4)
            return 0;
        free(*AT(base, f->off, char *));
        *AT(base, f->off, char *) = strs[v] ? strdup(strs[v]) : NULL;
        return 1;
    case SF_TIME:
    case SF_TIME_MICRO:
        *AT(base, f->off, int64_t) = times[v];
        return 1;
    case SF_INT64:
        *AT(base, f->off, int64_t) = ints[v];
        return 1;
    case SF_INT:
    case SF_BOOL:
        if (v >= 4)
            return 0;
        *AT(base, f->off, int) = smalls[v];
        return 1;
    case SF_DOUBLE:
    case SF_FIGURE:
        *AT(base, f->off, double) = doubles[v];
        return 1;
    case SF_STATE:
        if (v >= 4)
            return 0;
        *AT(base, f->off, enum workspace_state) = (enum workspace_state)(v == 3   ? 99
                                                                         : v == 2 ? WS_STATE_RUNNING
                                                                                  : v);
        return 1;
    case SF_COND_STATUS:
        if (v >= 4)
            return 0;
        *AT(base, f->off, enum condition_status) = (enum condition_status)(v == 3 ? 7 : v);
        return 1;
    default:
        return 0;
    }
}

static char *encoded(const struct workspace_status *s)
{
    cJSON *j = workspace_status_to_json(s);
    assert_non_null(j);
    char *text = cJSON_PrintUnformatted(j);
    assert_non_null(text);
    cJSON_Delete(j);
    return text;
}

/* Every pair of variants of the field: equal exactly when the JSON is. */
static size_t check_pairs(const struct path *p)
{
    const struct status_field *f = p->step[p->depth - 1];
    size_t pairs = 0;
    for (int va = 0; va < VARIANTS; va++)
        for (int vb = 0; vb < VARIANTS; vb++) {
            struct workspace_status a, b;
            baseline(&a, p);
            baseline(&b, p);
            int ok = set_variant(holder(&a, p, 0), f, va) && set_variant(holder(&b, p, 0), f, vb);
            if (ok) {
                char *ja = encoded(&a), *jb = encoded(&b);
                int want = strcmp(ja, jb) == 0;
                if (workspace_status_equal(&a, &b) != want)
                    fail_msg("%s: variants %d and %d encode %s (%s, %s), equality says otherwise",
                             p->name, va, vb, want ? "alike" : "differently", ja, jb);
                free(ja);
                free(jb);
                pairs++;
            }
            workspace_status_clear(&a);
            workspace_status_clear(&b);
        }
    return pairs;
}

static size_t walk_pairs(const struct status_field *t, struct path *p)
{
    size_t pairs = 0;
    size_t len = strlen(p->name);
    for (; t->kind != SF_END; t++) {
        p->step[p->depth++] = t;
        if (t->kind != SF_INLINE)
            snprintf(p->name + len, sizeof(p->name) - len, "%s%s", len ? "." : "",
                     t->key ? t->key : "(not encoded)");
        if (t->kind == SF_OBJECT || t->kind == SF_BLOCK || t->kind == SF_INLINE ||
            t->kind == SF_LIST || t->kind == SF_CONDITIONS)
            pairs += walk_pairs(t->sub, p);
        else if (t->key)
            pairs += check_pairs(p);
        p->depth--;
        p->name[len] = '\0';
    }
    return pairs;
}

/* workspace_status_equal() compares field by field, without building the
 * JSON: it must say "equal" exactly when the two encode the same. */
static void test_equal_as_encoded(void **state)
{
    (void)state;
    struct path p = {0};
    assert_true(walk_pairs(workspace_status_fields, &p) >= 1000);
}

static void add_cond(struct workspace_status *s, const char *type, enum condition_status cs)
{
    struct condition *c = realloc(s->conditions, (s->n_conditions + 1) * sizeof(*c));
    assert_non_null(c);
    s->conditions = c;
    c[s->n_conditions++] =
        (struct condition){.type = strdup(type), .status = cs, .reason = strdup("R")};
}

/* Conditions are written in a fixed order, whatever order they are kept in;
 * a list longer than fits on the stack is compared too. */
static void test_equal_conditions_in_any_order(void **state)
{
    (void)state;
    struct workspace_status a, b;
    workspace_status_init(&a);
    workspace_status_init(&b);
    const char *types[] = {"Zeta", "Ready", "Idle", "Valid", "Available"};
    for (size_t i = 0; i < 5; i++) {
        add_cond(&a, types[i], COND_TRUE);
        add_cond(&b, types[4 - i], COND_TRUE);
    }
    assert_true(workspace_status_equal(&a, &b));
    b.conditions[0].status = COND_FALSE;
    assert_false(workspace_status_equal(&a, &b));
    b.conditions[0].status = COND_TRUE;
    char type[16];
    for (int i = 0; i < 40; i++) {
        snprintf(type, sizeof(type), "T%02d", i);
        add_cond(&a, type, COND_TRUE);
        snprintf(type, sizeof(type), "T%02d", 39 - i);
        add_cond(&b, type, COND_TRUE);
    }
    assert_true(workspace_status_equal(&a, &b));
    free(b.conditions[44].reason);
    b.conditions[44].reason = strdup("Other");
    assert_false(workspace_status_equal(&a, &b));
    workspace_status_clear(&a);
    workspace_status_clear(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field),
        cmocka_unit_test(test_absent_blocks),
        cmocka_unit_test(test_equal_as_encoded),
        cmocka_unit_test(test_equal_conditions_in_any_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
