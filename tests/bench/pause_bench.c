/*
 * Pause latency when many workspaces fall due at once, measured from outside
 * the controller: N Workspaces are paused together (N merge patches of
 * spec.paused=true, all in flight at once), and this program's own watches
 * say, for each, when it became due and when its pod's delete was requested.
 *
 *   pause_bench NAMESPACE PREFIX N
 *
 * The Workspaces PREFIX0 .. PREFIX<N-1> must be Running, each with its pod.
 * A workspace is due from the earlier of its patch's answer and this
 * program's watch showing spec.paused=true; its pod's delete counts from the
 * watch showing the pod with a deletionTimestamp (the API server sets it
 * when it accepts the delete). Both times are on this process's monotonic
 * clock. Prints one line per workspace and a summary; tests/bench/pause.sh
 * sets up the cluster and runs it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "kube/client.h"
#include "kube/informer.h"
#include "util/json.h"
#include "util/log.h"
#include "workspace/workspace.h"

#define TIMEOUT_MS 120000

static const struct kube_resource workspaces = {"hibernator.dev", "v1alpha1", "workspaces",
                                                "Workspace", 1};

struct bench {
    uv_loop_t *loop;
    struct kube_client *client;
    const char *ns, *prefix;
    int n;
    double *due_ms, *deleted_ms, *answer_ms; /* answer_ms: each patch's round trip */
    double sent_ms;
    int deleted, answered, failed, started, synced, complete;
    struct informer *ws_inf, *pod_inf;
    uv_timer_t timeout;
};

static double now_ms(void)
{
    return (double)uv_hrtime() / 1e6;
}

/* The workspace's index from its name, -1 when not one of ours. */
static int index_of(const struct bench *b, const char *name)
{
    size_t pl = strlen(b->prefix);
    if (!name || strncmp(name, b->prefix, pl) != 0 || !name[pl])
        return -1;
    char *end;
    long i = strtol(name + pl, &end, 10);
    return *end == '\0' && i >= 0 && i < b->n ? (int)i : -1;
}

/* Cached forms: a Workspace's spec.paused; a pod's workspace label and
 * whether it is being deleted. */
struct seen {
    int flag;
    char *workspace;
};

static int decode_ws(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)data;
    (void)ret_err;
    struct seen *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->flag = cJSON_IsTrue(json_member(json_member(obj, "spec"), "paused"));
    *ret = s;
    return 0;
}

static int decode_pod(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)data;
    (void)ret_err;
    const cJSON *meta = json_member(obj, "metadata");
    struct seen *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->flag = json_string(meta, "deletionTimestamp") != NULL;
    const char *w = json_string(json_member(meta, "labels"), WORKSPACE_LABEL);
    if (w && !(s->workspace = strdup(w))) {
        free(s);
        return -ENOMEM;
    }
    *ret = s;
    return 0;
}

static void free_seen(void *p)
{
    struct seen *s = p;
    if (s)
        free(s->workspace);
    free(s);
}

static void on_timeout(uv_timer_t *t);

static void finish(struct bench *b)
{
    uv_timer_stop(&b->timeout);
    informer_free(b->ws_inf);
    informer_free(b->pod_inf);
    b->ws_inf = b->pod_inf = NULL;
    kube_client_close(b->client);
    b->client = NULL;
    uv_close((uv_handle_t *)&b->timeout, NULL);
}

/* Ends the run from the loop, not from inside an informer's or the
 * client's callback. */
static void end_soon(struct bench *b)
{
    b->complete = 1;
    uv_timer_start(&b->timeout, on_timeout, 0, 0);
}

static void check_done(struct bench *b)
{
    if (!b->complete && b->deleted == b->n && b->answered == b->n)
        end_soon(b);
}

static void note_due(struct bench *b, int i)
{
    if (i >= 0 && b->started && b->due_ms[i] == 0)
        b->due_ms[i] = now_ms();
}

static void on_ws(void *data, const struct cache_entry *e)
{
    struct bench *b = data;
    const struct seen *s = e->obj;
    if (s && s->flag)
        note_due(b, index_of(b, e->name));
}

static void on_ws_update(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    (void)old_e;
    on_ws(data, e);
}

static void on_pod(void *data, const struct cache_entry *e)
{
    struct bench *b = data;
    const struct seen *s = e->obj;
    int i = s && s->flag ? index_of(b, s->workspace) : -1;
    if (i < 0 || !b->started || b->deleted_ms[i] != 0)
        return;
    b->deleted_ms[i] = now_ms();
    b->deleted++;
    check_done(b);
}

static void on_pod_update(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    (void)old_e;
    on_pod(data, e);
}

static void on_patched(void *data, struct kube_response *resp)
{
    struct bench *b = data;
    b->answered++;
    if (resp->status < 0) {
        b->failed++;
        fprintf(stderr, "patch failed: %ld %s\n", resp->http_code, kube_response_error_text(resp));
        if (b->failed == b->n)
            end_soon(b);
        return;
    }
    const char *name = json_string(json_member(resp->body, "metadata"), "name");
    int i = index_of(b, name);
    note_due(b, i);
    if (i >= 0)
        b->answer_ms[i] = now_ms() - b->sent_ms;
    check_done(b);
}

static void start_pauses(struct bench *b)
{
    b->started = 1;
    b->sent_ms = now_ms();
    char name[256];
    for (int i = 0; i < b->n; i++) {
        snprintf(name, sizeof(name), "%s%d", b->prefix, i);
        if (kube_patch(b->client, &workspaces, b->ns, name, NULL, KUBE_PATCH_MERGE,
                       "{\"spec\":{\"paused\":true}}", on_patched, b, NULL) < 0) {
            fprintf(stderr, "cannot start a patch\n");
            b->answered++;
            b->failed++;
        }
    }
}

static void on_synced(void *data)
{
    struct bench *b = data;
    if (++b->synced == 2)
        start_pauses(b);
}

static void on_timeout(uv_timer_t *t)
{
    struct bench *b = t->data;
    if (!b->complete)
        fprintf(stderr, "timed out: %d of %d deletes seen\n", b->deleted, b->n);
    finish(b);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 4 || atoi(argv[3]) <= 0) {
        fprintf(stderr, "usage: pause_bench NAMESPACE PREFIX N\n");
        return 2;
    }
    log_setup(LOG_LEVEL_WARN, LOG_FORMAT_TEXT, stderr);
    struct bench b = {.ns = argv[1], .prefix = argv[2], .n = atoi(argv[3])};
    b.due_ms = calloc((size_t)b.n, sizeof(double));
    b.deleted_ms = calloc((size_t)b.n, sizeof(double));
    b.answer_ms = calloc((size_t)b.n, sizeof(double));
    struct kube_config *config = NULL;
    char *err = NULL;
    if (!b.due_ms || !b.deleted_ms || !b.answer_ms ||
        kube_config_load_default(NULL, &config, &err) < 0) {
        fprintf(stderr, "kubeconfig: %s\n", err ? err : "out of memory");
        return 1;
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    b.loop = &loop;
    /* Unlimited: every patch goes out at once. */
    struct kube_client_options co = {.qps = -1, .burst = 0};
    if (kube_client_new(&loop, config, &co, &b.client, &err) < 0) {
        fprintf(stderr, "client: %s\n", err);
        return 1;
    }
    struct informer_codec ws_codec = {decode_ws, free_seen, NULL};
    struct informer_codec pod_codec = {decode_pod, free_seen, NULL};
    struct informer_options wo = {
        .resource = &workspaces,
        .ns = b.ns,
        .codec = &ws_codec,
        .handlers = {on_ws, on_ws_update, NULL, on_synced, &b},
    };
    struct informer_options po = {
        .resource = &KUBE_RESOURCE_PODS,
        .ns = b.ns,
        .label_selector = WORKSPACE_LABEL,
        .codec = &pod_codec,
        .handlers = {on_pod, on_pod_update, NULL, on_synced, &b},
    };
    if (informer_new(&loop, b.client, &wo, &b.ws_inf) < 0 ||
        informer_new(&loop, b.client, &po, &b.pod_inf) < 0 || informer_start(b.ws_inf) < 0 ||
        informer_start(b.pod_inf) < 0) {
        fprintf(stderr, "cannot start the watches\n");
        return 1;
    }
    uv_timer_init(&loop, &b.timeout);
    b.timeout.data = &b;
    uv_timer_start(&b.timeout, on_timeout, TIMEOUT_MS, 0);
    uv_run(&loop, UV_RUN_DEFAULT);

    double *lat = calloc((size_t)b.n, sizeof(double));
    int k = 0, over5 = 0;
    for (int i = 0; lat && i < b.n; i++) {
        if (!b.due_ms[i] || !b.deleted_ms[i]) {
            printf("%s%d missing (due %s, delete %s)\n", b.prefix, i,
                   b.due_ms[i] ? "seen" : "not seen", b.deleted_ms[i] ? "seen" : "not seen");
            continue;
        }
        lat[k] = b.deleted_ms[i] - b.due_ms[i];
        printf("%s%d %.1f ms\n", b.prefix, i, lat[k]);
        over5 += lat[k] > 5000;
        k++;
    }
    int rc = 1;
    if (k > 0) {
        qsort(lat, (size_t)k, sizeof(double), cmp_double);
        double p50 = lat[(k - 1) / 2], p90 = lat[(int)((k - 1) * 0.9 + 0.5)], max = lat[k - 1];
        printf("%d simultaneous pauses: due -> pod delete requested: median %.0f ms, p90 %.0f ms, "
               "max %.0f ms, %d over 5 s, %d missing\n",
               b.n, p50, p90, max, over5, b.n - k);
        fprintf(stderr,
                "RESULT pause_bench n=%d median_ms=%.0f p90_ms=%.0f max_ms=%.0f over_5s=%d "
                "missing=%d\n",
                b.n, p50, p90, max, over5, b.n - k);
        rc = k == b.n ? 0 : 1;
        /* How busy the API server was: the patches' own round trips. */
        qsort(b.answer_ms, (size_t)b.n, sizeof(double), cmp_double);
        printf("the %d patches were answered in: median %.0f ms, max %.0f ms\n", b.n,
               b.answer_ms[(b.n - 1) / 2], b.answer_ms[b.n - 1]);
    }
    free(lat);
    free(b.due_ms);
    free(b.deleted_ms);
    free(b.answer_ms);
    uv_loop_close(&loop);
    kube_config_free(config);
    return rc;
}
