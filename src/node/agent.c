#include "node/agent.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/informer.h"
#include "node/archive_sweep.h"
#include "node/checkpoint_image.h"
#include "node/kubelet_checkpoint.h"
#include "node/registry.h"
#include "node/snapshot_step.h"
#include "util/backoff.h"
#include "util/clock.h"
#include "util/json.h"
#include "util/log.h"
#include "util/secret.h"
#include "util/timefmt.h"

const struct kube_resource KUBE_RESOURCE_CONTAINER_SNAPSHOTS = {
    "hibernator.dev", "v1alpha1", "containersnapshots", "ContainerSnapshot", 1};

/* Transport failures of the kubelet call and failed stores are retried
 * this often, with backoff, before the snapshot is failed. */
#define MAX_FAILURES 6
#define RETRY_BASE_MS 1000
#define RETRY_MAX_MS 30000
#define MAX_DOCKER_CONFIG (1024 * 1024)
/* Leftover archives (node/archive_sweep.h) are looked for at start and
 * this often after; a later sweep leaves files younger than a checkpoint
 * can take and this margin. */
#define SWEEP_INTERVAL_MS (10 * 60 * 1000)
#define SWEEP_MARGIN_MS (5 * 60 * 1000)

/* ---- the cached object ------------------------------------------------------ */

struct csnap {
    cJSON *obj; /* the object as read (status.conditions are patched from it) */
    const char *node, *pod, *pod_uid, *container, *repository, *tag; /* borrowed from obj */
    const char *archive, *image, *resource_version, *uid;
    int deleting, has_finalizer;
    enum snapshot_cond checkpointed, ready;
};

static enum snapshot_cond condition(const cJSON *obj, const char *type)
{
    const cJSON *conds = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "status"), "conditions");
    const cJSON *c;
    cJSON_ArrayForEach(c, conds)
    {
        const char *t = json_string(c, "type");
        if (t && strcmp(t, type) == 0) {
            const char *s = json_string(c, "status");
            if (s && strcmp(s, "True") == 0)
                return SNAPSHOT_COND_TRUE;
            if (s && strcmp(s, "False") == 0)
                return SNAPSHOT_COND_FALSE;
        }
    }
    return SNAPSHOT_COND_NONE;
}

static int csnap_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)data;
    struct csnap *s = calloc(1, sizeof(*s));
    if (!s || !(s->obj = cJSON_Duplicate(obj, 1))) {
        free(s);
        return -ENOMEM;
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(s->obj, "metadata");
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(s->obj, "spec");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(s->obj, "status");
    s->node = json_string(spec, "nodeName");
    s->pod = json_string(spec, "podName");
    s->pod_uid = json_string(spec, "podUID");
    s->container = json_string(spec, "containerName");
    s->repository = json_string(spec, "repository");
    s->tag = json_string(spec, "tag");
    s->archive = json_string(status, "archive");
    s->image = json_string(status, "image");
    s->resource_version = json_string(meta, "resourceVersion");
    s->uid = json_string(meta, "uid");
    s->deleting = json_string(meta, "deletionTimestamp") != NULL;
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(meta, "finalizers"))
    {
        if (cJSON_IsString(f) && strcmp(f->valuestring, CONTAINER_SNAPSHOT_FINALIZER) == 0)
            s->has_finalizer = 1;
    }
    s->checkpointed = condition(s->obj, "Checkpointed");
    s->ready = condition(s->obj, "Ready");
    const char *missing = !s->node         ? "spec.nodeName"
                          : !s->pod        ? "spec.podName"
                          : !s->pod_uid    ? "spec.podUID"
                          : !s->container  ? "spec.containerName"
                          : !s->repository ? "spec.repository"
                          : !s->tag        ? "spec.tag"
                                           : NULL;
    if (missing) {
        cJSON_Delete(s->obj);
        free(s);
        if (ret_err && asprintf(ret_err, "%s is missing", missing) < 0)
            *ret_err = NULL;
        return -EINVAL;
    }
    *ret = s;
    return 0;
}

static void csnap_free(void *p)
{
    struct csnap *s = p;
    if (s)
        cJSON_Delete(s->obj);
    free(s);
}

static const struct informer_codec csnap_codec = {csnap_decode, csnap_free, NULL};

/* ---- the agent ------------------------------------------------------------- */

struct work;

struct node_agent {
    uv_loop_t *loop;
    struct kube_client *client;
    struct informer *snapshots;
    char *node, *kubelet_url, *kubelet_ca, *token_file, *checkpoint_dir, *registry_ca;
    char *docker_config; /* the registry credentials file's text; wiped at close */
    size_t docker_config_len;
    long checkpoint_timeout_s;
    const char *architecture;
    struct work *works;
    struct kube_request *node_req;
    int64_t started_ms;     /* node_agent_new() */
    uv_timer_t sweep_timer; /* the next sweep of leftover archives */
    int sweeping;           /* one on the thread pool */
    int sweep_again;        /* another (SWEEP_NOW) when it ends */
    unsigned jobs;          /* on the thread pool */
    unsigned handles;       /* timers being closed */
    int closing;
};

/* What the agent keeps per object while it has something to do for it. */
struct work {
    struct node_agent *a;
    char *key, *ns, *name;
    char *uid;          /* the object's uid the facts below are for */
    enum pod_check pod; /* what the pod was when last read */
    int busy;           /* a call or a job in flight */
    /* status.archive as it was when the agent deleted that file or found it
     * missing: known not to be on the node (the agent never looks at the
     * file system from the loop). NULL: not known to be gone. */
    char *archive_gone;
    /* The resourceVersion the cache had when a status write of the agent's
     * went out, kept once the write changed the object, until the cache
     * holds a newer one: what the cache says until then is from before the
     * agent's own write (a checkpoint already stored would look undone). */
    char *written_over_rv;
    unsigned failures; /* in a row, for backoff and the limit */
    uv_timer_t retry;
    struct kube_request *req;
    struct work *next;
};

static void consider(struct node_agent *a, const char *key);

/* Sweeps for leftover archives (node/archive_sweep.h), by their cutoff:
 * the agent's start, the sweep's own start (a snapshot became final), a
 * checkpoint's longest time ago (the periodic one). */
enum sweep_kind { SWEEP_START, SWEEP_NOW, SWEEP_PERIODIC };
static void sweep_start(struct node_agent *a, enum sweep_kind kind);

static void maybe_free_agent(struct node_agent *a)
{
    if (!a->closing || a->jobs || a->handles || a->works)
        return;
    free(a->node);
    free(a->kubelet_url);
    free(a->kubelet_ca);
    free(a->token_file);
    free(a->checkpoint_dir);
    free(a->registry_ca);
    if (a->docker_config)
        secret_free(a->docker_config, a->docker_config_len);
    free(a);
}

static void handle_closed(uv_handle_t *h)
{
    struct node_agent *a = h->data;
    a->handles--;
    maybe_free_agent(a);
}

static void close_sweep_timer(struct node_agent *a)
{
    a->handles++;
    uv_close((uv_handle_t *)&a->sweep_timer, handle_closed);
}

static void work_closed(uv_handle_t *h)
{
    struct work *w = h->data;
    struct node_agent *a = w->a;
    free(w->key);
    free(w->ns);
    free(w->name);
    free(w->uid);
    free(w->archive_gone);
    free(w->written_over_rv);
    free(w);
    a->handles--;
    maybe_free_agent(a);
}

static void work_drop(struct work *w)
{
    struct node_agent *a = w->a;
    for (struct work **p = &a->works; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    kube_request_cancel(w->req);
    w->req = NULL;
    a->handles++;
    uv_close((uv_handle_t *)&w->retry, work_closed);
}

static struct work *work_find(struct node_agent *a, const char *key)
{
    for (struct work *w = a->works; w; w = w->next)
        if (strcmp(w->key, key) == 0)
            return w;
    return NULL;
}

static struct work *work_get(struct node_agent *a, const struct cache_entry *e)
{
    struct work *w = work_find(a, e->key);
    if (w)
        return w;
    w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->a = a;
    w->key = strdup(e->key);
    w->ns = strdup(e->ns);
    w->name = strdup(e->name);
    if (!w->key || !w->ns || !w->name) {
        free(w->key);
        free(w->ns);
        free(w->name);
        free(w);
        return NULL;
    }
    uv_timer_init(a->loop, &w->retry);
    w->retry.data = w;
    w->next = a->works;
    a->works = w;
    return w;
}

static void on_retry(uv_timer_t *t)
{
    struct work *w = t->data;
    consider(w->a, w->key);
}

/* 1 s, 2 s, 4 s ... 30 s after the failures in a row, jittered by up to a
 * half. */
static void retry_later(struct work *w)
{
    struct backoff b;
    backoff_init(&b, RETRY_BASE_MS, RETRY_MAX_MS, 2.0, 0.5);
    uint64_t ms = RETRY_BASE_MS;
    for (unsigned i = 0; i <= w->failures && i < 16; i++)
        ms = backoff_next(&b, backoff_random());
    uv_timer_start(&w->retry, on_retry, ms, 0);
}

/* ---- writing status ---------------------------------------------------------- */

/* Sets condition type in conds (a status.conditions array), keeping its
 * lastTransitionTime when the status stays. */
static int set_condition(cJSON *conds, const char *type, const char *status, const char *reason,
                         const char *message)
{
    char now[TIMEFMT_RFC3339_SIZE];
    timefmt_rfc3339_text(clock_unix_ms(), now);
    cJSON *c, *found = NULL;
    cJSON_ArrayForEach(c, conds)
    {
        const char *t = json_string(c, "type");
        if (t && strcmp(t, type) == 0)
            found = c;
    }
    const char *since = now;
    char kept[TIMEFMT_RFC3339_SIZE] = "";
    if (found) {
        const char *old = json_string(found, "status");
        const char *ltt = json_string(found, "lastTransitionTime");
        if (old && ltt && strcmp(old, status) == 0) {
            snprintf(kept, sizeof(kept), "%s", ltt);
            since = kept;
        }
    }
    cJSON *n = cJSON_CreateObject();
    if (!n || !cJSON_AddStringToObject(n, "type", type) ||
        !cJSON_AddStringToObject(n, "status", status) ||
        !cJSON_AddStringToObject(n, "reason", reason) ||
        !cJSON_AddStringToObject(n, "message", message ? message : "") ||
        !cJSON_AddStringToObject(n, "lastTransitionTime", since)) {
        cJSON_Delete(n);
        return -ENOMEM;
    }
    if (found)
        cJSON_ReplaceItemViaPointer(conds, found, n);
    else
        cJSON_AddItemToArray(conds, n);
    return 0;
}

/* A status patch: a copy of the object's conditions with one or two set. */
struct status_change {
    const char *type, *status, *reason, *message;
    const char *type2, *status2, *reason2, *message2;
    const char *archive, *image;
    int64_t size_bytes;     /* < 0: not written */
    const char *time_field; /* "checkpointedAt" or "storedAt" (now), or NULL */
};

static void on_status_patched(void *data, struct kube_response *resp)
{
    struct work *w = data;
    w->req = NULL;
    w->busy = 0;
    /* A write that changed nothing leaves the resourceVersion as it was:
     * then nothing is waited for. */
    const char *rv = json_string(json_member(resp->body, "metadata"), "resourceVersion");
    if (resp->status < 0 || !rv || !w->written_over_rv || strcmp(rv, w->written_over_rv) == 0) {
        free(w->written_over_rv);
        w->written_over_rv = NULL;
    }
    if (resp->status < 0) {
        log_warn("cannot write a ContainerSnapshot's status", "snapshot", w->key, "error",
                 kube_response_error_text(resp));
        w->failures++;
        retry_later(w);
        return;
    }
    consider(w->a, w->key);
}

static int patch_status(struct work *w, const struct csnap *s, const struct status_change *c)
{
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(s->obj, "status"), "conditions");
    cJSON *root = cJSON_CreateObject();
    cJSON *status = root ? cJSON_AddObjectToObject(root, "status") : NULL;
    cJSON *conds = cJSON_IsArray(old) ? cJSON_Duplicate(old, 1) : cJSON_CreateArray();
    int e = status && conds ? 0 : -ENOMEM;
    if (e == 0) {
        cJSON_AddItemToObject(status, "conditions", conds);
        conds = NULL;
        cJSON *list = cJSON_GetObjectItemCaseSensitive(status, "conditions");
        e = set_condition(list, c->type, c->status, c->reason, c->message);
        if (e == 0 && c->type2)
            e = set_condition(list, c->type2, c->status2, c->reason2, c->message2);
    }
    char now[TIMEFMT_RFC3339_SIZE];
    timefmt_rfc3339_text(clock_unix_ms(), now);
    if (e == 0 && ((c->archive && !cJSON_AddStringToObject(status, "archive", c->archive)) ||
                   (c->image && !cJSON_AddStringToObject(status, "image", c->image)) ||
                   (c->size_bytes >= 0 &&
                    !cJSON_AddNumberToObject(status, "sizeBytes", (double)c->size_bytes)) ||
                   (c->time_field && !cJSON_AddStringToObject(status, c->time_field, now))))
        e = -ENOMEM;
    char *text = e == 0 ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(conds);
    cJSON_Delete(root);
    if (!text)
        return -ENOMEM;
    free(w->written_over_rv);
    w->written_over_rv = NULL;
    if (s->resource_version && !(w->written_over_rv = strdup(s->resource_version))) {
        free(text);
        return -ENOMEM;
    }
    e = kube_patch(w->a->client, &KUBE_RESOURCE_CONTAINER_SNAPSHOTS, w->ns, w->name, "status",
                   KUBE_PATCH_MERGE, text, on_status_patched, w, &w->req);
    free(text);
    if (e == 0)
        w->busy = 1;
    return e;
}

/* Ready=False, final. */
static void fail(struct work *w, const struct csnap *s, const char *reason, const char *message)
{
    log_warn("container snapshot failed", "snapshot", w->key, "reason", reason, "message", message);
    struct status_change c = {
        .type = "Ready", .status = "False", .reason = reason, .message = message, .size_bytes = -1};
    if (patch_status(w, s, &c) < 0)
        retry_later(w);
}

/* ---- the pod ----------------------------------------------------------------- */

static enum pod_check classify_pod(const cJSON *pod, const struct csnap *s, const char *node)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
    const char *uid = json_string(meta, "uid");
    if (!uid || strcmp(uid, s->pod_uid) != 0)
        return POD_REPLACED;
    const char *on = json_string(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "nodeName");
    if (!on || strcmp(on, node) != 0)
        return POD_OTHER_NODE;
    const cJSON *cs;
    cJSON_ArrayForEach(
        cs, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "status"),
                                             "containerStatuses"))
    {
        const char *name = json_string(cs, "name");
        if (name && strcmp(name, s->container) == 0) {
            const cJSON *state = cJSON_GetObjectItemCaseSensitive(cs, "state");
            return cJSON_GetObjectItemCaseSensitive(state, "running") ? POD_RUNS : POD_NOT_RUNNING;
        }
    }
    return POD_NOT_RUNNING;
}

static void on_pod(void *data, struct kube_response *resp)
{
    struct work *w = data;
    struct node_agent *a = w->a;
    w->req = NULL;
    w->busy = 0;
    const struct cache_entry *e = informer_get(a->snapshots, w->ns, w->name);
    const struct csnap *s = e ? e->obj : NULL;
    if (!s)
        return;
    if (kube_response_not_found(resp)) {
        w->pod = POD_GONE;
    } else if (resp->status < 0) {
        log_warn("cannot read the pod of a ContainerSnapshot", "snapshot", w->key, "error",
                 kube_response_error_text(resp));
        w->failures++;
        retry_later(w);
        return;
    } else {
        w->pod = classify_pod(resp->body, s, a->node);
    }
    consider(a, w->key);
}

/* ---- jobs on the thread pool ------------------------------------------------ */

enum job_kind {
    JOB_CHECKPOINT,
    JOB_STORE,
    JOB_CLEANUP,        /* the image and the archive of a deleted snapshot */
    JOB_DELETE_ARCHIVE, /* the archive of a finished one */
};

struct job {
    uv_work_t req;
    struct node_agent *a;
    char *key; /* the work it is for, looked up again when it ends */
    enum job_kind kind;
    /* inputs */
    char *ns, *pod, *container, *repository, *tag, *archive, *digest, *basic;
    struct kubelet_access kubelet;
    struct registry_access registry;
    const char *architecture;
    long timeout_s;
    /* results */
    int status;
    char *err;
    char *archive_out;
    struct registry_pushed pushed;
    int64_t ms;
};

static void job_free(struct job *j)
{
    free(j->key);
    free(j->ns);
    free(j->pod);
    free(j->container);
    free(j->repository);
    free(j->tag);
    free(j->archive);
    free(j->digest);
    if (j->basic)
        secret_free_str(j->basic);
    free(j->err);
    free(j->archive_out);
    free(j);
}

static void job_run(uv_work_t *req)
{
    struct job *j = req->data;
    int64_t t0 = clock_unix_ms();
    switch (j->kind) {
    case JOB_CHECKPOINT:
        j->status = kubelet_checkpoint(&j->kubelet, j->ns, j->pod, j->container, j->timeout_s,
                                       &j->archive_out, &j->err);
        break;
    case JOB_STORE:
        j->status = registry_push_checkpoint(&j->registry, j->repository, j->tag, j->archive,
                                             j->container, j->architecture, &j->pushed, &j->err);
        if (j->status == 0 && unlink(j->archive) != 0 && errno != ENOENT)
            log_warn("cannot delete a stored checkpoint archive", "archive", j->archive, "error",
                     strerror(errno));
        break;
    case JOB_CLEANUP:
    case JOB_DELETE_ARCHIVE:
        j->status = 0;
        if (j->digest)
            j->status = registry_delete(&j->registry, j->repository, j->digest, &j->err);
        if (j->status == 0 && j->archive && unlink(j->archive) != 0 && errno != ENOENT) {
            j->status = -errno;
            if (asprintf(&j->err, "deleting %s: %s", j->archive, strerror(errno)) < 0)
                j->err = NULL;
        }
        break;
    }
    j->ms = clock_unix_ms() - t0;
}

/* The archive as the agent sees it: checkpoint_dir/<its file name>. */
static char *local_archive(const struct node_agent *a, const char *archive)
{
    const char *name = kubelet_archive_name(archive);
    char *p = NULL;
    if (name && asprintf(&p, "%s/%s", a->checkpoint_dir, name) < 0)
        p = NULL;
    return p;
}

static void job_done(uv_work_t *req, int status);
static void remove_finalizer(struct work *w, const struct csnap *s);

/* The snapshot's archive is known not to be on the node any more. */
static void archive_gone(struct work *w, const struct csnap *s)
{
    free(w->archive_gone);
    w->archive_gone = s->archive ? strdup(s->archive) : NULL;
}

static int job_start(struct node_agent *a, struct work *w, struct job *j)
{
    j->req.data = j;
    j->a = a;
    int e = uv_queue_work(a->loop, &j->req, job_run, job_done);
    if (e < 0) {
        job_free(j);
        return e;
    }
    a->jobs++;
    w->busy = 1;
    return 0;
}

static struct job *job_new(struct node_agent *a, struct work *w, enum job_kind kind)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->kind = kind;
    j->key = strdup(w->key);
    j->ns = strdup(w->ns);
    j->kubelet = (struct kubelet_access){a->kubelet_url, a->kubelet_ca, a->token_file};
    j->registry = (struct registry_access){
        .ca_file = a->registry_ca, .timeout_s = 0, .low_speed_bytes = 1024, .low_speed_time_s = 60};
    j->architecture = a->architecture;
    j->timeout_s = a->checkpoint_timeout_s;
    if (!j->key || !j->ns) {
        job_free(j);
        return NULL;
    }
    return j;
}

/* The credentials for repository's registry, into j (NULL when none). */
static int job_credentials(struct node_agent *a, struct job *j, const char *repository)
{
    if (!a->docker_config)
        return 0;
    char *host = NULL, *path = NULL, *err = NULL;
    int e = registry_split(repository, &host, &path);
    if (e == 0) {
        e = registry_credentials(a->docker_config, host, &j->basic, &err);
        if (e < 0)
            log_warn("cannot read the registry credentials", "registry", host, "error", err);
        e = e < 0 ? e : 0;
    }
    free(host);
    free(path);
    free(err);
    j->registry.basic = j->basic;
    return e;
}

static void start_checkpoint(struct node_agent *a, struct work *w, const struct csnap *s)
{
    struct job *j = job_new(a, w, JOB_CHECKPOINT);
    if (j) {
        j->pod = strdup(s->pod);
        j->container = strdup(s->container);
    }
    if (!j || !j->pod || !j->container || job_start(a, w, j) < 0) {
        if (j && (!j->pod || !j->container))
            job_free(j);
        w->failures++;
        retry_later(w);
        return;
    }
    log_info("checkpointing", "snapshot", w->key, "pod", s->pod, "container", s->container);
}

static void start_store(struct node_agent *a, struct work *w, const struct csnap *s)
{
    struct job *j = job_new(a, w, JOB_STORE);
    int ok = j && (j->container = strdup(s->container)) &&
             (j->repository = strdup(s->repository)) && (j->tag = strdup(s->tag)) &&
             (j->archive = local_archive(a, s->archive)) &&
             job_credentials(a, j, s->repository) == 0;
    if (!ok || job_start(a, w, j) < 0) {
        if (!ok && j)
            job_free(j);
        w->failures++;
        retry_later(w);
        return;
    }
    log_info("storing the checkpoint", "snapshot", w->key, "repository", s->repository, "tag",
             s->tag);
}

static void start_cleanup(struct node_agent *a, struct work *w, const struct csnap *s)
{
    struct job *j = job_new(a, w, JOB_CLEANUP);
    const char *at = s->image ? strrchr(s->image, '@') : NULL;
    int ok = j != NULL;
    if (ok && at) {
        /* status.image is REPOSITORY@DIGEST: the repository is spec's. */
        ok = (j->repository = strdup(s->repository)) && (j->digest = strdup(at + 1)) &&
             job_credentials(a, j, s->repository) == 0;
    }
    if (ok && s->archive && kubelet_archive_name(s->archive))
        ok = (j->archive = local_archive(a, s->archive)) != NULL;
    if (!ok || job_start(a, w, j) < 0) {
        if (!ok && j)
            job_free(j);
        w->failures++;
        retry_later(w);
    }
}

static void job_done(uv_work_t *req, int status)
{
    struct job *j = req->data;
    struct node_agent *a = j->a;
    a->jobs--;
    struct work *w = a->closing ? NULL : work_find(a, j->key);
    const struct cache_entry *e = w ? informer_get(a->snapshots, w->ns, w->name) : NULL;
    const struct csnap *s = e ? e->obj : NULL;
    if (w)
        w->busy = 0;
    if (!w || !s || status == UV_ECANCELED) {
        if (w && !s)
            work_drop(w); /* the object went while the job ran */
        job_free(j);
        maybe_free_agent(a);
        return;
    }
    char bytes[32];
    switch (j->kind) {
    case JOB_CHECKPOINT:
        if (j->status == 0) {
            log_info("checkpointed", "snapshot", w->key, "archive", j->archive_out, "ms",
                     LOG_INT(j->ms));
            w->failures = 0;
            struct status_change c = {.type = "Checkpointed",
                                      .status = "True",
                                      .reason = "Checkpointed",
                                      .message = "the kubelet wrote the checkpoint archive",
                                      .archive = j->archive_out,
                                      .size_bytes = -1,
                                      .time_field = "checkpointedAt"};
            if (patch_status(w, s, &c) < 0)
                retry_later(w);
        } else if ((j->status == -EIO || j->status == -EACCES || j->status == -EINVAL) ||
                   ++w->failures >= MAX_FAILURES) {
            /* The kubelet's (CRIU's) answer, or a refusal: final. */
            fail(w, s, "CheckpointFailed", j->err ? j->err : "the checkpoint failed");
        } else {
            log_warn("checkpoint call failed; retrying", "snapshot", w->key, "error", j->err);
            retry_later(w);
        }
        break;
    case JOB_STORE:
        if (j->status == 0) {
            char *image = NULL;
            if (asprintf(&image, "%s@%s", s->repository, j->pushed.index_digest) < 0) {
                image = NULL;
                retry_later(w);
                break;
            }
            snprintf(bytes, sizeof(bytes), "%lld", (long long)j->pushed.layer_bytes);
            log_info("stored", "snapshot", w->key, "image", image, "bytes", bytes, "ms",
                     LOG_INT(j->ms));
            w->failures = 0;
            char msg[256];
            snprintf(msg, sizeof(msg),
                     "stored and read back: %lld bytes, hashed in %.1f s, pushed in %.1f s",
                     (long long)j->pushed.layer_bytes, j->pushed.hash_seconds,
                     j->pushed.upload_seconds);
            struct status_change c = {.type = "Ready",
                                      .status = "True",
                                      .reason = "Stored",
                                      .message = msg,
                                      .image = image,
                                      .size_bytes = j->pushed.layer_bytes,
                                      .time_field = "storedAt"};
            archive_gone(w, s); /* the job deleted it once stored */
            if (patch_status(w, s, &c) < 0)
                retry_later(w);
            free(image);
        } else if (j->status == -ENOENT) {
            /* The archive is gone (the node's disk was cleaned, or it
             * rebooted): the pod still runs, it is checkpointed again. */
            log_warn("the checkpoint archive is gone; checkpointing again", "snapshot", w->key,
                     "archive", s->archive);
            archive_gone(w, s);
            consider(a, w->key);
        } else if (++w->failures >= MAX_FAILURES) {
            fail(w, s, "StoreFailed", j->err ? j->err : "the image could not be stored");
        } else {
            log_warn("storing failed; retrying", "snapshot", w->key, "error", j->err);
            struct status_change c = {.type = "Ready",
                                      .status = "Unknown",
                                      .reason = "StoreRetrying",
                                      .message = j->err ? j->err : "storing failed",
                                      .size_bytes = -1};
            if (patch_status(w, s, &c) == 0)
                w->busy = 0; /* the retry timer, not the patch, looks again */
            retry_later(w);
        }
        break;
    case JOB_CLEANUP:
    case JOB_DELETE_ARCHIVE:
        if (j->status != 0) {
            log_warn("cannot delete a checkpoint image or archive", "snapshot", w->key, "error",
                     j->err);
            w->failures++;
            retry_later(w);
        } else if (j->kind == JOB_CLEANUP && s->deleting) {
            /* Image and archive gone: nothing holds the object any more. */
            w->failures = 0;
            archive_gone(w, s);
            remove_finalizer(w, s);
        } else {
            w->failures = 0;
            archive_gone(w, s);
            consider(a, w->key);
        }
        break;
    }
    /* A snapshot stored (its archive deleted): what is left of its
     * container on the node was written for calls no longer waited for. */
    if ((j->kind == JOB_STORE || j->kind == JOB_DELETE_ARCHIVE) && j->status == 0)
        sweep_start(a, SWEEP_NOW);
    job_free(j);
}

/* ---- the finalizer ---------------------------------------------------------- */

static void on_finalizer_removed(void *data, struct kube_response *resp)
{
    struct work *w = data;
    w->req = NULL;
    w->busy = 0;
    if (resp->status < 0 && !kube_response_not_found(resp)) {
        log_warn("cannot remove the finalizer", "snapshot", w->key, "error",
                 kube_response_error_text(resp));
        w->failures++;
        retry_later(w);
    }
}

static void remove_finalizer(struct work *w, const struct csnap *s)
{
    /* The list without ours, guarded by the resourceVersion it was read at. */
    cJSON *patch = cJSON_CreateObject();
    cJSON *meta = patch ? cJSON_AddObjectToObject(patch, "metadata") : NULL;
    cJSON *list = meta ? cJSON_AddArrayToObject(meta, "finalizers") : NULL;
    int ok = list && cJSON_AddStringToObject(meta, "resourceVersion", s->resource_version);
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(s->obj, "metadata"), "finalizers"))
    {
        if (ok && cJSON_IsString(f) && strcmp(f->valuestring, CONTAINER_SNAPSHOT_FINALIZER) != 0)
            ok = cJSON_AddItemToArray(list, cJSON_CreateString(f->valuestring));
    }
    char *text = ok ? cJSON_PrintUnformatted(patch) : NULL;
    cJSON_Delete(patch);
    int e = text ? kube_patch(w->a->client, &KUBE_RESOURCE_CONTAINER_SNAPSHOTS, w->ns, w->name,
                              NULL, KUBE_PATCH_MERGE, text, on_finalizer_removed, w, &w->req)
                 : -ENOMEM;
    free(text);
    if (e < 0) {
        w->failures++;
        retry_later(w);
        return;
    }
    w->busy = 1;
    log_info("container snapshot cleaned up", "snapshot", w->key);
}

/* ---- deciding ---------------------------------------------------------------- */

static void consider(struct node_agent *a, const char *key)
{
    if (a->closing)
        return;
    struct work *w = work_find(a, key);
    const struct cache_entry *e = NULL;
    if (!w)
        return;
    e = informer_get(a->snapshots, w->ns, w->name);
    const struct csnap *s = e ? e->obj : NULL;
    if (!s || strcmp(s->node, a->node) != 0) {
        if (!w->busy)
            work_drop(w);
        return;
    }
    /* The cache has not caught up with the agent's own status write: its
     * update wakes this again. */
    if (w->written_over_rv && s->resource_version &&
        strcmp(w->written_over_rv, s->resource_version) == 0)
        return;
    free(w->written_over_rv);
    w->written_over_rv = NULL;
    if (!w->uid || strcmp(w->uid, s->uid ? s->uid : "") != 0) {
        /* Another object of the name: nothing known of its pod. */
        free(w->uid);
        w->uid = s->uid ? strdup(s->uid) : NULL;
        w->pod = POD_UNKNOWN;
        w->failures = 0;
    }
    struct snapshot_facts f = {
        .deleting = s->deleting,
        .has_finalizer = s->has_finalizer,
        .checkpointed = s->checkpointed,
        .ready = s->ready,
        .has_archive = s->archive != NULL,
        /* Not looked at on the loop: there until the agent deleted it or a
         * transfer found it missing. */
        .archive_exists = s->archive && !(w->archive_gone && !strcmp(w->archive_gone, s->archive)),
        .has_image = s->image != NULL,
        .pod = w->pod,
        .busy = w->busy || uv_is_active((uv_handle_t *)&w->retry),
    };
    enum snapshot_step step = snapshot_step(&f);
    switch (step) {
    case STEP_NONE:
        if (!w->busy)
            work_drop(w);
        return;
    case STEP_WAIT:
        return;
    case STEP_CHECK_POD:
        if (kube_get(a->client, &KUBE_RESOURCE_PODS, w->ns, s->pod, on_pod, w, &w->req) == 0)
            w->busy = 1;
        else
            retry_later(w);
        return;
    case STEP_CHECKPOINT:
        /* A pod read once is read again before a second checkpoint. */
        w->pod = POD_UNKNOWN;
        start_checkpoint(a, w, s);
        return;
    case STEP_FAIL_POD: {
        char msg[512];
        snprintf(msg, sizeof(msg), "pod %s (uid %s) cannot be checkpointed: %s", s->pod, s->pod_uid,
                 pod_check_words(w->pod));
        fail(w, s, pod_check_reason(w->pod), msg);
        return;
    }
    case STEP_STORE:
        start_store(a, w, s);
        return;
    case STEP_DELETE_ARCHIVE:
    case STEP_CLEANUP:
        if (step == STEP_DELETE_ARCHIVE) {
            /* Only the archive: the image is the snapshot. */
            struct job *j = job_new(a, w, JOB_DELETE_ARCHIVE);
            if (!j || !(j->archive = local_archive(a, s->archive)) || job_start(a, w, j) < 0) {
                if (j && !j->archive)
                    job_free(j);
                retry_later(w);
            }
        } else {
            start_cleanup(a, w, s);
        }
        return;
    case STEP_REMOVE_FINALIZER:
        remove_finalizer(w, s);
        return;
    }
}

/* ---- leftover archives ------------------------------------------------------- */

/* A sweep on the thread pool: the rules are copies (the cache may change
 * while it runs). */
struct sweep {
    uv_work_t req;
    struct node_agent *a;
    char *dir;
    struct sweep_container *containers, *busy;
    size_t n_containers, n_busy;
    char **recorded;
    size_t n_recorded;
    int64_t cutoff_ms;
    /* results */
    unsigned deleted, failed;
    int error; /* opening the directory: a negative errno, else 0 */
};

static void containers_free(struct sweep_container *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((char *)c[i].ns);
        free((char *)c[i].pod);
        free((char *)c[i].container);
    }
    free(c);
}

static void sweep_free(struct sweep *w)
{
    containers_free(w->containers, w->n_containers);
    containers_free(w->busy, w->n_busy);
    for (size_t i = 0; i < w->n_recorded; i++)
        free(w->recorded[i]);
    free(w->recorded);
    free(w->dir);
    free(w);
}

static void sweep_collect(void *data, const struct cache_entry *e)
{
    struct sweep *w = data;
    const struct csnap *s = e->obj;
    if (!s)
        return;
    /* A checkpoint of this agent in flight: the kubelet may be writing. */
    const struct work *busy = work_find(w->a, e->key);
    int checkpointing = busy && busy->busy && s->checkpointed != SNAPSHOT_COND_TRUE;
    struct sweep_container *c =
        checkpointing ? &w->busy[w->n_busy++] : &w->containers[w->n_containers++];
    /* freed by sweep_free() even when a copy failed */
    c->ns = strdup(e->ns ? e->ns : "");
    c->pod = strdup(s->pod);
    c->container = strdup(s->container);
    if (!c->ns || !c->pod || !c->container)
        w->error = -ENOMEM;
    if (s->archive) {
        if (!(w->recorded[w->n_recorded] = strdup(s->archive)))
            w->error = -ENOMEM;
        else
            w->n_recorded++;
    }
}

static void sweep_run(uv_work_t *req)
{
    struct sweep *w = req->data;
    DIR *d = opendir(w->dir);
    if (!d) {
        w->error = -errno;
        return;
    }
    struct sweep_rules r = {
        .containers = w->containers,
        .n_containers = w->n_containers,
        .recorded = (const char *const *)w->recorded,
        .n_recorded = w->n_recorded,
        .busy = w->busy,
        .n_busy = w->n_busy,
        .cutoff_ms = w->cutoff_ms,
    };
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        int64_t mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
        if (!archive_sweep_is_leftover(de->d_name, mtime_ms, &r))
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0)
            w->deleted++;
        else if (errno != ENOENT)
            w->failed++;
    }
    closedir(d);
}

static void sweep_done(uv_work_t *req, int status)
{
    struct sweep *w = req->data;
    struct node_agent *a = w->a;
    a->jobs--;
    a->sweeping = 0;
    int again = a->sweep_again;
    a->sweep_again = 0;
    if (status == 0 && w->error)
        log_warn("cannot look for leftover checkpoint archives", "dir", w->dir, "error",
                 strerror(-w->error));
    else if (status == 0 && (w->deleted || w->failed))
        log_info("deleted leftover checkpoint archives", "dir", w->dir, "deleted",
                 LOG_INT(w->deleted), "failed", LOG_INT(w->failed));
    sweep_free(w);
    if (again)
        sweep_start(a, SWEEP_NOW);
    maybe_free_agent(a);
}

/* Starts a sweep with the cache as it is now; while one runs, another
 * follows it (SWEEP_NOW only). */
static void sweep_start(struct node_agent *a, enum sweep_kind kind)
{
    if (a->closing || !a->snapshots || !informer_has_synced(a->snapshots))
        return;
    if (a->sweeping) {
        if (kind == SWEEP_NOW)
            a->sweep_again = 1;
        return;
    }
    size_t n = informer_len(a->snapshots);
    struct sweep *w = calloc(1, sizeof(*w));
    if (!w)
        return;
    w->a = a;
    w->req.data = w;
    w->dir = strdup(a->checkpoint_dir);
    w->containers = calloc(n ? n : 1, sizeof(*w->containers));
    w->busy = calloc(n ? n : 1, sizeof(*w->busy));
    w->recorded = calloc(n ? n : 1, sizeof(*w->recorded));
    long timeout_s = a->checkpoint_timeout_s > 0 ? a->checkpoint_timeout_s : 3600;
    int64_t now = clock_unix_ms();
    w->cutoff_ms = kind == SWEEP_START ? a->started_ms
                   : kind == SWEEP_NOW ? now
                                       : now - (int64_t)timeout_s * 1000 - SWEEP_MARGIN_MS;
    if (w->dir && w->containers && w->busy && w->recorded)
        informer_foreach(a->snapshots, sweep_collect, w);
    if (!w->dir || !w->containers || !w->busy || !w->recorded || w->error ||
        uv_queue_work(a->loop, &w->req, sweep_run, sweep_done) < 0) {
        log_warn("cannot look for leftover checkpoint archives", "error", "out of memory");
        sweep_free(w);
        return;
    }
    a->sweeping = 1;
    a->jobs++;
}

static void on_sweep_timer(uv_timer_t *t)
{
    sweep_start(t->data, SWEEP_PERIODIC);
}

static void on_synced(void *data)
{
    struct node_agent *a = data;
    sweep_start(a, SWEEP_START);
    uv_timer_start(&a->sweep_timer, on_sweep_timer, SWEEP_INTERVAL_MS, SWEEP_INTERVAL_MS);
}

/* ---- watching ---------------------------------------------------------------- */

static void on_snapshot(struct node_agent *a, const struct cache_entry *e)
{
    if (!e->obj) {
        log_warn("cannot read a ContainerSnapshot", "snapshot", e->key, "error", e->error);
        return;
    }
    if (!work_get(a, e)) {
        log_warn("out of memory; a ContainerSnapshot waits", "snapshot", e->key);
        return;
    }
    consider(a, e->key);
}

static void on_add(void *data, const struct cache_entry *e)
{
    on_snapshot(data, e);
}

static void on_update(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    (void)old_e;
    on_snapshot(data, e);
}

static void on_delete(void *data, const struct cache_entry *e)
{
    struct node_agent *a = data;
    struct work *w = work_find(a, e->key);
    if (w && !w->busy)
        work_drop(w);
}

/* ---- starting ---------------------------------------------------------------- */

static int start_watch(struct node_agent *a)
{
    char selector[300];
    snprintf(selector, sizeof(selector), "spec.nodeName=%s", a->node);
    struct informer_options io = {
        .resource = &KUBE_RESOURCE_CONTAINER_SNAPSHOTS,
        .field_selector = selector,
        .codec = &csnap_codec,
        .handlers = {.on_add = on_add,
                     .on_update = on_update,
                     .on_delete = on_delete,
                     .on_synced = on_synced,
                     .data = a},
    };
    int e = informer_new(a->loop, a->client, &io, &a->snapshots);
    if (e == 0)
        e = informer_start(a->snapshots);
    if (e == 0)
        log_info("watching container snapshots", "node", a->node, "kubelet", a->kubelet_url,
                 "checkpoints", a->checkpoint_dir);
    return e;
}

static const struct kube_resource KUBE_RESOURCE_NODES = {"", "v1", "nodes", "Node", 0};

static void on_node(void *data, struct kube_response *resp)
{
    struct node_agent *a = data;
    a->node_req = NULL;
    if (resp->status < 0) {
        log_error("cannot read the node to find its kubelet", "node", a->node, "error",
                  kube_response_error_text(resp));
        return;
    }
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(resp->body, "status");
    const cJSON *port = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(status, "daemonEndpoints"), "kubeletEndpoint"),
        "Port");
    const char *ip = NULL;
    const cJSON *addr;
    cJSON_ArrayForEach(addr, cJSON_GetObjectItemCaseSensitive(status, "addresses"))
    {
        const char *t = json_string(addr, "type");
        if (t && strcmp(t, "InternalIP") == 0 && !ip)
            ip = json_string(addr, "address");
    }
    if (!ip || !cJSON_IsNumber(port)) {
        log_error("the node names no InternalIP and kubelet port", "node", a->node);
        return;
    }
    int v6 = strchr(ip, ':') != NULL;
    if (asprintf(&a->kubelet_url, v6 ? "https://[%s]:%d" : "https://%s:%d", ip,
                 (int)port->valuedouble) < 0) {
        a->kubelet_url = NULL;
        return;
    }
    if (start_watch(a) < 0)
        log_error("cannot watch container snapshots", "node", a->node);
}

int node_agent_start(struct node_agent *a)
{
    if (a->kubelet_url)
        return start_watch(a);
    return kube_get(a->client, &KUBE_RESOURCE_NODES, NULL, a->node, on_node, a, &a->node_req);
}

static char *dup_or_null(const char *s, int *bad)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *bad = 1;
    return d;
}

/* The whole file (a Docker config): at start, before the loop runs. */
static int read_docker_config(const char *path, char **ret, size_t *ret_len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    char *t = calloc(1, MAX_DOCKER_CONFIG + 1);
    if (!t) {
        fclose(f);
        return -ENOMEM;
    }
    size_t n = fread(t, 1, MAX_DOCKER_CONFIG + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > MAX_DOCKER_CONFIG) {
        secret_free(t, MAX_DOCKER_CONFIG + 1);
        return bad ? -EIO : -EFBIG;
    }
    *ret = t;
    *ret_len = MAX_DOCKER_CONFIG + 1;
    return 0;
}

int node_agent_new(uv_loop_t *loop, struct kube_client *client, const struct node_agent_options *o,
                   struct node_agent **ret, char **ret_err)
{
    *ret = NULL;
    if (ret_err)
        *ret_err = NULL;
    if (!o->node_name || !o->node_name[0] || !o->checkpoint_dir || !o->checkpoint_dir[0]) {
        if (ret_err && asprintf(ret_err, "%s is required",
                                !o->node_name || !o->node_name[0] ? "the node name"
                                                                  : "the checkpoint directory") < 0)
            *ret_err = NULL;
        return -EINVAL;
    }
    const char *arch = oci_architecture();
    if (!arch) {
        if (ret_err && asprintf(ret_err, "no OCI architecture for this machine") < 0)
            *ret_err = NULL;
        return -EINVAL;
    }
    struct node_agent *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    int bad = 0;
    a->loop = loop;
    a->client = client;
    a->architecture = arch;
    a->checkpoint_timeout_s = o->checkpoint_timeout_s;
    a->started_ms = clock_unix_ms();
    uv_timer_init(loop, &a->sweep_timer);
    a->sweep_timer.data = a;
    a->node = dup_or_null(o->node_name, &bad);
    a->kubelet_url = dup_or_null(o->kubelet_url, &bad);
    a->kubelet_ca = dup_or_null(o->kubelet_ca_file, &bad);
    a->token_file = dup_or_null(o->token_file, &bad);
    a->checkpoint_dir = dup_or_null(o->checkpoint_dir, &bad);
    a->registry_ca = dup_or_null(o->registry_ca_file, &bad);
    int e = bad ? -ENOMEM : 0;
    if (e == 0 && o->registry_auth_file) {
        e = read_docker_config(o->registry_auth_file, &a->docker_config, &a->docker_config_len);
        if (e < 0 && ret_err &&
            asprintf(ret_err, "reading the registry credentials %s: %s", o->registry_auth_file,
                     strerror(-e)) < 0)
            *ret_err = NULL;
    }
    if (e < 0) {
        a->closing = 1;
        close_sweep_timer(a); /* frees a once closed */
        return e;
    }
    *ret = a;
    return 0;
}

void node_agent_close(struct node_agent *a)
{
    if (!a || a->closing)
        return;
    a->closing = 1;
    close_sweep_timer(a);
    kube_request_cancel(a->node_req);
    informer_free(a->snapshots);
    a->snapshots = NULL;
    while (a->works)
        work_drop(a->works);
    maybe_free_agent(a);
}
