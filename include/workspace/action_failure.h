/*
 * action_failure: an action of decide() that keeps failing, and how the
 * Workspace's status reports it.
 *
 * decide() runs before its actions, so it cannot know how they end; the
 * reconciler keeps one record per workspace (in memory) of the last action
 * the API server refused, and reports it in the status it writes after the
 * pass: the condition ActionFailed=True, reason the action
 * (action_type_name(): "DeletePod", "CreatePod", "SnapshotBegin", ...),
 * message the object and the API server's words, lastTransitionTime since
 * when that action fails. A pass whose actions all succeed (or that needs
 * none any more) removes the condition and forgets the record.
 *
 * The status written after a failure is the status as read with this
 * condition, not the decided one: a decided status records its actions as
 * done (the pause's podDeletedAt, a snapshot attempt, the next pod's name),
 * and the next pass would build on actions that did not happen (a snapshot
 * attempt recorded but never made is waited for until its timeout instead
 * of being asked for again). status.observedGeneration stays too: it says
 * the decision for that generation was carried out (rule 5 relies on it);
 * the condition carries the generation it was met at.
 *
 * Pure: no I/O, no clock. Ownership: a record owns its strings
 * (action_failure_clear() releases them); the functions on a status
 * allocate inside it as workspace_status_set_condition() does.
 */
#ifndef HIBERNATOR_WORKSPACE_ACTION_FAILURE_H
#define HIBERNATOR_WORKSPACE_ACTION_FAILURE_H

#include <stdint.h>

#include "workspace/workspace.h"

#define ACTION_FAILED_CONDITION "ActionFailed"

struct action_failure {
    char *action;            /* "DeletePod", ... */
    char *target;            /* the object acted on; NULL: the Workspace itself */
    long http_code;          /* 0: no HTTP answer (transport error, out of memory) */
    char *message;           /* the API server's words, one line, bounded */
    int64_t first_failed_ms; /* the first failure of this action on this target in a row */
    uint64_t count;          /* failures in a row */
};

/* Records a failure of action on target (NULL: none) with the answer's
 * code and message (the API's, already made safe to log by kube_api_error:
 * one line, tokens redacted; cut here to 1 KiB). The same action on the
 * same target counts up and keeps first_failed_ms; another starts over.
 * Returns 0 or -ENOMEM (f unchanged). */
int action_failure_note(struct action_failure *f, const char *action, const char *target,
                        long http_code, const char *message, int64_t now_ms);

/* Releases the strings and zeroes f. Accepts NULL. */
void action_failure_clear(struct action_failure *f);

/* Sets ActionFailed=True from f in st (the status as read): reason the
 * action, message "<action> <target>: <message> (HTTP <code>)" in at most
 * 1024 bytes, observedGeneration generation, lastTransitionTime now unless
 * the condition already reported the same action (then it keeps its time:
 * since when). status.message says the same while the condition stands.
 * Returns 1 when st changed, 0 when it already said so, -ENOMEM. */
int action_failure_report(struct workspace_status *st, const struct action_failure *f,
                          int64_t generation, int64_t now_ms);

/* Removes ActionFailed from st (a pass whose actions all succeeded);
 * returns 1 when it was there. status.message is decide()'s again. */
int action_failure_resolved(struct workspace_status *st);

#endif
