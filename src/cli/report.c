#include "cli/report.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/ledger.h"
#include "cli/notes.h"
#include "cli/table.h"
#include "cli/timetext.h"
#include "util/json.h"

double report_percentile(const double *v, size_t n, double p)
{
    if (n == 0)
        return NAN;
    if (p <= 0)
        return v[0];
    if (p >= 1)
        return v[n - 1];
    double rank = p * (double)(n - 1);
    size_t lo = (size_t)floor(rank);
    double frac = rank - (double)lo;
    if (lo + 1 >= n)
        return v[n - 1];
    return v[lo] + (v[lo + 1] - v[lo]) * frac;
}

/* Seconds of [a, b] within [from, to]; 0 when an end is unknown. */
static double overlap(int64_t a, int64_t b, int64_t from, int64_t to)
{
    if (!a || !b)
        return 0;
    if (a < from)
        a = from;
    if (b > to)
        b = to;
    return b > a ? (double)(b - a) / 1000.0 : 0;
}

static int in_range(int64_t t, int64_t from, int64_t to)
{
    return t && t >= from && t < to;
}

static struct report_group *group_for(struct report *r, const char *ns, const char *cls)
{
    for (size_t i = 0; i < r->n_groups; i++)
        if (strcmp(r->groups[i].ns, ns) == 0 && strcmp(r->groups[i].class_name, cls) == 0)
            return &r->groups[i];
    struct report_group *grown = realloc(r->groups, (r->n_groups + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    r->groups = grown;
    struct report_group *g = &r->groups[r->n_groups];
    *g = (struct report_group){.ns = strdup(ns), .class_name = strdup(cls)};
    if (!g->ns || !g->class_name) {
        free(g->ns);
        free(g->class_name);
        return NULL;
    }
    r->n_groups++;
    return g;
}

static int add_ready(struct report_group *g, double s)
{
    if (g->n_ready == g->cap_ready) {
        size_t cap = g->cap_ready ? g->cap_ready * 2 : 8;
        double *grown = realloc(g->ready_s, cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        g->ready_s = grown;
        g->cap_ready = cap;
    }
    g->ready_s[g->n_ready++] = s;
    return 0;
}

/* The restore sources and memory outcomes, in the order of the counters
 * (status.accounting.resumesFrom, pausesKept) and of the JSON keys. */
static const char *const source_names[REPORT_SOURCES] = {"FromSnapshot", "ColdStart",
                                                         "FromCheckpoint", "Fresh", "FreshHome"};
static const char *const source_keys[REPORT_SOURCES] = {"fromSnapshot", "coldStart",
                                                        "fromCheckpoint", "fresh", "freshHome"};
static const char *const memory_names[REPORT_MEMORIES] = {"snapshot", "files", "snapshotFailed"};

static int index_of(const char *const *names, size_t n, const char *v)
{
    for (size_t i = 0; v && i < n; i++)
        if (strcmp(names[i], v) == 0)
            return (int)i;
    return -1;
}

static void counters_of(const struct workspace_status *st, int64_t from[REPORT_SOURCES],
                        int64_t kept[REPORT_MEMORIES])
{
    const struct workspace_resume_sources *rf = &st->resumes_from;
    const struct workspace_pause_memories *pk = &st->pauses_kept;
    int64_t f[REPORT_SOURCES] = {rf->from_snapshot, rf->cold_start, rf->from_checkpoint, rf->fresh,
                                 rf->fresh_home};
    int64_t k[REPORT_MEMORIES] = {pk->snapshot, pk->files, pk->snapshot_failed};
    memcpy(from, f, sizeof(f));
    memcpy(kept, k, sizeof(k));
}

/* Whether the counters of status.accounting (resumesFrom, pausesKept) can
 * stand for the workspace's whole life: written (a controller from before
 * them leaves them out), and each at least what the kept history holds of
 * its outcome (counting began before the oldest record). */
static int counters_whole(const struct workspace_status *st, const struct ledger *l)
{
    int64_t from[REPORT_SOURCES], kept[REPORT_MEMORIES], any = 0;
    counters_of(st, from, kept);
    for (size_t i = 0; i < REPORT_SOURCES; i++)
        any |= from[i];
    for (size_t i = 0; i < REPORT_MEMORIES; i++)
        any |= kept[i];
    if (!any)
        return 0;
    for (size_t i = 0; i < l->n; i++) {
        int s = l->records[i].resume.ready_ms
                    ? index_of(source_names, REPORT_SOURCES, l->records[i].resume.restored_from)
                    : -1;
        int m = index_of(memory_names, REPORT_MEMORIES, l->records[i].pause.memory);
        if (s >= 0 && --from[s] < 0)
            return 0;
        if (m >= 0 && --kept[m] < 0)
            return 0;
    }
    return 1;
}

static int add_workspace(struct report *r, const struct workspace *ws, int64_t now)
{
    const struct workspace_status *st = &ws->status;
    const char *ns = ws->ns, *name = ws->name, *cls = ws->class_name;
    struct report_group *g = group_for(r, ns ? ns : "", cls ? cls : "");
    if (!g)
        return -ENOMEM;
    struct ledger l;
    ledger_read(ws, &l);
    int64_t from = r->from_ms, to = r->to_ms;
    int64_t open_end = to < now ? to : now; /* what is still going on counts until here */
    double k = l.accelerators;
    int err = 0;
    g->workspaces++;
    /* The kept history covers the range when it holds every pause, or its
     * oldest record began before the range did (the resumes ready in the
     * range then all follow a kept pause). */
    const struct workspace_pause_timeline *oldest = l.n ? &l.records[l.n - 1].pause : NULL;
    int64_t start =
        oldest ? (oldest->held_since_ms ? oldest->held_since_ms : oldest->requested_ms) : 0;
    int short_history = l.from_history && st->pauses > (int64_t)l.n && (!start || start > from);
    /* Then the counts come from the counters, which cannot be told apart
     * by time: they are the whole life's. */
    int whole_life = short_history && counters_whole(st, &l);
    if (short_history) {
        g->short_histories++;
        if (start > g->percentiles_since_ms)
            g->percentiles_since_ms = start;
    }
    if (whole_life) {
        int64_t from_n[REPORT_SOURCES], kept_n[REPORT_MEMORIES];
        counters_of(st, from_n, kept_n);
        for (size_t i = 0; i < REPORT_SOURCES; i++) {
            g->resumes_from[i] += from_n[i];
            g->restores += from_n[i];
            g->lost_memory += ledger_lost_memory(source_names[i]) ? from_n[i] : 0;
        }
        for (size_t i = 0; i < REPORT_MEMORIES; i++)
            g->pauses_kept[i] += kept_n[i];
        g->pauses += st->pauses;
        g->resumes += st->resumes;
        /* Pre-warms begun; a first start of a workspace created paused
         * may be one, and is no resume. */
        g->prewarms += st->prewarm->count < st->resumes ? st->prewarm->count : st->resumes;
        g->whole_life++;
    }
    for (size_t i = 0; i < l.n && err == 0; i++) {
        const struct workspace_pause_timeline *p = &l.records[i].pause;
        const struct workspace_resume_timeline *res = &l.records[i].resume;
        g->held_s += k * overlap(p->held_since_ms, p->accelerator_released_ms, from, to);
        int64_t back_end = res->pod_scheduled_ms ? res->pod_scheduled_ms : res->ready_ms;
        if (!back_end && i == 0) /* still paused, or waiting for capacity */
            back_end = open_end;
        g->given_back_s += k * overlap(p->accelerator_released_ms, back_end, from, to);
        /* A figure is known when its time is (workspace.h). */
        if (in_range(p->snapshot_ready_ms, from, to))
            g->snapshot_s += p->snapshot_seconds;
        if (in_range(res->ready_ms, from, to))
            err = add_ready(g, res->seconds_to_ready);
        if (whole_life)
            continue;
        g->pauses += in_range(p->requested_ms, from, to);
        g->resumes += in_range(res->requested_ms, from, to);
        g->prewarms += res->pre_warmed && in_range(res->requested_ms, from, to);
        if (in_range(p->requested_ms, from, to)) {
            int m = index_of(memory_names, REPORT_MEMORIES, p->memory);
            if (m >= 0)
                g->pauses_kept[m]++;
        }
        if (in_range(res->ready_ms, from, to) && res->restored_from) {
            g->restores++;
            g->lost_memory += ledger_lost_memory(res->restored_from);
            int f = index_of(source_names, REPORT_SOURCES, res->restored_from);
            if (f >= 0)
                g->resumes_from[f]++;
        }
    }
    if (st->accelerator_held_since_ms)
        g->held_s += k * overlap(st->accelerator_held_since_ms, open_end, from, to);

    if (err == 0 && !l.from_history && (st->pauses > 0 || l.accelerators > 0)) {
        err = cli_note_add(&r->notes, &r->n_notes,
                           "%s/%s: no status.history; held hours are not counted, the rest comes "
                           "from the last pause and resume only",
                           ns ? ns : "", name ? name : "");
    } else if (err == 0 && short_history) {
        char t[TIMETEXT_SIZE];
        timetext_time(start, t);
        if (whole_life)
            err = cli_note_add(&r->notes, &r->n_notes,
                               "%s/%s: history reaches back to %s only (%zu of %lld pauses kept); "
                               "its PAUSES, RESUMES, PRE-WARMED and COLD-START come from "
                               "status.accounting and cover its whole life, not the range; "
                               "hours and times before then are not counted",
                               ns ? ns : "", name ? name : "", t, l.n, (long long)st->pauses);
        else
            err = cli_note_add(&r->notes, &r->n_notes,
                               "%s/%s: history reaches back to %s only (%zu of %lld pauses kept); "
                               "use before then is not counted",
                               ns ? ns : "", name ? name : "", t, l.n, (long long)st->pauses);
    }
    return err;
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int group_cmp(const void *a, const void *b)
{
    const struct report_group *x = a, *y = b;
    int c = strcmp(x->ns, y->ns);
    return c ? c : strcmp(x->class_name, y->class_name);
}

int report_compute(const cJSON *list, int64_t from, int64_t to, int64_t now, struct report **ret)
{
    struct report *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->from_ms = from;
    r->to_ms = to;
    const cJSON *item;
    cJSON_ArrayForEach(item, json_member(list, "items"))
    {
        struct workspace *ws = NULL;
        int e = workspace_decode_lenient(item, &ws);
        if (e == -EINVAL) /* not a JSON object: nothing to count */
            continue;
        if (e == 0)
            e = add_workspace(r, ws, now);
        workspace_free(ws);
        if (e < 0) {
            report_free(r);
            return -ENOMEM;
        }
    }
    qsort(r->groups, r->n_groups, sizeof(*r->groups), group_cmp);
    for (size_t i = 0; i < r->n_groups; i++) {
        struct report_group *g = &r->groups[i];
        if (g->n_ready)
            qsort(g->ready_s, g->n_ready, sizeof(*g->ready_s), double_cmp);
        g->ready_p50 = report_percentile(g->ready_s, g->n_ready, 0.5);
        g->ready_p90 = report_percentile(g->ready_s, g->n_ready, 0.9);
        if (g->percentiles_since_ms < from)
            g->percentiles_since_ms = from;
        /* The times to ready exist only in the kept history: say which
         * part of the range they cover when it is not all of it. */
        if (g->short_histories) {
            char t[TIMETEXT_SIZE];
            timetext_time(g->percentiles_since_ms, t);
            if (cli_note_add(&r->notes, &r->n_notes,
                             "%s/%s: READY-P50 and READY-P90 are of the %zu resumes ready in "
                             "the range that the kept histories hold, complete since %s only",
                             g->ns, g->class_name, g->n_ready, t) < 0) {
                report_free(r);
                return -ENOMEM;
            }
        }
    }
    *ret = r;
    return 0;
}

void report_free(struct report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_groups; i++) {
        free(r->groups[i].ns);
        free(r->groups[i].class_name);
        free(r->groups[i].ready_s);
    }
    free(r->groups);
    for (size_t i = 0; i < r->n_notes; i++)
        free(r->notes[i]);
    free(r->notes);
    free(r);
}

/* ---- output ---------------------------------------------------------------- */

static const char *const headers[] = {
    "NAMESPACE", "CLASS",     "WORKSPACES", "HELD-H", "GIVEN-BACK-H", "SNAPSHOT",
    "READY-P50", "READY-P90", "COLD-START", "PAUSES", "RESUMES",      "PRE-WARMED",
};
static const char *const csv_headers[] = {
    "namespace",
    "class",
    "workspaces",
    "accelerator_hours_held",
    "accelerator_hours_given_back",
    "snapshot_seconds",
    "seconds_to_ready_median",
    "seconds_to_ready_p90",
    "cold_start_share",
    "pauses",
    "resumes",
    "resumes_pre_warmed",
};
#define N_COLUMNS (sizeof(headers) / sizeof(headers[0]))

/* The cells of one group; numbers plain for CSV, friendlier for a table. */
static void group_cells(const struct report_group *g, int csv, char cells[N_COLUMNS][32])
{
    snprintf(cells[2], 32, "%d", g->workspaces);
    snprintf(cells[3], 32, csv ? "%.4f" : "%.2f", g->held_s / 3600.0);
    snprintf(cells[4], 32, csv ? "%.4f" : "%.2f", g->given_back_s / 3600.0);
    if (csv) {
        snprintf(cells[5], 32, "%.1f", g->snapshot_s);
        cells[6][0] = cells[7][0] = '\0';
        if (!isnan(g->ready_p50))
            snprintf(cells[6], 32, "%.1f", g->ready_p50);
        if (!isnan(g->ready_p90))
            snprintf(cells[7], 32, "%.1f", g->ready_p90);
        if (g->restores)
            snprintf(cells[8], 32, "%.3f", (double)g->lost_memory / (double)g->restores);
        else
            cells[8][0] = '\0';
    } else {
        timetext_seconds(g->snapshot_s, cells[5]);
        timetext_seconds(isnan(g->ready_p50) ? -1 : g->ready_p50, cells[6]);
        timetext_seconds(isnan(g->ready_p90) ? -1 : g->ready_p90, cells[7]);
        if (g->restores)
            snprintf(cells[8], 32, "%.0f%%", 100.0 * (double)g->lost_memory / (double)g->restores);
        else
            snprintf(cells[8], 32, "-");
    }
    snprintf(cells[9], 32, "%lld", (long long)g->pauses);
    snprintf(cells[10], 32, "%lld", (long long)g->resumes);
    snprintf(cells[11], 32, "%lld", (long long)g->prewarms);
}

static int print_rows(const struct report *r, int csv, FILE *out)
{
    struct table *t = table_new(N_COLUMNS, csv ? csv_headers : headers);
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < r->n_groups; i++) {
        const struct report_group *g = &r->groups[i];
        char cells[N_COLUMNS][32];
        group_cells(g, csv, cells);
        const char *row[N_COLUMNS];
        row[0] = g->ns;
        row[1] = g->class_name;
        for (size_t c = 2; c < N_COLUMNS; c++)
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

static int add_counts(cJSON *j, const char *key, const char *const *names, const int64_t *v,
                      size_t n)
{
    cJSON *o = cJSON_AddObjectToObject(j, key);
    for (size_t i = 0; o && i < n; i++)
        if (!cJSON_AddNumberToObject(o, names[i], (double)v[i]))
            return 0;
    return o != NULL;
}

static int add_group(cJSON *groups, const struct report_group *g)
{
    char since[TIMETEXT_SIZE];
    timetext_time(g->percentiles_since_ms, since);
    cJSON *j = cJSON_CreateObject();
    if (!j || !cJSON_AddItemToArray(groups, j)) {
        cJSON_Delete(j);
        return 0;
    }
    return cJSON_AddStringToObject(j, "namespace", g->ns) &&
           cJSON_AddStringToObject(j, "class", g->class_name) &&
           cJSON_AddNumberToObject(j, "workspaces", g->workspaces) &&
           cli_json_number(j, "acceleratorHoursHeld", g->held_s / 3600.0, 0.0001) &&
           cli_json_number(j, "acceleratorHoursGivenBack", g->given_back_s / 3600.0, 0.0001) &&
           cli_json_number(j, "snapshotSeconds", g->snapshot_s, 0.1) &&
           cli_json_number(j, "secondsToReadyMedian", g->ready_p50, 0.1) &&
           cli_json_number(j, "secondsToReadyP90", g->ready_p90, 0.1) &&
           cli_json_number(j, "coldStartShare",
                           g->restores ? (double)g->lost_memory / (double)g->restores : NAN,
                           0.001) &&
           cJSON_AddNumberToObject(j, "resumesReady", (double)g->n_ready) &&
           cJSON_AddNumberToObject(j, "coldStarts", (double)g->lost_memory) &&
           cJSON_AddNumberToObject(j, "pauses", (double)g->pauses) &&
           cJSON_AddNumberToObject(j, "resumes", (double)g->resumes) &&
           cJSON_AddNumberToObject(j, "resumesPreWarmed", (double)g->prewarms) &&
           add_counts(j, "resumesFrom", source_keys, g->resumes_from, REPORT_SOURCES) &&
           add_counts(j, "pausesKept", memory_names, g->pauses_kept, REPORT_MEMORIES) &&
           cJSON_AddStringToObject(j, "percentilesSince", since) &&
           cJSON_AddNumberToObject(j, "wholeLifeCounts", g->whole_life);
}

static int print_json(const struct report *r, FILE *out)
{
    char from[TIMETEXT_SIZE], to[TIMETEXT_SIZE];
    timetext_time(r->from_ms, from);
    timetext_time(r->to_ms, to);
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "from", from) && cJSON_AddStringToObject(o, "to", to);
    cJSON *groups = ok ? cJSON_AddArrayToObject(o, "groups") : NULL;
    cJSON *notes = groups ? cJSON_AddArrayToObject(o, "notes") : NULL;
    ok = notes != NULL;
    for (size_t i = 0; ok && i < r->n_groups; i++)
        ok = add_group(groups, &r->groups[i]);
    for (size_t i = 0; ok && i < r->n_notes; i++) {
        cJSON *n = cJSON_CreateString(r->notes[i]);
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

int report_print(const struct report *r, enum cli_output format, FILE *out, FILE *notes_out)
{
    if (format == CLI_OUTPUT_JSON)
        return print_json(r, out);
    if (format == CLI_OUTPUT_CSV) {
        int e = print_rows(r, 1, out);
        for (size_t i = 0; e == 0 && i < r->n_notes; i++) {
            fputs("note: ", notes_out);
            text_print_clean(notes_out, r->notes[i]);
            fputc('\n', notes_out);
        }
        return e;
    }
    char from[TIMETEXT_SIZE], to[TIMETEXT_SIZE];
    timetext_time(r->from_ms, from);
    timetext_time(r->to_ms, to);
    fprintf(out, "Accelerator use from %s to %s\n\n", from, to);
    int e = print_rows(r, 0, out);
    if (e == 0 && r->n_notes) {
        fprintf(out, "\nNotes:\n");
        for (size_t i = 0; i < r->n_notes; i++) {
            fputs("  ", out);
            text_print_clean(out, r->notes[i]);
            fputc('\n', out);
        }
    }
    return e;
}
