/*
 * pause_window: when a workspace may be paused automatically, as windows of
 * local time in a zone ("only outside 08:00-19:00 in Europe/Berlin").
 *
 * A window is a set of weekdays and two wall-clock times, start and end:
 *
 *   - start < end: that day from start until end (08:00-19:00).
 *   - start > end: the window wraps over midnight and ends the next day
 *     (19:00-08:00 is from 19:00 until 08:00 the following morning).
 *   - start == end: 24 hours, from start until start the next day
 *     (00:00-00:00 is the whole day).
 *
 * The days name the day a window STARTS on (empty: every day). So
 * {Fri,Sat,Sun} 19:00-08:00 is three nights (Friday night into Saturday
 * morning, Saturday night, Sunday night into Monday 08:00), not the whole
 * weekend: a single window never lasts more than a day. A span over several
 * days is written as windows that meet, which merge into one. "From Friday
 * 19:00 to Monday 08:00" is
 *     {Fri,Sat,Sun} 19:00-08:00  +  {Sat,Sun} 08:00-19:00
 * and "outside office hours, Monday to Friday 08:00-19:00" is
 *     {} 19:00-08:00  +  {Sat,Sun} 08:00-19:00.
 *
 * A window opens at the first instant the zone's clock shows start and
 * closes at the first instant it shows end (tz_local_to_utc()): a time the
 * clock skips (spring forward) counts from the moment it jumps past it, and
 * a time it shows twice (fall back) counts from its first showing. A window
 * is therefore one unbroken span of real time, as long as the clock says:
 * 19:00-08:00 lasts 13 hours, 12 on the night clocks go forward and 14 on
 * the night they go back. A window whose start and end both fall in the
 * skipped hour is empty that night.
 *
 * Automatic pausing is allowed when now lies inside any window of the
 * schedule; with no windows it is always allowed.
 *
 * Pure functions: no clock reads, no allocation except error messages.
 */
#ifndef HIBERNATOR_WORKSPACE_PAUSE_WINDOW_H
#define HIBERNATOR_WORKSPACE_PAUSE_WINDOW_H

#include <stddef.h>
#include <stdint.h>

struct tz;

#define PAUSE_SCHEDULE_MAX_WINDOWS 16

struct pause_window {
    unsigned days;    /* bit d: starts on weekday d (0 = Sunday .. 6 = Saturday); 0: every day */
    int start_minute; /* minutes after local midnight, 0..1439 */
    int end_minute;   /* 0..1439; < start: the next day; == start: 24 hours later */
};

struct pause_schedule {
    struct pause_window windows[PAUSE_SCHEDULE_MAX_WINDOWS];
    size_t n_windows; /* 0: pausing is allowed at any time */
};

/* Parses "HH:MM" (exactly two digits each, 00:00 to 23:59) into minutes
 * after midnight. Returns 0, or -EINVAL with *ret_err (when ret_err is not
 * NULL; malloc'd, the caller frees; NULL if that allocation failed) quoting
 * the text, e.g. "\"24:00\" is not a time of day HH:MM (00:00 to 23:59)". */
int pause_window_parse_time(const char *s, int *ret_minute_of_day, char **ret_err);

/* Parses a weekday as the API spells it: "Sun", "Mon", "Tue", "Wed", "Thu",
 * "Fri", "Sat", case-sensitive like the CRD's enum (the API server has
 * already refused anything else, so "mon" or "Monday" here is an error, not
 * a second spelling). *ret_wday is 0 (Sunday) .. 6 (Saturday), the bit of
 * pause_window.days. Errors as pause_window_parse_time(). */
int pause_window_parse_day(const char *s, int *ret_wday, char **ret_err);

/* Whether automatic pausing is allowed at now_ms (Unix milliseconds) under
 * schedule s in zone z, and the first instant after now_ms at which that
 * answer changes: *ret_allowed is 1 or 0, *ret_change_ms a Unix ms instant
 * > now_ms, or INT64_MAX when the answer never changes (nothing changes in
 * the next 8 days, and schedules repeat weekly). Change instants are exact
 * to the second across UT offset changes. Returns 0, -EINVAL (NULL
 * argument, more than PAUSE_SCHEDULE_MAX_WINDOWS windows, a minute outside
 * 0..1439, days bits above Saturday) or -ERANGE (now_ms within 10 days of
 * the ends of tz's range). */
int pause_schedule_next(const struct pause_schedule *s, const struct tz *z, int64_t now_ms,
                        int *ret_allowed, int64_t *ret_change_ms);

/* The first instant after after_ms (Unix ms) at which the clock of zone z
 * shows minute (after local midnight, 0..1439) on one of days (bits as
 * pause_window.days; 0: every day), read the way a window's start is (a
 * time the clock skips counts from the moment it jumps past it). Returns 0
 * with *ret_ms, -EINVAL (NULL argument, a minute or days bit out of range)
 * or -ERANGE (after_ms within 10 days of the ends of tz's range). */
int local_time_next(unsigned days, int minute, const struct tz *z, int64_t after_ms,
                    int64_t *ret_ms);

#endif
