#include "util/duration.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *unit;
    int64_t ms;
} units[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
};

int duration_parse_ms(const char *s, int64_t *ret_ms)
{
    if (!s || !*s)
        return -EINVAL;
    if (strcmp(s, "0") == 0) {
        *ret_ms = 0;
        return 0;
    }
    int64_t total = 0;
    const char *p = s;
    for (int parts = 0; *p; parts++) {
        if (*p < '0' || *p > '9' || parts == DURATION_MAX_PARTS)
            return -EINVAL;
        int64_t n = 0;
        for (int digits = 0; *p >= '0' && *p <= '9'; digits++) {
            if (digits == DURATION_MAX_DIGITS)
                return -EINVAL;
            n = n * 10 + (*p++ - '0');
        }
        int64_t mult = 0;
        size_t ulen = 0;
        /* "ms" before "m": the longest unit that matches wins. */
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t l = strlen(units[i].unit);
            if (l > ulen && strncmp(p, units[i].unit, l) == 0) {
                mult = units[i].ms;
                ulen = l;
            }
        }
        if (!mult)
            return -EINVAL;
        if (n > (INT64_MAX - total) / mult)
            return -EINVAL;
        total += n * mult;
        p += ulen;
    }
    *ret_ms = total;
    return 0;
}

int duration_format_ms(int64_t ms, char *out, size_t size)
{
    if (ms < 0 || size == 0)
        return -EINVAL;
    if (ms == 0) {
        snprintf(out, size, "0s");
        return 0;
    }
    size_t n = 0;
    out[0] = '\0';
    static const int order[] = {4, 3, 2, 1, 0}; /* d h m s ms */
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        int64_t u = units[order[i]].ms;
        if (ms >= u) {
            int w =
                snprintf(out + n, size - n, "%lld%s", (long long)(ms / u), units[order[i]].unit);
            if (w < 0 || (size_t)w >= size - n)
                return -ENOBUFS;
            n += (size_t)w;
            ms %= u;
        }
    }
    return 0;
}
