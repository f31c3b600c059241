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

static void print_spec(const cJSON *ws, int64_t now, FILE *out)
{
    char w[WHEN_SIZE];
    field(out, 0, TOP_WIDTH, "Name", "%s", or_text(fields_str(ws, "metadata.name"), "-"));
    field(out, 0, TOP_WIDTH, "Namespace", "%s", or_text(fields_str(ws, "metadata.namespace"), "-"));
    field(out, 0, TOP_WIDTH, "Class", "%s", or_text(fields_str(ws, "spec.className"), "-"));
    field(out, 0, TOP_WIDTH, "Image", "%s",
          or_text(fields_str(ws, "spec.image"), "(the class's default)"));
    field(out, 0, TOP_WIDTH, "Paused", "%s", fields_true(ws, "spec.paused") ? "true" : "false");
    const char *claim = fields_str(ws, "status.homeClaimName");
    const char *size = fields_str(ws, "spec.home.size");
    field(out, 0, TOP_WIDTH, "Home", "%s, %s", or_text(claim, "(no claim yet)"),
          or_text(size, "the class's size"));

    int64_t keep = fields_time(ws, "spec.keepAliveUntil");
    if (keep) {
        int64_t bounded = fields_time(ws, "status.activity.keepAliveUntil");
        if (bounded && bounded < keep) {
            char b[WHEN_SIZE];
            field(out, 0, TOP_WIDTH, "Keep-alive", "until %s, bounded by the class to %s",
                  when(w, keep, now), when(b, bounded, now));
        } else {
            field(out, 0, TOP_WIDTH, "Keep-alive", "until %s", when(w, keep, now));
        }
    }
    const char *idle_after = fields_str(ws, "spec.idle.after");
    double applied = fields_num(ws, "status.activity.idleAfterSeconds");
    if (idle_after || applied > 0) {
        char a[TIMETEXT_SIZE] = "";
        if (applied > 0 && duration_format_ms((int64_t)(applied * 1000), a, sizeof(a)) < 0)
            a[0] = '\0';
        if (idle_after && applied > 0)
            field(out, 0, TOP_WIDTH, "Idle after", "%s (applied: %s)", idle_after, a);
        else
            field(out, 0, TOP_WIDTH, "Idle after", "%s%s", idle_after ? idle_after : a,
                  idle_after ? "" : " (the class's)");
    }
    field(out, 0, TOP_WIDTH, "Created", "%s",
          when(w, fields_time(ws, "metadata.creationTimestamp"), now));
    int64_t deleting = fields_time(ws, "metadata.deletionTimestamp");
    if (deleting)
        field(out, 0, TOP_WIDTH, "Deleting", "since %s", when(w, deleting, now));
}

static void print_state(const cJSON *ws, int64_t now, FILE *out)
{
    char w[WHEN_SIZE];
    const char *state = fields_str(ws, "status.state");
    int64_t since = fields_time(ws, "status.stateSince");
    if (since)
        field(out, 0, TOP_WIDTH, "State", "%s since %s", or_text(state, "(not reconciled yet)"),
              when(w, since, now));
    else
        field(out, 0, TOP_WIDTH, "State", "%s", or_text(state, "(not reconciled yet)"));
    const char *msg = fields_str(ws, "status.message");
    if (msg && *msg)
        field(out, 0, TOP_WIDTH, "Message", "%s", msg);
    const char *pod = fields_str(ws, "status.podName");
    if (pod)
        field(out, 0, TOP_WIDTH, "Pod", "%s", pod);
    const char *node = fields_str(ws, "status.nodeName");
    if (node)
        field(out, 0, TOP_WIDTH, "Node", "%s", node);
    const char *res = fields_str(ws, "status.accelerator.resourceName");
    const char *product = fields_str(ws, "status.accelerator.product");
    if (res || product) {
        double count = fields_num(ws, "status.accelerator.count");
        field(out, 0, TOP_WIDTH, "Accelerator", "%g x %s%s%s", count > 0 ? count : 1,
              or_text(res, "?"), product ? ", " : "", product ? product : "");
    } else {
        field(out, 0, TOP_WIDTH, "Accelerator", "none");
    }
    int64_t waiting = fields_time(ws, "status.waitingForCapacitySince");
    if (waiting)
        field(out, 0, TOP_WIDTH, "Waiting", "for capacity since %s", when(w, waiting, now));
}

static void print_activity(const cJSON *ws, int64_t now, FILE *out)
{
    const cJSON *a = fields_at(ws, "status.activity");
    if (!cJSON_IsObject(a) || !a->child)
        return;
    char w[WHEN_SIZE];
    fprintf(out, "Activity:\n");
    int64_t last = fields_time(a, "lastActivityTime");
    if (last)
        field(out, 2, NESTED_WIDTH, "Last activity", "%s, %s", when(w, last, now),
              or_text(fields_str(a, "lastActivitySource"), "unknown source"));
    int64_t probe = fields_time(a, "lastProbeTime");
    if (probe) {
        const char *result = or_text(fields_str(a, "lastProbeResult"), "?");
        const char *error = fields_str(a, "lastProbeError");
        field(out, 2, NESTED_WIDTH, "Last probe", "%s: %s%s%s", when(w, probe, now), result,
              error ? ": " : "", error ? error : "");
    }
    int64_t idle = fields_time(a, "idleSince");
    if (idle)
        field(out, 2, NESTED_WIDTH, "Idle since", "%s", when(w, idle, now));
    int64_t pause_at = fields_time(a, "pauseAt");
    if (pause_at)
        field(out, 2, NESTED_WIDTH, "Pause at", "%s", when(w, pause_at, now));
}

static int print_conditions(const cJSON *ws, int64_t now, FILE *out)
{
    const cJSON *list = fields_at(ws, "status.conditions");
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0) {
        fprintf(out, "Conditions:   <none>\n");
        return 0;
    }
    static const char *const headers[] = {"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"};
    struct table *t = table_new(5, headers);
    if (!t)
        return -ENOMEM;
    const cJSON *c;
    cJSON_ArrayForEach(c, list)
    {
        char age[TIMETEXT_SIZE];
        timetext_age_at(json_time_ms(c, "lastTransitionTime"), now, age);
        const char *cells[] = {json_string(c, "type"), json_string(c, "status"),
                               json_string(c, "reason"), age, json_string(c, "message")};
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

static void print_last_pause(const cJSON *ws, const struct ledger *l, int64_t now, FILE *out)
{
    const cJSON *p = fields_at(ws, "status.lastPause");
    int64_t asked = fields_time(p, "requestedAt");
    if (!asked) {
        fprintf(out, "Last pause:   <none>\n");
        return;
    }
    char w[WHEN_SIZE];
    /* The history's newest record is this pause when it says so; it knows more. */
    const struct ledger_record *r =
        l->from_history && l->n > 0 && l->records[0].paused_ms / 1000 == asked / 1000
            ? &l->records[0]
            : NULL;
    fprintf(out, "Last pause:\n");
    field(out, 2, NESTED_WIDTH, "Reason", "%s", or_text(fields_str(p, "reason"), "-"));
    const char *msg = fields_str(p, "message");
    if (msg && *msg)
        field(out, 2, NESTED_WIDTH, "Message", "%s", msg);
    field(out, 2, NESTED_WIDTH, "Requested", "%s", when(w, asked, now));
    if (r && r->work_ended_ms)
        field(out, 2, NESTED_WIDTH, "Work ended", "%s", when(w, r->work_ended_ms, now));
    int64_t snap_asked = fields_time(ws, "status.snapshot.requestedAt");
    int64_t snap_ready = fields_time(ws, "status.snapshot.readyAt");
    if (snap_asked >= asked && snap_ready) {
        char s[TIMETEXT_SIZE];
        timetext_seconds(fields_num(ws, "status.snapshot.seconds"), s);
        field(out, 2, NESTED_WIDTH, "Snapshot ready", "%s, took %s", when(w, snap_ready, now), s);
    } else if (r && r->snapshot_ready_ms) {
        char s[TIMETEXT_SIZE];
        timetext_seconds(r->snapshot_seconds, s);
        field(out, 2, NESTED_WIDTH, "Snapshot ready", "%s, took %s",
              when(w, r->snapshot_ready_ms, now), s);
    }
    if (r && r->memory)
        field(out, 2, NESTED_WIDTH, "Memory", "%s", r->memory);
    after(out, "Pod deleted", fields_time(p, "podDeletedAt"), asked, "the request", now);
    after(out, "Accelerator released", fields_time(p, "acceleratorReleasedAt"), asked,
          "the request", now);
    if (r && r->taken_ms)
        field(out, 2, NESTED_WIDTH, "Accelerator taken", "%s by %s", when(w, r->taken_ms, now),
              or_text(r->taken_by, "another pod"));
    if (r && r->node_removed_ms)
        field(out, 2, NESTED_WIDTH, "Node removed", "%s (%s)", when(w, r->node_removed_ms, now),
              or_text(r->node_name, "its node"));
}

static void print_last_resume(const cJSON *ws, int64_t now, FILE *out)
{
    const cJSON *r = fields_at(ws, "status.lastResume");
    int64_t asked = fields_time(r, "requestedAt");
    if (!asked) {
        fprintf(out, "Last resume:  <none>\n");
        return;
    }
    char w[WHEN_SIZE];
    fprintf(out, "Last resume:\n");
    field(out, 2, NESTED_WIDTH, "Requested", "%s", when(w, asked, now));
    after(out, "Pod created", fields_time(r, "podCreatedAt"), asked, "the request", now);
    after(out, "Pod scheduled", fields_time(r, "podScheduledAt"), asked, "the request", now);
    int64_t ready = fields_time(r, "readyAt");
    if (ready) {
        char s[TIMETEXT_SIZE];
        timetext_seconds(fields_num(r, "secondsToReady"), s);
        field(out, 2, NESTED_WIDTH, "Ready", "%s, %s after the request", when(w, ready, now), s);
    } else {
        field(out, 2, NESTED_WIDTH, "Ready", "not yet");
    }
    const char *from = fields_str(r, "restoredFrom");
    const cJSON *cond = fields_condition(ws, "Restored");
    const char *reason = json_string(cond, "reason");
    if (from)
        field(out, 2, NESTED_WIDTH, "Restored from", "%s (%s)", ledger_restored_words(from), from);
    else if (reason)
        field(out, 2, NESTED_WIDTH, "Restored from", "not known yet (%s)", reason);
}

static void print_snapshot(const cJSON *ws, int64_t now, FILE *out)
{
    const cJSON *s = fields_at(ws, "status.snapshot");
    if (!cJSON_IsObject(s) || !s->child)
        return;
    char w[WHEN_SIZE];
    fprintf(out, "Snapshot:\n");
    const char *name = fields_str(s, "name");
    if (name)
        field(out, 2, NESTED_WIDTH, "Name", "%s", name);
    field(out, 2, NESTED_WIDTH, "Phase", "%s", or_text(fields_str(s, "phase"), "-"));
    const char *attempt = fields_str(s, "attempt");
    if (attempt)
        field(out, 2, NESTED_WIDTH, "Attempt", "%s (%g so far)", attempt,
              fields_num(s, "attempts"));
    int64_t asked = fields_time(s, "requestedAt");
    if (asked)
        field(out, 2, NESTED_WIDTH, "Requested", "%s", when(w, asked, now));
    int64_t ready = fields_time(s, "readyAt");
    if (ready) {
        char sec[TIMETEXT_SIZE];
        timetext_seconds(fields_num(s, "seconds"), sec);
        field(out, 2, NESTED_WIDTH, "Ready", "%s, took %s", when(w, ready, now), sec);
    }
    int64_t failed = fields_time(s, "failedAt");
    if (failed)
        field(out, 2, NESTED_WIDTH, "Failed", "%s", when(w, failed, now));
    int64_t crashed = fields_time(s, "restoreFailedAt");
    if (crashed)
        field(out, 2, NESTED_WIDTH, "Restore crashed", "%s", when(w, crashed, now));
    const char *node = fields_str(s, "nodeName"), *gpu = fields_str(s, "gpuProduct");
    if (node || gpu)
        field(out, 2, NESTED_WIDTH, "Taken on", "%s%s%s", or_text(node, "?"), gpu ? ", " : "",
              gpu ? gpu : "");
    const char *msg = fields_str(s, "message");
    if (msg && *msg)
        field(out, 2, NESTED_WIDTH, "Message", "%s", msg);
}

static void print_accounting(const struct ledger *l, int64_t now, FILE *out)
{
    if (l->pauses < 0 && l->resumes < 0 && l->released_s < 0 && l->held_s < 0 && !l->held_since_ms)
        return;
    char w[WHEN_SIZE];
    fprintf(out, "Accounting:\n");
    field(out, 2, NESTED_WIDTH, "Pauses", "%lld", (long long)(l->pauses > 0 ? l->pauses : 0));
    field(out, 2, NESTED_WIDTH, "Resumes", "%lld", (long long)(l->resumes > 0 ? l->resumes : 0));
    if (l->held_s >= 0)
        field(out, 2, NESTED_WIDTH, "Held", "%.2f accelerator-hours", l->held_s / 3600.0);
    if (l->held_since_ms)
        field(out, 2, NESTED_WIDTH, "Holding since", "%s", when(w, l->held_since_ms, now));
    if (l->accelerators > 0 || l->released_s > 0)
        field(out, 2, NESTED_WIDTH, "Given back", "%.2f accelerator-hours",
              l->released_s > 0 ? l->released_s / 3600.0 : 0.0);
}

static int print_history(const struct ledger *l, int64_t now, FILE *out)
{
    if (!l->from_history)
        return 0;
    if (l->n == 0) {
        fprintf(out, "History:      <none>\n");
        return 0;
    }
    static const char *const headers[] = {"PAUSED",  "REASON",   "MEMORY",  "SNAPSHOT",
                                          "RESUMED", "READY-IN", "RESTORED"};
    struct table *t = table_new(7, headers);
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < l->n && i < HISTORY_ROWS; i++) {
        const struct ledger_record *r = &l->records[i];
        char paused[TIMETEXT_SIZE], snap[TIMETEXT_SIZE], resumed[TIMETEXT_SIZE],
            ready[TIMETEXT_SIZE];
        timetext_age_at(r->paused_ms, now, paused);
        timetext_seconds(r->snapshot_seconds, snap);
        timetext_age_at(r->resume_requested_ms, now, resumed);
        timetext_seconds(r->seconds_to_ready, ready);
        const char *cells[] = {
            paused, or_text(r->reason, "-"),       or_text(r->memory, "-"), snap, resumed,
            ready,  or_text(r->restored_from, "-")};
        if (table_add_row(t, cells) < 0) {
            table_free(t);
            return -ENOMEM;
        }
    }
    if (l->n > HISTORY_ROWS)
        fprintf(out, "History (the newest %d of %zu records", HISTORY_ROWS, l->n);
    else
        fprintf(out, "History (newest first");
    if (l->pauses > (int64_t)l->n)
        fprintf(out, "; %zu of %lld pauses kept", l->n, (long long)l->pauses);
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

static int print_events(const cJSON *ws, const cJSON *events, int64_t now, FILE *out)
{
    if (!events) {
        fprintf(out, "Events:       (could not be read)\n");
        return 0;
    }
    const char *name = fields_str(ws, "metadata.name");
    const char *uid = fields_str(ws, "metadata.uid");
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
        if (!kind || strcmp(kind, "Workspace") != 0 || !obj || !name || strcmp(obj, name) != 0)
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

int describe_print(const cJSON *ws, const cJSON *events, int64_t now, FILE *out)
{
    struct ledger l;
    if (ledger_read(ws, &l) < 0)
        return -ENOMEM;
    int r = 0;
    print_spec(ws, now, out);
    print_state(ws, now, out);
    print_activity(ws, now, out);
    r = print_conditions(ws, now, out);
    if (r == 0) {
        print_last_pause(ws, &l, now, out);
        print_last_resume(ws, now, out);
        print_snapshot(ws, now, out);
        print_accounting(&l, now, out);
        r = print_history(&l, now, out);
    }
    if (r == 0)
        r = print_events(ws, events, now, out);
    ledger_clear(&l);
    return r;
}
