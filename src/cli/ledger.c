#include "cli/ledger.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/fields.h"
#include "util/json.h"

static double num_or(const cJSON *o, const char *path, double absent)
{
    return fields_has_num(o, path) ? fields_num(o, path) : absent;
}

static void read_record(const cJSON *h, struct ledger_record *r)
{
    *r = (struct ledger_record){
        .paused_ms = fields_time(h, "pausedAt"),
        .reason = fields_str(h, "reason"),
        .work_ended_ms = fields_time(h, "workEndedAt"),
        .held_since_ms = fields_time(h, "heldSince"),
        .pod_deleted_ms = fields_time(h, "podDeletedAt"),
        .released_ms = fields_time(h, "acceleratorReleasedAt"),
        .snapshot_ready_ms = fields_time(h, "snapshotReadyAt"),
        .snapshot_seconds = num_or(h, "snapshotSeconds", -1),
        .memory = fields_str(h, "memory"),
        .node_name = fields_str(h, "nodeName"),
        .product = fields_str(h, "product"),
        .taken_ms = fields_time(h, "acceleratorTakenAt"),
        .taken_by = fields_str(h, "acceleratorTakenBy"),
        .node_removed_ms = fields_time(h, "nodeRemovedAt"),
        .resume_requested_ms = fields_time(h, "resumeRequestedAt"),
        .pod_scheduled_ms = fields_time(h, "podScheduledAt"),
        .ready_ms = fields_time(h, "readyAt"),
        .seconds_to_ready = num_or(h, "secondsToReady", -1),
        .restored_from = fields_str(h, "restoredFrom"),
    };
}

/* The resume half of a record from status.lastResume. */
static void add_resume(const cJSON *st, struct ledger_record *r)
{
    r->resume_requested_ms = fields_time(st, "lastResume.requestedAt");
    r->pod_scheduled_ms = fields_time(st, "lastResume.podScheduledAt");
    r->ready_ms = fields_time(st, "lastResume.readyAt");
    r->seconds_to_ready = r->ready_ms ? num_or(st, "lastResume.secondsToReady", -1) : -1;
    r->restored_from = fields_str(st, "lastResume.restoredFrom");
}

/* Without status.history: the last pause (with its snapshot and, when it
 * came after it, the last resume), and an older resume on its own. */
static size_t synthesize(const cJSON *st, struct ledger_record *out)
{
    size_t n = 0;
    int64_t paused = fields_time(st, "lastPause.requestedAt");
    int64_t resumed = fields_time(st, "lastResume.requestedAt");
    if (paused) {
        struct ledger_record *r = &out[n++];
        *r = (struct ledger_record){.snapshot_seconds = -1, .seconds_to_ready = -1};
        r->paused_ms = paused;
        r->reason = fields_str(st, "lastPause.reason");
        r->pod_deleted_ms = fields_time(st, "lastPause.podDeletedAt");
        r->released_ms = fields_time(st, "lastPause.acceleratorReleasedAt");
        int64_t snap_asked = fields_time(st, "snapshot.requestedAt");
        if (snap_asked && snap_asked >= paused) {
            r->snapshot_ready_ms = fields_time(st, "snapshot.readyAt");
            if (r->snapshot_ready_ms)
                r->snapshot_seconds = num_or(st, "snapshot.seconds", -1);
            r->node_name = fields_str(st, "snapshot.nodeName");
            r->product = fields_str(st, "snapshot.gpuProduct");
        }
        if (resumed >= paused)
            add_resume(st, r);
    }
    if (resumed && (!paused || resumed < paused)) {
        struct ledger_record *r = &out[n++];
        *r = (struct ledger_record){.snapshot_seconds = -1, .seconds_to_ready = -1};
        add_resume(st, r);
    }
    return n;
}

int ledger_read(const cJSON *ws, struct ledger *ret)
{
    struct ledger l = {0};
    const cJSON *st = fields_at(ws, "status");
    l.pauses =
        fields_has_num(st, "accounting.pauses") ? (int64_t)fields_num(st, "accounting.pauses") : -1;
    l.resumes = fields_has_num(st, "accounting.resumes")
                    ? (int64_t)fields_num(st, "accounting.resumes")
                    : -1;
    l.released_s = num_or(st, "accounting.acceleratorSecondsReleased", -1);
    l.held_s = num_or(st, "accounting.acceleratorSecondsHeld", -1);
    l.held_since_ms = fields_time(st, "accounting.acceleratorHeldSince");
    if (fields_str(st, "accelerator.resourceName") || fields_str(st, "accelerator.product")) {
        double count = fields_num(st, "accelerator.count");
        l.accelerators = count >= 1 && count <= 1024 ? (int)count : 1;
    }

    const cJSON *hist = json_member(st, "history");
    size_t cap = LEDGER_MAX_RECORDS;
    l.records = calloc(cap, sizeof(*l.records));
    if (!l.records)
        return -ENOMEM;
    if (cJSON_IsArray(hist)) {
        l.from_history = 1;
        const cJSON *h;
        cJSON_ArrayForEach(h, hist)
        {
            if (l.n == cap)
                break;
            if (cJSON_IsObject(h))
                read_record(h, &l.records[l.n++]);
        }
    } else {
        l.n = synthesize(st, l.records);
    }
    if (!l.accelerators) {
        /* A record naming a GPU product held one, whatever the status says now. */
        for (size_t i = 0; i < l.n; i++)
            if (l.records[i].product && l.records[i].product[0])
                l.accelerators = 1;
    }
    *ret = l;
    return 0;
}

void ledger_clear(struct ledger *l)
{
    free(l->records);
    *l = (struct ledger){0};
}

int ledger_lost_memory(const char *r)
{
    return r && (strcmp(r, "ColdStart") == 0 || strcmp(r, "FromCheckpoint") == 0 ||
                 strcmp(r, "Fresh") == 0);
}

const char *ledger_restored_words(const char *r)
{
    if (!r)
        return "";
    if (strcmp(r, "FromSnapshot") == 0)
        return "snapshot";
    if (strcmp(r, "FromCheckpoint") == 0)
        return "checkpoint";
    if (strcmp(r, "ColdStart") == 0)
        return "cold start";
    if (strcmp(r, "Fresh") == 0)
        return "fresh start";
    return r;
}
