/*
 * whatif: what other idle policies would have done with the use the
 * controller recorded (docs/idle.md, "What if").
 *
 * Each workspace's activity record (activity/record.h, the ConfigMap
 * <workspace>-activity) is replayed through decide() on a virtual clock
 * (workspace/replay.h) under its class as it is ("current") and under
 * candidates that change one thing: the idle time (15m, 30m, 1h, 2h), no
 * pause windows, pre-warms on or off. The world's times are the class's
 * own, medians of its workspaces' ledger (status.history) where there are
 * any, GKE's published T4 figures otherwise; the result says which.
 *
 * Ownership: struct whatif owns everything in it; whatif_free().
 */
#ifndef HIBERNATOR_CLI_WHATIF_H
#define HIBERNATOR_CLI_WHATIF_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/args.h"

/* GKE Pod Snapshots on one T4 (gke-labs/workspaces, resumable-notebooks):
 * a GPU pause of 115-127 s, a resume of 11-12 s; a start from files is
 * the class's own to know: 3 minutes when nothing says. */
#define WHATIF_DEFAULT_SNAPSHOT_S 120.0
#define WHATIF_DEFAULT_RESTORE_S 12.0
#define WHATIF_DEFAULT_COLD_START_S 180.0

struct whatif_row {
    char *policy;
    int workspaces;
    double window_s;   /* the records' time, summed */
    double in_use_s;   /* of it, in use */
    double held_s;     /* accelerator-seconds held */
    double returned_s; /* accelerator-seconds given back */
    int64_t pauses;
    int64_t interruptions; /* a person's resume within 10 minutes of a pause */
    int64_t busy_pauses;   /* paused while a kernel or the GPU was busy */
    double snapshot_s, restore_s, waited_s;
    int64_t first_arrivals, first_arrivals_ready;
    int64_t prewarms, prewarms_used, prewarms_unused;
};

struct whatif {
    struct whatif_row *rows;
    size_t n_rows;
    char **notes; /* what was skipped, and where the times came from */
    size_t n_notes;
};

/* Replays the records of configmaps (a ConfigMapList) of the workspaces of
 * workspaces (a WorkspaceList) under their classes (a WorkspaceClassList)
 * and the candidates. A record's last run lasts until now_ms (Unix ms: the
 * state holds until the controller notes another). zoneinfo is where time
 * zones are read (NULL: the system's). Returns 0 with *ret (whatif_free())
 * or -ENOMEM. */
int whatif_compute(const cJSON *workspaces, const cJSON *classes, const cJSON *configmaps,
                   int64_t now_ms, const char *zoneinfo, struct whatif **ret);

/* Writes the rows as a table (notes below), CSV (notes to notes_out) or
 * JSON (notes inside). Returns 0 or -ENOMEM. */
int whatif_print(const struct whatif *w, enum cli_output format, FILE *out, FILE *notes_out);

void whatif_free(struct whatif *w);

#endif
