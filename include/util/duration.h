/*
 * duration: Go/Kubernetes style durations ("15s", "1m30s", "500ms", "2h").
 * Pure functions, no allocation.
 */
#ifndef HIBERNATOR_UTIL_DURATION_H
#define HIBERNATOR_UTIL_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* A duration has at most this many parts, each number at most this many
 * digits: the CRDs' pattern says the same ('^([0-9]{1,5}(ms|s|m|h|d)){1,5}$'),
 * so what the API server accepts the controller can read, and a time made
 * by adding one to now (at most 5 x 99999 days, about 1,369 years) is
 * still a four-digit year that RFC 3339 can write. */
#define DURATION_MAX_PARTS 5
#define DURATION_MAX_DIGITS 5

/* Parses a non-negative duration made of <number><unit> parts with units
 * ms, s, m, h (and d for days), within the limits above. "0" alone is
 * allowed. Returns 0 or -EINVAL. */
int duration_parse_ms(const char *s, int64_t *ret_ms);

/* Formats ms as the shortest exact form ("1h30m", "250ms", "0s"). */
int duration_format_ms(int64_t ms, char *out, size_t size);

#endif
