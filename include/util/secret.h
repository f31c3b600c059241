/*
 * secret: freeing memory that held a credential (token, key, certificate)
 * so the bytes do not linger in the heap. All functions accept NULL.
 */
#ifndef HIBERNATOR_UTIL_SECRET_H
#define HIBERNATOR_UTIL_SECRET_H

#include <stddef.h>

#include "util/buf.h"

/* Wipes len bytes at p, then frees p. */
void secret_free(void *p, size_t len);

/* Wipes the string and its terminator, then frees it. */
void secret_free_str(char *s);

/* Wipes the buffer's whole allocation, then frees it (as buf_free()). */
void secret_buf_free(struct buf *b);

#endif
