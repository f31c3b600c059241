/*
 * replay: one workspace's life under decide(), on a virtual clock.
 *
 * What a policy would have done with a known pattern of use: the same
 * decide() the controller runs, stepped from one moment that matters to
 * the next (decide's requeue time, a probe round, the pod becoming ready, a
 * snapshot becoming Ready, a change in the owner's activity), over a world
 * that plays the cluster the way the rules see it:
 *
 *   - a pod the rules create is scheduled at once and is ready after the
 *     restore time (restoring from a snapshot) or the cold-start time
 *     (from files and the application's checkpoint); a pod they delete is
 *     gone after the stop time; the controller's next step after its own
 *     write (the watch event of it) comes after the step time;
 *   - a snapshot the rules begin is Ready after the snapshot time; the
 *     application answers a checkpoint request and a restore check at once;
 *   - the owner's activity is a list of spans: a person at the notebook
 *     (the application's last activity moves with them, and a person who
 *     finds the workspace paused resumes it), a kernel running a cell
 *     (busy), the GPU busy (utilisation above any threshold). Probe rounds
 *     run at the class's interval while the pod is ready, as the
 *     controller's do.
 *
 * Pure: no I/O, no clock. The controller's own answers are not modelled
 * (its API writes always succeed, at once), nor the scheduler's capacity:
 * a replay measures a policy, not a cluster.
 *
 * Ownership: the input is only read; the result is plain data.
 */
#ifndef HIBERNATOR_WORKSPACE_REPLAY_H
#define HIBERNATOR_WORKSPACE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "workspace/class.h"

struct tz;

enum replay_use {
    REPLAY_PERSON = 1 << 0, /* someone at the notebook: interacting */
    REPLAY_KERNEL = 1 << 1, /* a kernel running a cell, nobody needed */
    REPLAY_GPU = 1 << 2,    /* the GPU busy, whatever runs it */
    /* Not use: the probe got no answer (a record's 'u'). A round in it
     * fails, as the controller's did, and a failed round withdraws an
     * announced pause (docs/idle.md). */
    REPLAY_UNANSWERED = 1 << 3,
};

/* [start_ms, end_ms): one kind of use (enum replay_use bits). Spans may
 * overlap and come in any order. */
struct replay_span {
    int64_t start_ms;
    int64_t end_ms;
    unsigned use;
};

/* How long the world takes. */
struct replay_times {
    int64_t snapshot_ms;   /* a snapshot from its request to Ready */
    int64_t restore_ms;    /* a pod restored from a snapshot, created to ready */
    int64_t cold_start_ms; /* a pod from files and the checkpoint, created to ready */
    int64_t stop_ms;       /* a deleted pod until it is gone; 0: a second */
    int64_t step_ms;       /* the controller's own write until its next step; 0: 100 ms */
};

struct replay_input {
    const struct workspace_class *cls; /* the policy */
    const struct tz *zone;             /* the class's pause-window zone; NULL: UTC */
    int64_t start_ms, end_ms;          /* the window; the workspace is created running at start */
    int start_paused;                  /* ... or paused (a person's arrival resumes it) */
    int start_ready; /* running at start: its pod is ready then (a record that began running) */
    const struct replay_span *spans;
    size_t n_spans;
    struct replay_times times;
    int64_t idle_after_ms; /* the workspace's spec.idle.after, 0: the class's */
    /* The workspace's spec.preWarm (copied), NULL: none; and its zone,
     * NULL: UTC. */
    const struct workspace_prewarm *prewarm;
    const struct tz *prewarm_zone;
};

#define REPLAY_PAUSE_TIMES 16

/* A person who comes after this long without anyone at the notebook comes
 * for the first time that day. */
#define REPLAY_FIRST_ARRIVAL_GAP_MS (4 * 60 * 60 * 1000)

/* A person who resumes a workspace this soon after its pause completed was
 * interrupted by it. */
#define REPLAY_INTERRUPTION_MS (10 * 60 * 1000)

struct replay_result {
    double window_s;      /* end - start */
    double in_use_s;      /* time inside any span */
    double held_s;        /* an accelerator held: a pod of the workspace exists (x count) */
    double held_in_use_s; /* held while in use */
    double returned_s;    /* the window's accelerator time not held (x count) */
    int64_t pauses;       /* completed: the pod gone */
    int64_t idle_pauses;  /* of those, decided by the idle rules */
    int64_t busy_pauses;  /* paused while a kernel or the GPU was busy: must be 0 */
    int64_t person_resumes;
    int64_t interruptions; /* a person's resume within REPLAY_INTERRUPTION_MS of a pause */
    double snapshot_s;     /* spent snapshotting */
    double restore_s;      /* spent starting pods, created to ready */
    double waited_s;       /* people waited for a resume they asked for, asked to ready */
    int64_t steps;         /* decide() calls */
    /* People arriving after REPLAY_FIRST_ARRIVAL_GAP_MS away, and of those,
     * how many found the notebook ready (a pre-warm's aim). */
    int64_t first_arrivals;
    int64_t first_arrivals_ready;
    /* status.preWarm at the end: begun, used, unused, yielded. */
    int64_t prewarms, prewarms_used, prewarms_unused, prewarms_yielded;
    /* When the first REPLAY_PAUSE_TIMES completed pauses were asked for
     * (status.lastPause.requestedAt), to set beside what a controller did. */
    int64_t pause_requested_ms[REPLAY_PAUSE_TIMES];
};

struct activity_record;

/* The spans of use an activity record (activity/record.h) shows: a person
 * where one was seen or waited for a resume (a, w), the kernel (k), the
 * GPU (g), and the rounds that got no answer (u, REPLAY_UNANSWERED);
 * adjacent runs of one use make one span. *ret_spans is the
 * caller's to free. Returns 0 or -ENOMEM. */
int replay_spans_from_record(const struct activity_record *r, struct replay_span **ret_spans,
                             size_t *ret_n);

/* Replays in. Returns 0, -EINVAL (no class, an empty window, a span out of
 * order with itself) or -ENOMEM. */
int replay_run(const struct replay_input *in, struct replay_result *out);

#endif
