/*
 * timetext: the times and durations a user types on the command line and
 * reads in the plugin's output.
 *
 * Typed: RFC 3339 times ("2026-01-02T03:04:05Z", any offset), dates
 * ("2026-01-02", midnight UTC), "now", and Go/Kubernetes durations ("90s",
 * "1h30m", "7d") counted from now: forwards for a deadline (--until), backwards
 * for a point in the past (--from, --to).
 *
 * Read: ages as kubectl prints them ("45s", "5m30s", "3h", "2d4h"), and
 * seconds with one decimal ("12.4s").
 *
 * Pure functions: "now" is an argument, nothing allocates.
 */
#ifndef HIBERNATOR_CLI_TIMETEXT_H
#define HIBERNATOR_CLI_TIMETEXT_H

#include <stddef.h>
#include <stdint.h>

/* Big enough for every string written below, NUL included. */
#define TIMETEXT_SIZE 32

/* A duration ("30s", "1h30m", "2d"): 0 or -EINVAL. */
int timetext_parse_duration(const char *s, int64_t *ret_ms);

/* A deadline: a time, a date, or a duration from now. 0 or -EINVAL. */
int timetext_parse_until(const char *s, int64_t now_ms, int64_t *ret_ms);

/* A point in the past: a time, a date, "now", or a duration before now.
 * 0 or -EINVAL. */
int timetext_parse_point(const char *s, int64_t now_ms, int64_t *ret_ms);

/* kubectl's age of a span (its HumanDuration): "0s" for a span a little
 * below zero (clocks disagree), "<invalid>" further below. */
void timetext_age(int64_t span_ms, char out[TIMETEXT_SIZE]);

/* The age of a time at now, or "-" when the time is unset (0). */
void timetext_age_at(int64_t when_ms, int64_t now_ms, char out[TIMETEXT_SIZE]);

/* Seconds with one decimal ("12.4s"); past ten minutes as an age ("12m"). */
void timetext_seconds(double seconds, char out[TIMETEXT_SIZE]);

/* "2026-01-02T03:04:05Z", or "-" when unset (0). */
void timetext_time(int64_t when_ms, char out[TIMETEXT_SIZE]);

#endif
