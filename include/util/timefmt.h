/*
 * timefmt: RFC 3339 timestamps as the Kubernetes API writes them.
 *
 * Time is carried as milliseconds since the Unix epoch (UTC), the unit the
 * rest of the controller uses. metav1.Time is written with whole seconds
 * ("2026-01-02T03:04:05Z"), metav1.MicroTime (Lease renewTime and
 * acquireTime) with six fractional digits.
 *
 * Pure functions: no clock reads, no time zone database, no allocation.
 */
#ifndef HIBERNATOR_UTIL_TIMEFMT_H
#define HIBERNATOR_UTIL_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

/* Buffer sizes that always fit the output, including the NUL. */
#define TIMEFMT_RFC3339_SIZE 21       /* 2026-01-02T03:04:05Z */
#define TIMEFMT_RFC3339_MICRO_SIZE 28 /* 2026-01-02T03:04:05.123456Z */

/* Parses "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm)" ('t' and 'z' may be
 * lower case). Fractions finer than a millisecond are truncated. Leap seconds
 * (":60") are refused, as Go's time package refuses them. Returns 0 and
 * writes *ret_unix_ms, or -EINVAL. */
int timefmt_parse_rfc3339(const char *s, int64_t *ret_unix_ms);

/* Writes "2026-01-02T03:04:05Z" (UTC, sub-second part dropped, rounding
 * towards the past). Returns 0, -ENOBUFS when size is too small, or -ERANGE
 * for a year outside 0000..9999. */
int timefmt_format_rfc3339(int64_t unix_ms, char *out, size_t size);

/* The same for messages: always writes a string, "?" for a year out of range. */
void timefmt_rfc3339_text(int64_t unix_ms, char out[TIMEFMT_RFC3339_SIZE]);

/* Writes "2026-01-02T03:04:05.123000Z" (MicroTime). Same results as above. */
int timefmt_format_rfc3339_micro(int64_t unix_ms, char *out, size_t size);

/* Calendar arithmetic on the proleptic Gregorian calendar, exact for every
 * year: timefmt_days_from_civil() gives the days since 1970-01-01 of a date
 * (m 1..12, d 1..31, not checked), timefmt_civil_from_days() the date of a
 * day in *ret_y, *ret_m (1..12) and *ret_d (1..31). */
int64_t timefmt_days_from_civil(int64_t y, unsigned m, unsigned d);
void timefmt_civil_from_days(int64_t days, int64_t *ret_y, unsigned *ret_m, unsigned *ret_d);

#endif
