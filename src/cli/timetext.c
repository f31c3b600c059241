#include "cli/timetext.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/duration.h"
#include "util/timefmt.h"

int timetext_parse_duration(const char *s, int64_t *ret_ms)
{
    return duration_parse_ms(s, ret_ms);
}

/* "YYYY-MM-DD" exactly: midnight UTC. */
static int parse_date(const char *s, int64_t *ret_ms)
{
    if (!s || strlen(s) != 10 || s[4] != '-' || s[7] != '-')
        return -EINVAL;
    unsigned v[3] = {0};
    const int at[3] = {0, 5, 8}, len[3] = {4, 2, 2};
    for (int f = 0; f < 3; f++)
        for (int i = 0; i < len[f]; i++) {
            char c = s[at[f] + i];
            if (c < '0' || c > '9')
                return -EINVAL;
            v[f] = v[f] * 10 + (unsigned)(c - '0');
        }
    if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31)
        return -EINVAL;
    /* Refuse 2026-02-30 rather than roll it into March. */
    int64_t days = timefmt_days_from_civil(v[0], v[1], v[2]);
    int64_t y;
    unsigned m, d;
    timefmt_civil_from_days(days, &y, &m, &d);
    if (m != v[1] || d != v[2])
        return -EINVAL;
    *ret_ms = days * 86400000;
    return 0;
}

static int parse_time(const char *s, int64_t *ret_ms)
{
    if (timefmt_parse_rfc3339(s, ret_ms) == 0)
        return 0;
    return parse_date(s, ret_ms);
}

int timetext_parse_until(const char *s, int64_t now_ms, int64_t *ret_ms)
{
    int64_t d;
    if (!s || !*s)
        return -EINVAL;
    if (parse_time(s, ret_ms) == 0)
        return 0;
    if (duration_parse_ms(s, &d) < 0 || d > INT64_MAX - now_ms)
        return -EINVAL;
    *ret_ms = now_ms + d;
    return 0;
}

int timetext_parse_point(const char *s, int64_t now_ms, int64_t *ret_ms)
{
    int64_t d;
    if (!s || !*s)
        return -EINVAL;
    if (strcmp(s, "now") == 0) {
        *ret_ms = now_ms;
        return 0;
    }
    if (parse_time(s, ret_ms) == 0)
        return 0;
    if (duration_parse_ms(s, &d) < 0 || d > now_ms)
        return -EINVAL;
    *ret_ms = now_ms - d;
    return 0;
}

/* k8s.io/apimachinery/pkg/util/duration.HumanDuration, to the letter. */
void timetext_age(int64_t span_ms, char out[TIMETEXT_SIZE])
{
    int64_t seconds = span_ms / 1000;
    if (seconds < -1) {
        snprintf(out, TIMETEXT_SIZE, "<invalid>");
        return;
    }
    if (seconds < 0) {
        snprintf(out, TIMETEXT_SIZE, "0s");
        return;
    }
    if (seconds < 120) {
        snprintf(out, TIMETEXT_SIZE, "%llds", (long long)seconds);
        return;
    }
    long long minutes = (long long)(seconds / 60);
    if (minutes < 10) {
        long long s = (long long)(seconds % 60);
        if (s == 0)
            snprintf(out, TIMETEXT_SIZE, "%lldm", minutes);
        else
            snprintf(out, TIMETEXT_SIZE, "%lldm%llds", minutes, s);
        return;
    }
    if (minutes < 60 * 3) {
        snprintf(out, TIMETEXT_SIZE, "%lldm", minutes);
        return;
    }
    long long hours = minutes / 60;
    if (hours < 8) {
        long long m = minutes % 60;
        if (m == 0)
            snprintf(out, TIMETEXT_SIZE, "%lldh", hours);
        else
            snprintf(out, TIMETEXT_SIZE, "%lldh%lldm", hours, m);
        return;
    }
    if (hours < 48) {
        snprintf(out, TIMETEXT_SIZE, "%lldh", hours);
        return;
    }
    if (hours < 24 * 8) {
        long long h = hours % 24;
        if (h == 0)
            snprintf(out, TIMETEXT_SIZE, "%lldd", hours / 24);
        else
            snprintf(out, TIMETEXT_SIZE, "%lldd%lldh", hours / 24, h);
        return;
    }
    if (hours < 24 * 365 * 2) {
        snprintf(out, TIMETEXT_SIZE, "%lldd", hours / 24);
        return;
    }
    if (hours < 24 * 365 * 8) {
        long long dy = (hours / 24) % 365;
        if (dy == 0)
            snprintf(out, TIMETEXT_SIZE, "%lldy", hours / 24 / 365);
        else
            snprintf(out, TIMETEXT_SIZE, "%lldy%lldd", hours / 24 / 365, dy);
        return;
    }
    snprintf(out, TIMETEXT_SIZE, "%lldy", hours / 24 / 365);
}

void timetext_age_at(int64_t when_ms, int64_t now_ms, char out[TIMETEXT_SIZE])
{
    if (!when_ms) {
        snprintf(out, TIMETEXT_SIZE, "-");
        return;
    }
    timetext_age(now_ms - when_ms, out);
}

void timetext_seconds(double seconds, char out[TIMETEXT_SIZE])
{
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(out, TIMETEXT_SIZE, "-");
        return;
    }
    if (seconds < 600) {
        snprintf(out, TIMETEXT_SIZE, "%.1fs", seconds);
        return;
    }
    timetext_age((int64_t)(seconds * 1000), out);
}

void timetext_time(int64_t when_ms, char out[TIMETEXT_SIZE])
{
    if (!when_ms) {
        snprintf(out, TIMETEXT_SIZE, "-");
        return;
    }
    timefmt_rfc3339_text(when_ms, out);
}
