#include "cli/describe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/fields.h"
#include "cli/ledger.h"
#include "cli/table.h"
#include "cli/timetext.h"
#include "util/duration.h"
#include "util/json.h"
#include "workspace/vocabulary.h"
#include "workspace/workspace.h"

#define TOP_WIDTH 14    /* "Accelerator:  " */
#define NESTED_WIDTH 24 /* "  Accelerator released: " */
#define HISTORY_ROWS 10
#define WHEN_SIZE 80

/* "2026-01-02T03:04:05Z (5m ago)", "... (in 2h)", or "-". */
static const char *when(char out[WHEN_SIZE], int64_t ms, int64_t now)
{
    char t[TIMETEXT_SIZE], age[TIMETEXT_SIZE];
    if (!ms) {
        snprintf(out, WHEN_SIZE, "-");
        return out;
    }
    timetext_time(ms, t);
    if (ms > now + 1000) {
        timetext_age(ms - now, age);
        snprintf(out, WHEN_SIZE, "%s (in %s)", t, age);
    } else {
        timetext_age(now - ms, age);
        snprintf(out, WHEN_SIZE, "%s (%s ago)", t, age);
    }
    return out;
}

static void field(FILE *out, int indent, int width, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* "Key:" padded to width (indent included), then the value made harmless. */
static void field(FILE *out, int indent, int width, const char *key, const char *fmt, ...)
{
    char *v = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&v, fmt, ap) < 0)
        v = NULL;
    va_end(ap);
    int n = fprintf(out, "%*s%s:", indent, "", key);
    for (int i = n; i < width; i++)
        fputc(' ', out);
    if (n >= width)
        fputc(' ', out);
    text_print_clean(out, v ? v : "?");
    fputc('\n', out);
    free(v);
}

static const char *or_text(const char *s, const char *absent)
{
    return s && *s ? s : absent;
}

static void print_spec(const struct workspace *ws, int64_t now, FILE *out)
{
    const struct workspace_status *st = &ws->status;
    char w[WHEN_SIZE];
    field(out, 0, TOP_WIDTH, "Name", "%s", or_text(ws->name, "-"));
    field(out, 0, TOP_WIDTH, "Namespace", "%s", or_text(ws->ns, "-"));
    field(out, 0, TOP_WIDTH, "Class", "%s", or_text(ws->class_name, "-"));
    field(out, 0, TOP_WIDTH, "Image", "%s", or_text(ws->image, "(the class's default)"));
    field(out, 0, TOP_WIDTH, "Paused", "%s", ws->paused ? "true" : "false");
    field(out, 0, TOP_WIDTH, "Home", "%s, %s", or_text(st->home_claim_name, "(no claim yet)"),
          or_text(ws->home_size, "the class's size"));

    int64_t keep = ws->keep_alive_until_ms;
    if (keep) {
        int64_t bounded = st->activity->keep_alive_until_ms;
        if (bounded && bounded < keep) {
            char b[WHEN_SIZE];
            field(out, 0, TOP_WIDTH, "Keep-alive", "until %s, bounded by the class to %s",
                  when(w, keep, now), when(b, bounded, now));
        } else {
            field(out, 0, TOP_WIDTH, "Keep-alive", "until %s", when(w, keep, now));
        }
    }
    char asked[TIMETEXT_SIZE] = "", applied[TIMETEXT_SIZE] = "";
    if (ws->idle_after_ms && duration_format_ms(ws->idle_after_ms, asked, sizeof(asked)) < 0)
        asked[0] = '\0';
    int64_t applied_s = st->activity->idle_after_seconds;
    if (applied_s > 0 && duration_format_ms(applied_s * 1000, applied, sizeof(applied)) < 0)
        applied[0] = '\0';
    if (asked[0] && applied_s > 0)
        field(out, 0, TOP_WIDTH, "Idle after", "%s (applied: %s)", asked, applied);
    else if (asked[0])
        field(out, 0, TOP_WIDTH, "Idle after", "%s", asked);
    else if (applied_s > 0)
        field(out, 0, TOP_WIDTH, "Idle after", "%s (the class's)", applied);
    field(out, 0, TOP_WIDTH, "Created", "%s", when(w, ws->created_ms, now));
    if (ws->deletion_ms)
        field(out, 0, TOP_WIDTH, "Deleting", "since %s", when(w, ws->deletion_ms, now));
}

/* What the controller would not read or act on, and every field that
 * could not be read (workspace_decode_lenient()). */
static void print_unread(const struct workspace *ws, FILE *out)
{
    if (ws->unreadable && ws->n_unread)
        field(out, 0, TOP_WIDTH, "Refused", "the controller cannot read it: %s", ws->unread[0]);
    else if (ws->spec_error)
        field(out, 0, TOP_WIDTH, "Refused", "the controller cannot act on it: %s", ws->spec_error);
    if (!ws->n_unread)
        return;
    fprintf(out, "Not read:\n");
    for (size_t i = 0; i < ws->n_unread; i++) {
        fputs("  ", out);
        text_print_clean(out, ws->unread[i]);
        fputc('\n', out);
    }
    if (ws->n_unread_more)
        fprintf(out, "  (and %zu more)\n", ws->n_unread_more);
}

static void print_state(const struct workspace *ws, int64_t now, FILE *out)
{
    const struct workspace_status *st = &ws->status;
    char w[WHEN_SIZE];
    const char *state = or_text(workspace_state_name(st->state), "(not reconciled yet)");
    for (size_t i = 0; st->state == WS_STATE_NONE && i < ws->n_unread; i++)
        if (strncmp(ws->unread[i], "status.state:", 13) == 0)
            state = "(not read, see above)";
    if (st->state_since_ms)
        field(out, 0, TOP_WIDTH, "State", "%s since %s", state, when(w, st->state_since_ms, now));
    else
        field(out, 0, TOP_WIDTH, "State", "%s", state);
    if (st->message && *st->message)
        field(out, 0, TOP_WIDTH, "Message", "%s", st->message);
    if (st->pod_name)
        field(out, 0, TOP_WIDTH, "Pod", "%s", st->pod_name);
    if (st->node_name)
        field(out, 0, TOP_WIDTH, "Node", "%s", st->node_name);
    const char *res = st->accelerator_resource, *product = st->accelerator_product;
    if (res || product)
        field(out, 0, TOP_WIDTH, "Accelerator", "%d x %s%s%s",
              st->accelerator_count > 0 ? st->accelerator_count : 1, or_text(res, "?"),
              product ? ", " : "", product ? product : "");
    else
        field(out, 0, TOP_WIDTH, "Accelerator", "none");
    if (st->waiting_for_capacity_since_ms)
        field(out, 0, TOP_WIDTH, "Waiting", "for capacity since %s",
              when(w, st->waiting_for_capacity_since_ms, now));
    const struct workspace_queue_status *q = st->queue;
    if (q->name) {
        char place[64] = "place not known";
        if (q->position > 0 && q->pending >= q->position)
            snprintf(place, sizeof(place), "number %lld of %lld", (long long)q->position,
                     (long long)q->pending);
        else if (q->position > 0)
            snprintf(place, sizeof(place), "number %lld", (long long)q->position);
        if (q->since_ms)
            field(out, 0, TOP_WIDTH, "Queue", "%s, %s, since %s", q->name, place,
                  when(w, q->since_ms, now));
        else
            field(out, 0, TOP_WIDTH, "Queue", "%s, %s", q->name, place);
        if (q->message)
            field(out, 0, TOP_WIDTH, "Not admitted", "%s", q->message);
    }
}

/* The sections shown are those the controller writes: an object it would
 * leave out of the status (nothing set in it) is not shown. */
static void print_activity(const struct workspace *ws, const cJSON *enc, int64_t now, FILE *out)
{
    if (!json_member(enc, "activity"))
        return;
    const struct workspace_activity *a = ws->status.activity;
    char w[WHEN_SIZE];
    fprintf(out, "Activity:\n");
    if (a->last_activity_ms)
        field(out, 2, NESTED_WIDTH, "Last activity", "%s, %s", when(w, a->last_activity_ms, now),
              or_text(a->last_activity_source, "unknown source"));
    if (a->last_probe_ms) {
        const char *error = a->last_probe_error;
        field(out, 2, NESTED_WIDTH, "Last probe", "%s: %s%s%s", when(w, a->last_probe_ms, now),
              or_text(a->last_probe_result, "?"), error ? ": " : "", error ? error : "");
    }
    if (a->idle_since_ms)
        field(out, 2, NESTED_WIDTH, "Idle since", "%s", when(w, a->idle_since_ms, now));
    if (a->pause_at_ms)
        field(out, 2, NESTED_WIDTH, "Pause at", "%s", when(w, a->pause_at_ms, now));
}

static int print_conditions(const struct workspace *ws, int64_t now, FILE *out)
{
    const struct workspace_status *st = &ws->status;
    if (st->n_conditions == 0) {
        fprintf(out, "Conditions:   <none>\n");
        return 0;
    }
    static const char *const headers[] = {"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"};
    struct table *t = table_new(5, headers);
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < st->n_conditions; i++) {
        const struct condition *c = &st->conditions[i];
        char age[TIMETEXT_SIZE];
        timetext_age_at(c->last_transition_ms, now, age);
        const char *cells[] = {c->type, workspace_condition_status_name(c->status), c->reason, age,
                               c->message};
        if (table_add_row(t, cells) < 0) {
            table_free(t);
            return -ENOMEM;
        }
    }
    fprintf(out, "Conditions:\n");
    table_print(t, out, 2);
    table_free(t);
    return 0;
}

/* "T (5m ago, 12.0s after the request)" */
static void after(FILE *out, const char *key, int64_t ms, int64_t from, const char *what,
                  int64_t now)
{
    char w[WHEN_SIZE];
    if (!ms)
        return;
    if (from && ms >= from) {
        char s[TIMETEXT_SIZE];
        timetext_seconds((double)(ms - from) / 1000.0, s);
        field(out, 2, NESTED_WIDTH, key, "%s, %s after %s", when(w, ms, now), s, what);
    } else {
        field(out, 2, NESTED_WIDTH, key, "%s", when(w, ms, now));
    }
}

static void print_last_pause(const struct workspace *ws, const struct ledger *l, int64_t now,
                             FILE *out)
{
    const struct workspace_status *st = &ws->status;
    const struct workspace_pause_timeline *p = st->last_pause;
    int64_t asked = p->requested_ms;
    if (!asked) {
        fprintf(out, "Last pause:   <none>\n");
        return;
    }
    char w[WHEN_SIZE];
    /* The history's newest record is this pause when it says so; it knows more. */
    const struct workspace_pause_timeline *r = l->from_history && workspace_status_last_record(st)
                                                   ? &workspace_status_last_record(st)->pause
                                                   : NULL;
    fprintf(out, "Last pause:\n");
    field(out, 2, NESTED_WIDTH, "Reason", "%s", or_text(p->reason, "-"));
    if (p->message && *p->message)
        field(out, 2, NESTED_WIDTH, "Message", "%s", p->message);
    field(out, 2, NESTED_WIDTH, "Requested", "%s", when(w, asked, now));
    if (r && r->work_ended_ms)
        field(out, 2, NESTED_WIDTH, "Work ended", "%s", when(w, r->work_ended_ms, now));
    const struct workspace_snapshot *sn = st->snapshot;
    if (sn->requested_ms >= asked && sn->ready_ms) {
        char s[TIMETEXT_SIZE];
        timetext_seconds(sn->seconds, s);
        field(out, 2, NESTED_WIDTH, "Snapshot ready", "%s, took %s", when(w, sn->ready_ms, now), s);
    } else if (r && r->snapshot_ready_ms) {
        char s[TIMETEXT_SIZE];
        timetext_seconds(r->snapshot_seconds, s);
        field(out, 2, NESTED_WIDTH, "Snapshot ready", "%s, took %s",
              when(w, r->snapshot_ready_ms, now), s);
    }
    if (r && r->memory)
        field(out, 2, NESTED_WIDTH, "Memory", "%s", r->memory);
    after(out, "Pod deleted", p->pod_deleted_ms, asked, "the request", now);
    if (!p->pod_deleted_ms && p->unobserved && strstr(p->unobserved, "podDeletedAt"))
        field(out, 2, NESTED_WIDTH, "Pod deleted",
              "not observed (the pod went while no controller was running)");
    after(out, "Accelerator released", p->accelerator_released_ms, asked, "the request", now);
    if (r && r->accelerator_taken_ms)
        field(out, 2, NESTED_WIDTH, "Accelerator taken", "%s by %s",
              when(w, r->accelerator_taken_ms, now),
              or_text(r->accelerator_taken_by, "another pod"));
    if (r && r->node_removed_ms)
        field(out, 2, NESTED_WIDTH, "Node removed", "%s (%s)", when(w, r->node_removed_ms, now),
              or_text(r->node_name, "its node"));
}

static void print_last_resume(const struct workspace *ws, int64_t now, FILE *out)
{
    const struct workspace_resume_timeline *r = ws->status.last_resume;
    int64_t asked = r->requested_ms;
    if (!asked) {
        fprintf(out, "Last resume:  <none>\n");
        return;
    }
    char w[WHEN_SIZE];
    fprintf(out, "Last resume:\n");
    field(out, 2, NESTED_WIDTH, "Requested", "%s", when(w, asked, now));
    after(out, "Pod created", r->pod_created_ms, asked, "the request", now);
    after(out, "Pod scheduled", r->pod_scheduled_ms, asked, "the request", now);
    if (r->ready_ms) {
        char s[TIMETEXT_SIZE];
        timetext_seconds(r->seconds_to_ready, s);
        field(out, 2, NESTED_WIDTH, "Ready", "%s, %s after the request", when(w, r->ready_ms, now),
              s);
    } else {
        field(out, 2, NESTED_WIDTH, "Ready", "not yet");
    }
    const struct condition *cond = workspace_status_condition(&ws->status, WS_COND_RESTORED);
    const char *reason = cond ? cond->reason : NULL;
    if (r->restored_from)
        field(out, 2, NESTED_WIDTH, "Restored from", "%s (%s)",
              ledger_restored_words(r->restored_from), r->restored_from);
    else if (reason)
        field(out, 2, NESTED_WIDTH, "Restored from", "not known yet (%s)", reason);
}

/* spec.preWarm and what came of it (docs/idle.md, "Ready before you are"):
 * shown for a workspace that asks for pre-warms or had one. */
static void print_prewarm(const struct workspace *ws, int64_t now, FILE *out)
{
    const struct workspace_prewarm *p = ws->prewarm;
    const struct workspace_prewarm_status *pw = ws->status.prewarm;
    if (!p && !pw->count)
        return;
    char w[WHEN_SIZE], f[WHEN_SIZE];
    if (p) {
        char text[WORKSPACE_PREWARM_TEXT_SIZE];
        workspace_prewarm_text(p, text);
        fprintf(out, "Pre-warm:     owner starts %s\n", text);
    } else {
        fprintf(out, "Pre-warm:     not asked for any more\n");
    }
    if (pw->next_ms)
        field(out, 2, NESTED_WIDTH, "Next resume", "%s, for the owner's %s",
              when(w, pw->next_ms, now), when(f, pw->next_for_ms, now));
    else if (p)
        field(out, 2, NESTED_WIDTH, "Next resume", "none planned (see the PreWarm condition)");
    if (pw->last_ms) {
        field(out, 2, NESTED_WIDTH, "Last", "%s, for the owner's %s", when(w, pw->last_ms, now),
              when(f, pw->last_for_ms, now));
        if (pw->last_ready_ms)
            field(out, 2, NESTED_WIDTH, "Ready", "%s%s", when(w, pw->last_ready_ms, now),
                  pw->last_for_ms && pw->last_ready_ms <= pw->last_for_ms
                      ? ", before the owner's time"
                      : "");
        if (pw->last_used_ms)
            field(out, 2, NESTED_WIDTH, "Used", "%s", when(w, pw->last_used_ms, now));
        field(out, 2, NESTED_WIDTH, "Outcome", "%s", or_text(pw->last_outcome, "open"));
    }
    if (pw->count)
        field(out, 2, NESTED_WIDTH, "Pre-warms",
              "%lld: %lld used, %lld unused, %lld gave way; %lld ready in time",
              (long long)pw->count, (long long)pw->used, (long long)pw->unused,
              (long long)pw->yielded, (long long)pw->ready_in_time);
}

static void print_snapshot(const struct workspace *ws, const cJSON *enc, int64_t now, FILE *out)
{
    if (!json_member(enc, "snapshot"))
        return;
    const struct workspace_snapshot *s = ws->status.snapshot;
    char w[WHEN_SIZE];
    fprintf(out, "Snapshot:\n");
    if (s->name)
        field(out, 2, NESTED_WIDTH, "Name", "%s", s->name);
    field(out, 2, NESTED_WIDTH, "Phase", "%s", or_text(s->phase, "-"));
    if (s->attempt)
        field(out, 2, NESTED_WIDTH, "Attempt", "%s (%lld so far)", s->attempt,
              (long long)s->attempts);
    if (s->requested_ms)
        field(out, 2, NESTED_WIDTH, "Requested", "%s", when(w, s->requested_ms, now));
    if (s->ready_ms) {
        char sec[TIMETEXT_SIZE];
        timetext_seconds(s->seconds, sec);
        field(out, 2, NESTED_WIDTH, "Ready", "%s, took %s", when(w, s->ready_ms, now), sec);
    }
    if (s->failed_ms)
        field(out, 2, NESTED_WIDTH, "Failed", "%s", when(w, s->failed_ms, now));
    if (s->restore_failed_ms)
        field(out, 2, NESTED_WIDTH, "Restore crashed", "%s", when(w, s->restore_failed_ms, now));
    const char *node = s->node_name, *gpu = s->gpu_product;
    if (node || gpu)
        field(out, 2, NESTED_WIDTH, "Taken on", "%s%s%s", or_text(node, "?"), gpu ? ", " : "",
              gpu ? gpu : "");
    if (s->image && *s->image)
        field(out, 2, NESTED_WIDTH, "Image", "%s", s->image);
    if (s->message && *s->message)
        field(out, 2, NESTED_WIDTH, "Message", "%s", s->message);
}

/* The totals the controller keeps: it leaves out a 0, so absent and 0 read
 * the same. */
static void print_accounting(const struct workspace *ws, const struct ledger *l, const cJSON *enc,
                             int64_t now, FILE *out)
{
    if (!json_member(enc, "accounting"))
        return;
    const struct workspace_status *st = &ws->status;
    char w[WHEN_SIZE];
    fprintf(out, "Accounting:\n");
    field(out, 2, NESTED_WIDTH, "Pauses", "%lld", (long long)(st->pauses > 0 ? st->pauses : 0));
    field(out, 2, NESTED_WIDTH, "Resumes", "%lld", (long long)(st->resumes > 0 ? st->resumes : 0));
    if (st->accelerator_seconds_held > 0)
        field(out, 2, NESTED_WIDTH, "Held", "%.2f accelerator-hours",
              st->accelerator_seconds_held / 3600.0);
    if (st->accelerator_held_since_ms)
        field(out, 2, NESTED_WIDTH, "Holding since", "%s",
              when(w, st->accelerator_held_since_ms, now));
    double released = st->accelerator_seconds_released;
    if (l->accelerators > 0 || released > 0)
        field(out, 2, NESTED_WIDTH, "Given back", "%.2f accelerator-hours",
              released > 0 ? released / 3600.0 : 0.0);
}

static int print_history(const struct workspace *ws, const struct ledger *l, int64_t now, FILE *out)
{
    if (!l->from_history)
        return 0;
    static const char *const headers[] = {"PAUSED",  "REASON",   "MEMORY",  "SNAPSHOT",
                                          "RESUMED", "READY-IN", "RESTORED"};
    struct table *t = table_new(7, headers);
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < l->n && i < HISTORY_ROWS; i++) {
        const struct workspace_pause_record *r = &l->records[i];
        char paused[TIMETEXT_SIZE], snap[TIMETEXT_SIZE], resumed[TIMETEXT_SIZE],
            ready[TIMETEXT_SIZE];
        timetext_age_at(r->pause.requested_ms, now, paused);
        /* A figure is known when its time is (workspace.h). */
        timetext_seconds(r->pause.snapshot_ready_ms ? r->pause.snapshot_seconds : -1, snap);
        timetext_age_at(r->resume.requested_ms, now, resumed);
        timetext_seconds(r->resume.ready_ms ? r->resume.seconds_to_ready : -1, ready);
        const char *cells[] = {paused,
                               or_text(r->pause.reason, "-"),
                               or_text(r->pause.memory, "-"),
                               snap,
                               resumed,
                               ready,
                               or_text(r->resume.restored_from, "-")};
        if (table_add_row(t, cells) < 0) {
            table_free(t);
            return -ENOMEM;
        }
    }
    if (l->n > HISTORY_ROWS)
        fprintf(out, "History (the newest %d of %zu records", HISTORY_ROWS, l->n);
    else
        fprintf(out, "History (newest first");
    if (ws->status.pauses > (int64_t)l->n)
        fprintf(out, "; %zu of %lld pauses kept", l->n, (long long)ws->status.pauses);
    fprintf(out, "):\n");
    table_print(t, out, 2);
    table_free(t);
    return 0;
}

/* ---- events ---------------------------------------------------------------- */

struct event_row {
    const cJSON *ev;
    int64_t at; /* the sort key */
    size_t seq; /* list order, the last tie-break */
};

/* kubectl's eventTime(): series.lastObservedTime, else lastTimestamp, else
 * eventTime; our own events carry both, and eventTime has microseconds. */
static int64_t event_time(const cJSON *ev)
{
    int64_t series = fields_time(ev, "series.lastObservedTime");
    if (series)
        return series;
    int64_t last = fields_time(ev, "lastTimestamp");
    int64_t precise = fields_time(ev, "eventTime");
    if (last && precise && precise >= last && precise < last + 1000)
        return precise;
    return last ? last : precise;
}

static int event_cmp(const void *a, const void *b)
{
    const struct event_row *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int print_events(const struct workspace *ws, const cJSON *events, int64_t now, FILE *out)
{
    if (!events) {
        fprintf(out, "Events:       (could not be read)\n");
        return 0;
    }
    const char *name = ws->name;
    const char *uid = ws->uid;
    const cJSON *items = json_member(events, "items");
    size_t n = 0, cap = cJSON_IsArray(items) ? (size_t)cJSON_GetArraySize(items) : 0;
    struct event_row *rows = cap ? calloc(cap, sizeof(*rows)) : NULL;
    if (cap && !rows)
        return -ENOMEM;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, items)
    {
        const char *kind = fields_str(ev, "involvedObject.kind");
        const char *obj = fields_str(ev, "involvedObject.name");
        const char *obj_uid = fields_str(ev, "involvedObject.uid");
        if (!kind || strcmp(kind, WORKSPACE_KIND) != 0 || !obj || !name || strcmp(obj, name) != 0)
            continue;
        if (uid && obj_uid && *obj_uid && strcmp(uid, obj_uid) != 0)
            continue; /* a deleted workspace of the same name */
        rows[n] = (struct event_row){ev, event_time(ev), n};
        n++;
    }
    if (n == 0) {
        free(rows);
        fprintf(out, "Events:       <none>\n");
        return 0;
    }
    qsort(rows, n, sizeof(*rows), event_cmp);
    static const char *const headers[] = {"TYPE", "REASON", "AGE", "FROM", "MESSAGE"};
    struct table *t = table_new(5, headers);
    if (!t) {
        free(rows);
        return -ENOMEM;
    }
    size_t first = n > DESCRIBE_MAX_EVENTS ? n - DESCRIBE_MAX_EVENTS : 0;
    for (size_t i = first; i < n; i++) {
        const cJSON *e = rows[i].ev;
        char age[TIMETEXT_SIZE * 3];
        char last[TIMETEXT_SIZE];
        timetext_age_at(rows[i].at, now, last);
        double count = fields_num(e, "series.count");
        if (count <= 0)
            count = fields_num(e, "count");
        int64_t first_seen = fields_time(e, "firstTimestamp");
        if (!first_seen)
            first_seen = fields_time(e, "eventTime");
        if (count > 1 && first_seen) {
            char over[TIMETEXT_SIZE];
            timetext_age_at(first_seen, now, over);
            snprintf(age, sizeof(age), "%s (x%.0f over %s)", last, count, over);
        } else {
            snprintf(age, sizeof(age), "%s", last);
        }
        const char *from = fields_str(e, "source.component");
        if (!from || !*from)
            from = fields_str(e, "reportingComponent");
        const char *cells[] = {fields_str(e, "type"), fields_str(e, "reason"), age,
                               or_text(from, "-"), fields_str(e, "message")};
        if (table_add_row(t, cells) < 0) {
            table_free(t);
            free(rows);
            return -ENOMEM;
        }
    }
    if (first)
        fprintf(out, "Events (the last %d of %zu):\n", DESCRIBE_MAX_EVENTS, n);
    else
        fprintf(out, "Events:\n");
    table_print(t, out, 2);
    table_free(t);
    free(rows);
    return 0;
}

int describe_print(const cJSON *obj, const cJSON *events, int64_t now, FILE *out)
{
    struct workspace *ws = NULL;
    int r = workspace_decode_lenient(obj, &ws);
    if (r < 0)
        return r;
    cJSON *enc = workspace_status_to_json(&ws->status);
    if (!enc) {
        workspace_free(ws);
        return -ENOMEM;
    }
    struct ledger l;
    ledger_read(ws, &l);
    print_spec(ws, now, out);
    print_unread(ws, out);
    print_state(ws, now, out);
    print_activity(ws, enc, now, out);
    r = print_conditions(ws, now, out);
    if (r == 0) {
        print_last_pause(ws, &l, now, out);
        print_last_resume(ws, now, out);
        print_prewarm(ws, now, out);
        print_snapshot(ws, enc, now, out);
        print_accounting(ws, &l, enc, now, out);
        r = print_history(ws, &l, now, out);
    }
    if (r == 0)
        r = print_events(ws, events, now, out);
    cJSON_Delete(enc);
    workspace_free(ws);
    return r;
}
