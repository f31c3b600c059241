/*
 * week_trace: the synthetic week of GPU notebooks that the week benchmark
 * (tests/bench/week.c) replays under several policies and it_idle drives
 * through a real controller, a day of it compressed. One seeded generator,
 * so both read the same people.
 *
 * The people, by index among WEEK_WORKSPACES:
 *   0-69  office: Monday to Friday, arriving within a quarter of an hour of
 *         their usual time (one of 08:00, 08:15, ... 10:00), lunch about
 *         12:00-13:00, leaving 17:00-18:30; short cells (a busy kernel and
 *         GPU for 2-10 minutes) while they work;
 *   70-79 train: office hours, and on Monday and Wednesday a training run
 *         started from a terminal at about 16:00 that keeps the GPU busy
 *         for 10 hours with no browser open (only the GPU says so);
 *   80-89 overnight: office hours, and on Tuesday and Thursday a cell that
 *         keeps the kernel busy from 18:00 to 06:00;
 *   90-94 abandoned: Monday and Tuesday morning, then never again;
 *   95-99 late: office hours, and on Thursday until 23:00.
 *
 * Times are Unix milliseconds in UTC, the week beginning WEEK_MONDAY.
 * Ownership: a trace is plain data, filled in place.
 */
#ifndef HIBERNATOR_TESTS_WEEK_TRACE_H
#define HIBERNATOR_TESTS_WEEK_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "workspace/replay.h"

#define WEEK_SEC INT64_C(1000)
#define WEEK_MINUTE (60 * WEEK_SEC)
#define WEEK_HOUR (60 * WEEK_MINUTE)
#define WEEK_DAY (24 * WEEK_HOUR)
/* 2027-01-04T00:00:00Z, a Monday */
#define WEEK_MONDAY INT64_C(1799020800000)
#define WEEK_WORKSPACES 100
#define WEEK_MAX_SPANS 256

enum week_kind { WEEK_OFFICE, WEEK_TRAIN, WEEK_OVERNIGHT, WEEK_ABANDONED, WEEK_LATE };

struct week_trace {
    struct replay_span spans[WEEK_MAX_SPANS]; /* in the order made, overlapping */
    size_t n;
    enum week_kind kind;
    int usual_minute; /* when this person usually arrives: 08:00 to 10:00 */
};

/* The WEEK_WORKSPACES people of SEED, traces[i] the person of index i. */
void week_traces_make(uint64_t seed, struct week_trace traces[WEEK_WORKSPACES]);

/* "office", "train", ... */
const char *week_kind_name(enum week_kind kind);

/* The index of the first person of KIND. */
int week_first_of(enum week_kind kind);

#endif
