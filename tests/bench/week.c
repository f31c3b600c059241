/*
 * week: a synthetic week of 100 GPU notebooks replayed through decide()
 * (workspace/replay.h) under several idle policies, and the week's
 * accelerator arithmetic for each: hours held, in use, given back, and the
 * share of the idle hours given back.
 *
 *   week [SEED]
 *
 * The people (a seeded generator, so a run is repeatable):
 *   70 office hours: Monday to Friday, arriving within a quarter of an
 *      hour of their usual time (one of 08:00, 08:15, ... 10:00), lunch
 *      about 12:00-13:00, leaving 17:00-18:30; short cells (a busy kernel
 *      and GPU for 2-10 minutes) while they work;
 *   10 train: office hours, and on Monday and Wednesday a training run
 *      started from a terminal at about 16:00 that keeps the GPU busy for
 *      10 hours with no browser open (only the GPU says it is in use);
 *   10 overnight: office hours, and on Tuesday and Thursday a cell that
 *      keeps the kernel busy from 18:00 to 06:00;
 *    5 abandoned: Monday and Tuesday morning, then never again;
 *    5 late: office hours, and on Thursday until 23:00.
 * The world: a snapshot takes 2 minutes and a restore from it 12 seconds
 * (GKE's published figures for a T4), a start from files 3 minutes.
 *
 * With a pre-warm (docs/idle.md, "Ready before you are") every workspace
 * says its owner's usual time on weekdays (spec.preWarm) and the class
 * allows a 15-minute lead, skipping workspaces nobody used for 3 days.
 * Besides the hours, each policy shows how many of the day's first
 * arrivals (after 4 hours away) found the notebook ready, and what came of
 * the pre-warms.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "workspace/class.h"
#include "workspace/replay.h"
#include "workspace/workspace.h"

#define SEC INT64_C(1000)
#define MINUTE (60 * SEC)
#define HOUR (60 * MINUTE)
#define DAY (24 * HOUR)
/* 2027-01-04T00:00:00Z, a Monday */
#define MONDAY INT64_C(1799020800000)
#define WORKSPACES 100
#define MAX_SPANS 256

static uint64_t rng;

static uint64_t next_random(void)
{
    /* splitmix64 */
    uint64_t z = (rng += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A time within [lo, hi) minutes. */
static int64_t minutes_between(int lo, int hi)
{
    return (int64_t)(lo + (int)(next_random() % (uint64_t)(hi - lo))) * MINUTE;
}

struct trace {
    struct replay_span spans[MAX_SPANS];
    size_t n;
    const char *kind;
    int usual_minute; /* when this person usually arrives: 08:00 to 10:00 */
};

static void add(struct trace *t, int64_t start, int64_t end, unsigned use)
{
    if (t->n < MAX_SPANS && end > start)
        t->spans[t->n++] = (struct replay_span){start, end, use};
}

/* A day at the office: present from arrival to lunch and from lunch to
 * leaving, with short cells while present. Returns when they left. */
static int64_t office_day(struct trace *t, int64_t day, int64_t leave_at)
{
    int64_t arrive = day + minutes_between(t->usual_minute - 15, t->usual_minute + 16);
    int64_t lunch = day + minutes_between(11 * 60 + 45, 12 * 60 + 15);
    int64_t back = lunch + minutes_between(45, 75);
    int64_t leave = leave_at ? leave_at : day + minutes_between(17 * 60, 18 * 60 + 30);
    add(t, arrive, lunch, REPLAY_PERSON);
    add(t, back, leave, REPLAY_PERSON);
    for (int64_t at = arrive + minutes_between(10, 60); at < leave;
         at += minutes_between(30, 120)) {
        if (at >= lunch && at < back)
            continue;
        add(t, at, at + minutes_between(2, 10), REPLAY_KERNEL | REPLAY_GPU);
    }
    return leave;
}

static void make_trace(struct trace *t, int i)
{
    t->n = 0;
    t->usual_minute = 8 * 60 + 15 * (int)(next_random() % 9);
    if (i < 70)
        t->kind = "office";
    else if (i < 80)
        t->kind = "train";
    else if (i < 90)
        t->kind = "overnight";
    else if (i < 95)
        t->kind = "abandoned";
    else
        t->kind = "late";
    for (int d = 0; d < 5; d++) {
        int64_t day = MONDAY + d * DAY;
        if (strcmp(t->kind, "abandoned") == 0) {
            if (d < 2)
                add(t, day + 9 * HOUR, day + 11 * HOUR + minutes_between(0, 60), REPLAY_PERSON);
            continue;
        }
        int late = strcmp(t->kind, "late") == 0 && d == 3;
        office_day(t, day, late ? day + 23 * HOUR : 0);
        if (strcmp(t->kind, "train") == 0 && (d == 0 || d == 2)) {
            int64_t start = day + minutes_between(15 * 60 + 45, 16 * 60 + 15);
            add(t, start, start + 10 * HOUR, REPLAY_GPU);
        }
        if (strcmp(t->kind, "overnight") == 0 && (d == 1 || d == 3))
            add(t, day + 18 * HOUR, day + 30 * HOUR, REPLAY_KERNEL);
    }
}

struct policy {
    const char *name;
    const char *idle; /* spec.idle */
    int snapshots;    /* GKE Pod Snapshots, else files and the checkpoint */
    int prewarm;      /* the class's preWarm, and every owner's usual time on weekdays */
};

static const struct policy policies[] = {
    {"idle 15m, snapshots", "{\"after\":\"15m\",\"minRunning\":\"10m\",\"warnBefore\":\"2m\"}", 1,
     0},
    {"idle 30m, snapshots", "{\"after\":\"30m\",\"minRunning\":\"10m\",\"warnBefore\":\"5m\"}", 1,
     0},
    {"idle 1h, snapshots", "{\"after\":\"1h\",\"minRunning\":\"10m\",\"warnBefore\":\"10m\"}", 1,
     0},
    {"idle 2h, snapshots", "{\"after\":\"2h\",\"minRunning\":\"15m\",\"warnBefore\":\"10m\"}", 1,
     0},
    {"idle 30m, files", "{\"after\":\"30m\",\"minRunning\":\"10m\",\"warnBefore\":\"5m\"}", 0, 0},
    {"idle 2h, evenings only",
     "{\"after\":\"2h\",\"minRunning\":\"15m\",\"warnBefore\":\"10m\",\"pauseWindows\":{"
     "\"timeZone\":\"UTC\",\"windows\":[{\"start\":\"19:00\",\"end\":\"08:00\"},"
     "{\"days\":[\"Sat\",\"Sun\"],\"start\":\"08:00\",\"end\":\"19:00\"}]}}",
     1, 0},
    {"idle 30m, snapshots, pre-warm",
     "{\"after\":\"30m\",\"minRunning\":\"10m\",\"warnBefore\":\"5m\"}", 1, 1},
    {"idle 30m, files, pre-warm",
     "{\"after\":\"30m\",\"minRunning\":\"10m\",\"warnBefore\":\"5m\"}", 0, 1},
};

static struct workspace_class *make_class(const struct policy *p)
{
    char json[2048];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"gpu-t4\"},\"spec\":{"
             "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],"
             "\"default\":\"quay.io/jupyter/pytorch-notebook:cuda12-2025-10-20\"},"
             "\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\",\"product\":\"Tesla-T4\"},"
             "\"home\":{\"size\":\"20Gi\"},"
             "\"activity\":{\"application\":\"Jupyter\",\"interval\":\"60s\","
             "\"gpu\":{\"prometheusURL\":\"http://prometheus:9090\"}},"
             "%s%s"
             "\"idle\":%s}}",
             p->snapshots ? "\"snapshot\":{\"backend\":\"GKE\",\"storageConfigName\":\"week\"},"
                          : "",
             p->prewarm ? "\"preWarm\":{\"lead\":\"15m\",\"skipAfterDays\":3}," : "", p->idle);
    cJSON *obj = cJSON_Parse(json);
    struct workspace_class *c = NULL;
    char *err = NULL;
    if (!obj || workspace_class_decode(obj, &c, &err) < 0) {
        fprintf(stderr, "week: the class of \"%s\" cannot be read: %s\n", p->name,
                err ? err : "not JSON");
        exit(1);
    }
    free(err);
    cJSON_Delete(obj);
    return c;
}

int main(int argc, char **argv)
{
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    static struct trace traces[WORKSPACES];
    rng = seed;
    for (int i = 0; i < WORKSPACES; i++)
        make_trace(&traces[i], i);
    const struct replay_times times = {
        .snapshot_ms = 2 * MINUTE, .restore_ms = 12 * SEC, .cold_start_ms = 3 * MINUTE};

    printf("A week of %d GPU notebooks (seed %llu), accelerator-hours:\n\n", WORKSPACES,
           (unsigned long long)seed);
    printf("| policy | held | in use | idle | returned | share of idle returned | pauses | "
           "paused while busy | interruptions | snapshotting | starting | people waited | "
           "first arrivals ready | pre-warms used / unused |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");

    int failed = 0;
    for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++) {
        struct workspace_class *c = make_class(&policies[p]);
        struct replay_result sum = {0};
        for (int i = 0; i < WORKSPACES; i++) {
            /* Monday to Friday at the owner's usual time */
            const struct workspace_prewarm owner = {
                .days = 0x3e, .minute = traces[i].usual_minute, .time_zone = "UTC"};
            struct replay_input in = {.cls = c,
                                      .start_ms = MONDAY,
                                      .end_ms = MONDAY + 7 * DAY,
                                      .spans = traces[i].spans,
                                      .n_spans = traces[i].n,
                                      .times = times,
                                      .prewarm = policies[p].prewarm ? &owner : NULL};
            struct replay_result r;
            int e = replay_run(&in, &r);
            if (e < 0) {
                fprintf(stderr, "week: %s, workspace %d (%s): %s\n", policies[p].name, i,
                        traces[i].kind, strerror(-e));
                failed = 1;
                continue;
            }
            sum.window_s += r.window_s;
            sum.in_use_s += r.in_use_s;
            sum.held_s += r.held_s;
            sum.returned_s += r.returned_s;
            sum.pauses += r.pauses;
            sum.busy_pauses += r.busy_pauses;
            sum.interruptions += r.interruptions;
            sum.snapshot_s += r.snapshot_s;
            sum.restore_s += r.restore_s;
            sum.waited_s += r.waited_s;
            sum.first_arrivals += r.first_arrivals;
            sum.first_arrivals_ready += r.first_arrivals_ready;
            sum.prewarms += r.prewarms;
            sum.prewarms_used += r.prewarms_used;
            sum.prewarms_unused += r.prewarms_unused;
        }
        double idle = sum.window_s - sum.in_use_s;
        char warm[64] = "-";
        if (policies[p].prewarm)
            snprintf(warm, sizeof(warm), "%lld / %lld of %lld", (long long)sum.prewarms_used,
                     (long long)sum.prewarms_unused, (long long)sum.prewarms);
        printf("| %s | %.0f | %.0f | %.0f | %.0f | %.1f %% | %lld | %lld | %lld | %.1f h | %.1f h "
               "| %.1f h | %lld of %lld (%.0f %%) | %s |\n",
               policies[p].name, sum.held_s / 3600, sum.in_use_s / 3600, idle / 3600,
               sum.returned_s / 3600, idle > 0 ? 100.0 * sum.returned_s / idle : 0,
               (long long)sum.pauses, (long long)sum.busy_pauses, (long long)sum.interruptions,
               sum.snapshot_s / 3600, sum.restore_s / 3600, sum.waited_s / 3600,
               (long long)sum.first_arrivals_ready, (long long)sum.first_arrivals,
               sum.first_arrivals
                   ? 100.0 * (double)sum.first_arrivals_ready / (double)sum.first_arrivals
                   : 0,
               warm);
        workspace_class_free(c);
    }
    return failed;
}
