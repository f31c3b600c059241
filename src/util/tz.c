#include "util/tz.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file_read.h"
#include "util/text.h"
#include "util/timefmt.h"

#define SECS_PER_DAY INT64_C(86400)

/* Limits on what a file may declare, checked before anything is allocated.
 * tzdata's fattest zone has a few hundred transitions; tzcode itself allows
 * 256 types and 50 abbreviation bytes. */
#define TZ_MAX_TRANSITIONS 4096
#define TZ_MAX_TYPES 256
#define TZ_MAX_CHARS 256

/* RFC 8536: UT offsets stay within -25:00..+26:00, and POSIX TZ rule times
 * within -167..167 hours. */
#define TZ_MIN_UTOFF (-89999)
#define TZ_MAX_UTOFF 93599
#define TZ_MAX_RULE_HOURS 167

/* The walk in tz_local_to_utc() looks this far either side of a reading:
 * farther than any UT offset, so every instant showing it is covered. */
#define TZ_SEARCH_SPAN (27 * 3600)

/* Bytes of a footer or zone name (text from a file or a caller) quoted in an
 * error message at most. */
#define TZ_EXCERPT_MAX 64

enum rule_kind {
    RULE_JULIAN,      /* Jn: 1..365, February 29 never counted */
    RULE_ZERO_JULIAN, /* n: 0..365, February 29 counted */
    RULE_MONTH_WEEK,  /* Mm.w.d */
};

struct rule_date {
    enum rule_kind kind;
    int day;   /* Jn / n, or the weekday for Mm.w.d (0 = Sunday) */
    int week;  /* 1..5, 5 = the last */
    int month; /* 1..12 */
    int32_t time_s;
};

/* A footer's POSIX TZ string. Offsets here are seconds east (the opposite
 * of POSIX's sign). */
struct rule {
    int32_t std_off;
    int32_t dst_off;
    bool has_dst;
    struct rule_date start; /* into DST, in standard local time */
    struct rule_date end;   /* out of DST, in DST local time */
};

struct tz {
    char *name;
    bool is_static;
    size_t n_trans;
    int64_t *trans;     /* strictly ascending */
    int32_t *trans_off; /* UT offset from trans[i] on */
    int32_t first_off;  /* time type 0: before the first transition */
    bool has_rule;      /* a non-empty footer */
    struct rule rule;
};

static struct tz utc_zone = {
    .name = (char *)"UTC",
    .is_static = true,
};

struct tz *tz_utc(void)
{
    return &utc_zone;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
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

/* 0 = Sunday; 1970-01-01 was a Thursday. */
static int weekday_of_days(int64_t days)
{
    int64_t w = (days + 4) % 7;
    return (int)(w < 0 ? w + 7 : w);
}

static int64_t year_of(int64_t unix_s)
{
    int64_t y;
    unsigned m, d;
    timefmt_civil_from_days(floor_div(unix_s, SECS_PER_DAY), &y, &m, &d);
    return y;
}

/* ---- POSIX TZ rules ---------------------------------------------------- */

/* Days since the epoch of a rule's date in year y. */
static int64_t rule_date_days(const struct rule_date *r, int64_t y)
{
    int64_t jan1 = timefmt_days_from_civil(y, 1, 1);
    switch (r->kind) {
    case RULE_JULIAN:
        return jan1 + r->day - 1 + (is_leap(y) && r->day >= 60);
    case RULE_ZERO_JULIAN:
        return jan1 + r->day;
    case RULE_MONTH_WEEK:
    default: {
        int64_t first = timefmt_days_from_civil(y, (unsigned)r->month, 1);
        int mday = 1 + (r->day - weekday_of_days(first) + 7) % 7 + (r->week - 1) * 7;
        while (mday > (int)days_in_month(y, (unsigned)r->month))
            mday -= 7;
        return first + mday - 1;
    }
    }
}

struct rule_change {
    int64_t at;
    int64_t year;
    bool to_dst;
};

/* The rule's changes for years y-2..y+1 (y the standard-time year of t):
 * transition times may reach a week into the neighbouring years, so the
 * change in effect at t and the next one after it are always among these. */
static size_t rule_changes(const struct rule *r, int64_t t, struct rule_change out[8])
{
    int64_t y = year_of(t + r->std_off);
    size_t n = 0;
    for (int64_t k = y - 2; k <= y + 1; k++) {
        out[n++] = (struct rule_change){
            rule_date_days(&r->start, k) * SECS_PER_DAY + r->start.time_s - r->std_off, k, true};
        out[n++] = (struct rule_change){
            rule_date_days(&r->end, k) * SECS_PER_DAY + r->end.time_s - r->dst_off, k, false};
    }
    return n;
}

static int32_t rule_offset(const struct rule *r, int64_t t)
{
    if (!r->has_dst)
        return r->std_off;
    struct rule_change ch[8];
    size_t n = rule_changes(r, t, ch);
    const struct rule_change *best = NULL;
    for (size_t i = 0; i < n; i++) {
        if (ch[i].at > t)
            continue;
        /* On a tie the later year's change wins: "DST all year" rules end
         * one year's DST at the instant the next year's begins. */
        if (!best || ch[i].at > best->at || (ch[i].at == best->at && ch[i].year > best->year))
            best = &ch[i];
    }
    if (!best)
        return r->std_off;
    return best->to_dst ? r->dst_off : r->std_off;
}

static int64_t rule_next_change(const struct rule *r, int64_t t)
{
    if (!r->has_dst)
        return INT64_MAX;
    struct rule_change ch[8];
    size_t n = rule_changes(r, t, ch);
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < n; i++)
        if (ch[i].at > t && ch[i].at < next)
            next = ch[i].at;
    return next;
}

/* Reads 1..3 digits into *ret, which must not exceed max. */
static bool parse_number(const char **p, int max, int *ret)
{
    int v = 0, n = 0;
    while (**p >= '0' && **p <= '9' && n < 3) {
        v = v * 10 + (**p - '0');
        (*p)++;
        n++;
    }
    if (n == 0 || v > max || (**p >= '0' && **p <= '9'))
        return false;
    *ret = v;
    return true;
}

/* [+-]hh[:mm[:ss]] with hh at most max_hours; seconds with POSIX's sign. */
static bool parse_hms(const char **p, int max_hours, int32_t *ret)
{
    int sign = 1, h, m = 0, s = 0;
    if (**p == '+' || **p == '-') {
        sign = **p == '-' ? -1 : 1;
        (*p)++;
    }
    if (!parse_number(p, max_hours, &h))
        return false;
    if (**p == ':') {
        (*p)++;
        if (!parse_number(p, 59, &m))
            return false;
        if (**p == ':') {
            (*p)++;
            if (!parse_number(p, 59, &s))
                return false;
        }
    }
    *ret = sign * (h * 3600 + m * 60 + s);
    return true;
}

/* A zone abbreviation: three or more letters, or <...> of three or more
 * letters, digits, '+' and '-'. */
static bool parse_abbr(const char **p)
{
    const char *s = *p;
    size_t n = 0;
    if (*s == '<') {
        s++;
        while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
               *s == '+' || *s == '-') {
            s++;
            n++;
        }
        if (*s != '>' || n < 3)
            return false;
        *p = s + 1;
        return true;
    }
    while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')) {
        s++;
        n++;
    }
    if (n < 3)
        return false;
    *p = s;
    return true;
}

static bool parse_rule_date(const char **p, struct rule_date *ret)
{
    struct rule_date r = {.time_s = 2 * 3600};
    if (**p == 'J') {
        (*p)++;
        r.kind = RULE_JULIAN;
        if (!parse_number(p, 365, &r.day) || r.day < 1)
            return false;
    } else if (**p == 'M') {
        (*p)++;
        r.kind = RULE_MONTH_WEEK;
        if (!parse_number(p, 12, &r.month) || r.month < 1 || *(*p)++ != '.' ||
            !parse_number(p, 5, &r.week) || r.week < 1 || *(*p)++ != '.' ||
            !parse_number(p, 6, &r.day))
            return false;
    } else {
        r.kind = RULE_ZERO_JULIAN;
        if (!parse_number(p, 365, &r.day))
            return false;
    }
    if (**p == '/') {
        (*p)++;
        if (!parse_hms(p, TZ_MAX_RULE_HOURS, &r.time_s))
            return false;
    }
    *ret = r;
    return true;
}

/* std offset [dst [offset] [,start[/time],end[/time]]] */
static bool parse_posix_tz(const char *s, struct rule *ret)
{
    struct rule r = {0};
    const char *p = s;
    int32_t off;
    if (!parse_abbr(&p) || !parse_hms(&p, 24, &off))
        return false;
    r.std_off = -off;
    if (*p == '\0') {
        *ret = r;
        return true;
    }
    if (!parse_abbr(&p))
        return false;
    r.has_dst = true;
    r.dst_off = r.std_off + 3600;
    if (*p != ',' && *p != '\0') {
        if (!parse_hms(&p, 24, &off))
            return false;
        r.dst_off = -off;
    }
    if (*p == '\0') {
        /* No rule given: tzcode's and glibc's default, the US rules. */
        r.start = (struct rule_date){RULE_MONTH_WEEK, 0, 2, 3, 2 * 3600};
        r.end = (struct rule_date){RULE_MONTH_WEEK, 0, 1, 11, 2 * 3600};
        *ret = r;
        return true;
    }
    if (*p++ != ',' || !parse_rule_date(&p, &r.start) || *p++ != ',' ||
        !parse_rule_date(&p, &r.end) || *p != '\0')
        return false;
    *ret = r;
    return true;
}

/* ---- TZif -------------------------------------------------------------- */

struct tzif_header {
    char version; /* 0, '2', '3', '4' */
    uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

#define TZIF_HEADER_SIZE 44

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const unsigned char *p)
{
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

struct parser {
    const char *name;
    const unsigned char *data;
    size_t len;
    char *err;
    int rc;
};

static int fail(struct parser *ps, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct parser *ps, int rc, const char *fmt, ...)
{
    char *what = NULL;
    va_list ap;
    va_start(ap, fmt);
    int k = vasprintf(&what, fmt, ap);
    va_end(ap);
    free(ps->err);
    ps->err = NULL;
    if (k >= 0 && asprintf(&ps->err, "time zone \"%s\": %s", ps->name, what) < 0)
        ps->err = NULL;
    if (k >= 0)
        free(what);
    ps->rc = rc;
    return rc;
}

static int read_header(struct parser *ps, size_t off, struct tzif_header *ret)
{
    if (ps->len - off < TZIF_HEADER_SIZE)
        return fail(ps, -EINVAL, "truncated: %zu bytes, a header needs %zu", ps->len,
                    off + TZIF_HEADER_SIZE);
    const unsigned char *h = ps->data + off;
    if (memcmp(h, "TZif", 4) != 0)
        return fail(ps, -EINVAL, "not a TZif file (no \"TZif\" at byte %zu)", off);
    char v = (char)h[4];
    if (v != 0 && v != '2' && v != '3' && v != '4')
        return fail(ps, -EINVAL, "unsupported TZif version (byte 0x%02x)", h[4]);
    *ret = (struct tzif_header){
        .version = v,
        .isutcnt = be32(h + 20),
        .isstdcnt = be32(h + 24),
        .leapcnt = be32(h + 28),
        .timecnt = be32(h + 32),
        .typecnt = be32(h + 36),
        .charcnt = be32(h + 40),
    };
    return 0;
}

/* Size of a data block; the counts are bounded first so nothing overflows. */
static int block_size(struct parser *ps, const struct tzif_header *h, size_t time_size, size_t off,
                      size_t *ret)
{
    if (h->timecnt > TZ_MAX_TRANSITIONS)
        return fail(ps, -EINVAL, "%" PRIu32 " transitions, at most %d are accepted", h->timecnt,
                    TZ_MAX_TRANSITIONS);
    if (h->typecnt > TZ_MAX_TYPES)
        return fail(ps, -EINVAL, "%" PRIu32 " local time types, at most %d are accepted",
                    h->typecnt, TZ_MAX_TYPES);
    if (h->charcnt > TZ_MAX_CHARS)
        return fail(ps, -EINVAL, "%" PRIu32 " abbreviation bytes, at most %d are accepted",
                    h->charcnt, TZ_MAX_CHARS);
    if (h->leapcnt > TZ_MAX_TRANSITIONS)
        return fail(ps, -EINVAL, "%" PRIu32 " leap-second records", h->leapcnt);
    if ((h->isstdcnt != 0 && h->isstdcnt != h->typecnt) ||
        (h->isutcnt != 0 && h->isutcnt != h->typecnt))
        return fail(ps, -EINVAL,
                    "indicator counts (%" PRIu32 ", %" PRIu32
                    ") differ from the local time type count (%" PRIu32 ")",
                    h->isstdcnt, h->isutcnt, h->typecnt);
    size_t n = (size_t)h->timecnt * (time_size + 1) + (size_t)h->typecnt * 6 + h->charcnt +
               (size_t)h->leapcnt * (time_size + 4) + h->isstdcnt + h->isutcnt;
    if (ps->len - off < n)
        return fail(ps, -EINVAL, "truncated: %zu bytes, the data needs %zu", ps->len, off + n);
    *ret = n;
    return 0;
}

/* Decodes one data block (the 64-bit one, or the only one of a version 1
 * file) into z. */
static int read_block(struct parser *ps, const struct tzif_header *h, size_t time_size, size_t off,
                      struct tz *z)
{
    const unsigned char *times = ps->data + off;
    const unsigned char *idx = times + (size_t)h->timecnt * time_size;
    const unsigned char *types = idx + h->timecnt;

    if (h->leapcnt > 0)
        return fail(ps, -EINVAL,
                    "has leap-second records (a right/ zone), which are not supported");
    if (h->typecnt == 0)
        return fail(ps, -EINVAL, "no local time types");
    if (h->charcnt == 0)
        return fail(ps, -EINVAL, "no abbreviation bytes");

    int32_t offs[TZ_MAX_TYPES];
    for (uint32_t i = 0; i < h->typecnt; i++) {
        const unsigned char *t = types + (size_t)i * 6;
        int32_t utoff = (int32_t)be32(t);
        if (utoff < TZ_MIN_UTOFF || utoff > TZ_MAX_UTOFF)
            return fail(ps, -EINVAL,
                        "local time type %" PRIu32 " has UT offset %" PRId32
                        " s, outside -25:00..+26:00",
                        i, utoff);
        if (t[4] > 1)
            return fail(ps, -EINVAL, "local time type %" PRIu32 " has DST flag %u", i, t[4]);
        if (t[5] >= h->charcnt)
            return fail(ps, -EINVAL,
                        "local time type %" PRIu32 " names abbreviation byte %u of %" PRIu32, i,
                        t[5], h->charcnt);
        offs[i] = utoff;
    }
    const unsigned char *chars = types + (size_t)h->typecnt * 6;
    if (chars[h->charcnt - 1] != '\0')
        return fail(ps, -EINVAL, "abbreviations are not NUL-terminated");

    if (h->timecnt > 0) {
        z->trans = malloc(h->timecnt * sizeof(*z->trans));
        z->trans_off = malloc(h->timecnt * sizeof(*z->trans_off));
        if (!z->trans || !z->trans_off)
            return ps->rc = -ENOMEM;
    }
    for (uint32_t i = 0; i < h->timecnt; i++) {
        const unsigned char *t = times + (size_t)i * time_size;
        int64_t at = time_size == 8 ? (int64_t)be64(t) : (int64_t)(int32_t)be32(t);
        if (i > 0 && at <= z->trans[i - 1])
            return fail(ps, -EINVAL, "transition %" PRIu32 " is not after the one before", i);
        if (idx[i] >= h->typecnt)
            return fail(ps, -EINVAL, "transition %" PRIu32 " names local time type %u of %" PRIu32,
                        i, idx[i], h->typecnt);
        z->trans[i] = at;
        z->trans_off[i] = offs[idx[i]];
    }
    z->n_trans = h->timecnt;
    z->first_off = offs[0];
    return 0;
}

static int read_footer(struct parser *ps, size_t off, struct tz *z)
{
    const unsigned char *f = ps->data + off;
    size_t n = ps->len - off;
    if (n < 2 || f[0] != '\n')
        return fail(ps, -EINVAL, "truncated: the footer is missing");
    const unsigned char *nl = memchr(f + 1, '\n', n - 1);
    if (!nl)
        return fail(ps, -EINVAL, "truncated: the footer has no closing newline");
    size_t flen = (size_t)(nl - (f + 1));
    if (nl != f + n - 1)
        return fail(ps, -EINVAL, "%zu bytes after the footer", (size_t)(f + n - 1 - nl));
    if (flen == 0)
        return 0;

    char text[128];
    char excerpt[TEXT_EXCERPT_SIZE(TZ_EXCERPT_MAX)];
    text_excerpt((const char *)f + 1, flen, TZ_EXCERPT_MAX, excerpt, sizeof(excerpt));
    if (flen >= sizeof(text) || memchr(f + 1, '\0', flen))
        return fail(ps, -EINVAL, "footer \"%s\" is not a TZ string", excerpt);
    memcpy(text, f + 1, flen);
    text[flen] = '\0';
    if (!parse_posix_tz(text, &z->rule))
        return fail(ps, -EINVAL, "footer \"%s\" is not a valid TZ string", excerpt);
    z->has_rule = true;
    return 0;
}

static int parse_tzif(struct parser *ps, struct tz *z)
{
    struct tzif_header h1, h2;
    size_t n1, n2;

    if (read_header(ps, 0, &h1) < 0)
        return ps->rc;
    if (h1.version == 0) {
        if (block_size(ps, &h1, 4, TZIF_HEADER_SIZE, &n1) < 0 ||
            read_block(ps, &h1, 4, TZIF_HEADER_SIZE, z) < 0)
            return ps->rc;
        if (ps->len != TZIF_HEADER_SIZE + n1)
            return fail(ps, -EINVAL, "%zu bytes after the data", ps->len - TZIF_HEADER_SIZE - n1);
        return 0;
    }

    /* Version 2+: the 32-bit block only has to be skipped. */
    if (block_size(ps, &h1, 4, TZIF_HEADER_SIZE, &n1) < 0)
        return ps->rc;
    size_t off = TZIF_HEADER_SIZE + n1;
    if (read_header(ps, off, &h2) < 0)
        return ps->rc;
    if (h2.version != h1.version)
        return fail(ps, -EINVAL, "the second header's version differs from the first");
    off += TZIF_HEADER_SIZE;
    if (block_size(ps, &h2, 8, off, &n2) < 0 || read_block(ps, &h2, 8, off, z) < 0 ||
        read_footer(ps, off + n2, z) < 0)
        return ps->rc;
    /* RFC 8536: with no transitions, a footer governs all time. */
    return 0;
}

int tz_parse(const char *name, const void *bytes, size_t len, struct tz **ret_tz, char **ret_err)
{
    if (!name || (!bytes && len > 0) || !ret_tz)
        return -EINVAL;
    struct parser ps = {.name = name, .data = bytes, .len = len};
    if (len > TZ_FILE_MAX) {
        fail(&ps, -EFBIG, "%zu bytes, larger than the %d KiB accepted", len, TZ_FILE_MAX / 1024);
        goto out;
    }
    struct tz *z = calloc(1, sizeof(*z));
    if (!z || !(z->name = strdup(name))) {
        free(z);
        return -ENOMEM;
    }
    if (parse_tzif(&ps, z) < 0) {
        tz_free(z);
        goto out;
    }
    *ret_tz = z;
    return 0;
out:
    if (ps.rc == -ENOMEM) {
        free(ps.err);
        return -ENOMEM;
    }
    if (ret_err)
        *ret_err = ps.err;
    else
        free(ps.err);
    return ps.rc;
}

void tz_free(struct tz *z)
{
    if (!z || z->is_static)
        return;
    free(z->name);
    free(z->trans);
    free(z->trans_off);
    free(z);
}

const char *tz_name(const struct tz *z)
{
    return z ? z->name : NULL;
}

/* ---- Lookups ----------------------------------------------------------- */

/* Index of the last transition at or before t; t must be >= trans[0]. */
static size_t last_transition_at_or_before(const struct tz *z, int64_t t)
{
    size_t lo = 0, hi = z->n_trans; /* trans[lo] <= t < trans[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->trans[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int32_t offset_at(const struct tz *z, int64_t t)
{
    if (z->n_trans == 0)
        return z->has_rule ? rule_offset(&z->rule, t) : z->first_off;
    if (t < z->trans[0])
        return z->first_off;
    if (t >= z->trans[z->n_trans - 1])
        return z->has_rule ? rule_offset(&z->rule, t) : z->trans_off[z->n_trans - 1];
    return z->trans_off[last_transition_at_or_before(z, t)];
}

/* The first instant after t at which the offset may change (INT64_MAX:
 * never). Transitions that keep the offset are reported too; callers only
 * rely on the offset being constant between two reported instants. */
static int64_t next_change(const struct tz *z, int64_t t)
{
    if (z->n_trans > 0 && t < z->trans[z->n_trans - 1]) {
        if (t < z->trans[0])
            return z->trans[0];
        return z->trans[last_transition_at_or_before(z, t) + 1];
    }
    return z->has_rule ? rule_next_change(&z->rule, t) : INT64_MAX;
}

int tz_offset_at(const struct tz *z, int64_t unix_s, int32_t *ret_utc_offset_s)
{
    if (!z || !ret_utc_offset_s)
        return -EINVAL;
    if (unix_s < TZ_UNIX_MIN || unix_s > TZ_UNIX_MAX)
        return -ERANGE;
    *ret_utc_offset_s = offset_at(z, unix_s);
    return 0;
}

int tz_civil_at(const struct tz *z, int64_t unix_s, struct tz_civil *ret_civil)
{
    if (!z || !ret_civil)
        return -EINVAL;
    if (unix_s < TZ_UNIX_MIN || unix_s > TZ_UNIX_MAX)
        return -ERANGE;
    int32_t off = offset_at(z, unix_s);
    int64_t local = unix_s + off;
    int64_t days = floor_div(local, SECS_PER_DAY);
    int64_t secs = local - days * SECS_PER_DAY;
    int64_t y;
    unsigned m, d;
    timefmt_civil_from_days(days, &y, &m, &d);
    *ret_civil = (struct tz_civil){
        .year = (int)y,
        .month = (int)m,
        .mday = (int)d,
        .wday = weekday_of_days(days),
        .hour = (int)(secs / 3600),
        .minute = (int)(secs / 60 % 60),
        .second = (int)(secs % 60),
        .utc_offset_s = off,
    };
    return 0;
}

int tz_local_to_utc(const struct tz *z, int year, int month, int mday, int hour, int minute,
                    int64_t *ret_unix_s)
{
    if (!z || !ret_unix_s || month < 1 || month > 12 || hour < 0 || hour > 23 || minute < 0 ||
        minute > 59)
        return -EINVAL;
    if (year < 1 || year > 9999 || mday < -400000 || mday > 400000)
        return -ERANGE;
    int64_t days = timefmt_days_from_civil(year, (unsigned)month, 1) + mday - 1;
    int64_t local = days * SECS_PER_DAY + (int64_t)hour * 3600 + (int64_t)minute * 60;
    if (local < TZ_UNIX_MIN || local > TZ_UNIX_MAX)
        return -ERANGE;

    /* Walk the spans of constant offset that could show this reading, in
     * order. The first span that shows it gives the earlier instant of an
     * overlap; a span whose clock starts past it means the reading was
     * jumped over, at that span's start. */
    int64_t a = local - TZ_SEARCH_SPAN;
    while (a <= local + TZ_SEARCH_SPAN) {
        int32_t off = offset_at(z, a);
        int64_t b = next_change(z, a);
        int64_t t = local - off;
        if (a + off > local) {
            *ret_unix_s = a;
            return 0;
        }
        if (t < b) {
            *ret_unix_s = t;
            return 0;
        }
        a = b;
    }
    /* Unreachable with offsets bounded to 26 hours. */
    return -ERANGE;
}

/* ---- Names ------------------------------------------------------------- */

int tz_name_valid(const char *name)
{
    if (!name || name[0] == '\0' || name[0] == '/')
        return 0;
    size_t len = strlen(name);
    if (len > 255)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '/' || c == '_' || c == '+' || c == '-' || c == '.'))
            return 0;
    }
    for (const char *comp = name;;) {
        const char *slash = strchr(comp, '/');
        size_t n = slash ? (size_t)(slash - comp) : strlen(comp);
        if (n == 0 || (n == 1 && comp[0] == '.') || (n == 2 && comp[0] == '.' && comp[1] == '.'))
            return 0;
        if (!slash)
            return 1;
        comp = slash + 1;
    }
}

/* ---- Loading on the event loop ------------------------------------------ */

struct tz_load_req {
    uv_loop_t *loop;
    tz_loaded_cb cb;
    void *data;
    char *name;
    char *path;
    uv_timer_t timer; /* defers answers known before any I/O */
    int status;
    char *err;
    struct tz *tz;
};

static void load_req_free(struct tz_load_req *r)
{
    free(r->name);
    free(r->path);
    free(r->err);
    free(r);
}

static void load_deliver(struct tz_load_req *r)
{
    if (r->status < 0 && !r->err) {
        const char *why = r->status == -ENOENT  ? "no such time zone"
                          : r->status == -EFBIG ? "larger than 256 KiB"
                                                : uv_strerror(r->status);
        if (asprintf(&r->err, "time zone \"%s\": %s: %s", r->name, r->path ? r->path : "", why) < 0)
            r->err = NULL;
    }
    r->cb(r->data, r->status, r->status == 0 ? r->tz : NULL, r->status == 0 ? NULL : r->err);
}

static void on_timer_closed(uv_handle_t *h)
{
    load_req_free(h->data);
}

static void on_deferred(uv_timer_t *t)
{
    struct tz_load_req *r = t->data;
    load_deliver(r);
    uv_close((uv_handle_t *)&r->timer, on_timer_closed);
}

/* Answers from the loop's next iteration, never from the caller's stack. */
static int load_defer(struct tz_load_req *r)
{
    int k = uv_timer_init(r->loop, &r->timer);
    if (k < 0)
        return k;
    r->timer.data = r;
    /* Cannot fail: the callback is set and the handle is not closing. */
    (void)uv_timer_start(&r->timer, on_deferred, 0, 0);
    return 0;
}

static void on_zone_file(void *data, int status, const char *bytes, size_t len)
{
    struct tz_load_req *r = data;
    r->status = status;
    if (status == 0) {
        int k = tz_parse(r->name, bytes, len, &r->tz, &r->err);
        if (k < 0)
            r->status = k;
    }
    load_deliver(r);
    load_req_free(r);
}

int tz_load(uv_loop_t *loop, const char *dir, const char *name, tz_loaded_cb cb, void *data)
{
    if (!loop || !cb)
        return -EINVAL;
    struct tz_load_req *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->loop = loop;
    r->cb = cb;
    r->data = data;
    if (!(r->name = strdup(name ? name : "")))
        goto oom;

    if (strcmp(r->name, "UTC") == 0 || strcmp(r->name, "Etc/UTC") == 0) {
        r->tz = tz_utc();
    } else if (!tz_name_valid(r->name)) {
        r->status = -EINVAL;
        /* The name came from outside: quote it only when it is printable. */
        char excerpt[TEXT_EXCERPT_SIZE(TZ_EXCERPT_MAX)];
        text_excerpt(r->name, strlen(r->name), TZ_EXCERPT_MAX, excerpt, sizeof(excerpt));
        if (asprintf(&r->err,
                     "time zone \"%s\": not a valid zone name (letters, digits, '/', '_', '+', "
                     "'-', '.'; no '..')",
                     excerpt) < 0)
            goto oom;
    } else {
        if (asprintf(&r->path, "%s/%s", dir ? dir : TZ_DEFAULT_DIR, r->name) < 0) {
            r->path = NULL;
            goto oom;
        }
        int k = file_read_start(loop, r->path, TZ_FILE_MAX, on_zone_file, r, NULL);
        if (k == 0)
            return 0;
        if (k == -ENOMEM)
            goto oom;
        r->status = k;
    }
    int k = load_defer(r);
    if (k < 0) {
        load_req_free(r);
        return k;
    }
    return 0;
oom:
    load_req_free(r);
    return -ENOMEM;
}
