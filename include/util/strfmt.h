/*
 * strfmt: a formatted string in memory of its own, for error sentences
 * handed to a caller.
 *
 * Ownership: the strings are malloc'd, the caller's.
 */
#ifndef HIBERNATOR_UTIL_STRFMT_H
#define HIBERNATOR_UTIL_STRFMT_H

/* The formatted text, or NULL out of memory. */
char *strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* *ret = strfmt(fmt, ...) when ret is not NULL (a caller that wants no
 * sentence passes NULL); *ret is NULL out of memory. */
void strfmt_to(char **ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
