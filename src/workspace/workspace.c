#include "workspace/workspace.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/duration.h"
#include "util/json.h"
#include "util/timefmt.h"

#define MAX_ENV 32

static const char *const state_names[] = {
    [WS_STATE_NONE] = "",
    [WS_STATE_PENDING] = "Pending",
    [WS_STATE_RUNNING] = "Running",
    [WS_STATE_PAUSING] = "Pausing",
    [WS_STATE_PAUSED] = "Paused",
    [WS_STATE_RESUMING] = "Resuming",
    [WS_STATE_WAITING_FOR_CAPACITY] = "WaitingForCapacity",
    [WS_STATE_FAILED] = "Failed",
};

const char *workspace_state_name(enum workspace_state s)
{
    if ((size_t)s >= sizeof(state_names) / sizeof(state_names[0]))
        return "";
    return state_names[s];
}

enum workspace_state workspace_state_from_name(const char *name)
{
    if (!name)
        return WS_STATE_NONE;
    for (size_t i = 1; i < sizeof(state_names) / sizeof(state_names[0]); i++)
        if (strcmp(name, state_names[i]) == 0)
            return (enum workspace_state)i;
    return WS_STATE_NONE;
}

/* ---- reading JSON ---- */

static int fail(char **ret_err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(char **ret_err, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    if (ret_err)
        *ret_err = s;
    else
        free(s);
    return -EINVAL;
}

static enum condition_status condition_status_from_name(const char *s)
{
    if (s && strcmp(s, "True") == 0)
        return COND_TRUE;
    if (s && strcmp(s, "False") == 0)
        return COND_FALSE;
    return COND_UNKNOWN;
}

static const char *condition_status_name(enum condition_status s)
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

static void condition_clear(struct condition *c)
{
    free(c->type);
    free(c->reason);
    free(c->message);
    *c = (struct condition){0};
}

/* The fields a pause's timeline and its history record share: everything
 * but the request time and the message, which they name differently or only
 * one of them has. */
static int pause_decode_common(const cJSON *o, struct workspace_pause_timeline *t)
{
    t->pod_deleted_ms = json_time_ms(o, "podDeletedAt");
    t->accelerator_released_ms = json_time_ms(o, "acceleratorReleasedAt");
    t->work_ended_ms = json_time_ms(o, "workEndedAt");
    t->held_since_ms = json_time_ms(o, "heldSince");
    t->snapshot_ready_ms = json_time_ms(o, "snapshotReadyAt");
    t->snapshot_seconds = json_double(o, "snapshotSeconds");
    t->accelerator_taken_ms = json_time_ms(o, "acceleratorTakenAt");
    t->node_removed_ms = json_time_ms(o, "nodeRemovedAt");
    if (json_dup_optional(json_string(o, "reason"), &t->reason) < 0 ||
        json_dup_optional(json_string(o, "memory"), &t->memory) < 0 ||
        json_dup_optional(json_string(o, "nodeName"), &t->node_name) < 0 ||
        json_dup_optional(json_string(o, "product"), &t->product) < 0 ||
        json_dup_optional(json_string(o, "acceleratorTakenBy"), &t->accelerator_taken_by) < 0)
        return -ENOMEM;
    return 0;
}

static void record_clear(struct workspace_pause_record *r)
{
    workspace_pause_timeline_clear(&r->pause);
    free(r->resume.restored_from);
    *r = (struct workspace_pause_record){0};
}

static int history_decode(const cJSON *arr, struct workspace_status *s)
{
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0)
        return 0;
    size_t n = (size_t)cJSON_GetArraySize(arr);
    s->history = calloc(n < WORKSPACE_HISTORY_MAX ? n : WORKSPACE_HISTORY_MAX, sizeof(*s->history));
    if (!s->history)
        return -ENOMEM;
    const cJSON *o;
    cJSON_ArrayForEach(o, arr)
    {
        if (s->n_history == WORKSPACE_HISTORY_MAX)
            break;
        if (!cJSON_IsObject(o))
            continue;
        struct workspace_pause_record *r = &s->history[s->n_history++];
        r->pause.requested_ms = json_time_ms(o, "pausedAt");
        r->resume.requested_ms = json_time_ms(o, "resumeRequestedAt");
        r->resume.pod_scheduled_ms = json_time_ms(o, "podScheduledAt");
        r->resume.ready_ms = json_time_ms(o, "readyAt");
        r->resume.seconds_to_ready = json_double(o, "secondsToReady");
        if (pause_decode_common(o, &r->pause) < 0 ||
            json_dup_optional(json_string(o, "restoredFrom"), &r->resume.restored_from) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int status_decode(const cJSON *st, struct workspace_status *s)
{
    *s = (struct workspace_status){0};
    if (!cJSON_IsObject(st))
        return 0;
    s->observed_generation = json_int(st, "observedGeneration");
    s->state = workspace_state_from_name(json_string(st, "state"));
    s->pod_generation = json_int(st, "podGeneration");
    s->waiting_for_capacity_since_ms = json_time_ms(st, "waitingForCapacitySince");
    s->state_since_ms = json_time_ms(st, "stateSince");
    if (json_dup_optional(json_string(st, "message"), &s->message) < 0 ||
        json_dup_optional(json_string(st, "podName"), &s->pod_name) < 0 ||
        json_dup_optional(json_string(st, "podUID"), &s->pod_uid) < 0 ||
        json_dup_optional(json_string(st, "deletedPod"), &s->deleted_pod) < 0 ||
        json_dup_optional(json_string(st, "nodeName"), &s->node_name) < 0 ||
        json_dup_optional(json_string(st, "homeClaimName"), &s->home_claim_name) < 0)
        goto oom;

    const cJSON *acc = json_member(st, "accelerator");
    s->accelerator_count = (int)json_int(acc, "count");
    s->accelerator_fallback = cJSON_IsTrue(json_member(acc, "fallback"));
    if (json_dup_optional(json_string(acc, "resourceName"), &s->accelerator_resource) < 0 ||
        json_dup_optional(json_string(acc, "product"), &s->accelerator_product) < 0)
        goto oom;

    const cJSON *conds = json_member(st, "conditions");
    if (cJSON_IsArray(conds) && cJSON_GetArraySize(conds) > 0) {
        s->conditions = calloc((size_t)cJSON_GetArraySize(conds), sizeof(*s->conditions));
        if (!s->conditions)
            goto oom;
        const cJSON *c;
        cJSON_ArrayForEach(c, conds)
        {
            const char *type = json_string(c, "type");
            if (!type || !type[0] || workspace_status_condition(s, type))
                continue;
            struct condition *d = &s->conditions[s->n_conditions++];
            d->status = condition_status_from_name(json_string(c, "status"));
            d->observed_generation = json_int(c, "observedGeneration");
            d->last_transition_ms = json_time_ms(c, "lastTransitionTime");
            if (json_dup_optional(type, &d->type) < 0 ||
                json_dup_optional(json_string(c, "reason"), &d->reason) < 0 ||
                json_dup_optional(json_string(c, "message"), &d->message) < 0)
                goto oom;
        }
    }

    const cJSON *lp = json_member(st, "lastPause");
    s->last_pause.requested_ms = json_time_ms(lp, "requestedAt");
    if (pause_decode_common(lp, &s->last_pause) < 0 ||
        json_dup_optional(json_string(lp, "message"), &s->last_pause.message) < 0)
        goto oom;

    const cJSON *sn = json_member(st, "snapshot");
    struct workspace_snapshot *snap = &s->snapshot;
    snap->attempts = json_int(sn, "attempts");
    snap->requested_ms = json_time_ms(sn, "requestedAt");
    snap->ready_ms = json_time_ms(sn, "readyAt");
    snap->failed_ms = json_time_ms(sn, "failedAt");
    snap->restore_failed_ms = json_time_ms(sn, "restoreFailedAt");
    snap->seconds = json_double(sn, "seconds");
    if (json_dup_optional(json_string(sn, "attempt"), &snap->attempt) < 0 ||
        json_dup_optional(json_string(sn, "name"), &snap->name) < 0 ||
        json_dup_optional(json_string(sn, "phase"), &snap->phase) < 0 ||
        json_dup_optional(json_string(sn, "nodeName"), &snap->node_name) < 0 ||
        json_dup_optional(json_string(sn, "gpuProduct"), &snap->gpu_product) < 0 ||
        json_dup_optional(json_string(sn, "podSpecHash"), &snap->pod_spec_hash) < 0 ||
        json_dup_optional(json_string(sn, "message"), &snap->message) < 0 ||
        json_dup_optional(json_string(sn, "homeClaimUID"), &snap->home_claim_uid) < 0 ||
        json_dup_optional(json_string(sn, "group"), &snap->group) < 0 ||
        json_dup_optional(json_string(sn, "rejectedGroup"), &snap->rejected_group) < 0)
        goto oom;
    const cJSON *ac = json_member(sn, "appCheckpoint");
    snap->checkpoint_requested_ms = json_time_ms(ac, "requestedAt");
    snap->checkpoint_answered_ms = json_time_ms(ac, "answeredAt");
    if (json_dup_optional(json_string(ac, "attempt"), &snap->checkpoint_attempt) < 0 ||
        json_dup_optional(json_string(ac, "result"), &snap->checkpoint_result) < 0 ||
        json_dup_optional(json_string(ac, "message"), &snap->checkpoint_message) < 0)
        goto oom;
    snap->rejected_ms = json_time_ms(sn, "rejectedAt");

    const cJSON *act = json_member(st, "activity");
    struct workspace_activity *a = &s->activity;
    a->last_activity_ms = json_time_ms(act, "lastActivityTime");
    a->last_probe_ms = json_time_ms(act, "lastProbeTime");
    a->idle_since_ms = json_time_ms(act, "idleSince");
    a->pause_at_ms = json_time_ms(act, "pauseAt");
    a->idle_after_seconds = json_int(act, "idleAfterSeconds");
    a->keep_alive_until_ms = json_time_ms(act, "keepAliveUntil");
    a->keep_alive_requested_ms = json_time_ms(act, "keepAliveRequested");
    if (json_dup_optional(json_string(act, "lastActivitySource"), &a->last_activity_source) < 0 ||
        json_dup_optional(json_string(act, "lastProbeResult"), &a->last_probe_result) < 0 ||
        json_dup_optional(json_string(act, "lastProbeError"), &a->last_probe_error) < 0)
        goto oom;

    const cJSON *lr = json_member(st, "lastResume");
    s->last_resume.requested_ms = json_time_ms(lr, "requestedAt");
    s->last_resume.pod_created_ms = json_time_ms(lr, "podCreatedAt");
    s->last_resume.pod_scheduled_ms = json_time_ms(lr, "podScheduledAt");
    s->last_resume.ready_ms = json_time_ms(lr, "readyAt");
    s->last_resume.seconds_to_ready = json_double(lr, "secondsToReady");
    if (json_dup_optional(json_string(lr, "restoredFrom"), &s->last_resume.restored_from) < 0)
        goto oom;

    const cJSON *acct = json_member(st, "accounting");
    s->pauses = json_int(acct, "pauses");
    s->resumes = json_int(acct, "resumes");
    s->accelerator_seconds_released = json_double(acct, "acceleratorSecondsReleased");
    s->accelerator_seconds_held = json_double(acct, "acceleratorSecondsHeld");
    s->accelerator_held_since_ms = json_time_ms(acct, "acceleratorHeldSince");
    if (history_decode(json_member(st, "history"), s) < 0)
        goto oom;

    const cJSON *home = json_member(st, "home");
    s->home.since_ms = json_time_ms(home, "since");
    s->home.lost_ms = json_time_ms(home, "lostAt");
    s->home.acknowledged_ms = json_time_ms(home, "acknowledgedAt");
    if (json_dup_optional(json_string(home, "claimUID"), &s->home.claim_uid) < 0 ||
        json_dup_optional(json_string(home, "lostClaimUID"), &s->home.lost_claim_uid) < 0 ||
        json_dup_optional(json_string(home, "freshPod"), &s->home.fresh_pod) < 0)
        goto oom;

    const cJSON *intr = json_member(st, "interruptions");
    const cJSON *last = json_member(intr, "last");
    struct workspace_interruption *li = &s->last_interruption;
    s->interruptions = json_int(intr, "count");
    li->at_ms = json_time_ms(last, "at");
    if (json_dup_optional(json_string(last, "pod"), &li->pod) < 0 ||
        json_dup_optional(json_string(last, "podUID"), &li->pod_uid) < 0 ||
        json_dup_optional(json_string(last, "nodeName"), &li->node_name) < 0 ||
        json_dup_optional(json_string(last, "reason"), &li->reason) < 0 ||
        json_dup_optional(json_string(last, "message"), &li->message) < 0 ||
        json_dup_optional(json_string(last, "replacedBy"), &li->replaced_by) < 0)
        goto oom;
    return 0;
oom:
    workspace_status_clear(s);
    return -ENOMEM;
}

static int decode_env(const cJSON *spec, struct workspace *ws, char **ret_err)
{
    const cJSON *env = json_member(spec, "env");
    if (!env || cJSON_IsNull(env))
        return 0;
    if (!cJSON_IsArray(env))
        return fail(ret_err, "spec.env: must be a list");
    int n = cJSON_GetArraySize(env);
    if (n > MAX_ENV)
        return fail(ret_err, "spec.env: at most %d entries", MAX_ENV);
    if (n == 0)
        return 0;
    ws->env = calloc((size_t)n, sizeof(*ws->env));
    if (!ws->env)
        return -ENOMEM;
    const cJSON *e;
    cJSON_ArrayForEach(e, env)
    {
        size_t i = ws->n_env;
        const char *name = json_string(e, "name");
        const cJSON *value = json_member(e, "value");
        if (!name || !name[0])
            return fail(ret_err, "spec.env[%zu].name: required", i);
        if (value && !cJSON_IsNull(value) && !cJSON_IsString(value))
            return fail(ret_err, "spec.env[%zu].value: must be a string", i);
        ws->n_env++;
        if (json_dup_optional(name, &ws->env[i].name) < 0 ||
            json_dup_optional(cJSON_IsString(value) ? value->valuestring : "", &ws->env[i].value) <
                0)
            return -ENOMEM;
    }
    return 0;
}

static int decode_spec(const cJSON *obj, struct workspace *ws, char **ret_err)
{
    const cJSON *spec = json_member(obj, "spec");
    if (!cJSON_IsObject(spec))
        return fail(ret_err, "spec: required");
    const char *cls = json_string(spec, "className");
    if (!cls || !cls[0])
        return fail(ret_err, "spec.className: required");
    if (json_dup_optional(cls, &ws->class_name) < 0)
        return -ENOMEM;

    const cJSON *image = json_member(spec, "image");
    if (image && !cJSON_IsNull(image) && !cJSON_IsString(image))
        return fail(ret_err, "spec.image: must be a string");
    if (cJSON_IsString(image) && image->valuestring[0] &&
        json_dup_optional(image->valuestring, &ws->image) < 0)
        return -ENOMEM;

    const cJSON *paused = json_member(spec, "paused");
    if (paused && !cJSON_IsNull(paused) && !cJSON_IsBool(paused))
        return fail(ret_err, "spec.paused: must be true or false");
    ws->paused = cJSON_IsTrue(paused);

    const cJSON *home = json_member(spec, "home");
    if (home && !cJSON_IsNull(home) && !cJSON_IsObject(home))
        return fail(ret_err, "spec.home: must be an object");
    const cJSON *size = json_member(home, "size");
    if (cJSON_IsString(size)) {
        if (size->valuestring[0] && json_dup_optional(size->valuestring, &ws->home_size) < 0)
            return -ENOMEM;
    } else if (cJSON_IsNumber(size)) {
        /* int-or-string quantity: kept as text, judged by decide(). */
        if (asprintf(&ws->home_size, "%.17g", size->valuedouble) < 0) {
            ws->home_size = NULL;
            return -ENOMEM;
        }
    } else if (size && !cJSON_IsNull(size)) {
        return fail(ret_err, "spec.home.size: must be a quantity such as \"20Gi\"");
    }

    const char *keep = json_string(spec, "keepAliveUntil");
    if (keep && timefmt_parse_rfc3339(keep, &ws->keep_alive_until_ms) < 0)
        return fail(ret_err, "spec.keepAliveUntil: \"%s\" is not an RFC 3339 time", keep);
    const cJSON *idle = json_member(spec, "idle");
    if (idle && !cJSON_IsNull(idle) && !cJSON_IsObject(idle))
        return fail(ret_err, "spec.idle: must be an object");
    const char *after = json_string(idle, "after");
    if (after && duration_parse_ms(after, &ws->idle_after_ms) < 0)
        return fail(ret_err, "spec.idle.after: \"%s\" is not a duration such as \"2h\"", after);
    return decode_env(spec, ws, ret_err);
}

static int decode_metadata(const cJSON *obj, struct workspace *ws, char **ret_err)
{
    const cJSON *meta = json_member(obj, "metadata");
    if (!cJSON_IsObject(meta))
        return fail(ret_err, "metadata: required");
    const char *name = json_string(meta, "name");
    if (!name || !name[0])
        return fail(ret_err, "metadata.name: required");
    if (json_dup_optional(name, &ws->name) < 0 ||
        json_dup_optional(json_string(meta, "namespace"), &ws->ns) < 0 ||
        json_dup_optional(json_string(meta, "uid"), &ws->uid) < 0 ||
        json_dup_optional(json_string(meta, "resourceVersion"), &ws->resource_version) < 0)
        return -ENOMEM;
    ws->generation = json_int(meta, "generation");
    /* Set by the API server; an unreadable one counts as absent. */
    const char *created = json_string(meta, "creationTimestamp");
    if (created && timefmt_parse_rfc3339(created, &ws->created_ms) < 0)
        ws->created_ms = 0;
    const char *del = json_string(meta, "deletionTimestamp");
    if (del && timefmt_parse_rfc3339(del, &ws->deletion_ms) < 0)
        return fail(ret_err, "metadata.deletionTimestamp: not an RFC 3339 time");
    /* The API server never shows a zero deletionTimestamp, but 0 means "not
     * deleting" here, so a deletion at the epoch must still count. */
    if (del && ws->deletion_ms == 0)
        ws->deletion_ms = 1;
    /* Annotations anyone may write: an unreadable value counts as absent. */
    const cJSON *ann = json_member(meta, "annotations");
    const char *v = json_string(ann, LAST_ACTIVITY_ANNOTATION);
    if (v && timefmt_parse_rfc3339(v, &ws->annotated_activity_ms) < 0)
        ws->annotated_activity_ms = 0;
    v = json_string(ann, AUTO_PAUSED_AT_ANNOTATION);
    if (v && timefmt_parse_rfc3339(v, &ws->auto_paused_ms) < 0)
        ws->auto_paused_ms = 0;
    if (json_dup_optional(json_string(ann, AUTO_PAUSE_REASON_ANNOTATION), &ws->auto_pause_message) <
            0 ||
        json_dup_optional(json_string(ann, ACKNOWLEDGE_HOME_LOSS_ANNOTATION),
                          &ws->acknowledged_home_loss) < 0)
        return -ENOMEM;
    const cJSON *fin;
    cJSON_ArrayForEach(fin, json_member(meta, "finalizers"))
    {
        if (cJSON_IsString(fin) && strcmp(fin->valuestring, WORKSPACE_FINALIZER) == 0)
            ws->has_finalizer = 1;
    }
    return 0;
}

/* A spec that could not be read is not half used: only the class name
 * (which says which class to blame or count it under) survives. */
static void spec_unset(struct workspace *ws)
{
    free(ws->image);
    free(ws->home_size);
    for (size_t i = 0; i < ws->n_env; i++) {
        free(ws->env[i].name);
        free(ws->env[i].value);
    }
    free(ws->env);
    ws->image = ws->home_size = NULL;
    ws->env = NULL;
    ws->n_env = 0;
    ws->paused = 0;
    ws->keep_alive_until_ms = 0;
    ws->idle_after_ms = 0;
}

int workspace_decode(const cJSON *obj, struct workspace **ret_ws, char **ret_err)
{
    if (!cJSON_IsObject(obj))
        return fail(ret_err, "object: must be a JSON object");
    struct workspace *ws = calloc(1, sizeof(*ws));
    if (!ws)
        return -ENOMEM;
    int r = decode_metadata(obj, ws, ret_err);
    if (r >= 0) {
        r = decode_spec(obj, ws, &ws->spec_error);
        if (r == -EINVAL) {
            spec_unset(ws);
            r = ws->spec_error ? 0 : -ENOMEM;
        }
    }
    if (r >= 0)
        r = status_decode(json_member(obj, "status"), &ws->status);
    if (r < 0) {
        workspace_free(ws);
        return r;
    }
    *ret_ws = ws;
    return 0;
}

void workspace_free(struct workspace *ws)
{
    if (!ws)
        return;
    free(ws->spec_error);
    free(ws->ns);
    free(ws->name);
    free(ws->uid);
    free(ws->resource_version);
    free(ws->class_name);
    free(ws->image);
    free(ws->home_size);
    free(ws->auto_pause_message);
    free(ws->acknowledged_home_loss);
    for (size_t i = 0; i < ws->n_env; i++) {
        free(ws->env[i].name);
        free(ws->env[i].value);
    }
    free(ws->env);
    workspace_status_clear(&ws->status);
    free(ws);
}

/* ---- writing JSON ---- */

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

static cJSON *put_obj(struct writer *w, cJSON *o, const char *k)
{
    cJSON *c = cJSON_AddObjectToObject(o, k);
    if (!c)
        w->oom = 1;
    return c;
}

/* Drops an object that ended up empty: unset means absent. */
static void drop_if_empty(cJSON *o, const char *k)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(o, k);
    if (c && !c->child)
        cJSON_DeleteItemFromObjectCaseSensitive(o, k);
}

/* The fields a pause's timeline and its history record share, after the
 * request, reason and message. */
static void put_pause_ledger(struct writer *w, cJSON *o, const struct workspace_pause_timeline *t)
{
    put_time(w, o, "workEndedAt", t->work_ended_ms);
    put_time(w, o, "heldSince", t->held_since_ms);
    put_time(w, o, "snapshotReadyAt", t->snapshot_ready_ms);
    if (t->snapshot_ready_ms) /* 0.0 s is a figure, not an unset field */
        put_number(w, o, "snapshotSeconds", t->snapshot_seconds);
    put_str(w, o, "memory", t->memory);
    put_str(w, o, "nodeName", t->node_name);
    put_str(w, o, "product", t->product);
    put_time(w, o, "acceleratorTakenAt", t->accelerator_taken_ms);
    put_str(w, o, "acceleratorTakenBy", t->accelerator_taken_by);
    put_time(w, o, "nodeRemovedAt", t->node_removed_ms);
}

static void put_history(struct writer *w, cJSON *o, const struct workspace_status *s)
{
    if (s->n_history == 0)
        return;
    cJSON *arr = cJSON_AddArrayToObject(o, "history");
    if (!arr) {
        w->oom = 1;
        return;
    }
    for (size_t i = 0; i < s->n_history && i < WORKSPACE_HISTORY_MAX; i++) {
        const struct workspace_pause_record *r = &s->history[i];
        cJSON *j = cJSON_CreateObject();
        if (!j || !cJSON_AddItemToArray(arr, j)) {
            cJSON_Delete(j);
            w->oom = 1;
            return;
        }
        put_time(w, j, "pausedAt", r->pause.requested_ms);
        put_str(w, j, "reason", r->pause.reason);
        put_time(w, j, "podDeletedAt", r->pause.pod_deleted_ms);
        put_time(w, j, "acceleratorReleasedAt", r->pause.accelerator_released_ms);
        put_pause_ledger(w, j, &r->pause);
        put_time(w, j, "resumeRequestedAt", r->resume.requested_ms);
        put_time(w, j, "podScheduledAt", r->resume.pod_scheduled_ms);
        put_time(w, j, "readyAt", r->resume.ready_ms);
        if (r->resume.ready_ms)
            put_number(w, j, "secondsToReady", r->resume.seconds_to_ready);
        put_str(w, j, "restoredFrom", r->resume.restored_from);
    }
}

static int condition_rank(const char *type)
{
    static const char *const order[] = {"Valid", "Ready", "CapacityAvailable", "Restored"};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        if (strcmp(type, order[i]) == 0)
            return (int)i;
    return (int)(sizeof(order) / sizeof(order[0]));
}

static int condition_cmp(const void *a, const void *b)
{
    const struct condition *x = *(const struct condition *const *)a;
    const struct condition *y = *(const struct condition *const *)b;
    int rx = condition_rank(x->type), ry = condition_rank(y->type);
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return strcmp(x->type, y->type);
}

static void put_conditions(struct writer *w, cJSON *o, const struct workspace_status *s)
{
    if (s->n_conditions == 0)
        return;
    const struct condition **sorted = calloc(s->n_conditions, sizeof(*sorted));
    cJSON *arr = cJSON_AddArrayToObject(o, "conditions");
    if (!sorted || !arr) {
        free(sorted);
        w->oom = 1;
        return;
    }
    for (size_t i = 0; i < s->n_conditions; i++)
        sorted[i] = &s->conditions[i];
    qsort(sorted, s->n_conditions, sizeof(*sorted), condition_cmp);
    for (size_t i = 0; i < s->n_conditions; i++) {
        const struct condition *c = sorted[i];
        cJSON *j = cJSON_CreateObject();
        if (!j || !cJSON_AddItemToArray(arr, j)) {
            cJSON_Delete(j);
            w->oom = 1;
            break;
        }
        /* metav1.Condition requires reason and message, even when empty. */
        put_str(w, j, "type", c->type);
        if (!cJSON_AddStringToObject(j, "status", condition_status_name(c->status)))
            w->oom = 1;
        put_int(w, j, "observedGeneration", c->observed_generation);
        put_time(w, j, "lastTransitionTime", c->last_transition_ms);
        if (!cJSON_AddStringToObject(j, "reason", c->reason ? c->reason : "") ||
            !cJSON_AddStringToObject(j, "message", c->message ? c->message : ""))
            w->oom = 1;
    }
    free(sorted);
}

cJSON *workspace_status_to_json(const struct workspace_status *s)
{
    struct writer w = {0};
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    put_int(&w, o, "observedGeneration", s->observed_generation);
    if (s->state != WS_STATE_NONE)
        put_str(&w, o, "state", workspace_state_name(s->state));
    put_str(&w, o, "message", s->message);
    put_str(&w, o, "podName", s->pod_name);
    put_str(&w, o, "podUID", s->pod_uid);
    put_str(&w, o, "deletedPod", s->deleted_pod);
    put_int(&w, o, "podGeneration", s->pod_generation);
    put_str(&w, o, "nodeName", s->node_name);
    put_str(&w, o, "homeClaimName", s->home_claim_name);

    cJSON *acc = put_obj(&w, o, "accelerator");
    put_str(&w, acc, "resourceName", s->accelerator_resource);
    put_int(&w, acc, "count", s->accelerator_count);
    put_str(&w, acc, "product", s->accelerator_product);
    if (s->accelerator_fallback && acc && !cJSON_AddTrueToObject(acc, "fallback"))
        w.oom = 1;
    drop_if_empty(o, "accelerator");

    put_conditions(&w, o, s);

    cJSON *lp = put_obj(&w, o, "lastPause");
    put_time(&w, lp, "requestedAt", s->last_pause.requested_ms);
    put_time(&w, lp, "podDeletedAt", s->last_pause.pod_deleted_ms);
    put_time(&w, lp, "acceleratorReleasedAt", s->last_pause.accelerator_released_ms);
    put_str(&w, lp, "reason", s->last_pause.reason);
    put_str(&w, lp, "message", s->last_pause.message);
    put_pause_ledger(&w, lp, &s->last_pause);
    drop_if_empty(o, "lastPause");

    cJSON *lr = put_obj(&w, o, "lastResume");
    put_time(&w, lr, "requestedAt", s->last_resume.requested_ms);
    put_time(&w, lr, "podCreatedAt", s->last_resume.pod_created_ms);
    put_time(&w, lr, "podScheduledAt", s->last_resume.pod_scheduled_ms);
    put_time(&w, lr, "readyAt", s->last_resume.ready_ms);
    if (s->last_resume.ready_ms) /* 0.0 s is a figure, not an unset field */
        put_number(&w, lr, "secondsToReady", s->last_resume.seconds_to_ready);
    put_str(&w, lr, "restoredFrom", s->last_resume.restored_from);
    drop_if_empty(o, "lastResume");

    put_time(&w, o, "waitingForCapacitySince", s->waiting_for_capacity_since_ms);
    put_time(&w, o, "stateSince", s->state_since_ms);

    const struct workspace_snapshot *snap = &s->snapshot;
    cJSON *sn = put_obj(&w, o, "snapshot");
    put_str(&w, sn, "attempt", snap->attempt);
    put_int(&w, sn, "attempts", snap->attempts);
    put_str(&w, sn, "name", snap->name);
    put_str(&w, sn, "phase", snap->phase);
    put_time(&w, sn, "requestedAt", snap->requested_ms);
    put_time(&w, sn, "readyAt", snap->ready_ms);
    put_time(&w, sn, "failedAt", snap->failed_ms);
    put_time(&w, sn, "restoreFailedAt", snap->restore_failed_ms);
    if (snap->ready_ms)
        put_number(&w, sn, "seconds", snap->seconds);
    put_str(&w, sn, "nodeName", snap->node_name);
    put_str(&w, sn, "gpuProduct", snap->gpu_product);
    put_str(&w, sn, "podSpecHash", snap->pod_spec_hash);
    put_str(&w, sn, "message", snap->message);
    put_str(&w, sn, "homeClaimUID", snap->home_claim_uid);
    cJSON *ac = put_obj(&w, sn, "appCheckpoint");
    put_str(&w, ac, "attempt", snap->checkpoint_attempt);
    put_time(&w, ac, "requestedAt", snap->checkpoint_requested_ms);
    put_time(&w, ac, "answeredAt", snap->checkpoint_answered_ms);
    put_str(&w, ac, "result", snap->checkpoint_result);
    put_str(&w, ac, "message", snap->checkpoint_message);
    drop_if_empty(sn, "appCheckpoint");
    put_str(&w, sn, "group", snap->group);
    put_str(&w, sn, "rejectedGroup", snap->rejected_group);
    put_time(&w, sn, "rejectedAt", snap->rejected_ms);
    drop_if_empty(o, "snapshot");

    const struct workspace_activity *a = &s->activity;
    cJSON *act = put_obj(&w, o, "activity");
    put_time(&w, act, "lastActivityTime", a->last_activity_ms);
    put_str(&w, act, "lastActivitySource", a->last_activity_source);
    put_time(&w, act, "lastProbeTime", a->last_probe_ms);
    put_str(&w, act, "lastProbeResult", a->last_probe_result);
    put_str(&w, act, "lastProbeError", a->last_probe_error);
    put_time(&w, act, "idleSince", a->idle_since_ms);
    put_time_precise(&w, act, "pauseAt", a->pause_at_ms);
    put_int(&w, act, "idleAfterSeconds", a->idle_after_seconds);
    put_time(&w, act, "keepAliveUntil", a->keep_alive_until_ms);
    put_time(&w, act, "keepAliveRequested", a->keep_alive_requested_ms);
    drop_if_empty(o, "activity");

    cJSON *acct = put_obj(&w, o, "accounting");
    put_int(&w, acct, "pauses", s->pauses);
    put_int(&w, acct, "resumes", s->resumes);
    put_double(&w, acct, "acceleratorSecondsReleased", s->accelerator_seconds_released);
    put_double(&w, acct, "acceleratorSecondsHeld", s->accelerator_seconds_held);
    put_time(&w, acct, "acceleratorHeldSince", s->accelerator_held_since_ms);
    drop_if_empty(o, "accounting");

    put_history(&w, o, s);

    const struct workspace_home *h = &s->home;
    cJSON *home = put_obj(&w, o, "home");
    put_str(&w, home, "claimUID", h->claim_uid);
    put_time(&w, home, "since", h->since_ms);
    put_str(&w, home, "lostClaimUID", h->lost_claim_uid);
    put_time(&w, home, "lostAt", h->lost_ms);
    put_time(&w, home, "acknowledgedAt", h->acknowledged_ms);
    put_str(&w, home, "freshPod", h->fresh_pod);
    drop_if_empty(o, "home");

    const struct workspace_interruption *li = &s->last_interruption;
    cJSON *intr = put_obj(&w, o, "interruptions");
    put_int(&w, intr, "count", s->interruptions);
    cJSON *last = intr ? put_obj(&w, intr, "last") : NULL;
    put_time(&w, last, "at", li->at_ms);
    put_str(&w, last, "pod", li->pod);
    put_str(&w, last, "podUID", li->pod_uid);
    put_str(&w, last, "nodeName", li->node_name);
    put_str(&w, last, "reason", li->reason);
    put_str(&w, last, "message", li->message);
    put_str(&w, last, "replacedBy", li->replaced_by);
    if (intr)
        drop_if_empty(intr, "last");
    drop_if_empty(o, "interruptions");

    if (w.oom) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* ---- copies and comparison ---- */

void workspace_status_clear(struct workspace_status *s)
{
    if (!s)
        return;
    free(s->message);
    free(s->pod_name);
    free(s->node_name);
    free(s->home_claim_name);
    free(s->accelerator_resource);
    free(s->accelerator_product);
    for (size_t i = 0; i < s->n_conditions; i++)
        condition_clear(&s->conditions[i]);
    free(s->conditions);
    free(s->last_resume.restored_from);
    workspace_pause_timeline_clear(&s->last_pause);
    for (size_t i = 0; i < s->n_history; i++)
        record_clear(&s->history[i]);
    free(s->history);
    free(s->activity.last_activity_source);
    free(s->activity.last_probe_result);
    free(s->activity.last_probe_error);
    free(s->snapshot.attempt);
    free(s->snapshot.name);
    free(s->snapshot.phase);
    free(s->snapshot.node_name);
    free(s->snapshot.gpu_product);
    free(s->snapshot.pod_spec_hash);
    free(s->snapshot.message);
    free(s->snapshot.home_claim_uid);
    free(s->snapshot.checkpoint_attempt);
    free(s->snapshot.checkpoint_result);
    free(s->snapshot.checkpoint_message);
    free(s->snapshot.group);
    free(s->snapshot.rejected_group);
    free(s->pod_uid);
    free(s->deleted_pod);
    free(s->home.claim_uid);
    free(s->home.lost_claim_uid);
    free(s->home.fresh_pod);
    free(s->last_interruption.pod);
    free(s->last_interruption.pod_uid);
    free(s->last_interruption.node_name);
    free(s->last_interruption.reason);
    free(s->last_interruption.message);
    free(s->last_interruption.replaced_by);
    *s = (struct workspace_status){0};
}

void workspace_pause_timeline_clear(struct workspace_pause_timeline *t)
{
    free(t->reason);
    free(t->message);
    free(t->memory);
    free(t->node_name);
    free(t->product);
    free(t->accelerator_taken_by);
    *t = (struct workspace_pause_timeline){0};
}

static int pause_timeline_copy(const struct workspace_pause_timeline *src,
                               struct workspace_pause_timeline *dst)
{
    struct workspace_pause_timeline c = *src;
    c.reason = c.message = c.memory = c.node_name = c.product = c.accelerator_taken_by = NULL;
    if (json_dup_optional(src->reason, &c.reason) < 0 ||
        json_dup_optional(src->message, &c.message) < 0 ||
        json_dup_optional(src->memory, &c.memory) < 0 ||
        json_dup_optional(src->node_name, &c.node_name) < 0 ||
        json_dup_optional(src->product, &c.product) < 0 ||
        json_dup_optional(src->accelerator_taken_by, &c.accelerator_taken_by) < 0) {
        workspace_pause_timeline_clear(&c);
        return -ENOMEM;
    }
    *dst = c;
    return 0;
}

/* A record of t (no message) and, when r is not NULL, of r (no pod
 * creation time). */
static int record_make(const struct workspace_pause_timeline *t,
                       const struct workspace_resume_timeline *r,
                       struct workspace_pause_record *ret)
{
    struct workspace_pause_record c = {0};
    if (pause_timeline_copy(t, &c.pause) < 0)
        return -ENOMEM;
    free(c.pause.message);
    c.pause.message = NULL;
    if (r) {
        c.resume = *r;
        c.resume.pod_created_ms = 0;
        c.resume.restored_from = NULL;
        if (json_dup_optional(r->restored_from, &c.resume.restored_from) < 0) {
            record_clear(&c);
            return -ENOMEM;
        }
    }
    *ret = c;
    return 0;
}

int workspace_status_copy(const struct workspace_status *src, struct workspace_status *dst)
{
    struct workspace_status c = *src;
    c.message = c.pod_name = c.node_name = c.home_claim_name = NULL;
    c.accelerator_resource = c.accelerator_product = NULL;
    c.last_resume.restored_from = NULL;
    c.last_pause = (struct workspace_pause_timeline){0};
    c.history = NULL;
    c.n_history = 0;
    c.activity.last_activity_source = c.activity.last_probe_result = NULL;
    c.activity.last_probe_error = NULL;
    c.snapshot.attempt = c.snapshot.name = c.snapshot.phase = NULL;
    c.snapshot.node_name = c.snapshot.gpu_product = c.snapshot.pod_spec_hash = NULL;
    c.snapshot.message = c.snapshot.home_claim_uid = c.pod_uid = c.deleted_pod = NULL;
    c.snapshot.checkpoint_attempt = c.snapshot.checkpoint_result = NULL;
    c.snapshot.checkpoint_message = NULL;
    c.snapshot.group = c.snapshot.rejected_group = NULL;
    c.home.claim_uid = c.home.lost_claim_uid = c.home.fresh_pod = NULL;
    c.last_interruption = (struct workspace_interruption){.at_ms = src->last_interruption.at_ms};
    c.conditions = NULL;
    c.n_conditions = 0;
    if (json_dup_optional(src->message, &c.message) < 0 ||
        json_dup_optional(src->pod_name, &c.pod_name) < 0 ||
        json_dup_optional(src->node_name, &c.node_name) < 0 ||
        json_dup_optional(src->home_claim_name, &c.home_claim_name) < 0 ||
        json_dup_optional(src->accelerator_resource, &c.accelerator_resource) < 0 ||
        json_dup_optional(src->accelerator_product, &c.accelerator_product) < 0 ||
        json_dup_optional(src->last_resume.restored_from, &c.last_resume.restored_from) < 0 ||
        pause_timeline_copy(&src->last_pause, &c.last_pause) < 0 ||
        json_dup_optional(src->activity.last_activity_source, &c.activity.last_activity_source) <
            0 ||
        json_dup_optional(src->activity.last_probe_result, &c.activity.last_probe_result) < 0 ||
        json_dup_optional(src->activity.last_probe_error, &c.activity.last_probe_error) < 0 ||
        json_dup_optional(src->snapshot.attempt, &c.snapshot.attempt) < 0 ||
        json_dup_optional(src->snapshot.name, &c.snapshot.name) < 0 ||
        json_dup_optional(src->snapshot.phase, &c.snapshot.phase) < 0 ||
        json_dup_optional(src->snapshot.node_name, &c.snapshot.node_name) < 0 ||
        json_dup_optional(src->snapshot.gpu_product, &c.snapshot.gpu_product) < 0 ||
        json_dup_optional(src->snapshot.pod_spec_hash, &c.snapshot.pod_spec_hash) < 0 ||
        json_dup_optional(src->snapshot.message, &c.snapshot.message) < 0 ||
        json_dup_optional(src->snapshot.home_claim_uid, &c.snapshot.home_claim_uid) < 0 ||
        json_dup_optional(src->snapshot.checkpoint_attempt, &c.snapshot.checkpoint_attempt) < 0 ||
        json_dup_optional(src->snapshot.checkpoint_result, &c.snapshot.checkpoint_result) < 0 ||
        json_dup_optional(src->snapshot.checkpoint_message, &c.snapshot.checkpoint_message) < 0 ||
        json_dup_optional(src->snapshot.group, &c.snapshot.group) < 0 ||
        json_dup_optional(src->snapshot.rejected_group, &c.snapshot.rejected_group) < 0 ||
        json_dup_optional(src->pod_uid, &c.pod_uid) < 0 ||
        json_dup_optional(src->deleted_pod, &c.deleted_pod) < 0 ||
        json_dup_optional(src->home.claim_uid, &c.home.claim_uid) < 0 ||
        json_dup_optional(src->home.lost_claim_uid, &c.home.lost_claim_uid) < 0 ||
        json_dup_optional(src->home.fresh_pod, &c.home.fresh_pod) < 0 ||
        json_dup_optional(src->last_interruption.pod, &c.last_interruption.pod) < 0 ||
        json_dup_optional(src->last_interruption.pod_uid, &c.last_interruption.pod_uid) < 0 ||
        json_dup_optional(src->last_interruption.node_name, &c.last_interruption.node_name) < 0 ||
        json_dup_optional(src->last_interruption.reason, &c.last_interruption.reason) < 0 ||
        json_dup_optional(src->last_interruption.message, &c.last_interruption.message) < 0 ||
        json_dup_optional(src->last_interruption.replaced_by, &c.last_interruption.replaced_by) < 0)
        goto oom;
    if (src->n_conditions > 0) {
        c.conditions = calloc(src->n_conditions, sizeof(*c.conditions));
        if (!c.conditions)
            goto oom;
        for (size_t i = 0; i < src->n_conditions; i++) {
            const struct condition *from = &src->conditions[i];
            struct condition *to = &c.conditions[c.n_conditions++];
            to->status = from->status;
            to->observed_generation = from->observed_generation;
            to->last_transition_ms = from->last_transition_ms;
            if (json_dup_optional(from->type, &to->type) < 0 ||
                json_dup_optional(from->reason, &to->reason) < 0 ||
                json_dup_optional(from->message, &to->message) < 0)
                goto oom;
        }
    }
    if (src->n_history > 0) {
        c.history = calloc(src->n_history, sizeof(*c.history));
        if (!c.history)
            goto oom;
        for (size_t i = 0; i < src->n_history; i++) {
            const struct workspace_pause_record *from = &src->history[i];
            struct workspace_pause_record *to = &c.history[c.n_history++];
            to->resume = from->resume;
            to->resume.restored_from = NULL;
            if (pause_timeline_copy(&from->pause, &to->pause) < 0 ||
                json_dup_optional(from->resume.restored_from, &to->resume.restored_from) < 0)
                goto oom;
        }
    }
    *dst = c;
    return 0;
oom:
    workspace_status_clear(&c);
    return -ENOMEM;
}

/* ---- history ---- */

int workspace_status_push_history(struct workspace_status *s)
{
    struct workspace_pause_record rec;
    if (record_make(&s->last_pause, NULL, &rec) < 0)
        return -ENOMEM;
    while (s->n_history >= WORKSPACE_HISTORY_MAX)
        record_clear(&s->history[--s->n_history]);
    struct workspace_pause_record *grown =
        realloc(s->history, (s->n_history + 1) * sizeof(*s->history));
    if (!grown) {
        record_clear(&rec);
        return -ENOMEM;
    }
    s->history = grown;
    memmove(&s->history[1], &s->history[0], s->n_history * sizeof(*s->history));
    s->history[0] = rec;
    s->n_history++;
    return 0;
}

void workspace_status_drop_record(struct workspace_status *s, size_t i)
{
    if (i >= s->n_history)
        return;
    record_clear(&s->history[i]);
    memmove(&s->history[i], &s->history[i + 1], (s->n_history - i - 1) * sizeof(*s->history));
    s->n_history--;
}

struct workspace_pause_record *workspace_status_last_record(const struct workspace_status *s)
{
    /* The status keeps whole seconds: a time read back is the same second. */
    if (s->n_history == 0 || !s->last_pause.requested_ms ||
        s->history[0].pause.requested_ms / 1000 != s->last_pause.requested_ms / 1000)
        return NULL;
    return &s->history[0];
}

int workspace_status_sync_history(struct workspace_status *s)
{
    struct workspace_pause_record *rec = workspace_status_last_record(s);
    if (!rec)
        return 0;
    /* The counters say whether the last resume followed the last pause: a
     * pause counts when no pause is open, a resume when one is. */
    int resumed = s->resumes >= s->pauses && s->last_resume.ready_ms;
    struct workspace_pause_record next;
    if (record_make(&s->last_pause, resumed ? &s->last_resume : NULL, &next) < 0)
        return -ENOMEM;
    record_clear(rec);
    *rec = next;
    return 0;
}

int workspace_status_equal(const struct workspace_status *a, const struct workspace_status *b)
{
    cJSON *ja = workspace_status_to_json(a);
    cJSON *jb = workspace_status_to_json(b);
    char *sa = ja ? cJSON_PrintUnformatted(ja) : NULL;
    char *sb = jb ? cJSON_PrintUnformatted(jb) : NULL;
    /* Out of memory reads as "different": the caller then writes the status,
     * which is always safe. */
    int eq = sa && sb && strcmp(sa, sb) == 0;
    cJSON_free(sa);
    cJSON_free(sb);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    return eq;
}

/* Leaves and arrays compare as written: cJSON_Compare() treats numbers
 * within an epsilon as equal, and a merge patch must not. */
static int json_same(const cJSON *a, const cJSON *b, int *oom)
{
    char *sa = cJSON_PrintUnformatted(a);
    char *sb = cJSON_PrintUnformatted(b);
    if (!sa || !sb)
        *oom = 1;
    int same = sa && sb && strcmp(sa, sb) == 0;
    cJSON_free(sa);
    cJSON_free(sb);
    return same;
}

/* RFC 7386: what turns object from into object to. Returns a new object
 * (empty when they are the same) or NULL when out of memory. */
static cJSON *merge_patch(const cJSON *from, const cJSON *to)
{
    int oom = 0;
    cJSON *patch = cJSON_CreateObject();
    if (!patch)
        return NULL;
    const cJSON *f;
    cJSON_ArrayForEach(f, from)
    {
        if (!cJSON_GetObjectItemCaseSensitive(to, f->string) &&
            !cJSON_AddNullToObject(patch, f->string))
            oom = 1;
    }
    const cJSON *t;
    cJSON_ArrayForEach(t, to)
    {
        f = cJSON_GetObjectItemCaseSensitive(from, t->string);
        cJSON *item = NULL;
        if (f && cJSON_IsObject(f) && cJSON_IsObject(t)) {
            item = merge_patch(f, t);
            if (item && !item->child) {
                cJSON_Delete(item);
                continue;
            }
        } else if (!f || !json_same(f, t, &oom)) {
            item = cJSON_Duplicate(t, 1);
        } else {
            continue;
        }
        if (!item || !cJSON_AddItemToObject(patch, t->string, item)) {
            cJSON_Delete(item);
            oom = 1;
        }
    }
    if (oom) {
        cJSON_Delete(patch);
        return NULL;
    }
    return patch;
}

cJSON *workspace_status_merge_patch(const struct workspace_status *old,
                                    const struct workspace_status *new_status)
{
    cJSON *from = workspace_status_to_json(old);
    cJSON *to = workspace_status_to_json(new_status);
    cJSON *patch = from && to ? merge_patch(from, to) : NULL;
    cJSON_Delete(from);
    cJSON_Delete(to);
    return patch;
}

/* ---- conditions ---- */

const struct condition *workspace_status_condition(const struct workspace_status *s,
                                                   const char *type)
{
    for (size_t i = 0; i < s->n_conditions; i++)
        if (s->conditions[i].type && strcmp(s->conditions[i].type, type) == 0)
            return &s->conditions[i];
    return NULL;
}

int workspace_status_set_condition(struct workspace_status *s, const char *type,
                                   enum condition_status status, const char *reason,
                                   const char *message, int64_t generation, int64_t now_ms)
{
    char *r = NULL, *m = NULL;
    if (json_dup_optional(reason, &r) < 0 || json_dup_optional(message, &m) < 0) {
        free(r);
        return -ENOMEM;
    }
    struct condition *c = (struct condition *)workspace_status_condition(s, type);
    if (!c) {
        char *t = strdup(type);
        struct condition *grown =
            t ? realloc(s->conditions, (s->n_conditions + 1) * sizeof(*s->conditions)) : NULL;
        if (!grown) {
            free(t);
            free(r);
            free(m);
            return -ENOMEM;
        }
        s->conditions = grown;
        c = &s->conditions[s->n_conditions++];
        *c = (struct condition){.type = t, .status = status, .last_transition_ms = now_ms};
    } else if (c->status != status) {
        c->status = status;
        c->last_transition_ms = now_ms;
    }
    free(c->reason);
    free(c->message);
    c->reason = r;
    c->message = m;
    c->observed_generation = generation;
    return 0;
}

int workspace_status_remove_condition(struct workspace_status *s, const char *type)
{
    for (size_t i = 0; i < s->n_conditions; i++) {
        if (s->conditions[i].type && strcmp(s->conditions[i].type, type) == 0) {
            condition_clear(&s->conditions[i]);
            memmove(&s->conditions[i], &s->conditions[i + 1],
                    (s->n_conditions - i - 1) * sizeof(*s->conditions));
            s->n_conditions--;
            return 1;
        }
    }
    return 0;
}

void workspace_message_one_line(char *s)
{
    size_t n = 0;
    for (char *p = s; *p; p++, n++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    if (n > WORKSPACE_MESSAGE_MAX) {
        size_t cut = WORKSPACE_MESSAGE_MAX - 3;
        while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
            cut--;
        memcpy(s + cut, "...", 4);
    }
}
