/*
 * strpool: one copy of each text that many objects hold (a condition's
 * reason, a state's message, a namespace), counted by its holders.
 *
 * Ownership: the pool owns the texts it hands out; a holder gives each hold
 * back with strpool_put() and must not free or change the text. The pool
 * must outlive its holders; strpool_free() frees what is still held.
 */
#ifndef HIBERNATOR_UTIL_STRPOOL_H
#define HIBERNATOR_UTIL_STRPOOL_H

#include <stddef.h>

#include "util/must_use.h"
#include "util/strmap.h"

struct strpool {
    struct strmap texts; /* text -> struct pooled_text * */
    int let_go;          /* strpool_new()'s: its maker let go; freed with the last text */
};

/* Makes p empty; allocates nothing. */
void strpool_init(struct strpool *p);

/* A pool on the heap for holders that may outlive its maker (a cache whose
 * entries are freed when the loop closes): NULL when out of memory. The
 * maker ends its part with strpool_let_go(), never strpool_free(). */
struct strpool *strpool_new(void);

/* The maker of a strpool_new() pool lets go: it is freed now if no text is
 * held, else when the last hold is given back. */
void strpool_let_go(struct strpool *p);

/* A hold on the pool's copy of s: the same pointer for equal texts while
 * any hold remains. NULL when out of memory (or s NULL). */
MUST_USE const char *strpool_get(struct strpool *p, const char *s);

/* Gives back one hold on text, a pointer strpool_get() returned; the copy
 * goes with its last hold. NULL is ignored. */
void strpool_put(struct strpool *p, const char *text);

/* For a string that is either a hold from strpool_get() or the caller's
 * own malloc'd copy (one that could not be pooled): gives the hold back,
 * or frees the copy. NULL is ignored. */
void strpool_drop(struct strpool *p, char *s);

/* *field, the caller's own malloc'd string (or NULL), becomes a hold on the
 * pool's copy and the own copy is freed. Returns 0, or -ENOMEM with *field
 * left as it was (strpool_drop() tells the two apart later). */
MUST_USE int strpool_adopt(struct strpool *p, char **field);

/* How many distinct texts are held. */
size_t strpool_len(const struct strpool *p);

/* Frees every text, held or not; p is empty afterwards. */
void strpool_free(struct strpool *p);

#endif
