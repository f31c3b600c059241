#include "decide_internal.h"

/* ---- building blocks ---- */

int decide_failed(struct decider *d, int rc)
{
    if (d->rc == 0)
        d->rc = rc;
    return d->rc;
}

int decide_streq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

char *decide_vformat(struct decider *d, const char *fmt, va_list ap)
{
    char *s = NULL;
    if (d->rc < 0)
        return NULL;
    if (vasprintf(&s, fmt, ap) < 0) {
        decide_failed(d, -ENOMEM);
        return NULL;
    }
    workspace_message_one_line(s);
    return s;
}

void decide_set_string(struct decider *d, char **field, const char *value)
{
    if (d->rc < 0 || decide_streq(*field, value))
        return;
    char *copy = NULL;
    if (value && !(copy = strdup(value))) {
        decide_failed(d, -ENOMEM);
        return;
    }
    free(*field);
    *field = copy;
}

struct action *decide_push(struct decider *d, enum action_type type, const char *name)
{
    if (d->rc < 0)
        return NULL;
    if (d->out->n_actions >= DECIDE_MAX_ACTIONS) {
        decide_failed(d, -E2BIG);
        return NULL;
    }
    struct action *a = &d->out->actions[d->out->n_actions];
    *a = (struct action){.type = type};
    if (name && !(a->name = strdup(name))) {
        decide_failed(d, -ENOMEM);
        return NULL;
    }
    d->out->n_actions++;
    return a;
}

void decide_delete_pod(struct decider *d, const struct workspace_pod *p, int64_t grace)
{
    struct action *a = decide_push(d, ACTION_DELETE_POD, p->name);
    if (a)
        a->grace_seconds = grace;
}

/* A delete of the pod the status names that the controller decided: the
 * status says so, and its end is no interruption (decide_note_interruption()). */
void decide_own_delete_pod(struct decider *d, const struct workspace_pod *p, int64_t grace)
{
    decide_delete_pod(d, p, grace);
    if (decide_streq(p->name, d->st->pod_name))
        decide_set_string(d, &d->st->deleted_pod, p->name);
}

static void vevent(struct decider *d, const char *occasion, const char *type, const char *reason,
                   const char *fmt, va_list ap)
{
    char *msg = decide_vformat(d, fmt, ap);
    struct action *a = msg ? decide_push(d, ACTION_EVENT, NULL) : NULL;
    if (!a) {
        free(msg);
        return;
    }
    a->event_type = type;
    a->message = msg;
    if (!(a->reason = strdup(reason)) || (occasion && !(a->occasion = strdup(occasion))))
        decide_failed(d, -ENOMEM);
}

void decide_event(struct decider *d, const char *type, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vevent(d, NULL, type, reason, fmt, ap);
    va_end(ap);
}

/* An Event for a transition the status counts or names (the pause, the
 * resume, a snapshot attempt, a pod): decided again after a crash before the
 * status write, it has the same occasion, and the shell posts it once. */

void decide_transition_event(struct decider *d, const char *occasion, const char *type,
                             const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vevent(d, occasion, type, reason, fmt, ap);
    va_end(ap);
}

const char *decide_pause_occasion(const struct decider *d, char *buf)
{
    snprintf(buf, OCCASION_SIZE, "pause-%lld", (long long)d->st->pauses);
    return buf;
}

const char *decide_resume_occasion(const struct decider *d, char *buf)
{
    snprintf(buf, OCCASION_SIZE, "resume-%lld", (long long)d->st->resumes);
    return buf;
}

const char *decide_pod_occasion(const char *pod_name, char *buf)
{
    snprintf(buf, OCCASION_SIZE, "pod-%s", pod_name ? pod_name : "");
    return buf;
}

void decide_condition(struct decider *d, const char *type, enum condition_status status,
                      const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = decide_vformat(d, fmt, ap);
    va_end(ap);
    if (!msg)
        return;
    if (workspace_status_set_condition(d->st, type, status, reason, msg, d->ws->generation,
                                       d->now) < 0)
        decide_failed(d, -ENOMEM);
    free(msg);
}

const char *decide_condition_reason(const struct workspace_status *s, const char *type)
{
    const struct condition *c = workspace_status_condition(s, type);
    return c ? c->reason : NULL;
}

int64_t grace_seconds(const struct decider *d)
{
    return d->cls ? d->cls->pause_grace_seconds : DEFAULT_GRACE_SECONDS;
}

int64_t decide_pod_grace(const struct decider *d, const struct workspace_pod *p)
{
    return grace_seconds(d) + p->prestop_sleep_s;
}

/* A pause is open from the pass that counts it until the resume that
 * follows; counting both keeps this true across restarts and stale states. */
int decide_in_pause(const struct workspace_status *s)
{
    return s->pauses > s->resumes;
}

/* A resume is in progress from its request until its pod is first ready. */
int decide_resume_in_progress(const struct workspace_status *s)
{
    return s->last_resume->requested_ms != 0 && s->last_resume->ready_ms == 0;
}

const char *decide_node_or_unknown(const struct workspace_pod *p)
{
    return p->node_name ? p->node_name : "an unknown node";
}

int decide_pod_is_scheduled(const struct workspace_pod *p)
{
    return p->scheduled || (p->node_name && p->node_name[0]);
}

int decide_pod_has_stopped(const struct workspace_pod *p)
{
    return p->phase && (strcmp(p->phase, "Failed") == 0 || strcmp(p->phase, "Succeeded") == 0);
}

/* The n of the workspace's pod name, or -1 when it is not one. */
int64_t pod_generation_of(const struct workspace *ws, const char *pod_name)
{
    return names_pod_generation(ws->name, pod_name);
}

void decide_format_duration(int64_t ms, char *out, size_t size)
{
    /* Whole seconds read better than "29m59s999ms". */
    if (ms >= 1000)
        ms -= ms % 1000;
    if (duration_format_ms(ms < 0 ? 0 : ms, out, size) < 0)
        snprintf(out, size, "%llds", (long long)(ms / 1000));
}

/* product: what the pod has or asks for (NULL: not known yet); fallback:
 * the pod is a capacity fallback. */
void decide_set_accelerator(struct decider *d, const char *product, int fallback)
{
    const struct workspace_class *c = d->cls;
    int has = c && c->has_accelerator;
    decide_set_string(d, &d->st->accelerator_resource, has ? c->accelerator_resource : NULL);
    decide_set_string(d, &d->st->accelerator_product, has ? product : NULL);
    d->st->accelerator_count = has ? c->accelerator_count : 0;
    d->st->accelerator_fallback = has && fallback;
}

/* The products the class allows, its own first, joined by sep. */
void decide_allowed_products(const struct workspace_class *c, const char *sep, char *out,
                             size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; c && c->has_accelerator && i <= c->n_alternative_products; i++) {
        const char *p = i == 0 ? c->product : c->alternative_products[i - 1];
        int w = snprintf(out + used, size - used, "%s%s", i ? sep : "", p);
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
    }
}

/* The product label's value on a node, when the node cache knows it. */
const struct decide_node *decide_node_of(const struct decider *d, const char *node)
{
    for (size_t i = 0; node && i < d->in->n_nodes; i++)
        if (decide_streq(d->in->nodes[i].name, node))
            return &d->in->nodes[i];
    return NULL;
}

static const char *node_product(const struct decider *d, const char *node)
{
    const struct decide_node *n = decide_node_of(d, node);
    return n ? n->product : NULL;
}

/* The accelerator product pod p has: its node's product label once the
 * node cache knows it; until then the product the pod is pinned to, NULL
 * for a capacity fallback (it may get any the class allows). */
const char *decide_pod_product(const struct decider *d, const struct workspace_pod *p)
{
    const struct workspace_class *c = d->cls;
    if (!c || !c->has_accelerator)
        return NULL;
    const char *on_node = decide_pod_is_scheduled(p) ? node_product(d, p->node_name) : NULL;
    if (on_node)
        return on_node;
    if (p->capacity_fallback)
        return NULL;
    /* A restore is pinned to its snapshot's product. */
    const struct workspace_snapshot *sn = d->old->snapshot;
    if (p->snapshot && sn->gpu_product && (decide_streq(p->snapshot, sn->name) || !sn->name))
        return sn->gpu_product;
    return c->product;
}

const char *decide_memory_words(const struct workspace_class *c)
{
    return c && c->has_accelerator ? "memory and GPU state" : "memory";
}

/* onCapacityTimeout FallBack applies (the decoder makes sure there is
 * something to fall back to; a class read otherwise waits). */
int decide_falls_back(const struct workspace_class *c)
{
    return c && c->on_capacity_timeout == CAPACITY_TIMEOUT_FALL_BACK && c->has_accelerator &&
           c->n_alternative_products > 0;
}
