/*
 * registry: the process's Prometheus metrics and their text exposition
 * (format 0.0.4, what Prometheus scrapes from /metrics).
 *
 * A family is one metric name with its help text, its type (counter, gauge
 * or histogram with explicit buckets) and its label names; a series is one
 * set of label values in a family. Series appear when first touched. A
 * family without labels has its one series from the start (at 0).
 *
 * The exposition is sorted and stable: families by name, series by their
 * label values (in the order the labels were declared), histogram buckets
 * in order ending with le="+Inf", then _sum and _count. Label values and
 * help texts are escaped as the format asks (backslash, double quote in
 * label values, newline). Numbers are written as Prometheus' own client
 * writes them (shortest form that reads back exactly; +Inf, -Inf, NaN).
 *
 * Label values often come from the cluster (namespaces, class names), so a
 * family holds at most max_series series (METRICS_MAX_SERIES by default):
 * a new series past that is dropped and counted in
 * hibernator_metrics_series_dropped_total, which every registry has.
 *
 * A gauge whose series are computed afresh each time (workspaces by class
 * and state) is replaced wholesale: build the new set with
 * metrics_gauge_update_*() off to the side, then commit swaps it in, so a
 * scrape sees the old set or the new one, never half of each, and series
 * that went away disappear.
 *
 * Threads: every function may be called from any thread; one mutex per
 * registry guards the values (the event loop updates, the HTTP server's
 * thread renders).
 *
 * Ownership: the registry owns its families (valid until
 * metrics_registry_free()) and copies every name, help text and label value
 * it is given.
 */
#ifndef HIBERNATOR_METRICS_REGISTRY_H
#define HIBERNATOR_METRICS_REGISTRY_H

#include <stddef.h>

#include "util/buf.h"

#define METRICS_MAX_SERIES 10000
#define METRICS_MAX_LABELS 8
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_DROPPED_NAME "hibernator_metrics_series_dropped_total"

enum metric_type {
    METRIC_COUNTER,
    METRIC_GAUGE,
    METRIC_HISTOGRAM,
};

struct metrics_registry;
struct metric_family;
struct metrics_gauge_update;

/* A registry whose families hold at most max_series series each (0: the
 * default, METRICS_MAX_SERIES). Returns 0 or -ENOMEM. */
int metrics_registry_new(size_t max_series, struct metrics_registry **ret_registry);

/* Frees the registry and its families; accepts NULL. */
void metrics_registry_free(struct metrics_registry *r);

/*
 * Registers a family: metrics_counter_new() a counter, metrics_gauge_new() a
 * gauge, metrics_histogram_new() a histogram. labels is a NULL-terminated
 * list of label names (NULL for none, at most METRICS_MAX_LABELS).
 * Histograms take their upper bounds (buckets, n_buckets of them), finite
 * and strictly increasing (+Inf is added). Everything given is copied.
 * Returns 0 with *ret_family set, -EEXIST when the name is taken, -EINVAL
 * for a name, label or bucket list Prometheus would refuse (a histogram may
 * not have a label "le"), or -ENOMEM.
 */
int metrics_counter_new(struct metrics_registry *r, const char *name, const char *help,
                        const char *const *labels, struct metric_family **ret_family);
int metrics_gauge_new(struct metrics_registry *r, const char *name, const char *help,
                      const char *const *labels, struct metric_family **ret_family);
int metrics_histogram_new(struct metrics_registry *r, const char *name, const char *help,
                          const char *const *labels, const double *buckets, size_t n_buckets,
                          struct metric_family **ret_family);

/*
 * metrics_counter_add() adds delta (>= 0), metrics_gauge_set() sets value,
 * metrics_gauge_add() adds delta (any sign), metrics_histogram_observe()
 * counts value in its bucket, _sum and _count. Each updates the series with
 * these label values (one per label name, in their order; NULL reads as "";
 * values may be NULL for a family without labels), creating it at 0 when
 * new. Returns 0, -EINVAL for a NULL family, the wrong type, a negative
 * counter increment or a NaN, -ENOSPC when the series is new and the family
 * is full (counted as dropped), or -ENOMEM.
 */
int metrics_counter_add(struct metric_family *f, const char *const *values, double delta);
int metrics_gauge_set(struct metric_family *f, const char *const *values, double value);
int metrics_gauge_add(struct metric_family *f, const char *const *values, double delta);
int metrics_histogram_observe(struct metric_family *f, const char *const *values, double value);

/* Starts the next set of series of gauge family f. Returns 0, -EINVAL (not
 * a gauge) or -ENOMEM. */
int metrics_gauge_update_begin(struct metric_family *f, struct metrics_gauge_update **ret_update);

/* Adds delta to a series of the new set (created at 0). Results as
 * metrics_gauge_add(); a series past the family's limit is counted as
 * dropped when the set is committed. */
int metrics_gauge_update_add(struct metrics_gauge_update *u, const char *const *values,
                             double delta);

/* Replaces the family's series with the new set and frees u. */
void metrics_gauge_update_commit(struct metrics_gauge_update *u);

/* Frees u, leaving the family as it was; accepts NULL. */
void metrics_gauge_update_abort(struct metrics_gauge_update *u);

/* Appends the exposition of every family to out. Returns 0, or -ENOBUFS /
 * -ENOMEM from out (what was appended stays). */
int metrics_registry_render(struct metrics_registry *r, struct buf *out);

/* Writes v as the exposition does ("0.25", "1e-08", "+Inf", "NaN").
 * size of at least 32 always suffices. */
void metrics_format_value(double v, char *out, size_t size);

#endif
