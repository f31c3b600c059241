/*
 * tz: IANA time zones read from TZif files (RFC 8536), for turning Unix time
 * into the wall clock of a named zone and back.
 *
 * Everything here is pure and holds no global state: the process TZ
 * variable, localtime_r() and tzset() are never used, so two zones can be in
 * use at once and nothing depends on the host's configuration. The zone data
 * comes from tzdata's compiled files (/usr/share/zoneinfo on Debian), read on
 * the event loop with tz_load() or handed in as bytes to tz_parse().
 *
 * Both versions of the format are read: version 1 files (32-bit data only)
 * and versions 2 to 4, of which the 64-bit block and the footer (a POSIX TZ
 * string with the RFC 8536 extensions) are used. The footer decides every
 * instant after the last transition, so "slim" files (transitions only until
 * the current rule takes over) and "fat" files (transitions listed up to 2037)
 * give the same answers. Files with leap-second records (the right/ zones)
 * are refused: the controller's clock does not count leap seconds.
 *
 * Ownership: a struct tz is immutable once made and may be shared freely;
 * whoever received it from tz_parse() or tz_load() frees it with tz_free().
 * tz_utc() is a static zone that tz_free() ignores.
 *
 * Time is Unix seconds (UTC, no leap seconds). Instants are accepted from
 * TZ_UNIX_MIN to TZ_UNIX_MAX (years 1 to 9999); outside, -ERANGE.
 */
#ifndef HIBERNATOR_UTIL_TZ_H
#define HIBERNATOR_UTIL_TZ_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define TZ_UNIX_MIN INT64_C(-62135596800) /* 0001-01-01T00:00:00Z */
#define TZ_UNIX_MAX INT64_C(253402300799) /* 9999-12-31T23:59:59Z */

/* Largest TZif input accepted (real files are under 4 KiB). */
#define TZ_FILE_MAX (256 * 1024)

/* Where Debian's tzdata package installs the compiled zones. */
#define TZ_DEFAULT_DIR "/usr/share/zoneinfo"

struct tz;

/* A wall-clock reading in some zone. */
struct tz_civil {
    int year;             /* 1..9999 (0 or 10000 within a day of the ends) */
    int month;            /* 1..12 */
    int mday;             /* 1..31 */
    int wday;             /* 0 = Sunday .. 6 = Saturday */
    int hour;             /* 0..23 */
    int minute;           /* 0..59 */
    int second;           /* 0..59 */
    int32_t utc_offset_s; /* local time = UTC + utc_offset_s */
};

/* The UTC zone, built in: no file is read for it. Never NULL; static
 * (tz_free() on it does nothing). */
struct tz *tz_utc(void);

/* Parses a TZif file. name is the zone's IANA name, copied into the zone
 * and used in error messages. Returns 0 with *ret_tz (free with tz_free()),
 * or a negative errno:
 *   -EINVAL  malformed or unsupported data,
 *   -EFBIG   len > TZ_FILE_MAX,
 *   -ENOMEM.
 * On -EINVAL and -EFBIG, *ret_err (when ret_err is not NULL) receives a
 * malloc'd message naming the zone and the fault, e.g.
 * "time zone \"Europe/Berlin\": truncated: 1200 bytes, the data needs 2298";
 * the caller frees it. It is NULL when even the message could not be
 * allocated. ret_err is not written on success, on -ENOMEM, or on -EINVAL
 * for a NULL name or ret_tz. */
int tz_parse(const char *name, const void *bytes, size_t len, struct tz **ret_tz, char **ret_err);

/* Releases a zone; NULL and tz_utc() are ignored. */
void tz_free(struct tz *z);

/* The name the zone was made with ("UTC" for tz_utc()); owned by the zone. */
const char *tz_name(const struct tz *z);

/* The zone's offset from UTC at unix_s, in seconds east of Greenwich.
 * Before the first transition the file's first local time type applies;
 * after the last, the footer's rule (or the last type when there is none).
 * Returns 0, -EINVAL (NULL argument) or -ERANGE. */
int tz_offset_at(const struct tz *z, int64_t unix_s, int32_t *ret_utc_offset_s);

/* The wall clock of the zone at unix_s. Same results as tz_offset_at(). */
int tz_civil_at(const struct tz *z, int64_t unix_s, struct tz_civil *ret_civil);

/* The instant at which the wall clock of the zone first reads
 * year-month-mday hour:minute:00.
 *
 *   - In a gap (clocks set forward, the reading never happens) it is the
 *     instant the clock jumps past it: 02:30 on a night Berlin goes from
 *     02:00 to 03:00 gives the instant of 03:00 CEST, 01:00 UTC.
 *   - In an overlap (clocks set back, the reading happens twice) it is the
 *     earlier of the two: 02:30 on the night Berlin goes from 03:00 back to
 *     02:00 gives 02:30 CEST, 00:30 UTC.
 *
 * Either way, "the first instant at which the clock shows this time or a
 * later one", which keeps a span built from two readings free of holes.
 * mday may lie outside the month and counts on from the 1st (0 is the last
 * day of the month before, 32 of January is the 1st of February), so
 * callers can add days without calendar arithmetic. hour is 0..23, minute
 * 0..59, month 1..12. Returns 0 with *ret_unix_s, -EINVAL (NULL argument,
 * field out of range) or -ERANGE (the date is outside years 1..9999). */
int tz_local_to_utc(const struct tz *z, int year, int month, int mday, int hour, int minute,
                    int64_t *ret_unix_s);

/* Whether name may be looked up under a zoneinfo directory, as Go's
 * time.LoadLocation decides: 1 to 255 characters of [A-Za-z0-9/_+-.], not
 * starting with '/', with no empty, "." or ".." component, so a name can
 * never reach outside the directory. Returns 1 or 0 (also for NULL). */
int tz_name_valid(const char *name);

/* status is 0 with tz set (the callee owns it: tz_free()), or a negative
 * errno with tz NULL and error a message naming the zone (owned by the
 * loader, valid during the call only; NULL only when memory ran out):
 *   -EINVAL  invalid name (nothing was read) or malformed file,
 *   -ENOENT  no such zone,
 *   -EFBIG   file larger than TZ_FILE_MAX,
 *   other    a read error or -ENOMEM. */
typedef void (*tz_loaded_cb)(void *data, int status, struct tz *tz, const char *error);

/* Loads zone name from <dir>/<name> (dir NULL: TZ_DEFAULT_DIR) with
 * util/file_read.h (uv_fs_* on libuv's thread pool), never blocking the
 * loop. "UTC" and "Etc/UTC" give tz_utc() without a read; a name
 * tz_name_valid() refuses fails without touching the file system. Returns 0, after which cb runs
 * exactly once, always from the loop and never from within tz_load(); or -EINVAL (NULL loop or cb)
 * or -ENOMEM, and cb never runs. The loop must keep running until cb has run; there is no
 * cancellation. name and dir are copied. */
int tz_load(uv_loop_t *loop, const char *dir, const char *name, tz_loaded_cb cb, void *data);

#endif
