#include "metrics/registry.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A series is one allocation: the struct, its label values (pointers into
 * the same block) and, for a histogram, its per-bucket counts (not
 * cumulative; the exposition adds them up). A family keeps its series in an
 * array sorted by label values, so lookups are a binary search and the
 * exposition needs no sorting.
 */
struct series {
    double value; /* counter, gauge */
    double sum;   /* histogram */
    uint64_t count;
    uint64_t *buckets;
    char *values[];
};

struct series_set {
    struct series **items;
    size_t n, cap;
};

struct metric_family {
    struct metrics_registry *r;
    char *name;
    char *help;
    enum metric_type type;
    char *labels[METRICS_MAX_LABELS];
    size_t n_labels;
    double *bounds;
    size_t n_bounds;
    struct series_set set;
};

struct metrics_registry {
    pthread_mutex_t lock;
    size_t max_series;
    struct metric_family **families; /* sorted by name */
    size_t n_families, cap_families;
    struct metric_family *dropped;
};

struct metrics_gauge_update {
    struct metric_family *f;
    struct series_set set;
    uint64_t dropped;
};

/* ---- series ---- */

static const char *value_or_empty(const char *const *values, size_t i)
{
    return values && values[i] ? values[i] : "";
}

static int compare_values(const struct series *s, const char *const *values, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int c = strcmp(s->values[i], value_or_empty(values, i));
        if (c)
            return c;
    }
    return 0;
}

/* The index of the series with these values, or where it would go (*found 0). */
static size_t set_find(const struct series_set *set, const char *const *values, size_t n_labels,
                       int *found)
{
    size_t lo = 0, hi = set->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = compare_values(set->items[mid], values, n_labels);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

static struct series *series_new(const struct metric_family *f, const char *const *values)
{
    size_t strings = 0;
    for (size_t i = 0; i < f->n_labels; i++)
        strings += strlen(value_or_empty(values, i)) + 1;
    size_t head = sizeof(struct series) + f->n_labels * sizeof(char *);
    size_t counts = f->type == METRIC_HISTOGRAM ? f->n_bounds * sizeof(uint64_t) : 0;
    /* The counts follow the pointers, which keeps them aligned. */
    struct series *s = calloc(1, head + counts + strings);
    if (!s)
        return NULL;
    s->buckets = counts ? (uint64_t *)((char *)s + head) : NULL;
    char *p = (char *)s + head + counts;
    for (size_t i = 0; i < f->n_labels; i++) {
        const char *v = value_or_empty(values, i);
        size_t len = strlen(v) + 1;
        memcpy(p, v, len);
        s->values[i] = p;
        p += len;
    }
    return s;
}

static void set_clear(struct series_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        free(set->items[i]);
    free(set->items);
    *set = (struct series_set){0};
}

/* The series with these values, created when new. Returns 0, -ENOSPC when
 * the set already holds max series, or -ENOMEM. */
static int set_get(struct series_set *set, const struct metric_family *f, size_t max,
                   const char *const *values, struct series **ret)
{
    int found;
    size_t at = set_find(set, values, f->n_labels, &found);
    if (found) {
        *ret = set->items[at];
        return 0;
    }
    if (set->n >= max)
        return -ENOSPC;
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 4;
        struct series **items = realloc(set->items, cap * sizeof(*items));
        if (!items)
            return -ENOMEM;
        set->items = items;
        set->cap = cap;
    }
    struct series *s = series_new(f, values);
    if (!s)
        return -ENOMEM;
    memmove(set->items + at + 1, set->items + at, (set->n - at) * sizeof(*set->items));
    set->items[at] = s;
    set->n++;
    *ret = s;
    return 0;
}

/* ---- families ---- */

static int valid_name(const char *name, int colons)
{
    if (!name || !name[0])
        return 0;
    for (const char *p = name; *p; p++) {
        char c = *p;
        int letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        int digit = c >= '0' && c <= '9';
        if (!(letter || (digit && p != name) || (colons && c == ':')))
            return 0;
    }
    return 1;
}

static void family_free(struct metric_family *f)
{
    if (!f)
        return;
    set_clear(&f->set);
    free(f->name);
    free(f->help);
    for (size_t i = 0; i < f->n_labels; i++)
        free(f->labels[i]);
    free(f->bounds);
    free(f);
}

static size_t family_index(const struct metrics_registry *r, const char *name, int *found)
{
    size_t lo = 0, hi = r->n_families;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->families[mid]->name, name);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

static int family_new(struct metrics_registry *r, const char *name, const char *help,
                      enum metric_type type, const char *const *labels, const double *bounds,
                      size_t n_bounds, struct metric_family **ret)
{
    if (!valid_name(name, 1))
        return -EINVAL;
    size_t n_labels = 0;
    for (; labels && labels[n_labels]; n_labels++) {
        const char *l = labels[n_labels];
        if (n_labels == METRICS_MAX_LABELS || !valid_name(l, 0) || strncmp(l, "__", 2) == 0 ||
            (type == METRIC_HISTOGRAM && strcmp(l, "le") == 0))
            return -EINVAL;
        for (size_t k = 0; k < n_labels; k++)
            if (strcmp(labels[k], l) == 0)
                return -EINVAL;
    }
    for (size_t i = 0; i < n_bounds; i++)
        if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
            return -EINVAL;

    struct metric_family *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->r = r;
    f->type = type;
    f->name = strdup(name);
    f->help = strdup(help ? help : "");
    int oom = !f->name || !f->help;
    for (size_t i = 0; i < n_labels; i++) {
        f->labels[i] = strdup(labels[i]);
        oom |= !f->labels[i];
    }
    f->n_labels = n_labels;
    if (n_bounds) {
        f->bounds = malloc(n_bounds * sizeof(*f->bounds));
        if (f->bounds)
            memcpy(f->bounds, bounds, n_bounds * sizeof(*bounds));
        oom |= !f->bounds;
        f->n_bounds = n_bounds;
    }
    struct series *unused;
    /* A family without labels always has its one series. */
    if (oom || (n_labels == 0 && set_get(&f->set, f, 1, NULL, &unused) < 0)) {
        family_free(f);
        return -ENOMEM;
    }

    pthread_mutex_lock(&r->lock);
    int found;
    size_t at = family_index(r, name, &found);
    int e = 0;
    if (found) {
        e = -EEXIST;
    } else if (r->n_families == r->cap_families) {
        size_t cap = r->cap_families ? r->cap_families * 2 : 16;
        struct metric_family **fs = realloc(r->families, cap * sizeof(*fs));
        if (fs) {
            r->families = fs;
            r->cap_families = cap;
        } else {
            e = -ENOMEM;
        }
    }
    if (e == 0) {
        memmove(r->families + at + 1, r->families + at,
                (r->n_families - at) * sizeof(*r->families));
        r->families[at] = f;
        r->n_families++;
    }
    pthread_mutex_unlock(&r->lock);
    if (e < 0) {
        family_free(f);
        return e;
    }
    *ret = f;
    return 0;
}

int metrics_registry_new(size_t max_series, struct metrics_registry **ret)
{
    struct metrics_registry *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        return -ENOMEM;
    }
    r->max_series = max_series ? max_series : METRICS_MAX_SERIES;
    int e = family_new(r, METRICS_DROPPED_NAME,
                       "Series not recorded because their family already had the most allowed.",
                       METRIC_COUNTER, NULL, NULL, 0, &r->dropped);
    if (e < 0) {
        metrics_registry_free(r);
        return e;
    }
    *ret = r;
    return 0;
}

void metrics_registry_free(struct metrics_registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_families; i++)
        family_free(r->families[i]);
    free(r->families);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

int metrics_counter_new(struct metrics_registry *r, const char *name, const char *help,
                        const char *const *labels, struct metric_family **ret)
{
    return family_new(r, name, help, METRIC_COUNTER, labels, NULL, 0, ret);
}

int metrics_gauge_new(struct metrics_registry *r, const char *name, const char *help,
                      const char *const *labels, struct metric_family **ret)
{
    return family_new(r, name, help, METRIC_GAUGE, labels, NULL, 0, ret);
}

int metrics_histogram_new(struct metrics_registry *r, const char *name, const char *help,
                          const char *const *labels, const double *buckets, size_t n_buckets,
                          struct metric_family **ret)
{
    return family_new(r, name, help, METRIC_HISTOGRAM, labels, buckets, n_buckets, ret);
}

/* ---- updates ---- */

/* Called with the lock held. */
static void count_dropped(struct metrics_registry *r, uint64_t n)
{
    r->dropped->set.items[0]->value += (double)n;
}

enum op {
    OP_ADD,
    OP_SET,
    OP_OBSERVE,
};

static int update(struct metric_family *f, const char *const *values, enum op op, double v)
{
    if (!f || isnan(v))
        return -EINVAL;
    struct metrics_registry *r = f->r;
    pthread_mutex_lock(&r->lock);
    struct series *s;
    int e = set_get(&f->set, f, r->max_series, values, &s);
    if (e == -ENOSPC)
        count_dropped(r, 1);
    if (e == 0) {
        switch (op) {
        case OP_ADD:
            s->value += v;
            break;
        case OP_SET:
            s->value = v;
            break;
        case OP_OBSERVE:
            for (size_t i = 0; i < f->n_bounds; i++) {
                if (v <= f->bounds[i]) {
                    s->buckets[i]++;
                    break;
                }
            }
            s->count++;
            s->sum += v;
            break;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return e;
}

int metrics_counter_add(struct metric_family *f, const char *const *values, double delta)
{
    if (!f || f->type != METRIC_COUNTER || delta < 0)
        return -EINVAL;
    return update(f, values, OP_ADD, delta);
}

int metrics_gauge_set(struct metric_family *f, const char *const *values, double value)
{
    if (!f || f->type != METRIC_GAUGE)
        return -EINVAL;
    return update(f, values, OP_SET, value);
}

int metrics_gauge_add(struct metric_family *f, const char *const *values, double delta)
{
    if (!f || f->type != METRIC_GAUGE)
        return -EINVAL;
    return update(f, values, OP_ADD, delta);
}

int metrics_histogram_observe(struct metric_family *f, const char *const *values, double value)
{
    if (!f || f->type != METRIC_HISTOGRAM)
        return -EINVAL;
    return update(f, values, OP_OBSERVE, value);
}

int metrics_gauge_update_begin(struct metric_family *f, struct metrics_gauge_update **ret)
{
    if (!f || f->type != METRIC_GAUGE)
        return -EINVAL;
    struct metrics_gauge_update *u = calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    u->f = f;
    *ret = u;
    return 0;
}

int metrics_gauge_update_add(struct metrics_gauge_update *u, const char *const *values,
                             double delta)
{
    if (!u || isnan(delta))
        return -EINVAL;
    struct series *s;
    /* max_series never changes after the registry is made: no lock needed. */
    int e = set_get(&u->set, u->f, u->f->r->max_series, values, &s);
    if (e == -ENOSPC)
        u->dropped++;
    if (e == 0)
        s->value += delta;
    return e;
}

void metrics_gauge_update_commit(struct metrics_gauge_update *u)
{
    if (!u)
        return;
    struct metric_family *f = u->f;
    struct series_set old;
    pthread_mutex_lock(&f->r->lock);
    old = f->set;
    f->set = u->set;
    if (u->dropped)
        count_dropped(f->r, u->dropped);
    pthread_mutex_unlock(&f->r->lock);
    set_clear(&old);
    free(u);
}

void metrics_gauge_update_abort(struct metrics_gauge_update *u)
{
    if (!u)
        return;
    set_clear(&u->set);
    free(u);
}

/* ---- exposition ---- */

void metrics_format_value(double v, char *out, size_t size)
{
    if (isnan(v)) {
        snprintf(out, size, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(out, size, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == 0) {
        snprintf(out, size, "0");
        return;
    }
    /* The fewest significant digits that read back as v, then the choice
     * between plain and exponent notation of Go's strconv ('g', -1), which
     * Prometheus' client uses. */
    char e[40];
    int digits = 1;
    for (; digits < 17; digits++) {
        snprintf(e, sizeof(e), "%.*e", digits - 1, v);
        if (strtod(e, NULL) == v)
            break;
    }
    snprintf(e, sizeof(e), "%.*e", digits - 1, v);
    const char *x = strchr(e, 'e');
    int exp = x ? atoi(x + 1) : 0;
    if (exp < -4 || exp >= 6) {
        snprintf(out, size, "%s", e);
        return;
    }
    int decimals = digits - 1 - exp;
    snprintf(out, size, "%.*f", decimals > 0 ? decimals : 0, v);
}

static int put_escaped(struct buf *b, const char *s, int quotes)
{
    const char *run = s;
    int e = 0;
    for (const char *p = s; *p && e == 0; p++) {
        const char *rep = NULL;
        if (*p == '\\')
            rep = "\\\\";
        else if (*p == '\n')
            rep = "\\n";
        else if (quotes && *p == '"')
            rep = "\\\"";
        if (!rep)
            continue;
        e = buf_append(b, run, (size_t)(p - run));
        if (e == 0)
            e = buf_append_str(b, rep);
        run = p + 1;
    }
    if (e == 0)
        e = buf_append_str(b, run);
    return e;
}

/* {a="x",b="y"} with an extra le="..." for a bucket; nothing when empty. */
static int put_labels(struct buf *b, const struct metric_family *f, const struct series *s,
                      const char *le)
{
    if (f->n_labels == 0 && !le)
        return 0;
    int e = buf_append_str(b, "{");
    for (size_t i = 0; i < f->n_labels && e == 0; i++) {
        e = buf_printf(b, "%s%s=\"", i ? "," : "", f->labels[i]);
        if (e == 0)
            e = put_escaped(b, s->values[i], 1);
        if (e == 0)
            e = buf_append_str(b, "\"");
    }
    if (e == 0 && le)
        e = buf_printf(b, "%sle=\"%s\"", f->n_labels ? "," : "", le);
    if (e == 0)
        e = buf_append_str(b, "}");
    return e;
}

static int put_sample(struct buf *b, const struct metric_family *f, const char *suffix,
                      const struct series *s, const char *le, double v)
{
    char num[40];
    metrics_format_value(v, num, sizeof(num));
    int e = buf_printf(b, "%s%s", f->name, suffix);
    if (e == 0)
        e = put_labels(b, f, s, le);
    if (e == 0)
        e = buf_printf(b, " %s\n", num);
    return e;
}

static int render_family(struct buf *b, const struct metric_family *f)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    int e = buf_printf(b, "# HELP %s ", f->name);
    if (e == 0)
        e = put_escaped(b, f->help, 0);
    if (e == 0)
        e = buf_printf(b, "\n# TYPE %s %s\n", f->name, types[f->type]);
    for (size_t i = 0; i < f->set.n && e == 0; i++) {
        const struct series *s = f->set.items[i];
        if (f->type != METRIC_HISTOGRAM) {
            e = put_sample(b, f, "", s, NULL, s->value);
            continue;
        }
        uint64_t cumulative = 0;
        for (size_t k = 0; k < f->n_bounds && e == 0; k++) {
            char le[40];
            metrics_format_value(f->bounds[k], le, sizeof(le));
            cumulative += s->buckets[k];
            e = put_sample(b, f, "_bucket", s, le, (double)cumulative);
        }
        if (e == 0)
            e = put_sample(b, f, "_bucket", s, "+Inf", (double)s->count);
        if (e == 0)
            e = put_sample(b, f, "_sum", s, NULL, s->sum);
        if (e == 0)
            e = put_sample(b, f, "_count", s, NULL, (double)s->count);
    }
    return e;
}

int metrics_registry_render(struct metrics_registry *r, struct buf *out)
{
    pthread_mutex_lock(&r->lock);
    int e = 0;
    for (size_t i = 0; i < r->n_families && e == 0; i++)
        e = render_family(out, r->families[i]);
    pthread_mutex_unlock(&r->lock);
    return e;
}
