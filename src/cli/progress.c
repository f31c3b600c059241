#include "cli/progress.h"

#include <stdio.h>
#include <string.h>

#include "cli/fields.h"
#include "cli/ledger.h"
#include "cli/timetext.h"
#include "util/json.h"

static int64_t count_of(const cJSON *ws, const char *path)
{
    return fields_has_num(ws, path) ? (int64_t)fields_num(ws, path) : 0;
}

static int streq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

void progress_begin(struct progress *p, enum progress_goal goal, const cJSON *ws, int64_t now)
{
    *p = (struct progress){.goal = goal, .started_ms = now, .snapshot_seconds = -1};
    p->generation = count_of(ws, "metadata.generation");
    p->pauses_before = count_of(ws, "status.accounting.pauses");
    p->resumes_before = count_of(ws, "status.accounting.resumes");
    /* A pause is open while pauses > resumes (docs/state-machine.md). */
    int open = p->pauses_before > p->resumes_before;
    if (goal == PROGRESS_RESUME)
        p->counted_expected = open;
    /* Following a resume already counted and not ready yet: that one. */
    if (goal == PROGRESS_RESUME && !open && p->resumes_before > 0 &&
        fields_time(ws, "status.lastResume.requestedAt") &&
        !fields_time(ws, "status.lastResume.readyAt")) {
        p->counted_expected = 1;
        p->resumes_before--;
    }
}

static const char *cond_reason(const cJSON *ws, const char *type)
{
    return json_string(fields_condition(ws, type), "reason");
}

static const char *cond_message(const cJSON *ws, const char *type)
{
    return json_string(fields_condition(ws, type), "message");
}

static int set(struct progress *p, enum progress_phase phase, const char *detail)
{
    char d[sizeof(p->detail)];
    snprintf(d, sizeof(d), "%s", detail ? detail : "");
    int changed = phase != p->phase || strcmp(d, p->detail) != 0;
    p->phase = phase;
    memcpy(p->detail, d, sizeof(d));
    return changed;
}

static int observe_start(struct progress *p, const cJSON *ws, int64_t now, int counted)
{
    const char *state = fields_str(ws, "status.state");
    if (!counted)
        return set(p, PROGRESS_REQUESTED, NULL);
    if (streq(state, "WaitingForCapacity"))
        return set(p, PROGRESS_WAITING_FOR_CAPACITY, cond_message(ws, "CapacityAvailable"));
    const char *restored = cond_reason(ws, "Restored");
    int ready;
    if (p->goal == PROGRESS_RESUME && p->counted_expected)
        ready = fields_time(ws, "status.lastResume.readyAt") != 0;
    else
        ready = streq(state, "Running") && streq(cond_reason(ws, "Ready"), "PodReady");
    if (!ready) {
        if (streq(restored, "RestoreCrashed") || streq(restored, "RestoreUnresponsive"))
            return set(p, PROGRESS_STARTING, cond_message(ws, "Restored"));
        const char *what = streq(restored, "Restoring")        ? "restoring from the snapshot"
                           : streq(restored, "FromCheckpoint") ? "from the checkpoint"
                                                               : NULL;
        char d[sizeof(p->detail)];
        const char *msg = cond_message(ws, "Ready");
        if (!msg || !*msg)
            msg = NULL;
        snprintf(d, sizeof(d), "%s%s%s", what ? what : "", what && msg ? ": " : "", msg ? msg : "");
        return set(p, PROGRESS_STARTING, d);
    }
    if (streq(restored, "Restoring"))
        return set(p, PROGRESS_CONFIRMING, "ready; waiting to learn whether the memory came back");
    const char *from = fields_str(ws, "status.lastResume.restoredFrom");
    if (p->goal == PROGRESS_RESUME && p->counted_expected && from)
        snprintf(p->restored_from, sizeof(p->restored_from), "%s", from);
    else if (restored && !streq(restored, "RestoreCrashed") &&
             !streq(restored, "RestoreUnresponsive"))
        snprintf(p->restored_from, sizeof(p->restored_from), "%s", restored);
    if (p->goal == PROGRESS_RESUME && p->counted_expected &&
        fields_has_num(ws, "status.lastResume.secondsToReady"))
        p->seconds = fields_num(ws, "status.lastResume.secondsToReady");
    else
        p->seconds = (double)(now - p->started_ms) / 1000.0;
    return set(p, PROGRESS_DONE, NULL);
}

static int observe_pause(struct progress *p, const cJSON *ws, int64_t now)
{
    const char *state = fields_str(ws, "status.state");
    /* Not by the pause count: a workspace without a pod is Paused without
     * counting one. Seen at the request's generation, Paused is this pause. */
    if (count_of(ws, "status.observedGeneration") < p->generation)
        return set(p, PROGRESS_REQUESTED, NULL);
    if (streq(state, "Paused")) {
        p->seconds = (double)(now - p->started_ms) / 1000.0;
        int64_t asked = fields_time(ws, "status.lastPause.requestedAt");
        int64_t snap_asked = fields_time(ws, "status.snapshot.requestedAt");
        if (snap_asked && snap_asked >= asked && fields_time(ws, "status.snapshot.readyAt"))
            p->snapshot_seconds = fields_num(ws, "status.snapshot.seconds");
        return set(p, PROGRESS_DONE, NULL);
    }
    const char *snap = cond_reason(ws, "SnapshotReady");
    const char *ready = cond_reason(ws, "Ready");
    if (streq(snap, "Checkpointing"))
        return set(p, PROGRESS_PAUSING, "the application is writing its checkpoint");
    if (streq(snap, "InProgress"))
        return set(p, PROGRESS_PAUSING, "taking the snapshot");
    if (streq(snap, "Failed") || streq(snap, "Timeout"))
        return set(p, PROGRESS_PAUSING, cond_message(ws, "SnapshotReady"));
    if (streq(ready, "Pausing") || streq(ready, "PodTerminating"))
        return set(p, PROGRESS_PAUSING, "the pod is stopping");
    return set(p, PROGRESS_PAUSING, cond_message(ws, "Ready"));
}

int progress_observe(struct progress *p, const cJSON *ws, int64_t now)
{
    if (p->phase == PROGRESS_DONE)
        return 0;
    const char *state = fields_str(ws, "status.state");
    if (streq(state, "Failed") && p->goal != PROGRESS_PAUSE &&
        count_of(ws, "status.observedGeneration") >= p->generation)
        return set(p, PROGRESS_FAILED, fields_str(ws, "status.message"));
    if (p->goal == PROGRESS_PAUSE)
        return observe_pause(p, ws, now);
    int counted = count_of(ws, "status.observedGeneration") >= p->generation;
    if (counted && p->goal == PROGRESS_RESUME && p->counted_expected)
        counted = count_of(ws, "status.accounting.resumes") > p->resumes_before;
    return observe_start(p, ws, now, counted);
}

static const char *phase_words(const struct progress *p)
{
    switch (p->phase) {
    case PROGRESS_REQUESTED:
        return p->goal == PROGRESS_PAUSE    ? "pause requested"
               : p->goal == PROGRESS_RESUME ? "resume requested"
                                            : "created";
    case PROGRESS_PAUSING:
        return "pausing";
    case PROGRESS_WAITING_FOR_CAPACITY:
        return "waiting for capacity";
    case PROGRESS_STARTING:
        return p->goal == PROGRESS_RESUME ? "resuming" : "starting";
    case PROGRESS_CONFIRMING:
        return "confirming the restore";
    case PROGRESS_DONE:
        return "done";
    case PROGRESS_FAILED:
        return "failed";
    }
    return "";
}

void progress_line(const struct progress *p, int64_t now, char *out, size_t size)
{
    char elapsed[TIMETEXT_SIZE];
    timetext_age(now - p->started_ms, elapsed);
    snprintf(out, size, "[%6s] %s%s%s", elapsed, phase_words(p), p->detail[0] ? ": " : "",
             p->detail);
}

void progress_result(const struct progress *p, char *out, size_t size)
{
    char s[TIMETEXT_SIZE];
    timetext_seconds(p->seconds, s);
    switch (p->goal) {
    case PROGRESS_PAUSE:
        if (p->snapshot_seconds >= 0) {
            char snap[TIMETEXT_SIZE];
            timetext_seconds(p->snapshot_seconds, snap);
            snprintf(out, size, "paused in %s (snapshot %s)", s, snap);
        } else {
            snprintf(out, size, "paused in %s (without a memory snapshot)", s);
        }
        return;
    case PROGRESS_RESUME:
        if (p->restored_from[0])
            snprintf(out, size, "ready in %s (%s%s)", s,
                     strcmp(p->restored_from, "Fresh") == 0 ? "" : "restored from ",
                     ledger_restored_words(p->restored_from));
        else
            snprintf(out, size, "ready in %s", s);
        return;
    case PROGRESS_RUNNING:
        snprintf(out, size, "running in %s", s);
        return;
    }
}
