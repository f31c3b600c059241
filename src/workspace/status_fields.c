#include "workspace/status_fields.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/strpool.h"
#include "util/timefmt.h"
#include "workspace/workspace.h"

/* ---- the tables: one line a field, in the order they are written ---- */

#define CONDITION(m) offsetof(struct condition, m)
const struct status_field workspace_condition_fields[] = {
    {.key = "type", .kind = SF_STR, .off = CONDITION(type), .shared = 1},
    {.key = "status", .kind = SF_COND_STATUS, .off = CONDITION(status)},
    {.key = "observedGeneration", .kind = SF_INT64, .off = CONDITION(observed_generation)},
    {.key = "lastTransitionTime", .kind = SF_TIME, .off = CONDITION(last_transition_ms)},
    /* metav1.Condition requires reason and message, even when empty. */
    {.key = "reason", .kind = SF_TEXT, .off = CONDITION(reason), .shared = 1},
    {.key = "message", .kind = SF_TEXT, .off = CONDITION(message), .shared = 1},
    {.kind = SF_END},
};

/* The fields a pause's timeline and its history record share, after the
 * request, reason and message. */
#define PAUSE(m) offsetof(struct workspace_pause_timeline, m)
static const struct status_field pause_ledger_fields[] = {
    {.key = "workEndedAt", .kind = SF_TIME, .off = PAUSE(work_ended_ms)},
    {.key = "heldSince", .kind = SF_TIME, .off = PAUSE(held_since_ms)},
    {.key = "snapshotReadyAt", .kind = SF_TIME, .off = PAUSE(snapshot_ready_ms)},
    {.key = "snapshotSeconds",
     .kind = SF_FIGURE,
     .off = PAUSE(snapshot_seconds),
     .when = PAUSE(snapshot_ready_ms)},
    {.key = "memory", .kind = SF_STR, .off = PAUSE(memory), .shared = 1},
    {.key = "nodeName", .kind = SF_STR, .off = PAUSE(node_name), .shared = 1},
    {.key = "product", .kind = SF_STR, .off = PAUSE(product), .shared = 1},
    {.key = "acceleratorTakenAt", .kind = SF_TIME, .off = PAUSE(accelerator_taken_ms)},
    {.key = "acceleratorTakenBy", .kind = SF_STR, .off = PAUSE(accelerator_taken_by)},
    {.key = "nodeRemovedAt", .kind = SF_TIME, .off = PAUSE(node_removed_ms)},
    {.key = "unobserved", .kind = SF_STR, .off = PAUSE(unobserved), .shared = 1},
    {.kind = SF_END},
};

const struct status_field workspace_pause_fields[] = {
    {.key = "requestedAt", .kind = SF_TIME, .off = PAUSE(requested_ms)},
    {.key = "podDeletedAt", .kind = SF_TIME, .off = PAUSE(pod_deleted_ms)},
    {.key = "acceleratorReleasedAt", .kind = SF_TIME, .off = PAUSE(accelerator_released_ms)},
    {.key = "reason", .kind = SF_STR, .off = PAUSE(reason), .shared = 1},
    {.key = "message", .kind = SF_STR, .off = PAUSE(message)},
    {.key = NULL, .kind = SF_INLINE, .off = 0, .sub = pause_ledger_fields},
    {.kind = SF_END},
};

#define RESUME(m) offsetof(struct workspace_resume_timeline, m)
static const struct status_field resume_fields[] = {
    {.key = "requestedAt", .kind = SF_TIME, .off = RESUME(requested_ms)},
    {.key = "podCreatedAt", .kind = SF_TIME, .off = RESUME(pod_created_ms)},
    {.key = "podScheduledAt", .kind = SF_TIME, .off = RESUME(pod_scheduled_ms)},
    {.key = "readyAt", .kind = SF_TIME, .off = RESUME(ready_ms)},
    {.key = "secondsToReady",
     .kind = SF_FIGURE,
     .off = RESUME(seconds_to_ready),
     .when = RESUME(ready_ms)},
    {.key = "restoredFrom", .kind = SF_STR, .off = RESUME(restored_from), .shared = 1},
    {.key = "preWarmed", .kind = SF_BOOL, .off = RESUME(pre_warmed)},
    {.kind = SF_END},
};

/* A history record: the pause's timeline without its message, the resume's
 * without podCreatedAt. */
#define RECORD(m) offsetof(struct workspace_pause_record, m)
const struct status_field workspace_record_fields[] = {
    {.key = "pausedAt", .kind = SF_TIME, .off = RECORD(pause.requested_ms)},
    {.key = "reason", .kind = SF_STR, .off = RECORD(pause.reason), .shared = 1},
    {.key = "podDeletedAt", .kind = SF_TIME, .off = RECORD(pause.pod_deleted_ms)},
    {.key = "acceleratorReleasedAt", .kind = SF_TIME, .off = RECORD(pause.accelerator_released_ms)},
    {.key = NULL, .kind = SF_INLINE, .off = RECORD(pause), .sub = pause_ledger_fields},
    {.key = "resumeRequestedAt", .kind = SF_TIME, .off = RECORD(resume.requested_ms)},
    {.key = "podScheduledAt", .kind = SF_TIME, .off = RECORD(resume.pod_scheduled_ms)},
    {.key = "readyAt", .kind = SF_TIME, .off = RECORD(resume.ready_ms)},
    {.key = "secondsToReady",
     .kind = SF_FIGURE,
     .off = RECORD(resume.seconds_to_ready),
     .when = RECORD(resume.ready_ms)},
    {.key = "restoredFrom", .kind = SF_STR, .off = RECORD(resume.restored_from), .shared = 1},
    {.key = "preWarmed", .kind = SF_BOOL, .off = RECORD(resume.pre_warmed)},
    {.key = NULL,
     .kind = SF_STR,
     .off = RECORD(pause.message)}, /* never set in a record; owned if it were */
    {.kind = SF_END},
};

#define SNAPSHOT(m) offsetof(struct workspace_snapshot, m)
static const struct status_field app_checkpoint_fields[] = {
    {.key = "attempt", .kind = SF_STR, .off = SNAPSHOT(checkpoint_attempt)},
    {.key = "requestedAt", .kind = SF_TIME, .off = SNAPSHOT(checkpoint_requested_ms)},
    {.key = "answeredAt", .kind = SF_TIME, .off = SNAPSHOT(checkpoint_answered_ms)},
    {.key = "result", .kind = SF_STR, .off = SNAPSHOT(checkpoint_result), .shared = 1},
    {.key = "message", .kind = SF_STR, .off = SNAPSHOT(checkpoint_message)},
    {.kind = SF_END},
};

static const struct status_field snapshot_node_fields[] = {
    {.key = "machineFamily", .kind = SF_STR, .off = SNAPSHOT(node_machine_family), .shared = 1},
    {.key = "machineType", .kind = SF_STR, .off = SNAPSHOT(node_machine_type), .shared = 1},
    {.key = "nodePool", .kind = SF_STR, .off = SNAPSHOT(node_pool), .shared = 1},
    {.key = "version", .kind = SF_STR, .off = SNAPSHOT(node_version), .shared = 1},
    {.key = "gpuDriver", .kind = SF_STR, .off = SNAPSHOT(node_gpu_driver), .shared = 1},
    {.kind = SF_END},
};

static const struct status_field snapshot_fields[] = {
    {.key = "attempt", .kind = SF_STR, .off = SNAPSHOT(attempt)},
    {.key = "attempts", .kind = SF_INT64, .off = SNAPSHOT(attempts)},
    {.key = "name", .kind = SF_STR, .off = SNAPSHOT(name)},
    {.key = "image", .kind = SF_STR, .off = SNAPSHOT(image)},
    {.key = "appStartedAt", .kind = SF_TIME, .off = SNAPSHOT(app_started_ms)},
    {.key = "appKernels", .kind = SF_STR, .off = SNAPSHOT(app_kernels)},
    {.key = "appKernelCount", .kind = SF_INT64, .off = SNAPSHOT(app_kernel_count)},
    {.key = "phase", .kind = SF_STR, .off = SNAPSHOT(phase), .shared = 1},
    {.key = "requestedAt", .kind = SF_TIME, .off = SNAPSHOT(requested_ms)},
    {.key = "readyAt", .kind = SF_TIME, .off = SNAPSHOT(ready_ms)},
    {.key = "failedAt", .kind = SF_TIME, .off = SNAPSHOT(failed_ms)},
    {.key = "restoreFailedAt", .kind = SF_TIME, .off = SNAPSHOT(restore_failed_ms)},
    {.key = "seconds", .kind = SF_FIGURE, .off = SNAPSHOT(seconds), .when = SNAPSHOT(ready_ms)},
    {.key = "nodeName", .kind = SF_STR, .off = SNAPSHOT(node_name), .shared = 1},
    {.key = "gpuProduct", .kind = SF_STR, .off = SNAPSHOT(gpu_product), .shared = 1},
    {.key = "podSpecHash", .kind = SF_STR, .off = SNAPSHOT(pod_spec_hash)},
    {.key = "message", .kind = SF_STR, .off = SNAPSHOT(message)},
    {.key = "homeClaimUID", .kind = SF_STR, .off = SNAPSHOT(home_claim_uid)},
    {.key = "className", .kind = SF_STR, .off = SNAPSHOT(class_name)},
    {.key = "node", .kind = SF_OBJECT, .off = 0, .sub = snapshot_node_fields},
    {.key = "appCheckpoint", .kind = SF_OBJECT, .off = 0, .sub = app_checkpoint_fields},
    {.key = "group", .kind = SF_STR, .off = SNAPSHOT(group)},
    {.key = "rejectedGroup", .kind = SF_STR, .off = SNAPSHOT(rejected_group)},
    {.key = "rejectedAt", .kind = SF_TIME, .off = SNAPSHOT(rejected_ms)},
    {.kind = SF_END},
};

#define ACTIVITY(m) offsetof(struct workspace_activity, m)
static const struct status_field activity_fields[] = {
    {.key = "lastActivityTime", .kind = SF_TIME, .off = ACTIVITY(last_activity_ms)},
    {.key = "lastActivitySource",
     .kind = SF_STR,
     .off = ACTIVITY(last_activity_source),
     .shared = 1},
    {.key = "lastProbeTime", .kind = SF_TIME, .off = ACTIVITY(last_probe_ms)},
    {.key = "lastProbeResult", .kind = SF_STR, .off = ACTIVITY(last_probe_result), .shared = 1},
    {.key = "lastProbeError", .kind = SF_STR, .off = ACTIVITY(last_probe_error)},
    {.key = "idleSince", .kind = SF_TIME, .off = ACTIVITY(idle_since_ms)},
    {.key = "pauseAt", .kind = SF_TIME_MICRO, .off = ACTIVITY(pause_at_ms)},
    {.key = "idleAfterSeconds", .kind = SF_INT64, .off = ACTIVITY(idle_after_seconds)},
    {.key = "keepAliveUntil", .kind = SF_TIME, .off = ACTIVITY(keep_alive_until_ms)},
    {.key = "keepAliveRequested", .kind = SF_TIME, .off = ACTIVITY(keep_alive_requested_ms)},
    {.kind = SF_END},
};

#define HOME(m) offsetof(struct workspace_home, m)
static const struct status_field home_fields[] = {
    {.key = "claimUID", .kind = SF_STR, .off = HOME(claim_uid)},
    {.key = "since", .kind = SF_TIME, .off = HOME(since_ms)},
    {.key = "lostClaimUID", .kind = SF_STR, .off = HOME(lost_claim_uid)},
    {.key = "lostAt", .kind = SF_TIME, .off = HOME(lost_ms)},
    {.key = "acknowledgedAt", .kind = SF_TIME, .off = HOME(acknowledged_ms)},
    {.key = "freshPod", .kind = SF_STR, .off = HOME(fresh_pod)},
    {.kind = SF_END},
};

#define INTERRUPTION(m) offsetof(struct workspace_interruption, m)
static const struct status_field interruption_fields[] = {
    {.key = "at", .kind = SF_TIME, .off = INTERRUPTION(at_ms)},
    {.key = "pod", .kind = SF_STR, .off = INTERRUPTION(pod)},
    {.key = "podUID", .kind = SF_STR, .off = INTERRUPTION(pod_uid)},
    {.key = "nodeName", .kind = SF_STR, .off = INTERRUPTION(node_name), .shared = 1},
    {.key = "reason", .kind = SF_STR, .off = INTERRUPTION(reason), .shared = 1},
    {.key = "message", .kind = SF_STR, .off = INTERRUPTION(message)},
    {.key = "replacedBy", .kind = SF_STR, .off = INTERRUPTION(replaced_by)},
    {.kind = SF_END},
};

#define PREWARM(m) offsetof(struct workspace_prewarm_status, m)
static const struct status_field prewarm_fields[] = {
    {.key = "nextAt", .kind = SF_TIME, .off = PREWARM(next_ms)},
    {.key = "nextFor", .kind = SF_TIME, .off = PREWARM(next_for_ms)},
    {.key = "lastAt", .kind = SF_TIME, .off = PREWARM(last_ms)},
    {.key = "lastFor", .kind = SF_TIME, .off = PREWARM(last_for_ms)},
    {.key = "lastReadyAt", .kind = SF_TIME, .off = PREWARM(last_ready_ms)},
    {.key = "lastUsedAt", .kind = SF_TIME, .off = PREWARM(last_used_ms)},
    {.key = "lastOutcome", .kind = SF_STR, .off = PREWARM(last_outcome), .shared = 1},
    {.key = "personAt", .kind = SF_TIME, .off = PREWARM(person_ms)},
    {.key = "count", .kind = SF_INT64, .off = PREWARM(count)},
    {.key = "used", .kind = SF_INT64, .off = PREWARM(used)},
    {.key = "unused", .kind = SF_INT64, .off = PREWARM(unused)},
    {.key = "yielded", .kind = SF_INT64, .off = PREWARM(yielded)},
    {.key = "readyInTime", .kind = SF_INT64, .off = PREWARM(ready_in_time)},
    {.kind = SF_END},
};

#define QUEUE(m) offsetof(struct workspace_queue_status, m)
static const struct status_field queue_fields[] = {
    {.key = "name", .kind = SF_STR, .off = QUEUE(name), .shared = 1},
    {.key = "position", .kind = SF_INT64, .off = QUEUE(position)},
    {.key = "pending", .kind = SF_INT64, .off = QUEUE(pending)},
    {.key = "waitingSince", .kind = SF_TIME, .off = QUEUE(since_ms)},
    {.key = "message", .kind = SF_STR, .off = QUEUE(message)},
    {.kind = SF_END},
};

/* The sub-objects below hold fields that live flat in the status. */
#define STATUS(m) offsetof(struct workspace_status, m)
static const struct status_field accelerator_fields[] = {
    {.key = "resourceName", .kind = SF_STR, .off = STATUS(accelerator_resource), .shared = 1},
    {.key = "count", .kind = SF_INT, .off = STATUS(accelerator_count)},
    {.key = "product", .kind = SF_STR, .off = STATUS(accelerator_product), .shared = 1},
    {.key = "fallback", .kind = SF_BOOL, .off = STATUS(accelerator_fallback)},
    {.kind = SF_END},
};

/* Flat in the status too (SF_OBJECT: offsets from the status itself). */
static const struct status_field resumes_from_fields[] = {
    {.key = "fromSnapshot", .kind = SF_INT64, .off = STATUS(resumes_from.from_snapshot)},
    {.key = "coldStart", .kind = SF_INT64, .off = STATUS(resumes_from.cold_start)},
    {.key = "fromCheckpoint", .kind = SF_INT64, .off = STATUS(resumes_from.from_checkpoint)},
    {.key = "fresh", .kind = SF_INT64, .off = STATUS(resumes_from.fresh)},
    {.key = "freshHome", .kind = SF_INT64, .off = STATUS(resumes_from.fresh_home)},
    {.kind = SF_END},
};

static const struct status_field pauses_kept_fields[] = {
    {.key = "snapshot", .kind = SF_INT64, .off = STATUS(pauses_kept.snapshot)},
    {.key = "files", .kind = SF_INT64, .off = STATUS(pauses_kept.files)},
    {.key = "snapshotFailed", .kind = SF_INT64, .off = STATUS(pauses_kept.snapshot_failed)},
    {.kind = SF_END},
};

static const struct status_field accounting_fields[] = {
    {.key = "pauses", .kind = SF_INT64, .off = STATUS(pauses)},
    {.key = "resumes", .kind = SF_INT64, .off = STATUS(resumes)},
    {.key = "acceleratorSecondsReleased",
     .kind = SF_DOUBLE,
     .off = STATUS(accelerator_seconds_released)},
    {.key = "acceleratorSecondsHeld", .kind = SF_DOUBLE, .off = STATUS(accelerator_seconds_held)},
    {.key = "acceleratorHeldSince", .kind = SF_TIME, .off = STATUS(accelerator_held_since_ms)},
    {.key = "resumesFrom", .kind = SF_OBJECT, .off = 0, .sub = resumes_from_fields},
    {.key = "pausesKept", .kind = SF_OBJECT, .off = 0, .sub = pauses_kept_fields},
    {.kind = SF_END},
};

/* What an absent block reads as: zeros, in read-only memory, so that a
 * write into a status that does not own the block faults at once. */
static const struct workspace_pause_timeline no_pause = {0};
static const struct workspace_resume_timeline no_resume = {0};
static const struct workspace_snapshot no_snapshot = {0};
static const struct workspace_activity no_activity = {0};
static const struct workspace_home no_home = {0};
static const struct workspace_interruption no_interruption = {0};
static const struct workspace_prewarm_status no_prewarm = {0};
static const struct workspace_queue_status no_queue = {0};

static const struct status_field interruptions_fields[] = {
    {.key = "count", .kind = SF_INT64, .off = STATUS(interruptions)},
    {.key = "last",
     .kind = SF_BLOCK,
     .off = STATUS(last_interruption),
     .size = sizeof(struct workspace_interruption),
     .sub = interruption_fields,
     .empty = &no_interruption},
    {.kind = SF_END},
};

const struct status_field workspace_status_fields[] = {
    {.key = "observedGeneration", .kind = SF_INT64, .off = STATUS(observed_generation)},
    {.key = "state", .kind = SF_STATE, .off = STATUS(state)},
    {.key = "message", .kind = SF_STR, .off = STATUS(message), .shared = 1},
    {.key = "podName", .kind = SF_STR, .off = STATUS(pod_name)},
    {.key = "podUID", .kind = SF_STR, .off = STATUS(pod_uid)},
    {.key = "deletedPod", .kind = SF_STR, .off = STATUS(deleted_pod)},
    {.key = "podGeneration", .kind = SF_INT64, .off = STATUS(pod_generation)},
    {.key = "nodeName", .kind = SF_STR, .off = STATUS(node_name), .shared = 1},
    {.key = "homeClaimName", .kind = SF_STR, .off = STATUS(home_claim_name)},
    {.key = "accelerator", .kind = SF_OBJECT, .off = 0, .sub = accelerator_fields},
    {.key = "conditions",
     .kind = SF_CONDITIONS,
     .off = STATUS(conditions),
     .count = STATUS(n_conditions),
     .size = sizeof(struct condition),
     .sub = workspace_condition_fields},
    {.key = "lastPause",
     .kind = SF_BLOCK,
     .off = STATUS(last_pause),
     .size = sizeof(struct workspace_pause_timeline),
     .sub = workspace_pause_fields,
     .empty = &no_pause},
    {.key = "lastResume",
     .kind = SF_BLOCK,
     .off = STATUS(last_resume),
     .size = sizeof(struct workspace_resume_timeline),
     .sub = resume_fields,
     .empty = &no_resume},
    {.key = "waitingForCapacitySince",
     .kind = SF_TIME,
     .off = STATUS(waiting_for_capacity_since_ms)},
    {.key = "stateSince", .kind = SF_TIME, .off = STATUS(state_since_ms)},
    {.key = "snapshot",
     .kind = SF_BLOCK,
     .off = STATUS(snapshot),
     .size = sizeof(struct workspace_snapshot),
     .sub = snapshot_fields,
     .empty = &no_snapshot},
    {.key = "activity",
     .kind = SF_BLOCK,
     .off = STATUS(activity),
     .size = sizeof(struct workspace_activity),
     .sub = activity_fields,
     .empty = &no_activity},
    {.key = "accounting", .kind = SF_OBJECT, .off = 0, .sub = accounting_fields},
    {.key = "history",
     .kind = SF_LIST,
     .off = STATUS(history),
     .count = STATUS(n_history),
     .size = sizeof(struct workspace_pause_record),
     .max = WORKSPACE_HISTORY_MAX,
     .sub = workspace_record_fields},
    {.key = "home",
     .kind = SF_BLOCK,
     .off = STATUS(home),
     .size = sizeof(struct workspace_home),
     .sub = home_fields,
     .empty = &no_home},
    {.key = "interruptions", .kind = SF_OBJECT, .off = 0, .sub = interruptions_fields},
    {.key = "preWarm",
     .kind = SF_BLOCK,
     .off = STATUS(prewarm),
     .size = sizeof(struct workspace_prewarm_status),
     .sub = prewarm_fields,
     .empty = &no_prewarm},
    {.key = "queue",
     .kind = SF_BLOCK,
     .off = STATUS(queue),
     .size = sizeof(struct workspace_queue_status),
     .sub = queue_fields,
     .empty = &no_queue},
    {.kind = SF_END},
};

/* ---- access ---- */

#define AT(base, off, type) ((type *)((char *)(base) + (off)))
#define AT_CONST(base, off, type) ((const type *)((const char *)(base) + (off)))

static int is_list(const struct status_field *f)
{
    return f->kind == SF_LIST || f->kind == SF_CONDITIONS;
}

static int is_string(const struct status_field *f)
{
    return f->kind == SF_STR || f->kind == SF_TEXT;
}

/* An SF_BLOCK's block in base: its own, or NULL when it is absent (the
 * empty one, or a zeroed pointer). */
static void *own_block(const struct status_field *f, void *base)
{
    void *b = *AT(base, f->off, void *);
    return b == f->empty ? NULL : b;
}

/* An SF_BLOCK's block for reading: the empty one when absent. */
static const void *read_block(const struct status_field *f, const void *base)
{
    const void *b = *AT_CONST(base, f->off, void *);
    return b ? b : f->empty;
}

/* ---- decoding ---- */

/* Whom to tell of a field that cannot be read, and where we are. The
 * paths are made of the tables' keys and list indexes, so they are short. */
struct noter {
    status_field_note note;
    void *data;
};

#define PATH_SIZE 256

/* "path.key" into out; a path too long for it is cut (they never are). */
static void path_join(char out[PATH_SIZE], const char *path, const char *key)
{
    if (snprintf(out, PATH_SIZE, "%s.%s", path, key) >= PATH_SIZE)
        out[PATH_SIZE - 1] = '\0';
}

static int noted(const struct noter *n, const char *path, const char *key, const char *why)
{
    if (!n->note)
        return 0;
    char p[PATH_SIZE];
    path_join(p, path, key);
    return n->note(n->data, p, why);
}

static int condition_status_read(const char *s, enum condition_status *ret)
{
    if (s && strcmp(s, "True") == 0)
        *ret = COND_TRUE;
    else if (s && strcmp(s, "False") == 0)
        *ret = COND_FALSE;
    else if (s && strcmp(s, "Unknown") == 0)
        *ret = COND_UNKNOWN;
    else
        return -1;
    return 0;
}

/* A condition's type once, and never empty. */
static const char *condition_unwanted(const struct condition *have, size_t n, const cJSON *c)
{
    const char *type = json_string(c, "type");
    if (!type || !type[0])
        return "skipped: no type";
    for (size_t i = 0; i < n; i++)
        if (have[i].type && strcmp(have[i].type, type) == 0)
            return "skipped: a repeated type";
    return NULL;
}

static int decode_fields(const struct status_field *t, const cJSON *o, void *base, const char *path,
                         const struct noter *n);

static int decode_list(const struct status_field *f, const cJSON *arr, void *base, const char *path,
                       const struct noter *nt)
{
    char here[PATH_SIZE];
    path_join(here, path, f->key);
    if (!cJSON_IsArray(arr))
        return arr && !cJSON_IsNull(arr) ? nt->note ? nt->note(nt->data, here, "not a list") : 0
                                         : 0;
    if (cJSON_GetArraySize(arr) == 0)
        return 0;
    size_t n = (size_t)cJSON_GetArraySize(arr);
    if (f->max && n > f->max) {
        char why[64];
        snprintf(why, sizeof(why), "only the first %zu entries read", f->max);
        if (nt->note && nt->note(nt->data, here, why) < 0)
            return -ENOMEM;
        n = f->max;
    }
    char *items = calloc(n, f->size);
    if (!items)
        return -ENOMEM;
    *AT(base, f->off, void *) = items;
    size_t *count = AT(base, f->count, size_t);
    const cJSON *o;
    size_t i = 0;
    cJSON_ArrayForEach(o, arr)
    {
        if (*count == n)
            break;
        char at[PATH_SIZE];
        if (snprintf(at, sizeof(at), "%s[%zu]", here, i++) >= (int)sizeof(at))
            at[sizeof(at) - 1] = '\0';
        const char *skip = !cJSON_IsObject(o) ? "skipped: not an object"
                           : f->kind == SF_CONDITIONS
                               ? condition_unwanted((const void *)items, *count, o)
                               : NULL;
        if (skip) {
            if (nt->note && nt->note(nt->data, at, skip) < 0)
                return -ENOMEM;
            continue;
        }
        if (decode_fields(f->sub, o, items + (*count)++ * f->size, at, nt) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Reads one field that is not a sub-object or a list; 1 when it is there
 * but cannot be read (then it stays unset), else 0. */
static int decode_value(const struct status_field *t, const cJSON *v, void *base, char **dup_into,
                        const char **why)
{
    switch (t->kind) {
    case SF_STR:
    case SF_TEXT:
        if (!cJSON_IsString(v))
            return *why = "not a string", 1;
        *dup_into = v->valuestring;
        return 0;
    case SF_TIME:
    case SF_TIME_MICRO: {
        int64_t ms = 0;
        if (!cJSON_IsString(v) || timefmt_parse_rfc3339(v->valuestring, &ms) < 0)
            return *why = "not an RFC 3339 time", 1;
        *AT(base, t->off, int64_t) = ms;
        return 0;
    }
    case SF_INT64:
    case SF_INT: {
        /* json_int()'s rules: a whole number a double holds exactly. */
        double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        if (!isfinite(d) || d != floor(d) || fabs(d) > 9007199254740992.0)
            return *why = "not a whole number", 1;
        int64_t x = (int64_t)d;
        if (t->kind == SF_INT)
            *AT(base, t->off, int) = (int)x;
        else
            *AT(base, t->off, int64_t) = x;
        return 0;
    }
    case SF_BOOL:
        if (!cJSON_IsBool(v))
            return *why = "not true or false", 1;
        *AT(base, t->off, int) = cJSON_IsTrue(v);
        return 0;
    case SF_DOUBLE:
    case SF_FIGURE:
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
            return *why = "not a number", 1;
        /* A figure counts only beside its time (workspace.h). */
        if (t->kind == SF_DOUBLE || *AT(base, t->when, int64_t))
            *AT(base, t->off, double) = v->valuedouble;
        return 0;
    case SF_STATE: {
        const char *name = cJSON_IsString(v) ? v->valuestring : NULL;
        enum workspace_state st = workspace_state_from_name(name);
        if (!name)
            return *why = "not a string", 1;
        if (name[0] && st == WS_STATE_NONE)
            return *why = "not a known state", 1;
        *AT(base, t->off, enum workspace_state) = st;
        return 0;
    }
    case SF_COND_STATUS:
        /* Unknown unless it says otherwise. */
        *AT(base, t->off, enum condition_status) = COND_UNKNOWN;
        if (condition_status_read(cJSON_IsString(v) ? v->valuestring : NULL,
                                  AT(base, t->off, enum condition_status)) < 0)
            return *why = "not True, False or Unknown", 1;
        return 0;
    default:
        return 0;
    }
}

static int decode_fields(const struct status_field *t, const cJSON *o, void *base, const char *path,
                         const struct noter *n)
{
    for (; t->kind != SF_END; t++) {
        if (t->kind == SF_INLINE) {
            if (decode_fields(t->sub, o, AT(base, t->off, char), path, n) < 0)
                return -ENOMEM;
            continue;
        }
        if (!t->key)
            continue;
        const cJSON *v = json_member(o, t->key);
        if (t->kind == SF_LIST || t->kind == SF_CONDITIONS) {
            if (decode_list(t, v, base, path, n) < 0)
                return -ENOMEM;
            continue;
        }
        if (t->kind == SF_OBJECT || t->kind == SF_BLOCK) {
            char here[PATH_SIZE];
            path_join(here, path, t->key);
            if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v) &&
                noted(n, path, t->key, "not an object") < 0)
                return -ENOMEM;
            if (t->kind == SF_OBJECT) {
                if (decode_fields(t->sub, cJSON_IsObject(v) ? v : NULL, AT(base, t->off, char),
                                  here, n) < 0)
                    return -ENOMEM;
                continue;
            }
            *AT(base, t->off, const void *) = t->empty;
            if (!cJSON_IsObject(v))
                continue;
            /* Read into a block of its own, kept only when something was set. */
            char *block = calloc(1, t->size);
            if (!block)
                return -ENOMEM;
            int r = decode_fields(t->sub, v, block, here, n);
            if (r == 0 && memcmp(block, t->empty, t->size) == 0) {
                free(block);
                continue;
            }
            *AT(base, t->off, void *) = block; /* on -ENOMEM too: clear frees it */
            if (r < 0)
                return -ENOMEM;
            continue;
        }
        if (!v || cJSON_IsNull(v)) {
            if (t->kind == SF_COND_STATUS)
                *AT(base, t->off, enum condition_status) = COND_UNKNOWN;
            continue;
        }
        char *text = NULL;
        const char *why = NULL;
        if (decode_value(t, v, base, &text, &why)) {
            if (t->kind == SF_STATE && cJSON_IsString(v)) {
                char quoted[PATH_SIZE];
                snprintf(quoted, sizeof(quoted), "\"%.64s\" is not a known state", v->valuestring);
                if (noted(n, path, t->key, quoted) < 0)
                    return -ENOMEM;
            } else if (noted(n, path, t->key, why) < 0) {
                return -ENOMEM;
            }
            continue;
        }
        if (text && json_dup_optional(text, AT(base, t->off, char *)) < 0)
            return -ENOMEM;
    }
    return 0;
}

int status_fields_decode_noting(const struct status_field *t, const cJSON *o, void *base,
                                const char *path, status_field_note note, void *data)
{
    struct noter n = {note, data};
    return decode_fields(t, cJSON_IsObject(o) ? o : NULL, base, path ? path : "", &n);
}

int status_fields_decode(const struct status_field *t, const cJSON *o, void *base)
{
    return status_fields_decode_noting(t, o, base, "", NULL, NULL);
}

/* ---- encoding ---- */

/* Builds an object field by field; the first allocation failure sticks and
 * the caller checks once at the end. */
struct writer {
    int oom;
};

static void put_str(struct writer *w, cJSON *o, const char *k, const char *v)
{
    if (v && v[0] && !cJSON_AddStringToObject(o, k, v))
        w->oom = 1;
}

static void put_text(struct writer *w, cJSON *o, const char *k, const char *v)
{
    if (!cJSON_AddStringToObject(o, k, v ? v : ""))
        w->oom = 1;
}

static void put_int(struct writer *w, cJSON *o, const char *k, int64_t v)
{
    if (v && !cJSON_AddNumberToObject(o, k, (double)v))
        w->oom = 1;
}

static void put_double(struct writer *w, cJSON *o, const char *k, double v)
{
    if (v != 0 && isfinite(v) && !cJSON_AddNumberToObject(o, k, v))
        w->oom = 1;
}

static void put_number(struct writer *w, cJSON *o, const char *k, double v)
{
    if (isfinite(v) && !cJSON_AddNumberToObject(o, k, v))
        w->oom = 1;
}

static void put_time(struct writer *w, cJSON *o, const char *k, int64_t ms)
{
    char t[TIMEFMT_RFC3339_SIZE];
    if (ms && timefmt_format_rfc3339(ms, t, sizeof(t)) == 0)
        put_str(w, o, k, t);
}

/* A time a decision is made on to the millisecond (when an announced pause
 * is due): kept as it was, so what is read back is what was decided. */
static void put_time_precise(struct writer *w, cJSON *o, const char *k, int64_t ms)
{
    char t[TIMEFMT_RFC3339_MICRO_SIZE];
    if (ms && timefmt_format_rfc3339_micro(ms, t, sizeof(t)) == 0)
        put_str(w, o, k, t);
}

const char *workspace_condition_status_name(enum condition_status s)
{
    switch (s) {
    case COND_TRUE:
        return "True";
    case COND_FALSE:
        return "False";
    default:
        return "Unknown";
    }
}

static int condition_rank(const char *type)
{
    static const char *const order[] = {"Valid", "Ready", "Available", "CapacityAvailable",
                                        "Restored"};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        if (strcmp(type, order[i]) == 0)
            return (int)i;
    return (int)(sizeof(order) / sizeof(order[0]));
}

/* Valid, Ready, Available, CapacityAvailable, Restored, then the rest by type. */
static int condition_cmp(const void *a, const void *b)
{
    const struct condition *x = *(const struct condition *const *)a;
    const struct condition *y = *(const struct condition *const *)b;
    int rx = condition_rank(x->type), ry = condition_rank(y->type);
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return strcmp(x->type, y->type);
}

static void encode_fields(struct writer *w, const struct status_field *t, const void *base,
                          cJSON *o);

static void encode_list(struct writer *w, const struct status_field *f, const void *base, cJSON *o)
{
    size_t n = *AT_CONST(base, f->count, size_t);
    if (f->max && n > f->max)
        n = f->max;
    if (n == 0)
        return;
    const char *items = *AT_CONST(base, f->off, char *);
    const void **order = calloc(n, sizeof(*order));
    cJSON *arr = cJSON_AddArrayToObject(o, f->key);
    if (!order || !arr) {
        free(order);
        w->oom = 1;
        return;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = items + i * f->size;
    if (f->kind == SF_CONDITIONS)
        qsort(order, n, sizeof(*order), condition_cmp);
    for (size_t i = 0; i < n; i++) {
        cJSON *j = cJSON_CreateObject();
        if (!j || !cJSON_AddItemToArray(arr, j)) {
            cJSON_Delete(j);
            w->oom = 1;
            break;
        }
        encode_fields(w, f->sub, order[i], j);
    }
    free(order);
}

/* An object that ended up empty is dropped: unset means absent. */
static void encode_object(struct writer *w, const struct status_field *f, const void *base,
                          cJSON *o)
{
    cJSON *c = cJSON_AddObjectToObject(o, f->key);
    if (!c) {
        w->oom = 1;
        return;
    }
    encode_fields(w, f->sub,
                  f->kind == SF_BLOCK ? read_block(f, base) : AT_CONST(base, f->off, char), c);
    if (!c->child)
        cJSON_DeleteItemFromObjectCaseSensitive(o, f->key);
}

static void encode_fields(struct writer *w, const struct status_field *t, const void *base,
                          cJSON *o)
{
    for (; t->kind != SF_END; t++) {
        if (t->kind == SF_INLINE) {
            encode_fields(w, t->sub, AT_CONST(base, t->off, char), o);
            continue;
        }
        if (!t->key)
            continue;
        switch (t->kind) {
        case SF_STR:
            put_str(w, o, t->key, *AT_CONST(base, t->off, char *));
            break;
        case SF_TEXT:
            put_text(w, o, t->key, *AT_CONST(base, t->off, char *));
            break;
        case SF_TIME:
            put_time(w, o, t->key, *AT_CONST(base, t->off, int64_t));
            break;
        case SF_TIME_MICRO:
            put_time_precise(w, o, t->key, *AT_CONST(base, t->off, int64_t));
            break;
        case SF_INT64:
            put_int(w, o, t->key, *AT_CONST(base, t->off, int64_t));
            break;
        case SF_INT:
            put_int(w, o, t->key, *AT_CONST(base, t->off, int));
            break;
        case SF_BOOL:
            if (*AT_CONST(base, t->off, int) && !cJSON_AddTrueToObject(o, t->key))
                w->oom = 1;
            break;
        case SF_DOUBLE:
            put_double(w, o, t->key, *AT_CONST(base, t->off, double));
            break;
        case SF_FIGURE:
            if (*AT_CONST(base, t->when, int64_t))
                put_number(w, o, t->key, *AT_CONST(base, t->off, double));
            break;
        case SF_STATE:
            put_str(w, o, t->key,
                    workspace_state_name(*AT_CONST(base, t->off, enum workspace_state)));
            break;
        case SF_COND_STATUS:
            put_text(
                w, o, t->key,
                workspace_condition_status_name(*AT_CONST(base, t->off, enum condition_status)));
            break;
        case SF_OBJECT:
        case SF_BLOCK:
            encode_object(w, t, base, o);
            break;
        case SF_LIST:
        case SF_CONDITIONS:
            encode_list(w, t, base, o);
            break;
        case SF_END:
        case SF_INLINE:
            break;
        }
    }
}

int status_fields_encode(const struct status_field *t, const void *base, cJSON *o)
{
    struct writer w = {0};
    encode_fields(&w, t, base, o);
    return w.oom ? -ENOMEM : 0;
}

/* ---- equality ---- */

/* Each comparison below says whether the two values encode the same (as
 * encode_fields() writes them), without building the JSON: a reconcile
 * compares the status it decided with the one it read, and most are
 * equal. */

static int str_same(const char *a, const char *b, int text)
{
    if (!text) {
        a = a && a[0] ? a : NULL;
        b = b && b[0] ? b : NULL;
    } else {
        a = a ? a : "";
        b = b ? b : "";
    }
    return a == b || (a && b && strcmp(a, b) == 0);
}

static int time_same(int64_t a, int64_t b, int micro)
{
    if (a == b)
        return 1;
    char ta[TIMEFMT_RFC3339_MICRO_SIZE] = "", tb[TIMEFMT_RFC3339_MICRO_SIZE] = "";
    int (*fmt)(int64_t, char *, size_t) =
        micro ? timefmt_format_rfc3339_micro : timefmt_format_rfc3339;
    if (a && fmt(a, ta, sizeof(ta)) < 0)
        ta[0] = '\0';
    if (b && fmt(b, tb, sizeof(tb)) < 0)
        tb[0] = '\0';
    return strcmp(ta, tb) == 0;
}

/* Two numbers cJSON writes alike: printed into buffers of our own (a
 * cJSON number item on the stack, cJSON_PrintPreallocated()), so whatever
 * precision cJSON uses decides, as it does for the JSON. */
static int number_same(double a, double b)
{
    if (a == b && !signbit(a) == !signbit(b))
        return 1;
    char ta[64], tb[64];
    cJSON na = {.type = cJSON_Number}, nb = {.type = cJSON_Number};
    cJSON_SetNumberValue(&na, a);
    cJSON_SetNumberValue(&nb, b);
    if (!cJSON_PrintPreallocated(&na, ta, sizeof(ta), 0) ||
        !cJSON_PrintPreallocated(&nb, tb, sizeof(tb), 0))
        return 0;
    return strcmp(ta, tb) == 0;
}

/* A double as put_double() (or, always, put_number()) writes it: omitted
 * when 0 or not finite. */
static int double_same(double a, double b, int always)
{
    int ha = isfinite(a) && (always || a != 0), hb = isfinite(b) && (always || b != 0);
    return ha == hb && (!ha || number_same(a, b));
}

static int fields_same(const struct status_field *t, const void *a, const void *b);

#define MAX_SORTED_ON_STACK 32

static int list_same(const struct status_field *f, const void *a, const void *b)
{
    size_t na = *AT_CONST(a, f->count, size_t), nb = *AT_CONST(b, f->count, size_t);
    if (f->max && na > f->max)
        na = f->max;
    if (f->max && nb > f->max)
        nb = f->max;
    if (na != nb)
        return 0;
    const char *ia = *AT_CONST(a, f->off, char *), *ib = *AT_CONST(b, f->off, char *);
    if (f->kind != SF_CONDITIONS) {
        for (size_t i = 0; i < na; i++)
            if (!fields_same(f->sub, ia + i * f->size, ib + i * f->size))
                return 0;
        return 1;
    }
    /* Conditions are written in a fixed order, not as stored. */
    const void *stack[2 * MAX_SORTED_ON_STACK];
    const void **oa = stack, **ob = stack + MAX_SORTED_ON_STACK;
    const void **heap = NULL;
    if (na > MAX_SORTED_ON_STACK) {
        if (!(heap = calloc(2 * na, sizeof(*heap))))
            return 0; /* out of memory reads as "different": a write is always safe */
        oa = heap;
        ob = heap + na;
    }
    for (size_t i = 0; i < na; i++) {
        oa[i] = ia + i * f->size;
        ob[i] = ib + i * f->size;
    }
    qsort(oa, na, sizeof(*oa), condition_cmp);
    qsort(ob, na, sizeof(*ob), condition_cmp);
    int same = 1;
    for (size_t i = 0; i < na && same; i++)
        same = fields_same(f->sub, oa[i], ob[i]);
    free(heap);
    return same;
}

static int fields_same(const struct status_field *t, const void *a, const void *b)
{
    for (; t->kind != SF_END; t++) {
        if (t->kind == SF_INLINE) {
            if (!fields_same(t->sub, AT_CONST(a, t->off, char), AT_CONST(b, t->off, char)))
                return 0;
            continue;
        }
        if (!t->key)
            continue;
        int same = 1;
        switch (t->kind) {
        case SF_STR:
        case SF_TEXT:
            same = str_same(*AT_CONST(a, t->off, char *), *AT_CONST(b, t->off, char *),
                            t->kind == SF_TEXT);
            break;
        case SF_TIME:
        case SF_TIME_MICRO:
            same = time_same(*AT_CONST(a, t->off, int64_t), *AT_CONST(b, t->off, int64_t),
                             t->kind == SF_TIME_MICRO);
            break;
        case SF_INT64: {
            int64_t x = *AT_CONST(a, t->off, int64_t), y = *AT_CONST(b, t->off, int64_t);
            same = x == y || (x && y && number_same((double)x, (double)y));
            break;
        }
        case SF_INT:
            same = *AT_CONST(a, t->off, int) == *AT_CONST(b, t->off, int);
            break;
        case SF_BOOL:
            same = !*AT_CONST(a, t->off, int) == !*AT_CONST(b, t->off, int);
            break;
        case SF_DOUBLE:
            same = double_same(*AT_CONST(a, t->off, double), *AT_CONST(b, t->off, double), 0);
            break;
        case SF_FIGURE: {
            int ha = *AT_CONST(a, t->when, int64_t) != 0, hb = *AT_CONST(b, t->when, int64_t) != 0;
            same = ha == hb && (!ha || double_same(*AT_CONST(a, t->off, double),
                                                   *AT_CONST(b, t->off, double), 1));
            break;
        }
        case SF_STATE:
            same = str_same(workspace_state_name(*AT_CONST(a, t->off, enum workspace_state)),
                            workspace_state_name(*AT_CONST(b, t->off, enum workspace_state)), 0);
            break;
        case SF_COND_STATUS:
            same =
                strcmp(workspace_condition_status_name(*AT_CONST(a, t->off, enum condition_status)),
                       workspace_condition_status_name(
                           *AT_CONST(b, t->off, enum condition_status))) == 0;
            break;
        case SF_OBJECT:
            same = fields_same(t->sub, a, b);
            break;
        case SF_BLOCK:
            same = fields_same(t->sub, read_block(t, a), read_block(t, b));
            break;
        case SF_LIST:
        case SF_CONDITIONS:
            same = list_same(t, a, b);
            break;
        case SF_END:
        case SF_INLINE:
            break;
        }
        if (!same)
            return 0;
    }
    return 1;
}

int status_fields_same(const struct status_field *t, const void *a, const void *b)
{
    return fields_same(t, a, b);
}

/* ---- memory ---- */

void status_fields_clear(const struct status_field *t, void *base)
{
    for (; t->kind != SF_END; t++) {
        if (is_string(t)) {
            free(*AT(base, t->off, char *));
        } else if (t->kind == SF_OBJECT || t->kind == SF_INLINE) {
            status_fields_clear(t->sub, AT(base, t->off, char));
        } else if (t->kind == SF_BLOCK) {
            void *block = own_block(t, base);
            if (block) {
                status_fields_clear(t->sub, block);
                free(block);
            }
            *AT(base, t->off, const void *) = t->empty;
        } else if (is_list(t)) {
            char *items = *AT(base, t->off, char *);
            size_t n = *AT(base, t->count, size_t);
            for (size_t i = 0; i < n; i++)
                status_fields_clear(t->sub, items + i * t->size);
            free(items);
        }
    }
}

void status_fields_fill_empty(const struct status_field *t, void *base)
{
    for (; t->kind != SF_END; t++) {
        if (t->kind == SF_OBJECT || t->kind == SF_INLINE)
            status_fields_fill_empty(t->sub, AT(base, t->off, char));
        else if (t->kind == SF_BLOCK && !*AT(base, t->off, void *))
            *AT(base, t->off, const void *) = t->empty;
    }
}

int status_fields_own_blocks(const struct status_field *t, void *base)
{
    for (; t->kind != SF_END; t++) {
        if (t->kind == SF_OBJECT || t->kind == SF_INLINE) {
            if (status_fields_own_blocks(t->sub, AT(base, t->off, char)) < 0)
                return -ENOMEM;
        } else if (t->kind == SF_BLOCK && !own_block(t, base)) {
            void *block = calloc(1, t->size);
            if (!block)
                return -ENOMEM;
            *AT(base, t->off, void *) = block;
        }
    }
    return 0;
}

/* ---- sharing ---- */

/* Pools (give 0) or releases (give 1) the strings of t's shared fields in
 * base, lists and objects included; releasing also frees the other strings
 * and the lists. */
static int share_walk(const struct status_field *t, void *base, struct strpool *pool, int give)
{
    for (; t->kind != SF_END; t++) {
        if (is_string(t)) {
            char **field = AT(base, t->off, char *);
            if (!t->shared) {
                if (give)
                    free(*field);
            } else if (give) {
                strpool_drop(pool, *field); /* pooled, or left its own by -ENOMEM */
            } else if (strpool_adopt(pool, field) < 0) {
                return -ENOMEM;
            }
        } else if (t->kind == SF_OBJECT || t->kind == SF_INLINE) {
            int e = share_walk(t->sub, AT(base, t->off, char), pool, give);
            if (e < 0)
                return e;
        } else if (t->kind == SF_BLOCK) {
            void *block = own_block(t, base);
            int e = block ? share_walk(t->sub, block, pool, give) : 0;
            if (give) {
                free(block);
                *AT(base, t->off, const void *) = t->empty;
            }
            if (e < 0)
                return e;
        } else if (is_list(t)) {
            char *items = *AT(base, t->off, char *);
            size_t n = *AT(base, t->count, size_t);
            for (size_t i = 0; i < n; i++) {
                int e = share_walk(t->sub, items + i * t->size, pool, give);
                if (e < 0)
                    return e;
            }
            if (give)
                free(items);
        }
    }
    return 0;
}

int status_fields_share(const struct status_field *t, void *base, struct strpool *pool)
{
    return share_walk(t, base, pool, 0);
}

void status_fields_clear_shared(const struct status_field *t, void *base, struct strpool *pool)
{
    share_walk(t, base, pool, 1);
}

/* Forgets (without freeing) every string and list t names in base. */
static void detach(const struct status_field *t, void *base)
{
    for (; t->kind != SF_END; t++) {
        if (is_string(t)) {
            *AT(base, t->off, char *) = NULL;
        } else if (t->kind == SF_OBJECT || t->kind == SF_INLINE) {
            detach(t->sub, AT(base, t->off, char));
        } else if (t->kind == SF_BLOCK) {
            *AT(base, t->off, const void *) = t->empty;
        } else if (is_list(t)) {
            *AT(base, t->off, void *) = NULL;
            *AT(base, t->count, size_t) = 0;
        }
    }
}

/* dst is detached: copies src's strings and lists into it. On -ENOMEM dst
 * holds what was copied so far, which status_fields_clear() releases. */
static int copy_owned(const struct status_field *t, const void *src, void *dst)
{
    for (; t->kind != SF_END; t++) {
        if (is_string(t)) {
            if (json_dup_optional(*AT_CONST(src, t->off, char *), AT(dst, t->off, char *)) < 0)
                return -ENOMEM;
        } else if (t->kind == SF_OBJECT || t->kind == SF_INLINE) {
            if (copy_owned(t->sub, AT_CONST(src, t->off, char), AT(dst, t->off, char)) < 0)
                return -ENOMEM;
        } else if (t->kind == SF_BLOCK) {
            /* A copy is made to be written: every block its own. */
            const void *from = read_block(t, src);
            char *to = malloc(t->size);
            if (!to)
                return -ENOMEM;
            memcpy(to, from, t->size);
            detach(t->sub, to);
            *AT(dst, t->off, void *) = to;
            if (copy_owned(t->sub, from, to) < 0)
                return -ENOMEM;
        } else if (is_list(t)) {
            size_t n = *AT_CONST(src, t->count, size_t);
            if (n == 0)
                continue;
            const char *from = *AT_CONST(src, t->off, char *);
            char *to = calloc(n, t->size);
            if (!to)
                return -ENOMEM;
            *AT(dst, t->off, char *) = to;
            size_t *count = AT(dst, t->count, size_t);
            for (size_t i = 0; i < n; i++) {
                memcpy(to + i * t->size, from + i * t->size, t->size);
                detach(t->sub, to + i * t->size);
                (*count)++;
                if (copy_owned(t->sub, from + i * t->size, to + i * t->size) < 0)
                    return -ENOMEM;
            }
        }
    }
    return 0;
}

int status_fields_deepen(const struct status_field *t, const void *src, void *dst)
{
    detach(t, dst);
    if (copy_owned(t, src, dst) < 0) {
        status_fields_clear(t, dst);
        return -ENOMEM;
    }
    return 0;
}
