#include "cli/list.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/table.h"
#include "cli/timetext.h"
#include "snapshot/view.h"
#include "util/json.h"
#include "workspace/vocabulary.h"
#include "workspace/workspace.h"

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

static int item_cmp(const void *a, const void *b)
{
    const struct workspace *x = *(struct workspace *const *)a, *y = *(struct workspace *const *)b;
    int c = strcmp(x->ns ? x->ns : "", y->ns ? y->ns : "");
    if (c)
        return c;
    return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

static void snapshot_cell(const struct workspace *ws, int64_t now, char out[TIMETEXT_SIZE])
{
    const struct workspace_snapshot *s = ws->status.snapshot;
    if (s->phase && strcmp(s->phase, snapshot_phase_name(SNAPSHOT_PHASE_READY)) == 0 && s->ready_ms)
        timetext_age_at(s->ready_ms, now, out);
    else
        snprintf(out, TIMETEXT_SIZE, "%s", or_dash(s->phase));
}

static const char *restored_cell(const struct workspace *ws)
{
    const struct workspace_status *st = &ws->status;
    const struct condition *c = workspace_status_condition(st, WS_COND_RESTORED);
    const char *reason = c ? c->reason : NULL;
    if (st->last_resume->requested_ms && reason &&
        (strcmp(reason, WS_REASON_RESTORING) == 0 ||
         strcmp(reason, WS_REASON_RESTORE_CRASHED) == 0 ||
         strcmp(reason, WS_REASON_RESTORE_UNRESPONSIVE) == 0))
        return reason;
    return or_dash(st->last_resume->restored_from);
}

static int add_row(struct table *t, const struct workspace *ws, size_t skip, int64_t now)
{
    const struct workspace_status *st = &ws->status;
    char idle[TIMETEXT_SIZE] = "-", snap[TIMETEXT_SIZE], age[TIMETEXT_SIZE];
    if (st->state == WS_STATE_RUNNING)
        timetext_age_at(st->activity->idle_since_ms, now, idle);
    /* The accelerator held or awaited, as `kubectl get ws` shows it: a
     * paused or failed workspace holds none (its product is cleared). */
    const char *acc = st->accelerator_product;
    if ((!acc || !*acc) && st->state != WS_STATE_PAUSED && st->state != WS_STATE_FAILED)
        acc = st->accelerator_resource;
    snapshot_cell(ws, now, snap);
    timetext_age_at(ws->created_ms, now, age);
    const char *cells[] = {
        ws->ns,
        or_dash(ws->name),
        or_dash(workspace_state_name(st->state)),
        idle,
        or_dash(acc),
        snap,
        restored_cell(ws),
        age,
    };
    return table_add_row(t, cells + skip);
}

/* Below the table: each field that could not be read, by workspace. */
static void print_unread(struct workspace *const *ws, size_t n, FILE *out)
{
    int header = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < ws[i]->n_unread; j++) {
            if (!header++)
                fprintf(out, "\nNot read:\n");
            fprintf(out, "  ");
            text_print_clean(out, ws[i]->ns ? ws[i]->ns : "");
            fputc('/', out);
            text_print_clean(out, ws[i]->name ? ws[i]->name : "(no name)");
            fputs(": ", out);
            text_print_clean(out, ws[i]->unread[j]);
            fputc('\n', out);
        }
        if (ws[i]->n_unread_more)
            fprintf(out, "  (and %zu more)\n", ws[i]->n_unread_more);
    }
}

int list_print(const cJSON *list, int with_namespace, int64_t now, FILE *out)
{
    const cJSON *items = json_member(list, "items");
    int total = cJSON_IsArray(items) ? cJSON_GetArraySize(items) : 0;
    if (total == 0)
        return 0;
    struct workspace **ws = calloc((size_t)total, sizeof(*ws));
    static const char *const headers[] = {"NAMESPACE",   "NAME",     "STATE",    "IDLE",
                                          "ACCELERATOR", "SNAPSHOT", "RESTORED", "AGE"};
    size_t skip = with_namespace ? 0 : 1;
    struct table *t = table_new(8 - skip, headers + skip);
    size_t n = 0;
    int err = 0;
    if (!ws || !t) {
        err = -ENOMEM;
        goto out;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
        /* Not a JSON object: nothing to show. */
        int r = workspace_decode_lenient(it, &ws[n]);
        if (r == -ENOMEM) {
            err = r;
            goto out;
        }
        n += r == 0;
    }
    qsort(ws, n, sizeof(*ws), item_cmp);
    for (size_t i = 0; i < n; i++) {
        if (add_row(t, ws[i], skip, now) < 0) {
            err = -ENOMEM;
            goto out;
        }
    }
    if (n) {
        table_print(t, out, 0);
        print_unread(ws, n, out);
    }
out:
    table_free(t);
    for (size_t i = 0; ws && i < n; i++)
        workspace_free(ws[i]);
    free(ws);
    return err < 0 ? err : (int)n;
}
