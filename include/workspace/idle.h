/*
 * idle: is a running workspace idle, and when may it be paused?
 *
 * Pure functions, no I/O and no clock, tested from tables in
 * tests/unit/test_idle.c. decide() calls idle_evaluate() for a workspace
 * that is Running with a ready pod and turns the verdict into the Idle
 * condition, status.activity, the warning Event and the automatic pause.
 * The rules are in docs/idle.md.
 *
 * Ownership: inputs are only read; a verdict is plain data (its strings are
 * static or fixed-size arrays).
 */
#ifndef HIBERNATOR_WORKSPACE_IDLE_H
#define HIBERNATOR_WORKSPACE_IDLE_H

#include <stddef.h>
#include <stdint.h>

#include "activity/probe_result.h"
#include "workspace/class.h"
#include "workspace/workspace.h"

struct tz;

/* The policy that applies to one workspace: its class's, with the
 * workspace's spec.idle.after clamped to the class's bounds. */
struct idle_policy {
    int auto_pause;
    int has_sources; /* an application probe or GPU metrics: without one, no automatic pause */
    int64_t after_ms;
    int64_t min_running_ms;
    int64_t warn_before_ms;
    int64_t max_keep_alive_ms;
    int gpu_threshold_percent;
    int64_t probe_interval_ms;
    const struct pause_schedule *schedule; /* borrowed from the class */
    const char *time_zone;                 /* borrowed from the class */
};

#define IDLE_PROBLEM_SIZE 256

/* Fills *p. Returns 0, or 1 when the workspace's override was out of bounds
 * and was clamped; problem then names the field and the bound
 * ("spec.idle.after: 12h is longer than the class maximum 8h; 8h applies"). */
int idle_policy_resolve(const struct workspace_class *c, const struct workspace *ws,
                        struct idle_policy *p, char *problem, size_t size);

/* The keep-alive that applies: spec.keepAliveUntil, but never further than
 * max_keep_alive ahead of when it was first seen (seen_ms). 0: none. */
int64_t idle_keep_alive_bound(int64_t requested_ms, int64_t seen_ms, int64_t max_keep_alive_ms);

/* The latest completed probe round, and when work was last seen. */
struct activity_observation {
    int64_t probed_at_ms; /* when the round started */
    struct probe_result result;
    /* The start of the latest round that saw work running (a busy kernel,
     * the GPU at or above the threshold), 0: none; and whether it was the
     * GPU. Rounds only say "busy now", so this keeps the end of the work
     * to the round. */
    int64_t last_work_ms;
    int work_on_gpu;
};

struct idle_input {
    const struct idle_policy *policy;
    const struct tz *zone; /* the policy's time zone; NULL while it is being loaded */
    int64_t now_ms;
    int64_t running_since_ms;               /* when the workspace last entered Running */
    const struct activity_observation *obs; /* NULL: no probe round yet */
    int64_t recorded_activity_ms;           /* status.activity.lastActivityTime */
    const char *recorded_source;            /* status.activity.lastActivitySource */
    int64_t annotated_activity_ms;          /* the last-activity annotation, 0: none */
    int64_t keep_alive_until_ms;            /* bounded (idle_keep_alive_bound), 0: none */
    /* A pre-warm nobody used yet counts as activity until this time
     * (decide_prewarm_hold()), 0: none. */
    int64_t prewarm_hold_ms;
    int announced;                   /* Idle is True with reason PauseScheduled */
    int64_t announced_pause_at_ms;   /* status.activity.pauseAt */
    int64_t announced_idle_since_ms; /* status.activity.idleSince */
};

enum idle_state {
    IDLE_STATE_UNKNOWN, /* Idle=Unknown: no source, no probe yet, probe failed, zone not loaded */
    IDLE_STATE_ACTIVE,  /* Idle=False */
    IDLE_STATE_IDLE,    /* Idle=True, no pause announced (disabled, outside a window) */
    IDLE_STATE_PAUSE_SCHEDULED, /* Idle=True, PauseScheduled: warned, pausing at pause_at_ms */
};

#define IDLE_MESSAGE_SIZE 512

struct idle_verdict {
    enum idle_state state;
    const char *reason; /* the Idle condition's reason (static) */
    char message[IDLE_MESSAGE_SIZE];

    int64_t last_activity_ms; /* the latest activity known, never before running_since */
    const char *source;       /* where it was seen (static, or recorded_source) */
    int active_now;           /* the last probe saw work or a recent interaction */
    int64_t idle_since_ms;    /* 0 while active now */
    int64_t pause_at_ms;      /* the pause time announced or foreseen, 0: none */
    int announce;             /* the announcement is new: send the warning Event */
    int cancelled;            /* an announced pause was cancelled by activity */
    int pause_now;            /* pause now: the announced time has come and a probe
                                 started at or after it still found no activity */
    int probe_now;            /* the pause time has come; probe before pausing */
    int64_t recheck_at_ms;    /* when the verdict changes without new input, 0: never */
};

/* The verdict on in, written whole into *out (nothing else is changed;
 * in is only read, and out's strings are static or in out itself). Pure:
 * the time is in->now_ms. Cannot fail: what it cannot judge (no source, no
 * probe since Running, a failed probe, the windows' zone not loaded) is
 * IDLE_STATE_UNKNOWN or a verdict that pauses nothing, with the reason. */
void idle_evaluate(const struct idle_input *in, struct idle_verdict *out);

/* A probe round's result as status.activity.lastProbeResult: "Failed",
 * "Active" (work running or GPU at/above the threshold) or "Idle". */
const char *idle_probe_result_word(const struct probe_result *r, int gpu_threshold_percent);

#endif
