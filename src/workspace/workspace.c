#include "workspace/workspace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/duration.h"
#include "util/json.h"
#include "util/strpool.h"
#include "util/text.h"
#include "util/timefmt.h"
#include "util/tz.h"
#include "workspace/class.h"
#include "workspace/pause_window.h"
#include "workspace/status_fields.h"

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
    [WS_STATE_QUEUED] = "Queued",
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

/* How a decode goes on after a field it cannot read: strictly, the first
 * one ends it (*err names it); leniently, each is named in ws->unread and
 * the decode goes on, and spec_error (when err points to it) still gets
 * the first. */
struct reader {
    int lenient;
    struct workspace *ws;
    char **err;
};

static int note_line(struct workspace *ws, char *line)
{
    if (ws->n_unread == WORKSPACE_UNREAD_MAX) {
        free(line);
        ws->n_unread_more++;
        return 0;
    }
    if (!ws->unread) {
        ws->unread = calloc(WORKSPACE_UNREAD_MAX, sizeof(*ws->unread));
        if (!ws->unread) {
            free(line);
            return -ENOMEM;
        }
    }
    ws->unread[ws->n_unread++] = line;
    return 0;
}

static int fail(struct reader *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Strict: -EINVAL (or -ENOMEM). Lenient: 0 once noted (or -ENOMEM). */
static int fail(struct reader *rd, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    if (rd->lenient) {
        if (rd->err && !*rd->err) {
            *rd->err = strdup(s);
            if (!*rd->err) {
                free(s);
                return -ENOMEM;
            }
        }
        return note_line(rd->ws, s);
    }
    if (rd->err)
        *rd->err = s;
    else
        free(s);
    return -EINVAL;
}

static int note_status(void *data, const char *path, const char *why)
{
    char *line = NULL;
    if (asprintf(&line, "%s: %s", path, why) < 0)
        return -ENOMEM;
    return note_line(data, line);
}

static void record_clear(struct workspace_pause_record *r)
{
    status_fields_clear(workspace_record_fields, r);
    *r = (struct workspace_pause_record){0};
}

/* Unreadable fields count as unset (status_fields_decode()); a lenient
 * reader names them. */
static int status_decode(const cJSON *st, struct reader *rd, struct workspace_status *s)
{
    workspace_status_init(s);
    if (!cJSON_IsObject(st)) {
        if (rd->lenient && st && !cJSON_IsNull(st))
            return note_status(rd->ws, "status", "not an object");
        return 0;
    }
    if (status_fields_decode_noting(workspace_status_fields, st, s, "status",
                                    rd->lenient ? note_status : NULL, rd->ws) < 0) {
        workspace_status_clear(s);
        return -ENOMEM;
    }
    return 0;
}

/* Appends to ws->env, which has room. */
static int env_add(struct workspace *ws, const char *name, const char *value)
{
    struct env_var *e = &ws->env[ws->n_env++];
    if (json_dup_optional(name, &e->name) < 0 || json_dup_optional(value, &e->value) < 0)
        return -ENOMEM;
    return 0;
}

static int decode_env(const cJSON *spec, struct workspace *ws, struct reader *rd)
{
    const cJSON *env = json_member(spec, "env");
    if (!env || cJSON_IsNull(env))
        return 0;
    if (!cJSON_IsArray(env))
        return fail(rd, "spec.env: must be a list");
    int n = cJSON_GetArraySize(env);
    if (n > MAX_ENV)
        return fail(rd, "spec.env: at most %d entries", MAX_ENV);
    if (n == 0)
        return 0;
    ws->env = calloc((size_t)n, sizeof(*ws->env));
    if (!ws->env)
        return -ENOMEM;
    const cJSON *e;
    size_t i = 0;
    cJSON_ArrayForEach(e, env)
    {
        const char *name = json_string(e, "name");
        const cJSON *value = json_member(e, "value");
        int r = 0;
        if (!name || !name[0])
            r = fail(rd, "spec.env[%zu].name: required", i);
        else if (value && !cJSON_IsNull(value) && !cJSON_IsString(value))
            r = fail(rd, "spec.env[%zu].value: must be a string", i);
        else
            r = env_add(ws, name, cJSON_IsString(value) ? value->valuestring : "");
        if (r < 0)
            return r;
        i++;
    }
    return 0;
}

/* Each field on its own: a lenient reader goes on past one it cannot read. */
static void prewarm_free(struct workspace_prewarm *p)
{
    if (p)
        free(p->time_zone);
    free(p);
}

/* spec.preWarm: {days, at, timeZone}. A block with a field that cannot be
 * read is named (lenient: noted) and left unset as a whole, not half used. */
static int decode_prewarm(const cJSON *spec, struct workspace *ws, struct reader *rd)
{
    const cJSON *pw = json_member(spec, "preWarm");
    if (!pw || cJSON_IsNull(pw))
        return 0;
    if (!cJSON_IsObject(pw))
        return fail(rd, "spec.preWarm: must be an object");
    struct workspace_prewarm p = {0};
    char *err = NULL;
    int r = 0, bad = 0;
    const cJSON *at = json_member(pw, "at");
    if (!cJSON_IsString(at)) {
        bad = 1;
        r = fail(rd, "spec.preWarm.at: required, a local time HH:MM");
    } else if (pause_window_parse_time(at->valuestring, &p.minute, &err) < 0) {
        bad = 1;
        r = err ? fail(rd, "spec.preWarm.at: %s", err) : -ENOMEM;
    }
    free(err);
    err = NULL;
    const cJSON *days = json_member(pw, "days");
    if (r == 0 && days && !cJSON_IsNull(days) && !cJSON_IsArray(days)) {
        bad = 1;
        r = fail(rd, "spec.preWarm.days: must be a list of days (Mon..Sun)");
    }
    for (int i = 0; r == 0 && cJSON_IsArray(days) && i < cJSON_GetArraySize(days); i++) {
        const cJSON *d = cJSON_GetArrayItem(days, i);
        int wday;
        if (!cJSON_IsString(d)) {
            bad = 1;
            r = fail(rd, "spec.preWarm.days[%d]: must be a day (Mon..Sun)", i);
        } else if (pause_window_parse_day(d->valuestring, &wday, &err) < 0) {
            bad = 1;
            r = err ? fail(rd, "spec.preWarm.days[%d]: %s", i, err) : -ENOMEM;
        } else {
            p.days |= 1u << wday;
        }
        free(err);
        err = NULL;
    }
    const cJSON *zone = json_member(pw, "timeZone");
    const char *name = cJSON_IsString(zone) && zone->valuestring[0] ? zone->valuestring : "UTC";
    if (r == 0 && zone && !cJSON_IsNull(zone) && !cJSON_IsString(zone)) {
        bad = 1;
        r = fail(rd, "spec.preWarm.timeZone: must be a time zone name such as "
                     "\"Europe/Berlin\"");
    } else if (r == 0 && !tz_name_valid(name)) {
        bad = 1;
        r = fail(rd,
                 "spec.preWarm.timeZone: \"%s\" is not a time zone name such as "
                 "\"Europe/Berlin\"",
                 name);
    }
    if (r < 0 || bad)
        return r;
    struct workspace_prewarm *own = malloc(sizeof(*own));
    if (!own || !(p.time_zone = strdup(name))) {
        free(own);
        return -ENOMEM;
    }
    *own = p;
    ws->prewarm = own;
    return 0;
}

static int decode_spec_fields(const cJSON *spec, struct workspace *ws, struct reader *rd)
{
    int r = 0;
    const cJSON *image = json_member(spec, "image");
    if (image && !cJSON_IsNull(image) && !cJSON_IsString(image))
        r = fail(rd, "spec.image: must be a string");
    else if (cJSON_IsString(image) && image->valuestring[0] &&
             json_dup_optional(image->valuestring, &ws->image) < 0)
        r = -ENOMEM;
    if (r < 0)
        return r;

    const cJSON *queue = json_member(spec, "localQueue");
    if (queue && !cJSON_IsNull(queue) && !cJSON_IsString(queue))
        r = fail(rd, "spec.localQueue: must be a string");
    else if (cJSON_IsString(queue) && queue->valuestring[0] &&
             json_dup_optional(queue->valuestring, &ws->local_queue) < 0)
        r = -ENOMEM;
    if (r < 0)
        return r;

    const cJSON *paused = json_member(spec, "paused");
    if (paused && !cJSON_IsNull(paused) && !cJSON_IsBool(paused))
        r = fail(rd, "spec.paused: must be true or false");
    else
        ws->paused = cJSON_IsTrue(paused);
    if (r < 0)
        return r;

    const cJSON *home = json_member(spec, "home");
    if (home && !cJSON_IsNull(home) && !cJSON_IsObject(home) &&
        (r = fail(rd, "spec.home: must be an object")) < 0)
        return r;
    const cJSON *size = json_member(home, "size");
    if (cJSON_IsString(size)) {
        if (size->valuestring[0] && json_dup_optional(size->valuestring, &ws->home_size) < 0)
            return -ENOMEM;
    } else if (cJSON_IsNumber(size) && size->valuedouble > (double)QUANTITY_MAX_JSON_NUMBER) {
        /* Past 2^53 the double may not be the number the API server sent. */
        if ((r = fail(rd,
                      "spec.home.size: the number is larger than the controller can carry "
                      "exactly (at most %lld); write it as a string such as \"20Gi\"",
                      (long long)QUANTITY_MAX_JSON_NUMBER)) < 0)
            return r;
    } else if (cJSON_IsNumber(size)) {
        /* int-or-string quantity: kept as text, judged by decide(). */
        if (asprintf(&ws->home_size, "%.17g", size->valuedouble) < 0) {
            ws->home_size = NULL;
            return -ENOMEM;
        }
    } else if (size && !cJSON_IsNull(size) &&
               (r = fail(rd, "spec.home.size: must be a quantity such as \"20Gi\"")) < 0) {
        return r;
    }

    const char *keep = json_string(spec, "keepAliveUntil");
    if (keep && timefmt_parse_rfc3339(keep, &ws->keep_alive_until_ms) < 0) {
        ws->keep_alive_until_ms = 0;
        if ((r = fail(rd, "spec.keepAliveUntil: \"%s\" is not an RFC 3339 time", keep)) < 0)
            return r;
    }
    const cJSON *idle = json_member(spec, "idle");
    if (idle && !cJSON_IsNull(idle) && !cJSON_IsObject(idle) &&
        (r = fail(rd, "spec.idle: must be an object")) < 0)
        return r;
    const char *after = json_string(idle, "after");
    if (after && duration_parse_ms(after, &ws->idle_after_ms) < 0) {
        ws->idle_after_ms = 0;
        if ((r = fail(rd, "spec.idle.after: \"%s\" is not a duration such as \"2h\"", after)) < 0)
            return r;
    }
    if ((r = decode_prewarm(spec, ws, rd)) < 0)
        return r;
    return decode_env(spec, ws, rd);
}

static int decode_spec(const cJSON *obj, struct workspace *ws, struct reader *rd)
{
    const cJSON *spec = json_member(obj, "spec");
    if (!cJSON_IsObject(spec))
        return fail(rd, "spec: required");
    const char *cls = json_string(spec, "className");
    int r = 0;
    if (!cls || !cls[0])
        r = fail(rd, "spec.className: required");
    else if (json_dup_optional(cls, &ws->class_name) < 0)
        r = -ENOMEM;
    if (r < 0 || (!rd->lenient && !ws->class_name))
        return r;
    return decode_spec_fields(spec, ws, rd);
}

static int decode_metadata(const cJSON *obj, struct workspace *ws, struct reader *rd)
{
    const cJSON *meta = json_member(obj, "metadata");
    int r = 0;
    if (!cJSON_IsObject(meta) && (r = fail(rd, "metadata: required")) < 0)
        return r;
    const char *name = json_string(meta, "name");
    if (cJSON_IsObject(meta) && (!name || !name[0]) &&
        (r = fail(rd, "metadata.name: required")) < 0)
        return r;
    if (rd->lenient && ws->n_unread)
        ws->unreadable = 1;
    if (json_dup_optional(name && name[0] ? name : NULL, &ws->name) < 0 ||
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
    if (del && timefmt_parse_rfc3339(del, &ws->deletion_ms) < 0) {
        ws->deletion_ms = 0;
        if ((r = fail(rd, "metadata.deletionTimestamp: not an RFC 3339 time")) < 0)
            return r;
        ws->unreadable = 1;
    } else if (del && ws->deletion_ms == 0) {
        /* The API server never shows a zero deletionTimestamp, but 0 means
         * "not deleting" here, so a deletion at the epoch must still count. */
        ws->deletion_ms = 1;
    }
    /* Annotations anyone may write: an unreadable value counts as absent. */
    const cJSON *ann = json_member(meta, "annotations");
    const char *v = json_string(ann, LAST_ACTIVITY_ANNOTATION);
    if (v && timefmt_parse_rfc3339(v, &ws->annotated_activity_ms) < 0)
        ws->annotated_activity_ms = 0;
    v = json_string(ann, AUTO_PAUSED_AT_ANNOTATION);
    if (v && timefmt_parse_rfc3339(v, &ws->auto_paused_ms) < 0)
        ws->auto_paused_ms = 0;
    v = json_string(ann, PREWARMED_AT_ANNOTATION);
    if (v && timefmt_parse_rfc3339(v, &ws->prewarmed_ms) < 0)
        ws->prewarmed_ms = 0;
    v = json_string(ann, PREWARM_FOR_ANNOTATION);
    if (v && timefmt_parse_rfc3339(v, &ws->prewarm_for_ms) < 0)
        ws->prewarm_for_ms = 0;
    ws->auto_pause_cause =
        workspace_auto_pause_cause(json_string(ann, AUTO_PAUSE_CAUSE_ANNOTATION));
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
const char *workspace_auto_pause_cause(const char *cause)
{
    if (cause && strcmp(cause, "Preempted") == 0)
        return "Preempted";
    if (cause && strcmp(cause, "Evicted") == 0)
        return "Evicted";
    return NULL;
}

static void spec_unset(struct workspace *ws)
{
    free(ws->image);
    free(ws->local_queue);
    free(ws->home_size);
    for (size_t i = 0; i < ws->n_env; i++) {
        free(ws->env[i].name);
        free(ws->env[i].value);
    }
    free(ws->env);
    ws->image = ws->local_queue = ws->home_size = NULL;
    ws->env = NULL;
    ws->n_env = 0;
    ws->paused = 0;
    ws->keep_alive_until_ms = 0;
    ws->idle_after_ms = 0;
    prewarm_free(ws->prewarm);
    ws->prewarm = NULL;
}

static int decode(const cJSON *obj, int lenient, struct workspace **ret_ws, char **ret_err)
{
    if (!cJSON_IsObject(obj)) {
        struct reader strict = {.err = ret_err};
        return fail(&strict, "object: must be a JSON object");
    }
    struct workspace *ws = calloc(1, sizeof(*ws));
    if (!ws)
        return -ENOMEM;
    struct reader rd = {.lenient = lenient, .ws = ws, .err = ret_err};
    int r = decode_metadata(obj, ws, &rd);
    if (r >= 0) {
        rd.err = &ws->spec_error;
        r = decode_spec(obj, ws, &rd);
        if (r == -EINVAL) {
            spec_unset(ws);
            r = ws->spec_error ? 0 : -ENOMEM;
        }
    }
    if (r >= 0)
        r = status_decode(json_member(obj, "status"), &rd, &ws->status);
    if (r < 0) {
        workspace_free(ws);
        return r;
    }
    *ret_ws = ws;
    return 0;
}

int workspace_decode(const cJSON *obj, struct workspace **ret_ws, char **ret_err)
{
    return decode(obj, 0, ret_ws, ret_err);
}

int workspace_decode_lenient(const cJSON *obj, struct workspace **ret_ws)
{
    return decode(obj, 1, ret_ws, NULL);
}

int workspace_share_strings(struct workspace *ws, struct strpool *pool)
{
    ws->pool = pool;
    if (strpool_adopt(pool, &ws->ns) < 0 || strpool_adopt(pool, &ws->class_name) < 0)
        return -ENOMEM;
    return status_fields_share(workspace_status_fields, &ws->status, pool);
}

void workspace_free(struct workspace *ws)
{
    if (!ws)
        return;
    free(ws->spec_error);
    if (ws->pool) {
        strpool_drop(ws->pool, ws->ns);
        strpool_drop(ws->pool, ws->class_name);
        status_fields_clear_shared(workspace_status_fields, &ws->status, ws->pool);
    } else {
        free(ws->ns);
        free(ws->class_name);
        workspace_status_clear(&ws->status);
    }
    free(ws->name);
    free(ws->uid);
    free(ws->resource_version);
    free(ws->image);
    free(ws->local_queue);
    free(ws->home_size);
    free(ws->auto_pause_message);
    free(ws->acknowledged_home_loss);
    prewarm_free(ws->prewarm);
    for (size_t i = 0; i < ws->n_env; i++) {
        free(ws->env[i].name);
        free(ws->env[i].value);
    }
    free(ws->env);
    for (size_t i = 0; i < ws->n_unread; i++)
        free(ws->unread[i]);
    free(ws->unread);
    free(ws);
}

/* ---- writing JSON ---- */

cJSON *workspace_status_to_json(const struct workspace_status *s)
{
    cJSON *o = cJSON_CreateObject();
    if (o && status_fields_encode(workspace_status_fields, s, o) < 0) {
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
    status_fields_clear(workspace_status_fields, s);
    workspace_status_init(s);
}

void workspace_status_init(struct workspace_status *s)
{
    *s = (struct workspace_status){0};
    status_fields_fill_empty(workspace_status_fields, s);
}

int workspace_status_own(struct workspace_status *s)
{
    return status_fields_own_blocks(workspace_status_fields, s);
}

void workspace_pause_timeline_clear(struct workspace_pause_timeline *t)
{
    status_fields_clear(workspace_pause_fields, t);
    *t = (struct workspace_pause_timeline){0};
}

/* A record of t (no message) and, when r is not NULL, of r (no pod
 * creation time). */
static int record_make(const struct workspace_pause_timeline *t,
                       const struct workspace_resume_timeline *r,
                       struct workspace_pause_record *ret)
{
    struct workspace_pause_record view = {.pause = *t};
    view.pause.message = NULL;
    if (r) {
        view.resume = *r;
        view.resume.pod_created_ms = 0;
    }
    struct workspace_pause_record c = view;
    if (status_fields_deepen(workspace_record_fields, &view, &c) < 0)
        return -ENOMEM;
    *ret = c;
    return 0;
}

int workspace_status_copy(const struct workspace_status *src, struct workspace_status *dst)
{
    struct workspace_status c = *src;
    if (status_fields_deepen(workspace_status_fields, src, &c) < 0)
        return -ENOMEM;
    *dst = c;
    return 0;
}

/* ---- history ---- */

int workspace_status_push_history(struct workspace_status *s)
{
    struct workspace_pause_record rec;
    if (record_make(s->last_pause, NULL, &rec) < 0)
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
    if (s->n_history == 0 || !s->last_pause->requested_ms ||
        s->history[0].pause.requested_ms / 1000 != s->last_pause->requested_ms / 1000)
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
    int resumed = s->resumes >= s->pauses && s->last_resume->ready_ms;
    struct workspace_pause_record next;
    if (record_make(s->last_pause, resumed ? s->last_resume : NULL, &next) < 0)
        return -ENOMEM;
    record_clear(rec);
    *rec = next;
    return 0;
}

int workspace_status_equal(const struct workspace_status *a, const struct workspace_status *b)
{
    return status_fields_same(workspace_status_fields, a, b);
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
            status_fields_clear(workspace_condition_fields, &s->conditions[i]);
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
    size_t n = strlen(s);
    text_sanitize(s, n, ' ');
    if (n > WORKSPACE_MESSAGE_MAX) {
        size_t cut = WORKSPACE_MESSAGE_MAX - 3;
        while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
            cut--;
        memcpy(s + cut, "...", 4);
    }
}

void workspace_prewarm_text(const struct workspace_prewarm *p,
                            char out[WORKSPACE_PREWARM_TEXT_SIZE])
{
    static const char *const names[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    char days[40] = "";
    size_t n = 0;
    for (int d = 1; d <= 7 && p->days; d++) /* Monday first */
        if (p->days & (1u << (d % 7)))
            n += (size_t)snprintf(days + n, sizeof(days) - n, "%s%s", n ? "," : "", names[d % 7]);
    snprintf(out, WORKSPACE_PREWARM_TEXT_SIZE, "%02d:%02d %s (%s)", p->minute / 60, p->minute % 60,
             p->days ? days : "every day", p->time_zone);
}
