#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/buf.h"

static enum log_level log_min = LOG_LEVEL_INFO;
static enum log_format log_fmt = LOG_FORMAT_TEXT;
static FILE *log_out;

/* Keys whose values are never written. Matched case-insensitively as substrings. */
static const char *const secret_keys[] = {
    "token", "password", "authorization", "secret", "key-data", "key_data", "bearer",
};

void log_setup(enum log_level min, enum log_format format, FILE *out)
{
    log_min = min;
    log_fmt = format;
    log_out = out;
}

int log_level_parse(const char *s, enum log_level *ret_level)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(s, names[i]) == 0) {
            *ret_level = (enum log_level)i;
            return 0;
        }
    }
    return -EINVAL;
}

int log_format_parse(const char *s, enum log_format *ret_format)
{
    if (strcmp(s, "text") == 0)
        *ret_format = LOG_FORMAT_TEXT;
    else if (strcmp(s, "json") == 0)
        *ret_format = LOG_FORMAT_JSON;
    else
        return -EINVAL;
    return 0;
}

int log_enabled(enum log_level level)
{
    return level >= log_min;
}

const char *log_int_str(int64_t v, char *storage, size_t size)
{
    snprintf(storage, size, "%lld", (long long)v);
    return storage;
}

const char *log_errno_str(int negative_errno)
{
    return strerror(negative_errno < 0 ? -negative_errno : negative_errno);
}

static int is_secret_key(const char *key)
{
    for (size_t i = 0; i < sizeof(secret_keys) / sizeof(secret_keys[0]); i++) {
        size_t n = strlen(secret_keys[i]);
        for (const char *p = key; *p; p++)
            if (strncasecmp(p, secret_keys[i], n) == 0)
                return 1;
    }
    return 0;
}

static int put_json_string(struct buf *b, const char *s)
{
    int e = buf_append_str(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p && e == 0; p++) {
        switch (*p) {
        case '"':
            e = buf_append_str(b, "\\\"");
            break;
        case '\\':
            e = buf_append_str(b, "\\\\");
            break;
        case '\n':
            e = buf_append_str(b, "\\n");
            break;
        case '\t':
            e = buf_append_str(b, "\\t");
            break;
        default:
            if (*p < 0x20)
                e = buf_printf(b, "\\u%04x", *p);
            else
                e = buf_append(b, p, 1);
        }
    }
    return e ? e : buf_append_str(b, "\"");
}

/* Text values are bare unless they hold a space, quote, '=' or control byte. */
static int put_text_value(struct buf *b, const char *s)
{
    int plain = *s != '\0';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\')
            plain = 0;
    if (plain)
        return buf_append_str(b, s);
    return put_json_string(b, s);
}

static int put_field(struct buf *b, const char *key, const char *value)
{
    int e;
    if (log_fmt == LOG_FORMAT_JSON) {
        if ((e = buf_append_str(b, ",")) == 0 && (e = put_json_string(b, key)) == 0 &&
            (e = buf_append_str(b, ":")) == 0)
            e = put_json_string(b, value);
    } else if ((e = buf_printf(b, " %s=", key)) == 0) {
        e = put_text_value(b, value);
    }
    return e;
}

/* The line's head: time, level and message. */
static int put_head(struct buf *b, const char *when, const char *level, const char *msg)
{
    int e;
    if (log_fmt == LOG_FORMAT_JSON) {
        if ((e = buf_append_str(b, "{\"ts\":")) == 0 && (e = put_json_string(b, when)) == 0 &&
            (e = buf_append_str(b, ",\"level\":")) == 0 && (e = put_json_string(b, level)) == 0 &&
            (e = buf_append_str(b, ",\"msg\":")) == 0)
            e = put_json_string(b, msg);
    } else if ((e = buf_printf(b, "ts=%s level=%s msg=", when, level)) == 0) {
        e = put_json_string(b, msg);
    }
    return e;
}

/* The most a line may take, and the room kept back so that a line whose
 * fields did not all fit can still say how many it dropped. */
#define LOG_LINE_MAX (64 * 1024)
#define LOG_TAIL_ROOM 128

/* A line whose head did not fit (out of memory, or a message over the
 * limit) is replaced by one that says so, with its level and time. */
static void put_dropped(struct buf *b, const char *when, const char *level, int e)
{
    buf_reset(b);
    b->max = LOG_LINE_MAX;
    if (put_head(b, when, level, "log line dropped") < 0 ||
        put_field(b, "error", log_errno_str(e)) < 0)
        buf_reset(b); /* not even that fits: nothing is written */
}

void log_event(enum log_level level, const char *msg, ...)
{
    static const char *const level_names[] = {"debug", "info", "warn", "error"};
    if (level < log_min)
        return;

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    size_t n = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof(when) - n, ".%03ldZ", ts.tv_nsec / 1000000);

    struct buf line;
    buf_init(&line, LOG_LINE_MAX - LOG_TAIL_ROOM);
    int e = put_head(&line, when, level_names[level], msg);
    int dropped = 0;

    va_list ap;
    va_start(ap, msg);
    for (;;) {
        const char *key = va_arg(ap, const char *);
        if (!key)
            break;
        const char *value = va_arg(ap, const char *);
        size_t before = line.len;
        if (e == 0 &&
            put_field(&line, key, is_secret_key(key) ? "[redacted]" : (value ? value : "")) < 0) {
            buf_truncate(&line, before); /* a field that does not fit is left out whole */
            dropped++;
        }
    }
    va_end(ap);

    if (e < 0)
        put_dropped(&line, when, level_names[level], e);
    line.max = LOG_LINE_MAX;
    if (line.len > 0 && dropped > 0 && put_field(&line, "log_fields_dropped", LOG_INT(dropped)) < 0)
        buf_reset(&line);
    if (line.len > 0 && buf_append_str(&line, log_fmt == LOG_FORMAT_JSON ? "}\n" : "\n") < 0)
        buf_reset(&line);
    FILE *out = log_out ? log_out : stderr;
    fwrite(buf_str(&line), 1, line.len, out);
    fflush(out);
    buf_free(&line);
}
