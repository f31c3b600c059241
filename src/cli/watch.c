#include "cli/watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/api_error.h"
#include "kube/watch_stream.h"
#include "util/json.h"

#define WATCH_SECONDS 60
#define MAX_EVENT_BYTES (4u << 20)
#define RETRY_MS 1000

struct follower {
    struct cli_api *api;
    watch_change_cb on_change;
    void (*tick)(void *data);
    void *data;
    struct watch_stream stream;
    /* The running watch; on_watch_done sets it to NULL (the client frees it
     * once that returns), so only one still set is cancelled. */
    struct kube_request *req;
    char *rv;       /* resourceVersion to watch from; NULL: GET first */
    int ended;      /* the watch request finished */
    int stop;       /* on_change said so */
    int gone;       /* DELETED */
    int relist;     /* 410 or another error: GET again */
    char *last_err; /* the last failure seen */
};

static void set_err(struct follower *f, const char *what, const char *why)
{
    free(f->last_err);
    f->last_err = NULL;
    if (asprintf(&f->last_err, "%s: %s", what, why ? why : "unknown error") < 0)
        f->last_err = NULL;
}

static int set_rv(struct follower *f, const cJSON *obj)
{
    const char *rv = json_string(json_member(obj, "metadata"), "resourceVersion");
    if (!rv)
        return 0;
    char *c = strdup(rv);
    if (!c)
        return -ENOMEM;
    free(f->rv);
    f->rv = c;
    return 0;
}

static int on_event(void *data, enum watch_event_type type, cJSON *obj, int *steal)
{
    (void)steal;
    struct follower *f = data;
    switch (type) {
    case WATCH_EVENT_ADDED:
    case WATCH_EVENT_MODIFIED:
        if (set_rv(f, obj) < 0)
            return -ENOMEM;
        if (f->on_change(f->data, obj)) {
            f->stop = 1;
            return -ECANCELED;
        }
        return 0;
    case WATCH_EVENT_DELETED:
        f->gone = 1;
        return -ECANCELED;
    case WATCH_EVENT_BOOKMARK:
        return set_rv(f, obj);
    case WATCH_EVENT_ERROR: {
        struct kube_api_error e = {0};
        if (kube_api_error_from_status(obj, &e) == 0) {
            set_err(f, "watch", e.message);
            kube_api_error_clear(&e);
        }
        f->relist = 1; /* 410 Gone or worse: read the object again */
        return -ECANCELED;
    }
    }
    return 0;
}

static int on_bytes(void *data, const char *bytes, size_t len)
{
    struct follower *f = data;
    int r = watch_stream_feed(&f->stream, bytes, len);
    if (r < 0 && r != -ECANCELED) {
        set_err(f, "watch", r == -ENOBUFS ? "event too large" : "unreadable event");
        f->relist = 1;
    }
    return r;
}

static void on_watch_done(void *data, struct kube_response *resp)
{
    struct follower *f = data;
    f->ended = 1;
    f->req = NULL;
    if (resp->status < 0 && resp->status != -ECANCELED && !f->stop && !f->gone) {
        set_err(f, "watch", kube_response_error_text(resp));
        f->relist = 1;
    }
}

static int watch_over(void *data)
{
    struct follower *f = data;
    return f->ended || f->stop || f->gone;
}

static void follower_tick(void *data)
{
    struct follower *f = data;
    if (f->tick)
        f->tick(f->data);
}

/* GET: the current state, and where to watch from. */
static int read_once(struct follower *f, const char *ns, const char *name)
{
    struct cli_reply r;
    int e = cli_api_get(f->api, &CLI_RESOURCE_WORKSPACES, ns, name, &r);
    if (e == 0) {
        e = set_rv(f, r.body);
        if (e == 0 && f->on_change(f->data, r.body))
            f->stop = 1;
    } else if (e != -EINTR) {
        set_err(f, "get", r.error);
    }
    cli_reply_clear(&r);
    return e;
}

int watch_workspace(struct cli_api *api, const char *ns, const char *name, int64_t deadline,
                    watch_change_cb on_change, void (*tick)(void *data), void *data, char **ret_err)
{
    struct follower f = {.api = api, .on_change = on_change, .tick = tick, .data = data};
    char selector[300];
    snprintf(selector, sizeof(selector), "metadata.name=%s", name);
    int r = 0;
    int need_get = 1;
    while (!f.stop && !f.gone) {
        if (need_get) {
            r = read_once(&f, ns, name);
            if (r == -ENOENT || r == -EINTR || r == -ENOMEM)
                break;
            if (r < 0) { /* the API server is busy or away: again in a second */
                if (cli_api_now(api) + RETRY_MS >= deadline) {
                    r = -ETIMEDOUT;
                    break;
                }
                if ((r = cli_api_sleep(api, RETRY_MS)) < 0)
                    break;
                continue;
            }
            need_get = 0;
            if (f.stop)
                break;
        }
        watch_stream_init(&f.stream, MAX_EVENT_BYTES, on_event, &f);
        struct kube_watch_options o = {.field_selector = selector,
                                       .resource_version = f.rv,
                                       .timeout_seconds = WATCH_SECONDS,
                                       .allow_bookmarks = 1};
        f.ended = f.relist = 0;
        f.req = NULL;
        r = kube_watch(api->client, &CLI_RESOURCE_WORKSPACES, ns, &o, on_bytes, on_watch_done, &f,
                       &f.req);
        if (r < 0) {
            watch_stream_free(&f.stream);
            break;
        }
        r = cli_api_run_until(api, watch_over, &f, deadline, follower_tick);
        if (f.req) {
            kube_request_cancel(f.req);
            f.req = NULL;
        }
        watch_stream_free(&f.stream);
        if (r < 0)
            break;
        if (f.relist) {
            need_get = 1;
            if ((r = cli_api_sleep(api, RETRY_MS)) < 0)
                break;
        }
    }
    if (r == 0 && f.gone)
        r = -ENOENT;
    if (r < 0 && ret_err && f.last_err) {
        *ret_err = f.last_err;
        f.last_err = NULL;
    }
    free(f.last_err);
    free(f.rv);
    return r;
}
