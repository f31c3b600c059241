/*
 * week: a synthetic week of 100 GPU notebooks replayed through decide()
 * (workspace/replay.h) under several idle policies, and the week's
 * accelerator arithmetic for each: hours held, in use, given back, and the
 * share of the idle hours given back.
 *
 *   week [SEED]
 *
 * The people are tests/traces/week_trace.h's (a seeded generator, so a run
 * is repeatable; it_idle drives a day of the same people through the
 * controller). The world: a snapshot takes 2 minutes and a restore from it
 * 12 seconds (GKE's published figures for a T4), a start from files 3
 * minutes.
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

#include "week_trace.h"

#define SEC WEEK_SEC
#define MINUTE WEEK_MINUTE
#define DAY WEEK_DAY
#define MONDAY WEEK_MONDAY
#define WORKSPACES WEEK_WORKSPACES

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
    static struct week_trace traces[WORKSPACES];
    week_traces_make(seed, traces);
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
                        week_kind_name(traces[i].kind), strerror(-e));
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
