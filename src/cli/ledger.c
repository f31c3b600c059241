#include "cli/ledger.h"
#include "workspace/vocabulary.h"

#include <string.h>

/* The resume half of a record from status.lastResume. */
static void add_resume(const struct workspace_status *st, struct workspace_pause_record *r)
{
    r->resume.requested_ms = st->last_resume->requested_ms;
    r->resume.pod_scheduled_ms = st->last_resume->pod_scheduled_ms;
    r->resume.ready_ms = st->last_resume->ready_ms;
    r->resume.seconds_to_ready = st->last_resume->seconds_to_ready;
    r->resume.restored_from = st->last_resume->restored_from;
}

/* Without status.history: the last pause (with its snapshot and, when it
 * came after it, the last resume), and an older resume on its own. The
 * records share the status's strings. */
static size_t synthesize(const struct workspace_status *st, struct workspace_pause_record *out)
{
    size_t n = 0;
    int64_t paused = st->last_pause->requested_ms;
    int64_t resumed = st->last_resume->requested_ms;
    if (paused) {
        struct workspace_pause_record *r = &out[n++];
        *r = (struct workspace_pause_record){0};
        r->pause.requested_ms = paused;
        r->pause.reason = st->last_pause->reason;
        r->pause.pod_deleted_ms = st->last_pause->pod_deleted_ms;
        r->pause.accelerator_released_ms = st->last_pause->accelerator_released_ms;
        const struct workspace_snapshot *sn = st->snapshot;
        if (sn->requested_ms && sn->requested_ms >= paused) {
            r->pause.snapshot_ready_ms = sn->ready_ms;
            r->pause.snapshot_seconds = sn->seconds;
            r->pause.node_name = sn->node_name;
            r->pause.product = sn->gpu_product;
        }
        if (resumed >= paused)
            add_resume(st, r);
    }
    if (resumed && (!paused || resumed < paused)) {
        struct workspace_pause_record *r = &out[n++];
        *r = (struct workspace_pause_record){0};
        add_resume(st, r);
    }
    return n;
}

void ledger_read(const struct workspace *ws, struct ledger *l)
{
    const struct workspace_status *st = &ws->status;
    *l = (struct ledger){0};
    if (st->accelerator_resource || st->accelerator_product) {
        int count = st->accelerator_count;
        l->accelerators = count >= 1 && count <= 1024 ? count : 1;
    }
    if (st->n_history) {
        l->from_history = 1;
        l->records = st->history;
        l->n = st->n_history;
    } else {
        l->n = synthesize(st, l->made);
        l->records = l->made;
    }
    if (!l->accelerators) {
        /* A record naming a GPU product held one, whatever the status says now. */
        for (size_t i = 0; i < l->n; i++)
            if (l->records[i].pause.product && l->records[i].pause.product[0])
                l->accelerators = 1;
    }
}

int ledger_lost_memory(const char *r)
{
    return r && (strcmp(r, WS_REASON_COLD_START) == 0 ||
                 strcmp(r, WS_REASON_FROM_CHECKPOINT) == 0 || strcmp(r, WS_REASON_FRESH) == 0);
}

const char *ledger_restored_words(const char *r)
{
    if (!r)
        return "";
    if (strcmp(r, WS_REASON_FROM_SNAPSHOT) == 0)
        return "snapshot";
    if (strcmp(r, WS_REASON_FROM_CHECKPOINT) == 0)
        return "checkpoint";
    if (strcmp(r, WS_REASON_COLD_START) == 0)
        return "cold start";
    if (strcmp(r, WS_REASON_FRESH) == 0)
        return "fresh start";
    return r;
}
