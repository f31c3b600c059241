#include "cli/whatif.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "activity/record.h"
#include "cli/notes.h"
#include "cli/table.h"
#include "controller/activity_log.h"
#include "util/json.h"
#include "util/text.h"
#include "util/tz.h"
#include "workspace/class.h"
#include "workspace/replay.h"
#include "workspace/workspace.h"

#define MINUTE_MS (60 * 1000)

/* A candidate: what it changes in each class. */
enum change {
    CHANGE_NONE,
    CHANGE_IDLE_AFTER, /* idle.after := value; the workspace's own ignored */
    CHANGE_NO_WINDOWS, /* no pause windows */
    CHANGE_PREWARM,    /* pre-warms on (value 1, with a 15m lead where the class has none) or off */
};

struct candidate {
    const char *name;
    enum change change;
    int64_t value;
};

static const struct candidate candidates[] = {
    {"current", CHANGE_NONE, 0},
    {"idle 15m", CHANGE_IDLE_AFTER, 15 * MINUTE_MS},
    {"idle 30m", CHANGE_IDLE_AFTER, 30 * MINUTE_MS},
    {"idle 1h", CHANGE_IDLE_AFTER, 60 * MINUTE_MS},
    {"idle 2h", CHANGE_IDLE_AFTER, 120 * MINUTE_MS},
    {"current, no pause windows", CHANGE_NO_WINDOWS, 0},
    {"current, pre-warm on", CHANGE_PREWARM, 1},
    {"current, pre-warm off", CHANGE_PREWARM, 0},
};
#define N_CANDIDATES (sizeof(candidates) / sizeof(candidates[0]))

/* ---- the world's times, from the class's ledger ---- */

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    if (!n)
        return NAN;
    qsort(v, n, sizeof(*v), double_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct samples {
    double *v;
    size_t n, cap;
};

static int sample(struct samples *s, double v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        double *grown = realloc(s->v, cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        s->v = grown;
        s->cap = cap;
    }
    s->v[s->n++] = v;
    return 0;
}

/* The class's times: medians over its workspaces' history, each with the
 * published default when none was measured. */
static int class_times(struct whatif *w, const cJSON *workspaces, const char *cls,
                       struct replay_times *t)
{
    struct samples snap = {0}, restore = {0}, cold = {0}, stop = {0};
    int e = 0;
    *t = (struct replay_times){0}; /* what is not measured here is the replay's default */
    const cJSON *item;
    cJSON_ArrayForEach(item, json_member(workspaces, "items"))
    {
        struct workspace *ws = NULL;
        if (workspace_decode_lenient(item, &ws) < 0)
            return -ENOMEM;
        if (ws->class_name && strcmp(ws->class_name, cls) == 0) {
            for (size_t i = 0; e == 0 && i < ws->status.n_history; i++) {
                const struct workspace_pause_record *r = &ws->status.history[i];
                if (r->pause.snapshot_ready_ms)
                    e = sample(&snap, r->pause.snapshot_seconds);
                const struct workspace_pause_timeline *p = &r->pause;
                if (e == 0 && p->pod_deleted_ms && p->accelerator_released_ms >= p->pod_deleted_ms)
                    e = sample(&stop,
                               (double)(p->accelerator_released_ms - p->pod_deleted_ms) / 1000);
                const char *from = r->resume.restored_from;
                if (e == 0 && r->resume.ready_ms && from && strcmp(from, "FromSnapshot") == 0)
                    e = sample(&restore, r->resume.seconds_to_ready);
                else if (e == 0 && r->resume.ready_ms && from)
                    e = sample(&cold, r->resume.seconds_to_ready);
            }
        }
        workspace_free(ws);
        if (e < 0)
            break;
    }
    double ms = median(snap.v, snap.n), mr = median(restore.v, restore.n),
           mc = median(cold.v, cold.n);
    t->snapshot_ms = (int64_t)((isnan(ms) ? WHATIF_DEFAULT_SNAPSHOT_S : ms) * 1000);
    t->restore_ms = (int64_t)((isnan(mr) ? WHATIF_DEFAULT_RESTORE_S : mr) * 1000);
    t->cold_start_ms = (int64_t)((isnan(mc) ? WHATIF_DEFAULT_COLD_START_S : mc) * 1000);
    /* A deleted pod's stop: 0 (a second) unless measured. */
    double mp = median(stop.v, stop.n);
    t->stop_ms = isnan(mp) ? 0 : (int64_t)(mp * 1000) + 1; /* a measured 0 is not the default */
    char stop_text[64] = "";
    if (stop.n)
        snprintf(stop_text, sizeof(stop_text), ", a pod's stop %.1f s (median of its ledger)", mp);
    if (e == 0)
        e = cli_note_add(&w->notes, &w->n_notes,
                         "class %s: a snapshot %.0f s (%s), a restore from it %.0f s (%s), a start "
                         "from files %.0f s (%s)%s",
                         cls, (double)t->snapshot_ms / 1000,
                         snap.n ? "median of its ledger" : "GKE's published T4 figure",
                         (double)t->restore_ms / 1000,
                         restore.n ? "median of its ledger" : "GKE's published T4 figure",
                         (double)t->cold_start_ms / 1000,
                         cold.n ? "median of its ledger" : "not measured, assumed", stop_text);
    free(stop.v);
    free(snap.v);
    free(restore.v);
    free(cold.v);
    return e;
}

/* ---- zones ---- */

struct zones {
    const char *dir;
    struct tz **loaded;
    size_t n;
};

static const struct tz *zone(struct zones *z, const char *name)
{
    if (!name || strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0)
        return tz_utc();
    for (size_t i = 0; i < z->n; i++)
        if (strcmp(tz_name(z->loaded[i]), name) == 0)
            return z->loaded[i];
    if (!tz_name_valid(name))
        return NULL;
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", z->dir ? z->dir : "/usr/share/zoneinfo", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *data = malloc(TZ_FILE_MAX);
    size_t len = data ? fread(data, 1, TZ_FILE_MAX, f) : 0;
    fclose(f);
    struct tz *t = NULL;
    struct tz **grown = data ? realloc(z->loaded, (z->n + 1) * sizeof(*grown)) : NULL;
    if (grown)
        z->loaded = grown;
    if (!grown || tz_parse(name, data, len, &t, NULL) < 0) {
        free(data);
        return NULL;
    }
    free(data);
    z->loaded[z->n++] = t;
    return t;
}

/* ---- replaying ---- */

/* What one computation keeps: zones read, and each class's times (noted
 * once). */
struct ctx {
    struct whatif *w;
    int64_t now_ms;
    struct zones z;
    struct class_times {
        char *cls;
        struct replay_times t;
    } * times;
    size_t n_times;
};

static int times_for(struct ctx *x, const cJSON *workspaces, const char *cls,
                     struct replay_times *t)
{
    for (size_t i = 0; i < x->n_times; i++)
        if (strcmp(x->times[i].cls, cls) == 0) {
            *t = x->times[i].t;
            return 0;
        }
    struct class_times *grown = realloc(x->times, (x->n_times + 1) * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    x->times = grown;
    int e = class_times(x->w, workspaces, cls, t);
    if (e < 0)
        return e;
    if (!(x->times[x->n_times].cls = strdup(cls)))
        return -ENOMEM;
    x->times[x->n_times++].t = *t;
    return 0;
}

static void change_class(struct workspace_class *c, const struct candidate *k)
{
    switch (k->change) {
    case CHANGE_IDLE_AFTER:
        c->idle.after_ms = k->value;
        if (c->idle.min_after_ms > k->value)
            c->idle.min_after_ms = k->value;
        if (c->idle.max_after_ms < k->value)
            c->idle.max_after_ms = k->value;
        if (c->idle.warn_before_ms >= c->idle.min_after_ms)
            c->idle.warn_before_ms = c->idle.min_after_ms / 3;
        break;
    case CHANGE_NO_WINDOWS:
        c->idle.schedule.n_windows = 0;
        break;
    case CHANGE_PREWARM:
        c->prewarm.enabled = (int)k->value;
        if (k->value && !c->prewarm.max_concurrent) {
            c->prewarm.lead_ms = 15 * MINUTE_MS;
            c->prewarm.grace_ms = 30 * MINUTE_MS;
            c->prewarm.max_concurrent = 1;
            c->prewarm.skip_after_days = 7;
        }
        break;
    case CHANGE_NONE:
        break;
    }
}

static const cJSON *find_class(const cJSON *classes, const char *name)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, json_member(classes, "items"))
    {
        const char *n = json_string(json_member(item, "metadata"), "name");
        if (n && strcmp(n, name) == 0)
            return item;
    }
    return NULL;
}

static const cJSON *find_workspace(const cJSON *workspaces, const char *ns, const char *name)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, json_member(workspaces, "items"))
    {
        const cJSON *meta = json_member(item, "metadata");
        const char *n = json_string(meta, "name"), *s = json_string(meta, "namespace");
        if (n && s && strcmp(n, name) == 0 && strcmp(s, ns) == 0)
            return item;
    }
    return NULL;
}

static void add_result(struct whatif_row *row, const struct replay_result *r)
{
    row->workspaces++;
    row->window_s += r->window_s;
    row->in_use_s += r->in_use_s;
    row->held_s += r->held_s;
    row->returned_s += r->returned_s;
    row->pauses += r->pauses;
    row->interruptions += r->interruptions;
    row->busy_pauses += r->busy_pauses;
    row->snapshot_s += r->snapshot_s;
    row->restore_s += r->restore_s;
    row->waited_s += r->waited_s;
    row->first_arrivals += r->first_arrivals;
    row->first_arrivals_ready += r->first_arrivals_ready;
    row->prewarms += r->prewarms;
    row->prewarms_used += r->prewarms_used;
    row->prewarms_unused += r->prewarms_unused;
}

/* One workspace's record under every candidate. */
static int replay_one(struct ctx *x, const cJSON *workspaces, const cJSON *classes, const cJSON *cm)
{
    struct whatif *w = x->w;
    struct zones *z = &x->z;
    const cJSON *meta = json_member(cm, "metadata");
    const char *ns = json_string(meta, "namespace"), *cm_name = json_string(meta, "name");
    const char *text = json_string(json_member(cm, "data"), ACTIVITY_LOG_KEY);
    size_t sl = strlen(ACTIVITY_LOG_SUFFIX);
    if (!ns || !cm_name || !text || strlen(cm_name) <= sl)
        return 0;
    char name[256];
    snprintf(name, sizeof(name), "%.*s", (int)(strlen(cm_name) - sl), cm_name);
    const cJSON *wj = find_workspace(workspaces, ns, name);
    if (!wj)
        return cli_note_add(&w->notes, &w->n_notes,
                            "%s/%s: an activity record without its workspace; left out", ns, name);
    struct workspace *ws = NULL;
    if (workspace_decode_lenient(wj, &ws) < 0)
        return -ENOMEM;
    int e = 0;
    struct activity_record rec = {0};
    const char *why = NULL;
    const cJSON *cj = ws->class_name ? find_class(classes, ws->class_name) : NULL;
    struct replay_span *spans = NULL;
    size_t n_spans = 0;
    if (!cj) {
        e = cli_note_add(&w->notes, &w->n_notes, "%s/%s: class %s not found; left out", ns, name,
                         ws->class_name ? ws->class_name : "(none)");
        goto out;
    }
    if ((e = activity_record_parse(text, &rec, &why)) < 0) {
        e = e == -ENOMEM
                ? e
                : cli_note_add(&w->notes, &w->n_notes,
                               "%s/%s: its record cannot be read (%s); left out", ns, name, why);
        goto out;
    }
    if (rec.n == 0 || activity_record_end(&rec) <= rec.start_s) {
        e = cli_note_add(&w->notes, &w->n_notes, "%s/%s: an empty record; left out", ns, name);
        goto out;
    }
    /* The last run holds until now. */
    int64_t end_ms = activity_record_end(&rec) * 1000;
    if (x->now_ms > end_ms) {
        int64_t s = (int64_t)rec.runs[rec.n - 1].seconds + (x->now_ms - end_ms) / 1000;
        rec.runs[rec.n - 1].seconds = s > ACTIVITY_RUN_MAX_S ? ACTIVITY_RUN_MAX_S : (uint32_t)s;
        end_ms = activity_record_end(&rec) * 1000;
    }
    if ((e = replay_spans_from_record(&rec, &spans, &n_spans)) < 0)
        goto out;
    struct replay_times times;
    if ((e = times_for(x, workspaces, ws->class_name, &times)) < 0)
        goto out;
    for (size_t k = 0; k < N_CANDIDATES && e == 0; k++) {
        struct workspace_class *c = NULL;
        char *err = NULL;
        if (workspace_class_decode(cj, &c, &err) < 0) {
            e = err ? cli_note_add(&w->notes, &w->n_notes,
                                   "%s/%s: class %s cannot be read (%s); left out", ns, name,
                                   ws->class_name, err)
                    : -ENOMEM;
            free(err);
            break;
        }
        change_class(c, &candidates[k]);
        struct replay_input in = {
            .cls = c,
            .zone = c->idle.schedule.n_windows ? zone(z, c->idle.time_zone) : NULL,
            .start_ms = rec.start_s * 1000,
            .end_ms = end_ms,
            .start_paused = rec.runs[0].state == 'p',
            /* a record that begins running began with the pod ready */
            .start_ready = strchr("akgiu", rec.runs[0].state) != NULL,
            .spans = spans,
            .n_spans = n_spans,
            .times = times,
            .idle_after_ms = candidates[k].change == CHANGE_IDLE_AFTER ? 0 : ws->idle_after_ms,
            .prewarm = ws->prewarm,
            .prewarm_zone = ws->prewarm ? zone(z, ws->prewarm->time_zone) : NULL,
        };
        if (c->idle.schedule.n_windows && !in.zone) {
            e = cli_note_add(&w->notes, &w->n_notes,
                             "%s/%s: time zone %s cannot be read; %s left out", ns, name,
                             c->idle.time_zone, candidates[k].name);
            workspace_class_free(c);
            continue;
        }
        struct replay_result r;
        int rr = replay_run(&in, &r);
        workspace_class_free(c);
        if (rr == -ENOMEM)
            e = rr;
        else if (rr < 0)
            e = cli_note_add(&w->notes, &w->n_notes, "%s/%s: %s cannot be replayed (%s)", ns, name,
                             candidates[k].name, strerror(-rr));
        else
            add_result(&w->rows[k], &r);
    }
out:
    free(spans);
    activity_record_free(&rec);
    workspace_free(ws);
    return e;
}

/* Paused workspaces whose snapshot no node can restore any more
 * (SnapshotReady=False/NotRestorable): every policy's next resume of them
 * starts from files, which the replay cannot see. Returns 0 or -ENOMEM. */
static int note_unrestorable(struct whatif *w, const cJSON *workspaces)
{
    const cJSON *ws;
    cJSON_ArrayForEach(ws, json_member(workspaces, "items"))
    {
        const cJSON *c;
        cJSON_ArrayForEach(c, json_member(json_member(ws, "status"), "conditions"))
        {
            const char *type = json_string(c, "type"), *reason = json_string(c, "reason");
            if (!type || !reason || strcmp(type, "SnapshotReady") != 0 ||
                strcmp(reason, "NotRestorable") != 0)
                continue;
            const cJSON *meta = json_member(ws, "metadata");
            const char *msg = json_string(c, "message");
            if (cli_note_add(&w->notes, &w->n_notes,
                             "%s/%s: its paused snapshot cannot come back (%s); its next resume "
                             "starts from files under every policy",
                             json_string(meta, "namespace"), json_string(meta, "name"),
                             msg ? msg : "no node can restore it") < 0)
                return -ENOMEM;
        }
    }
    return 0;
}

int whatif_compute(const cJSON *workspaces, const cJSON *classes, const cJSON *configmaps,
                   int64_t now_ms, const char *zoneinfo, struct whatif **ret)
{
    struct whatif *w = calloc(1, sizeof(*w));
    if (!w || !(w->rows = calloc(N_CANDIDATES, sizeof(*w->rows)))) {
        free(w);
        return -ENOMEM;
    }
    w->n_rows = N_CANDIDATES;
    int e = 0;
    for (size_t k = 0; k < N_CANDIDATES && e == 0; k++)
        if (!(w->rows[k].policy = strdup(candidates[k].name)))
            e = -ENOMEM;
    struct ctx x = {.w = w, .now_ms = now_ms, .z = {.dir = zoneinfo}};
    const cJSON *cm;
    cJSON_ArrayForEach(cm, json_member(configmaps, "items"))
    {
        if (e == 0)
            e = replay_one(&x, workspaces, classes, cm);
    }
    if (e == 0)
        e = note_unrestorable(w, workspaces);
    for (size_t i = 0; i < x.z.n; i++)
        tz_free(x.z.loaded[i]);
    free(x.z.loaded);
    for (size_t i = 0; i < x.n_times; i++)
        free(x.times[i].cls);
    free(x.times);
    if (e < 0) {
        whatif_free(w);
        return e;
    }
    *ret = w;
    return 0;
}

void whatif_free(struct whatif *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_rows; i++)
        free(w->rows[i].policy);
    free(w->rows);
    for (size_t i = 0; i < w->n_notes; i++)
        free(w->notes[i]);
    free(w->notes);
    free(w);
}

/* ---- printing ---- */

static const char *const headers[] = {
    "POLICY",   "WORKSPACES",       "HELD-H",         "GIVEN-BACK-H", "IDLE-GIVEN-BACK",
    "PAUSES",   "INTERRUPTIONS",    "BUSY-PAUSES",    "SNAPSHOT-H",   "RESTORE-H",
    "WAITED-H", "READY-ON-ARRIVAL", "PRE-WARMS-USED",
};
static const char *const csv_headers[] = {
    "policy",
    "workspaces",
    "accelerator_hours_held",
    "accelerator_hours_given_back",
    "idle_share_given_back",
    "pauses",
    "interruptions",
    "pauses_while_busy",
    "snapshot_hours",
    "restore_hours",
    "hours_people_waited",
    "first_arrivals_ready_share",
    "prewarms_used",
};
#define N_COLUMNS (sizeof(headers) / sizeof(headers[0]))

static double idle_share(const struct whatif_row *r)
{
    double idle = r->window_s - r->in_use_s;
    return idle > 0 ? r->returned_s / idle : NAN;
}

static double arrival_share(const struct whatif_row *r)
{
    return r->first_arrivals ? (double)r->first_arrivals_ready / (double)r->first_arrivals : NAN;
}

static void cells_of(const struct whatif_row *r, int csv, char cells[N_COLUMNS][48])
{
    snprintf(cells[1], 48, "%d", r->workspaces);
    snprintf(cells[2], 48, csv ? "%.4f" : "%.2f", r->held_s / 3600);
    snprintf(cells[3], 48, csv ? "%.4f" : "%.2f", r->returned_s / 3600);
    double s = idle_share(r), a = arrival_share(r);
    if (csv) {
        /* An empty CSV cell is a share with nothing to divide. */
        cells[4][0] = cells[11][0] = '\0';
        if (!isnan(s))
            snprintf(cells[4], 48, "%.3f", s);
        if (!isnan(a))
            snprintf(cells[11], 48, "%.3f", a);
    } else {
        snprintf(cells[4], 48, isnan(s) ? "-" : "%.1f%%", 100 * s);
        if (isnan(a))
            snprintf(cells[11], 48, "-");
        else
            snprintf(cells[11], 48, "%lld of %lld", (long long)r->first_arrivals_ready,
                     (long long)r->first_arrivals);
    }
    snprintf(cells[5], 48, "%lld", (long long)r->pauses);
    snprintf(cells[6], 48, "%lld", (long long)r->interruptions);
    snprintf(cells[7], 48, "%lld", (long long)r->busy_pauses);
    snprintf(cells[8], 48, "%.2f", r->snapshot_s / 3600);
    snprintf(cells[9], 48, "%.2f", r->restore_s / 3600);
    snprintf(cells[10], 48, "%.2f", r->waited_s / 3600);
    if (csv || r->prewarms)
        snprintf(cells[12], 48, csv ? "%lld" : "%lld of %lld", (long long)r->prewarms_used,
                 (long long)r->prewarms);
    else
        snprintf(cells[12], 48, "-");
}

static int print_rows(const struct whatif *w, int csv, FILE *out)
{
    struct table *t = table_new(N_COLUMNS, csv ? csv_headers : headers);
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < w->n_rows; i++) {
        char cells[N_COLUMNS][48];
        cells_of(&w->rows[i], csv, cells);
        const char *row[N_COLUMNS];
        row[0] = w->rows[i].policy;
        for (size_t c = 1; c < N_COLUMNS; c++)
            row[c] = cells[c];
        if (table_add_row(t, row) < 0) {
            table_free(t);
            return -ENOMEM;
        }
    }
    if (csv)
        table_print_csv(t, out);
    else
        table_print(t, out, 0);
    table_free(t);
    return 0;
}

static int add_row(cJSON *rows, const struct whatif_row *r)
{
    cJSON *j = cJSON_CreateObject();
    if (!j || !cJSON_AddItemToArray(rows, j)) {
        cJSON_Delete(j);
        return 0;
    }
    return cJSON_AddStringToObject(j, "policy", r->policy) &&
           cJSON_AddNumberToObject(j, "workspaces", r->workspaces) &&
           cli_json_number(j, "acceleratorHoursHeld", r->held_s / 3600, 0.0001) &&
           cli_json_number(j, "acceleratorHoursGivenBack", r->returned_s / 3600, 0.0001) &&
           cli_json_number(j, "idleShareGivenBack", idle_share(r), 0.001) &&
           cJSON_AddNumberToObject(j, "pauses", (double)r->pauses) &&
           cJSON_AddNumberToObject(j, "interruptions", (double)r->interruptions) &&
           cJSON_AddNumberToObject(j, "pausesWhileBusy", (double)r->busy_pauses) &&
           cli_json_number(j, "snapshotHours", r->snapshot_s / 3600, 0.0001) &&
           cli_json_number(j, "restoreHours", r->restore_s / 3600, 0.0001) &&
           cli_json_number(j, "hoursPeopleWaited", r->waited_s / 3600, 0.0001) &&
           cJSON_AddNumberToObject(j, "firstArrivals", (double)r->first_arrivals) &&
           cJSON_AddNumberToObject(j, "firstArrivalsReady", (double)r->first_arrivals_ready) &&
           cJSON_AddNumberToObject(j, "preWarms", (double)r->prewarms) &&
           cJSON_AddNumberToObject(j, "preWarmsUsed", (double)r->prewarms_used) &&
           cJSON_AddNumberToObject(j, "preWarmsUnused", (double)r->prewarms_unused);
}

int whatif_print(const struct whatif *w, enum cli_output format, FILE *out, FILE *notes_out)
{
    if (format == CLI_OUTPUT_JSON) {
        cJSON *o = cJSON_CreateObject();
        cJSON *rows = o ? cJSON_AddArrayToObject(o, "policies") : NULL;
        cJSON *notes = rows ? cJSON_AddArrayToObject(o, "notes") : NULL;
        int ok = notes != NULL;
        for (size_t i = 0; ok && i < w->n_rows; i++)
            ok = add_row(rows, &w->rows[i]);
        for (size_t i = 0; ok && i < w->n_notes; i++) {
            cJSON *n = cJSON_CreateString(w->notes[i]);
            ok = n && cJSON_AddItemToArray(notes, n);
            if (!ok)
                cJSON_Delete(n);
        }
        char *text = ok ? cJSON_Print(o) : NULL;
        if (text) {
            fputs(text, out);
            fputc('\n', out);
        }
        cJSON_free(text);
        cJSON_Delete(o);
        return text ? 0 : -ENOMEM;
    }
    int e = print_rows(w, format == CLI_OUTPUT_CSV, out);
    FILE *nout = format == CLI_OUTPUT_CSV ? notes_out : out;
    if (e == 0 && w->n_notes && format != CLI_OUTPUT_CSV)
        fprintf(out, "\nNotes:\n");
    for (size_t i = 0; e == 0 && i < w->n_notes; i++) {
        fputs(format == CLI_OUTPUT_CSV ? "note: " : "  ", nout);
        text_print_clean(nout, w->notes[i]);
        fputc('\n', nout);
    }
    return e;
}
