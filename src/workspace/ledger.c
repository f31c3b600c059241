#include "workspace/ledger.h"

#include <string.h>

static int streq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

int ledger_awaits_taker(const struct workspace_status *s, int64_t now_ms)
{
    const struct workspace_pause_timeline *lp = &s->last_pause;
    return s->pauses > s->resumes && lp->accelerator_released_ms && lp->node_name &&
           lp->node_name[0] && s->accelerator_resource && s->accelerator_resource[0] &&
           !lp->accelerator_taken_ms && now_ms < lp->accelerator_released_ms + LEDGER_WATCH_MS;
}

int ledger_awaits_node_removal(const struct workspace_status *s, int64_t now_ms)
{
    const struct workspace_pause_timeline *lp = &s->last_pause;
    return s->pauses > s->resumes && lp->accelerator_released_ms && lp->node_name &&
           lp->node_name[0] && !lp->node_removed_ms &&
           now_ms < lp->accelerator_released_ms + LEDGER_WATCH_MS;
}

/* p was scheduled before q (q NULL: nothing yet). */
static int earlier(const struct workspace_pod *p, const struct workspace_pod *q)
{
    if (!q)
        return 1;
    if (p->scheduled_ms != q->scheduled_ms)
        return p->scheduled_ms < q->scheduled_ms;
    int c = strcmp(p->ns ? p->ns : "", q->ns ? q->ns : "");
    return c ? c < 0 : strcmp(p->name ? p->name : "", q->name ? q->name : "") < 0;
}

const struct workspace_pod *ledger_taker_pick(const struct workspace *ws, int64_t now_ms,
                                              const struct workspace_pod *best,
                                              const struct workspace_pod *p)
{
    const struct workspace_status *s = &ws->status;
    const struct workspace_pause_timeline *lp = &s->last_pause;
    if (!p || !p->name || !ledger_awaits_taker(s, now_ms))
        return best;
    if (streq(p->ns, ws->ns) && streq(p->workspace, ws->name))
        return best; /* its own next pod */
    if (!streq(p->node_name, lp->node_name) || !workspace_pod_requests(p, s->accelerator_resource))
        return best;
    /* Pod times have whole seconds; the release began with the delete. */
    int64_t from = lp->pod_deleted_ms ? lp->pod_deleted_ms : lp->accelerator_released_ms;
    from -= from % 1000;
    if (!p->scheduled_ms || p->scheduled_ms < from)
        return best;
    return earlier(p, best) ? p : best;
}
