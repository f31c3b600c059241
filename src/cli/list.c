#include "cli/list.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/fields.h"
#include "cli/table.h"
#include "cli/timetext.h"
#include "util/json.h"

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

static int item_cmp(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    const char *xn = fields_str(x, "metadata.namespace"), *yn = fields_str(y, "metadata.namespace");
    int c = strcmp(xn ? xn : "", yn ? yn : "");
    if (c)
        return c;
    const char *xm = fields_str(x, "metadata.name"), *ym = fields_str(y, "metadata.name");
    return strcmp(xm ? xm : "", ym ? ym : "");
}

static void snapshot_cell(const cJSON *ws, int64_t now, char out[TIMETEXT_SIZE])
{
    const char *phase = fields_str(ws, "status.snapshot.phase");
    int64_t ready = fields_time(ws, "status.snapshot.readyAt");
    if (phase && strcmp(phase, "Ready") == 0 && ready)
        timetext_age_at(ready, now, out);
    else
        snprintf(out, TIMETEXT_SIZE, "%s", or_dash(phase));
}

static const char *restored_cell(const cJSON *ws)
{
    int64_t asked = fields_time(ws, "status.lastResume.requestedAt");
    const char *reason = json_string(fields_condition(ws, "Restored"), "reason");
    const char *from = fields_str(ws, "status.lastResume.restoredFrom");
    if (asked && reason &&
        (strcmp(reason, "Restoring") == 0 || strcmp(reason, "RestoreCrashed") == 0 ||
         strcmp(reason, "RestoreUnresponsive") == 0))
        return reason;
    return or_dash(from);
}

int list_print(const cJSON *list, int with_namespace, int64_t now, FILE *out)
{
    const cJSON *items = json_member(list, "items");
    int n = cJSON_IsArray(items) ? cJSON_GetArraySize(items) : 0;
    if (n == 0)
        return 0;
    const cJSON **sorted = calloc((size_t)n, sizeof(*sorted));
    static const char *const headers[] = {"NAMESPACE",   "NAME",     "STATE",    "IDLE",
                                          "ACCELERATOR", "SNAPSHOT", "RESTORED", "AGE"};
    size_t skip = with_namespace ? 0 : 1;
    struct table *t = table_new(8 - skip, headers + skip);
    int rows = 0, err = 0;
    if (!sorted || !t) {
        err = -ENOMEM;
        goto out;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, items) sorted[rows++] = it;
    qsort(sorted, (size_t)n, sizeof(*sorted), item_cmp);
    for (int i = 0; i < n; i++) {
        const cJSON *ws = sorted[i];
        const char *state = fields_str(ws, "status.state");
        char idle[TIMETEXT_SIZE] = "-", snap[TIMETEXT_SIZE], age[TIMETEXT_SIZE];
        if (state && strcmp(state, "Running") == 0)
            timetext_age_at(fields_time(ws, "status.activity.idleSince"), now, idle);
        const char *acc = fields_str(ws, "status.accelerator.product");
        if (!acc || !*acc)
            acc = fields_str(ws, "status.accelerator.resourceName");
        snapshot_cell(ws, now, snap);
        timetext_age_at(fields_time(ws, "metadata.creationTimestamp"), now, age);
        const char *cells[] = {
            fields_str(ws, "metadata.namespace"),
            or_dash(fields_str(ws, "metadata.name")),
            or_dash(state),
            idle,
            or_dash(acc),
            snap,
            restored_cell(ws),
            age,
        };
        if (table_add_row(t, cells + skip) < 0) {
            err = -ENOMEM;
            goto out;
        }
    }
    table_print(t, out, 0);
out:
    table_free(t);
    free(sorted);
    return err < 0 ? err : n;
}
