/*
 * buf: a growable byte buffer with a hard maximum.
 *
 * Every buffer fed from the network is a buf with a limit: appending past
 * the limit fails with -ENOBUFS and leaves the buffer as it was, so a
 * misbehaving peer cannot make the process grow without bound.
 *
 * Ownership: the caller owns the struct; buf_free() releases the data.
 * data is always NUL-terminated when len > 0 (one spare byte is kept).
 */
#ifndef HIBERNATOR_UTIL_BUF_H
#define HIBERNATOR_UTIL_BUF_H

#include <stddef.h>

#include "util/must_use.h"

struct buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max; /* most bytes the buffer may hold, not counting the NUL */
};

/* Prepares an empty buffer that will never hold more than max bytes. */
void buf_init(struct buf *b, size_t max);

/* Appends n bytes. Returns 0, -ENOBUFS past the limit, or -ENOMEM. */
MUST_USE int buf_append(struct buf *b, const void *p, size_t n);

/* Appends a NUL-terminated string. Same results as buf_append(). */
MUST_USE int buf_append_str(struct buf *b, const char *s);

/* Appends printf-style text. Same results as buf_append(), -EINVAL on a bad format. */
MUST_USE int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Drops the first n bytes, keeping the rest (n > len drops all). */
void buf_consume(struct buf *b, size_t n);

/* Appends s percent-encoded: every byte outside RFC 3986's unreserved
 * characters (letters, digits, "-._~") as %XX, so that a name or a query
 * value from outside can never change a URL's path or query. Same results
 * as buf_append() (the buffer may hold part of s on failure). */
MUST_USE int buf_append_escaped(struct buf *b, const char *s);

/* Drops everything after the first n bytes (n >= len changes nothing). */
void buf_truncate(struct buf *b, size_t n);

/* Empties the buffer but keeps its memory for reuse. */
void buf_reset(struct buf *b);

/* Returns the contents as a string ("" when empty); valid until the next change. */
const char *buf_str(const struct buf *b);

/* Hands the data to the caller (free() it) and leaves the buffer empty.
 * Returns a NUL-terminated string ("" allocated when empty), NULL on ENOMEM. */
MUST_USE char *buf_steal(struct buf *b);

/* Releases the memory; the buffer may be reused after buf_init(). */
void buf_free(struct buf *b);

#endif
