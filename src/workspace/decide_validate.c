#include "decide_internal.h"

/* ---- rule 2: validation ---- */

static void invalid(struct decider *d, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void invalid(struct decider *d, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    d->invalid_message = decide_vformat(d, fmt, ap);
    va_end(ap);
    d->invalid_reason = reason;
}

static void validate_image(struct decider *d)
{
    const struct workspace_class *c = d->cls;
    if (!d->ws->image || workspace_class_allows_image(c, d->ws->image))
        return;
    size_t len = 1;
    for (size_t i = 0; i < c->n_allowed_images; i++)
        len += strlen(c->allowed_images[i]) + 2;
    char *list = calloc(1, len);
    if (!list) {
        decide_failed(d, -ENOMEM);
        return;
    }
    for (size_t i = 0; i < c->n_allowed_images; i++) {
        if (i)
            strcat(list, ", ");
        strcat(list, c->allowed_images[i]);
    }
    invalid(d, WS_REASON_IMAGE_NOT_ALLOWED,
            "spec.image: \"%s\" is not allowed by class \"%s\" (allowed: %s)", d->ws->image,
            c->name, list);
    free(list);
}

/* The LocalQueue a workspace names is one its class allows: the queue (and
 * with it the team's quota) is the class's to grant. */
static void validate_queue(struct decider *d)
{
    const struct workspace_class *c = d->cls;
    const char *q = d->ws->local_queue;
    if (!q || workspace_class_allows_queue(c, q))
        return;
    if (!c->queue.local_queue) {
        invalid(d, WS_REASON_QUEUE_NOT_ALLOWED,
                "spec.localQueue: \"%s\": class \"%s\" sends its pods to no queue (it has no "
                "spec.queue)",
                q, c->name);
        return;
    }
    char list[MAX_MESSAGE / 2];
    snprintf(list, sizeof(list), "%s", c->queue.local_queue);
    for (size_t i = 0; i < c->queue.n_allowed && strlen(list) < sizeof(list) - 70; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), ", %s", c->queue.allowed[i]);
    invalid(d, WS_REASON_QUEUE_NOT_ALLOWED,
            "spec.localQueue: \"%s\" is not a queue class \"%s\" allows (allowed: %s)", q, c->name,
            list);
}

static void validate_home(struct decider *d)
{
    const char *size = d->ws->home_size;
    int64_t bytes;
    if (!size)
        return;
    if (quantity_parse_bytes(size, &bytes) < 0 || bytes <= 0)
        invalid(d, WS_REASON_INVALID_HOME_SIZE,
                "spec.home.size: \"%s\" is not a size such as \"20Gi\"", size);
    else if (bytes > d->cls->home_max_bytes)
        invalid(d, WS_REASON_HOME_TOO_LARGE,
                "spec.home.size: %s is larger than the class maximum %s", size,
                d->cls->home_max_size ? d->cls->home_max_size : d->cls->home_size);
}

static void validate_env(struct decider *d)
{
    const struct workspace *ws = d->ws;
    for (size_t i = 0; i < ws->n_env; i++) {
        const char *name = ws->env[i].name;
        if (strncmp(name, RESERVED_ENV_PREFIX, strlen(RESERVED_ENV_PREFIX)) == 0) {
            invalid(
                d, WS_REASON_RESERVED_ENV,
                "spec.env[%zu].name: \"%s\" is reserved: names starting with " RESERVED_ENV_PREFIX
                " are set by the controller",
                i, name);
            return;
        }
        if (d->cls->checkpoint_env && strcmp(name, d->cls->checkpoint_env) == 0) {
            invalid(d, WS_REASON_RESERVED_ENV,
                    "spec.env[%zu].name: \"%s\" is reserved: class \"%s\" passes the checkpoint "
                    "path in it",
                    i, name, d->cls->name);
            return;
        }
    }
}

/* The spec or the class could not be read at all: report it, and touch
 * nothing (not even a pause the spec may ask for: what was asked cannot be
 * known). */
int decide_unreadable(struct decider *d)
{
    if (d->ws->spec_error) {
        invalid(d, WS_REASON_INVALID_SPEC, "%s", d->ws->spec_error);
        return 1;
    }
    if (d->in->class_error) {
        invalid(d, WS_REASON_INVALID_CLASS,
                "spec.className: WorkspaceClass \"%s\" cannot be used: %s",
                d->ws->class_name ? d->ws->class_name : "", d->in->class_error);
        return 1;
    }
    return 0;
}

int decide_class_not_yet_seen(const struct decider *d)
{
    const struct workspace *ws = d->ws;
    return !d->cls && !d->in->class_error && ws->created_ms && d->now >= ws->created_ms &&
           d->now - ws->created_ms < CLASS_GRACE_MS &&
           !workspace_status_condition(d->old, WS_COND_VALID);
}

void decide_validate(struct decider *d)
{
    const struct workspace *ws = d->ws;
    if (!d->cls) {
        invalid(d, WS_REASON_CLASS_NOT_FOUND, "spec.className: WorkspaceClass \"%s\" not found",
                ws->class_name);
        return;
    }
    /* The name is a label value on everything the workspace owns. */
    if (strlen(ws->name) > MAX_LABEL_VALUE) {
        invalid(d, WS_REASON_NAME_TOO_LONG,
                "metadata.name: \"%s\" is longer than %d characters, the limit of a label value",
                ws->name, MAX_LABEL_VALUE);
        return;
    }
    validate_image(d);
    if (!d->invalid_reason)
        validate_queue(d);
    if (!d->invalid_reason)
        validate_home(d);
    if (!d->invalid_reason)
        validate_env(d);
}
