/* log: a line whose fields do not all fit says so instead of losing them
 * silently, and a message that does not fit is replaced by a line that
 * says it was dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/log.h"

static char *written(FILE *f)
{
    long n = ftell(f);
    assert_true(n >= 0);
    char *s = calloc(1, (size_t)n + 1);
    assert_non_null(s);
    rewind(f);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    return s;
}

static char *log_one(enum log_format format, const char *msg, const char *big)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    log_setup(LOG_LEVEL_INFO, format, f);
    log_info(msg, "small", "a", "big", big, "after", "b");
    char *s = written(f);
    log_setup(LOG_LEVEL_INFO, LOG_FORMAT_TEXT, NULL);
    fclose(f);
    return s;
}

static char *big_text(size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, 'x', n);
    s[n] = '\0';
    return s;
}

static void test_line_fits(void **state)
{
    (void)state;
    char *s = log_one(LOG_FORMAT_TEXT, "hello", "y");
    assert_non_null(strstr(s, "msg=\"hello\" small=a big=y after=b\n"));
    assert_null(strstr(s, "log_fields_dropped"));
    free(s);
}

static void test_field_too_long_is_counted(void **state)
{
    (void)state;
    char *big = big_text(100 * 1024);
    char *s = log_one(LOG_FORMAT_TEXT, "hello", big);
    assert_non_null(strstr(s, "msg=\"hello\" small=a after=b log_fields_dropped=1\n"));
    assert_null(strstr(s, "xxxx"));
    free(s);
    s = log_one(LOG_FORMAT_JSON, "hello", big);
    assert_non_null(strstr(s, "\"small\":\"a\",\"after\":\"b\",\"log_fields_dropped\":\"1\"}\n"));
    free(s);
    free(big);
}

static void test_message_too_long_is_replaced(void **state)
{
    (void)state;
    char *big = big_text(100 * 1024);
    char *s = log_one(LOG_FORMAT_TEXT, big, "y");
    assert_non_null(strstr(s, "level=info msg=\"log line dropped\" error="));
    assert_int_equal(strchr(s, '\n')[1], '\0'); /* one line */
    free(s);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_fits),
        cmocka_unit_test(test_field_too_long_is_counted),
        cmocka_unit_test(test_message_too_long_is_replaced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
