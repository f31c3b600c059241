/*
 * duration: Go/Kubernetes style durations ("15s", "1m30s", "500ms", "2h").
 * Pure functions, no allocation.
 */
#ifndef HIBERNATOR_UTIL_DURATION_H
#define HIBERNATOR_UTIL_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* Parses a non-negative duration made of <number><unit> parts with units
 * ms, s, m, h (and d for days). "0" alone is allowed. Returns 0 or -EINVAL
 * (also on overflow). */
int duration_parse_ms(const char *s, int64_t *ret_ms);

/* Formats ms as the shortest exact form ("1h30m", "250ms", "0s"). */
int duration_format_ms(int64_t ms, char *out, size_t size);

#endif
