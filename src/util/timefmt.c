#include "util/timefmt.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#define MS_PER_SECOND INT64_C(1000)
#define MS_PER_DAY (INT64_C(86400) * MS_PER_SECOND)

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil): exact for every year, no time zone, no libc. */
int64_t timefmt_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void timefmt_civil_from_days(int64_t z, int64_t *ret_y, unsigned *ret_m, unsigned *ret_d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned d = doy - (153 * mp + 2) / 5 + 1;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    *ret_y = (int64_t)yoe + era * 400 + (m <= 2);
    *ret_m = m;
    *ret_d = d;
}

static bool is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned days_in_month(int64_t y, unsigned m)
{
    static const unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Reads exactly n decimal digits. */
static bool digits(const char **p, unsigned n, unsigned *ret)
{
    unsigned v = 0;
    for (unsigned i = 0; i < n; i++) {
        char ch = (*p)[i];
        if (ch < '0' || ch > '9')
            return false;
        v = v * 10 + (unsigned)(ch - '0');
    }
    *p += n;
    *ret = v;
    return true;
}

static bool expect(const char **p, char a, char b)
{
    if (**p != a && **p != b)
        return false;
    (*p)++;
    return true;
}

int timefmt_parse_rfc3339(const char *s, int64_t *ret_unix_ms)
{
    unsigned year, month, day, hour, minute, second;
    const char *p = s;

    if (!s)
        return -EINVAL;
    if (!digits(&p, 4, &year) || !expect(&p, '-', '-') || !digits(&p, 2, &month) ||
        !expect(&p, '-', '-') || !digits(&p, 2, &day) || !expect(&p, 'T', 't') ||
        !digits(&p, 2, &hour) || !expect(&p, ':', ':') || !digits(&p, 2, &minute) ||
        !expect(&p, ':', ':') || !digits(&p, 2, &second))
        return -EINVAL;
    if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 ||
        minute > 59 || second > 59)
        return -EINVAL;

    unsigned ms = 0;
    if (*p == '.') {
        p++;
        unsigned n = 0;
        for (; *p >= '0' && *p <= '9'; p++, n++)
            if (n < 3)
                ms = ms * 10 + (unsigned)(*p - '0');
        if (n == 0)
            return -EINVAL;
        for (; n < 3; n++)
            ms *= 10;
    }

    int64_t offset_ms = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        unsigned oh, om;
        p++;
        if (!digits(&p, 2, &oh) || !expect(&p, ':', ':') || !digits(&p, 2, &om) || oh > 23 ||
            om > 59)
            return -EINVAL;
        offset_ms = sign * ((int64_t)oh * 3600 + (int64_t)om * 60) * MS_PER_SECOND;
    } else {
        return -EINVAL;
    }
    if (*p != '\0')
        return -EINVAL;

    int64_t t = timefmt_days_from_civil(year, month, day) * MS_PER_DAY +
                ((int64_t)hour * 3600 + (int64_t)minute * 60 + second) * MS_PER_SECOND + ms;
    *ret_unix_ms = t - offset_ms;
    return 0;
}

static int format(int64_t unix_ms, bool micro, char *out, size_t size)
{
    /* Floor division, so instants before 1970 land on the right second. */
    int64_t days = unix_ms / MS_PER_DAY;
    int64_t rem = unix_ms % MS_PER_DAY;
    if (rem < 0) {
        rem += MS_PER_DAY;
        days--;
    }
    int64_t y;
    unsigned m, d;
    timefmt_civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999)
        return -ERANGE;
    if (size < (micro ? TIMEFMT_RFC3339_MICRO_SIZE : TIMEFMT_RFC3339_SIZE))
        return -ENOBUFS;

    unsigned secs = (unsigned)(rem / MS_PER_SECOND);
    unsigned ms = (unsigned)(rem % MS_PER_SECOND);
    int n;
    if (micro)
        n = snprintf(out, size, "%04u-%02u-%02uT%02u:%02u:%02u.%03u000Z", (unsigned)y, m, d,
                     secs / 3600, secs / 60 % 60, secs % 60, ms);
    else
        n = snprintf(out, size, "%04u-%02u-%02uT%02u:%02u:%02uZ", (unsigned)y, m, d, secs / 3600,
                     secs / 60 % 60, secs % 60);
    /* Each field has its width for a year within 0..9999, so this cannot
     * happen; were it to, a cut time must not pass for a whole one. */
    if (n < 0 || (size_t)n >= size)
        return -ERANGE;
    return 0;
}

int timefmt_format_rfc3339(int64_t unix_ms, char *out, size_t size)
{
    return format(unix_ms, false, out, size);
}

int timefmt_format_rfc3339_micro(int64_t unix_ms, char *out, size_t size)
{
    return format(unix_ms, true, out, size);
}

void timefmt_rfc3339_text(int64_t unix_ms, char out[TIMEFMT_RFC3339_SIZE])
{
    if (timefmt_format_rfc3339(unix_ms, out, TIMEFMT_RFC3339_SIZE) < 0)
        snprintf(out, TIMEFMT_RFC3339_SIZE, "?");
}
