/*
 * report: accelerator use per namespace and class over a time range, from
 * the workspaces' ledgers (ledger.h).
 *
 * For each workspace, with k the accelerators it takes (0 for a CPU
 * workspace), every interval clipped to [from, to]:
 *   held        k x each record's [heldSince, acceleratorReleasedAt], plus
 *               the current hold [accounting.acceleratorHeldSince, now];
 *   given back  k x each record's [acceleratorReleasedAt, podScheduledAt],
 *               or up to the range's end (at most now) for the newest
 *               record while the workspace is still paused;
 *   snapshot    snapshotSeconds of the pauses whose snapshot became Ready
 *               in the range (a figure counts with its time, workspace.h);
 *   time to ready  secondsToReady of the resumes ready in the range: median
 *               and p90 (linear between the nearest ranks);
 *   cold-start share  of those resumes, the ones that did not bring the
 *               memory back (ColdStart, FromCheckpoint, Fresh);
 *   pauses, resumes  pausedAt, resumeRequestedAt in the range.
 * A note names each workspace whose kept history does not reach back to
 * `from` (accounting counts more pauses than it keeps), and each without a
 * history at all (figures from lastPause/lastResume only, no held time).
 * For a workspace whose history does not reach back to `from`, the counts
 * (pauses, resumes, pre-warmed, the restore sources and so the cold-start
 * share, what the pauses kept) come from status.accounting instead, when
 * its counters by outcome are there and hold at least what the history
 * does: they cover the workspace's whole life (they cannot be told apart
 * by time), and its note says so. The times to ready exist only in the
 * history: a note per group says from when it holds them all.
 *
 * The items are read with the controller's decoder, leniently
 * (workspace_decode_lenient()): a workspace it refuses is still counted
 * with what could be read.
 *
 * Pure: the list, the range and "now" are arguments.
 *
 * Ownership: a report owns its strings; report_free() releases it.
 */
#ifndef HIBERNATOR_CLI_REPORT_H
#define HIBERNATOR_CLI_REPORT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/args.h"

#define REPORT_SOURCES 5
#define REPORT_MEMORIES 3

struct report_group {
    char *ns;
    char *class_name;
    int workspaces;
    double held_s;       /* accelerator-seconds */
    double given_back_s; /* accelerator-seconds */
    double snapshot_s;
    double *ready_s; /* times to ready, sorted once computed */
    size_t n_ready, cap_ready;
    double ready_p50, ready_p90; /* NAN when no resume was ready in the range */
    int64_t restores;            /* resumes with a known restoredFrom */
    int64_t lost_memory;         /* of those, without the memory */
    int64_t pauses, resumes;
    int64_t prewarms; /* of the resumes, pre-warms (the controller's, ahead of the owner) */
    /* The resumes by restoredFrom (FromSnapshot, ColdStart, FromCheckpoint,
     * Fresh, FreshHome) and the pauses by memory (snapshot, files,
     * snapshotFailed). */
    int64_t resumes_from[REPORT_SOURCES];
    int64_t pauses_kept[REPORT_MEMORIES];
    /* Workspaces whose kept history does not reach back to the range's
     * start; of them, those whose counts came from the counters (their
     * whole life). */
    int short_histories;
    int whole_life;
    /* The times to ready cover the range from here: its start, or the
     * latest start of a short history. */
    int64_t percentiles_since_ms;
};

struct report {
    int64_t from_ms, to_ms;
    struct report_group *groups; /* by namespace, then class */
    size_t n_groups;
    char **notes;
    size_t n_notes;
};

/* Computes the report of a WorkspaceList. Returns 0 or -ENOMEM. */
int report_compute(const cJSON *list, int64_t from_ms, int64_t to_ms, int64_t now_ms,
                   struct report **ret);

/* Writes the report as a table (with the range above it and the notes
 * below), CSV (notes go to notes_out), or JSON (notes inside). Returns 0 or
 * -ENOMEM. */
int report_print(const struct report *r, enum cli_output format, FILE *out, FILE *notes_out);

void report_free(struct report *r);

/* The p-th percentile (0..1) of n sorted values, linear between the closest
 * ranks (p=0.5 of {1,2,3,4} is 2.5); NAN for n == 0. */
double report_percentile(const double *sorted, size_t n, double p);

#endif
