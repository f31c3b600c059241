/* util/text: what the callers rely on when they put outside text in a
 * message (text_excerpt: util/tz.c, workspace/pause_window.c, the activity
 * probes) or on a terminal (text_sanitize: cli/table.c, workspace messages,
 * kube/api_error.c through text_control_len). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/text.h"

/* text_excerpt of s (as a C string) with the full-size buffer for max. */
static const char *excerpt(const char *s, size_t max)
{
    static char out[256 + 4];
    assert_true(max <= 256);
    size_t n = text_excerpt(s, strlen(s), max, out, TEXT_EXCERPT_SIZE(max));
    assert_int_equal(n, strlen(out));
    return out;
}

static void test_excerpt_keeps_printable_ascii(void **state)
{
    (void)state;
    assert_string_equal(excerpt("Europe/Berlin", 64), "Europe/Berlin");
    assert_string_equal(excerpt("25:00", 32), "25:00");
    assert_string_equal(excerpt(" ~!#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}", 64),
                        " ~!#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}");
    assert_string_equal(excerpt("", 32), "");
}

/* Nothing inside can end the quotes around it, read as an escape, break the
 * line or reach a terminal as a control. */
static void test_excerpt_replaces_the_rest(void **state)
{
    (void)state;
    assert_string_equal(excerpt("a\"b", 32), "a?b");
    assert_string_equal(excerpt("12:0\\", 32), "12:0?");
    assert_string_equal(excerpt("a\nb\rc\td\x1b[31me\x7f", 32), "a?b?c?d?[31me?");
    /* Each byte of a UTF-8 character, C1 controls and bidi overrides too. */
    assert_string_equal(excerpt("Berl\xc3\xadn", 32), "Berl??n");
    assert_string_equal(excerpt("\xc2\x9b"
                                "x\xe2\x80\xae"
                                "y\x9b\xff",
                                32),
                        "??x???y??");
}

/* len counts, not a NUL: a file's footer can hold one. */
static void test_excerpt_reads_len_bytes(void **state)
{
    (void)state;
    char out[TEXT_EXCERPT_SIZE(64)];
    assert_int_equal(text_excerpt("a\0b", 3, 64, out, sizeof(out)), 3);
    assert_string_equal(out, "a?b");
    assert_int_equal(text_excerpt("abc", 2, 64, out, sizeof(out)), 2);
    assert_string_equal(out, "ab");
}

static void test_excerpt_cuts_at_max_and_marks_it(void **state)
{
    (void)state;
    char s[200];
    memset(s, 'x', sizeof(s));
    for (size_t max = 0; max <= 128; max += 32) {
        char want[200];
        s[max] = '\0'; /* exactly max bytes: kept whole, no mark */
        assert_string_equal(excerpt(s, max), s);
        s[max] = 'x';
        s[max + 1] = '\0'; /* one more: max bytes and the mark */
        memset(want, 'x', max);
        strcpy(want + max, "...");
        assert_string_equal(excerpt(s, max), want);
        s[max + 1] = 'x';
    }
    char out[8];
    assert_int_equal(text_excerpt("abcdefghij", 10, 4, out, sizeof(out)), 7);
    assert_string_equal(out, "abcd...");
}

/* A buffer smaller than TEXT_EXCERPT_SIZE(max) never overflows and still
 * shows that the text was cut. */
static void test_excerpt_small_buffer(void **state)
{
    (void)state;
    char out[16];
    memset(out, 'Z', sizeof(out));
    assert_int_equal(text_excerpt("abcdefghij", 10, 100, out, 8), 7);
    assert_string_equal(out, "abcd...");
    assert_int_equal(out[8], 'Z');
    assert_int_equal(text_excerpt("abcdefg", 7, 100, out, 8), 7);
    assert_string_equal(out, "abcdefg");
    assert_int_equal(text_excerpt("abcdefghij", 10, 100, out, 4), 3);
    assert_string_equal(out, "...");
    assert_int_equal(text_excerpt("abcdefghij", 10, 100, out, 3), 0);
    assert_string_equal(out, "");
    out[0] = 'Z';
    assert_int_equal(text_excerpt("ab", 2, 100, out, 0), 0);
    assert_int_equal(out[0], 'Z');
}

static void test_control_len(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t len;
    } cases[] = {
        {"\n", 1},
        {"\x01", 1},
        {"\x1b", 1},
        {"\x7f", 1},
        {"\xc2\x80", 2},
        {"\xc2\x9b", 2},
        {"\xc2\x9f", 2},
        {"\xe2\x80\xa8", 3},
        {"\xe2\x80\xa9", 3},
        {"\xe2\x80\xaa", 3},
        {"\xe2\x80\xae", 3},
        {"\xe2\x81\xa6", 3},
        {"\xe2\x81\xa9", 3},
        {" ", 0},
        {"a", 0},
        {"~", 0},
        {"\x9b", 0},
        {"\xc2\xa0", 0},
        {"\xc3\xbc", 0},
        {"\xe2\x80\xa7", 0},
        {"\xe2\x80\xaf", 0},
        {"\xe2\x81\xa5", 0},
        {"\xe2\x81\xaa", 0},
        {"\xff", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (text_control_len(cases[i].s, strlen(cases[i].s)) != cases[i].len)
            fail_msg("case %zu: %zu, want %zu", i, text_control_len(cases[i].s, strlen(cases[i].s)),
                     cases[i].len);
    /* Never reads past avail. */
    assert_int_equal(text_control_len("\xc2\x9b", 1), 0);
    assert_int_equal(text_control_len("\xe2\x80\xae", 2), 0);
    assert_int_equal(text_control_len("\n", 0), 0);
}

/* Every byte of a control character becomes repl, the rest (UTF-8
 * included, a lone byte too) is kept: the length never changes. */
static void test_sanitize(void **state)
{
    (void)state;
    char s[] = "a\nb\tc\x1b[31md\x7f"
               "e\xc2\x9b"
               "f\x9b"
               "g\xe2\x80\xae"
               "h\xe2\x81\xa6"
               "i\xe2\x80\xa8"
               "\xc3\xbcnicode\xc2\xa0";
    text_sanitize(s, strlen(s), ' ');
    assert_string_equal(s, "a b c [31md e  f\x9b"
                           "g   h   i   \xc3\xbcnicode\xc2\xa0");

    char t[] = "a\nb\xc2\x9b";
    text_sanitize(t, 3, '?'); /* only the first n bytes; a character cut there is not one */
    assert_string_equal(t, "a?b\xc2\x9b");
    text_sanitize(t, 4, '?');
    assert_string_equal(t, "a?b\xc2\x9b");
    text_sanitize(t, 5, '?');
    assert_string_equal(t, "a?b??");
}

static void test_printable_copy(void **state)
{
    (void)state;
    char *q = text_printable_copy("ab\ncd", 4, true, '?');
    assert_non_null(q);
    assert_string_equal(q, "ab?c...");
    free(q);
    q = text_printable_copy("x\xe2\x80\xaey", 5, false, ' ');
    assert_non_null(q);
    assert_string_equal(q, "x   y");
    free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_excerpt_keeps_printable_ascii),
        cmocka_unit_test(test_excerpt_replaces_the_rest),
        cmocka_unit_test(test_excerpt_reads_len_bytes),
        cmocka_unit_test(test_excerpt_cuts_at_max_and_marks_it),
        cmocka_unit_test(test_excerpt_small_buffer),
        cmocka_unit_test(test_control_len),
        cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_printable_copy),
    };
    return cmocka_run_group_tests_name("text", tests, NULL, NULL);
}
