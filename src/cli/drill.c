#include "cli/drill.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/canary.h"
#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/fields.h"
#include "cli/ledger.h"
#include "cli/progress.h"
#include "cli/table.h"
#include "cli/timetext.h"
#include "cli/watch.h"
#include "util/json.h"
#include "workspace/vocabulary.h"

#define DEFAULT_PORT 8888
#define CANARY_RETRY_MS 1000
#define DELETE_WAIT_MS (3 * 60 * 1000)
#define SHOWN_VALUE 64

enum drill_verdict drill_judge(const char *before, const char *after, const char *restored_from)
{
    if (!before || !after || !restored_from)
        return DRILL_FAIL;
    if (strcmp(before, after) != 0 || ledger_lost_memory(restored_from))
        return DRILL_COLD_START;
    if (strcmp(restored_from, WS_REASON_FROM_SNAPSHOT) == 0)
        return DRILL_PASS;
    return DRILL_FAIL;
}

void drill_cold_start_why(const char *before, const char *after, const char *restored_from,
                          char *out, size_t size)
{
    int changed = !before || !after || strcmp(before, after) != 0;
    if (changed && restored_from && strcmp(restored_from, WS_REASON_FROM_SNAPSHOT) == 0)
        snprintf(out, size,
                 "the canary value changed although the controller reports a restore from the "
                 "snapshot: the process is a new one, its memory did not come back");
    else
        snprintf(out, size, "%s (restored from %s)",
                 changed ? "the canary value changed" : "the same canary value",
                 ledger_restored_words(restored_from));
}

struct drill {
    struct cli_api *api;
    const struct cli_args *a;
    FILE *out, *err;
    const char *ns;
    char *name;
    char *uid;
    int port;
    struct canary *canary;
    char *before, *after;
    struct progress paused, resumed;
    int have_pause, have_resume;
    char failure[512];
};

static void failf(struct drill *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void failf(struct drill *d, const char *fmt, ...)
{
    if (d->failure[0])
        return; /* the first failure is the one that counts */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->failure, sizeof(d->failure), fmt, ap);
    va_end(ap);
}

static void say(struct drill *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct drill *d, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fputs("drill: ", d->out);
    text_print_clean(d->out, line);
    fputc('\n', d->out);
    fflush(d->out);
}

/* The class: that it exists, and the port its pods serve. */
static int read_class(struct drill *d)
{
    struct cli_reply r;
    if (cli_api_get(d->api, &CLI_RESOURCE_WORKSPACE_CLASSES, NULL, d->a->class_name, &r) < 0) {
        int code = cli_exit_for(r.status);
        if (r.status == -ENOENT)
            fprintf(d->err, "error: drill: --class: WorkspaceClass \"%s\" not found\n",
                    d->a->class_name);
        else {
            fprintf(d->err, "error: drill: get WorkspaceClass \"%s\": ", d->a->class_name);
            text_print_clean(d->err, r.error ? r.error : "failed");
            fputc('\n', d->err);
        }
        cli_reply_clear(&r);
        return code;
    }
    double port = fields_num(r.body, "spec.port");
    d->port = d->a->canary_port            ? d->a->canary_port
              : port >= 1 && port <= 65535 ? (int)port
                                           : DEFAULT_PORT;
    cli_reply_clear(&r);
    return CLI_EXIT_OK;
}

static int create_workspace(struct drill *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *meta = o ? cJSON_AddObjectToObject(o, "metadata") : NULL;
    cJSON *labels = meta ? cJSON_AddObjectToObject(meta, "labels") : NULL;
    cJSON *spec = labels ? cJSON_AddObjectToObject(o, "spec") : NULL;
    int ok = spec && cJSON_AddStringToObject(o, "apiVersion", WORKSPACE_API_VERSION) &&
             cJSON_AddStringToObject(o, "kind", WORKSPACE_KIND) &&
             cJSON_AddStringToObject(meta, "generateName", "drill-") &&
             cJSON_AddStringToObject(meta, "namespace", d->ns) &&
             cJSON_AddStringToObject(labels, "hibernator.dev/drill", "true") &&
             cJSON_AddStringToObject(spec, "className", d->a->class_name) &&
             cJSON_AddFalseToObject(spec, "paused");
    if (!ok) {
        cJSON_Delete(o);
        fprintf(d->err, "error: drill: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    struct cli_reply r;
    int e = cli_api_create(d->api, &CLI_RESOURCE_WORKSPACES, d->ns, o, &r);
    cJSON_Delete(o);
    if (e < 0) {
        fprintf(d->err, "error: drill: create a Workspace of class \"%s\" in namespace \"%s\": ",
                d->a->class_name, d->ns);
        text_print_clean(d->err, r.error ? r.error : "failed");
        fputc('\n', d->err);
        cli_reply_clear(&r);
        return e == -EINTR ? CLI_EXIT_INTERRUPTED : CLI_EXIT_ERROR;
    }
    struct workspace *ws = NULL;
    if (workspace_decode_lenient(r.body, &ws) == 0) {
        d->name = ws->name ? strdup(ws->name) : NULL;
        d->uid = ws->uid ? strdup(ws->uid) : NULL;
    }
    workspace_free(ws);
    cli_reply_clear(&r);
    if (!d->name || !d->uid) {
        fprintf(d->err, "error: drill: the created Workspace has no name or uid\n");
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}

/* A pod's uid, from the workspace's status.podName. */
static int pod_of(struct drill *d, const struct workspace *ws, char **ret_pod, char **ret_uid)
{
    const char *pod = ws->status.pod_name;
    if (!pod) {
        failf(d, "the workspace names no pod (status.podName)");
        return CLI_EXIT_ERROR;
    }
    struct cli_reply r;
    if (cli_api_get(d->api, &KUBE_RESOURCE_PODS, d->ns, pod, &r) < 0) {
        failf(d, "get pod %s: %s", pod, r.error ? r.error : "failed");
        int code = cli_exit_for(r.status);
        cli_reply_clear(&r);
        return code == CLI_EXIT_NOT_FOUND ? CLI_EXIT_ERROR : code;
    }
    const char *uid = fields_str(r.body, "metadata.uid");
    *ret_pod = strdup(pod);
    *ret_uid = uid ? strdup(uid) : NULL;
    cli_reply_clear(&r);
    if (!*ret_pod || !*ret_uid) {
        failf(d, "pod %s: no uid", pod);
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}

/* Reads the canary of the workspace's current pod; the application may need
 * a moment after Ready, so failures are retried until the step's deadline. */
static int read_canary(struct drill *d, const struct workspace *ws, const char *when, char **ret)
{
    char *pod = NULL, *uid = NULL;
    int code = pod_of(d, ws, &pod, &uid);
    if (code) {
        free(pod);
        free(uid);
        return code;
    }
    struct canary_target t = {d->ns, d->name, pod, uid, d->port};
    int64_t deadline = cli_api_now(d->api) + d->a->timeout_ms;
    char *last_err = NULL;
    int r;
    for (;;) {
        char *value = NULL, *why = NULL;
        r = canary_read(d->canary, &t, &value, &why);
        if (r == 0) {
            *ret = value;
            free(why);
            break;
        }
        free(last_err);
        last_err = why;
        if (r == -EINTR || cli_api_now(d->api) + CANARY_RETRY_MS >= deadline)
            break;
        if ((r = cli_api_sleep(d->api, CANARY_RETRY_MS)) < 0)
            break;
    }
    if (r == 0)
        say(d, "canary %s: %.*s%s (pod %s)", when, SHOWN_VALUE, *ret,
            strlen(*ret) > SHOWN_VALUE ? "…" : "", pod);
    else if (r != -EINTR)
        failf(d, "canary %s: %s", when, last_err ? last_err : "no answer");
    free(last_err);
    free(pod);
    free(uid);
    return r == 0 ? CLI_EXIT_OK : r == -EINTR ? CLI_EXIT_INTERRUPTED : CLI_EXIT_ERROR;
}

static int set_paused(struct drill *d, int paused, struct workspace **ret_after)
{
    struct cli_reply r;
    int e = cli_api_patch(d->api, &CLI_RESOURCE_WORKSPACES, d->ns, d->name,
                          paused ? "{\"spec\":{\"paused\":true}}" : "{\"spec\":{\"paused\":false}}",
                          &r);
    if (e < 0) {
        failf(d, "%s: %s", paused ? "pause" : "resume", r.error ? r.error : "failed");
        cli_reply_clear(&r);
        return cli_exit_for(e) == CLI_EXIT_INTERRUPTED ? CLI_EXIT_INTERRUPTED : CLI_EXIT_ERROR;
    }
    e = workspace_decode_lenient(r.body, ret_after);
    cli_reply_clear(&r);
    if (e < 0) {
        failf(d, "%s: %s", paused ? "pause" : "resume",
              e == -ENOMEM ? "out of memory" : "the answer is not a Workspace");
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}

/* One step: the request's answer in, the workspace at the goal out. */
static int step(struct drill *d, enum progress_goal goal, const struct workspace *after,
                const char *what, struct progress *p, struct workspace **ret_ws)
{
    int code = cli_follow(d->api, d->ns, d->name, goal, after, d->a->timeout_ms, what, d->out,
                          d->err, p, ret_ws);
    if (code == CLI_EXIT_TIMEOUT)
        failf(d, "%s: timed out", what);
    else if (code && code != CLI_EXIT_INTERRUPTED)
        failf(d, "%s failed", what);
    return code;
}

static int run(struct drill *d)
{
    struct workspace *after = NULL, *ws = NULL;
    struct progress start;
    char result[256];

    /* Running: the created object is the "answer" to follow from. */
    struct cli_reply r;
    if (cli_api_get(d->api, &CLI_RESOURCE_WORKSPACES, d->ns, d->name, &r) < 0) {
        failf(d, "get the new workspace: %s", r.error ? r.error : "failed");
        int code = cli_exit_for(r.status);
        cli_reply_clear(&r);
        return code == CLI_EXIT_INTERRUPTED ? code : CLI_EXIT_ERROR;
    }
    int code = workspace_decode_lenient(r.body, &after) < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
    cli_reply_clear(&r);
    if (code) {
        failf(d, "get the new workspace: out of memory");
        return code;
    }
    code = step(d, PROGRESS_RUNNING, after, "start", &start, &ws);
    workspace_free(after);
    after = NULL;
    if (code)
        return code;
    progress_result(&start, result, sizeof(result));
    const char *node = ws->status.node_name;
    say(d, "%s on %s", result, node ? node : "?");

    code = read_canary(d, ws, "before the pause", &d->before);
    workspace_free(ws);
    ws = NULL;
    if (code)
        return code;

    if ((code = set_paused(d, 1, &after)))
        return code;
    code = step(d, PROGRESS_PAUSE, after, "pause", &d->paused, &ws);
    workspace_free(after);
    after = NULL;
    if (code) {
        workspace_free(ws);
        return code;
    }
    d->have_pause = 1;
    progress_result(&d->paused, result, sizeof(result));
    say(d, "%s", result);
    /* Said before the resume: no node can restore the snapshot. */
    const struct condition *sr =
        ws ? workspace_status_condition(&ws->status, "SnapshotReady") : NULL;
    if (sr && sr->reason && strcmp(sr->reason, "NotRestorable") == 0)
        say(d, "the memory cannot come back: %s", sr->message ? sr->message : "");
    workspace_free(ws);
    ws = NULL;

    if ((code = set_paused(d, 0, &after)))
        return code;
    code = step(d, PROGRESS_RESUME, after, "resume", &d->resumed, &ws);
    workspace_free(after);
    if (code)
        return code;
    d->have_resume = 1;
    progress_result(&d->resumed, result, sizeof(result));
    say(d, "%s", result);

    code = read_canary(d, ws, "after the resume", &d->after);
    workspace_free(ws);
    return code;
}

static int on_deleted(void *data, const cJSON *ws)
{
    (void)ws;
    (void)data;
    return 0; /* keep following until DELETED */
}

/* Deletes the workspace and waits until it is gone. Returns 0 or an exit code. */
static int cleanup(struct drill *d)
{
    struct cli_reply r;
    int e = cli_api_delete(d->api, &CLI_RESOURCE_WORKSPACES, d->ns, d->name, d->uid, &r);
    if (e < 0 && e != -ENOENT) {
        fprintf(d->err, "error: drill: delete workspace %s/%s: ", d->ns, d->name);
        text_print_clean(d->err, r.error ? r.error : "failed");
        fprintf(d->err, "; delete it with: kubectl delete workspace -n %s %s\n", d->ns, d->name);
        cli_reply_clear(&r);
        return e == -EINTR ? CLI_EXIT_INTERRUPTED : CLI_EXIT_ERROR;
    }
    cli_reply_clear(&r);
    int64_t deadline = cli_api_now(d->api) + DELETE_WAIT_MS;
    e = watch_workspace(d->api, d->ns, d->name, deadline, on_deleted, NULL, NULL, NULL);
    if (e == -ENOENT) {
        say(d, "workspace %s deleted", d->name);
        return CLI_EXIT_OK;
    }
    fprintf(d->err,
            "error: drill: workspace %s/%s %s; it is being deleted — check with: kubectl get "
            "workspace -n %s %s\n",
            d->ns, d->name, e == -EINTR ? "(stopped waiting)" : "still exists after 3m", d->ns,
            d->name);
    return e == -EINTR ? CLI_EXIT_INTERRUPTED : CLI_EXIT_ERROR;
}

static void timings(struct drill *d, char *out, size_t size)
{
    char pause[TIMETEXT_SIZE] = "-", snap[TIMETEXT_SIZE] = "-", ready[TIMETEXT_SIZE] = "-";
    if (d->have_pause) {
        timetext_seconds(d->paused.seconds, pause);
        if (d->paused.snapshot_seconds >= 0)
            timetext_seconds(d->paused.snapshot_seconds, snap);
        else
            snprintf(snap, sizeof(snap), "none");
    }
    if (d->have_resume)
        timetext_seconds(d->resumed.seconds, ready);
    snprintf(out, size, "pause %s, snapshot %s, resume to ready %s", pause, snap, ready);
}

int cmd_drill(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err)
{
    struct drill d = {.api = api, .a = a, .out = out, .err = err, .ns = api->ns};
    int code = read_class(&d);
    if (code)
        return code;
    if (canary_new(api, a->canary_url, &d.canary) < 0) {
        fprintf(err, "error: drill: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    code = create_workspace(&d);
    if (code) {
        canary_free(d.canary);
        return code;
    }
    say(&d, "workspace %s/%s of class %s created", d.ns, d.name, a->class_name);

    code = run(&d);
    char t[256];
    timings(&d, t, sizeof(t));
    /* Whatever happened: the throw-away workspace goes, before the verdict;
     * a Ctrl-C so far stops the drill, not the clean-up (a second one does). */
    cli_api_acknowledge_interrupts(api);
    int cleaned = cleanup(&d);
    const char *from = d.resumed.restored_from[0] ? d.resumed.restored_from : NULL;
    int verdict_code;
    if (code == CLI_EXIT_INTERRUPTED) {
        fprintf(out, "FAIL: interrupted; %s\n", t);
        verdict_code = CLI_EXIT_INTERRUPTED;
    } else if (code) {
        fprintf(out, "FAIL: ");
        text_print_clean(out, d.failure[0] ? d.failure : "see the error above");
        fprintf(out, "; %s\n", t);
        verdict_code = CLI_EXIT_ERROR;
    } else {
        switch (drill_judge(d.before, d.after, from)) {
        case DRILL_PASS:
            fprintf(out, "PASS: memory restored (same canary value, restored from snapshot); %s\n",
                    t);
            verdict_code = CLI_EXIT_OK;
            break;
        case DRILL_COLD_START: {
            char why[256];
            drill_cold_start_why(d.before, d.after, from, why, sizeof(why));
            fprintf(out, "COLD START: %s; %s\n", why, t);
            verdict_code = CLI_EXIT_COLD_START;
            break;
        }
        default:
            fprintf(out, "FAIL: the resume came back from \"%s\"; %s\n", from ? from : "?", t);
            verdict_code = CLI_EXIT_ERROR;
            break;
        }
    }
    fflush(out);
    canary_free(d.canary);
    free(d.name);
    free(d.uid);
    free(d.before);
    free(d.after);
    if (cleaned && verdict_code == CLI_EXIT_OK)
        return cleaned;
    return verdict_code;
}
