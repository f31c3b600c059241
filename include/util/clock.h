/*
 * clock: the wall clock in Unix milliseconds, the one clock behind every
 * "now" that may be injected in tests (struct options' now_ms callbacks).
 */
#ifndef HIBERNATOR_UTIL_CLOCK_H
#define HIBERNATOR_UTIL_CLOCK_H

#include <stdint.h>

/* CLOCK_REALTIME in ms. */
int64_t clock_unix_ms(void);

/* The same, in the shape of a now_ms(void *data) callback; data is unused. */
int64_t clock_unix_ms_cb(void *data);

#endif
