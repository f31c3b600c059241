#include "cli/api.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/log.h"

const struct kube_resource CLI_RESOURCE_WORKSPACES = {"hibernator.dev", "v1alpha1", "workspaces",
                                                      "Workspace", 1};
const struct kube_resource CLI_RESOURCE_WORKSPACE_CLASSES = {
    "hibernator.dev", "v1alpha1", "workspaceclasses", "WorkspaceClass", 0};

#define TICK_MS 250
#define LIST_PAGE 500
#define LIST_MAX_PAGES 1000

static void on_signal(uv_signal_t *s, int signum)
{
    (void)signum;
    struct cli_api *api = s->data;
    api->interrupted++;
}

int cli_api_open(struct cli_api *api, const struct cli_args *a, char **ret_err)
{
    memset(api, 0, sizeof(*api));
    int r = kube_config_load_default_context(a->kubeconfig, a->context, &api->config, ret_err);
    if (r < 0)
        return r;
    r = uv_loop_init(&api->loop);
    if (r < 0) {
        kube_config_free(api->config);
        api->config = NULL;
        *ret_err = strdup("cannot start the event loop");
        return r;
    }
    /* A person waits for the answer: no client-side rate limit to speak of,
     * and the client's own per-request timeout (30 s). */
    struct kube_client_options co = {
        .qps = 50, .burst = 100, .user_agent = "kubectl-workspace/" HIBERNATOR_VERSION};
    r = kube_client_new(&api->loop, api->config, &co, &api->client, ret_err);
    if (r < 0) {
        uv_loop_close(&api->loop);
        kube_config_free(api->config);
        api->config = NULL;
        return r;
    }
    api->ns = a->ns ? a->ns : kube_client_namespace(api->client);
    uv_signal_init(&api->loop, &api->sigint);
    uv_signal_init(&api->loop, &api->sigterm);
    api->sigint.data = api->sigterm.data = api;
    uv_signal_start(&api->sigint, on_signal, SIGINT);
    uv_signal_start(&api->sigterm, on_signal, SIGTERM);
    uv_unref((uv_handle_t *)&api->sigint);
    uv_unref((uv_handle_t *)&api->sigterm);
    api->open = 1;
    return 0;
}

void cli_api_close(struct cli_api *api)
{
    if (!api->open)
        return;
    kube_client_close(api->client);
    uv_close((uv_handle_t *)&api->sigint, NULL);
    uv_close((uv_handle_t *)&api->sigterm, NULL);
    uv_run(&api->loop, UV_RUN_DEFAULT);
    uv_loop_close(&api->loop);
    kube_config_free(api->config);
    api->open = 0;
}

int64_t cli_api_now(struct cli_api *api)
{
    uv_update_time(&api->loop);
    return (int64_t)uv_now(&api->loop);
}

struct run {
    struct cli_api *api;
    void (*tick)(void *data);
    void *data;
};

static void on_tick(uv_timer_t *t)
{
    struct run *run = t->data;
    if (run->tick)
        run->tick(run->data);
}

int cli_api_run_until(struct cli_api *api, int (*done)(void *data), void *data, int64_t deadline_ms,
                      void (*tick)(void *data))
{
    struct run run = {api, tick, data};
    uv_timer_t timer;
    uv_timer_init(&api->loop, &timer);
    timer.data = &run;
    /* The timer also wakes uv_run so the deadline is seen in time. */
    uv_timer_start(&timer, on_tick, TICK_MS, TICK_MS);
    int r = 0;
    while (!done(data)) {
        if (api->interrupted > api->acknowledged) {
            r = -EINTR;
            break;
        }
        if (deadline_ms && cli_api_now(api) >= deadline_ms) {
            r = -ETIMEDOUT;
            break;
        }
        uv_run(&api->loop, UV_RUN_ONCE);
    }
    uv_close((uv_handle_t *)&timer, NULL);
    uv_run(&api->loop, UV_RUN_NOWAIT); /* lets the timer close before it leaves the stack */
    /* That turn can also deliver what was waited for (an answer read by its
     * poll): then the wait is over, and its caller must not cancel what has
     * ended. A signal keeps counting for the next wait. */
    if (r < 0 && done(data))
        r = 0;
    return r;
}

static int never(void *data)
{
    (void)data;
    return 0;
}

void cli_api_acknowledge_interrupts(struct cli_api *api)
{
    api->acknowledged = api->interrupted;
}

int cli_api_sleep(struct cli_api *api, int64_t ms)
{
    int r = cli_api_run_until(api, never, NULL, cli_api_now(api) + ms, NULL);
    return r == -ETIMEDOUT ? 0 : r;
}

void cli_reply_clear(struct cli_reply *r)
{
    cJSON_Delete(r->body);
    free(r->error);
    *r = (struct cli_reply){0};
}

/* ---- one request ------------------------------------------------------------ */

/* One request and its answer. req is the client's handle while the request
 * runs: the client frees it once on_response returns, so on_response sets it
 * to NULL, and only a request still in req may be cancelled. */
struct call {
    int done;
    struct cli_reply *reply;
    struct kube_request *req;
};

static void on_response(void *data, struct kube_response *resp)
{
    struct call *c = data;
    struct cli_reply *r = c->reply;
    c->done = 1;
    c->req = NULL;
    r->http_code = resp->http_code;
    if (resp->status == 0) {
        r->status = 0;
        r->body = resp->body;
        resp->body = NULL;
        return;
    }
    r->status = kube_response_not_found(resp)        ? -ENOENT
                : kube_response_already_exists(resp) ? -EEXIST
                : resp->status == -EIO               ? -EIO
                                                     : resp->status;
    const char *text = kube_response_error_text(resp);
    if (!resp->http_code || asprintf(&r->error, "%s (HTTP %ld)", text, resp->http_code) < 0)
        r->error = strdup(text);
}

static int call_done(void *data)
{
    return ((struct call *)data)->done;
}

/* Waits for the call that start (0 or a negative errno) began as c->req.
 * An answer that came before the wait ended is the result, even when a
 * signal came too (the next wait sees it); a request still running when
 * the wait gives up is cancelled. */
static int finish(struct cli_api *api, int start, struct call *c)
{
    struct cli_reply *r = c->reply;
    if (start < 0) {
        r->status = start;
        if (asprintf(&r->error, "could not start the request: %s", log_errno_str(start)) < 0)
            r->error = NULL;
        return r->status;
    }
    int e = cli_api_run_until(api, call_done, c, 0, NULL);
    if (e < 0 && !c->done) {
        kube_request_cancel(c->req);
        c->req = NULL;
        r->status = e;
        r->error = strdup(e == -EINTR ? "interrupted" : "timed out");
    }
    return r->status;
}

int cli_api_get(struct cli_api *api, const struct kube_resource *res, const char *ns,
                const char *name, struct cli_reply *reply)
{
    *reply = (struct cli_reply){0};
    struct call c = {0, reply, NULL};
    int e = kube_get(api->client, res, ns, name, on_response, &c, &c.req);
    return finish(api, e, &c);
}

int cli_api_list(struct cli_api *api, const struct kube_resource *res, const char *ns,
                 const struct kube_list_options *opts, struct cli_reply *reply)
{
    *reply = (struct cli_reply){0};
    struct call c = {0, reply, NULL};
    int e = kube_list(api->client, res, ns, opts, on_response, &c, &c.req);
    return finish(api, e, &c);
}

int cli_api_patch(struct cli_api *api, const struct kube_resource *res, const char *ns,
                  const char *name, const char *patch, struct cli_reply *reply)
{
    *reply = (struct cli_reply){0};
    struct call c = {0, reply, NULL};
    int e = kube_patch(api->client, res, ns, name, NULL, KUBE_PATCH_MERGE, patch, on_response, &c,
                       &c.req);
    return finish(api, e, &c);
}

int cli_api_create(struct cli_api *api, const struct kube_resource *res, const char *ns,
                   const cJSON *obj, struct cli_reply *reply)
{
    *reply = (struct cli_reply){0};
    struct call c = {0, reply, NULL};
    int e = kube_create(api->client, res, ns, obj, on_response, &c, &c.req);
    return finish(api, e, &c);
}

int cli_api_delete(struct cli_api *api, const struct kube_resource *res, const char *ns,
                   const char *name, const char *uid, struct cli_reply *reply)
{
    *reply = (struct cli_reply){0};
    struct call c = {0, reply, NULL};
    struct kube_delete_options o = {
        .precondition_uid = uid, .propagation_policy = "Background", .grace_period_seconds = -1};
    int e = kube_delete(api->client, res, ns, name, &o, on_response, &c, &c.req);
    return finish(api, e, &c);
}

int cli_api_list_all(struct cli_api *api, const struct kube_resource *res, const char *ns,
                     const struct kube_list_options *opts, struct cli_reply *reply)
{
    struct kube_list_options o = opts ? *opts : (struct kube_list_options){0};
    o.limit = LIST_PAGE;
    cJSON *all = NULL;
    char *token = NULL;
    int r = 0;
    *reply = (struct cli_reply){0};
    for (int page = 0; page < LIST_MAX_PAGES; page++) {
        struct cli_reply one;
        o.continue_token = token;
        r = cli_api_list(api, res, ns, &o, &one);
        free(token);
        token = NULL;
        if (r < 0) {
            cJSON_Delete(all);
            *reply = one;
            return r;
        }
        const char *next = json_string(json_member(one.body, "metadata"), "continue");
        if (next && *next && !(token = strdup(next)))
            r = -ENOMEM;
        if (!all) {
            all = one.body; /* the first page is the list; later items join it */
            one.body = NULL;
            if (!cJSON_IsArray(json_member(all, "items"))) {
                cJSON_DeleteItemFromObjectCaseSensitive(all, "items");
                cJSON *items = cJSON_CreateArray();
                if (!items || !cJSON_IsObject(all) || !cJSON_AddItemToObject(all, "items", items)) {
                    cJSON_Delete(items);
                    r = -ENOMEM;
                }
            }
        } else {
            cJSON *items = cJSON_GetObjectItemCaseSensitive(all, "items");
            cJSON *more = cJSON_DetachItemFromObjectCaseSensitive(one.body, "items");
            cJSON *it;
            while (more && (it = cJSON_DetachItemViaPointer(more, more->child)) != NULL)
                cJSON_AddItemToArray(items, it);
            cJSON_Delete(more);
        }
        cli_reply_clear(&one);
        if (r < 0 || !token)
            break;
    }
    free(token);
    if (r < 0) {
        cJSON_Delete(all);
        reply->status = r;
        reply->error = strdup("out of memory");
        return r;
    }
    reply->body = all;
    return 0;
}
