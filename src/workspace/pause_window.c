#include "workspace/pause_window.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/text.h"
#include "util/tz.h"

#define MS_PER_DAY INT64_C(86400000)

/* Days looked at around now: a window containing now started at most a day
 * (plus an offset change) before today, and every change within the 8 days
 * searched comes from a window starting no later than 9 days after today. */
#define FIRST_DAY (-2)
#define LAST_DAY 9
#define SEARCH_MS (8 * MS_PER_DAY)
#define MAX_SPANS ((LAST_DAY - FIRST_DAY + 1) * PAUSE_SCHEDULE_MAX_WINDOWS)

static const char *const day_names[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};

/* Bytes of caller text quoted in a message at most: it usually comes from a
 * user's object. */
#define QUOTE_MAX 32

static int parse_error(const char *s, const char *what, char **ret_err)
{
    char q[TEXT_EXCERPT_SIZE(QUOTE_MAX)];
    text_excerpt(s ? s : "", s ? strlen(s) : 0, QUOTE_MAX, q, sizeof(q));
    if (ret_err && asprintf(ret_err, "\"%s\" is not %s", q, what) < 0)
        *ret_err = NULL;
    return -EINVAL;
}

int pause_window_parse_time(const char *s, int *ret_minute_of_day, char **ret_err)
{
    static const char what[] = "a time of day HH:MM (00:00 to 23:59)";
    if (!ret_minute_of_day)
        return -EINVAL;
    if (!s || strlen(s) != 5 || s[2] != ':')
        return parse_error(s, what, ret_err);
    for (int i = 0; i < 5; i++)
        if (i != 2 && (s[i] < '0' || s[i] > '9'))
            return parse_error(s, what, ret_err);
    int h = (s[0] - '0') * 10 + (s[1] - '0');
    int m = (s[3] - '0') * 10 + (s[4] - '0');
    if (h > 23 || m > 59)
        return parse_error(s, what, ret_err);
    *ret_minute_of_day = h * 60 + m;
    return 0;
}

int pause_window_parse_day(const char *s, int *ret_wday, char **ret_err)
{
    if (!ret_wday)
        return -EINVAL;
    for (int d = 0; s && d < 7; d++)
        if (strcmp(s, day_names[d]) == 0) {
            *ret_wday = d;
            return 0;
        }
    return parse_error(s, "a day (Mon, Tue, Wed, Thu, Fri, Sat or Sun)", ret_err);
}

struct span {
    int64_t start_ms;
    int64_t end_ms;
};

static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->start_ms != y->start_ms)
        return x->start_ms < y->start_ms ? -1 : 1;
    return 0;
}

static bool window_valid(const struct pause_window *w)
{
    return w->days < (1u << 7) && w->start_minute >= 0 && w->start_minute < 1440 &&
           w->end_minute >= 0 && w->end_minute < 1440;
}

int pause_schedule_next(const struct pause_schedule *s, const struct tz *z, int64_t now_ms,
                        int *ret_allowed, int64_t *ret_change_ms)
{
    if (!s || !z || !ret_allowed || !ret_change_ms || s->n_windows > PAUSE_SCHEDULE_MAX_WINDOWS)
        return -EINVAL;
    for (size_t i = 0; i < s->n_windows; i++)
        if (!window_valid(&s->windows[i]))
            return -EINVAL;
    if (s->n_windows == 0) {
        *ret_allowed = 1;
        *ret_change_ms = INT64_MAX;
        return 0;
    }
    if (now_ms / 1000 < TZ_UNIX_MIN + 10 * 86400 || now_ms / 1000 > TZ_UNIX_MAX - 10 * 86400)
        return -ERANGE;

    int64_t now_s = now_ms / 1000 - (now_ms % 1000 < 0);
    struct tz_civil today;
    int k = tz_civil_at(z, now_s, &today);
    if (k < 0)
        return k;

    /* Every window occurrence near now, as real-time spans. */
    struct span spans[MAX_SPANS];
    size_t n = 0;
    for (int day = FIRST_DAY; day <= LAST_DAY; day++) {
        int wday = ((today.wday + day) % 7 + 7) % 7;
        for (size_t i = 0; i < s->n_windows; i++) {
            const struct pause_window *w = &s->windows[i];
            if (w->days != 0 && !(w->days & (1u << wday)))
                continue;
            int end_day = day + (w->end_minute <= w->start_minute);
            int64_t start_s, end_s;
            k = tz_local_to_utc(z, today.year, today.month, today.mday + day, w->start_minute / 60,
                                w->start_minute % 60, &start_s);
            if (k == 0)
                k = tz_local_to_utc(z, today.year, today.month, today.mday + end_day,
                                    w->end_minute / 60, w->end_minute % 60, &end_s);
            if (k < 0)
                return k;
            /* Empty when both ends fall in the same skipped hour. */
            if (end_s > start_s)
                spans[n++] = (struct span){start_s * 1000, end_s * 1000};
        }
    }
    qsort(spans, n, sizeof(spans[0]), span_cmp);

    /* Merge spans that overlap or meet, so a change is only reported where
     * the answer really flips. */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && spans[i].start_ms <= spans[m - 1].end_ms) {
            if (spans[i].end_ms > spans[m - 1].end_ms)
                spans[m - 1].end_ms = spans[i].end_ms;
        } else {
            spans[m++] = spans[i];
        }
    }

    int64_t horizon = now_ms + SEARCH_MS;
    for (size_t i = 0; i < m; i++) {
        if (spans[i].start_ms <= now_ms && now_ms < spans[i].end_ms) {
            /* Open for more than the 8 days searched: every hour of the
             * week is covered, so it never closes. */
            *ret_allowed = 1;
            *ret_change_ms = spans[i].end_ms > horizon ? INT64_MAX : spans[i].end_ms;
            return 0;
        }
        if (spans[i].start_ms > now_ms) {
            *ret_allowed = 0;
            *ret_change_ms = spans[i].start_ms > horizon ? INT64_MAX : spans[i].start_ms;
            return 0;
        }
    }
    *ret_allowed = 0;
    *ret_change_ms = INT64_MAX;
    return 0;
}

int local_time_next(unsigned days, int minute, const struct tz *z, int64_t after_ms,
                    int64_t *ret_ms)
{
    if (!z || !ret_ms || days >= (1u << 7) || minute < 0 || minute >= 1440)
        return -EINVAL;
    if (after_ms / 1000 < TZ_UNIX_MIN + 10 * 86400 || after_ms / 1000 > TZ_UNIX_MAX - 10 * 86400)
        return -ERANGE;
    int64_t after_s = after_ms / 1000 - (after_ms % 1000 < 0);
    struct tz_civil today;
    int k = tz_civil_at(z, after_s, &today);
    if (k < 0)
        return k;
    /* Today's reading may have passed; a week on, every day has come. */
    for (int day = 0; day <= 8; day++) {
        int wday = (today.wday + day) % 7;
        if (days != 0 && !(days & (1u << wday)))
            continue;
        int64_t at_s;
        k = tz_local_to_utc(z, today.year, today.month, today.mday + day, minute / 60, minute % 60,
                            &at_s);
        if (k < 0)
            return k;
        if (at_s * 1000 > after_ms) {
            *ret_ms = at_s * 1000;
            return 0;
        }
    }
    return -ERANGE; /* not reached: some day of the next eight is one of days */
}
