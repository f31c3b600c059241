/*
 * The scale benchmark's hands on the local cluster (tests/bench/scale.sh
 * drives it):
 *
 *   scale_bench create NS PREFIX FROM TO CLASS EVERY
 *       creates Workspaces PREFIX<FROM> .. PREFIX<TO-1> of CLASS, 128
 *       requests in flight: paused, but those whose index is a multiple of
 *       EVERY (0: none) running
 *   scale_bench patch NS PREFIX FROM TO PATCH
 *       merge-patches each of them with PATCH ("%p" in it: this process's
 *       pid, so that a repeated run is still a change)
 *
 * A write whose connection broke before an answer is sent again (three
 * attempts in all; a create that finds its workspace made counts as done);
 * the summary line says how many were.
 *   scale_bench census NS
 *       what the controller's caches hold per Workspace and per home claim
 *       of NS: each object decoded as the controller decodes it, its heap
 *       bytes counted by part (malloc_usable_size of each block plus its
 *       chunk header), and its compact JSON for comparison
 *
 * Names are PREFIX followed by the index in six digits. Writes go through
 * the project's own client (HTTP/2, one connection).
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/resource.h"
#include "util/log.h"
#include "workspace/pod.h"
#include "workspace/workspace.h"

#define IN_FLIGHT 128

static const struct kube_resource workspaces = {"hibernator.dev", "v1alpha1", "workspaces",
                                                "Workspace", 1};

static double now_s(void)
{
    return (double)uv_hrtime() / 1e9;
}

/* ---- create and patch ----------------------------------------------------- */

struct writer {
    struct kube_client *client;
    const char *ns, *prefix, *class_name, *patch;
    long every;
    long next, to, done, failed, retried, in_flight;
};

/* One write in flight: which workspace, and how many times it was sent. */
struct write {
    struct writer *w;
    long index;
    int attempt;
};

/* A write whose connection broke (no HTTP answer) is sent again, up to this
 * many times in all: the answer says nothing about the workspace, and one
 * lost connection should not end a benchmark of many minutes. */
#define ATTEMPTS 3

static void write_send(struct writer *w, long index, int attempt);

static void on_written(void *data, struct kube_response *resp)
{
    struct write *one = data;
    struct writer *w = one->w;
    long index = one->index;
    int attempt = one->attempt;
    free(one);
    w->in_flight--;
    /* A create sent again after a broken connection may find its first
     * attempt made it through. */
    int exists = attempt > 1 && !w->patch && resp->http_code == 409;
    if (resp->status < 0 && !exists) {
        if (resp->http_code == 0 && attempt < ATTEMPTS) {
            if (w->retried++ < 5)
                fprintf(stderr, "write of %s%06ld failed, sending it again: %s\n", w->prefix, index,
                        kube_response_error_text(resp));
            write_send(w, index, attempt + 1);
            return;
        }
        if (w->failed++ < 5)
            fprintf(stderr, "write of %s%06ld failed: %ld %s\n", w->prefix, index, resp->http_code,
                    kube_response_error_text(resp));
    }
    w->done++;
    while (w->in_flight < IN_FLIGHT && w->next < w->to)
        write_send(w, w->next++, 1);
}

static void write_send(struct writer *w, long index, int attempt)
{
    struct write *one = malloc(sizeof(*one));
    if (!one) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    *one = (struct write){w, index, attempt};
    char name[96];
    snprintf(name, sizeof(name), "%s%06ld", w->prefix, index);
    w->in_flight++;
    int rc;
    if (w->patch) {
        char patch[512], pid[24];
        snprintf(pid, sizeof(pid), "%ld", (long)getpid());
        const char *p = strstr(w->patch, "%p");
        if (p)
            snprintf(patch, sizeof(patch), "%.*s%s%s", (int)(p - w->patch), w->patch, pid, p + 2);
        else
            snprintf(patch, sizeof(patch), "%s", w->patch);
        rc = kube_patch(w->client, &workspaces, w->ns, name, NULL, KUBE_PATCH_MERGE, patch,
                        on_written, one, NULL);
    } else {
        cJSON *o = cJSON_CreateObject();
        cJSON *meta = cJSON_AddObjectToObject(o, "metadata");
        cJSON *spec = cJSON_AddObjectToObject(o, "spec");
        if (!cJSON_AddStringToObject(o, "apiVersion", "hibernator.dev/v1alpha1") ||
            !cJSON_AddStringToObject(o, "kind", "Workspace") || !meta ||
            !cJSON_AddStringToObject(meta, "name", name) || !spec ||
            !cJSON_AddStringToObject(spec, "className", w->class_name) ||
            !cJSON_AddBoolToObject(spec, "paused", !w->every || index % w->every != 0)) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
        rc = kube_create(w->client, &workspaces, w->ns, o, on_written, one, NULL);
        cJSON_Delete(o);
    }
    if (rc < 0) {
        fprintf(stderr, "cannot start a request: %s\n", strerror(-rc));
        free(one);
        w->in_flight--;
        w->failed++;
    }
}

static int run_writer(uv_loop_t *loop, struct writer *w, const char *what)
{
    long n = w->to - w->next;
    double t0 = now_s();
    while (w->in_flight < IN_FLIGHT && w->next < w->to)
        write_send(w, w->next++, 1);
    uv_run(loop, UV_RUN_DEFAULT);
    double dt = now_s() - t0;
    printf("%s: %ld workspaces in %.1f s (%.0f/s), %ld sent again, %ld failed\n", what, n, dt,
           dt > 0 ? (double)n / dt : 0.0, w->retried, w->failed);
    return w->failed ? 1 : 0;
}

/* ---- census --------------------------------------------------------------- */

static size_t usable(const void *p)
{
    return p ? malloc_usable_size((void *)p) + sizeof(size_t) : 0; /* + the chunk header */
}

struct census {
    long objects;
    double json, total, structure, conditions, history, strings;
};

static size_t str_bytes(const char *s)
{
    return usable(s);
}

/* Every string a decoded workspace owns, outside conditions and history. */
static size_t workspace_strings(const struct workspace *ws)
{
    const struct workspace_status *s = &ws->status;
    const char *const strs[] = {ws->ns,
                                ws->name,
                                ws->uid,
                                ws->resource_version,
                                ws->class_name,
                                ws->image,
                                ws->home_size,
                                ws->auto_pause_message,
                                ws->acknowledged_home_loss,
                                ws->spec_error,
                                s->message,
                                s->pod_name,
                                s->pod_uid,
                                s->deleted_pod,
                                s->node_name,
                                s->home_claim_name,
                                s->accelerator_resource,
                                s->accelerator_product,
                                s->last_pause->reason,
                                s->last_pause->message,
                                s->last_pause->memory,
                                s->last_pause->node_name,
                                s->last_pause->product,
                                s->last_pause->accelerator_taken_by,
                                s->last_resume->restored_from,
                                s->activity->last_activity_source,
                                s->activity->last_probe_result,
                                s->activity->last_probe_error,
                                s->snapshot->attempt,
                                s->snapshot->name,
                                s->snapshot->phase,
                                s->snapshot->node_name,
                                s->snapshot->gpu_product,
                                s->snapshot->pod_spec_hash,
                                s->snapshot->message,
                                s->snapshot->home_claim_uid,
                                s->snapshot->checkpoint_attempt,
                                s->snapshot->checkpoint_result,
                                s->snapshot->checkpoint_message,
                                s->snapshot->group,
                                s->snapshot->rejected_group,
                                s->home->claim_uid,
                                s->home->lost_claim_uid,
                                s->home->fresh_pod,
                                s->last_interruption->pod,
                                s->last_interruption->pod_uid,
                                s->last_interruption->node_name,
                                s->last_interruption->reason,
                                s->last_interruption->message,
                                s->last_interruption->replaced_by};
    size_t n = 0;
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        n += str_bytes(strs[i]);
    n += usable(ws->env);
    for (size_t i = 0; i < ws->n_env; i++)
        n += str_bytes(ws->env[i].name) + str_bytes(ws->env[i].value);
    return n;
}

static size_t history_bytes(const struct workspace_status *s)
{
    size_t n = usable(s->history);
    for (size_t i = 0; i < s->n_history; i++) {
        const struct workspace_pause_timeline *p = &s->history[i].pause;
        n += str_bytes(p->reason) + str_bytes(p->message) + str_bytes(p->memory) +
             str_bytes(p->node_name) + str_bytes(p->product) + str_bytes(p->accelerator_taken_by) +
             str_bytes(s->history[i].resume.restored_from);
    }
    return n;
}

/* The status's blocks of its own (those set); an absent one is the shared
 * read-only empty, as in a status decoded from nothing. */
static size_t block_bytes(const struct workspace_status *s)
{
    static struct workspace_status none;
    static int have_none;
    if (!have_none) {
        workspace_status_init(&none);
        have_none = 1;
    }
    const void *const own[][2] = {{s->last_pause, none.last_pause},
                                  {s->last_resume, none.last_resume},
                                  {s->activity, none.activity},
                                  {s->snapshot, none.snapshot},
                                  {s->home, none.home},
                                  {s->last_interruption, none.last_interruption}};
    size_t n = 0;
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
        if (own[i][0] != own[i][1])
            n += usable(own[i][0]);
    return n;
}

static void census_workspace(struct census *c, const cJSON *obj)
{
    struct workspace *ws = NULL;
    char *err = NULL;
    if (workspace_decode(obj, &ws, &err) < 0) {
        fprintf(stderr, "cannot decode a workspace: %s\n", err ? err : "?");
        free(err);
        return;
    }
    size_t conds = usable(ws->status.conditions);
    for (size_t i = 0; i < ws->status.n_conditions; i++) {
        const struct condition *k = &ws->status.conditions[i];
        conds += str_bytes(k->type) + str_bytes(k->reason) + str_bytes(k->message);
    }
    char *json = cJSON_PrintUnformatted(obj);
    c->objects++;
    c->json += json ? (double)strlen(json) : 0;
    size_t structure = usable(ws) + block_bytes(&ws->status), history = history_bytes(&ws->status),
           strings = workspace_strings(ws);
    c->total += (double)(structure + conds + history + strings);
    c->structure += (double)structure;
    c->conditions += (double)conds;
    c->history += (double)history;
    c->strings += (double)strings;
    free(json);
    workspace_free(ws);
}

static void census_claim(struct census *c, const cJSON *obj)
{
    struct workspace_pvc *pvc = workspace_pvc_decode(obj, NULL);
    if (!pvc)
        return;
    char *json = cJSON_PrintUnformatted(obj);
    c->objects++;
    c->json += json ? (double)strlen(json) : 0;
    /* one block: the struct with its strings after it */
    c->total += (double)usable(pvc);
    c->structure += (double)usable(pvc);
    free(json);
    workspace_pvc_free(pvc);
}

struct lister {
    struct kube_client *client;
    const struct kube_resource *res;
    const char *ns;
    struct census *c;
    void (*one)(struct census *c, const cJSON *obj);
    int failed;
};

static void list_page(struct lister *l, const char *continue_token);

static void on_page(void *data, struct kube_response *resp)
{
    struct lister *l = data;
    if (resp->status < 0) {
        fprintf(stderr, "list failed: %s\n", kube_response_error_text(resp));
        l->failed = 1;
        return;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(resp->body, "items"))
        l->one(l->c, item);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(resp->body, "metadata");
    const cJSON *cont = cJSON_GetObjectItemCaseSensitive(meta, "continue");
    if (cJSON_IsString(cont) && cont->valuestring[0])
        list_page(l, cont->valuestring);
}

static void list_page(struct lister *l, const char *continue_token)
{
    struct kube_list_options o = {.limit = 500, .continue_token = continue_token};
    if (kube_list(l->client, l->res, l->ns, &o, on_page, l, NULL) < 0) {
        fprintf(stderr, "cannot start a list\n");
        l->failed = 1;
    }
}

static void census_print(const char *what, const struct census *c)
{
    double n = c->objects ? (double)c->objects : 1.0;
    printf("%s: %ld objects; per object: decoded %.0f B on the heap (structure %.0f, conditions "
           "%.0f, history %.0f, other strings %.0f); compact JSON %.0f B\n",
           what, c->objects, c->total / n, c->structure / n, c->conditions / n, c->history / n,
           c->strings / n, c->json / n);
}

static int run_census(uv_loop_t *loop, struct kube_client *client, const char *ns)
{
    struct census ws = {0}, claims = {0};
    struct lister lw = {client, &workspaces, ns, &ws, census_workspace, 0};
    struct lister lc = {client, &KUBE_RESOURCE_PVCS, ns, &claims, census_claim, 0};
    list_page(&lw, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    list_page(&lc, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    census_print("workspaces", &ws);
    census_print("home claims", &claims);
    return lw.failed || lc.failed;
}

/* ---- main ----------------------------------------------------------------- */

static int usage(void)
{
    fprintf(stderr, "usage: scale_bench create NS PREFIX FROM TO CLASS EVERY\n"
                    "       scale_bench patch NS PREFIX FROM TO PATCH\n"
                    "       scale_bench census NS\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    const char *mode = argv[1], *ns = argv[2];
    int create = strcmp(mode, "create") == 0, patch = strcmp(mode, "patch") == 0;
    if ((create && argc != 8) || (patch && argc != 7) ||
        (!create && !patch && (strcmp(mode, "census") != 0 || argc != 3)))
        return usage();
    log_setup(LOG_LEVEL_WARN, LOG_FORMAT_TEXT, stderr);
    struct kube_config *config = NULL;
    char *err = NULL;
    if (kube_config_load_default(NULL, &config, &err) < 0) {
        fprintf(stderr, "kubeconfig: %s\n", err);
        return 1;
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kube_client_options co = {.qps = 1e6, .burst = 1000000, .timeout_ms = 120000};
    struct kube_client *client = NULL;
    if (kube_client_new(&loop, config, &co, &client, &err) < 0) {
        fprintf(stderr, "client: %s\n", err);
        return 1;
    }
    int rc;
    if (create || patch) {
        struct writer w = {
            .client = client,
            .ns = ns,
            .prefix = argv[3],
            .next = atol(argv[4]),
            .to = atol(argv[5]),
            .class_name = create ? argv[6] : NULL,
            .every = create ? atol(argv[7]) : 0,
            .patch = patch ? argv[6] : NULL,
        };
        rc = run_writer(&loop, &w, mode);
    } else {
        rc = run_census(&loop, client, ns);
    }
    kube_client_close(client);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    kube_config_free(config);
    return rc;
}
