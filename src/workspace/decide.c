#include "workspace/decide.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/duration.h"
#include "util/timefmt.h"
#include "workspace/ledger.h"
#include "workspace/names.h"

/* The rules are written out, with a table, in docs/state-machine.md; the
 * comments here point at them by number. */

#define COND_VALID "Valid"
#define COND_READY "Ready"
#define COND_CAPACITY "CapacityAvailable"
#define COND_RESTORED "Restored"
#define COND_HOME "Home"

#define RESERVED_ENV_PREFIX "HIBERNATOR_"
#define MAX_LABEL_VALUE 63
/* Grace for pods of a workspace whose class is gone: Kubernetes' default. */
#define DEFAULT_GRACE_SECONDS 30
/* Extra pods (duplicates, stopped ones) deleted per pass: the rest go in the
 * next pass, which the deletions themselves trigger. */
#define MAX_EXTRA_DELETES 3
/* Messages are one line of bounded length: a scheduler message naming every
 * node of a large cluster must not bloat the status. */
#define MAX_MESSAGE WORKSPACE_MESSAGE_MAX
#define COND_SNAPSHOT "SnapshotReady"
#define COND_IDLE "Idle"
#define COND_PROBE "ActivityProbe"
#define COND_IDLE_POLICY "IdlePolicy"
/* status.activity is a record for people, not the input of the next
 * decision (the probe results in memory are): lastActivityTime moves when it
 * advanced by this much, lastProbeTime when the result changed or it is this
 * old, so a busy workspace costs about one status write a minute. */
#define ACTIVITY_RECORD_STEP_MS (60 * 1000)
#define PROBE_RECORD_STEP_MS (5 * 60 * 1000)
/* A class's products in a message: at most 9 label values of 63 characters. */
#define PRODUCTS_TEXT 640
/* A snapshot backend that cannot say yet (its caches are syncing) is asked
 * again this soon. */
#define SNAPSHOT_UNKNOWN_RECHECK_MS 1000

struct decider {
    const struct decide_input *in;
    const struct workspace *ws;
    const struct workspace_class *cls;
    const struct workspace_status *old;
    struct workspace_status *st; /* the output status */
    struct decide_output *out;
    int64_t now;
    int rc; /* first error; everything below is a no-op after it */

    /* The pods, sorted out (rule 4). */
    const struct workspace_pod *keep;    /* the live pod, or NULL */
    const struct workspace_pod *leaving; /* a terminating or stopped pod, or NULL */
    size_t n_leaving;

    /* The spec changed after a capacity timeout failed the workspace. */
    int retry;

    /* Validation (rule 2): NULL reason when valid. */
    const char *invalid_reason;
    char *invalid_message;
};

/* ---- building blocks ---- */

static int failed(struct decider *d, int rc)
{
    if (d->rc == 0)
        d->rc = rc;
    return d->rc;
}

static int streq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static char *vformat(struct decider *d, const char *fmt, va_list ap)
{
    char *s = NULL;
    if (d->rc < 0)
        return NULL;
    if (vasprintf(&s, fmt, ap) < 0) {
        failed(d, -ENOMEM);
        return NULL;
    }
    workspace_message_one_line(s);
    return s;
}

static void set_string(struct decider *d, char **field, const char *value)
{
    if (d->rc < 0 || streq(*field, value))
        return;
    char *copy = NULL;
    if (value && !(copy = strdup(value))) {
        failed(d, -ENOMEM);
        return;
    }
    free(*field);
    *field = copy;
}

static struct action *push(struct decider *d, enum action_type type, const char *name)
{
    if (d->rc < 0)
        return NULL;
    if (d->out->n_actions >= DECIDE_MAX_ACTIONS) {
        failed(d, -E2BIG);
        return NULL;
    }
    struct action *a = &d->out->actions[d->out->n_actions];
    *a = (struct action){.type = type};
    if (name && !(a->name = strdup(name))) {
        failed(d, -ENOMEM);
        return NULL;
    }
    d->out->n_actions++;
    return a;
}

static void delete_pod(struct decider *d, const struct workspace_pod *p, int64_t grace)
{
    struct action *a = push(d, ACTION_DELETE_POD, p->name);
    if (a)
        a->grace_seconds = grace;
}

/* A delete of the pod the status names that the controller decided: the
 * status says so, and its end is no interruption (note_interruption()). */
static void own_delete_pod(struct decider *d, const struct workspace_pod *p, int64_t grace)
{
    delete_pod(d, p, grace);
    if (streq(p->name, d->st->pod_name))
        set_string(d, &d->st->deleted_pod, p->name);
}

static void vevent(struct decider *d, const char *occasion, const char *type, const char *reason,
                   const char *fmt, va_list ap)
{
    char *msg = vformat(d, fmt, ap);
    struct action *a = msg ? push(d, ACTION_EVENT, NULL) : NULL;
    if (!a) {
        free(msg);
        return;
    }
    a->event_type = type;
    a->message = msg;
    if (!(a->reason = strdup(reason)) || (occasion && !(a->occasion = strdup(occasion))))
        failed(d, -ENOMEM);
}

static void event(struct decider *d, const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void event(struct decider *d, const char *type, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vevent(d, NULL, type, reason, fmt, ap);
    va_end(ap);
}

/* An Event for a transition the status counts or names (the pause, the
 * resume, a snapshot attempt, a pod): decided again after a crash before the
 * status write, it has the same occasion, and the shell posts it once. */
static void transition_event(struct decider *d, const char *occasion, const char *type,
                             const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void transition_event(struct decider *d, const char *occasion, const char *type,
                             const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vevent(d, occasion, type, reason, fmt, ap);
    va_end(ap);
}

/* "pause-<n>", "resume-<n>", "pod-<name>": the occasions of transition_event(). */
#define OCCASION_SIZE 300

static const char *pause_occasion(const struct decider *d, char *buf)
{
    snprintf(buf, OCCASION_SIZE, "pause-%lld", (long long)d->st->pauses);
    return buf;
}

static const char *resume_occasion(const struct decider *d, char *buf)
{
    snprintf(buf, OCCASION_SIZE, "resume-%lld", (long long)d->st->resumes);
    return buf;
}

static const char *pod_occasion(const char *pod_name, char *buf)
{
    snprintf(buf, OCCASION_SIZE, "pod-%s", pod_name ? pod_name : "");
    return buf;
}

static void condition(struct decider *d, const char *type, enum condition_status status,
                      const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void condition(struct decider *d, const char *type, enum condition_status status,
                      const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = vformat(d, fmt, ap);
    va_end(ap);
    if (!msg)
        return;
    if (workspace_status_set_condition(d->st, type, status, reason, msg, d->ws->generation,
                                       d->now) < 0)
        failed(d, -ENOMEM);
    free(msg);
}

static const char *condition_reason(const struct workspace_status *s, const char *type)
{
    const struct condition *c = workspace_status_condition(s, type);
    return c ? c->reason : NULL;
}

static int64_t grace_seconds(const struct decider *d)
{
    return d->cls ? d->cls->pause_grace_seconds : DEFAULT_GRACE_SECONDS;
}

/* A pause is open from the pass that counts it until the resume that
 * follows; counting both keeps this true across restarts and stale states. */
static int in_pause(const struct workspace_status *s)
{
    return s->pauses > s->resumes;
}

/* A resume is in progress from its request until its pod is first ready. */
static int resume_in_progress(const struct workspace_status *s)
{
    return s->last_resume.requested_ms != 0 && s->last_resume.ready_ms == 0;
}

static const char *node_or_unknown(const struct workspace_pod *p)
{
    return p->node_name ? p->node_name : "an unknown node";
}

static int pod_is_scheduled(const struct workspace_pod *p)
{
    return p->scheduled || (p->node_name && p->node_name[0]);
}

static int pod_has_stopped(const struct workspace_pod *p)
{
    return p->phase && (strcmp(p->phase, "Failed") == 0 || strcmp(p->phase, "Succeeded") == 0);
}

/* The n of the workspace's pod name, or -1 when it is not one. */
static int64_t pod_generation_of(const struct workspace *ws, const char *pod_name)
{
    return names_pod_generation(ws->name, pod_name);
}

static void format_duration(int64_t ms, char *out, size_t size)
{
    /* Whole seconds read better than "29m59s999ms". */
    if (ms >= 1000)
        ms -= ms % 1000;
    if (duration_format_ms(ms < 0 ? 0 : ms, out, size) < 0)
        snprintf(out, size, "%llds", (long long)(ms / 1000));
}

/* product: what the pod has or asks for (NULL: not known yet); fallback:
 * the pod is a capacity fallback. */
static void set_accelerator(struct decider *d, const char *product, int fallback)
{
    const struct workspace_class *c = d->cls;
    int has = c && c->has_accelerator;
    set_string(d, &d->st->accelerator_resource, has ? c->accelerator_resource : NULL);
    set_string(d, &d->st->accelerator_product, has ? product : NULL);
    d->st->accelerator_count = has ? c->accelerator_count : 0;
    d->st->accelerator_fallback = has && fallback;
}

/* The products the class allows, its own first, joined by sep. */
static void allowed_products(const struct workspace_class *c, const char *sep, char *out,
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
static const char *node_product(const struct decider *d, const char *node)
{
    for (size_t i = 0; node && i < d->in->n_nodes; i++)
        if (streq(d->in->nodes[i].name, node))
            return d->in->nodes[i].product;
    return NULL;
}

/* The accelerator product pod p has: its node's product label once the
 * node cache knows it; until then the product the pod is pinned to, NULL
 * for a capacity fallback (it may get any the class allows). */
static const char *pod_product(const struct decider *d, const struct workspace_pod *p)
{
    const struct workspace_class *c = d->cls;
    if (!c || !c->has_accelerator)
        return NULL;
    const char *on_node = pod_is_scheduled(p) ? node_product(d, p->node_name) : NULL;
    if (on_node)
        return on_node;
    if (p->capacity_fallback)
        return NULL;
    /* A restore is pinned to its snapshot's product. */
    const struct workspace_snapshot *sn = &d->old->snapshot;
    if (p->snapshot && sn->gpu_product && (streq(p->snapshot, sn->name) || !sn->name))
        return sn->gpu_product;
    return c->product;
}

/* onCapacityTimeout FallBack applies (the decoder makes sure there is
 * something to fall back to; a class read otherwise waits). */
static int falls_back(const struct workspace_class *c)
{
    return c && c->on_capacity_timeout == CAPACITY_TIMEOUT_FALL_BACK && c->has_accelerator &&
           c->n_alternative_products > 0;
}

/* ---- rule 0: deleting ---- */

static size_t snapshot_retention(struct decider *d, int deleting);
static int snapshot_current(const struct workspace_status *st);
static int snapshot_stopped(const struct decider *d, const struct workspace_pod *p,
                            const struct workspace_status *st);
static void snapshot_settle(struct decider *d);
static void snapshot_after_unpause(struct decider *d, const struct workspace_pod *p);
static void requeue_at(struct decider *d, int64_t at_ms);

static void decide_deleting(struct decider *d)
{
    size_t n_pods = 0, n_deletes = 0;
    for (size_t i = 0; i < d->in->n_pods; i++) {
        const struct workspace_pod *p = d->in->pods[i];
        n_pods++;
        if (!p->deletion_ms && n_deletes < DECIDE_MAX_ACTIONS) {
            delete_pod(d, p, grace_seconds(d));
            n_deletes++;
        }
    }
    /* The finalizer stays until no pod can still be writing to home. */
    if (n_pods > 0)
        return;
    /* The snapshots hold the session's memory: they go with it, and the
     * finalizer does not wait for the backend to free their storage. It
     * does wait until each one's deletion has been asked for: once the
     * workspace is gone nothing would find the rest. */
    if (snapshot_retention(d, 1) > 0) {
        requeue_at(d, d->now + 1000);
        return;
    }
    const struct workspace_pvc *pvc = d->in->pvc;
    if (pvc && !pvc->deletion_ms) {
        /* An unreadable class may say Retain: keep the files rather than
         * guess. */
        if (d->in->class_error)
            push(d, ACTION_RELEASE_PVC, pvc->name);
        else if (!d->cls || d->cls->home_on_delete == HOME_ON_DELETE_DELETE)
            push(d, ACTION_DELETE_PVC, pvc->name);
        else
            push(d, ACTION_RELEASE_PVC, pvc->name);
    }
    if (d->ws->has_finalizer)
        push(d, ACTION_REMOVE_FINALIZER, NULL);
}

/* ---- rule 2: validation ---- */

static void invalid(struct decider *d, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void invalid(struct decider *d, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    d->invalid_message = vformat(d, fmt, ap);
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
        failed(d, -ENOMEM);
        return;
    }
    for (size_t i = 0; i < c->n_allowed_images; i++) {
        if (i)
            strcat(list, ", ");
        strcat(list, c->allowed_images[i]);
    }
    invalid(d, "ImageNotAllowed", "spec.image: \"%s\" is not allowed by class \"%s\" (allowed: %s)",
            d->ws->image, c->name, list);
    free(list);
}

static void validate_home(struct decider *d)
{
    const char *size = d->ws->home_size;
    int64_t bytes;
    if (!size)
        return;
    if (quantity_parse_bytes(size, &bytes) < 0 || bytes <= 0)
        invalid(d, "InvalidHomeSize", "spec.home.size: \"%s\" is not a size such as \"20Gi\"",
                size);
    else if (bytes > d->cls->home_max_bytes)
        invalid(d, "HomeTooLarge", "spec.home.size: %s is larger than the class maximum %s", size,
                d->cls->home_max_size ? d->cls->home_max_size : d->cls->home_size);
}

static void validate_env(struct decider *d)
{
    const struct workspace *ws = d->ws;
    for (size_t i = 0; i < ws->n_env; i++) {
        const char *name = ws->env[i].name;
        if (strncmp(name, RESERVED_ENV_PREFIX, strlen(RESERVED_ENV_PREFIX)) == 0) {
            invalid(
                d, "ReservedEnv",
                "spec.env[%zu].name: \"%s\" is reserved: names starting with " RESERVED_ENV_PREFIX
                " are set by the controller",
                i, name);
            return;
        }
        if (d->cls->checkpoint_env && strcmp(name, d->cls->checkpoint_env) == 0) {
            invalid(d, "ReservedEnv",
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
static int unreadable(struct decider *d)
{
    if (d->ws->spec_error) {
        invalid(d, "InvalidSpec", "%s", d->ws->spec_error);
        return 1;
    }
    if (d->in->class_error) {
        invalid(d, "InvalidClass", "spec.className: WorkspaceClass \"%s\" cannot be used: %s",
                d->ws->class_name ? d->ws->class_name : "", d->in->class_error);
        return 1;
    }
    return 0;
}

/* A workspace applied together with its class (one kubectl apply of a
 * folder) may reach the controller's workspace cache before its class
 * reaches the class cache: two watches, no order between them. A workspace
 * younger than this waits for its class before reporting it missing. */
#define CLASS_GRACE_MS 5000

static int class_not_yet_seen(const struct decider *d)
{
    const struct workspace *ws = d->ws;
    return !d->cls && !d->in->class_error && ws->created_ms && d->now >= ws->created_ms &&
           d->now - ws->created_ms < CLASS_GRACE_MS &&
           !workspace_status_condition(d->old, COND_VALID);
}

static void validate(struct decider *d)
{
    const struct workspace *ws = d->ws;
    if (!d->cls) {
        invalid(d, "ClassNotFound", "spec.className: WorkspaceClass \"%s\" not found",
                ws->class_name);
        return;
    }
    /* The name is a label value on everything the workspace owns. */
    if (strlen(ws->name) > MAX_LABEL_VALUE) {
        invalid(d, "NameTooLong",
                "metadata.name: \"%s\" is longer than %d characters, the limit of a label value",
                ws->name, MAX_LABEL_VALUE);
        return;
    }
    validate_image(d);
    if (!d->invalid_reason)
        validate_home(d);
    if (!d->invalid_reason)
        validate_env(d);
}

/* ---- rule 4: the pods ---- */

/* Newer first: creation time, then pod generation, then name. */
static int newer(const struct decider *d, const struct workspace_pod *a,
                 const struct workspace_pod *b)
{
    if (a->created_ms != b->created_ms)
        return a->created_ms > b->created_ms;
    int64_t ga = pod_generation_of(d->ws, a->name), gb = pod_generation_of(d->ws, b->name);
    if (ga != gb)
        return ga > gb;
    return strcmp(a->name, b->name) > 0;
}

static void sort_pods(struct decider *d, int may_delete)
{
    const struct decide_input *in = d->in;
    const struct workspace_pod *named = NULL, *newest = NULL;
    size_t n_live = 0;
    for (size_t i = 0; i < in->n_pods; i++) {
        const struct workspace_pod *p = in->pods[i];
        if (!p->name)
            continue;
        if (p->deletion_ms || pod_has_stopped(p)) {
            /* Named in messages: the same one every pass, whatever the order. */
            if (!d->leaving || strcmp(p->name, d->leaving->name) < 0)
                d->leaving = p;
            d->n_leaving++;
            continue;
        }
        n_live++;
        if (d->st->pod_name && strcmp(p->name, d->st->pod_name) == 0)
            named = p;
        if (!newest || newer(d, p, newest))
            newest = p;
    }
    d->keep = named ? named : newest;
    if (!may_delete)
        return;

    /* Stopped pods (evicted, or the app exited) are not coming back:
     * restartPolicy Always never applies to them. */
    size_t n_extra = 0;
    for (size_t i = 0; i < in->n_pods && n_extra < MAX_EXTRA_DELETES; i++) {
        const struct workspace_pod *p = in->pods[i];
        if (p->name && !p->deletion_ms && pod_has_stopped(p)) {
            /* Completed by its own snapshot (postCheckpoint: stop):
             * deleted by decide_pause() once the snapshot is settled. */
            if (d->ws->paused && in_pause(d->st) && snapshot_current(d->st) &&
                snapshot_stopped(d, p, d->st))
                continue;
            delete_pod(d, p, 0);
            /* The pod the status names is an interruption: PodInterrupted
             * says it (note_interruption()). */
            if (!d->ws->paused && !streq(p->name, d->st->pod_name))
                event(d, "Warning", "PodStopped",
                      "pod %s stopped (phase %s); a new pod will replace it", p->name, p->phase);
            n_extra++;
        }
    }
    if (n_live > 1) {
        /* Should never happen; if it does, one pod keeps the workspace. */
        size_t n_dup = 0;
        for (size_t i = 0; i < in->n_pods && n_extra < MAX_EXTRA_DELETES; i++) {
            const struct workspace_pod *p = in->pods[i];
            if (!p->name || p->deletion_ms || pod_has_stopped(p) || p == d->keep)
                continue;
            delete_pod(d, p, 0);
            n_extra++;
            n_dup++;
        }
        if (n_dup)
            event(d, "Warning", "DuplicatePod", "found %zu pods for the workspace; keeping %s",
                  n_live, d->keep->name);
    }
}

/* The first pod on a home made after the last one was lost: nothing of
 * the session is on it. */
static int on_fresh_home(const struct decider *d, const char *pod_name)
{
    const struct workspace_home *h = &d->st->home;
    return h->lost_ms && pod_name && streq(h->fresh_pod, pod_name);
}

/* The pod created in place of one that ended without the controller asking. */
static int replaces_interrupted(const struct decider *d, const char *pod_name)
{
    const struct workspace_interruption *li = &d->st->last_interruption;
    return li->pod && pod_name && streq(li->replaced_by, pod_name);
}

static void set_restored(struct decider *d, const char *pod_name, int from_checkpoint)
{
    const struct workspace_home *h = &d->st->home;
    const struct workspace_interruption *li = &d->st->last_interruption;
    const char *env = d->cls && d->cls->checkpoint_env ? d->cls->checkpoint_env : "checkpoint";
    const char *path = d->cls && d->cls->checkpoint_path ? d->cls->checkpoint_path : "";
    const char *cause = li->reason ? li->reason : "Deleted";
    const char *restored_from = from_checkpoint ? "FromCheckpoint" : "Fresh";
    if (on_fresh_home(d, pod_name)) {
        char at[TIMEFMT_RFC3339_SIZE];
        timefmt_rfc3339_text(h->lost_ms, at);
        restored_from = "FreshHome";
        condition(d, COND_RESTORED, COND_TRUE, "FreshHome",
                  "pod %s starts on a new, empty home: claim %s (uid %s) was gone at %s, and "
                  "with it the files and the application's checkpoint",
                  pod_name, d->st->home_claim_name ? d->st->home_claim_name : "",
                  h->lost_claim_uid ? h->lost_claim_uid : "", at);
    } else if (replaces_interrupted(d, pod_name) && from_checkpoint) {
        condition(d, COND_RESTORED, COND_TRUE, "FromCheckpoint",
                  "pod %s replaces pod %s, which ended without the controller asking (%s): it "
                  "starts from the files and is told where the application's checkpoint is "
                  "(%s=%s); what was only in memory is lost",
                  pod_name, li->pod, cause, env, path);
    } else if (replaces_interrupted(d, pod_name)) {
        condition(d, COND_RESTORED, COND_TRUE, "Fresh",
                  "pod %s replaces pod %s, which ended without the controller asking (%s): it "
                  "starts fresh from the files; what was only in memory is lost",
                  pod_name, li->pod, cause);
    } else if (from_checkpoint) {
        condition(d, COND_RESTORED, COND_TRUE, "FromCheckpoint",
                  "pod %s starts from the application's checkpoint (%s=%s)", pod_name, env, path);
    } else {
        condition(d, COND_RESTORED, COND_TRUE, "Fresh",
                  "pod %s starts fresh: the workspace was never paused", pod_name);
    }
    if (resume_in_progress(d->st))
        set_string(d, &d->st->last_resume.restored_from, restored_from);
}

/* The pod exists but the status does not name it: the controller stopped
 * between creating it and writing the status, or another replica wrote it. */
static void adopt(struct decider *d)
{
    const struct workspace_pod *p = d->keep;
    if (p && p->uid && streq(d->st->pod_name, p->name))
        set_string(d, &d->st->pod_uid, p->uid);
    if (!p || streq(d->st->pod_name, p->name))
        return;
    set_string(d, &d->st->pod_name, p->name);
    set_string(d, &d->st->pod_uid, p->uid);
    set_string(d, &d->st->deleted_pod, NULL);
    int64_t gen = pod_generation_of(d->ws, p->name);
    if (gen > d->st->pod_generation)
        d->st->pod_generation = gen;
    if (resume_in_progress(d->st) && !d->st->last_resume.pod_created_ms)
        d->st->last_resume.pod_created_ms = p->created_ms ? p->created_ms : d->now;
    /* Created after the home was lost, by a pass whose status write was
     * lost: the first pod on the new home. */
    struct workspace_home *h = &d->st->home;
    if (h->lost_ms && !h->fresh_pod && p->created_ms >= h->lost_ms - 1000)
        set_string(d, &h->fresh_pod, p->name);
    if (p->snapshot)
        condition(d, COND_RESTORED, COND_UNKNOWN, "Restoring",
                  "pod %s is restored from snapshot %s", p->name, p->snapshot);
    else
        set_restored(d, p->name, p->restore_from_checkpoint);
}

/* ---- interruptions: a pod that ended without the controller asking ---- */

/* Whether the controller itself deleted the pod the status names (p: as
 * last seen; NULL: gone without a trace). Every delete of it follows a
 * decision the status already shows: a pause, a capacity timeout, a
 * capacity fallback, a crashed restore. */
static int own_delete(const struct decider *d, const struct workspace_pod *p)
{
    const struct workspace_status *old = d->old;
    const struct workspace_class *c = d->cls;
    if (d->ws->paused || in_pause(old))
        return 1;
    /* Completed by the pause's snapshot (postCheckpoint: stop) after a
     * resume was asked for: the snapshot stopped it, no interruption. */
    if (p && snapshot_stopped(d, p, old))
        return 1;
    /* The pause's pod, still named while its resume has created none. */
    if (resume_in_progress(old) && !old->last_resume.pod_created_ms)
        return 1;
    if (old->state == WS_STATE_FAILED &&
        streq(condition_reason(old, COND_CAPACITY), "CapacityTimeout"))
        return 1;
    /* The pass that timed out may have died before its status write. */
    if (old->waiting_for_capacity_since_ms && c &&
        c->on_capacity_timeout != CAPACITY_TIMEOUT_WAIT &&
        d->now >= old->waiting_for_capacity_since_ms + c->capacity_timeout_ms)
        return 1;
    if (old->accelerator_fallback &&
        (p ? !p->capacity_fallback
           : streq(condition_reason(old, COND_CAPACITY), "CapacityTimeout")))
        return 1;
    if (old->snapshot.restore_failed_ms && (!p || p->snapshot) &&
        (streq(condition_reason(old, COND_RESTORED), "RestoreCrashed") ||
         streq(condition_reason(old, COND_RESTORED), "RestoreUnresponsive")))
        return 1;
    if (old->snapshot.rejected_ms && (!p || !p->snapshot) &&
        streq(condition_reason(old, COND_RESTORED), "UnwantedRestore"))
        return 1;
    return 0;
}

/* The pod the status names is leaving (deleted, or stopped for good) or
 * gone, and the controller did not ask for it: the interruption is
 * recorded (status.interruptions, a Warning PodInterrupted event), the
 * status stops naming the pod, and its replacement gets a new name. */
static void note_interruption(struct decider *d)
{
    struct workspace_status *st = d->st;
    if (!st->pod_name)
        return;
    const struct workspace_pod *named = NULL;
    for (size_t i = 0; i < d->in->n_pods; i++) {
        const struct workspace_pod *p = d->in->pods[i];
        if (p->name && streq(p->name, st->pod_name))
            named = p;
    }
    const struct workspace_pod *ended = NULL;
    if (named && (named->deletion_ms || pod_has_stopped(named))) {
        ended = named;
    } else if (!named && st->pod_uid) {
        /* Seen by an earlier pass and now gone: the cache never un-sees an
         * object, so this is no lag behind a create (which forgets the
         * uid). The cache's last sight of it says why, when it kept one. */
        const struct workspace_pod *g = d->in->gone_pod;
        if (g && streq(g->name, st->pod_name) && (!g->uid || streq(g->uid, st->pod_uid)))
            ended = g;
    } else {
        return;
    }
    if (streq(st->deleted_pod, st->pod_name) || own_delete(d, ended)) {
        set_string(d, &st->deleted_pod, st->pod_name);
        return;
    }
    const char *uid = ended && ended->uid ? ended->uid : st->pod_uid;
    const char *node = ended && ended->node_name ? ended->node_name : st->node_name;
    int node_absent = d->in->pod_node_absent && streq(node, d->old->node_name);
    struct pod_end e;
    if (ended) {
        workspace_pod_end(ended, node_absent, &e);
    } else {
        e = (struct pod_end){0};
        snprintf(e.kind, sizeof(e.kind), "%s", node_absent ? "NodeLost" : "Deleted");
        if (node_absent && node)
            snprintf(e.message, sizeof(e.message), "node %s: no longer in the cluster", node);
    }
    workspace_message_one_line(e.message);
    struct workspace_interruption *li = &st->last_interruption;
    st->interruptions++;
    li->at_ms = e.at_ms && e.at_ms <= d->now ? e.at_ms : d->now;
    set_string(d, &li->pod, st->pod_name);
    set_string(d, &li->pod_uid, uid);
    set_string(d, &li->node_name, node);
    set_string(d, &li->reason, e.kind);
    set_string(d, &li->message, e.message[0] ? e.message : NULL);
    set_string(d, &li->replaced_by, NULL);
    char occ[OCCASION_SIZE];
    snprintf(occ, sizeof(occ), "interrupted-%s", uid ? uid : st->pod_name);
    transition_event(d, occ, "Warning", "PodInterrupted",
                     "pod %s%s%s ended without the controller asking: %s%s%s%s; its memory is "
                     "lost, a new pod replaces it",
                     st->pod_name, node ? " on " : "", node ? node : "", e.kind,
                     e.message[0] ? " (" : "", e.message, e.message[0] ? ")" : "");
    set_string(d, &st->pod_name, NULL);
    set_string(d, &st->pod_uid, NULL);
}

/* ---- rule 3: the home claim ---- */

/* A lost home the class wants a person to acknowledge, not yet acknowledged:
 * nothing starts on a new, empty home. */
static int home_awaits_acknowledgement(const struct decider *d)
{
    const struct workspace_home *h = &d->st->home;
    return h->lost_ms && !h->acknowledged_ms && d->cls &&
           d->cls->home_on_loss == HOME_ON_LOSS_WAIT_FOR_ACKNOWLEDGEMENT;
}

static const char *home_loss_plan(const struct decider *d)
{
    switch (d->cls->home_on_loss) {
    case HOME_ON_LOSS_RECREATE:
        return "a new, empty claim is made (class onLoss Recreate)";
    case HOME_ON_LOSS_RECREATE_ON_RESUME:
        return "a new, empty claim is made when the workspace resumes (class onLoss "
               "RecreateOnResume)";
    case HOME_ON_LOSS_WAIT_FOR_ACKNOWLEDGEMENT:
        break;
    }
    return "nothing starts on a new, empty home until the Workspace is "
           "annotated " ACKNOWLEDGE_HOME_LOSS_ANNOTATION "=<the lost claim's uid> (class onLoss "
           "WaitForAcknowledgement)";
}

/* Which claim holds home (status.home), whether it was lost, and whether a
 * claim is to be made. docs/state-machine.md, "A lost home". */
static void decide_home(struct decider *d, const char *claim)
{
    struct workspace_status *st = d->st;
    struct workspace_home *h = &st->home;
    const struct workspace_pvc *pvc = d->in->pvc;
    const char *uid = pvc && pvc->uid && pvc->uid[0] ? pvc->uid : NULL;
    char occ[OCCASION_SIZE], at[TIMEFMT_RFC3339_SIZE];
    /* The claim cache never un-sees a claim: one recorded and now absent,
     * or present under another uid, was deleted. */
    if (h->claim_uid && (!pvc || (uid && !streq(uid, h->claim_uid)))) {
        set_string(d, &h->lost_claim_uid, h->claim_uid);
        h->lost_ms = d->now;
        h->acknowledged_ms = 0;
        set_string(d, &h->fresh_pod, NULL);
        set_string(d, &h->claim_uid, NULL);
        h->since_ms = 0;
        snprintf(occ, sizeof(occ), "home-%s", h->lost_claim_uid);
        transition_event(d, occ, "Warning", "HomeLost",
                         "claim %s (uid %s), which held the workspace's home, is gone: its files "
                         "and the application's checkpoint are lost; %s",
                         claim, h->lost_claim_uid, home_loss_plan(d));
    }
    if (uid && !h->claim_uid && !pvc->deletion_ms) {
        set_string(d, &h->claim_uid, uid);
        h->since_ms = pvc->created_ms && pvc->created_ms <= d->now ? pvc->created_ms : d->now;
    }
    if (h->lost_ms && !h->acknowledged_ms && h->lost_claim_uid &&
        streq(d->ws->acknowledged_home_loss, h->lost_claim_uid)) {
        h->acknowledged_ms = d->now;
        snprintf(occ, sizeof(occ), "home-ack-%s", h->lost_claim_uid);
        transition_event(d, occ, "Normal", "HomeLossAcknowledged",
                         "the loss of claim %s (uid %s) is acknowledged: the workspace starts on "
                         "a new, empty home",
                         claim, h->lost_claim_uid);
    }
    int make = !pvc;
    if (make && h->lost_ms) {
        switch (d->cls->home_on_loss) {
        case HOME_ON_LOSS_RECREATE:
            break;
        case HOME_ON_LOSS_RECREATE_ON_RESUME:
            make = !d->ws->paused;
            break;
        case HOME_ON_LOSS_WAIT_FOR_ACKNOWLEDGEMENT:
            make = h->acknowledged_ms != 0;
            break;
        }
    }
    if (make)
        push(d, ACTION_CREATE_PVC, claim);
    if (!h->lost_ms) {
        workspace_status_remove_condition(st, COND_HOME);
        return;
    }
    timefmt_rfc3339_text(h->lost_ms, at);
    if (home_awaits_acknowledgement(d))
        condition(d, COND_HOME, COND_FALSE, "Lost",
                  "claim %s (uid %s), which held the workspace's home, was gone at %s: its files "
                  "are lost; nothing starts on a new, empty home until the Workspace is "
                  "annotated " ACKNOWLEDGE_HOME_LOSS_ANNOTATION "=%s",
                  claim, h->lost_claim_uid, at, h->lost_claim_uid);
    else if (h->claim_uid)
        condition(d, COND_HOME, COND_TRUE, "Recreated",
                  "claim %s (uid %s) holds the home since the claim before it (uid %s) was gone "
                  "at %s; it started empty",
                  claim, h->claim_uid, h->lost_claim_uid, at);
    else
        condition(d, COND_HOME, COND_FALSE, "Lost",
                  "claim %s (uid %s), which held the workspace's home, was gone at %s: its files "
                  "are lost; %s",
                  claim, h->lost_claim_uid, at,
                  h->acknowledged_ms ? "the loss is acknowledged: a new, empty claim is made"
                                     : home_loss_plan(d));
}

/* ---- rule 5: run ---- */

static void begin_resume(struct decider *d)
{
    struct workspace_status *st = d->st;
    int64_t released = st->last_pause.accelerator_released_ms;
    st->resumes++;
    free(st->last_resume.restored_from);
    st->last_resume = (struct workspace_resume_timeline){.requested_ms = d->now};
    if (released && d->now > released && d->cls && d->cls->has_accelerator) {
        st->accelerator_seconds_released +=
            (double)(d->now - released) / 1000.0 * d->cls->accelerator_count;
    }
    char occ[OCCASION_SIZE];
    resume_occasion(d, occ);
    if (released) {
        char t[32];
        format_duration(d->now - released, t, sizeof(t));
        transition_event(d, occ, "Normal", "Resuming", "resume requested after %s paused", t);
    } else {
        transition_event(d, occ, "Normal", "Resuming", "resume requested");
    }
}

/* 5b: never two pods, not even for a moment: a new one waits until the
 * leaving one is gone. */
static void wait_for_leaving(struct decider *d, const char *leaving)
{
    struct workspace_status *st = d->st;
    st->state = resume_in_progress(st) ? WS_STATE_RESUMING : WS_STATE_PENDING;
    set_string(d, &st->node_name, NULL);
    condition(d, COND_READY, COND_FALSE, "PodTerminating",
              "waiting for pod %s to stop before starting a new one", leaving);
}

/* Rule 5a with onCapacityTimeout FallBack: the waiting pod (pinned to one
 * product, holding no GPU) goes at once; once it is gone, create_pod()
 * starts one from files and the checkpoint that may run on any product the
 * class allows, the class's own preferred. status.accelerator.fallback
 * carries the decision to that pass. */
static void fall_back(struct decider *d, const struct workspace_pod *p, const char *timeout,
                      const char *sched)
{
    char products[PRODUCTS_TEXT];
    allowed_products(d->cls, ", ", products, sizeof(products));
    const char *wanted = pod_product(d, p);
    if (!wanted)
        wanted = d->cls->product;
    own_delete_pod(d, p, 0);
    d->st->accelerator_fallback = 1;
    condition(d, COND_CAPACITY, COND_FALSE, "CapacityTimeout",
              "no %s free within %s (capacity timeout); falling back to any of %s: %s", wanted,
              timeout, products, sched);
    char occ[OCCASION_SIZE];
    if (!d->old->accelerator_fallback)
        transition_event(
            d, pod_occasion(p->name, occ), "Warning", "CapacityFallback",
            "no %s free within %s (capacity timeout): %s; replacing pod %s with one from files "
            "and the application's checkpoint that may run on any of %s",
            wanted, timeout, sched, p->name, products);
    wait_for_leaving(d, p->name);
}

static void waiting_for_capacity(struct decider *d)
{
    const struct workspace_pod *p = d->keep;
    struct workspace_status *st = d->st;
    const struct workspace_class *c = d->cls;
    const char *sched = p->unschedulable_message && p->unschedulable_message[0]
                            ? p->unschedulable_message
                            : "the scheduler found no node for the pod";
    if (!st->waiting_for_capacity_since_ms)
        st->waiting_for_capacity_since_ms = d->now;
    int64_t since = st->waiting_for_capacity_since_ms;
    int64_t left = since + c->capacity_timeout_ms - d->now;
    if (left > 0) {
        st->state = WS_STATE_WAITING_FOR_CAPACITY;
        condition(d, COND_CAPACITY, COND_FALSE, "Unschedulable", "%s", sched);
        condition(d, COND_READY, COND_FALSE, "WaitingForCapacity", "pod %s is waiting for capacity",
                  p->name);
        d->out->requeue_after_ms = left < c->capacity_timeout_ms ? left : c->capacity_timeout_ms;
        return;
    }

    char timeout[32], occ[OCCASION_SIZE];
    format_duration(c->capacity_timeout_ms, timeout, sizeof(timeout));
    const char *old_reason = condition_reason(d->old, COND_CAPACITY);
    /* A fallback pod is never replaced again: it waits like any other. */
    if (falls_back(c) && !p->capacity_fallback) {
        fall_back(d, p, timeout, sched);
        return;
    }
    if (c->on_capacity_timeout == CAPACITY_TIMEOUT_FAIL) {
        st->state = WS_STATE_FAILED;
        condition(d, COND_CAPACITY, COND_FALSE, "CapacityTimeout", "no capacity after %s: %s",
                  timeout, sched);
        condition(d, COND_READY, COND_FALSE, "CapacityTimeout", "no capacity after %s", timeout);
        /* A pending pod would take a GPU whenever one frees up, long after
         * the user was told the workspace failed. */
        own_delete_pod(d, p, 0);
        if (!(d->old->state == WS_STATE_FAILED && streq(old_reason, "CapacityTimeout")))
            transition_event(d, pod_occasion(p->name, occ), "Warning", "CapacityTimeout",
                             "no capacity after %s: %s", timeout, sched);
        return;
    }
    char t[TIMEFMT_RFC3339_SIZE] = "";
    timefmt_format_rfc3339(since, t, sizeof(t));
    st->state = WS_STATE_WAITING_FOR_CAPACITY;
    condition(d, COND_CAPACITY, COND_FALSE, "CapacityTimeout",
              "still waiting for capacity after %s (since %s): %s", timeout, t, sched);
    condition(d, COND_READY, COND_FALSE, "WaitingForCapacity", "pod %s is waiting for capacity",
              p->name);
    if (!streq(old_reason, "CapacityTimeout"))
        transition_event(d, pod_occasion(p->name, occ), "Warning", "CapacityTimeout",
                         "still waiting for capacity after %s: %s", timeout, sched);
}

static void decide_idle(struct decider *d);
static void requeue_at(struct decider *d, int64_t at_ms);

/* A restore that crash-loops is not left looping: the pod goes, once, and
 * the next one starts from files and the checkpoint. */
#define RESTORE_CRASH_RESTARTS 2
/* PodRestored may come after Ready; a pod ready this long without it was
 * cold-started. */
#define RESTORE_CONDITION_GRACE_MS (30 * 1000)

/* ---- the restored application: does the session answer? ---- */

/* After restoreCheckTimeout without an answer, the check waits this much
 * longer (beyond the class's probe timeout) for a round started after it:
 * a controller started late, or a round in flight, still gets its word. */
#define RESTORE_CHECK_LAST_ROUND_MS (5 * 1000)

/* The restored pod's rounds, when the input has them for this pod. */
static const struct restore_check *restore_check_of(const struct decider *d,
                                                    const struct workspace_pod *p)
{
    const struct restore_check *rc = d->in->restore_check;
    return rc && rc->pod && streq(rc->pod, p->name) ? rc : NULL;
}

/* When the application of a pod restored (or to be) from a snapshot
 * answered; 0: not known. */
static int64_t restore_answered_ms(const struct decider *d, const struct workspace_pod *p)
{
    const struct restore_check *rc = p->snapshot ? restore_check_of(d, p) : NULL;
    return rc ? rc->answered_ms : 0;
}

static int checks_application(const struct decider *d)
{
    return d->cls && d->cls->activity.application != ACTIVITY_APP_NONE;
}

/* The workspace waits for the application of pod p (snapshot named). */
static void await_application(struct decider *d, const struct workspace_pod *p, const char *fmt,
                              ...) __attribute__((format(printf, 3, 4)));

static void await_application(struct decider *d, const struct workspace_pod *p, const char *fmt,
                              ...)
{
    struct workspace_status *st = d->st;
    d->out->restore_check_wanted = 1;
    st->state = resume_in_progress(st) ? WS_STATE_RESUMING : WS_STATE_PENDING;
    st->waiting_for_capacity_since_ms = 0;
    condition(d, COND_CAPACITY, COND_TRUE, "Scheduled", "pod %s is scheduled on %s", p->name,
              node_or_unknown(p));
    va_list ap;
    va_start(ap, fmt);
    char *msg = vformat(d, fmt, ap);
    va_end(ap);
    if (msg)
        condition(d, COND_READY, COND_FALSE, "AwaitingApplication", "%s", msg);
    free(msg);
}

/* The restored application did not answer in time: the same path as a
 * restore that crash-loops (judge_restore): the pod goes, once, the
 * snapshot is marked and deleted, the next pod starts from files. */
static void restore_unresponsive(struct decider *d, const struct workspace_pod *p,
                                 const struct restore_check *rc)
{
    struct workspace_status *st = d->st;
    int again = streq(condition_reason(st, COND_RESTORED), "RestoreUnresponsive");
    if (!st->snapshot.restore_failed_ms)
        st->snapshot.restore_failed_ms = d->now;
    own_delete_pod(d, p, 0);
    st->state = resume_in_progress(st) ? WS_STATE_RESUMING : WS_STATE_PENDING;
    condition(d, COND_READY, COND_FALSE, "PodTerminating", "pod %s is being replaced", p->name);
    if (again) /* decided before; the delete again, in case it was lost */
        return;
    char timeout[32];
    format_duration(d->cls->snapshot.restore_check_timeout_ms, timeout, sizeof(timeout));
    const char *why = rc && rc->error ? rc->error : "no probe round could be made";
    condition(d, COND_RESTORED, COND_FALSE, "RestoreUnresponsive",
              "pod %s was restored from snapshot %s, but its application did not answer within "
              "%s (%s); a fresh pod starts from files and the checkpoint",
              p->name, p->snapshot, timeout, why);
    char occ[OCCASION_SIZE];
    if (!streq(condition_reason(d->old, COND_RESTORED), "RestoreUnresponsive"))
        transition_event(d, pod_occasion(p->name, occ), "Warning", "RestoreUnresponsive",
                         "the application of pod %s, restored from snapshot %s, did not answer "
                         "within %s (%s); replacing it with a fresh pod from files and the "
                         "checkpoint",
                         p->name, p->snapshot, timeout, why);
}

/*
 * A pod GKE reports restored (PodRestored=True) counts as FromSnapshot only
 * once its application answers the class's application probe; a class
 * without one counts PodRestored alone. The check's clock starts at
 * PodRestored (the pod's own time, so a controller started anew counts from
 * the same moment). Returns 1 when the pod is not counted yet: waiting for
 * the answer, or replaced because none came.
 */
static int judge_restored_app(struct decider *d, const struct workspace_pod *p)
{
    struct workspace_status *st = d->st;
    const struct workspace_class *c = d->cls;
    const char *reason = condition_reason(st, COND_RESTORED);
    if (!checks_application(d) || streq(reason, "FromSnapshot"))
        return 0;
    const struct restore_check *rc = restore_check_of(d, p);
    if (streq(reason, "RestoreUnresponsive") && st->snapshot.restore_failed_ms) {
        restore_unresponsive(d, p, rc);
        return 1;
    }
    if (rc && rc->answered_ms)
        return 0;
    int64_t since = p->restored_ms ? p->restored_ms : p->ready_ms ? p->ready_ms : p->created_ms;
    int64_t deadline = since + c->snapshot.restore_check_timeout_ms;
    int64_t last_word = deadline + c->activity.timeout_ms + RESTORE_CHECK_LAST_ROUND_MS;
    if (d->now >= last_word || (d->now >= deadline && rc && rc->last_round_ms >= deadline)) {
        restore_unresponsive(d, p, rc);
        return 1;
    }
    if (d->now >= deadline)
        d->out->probe_now = 1; /* one more round, started after the deadline */
    requeue_at(d, d->now < deadline ? deadline : last_word);
    char timeout[32];
    format_duration(c->snapshot.restore_check_timeout_ms, timeout, sizeof(timeout));
    condition(d, COND_RESTORED, COND_UNKNOWN, "Restoring",
              "pod %s was restored from snapshot %s; waiting for its application to answer "
              "(at most %s)",
              p->name, p->snapshot, timeout);
    await_application(d, p,
                      "pod %s was restored from snapshot %s; its application has not "
                      "answered yet",
                      p->name, p->snapshot);
    return 1;
}

static int crash_looping(const struct workspace_pod *p)
{
    return p->crash_looping || p->restart_count >= RESTORE_CRASH_RESTARTS;
}

/* Whether the snapshot is one a pod was restored from unasked (or could have
 * been): status.snapshot.rejectedGroup. */
static int snapshot_rejected(const struct workspace_snapshot *sn, const struct snapshot_view *v)
{
    if (!sn->rejected_ms || !sn->rejected_group || v->phase != SNAPSHOT_PHASE_READY ||
        (v->ready_ms && v->ready_ms > sn->rejected_ms))
        return 0;
    return streq(sn->rejected_group, "*") || streq(sn->rejected_group, v->group);
}

/* A pod that was to start from files (no restore asked for) and that the
 * backend restored all the same (PodRestored=True: a policy without the
 * snapshot group, a group label removed), crash-looping or not: its memory
 * is older than the files, so it is not kept. It goes (grace 0); the
 * snapshots it could come from — its group's, or every one when no snapshot
 * has its group (the grouping did not hold) — are rejected and deleted, and
 * the next pod starts from files once they are gone. Returns 1 when the pod
 * is being replaced. */
static int judge_unwanted_restore(struct decider *d, const struct workspace_pod *p)
{
    struct workspace_status *st = d->st;
    if (p->snapshot || !p->restored)
        return 0;
    char occ[OCCASION_SIZE];
    if (!p->group && !crash_looping(p)) {
        /* Made by an earlier version, restored back then: the session has
         * gone on in it since, so it is kept and only said. */
        condition(d, COND_RESTORED, COND_TRUE, "UnwantedRestore",
                  "pod %s (made by an earlier version) was restored from a snapshot though it was "
                  "to start from files: its memory was older than its files when it started; it "
                  "is kept, the session went on in it",
                  p->name);
        if (!streq(condition_reason(d->old, COND_RESTORED), "UnwantedRestore"))
            transition_event(d, pod_occasion(p->name, occ), "Warning", "UnwantedRestore",
                             "pod %s was restored from a snapshot though it was to start from "
                             "files (an earlier version's pod); it is kept",
                             p->name);
        return 0;
    }
    int again = streq(condition_reason(d->old, COND_RESTORED), "UnwantedRestore") &&
                st->snapshot.rejected_ms;
    if (!again) {
        const char *group = "*";
        for (size_t i = 0; p->group && i < d->in->n_snapshots; i++)
            if (streq(d->in->snapshots[i].group, p->group))
                group = p->group;
        set_string(d, &st->snapshot.rejected_group, group);
        st->snapshot.rejected_ms = d->now;
    }
    own_delete_pod(d, p, 0);
    condition(d, COND_RESTORED, COND_FALSE, "UnwantedRestore",
              "pod %s was restored from a snapshot by the snapshot backend though it was to "
              "start from files%s; its memory is older than the files: it is replaced by a pod "
              "from files and the checkpoint once the snapshots it could come from are deleted",
              p->name, crash_looping(p) ? ", and crash-loops" : "");
    if (!again)
        transition_event(d, pod_occasion(p->name, occ), "Warning", "UnwantedRestore",
                         "pod %s was restored from a snapshot though it was to start from files "
                         "(the snapshot backend's policy or the pod's snapshot group did not "
                         "hold); replacing it with a pod from files and deleting the snapshots "
                         "it could come from",
                         p->name);
    if (resume_in_progress(st))
        set_string(d, &st->last_resume.restored_from, NULL);
    st->state = resume_in_progress(st) ? WS_STATE_RESUMING : WS_STATE_PENDING;
    condition(d, COND_READY, COND_FALSE, "PodTerminating", "pod %s is being replaced", p->name);
    return 1;
}

/* Returns 1 when the pod is being replaced (nothing more to decide). */
static int judge_restore(struct decider *d, const struct workspace_pod *p)
{
    struct workspace_status *st = d->st;
    if (!p->snapshot)
        return 0;
    /* Restored or not: a session that crashes as it comes back is not one
     * to keep restarting from the same memory. */
    if (crash_looping(p)) {
        if (!st->snapshot.restore_failed_ms)
            st->snapshot.restore_failed_ms = d->now;
        own_delete_pod(d, p, 0);
        condition(d, COND_RESTORED, COND_FALSE, "RestoreCrashed",
                  "pod %s crashed after its restore from snapshot %s (%d restarts); a fresh pod "
                  "starts from files and the checkpoint",
                  p->name, p->snapshot, p->restart_count);
        char occ[OCCASION_SIZE];
        if (!streq(condition_reason(d->old, COND_RESTORED), "RestoreCrashed"))
            transition_event(
                d, pod_occasion(p->name, occ), "Warning", "RestoreCrashLoop",
                "pod %s crash-loops after its restore from snapshot %s; replacing it with a "
                "fresh pod from files and the checkpoint",
                p->name, p->snapshot);
        st->state = resume_in_progress(st) ? WS_STATE_RESUMING : WS_STATE_PENDING;
        condition(d, COND_READY, COND_FALSE, "PodTerminating", "pod %s is being replaced", p->name);
        return 1;
    }
    if (p->restored) {
        if (judge_restored_app(d, p))
            return 1;
        condition(d, COND_RESTORED, COND_TRUE, "FromSnapshot",
                  "pod %s was restored from snapshot %s: memory and GPU state are back", p->name,
                  p->snapshot);
        if (st->last_resume.requested_ms)
            set_string(d, &st->last_resume.restored_from, "FromSnapshot");
        return 0;
    }
    if (!p->ready)
        return 0;
    int64_t ready = p->ready_ms ? p->ready_ms : d->now;
    if (d->now < ready + RESTORE_CONDITION_GRACE_MS) {
        requeue_at(d, ready + RESTORE_CONDITION_GRACE_MS);
        /* Whether restored or cold-started, the session is there once the
         * application answers (the class has a probe for it). */
        if (!checks_application(d) || restore_answered_ms(d, p))
            return 0;
        await_application(d, p,
                          "pod %s is ready; waiting for its application to answer and for the "
                          "backend to say whether it was restored from snapshot %s",
                          p->name, p->snapshot);
        return 1;
    }
    condition(d, COND_RESTORED, COND_TRUE, "ColdStart",
              "pod %s started without the state of snapshot %s; it has the files and %s to "
              "recover from the application's checkpoint",
              p->name, p->snapshot,
              d->cls && d->cls->checkpoint_env ? d->cls->checkpoint_env : "the checkpoint");
    char occ[OCCASION_SIZE];
    if (!streq(condition_reason(d->old, COND_RESTORED), "ColdStart"))
        transition_event(
            d, pod_occasion(p->name, occ), "Warning", "ColdStart",
            "pod %s was not restored from snapshot %s (the backend cold-started it); the "
            "session's memory is lost, files and the application's checkpoint remain",
            p->name, p->snapshot);
    if (st->last_resume.requested_ms)
        set_string(d, &st->last_resume.restored_from, "ColdStart");
    return 0;
}

static void run_with_pod(struct decider *d)
{
    const struct workspace_pod *p = d->keep;
    struct workspace_status *st = d->st;
    int resuming = resume_in_progress(st);
    set_string(d, &st->node_name, p->node_name);
    set_accelerator(d, pod_product(d, p), p->capacity_fallback);
    if (judge_unwanted_restore(d, p) || judge_restore(d, p))
        return;

    if (p->ready) {
        st->state = WS_STATE_RUNNING;
        st->waiting_for_capacity_since_ms = 0;
        condition(d, COND_READY, COND_TRUE, "PodReady", "pod %s is ready on %s", p->name,
                  node_or_unknown(p));
        condition(d, COND_CAPACITY, COND_TRUE, "Scheduled", "pod %s is scheduled on %s", p->name,
                  node_or_unknown(p));
        if (resuming) {
            struct workspace_resume_timeline *r = &st->last_resume;
            /* Pod times have whole seconds; the request has milliseconds. When
             * the pod's second cannot be told from the request's, the time we
             * saw it ready is the better figure (later by our cache's lag). */
            int64_t ready = p->ready_ms ? p->ready_ms : d->now;
            if (ready < r->requested_ms + 1000)
                ready = d->now > r->requested_ms ? d->now : r->requested_ms;
            /* A restored session is ready when its application answered. */
            if (restore_answered_ms(d, p) > ready)
                ready = restore_answered_ms(d, p);
            if (!r->pod_scheduled_ms)
                r->pod_scheduled_ms =
                    p->scheduled_ms && p->scheduled_ms > r->requested_ms ? p->scheduled_ms : ready;
            r->ready_ms = ready;
            r->seconds_to_ready = (double)(ready - r->requested_ms) / 1000.0;
            char occ[OCCASION_SIZE];
            const char *from = r->restored_from;
            transition_event(d, resume_occasion(d, occ), "Normal", "Resumed",
                             "ready %.1fs after the resume request (%s)", r->seconds_to_ready,
                             streq(from, "FreshHome") ? "on a new, empty home: the old one was lost"
                             : streq(from, "FromSnapshot") ? "from the snapshot"
                             : streq(from, "ColdStart")    ? "cold start: from files"
                             : p->restore_from_checkpoint  ? "from the application's checkpoint"
                                                           : "fresh start");
        }
        decide_idle(d);
        return;
    }
    if (p->unschedulable && !pod_is_scheduled(p)) {
        waiting_for_capacity(d);
        return;
    }
    if (pod_is_scheduled(p)) {
        st->waiting_for_capacity_since_ms = 0;
        condition(d, COND_CAPACITY, COND_TRUE, "Scheduled", "pod %s is scheduled on %s", p->name,
                  node_or_unknown(p));
        if (resuming && !st->last_resume.pod_scheduled_ms)
            st->last_resume.pod_scheduled_ms =
                p->scheduled_ms > st->last_resume.requested_ms ? p->scheduled_ms : d->now;
        if (!p->snapshot && crash_looping(p) && d->cls &&
            d->cls->snapshot.backend != SNAPSHOT_BACKEND_NONE) {
            /* Not restored: the application's own crash. Kubernetes restarts
             * it; replacing the pod would not help. */
            st->state = resuming                            ? WS_STATE_RESUMING
                        : d->old->state == WS_STATE_RUNNING ? WS_STATE_RUNNING
                                                            : WS_STATE_PENDING;
            condition(d, COND_READY, COND_FALSE, "CrashLoop",
                      "pod %s crash-loops (%d restarts) without having been restored from a "
                      "snapshot: the application itself fails; see the pod's logs",
                      p->name, p->restart_count);
            char occ[OCCASION_SIZE];
            if (!streq(condition_reason(d->old, COND_READY), "CrashLoop"))
                transition_event(d, pod_occasion(p->name, occ), "Warning", "CrashLoop",
                                 "pod %s crash-loops (%d restarts) without a restore from a "
                                 "snapshot: the application's own failure",
                                 p->name, p->restart_count);
        } else if (resuming) {
            st->state = WS_STATE_RESUMING;
            condition(d, COND_READY, COND_FALSE, "PodStarting", "pod %s is starting on %s", p->name,
                      node_or_unknown(p));
        } else if (d->old->state == WS_STATE_RUNNING) {
            /* It was ready and is not now (a crash, a failing probe): still
             * running, on the same node and accelerator. */
            st->state = WS_STATE_RUNNING;
            condition(d, COND_READY, COND_FALSE, "PodNotReady", "pod %s on %s is not ready",
                      p->name, node_or_unknown(p));
        } else {
            st->state = WS_STATE_PENDING;
            condition(d, COND_READY, COND_FALSE, "PodStarting", "pod %s is starting on %s", p->name,
                      node_or_unknown(p));
        }
        return;
    }
    st->state = resuming ? WS_STATE_RESUMING : WS_STATE_PENDING;
    condition(d, COND_READY, COND_FALSE, "PodPending", "pod %s is waiting to be scheduled",
              p->name);
}

/* The snapshot a resume restores from, or NULL with why (empty when the
 * class has no backend: nothing to explain). docs/snapshots.md. */
static const char *restore_snapshot(struct decider *d, char *why, size_t size)
{
    const struct workspace_status *st = d->st;
    const struct workspace_snapshot *sn = &st->snapshot;
    const struct snapshot_config *sc = &d->cls->snapshot;
    why[0] = '\0';
    if (sc->backend == SNAPSHOT_BACKEND_NONE)
        return NULL;
    if (!sn->attempt || sn->requested_ms < st->last_pause.requested_ms ||
        !streq(sn->phase, "Ready")) {
        snprintf(why, size, "the last pause has no snapshot%s%s", sn->message ? ": " : "",
                 sn->message ? sn->message : "");
        return NULL;
    }
    const char *name = sn->name ? sn->name : sn->attempt;
    if (sn->restore_failed_ms) {
        if (streq(condition_reason(st, COND_RESTORED), "RestoreUnresponsive"))
            snprintf(why, size, "the application restored from snapshot %s did not answer", name);
        else
            snprintf(why, size, "the restore from snapshot %s crashed", name);
        return NULL;
    }
    const struct snapshot_view *v = d->in->snapshot;
    if (v && streq(v->attempt, sn->attempt) && v->phase == SNAPSHOT_PHASE_NONE) {
        snprintf(why, size, "snapshot %s no longer exists", name);
        return NULL;
    }
    if (v && streq(v->attempt, sn->attempt) && snapshot_rejected(sn, v)) {
        snprintf(why, size, "snapshot %s is deleted: a pod was restored from it unasked", name);
        return NULL;
    }
    if (sn->ready_ms && d->now - sn->ready_ms > sc->last_access_timeout_ms) {
        snprintf(why, size, "snapshot %s expired", name);
        return NULL;
    }
    /* The restore is pinned to the snapshot's product: any the class still
     * allows. */
    const struct workspace_class *c = d->cls;
    if (c->has_accelerator ? !workspace_class_allows_product(c, sn->gpu_product)
                           : sn->gpu_product != NULL) {
        char products[PRODUCTS_TEXT];
        allowed_products(c, " or ", products, sizeof(products));
        snprintf(why, size, "snapshot %s was taken on %s, the class now asks for %s", name,
                 sn->gpu_product ? sn->gpu_product : "no GPU",
                 c->has_accelerator ? products : "no GPU");
        return NULL;
    }
    char hash[POD_SPEC_HASH_SIZE], with_product[POD_SPEC_HASH_SIZE];
    if (workspace_pod_spec_hash(d->ws, c, hash) < 0 ||
        workspace_pod_spec_hash_with_product(d->ws, c, sn->gpu_product, with_product) < 0) {
        failed(d, -ENOMEM);
        return NULL;
    }
    if (!streq(hash, sn->pod_spec_hash) && !streq(with_product, sn->pod_spec_hash)) {
        snprintf(why, size,
                 "the pod template changed since snapshot %s (image, resources or class)", name);
        return NULL;
    }
    if (sn->home_claim_uid && !streq(sn->home_claim_uid, st->home.claim_uid)) {
        snprintf(why, size, "snapshot %s was taken with home claim %s, which is gone", name,
                 sn->home_claim_uid);
        return NULL;
    }
    /* A pod of the workspace was ready since the resume: the session went
     * on from the snapshot, and its memory is older than the files. */
    if (!resume_in_progress(st)) {
        snprintf(why, size, "the session went on after snapshot %s was restored", name);
        return NULL;
    }
    return name;
}

/* A backend may restore any new pod of the workspace from a snapshot that
 * matches it (GKE does). A pod from files has a snapshot group no snapshot
 * has, so after a restore crashed it need not wait — unless the snapshot was
 * taken without a group (by an earlier version, under a policy without
 * grouping): then the new pod waits until that snapshot is gone, or it
 * would come back crashing. After a pod was restored unasked, the grouping
 * did not hold: the next one waits until every rejected snapshot is gone.
 * Returns the snapshot waited for, NULL: none. */
static const char *snapshot_in_the_way(struct decider *d)
{
    const struct workspace_snapshot *sn = &d->st->snapshot;
    for (size_t i = 0; i < d->in->n_snapshots; i++) {
        const struct snapshot_view *v = &d->in->snapshots[i];
        const char *name = v->name ? v->name : v->attempt;
        if (snapshot_rejected(sn, v))
            return name;
        /* Deleting: rejected when it was still Ready. */
        if (sn->rejected_ms && v->deleting_ms && v->ready_ms && v->ready_ms <= sn->rejected_ms &&
            (streq(sn->rejected_group, "*") || streq(sn->rejected_group, v->group)))
            return name;
    }
    if (!sn->restore_failed_ms || sn->group || !d->cls ||
        d->cls->snapshot.backend == SNAPSHOT_BACKEND_NONE)
        return NULL;
    for (size_t i = 0; i < d->in->n_snapshots; i++)
        if (streq(d->in->snapshots[i].attempt, sn->attempt))
            return sn->name ? sn->name : sn->attempt;
    return NULL;
}

/* The wait for capacity ran out (fall_back() decided, or the pass that did
 * was lost before its status write). */
static int fallback_due(const struct decider *d)
{
    const struct workspace_status *st = d->st;
    if (!falls_back(d->cls))
        return 0;
    return st->accelerator_fallback ||
           (st->waiting_for_capacity_since_ms &&
            d->now >= st->waiting_for_capacity_since_ms + d->cls->capacity_timeout_ms);
}

/* A resume whose pause's snapshot the backend has not settled yet (the
 * controller died before recording it, and the backend's caches are still
 * syncing, or it is still being taken) waits for the answer, at most the
 * class's snapshot timeout: a pod created meanwhile would start from files
 * while the backend may restore it from that very snapshot. */
static int snapshot_pending(struct decider *d)
{
    const struct workspace_status *st = d->st;
    if (!resume_in_progress(st) || !d->cls || d->cls->snapshot.backend == SNAPSHOT_BACKEND_NONE ||
        !snapshot_current(st) || !streq(st->snapshot.phase, "InProgress"))
        return 0;
    int64_t until = st->last_resume.requested_ms + d->cls->snapshot.timeout_ms;
    if (d->now >= until)
        return 0;
    requeue_at(d, until);
    return 1;
}

static void create_pod(struct decider *d)
{
    struct workspace_status *st = d->st;
    int resuming = resume_in_progress(st);
    /* After a pause or an interruption the application may have left a
     * checkpoint on home; the pod is told where. */
    int from_checkpoint = st->pauses > 0 || st->interruptions > 0;
    int fallback = fallback_due(d);
    char *name = NULL;
    if (home_awaits_acknowledgement(d)) {
        st->state = resuming ? WS_STATE_RESUMING : WS_STATE_PENDING;
        condition(d, COND_READY, COND_FALSE, "HomeLost",
                  "no pod starts: the home claim (uid %s) was lost; annotate the Workspace "
                  "with " ACKNOWLEDGE_HOME_LOSS_ANNOTATION "=%s to start on a new, empty home",
                  st->home.lost_claim_uid ? st->home.lost_claim_uid : "",
                  st->home.lost_claim_uid ? st->home.lost_claim_uid : "");
        return;
    }
    if (snapshot_pending(d)) {
        st->state = WS_STATE_RESUMING;
        condition(d, COND_READY, COND_FALSE, "Snapshotting",
                  "waiting for the snapshot backend to say whether snapshot %s is ready, so "
                  "that the new pod starts from it or from files",
                  st->snapshot.attempt);
        return;
    }
    const char *in_the_way = snapshot_in_the_way(d);
    if (in_the_way) {
        st->state = resuming ? WS_STATE_RESUMING : WS_STATE_PENDING;
        condition(d, COND_READY, COND_FALSE, "PodTerminating",
                  "waiting for snapshot %s to be removed, so that the new pod starts from files",
                  in_the_way);
        requeue_at(d, d->now + 2000);
        return;
    }
    /* A retry gets a new name: the failed pod was seen, so a cache that no
     * longer shows it is not merely behind. */
    int is_new = !st->pod_name || d->retry;
    if (is_new) {
        name = workspace_pod_name(d->ws, st->pod_generation + 1);
        if (!name) {
            failed(d, -ENOMEM);
            return;
        }
        st->pod_generation++;
        free(st->pod_name);
        st->pod_name = name;
        set_string(d, &st->pod_uid, NULL);
        /* The scheduler has not judged the new pod yet. */
        workspace_status_remove_condition(st, COND_CAPACITY);
        /* The first pod after an interruption (and no pause since) replaces
         * the interrupted one. */
        struct workspace_interruption *li = &st->last_interruption;
        if (li->pod && !li->replaced_by && li->at_ms >= st->last_pause.requested_ms)
            set_string(d, &li->replaced_by, name);
        /* The first pod on a home made after the last one was lost. */
        if (st->home.lost_ms && !st->home.fresh_pod)
            set_string(d, &st->home.fresh_pod, name);
    }
    /* Nothing of the session is on a new home: no checkpoint, no snapshot
     * to lay over it. */
    int fresh_home = on_fresh_home(d, st->pod_name);
    if (fresh_home)
        from_checkpoint = 0;
    /* Not new: the status names a pod that the cache does not show. It was
     * created in an earlier pass the cache has not caught up with, or it is
     * gone. Creating it again under the same name is right either way: the
     * API server answers AlreadyExists in the first case, and no second pod
     * can ever appear. */
    char why[MAX_MESSAGE] = "";
    /* A fallback may land on another product than the snapshot's: it starts
     * from files and the checkpoint. */
    const char *snapshot =
        from_checkpoint && !fallback ? restore_snapshot(d, why, sizeof(why)) : NULL;
    if (fresh_home && st->pauses > 0 && d->cls->snapshot.backend != SNAPSHOT_BACKEND_NONE &&
        snapshot_current(st) && streq(st->snapshot.phase, "Ready"))
        snprintf(why, sizeof(why),
                 "snapshot %s was taken with home claim %s, which is gone: it is not laid over "
                 "a new, empty home",
                 st->snapshot.name ? st->snapshot.name : st->snapshot.attempt,
                 st->snapshot.home_claim_uid ? st->snapshot.home_claim_uid : "(unrecorded)");
    const char *pin = snapshot && d->cls->has_accelerator ? st->snapshot.gpu_product : NULL;
    struct action *a = push(d, ACTION_CREATE_POD, st->pod_name);
    /* A pod made under the name (a fallback's, or a replacement after a
     * lost status write) is a new one: its uid is learnt when it is seen,
     * and its end is judged anew. */
    set_string(d, &st->pod_uid, NULL);
    set_string(d, &st->deleted_pod, NULL);
    /* A restore joins its snapshot's group (none for one taken before
     * groups: the policy then has none either); any other pod a group of
     * its own, which no snapshot has. */
    char fresh[SNAPSHOT_GROUP_SIZE];
    const char *group = snapshot ? st->snapshot.group
                        : workspace_snapshot_group(d->ws, st->pod_generation, fresh) == 0 ? fresh
                                                                                          : NULL;
    if (a) {
        a->from_checkpoint = from_checkpoint;
        a->capacity_fallback = fallback;
        if ((snapshot && !(a->snapshot = strdup(snapshot))) ||
            (pin && !(a->product = strdup(pin))) || (group && !(a->group = strdup(group))))
            failed(d, -ENOMEM);
    }
    set_string(d, &st->node_name, NULL);
    set_accelerator(d, fallback ? NULL : pin ? pin : d->cls->product, fallback);
    st->waiting_for_capacity_since_ms = 0;
    if (resuming && !st->last_resume.pod_created_ms)
        st->last_resume.pod_created_ms = d->now;
    if (snapshot) {
        condition(d, COND_RESTORED, COND_UNKNOWN, "Restoring",
                  "pod %s is restored from snapshot %s", st->pod_name, snapshot);
        if (resuming)
            set_string(d, &st->last_resume.restored_from, NULL);
    } else if (fresh_home) {
        set_restored(d, st->pod_name, 0);
        char occ[OCCASION_SIZE];
        if (why[0])
            transition_event(d, pod_occasion(st->pod_name, occ), "Warning", "SnapshotNotUsed", "%s",
                             why);
    } else if (fallback) {
        char products[PRODUCTS_TEXT], timeout[32];
        allowed_products(d->cls, ", ", products, sizeof(products));
        format_duration(d->cls->capacity_timeout_ms, timeout, sizeof(timeout));
        set_restored(d, st->pod_name, from_checkpoint);
        if (from_checkpoint)
            condition(d, COND_RESTORED, COND_TRUE, "FromCheckpoint",
                      "pod %s starts from the application's checkpoint (%s=%s), not from a "
                      "snapshot: after the capacity timeout (%s) it may run on any of %s",
                      st->pod_name, d->cls->checkpoint_env ? d->cls->checkpoint_env : "checkpoint",
                      d->cls->checkpoint_path ? d->cls->checkpoint_path : "", timeout, products);
        else
            condition(d, COND_RESTORED, COND_TRUE, "Fresh",
                      "pod %s starts fresh: the workspace was never paused; after the capacity "
                      "timeout (%s) it may run on any of %s",
                      st->pod_name, timeout, products);
    } else {
        set_restored(d, st->pod_name, from_checkpoint);
        if (why[0] && from_checkpoint) {
            workspace_message_one_line(why);
            condition(d, COND_RESTORED, COND_TRUE, "FromCheckpoint",
                      "pod %s starts from the application's checkpoint: %s", st->pod_name, why);
            const struct condition *before = workspace_status_condition(d->old, COND_RESTORED);
            const struct condition *now = workspace_status_condition(st, COND_RESTORED);
            char occ[OCCASION_SIZE];
            if (!before || !now || !streq(before->message, now->message))
                transition_event(d, pod_occasion(st->pod_name, occ), "Warning", "SnapshotNotUsed",
                                 "%s; starting from files and the checkpoint", why);
        }
    }
    st->state = resuming ? WS_STATE_RESUMING : WS_STATE_PENDING;
    condition(d, COND_READY, COND_FALSE, "PodPending", "pod %s is waiting to be scheduled",
              st->pod_name);
    char occ[OCCASION_SIZE];
    if (is_new && !resuming)
        transition_event(d, pod_occasion(st->pod_name, occ), "Normal", "Created",
                         "created pod %s (%s)", st->pod_name,
                         fresh_home        ? "on a new, empty home"
                         : from_checkpoint ? "from the application's checkpoint"
                                           : "fresh");
}

/* ---- idle (docs/idle.md) ---- */

static void requeue_at(struct decider *d, int64_t at_ms)
{
    if (at_ms <= 0)
        return;
    int64_t after = at_ms > d->now ? at_ms - d->now : 1;
    if (!d->out->requeue_after_ms || after < d->out->requeue_after_ms)
        d->out->requeue_after_ms = after;
}

/* Entering Running counts as activity and forgets what came before. */
static void reset_activity(struct decider *d)
{
    struct workspace_activity *a = &d->st->activity;
    d->st->state_since_ms = d->now; /* running since, also after a resume from Running */
    a->last_activity_ms = d->now;
    set_string(d, &a->last_activity_source, "start");
    a->last_probe_ms = 0;
    set_string(d, &a->last_probe_result, NULL);
    set_string(d, &a->last_probe_error, NULL);
    a->idle_since_ms = 0;
    a->pause_at_ms = 0;
}

/* Outside Running nothing is idle: the conditions go, the record of the last
 * activity stays (when work ended). */
static void clear_idle(struct decider *d)
{
    struct workspace_activity *a = &d->st->activity;
    workspace_status_remove_condition(d->st, COND_IDLE);
    workspace_status_remove_condition(d->st, COND_PROBE);
    a->last_probe_ms = 0;
    set_string(d, &a->last_probe_result, NULL);
    set_string(d, &a->last_probe_error, NULL);
    a->idle_since_ms = 0;
    a->pause_at_ms = 0;
}

static void idle_policy_condition(struct decider *d, const struct idle_policy *pol, int clamped,
                                  const char *problem)
{
    if (!d->ws->idle_after_ms) {
        workspace_status_remove_condition(d->st, COND_IDLE_POLICY);
        return;
    }
    const struct condition *old = workspace_status_condition(d->old, COND_IDLE_POLICY);
    if (clamped) {
        condition(d, COND_IDLE_POLICY, COND_FALSE, "OutOfBounds", "%s", problem);
        if (!old || old->status != COND_FALSE || !streq(old->message, problem))
            event(d, "Warning", "IdlePolicyOutOfBounds", "%s", problem);
    } else {
        char after[32];
        format_duration(pol->after_ms, after, sizeof(after));
        condition(d, COND_IDLE_POLICY, COND_TRUE, "Accepted", "spec.idle.after %s applies", after);
    }
}

static void record_probe(struct decider *d, const struct activity_observation *obs,
                         const struct idle_policy *pol)
{
    struct workspace_activity *a = &d->st->activity;
    const char *word = idle_probe_result_word(&obs->result, pol->gpu_threshold_percent);
    const char *error = obs->result.ok ? NULL : obs->result.error;
    if (!streq(a->last_probe_result, word) || !streq(a->last_probe_error, error) ||
        obs->probed_at_ms - a->last_probe_ms >= PROBE_RECORD_STEP_MS) {
        a->last_probe_ms = obs->probed_at_ms;
        set_string(d, &a->last_probe_result, word);
        set_string(d, &a->last_probe_error, error);
    }
    if (obs->result.ok)
        condition(d, COND_PROBE, COND_TRUE, "Succeeded", "the activity probe answers");
    else
        condition(d, COND_PROBE, COND_FALSE, "Failed", "%s", obs->result.error);
}

static void auto_pause(struct decider *d, const struct idle_policy *pol,
                       const struct idle_verdict *v)
{
    const struct activity_observation *obs = d->in->activity;
    char since[TIMEFMT_RFC3339_SIZE], probed[TIMEFMT_RFC3339_SIZE], idle_for[32], after[32];
    timefmt_rfc3339_text(v->last_activity_ms, since);
    timefmt_rfc3339_text(obs->probed_at_ms, probed);
    format_duration(d->now - v->last_activity_ms, idle_for, sizeof(idle_for));
    format_duration(pol->after_ms, after, sizeof(after));
    char gpu[96] = "";
    if (strstr(obs->result.source, "gpu") && obs->result.no_data)
        snprintf(gpu, sizeof(gpu), "; GPU utilisation: no data");
    else if (strstr(obs->result.source, "gpu"))
        snprintf(gpu, sizeof(gpu), "; GPU utilisation %.0f%% < %d%%", obs->result.gpu_utilisation,
                 pol->gpu_threshold_percent);
    struct action *a = push(d, ACTION_AUTO_PAUSE, NULL);
    if (!a)
        return;
    a->time_ms = d->now;
    if (asprintf(&a->message,
                 "idle for %s (no activity since %s, %s), idle-after %s; %d connection(s)%s; "
                 "confirmed by the probe at %s",
                 idle_for, since, v->source, after, obs->result.connections, gpu, probed) < 0) {
        a->message = NULL;
        failed(d, -ENOMEM);
        return;
    }
    if (!(a->reason = strdup("IdleTimeout")))
        failed(d, -ENOMEM);
}

static void decide_idle(struct decider *d)
{
    const struct workspace *ws = d->ws;
    struct workspace_status *st = d->st;
    struct workspace_activity *a = &st->activity;
    struct idle_policy pol;
    char problem[IDLE_PROBLEM_SIZE];
    int clamped = idle_policy_resolve(d->cls, ws, &pol, problem, sizeof(problem));
    idle_policy_condition(d, &pol, clamped, problem);
    a->idle_after_seconds = pol.after_ms / 1000;

    /* The status keeps whole seconds: a value with a fraction is the same
     * value when it comes back. */
    if (ws->keep_alive_until_ms / 1000 != a->keep_alive_requested_ms / 1000) {
        a->keep_alive_requested_ms = ws->keep_alive_until_ms;
        a->keep_alive_until_ms =
            idle_keep_alive_bound(ws->keep_alive_until_ms, d->now, pol.max_keep_alive_ms);
    }

    /* A resume counted in this very pass is a start too, and so is the
     * controller's own pause of this announcement taken back by the user
     * before a pass saw it. */
    int64_t announced_pause = d->old->activity.pause_at_ms;
    int taken_back = announced_pause && ws->auto_paused_ms >= announced_pause;
    int entering =
        d->old->state != WS_STATE_RUNNING || st->resumes != d->old->resumes || taken_back;
    if (entering)
        reset_activity(d);
    int64_t running_since = entering || !d->old->state_since_ms ? d->now : d->old->state_since_ms;

    const struct condition *idle = workspace_status_condition(d->old, COND_IDLE);
    int announced =
        !entering && idle && idle->status == COND_TRUE && streq(idle->reason, "PauseScheduled");
    const struct activity_observation *obs = d->in->activity;
    struct idle_input in = {
        .policy = &pol,
        .zone = d->in->zone,
        .now_ms = d->now,
        .running_since_ms = running_since,
        .obs = obs,
        .recorded_activity_ms = a->last_activity_ms,
        .recorded_source = a->last_activity_source,
        .annotated_activity_ms = ws->annotated_activity_ms,
        .keep_alive_until_ms = a->keep_alive_until_ms,
        .announced = announced,
        .announced_pause_at_ms = d->old->activity.pause_at_ms,
        .announced_idle_since_ms = d->old->activity.idle_since_ms,
    };
    struct idle_verdict v;
    idle_evaluate(&in, &v);
    d->out->probe_wanted = pol.has_sources;

    if (obs && obs->probed_at_ms >= running_since && pol.has_sources)
        record_probe(d, obs, &pol);
    else if (!pol.has_sources)
        workspace_status_remove_condition(st, COND_PROBE);

    /* The record follows the verdict exactly when something is announced,
     * cancelled or carried out, and in steps otherwise. */
    int exact = v.announce || v.cancelled || v.pause_now;
    if (v.last_activity_ms > a->last_activity_ms &&
        (exact || v.last_activity_ms - a->last_activity_ms >= ACTIVITY_RECORD_STEP_MS ||
         a->last_activity_ms < running_since || !streq(v.source, a->last_activity_source))) {
        a->last_activity_ms = v.last_activity_ms;
        set_string(d, &a->last_activity_source, v.source);
    }
    a->idle_since_ms = v.idle_since_ms;
    a->pause_at_ms = v.pause_at_ms;

    enum condition_status cs = v.state == IDLE_STATE_UNKNOWN  ? COND_UNKNOWN
                               : v.state == IDLE_STATE_ACTIVE ? COND_FALSE
                                                              : COND_TRUE;
    condition(d, COND_IDLE, cs, v.reason, "%s", v.message);
    if (v.cancelled) {
        char at[TIMEFMT_RFC3339_SIZE];
        timefmt_rfc3339_text(d->old->activity.pause_at_ms, at);
        event(d, "Normal", "IdleCancelled", "the pause announced for %s is cancelled: %s", at,
              v.state == IDLE_STATE_PAUSE_SCHEDULED ? "there was activity since" : v.message);
    }
    if (v.announce)
        event(d, "Warning", "IdleWarning", "%s", v.message);
    requeue_at(d, v.recheck_at_ms);
    d->out->probe_now = v.probe_now;
    if (v.pause_now) {
        /* Only on a settled world: a pass that also removes a pod decides
         * again once it is gone. */
        int settled = 1;
        for (size_t i = 0; i < d->out->n_actions; i++)
            if (d->out->actions[i].type == ACTION_CREATE_POD ||
                d->out->actions[i].type == ACTION_DELETE_POD)
                settled = 0;
        if (settled)
            auto_pause(d, &pol, &v);
        else
            requeue_at(d, d->now + 1000);
    }
}

/* The application was asked for its checkpoint, and what asked is over
 * before it answered: unpaused (the pause is cancelled), or the pod
 * stopped or went (nothing is left to snapshot). No snapshot follows. The
 * request is recorded as cancelled, why in its message (an answer that
 * still comes is not awaited), and SnapshotReady no longer says
 * Checkpointing. A later pause asks again under its own attempt, with a
 * fresh record. */
static void checkpoint_cancelled(struct decider *d, const char *why)
{
    struct workspace_snapshot *sn = &d->st->snapshot;
    if (!sn->checkpoint_attempt || sn->checkpoint_result)
        return;
    char msg[MAX_MESSAGE];
    snprintf(msg, sizeof(msg), "%s before the application answered; no snapshot was taken", why);
    sn->checkpoint_answered_ms = d->now;
    set_string(d, &sn->checkpoint_result, "Cancelled");
    set_string(d, &sn->checkpoint_message, msg);
    condition(d, COND_SNAPSHOT, COND_FALSE, "Cancelled",
              "the application was asked for its checkpoint before snapshot %s, and %s; no "
              "snapshot was taken",
              sn->checkpoint_attempt, why);
}

static void decide_run(struct decider *d)
{
    struct workspace_status *st = d->st;
    const struct workspace_status *old = d->old;

    /* 5c: after a capacity timeout with onCapacityTimeout Fail, nothing is
     * retried until the user changes the spec. */
    int failed_for_capacity = old->state == WS_STATE_FAILED &&
                              streq(condition_reason(old, COND_CAPACITY), "CapacityTimeout");
    d->retry = failed_for_capacity && old->observed_generation != d->ws->generation;
    if (d->retry)
        st->waiting_for_capacity_since_ms = 0; /* a new attempt, a new clock */
    if (failed_for_capacity && !d->retry) {
        adopt(d);
        if (d->keep)
            own_delete_pod(d, d->keep, 0);
        else if (!d->n_leaving) {
            set_string(d, &st->pod_name, NULL);
            set_string(d, &st->pod_uid, NULL);
            set_string(d, &st->node_name, NULL);
        }
        return;
    }
    /* A pause whose end no pass recorded (its pod went while the controller
     * was down, or the pass that saw it died before its status write) ended
     * by now: its record is completed before the resume. */
    if (in_pause(st) && !d->keep && !d->n_leaving && !st->last_pause.accelerator_released_ms)
        st->last_pause.accelerator_released_ms = d->now;
    if (in_pause(st))
        begin_resume(d);
    checkpoint_cancelled(d, "the pause was cancelled (spec.paused false)");
    adopt(d);
    if (d->keep)
        snapshot_after_unpause(d, d->keep);
    if (d->keep) {
        run_with_pod(d);
        return;
    }
    if (resume_in_progress(st))
        snapshot_settle(d);
    if (d->n_leaving) {
        wait_for_leaving(d, d->leaving->name);
        return;
    }
    create_pod(d);
}

/* ---- rule 6: pause ---- */

/* ---- snapshots (docs/snapshots.md) ---- */

static void snapshot_begin(struct decider *d, const struct workspace_pod *p, int64_t attempt)
{
    struct workspace_status *st = d->st;
    struct workspace_snapshot *sn = &st->snapshot;
    char handle[NAMES_SIZE], hash[POD_SPEC_HASH_SIZE];
    /* Derived from counters in the status: after a crash before the status
     * write the same call is made again, never a second snapshot. At most 63
     * characters: GKE puts it in a label value of the PodSnapshot. */
    if (names_snapshot_handle(d->ws->name, st->pauses, attempt, handle) < 0) {
        failed(d, -EINVAL);
        return;
    }
    if (workspace_pod_spec_hash(d->ws, d->cls, hash) < 0) {
        failed(d, -ENOMEM);
        return;
    }
    set_string(d, &sn->attempt, handle);
    sn->attempts = attempt;
    set_string(d, &sn->name, NULL);
    set_string(d, &sn->phase, "InProgress");
    sn->requested_ms = d->now;
    sn->ready_ms = 0;
    sn->failed_ms = 0;
    /* A new snapshot: an earlier one's crashed restore says nothing of it. */
    sn->restore_failed_ms = 0;
    sn->seconds = 0;
    set_string(d, &sn->node_name, p->node_name);
    /* What the pod really runs on: a restore is pinned to this product. */
    set_string(d, &sn->gpu_product, pod_product(d, p));
    set_string(d, &sn->pod_spec_hash, hash);
    set_string(d, &sn->message, NULL);
    set_string(d, &sn->home_claim_uid, st->home.claim_uid);
    /* The group the PodSnapshot gets (the backend copies the pod's label).
     * A pod of an earlier version has none: its snapshot is taken as
     * before, under a policy without groups, and restored without one. */
    set_string(d, &sn->group, p->group);
    struct action *a = push(d, ACTION_SNAPSHOT_BEGIN, handle);
    if (a && p->group && !(a->group = strdup(p->group)))
        failed(d, -ENOMEM);
    condition(d, COND_SNAPSHOT, COND_FALSE, "InProgress", "taking snapshot %s of pod %s", handle,
              p->name);
    requeue_at(d, d->now + d->cls->snapshot.timeout_ms);
}

/* Before each attempt of a pause's snapshot the application is asked to
 * write its checkpoint (the class's checkpoint.request), and the snapshot
 * waits for the answer up to the request's timeout: the checkpoint is then
 * on the home volume before the memory snapshot, and the snapshot's
 * postCheckpoint: stop keeps anything from writing there after it. A
 * failed or unanswered request is reported and the snapshot is taken all
 * the same: the snapshot holds the session; the files keep what the
 * application saved last on its own. The answer is recorded in
 * status.snapshot.appCheckpoint before the snapshot starts, so a
 * controller that restarts in between decides on the record. */
static void snapshot_prepare(struct decider *d, const struct workspace_pod *p, int64_t attempt)
{
    const struct checkpoint_request *cr = &d->cls->checkpoint_request;
    struct workspace_snapshot *sn = &d->st->snapshot;
    if (!cr->url_template) {
        snapshot_begin(d, p, attempt);
        return;
    }
    char handle[NAMES_SIZE];
    if (names_snapshot_handle(d->ws->name, d->st->pauses, attempt, handle) < 0) {
        failed(d, -EINVAL);
        return;
    }
    if (!streq(sn->checkpoint_attempt, handle)) {
        set_string(d, &sn->checkpoint_attempt, handle);
        sn->checkpoint_requested_ms = d->now;
        sn->checkpoint_answered_ms = 0;
        set_string(d, &sn->checkpoint_result, NULL);
        set_string(d, &sn->checkpoint_message, NULL);
    }
    if (!sn->checkpoint_result) {
        const struct app_checkpoint_seen *seen = d->in->app_checkpoint;
        if (seen && !streq(seen->attempt, handle))
            seen = NULL;
        int64_t deadline = sn->checkpoint_requested_ms + cr->timeout_ms;
        char limit[32], msg[MAX_MESSAGE];
        format_duration(cr->timeout_ms, limit, sizeof(limit));
        if (seen && seen->answered) {
            int64_t at = seen->answered_ms;
            sn->checkpoint_answered_ms = at < sn->checkpoint_requested_ms
                                             ? sn->checkpoint_requested_ms
                                         : at > d->now ? d->now
                                                       : at;
            set_string(d, &sn->checkpoint_result, seen->written ? "Written" : "Failed");
            snprintf(msg, sizeof(msg), "%s",
                     seen->message && seen->message[0] ? seen->message : "no reason given");
        } else if (d->now >= deadline) {
            sn->checkpoint_answered_ms = d->now;
            set_string(d, &sn->checkpoint_result, "Timeout");
            snprintf(msg, sizeof(msg), "no answer within %s", limit);
        } else {
            /* A request this process does not know (none made yet, or made
             * before a restart) is made; one in flight is waited for. */
            struct action *a = seen ? NULL : push(d, ACTION_APP_CHECKPOINT, handle);
            if (a)
                a->time_ms = deadline;
            condition(d, COND_SNAPSHOT, COND_FALSE, "Checkpointing",
                      "asking the application in pod %s to write its checkpoint before snapshot "
                      "%s (at most %s)",
                      p->name, handle, limit);
            requeue_at(d, deadline);
            return;
        }
        if (!streq(sn->checkpoint_result, "Written")) {
            workspace_message_one_line(msg);
            set_string(d, &sn->checkpoint_message, msg);
            int failed_answer = streq(sn->checkpoint_result, "Failed");
            transition_event(d, handle, "Warning",
                             failed_answer ? "CheckpointFailed" : "CheckpointTimeout",
                             "the application in pod %s did not confirm its checkpoint before "
                             "snapshot %s: %s; taking the snapshot anyway (a resume from files "
                             "gets what the application saved last on its own)",
                             p->name, handle, msg);
        }
    }
    snapshot_begin(d, p, attempt);
}

/* The pause's attempt: status.snapshot was started for the open pause (or
 * the last one). */
static int snapshot_current(const struct workspace_status *st)
{
    const struct workspace_snapshot *sn = &st->snapshot;
    return sn->attempt && sn->requested_ms >= st->last_pause.requested_ms;
}

/* p completed (phase Succeeded) after a snapshot of it was asked for, with
 * a backend whose snapshots stop the pod (GKE: postCheckpoint: stop): the
 * snapshot ended it, not a failure or an eviction. */
static int snapshot_stopped(const struct decider *d, const struct workspace_pod *p,
                            const struct workspace_status *st)
{
    const struct workspace_snapshot *sn = &st->snapshot;
    return d->cls && d->cls->snapshot.backend != SNAPSHOT_BACKEND_NONE && p && p->name &&
           streq(p->phase, "Succeeded") && streq(p->name, st->pod_name) && sn->attempt &&
           sn->requested_ms && (!p->created_ms || sn->requested_ms >= p->created_ms);
}

/* The backend's view of status.snapshot.attempt, NULL: nothing seen. */
static const struct snapshot_view *snapshot_seen(const struct decider *d)
{
    const struct snapshot_view *v = d->in->snapshot;
    return v && streq(v->attempt, d->st->snapshot.attempt) ? v : NULL;
}

/* Brings an attempt the status holds InProgress up to what the backend's
 * objects say: Ready (with the backend's ready time), Failed, or timed out.
 * This is the record's only source: a controller that died after acting on
 * a Ready snapshot (the pod's delete) and before its status write left
 * InProgress behind, and the next one reads the truth here, with the pod
 * running or gone (pod_kept: a pod still runs for it to retry on). A
 * backend that cannot say yet (its caches have not synced) decides
 * nothing. pod_name: the snapshot's pod, for the messages. */
static void snapshot_follow(struct decider *d, const char *pod_name, int pod_kept)
{
    const struct snapshot_config *sc = &d->cls->snapshot;
    struct workspace_status *st = d->st;
    struct workspace_snapshot *sn = &st->snapshot;
    if (streq(sn->phase, "Ready") || streq(sn->phase, "Failed"))
        return;
    const struct snapshot_view *v = snapshot_seen(d);
    if (v && v->unknown) {
        requeue_at(d, d->now + SNAPSHOT_UNKNOWN_RECHECK_MS);
        return;
    }
    if (v && v->phase == SNAPSHOT_PHASE_READY) {
        int64_t ready = v->ready_ms > sn->requested_ms ? v->ready_ms : d->now;
        set_string(d, &sn->phase, "Ready");
        set_string(d, &sn->name, v->name);
        sn->ready_ms = ready;
        sn->seconds = (double)(ready - sn->requested_ms) / 1000.0;
        condition(d, COND_SNAPSHOT, COND_TRUE, "Ready", "snapshot %s is ready (%.1fs)",
                  v->name ? v->name : sn->attempt, sn->seconds);
        transition_event(d, sn->attempt, "Normal", "SnapshotReady",
                         "snapshot %s of pod %s is ready after %.1fs",
                         v->name ? v->name : sn->attempt, pod_name ? pod_name : "?", sn->seconds);
        return;
    }
    if (v && v->name)
        set_string(d, &sn->name, v->name);
    int timed_out = d->now >= sn->requested_ms + sc->timeout_ms;
    if (!timed_out && !(v && v->phase == SNAPSHOT_PHASE_FAILED)) {
        requeue_at(d, sn->requested_ms + sc->timeout_ms);
        return;
    }
    char limit[32];
    format_duration(sc->timeout_ms, limit, sizeof(limit));
    const char *reason = v && v->phase == SNAPSHOT_PHASE_FAILED ? "Failed" : "Timeout";
    char msg[MAX_MESSAGE];
    if (streq(reason, "Failed"))
        snprintf(msg, sizeof(msg), "snapshot %s failed: %s", sn->attempt,
                 v->message && v->message[0] ? v->message : "no reason given");
    else
        snprintf(msg, sizeof(msg), "snapshot %s was not ready within %s", sn->attempt, limit);
    workspace_message_one_line(msg);
    set_string(d, &sn->phase, "Failed");
    set_string(d, &sn->message, msg);
    sn->failed_ms = d->now;
    condition(d, COND_SNAPSHOT, COND_FALSE, reason, "%s", msg);
    transition_event(d, sn->attempt, "Warning",
                     streq(reason, "Failed") ? "SnapshotFailed" : "SnapshotTimeout", "%s; %s", msg,
                     !pod_kept ? "no running pod is left to snapshot: pausing without memory "
                                 "(files and the application's checkpoint)"
                     : !d->ws->paused ? "the workspace was unpaused: the pod runs on"
                     : sc->on_failure == SNAPSHOT_ON_FAILURE_PAUSE_WITHOUT_MEMORY
                         ? "pausing without memory (files and the application's checkpoint)"
                         : "the pod keeps running; trying again later");
}

/* Unpaused after the pause's snapshot was asked for, its pod still
 * running: the backend goes on taking it (a trigger is not called back;
 * GKE's postCheckpoint: stop then ends the pod, and a new one follows).
 * The record follows it to Ready or Failed, and while it runs
 * SnapshotReady says the pause it was taken for is over. */
static void snapshot_after_unpause(struct decider *d, const struct workspace_pod *p)
{
    const struct workspace_status *st = d->st;
    if (!d->cls || d->cls->snapshot.backend == SNAPSHOT_BACKEND_NONE || !snapshot_current(st) ||
        !streq(st->snapshot.phase, "InProgress"))
        return;
    snapshot_follow(d, p->name, 1);
    if (streq(st->snapshot.phase, "InProgress"))
        condition(d, COND_SNAPSHOT, COND_FALSE, "InProgress",
                  "snapshot %s was asked for before the pause was cancelled; the backend goes on "
                  "taking it (GKE stops pod %s at its checkpoint and a new pod follows)",
                  st->snapshot.attempt, p->name);
}

/* With no pod of the pause left running, what became of its snapshot is
 * read from the backend (a crash may have kept it from the status). */
static void snapshot_settle(struct decider *d)
{
    const struct workspace_status *st = d->st;
    if (!d->cls || d->cls->snapshot.backend == SNAPSHOT_BACKEND_NONE || !snapshot_current(st) ||
        !streq(st->snapshot.phase, "InProgress"))
        return;
    const char *pod = d->leaving ? d->leaving->name : st->pod_name;
    snapshot_follow(d, pod, 0);
}

/* Whether the pod may be deleted for this pause: with a backend, only once
 * its snapshot is Ready, or when it failed and the class says to pause
 * without memory. Never before. */
static int snapshot_allows_delete(struct decider *d, const struct workspace_pod *p)
{
    const struct snapshot_config *sc = d->cls ? &d->cls->snapshot : NULL;
    struct workspace_status *st = d->st;
    struct workspace_snapshot *sn = &st->snapshot;
    if (!sc || sc->backend == SNAPSHOT_BACKEND_NONE || !in_pause(st))
        return 1;
    int current = snapshot_current(st);
    int running = pod_is_scheduled(p) && p->ready;
    if (current)
        snapshot_follow(d, p->name, running);
    if (!running)
        return 1; /* nothing running, nothing to keep */
    if (!current) {
        snapshot_prepare(d, p, 1);
        return 0;
    }
    if (streq(sn->phase, "Ready"))
        return 1;
    if (!streq(sn->phase, "Failed"))
        return 0; /* snapshot_follow() asked for the re-check */
    if (sc->on_failure == SNAPSHOT_ON_FAILURE_PAUSE_WITHOUT_MEMORY)
        return 1;
    /* Retry: a new attempt once retryAfter has passed since the failure. */
    int64_t failed_at = sn->failed_ms ? sn->failed_ms : d->now;
    if (d->now >= failed_at + sc->retry_after_ms)
        snapshot_prepare(d, p, sn->attempts + 1);
    else
        requeue_at(d, failed_at + sc->retry_after_ms);
    return 0;
}

/* ---- snapshot retention ---- */

/* A snapshot still in the backend's finalizer after this is reported. */
#define SNAPSHOT_STUCK_MS (5 * 60 * 1000)
#define MAX_SNAPSHOT_DELETES 4

static int newer_snapshot(const struct snapshot_view *a, const struct snapshot_view *b)
{
    return a->ready_ms > b->ready_ms;
}

/* Keep the class's number of snapshots (the one a pause or resume may still
 * need first, then the newest), drop the rest and the expired ones; say when
 * one is stuck in its finalizer. When deleting, every one goes and nothing
 * waits for them. Returns how many it would drop but left for a later pass
 * (at most MAX_SNAPSHOT_DELETES go per pass). */
static size_t snapshot_retention(struct decider *d, int deleting)
{
    const struct snapshot_view *all = d->in->snapshots;
    size_t n = d->in->n_snapshots;
    const struct snapshot_config *sc = d->cls ? &d->cls->snapshot : NULL;
    const struct workspace_snapshot *sn = &d->st->snapshot;
    /* The one a pause is taking or a resume may use stays, unless it expired
     * or its restore crashed. */
    int pausing = d->ws->paused || in_pause(d->st) || resume_in_progress(d->st);
    size_t deletes = 0, kept = 0, left = 0;
    char stuck[MAX_MESSAGE] = "";
    for (size_t i = 0; i < n && d->rc == 0; i++) {
        const struct snapshot_view *v = &all[i];
        if (v->deleting_ms) {
            if (d->now - v->deleting_ms >= SNAPSHOT_STUCK_MS && strlen(stuck) < 512)
                snprintf(stuck + strlen(stuck), sizeof(stuck) - strlen(stuck), "%s%s",
                         stuck[0] ? ", " : "", v->name ? v->name : "?");
            continue;
        }
        int drop = deleting;
        if (!drop && sc) {
            int current = sn->attempt && streq(v->attempt, sn->attempt);
            int expired = v->ready_ms && d->now - v->ready_ms > sc->last_access_timeout_ms;
            int in_use = current && pausing && !sn->restore_failed_ms;
            size_t rank = 0; /* newer live ones */
            for (size_t k = 0; k < n; k++)
                if (k != i && !all[k].deleting_ms && all[k].phase == SNAPSHOT_PHASE_READY &&
                    newer_snapshot(&all[k], v))
                    rank++;
            if (v->phase == SNAPSHOT_PHASE_IN_PROGRESS && current)
                continue; /* being taken */
            /* A crashed restore's group goes with it (the snapshots of that
             * session up to then). */
            int crashed_group = sn->restore_failed_ms && sn->group && streq(v->group, sn->group) &&
                                v->phase == SNAPSHOT_PHASE_READY &&
                                (!v->ready_ms || v->ready_ms <= sn->restore_failed_ms);
            drop = snapshot_rejected(sn, v) ||
                   (!in_use && (expired || (current && sn->restore_failed_ms) || crashed_group ||
                                v->phase == SNAPSHOT_PHASE_FAILED ||
                                rank + (in_use ? 0 : 1) > (size_t)sc->keep));
            if (!drop)
                kept++;
        }
        if (drop && v->name && deletes < MAX_SNAPSHOT_DELETES) {
            push(d, ACTION_SNAPSHOT_DELETE, v->name);
            deletes++;
        } else if (drop && v->name) {
            left++;
        }
    }
    if (deleting)
        return left;
    const char *type = "SnapshotCleanup";
    const struct condition *old = workspace_status_condition(d->old, type);
    if (stuck[0]) {
        condition(d, type, COND_FALSE, "FinalizerStuck",
                  "still being deleted after 5m (the backend's finalizer holds): %s", stuck);
        if (!old || old->status != COND_FALSE)
            event(d, "Warning", "SnapshotStuck",
                  "snapshots still being deleted after 5m: %s; check the snapshot backend", stuck);
    } else {
        workspace_status_remove_condition(d->st, type);
    }
    return left;
}

/* When a leaving pod's delete was sent: its deletionTimestamp less the grace
 * period the pause gives (the API server adds it), within the pause. */
static int64_t deleted_at(const struct decider *d, const struct workspace_pod *p)
{
    int64_t at = p->deletion_ms ? p->deletion_ms : d->now;
    if (p->deletion_ms && pod_is_scheduled(p))
        at -= grace_seconds(d) * 1000;
    if (at < d->st->last_pause.requested_ms)
        at = d->st->last_pause.requested_ms;
    return at < d->now ? at : d->now;
}

/* The pause's memory snapshot is Ready. */
static int snapshot_kept(const struct decider *d)
{
    const struct workspace_status *st = d->st;
    return d->cls && d->cls->snapshot.backend != SNAPSHOT_BACKEND_NONE && in_pause(st) &&
           snapshot_current(st) && streq(st->snapshot.phase, "Ready");
}

/* The pause's pod, completed by its snapshot and not yet deleted. */
static const struct workspace_pod *stopped_by_snapshot(const struct decider *d)
{
    if (!in_pause(d->st))
        return NULL;
    for (size_t i = 0; i < d->in->n_pods; i++) {
        const struct workspace_pod *p = d->in->pods[i];
        if (!p->deletion_ms && snapshot_stopped(d, p, d->st) && snapshot_current(d->st))
            return p;
    }
    return NULL;
}

static void decide_pause(struct decider *d)
{
    struct workspace_status *st = d->st;
    const struct workspace_pod *p = d->keep;
    int any_pod = p || d->n_leaving;
    adopt(d);

    /* A workspace created paused, or whose pod was already gone, has nothing
     * to pause: it is Paused without counting a pause. */
    if (!in_pause(st) && any_pod) {
        /* The controller's own pause names itself in annotations written with
         * spec.paused; an older one (before the last pause or resume) is
         * history. */
        const struct workspace *ws = d->ws;
        int idle = ws->auto_paused_ms && ws->auto_paused_ms > st->last_resume.requested_ms &&
                   ws->auto_paused_ms > st->last_pause.requested_ms &&
                   ws->auto_paused_ms <= d->now && ws->auto_paused_ms >= d->old->state_since_ms;
        st->pauses++;
        workspace_pause_timeline_clear(&st->last_pause);
        int64_t requested = idle ? ws->auto_paused_ms : d->now;
        st->last_pause.requested_ms = requested;
        /* When work ended: for the controller's own pause, the last activity
         * its decision was based on (the pass that decided it recorded it
         * exactly); for the user's, the request. */
        int64_t work = d->old->activity.last_activity_ms;
        st->last_pause.work_ended_ms = !idle ? requested : work < requested ? work : requested;
        set_string(d, &st->last_pause.reason, idle ? "IdleTimeout" : "User");
        if (idle && ws->auto_pause_message) {
            char msg[MAX_MESSAGE + 1];
            snprintf(msg, sizeof(msg), "%s", ws->auto_pause_message);
            workspace_message_one_line(msg);
            set_string(d, &st->last_pause.message, msg);
        }
        char occ[OCCASION_SIZE];
        pause_occasion(d, occ);
        if (idle)
            transition_event(d, occ, "Normal", "IdleTimeout", "pausing idle workspace: %s",
                             st->last_pause.message ? st->last_pause.message : "idle");
        else
            transition_event(d, occ, "Normal", "Pausing", "pause requested: stopping pod %s",
                             p ? p->name : d->leaving->name);
    }
    st->waiting_for_capacity_since_ms = 0;
    if (!p && in_pause(st))
        checkpoint_cancelled(d, "the pod stopped or went (no running pod is left to snapshot)");
    if (!p && in_pause(st))
        snapshot_settle(d);
    if (p && !snapshot_allows_delete(d, p)) {
        st->state = WS_STATE_PAUSING;
        condition(d, COND_READY, COND_FALSE, "Snapshotting",
                  "pod %s keeps running until its snapshot is ready", p->name);
        return;
    }
    if (p) {
        /* A pod that never got a node holds nothing worth a grace period.
         * Nor one whose memory snapshot is Ready: what it wrote to home
         * after the snapshot (a checkpoint on SIGTERM) would not match the
         * memory a resume restores, and the restore would fail. */
        int64_t grace = pod_is_scheduled(p) && !snapshot_kept(d) ? grace_seconds(d) : 0;
        own_delete_pod(d, p, grace);
        if (in_pause(st) && !st->last_pause.pod_deleted_ms)
            st->last_pause.pod_deleted_ms = d->now;
        st->state = WS_STATE_PAUSING;
        condition(d, COND_READY, COND_FALSE, "Pausing", "pod %s is stopping", p->name);
        return;
    }
    const struct workspace_pod *done = stopped_by_snapshot(d);
    if (done && !streq(st->snapshot.phase, "InProgress")) {
        /* Completed by its snapshot, which is settled now: the pod goes. */
        own_delete_pod(d, done, 0);
        if (in_pause(st) && !st->last_pause.pod_deleted_ms)
            st->last_pause.pod_deleted_ms = d->now;
        st->state = WS_STATE_PAUSING;
        condition(d, COND_READY, COND_FALSE, "Pausing", "pod %s is stopping", done->name);
        return;
    }
    if (done) {
        st->state = WS_STATE_PAUSING;
        condition(d, COND_READY, COND_FALSE, "Snapshotting",
                  "pod %s completed after snapshot %s was asked for (GKE stops it at the "
                  "checkpoint; an application that exits by itself looks the same); it is "
                  "removed once the snapshot is settled: Ready holds the session, a failure "
                  "pauses without memory",
                  done->name, st->snapshot.attempt);
        return;
    }
    if (d->n_leaving) {
        /* Deleted by a pass whose status write was lost: the pod says when. */
        if (in_pause(st) && !st->last_pause.pod_deleted_ms)
            st->last_pause.pod_deleted_ms = deleted_at(d, d->leaving);
        st->state = WS_STATE_PAUSING;
        condition(d, COND_READY, COND_FALSE, "Pausing", "pod %s is stopping", d->leaving->name);
        return;
    }
    if (in_pause(st) && !st->last_pause.accelerator_released_ms)
        st->last_pause.accelerator_released_ms = d->now;
    set_string(d, &st->node_name, NULL);
    set_string(d, &st->pod_name, NULL);
    set_string(d, &st->pod_uid, NULL);
    set_string(d, &st->deleted_pod, NULL);
    /* The next resume asks for the snapshot's product (or the class's) again. */
    st->accelerator_fallback = 0;
    /* Capacity is not being asked for; the next resume asks again. */
    workspace_status_remove_condition(st, COND_CAPACITY);
    condition(d, COND_READY, COND_FALSE, "Paused",
              "the workspace is paused; set spec.paused to false to resume");
    st->state = WS_STATE_PAUSED;
    if (d->old->state != WS_STATE_PAUSED) {
        const struct workspace_pause_timeline *lp = &st->last_pause;
        char occ[OCCASION_SIZE];
        if (in_pause(st) && lp->requested_ms && lp->accelerator_released_ms >= lp->requested_ms)
            transition_event(d, pause_occasion(d, occ), "Normal", "Paused",
                             "paused; the pod was gone %.1fs after the pause request",
                             (double)(lp->accelerator_released_ms - lp->requested_ms) / 1000.0);
        else
            event(d, "Normal", "Paused", "paused");
    }
}

/* ---- the GPU-hours ledger (docs/api.md) ---- */

/* A pod holds the workspace's accelerator from the moment it has a node
 * until it is gone (a stopped pod's resources are free again); the earliest
 * scheduled one when there are several. */
static const struct workspace_pod *accelerator_holder(const struct decider *d)
{
    const struct workspace_status *st = d->st;
    const struct workspace_pod *h = NULL;
    if (!st->accelerator_resource || st->accelerator_count <= 0)
        return NULL;
    for (size_t i = 0; i < d->in->n_pods; i++) {
        const struct workspace_pod *p = d->in->pods[i];
        if (!p->name || !p->node_name || !p->node_name[0] || pod_has_stopped(p))
            continue;
        if (!h || (p->scheduled_ms && (!h->scheduled_ms || p->scheduled_ms < h->scheduled_ms)))
            h = p;
    }
    return h;
}

/* accounting.acceleratorHeldSince follows the hold; when it ends its
 * seconds are added up, and a pause that ended it says when it began. */
static void track_hold(struct decider *d)
{
    struct workspace_status *st = d->st;
    const struct workspace_pod *h = accelerator_holder(d);
    int64_t since = st->accelerator_held_since_ms;
    if (h && !since)
        st->accelerator_held_since_ms =
            h->scheduled_ms && h->scheduled_ms <= d->now ? h->scheduled_ms : d->now;
    if (h || !since)
        return;
    int count = st->accelerator_count > 0 ? st->accelerator_count : 1;
    if (d->now > since)
        st->accelerator_seconds_held += (double)(d->now - since) / 1000.0 * count;
    if (in_pause(st) && !st->last_pause.held_since_ms)
        st->last_pause.held_since_ms = since;
    st->accelerator_held_since_ms = 0;
}

/* What the pause kept of the session: its memory in a snapshot, or files
 * (and the application's checkpoint) only; NULL while its snapshot is still
 * InProgress and a backend may yet say Ready (snapshot_settle()). */
static const char *pause_memory(const struct decider *d)
{
    const struct workspace_status *st = d->st;
    const struct workspace_snapshot *sn = &st->snapshot;
    int current = snapshot_current(st);
    if (current && streq(sn->phase, "Ready"))
        return "snapshot";
    if (current && streq(sn->phase, "Failed"))
        return "snapshotFailed";
    if (current && streq(sn->phase, "InProgress") && d->cls &&
        d->cls->snapshot.backend != SNAPSHOT_BACKEND_NONE)
        return NULL;
    return "files";
}

static void note_taker(struct decider *d)
{
    struct workspace_pause_timeline *lp = &d->st->last_pause;
    const struct workspace_pod *t = d->in->accelerator_taker;
    if (!t || lp->accelerator_taken_ms || ledger_taker_pick(d->ws, d->now, NULL, t) != t)
        return;
    char *by = NULL;
    if (asprintf(&by, "%s/%s", t->ns ? t->ns : "", t->name) < 0) {
        failed(d, -ENOMEM);
        return;
    }
    lp->accelerator_taken_ms = t->scheduled_ms;
    set_string(d, &lp->accelerator_taken_by, by);
    free(by);
}

static void keep_ledger(struct decider *d)
{
    struct workspace_status *st = d->st;
    struct workspace_pause_timeline *lp = &st->last_pause;
    track_hold(d);
    if (in_pause(st) && lp->requested_ms) {
        const struct workspace_pod *p = d->keep && d->keep->node_name         ? d->keep
                                        : d->leaving && d->leaving->node_name ? d->leaving
                                                                              : NULL;
        if (p && !lp->node_name) {
            set_string(d, &lp->node_name, p->node_name);
            set_string(d, &lp->product, st->accelerator_resource ? st->accelerator_product : NULL);
        }
    }
    /* The pause's snapshot may be settled after the resume began (a crash
     * kept it from the status): the record follows it. */
    const struct workspace_snapshot *sn = &st->snapshot;
    if (lp->requested_ms && !lp->snapshot_ready_ms && snapshot_current(st) &&
        streq(sn->phase, "Ready") && sn->ready_ms) {
        lp->snapshot_ready_ms = sn->ready_ms;
        lp->snapshot_seconds = sn->seconds;
    }
    if (lp->requested_ms && lp->accelerator_released_ms && !lp->memory)
        set_string(d, &lp->memory, pause_memory(d));
    note_taker(d);
    if (d->in->pause_node_absent && ledger_awaits_node_removal(st, d->now))
        lp->node_removed_ms = d->now;
    if (ledger_awaits_taker(st, d->now)) {
        int64_t next = d->now + LEDGER_RECHECK_MS;
        int64_t end = lp->accelerator_released_ms + LEDGER_WATCH_MS;
        requeue_at(d, next < end ? next : end);
    }
    /* One record per completed pause, which then mirrors it and its resume. */
    if (d->rc == 0 && lp->requested_ms && lp->accelerator_released_ms &&
        !workspace_status_last_record(st) && workspace_status_push_history(st) < 0)
        failed(d, -ENOMEM);
    if (d->rc == 0 && workspace_status_sync_history(st) < 0)
        failed(d, -ENOMEM);
}

/* The ledger is in the status, which others than the controller may be
 * allowed to write: its totals are brought within what the workspace's
 * life allows before this pass builds on them (docs/api.md, "Trusting the
 * ledger"), and a correction is reported once. */
static void bound_ledger(struct decider *d)
{
    const struct workspace_class *c = d->cls;
    struct ledger_limits l = {
        .created_ms = d->ws->created_ms,
        .generation = d->ws->generation,
        .accelerator_count =
            c && c->has_accelerator ? c->accelerator_count : CLASS_MAX_ACCELERATOR_COUNT,
    };
    unsigned fixed = ledger_bound(d->st, &l, d->now);
    if (!fixed)
        return;
    char what[160] = "";
    static const struct {
        unsigned bit;
        const char *name;
    } parts[] = {
        {LEDGER_FIXED_COUNTS, "pauses/resumes"},
        {LEDGER_FIXED_SECONDS, "accelerator-seconds"},
        {LEDGER_FIXED_TIMES, "hold/release times"},
        {LEDGER_FIXED_HISTORY, "history records"},
    };
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (fixed & parts[i].bit)
            snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s", what[0] ? ", " : "",
                     parts[i].name);
    event(d, "Warning", "LedgerCorrected",
          "the status's ledger was out of bounds and was corrected (%s): only the controller "
          "should write the status",
          what);
}

/* ---- rules 1-7 ---- */

/* Rule 7: the message mirrors the condition that explains the state. */
static void set_message(struct decider *d)
{
    const char *type = COND_READY;
    if (d->invalid_reason)
        type = COND_VALID;
    else if (d->st->state == WS_STATE_WAITING_FOR_CAPACITY ||
             (d->st->state == WS_STATE_FAILED &&
              streq(condition_reason(d->st, COND_CAPACITY), "CapacityTimeout")))
        type = COND_CAPACITY;
    const struct condition *c = workspace_status_condition(d->st, type);
    set_string(d, &d->st->message, c && c->message && c->message[0] ? c->message : NULL);
}

static void decide_live(struct decider *d)
{
    const struct workspace *ws = d->ws;
    struct workspace_status *st = d->st;

    bound_ledger(d);
    if (!ws->has_finalizer)
        push(d, ACTION_ADD_FINALIZER, NULL);
    st->observed_generation = ws->generation;

    int frozen = unreadable(d);
    if (!frozen && class_not_yet_seen(d)) {
        /* Nothing to decide without the class, and nothing to report yet. */
        if (!st->state)
            st->state = WS_STATE_PENDING;
        requeue_at(d, ws->created_ms + CLASS_GRACE_MS);
        set_message(d);
        if (st->state != d->old->state || !st->state_since_ms)
            st->state_since_ms = d->now;
        return;
    }
    if (!frozen)
        validate(d);
    if (d->rc < 0)
        return;
    if (d->invalid_reason) {
        const struct condition *old = workspace_status_condition(d->old, COND_VALID);
        int transition = !old || old->status != COND_FALSE ||
                         !streq(old->reason, d->invalid_reason) ||
                         !streq(old->message, d->invalid_message);
        condition(d, COND_VALID, COND_FALSE, d->invalid_reason, "%s", d->invalid_message);
        if (transition)
            event(d, "Warning", d->invalid_reason, "%s", d->invalid_message);
    } else {
        condition(d, COND_VALID, COND_TRUE, "Accepted", "class \"%s\" accepts the workspace",
                  d->cls->name);
        char *claim = workspace_home_claim_name(ws);
        if (!claim) {
            failed(d, -ENOMEM);
            return;
        }
        set_string(d, &st->home_claim_name, claim);
        decide_home(d, claim);
        free(claim);
    }

    /* Extra pods are removed only when something may be deleted at all. */
    sort_pods(d, !frozen && (ws->paused || !d->invalid_reason));
    if (!frozen && !ws->paused)
        note_interruption(d);
    if (frozen) {
        st->state = WS_STATE_FAILED;
    } else if (ws->paused) {
        /* Also when invalid: stopping a pod because its user asked destroys
         * nothing the user did not choose to stop. */
        decide_pause(d);
    } else if (d->invalid_reason) {
        /* Create nothing and delete nothing: a class that changed must never
         * take a running session away. Fixing the spec or the class
         * recovers. */
        st->state = WS_STATE_FAILED;
    } else {
        decide_run(d);
    }
    if (st->state != WS_STATE_RUNNING)
        clear_idle(d);
    keep_ledger(d);
    if (!frozen && d->cls && d->cls->snapshot.backend != SNAPSHOT_BACKEND_NONE)
        snapshot_retention(d, 0);
    set_message(d);
    /* When the one-word state last changed: what "paused since" or "waiting
     * since" means on a dashboard. */
    if (st->state != d->old->state || !st->state_since_ms)
        st->state_since_ms = d->now;
    /* Every condition was weighed against this generation, changed or not. */
    for (size_t i = 0; i < st->n_conditions; i++)
        st->conditions[i].observed_generation = ws->generation;
}

int workspace_decide(const struct decide_input *in, struct decide_output *out)
{
    *out = (struct decide_output){0};
    struct decider d = {
        .in = in,
        .ws = in->ws,
        .cls = in->cls,
        .old = &in->ws->status,
        .st = &out->status,
        .out = out,
        .now = in->now_ms,
    };
    if (workspace_status_copy(&in->ws->status, &out->status) < 0)
        return -ENOMEM;
    if (in->ws->deletion_ms)
        decide_deleting(&d);
    else
        decide_live(&d);
    free(d.invalid_message);
    if (d.rc < 0) {
        decide_output_clear(out);
        return d.rc;
    }
    /* status.podUID goes along with any other change, never alone: a pod
     * seen changes nothing else only while it waits unjudged, and a pod that
     * goes then is still known from the reconciler's gone_pod. */
    char *pod_uid = out->status.pod_uid;
    out->status.pod_uid = in->ws->status.pod_uid;
    out->status_changed =
        in->ws->deletion_ms ? 0 : !workspace_status_equal(&out->status, &in->ws->status);
    out->status.pod_uid = pod_uid;
    return 0;
}

void decide_output_clear(struct decide_output *out)
{
    if (!out)
        return;
    workspace_status_clear(&out->status);
    for (size_t i = 0; i < out->n_actions && i < DECIDE_MAX_ACTIONS; i++) {
        free(out->actions[i].name);
        free(out->actions[i].reason);
        free(out->actions[i].message);
        free(out->actions[i].snapshot);
        free(out->actions[i].product);
        free(out->actions[i].group);
        free(out->actions[i].occasion);
    }
    *out = (struct decide_output){0};
}

const char *action_type_name(enum action_type t)
{
    switch (t) {
    case ACTION_ADD_FINALIZER:
        return "AddFinalizer";
    case ACTION_CREATE_PVC:
        return "CreatePVC";
    case ACTION_CREATE_POD:
        return "CreatePod";
    case ACTION_DELETE_POD:
        return "DeletePod";
    case ACTION_DELETE_PVC:
        return "DeletePVC";
    case ACTION_RELEASE_PVC:
        return "ReleasePVC";
    case ACTION_REMOVE_FINALIZER:
        return "RemoveFinalizer";
    case ACTION_EVENT:
        return "Event";
    case ACTION_AUTO_PAUSE:
        return "AutoPause";
    case ACTION_APP_CHECKPOINT:
        return "AppCheckpoint";
    case ACTION_SNAPSHOT_BEGIN:
        return "SnapshotBegin";
    case ACTION_SNAPSHOT_DELETE:
        return "SnapshotDelete";
    }
    return "Unknown";
}
