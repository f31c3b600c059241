#include "workspace/action_failure.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int streq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static int dup_or_null(const char *s, char **ret)
{
    *ret = NULL;
    return s && !(*ret = strdup(s)) ? -ENOMEM : 0;
}

int action_failure_note(struct action_failure *f, const char *action, const char *target,
                        long http_code, const char *message, int64_t now_ms)
{
    char *a = NULL, *t = NULL, *m = NULL;
    if (dup_or_null(action ? action : "Unknown", &a) < 0 || dup_or_null(target, &t) < 0 ||
        dup_or_null(message ? message : "no answer", &m) < 0) {
        free(a);
        free(t);
        free(m);
        return -ENOMEM;
    }
    workspace_message_one_line(m);
    int same = f->count && streq(f->action, a) && streq(f->target, t);
    int64_t first = same ? f->first_failed_ms : now_ms;
    uint64_t count = same ? f->count + 1 : 1;
    action_failure_clear(f);
    *f = (struct action_failure){a, t, http_code, m, first, count};
    return 0;
}

void action_failure_clear(struct action_failure *f)
{
    if (!f)
        return;
    free(f->action);
    free(f->target);
    free(f->message);
    *f = (struct action_failure){0};
}

int action_failure_report(struct workspace_status *st, const struct action_failure *f,
                          int64_t generation, int64_t now_ms)
{
    char code[32] = "";
    if (f->http_code)
        snprintf(code, sizeof(code), " (HTTP %ld)", f->http_code);
    char *msg = NULL;
    if (asprintf(&msg, "%s%s%s: %s%s", f->action ? f->action : "Unknown", f->target ? " " : "",
                 f->target ? f->target : "", f->message ? f->message : "", code) < 0)
        return -ENOMEM;
    workspace_message_one_line(msg);
    const struct condition *c = workspace_status_condition(st, ACTION_FAILED_CONDITION);
    int same = c && c->status == COND_TRUE && streq(c->reason, f->action) &&
               streq(c->message, msg) && c->observed_generation == generation &&
               streq(st->message, msg);
    if (same) {
        free(msg);
        return 0;
    }
    /* Another action failing now: since when is its own time. */
    if (c && !streq(c->reason, f->action))
        workspace_status_remove_condition(st, ACTION_FAILED_CONDITION);
    int rc = workspace_status_set_condition(st, ACTION_FAILED_CONDITION, COND_TRUE, f->action, msg,
                                            generation, now_ms);
    if (rc == 0 && !streq(st->message, msg)) {
        free(st->message);
        st->message = msg;
        msg = NULL;
    }
    free(msg);
    return rc < 0 ? -ENOMEM : 1;
}

int action_failure_resolved(struct workspace_status *st)
{
    return workspace_status_remove_condition(st, ACTION_FAILED_CONDITION);
}
