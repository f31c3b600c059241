#include "workspace/pod.h"

#include <errno.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activity/url_template.h"
#include "util/json.h"
#include "util/timefmt.h"
#include "workspace/names.h"

/* ---- reading ---- */

/* A deletionTimestamp that does not parse still means "terminating". */
static int64_t deletion_ms(const cJSON *meta)
{
    if (!json_string(meta, "deletionTimestamp"))
        return 0;
    int64_t ms = json_time_ms(meta, "deletionTimestamp");
    return ms ? ms : 1;
}

/* What the pod itself says about why it ends, kept for workspace_pod_end(). */
struct pod_end_text {
    const char *disruption_reason, *disruption_message, *terminated_reason;
    const char *termination_reason, *termination_message; /* Kueue's TerminationTarget */
    const char *restore_reason, *restore_message;         /* PodRestored=False */
};

static void decode_conditions(const cJSON *status, struct workspace_pod *p, const char **ret_msg,
                              struct pod_end_text *end)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, json_member(status, "conditions"))
    {
        const char *type = json_string(c, "type");
        const char *st = json_string(c, "status");
        if (!type || !st)
            continue;
        int is_true = strcmp(st, "True") == 0;
        if (strcmp(type, "PodScheduled") == 0) {
            p->scheduled = is_true;
            p->scheduled_ms = is_true ? json_time_ms(c, "lastTransitionTime") : 0;
            const char *reason = json_string(c, "reason");
            if (strcmp(st, "False") == 0 && reason && strcmp(reason, "Unschedulable") == 0) {
                p->unschedulable = 1;
                *ret_msg = json_string(c, "message");
            }
        } else if (strcmp(type, "Ready") == 0) {
            p->ready = is_true;
            p->ready_ms = is_true ? json_time_ms(c, "lastTransitionTime") : 0;
        } else if (strcmp(type, POD_RESTORED_CONDITION) == 0) {
            p->restored = is_true;
            p->restored_ms = is_true ? json_time_ms(c, "lastTransitionTime") : 0;
            if (strcmp(st, "False") == 0) {
                p->restore_failed = 1;
                end->restore_reason = json_string(c, "reason");
                end->restore_message = json_string(c, "message");
            }
        } else if (strcmp(type, "DisruptionTarget") == 0 && is_true) {
            end->disruption_reason = json_string(c, "reason");
            end->disruption_message = json_string(c, "message");
            p->disruption_ms = json_time_ms(c, "lastTransitionTime");
        } else if (strcmp(type, "TerminationTarget") == 0 && is_true) {
            end->termination_reason = json_string(c, "reason");
            end->termination_message = json_string(c, "message");
            if (!p->disruption_ms)
                p->disruption_ms = json_time_ms(c, "lastTransitionTime");
        }
    }
    const cJSON *cs;
    cJSON_ArrayForEach(cs, json_member(status, "containerStatuses"))
    {
        int64_t n = json_int(cs, "restartCount");
        if (n > p->restart_count)
            p->restart_count = (int)(n > 1000000 ? 1000000 : n);
        int64_t started =
            json_time_ms(json_member(json_member(cs, "state"), "running"), "startedAt");
        if (started > p->started_ms)
            p->started_ms = started;
        const char *why = json_string(json_member(json_member(cs, "state"), "waiting"), "reason");
        if (why && strcmp(why, "CrashLoopBackOff") == 0)
            p->crash_looping = 1;
        /* The container's end as it is now, else the last one (an
         * OOM-killed container restarts under restartPolicy OnFailure). */
        const char *term =
            json_string(json_member(json_member(cs, "state"), "terminated"), "reason");
        if (!term)
            term = json_string(json_member(json_member(cs, "lastState"), "terminated"), "reason");
        if (term && (!end->terminated_reason || strcmp(term, "OOMKilled") == 0))
            end->terminated_reason = term;
    }
}

/* A pod restored from a checkpoint image says its restore through its
 * container: running, it was restored (the runtime restores, or fails to
 * create, a container from such an image); waiting on an image it cannot
 * pull or a container the runtime cannot create, it never will be. An
 * ErrImagePull alone is retried by the kubelet: the backoff after it is
 * the verdict. */
static void decode_image_restore(const cJSON *status, struct workspace_pod *p,
                                 struct pod_end_text *end)
{
    static const char *const stuck[] = {"ImagePullBackOff",           "CreateContainerError",
                                        "CreateContainerConfigError", "RunContainerError",
                                        "InvalidImageName",           "ErrImageNeverPull"};
    const cJSON *cs;
    cJSON_ArrayForEach(cs, json_member(status, "containerStatuses"))
    {
        const char *name = json_string(cs, "name");
        if (!name || strcmp(name, WORKSPACE_CONTAINER) != 0)
            continue;
        const cJSON *running = json_member(json_member(cs, "state"), "running");
        if (running) {
            p->restored = 1;
            p->restored_ms = json_time_ms(running, "startedAt");
        }
        const cJSON *waiting = json_member(json_member(cs, "state"), "waiting");
        const char *why = json_string(waiting, "reason");
        for (size_t i = 0; why && i < sizeof(stuck) / sizeof(stuck[0]); i++)
            if (strcmp(why, stuck[i]) == 0) {
                p->restore_stuck = 1;
                p->restore_failed = 1;
                end->restore_reason = why;
                end->restore_message = json_string(waiting, "message");
            }
    }
}

/* p->restore_failure from PodRestored=False: "<reason>: <message>", or
 * either alone. Returns 0 or -ENOMEM. */
static int decode_restore_failure(const struct pod_end_text *end, struct workspace_pod *p)
{
    if (!p->restore_failed)
        return 0;
    const char *r = end->restore_reason && end->restore_reason[0] ? end->restore_reason : NULL;
    const char *m = end->restore_message && end->restore_message[0] ? end->restore_message : NULL;
    if (!r && !m)
        return 0;
    size_t n = (r ? strlen(r) : 0) + (m ? strlen(m) : 0) + 3;
    if (n > 1024)
        n = 1024; /* a condition's message is the backend's: one line of it is enough */
    p->restore_failure = malloc(n);
    if (!p->restore_failure)
        return -ENOMEM;
    snprintf(p->restore_failure, n, "%s%s%s", r ? r : "", r && m ? ": " : "", m ? m : "");
    workspace_message_one_line(p->restore_failure);
    return 0;
}

/* Extended resources are named <domain>/<name> with a domain outside
 * kubernetes.io (docs: "Extended resources"). */
static int is_extended_resource(const char *name)
{
    static const char native[] = "kubernetes.io";
    const char *slash = strchr(name, '/');
    if (!slash || slash == name)
        return 0;
    size_t len = (size_t)(slash - name), n = sizeof(native) - 1;
    if (len == n && strncmp(name, native, n) == 0)
        return 0;
    return !(len > n && name[len - n - 1] == '.' && strncmp(name + len - n, native, n) == 0);
}

/* An extended resource is a whole number: any digit but 0 makes it ask for
 * some. */
static int quantity_nonzero(const cJSON *q)
{
    if (cJSON_IsNumber(q))
        return q->valuedouble > 0;
    if (!cJSON_IsString(q))
        return 0;
    for (const char *c = q->valuestring; *c >= '0' && *c <= '9'; c++)
        if (*c != '0')
            return 1;
    return 0;
}

static int decode_extended(const cJSON *spec, struct workspace_pod *p)
{
    size_t n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, json_member(spec, "containers"))
    {
        const cJSON *res = json_member(c, "resources");
        const cJSON *lists[] = {json_member(res, "limits"), json_member(res, "requests")};
        for (size_t l = 0; l < 2; l++) {
            if (!cJSON_IsObject(lists[l]))
                continue;
            const cJSON *q;
            cJSON_ArrayForEach(q, lists[l])
            {
                if (n == POD_MAX_EXTENDED || !q->string || !is_extended_resource(q->string) ||
                    !quantity_nonzero(q) || workspace_pod_requests(p, q->string))
                    continue;
                if (!(p->extended[n] = strdup(q->string)))
                    return -ENOMEM;
                n++;
            }
        }
    }
    return 0;
}

/* The workspace container's preStop sleep hook, in seconds (0: none). */
static int64_t prestop_sleep_seconds(const cJSON *spec)
{
    const cJSON *ct;
    cJSON_ArrayForEach(ct, json_member(spec, "containers"))
    {
        const char *name = json_string(ct, "name");
        if (!name || strcmp(name, WORKSPACE_CONTAINER) != 0)
            continue;
        const cJSON *v = json_member(
            json_member(json_member(json_member(ct, "lifecycle"), "preStop"), "sleep"), "seconds");
        return cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble <= 1e9
                   ? (int64_t)v->valuedouble
                   : 0;
    }
    return 0;
}

int workspace_pod_requests(const struct workspace_pod *p, const char *resource)
{
    for (size_t i = 0; resource && i < POD_MAX_EXTENDED && p->extended[i]; i++)
        if (strcmp(p->extended[i], resource) == 0)
            return 1;
    return 0;
}

void *workspace_pod_decode(const cJSON *obj, void *data)
{
    (void)data;
    struct workspace_pod *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    const cJSON *meta = json_member(obj, "metadata");
    const cJSON *spec = json_member(obj, "spec");
    const cJSON *status = json_member(obj, "status");
    const char *unschedulable_msg = NULL;
    struct pod_end_text end = {0};
    p->created_ms = json_time_ms(meta, "creationTimestamp");
    p->deletion_ms = deletion_ms(meta);
    const cJSON *grace = json_member(meta, "deletionGracePeriodSeconds");
    if (p->deletion_ms && cJSON_IsNumber(grace) && grace->valuedouble >= 0 &&
        grace->valuedouble <= 1e9) {
        p->deletion_grace_known = 1;
        p->deletion_grace_s = (int64_t)grace->valuedouble;
    }
    p->prestop_sleep_s = prestop_sleep_seconds(spec);
    const char *from = json_string(json_member(meta, "annotations"), FROM_CHECKPOINT_ANNOTATION);
    p->restore_from_checkpoint = from && strcmp(from, "true") == 0;
    const char *fallback =
        json_string(json_member(meta, "annotations"), CAPACITY_FALLBACK_ANNOTATION);
    p->capacity_fallback = fallback && strcmp(fallback, "true") == 0;
    if (json_dup_optional(
            json_string(json_member(meta, "annotations"), RESTORE_SNAPSHOT_ANNOTATION),
            &p->snapshot) < 0) {
        free(p);
        return NULL;
    }
    if (p->snapshot && !p->snapshot[0]) { /* the bypass: no snapshot named */
        free(p->snapshot);
        p->snapshot = NULL;
    }
    const char *from_image =
        json_string(json_member(meta, "annotations"), RESTORED_FROM_ANNOTATION);
    int image_restore = !p->snapshot && from_image && from_image[0];
    if (image_restore && !(p->snapshot = strdup(from_image))) {
        free(p);
        return NULL;
    }
    decode_conditions(status, p, &unschedulable_msg, &end);
    if (image_restore)
        decode_image_restore(status, p, &end);
    if (json_dup_optional(json_string(meta, "namespace"), &p->ns) < 0 ||
        json_dup_optional(json_string(meta, "name"), &p->name) < 0 ||
        json_dup_optional(json_string(meta, "uid"), &p->uid) < 0 ||
        json_dup_optional(json_string(json_member(meta, "labels"), WORKSPACE_LABEL),
                          &p->workspace) < 0 ||
        json_dup_optional(json_string(json_member(meta, "labels"), SNAPSHOT_GROUP_LABEL),
                          &p->group) < 0 ||
        json_dup_optional(json_string(spec, "nodeName"), &p->node_name) < 0 ||
        json_dup_optional(json_string(status, "podIP"), &p->pod_ip) < 0 ||
        json_dup_optional(json_string(status, "phase"), &p->phase) < 0 ||
        json_dup_optional(unschedulable_msg, &p->unschedulable_message) < 0 ||
        json_dup_optional(end.disruption_reason, &p->disruption_reason) < 0 ||
        json_dup_optional(end.disruption_message, &p->disruption_message) < 0 ||
        json_dup_optional(json_string(status, "reason"), &p->status_reason) < 0 ||
        json_dup_optional(json_string(status, "message"), &p->status_message) < 0 ||
        json_dup_optional(end.terminated_reason, &p->terminated_reason) < 0 ||
        json_dup_optional(end.termination_reason, &p->termination_reason) < 0 ||
        json_dup_optional(end.termination_message, &p->termination_message) < 0 ||
        json_dup_optional(json_string(json_member(meta, "labels"), QUEUE_NAME_LABEL), &p->queue) <
            0 ||
        json_dup_optional(json_string(json_member(meta, "labels"), QUEUE_PRIORITY_LABEL),
                          &p->priority_class) < 0 ||
        decode_extended(spec, p) < 0 || decode_restore_failure(&end, p) < 0) {
        workspace_pod_free(p);
        return NULL;
    }
    const cJSON *gate;
    cJSON_ArrayForEach(gate, json_member(spec, "schedulingGates"))
    {
        const char *g = json_string(gate, "name");
        if (g && strcmp(g, QUEUE_ADMISSION_GATE) == 0)
            p->queue_gated = 1;
    }
    return p;
}

void workspace_pod_free(void *pod)
{
    struct workspace_pod *p = pod;
    if (!p)
        return;
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p->workspace);
    free(p->group);
    free(p->node_name);
    free(p->pod_ip);
    free(p->snapshot);
    free(p->restore_failure);
    free(p->phase);
    free(p->unschedulable_message);
    free(p->disruption_reason);
    free(p->disruption_message);
    free(p->status_reason);
    free(p->status_message);
    free(p->terminated_reason);
    free(p->termination_reason);
    free(p->termination_message);
    free(p->queue);
    free(p->priority_class);
    for (size_t i = 0; i < POD_MAX_EXTENDED; i++)
        free(p->extended[i]);
    free(p);
}

struct workspace_pod *workspace_pod_copy_end(const struct workspace_pod *p)
{
    struct workspace_pod *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->created_ms = p->created_ms;
    c->deletion_ms = p->deletion_ms;
    c->deletion_grace_known = p->deletion_grace_known;
    c->deletion_grace_s = p->deletion_grace_s;
    c->prestop_sleep_s = p->prestop_sleep_s;
    c->scheduled = p->scheduled;
    c->disruption_ms = p->disruption_ms;
    c->capacity_fallback = p->capacity_fallback;
    c->restore_from_checkpoint = p->restore_from_checkpoint;
    if (json_dup_optional(p->ns, &c->ns) < 0 || json_dup_optional(p->name, &c->name) < 0 ||
        json_dup_optional(p->uid, &c->uid) < 0 ||
        json_dup_optional(p->workspace, &c->workspace) < 0 ||
        json_dup_optional(p->node_name, &c->node_name) < 0 ||
        json_dup_optional(p->phase, &c->phase) < 0 ||
        json_dup_optional(p->snapshot, &c->snapshot) < 0 ||
        json_dup_optional(p->disruption_reason, &c->disruption_reason) < 0 ||
        json_dup_optional(p->disruption_message, &c->disruption_message) < 0 ||
        json_dup_optional(p->status_reason, &c->status_reason) < 0 ||
        json_dup_optional(p->status_message, &c->status_message) < 0 ||
        json_dup_optional(p->terminated_reason, &c->terminated_reason) < 0 ||
        json_dup_optional(p->termination_reason, &c->termination_reason) < 0 ||
        json_dup_optional(p->termination_message, &c->termination_message) < 0) {
        workspace_pod_free(c);
        return NULL;
    }
    return c;
}

static int is(const char *a, const char *b)
{
    return a && strcmp(a, b) == 0;
}

const char *workspace_pod_queue_eviction(const struct workspace_pod *p)
{
    const char *k = p ? p->termination_reason : NULL;
    if (!k || strncmp(k, "WorkloadEvictedDueTo", 20) != 0)
        return NULL;
    return strcmp(k + 20, "Preempted") == 0 ? "Preempted" : "Evicted";
}

/* The kind for a DisruptionTarget reason, Kueue's TerminationTarget reason
 * or a status.reason; NULL: none that says more than the rest. */
static const char *end_kind(const char *disruption, const char *kueue, const char *status_reason)
{
    /* Kueue evicted its Workload: preempted (for a workload of higher
     * priority, or its quota reclaimed), or evicted for another reason. */
    if (!disruption && kueue && strncmp(kueue, "WorkloadEvictedDueTo", 20) == 0)
        return strcmp(kueue + 20, "Preempted") == 0 ? "Preempted" : "Evicted";
    if (is(disruption, "EvictionByEvictionAPI") || is(status_reason, "Evicted"))
        return "Evicted";
    if (is(disruption, "PreemptionByScheduler") || is(disruption, "PreemptionByKubeScheduler") ||
        is(status_reason, "Preempted") || is(status_reason, "Preempting"))
        return "Preempted";
    if (is(disruption, "DeletionByTaintManager"))
        return "NodeTainted";
    if (is(disruption, "DeletionByPodGC") || is(status_reason, "NodeLost"))
        return "NodeLost";
    if (is(disruption, "TerminationByKubelet") || is(status_reason, "Shutdown") ||
        is(status_reason, "Terminated"))
        return "TerminatedByKubelet";
    return disruption ? "Evicted" : NULL;
}

static void end_append(char *buf, const char *label, const char *a, const char *b)
{
    size_t used = strlen(buf);
    if (!a || !a[0] || used >= POD_END_MESSAGE_SIZE - 1)
        return;
    snprintf(buf + used, POD_END_MESSAGE_SIZE - used, "%s%s %s%s%s", used ? "; " : "", label, a,
             b && b[0] ? ": " : "", b && b[0] ? b : "");
}

void workspace_pod_end(const struct workspace_pod *p, int node_absent, struct pod_end *ret)
{
    *ret = (struct pod_end){.at_ms = p->disruption_ms};
    int stopped = is(p->phase, "Failed") || is(p->phase, "Succeeded");
    const char *kind = end_kind(p->disruption_reason, p->termination_reason, p->status_reason);
    if (!kind && is(p->terminated_reason, "OOMKilled") && stopped)
        kind = "OOMKilled";
    if (!kind && node_absent)
        kind = "NodeLost";
    if (!kind)
        kind = stopped ? "Stopped" : "Deleted";
    snprintf(ret->kind, sizeof(ret->kind), "%s", kind);
    end_append(ret->message, "DisruptionTarget", p->disruption_reason, p->disruption_message);
    end_append(ret->message, "TerminationTarget (Kueue)", p->termination_reason,
               p->termination_message);
    end_append(ret->message, "status.reason", p->status_reason, p->status_message);
    if (stopped)
        end_append(ret->message, "phase", p->phase, NULL);
    end_append(ret->message, "container terminated:", p->terminated_reason, NULL);
    if (node_absent && p->node_name)
        end_append(ret->message, "node", p->node_name, "no longer in the cluster");
}

/* s copied to *at, which advances; NULL stays NULL. */
static char *pack(char **at, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *copy = memcpy(*at, s, n);
    *at += n;
    return copy;
}

void *workspace_pvc_decode(const cJSON *obj, void *data)
{
    (void)data;
    const cJSON *meta = json_member(obj, "metadata");
    const char *ns = json_string(meta, "namespace"), *name = json_string(meta, "name"),
               *uid = json_string(meta, "uid"),
               *phase = json_string(json_member(obj, "status"), "phase");
    /* One block, the strings after the struct: a cache holds a claim per
     * workspace, and four allocations more would cost as much again. */
    size_t size = sizeof(struct workspace_pvc);
    const char *const strs[] = {ns, name, uid, phase};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        size += strs[i] ? strlen(strs[i]) + 1 : 0;
    struct workspace_pvc *p = calloc(1, size);
    if (!p)
        return NULL;
    char *at = (char *)(p + 1);
    p->ns = pack(&at, ns);
    p->name = pack(&at, name);
    p->uid = pack(&at, uid);
    p->phase = pack(&at, phase);
    p->deletion_ms = deletion_ms(meta);
    p->created_ms = json_time_ms(meta, "creationTimestamp");
    return p;
}

void workspace_pvc_free(void *pvc)
{
    free(pvc); /* its strings live in the same block */
}

/* ---- names ---- */

char *workspace_home_claim_name(const struct workspace *ws)
{
    char name[NAMES_SIZE];
    return names_home_claim(ws->name, name) < 0 ? NULL : strdup(name);
}

char *workspace_pod_name(const struct workspace *ws, int64_t pod_generation)
{
    char name[NAMES_SIZE];
    return names_pod(ws->name, pod_generation, name) < 0 ? NULL : strdup(name);
}

/* ---- building ---- */

/* The first allocation failure sticks; builders check once at the end. */
struct writer {
    int oom;
};

static cJSON *add(struct writer *w, cJSON *parent, const char *key, cJSON *item)
{
    if (!item || !parent ||
        !(key ? cJSON_AddItemToObject(parent, key, item) : cJSON_AddItemToArray(parent, item))) {
        cJSON_Delete(item);
        w->oom = 1;
        return NULL;
    }
    return item;
}

static cJSON *add_obj(struct writer *w, cJSON *parent, const char *key)
{
    return add(w, parent, key, cJSON_CreateObject());
}

/* parent[key], made an empty object when it has none. */
static cJSON *add_obj_once(struct writer *w, cJSON *parent, const char *key)
{
    cJSON *o = parent ? cJSON_GetObjectItemCaseSensitive(parent, key) : NULL;
    return o ? o : add_obj(w, parent, key);
}

static cJSON *add_arr(struct writer *w, cJSON *parent, const char *key)
{
    return add(w, parent, key, cJSON_CreateArray());
}

static void add_str(struct writer *w, cJSON *parent, const char *key, const char *v)
{
    add(w, parent, key, cJSON_CreateString(v ? v : ""));
}

static void add_num(struct writer *w, cJSON *parent, const char *key, double v)
{
    add(w, parent, key, cJSON_CreateNumber(v));
}

static void add_bool(struct writer *w, cJSON *parent, const char *key, int v)
{
    add(w, parent, key, cJSON_CreateBool(v));
}

/* Replaces key in an object, or adds it. */
static void set_str(struct writer *w, cJSON *obj, const char *key, const char *v)
{
    cJSON *item = cJSON_CreateString(v);
    if (!item || !obj) {
        cJSON_Delete(item);
        w->oom = 1;
        return;
    }
    if (cJSON_GetObjectItemCaseSensitive(obj, key)) {
        if (!cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item)) {
            cJSON_Delete(item);
            w->oom = 1;
        }
        return;
    }
    add(w, obj, key, item);
}

/* The node's GPU driver, "major.minor.rev", as GPU Feature Discovery labels
 * it: one term per part. A version of another shape pins nothing (it was
 * recorded from these labels, so it has this one). */
static void pin_gpu_driver(struct writer *w, cJSON *sel, const char *version)
{
    static const char *const labels[] = {GPU_DRIVER_MAJOR_LABEL, GPU_DRIVER_MINOR_LABEL,
                                         GPU_DRIVER_REV_LABEL};
    char parts[3][24];
    if (sscanf(version, "%23[^.].%23[^.].%23s", parts[0], parts[1], parts[2]) != 3)
        return;
    for (size_t i = 0; i < 3; i++)
        set_str(w, sel, labels[i], parts[i]);
}

static void build_metadata(struct writer *w, cJSON *obj, const struct workspace *ws,
                           const char *name, const struct pod_build *b)
{
    cJSON *meta = add_obj(w, obj, "metadata");
    add_str(w, meta, "name", name);
    add_str(w, meta, "namespace", ws->ns);
    cJSON *labels = add_obj(w, meta, "labels");
    add_str(w, labels, MANAGED_BY_LABEL, MANAGED_BY_VALUE);
    add_str(w, labels, WORKSPACE_LABEL, ws->name);
    if (b && b->group)
        add_str(w, labels, SNAPSHOT_GROUP_LABEL, b->group);
    if (b) {
        cJSON *ann = add_obj(w, meta, "annotations");
        add_str(w, ann, FROM_CHECKPOINT_ANNOTATION, b->from_checkpoint ? "true" : "false");
        /* Empty: GKE attempts no restore at all, not even of a snapshot a
         * policy's selector would pick (gke-labs/pod-migration's
         * pod_gate_controller.go, "the explicit empty-string bypass"). */
        add_str(w, ann, RESTORE_SNAPSHOT_ANNOTATION, b->snapshot && !b->image ? b->snapshot : "");
        if (b->snapshot && b->image)
            add_str(w, ann, RESTORED_FROM_ANNOTATION, b->snapshot);
        if (b->capacity_fallback)
            add_str(w, ann, CAPACITY_FALLBACK_ANNOTATION, "true");
    }
    cJSON *refs = add_arr(w, meta, "ownerReferences");
    cJSON *ref = add_obj(w, refs, NULL);
    add_str(w, ref, "apiVersion", WORKSPACE_API_VERSION);
    add_str(w, ref, "kind", WORKSPACE_KIND);
    add_str(w, ref, "name", ws->name);
    add_str(w, ref, "uid", ws->uid);
    add_bool(w, ref, "controller", 1);
    add_bool(w, ref, "blockOwnerDeletion", 1);
}

/* The class's requests and limits, with the accelerator in both: extended
 * resources must be requested and limited alike. */
static void build_resources(struct writer *w, cJSON *container, const struct workspace_class *c)
{
    cJSON *res = c->resources ? cJSON_Duplicate(c->resources, 1) : cJSON_CreateObject();
    res = add(w, container, "resources", res);
    if (!res || !c->has_accelerator)
        return;
    char count[16];
    snprintf(count, sizeof(count), "%d", c->accelerator_count);
    static const char *const parts[] = {"requests", "limits"};
    for (size_t i = 0; i < 2; i++) {
        cJSON *part = cJSON_GetObjectItemCaseSensitive(res, parts[i]);
        if (!cJSON_IsObject(part)) {
            cJSON_DeleteItemFromObjectCaseSensitive(res, parts[i]);
            part = add_obj(w, res, parts[i]);
        }
        set_str(w, part, c->accelerator_resource, count);
    }
}

static void add_env(struct writer *w, cJSON *env, const char *name, const char *value)
{
    cJSON *e = add_obj(w, env, NULL);
    add_str(w, e, "name", name);
    add_str(w, e, "value", value);
}

int workspace_token_secret_name(const struct workspace *ws, const struct workspace_class *c,
                                char **ret_name)
{
    if (c->activity.application != ACTIVITY_APP_JUPYTER || !c->activity.token_secret_name)
        return -ENOENT;
    struct template_vars vars = {.ns = ws->ns, .workspace = ws->name, .port = c->port};
    return url_template_expand(c->activity.token_secret_name, &vars, ret_name, NULL);
}

static int workspace_sets_env(const struct workspace *ws, const char *name)
{
    for (size_t i = 0; i < ws->n_env; i++)
        if (strcmp(ws->env[i].name, name) == 0)
            return 1;
    return 0;
}

static int class_sets_env(const struct workspace_class *c, const char *name)
{
    for (size_t i = 0; i < c->n_env; i++)
        if (strcmp(c->env[i].name, name) == 0)
            return 1;
    return 0;
}

/* The Jupyter token the controller probes with is the one the server runs
 * with: JUPYTER_TOKEN (Jupyter Server's token when it is set, jupyter_server
 * serverapp.py) from the same Secret, unless the workspace sets the variable
 * itself. */
static void add_token_env(struct writer *w, cJSON *env, const struct workspace *ws,
                          const struct workspace_class *c)
{
    if (workspace_sets_env(ws, TOKEN_ENV) || class_sets_env(c, TOKEN_ENV))
        return;
    char *name = NULL;
    int r = workspace_token_secret_name(ws, c, &name);
    if (r == -ENOMEM)
        w->oom = 1;
    if (r < 0)
        return; /* the probe reports the bad name */
    cJSON *e = add_obj(w, env, NULL);
    add_str(w, e, "name", TOKEN_ENV);
    cJSON *ref = add_obj(w, add_obj(w, e, "valueFrom"), "secretKeyRef");
    add_str(w, ref, "name", name);
    add_str(w, ref, "key", c->activity.token_secret_key ? c->activity.token_secret_key : "token");
    free(name);
}

static void build_container(struct writer *w, cJSON *spec, const struct workspace *ws,
                            const struct workspace_class *c, int from_checkpoint,
                            const char *restore_image)
{
    cJSON *containers = add_arr(w, spec, "containers");
    cJSON *ct = add_obj(w, containers, NULL);
    add_str(w, ct, "name", WORKSPACE_CONTAINER);
    add_str(w, ct, "image",
            restore_image ? restore_image
            : ws->image   ? ws->image
                          : c->default_image);
    cJSON *ports = add_arr(w, ct, "ports");
    cJSON *port = add_obj(w, ports, NULL);
    add_str(w, port, "name", "http");
    add_num(w, port, "containerPort", c->port);
    add_str(w, port, "protocol", "TCP");
    build_resources(w, ct, c);

    cJSON *env = add_arr(w, ct, "env");
    /* The class's variables first; one the Workspace sets too is the
     * Workspace's (its value, in its place). */
    for (size_t i = 0; i < c->n_env; i++)
        if (!workspace_sets_env(ws, c->env[i].name))
            add_env(w, env, c->env[i].name, c->env[i].value);
    for (size_t i = 0; i < ws->n_env; i++)
        add_env(w, env, ws->env[i].name, ws->env[i].value);
    add_env(w, env, WORKSPACE_ENV, ws->name);
    if (from_checkpoint && c->checkpoint_env && c->checkpoint_path)
        add_env(w, env, c->checkpoint_env, c->checkpoint_path);
    add_token_env(w, env, ws, c);

    cJSON *mounts = add_arr(w, ct, "volumeMounts");
    cJSON *mount = add_obj(w, mounts, NULL);
    add_str(w, mount, "name", HOME_VOLUME);
    add_str(w, mount, "mountPath", c->home_mount_path);

    /* Kueue deletes a pod it evicts with the pod's own grace period: the
     * kubelet runs this hook first, and the process keeps running through
     * it, so that its snapshot can be taken (docs/kueue.md). */
    int64_t hold = workspace_class_eviction_hold_seconds(c);
    if (hold > 0)
        add_num(w, add_obj(w, add_obj(w, add_obj(w, ct, "lifecycle"), "preStop"), "sleep"),
                "seconds", (double)hold);
}

int workspace_snapshot_group(const struct workspace *ws, int64_t pod_generation,
                             char out[SNAPSHOT_GROUP_SIZE])
{
    char gen[24];
    if (!ws->uid || !ws->uid[0])
        return -EINVAL;
    int n = snprintf(gen, sizeof(gen), "-%lld", (long long)pod_generation);
    int room = SNAPSHOT_GROUP_SIZE - 1 - n;
    /* A uid is 36 characters [0-9a-f-]; a longer one is cut. */
    snprintf(out, SNAPSHOT_GROUP_SIZE, "%.*s%s", room, ws->uid, gen);
    return 0;
}

cJSON *workspace_pod_build(const struct workspace *ws, const struct workspace_class *c,
                           const char *pod_name, int from_checkpoint)
{
    return workspace_pod_build_restore(ws, c, pod_name, from_checkpoint, NULL);
}

cJSON *workspace_pod_build_restore(const struct workspace *ws, const struct workspace_class *c,
                                   const char *pod_name, int from_checkpoint, const char *snapshot)
{
    struct pod_build b = {
        .name = pod_name, .from_checkpoint = from_checkpoint, .snapshot = snapshot};
    return workspace_pod_build_with(ws, c, &b);
}

static cJSON *add_match_expression(struct writer *w, cJSON *term, const char *key)
{
    cJSON *expr = add_obj(w, add_arr(w, term, "matchExpressions"), NULL);
    add_str(w, expr, "key", key);
    add_str(w, expr, "operator", "In");
    return add_arr(w, expr, "values");
}

/* A capacity fallback: any product the class allows, its own preferred. */
static void build_fallback_affinity(struct writer *w, cJSON *spec, const struct workspace_class *c)
{
    cJSON *na = add_obj(w, add_obj(w, spec, "affinity"), "nodeAffinity");
    cJSON *req = add_obj(w, na, "requiredDuringSchedulingIgnoredDuringExecution");
    cJSON *term = add_obj(w, add_arr(w, req, "nodeSelectorTerms"), NULL);
    cJSON *values = add_match_expression(w, term, c->product_label);
    add_str(w, values, NULL, c->product);
    for (size_t i = 0; i < c->n_alternative_products; i++)
        add_str(w, values, NULL, c->alternative_products[i]);
    cJSON *pref =
        add_obj(w, add_arr(w, na, "preferredDuringSchedulingIgnoredDuringExecution"), NULL);
    add_num(w, pref, "weight", 100);
    add_str(w, add_match_expression(w, add_obj(w, pref, "preference"), c->product_label), NULL,
            c->product);
}

cJSON *workspace_pod_build_with(const struct workspace *ws, const struct workspace_class *c,
                                const struct pod_build *b)
{
    if (!ws || !c || !b || !b->name)
        return NULL;
    const char *pod_name = b->name;
    int from_checkpoint = b->from_checkpoint;
    int fallback = b->capacity_fallback && c->has_accelerator;
    struct writer w = {0};
    char *claim = workspace_home_claim_name(ws);
    cJSON *pod = cJSON_CreateObject();
    if (!claim || !pod) {
        free(claim);
        cJSON_Delete(pod);
        return NULL;
    }
    add_str(&w, pod, "apiVersion", "v1");
    add_str(&w, pod, "kind", "Pod");
    build_metadata(&w, pod, ws, pod_name, b);
    /* Through Kueue: its webhook gates the pod until the queue admits it. */
    const char *queue = ws->local_queue ? ws->local_queue : c->queue.local_queue;
    if (queue) {
        cJSON *labels = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "labels");
        add_str(&w, labels, QUEUE_NAME_LABEL, queue);
        const char *priority = b->prewarm && c->queue.prewarm_priority_class
                                   ? c->queue.prewarm_priority_class
                                   : c->queue.priority_class;
        if (priority)
            add_str(&w, labels, QUEUE_PRIORITY_LABEL, priority);
    }

    cJSON *spec = add_obj(&w, pod, "spec");
    const char *restore_image = b->snapshot ? b->image : NULL;
    build_container(&w, spec, ws, c, from_checkpoint, restore_image);
    if (restore_image && b->pull_secret)
        add_str(&w, add_obj(&w, add_arr(&w, spec, "imagePullSecrets"), NULL), "name",
                b->pull_secret);

    cJSON *volumes = add_arr(&w, spec, "volumes");
    cJSON *vol = add_obj(&w, volumes, NULL);
    add_str(&w, vol, "name", HOME_VOLUME);
    cJSON *pvc = add_obj(&w, vol, "persistentVolumeClaim");
    add_str(&w, pvc, "claimName", claim);

    if (c->n_node_selector || (c->has_accelerator && !fallback)) {
        cJSON *sel = add_obj(&w, spec, "nodeSelector");
        for (size_t i = 0; i < c->n_node_selector; i++)
            /* A fallback's product is chosen by its affinity alone. */
            if (!fallback || strcmp(c->node_selector[i].key, c->product_label) != 0)
                set_str(&w, sel, c->node_selector[i].key, c->node_selector[i].value);
        if (c->has_accelerator && !fallback)
            set_str(&w, sel, c->product_label, b->product ? b->product : c->product);
    }
    /* A restore lands only where GKE can restore it: the snapshot's
     * machine type, its node pool preferred (the same node version, unless
     * the pool is being upgraded). */
    if (b->snapshot && b->machine_type && !fallback)
        set_str(&w, add_obj_once(&w, spec, "nodeSelector"), MACHINE_TYPE_LABEL, b->machine_type);
    if (b->snapshot && b->gpu_driver && !fallback)
        pin_gpu_driver(&w, add_obj_once(&w, spec, "nodeSelector"), b->gpu_driver);
    if (b->snapshot && b->node_pool && !fallback) {
        cJSON *na = add_obj(&w, add_obj(&w, spec, "affinity"), "nodeAffinity");
        cJSON *pref =
            add_obj(&w, add_arr(&w, na, "preferredDuringSchedulingIgnoredDuringExecution"), NULL);
        add_num(&w, pref, "weight", 100);
        add_str(&w, add_match_expression(&w, add_obj(&w, pref, "preference"), NODE_POOL_LABEL),
                NULL, b->node_pool);
    }
    /* Only onto nodes that can take and restore the backend's snapshots. */
    const struct snapshot_backend_traits *t = snapshot_backend_traits(c->snapshot.backend);
    if (t && t->node_label)
        set_str(&w, add_obj_once(&w, spec, "nodeSelector"), t->node_label, "true");
    if (fallback)
        build_fallback_affinity(&w, spec, c);
    if (c->tolerations)
        add(&w, spec, "tolerations", cJSON_Duplicate(c->tolerations, 1));
    if (c->runtime_class_name)
        add_str(&w, spec, "runtimeClassName", c->runtime_class_name);
    /* The hook's sleep comes out of the grace period: the application
     * still gets its own time to write its checkpoint after it. */
    add_num(&w, spec, "terminationGracePeriodSeconds",
            (double)(c->pause_grace_seconds + workspace_class_eviction_hold_seconds(c)));
    /* GKE's postCheckpoint: stop ends the container with exit 0 (the
     * kubelet then reports the pod Succeeded, gke-labs/pod-migration's
     * pod_status_webhook.go): under OnFailure that is final, so nothing of
     * the checkpointed session runs again on the pod, while a crash is still
     * restarted in place (docs/snapshots.md, "The pod's restart policy"). */
    add_str(&w, spec, "restartPolicy", "OnFailure");
    /* The notebook runs the user's code: it gets no API credentials and no
     * environment full of other services' addresses. */
    add_bool(&w, spec, "automountServiceAccountToken", 0);
    add_bool(&w, spec, "enableServiceLinks", 0);

    free(claim);
    if (w.oom) {
        cJSON_Delete(pod);
        return NULL;
    }
    return pod;
}

cJSON *workspace_pvc_build(const struct workspace *ws, const struct workspace_class *c)
{
    if (!ws || !c)
        return NULL;
    struct writer w = {0};
    char *claim = workspace_home_claim_name(ws);
    cJSON *pvc = cJSON_CreateObject();
    if (!claim || !pvc) {
        free(claim);
        cJSON_Delete(pvc);
        return NULL;
    }
    add_str(&w, pvc, "apiVersion", "v1");
    add_str(&w, pvc, "kind", "PersistentVolumeClaim");
    build_metadata(&w, pvc, ws, claim, NULL);
    cJSON *spec = add_obj(&w, pvc, "spec");
    cJSON *modes = add_arr(&w, spec, "accessModes");
    add_str(&w, modes, NULL, "ReadWriteOnce");
    cJSON *res = add_obj(&w, spec, "resources");
    cJSON *req = add_obj(&w, res, "requests");
    add_str(&w, req, "storage", ws->home_size ? ws->home_size : c->home_size);
    if (c->storage_class_name)
        add_str(&w, spec, "storageClassName", c->storage_class_name);
    free(claim);
    if (w.oom) {
        cJSON_Delete(pvc);
        return NULL;
    }
    return pvc;
}

/* with_product: the form that covered the product ("accelerator=r/n/p"). */
static int spec_hash(const struct workspace *ws, const struct workspace_class *c, int with_product,
                     const char *product, char out[POD_SPEC_HASH_SIZE])
{
    char *resources = c->resources ? cJSON_PrintUnformatted(c->resources) : NULL;
    char *claim = workspace_home_claim_name(ws);
    char *text = NULL;
    int n = claim ? asprintf(&text,
                             "image=%s\nport=%d\nresources=%s\nruntime=%s\n"
                             "accelerator=%s/%d%s%s\nmount=%s\nclaim=%s\n",
                             ws->image ? ws->image : c->default_image, c->port,
                             resources ? resources : "",
                             c->runtime_class_name ? c->runtime_class_name : "",
                             c->has_accelerator ? c->accelerator_resource : "",
                             c->has_accelerator ? c->accelerator_count : 0, with_product ? "/" : "",
                             with_product && c->has_accelerator && product ? product : "",
                             c->home_mount_path ? c->home_mount_path : "", claim)
                  : -1;
    cJSON_free(resources);
    free(claim);
    if (n < 0)
        return -ENOMEM;
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)text, (size_t)n, md);
    free(text);
    for (size_t i = 0; i < SHA256_DIGEST_LENGTH; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 0;
}

int workspace_pod_spec_hash(const struct workspace *ws, const struct workspace_class *c,
                            char out[POD_SPEC_HASH_SIZE])
{
    return spec_hash(ws, c, 0, NULL, out);
}

int workspace_pod_spec_hash_with_product(const struct workspace *ws,
                                         const struct workspace_class *c, const char *product,
                                         char out[POD_SPEC_HASH_SIZE])
{
    return spec_hash(ws, c, 1, product, out);
}
