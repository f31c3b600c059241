/*
 * activity_log: each workspace's activity record (activity/record.h), kept
 * in memory and written to a ConfigMap of its own, <workspace>-activity in
 * the workspace's namespace, labelled hibernator.dev/activity-record and
 * owned by the Workspace (it goes with it). What-if replays read them
 * (docs/idle.md, "The activity record").
 *
 * Why a ConfigMap per workspace: the Workspace's own watch (dashboards,
 * the controller's cache) stays as light as it is, and one ConfigMap per
 * namespace would need read-modify-write among its workspaces and hold at
 * most 1 MiB. The controller never watches them: it lists them once when
 * it starts, to go on where the last process stopped, and then only
 * writes: when a new run begins and the last write is ACTIVITY_LOG_WRITE_S
 * old, and whenever the workspace stops running, so a pause's record is
 * whole. A record is at most ACTIVITY_LOG_MAX_BYTES of text, the newest
 * runs.
 *
 * Ownership: the log copies what it keeps; the client is borrowed and
 * outlives it.
 */
#ifndef HIBERNATOR_CONTROLLER_ACTIVITY_LOG_H
#define HIBERNATOR_CONTROLLER_ACTIVITY_LOG_H

#include <stdint.h>

struct activity_observation;
struct kube_client;
struct workspace;
struct workspace_status;
struct activity_log;

#define ACTIVITY_LOG_LABEL "hibernator.dev/activity-record"
#define ACTIVITY_LOG_SUFFIX "-activity"
#define ACTIVITY_LOG_KEY "record"
#define ACTIVITY_LOG_WRITE_S (10 * 60)
#define ACTIVITY_LOG_MAX_BYTES 4096

/* A log writing through client, for the workspaces of namespace ns (NULL:
 * all). Returns 0 and *ret, or -ENOMEM. */
int activity_log_new(struct kube_client *client, const char *ns, struct activity_log **ret);

/* Lists the records written before (in pages); until that is done, notes
 * are not kept. Returns 0 or a negative errno of the first request. */
int activity_log_start(struct activity_log *l);

/* 1 once the records written before are read (or could not be: the log
 * then starts afresh, and says so in the log). */
int activity_log_ready(const struct activity_log *l);

/* Notes that workspace ws (cache key key) is in state (activity/record.h)
 * at now_ms, and writes its record when that is due. activity_ms is the
 * last activity activity_log_state() based the state on (0: none): a
 * person's run ('a') lasts until that activity, not until the round that
 * saw it, so idle begins where the controller's idle clock begins. */
void activity_log_note(struct activity_log *l, const char *key, const struct workspace *ws,
                       int64_t now_ms, char state, int64_t activity_ms);

/* The state (activity/record.h) a workspace whose decided status is st is
 * in at now_ms: from its state word, and while Running from the probe round
 * obs (NULL: none yet): the GPU, a busy kernel, the application's last
 * activity since the round before (one probe interval), else the activity
 * the status records (the annotation) at most two intervals before now.
 * *ret_activity_ms is the newest activity it knows of (0: none). */
char activity_log_state(const struct workspace_status *st, const struct activity_observation *obs,
                        int gpu_threshold_percent, int64_t now_ms, int64_t interval_ms,
                        int64_t *ret_activity_ms);

/* The workspace is gone: its record is dropped (its ConfigMap goes with
 * the Workspace, by its owner reference). */
void activity_log_forget(struct activity_log *l, const char *key);

/* The record kept for key, NULL: none. For tests. */
const struct activity_record *activity_log_record(const struct activity_log *l, const char *key);

/* Cancels what is in flight and frees the log; accepts NULL. */
void activity_log_free(struct activity_log *l);

#endif
