/*
 * writes: the bodies of the controller's own writes to a Workspace, each
 * whole or not at all.
 *
 * Every write here is guarded by the resourceVersion it was decided on, so
 * a builder that ran out of memory half way must not hand out a body
 * without it (a status PUT that overwrites whatever is there, a finalizer
 * patch that drops another controller's entry). Each builder returns
 * either the whole body or an error; callers only send what they got.
 *
 * Ownership: the caller frees what a builder returns (cJSON_Delete() or
 * free()); the inputs are only read.
 */
#ifndef HIBERNATOR_CONTROLLER_WRITES_H
#define HIBERNATOR_CONTROLLER_WRITES_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "util/must_use.h"
#include "workspace/workspace.h"

/* The object for PUT .../workspaces/<name>/status: apiVersion, kind,
 * metadata (name, namespace, resourceVersion rv) and status st.
 * Returns 0 and *ret_obj, -EINVAL when rv is NULL or empty, or -ENOMEM. */
MUST_USE int writes_status_object(const char *name, const char *ns, const char *rv,
                                  const struct workspace_status *st, cJSON **ret_obj);

/* The merge patch that sets metadata.finalizers to the Workspace's list as
 * meta (its metadata, as read) has it, with WORKSPACE_FINALIZER added (add)
 * or removed (!add), on meta's resourceVersion. Every other entry is kept
 * in order. Returns 0 and *ret_text, -EINVAL when meta has no
 * resourceVersion, or -ENOMEM. */
MUST_USE int writes_finalizer_patch(const cJSON *meta, int add, char **ret_text);

/* The merge patch of a pre-warm on resourceVersion rv: spec.paused false
 * and the annotations PREWARMED_AT_ANNOTATION (at_ms) and
 * PREWARM_FOR_ANNOTATION (for_ms, the owner's time), RFC 3339 with
 * microseconds. Returns 0 and *ret_text, -EINVAL when rv is NULL or empty
 * or a time cannot be written, or -ENOMEM. */
MUST_USE int writes_auto_resume_patch(const char *rv, int64_t at_ms, int64_t for_ms,
                                      char **ret_text);

/* The merge patch of an automatic pause on resourceVersion rv: spec.paused
 * true and the annotations AUTO_PAUSED_AT_ANNOTATION (at_ms, RFC 3339 with
 * microseconds), AUTO_PAUSE_REASON_ANNOTATION (reason, NULL: "idle") and
 * AUTO_PAUSE_CAUSE_ANNOTATION (cause when it is one the annotation holds,
 * "Preempted" or "Evicted"; otherwise removed). Returns 0 and *ret_text,
 * -EINVAL when rv is NULL or empty or at_ms cannot be written, or -ENOMEM. */
MUST_USE int writes_auto_pause_patch(const char *rv, int64_t at_ms, const char *reason,
                                     const char *cause, char **ret_text);

/* The merge patch that sets a pod's Kueue priority-class label
 * (QUEUE_PRIORITY_LABEL) to priority_class, on the pod of uid (the API
 * server refuses it for another pod of the name; NULL: any). Returns 0 and
 * *ret_text, -EINVAL when priority_class is NULL or empty, or -ENOMEM. */
MUST_USE int writes_priority_label_patch(const char *priority_class, const char *uid,
                                         char **ret_text);

#endif
