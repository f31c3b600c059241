/*
 * decide_internal: what the parts of decide() share: the decider (one
 * decision's state) and the rules' functions that other parts call. The
 * words it writes (states, condition types, reasons, Event reasons) are
 * workspace/vocabulary.h's constants, never literals. Private to src/workspace/decide*.c;
 * workspace_decide() (workspace/decide.h) is the only entry.
 */
#ifndef HIBERNATOR_WORKSPACE_DECIDE_INTERNAL_H
#define HIBERNATOR_WORKSPACE_DECIDE_INTERNAL_H

#include "workspace/decide.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/duration.h"
#include "util/timefmt.h"
#include "workspace/ledger.h"
#include "workspace/names.h"
#include "workspace/vocabulary.h"

/* The rules are written out, with a table, in docs/state-machine.md; the
 * comments here point at them by number. */

#define RESERVED_ENV_PREFIX "HIBERNATOR_"
#define MAX_LABEL_VALUE 63
/* Grace for pods of a workspace whose class is gone: Kubernetes' default. */
#define DEFAULT_GRACE_SECONDS 30
/* Extra pods (duplicates, stopped ones) deleted per pass: the rest go in the
 * next pass, which the deletions themselves trigger. */
#define MAX_EXTRA_DELETES 3
/* Messages are one line of bounded length: a scheduler message naming every
 * node of a large cluster must not bloat the status. */
#define MAX_MESSAGE WORKSPACE_MESSAGE_MAX
/* status.activity is a record for people, not the input of the next
 * decision (the probe results in memory are): lastActivityTime moves when it
 * advanced by this much, lastProbeTime when the result changed or it is this
 * old, so a busy workspace costs about one status write a minute. */
#define ACTIVITY_RECORD_STEP_MS (60 * 1000)
#define PROBE_RECORD_STEP_MS (5 * 60 * 1000)
/* A class's products in a message: at most 9 label values of 63 characters. */
#define PRODUCTS_TEXT 640
/* A snapshot backend that cannot say yet (its caches are syncing) is asked
 * again this soon. */
#define SNAPSHOT_UNKNOWN_RECHECK_MS 1000

/* A workspace applied together with its class (one kubectl apply of a
 * folder) may reach the controller's workspace cache before its class
 * reaches the class cache: two watches, no order between them. A workspace
 * younger than this waits for its class before reporting it missing. */
#define CLASS_GRACE_MS 5000
/* "pause-<n>", "resume-<n>", "pod-<name>": the occasions of decide_transition_event(). */
#define OCCASION_SIZE 300

struct decider {
    const struct decide_input *in;
    const struct workspace *ws;
    const struct workspace_class *cls;
    const struct workspace_status *old;
    struct workspace_status *st; /* the output status */
    struct decide_output *out;
    int64_t now;
    int rc; /* first error; everything below is a no-op after it */

    /* The pods, sorted out (rule 4). */
    const struct workspace_pod *keep;    /* the live pod, or NULL */
    const struct workspace_pod *leaving; /* a terminating or stopped pod, or NULL */
    size_t n_leaving;

    /* The spec changed after a capacity timeout failed the workspace. */
    int retry;

    /* A pause waits for the snapshots held under the storage config the
     * class left: retention deletes them all. */
    int clearing_storage;

    /* Validation (rule 2): NULL reason when valid. */
    const char *invalid_reason;
    char *invalid_message;
};

/* decide_common.c */
void decide_allowed_products(const struct workspace_class *c, const char *sep, char *out,
                             size_t size);
void decide_condition(struct decider *d, const char *type, enum condition_status status,
                      const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
const char *decide_condition_reason(const struct workspace_status *s, const char *type);
void decide_delete_pod(struct decider *d, const struct workspace_pod *p, int64_t grace);
void decide_event(struct decider *d, const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int decide_failed(struct decider *d, int rc);
int decide_falls_back(const struct workspace_class *c);
/* What a snapshot of the workspace holds, in words: "memory and GPU
 * state" with an accelerator, "memory" without (c may be NULL). */
const char *decide_memory_words(const struct workspace_class *c);
void decide_format_duration(int64_t ms, char *out, size_t size);
int64_t grace_seconds(const struct decider *d);
/* The grace period a delete of p gives: the class's, plus its preStop
 * hook's sleep, which the kubelet runs first. */
int64_t decide_pod_grace(const struct decider *d, const struct workspace_pod *p);
int decide_in_pause(const struct workspace_status *s);
const char *decide_node_or_unknown(const struct workspace_pod *p);
void decide_own_delete_pod(struct decider *d, const struct workspace_pod *p, int64_t grace);
const char *decide_pause_occasion(const struct decider *d, char *buf);
int64_t pod_generation_of(const struct workspace *ws, const char *pod_name);
int decide_pod_has_stopped(const struct workspace_pod *p);
/* Whether no node can restore the current snapshot (its node's version is
 * gone from the nodes with its product); writes why. */
int decide_snapshot_unrestorable(const struct decider *d, char *why, size_t size);
/* What the node cache knows of node (a pod's); NULL: not known. */
const struct decide_node *decide_node_of(const struct decider *d, const char *node);
int decide_pod_is_scheduled(const struct workspace_pod *p);
const char *decide_pod_occasion(const char *pod_name, char *buf);
const char *decide_pod_product(const struct decider *d, const struct workspace_pod *p);
struct action *decide_push(struct decider *d, enum action_type type, const char *name);
int decide_resume_in_progress(const struct workspace_status *s);
const char *decide_resume_occasion(const struct decider *d, char *buf);
void decide_set_accelerator(struct decider *d, const char *product, int fallback);
void decide_set_string(struct decider *d, char **field, const char *value);
int decide_streq(const char *a, const char *b);
void decide_transition_event(struct decider *d, const char *occasion, const char *type,
                             const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
char *decide_vformat(struct decider *d, const char *fmt, va_list ap);

/* decide_available.c */
void decide_available(struct decider *d);

/* decide_validate.c */
int decide_class_not_yet_seen(const struct decider *d);
int decide_unreadable(struct decider *d);
void decide_validate(struct decider *d);

/* decide_pods.c */
void decide_adopt(struct decider *d);
void decide_note_interruption(struct decider *d);
/* A pod Kueue evicted whose preStop hook still holds its process (the
 * class's spec.queue.evictionHold): live, for a pause's snapshot. */
int decide_pod_held(const struct decider *d, const struct workspace_pod *p);
/* Kueue evicted the running pod and its hook holds it: the controller
 * pauses the workspace itself. Returns 1 when it did (the state is set). */
int decide_queue_eviction(struct decider *d);
int decide_on_fresh_home(const struct decider *d, const char *pod_name);
void decide_set_restored(struct decider *d, const char *pod_name, int from_checkpoint);
void decide_sort_pods(struct decider *d, int may_delete);

/* decide_home.c */
void decide_home(struct decider *d, const char *claim);
int decide_home_awaits_acknowledgement(const struct decider *d);

/* decide_run.c */
void decide_checkpoint_cancelled(struct decider *d, const char *why);
void decide_create_pod(struct decider *d);
void decide_run(struct decider *d);

/* decide_capacity.c */
int decide_fallback_due(const struct decider *d);
void decide_wait_for_leaving(struct decider *d, const char *leaving);
void decide_waiting_for_capacity(struct decider *d);
void decide_queued(struct decider *d);
void decide_clear_queue(struct decider *d);

/* decide_restore.c */
int decide_crash_looping(const struct workspace_pod *p);
int decide_judge_restore(struct decider *d, const struct workspace_pod *p);
int decide_judge_unwanted_restore(struct decider *d, const struct workspace_pod *p);
int64_t restore_answered_ms(const struct decider *d, const struct workspace_pod *p);
const char *decide_restore_snapshot(struct decider *d, char *why, size_t size);
const char *decide_snapshot_in_the_way(struct decider *d);
int decide_snapshot_rejected(const struct workspace_snapshot *sn, const struct snapshot_view *v);

/* decide_idle.c */
void decide_clear_idle(struct decider *d);
void decide_idle(struct decider *d);
void decide_requeue_at(struct decider *d, int64_t at_ms);

/* decide_pause.c */
void decide_pause(struct decider *d);

/* decide_snapshot.c */
int decide_snapshot_foreign(const struct decider *d, const struct snapshot_view *v, char *why,
                            size_t size);
void decide_snapshot_after_unpause(struct decider *d, const struct workspace_pod *p);
int decide_snapshot_allows_delete(struct decider *d, const struct workspace_pod *p);
int decide_snapshot_current(const struct workspace_status *st);
/* The pause takes or took a snapshot: the class has a backend, or the open
 * pause's attempt was begun under one (the class changed or went since). */
int decide_pause_snapshots(const struct decider *d);
/* Records the pause's attempt the backend has and the status lacks (a pass
 * began it and died before its status write). Returns 1 while the backend
 * cannot say yet: nothing is to be concluded about the pod then. */
int decide_snapshot_recover(struct decider *d);
/* p completed while paused and the backend has (or may have: it cannot say
 * yet) the pause's next attempt of it, unrecorded: it is kept for
 * decide_pause() to judge once that attempt is recorded. */
int decide_snapshot_pending_for(const struct decider *d, const struct workspace_pod *p);
size_t decide_snapshot_retention(struct decider *d, int deleting);
void decide_snapshot_settle(struct decider *d);
int decide_snapshot_stopped(const struct decider *d, const struct workspace_pod *p,
                            const struct workspace_status *st);

/* decide_prewarm.c */
int decide_prewarm_open(const struct workspace_status *s);
void decide_prewarm_resume_begins(struct decider *d);
void decide_prewarm_ready(struct decider *d, int64_t ready_ms);
int64_t decide_prewarm_hold(struct decider *d, int64_t last_activity_ms, const char *source,
                            int64_t idle_after_ms);
int decide_prewarm_pause_begins(struct decider *d, int automatic);
void decide_prewarm_priority(struct decider *d);
void decide_prewarm(struct decider *d);

/* decide_ledger.c */
void decide_bound_ledger(struct decider *d);
void decide_keep_ledger(struct decider *d);

#endif
