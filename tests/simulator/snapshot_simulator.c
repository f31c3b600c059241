/*
 * snapshot_simulator: plays GKE's Pod Snapshot controller on the local
 * cluster, where the podsnapshot.gke.io CRDs exist (deploy/local/
 * podsnapshot-crds.yaml) but nothing acts on them. It talks to the real API
 * server through the project's own client and does what GKE does, visibly,
 * through the same objects:
 *
 *   - a PodSnapshotManualTrigger whose target pod runs and is selected by a
 *     manual PodSnapshotPolicy becomes a PodSnapshot (Ready=False/
 *     AwaitingCheckpoint, then Checkpoint=Succeeded and Ready=True/
 *     AllSnapshotsAvailable after --checkpoint-delay); the trigger names it in
 *     status.snapshotCreated.name; a trigger that cannot be served fails
 *     (Triggered=False/Failed);
 *   - a new pod annotated podsnapshot.gke.io/ps-name, or one a policy selects
 *     whose spec matches a Ready snapshot, is "restored": PodRestored=True on
 *     the pod once it runs, or a Warning event when the restore is skipped;
 *   - a deleted PodSnapshot loses GKE's finalizer after --delete-delay; stale
 *     snapshots are deleted by the policy's retention; postCheckpoint: stop
 *     completes the pod when its checkpoint is taken, before the snapshot is
 *     Ready; policies and storage configs get a Ready condition;
 *   - a running pod deleted with a grace period marks its claims written
 *     (an application saving on SIGTERM), and a restore over a claim written
 *     after the checkpoint crash-loops.
 *
 * Failure modes (checkpoint-failed, slow, cold-start, crash-loop,
 * stuck-finalizer, trigger-error, hang) are chosen per pod; see
 * docs/simulator.md. A trigger whose name does not fit GKE's triggered-by
 * label (63 characters) fails with Triggered=False/Error, as GKE's create of
 * the PodSnapshot would.
 *
 * Everything is level-triggered: informers feed a work queue of keys
 * ("t:ns/name" trigger, "s:ns/name" snapshot, "p:ns/name" pod, "y:ns/name"
 * policy, "c:name" storage config); a reconcile reads the caches and makes at
 * most one write, whose watch event brings the next step. What must survive
 * a restart is kept in the objects themselves (annotations on the
 * PodSnapshot), so a restarted simulator carries on where it stopped.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <uv.h>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/informer.h"
#include "kube/resource.h"
#include "kube/workqueue.h"
#include "util/clock.h"
#include "util/duration.h"
#include "util/json.h"
#include "util/log.h"
#include "util/strmap.h"
#include "util/timefmt.h"

/* ---- names GKE uses ------------------------------------------------------ */

#define GROUP_VERSION "podsnapshot.gke.io/v1"
#define FINALIZER "podsnapshot.gke.io/podsnapshot-finalizer"
#define LABEL_TRIGGERED_BY "gke-pod-snapshot-triggered-by"
#define ANN_PS_NAME "podsnapshot.gke.io/ps-name"
#define ANN_ORIGIN_POD "podsnapshot.gke.io/origin-pod"
#define ANN_ORIGIN_NODE "podsnapshot.gke.io/origin-node"
#define EVENT_REASON "GKEPodSnapshotting"
#define GPU_RESOURCE "nvidia.com/gpu"
/* GKE names a node's GPU model in this label (nvidia-tesla-t4, nvidia-l4, ...). */
#define GKE_ACCELERATOR_LABEL "cloud.google.com/gke-accelerator"
/* A label value holds at most this many characters. */
#define LABEL_VALUE_MAX 63

/* ---- the simulator's own marks ------------------------------------------- */

#define ANN_MODE "simulator.hibernator.dev/mode"
#define ANN_STARTED "simulator.hibernator.dev/checkpoint-started-at"
#define ANN_ORIGIN_UID "simulator.hibernator.dev/origin-pod-uid"
#define ANN_SPEC_HASH "simulator.hibernator.dev/pod-spec-hash"
#define ANN_GPU "simulator.hibernator.dev/gpu-product"
/* What else GKE matches a restore on, of the source node (llm-d's GKE Pod
 * Snapshots guide: "the node's machine family and type, GPU model, GPU
 * driver version, and GKE node version"); the driver version has no node
 * field to read. */
#define ANN_MACHINE_FAMILY "simulator.hibernator.dev/machine-family"
#define ANN_MACHINE_TYPE "simulator.hibernator.dev/machine-type"
#define ANN_NODE_VERSION "simulator.hibernator.dev/node-version"
#define MACHINE_FAMILY_LABEL "cloud.google.com/machine-family"
#define MACHINE_TYPE_LABEL "node.kubernetes.io/instance-type"
#define ANN_POST "simulator.hibernator.dev/post-checkpoint"
/* On a restored pod: the UID of the pod whose process it carries on. */
#define ANN_RESTORED_FROM_UID "simulator.hibernator.dev/restored-from-uid"
/* On a PersistentVolumeClaim: when something last wrote to the volume, as
 * the simulator plays it (an application saving on SIGTERM) or a test
 * writes it (its stand-in application saving). A restore from a checkpoint
 * that started before this time crashes (docs/simulator.md). */
#define ANN_HOME_WRITTEN "simulator.hibernator.dev/home-written-at"
#define MODE_CONFIGMAP "snapshot-simulator"
#define MODE_CONFIGMAP_DEFAULT_KEY "_default"
#define COMPONENT "snapshot-simulator"
#define INJECTED "(injected by " COMPONENT ")"

/* A trigger whose pod or policy is not (yet) in the caches is retried for
 * this long from its creation before it fails: the trigger's watch may be
 * ahead of the pod's. */
#define RESOLVE_GRACE_MS 2000
#define MAX_IN_FLIGHT 8
/* A retried reconcile that found no memory waits this long. */
#define OOM_RETRY_MS 1000

static const struct kube_resource res_triggers = {
    "podsnapshot.gke.io", "v1", "podsnapshotmanualtriggers", "PodSnapshotManualTrigger", 1};
static const struct kube_resource res_policies = {"podsnapshot.gke.io", "v1", "podsnapshotpolicies",
                                                  "PodSnapshotPolicy", 1};
static const struct kube_resource res_snapshots = {"podsnapshot.gke.io", "v1", "podsnapshots",
                                                   "PodSnapshot", 1};
static const struct kube_resource res_storage = {
    "podsnapshot.gke.io", "v1", "podsnapshotstorageconfigs", "PodSnapshotStorageConfig", 0};
static const struct kube_resource res_nodes = {"", "v1", "nodes", "Node", 0};

enum mode {
    MODE_UNSET = -1,
    MODE_OK,
    MODE_CHECKPOINT_FAILED,
    MODE_SLOW,
    MODE_COLD_START,
    MODE_CRASH_LOOP,
    MODE_STUCK_FINALIZER,
    MODE_TRIGGER_ERROR,
    MODE_HANG,
    MODE_RESTORE_FAILED,
    MODE_RESTORE_FAILED_SILENT,
    MODE_COUNT,
};

static const char *const mode_names[MODE_COUNT] = {
    "ok",
    "checkpoint-failed",
    "slow",
    "cold-start",
    "crash-loop",
    "stuck-finalizer",
    "trigger-error",
    "hang",
    "restore-failed",
    "restore-failed-silent",
};

static enum mode mode_parse(const char *s)
{
    for (int m = 0; s && m < MODE_COUNT; m++)
        if (strcmp(s, mode_names[m]) == 0)
            return (enum mode)m;
    return MODE_UNSET;
}

struct options {
    const char *kubeconfig;
    const char *ns; /* NULL: all namespaces */
    enum mode mode;
    int64_t checkpoint_delay_ms;
    int64_t slow_delay_ms;
    int64_t delete_delay_ms;
    int64_t restart_interval_ms;
    int implicit_restore;
    const char *accelerator_label; /* the node label naming the GPU model */
    enum log_level log_level;
    enum log_format log_format;
};

enum inf_kind {
    INF_TRIGGERS,
    INF_POLICIES,
    INF_SNAPSHOTS,
    INF_STORAGE,
    INF_PODS,
    INF_CMS,
    INF_NODES,
    INF_PVCS,
    INF_COUNT
};

struct sim;

/* One write in flight for one key; the key stays handed out until it ends. */
struct job {
    struct sim *s;
    const char *key; /* the queue's copy, valid until workqueue_driver_done() */
    const char *what;
    struct kube_request *req;
    int64_t requeue_ms; /* after success */
    int create;         /* AlreadyExists counts as done */
    struct job *prev, *next;
};

struct sim {
    uv_loop_t *loop;
    struct options o;
    struct kube_client *client;
    struct informer *inf[INF_COUNT];
    unsigned synced;
    struct workqueue_driver *queue;
    struct job *jobs;
    unsigned in_flight;
    struct strmap skipped_restores; /* pod UIDs whose restore was skipped (event sent) */
    struct strmap stuck_logged;     /* snapshot UIDs held by the stuck-finalizer mode */
    uv_signal_t sigterm, sigint;
    char *instance; /* reportingInstance of our events */
    int closing;
};

/* ---- JSON reading ---------------------------------------------------------- */

/* o[k1][k2]...; the list ends with NULL. */
static const cJSON *at_v(const cJSON *o, ...)
{
    va_list ap;
    va_start(ap, o);
    for (const char *k = va_arg(ap, const char *); k && o; k = va_arg(ap, const char *))
        o = json_member(o, k);
    va_end(ap);
    return o;
}
#define AT(o, ...) at_v((o), __VA_ARGS__, (const char *)NULL)

static const char *str_of(const cJSON *o)
{
    return cJSON_IsString(o) ? o->valuestring : NULL;
}
#define STR(o, ...) str_of(AT((o), __VA_ARGS__))

static const char *annotation(const cJSON *obj, const char *key)
{
    return json_string(AT(obj, "metadata", "annotations"), key);
}

static const char *label(const cJSON *obj, const char *key)
{
    return json_string(AT(obj, "metadata", "labels"), key);
}

static int deleting(const cJSON *obj)
{
    return AT(obj, "metadata", "deletionTimestamp") != NULL;
}

static int64_t generation(const cJSON *obj)
{
    return json_int(AT(obj, "metadata"), "generation");
}

static const cJSON *condition(const cJSON *obj, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, AT(obj, "status", "conditions"))
    {
        const char *t = json_string(c, "type");
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

static int condition_is(const cJSON *obj, const char *type, const char *status)
{
    const char *st = json_string(condition(obj, type), "status");
    return st && strcmp(st, status) == 0;
}

/* True when obj's condition `type` already says status, reason and message. */
static int condition_says(const cJSON *obj, const char *type, const char *status,
                          const char *reason, const char *message)
{
    const cJSON *c = condition(obj, type);
    const char *st = json_string(c, "status"), *re = json_string(c, "reason"),
               *me = json_string(c, "message");
    return st && re && me && strcmp(st, status) == 0 && strcmp(re, reason) == 0 &&
           strcmp(me, message) == 0;
}

static int finalizer_index(const cJSON *obj)
{
    int i = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, AT(obj, "metadata", "finalizers"))
    {
        if (cJSON_IsString(f) && strcmp(f->valuestring, FINALIZER) == 0)
            return i;
        i++;
    }
    return -1;
}

static const cJSON *cached(struct sim *s, enum inf_kind k, const char *ns, const char *name)
{
    if (!name)
        return NULL;
    const struct cache_entry *e = informer_get(s->inf[k], ns, name);
    return e ? e->obj : NULL;
}

/* ---- JSON writing ---------------------------------------------------------- */

/*
 * Builders record a failed allocation in *failed (freeing what they could
 * not attach), so code that assembles an object checks once, at the end,
 * instead of after every member. A NULL parent counts as a failure.
 */
static cJSON *put_obj(int *failed, cJSON *parent, const char *key)
{
    cJSON *o = cJSON_AddObjectToObject(parent, key);
    *failed |= !o;
    return o;
}

static cJSON *put_arr(int *failed, cJSON *parent, const char *key)
{
    cJSON *a = cJSON_AddArrayToObject(parent, key);
    *failed |= !a;
    return a;
}

static void put_str(int *failed, cJSON *o, const char *key, const char *v)
{
    *failed |= !cJSON_AddStringToObject(o, key, v ? v : "");
}

static void put_num(int *failed, cJSON *o, const char *key, double v)
{
    *failed |= !cJSON_AddNumberToObject(o, key, v);
}

static void put_bool(int *failed, cJSON *o, const char *key, int v)
{
    *failed |= !cJSON_AddBoolToObject(o, key, v);
}

/* Attaches item (which may be NULL from a failed allocation) under key. */
static void put_item(int *failed, cJSON *o, const char *key, cJSON *item)
{
    if (!item || !cJSON_AddItemToObject(o, key, item)) {
        cJSON_Delete(item);
        *failed = 1;
    }
}

static void push(int *failed, cJSON *arr, cJSON *item)
{
    if (!item || !cJSON_AddItemToArray(arr, item)) {
        cJSON_Delete(item);
        *failed = 1;
    }
}

/* Returns obj, or NULL (freeing obj) when building it failed. */
static cJSON *built(int failed, cJSON *obj)
{
    if (failed) {
        cJSON_Delete(obj);
        return NULL;
    }
    return obj;
}

static void fmt_time(int64_t ms, char out[TIMEFMT_RFC3339_SIZE])
{
    if (timefmt_format_rfc3339(ms, out, TIMEFMT_RFC3339_SIZE) < 0)
        snprintf(out, TIMEFMT_RFC3339_SIZE, "1970-01-01T00:00:00Z");
}

static void fmt_micro(int64_t ms, char out[TIMEFMT_RFC3339_MICRO_SIZE])
{
    if (timefmt_format_rfc3339_micro(ms, out, TIMEFMT_RFC3339_MICRO_SIZE) < 0)
        snprintf(out, TIMEFMT_RFC3339_MICRO_SIZE, "1970-01-01T00:00:00.000000Z");
}

/*
 * A copy of the conditions list `existing` (may be NULL) with condition
 * `type` set, in place. lastTransitionTime moves only when the status
 * changes. generation < 0 leaves observedGeneration out (pods); reason NULL
 * leaves the reason out. Returns NULL when out of memory.
 */
static cJSON *conditions_with(const cJSON *existing, const char *type, const char *status,
                              const char *reason, const char *message, int64_t gen, int64_t now_ms)
{
    cJSON *list = existing ? cJSON_Duplicate(existing, 1) : cJSON_CreateArray();
    cJSON *n = cJSON_CreateObject();
    int failed = !list || !n;
    char when[TIMEFMT_RFC3339_SIZE];
    fmt_time(now_ms, when);
    int idx = 0, found = -1;
    const cJSON *c;
    cJSON_ArrayForEach(c, list)
    {
        const char *t = json_string(c, "type");
        if (t && strcmp(t, type) == 0) {
            const char *old_status = json_string(c, "status");
            const char *old_when = json_string(c, "lastTransitionTime");
            if (old_status && old_when && strcmp(old_status, status) == 0)
                snprintf(when, sizeof(when), "%s", old_when);
            found = idx;
            break;
        }
        idx++;
    }
    put_str(&failed, n, "type", type);
    put_str(&failed, n, "status", status);
    if (gen >= 0)
        put_num(&failed, n, "observedGeneration", (double)gen);
    put_str(&failed, n, "lastTransitionTime", when);
    if (reason)
        put_str(&failed, n, "reason", reason);
    put_str(&failed, n, "message", message);
    if (failed) {
        cJSON_Delete(n);
        cJSON_Delete(list);
        return NULL;
    }
    if (found >= 0 ? !cJSON_ReplaceItemInArray(list, found, n) : !cJSON_AddItemToArray(list, n)) {
        cJSON_Delete(n);
        cJSON_Delete(list);
        return NULL;
    }
    return list;
}

/* {"status": {"observedGeneration": gen}} (gen <= 0 leaves it out), or NULL. */
static cJSON *status_patch(int64_t gen, cJSON **ret_status)
{
    int failed = 0;
    cJSON *p = cJSON_CreateObject();
    cJSON *st = put_obj(&failed, p, "status");
    if (gen > 0)
        put_num(&failed, st, "observedGeneration", (double)gen);
    p = built(failed, p);
    *ret_status = p ? st : NULL;
    return p;
}

/* ---- hashes and names -------------------------------------------------------- */

static int sha256(const char *s, unsigned char out[32])
{
    unsigned n = 0;
    return EVP_Digest(s, strlen(s), out, &n, EVP_sha256(), NULL) == 1 && n == 32 ? 0 : -EIO;
}

/* The first hexchars hex digits of SHA-256(s); out holds hexchars + 1. */
static int hex_digest(const char *s, char *out, size_t hexchars)
{
    unsigned char d[32];
    if (sha256(s, d) < 0)
        return -EIO;
    for (size_t i = 0; i < hexchars / 2 && i < sizeof(d); i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
    out[hexchars] = '\0';
    return 0;
}

/*
 * The PodSnapshot's name: a UUID, as GKE names them, derived from the
 * trigger's UID (a name-based, version-5-shaped UUID over SHA-256 of
 * "podsnapshot:<trigger uid>"), so the same trigger always yields the same
 * snapshot and a restart cannot take a second one.
 */
static int snapshot_name_for(const char *trigger_uid, char out[37])
{
    char seed[300];
    snprintf(seed, sizeof(seed), "podsnapshot:%s", trigger_uid);
    unsigned char d[32];
    if (sha256(seed, d) < 0)
        return -EIO;
    d[6] = (unsigned char)((d[6] & 0x0f) | 0x50);
    d[8] = (unsigned char)((d[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", d[0],
             d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13],
             d[14], d[15]);
    return 0;
}

/*
 * What GKE matches a restore on: the parts of the pod spec that shape the
 * sandbox (runtime class, each container's name, image, command, args,
 * ports and mount paths, the volumes' names but the API server's token
 * volume). Env and resources are left out, as a restore keeps the old
 * process's environment anyway. Writes 16 hex digits; returns 0 or -ENOMEM.
 */
static int pod_spec_hash(const cJSON *pod, char out[17])
{
    int failed = 0;
    cJSON *parts = cJSON_CreateArray();
    const cJSON *spec = AT(pod, "spec");
    const char *runtime_class = json_string(spec, "runtimeClassName");
    push(&failed, parts, cJSON_CreateString(runtime_class ? runtime_class : ""));
    cJSON *cs = cJSON_CreateArray();
    const cJSON *c, *p;
    cJSON_ArrayForEach(c, json_member(spec, "containers"))
    {
        cJSON *e = cJSON_CreateArray();
        const char *name = json_string(c, "name"), *image = json_string(c, "image");
        push(&failed, e, cJSON_CreateString(name ? name : ""));
        push(&failed, e, cJSON_CreateString(image ? image : ""));
        const cJSON *cmd = json_member(c, "command"), *args = json_member(c, "args");
        push(&failed, e, cmd ? cJSON_Duplicate(cmd, 1) : cJSON_CreateNull());
        push(&failed, e, args ? cJSON_Duplicate(args, 1) : cJSON_CreateNull());
        cJSON *ports = cJSON_CreateArray();
        cJSON_ArrayForEach(p, json_member(c, "ports"))
        {
            const char *proto = json_string(p, "protocol");
            char port[48];
            snprintf(port, sizeof(port), "%lld/%s", (long long)json_int(p, "containerPort"),
                     proto ? proto : "TCP");
            push(&failed, ports, cJSON_CreateString(port));
        }
        push(&failed, e, ports);
        cJSON *mounts = cJSON_CreateArray();
        cJSON_ArrayForEach(p, json_member(c, "volumeMounts"))
        {
            const char *mp = json_string(p, "mountPath");
            push(&failed, mounts, cJSON_CreateString(mp ? mp : ""));
        }
        push(&failed, e, mounts);
        push(&failed, cs, e);
    }
    push(&failed, parts, cs);
    cJSON *vols = cJSON_CreateArray();
    cJSON_ArrayForEach(c, json_member(spec, "volumes"))
    {
        /* The API server names each pod's token volume at random. */
        const char *name = json_string(c, "name");
        if (name && strncmp(name, "kube-api-access-", 16) != 0)
            push(&failed, vols, cJSON_CreateString(name));
    }
    push(&failed, parts, vols);
    char *text = failed ? NULL : cJSON_PrintUnformatted(parts);
    cJSON_Delete(parts);
    int r = text ? hex_digest(text, out, 16) : -ENOMEM;
    free(text);
    return r;
}

static int pod_uses_gpu(const cJSON *pod)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, AT(pod, "spec", "containers"))
    {
        if (AT(c, "resources", "limits", GPU_RESOURCE) ||
            AT(c, "resources", "requests", GPU_RESOURCE))
            return 1;
    }
    return 0;
}

/* The GPU model of the node a GPU pod runs on, from the accelerator label
 * (GKE's cloud.google.com/gke-accelerator unless --accelerator-label says
 * otherwise), or "" (no GPU, no node). */
static const char *pod_gpu_product(struct sim *s, const cJSON *pod)
{
    if (!pod_uses_gpu(pod))
        return "";
    const cJSON *node = cached(s, INF_NODES, "", STR(pod, "spec", "nodeName"));
    const char *p = label(node, s->o.accelerator_label);
    return p ? p : "";
}

/* The node facts a restore is matched on, of the pod's node ("" when the
 * node or the fact is not known): which = 0 machine family, 1 machine type,
 * 2 node version (its kubelet's). */
static const char *pod_node_fact(struct sim *s, const cJSON *pod, int which)
{
    const cJSON *node = cached(s, INF_NODES, "", STR(pod, "spec", "nodeName"));
    const char *v = which == 0   ? label(node, MACHINE_FAMILY_LABEL)
                    : which == 1 ? label(node, MACHINE_TYPE_LABEL)
                                 : STR(node, "status", "nodeInfo", "kubeletVersion");
    return v ? v : "";
}

static const char *const node_fact_ann[] = {ANN_MACHINE_FAMILY, ANN_MACHINE_TYPE, ANN_NODE_VERSION};
static const char *const node_fact_name[] = {"machine family", "machine type", "node version"};

/* ---- the queue and writes ------------------------------------------------------ */

/* A key the queue could not take is not simulated again until it changes. */
static void queue_result(const char *key, int e)
{
    if (e < 0 && e != -ESHUTDOWN)
        log_warn("key not queued", "key", key, "error", log_errno_str(e));
}

static void enqueue(struct sim *s, char kind, const char *ns, const char *name)
{
    if (s->closing || !name)
        return;
    char *key = NULL;
    int r = ns && *ns ? asprintf(&key, "%c:%s/%s", kind, ns, name)
                      : asprintf(&key, "%c:%s", kind, name);
    if (r < 0)
        return;
    queue_result(key, workqueue_driver_add(s->queue, key));
    free(key);
}

/* Ends the processing of key; requeue_ms > 0 brings it back that much later. */
static void finish(struct sim *s, const char *key, int64_t requeue_ms)
{
    workqueue_driver_forget(s->queue, key);
    if (requeue_ms > 0)
        queue_result(key, workqueue_driver_add_after(s->queue, key, (uint64_t)requeue_ms));
    workqueue_driver_done(s->queue, key);
}

/* Ends the processing of key as a failure: it comes back after the backoff. */
static void retry(struct sim *s, const char *key)
{
    queue_result(key, workqueue_driver_add_rate_limited(s->queue, key));
    workqueue_driver_done(s->queue, key);
}

static void job_unlink(struct job *j)
{
    struct sim *s = j->s;
    if (j->prev)
        j->prev->next = j->next;
    else
        s->jobs = j->next;
    if (j->next)
        j->next->prev = j->prev;
    s->in_flight--;
}

static void on_job_done(void *data, struct kube_response *resp)
{
    struct job *j = data;
    struct sim *s = j->s;
    job_unlink(j);
    long code = resp->http_code;
    /* 404: the object went away, nothing left to do for it. */
    if (resp->status == 0 || code == 404 || (j->create && code == 409)) {
        log_debug("write done", "what", j->what, "key", j->key, "code", LOG_INT(code));
        finish(s, j->key, j->requeue_ms);
    } else {
        const char *msg = resp->error.message ? resp->error.message : resp->transport_error;
        if (code == 409 || code == 422)
            log_debug("write conflicted; retrying", "what", j->what, "key", j->key, "error", msg);
        else
            log_warn("write failed; retrying", "what", j->what, "key", j->key, "code",
                     LOG_INT(code), "error", msg);
        retry(s, j->key);
    }
    free(j);
}

static struct job *job_new(struct sim *s, const char *key, const char *what, int64_t requeue_ms)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->s = s;
    j->key = key;
    j->what = what;
    j->requeue_ms = requeue_ms;
    j->next = s->jobs;
    if (s->jobs)
        s->jobs->prev = j;
    s->jobs = j;
    s->in_flight++;
    return j;
}

/* The request could not start: count a failure and retry later. */
static void job_start_failed(struct job *j, int e)
{
    struct sim *s = j->s;
    const char *key = j->key;
    log_warn("could not start a request; retrying", "what", j->what, "key", key, "error",
             log_errno_str(e));
    job_unlink(j);
    free(j);
    retry(s, key);
}

/* Patches and then finishes key. body is consumed; NULL (no memory) retries. */
static void write_patch(struct sim *s, const char *key, const char *what,
                        const struct kube_resource *res, const char *ns, const char *name,
                        const char *sub, enum kube_patch_type type, cJSON *body, int64_t requeue_ms)
{
    char *text = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    struct job *j = text ? job_new(s, key, what, requeue_ms) : NULL;
    if (!j) {
        free(text);
        retry(s, key);
        return;
    }
    int e = kube_patch(s->client, res, ns, name, sub, type, text, on_job_done, j, &j->req);
    free(text);
    if (e < 0)
        job_start_failed(j, e);
}

static void write_create(struct sim *s, const char *key, const char *what,
                         const struct kube_resource *res, const char *ns, cJSON *body)
{
    struct job *j = body ? job_new(s, key, what, 0) : NULL;
    if (!j) {
        cJSON_Delete(body);
        retry(s, key);
        return;
    }
    j->create = 1;
    int e = kube_create(s->client, res, ns, body, on_job_done, j, &j->req);
    cJSON_Delete(body);
    if (e < 0)
        job_start_failed(j, e);
}

static void write_delete(struct sim *s, const char *key, const char *what,
                         const struct kube_resource *res, const char *ns, const char *name,
                         const char *uid)
{
    struct job *j = job_new(s, key, what, 0);
    if (!j) {
        retry(s, key);
        return;
    }
    struct kube_delete_options o = {.precondition_uid = uid, .grace_period_seconds = -1};
    int e = kube_delete(s->client, res, ns, name, &o, on_job_done, j, &j->req);
    if (e < 0)
        job_start_failed(j, e);
}

/* Writes whose outcome no reconcile waits for (events, lastAccessTime). */
static void on_aside_done(void *data, struct kube_response *resp)
{
    const char *what = data;
    if (resp->status < 0 && resp->http_code != 409)
        log_warn("write failed", "what", what, "code", LOG_INT(resp->http_code), "error",
                 resp->error.message ? resp->error.message : resp->transport_error);
}

/*
 * Posts an event about a pod, as GKE does (reason GKEPodSnapshotting). The
 * name is derived from the pod's UID and `purpose`, so a reconcile that runs
 * again (after a conflict, or after a restart) posts the event once: the
 * second create is AlreadyExists.
 */
static void post_pod_event(struct sim *s, const char *ns, const char *pod, const char *pod_uid,
                           const char *type, const char *purpose, const char *message)
{
    if (!pod || !pod_uid)
        return;
    char seed[512], digest[17], name[300];
    snprintf(seed, sizeof(seed), "%s/%s", pod_uid, purpose);
    if (hex_digest(seed, digest, 16) < 0)
        return;
    snprintf(name, sizeof(name), "%.200s.%s", pod, digest);
    int64_t now = clock_unix_ms();
    char when[TIMEFMT_RFC3339_SIZE], micro[TIMEFMT_RFC3339_MICRO_SIZE];
    fmt_time(now, when);
    fmt_micro(now, micro);

    int failed = 0;
    cJSON *ev = cJSON_CreateObject();
    cJSON *meta = put_obj(&failed, ev, "metadata");
    put_str(&failed, meta, "name", name);
    put_str(&failed, meta, "namespace", ns);
    cJSON *obj = put_obj(&failed, ev, "involvedObject");
    put_str(&failed, obj, "apiVersion", "v1");
    put_str(&failed, obj, "kind", "Pod");
    put_str(&failed, obj, "namespace", ns);
    put_str(&failed, obj, "name", pod);
    put_str(&failed, obj, "uid", pod_uid);
    put_str(&failed, ev, "type", type);
    put_str(&failed, ev, "reason", EVENT_REASON);
    put_str(&failed, ev, "message", message);
    put_str(&failed, ev, "firstTimestamp", when);
    put_str(&failed, ev, "lastTimestamp", when);
    put_str(&failed, ev, "eventTime", micro);
    put_str(&failed, ev, "action", purpose);
    put_num(&failed, ev, "count", 1);
    put_str(&failed, put_obj(&failed, ev, "source"), "component", COMPONENT);
    put_str(&failed, ev, "reportingComponent", COMPONENT);
    put_str(&failed, ev, "reportingInstance", s->instance);
    ev = built(failed, ev);
    if (!ev ||
        kube_create(s->client, &KUBE_RESOURCE_EVENTS, ns, ev, on_aside_done, "event", NULL) < 0)
        log_warn("event not posted", "pod", pod, "message", message);
    cJSON_Delete(ev);
}

/* ---- modes ------------------------------------------------------------------- */

/*
 * The mode a test chose for this pod: its annotation, else its key in the
 * namespace's snapshot-simulator ConfigMap, else that ConfigMap's _default
 * key; MODE_UNSET when none says. A value that names no mode is ignored
 * (logged).
 */
static enum mode pod_chosen_mode(struct sim *s, const cJSON *pod)
{
    const char *ns = STR(pod, "metadata", "namespace"), *name = STR(pod, "metadata", "name");
    const char *v = annotation(pod, ANN_MODE);
    const char *from = "annotation";
    if (!v) {
        const cJSON *data = AT(cached(s, INF_CMS, ns, MODE_CONFIGMAP), "data");
        v = json_string(data, name ? name : "");
        from = "configmap";
        if (!v)
            v = json_string(data, MODE_CONFIGMAP_DEFAULT_KEY);
    }
    if (!v)
        return MODE_UNSET;
    enum mode m = mode_parse(v);
    if (m == MODE_UNSET)
        log_warn("unknown simulator mode; ignoring it", "namespace", ns, "pod", name, "from", from,
                 "mode", v);
    return m;
}

/* The mode recorded on a snapshot when it was taken. */
static enum mode snapshot_mode(struct sim *s, const cJSON *snap)
{
    enum mode m = mode_parse(annotation(snap, ANN_MODE));
    return m == MODE_UNSET ? s->o.mode : m;
}

/* ---- label selectors ---------------------------------------------------------- */

static int value_in(const cJSON *values, const char *v)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, values)
    {
        if (cJSON_IsString(x) && v && strcmp(x->valuestring, v) == 0)
            return 1;
    }
    return 0;
}

/* metav1.LabelSelector semantics: an empty selector selects everything. */
static int selector_matches(const cJSON *sel, const cJSON *labels)
{
    if (!cJSON_IsObject(sel))
        return 0;
    const cJSON *kv;
    cJSON_ArrayForEach(kv, json_member(sel, "matchLabels"))
    {
        const char *have = json_string(labels, kv->string);
        if (!cJSON_IsString(kv) || !have || strcmp(have, kv->valuestring) != 0)
            return 0;
    }
    const cJSON *req;
    cJSON_ArrayForEach(req, json_member(sel, "matchExpressions"))
    {
        const char *key = json_string(req, "key"), *op = json_string(req, "operator");
        if (!key || !op)
            return 0;
        const char *have = json_string(labels, key);
        const cJSON *values = json_member(req, "values");
        int ok = 0;
        if (strcmp(op, "In") == 0)
            ok = have && value_in(values, have);
        else if (strcmp(op, "NotIn") == 0)
            ok = !have || !value_in(values, have);
        else if (strcmp(op, "Exists") == 0)
            ok = have != NULL;
        else if (strcmp(op, "DoesNotExist") == 0)
            ok = have == NULL;
        if (!ok)
            return 0;
    }
    return 1;
}

/* The keys of a policy's snapshotGroupingRules.groupByLabelValue.labels. */
static const cJSON *group_keys(const cJSON *policy)
{
    return AT(policy, "spec", "snapshotGroupingRules", "groupByLabelValue", "labels");
}

/* GKE copies each grouping key the source pod carries, with its value, onto
 * the PodSnapshot's labels. */
static void copy_group_labels(int *failed, const cJSON *policy, const cJSON *pod_labels,
                              cJSON *labels)
{
    const cJSON *k;
    cJSON_ArrayForEach(k, group_keys(policy))
    {
        const char *v = cJSON_IsString(k) ? json_string(pod_labels, k->valuestring) : NULL;
        if (v)
            put_str(failed, labels, k->valuestring, v);
    }
}

/* Whether a pod belongs to a snapshot's group: "grouping is based on the
 * exact match of all labels extracted from this list", so for every key of
 * the policy's list the pod and the snapshot both lack it or carry the same
 * value. A policy without grouping rules puts every snapshot in one group. */
static int same_group(const cJSON *policy, const cJSON *pod_labels, const cJSON *snap_labels)
{
    const cJSON *k;
    cJSON_ArrayForEach(k, group_keys(policy))
    {
        if (!cJSON_IsString(k))
            continue;
        const char *a = json_string(pod_labels, k->valuestring);
        const char *b = json_string(snap_labels, k->valuestring);
        if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
            return 0;
    }
    return 1;
}

/* The manual policy, first by name, of the namespace that selects a pod. */
struct policy_search {
    const char *ns;
    const cJSON *labels;
    const struct cache_entry *best;
};

static void policy_visit(void *data, const struct cache_entry *e)
{
    struct policy_search *ps = data;
    if (!e->obj || strcmp(e->ns, ps->ns) != 0 || deleting(e->obj))
        return;
    const char *type = STR(e->obj, "spec", "triggerConfig", "type");
    if (!type || strcmp(type, "manual") != 0)
        return;
    if (!selector_matches(AT(e->obj, "spec", "selector"), ps->labels))
        return;
    if (!ps->best || strcmp(e->name, ps->best->name) < 0)
        ps->best = e;
}

/* ---- triggers ------------------------------------------------------------------ */

static void trigger_set(struct sim *s, const char *key, const cJSON *tr, const char *status,
                        const char *reason, const char *message)
{
    int64_t gen = generation(tr);
    int failed = 0;
    cJSON *st = NULL;
    cJSON *p = status_patch(gen, &st);
    put_item(&failed, st, "conditions",
             conditions_with(AT(tr, "status", "conditions"), "Triggered", status, reason, message,
                             gen, clock_unix_ms()));
    write_patch(s, key, "trigger status", &res_triggers, STR(tr, "metadata", "namespace"),
                STR(tr, "metadata", "name"), "status", KUBE_PATCH_MERGE, built(failed, p), 0);
}

/* Why this trigger cannot be served now, or NULL (and the pod and policy). */
static const char *trigger_problem(struct sim *s, const char *ns, const cJSON *tr,
                                   const cJSON **ret_pod, const struct cache_entry **ret_policy,
                                   char *buf, size_t size)
{
    const char *target = STR(tr, "spec", "targetPod");
    const cJSON *pod = cached(s, INF_PODS, ns, target);
    if (!pod) {
        snprintf(buf, size, "target pod %s not found in namespace %s", target ? target : "", ns);
        return buf;
    }
    if (deleting(pod)) {
        snprintf(buf, size, "target pod %s is terminating", target);
        return buf;
    }
    const char *phase = STR(pod, "status", "phase");
    if (!phase || strcmp(phase, "Running") != 0) {
        snprintf(buf, size, "target pod %s is not running (phase %s)", target,
                 phase ? phase : "unknown");
        return buf;
    }
    struct policy_search ps = {ns, AT(pod, "metadata", "labels"), NULL};
    informer_foreach(s->inf[INF_POLICIES], policy_visit, &ps);
    if (!ps.best) {
        snprintf(buf, size,
                 "no PodSnapshotPolicy with triggerConfig.type manual in namespace %s selects "
                 "pod %s",
                 ns, target);
        return buf;
    }
    const char *sc = STR(ps.best->obj, "spec", "storageConfigName");
    if (!cached(s, INF_STORAGE, "", sc)) {
        snprintf(buf, size, "PodSnapshotStorageConfig %s of PodSnapshotPolicy %s not found",
                 sc ? sc : "", ps.best->name);
        return buf;
    }
    *ret_pod = pod;
    *ret_policy = ps.best;
    return NULL;
}

/*
 * Why GKE cannot make the PodSnapshot of a servable trigger, or NULL. GKE
 * writes the trigger's name into the PodSnapshot's label
 * gke-pod-snapshot-triggered-by, and the API server refuses a label value
 * longer than 63 characters (a trigger's name may have 253): the create
 * fails, and so does the trigger. The message is the API server's.
 */
static const char *trigger_refusal(const char *snap_name, const char *trigger, char *buf,
                                   size_t size)
{
    if (strlen(trigger) <= LABEL_VALUE_MAX)
        return NULL;
    snprintf(buf, size,
             "creating PodSnapshot %s: PodSnapshot.podsnapshot.gke.io \"%s\" is invalid: "
             "metadata.labels: Invalid value: \"%s\": must be no more than 63 characters",
             snap_name, snap_name, trigger);
    return buf;
}

/*
 * The PodSnapshot GKE makes for a trigger. Besides GKE's own label and
 * annotations it carries the simulator's: the mode chosen for the pod, when
 * the checkpoint started, and what a restore is matched against (the pod's
 * UID, spec hash and GPU product, the policy's postCheckpoint).
 */
static cJSON *snapshot_object(struct sim *s, const char *ns, const char *name, const cJSON *tr,
                              const cJSON *pod, const struct cache_entry *policy,
                              enum mode *ret_mode)
{
    const char *trigger = STR(tr, "metadata", "name");
    const char *post = STR(policy->obj, "spec", "triggerConfig", "postCheckpoint");
    enum mode m = pod_chosen_mode(s, pod);
    if (m == MODE_UNSET)
        m = s->o.mode;
    char hash[17], micro[TIMEFMT_RFC3339_MICRO_SIZE];
    if (!trigger || pod_spec_hash(pod, hash) < 0)
        return NULL;
    fmt_micro(clock_unix_ms(), micro);

    int failed = 0;
    cJSON *o = cJSON_CreateObject();
    put_str(&failed, o, "apiVersion", GROUP_VERSION);
    put_str(&failed, o, "kind", "PodSnapshot");
    cJSON *meta = put_obj(&failed, o, "metadata");
    put_str(&failed, meta, "name", name);
    put_str(&failed, meta, "namespace", ns);
    cJSON *labels = put_obj(&failed, meta, "labels");
    put_str(&failed, labels, LABEL_TRIGGERED_BY, trigger); /* its length: trigger_refusal() */
    copy_group_labels(&failed, policy->obj, AT(pod, "metadata", "labels"), labels);
    cJSON *ann = put_obj(&failed, meta, "annotations");
    put_str(&failed, ann, ANN_ORIGIN_POD, STR(pod, "metadata", "name"));
    put_str(&failed, ann, ANN_ORIGIN_NODE, STR(pod, "spec", "nodeName"));
    put_str(&failed, ann, ANN_MODE, mode_names[m]);
    put_str(&failed, ann, ANN_STARTED, micro);
    put_str(&failed, ann, ANN_ORIGIN_UID, STR(pod, "metadata", "uid"));
    put_str(&failed, ann, ANN_SPEC_HASH, hash);
    put_str(&failed, ann, ANN_GPU, pod_gpu_product(s, pod));
    for (int i = 0; i < 3; i++)
        put_str(&failed, ann, node_fact_ann[i], pod_node_fact(s, pod, i));
    put_str(&failed, ann, ANN_POST, post ? post : "resume");
    push(&failed, put_arr(&failed, meta, "finalizers"), cJSON_CreateString(FINALIZER));
    put_str(&failed, put_obj(&failed, o, "spec"), "policyName", policy->name);
    *ret_mode = m;
    return built(failed, o);
}

static void reconcile_trigger(struct sim *s, const char *key, const char *ns, const char *name)
{
    const cJSON *tr = cached(s, INF_TRIGGERS, ns, name);
    if (!tr || deleting(tr)) {
        finish(s, key, 0);
        return;
    }
    const char *created = STR(tr, "status", "snapshotCreated", "name");
    if (created) {
        /* The trigger's outcome follows its snapshot's checkpoint. */
        const cJSON *snap = cached(s, INF_SNAPSHOTS, ns, created);
        const cJSON *ck = condition(snap, "Checkpoint");
        char msg[600];
        if (!ck) {
            finish(s, key, 0);
        } else if (condition_is(snap, "Checkpoint", "True")) {
            snprintf(msg, sizeof(msg), "PodSnapshot %s created", created);
            if (condition_says(tr, "Triggered", "True", "Complete", msg))
                finish(s, key, 0);
            else
                trigger_set(s, key, tr, "True", "Complete", msg);
        } else {
            const char *why = json_string(ck, "message");
            snprintf(msg, sizeof(msg), "PodSnapshot %s: %s", created,
                     why ? why : "checkpoint failed");
            if (condition_says(tr, "Triggered", "False", "Failed", msg))
                finish(s, key, 0);
            else
                trigger_set(s, key, tr, "False", "Failed", msg);
        }
        return;
    }
    const char *uid = STR(tr, "metadata", "uid");
    char snap_name[37];
    if (condition_is(tr, "Triggered", "False") || !uid || snapshot_name_for(uid, snap_name) < 0) {
        finish(s, key, 0); /* failed for good, or not servable */
        return;
    }
    if (cached(s, INF_SNAPSHOTS, ns, snap_name)) {
        /* Taken (perhaps by a run that stopped before this write): name it. */
        int failed = 0;
        cJSON *st = NULL;
        cJSON *p = status_patch(generation(tr), &st);
        put_str(&failed, put_obj(&failed, st, "snapshotCreated"), "name", snap_name);
        log_info("trigger served", "namespace", ns, "trigger", name, "snapshot", snap_name);
        write_patch(s, key, "trigger snapshotCreated", &res_triggers, ns, name, "status",
                    KUBE_PATCH_MERGE, built(failed, p), 0);
        return;
    }

    const cJSON *pod = NULL;
    const struct cache_entry *policy = NULL;
    char why[600];
    if (trigger_problem(s, ns, tr, &pod, &policy, why, sizeof(why))) {
        /* creationTimestamp has whole seconds: a second more of grace. */
        int64_t created_ms = json_time_ms(AT(tr, "metadata"), "creationTimestamp");
        int64_t left = created_ms + RESOLVE_GRACE_MS + 1000 - clock_unix_ms();
        if (left > 0) {
            finish(s, key, left);
            return;
        }
        log_info("trigger failed", "namespace", ns, "trigger", name, "reason", why);
        trigger_set(s, key, tr, "False", "Failed", why);
        return;
    }
    if (trigger_refusal(snap_name, name, why, sizeof(why))) {
        log_info("trigger failed", "namespace", ns, "trigger", name, "reason", why);
        trigger_set(s, key, tr, "False", "Error", why);
        return;
    }
    enum mode chosen = pod_chosen_mode(s, pod);
    if ((chosen == MODE_UNSET ? s->o.mode : chosen) == MODE_TRIGGER_ERROR) {
        /* The node agent fails before any PodSnapshot exists. */
        int64_t created_ms = json_time_ms(AT(tr, "metadata"), "creationTimestamp");
        int64_t left = created_ms + s->o.checkpoint_delay_ms - clock_unix_ms();
        if (left > 0) {
            finish(s, key, left);
            return;
        }
        snprintf(why, sizeof(why),
                 "checkpoint of pod %s could not be started: the node agent reported an error %s",
                 STR(pod, "metadata", "name"), INJECTED);
        log_info("trigger error", "namespace", ns, "trigger", name);
        trigger_set(s, key, tr, "False", "Error", why);
        return;
    }
    enum mode m = MODE_OK;
    cJSON *obj = snapshot_object(s, ns, snap_name, tr, pod, policy, &m);
    log_info("taking snapshot", "namespace", ns, "trigger", name, "pod",
             STR(pod, "metadata", "name"), "snapshot", snap_name, "policy", policy->name, "mode",
             mode_names[m]);
    write_create(s, key, "create PodSnapshot", &res_snapshots, ns, obj);
}

/* ---- snapshots ------------------------------------------------------------------- */

static int64_t snapshot_started_ms(const cJSON *snap)
{
    int64_t t = 0;
    const char *started = annotation(snap, ANN_STARTED);
    if (started && timefmt_parse_rfc3339(started, &t) == 0)
        return t;
    return json_time_ms(AT(snap, "metadata"), "creationTimestamp");
}

static int64_t checkpoint_due_ms(struct sim *s, const cJSON *snap)
{
    int64_t delay =
        snapshot_mode(s, snap) == MODE_SLOW ? s->o.slow_delay_ms : s->o.checkpoint_delay_ms;
    return snapshot_started_ms(snap) + delay;
}

/*
 * GKE's retention: one number and one unit, y, mo, d, h or min, with
 * optional white space between (the CRD's pattern ^(\d+)\s*(y|mo|d|h|min)$).
 * A year is 365 days and a month 30 here. Returns 0 or -EINVAL.
 */
static int parse_retention(const char *s, int64_t *ret_ms)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {
        {"min", 60000LL},  {"mo", 2592000000LL}, {"y", 31536000000LL},
        {"d", 86400000LL}, {"h", 3600000LL},
    };
    if (!s || *s < '0' || *s > '9')
        return -EINVAL;
    int64_t n = 0;
    while (*s >= '0' && *s <= '9') {
        if (n > 1000000)
            return -EINVAL;
        n = n * 10 + (*s++ - '0');
    }
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f' || *s == '\v')
        s++;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(s, units[i].unit) == 0) {
            *ret_ms = n * units[i].ms;
            return 0;
        }
    }
    return -EINVAL;
}

/* The storage config whose bucket a gs:// path is in (NULL: none cached). */
struct bucket_search {
    const char *path;
    const struct cache_entry *found;
};

static void bucket_visit(void *data, const struct cache_entry *e)
{
    struct bucket_search *bs = data;
    const char *bucket = STR(e->obj, "spec", "snapshotStorageConfig", "gcs", "bucket");
    size_t n = bucket ? strlen(bucket) : 0;
    if (n && strncmp(bs->path, "gs://", 5) == 0 && strncmp(bs->path + 5, bucket, n) == 0 &&
        bs->path[5 + n] == '/')
        bs->found = e;
}

/*
 * A PodSnapshot let go without its storage freed: recorded on the storage
 * config of its bucket as the annotation
 * orphaned.simulator.hibernator.dev/<PodSnapshot uid>: <gs:// path> (one key
 * per snapshot, so concurrent records never overwrite each other), where a
 * test counts what would be left in the bucket.
 */
static void record_orphan(struct sim *s, const char *ns, const char *name, const cJSON *snap)
{
    const char *uid = STR(snap, "metadata", "uid");
    const char *path = STR(snap, "status", "storageStatus", "gcs", "observedGCSPath");
    log_info("the policy is gone: the finalizer goes and the files stay in the bucket", "namespace",
             ns, "snapshot", name, "path", path ? path : "(none)");
    struct bucket_search bs = {path, NULL};
    if (path)
        informer_foreach(s->inf[INF_STORAGE], bucket_visit, &bs);
    if (!uid || !bs.found) {
        log_warn("orphaned files not recorded: no storage config holds the bucket", "snapshot",
                 name);
        return;
    }
    char k[200];
    snprintf(k, sizeof(k), "orphaned.simulator.hibernator.dev/%s", uid);
    int failed = 0;
    cJSON *p = cJSON_CreateObject();
    put_str(&failed, put_obj(&failed, put_obj(&failed, p, "metadata"), "annotations"), k, path);
    char *text = failed ? NULL : cJSON_PrintUnformatted(p);
    cJSON_Delete(p);
    if (!text || kube_patch(s->client, &res_storage, NULL, bs.found->name, NULL, KUBE_PATCH_MERGE,
                            text, on_aside_done, "orphaned", NULL) < 0)
        log_warn("orphaned files not recorded", "snapshot", name);
    free(text);
}

/* GKE frees the storage, then releases its finalizer (unless stuck). */
static void snapshot_deleting(struct sim *s, const char *key, const char *ns, const char *name,
                              const cJSON *snap)
{
    int idx = finalizer_index(snap);
    const char *uid = STR(snap, "metadata", "uid");
    if (idx < 0) {
        finish(s, key, 0);
        return;
    }
    if (snapshot_mode(s, snap) == MODE_STUCK_FINALIZER) {
        if (uid && !strmap_get(&s->stuck_logged, uid)) {
            log_info("holding the finalizer for good (stuck-finalizer)", "namespace", ns,
                     "snapshot", name);
            if (strmap_put(&s->stuck_logged, uid, (void *)"", NULL) < 0)
                log_warn("out of memory: the hold may be logged again", "snapshot", name);
        }
        finish(s, key, 0);
        return;
    }
    /* The storage is found through the policy (its storage config names
     * the bucket): with the policy gone there is nothing to free it
     * through, the finalizer goes at once and the files stay behind. */
    const char *policy_name = STR(snap, "spec", "policyName");
    int orphaned = !cached(s, INF_POLICIES, ns, policy_name);
    int64_t due = json_time_ms(AT(snap, "metadata"), "deletionTimestamp") + s->o.delete_delay_ms;
    int64_t now = clock_unix_ms();
    if (!orphaned && now < due) {
        finish(s, key, due - now);
        return;
    }
    if (orphaned)
        record_orphan(s, ns, name, snap);
    /* The test makes sure the index still names our finalizer. */
    char path[64];
    snprintf(path, sizeof(path), "/metadata/finalizers/%d", idx);
    int failed = 0;
    cJSON *ops = cJSON_CreateArray(), *test = cJSON_CreateObject(), *rm = cJSON_CreateObject();
    put_str(&failed, test, "op", "test");
    put_str(&failed, test, "path", path);
    put_str(&failed, test, "value", FINALIZER);
    put_str(&failed, rm, "op", "remove");
    put_str(&failed, rm, "path", path);
    push(&failed, ops, test);
    push(&failed, ops, rm);
    if (!orphaned)
        log_info("storage freed; releasing the finalizer", "namespace", ns, "snapshot", name);
    write_patch(s, key, "remove finalizer", &res_snapshots, ns, name, NULL, KUBE_PATCH_JSON,
                built(failed, ops), 0);
}

/* A new snapshot: Ready=False/AwaitingCheckpoint and where its data goes. */
static void snapshot_begin(struct sim *s, const char *key, const char *ns, const char *name,
                           const cJSON *snap)
{
    int64_t gen = generation(snap);
    const char *pod = annotation(snap, ANN_ORIGIN_POD);
    char msg[400];
    snprintf(msg, sizeof(msg), "Waiting for the checkpoint of pod %s", pod ? pod : "");
    int failed = 0;
    cJSON *st = NULL;
    cJSON *p = status_patch(gen, &st);
    put_item(&failed, st, "conditions",
             conditions_with(AT(snap, "status", "conditions"), "Ready", "False",
                             "AwaitingCheckpoint", msg, gen, clock_unix_ms()));
    put_num(&failed, st, "observedCheckpointRetryCount", 0);
    const cJSON *policy = cached(s, INF_POLICIES, ns, STR(snap, "spec", "policyName"));
    const cJSON *storage = cached(s, INF_STORAGE, "", STR(policy, "spec", "storageConfigName"));
    const char *bucket = STR(storage, "spec", "snapshotStorageConfig", "gcs", "bucket");
    if (bucket) {
        const char *path = STR(storage, "spec", "snapshotStorageConfig", "gcs", "path");
        int has_path = path && *path;
        char gcs[1200];
        snprintf(gcs, sizeof(gcs), "gs://%s/%s%s%s/%s", bucket, has_path ? path : "",
                 has_path ? "/" : "", ns, name);
        cJSON *ss = put_obj(&failed, st, "storageStatus");
        put_str(&failed, put_obj(&failed, ss, "gcs"), "observedGCSPath", gcs);
    }
    int64_t left = checkpoint_due_ms(s, snap) - clock_unix_ms();
    write_patch(s, key, "snapshot AwaitingCheckpoint", &res_snapshots, ns, name, "status",
                KUBE_PATCH_MERGE, built(failed, p), left > 0 ? left : 1);
}

static int stopped_since(const cJSON *pod, int64_t since_ms);

/* The checkpoint's outcome, once its time has come. */
static void pod_complete(struct sim *s, const char *key, const char *ns, const char *name,
                         const cJSON *pod, int64_t requeue_ms);

static void snapshot_complete(struct sim *s, const char *key, const char *ns, const char *name,
                              const cJSON *snap)
{
    int64_t now = clock_unix_ms();
    int64_t left = checkpoint_due_ms(s, snap) - now;
    if (left > 0) {
        finish(s, key, left);
        return;
    }
    enum mode m = snapshot_mode(s, snap);
    if (m == MODE_HANG) {
        /* Never Ready, never failed: only the consumer's own timeout ends it. */
        finish(s, key, 0);
        return;
    }
    int64_t gen = generation(snap);
    const cJSON *conds = AT(snap, "status", "conditions");
    const char *pod = annotation(snap, ANN_ORIGIN_POD), *pod_uid = annotation(snap, ANN_ORIGIN_UID);
    /* postCheckpoint: stop. The pod completes once its checkpoint is
     * taken, before the snapshot is stored and Ready: whoever sees Ready
     * sees the pod completed. */
    const char *post = annotation(snap, ANN_POST);
    const cJSON *source = cached(s, INF_PODS, ns, pod);
    const char *source_uid = source ? STR(source, "metadata", "uid") : NULL;
    const char *source_phase = source ? STR(source, "status", "phase") : NULL;
    int source_runs =
        source && !deleting(source) && source_uid && pod_uid && strcmp(source_uid, pod_uid) == 0 &&
        source_phase && strcmp(source_phase, "Running") == 0 &&
        !stopped_since(source, json_time_ms(AT(snap, "metadata"), "creationTimestamp"));
    if (m != MODE_CHECKPOINT_FAILED && post && strcmp(post, "stop") == 0 && source_runs) {
        pod_complete(s, key, ns, pod, source, 200);
        return;
    }
    char msg[600], ev[800];
    cJSON *with_checkpoint, *list;
    if (m == MODE_CHECKPOINT_FAILED) {
        snprintf(msg, sizeof(msg), "checkpoint of pod %s failed: the sandbox could not be saved %s",
                 pod ? pod : "", INJECTED);
        with_checkpoint = conditions_with(conds, "Checkpoint", "False", "Failed", msg, gen, now);
        list =
            conditions_with(with_checkpoint, "Ready", "False", "CheckpointFailed", msg, gen, now);
        snprintf(ev, sizeof(ev), "Failed to checkpoint the pod to PodSnapshot %s/%s: %s", ns, name,
                 msg);
        log_info("checkpoint failed", "namespace", ns, "snapshot", name, "pod", pod);
        post_pod_event(s, ns, pod, pod_uid, "Warning", "checkpoint-failed", ev);
    } else {
        snprintf(msg, sizeof(msg), "Checkpointed pod %s", pod ? pod : "");
        with_checkpoint = conditions_with(conds, "Checkpoint", "True", "Succeeded", msg, gen, now);
        list = conditions_with(with_checkpoint, "Ready", "True", "AllSnapshotsAvailable",
                               "All snapshot data is stored and available for restores", gen, now);
        snprintf(ev, sizeof(ev), "Successfully checkpointed the pod to PodSnapshot %s/%s", ns,
                 name);
        log_info("snapshot ready", "namespace", ns, "snapshot", name, "pod", pod, "mode",
                 mode_names[m]);
        post_pod_event(s, ns, pod, pod_uid, "Normal", "checkpointed", ev);
    }
    int failed = !with_checkpoint;
    cJSON_Delete(with_checkpoint);
    cJSON *st = NULL;
    cJSON *p = status_patch(gen, &st);
    put_item(&failed, st, "conditions", list);
    write_patch(s, key, "snapshot outcome", &res_snapshots, ns, name, "status", KUBE_PATCH_MERGE,
                built(failed, p), 0);
}

/* A finished snapshot: deleted once stale, by the policy's lastAccessTimeout. */
static void snapshot_retention(struct sim *s, const char *key, const char *ns, const char *name,
                               const cJSON *snap)
{
    const cJSON *policy = cached(s, INF_POLICIES, ns, STR(snap, "spec", "policyName"));
    const char *timeout = STR(policy, "spec", "retentionConfig", "lastAccessTimeout");
    int64_t ttl = 0;
    if (!timeout || parse_retention(timeout, &ttl) < 0 || ttl <= 0) {
        finish(s, key, 0);
        return;
    }
    int64_t base = json_time_ms(AT(snap, "status"), "lastAccessTime");
    if (!base)
        base = json_time_ms(condition(snap, "Ready"), "lastTransitionTime");
    if (!base)
        base = json_time_ms(AT(snap, "metadata"), "creationTimestamp");
    int64_t left = base + ttl - clock_unix_ms();
    if (left > 0) {
        /* Looked at again within the hour, in case the policy changes. */
        finish(s, key, left < 3600000 ? left : 3600000);
        return;
    }
    log_info("snapshot stale (lastAccessTimeout); deleting it", "namespace", ns, "snapshot", name,
             "lastAccessTimeout", timeout);
    write_delete(s, key, "delete stale PodSnapshot", &res_snapshots, ns, name,
                 STR(snap, "metadata", "uid"));
}

static void reconcile_snapshot(struct sim *s, const char *key, const char *ns, const char *name)
{
    const cJSON *snap = cached(s, INF_SNAPSHOTS, ns, name);
    if (!snap)
        finish(s, key, 0);
    else if (deleting(snap))
        snapshot_deleting(s, key, ns, name, snap);
    else if (!annotation(snap, ANN_STARTED))
        finish(s, key, 0); /* not one this simulator took */
    else if (!condition(snap, "Ready"))
        snapshot_begin(s, key, ns, name, snap);
    else if (!condition(snap, "Checkpoint"))
        snapshot_complete(s, key, ns, name, snap);
    else
        snapshot_retention(s, key, ns, name, snap);
}

/* ---- pods ---------------------------------------------------------------------- */

static int pod_ready(const cJSON *pod)
{
    const char *phase = STR(pod, "status", "phase");
    return phase && strcmp(phase, "Running") == 0 && condition_is(pod, "Ready", "True");
}

/*
 * The body of a pods/status merge patch. It carries the pod's
 * resourceVersion, so it applies only to the status it was computed from
 * (409 otherwise, and the reconcile runs again on the newer pod): lists such
 * as conditions are replaced whole by a merge patch.
 */
static cJSON *pod_status_patch(const cJSON *pod, cJSON **ret_status)
{
    int failed = 0;
    cJSON *p = cJSON_CreateObject();
    put_str(&failed, put_obj(&failed, p, "metadata"), "resourceVersion",
            STR(pod, "metadata", "resourceVersion"));
    cJSON *st = put_obj(&failed, p, "status");
    p = built(failed, p);
    *ret_status = p ? st : NULL;
    return p;
}

static int64_t restart_count(const cJSON *pod, const char *container)
{
    const cJSON *cs;
    cJSON_ArrayForEach(cs, AT(pod, "status", "containerStatuses"))
    {
        const char *n = json_string(cs, "name");
        if (n && container && strcmp(n, container) == 0)
            return json_int(cs, "restartCount");
    }
    return 0;
}

/* How a pod's containers ended, for container_statuses(). */
enum container_end {
    CONTAINERS_CRASHED,   /* waiting in CrashLoopBackOff after one more crash */
    CONTAINERS_COMPLETED, /* terminated with exit code 0, not restarted */
    CONTAINERS_RESTARTED, /* exited 0 and restarted by the kubelet (restartPolicy Always) */
};

/* Container statuses, one for each container, as the kubelet writes them
 * after the containers ended as end says. */
static cJSON *container_statuses(const cJSON *pod, enum container_end end, int64_t now)
{
    int completed = end == CONTAINERS_COMPLETED;
    char when[TIMEFMT_RFC3339_SIZE];
    fmt_time(now, when);
    int failed = 0;
    cJSON *list = cJSON_CreateArray();
    const cJSON *c;
    cJSON_ArrayForEach(c, AT(pod, "spec", "containers"))
    {
        const char *name = json_string(c, "name");
        int64_t restarts = restart_count(pod, name) + (completed ? 0 : 1);
        int restarted = end == CONTAINERS_RESTARTED;
        cJSON *cs = cJSON_CreateObject();
        put_str(&failed, cs, "name", name);
        put_str(&failed, cs, "image", json_string(c, "image"));
        put_str(&failed, cs, "imageID", "");
        put_bool(&failed, cs, "ready", restarted);
        put_bool(&failed, cs, "started", restarted);
        put_num(&failed, cs, "restartCount", (double)restarts);
        if (restarted) {
            /* The kubelet started it again: running, its exit 0 the last state. */
            put_str(&failed, put_obj(&failed, put_obj(&failed, cs, "state"), "running"),
                    "startedAt", when);
            cJSON *t = put_obj(&failed, put_obj(&failed, cs, "lastState"), "terminated");
            put_num(&failed, t, "exitCode", 0);
            put_str(&failed, t, "reason", "Completed");
            put_str(&failed, t, "finishedAt", when);
            push(&failed, list, cs);
            continue;
        }
        cJSON *state = put_obj(&failed, cs, "state");
        if (completed) {
            cJSON *t = put_obj(&failed, state, "terminated");
            put_num(&failed, t, "exitCode", 0);
            put_str(&failed, t, "reason", "Completed");
            put_str(&failed, t, "finishedAt", when);
        } else {
            /* The kubelet's backoff: 10 s doubling to 5 min. */
            int64_t backoff = 10;
            for (int64_t i = 1; i < restarts && backoff < 300; i++)
                backoff *= 2;
            char msg[600];
            snprintf(msg, sizeof(msg),
                     "back-off %llds restarting failed container=%s pod=%s_%s(%s)",
                     (long long)(backoff > 300 ? 300 : backoff), name ? name : "",
                     STR(pod, "metadata", "name"), STR(pod, "metadata", "namespace"),
                     STR(pod, "metadata", "uid"));
            cJSON *w = put_obj(&failed, state, "waiting");
            put_str(&failed, w, "reason", "CrashLoopBackOff");
            put_str(&failed, w, "message", msg);
            cJSON *t = put_obj(&failed, put_obj(&failed, cs, "lastState"), "terminated");
            put_num(&failed, t, "exitCode", 139);
            put_str(&failed, t, "reason", "Error");
            put_str(&failed, t, "message", "the restored process crashed " INJECTED);
            put_str(&failed, t, "startedAt", when);
            put_str(&failed, t, "finishedAt", when);
        }
        push(&failed, list, cs);
    }
    return built(failed, list);
}

/* When our last injected crash happened, or 0 when the pod is not crash-looping. */
static int64_t injected_crash_ms(const cJSON *pod)
{
    const cJSON *cs;
    cJSON_ArrayForEach(cs, AT(pod, "status", "containerStatuses"))
    {
        const char *w = STR(cs, "state", "waiting", "reason");
        const char *m = STR(cs, "lastState", "terminated", "message");
        if (w && strcmp(w, "CrashLoopBackOff") == 0 && m && strstr(m, COMPONENT))
            return json_time_ms(AT(cs, "lastState", "terminated"), "finishedAt");
    }
    return 0;
}

static void pod_crash_again(struct sim *s, const char *key, const char *ns, const char *name,
                            const cJSON *pod, int64_t last)
{
    int64_t now = clock_unix_ms();
    int64_t left = last + s->o.restart_interval_ms - now;
    if (left > 0) {
        finish(s, key, left);
        return;
    }
    int failed = 0;
    cJSON *st = NULL;
    cJSON *p = pod_status_patch(pod, &st);
    put_item(&failed, st, "containerStatuses", container_statuses(pod, CONTAINERS_CRASHED, now));
    log_debug("restored pod crashes again", "namespace", ns, "pod", name);
    write_patch(s, key, "pod crash loop", &KUBE_RESOURCE_PODS, ns, name, "status", KUBE_PATCH_MERGE,
                built(failed, p), s->o.restart_interval_ms);
}

/* ---- the home volume ------------------------------------------------------- */

/* When the newest write to one of the pod's claims happened, 0: none known. */
static int64_t home_written_ms(struct sim *s, const char *ns, const cJSON *pod)
{
    int64_t newest = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, AT(pod, "spec", "volumes"))
    {
        const cJSON *pvc = cached(s, INF_PVCS, ns, STR(v, "persistentVolumeClaim", "claimName"));
        const char *at = pvc ? annotation(pvc, ANN_HOME_WRITTEN) : NULL;
        int64_t t = 0;
        if (at && timefmt_parse_rfc3339(at, &t) == 0 && t > newest)
            newest = t;
    }
    return newest;
}

/*
 * A pod deleted with a grace period while its process runs gets SIGTERM,
 * and an application that saves on SIGTERM writes to its volumes then. The
 * simulator plays that application: it marks each of the pod's claims
 * written now. A pod that completed (postCheckpoint: stop) or is killed at
 * once (grace 0) writes nothing.
 */
static void pod_terminating(struct sim *s, const char *ns, const cJSON *pod)
{
    const char *phase = STR(pod, "status", "phase");
    const cJSON *grace = AT(pod, "metadata", "deletionGracePeriodSeconds");
    if (!phase || strcmp(phase, "Running") != 0 || !cJSON_IsNumber(grace) ||
        grace->valuedouble <= 0)
        return;
    char when[TIMEFMT_RFC3339_MICRO_SIZE];
    fmt_micro(clock_unix_ms(), when);
    const cJSON *v;
    cJSON_ArrayForEach(v, AT(pod, "spec", "volumes"))
    {
        const char *claim = STR(v, "persistentVolumeClaim", "claimName");
        if (!claim)
            continue;
        int failed = 0;
        cJSON *p = cJSON_CreateObject();
        put_str(&failed, put_obj(&failed, put_obj(&failed, p, "metadata"), "annotations"),
                ANN_HOME_WRITTEN, when);
        char *text = failed ? NULL : cJSON_PrintUnformatted(p);
        cJSON_Delete(p);
        log_info("the application saves on SIGTERM: its volume is written", "namespace", ns, "pod",
                 STR(pod, "metadata", "name"), "claim", claim);
        if (!text || kube_patch(s->client, &KUBE_RESOURCE_PVCS, ns, claim, NULL, KUBE_PATCH_MERGE,
                                text, on_aside_done, "home-written-at", NULL) < 0)
            log_warn("home-written-at not written", "claim", claim);
        free(text);
    }
}

/* The pod's containers already exited 0 at or after since_ms (the stop was
 * played: a restart under Always left it running). */
static int stopped_since(const cJSON *pod, int64_t since_ms)
{
    const cJSON *cs;
    cJSON_ArrayForEach(cs, AT(pod, "status", "containerStatuses"))
    {
        const cJSON *t = AT(cs, "lastState", "terminated");
        if (t && json_int(t, "exitCode") == 0 && json_time_ms(t, "finishedAt") >= since_ms)
            return 1;
    }
    return 0;
}

/* postCheckpoint: stop. A snapshot of this very pod (same UID) is
 * checkpointed, and the stop is not yet played. */
struct stop_search {
    const char *ns, *pod_uid;
    const cJSON *pod;
    int found;
};

static void stop_visit(void *data, const struct cache_entry *e)
{
    struct stop_search *ss = data;
    const char *uid = annotation(e->obj, ANN_ORIGIN_UID), *post = annotation(e->obj, ANN_POST);
    if (strcmp(e->ns, ss->ns) == 0 && uid && strcmp(uid, ss->pod_uid) == 0 && post &&
        strcmp(post, "stop") == 0 && condition_is(e->obj, "Checkpoint", "True") &&
        !stopped_since(ss->pod, json_time_ms(AT(e->obj, "metadata"), "creationTimestamp")))
        ss->found = 1;
}

static void pod_complete(struct sim *s, const char *key, const char *ns, const char *name,
                         const cJSON *pod, int64_t requeue_ms)
{
    int64_t now = clock_unix_ms();
    int failed = 0;
    cJSON *st = NULL;
    cJSON *p = pod_status_patch(pod, &st);
    /* The kubelet's rule for a container that exits 0: restarted under
     * Always (the default), final under OnFailure and Never, and the pod
     * Succeeded once all its containers are. */
    const char *policy = STR(pod, "spec", "restartPolicy");
    if (!policy || strcmp(policy, "Always") == 0) {
        put_item(&failed, st, "containerStatuses",
                 container_statuses(pod, CONTAINERS_RESTARTED, now));
        log_info("checkpointed pod's container exits and is restarted (restartPolicy Always)",
                 "namespace", ns, "pod", name);
        write_patch(s, key, "pod container restarted", &KUBE_RESOURCE_PODS, ns, name, "status",
                    KUBE_PATCH_MERGE, built(failed, p), requeue_ms);
        return;
    }
    cJSON *ready = conditions_with(AT(pod, "status", "conditions"), "Ready", "False",
                                   "PodCompleted", "", -1, now);
    failed |= !ready;
    put_item(&failed, st, "conditions",
             conditions_with(ready, "ContainersReady", "False", "PodCompleted", "", -1, now));
    cJSON_Delete(ready);
    put_item(&failed, st, "containerStatuses", container_statuses(pod, CONTAINERS_COMPLETED, now));
    put_str(&failed, st, "phase", "Succeeded");
    log_info("checkpointed pod stops (postCheckpoint: stop)", "namespace", ns, "pod", name);
    write_patch(s, key, "pod completed", &KUBE_RESOURCE_PODS, ns, name, "status", KUBE_PATCH_MERGE,
                built(failed, p), requeue_ms);
}

/* The newest Ready snapshot a policy selecting the pod holds for the pod's spec. */
struct implicit_search {
    struct sim *s;
    const char *ns;
    const cJSON *pod;
    const char *hash;
    int64_t pod_created_ms;
    const struct cache_entry *best;
    int64_t best_ready_ms;
};

static void implicit_visit(void *data, const struct cache_entry *e)
{
    struct implicit_search *is = data;
    const cJSON *snap = e->obj;
    if (strcmp(e->ns, is->ns) != 0 || deleting(snap) || !condition_is(snap, "Ready", "True"))
        return;
    const char *h = annotation(snap, ANN_SPEC_HASH), *uid = annotation(snap, ANN_ORIGIN_UID);
    const char *pod_uid = STR(is->pod, "metadata", "uid");
    if (!h || strcmp(h, is->hash) != 0 || (uid && pod_uid && strcmp(uid, pod_uid) == 0))
        return;
    const cJSON *policy = cached(is->s, INF_POLICIES, is->ns, STR(snap, "spec", "policyName"));
    if (!policy ||
        !selector_matches(AT(policy, "spec", "selector"), AT(is->pod, "metadata", "labels")) ||
        !same_group(policy, AT(is->pod, "metadata", "labels"), AT(snap, "metadata", "labels")))
        return;
    /* Only what was Ready when the pod started (both times in whole seconds). */
    int64_t ready = json_time_ms(condition(snap, "Ready"), "lastTransitionTime");
    if (ready > is->pod_created_ms)
        return;
    if (!is->best || ready > is->best_ready_ms ||
        (ready == is->best_ready_ms && strcmp(e->name, is->best->name) > 0)) {
        is->best = e;
        is->best_ready_ms = ready;
    }
}

/* Why this snapshot cannot restore this pod, or NULL. */
static const char *restore_problem(struct sim *s, const cJSON *pod, const char *snap_name,
                                   const cJSON *snap, const char *hash, char *buf, size_t size)
{
    if (!snap) {
        snprintf(buf, size, "PodSnapshot %s not found", snap_name);
        return buf;
    }
    if (deleting(snap)) {
        snprintf(buf, size, "PodSnapshot %s is being deleted", snap_name);
        return buf;
    }
    if (!condition_is(snap, "Ready", "True")) {
        snprintf(buf, size, "PodSnapshot %s is not ready", snap_name);
        return buf;
    }
    const char *h = annotation(snap, ANN_SPEC_HASH);
    if (h && strcmp(h, hash) != 0) {
        snprintf(buf, size, "the pod's spec does not match PodSnapshot %s (hash %s, snapshot %s)",
                 snap_name, hash, h);
        return buf;
    }
    const char *want = annotation(snap, ANN_GPU), *have = pod_gpu_product(s, pod);
    if (want && *want && strcmp(want, have) != 0) {
        snprintf(buf, size, "the node's GPU product %s differs from PodSnapshot %s's (%s)",
                 *have ? have : "(none)", snap_name, want);
        return buf;
    }
    for (int i = 0; i < 3; i++) {
        want = annotation(snap, node_fact_ann[i]);
        have = pod_node_fact(s, pod, i);
        if (want && *want && strcmp(want, have) != 0) {
            snprintf(buf, size, "the node's %s %s differs from PodSnapshot %s's (%s)",
                     node_fact_name[i], *have ? have : "(none)", snap_name, want);
            return buf;
        }
    }
    return NULL;
}

/* The snapshot restored a pod: its retention clock starts again. */
static void touch_snapshot(struct sim *s, const char *ns, const char *snap_name, int64_t now)
{
    char when[TIMEFMT_RFC3339_SIZE];
    fmt_time(now, when);
    int failed = 0;
    cJSON *la = cJSON_CreateObject();
    put_str(&failed, put_obj(&failed, la, "status"), "lastAccessTime", when);
    char *text = failed ? NULL : cJSON_PrintUnformatted(la);
    cJSON_Delete(la);
    if (!text || kube_patch(s->client, &res_snapshots, ns, snap_name, "status", KUBE_PATCH_MERGE,
                            text, on_aside_done, "lastAccessTime", NULL) < 0)
        log_warn("lastAccessTime not written", "snapshot", snap_name);
    free(text);
}

/*
 * The restore itself fails and the container crash-loops, never having run
 * the checkpointed process (gke-labs/pod-migration#15: "OCI runtime restore
 * failed … failed to load kernel"). With said, PodRestored=False with
 * reason FailedToRestore (the reason kubernetes-sigs/agent-sandbox's GKE
 * client is tested against) and a Warning event; without, no condition at
 * all, only the crash loop.
 */
static void pod_restore_failed(struct sim *s, const char *key, const char *ns, const char *name,
                               const cJSON *pod, const char *snap_name, int said)
{
    int64_t now = clock_unix_ms();
    char msg[1200];
    snprintf(msg, sizeof(msg),
             "Failed to restore the pod from PodSnapshot %s/%s: OCI runtime restore failed: "
             "failed to load kernel %s",
             ns, snap_name, INJECTED);
    int failed = 0;
    cJSON *st = NULL;
    cJSON *p = pod_status_patch(pod, &st);
    const cJSON *conds = AT(pod, "status", "conditions");
    cJSON *with =
        said ? conditions_with(conds, "PodRestored", "False", "FailedToRestore", msg, -1, now)
             : cJSON_Duplicate(conds, 1);
    cJSON *a = with ? conditions_with(with, "Ready", "False", "ContainersNotReady",
                                      "containers with unready status", -1, now)
                    : NULL;
    cJSON *list = a ? conditions_with(a, "ContainersReady", "False", "ContainersNotReady",
                                      "containers with unready status", -1, now)
                    : NULL;
    cJSON_Delete(with);
    cJSON_Delete(a);
    put_item(&failed, st, "conditions", list);
    put_item(&failed, st, "containerStatuses", container_statuses(pod, CONTAINERS_CRASHED, now));
    p = built(failed, p);
    if (p) {
        log_info("restore failed: the pod crash-loops", "namespace", ns, "pod", name, "snapshot",
                 snap_name, "PodRestored", said ? "False" : "absent");
        if (said)
            post_pod_event(s, ns, name, STR(pod, "metadata", "uid"), "Warning", "restore-failed",
                           msg);
    }
    write_patch(s, key, "pod restore failed", &KUBE_RESOURCE_PODS, ns, name, "status",
                KUBE_PATCH_MERGE, p, s->o.restart_interval_ms);
}

/*
 * A pod that names a snapshot (or that a policy's snapshot fits) is restored
 * once it runs: PodRestored=True, unless the restore cannot or (cold-start)
 * does not happen, which GKE reports only as a Warning event. In the
 * crash-loop mode the restored process crashes at once and keeps crashing.
 */
static void pod_restore(struct sim *s, const char *key, const char *ns, const char *name,
                        const cJSON *pod)
{
    const char *pod_uid = STR(pod, "metadata", "uid");
    char hash[17];
    if (!pod_uid || strmap_get(&s->skipped_restores, pod_uid)) {
        finish(s, key, 0);
        return;
    }
    if (pod_spec_hash(pod, hash) < 0) {
        finish(s, key, OOM_RETRY_MS);
        return;
    }
    const char *snap_name = annotation(pod, ANN_PS_NAME);
    const cJSON *snap = NULL;
    if (snap_name && !snap_name[0]) {
        /* The explicit bypass: GKE attempts no restore, not even an
         * implicit one (gke-labs/pod-migration, pod_gate_controller.go). */
        finish(s, key, 0);
        return;
    }
    if (snap_name) {
        snap = cached(s, INF_SNAPSHOTS, ns, snap_name);
    } else if (s->o.implicit_restore) {
        struct implicit_search is = {
            s, ns, pod, hash, json_time_ms(AT(pod, "metadata"), "creationTimestamp"), NULL, 0};
        informer_foreach(s->inf[INF_SNAPSHOTS], implicit_visit, &is);
        if (is.best) {
            snap = is.best->obj;
            snap_name = is.best->name;
        }
    }
    /* No snapshot: a fresh start, nothing to say. GKE restores while the
     * container starts; the condition may follow Ready. */
    if (!snap_name || !pod_ready(pod)) {
        finish(s, key, 0);
        return;
    }

    enum mode m = pod_chosen_mode(s, pod);
    if (m == MODE_UNSET)
        m = snap ? snapshot_mode(s, snap) : s->o.mode;
    char why[800], msg[1200];
    const char *problem = restore_problem(s, pod, snap_name, snap, hash, why, sizeof(why));
    if (!problem && m == MODE_COLD_START) {
        snprintf(why, sizeof(why), "the restore did not start %s", INJECTED);
        problem = why;
    }
    /* The restored process finds files that changed after its memory was
     * taken: it crashes, as pod-migration#15's restores did. */
    int64_t written = !problem && m != MODE_CRASH_LOOP ? home_written_ms(s, ns, pod) : 0;
    if (written && written >= snapshot_started_ms(snap)) {
        log_info("the home volume changed after the checkpoint: the restored process crashes",
                 "namespace", ns, "pod", name, "snapshot", snap_name);
        m = MODE_CRASH_LOOP;
    }
    if (problem) {
        snprintf(msg, sizeof(msg),
                 "Failed to restore the pod from PodSnapshot %s/%s: %s; falling back to a cold "
                 "start",
                 ns, snap_name, problem);
        log_info("restore skipped: cold start", "namespace", ns, "pod", name, "snapshot", snap_name,
                 "reason", problem);
        post_pod_event(s, ns, name, pod_uid, "Warning", "cold-start", msg);
        if (strmap_put(&s->skipped_restores, pod_uid, (void *)"", NULL) < 0)
            log_warn("out of memory: the skipped restore is not remembered", "pod", name);
        finish(s, key, 0);
        return;
    }

    if (m == MODE_RESTORE_FAILED || m == MODE_RESTORE_FAILED_SILENT) {
        pod_restore_failed(s, key, ns, name, pod, snap_name, m == MODE_RESTORE_FAILED);
        return;
    }

    /* The restored process is the source pod's. Said on the pod first, so a
     * stand-in application (tests/tools/canary) knows it before PodRestored
     * tells the controller; the pod's next event brings the condition. */
    const char *source_uid = annotation(snap, ANN_ORIGIN_UID);
    if (source_uid && !annotation(pod, ANN_RESTORED_FROM_UID)) {
        int failed = 0;
        cJSON *p = cJSON_CreateObject();
        cJSON *meta = put_obj(&failed, p, "metadata");
        put_str(&failed, meta, "resourceVersion", STR(pod, "metadata", "resourceVersion"));
        put_str(&failed, put_obj(&failed, meta, "annotations"), ANN_RESTORED_FROM_UID, source_uid);
        write_patch(s, key, "pod restored-from-uid", &KUBE_RESOURCE_PODS, ns, name, NULL,
                    KUBE_PATCH_MERGE, built(failed, p), 0);
        return;
    }

    int64_t now = clock_unix_ms();
    snprintf(msg, sizeof(msg), "Pod restored from PodSnapshot %s/%s", ns, snap_name);
    int failed = 0;
    cJSON *st = NULL;
    cJSON *p = pod_status_patch(pod, &st);
    cJSON *list =
        conditions_with(AT(pod, "status", "conditions"), "PodRestored", "True", NULL, msg, -1, now);
    if (list && m == MODE_CRASH_LOOP) {
        /* No fallback when the restored process crashes: the pod crash-loops. */
        cJSON *a = conditions_with(list, "Ready", "False", "ContainersNotReady",
                                   "containers with unready status", -1, now);
        cJSON_Delete(list);
        list = a ? conditions_with(a, "ContainersReady", "False", "ContainersNotReady",
                                   "containers with unready status", -1, now)
                 : NULL;
        cJSON_Delete(a);
        put_item(&failed, st, "containerStatuses",
                 container_statuses(pod, CONTAINERS_CRASHED, now));
    }
    put_item(&failed, st, "conditions", list);
    p = built(failed, p);
    if (p) {
        log_info("pod restored", "namespace", ns, "pod", name, "snapshot", snap_name, "mode",
                 mode_names[m]);
        snprintf(msg, sizeof(msg), "Successfully restored the pod from PodSnapshot %s/%s", ns,
                 snap_name);
        post_pod_event(s, ns, name, pod_uid, "Normal", "restored", msg);
        touch_snapshot(s, ns, snap_name, now);
    }
    write_patch(s, key, "pod PodRestored", &KUBE_RESOURCE_PODS, ns, name, "status",
                KUBE_PATCH_MERGE, p, m == MODE_CRASH_LOOP ? s->o.restart_interval_ms : 0);
}

static void reconcile_pod(struct sim *s, const char *key, const char *ns, const char *name)
{
    const cJSON *pod = cached(s, INF_PODS, ns, name);
    if (!pod || deleting(pod)) {
        finish(s, key, 0);
        return;
    }
    const char *phase = STR(pod, "status", "phase");
    const char *pod_uid = STR(pod, "metadata", "uid");
    if (phase && strcmp(phase, "Running") == 0 && pod_uid) {
        struct stop_search ss = {ns, pod_uid, pod, 0};
        informer_foreach(s->inf[INF_SNAPSHOTS], stop_visit, &ss);
        if (ss.found) {
            pod_complete(s, key, ns, name, pod, 0);
            return;
        }
    }
    /* Restored, or its restore failed: only the crash loop goes on. */
    int64_t last = injected_crash_ms(pod);
    if (!condition(pod, "PodRestored") && !last) {
        pod_restore(s, key, ns, name, pod);
        return;
    }
    if (last)
        pod_crash_again(s, key, ns, name, pod, last);
    else
        finish(s, key, 0);
}

/* ---- policies and storage configs ------------------------------------------------ */

static void set_ready(struct sim *s, const char *key, const struct kube_resource *res,
                      const cJSON *obj, const char *status, const char *reason, const char *msg)
{
    int64_t gen = generation(obj);
    if (json_int(AT(obj, "status"), "observedGeneration") == gen &&
        condition_says(obj, "Ready", status, reason, msg)) {
        finish(s, key, 0);
        return;
    }
    int failed = 0;
    cJSON *st = NULL;
    cJSON *p = status_patch(gen, &st);
    put_item(&failed, st, "conditions",
             conditions_with(AT(obj, "status", "conditions"), "Ready", status, reason, msg, gen,
                             clock_unix_ms()));
    write_patch(s, key, "Ready condition", res, STR(obj, "metadata", "namespace"),
                STR(obj, "metadata", "name"), "status", KUBE_PATCH_MERGE, built(failed, p), 0);
}

static void reconcile_policy(struct sim *s, const char *key, const char *ns, const char *name)
{
    const cJSON *pol = cached(s, INF_POLICIES, ns, name);
    const char *sc = STR(pol, "spec", "storageConfigName");
    char msg[400];
    if (!pol || deleting(pol)) {
        finish(s, key, 0);
    } else if (cached(s, INF_STORAGE, "", sc)) {
        snprintf(msg, sizeof(msg), "Using PodSnapshotStorageConfig %s", sc);
        set_ready(s, key, &res_policies, pol, "True", "PolicyAccepted", msg);
    } else {
        snprintf(msg, sizeof(msg), "PodSnapshotStorageConfig %s not found", sc ? sc : "");
        set_ready(s, key, &res_policies, pol, "False", "StorageConfigNotFound", msg);
    }
}

static void reconcile_storage(struct sim *s, const char *key, const char *name)
{
    const cJSON *sc = cached(s, INF_STORAGE, "", name);
    if (!sc || deleting(sc)) {
        finish(s, key, 0);
        return;
    }
    const char *bucket = STR(sc, "spec", "snapshotStorageConfig", "gcs", "bucket");
    char msg[600];
    snprintf(msg, sizeof(msg),
             "Bucket %s accepted (not checked: the snapshot simulator stores nothing)",
             bucket ? bucket : "");
    set_ready(s, key, &res_storage, sc, "True", "StorageConfigAccepted", msg);
}

/* ---- dispatch -------------------------------------------------------------------- */

static void reconcile(struct sim *s, const char *key)
{
    char kind = key[0];
    const char *rest = kind && key[1] == ':' ? key + 2 : NULL;
    const char *slash = rest ? strchr(rest, '/') : NULL;
    if (rest && kind == 'c') {
        reconcile_storage(s, key, rest);
        return;
    }
    if (!slash) {
        finish(s, key, 0);
        return;
    }
    char *ns = strndup(rest, (size_t)(slash - rest));
    if (!ns) {
        retry(s, key);
        return;
    }
    const char *name = slash + 1;
    switch (kind) {
    case 't':
        reconcile_trigger(s, key, ns, name);
        break;
    case 's':
        reconcile_snapshot(s, key, ns, name);
        break;
    case 'p':
        reconcile_pod(s, key, ns, name);
        break;
    case 'y':
        reconcile_policy(s, key, ns, name);
        break;
    default:
        finish(s, key, 0);
    }
    free(ns);
}

static void on_ready(void *data)
{
    struct sim *s = data;
    if (s->closing || s->synced != INF_COUNT)
        return;
    while (s->in_flight < MAX_IN_FLIGHT) {
        const char *key = NULL;
        if (workqueue_driver_get(s->queue, &key) < 0)
            break;
        reconcile(s, key);
    }
}

/* ---- informer handlers: which keys an object's change concerns ---------------------- */

/* Nothing is decided before every cache holds its first list: a trigger
 * would otherwise fail for want of a policy not yet listed. */
static void on_synced(void *data)
{
    struct sim *s = data;
    if (++s->synced == INF_COUNT) {
        log_info("caches synced; simulating GKE's snapshot controller");
        on_ready(s);
    }
}

struct scan {
    struct sim *s;
    const char *ns;      /* NULL: every namespace */
    const char *target;  /* triggers: only those targeting this pod (NULL: all) */
    const char *storage; /* policies: only those using this storage config */
    const char *ps_name; /* pods: only those restoring from this snapshot */
};

static void trigger_scan_visit(void *data, const struct cache_entry *e)
{
    struct scan *sc = data;
    if (sc->ns && strcmp(e->ns, sc->ns) != 0)
        return;
    const char *t = STR(e->obj, "spec", "targetPod");
    if (!sc->target || (t && strcmp(t, sc->target) == 0))
        enqueue(sc->s, 't', e->ns, e->name);
}

static void policy_scan_visit(void *data, const struct cache_entry *e)
{
    struct scan *sc = data;
    const char *st = STR(e->obj, "spec", "storageConfigName");
    if (st && strcmp(st, sc->storage) == 0)
        enqueue(sc->s, 'y', e->ns, e->name);
}

static void pod_scan_visit(void *data, const struct cache_entry *e)
{
    struct scan *sc = data;
    const char *ps = annotation(e->obj, ANN_PS_NAME);
    if (strcmp(e->ns, sc->ns) == 0 && ps && strcmp(ps, sc->ps_name) == 0)
        enqueue(sc->s, 'p', e->ns, e->name);
}

static void trigger_changed(void *data, const struct cache_entry *e)
{
    enqueue(data, 't', e->ns, e->name);
}

static void trigger_updated(void *data, const struct cache_entry *old_e,
                            const struct cache_entry *e)
{
    (void)old_e;
    trigger_changed(data, e);
}

static void snapshot_changed(void *data, const struct cache_entry *e)
{
    struct sim *s = data;
    enqueue(s, 's', e->ns, e->name);
    enqueue(s, 't', e->ns, label(e->obj, LABEL_TRIGGERED_BY));
    enqueue(s, 'p', e->ns, annotation(e->obj, ANN_ORIGIN_POD));
    struct scan sc = {.s = s, .ns = e->ns, .ps_name = e->name};
    informer_foreach(s->inf[INF_PODS], pod_scan_visit, &sc);
}

static void snapshot_updated(void *data, const struct cache_entry *old_e,
                             const struct cache_entry *e)
{
    (void)old_e;
    snapshot_changed(data, e);
}

static void snapshot_deleted(void *data, const struct cache_entry *e)
{
    struct sim *s = data;
    strmap_remove(&s->stuck_logged, e->uid);
    enqueue(s, 't', e->ns, label(e->obj, LABEL_TRIGGERED_BY));
}

static void pod_changed(void *data, const struct cache_entry *e)
{
    struct sim *s = data;
    enqueue(s, 'p', e->ns, e->name);
    struct scan sc = {.s = s, .ns = e->ns, .target = e->name};
    informer_foreach(s->inf[INF_TRIGGERS], trigger_scan_visit, &sc);
}

static void pod_updated(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    if (!deleting(old_e->obj) && deleting(e->obj))
        pod_terminating(data, e->ns, e->obj);
    pod_changed(data, e);
}

static void pod_deleted(void *data, const struct cache_entry *e)
{
    struct sim *s = data;
    strmap_remove(&s->skipped_restores, e->uid);
}

static void policy_changed(void *data, const struct cache_entry *e)
{
    struct sim *s = data;
    enqueue(s, 'y', e->ns, e->name);
    struct scan sc = {.s = s, .ns = e->ns};
    informer_foreach(s->inf[INF_TRIGGERS], trigger_scan_visit, &sc);
}

static void policy_updated(void *data, const struct cache_entry *old_e, const struct cache_entry *e)
{
    (void)old_e;
    policy_changed(data, e);
}

static void storage_changed(void *data, const struct cache_entry *e)
{
    struct sim *s = data;
    enqueue(s, 'c', NULL, e->name);
    struct scan policies = {.s = s, .storage = e->name};
    informer_foreach(s->inf[INF_POLICIES], policy_scan_visit, &policies);
    struct scan triggers = {.s = s};
    informer_foreach(s->inf[INF_TRIGGERS], trigger_scan_visit, &triggers);
}

static void storage_updated(void *data, const struct cache_entry *old_e,
                            const struct cache_entry *e)
{
    (void)old_e;
    storage_changed(data, e);
}

/* ---- the caches keep the object itself, without managedFields ---------------------- */

static int obj_decode(const cJSON *obj, void *data, void **ret, char **ret_err)
{
    (void)data;
    (void)ret_err;
    cJSON *copy = cJSON_Duplicate(obj, 1);
    if (!copy)
        return -ENOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "metadata"),
                                            "managedFields");
    *ret = copy;
    return 0;
}

static void obj_free(void *p)
{
    cJSON_Delete(p);
}

static const struct informer_codec obj_codec = {obj_decode, obj_free, NULL};

/* ---- main ---------------------------------------------------------------------------- */

/* Cancels what is in flight and closes every handle; uv_run() then returns. */
static void shutdown_sim(struct sim *s)
{
    if (s->closing)
        return;
    s->closing = 1;
    for (struct job *j = s->jobs, *next; j; j = next) {
        next = j->next;
        kube_request_cancel(j->req);
        free(j);
    }
    s->jobs = NULL;
    for (int i = 0; i < INF_COUNT; i++) {
        informer_free(s->inf[i]);
        s->inf[i] = NULL;
    }
    workqueue_driver_close(s->queue);
    s->queue = NULL;
    kube_client_close(s->client);
    s->client = NULL;
    uv_close((uv_handle_t *)&s->sigterm, NULL);
    uv_close((uv_handle_t *)&s->sigint, NULL);
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct sim *s = h->data;
    log_info("shutting down", "signal", signum == SIGTERM ? "SIGTERM" : "SIGINT");
    shutdown_sim(s);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: snapshot_simulator [options]\n"
            "Plays GKE's Pod Snapshot controller on a cluster with the podsnapshot.gke.io CRDs.\n"
            "\n"
            "  --kubeconfig PATH         kubeconfig (default: $KUBECONFIG, in-cluster, "
            "~/.kube/config)\n"
            "  --namespace NS            act in NS only (default: all namespaces)\n"
            "  --mode MODE               default failure mode: ok, checkpoint-failed, slow,\n"
            "                            cold-start, crash-loop, stuck-finalizer,\n"
            "                            trigger-error, hang (default ok)\n"
            "  --checkpoint-delay DUR    how long a checkpoint takes (default 2s)\n"
            "  --slow-delay DUR          how long it takes in the slow mode (default 60s)\n"
            "  --delete-delay DUR        from deletion to releasing the finalizer (default 1s)\n"
            "  --restart-interval DUR    crash-loop: time between restarts (default 2s)\n"
            "  --implicit-restore BOOL   restore new pods a policy selects from the newest\n"
            "                            matching snapshot, as GKE does (default true)\n"
            "  --accelerator-label KEY   the node label naming the GPU model; no restore\n"
            "                            onto another (default " GKE_ACCELERATOR_LABEL ")\n"
            "  --log-level LEVEL         debug, info, warn, error (default info)\n"
            "  --log-format FORMAT       text or json (default text)\n"
            "Per-pod modes: annotation " ANN_MODE " on the pod, or key <pod name>\n"
            "(or " MODE_CONFIGMAP_DEFAULT_KEY ") in ConfigMap " MODE_CONFIGMAP
            " of the pod's namespace. See docs/simulator.md.\n");
}

static int parse_duration_opt(const char *flag, const char *v, int64_t *ret)
{
    if (duration_parse_ms(v, ret) < 0) {
        fprintf(stderr, "snapshot_simulator: %s: not a duration: %s\n", flag, v);
        return -EINVAL;
    }
    return 0;
}

static int parse_options(int argc, char **argv, struct options *o, int *ret_help)
{
    enum {
        O_KUBECONFIG = 1,
        O_NS,
        O_MODE,
        O_CKPT,
        O_SLOW,
        O_DEL,
        O_RESTART,
        O_IMPLICIT,
        O_ACCEL,
        O_LEVEL,
        O_FORMAT,
        O_HELP
    };
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"namespace", required_argument, NULL, O_NS},
        {"mode", required_argument, NULL, O_MODE},
        {"checkpoint-delay", required_argument, NULL, O_CKPT},
        {"slow-delay", required_argument, NULL, O_SLOW},
        {"delete-delay", required_argument, NULL, O_DEL},
        {"restart-interval", required_argument, NULL, O_RESTART},
        {"implicit-restore", required_argument, NULL, O_IMPLICIT},
        {"accelerator-label", required_argument, NULL, O_ACCEL},
        {"log-level", required_argument, NULL, O_LEVEL},
        {"log-format", required_argument, NULL, O_FORMAT},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    *o = (struct options){
        .mode = MODE_OK,
        .checkpoint_delay_ms = 2000,
        .slow_delay_ms = 60000,
        .delete_delay_ms = 1000,
        .restart_interval_ms = 2000,
        .implicit_restore = 1,
        .accelerator_label = GKE_ACCELERATOR_LABEL,
        .log_level = LOG_LEVEL_INFO,
        .log_format = LOG_FORMAT_TEXT,
    };
    *ret_help = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case O_KUBECONFIG:
            o->kubeconfig = optarg;
            break;
        case O_NS:
            o->ns = *optarg ? optarg : NULL;
            break;
        case O_MODE:
            o->mode = mode_parse(optarg);
            if (o->mode == MODE_UNSET) {
                fprintf(stderr, "snapshot_simulator: --mode: unknown mode %s\n", optarg);
                return -EINVAL;
            }
            break;
        case O_CKPT:
            if (parse_duration_opt("--checkpoint-delay", optarg, &o->checkpoint_delay_ms) < 0)
                return -EINVAL;
            break;
        case O_SLOW:
            if (parse_duration_opt("--slow-delay", optarg, &o->slow_delay_ms) < 0)
                return -EINVAL;
            break;
        case O_DEL:
            if (parse_duration_opt("--delete-delay", optarg, &o->delete_delay_ms) < 0)
                return -EINVAL;
            break;
        case O_RESTART:
            if (parse_duration_opt("--restart-interval", optarg, &o->restart_interval_ms) < 0)
                return -EINVAL;
            /* Each restart is a status write: keep the loop sane. */
            if (o->restart_interval_ms < 100)
                o->restart_interval_ms = 100;
            break;
        case O_IMPLICIT:
            if (strcmp(optarg, "true") != 0 && strcmp(optarg, "false") != 0) {
                fprintf(stderr, "snapshot_simulator: --implicit-restore: true or false\n");
                return -EINVAL;
            }
            o->implicit_restore = strcmp(optarg, "true") == 0;
            break;
        case O_ACCEL:
            if (!*optarg) {
                fprintf(stderr, "snapshot_simulator: --accelerator-label: a label key\n");
                return -EINVAL;
            }
            o->accelerator_label = optarg;
            break;
        case O_LEVEL:
            if (log_level_parse(optarg, &o->log_level) < 0) {
                fprintf(stderr, "snapshot_simulator: --log-level: unknown level %s\n", optarg);
                return -EINVAL;
            }
            break;
        case O_FORMAT:
            if (log_format_parse(optarg, &o->log_format) < 0) {
                fprintf(stderr, "snapshot_simulator: --log-format: text or json\n");
                return -EINVAL;
            }
            break;
        case O_HELP:
            *ret_help = 1;
            return 0;
        default:
            return -EINVAL;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "snapshot_simulator: unexpected argument: %s\n", argv[optind]);
        return -EINVAL;
    }
    return 0;
}

/* Creates the client, the queue and the informers; 0 or -1 (logged). */
static int start(struct sim *s, const struct kube_config *config)
{
    struct kube_client_options co = {.qps = 100, .burst = 200};
    char *err = NULL;
    if (kube_client_new(s->loop, config, &co, &s->client, &err) < 0) {
        log_error("cannot create the client", "error", err);
        free(err);
        return -1;
    }
    if (workqueue_driver_new(s->loop, NULL, on_ready, s, &s->queue) < 0) {
        log_error("cannot create the work queue");
        return -1;
    }
    const struct {
        const struct kube_resource *res;
        int namespaced;
        const char *field_selector;
        struct informer_handlers h;
    } spec[INF_COUNT] = {
        [INF_TRIGGERS] = {.res = &res_triggers,
                          .namespaced = 1,
                          .h = {trigger_changed, trigger_updated, NULL, on_synced, s}},
        [INF_POLICIES] = {.res = &res_policies,
                          .namespaced = 1,
                          .h = {policy_changed, policy_updated, policy_changed, on_synced, s}},
        [INF_SNAPSHOTS] = {.res = &res_snapshots,
                           .namespaced = 1,
                           .h = {snapshot_changed, snapshot_updated, snapshot_deleted, on_synced,
                                 s}},
        [INF_STORAGE] = {.res = &res_storage,
                         .h = {storage_changed, storage_updated, storage_changed, on_synced, s}},
        [INF_PODS] = {.res = &KUBE_RESOURCE_PODS,
                      .namespaced = 1,
                      .h = {pod_changed, pod_updated, pod_deleted, on_synced, s}},
        [INF_CMS] = {.res = &KUBE_RESOURCE_CONFIGMAPS,
                     .namespaced = 1,
                     .field_selector = "metadata.name=" MODE_CONFIGMAP,
                     .h = {.on_synced = on_synced, .data = s}},
        [INF_NODES] = {.res = &res_nodes, .h = {.on_synced = on_synced, .data = s}},
        [INF_PVCS] = {.res = &KUBE_RESOURCE_PVCS,
                      .namespaced = 1,
                      .h = {.on_synced = on_synced, .data = s}},
    };
    for (int i = 0; i < INF_COUNT; i++) {
        struct informer_options io = {
            .resource = spec[i].res,
            .ns = spec[i].namespaced ? s->o.ns : NULL,
            .field_selector = spec[i].field_selector,
            .codec = &obj_codec,
            .handlers = spec[i].h,
        };
        if (informer_new(s->loop, s->client, &io, &s->inf[i]) < 0 ||
            informer_start(s->inf[i]) < 0) {
            log_error("cannot start an informer", "resource", spec[i].res->plural);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct sim s = {0};
    int help = 0;
    if (parse_options(argc, argv, &s.o, &help) < 0) {
        usage(stderr);
        return 2;
    }
    if (help) {
        usage(stdout);
        return 0;
    }
    log_setup(s.o.log_level, s.o.log_format, stderr);
    signal(SIGPIPE, SIG_IGN);

    struct kube_config *config = NULL;
    char *err = NULL;
    if (kube_config_load_default(s.o.kubeconfig, &config, &err) < 0) {
        log_error("cannot load the kubeconfig", "error", err);
        free(err);
        return 1;
    }
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    if (asprintf(&s.instance, "%s-%ld", host[0] ? host : "localhost", (long)getpid()) < 0) {
        log_error("out of memory");
        kube_config_free(config);
        return 1;
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    s.loop = &loop;
    strmap_init(&s.skipped_restores);
    strmap_init(&s.stuck_logged);
    uv_signal_init(&loop, &s.sigterm);
    uv_signal_init(&loop, &s.sigint);
    s.sigterm.data = s.sigint.data = &s;
    uv_signal_start(&s.sigterm, on_signal, SIGTERM);
    uv_signal_start(&s.sigint, on_signal, SIGINT);

    int rc = 0;
    if (start(&s, config) < 0) {
        rc = 1;
        shutdown_sim(&s);
    } else {
        char d1[32], d2[32], d3[32];
        duration_format_ms(s.o.checkpoint_delay_ms, d1, sizeof(d1));
        duration_format_ms(s.o.slow_delay_ms, d2, sizeof(d2));
        duration_format_ms(s.o.delete_delay_ms, d3, sizeof(d3));
        log_info("snapshot simulator starting", "namespace", s.o.ns ? s.o.ns : "(all)", "mode",
                 mode_names[s.o.mode], "checkpointDelay", d1, "slowDelay", d2, "deleteDelay", d3,
                 "implicitRestore", s.o.implicit_restore ? "true" : "false");
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0)
        log_warn("loop closed with handles open");
    strmap_free(&s.skipped_restores);
    strmap_free(&s.stuck_logged);
    free(s.instance);
    kube_config_free(config);
    return rc;
}
