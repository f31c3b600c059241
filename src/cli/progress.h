/*
 * progress: what a pause, resume or start is doing, judged from the
 * Workspace as the watch delivers it — for `resume --wait`, `pause --wait`
 * and the drill.
 *
 * A resume goes: requested → waiting for capacity (the scheduler's words) →
 * restoring (or starting) → ready, then, when the pod came from a snapshot,
 * confirming whether the memory came back (the controller may need up to
 * half a minute to tell a cold start) → done, with the controller's time to
 * ready and where the session came from. Nothing counts before the
 * controller has seen the request (status.observedGeneration reaches the
 * generation the request made), and a resume is recognised by
 * status.accounting.resumes growing past its value at the request, so an
 * older resume's readyAt or an old Paused state is never mistaken for this
 * request's; a resume already counted and not ready yet is followed as it
 * is (a second `resume --wait`).
 *
 * Pure: the workspace (as the controller's decoder reads it, leniently:
 * workspace_decode_lenient()) and the times are arguments.
 */
#ifndef HIBERNATOR_CLI_PROGRESS_H
#define HIBERNATOR_CLI_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "workspace/workspace.h"

enum progress_goal {
    PROGRESS_RESUME,  /* spec.paused false on a paused workspace */
    PROGRESS_PAUSE,   /* spec.paused true */
    PROGRESS_RUNNING, /* a new workspace: Running and Ready */
};

enum progress_phase {
    PROGRESS_REQUESTED, /* the controller has not acted on it yet */
    PROGRESS_PAUSING,
    PROGRESS_WAITING_FOR_CAPACITY,
    PROGRESS_QUEUED,     /* Kueue holds the pod: its queue and place */
    PROGRESS_STARTING,   /* scheduled or being scheduled, restoring or starting */
    PROGRESS_CONFIRMING, /* ready; whether the memory came back is not known yet */
    PROGRESS_DONE,
    PROGRESS_FAILED, /* state Failed: detail says why */
};

struct progress {
    enum progress_goal goal;
    int64_t started_ms;
    int64_t generation;                    /* metadata.generation the request made */
    int64_t pauses_before, resumes_before; /* accounting at the request */
    int counted_expected; /* resume: a pause was open, the controller counts a resume */
    enum progress_phase phase;
    char detail[512];
    /* When done: */
    double seconds;          /* to ready, or to paused */
    char restored_from[32];  /* resume: FromSnapshot, ColdStart, ...; "" when unknown */
    double snapshot_seconds; /* pause: the snapshot's duration, < 0 when none */
};

/* Starts following a request sent at now; ws is the workspace as the
 * request's answer returned it (the new generation, the old status). */
void progress_begin(struct progress *p, enum progress_goal goal, const struct workspace *ws,
                    int64_t now_ms);

/* Takes a newer state of the workspace. Returns 1 when the phase or its
 * detail changed (time to print a line), else 0. */
int progress_observe(struct progress *p, const struct workspace *ws, int64_t now_ms);

/* "[  12s] waiting for capacity: 0/3 nodes are available: ..." */
void progress_line(const struct progress *p, int64_t now_ms, char *out, size_t size);

/* "ready in 12.4s (restored from snapshot)", "paused in 8.2s (snapshot
 * 3.0s)", "running in 4.1s". */
void progress_result(const struct progress *p, char *out, size_t size);

#endif
