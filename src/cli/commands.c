#include "cli/commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/describe.h"
#include "cli/exit.h"
#include "cli/list.h"
#include "cli/report.h"
#include "cli/table.h"
#include "cli/timetext.h"
#include "cli/watch.h"
#include "cli/whatif.h"
#include "controller/activity_log.h"
#include "kube/resource.h"
#include "util/clock.h"
#include "util/timefmt.h"

int cli_exit_for(int status)
{
    if (status == -ENOENT)
        return CLI_EXIT_NOT_FOUND;
    if (status == -EINTR)
        return CLI_EXIT_INTERRUPTED;
    return status < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

static int request_failed(FILE *err, const struct cli_reply *r, const char *what, const char *name,
                          const char *ns)
{
    if (r->status == -ENOENT && name)
        fprintf(err, "error: workspace \"%s\" not found in namespace \"%s\"\n", name, ns);
    else if (r->status == -ENOENT)
        fprintf(err,
                "error: %s: the Workspace API (hibernator.dev/v1alpha1) is not installed in this "
                "cluster\n",
                what);
    else if (r->status == -EINTR)
        fprintf(err, "error: %s: interrupted\n", what);
    else {
        fprintf(err, "error: %s: ", what);
        text_print_clean(err, r->error ? r->error : "failed");
        fputc('\n', err);
    }
    return cli_exit_for(r->status);
}

static const char *ns_words(const struct cli_args *a, const struct cli_api *api)
{
    return a->all_namespaces ? NULL : api->ns;
}

/* ---- list ------------------------------------------------------------------ */

int cmd_list(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err)
{
    struct cli_reply r;
    const char *ns = ns_words(a, api);
    if (cli_api_list_all(api, &CLI_RESOURCE_WORKSPACES, ns, NULL, &r) < 0) {
        int code = request_failed(err, &r, "list workspaces", NULL, api->ns);
        cli_reply_clear(&r);
        return code;
    }
    int n = list_print(r.body, a->all_namespaces, clock_unix_ms(), out);
    cli_reply_clear(&r);
    if (n < 0) {
        fprintf(err, "error: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    if (n == 0) {
        if (ns)
            fprintf(err, "No workspaces found in namespace %s.\n", ns);
        else
            fprintf(err, "No workspaces found.\n");
    }
    return CLI_EXIT_OK;
}

/* ---- following a pause or resume ------------------------------------------ */

struct follow {
    struct progress *p;
    struct cli_api *api;
    FILE *out;
    int tty;
    int64_t wall_start; /* progress works in wall-clock ms, like the status */
    int64_t mono_start;
    int ticks;
    int shown_phase;        /* the phase of the line on screen, -1 before the first */
    struct workspace *last; /* the newest state seen, when the caller wants it */
    int keep_last;
    int oom;
    char line[768];
};

static int64_t follow_now(struct follow *f)
{
    return f->wall_start + (cli_api_now(f->api) - f->mono_start);
}

static void show(struct follow *f)
{
    progress_line(f->p, follow_now(f), f->line, sizeof(f->line));
    if (f->tty) {
        /* A new phase keeps the last one's line; within a phase the line
         * is rewritten with the elapsed time. */
        if (f->shown_phase >= 0 && f->shown_phase != (int)f->p->phase)
            fputc('\n', f->out);
        f->shown_phase = (int)f->p->phase;
        fputs("\r\033[K", f->out);
        text_print_clean(f->out, f->line);
    } else {
        text_print_clean(f->out, f->line);
        fputc('\n', f->out);
    }
    fflush(f->out);
}

static int on_change(void *data, const cJSON *obj)
{
    struct follow *f = data;
    struct workspace *ws = NULL;
    int r = workspace_decode_lenient(obj, &ws);
    if (r == -EINVAL) /* not an object: nothing to judge */
        return 0;
    if (r < 0) {
        f->oom = 1;
        return 1;
    }
    if (progress_observe(f->p, ws, follow_now(f)) && f->p->phase != PROGRESS_DONE &&
        f->p->phase != PROGRESS_FAILED)
        show(f);
    if (f->keep_last) {
        workspace_free(f->last);
        f->last = ws;
    } else {
        workspace_free(ws);
    }
    return f->p->phase == PROGRESS_DONE || f->p->phase == PROGRESS_FAILED;
}

static void on_tick(void *data)
{
    struct follow *f = data;
    /* Ticks come every 250 ms: a new elapsed time each second. */
    if (f->tty && ++f->ticks % 4 == 0)
        show(f);
}

int cli_follow(struct cli_api *api, const char *ns, const char *name, enum progress_goal goal,
               const struct workspace *after, int64_t timeout_ms, const char *what, FILE *out,
               FILE *err, struct progress *p, struct workspace **ret_ws)
{
    struct follow f = {.p = p,
                       .api = api,
                       .out = out,
                       .tty = isatty(fileno(out)),
                       .shown_phase = -1,
                       .keep_last = ret_ws != NULL};
    f.wall_start = clock_unix_ms();
    f.mono_start = cli_api_now(api);
    progress_begin(p, goal, after, f.wall_start);
    show(&f);
    char *why = NULL;
    int r = watch_workspace(api, ns, name, f.mono_start + timeout_ms, on_change, on_tick, &f, &why);
    if (f.tty) {
        fputs("\r\033[K", out);
        fflush(out);
    }
    int code = CLI_EXIT_OK;
    if (f.oom) {
        fprintf(err, "error: %s: out of memory\n", what);
        code = CLI_EXIT_ERROR;
    } else if (r == 0 && p->phase == PROGRESS_FAILED) {
        fprintf(err, "error: %s: workspace \"%s\" failed: ", what, name);
        text_print_clean(err, p->detail[0] ? p->detail : "(no message)");
        fputc('\n', err);
        code = CLI_EXIT_ERROR;
    } else if (r == -ETIMEDOUT) {
        char t[TIMETEXT_SIZE];
        timetext_age(timeout_ms, t);
        progress_line(p, follow_now(&f), f.line, sizeof(f.line));
        fprintf(err, "error: %s: timed out after %s; last seen: ", what, t);
        text_print_clean(err, f.line);
        fputc('\n', err);
        code = CLI_EXIT_TIMEOUT;
    } else if (r == -ENOENT) {
        fprintf(err, "error: %s: workspace \"%s\" was deleted\n", what, name);
        code = CLI_EXIT_ERROR;
    } else if (r == -EINTR) {
        fprintf(err, "error: %s: interrupted\n", what);
        code = CLI_EXIT_INTERRUPTED;
    } else if (r < 0) {
        fprintf(err, "error: %s: ", what);
        text_print_clean(err, why ? why : "out of memory");
        fputc('\n', err);
        code = CLI_EXIT_ERROR;
    }
    free(why);
    if (ret_ws && code == CLI_EXIT_OK)
        *ret_ws = f.last;
    else
        workspace_free(f.last);
    return code;
}

/* ---- pause and resume --------------------------------------------------------- */

static int get_workspace(struct cli_api *api, const char *name, const char *what, FILE *err,
                         cJSON **ret)
{
    struct cli_reply r;
    if (cli_api_get(api, &CLI_RESOURCE_WORKSPACES, api->ns, name, &r) < 0) {
        int code = request_failed(err, &r, what, name, api->ns);
        cli_reply_clear(&r);
        return code;
    }
    *ret = r.body;
    r.body = NULL;
    cli_reply_clear(&r);
    return CLI_EXIT_OK;
}

static int patch_workspace(struct cli_api *api, const char *name, const char *patch,
                           const char *what, FILE *err, cJSON **ret)
{
    struct cli_reply r;
    if (cli_api_patch(api, &CLI_RESOURCE_WORKSPACES, api->ns, name, patch, &r) < 0) {
        int code = request_failed(err, &r, what, name, api->ns);
        cli_reply_clear(&r);
        return code;
    }
    *ret = r.body;
    r.body = NULL;
    cli_reply_clear(&r);
    return CLI_EXIT_OK;
}

static const char *state_of(const struct workspace *ws)
{
    const char *s = workspace_state_name(ws->status.state);
    return *s ? s : "not reconciled yet";
}

/* A Workspace the API server answered with, as the controller reads it. */
static int decoded(cJSON *obj, const char *what, FILE *err, struct workspace **ret)
{
    int r = workspace_decode_lenient(obj, ret);
    cJSON_Delete(obj);
    if (r < 0) {
        fprintf(err, "error: %s: %s\n", what,
                r == -ENOMEM ? "out of memory" : "the answer is not a Workspace");
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}

static int set_paused(struct cli_api *api, const struct cli_args *a, int paused, FILE *out,
                      FILE *err)
{
    const char *what = paused ? "pause" : "resume";
    cJSON *obj = NULL;
    struct workspace *ws = NULL, *after = NULL;
    int code = get_workspace(api, a->name, what, err, &obj);
    if (code || (code = decoded(obj, what, err, &ws)))
        return code;
    const char *state = state_of(ws);
    enum workspace_state st = ws->status.state;
    int already = ws->paused == paused;
    if (already && paused && st == WS_STATE_PAUSED) {
        fprintf(out, "workspace \"%s\" is already paused\n", a->name);
        workspace_free(ws);
        return CLI_EXIT_OK;
    }
    /* Not paused and no resume under way: nothing to resume. */
    if (already && !paused && st != WS_STATE_RESUMING && st != WS_STATE_WAITING_FOR_CAPACITY &&
        st != WS_STATE_QUEUED && st != WS_STATE_PAUSING) {
        fprintf(out, "workspace \"%s\" is not paused (state %s)\n", a->name, state);
        workspace_free(ws);
        return CLI_EXIT_OK;
    }
    if (already) {
        /* Asked for before and on its way: nothing to change, perhaps to follow. */
        fprintf(out, "workspace \"%s\": %s already requested (state %s)\n", a->name, what, state);
        after = ws;
        ws = NULL;
    } else {
        workspace_free(ws);
        code = patch_workspace(
            api, a->name, paused ? "{\"spec\":{\"paused\":true}}" : "{\"spec\":{\"paused\":false}}",
            what, err, &obj);
        if (code || (code = decoded(obj, what, err, &after)))
            return code;
        fprintf(out, "workspace \"%s\": %s requested\n", a->name, what);
    }
    fflush(out);
    if (a->wait) {
        struct progress p;
        code = cli_follow(api, api->ns, a->name, paused ? PROGRESS_PAUSE : PROGRESS_RESUME, after,
                          a->timeout_ms, what, out, err, &p, NULL);
        if (code == CLI_EXIT_OK) {
            char result[256];
            progress_result(&p, result, sizeof(result));
            fprintf(out, "%s\n", result);
        }
    }
    workspace_free(after);
    return code;
}

int cmd_pause(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err)
{
    return set_paused(api, a, 1, out, err);
}

int cmd_resume(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err)
{
    return set_paused(api, a, 0, out, err);
}

/* ---- keep-alive --------------------------------------------------------------- */

int cmd_keep_alive(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err)
{
    char patch[128];
    char t[TIMEFMT_RFC3339_SIZE];
    if (a->until_clear) {
        snprintf(patch, sizeof(patch), "{\"spec\":{\"keepAliveUntil\":null}}");
    } else {
        timefmt_rfc3339_text(a->until_ms, t);
        snprintf(patch, sizeof(patch), "{\"spec\":{\"keepAliveUntil\":\"%s\"}}", t);
    }
    cJSON *obj = NULL;
    struct workspace *after = NULL;
    int code = patch_workspace(api, a->name, patch, "keep-alive", err, &obj);
    if (code || (code = decoded(obj, "keep-alive", err, &after)))
        return code;
    if (a->until_clear) {
        fprintf(out, "workspace \"%s\": keep-alive removed\n", a->name);
    } else {
        char in[TIMETEXT_SIZE];
        /* To the nearest second: "--until 2h" reads "in 120m", not "in 119m". */
        int64_t left = a->until_ms - clock_unix_ms();
        timetext_age((left + 500) / 1000 * 1000, in);
        fprintf(out, "workspace \"%s\": no automatic pause before %s (in %s)\n", a->name, t, in);
        if (after->paused)
            fprintf(out, "note: the workspace is paused; the keep-alive applies once it runs\n");
    }
    workspace_free(after);
    return CLI_EXIT_OK;
}

/* ---- describe ----------------------------------------------------------------- */

int cmd_describe(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err)
{
    cJSON *ws = NULL;
    int code = get_workspace(api, a->name, "describe", err, &ws);
    if (code)
        return code;
    char selector[320];
    snprintf(selector, sizeof(selector), "involvedObject.kind=%s,involvedObject.name=%s",
             WORKSPACE_KIND, a->name);
    struct kube_list_options o = {.field_selector = selector};
    struct cli_reply ev;
    cJSON *events = NULL;
    if (cli_api_list_all(api, &KUBE_RESOURCE_EVENTS, api->ns, &o, &ev) == 0) {
        events = ev.body;
        ev.body = NULL;
    } else if (ev.status == -EINTR) {
        cli_reply_clear(&ev);
        cJSON_Delete(ws);
        return CLI_EXIT_INTERRUPTED;
    }
    cli_reply_clear(&ev);
    int r = describe_print(ws, events, clock_unix_ms(), out);
    cJSON_Delete(events);
    cJSON_Delete(ws);
    if (r < 0) {
        fprintf(err, "error: describe: %s\n",
                r == -ENOMEM ? "out of memory" : "the answer is not a Workspace");
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}

/* ---- report ------------------------------------------------------------------- */

int cmd_report(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err)
{
    struct cli_reply r;
    const char *ns = ns_words(a, api);
    if (cli_api_list_all(api, &CLI_RESOURCE_WORKSPACES, ns, NULL, &r) < 0) {
        int code = request_failed(err, &r, "report", NULL, api->ns);
        cli_reply_clear(&r);
        return code;
    }
    struct report *rep = NULL;
    int e = report_compute(r.body, a->from_ms, a->to_ms, clock_unix_ms(), &rep);
    cli_reply_clear(&r);
    if (e == 0) {
        if (rep->n_groups == 0 && a->output == CLI_OUTPUT_TABLE) {
            if (ns)
                fprintf(err, "No workspaces found in namespace %s.\n", ns);
            else
                fprintf(err, "No workspaces found.\n");
        } else {
            e = report_print(rep, a->output, out, err);
        }
    }
    report_free(rep);
    if (e < 0) {
        fprintf(err, "error: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}

/* ---- what-if ------------------------------------------------------------------ */

int cmd_what_if(struct cli_api *api, const struct cli_args *a, FILE *out, FILE *err)
{
    const char *ns = ns_words(a, api);
    struct cli_reply ws, classes, records;
    struct kube_list_options by_label = {.label_selector = ACTIVITY_LOG_LABEL};
    if (cli_api_list_all(api, &CLI_RESOURCE_WORKSPACES, ns, NULL, &ws) < 0) {
        int code = request_failed(err, &ws, "what-if", NULL, api->ns);
        cli_reply_clear(&ws);
        return code;
    }
    if (cli_api_list_all(api, &CLI_RESOURCE_WORKSPACE_CLASSES, NULL, NULL, &classes) < 0) {
        int code = request_failed(err, &classes, "what-if", NULL, api->ns);
        cli_reply_clear(&ws);
        cli_reply_clear(&classes);
        return code;
    }
    if (cli_api_list_all(api, &KUBE_RESOURCE_CONFIGMAPS, ns, &by_label, &records) < 0) {
        int code = request_failed(err, &records, "what-if", NULL, api->ns);
        cli_reply_clear(&ws);
        cli_reply_clear(&classes);
        cli_reply_clear(&records);
        return code;
    }
    struct whatif *w = NULL;
    int e = whatif_compute(ws.body, classes.body, records.body, clock_unix_ms(), NULL, &w);
    cli_reply_clear(&ws);
    cli_reply_clear(&classes);
    cli_reply_clear(&records);
    if (e == 0) {
        if (w->rows[0].workspaces == 0 && a->output == CLI_OUTPUT_TABLE)
            fprintf(err, "No activity records found%s%s.\n", ns ? " in namespace " : "",
                    ns ? ns : "");
        e = whatif_print(w, a->output, out, err);
    }
    whatif_free(w);
    if (e < 0) {
        fprintf(err, "error: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}
