#include "reconciler_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/events.h"
#include "controller/writes.h"
#include "util/log.h"
#include "util/timefmt.h"
#include "workspace/action_failure.h"
#include "workspace/class.h"

#define API_VERSION "hibernator.dev/v1alpha1"

/* ---- jobs ---------------------------------------------------------------- */

static void job_free(struct job *j)
{
    for (size_t i = 0; i < DECIDE_MAX_ACTIONS; i++) {
        cJSON_Delete(j->bodies[i]);
        free(j->pod_uids[i]);
        free(j->urls[i]);
        free(j->errs[i]);
    }
    decide_output_clear(&j->out);
    workspace_status_clear(j->read);
    free(j->read);
    free(j->key);
    free(j->ns);
    free(j->name);
    free(j->uid);
    free(j->rv);
    free(j->class_name);
    free(j);
}

static void job_unlink(struct job *j)
{
    if (j->linked)
        LIST_REMOVE(j, link);
    j->linked = 0;
}

void reconciler_job_finish(struct job *j, int error)
{
    struct reconciler *r = j->r;
    job_unlink(j);
    if (!r->closing) {
        controller_metrics_reconciled(r->metrics, error, !error && j->out.requeue_after_ms > 0,
                                      (double)(uv_hrtime() - j->started_ns) / 1e9);
        if (error) {
            r->stats.errors++;
            reconciler_keys_requeue_result(j->key, "after a failure",
                                           workqueue_driver_add_rate_limited(r->queue, j->key));
        } else {
            workqueue_driver_forget(r->queue, j->key);
            if (j->out.requeue_after_ms > 0)
                reconciler_keys_requeue_result(
                    j->key, "after a delay",
                    workqueue_driver_add_after(r->queue, j->key,
                                               (uint64_t)j->out.requeue_after_ms));
        }
        workqueue_driver_done(r->queue, j->key);
    }
    if (!j->released)
        r->in_flight--;
    job_free(j);
}

/* A write of the Workspace succeeded and obj is what the API server made of
 * it: the job's next write builds on its resourceVersion, and the next pass
 * for the key waits until the cache shows it. */
static void wrote_workspace(struct job *j, const cJSON *obj)
{
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "resourceVersion");
    if (!cJSON_IsString(rv))
        return;
    char *copy = strdup(rv->valuestring);
    if (copy) {
        free(j->rv);
        j->rv = copy;
    }
    /* Out of memory: nothing is recorded, and the next pass decides at once. */
    int e = expectations_record(&j->r->own_writes, j->key, rv->valuestring,
                                (int64_t)uv_now(j->r->loop));
    if (e < 0)
        log_warn("own write not recorded", "key", j->key, "error", log_errno_str(e));
}

/* Crash tests: die right after an action of the named type succeeded, before
 * anything else (the status write included) happens; with "before:<type>",
 * right before such an action is sent. */
static void failpoint(const struct reconciler *r, enum action_type t)
{
    if (r->failpoint && strcmp(r->failpoint, action_type_name(t)) == 0) {
        log_warn("failpoint reached, exiting", "after", r->failpoint);
        _exit(3);
    }
}

static void failpoint_before(const struct reconciler *r, enum action_type t)
{
    if (r->failpoint && strncmp(r->failpoint, "before:", 7) == 0 &&
        strcmp(r->failpoint + 7, action_type_name(t)) == 0) {
        log_warn("failpoint reached, exiting", "before", r->failpoint + 7);
        _exit(3);
    }
}

/* A status write failed: a conflict is normal (the key is decided again on
 * the newer object); anything else is said, and plainly when the controller
 * may not write status at all, since nothing else can report that. */
static void status_write_failed(const struct job *j, const struct kube_response *resp)
{
    if (kube_response_conflict(resp))
        return;
    if (resp->status == -EIO && resp->http_code == 403)
        log_error("cannot write the Workspace's status: forbidden; the controller needs update "
                  "on workspaces/status (deploy/rbac.yaml)",
                  "workspace", j->key, "error", kube_response_error_text(resp));
    else
        log_warn("status write failed", "workspace", j->key, "code", LOG_INT(resp->http_code),
                 "error", kube_response_error_text(resp));
}

static void on_status_written(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (resp->status < 0) {
        status_write_failed(j, resp);
        reconciler_job_finish(j, 1);
        return;
    }
    j->r->stats.status_writes++;
    controller_metrics_outcome(j->r->metrics, j->ns, j->class_name, &j->outcome);
    wrote_workspace(j, resp->body);
    reconciler_job_finish(j, 0);
}

/* PUT of st as the Workspace's status, on the resourceVersion the job
 * read (or last wrote); cb ends the job. */
static void put_status(struct job *j, const struct workspace_status *st, kube_response_cb cb)
{
    cJSON *obj = NULL;
    int e = writes_status_object(j->name, j->ns, j->rv, st, &obj);
    if (e < 0) {
        log_warn("status write not built", "workspace", j->key, "error", log_errno_str(e));
        reconciler_job_finish(j, 1);
        return;
    }
    e = kube_replace(j->r->client, &reconciler_workspaces, j->ns, j->name, "status", obj, cb, j,
                     &j->req);
    cJSON_Delete(obj);
    if (e < 0) {
        log_warn("status write could not start", "workspace", j->key, "error", log_errno_str(e));
        reconciler_job_finish(j, 1);
        return;
    }
    /* The status only records what the actions did: it may wait behind
     * other workspaces' pod deletes and creates (the client sends those
     * first), so it gives its worker to the next key rather than hold back
     * that key's actions. The key stays busy in the queue until the write
     * is answered. */
    j->released = 1;
    j->r->in_flight--;
    workqueue_driver_notify(j->r->queue);
}

static void write_status(struct job *j)
{
    put_status(j, &j->out.status, on_status_written);
}

/* ---- actions that fail --------------------------------------------------- */

void reconciler_job_forget_failure(struct reconciler *r, const char *key)
{
    struct action_failure *f = strmap_remove(&r->failures, key);
    action_failure_clear(f);
    free(f);
}

static void on_failure_reported(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (resp->status < 0) {
        status_write_failed(j, resp);
    } else {
        j->r->stats.status_writes++;
        wrote_workspace(j, resp->body);
    }
    reconciler_job_finish(j, 1); /* the action is retried with backoff */
}

/* The current action failed with the API server's (or the backend's) answer.
 * A conflict only means the world moved: decide again. Anything else is
 * remembered and reported in the status as read, with ActionFailed (why
 * not the decided status: workspace/action_failure.h); the key is retried
 * with backoff either way. resp: the API server's answer, NULL when there
 * is none (a backend's failure, a call that could not start). */
static void action_failed(struct job *j, const struct kube_response *resp, const char *message)
{
    struct reconciler *r = j->r;
    const struct action *a = &j->out.actions[j->next];
    const char *type = action_type_name(a->type);
    long http_code = resp ? resp->http_code : 0;
    if (resp && kube_response_conflict(resp)) {
        log_warn("action failed", "workspace", j->key, "action", type, "name", a->name, "code",
                 LOG_INT(http_code), "error", message);
        reconciler_job_finish(j, 1);
        return;
    }
    int64_t now = r->now_ms(r->now_data);
    struct action_failure *f = strmap_get(&r->failures, j->key);
    if (!f && (f = calloc(1, sizeof(*f))) && strmap_put(&r->failures, j->key, f, NULL) < 0) {
        free(f);
        f = NULL;
    }
    if (!f || action_failure_note(f, type, a->name, http_code, message, now) < 0) {
        log_warn("action failed", "workspace", j->key, "action", type, "name", a->name, "code",
                 LOG_INT(http_code), "error", message);
        reconciler_job_finish(j, 1);
        return;
    }
    char since[TIMEFMT_RFC3339_SIZE];
    timefmt_rfc3339_text(f->first_failed_ms, since);
    log_warn("action failed", "workspace", j->key, "action", type, "name", a->name, "code",
             LOG_INT(http_code), "error", f->message, "failures", LOG_INT(f->count), "since",
             since);
    int changed = j->read ? action_failure_report(j->read, f, j->generation, now) : 0;
    if (changed <= 0) {
        reconciler_job_finish(j, 1);
        return;
    }
    put_status(j, j->read, on_failure_reported);
}

/* The current action's call could not start; e says why (a negative errno). */
static void action_not_started(struct job *j, int e)
{
    char why[128];
    snprintf(why, sizeof(why), "cannot start the request: %s", log_errno_str(e));
    action_failed(j, NULL, why);
}

/* The current action succeeded: the crash tests' failpoint, then the next. */
static void next_action(struct job *j)
{
    failpoint(j->r, j->out.actions[j->next].type);
    j->r->stats.actions++;
    j->next++;
    reconciler_job_run(j);
}

static void action_succeeded(struct job *j)
{
    const struct action *a = &j->out.actions[j->next];
    log_info("action done", "workspace", j->key, "action", action_type_name(a->type), "name",
             a->name);
    next_action(j);
}

/* An action's outcome: tolerated answers count as done. */
static void on_action_done(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    const struct action *a = &j->out.actions[j->next];
    int ok = resp->status == 0;
    if (!ok && resp->status == -EIO) {
        if ((a->type == ACTION_CREATE_POD || a->type == ACTION_CREATE_PVC) &&
            kube_response_already_exists(resp))
            ok = 1;
        if ((a->type == ACTION_DELETE_POD || a->type == ACTION_DELETE_PVC ||
             a->type == ACTION_RELEASE_PVC) &&
            kube_response_not_found(resp))
            ok = 1;
    }
    if (!ok) {
        action_failed(j, resp, kube_response_error_text(resp));
        return;
    }
    action_succeeded(j);
}

/* A write to the Workspace itself failed: returns 1 when it did (and the job
 * is told), 0 when it succeeded. 409: the workspace changed since the
 * decision (a user's edit wins), decide again on what it is now; 404: it is
 * gone, nothing left to do; anything else is the action's failure. */
static int workspace_write_failed(struct job *j, struct kube_response *resp)
{
    if (resp->status >= 0)
        return 0;
    if (kube_response_conflict(resp) || kube_response_not_found(resp))
        reconciler_job_finish(j, !kube_response_not_found(resp));
    else
        action_failed(j, resp, kube_response_error_text(resp));
    return 1;
}

static void on_finalizer_patched(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (workspace_write_failed(j, resp))
        return;
    wrote_workspace(j, resp->body);
    next_action(j);
}

/* Finalizers are a list others may add to: change ours only, on the object as
 * it is now, with its resourceVersion, so nobody else's entry is lost. */
static void on_ws_for_finalizer(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (resp->status < 0) {
        if (kube_response_not_found(resp))
            reconciler_job_finish(j, 0);
        else
            action_failed(j, resp, kube_response_error_text(resp));
        return;
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(resp->body, "metadata");
    const cJSON *uid = cJSON_GetObjectItemCaseSensitive(meta, "uid");
    if (!cJSON_IsString(uid) || strcmp(uid->valuestring, j->uid) != 0) {
        reconciler_job_finish(j,
                              0); /* a new object with the same name: its own reconcile will come */
        return;
    }
    char *text = NULL;
    int e = writes_finalizer_patch(meta, j->finalizer_add, &text);
    if (e < 0) {
        log_warn("finalizer patch not built", "workspace", j->key, "error", log_errno_str(e));
        reconciler_job_finish(j, 1);
        return;
    }
    e = kube_patch(j->r->client, &reconciler_workspaces, j->ns, j->name, NULL, KUBE_PATCH_MERGE,
                   text, on_finalizer_patched, j, &j->req);
    free(text);
    if (e < 0)
        action_not_started(j, e);
}

/* A snapshot backend's call (begin or delete) is over. */
static void on_backend_done(void *data, int status, const char *error)
{
    struct job *j = data;
    j->snap = NULL;
    if (status < 0) {
        action_failed(j, NULL, error ? error : log_errno_str(status));
        return;
    }
    action_succeeded(j);
}

static void on_auto_paused(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (workspace_write_failed(j, resp))
        return;
    wrote_workspace(j, resp->body);
    /* An idle workspace, a pre-warm that gives way, or an eviction held
     * for its snapshot: the message says which. */
    log_info("paused the workspace itself", "workspace", j->key, "reason",
             j->out.actions[j->next].message);
    j->r->stats.auto_pauses++;
    next_action(j);
}

static void on_auto_resumed(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (workspace_write_failed(j, resp))
        return;
    wrote_workspace(j, resp->body);
    const struct action *a = &j->out.actions[j->next];
    log_info("pre-warmed a workspace", "workspace", j->key, "reason", a->message);
    const struct cache_entry *we = informer_get(j->r->ws_inf, j->ns, j->name);
    const struct workspace *ws = we ? we->obj : NULL;
    if (ws && ws->class_name && prewarm_turns_begun(&j->r->turns, j->key, ws->class_name) < 0)
        log_warn("pre-warm not counted among its class's resumes", "workspace", j->key, "error",
                 log_errno_str(-ENOMEM));
    j->r->stats.auto_resumes++;
    next_action(j);
}

/* spec.paused false and the pre-warm's annotations, in one write that only
 * lands on the object the decision was made for. */
static int auto_resume(struct job *j, const struct action *a, struct kube_request **ret_req)
{
    char *text = NULL;
    int e = writes_auto_resume_patch(j->rv, a->time_ms, a->for_ms, &text);
    if (e < 0)
        return e;
    e = kube_patch(j->r->client, &reconciler_workspaces, j->ns, j->name, NULL, KUBE_PATCH_MERGE,
                   text, on_auto_resumed, j, ret_req);
    free(text);
    return e;
}

/* spec.paused and the annotations that say why, in one write that only
 * lands on the object the decision was made for. */
static int auto_pause(struct job *j, const struct action *a, struct kube_request **ret_req)
{
    char *text = NULL;
    int e = writes_auto_pause_patch(j->rv, a->time_ms, a->message, a->reason, &text);
    if (e < 0)
        return e;
    e = kube_patch(j->r->client, &reconciler_workspaces, j->ns, j->name, NULL, KUBE_PATCH_MERGE,
                   text, on_auto_paused, j, ret_req);
    free(text);
    return e;
}

static int has_event(const struct job *j, const char *reason)
{
    for (size_t i = 0; i < j->out.n_actions; i++)
        if (j->out.actions[i].type == ACTION_EVENT && strcmp(j->out.actions[i].reason, reason) == 0)
            return 1;
    return 0;
}

/* Logs the controller's own latency for the transitions the snapshot
 * benchmark follows: a Ready snapshot to the pod's delete, a resume request
 * to the new pod's create. */
static void transition_latency(const struct job *j, const struct action *a)
{
    const char *step = NULL;
    if (a->type == ACTION_DELETE_POD && has_event(j, "SnapshotReady"))
        step = "snapshot-ready-to-delete";
    else if (a->type == ACTION_CREATE_POD && has_event(j, "Resuming"))
        step = "resume-to-create";
    if (!step || !j->noticed_us)
        return;
    log_info("transition", "workspace", j->key, "step", step, "latency_us",
             LOG_INT((int64_t)(uv_hrtime() / 1000 - j->noticed_us)));
}

/* What frees or claims an accelerator goes before the API client's other
 * requests (include/kube/client.h). */
static enum kube_priority action_priority(enum action_type t)
{
    switch (t) {
    case ACTION_DELETE_POD:
    case ACTION_CREATE_POD:
    case ACTION_AUTO_PAUSE:
        return KUBE_PRIORITY_CRITICAL;
    default:
        return KUBE_PRIORITY_NORMAL;
    }
}

/* Asks the application to write its checkpoint; the answer comes back
 * through the tracker, which queues the key. Started is done: the action
 * does not wait for the answer. */
static void app_checkpoint_run(struct job *j, const struct action *a)
{
    struct reconciler *r = j->r;
    const struct workspace_class *cls = NULL;
    const struct cache_entry *we = informer_get(r->ws_inf, j->ns, j->name);
    const struct workspace *ws = we ? we->obj : NULL;
    const struct cache_entry *ce =
        ws && ws->class_name ? informer_get(r->class_inf, NULL, ws->class_name) : NULL;
    cls = ce ? ce->obj : NULL;
    int e = 0;
    if (!j->urls[j->next] || !cls || !cls->checkpoint_request.method) {
        e = app_checkpoints_refuse(r->checkpoints, j->key, a->name,
                                   j->errs[j->next] ? j->errs[j->next] : "no URL for the pod");
    } else {
        int64_t left = a->time_ms - r->now_ms(r->now_data);
        struct app_checkpoint_call call = {
            .key = j->key,
            .attempt = a->name,
            .method = cls->checkpoint_request.method,
            .url = j->urls[j->next],
            .timeout_ms = left < 1000 ? 1000 : left,
        };
        e = app_checkpoints_ask(r->checkpoints, &call);
        if (e == -EINVAL)
            e = app_checkpoints_refuse(r->checkpoints, j->key, a->name, "the URL is not usable");
        else if (e == 0)
            log_info("asking the application to write its checkpoint", "workspace", j->key,
                     "attempt", a->name);
    }
    if (e < 0) {
        action_failed(j, NULL, log_errno_str(e));
        return;
    }
    action_succeeded(j);
}

/* Every action was carried out (or none is needed any more): a failure
 * reported before is over. Not once the finalizer is gone: the Workspace
 * goes with it. The status is written if it changed. */
static void actions_done(struct job *j)
{
    reconciler_job_forget_failure(j->r, j->key);
    if (!(j->out.n_actions &&
          j->out.actions[j->out.n_actions - 1].type == ACTION_REMOVE_FINALIZER) &&
        action_failure_resolved(&j->out.status))
        j->out.status_changed = 1;
    if (j->out.status_changed)
        write_status(j);
    else
        reconciler_job_finish(j, 0);
}

/* Starts the API call of action a (one that the API server carries out).
 * Returns 0 and *ret_req, or a negative errno (kube_get() and friends). */
static int start_api_call(struct job *j, const struct action *a, struct kube_request **ret_req)
{
    struct reconciler *r = j->r;
    switch (a->type) {
    case ACTION_ADD_FINALIZER:
    case ACTION_REMOVE_FINALIZER:
        j->finalizer_add = a->type == ACTION_ADD_FINALIZER;
        return kube_get(r->client, &reconciler_workspaces, j->ns, j->name, on_ws_for_finalizer, j,
                        ret_req);
    case ACTION_CREATE_PVC:
        return kube_create(r->client, &KUBE_RESOURCE_PVCS, j->ns, j->bodies[j->next],
                           on_action_done, j, ret_req);
    case ACTION_CREATE_POD:
        return kube_create(r->client, &KUBE_RESOURCE_PODS, j->ns, j->bodies[j->next],
                           on_action_done, j, ret_req);
    case ACTION_DELETE_POD: {
        struct kube_delete_options o = {.precondition_uid = j->pod_uids[j->next],
                                        .grace_period_seconds = a->grace_seconds,
                                        .propagation_policy = "Background"};
        return kube_delete(r->client, &KUBE_RESOURCE_PODS, j->ns, a->name, &o, on_action_done, j,
                           ret_req);
    }
    case ACTION_DELETE_PVC: {
        struct kube_delete_options o = {.grace_period_seconds = -1,
                                        .propagation_policy = "Background"};
        return kube_delete(r->client, &KUBE_RESOURCE_PVCS, j->ns, a->name, &o, on_action_done, j,
                           ret_req);
    }
    case ACTION_RELEASE_PVC:
        return kube_patch(r->client, &KUBE_RESOURCE_PVCS, j->ns, a->name, NULL, KUBE_PATCH_MERGE,
                          "{\"metadata\":{\"ownerReferences\":null}}", on_action_done, j, ret_req);
    case ACTION_AUTO_PAUSE:
        return auto_pause(j, a, ret_req);
    case ACTION_AUTO_RESUME:
        return auto_resume(j, a, ret_req);
    case ACTION_RAISE_PRIORITY: {
        char *text = NULL;
        int e = writes_priority_label_patch(a->reason, j->pod_uids[j->next], &text);
        if (e < 0)
            return e;
        e = kube_patch(r->client, &KUBE_RESOURCE_PODS, j->ns, a->name, NULL, KUBE_PATCH_MERGE, text,
                       on_action_done, j, ret_req);
        free(text);
        return e;
    }
    default:
        return -EINVAL; /* not an API call: reconciler_job_run() starts it */
    }
}

/* A transition's Event has its answer. Not recorded for a reason that
 * passes (the API server away or throttling, the client's rate limit):
 * the pass ends here, before the status write that would record the
 * transition, as if the controller had died here, and the key is tried
 * again with backoff; the transition is decided again and its Event posted
 * then, under the same name. Refused for the Event itself: logged, and the
 * next action follows (it would be refused again; the transition is not
 * held up for it). */
static void on_event_posted(void *data, struct kube_response *resp)
{
    struct job *j = data;
    j->req = NULL;
    if (events_posted(resp) < 0 && events_retriable(resp)) {
        const struct action *a = &j->out.actions[j->next];
        log_info("transition waits for its event", "workspace", j->key, "reason", a->reason, "code",
                 LOG_INT(resp->http_code));
        reconciler_job_finish(j, 1);
        return;
    }
    failpoint(j->r, ACTION_EVENT);
    j->next++;
    reconciler_job_run(j);
}

/* Posts action a, an Event. Named after its transition, or else the object
 * version it was decided on: decided again after a crash, it is posted once.
 * A transition's Event (one with an occasion) is waited for, so the status
 * write that records the transition comes after it: a controller that dies
 * before that write decides the transition again and posts it then, and a
 * status that shows a transition never lacks its Event. Returns whether the
 * job goes on by itself (1: on_event_posted() runs the next action). */
static int post_event(struct job *j, const struct action *a)
{
    struct reconciler *r = j->r;
    struct event_subject subject = {API_VERSION, "Workspace", j->ns, j->name, j->uid};
    char version[200];
    snprintf(version, sizeof(version), "rv-%s", j->rv);
    if (a->occasion &&
        events_post_then(r->client, &subject, a->event_type, a->reason, a->message, a->occasion,
                         r->identity, r->now_ms(r->now_data), on_event_posted, j, &j->req) == 0)
        return 1;
    if (!a->occasion)
        events_post(r->client, &subject, a->event_type, a->reason, a->message, version, r->identity,
                    r->now_ms(r->now_data));
    return 0;
}

/* Starts the job's next action; its callback runs the one after. */
void reconciler_job_run(struct job *j)
{
    struct reconciler *r = j->r;
    if (r->closing) {
        reconciler_job_finish(j, 0);
        return;
    }
    if (j->next >= j->out.n_actions) {
        actions_done(j);
        return;
    }
    const struct action *a = &j->out.actions[j->next];
    failpoint_before(r, a->type);
    transition_latency(j, a);
    switch (a->type) {
    case ACTION_EVENT:
        if (post_event(j, a))
            return;
        j->next++;
        reconciler_job_run(j);
        return;
    case ACTION_SNAPSHOT_BEGIN: {
        int e = snapshot_backend_begin(j->backends[j->next], j->ns, j->bodies[j->next],
                                       on_backend_done, j, &j->snap);
        if (e < 0)
            action_not_started(j, e);
        return;
    }
    case ACTION_APP_CHECKPOINT:
        app_checkpoint_run(j, a);
        return;
    case ACTION_SNAPSHOT_DELETE: {
        int e = snapshot_backend_delete(j->backends[j->next], j->ns, a->name, on_backend_done, j,
                                        &j->snap);
        if (e < 0)
            action_not_started(j, e);
        return;
    }
    default:
        break;
    }
    struct kube_request *req = NULL;
    int e = start_api_call(j, a, &req);
    if (e < 0) {
        action_not_started(j, e);
        return;
    }
    j->req = req;
    kube_request_set_priority(req, action_priority(a->type));
}

/* A new job for key, linked into r's jobs; NULL (said in the log, key
 * queued again with backoff) out of memory. */
struct job *reconciler_job_new(struct reconciler *r, const char *key)
{
    r->stats.reconciles++;
    r->in_flight++;
    struct job *j = calloc(1, sizeof(*j));
    if (!j || !(j->key = strdup(key))) {
        free(j);
        r->in_flight--;
        log_warn("reconcile not started", "key", key, "error", log_errno_str(-ENOMEM));
        reconciler_keys_requeue_result(key, "after a failure",
                                       workqueue_driver_add_rate_limited(r->queue, key));
        workqueue_driver_done(r->queue, key);
        return NULL;
    }
    j->r = r;
    j->started_ns = uv_hrtime();
    LIST_INSERT_HEAD(&r->jobs, j, link);
    j->linked = 1;
    return j;
}

void reconciler_job_cancel(struct job *j)
{
    kube_request_cancel(j->req); /* no callback follows */
    snapshot_op_cancel(j->snap);
    job_unlink(j);
    job_free(j);
}
