/*
 * log: one structured line per event, as key=value text or as JSON.
 *
 *   log_info("watch started", "resource", "pods", "rv", rv);
 *   log_warn("request failed", "code", LOG_INT(code));
 *
 * Fields are pairs of strings after the message. Values of keys that name a
 * secret (token, password, authorization, key data, certificate data) are
 * written as "[redacted]" whatever the caller passed, so a slip in a caller
 * cannot leak a credential. Lines are written with one fwrite() so lines from
 * one process never interleave.
 */
#ifndef HIBERNATOR_UTIL_LOG_H
#define HIBERNATOR_UTIL_LOG_H

#include <stdint.h>
#include <stdio.h>

enum log_level {
    LOG_LEVEL_DEBUG,
    LOG_LEVEL_INFO,
    LOG_LEVEL_WARN,
    LOG_LEVEL_ERROR,
};

enum log_format {
    LOG_FORMAT_TEXT,
    LOG_FORMAT_JSON,
};

/* Sets the lowest level written, the format and the stream (stderr by default). */
void log_setup(enum log_level min, enum log_format format, FILE *out);

/* Parses "debug", "info", "warn" or "error". Returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *ret_level);

/* Parses "text" or "json". Returns 0 or -EINVAL. */
int log_format_parse(const char *s, enum log_format *ret_format);

/* True when a line at this level would be written. */
int log_enabled(enum log_level level);

/* Writes one line. The variadic part is key, value string pairs ending in NULL;
 * a NULL value is written as an empty string. Use the macros below.
 * A line holds at most 64 KiB: a field that does not fit is left out whole
 * and the line ends with log_fields_dropped=<how many>; a message that does
 * not fit (or no memory) gives a line "log line dropped" with the error. */
void log_event(enum log_level level, const char *msg, ...);

#define log_debug(...) log_event(LOG_LEVEL_DEBUG, __VA_ARGS__, (const char *)NULL)
#define log_info(...) log_event(LOG_LEVEL_INFO, __VA_ARGS__, (const char *)NULL)
#define log_warn(...) log_event(LOG_LEVEL_WARN, __VA_ARGS__, (const char *)NULL)
#define log_error(...) log_event(LOG_LEVEL_ERROR, __VA_ARGS__, (const char *)NULL)

/* Formats a number into storage that lives until the end of the enclosing
 * full expression's block, for use as a field value. */
const char *log_int_str(int64_t v, char *storage, size_t size);
#define LOG_INT(v) log_int_str((int64_t)(v), (char[24]){0}, 24)

/* Returns a strerror-like text for a negative errno value. */
const char *log_errno_str(int negative_errno);

#endif
