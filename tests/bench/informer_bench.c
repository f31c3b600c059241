/*
 * Informer benchmark against the local cluster: how much memory the cache of
 * 10,000 small custom objects takes, how long the first sync takes, and how
 * many watch events per second the informer applies.
 *
 *   informer_bench create NS N       create N Widgets (64 requests in flight)
 *   informer_bench update NS N       patch N Widgets (64 in flight)
 *   informer_bench watch NS N        sync, report, then apply N update events
 *   informer_bench watch-typed NS N  the same, caching a decoded struct (what a
 *                                    controller keeps) instead of the JSON
 *
 * The watcher runs in its own process so its RSS and CPU time are its own;
 * tests/bench/informer.sh runs the three and prints the figures.
 * BENCH_PAGE=N sets the informer's list page size (default: the informer's).
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kube/client.h"
#include "kube/informer.h"
#include "process_stats.h"
#include "util/log.h"

static const struct kube_resource widgets = {"bench.hibernator.dev", "v1", "widgets", "Widget", 1};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct writer {
    struct kube_client *client;
    const char *ns;
    int n, next, done, failed, in_flight, update;
};

static void write_one(struct writer *w);

static void on_written(void *data, struct kube_response *resp)
{
    struct writer *w = data;
    w->in_flight--;
    w->done++;
    if (resp->status < 0 && w->failed++ < 5)
        fprintf(stderr, "write failed: %ld %s\n", resp->http_code,
                resp->error.message ? resp->error.message : resp->transport_error);
    while (w->in_flight < 64 && w->next < w->n)
        write_one(w);
}

static void write_one(struct writer *w)
{
    char name[32];
    snprintf(name, sizeof(name), "w-%05d", w->next++);
    w->in_flight++;
    if (w->update) {
        /* The pid makes every run's patch a real change (a no-op patch makes no event). */
        char patch[96];
        snprintf(patch, sizeof(patch), "{\"spec\":{\"size\":%d,\"color\":\"c%ld\"}}", w->next,
                 (long)getpid());
        if (kube_patch(w->client, &widgets, w->ns, name, NULL, KUBE_PATCH_MERGE, patch, on_written,
                       w, NULL) < 0)
            fprintf(stderr, "cannot start a patch\n");
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "bench.hibernator.dev/v1");
    cJSON_AddStringToObject(o, "kind", "Widget");
    cJSON *meta = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(meta, "name", name);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "labels"), "app", "bench");
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddNumberToObject(spec, "size", w->next);
    cJSON_AddStringToObject(spec, "color", (w->next % 2) ? "blue" : "green");
    if (kube_create(w->client, &widgets, w->ns, o, on_written, w, NULL) < 0)
        fprintf(stderr, "cannot start a create\n");
    cJSON_Delete(o);
}

/* What a controller would keep of a Widget: the fields it reads. */
struct widget {
    int size;
    char color[16];
};

static int widget_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)data;
    (void)ret_err;
    struct widget *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(spec, "size");
    const cJSON *color = cJSON_GetObjectItemCaseSensitive(spec, "color");
    w->size = cJSON_IsNumber(size) ? size->valueint : 0;
    if (cJSON_IsString(color))
        snprintf(w->color, sizeof(w->color), "%s", color->valuestring);
    *ret = w;
    return 0;
}

static const struct informer_codec widget_codec = {widget_decode, free, NULL};

static void on_baseline(void *data, struct kube_response *resp)
{
    (void)resp;
    uv_stop(data);
}

struct watcher {
    uv_loop_t *loop;
    struct informer *inf;
    int synced;
    long updates, want;
    double t_sync, t_first_update, t_last_update;
};

static void on_synced(void *data)
{
    struct watcher *w = data;
    w->synced = 1;
    w->t_sync = now_s();
    uv_stop(w->loop);
}

static void on_update(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    (void)old_e;
    (void)e;
    struct watcher *w = data;
    if (w->updates++ == 0)
        w->t_first_update = now_s();
    w->t_last_update = now_s();
    if (w->updates >= w->want)
        uv_stop(w->loop);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: informer_bench create|update|watch NAMESPACE COUNT\n");
        return 2;
    }
    log_setup(LOG_LEVEL_WARN, LOG_FORMAT_TEXT, stderr);
    const char *mode = argv[1], *ns = argv[2];
    int n = atoi(argv[3]);
    struct kube_config *config = NULL;
    char *err = NULL;
    if (kube_config_load_default(NULL, &config, &err) < 0) {
        fprintf(stderr, "kubeconfig: %s\n", err);
        return 1;
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kube_client_options co = {.qps = 5000, .burst = 5000};
    struct kube_client *client = NULL;
    if (kube_client_new(&loop, config, &co, &client, &err) < 0) {
        fprintf(stderr, "client: %s\n", err);
        return 1;
    }
    int rc = 0;
    if (strcmp(mode, "create") == 0 || strcmp(mode, "update") == 0) {
        struct writer w = {.client = client, .ns = ns, .n = n, .update = mode[0] == 'u'};
        double t0 = now_s();
        while (w.in_flight < 64 && w.next < w.n)
            write_one(&w);
        uv_run(&loop, UV_RUN_DEFAULT);
        double dt = now_s() - t0;
        printf("%s: %d objects in %.2f s (%.0f/s), %d failed\n", mode, w.done, dt,
               (double)w.done / dt, w.failed);
        rc = w.failed ? 1 : 0;
        kube_client_close(client);
    } else {
        /* The baseline: libraries loaded, TLS connection up, nothing cached. */
        if (kube_get(client, &KUBE_RESOURCE_NAMESPACES, NULL, ns, on_baseline, &loop, NULL) < 0)
            fprintf(stderr, "cannot start a get\n");
        uv_run(&loop, UV_RUN_DEFAULT);
        long rss0 = process_status_kib("VmRSS");
        struct watcher w = {.loop = &loop, .want = n};
        struct informer_options io = {
            .resource = &widgets,
            .ns = ns,
            .codec = strcmp(mode, "watch-typed") == 0 ? &widget_codec : NULL,
            .page_size = getenv("BENCH_PAGE") ? atol(getenv("BENCH_PAGE")) : 0,
            .handlers = {.on_synced = on_synced, .on_update = on_update, .data = &w},
        };
        informer_new(&loop, client, &io, &w.inf);
        double t0 = now_s();
        informer_start(w.inf);
        uv_run(&loop, UV_RUN_DEFAULT);
        long rss1 = process_status_kib("VmRSS");
        struct mallinfo2 mi = mallinfo2();
        fprintf(stderr, "heap: in use %zu KiB, free in heap %zu KiB, mmapped %zu KiB\n",
                mi.uordblks / 1024, mi.fordblks / 1024, mi.hblkhd / 1024);
        printf("sync (%s): %zu objects in %.2f s; RSS baseline %ld KiB, after sync %ld KiB "
               "(cache and heap +%ld KiB), peak %ld KiB\n",
               mode, informer_len(w.inf), w.t_sync - t0, rss0, rss1, rss1 - rss0,
               process_status_kib("VmHWM"));
        fflush(stdout);
        /* Tell the driver script we are ready for the update storm. */
        fprintf(stderr, "READY\n");
        double c0 = process_cpu_s();
        uv_run(&loop, UV_RUN_DEFAULT);
        double c1 = process_cpu_s();
        double span = w.t_last_update - w.t_first_update;
        printf("watch: %ld update events in %.2f s (%.0f events/s received); CPU %.2f s "
               "(%.1f us per event); RSS %ld KiB\n",
               w.updates, span, span > 0 ? (double)w.updates / span : 0.0, c1 - c0,
               w.updates ? (c1 - c0) * 1e6 / (double)w.updates : 0.0, process_status_kib("VmRSS"));
        informer_free(w.inf);
        kube_client_close(client);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    kube_config_free(config);
    return rc;
}
