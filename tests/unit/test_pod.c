#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workspace/pod.h"

/* 2027-01-01T00:00:00Z */
#define T0 INT64_C(1798761600000)

static const char *const gpu_class =
    "{\"metadata\":{\"name\":\"gpu-t4\"},\"spec\":{"
    "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],"
    "\"default\":\"quay.io/jupyter/base-notebook:2025-10-20\"},"
    "\"port\":8888,"
    "\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\",\"count\":2,\"product\":\"Tesla-T4\","
    "\"nodeSelector\":{\"cloud.google.com/gke-accelerator\":\"nvidia-tesla-t4\"}},"
    "\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"8Gi\",\"nvidia.com/gpu\":\"9\"},"
    "\"limits\":{\"memory\":\"16Gi\"}},"
    "\"runtimeClassName\":\"gvisor\","
    "\"tolerations\":[{\"key\":\"kwok.x-k8s.io/node\",\"operator\":\"Exists\"}],"
    "\"home\":{\"size\":\"10Gi\",\"maxSize\":\"100Gi\",\"storageClassName\":\"standard\"},"
    "\"pause\":{\"gracePeriodSeconds\":90}}}";

static const char *const cpu_class =
    "{\"metadata\":{\"name\":\"cpu\"},\"spec\":{"
    "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],\"default\":\"quay.io/jupyter/base:1\"},"
    "\"home\":{\"size\":\"5Gi\",\"mountPath\":\"/home/me\"}}}";

static const char *const ws_json =
    "{\"metadata\":{\"name\":\"alice-nb\",\"namespace\":\"team-a\",\"uid\":\"uid-123\","
    "\"generation\":1},"
    "\"spec\":{\"className\":\"gpu-t4\",\"image\":\"quay.io/jupyter/scipy-notebook:1\","
    "\"home\":{\"size\":\"20Gi\"},"
    "\"env\":[{\"name\":\"PROJECT\",\"value\":\"llm-eval\"},{\"name\":\"B\",\"value\":\"2\"}]}}";

static struct workspace_class *class_from(const char *json)
{
    cJSON *obj = cJSON_Parse(json);
    struct workspace_class *c = NULL;
    assert_int_equal(workspace_class_decode(obj, &c, NULL), 0);
    cJSON_Delete(obj);
    return c;
}

static struct workspace *ws_from(const char *json)
{
    cJSON *obj = cJSON_Parse(json);
    struct workspace *ws = NULL;
    assert_int_equal(workspace_decode(obj, &ws, NULL), 0);
    cJSON_Delete(obj);
    return ws;
}

/* Follows a dotted path; array items by number ("containers.0.image"). */
static cJSON *at(cJSON *obj, const char *path)
{
    char *copy = strdup(path);
    char *save = NULL;
    cJSON *cur = obj;
    for (char *p = strtok_r(copy, ".", &save); p && cur; p = strtok_r(NULL, ".", &save)) {
        if (cJSON_IsArray(cur))
            cur = cJSON_GetArrayItem(cur, atoi(p));
        else
            cur = cJSON_GetObjectItemCaseSensitive(cur, p);
    }
    free(copy);
    return cur;
}

static const char *str_at(cJSON *obj, const char *path)
{
    cJSON *v = at(obj, path);
    if (!cJSON_IsString(v))
        fail_msg("%s: not a string", path);
    return v->valuestring;
}

static double num_at(cJSON *obj, const char *path)
{
    cJSON *v = at(obj, path);
    if (!cJSON_IsNumber(v))
        fail_msg("%s: not a number", path);
    return v->valuedouble;
}

/* Finds a container env var by name; NULL when absent. */
static const char *env_value(cJSON *pod, const char *name)
{
    cJSON *e;
    cJSON_ArrayForEach(e, at(pod, "spec.containers.0.env"))
    {
        if (strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name) == 0)
            return cJSON_GetObjectItem(e, "value")->valuestring;
    }
    return NULL;
}

static void check_owner(cJSON *obj)
{
    cJSON *labels = at(obj, "metadata.labels");
    assert_string_equal(cJSON_GetObjectItem(labels, "app.kubernetes.io/managed-by")->valuestring,
                        "hibernator");
    assert_string_equal(cJSON_GetObjectItem(labels, "hibernator.dev/workspace")->valuestring,
                        "alice-nb");
    cJSON *refs = at(obj, "metadata.ownerReferences");
    assert_int_equal(cJSON_GetArraySize(refs), 1);
    assert_string_equal(str_at(refs, "0.apiVersion"), "hibernator.dev/v1alpha1");
    assert_string_equal(str_at(refs, "0.kind"), "Workspace");
    assert_string_equal(str_at(refs, "0.name"), "alice-nb");
    assert_string_equal(str_at(refs, "0.uid"), "uid-123");
    assert_true(cJSON_IsTrue(at(refs, "0.controller")));
    assert_true(cJSON_IsTrue(at(refs, "0.blockOwnerDeletion")));
}

static void test_pod_build_gpu(void **state)
{
    (void)state;
    struct workspace_class *c = class_from(gpu_class);
    struct workspace *ws = ws_from(ws_json);
    cJSON *pod = workspace_pod_build(ws, c, "alice-nb-3", 1);
    assert_non_null(pod);

    assert_string_equal(str_at(pod, "apiVersion"), "v1");
    assert_string_equal(str_at(pod, "kind"), "Pod");
    assert_string_equal(str_at(pod, "metadata.name"), "alice-nb-3");
    assert_string_equal(str_at(pod, "metadata.namespace"), "team-a");
    check_owner(pod);
    assert_string_equal(
        cJSON_GetObjectItem(at(pod, "metadata.annotations"), "hibernator.dev/from-checkpoint")
            ->valuestring,
        "true");

    cJSON *spec = at(pod, "spec");
    assert_int_equal(cJSON_GetArraySize(at(spec, "containers")), 1);
    assert_string_equal(str_at(spec, "containers.0.name"), "workspace");
    assert_string_equal(str_at(spec, "containers.0.image"), "quay.io/jupyter/scipy-notebook:1");
    assert_int_equal((int)num_at(spec, "containers.0.ports.0.containerPort"), 8888);

    /* class resources, with the accelerator in both requests and limits
     * (overriding what the class wrote there) */
    cJSON *req = at(spec, "containers.0.resources.requests");
    cJSON *lim = at(spec, "containers.0.resources.limits");
    assert_string_equal(cJSON_GetObjectItem(req, "cpu")->valuestring, "2");
    assert_string_equal(cJSON_GetObjectItem(req, "memory")->valuestring, "8Gi");
    assert_string_equal(cJSON_GetObjectItem(req, "nvidia.com/gpu")->valuestring, "2");
    assert_string_equal(cJSON_GetObjectItem(lim, "memory")->valuestring, "16Gi");
    assert_string_equal(cJSON_GetObjectItem(lim, "nvidia.com/gpu")->valuestring, "2");

    /* env: the workspace's, in order, then the controller's */
    cJSON *env = at(spec, "containers.0.env");
    assert_int_equal(cJSON_GetArraySize(env), 4);
    assert_string_equal(str_at(env, "0.name"), "PROJECT");
    assert_string_equal(str_at(env, "0.value"), "llm-eval");
    assert_string_equal(str_at(env, "1.name"), "B");
    assert_string_equal(env_value(pod, "HIBERNATOR_WORKSPACE"), "alice-nb");
    assert_string_equal(env_value(pod, "HIBERNATOR_CHECKPOINT_PATH"),
                        "/home/jovyan/.hibernator/checkpoint");

    assert_string_equal(str_at(spec, "containers.0.volumeMounts.0.name"), "home");
    assert_string_equal(str_at(spec, "containers.0.volumeMounts.0.mountPath"), "/home/jovyan");
    assert_string_equal(str_at(spec, "volumes.0.name"), "home");
    assert_string_equal(str_at(spec, "volumes.0.persistentVolumeClaim.claimName"), "alice-nb-home");

    cJSON *sel = at(spec, "nodeSelector");
    assert_int_equal(cJSON_GetArraySize(sel), 2);
    assert_string_equal(cJSON_GetObjectItem(sel, "cloud.google.com/gke-accelerator")->valuestring,
                        "nvidia-tesla-t4");
    assert_string_equal(cJSON_GetObjectItem(sel, "nvidia.com/gpu.product")->valuestring,
                        "Tesla-T4");
    assert_string_equal(str_at(spec, "tolerations.0.key"), "kwok.x-k8s.io/node");
    assert_string_equal(str_at(spec, "runtimeClassName"), "gvisor");
    assert_int_equal((int)num_at(spec, "terminationGracePeriodSeconds"), 90);
    /* A container's exit 0 (GKE's stop after its checkpoint) is final. */
    assert_string_equal(str_at(spec, "restartPolicy"), "OnFailure");
    assert_true(cJSON_IsFalse(at(spec, "automountServiceAccountToken")));
    assert_true(cJSON_IsFalse(at(spec, "enableServiceLinks")));
    cJSON_Delete(pod);

    /* Fresh: no checkpoint env, annotation false */
    pod = workspace_pod_build(ws, c, "alice-nb-1", 0);
    assert_null(env_value(pod, "HIBERNATOR_CHECKPOINT_PATH"));
    assert_non_null(env_value(pod, "HIBERNATOR_WORKSPACE"));
    assert_string_equal(
        cJSON_GetObjectItem(at(pod, "metadata.annotations"), "hibernator.dev/from-checkpoint")
            ->valuestring,
        "false");
    cJSON_Delete(pod);

    assert_null(workspace_pod_build(ws, NULL, "x", 0));
    workspace_free(ws);
    workspace_class_free(c);
}

/* The largest quantities a class can say reach the pod exactly as written:
 * strings as they are, a number of up to 15 digits as the same number. */
static void test_pod_build_largest_quantities(void **state)
{
    (void)state;
    struct workspace_class *c = class_from(
        "{\"metadata\":{\"name\":\"big\"},\"spec\":{"
        "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],\"default\":\"quay.io/jupyter/base:1\"},"
        "\"resources\":{\"requests\":{\"memory\":\"9007199254740991Ki\","
        "\"cpu\":999999999999999},"
        "\"limits\":{\"memory\":\"9223372036854775807\",\"cpu\":\"9223372036854775807000m\"}},"
        "\"home\":{\"size\":\"9007199254740991Ki\",\"maxSize\":\"9223372036854775807\"}}}");
    struct workspace *ws = ws_from("{\"metadata\":{\"name\":\"alice-nb\",\"namespace\":\"team-a\","
                                   "\"uid\":\"uid-123\"},\"spec\":{\"className\":\"big\"}}");
    cJSON *pod = workspace_pod_build(ws, c, "alice-nb-1", 0);
    assert_non_null(pod);
    assert_string_equal(str_at(pod, "spec.containers.0.resources.limits.memory"),
                        "9223372036854775807");
    assert_string_equal(str_at(pod, "spec.containers.0.resources.limits.cpu"),
                        "9223372036854775807000m");
    assert_string_equal(str_at(pod, "spec.containers.0.resources.requests.memory"),
                        "9007199254740991Ki");
    /* The number as the API server reads it back. */
    char *text = cJSON_PrintUnformatted(pod);
    assert_non_null(strstr(text, "\"cpu\":999999999999999}"));
    cJSON_free(text);
    cJSON_Delete(pod);

    cJSON *pvc = workspace_pvc_build(ws, c);
    assert_string_equal(str_at(pvc, "spec.resources.requests.storage"), "9007199254740991Ki");
    cJSON_Delete(pvc);
    workspace_free(ws);
    workspace_class_free(c);
}

static void test_pod_build_cpu(void **state)
{
    (void)state;
    struct workspace_class *c = class_from(cpu_class);
    struct workspace *ws = ws_from("{\"metadata\":{\"name\":\"alice-nb\",\"namespace\":\"team-a\","
                                   "\"uid\":\"uid-123\"},\"spec\":{\"className\":\"cpu\"}}");
    cJSON *pod = workspace_pod_build(ws, c, "alice-nb-1", 1);
    assert_non_null(pod);
    cJSON *spec = at(pod, "spec");
    /* the class default image */
    assert_string_equal(str_at(spec, "containers.0.image"), "quay.io/jupyter/base:1");
    assert_null(at(spec, "nodeSelector"));
    assert_null(at(spec, "tolerations"));
    assert_null(at(spec, "runtimeClassName"));
    assert_non_null(at(spec, "containers.0.resources"));
    assert_null(at(spec, "containers.0.resources.requests"));
    assert_int_equal((int)num_at(spec, "terminationGracePeriodSeconds"), 60);
    assert_string_equal(str_at(spec, "containers.0.volumeMounts.0.mountPath"), "/home/me");
    assert_string_equal(env_value(pod, "HIBERNATOR_CHECKPOINT_PATH"),
                        "/home/me/.hibernator/checkpoint");
    cJSON *env = at(spec, "containers.0.env");
    assert_int_equal(cJSON_GetArraySize(env), 2);
    check_owner(pod);
    cJSON_Delete(pod);
    workspace_free(ws);
    workspace_class_free(c);
}

static void test_pvc_build(void **state)
{
    (void)state;
    struct workspace_class *c = class_from(gpu_class);
    struct workspace *ws = ws_from(ws_json);
    cJSON *pvc = workspace_pvc_build(ws, c);
    assert_non_null(pvc);
    assert_string_equal(str_at(pvc, "kind"), "PersistentVolumeClaim");
    assert_string_equal(str_at(pvc, "metadata.name"), "alice-nb-home");
    assert_string_equal(str_at(pvc, "metadata.namespace"), "team-a");
    assert_null(at(pvc, "metadata.annotations"));
    check_owner(pvc);
    assert_int_equal(cJSON_GetArraySize(at(pvc, "spec.accessModes")), 1);
    assert_string_equal(str_at(pvc, "spec.accessModes.0"), "ReadWriteOnce");
    assert_string_equal(str_at(pvc, "spec.resources.requests.storage"), "20Gi");
    assert_string_equal(str_at(pvc, "spec.storageClassName"), "standard");
    cJSON_Delete(pvc);
    workspace_free(ws);
    workspace_class_free(c);

    /* class default size, no storage class */
    c = class_from(cpu_class);
    ws = ws_from(
        "{\"metadata\":{\"name\":\"alice-nb\",\"namespace\":\"team-a\",\"uid\":\"uid-123\"},"
        "\"spec\":{\"className\":\"cpu\"}}");
    pvc = workspace_pvc_build(ws, c);
    assert_string_equal(str_at(pvc, "spec.resources.requests.storage"), "5Gi");
    assert_null(at(pvc, "spec.storageClassName"));
    cJSON_Delete(pvc);
    assert_null(workspace_pvc_build(ws, NULL));
    workspace_free(ws);
    workspace_class_free(c);
}

static void test_names(void **state)
{
    (void)state;
    struct workspace ws = {.name = "alice-nb"};
    char *s = workspace_home_claim_name(&ws);
    assert_string_equal(s, "alice-nb-home");
    free(s);
    s = workspace_pod_name(&ws, 12);
    assert_string_equal(s, "alice-nb-12");
    free(s);
}

/* What the API server returns for a pod the scheduler could not place. */
static const char *const pod_unschedulable =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"alice-nb-2\","
    "\"namespace\":\"team-a\",\"uid\":\"p-2\",\"resourceVersion\":\"901\","
    "\"creationTimestamp\":\"2027-01-01T00:00:00Z\","
    "\"labels\":{\"app.kubernetes.io/managed-by\":\"hibernator\","
    "\"hibernator.dev/workspace\":\"alice-nb\"},"
    "\"annotations\":{\"hibernator.dev/from-checkpoint\":\"true\"},"
    "\"ownerReferences\":[{\"apiVersion\":\"hibernator.dev/v1alpha1\",\"kind\":\"Workspace\","
    "\"name\":\"alice-nb\",\"uid\":\"uid-123\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
    "\"spec\":{\"containers\":[{\"name\":\"workspace\",\"image\":\"quay.io/jupyter/base\"}],"
    "\"schedulerName\":\"default-scheduler\"},"
    "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
    "\"status\":\"False\",\"lastProbeTime\":null,"
    "\"lastTransitionTime\":\"2027-01-01T00:00:01Z\",\"reason\":\"Unschedulable\","
    "\"message\":\"0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 "
    "nodes are available: 3 No preemption victims found for incoming pod.\"}],"
    "\"qosClass\":\"Burstable\"}}";

static const char *const pod_scheduled =
    "{\"metadata\":{\"name\":\"alice-nb-2\",\"namespace\":\"team-a\",\"uid\":\"p-2\","
    "\"creationTimestamp\":\"2027-01-01T00:00:00Z\","
    "\"labels\":{\"hibernator.dev/workspace\":\"alice-nb\"},"
    "\"annotations\":{\"hibernator.dev/from-checkpoint\":\"false\"}},"
    "\"spec\":{\"nodeName\":\"gpu-node-1\"},"
    "\"status\":{\"phase\":\"Pending\",\"conditions\":["
    "{\"type\":\"PodReadyToStartContainers\",\"status\":\"False\","
    "\"lastTransitionTime\":\"2027-01-01T00:00:03Z\"},"
    "{\"type\":\"Initialized\",\"status\":\"True\","
    "\"lastTransitionTime\":\"2027-01-01T00:00:03Z\"},"
    "{\"type\":\"Ready\",\"status\":\"False\",\"lastTransitionTime\":\"2027-01-01T00:00:03Z\","
    "\"reason\":\"ContainersNotReady\",\"message\":\"containers with unready status: "
    "[workspace]\"},"
    "{\"type\":\"ContainersReady\",\"status\":\"False\","
    "\"lastTransitionTime\":\"2027-01-01T00:00:03Z\"},"
    "{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":"
    "\"2027-01-01T00:00:03Z\"}]}}";

static const char *const pod_ready_terminating =
    "{\"metadata\":{\"name\":\"alice-nb-2\",\"namespace\":\"team-a\",\"uid\":\"p-2\","
    "\"creationTimestamp\":\"2027-01-01T00:00:00Z\","
    "\"deletionTimestamp\":\"2027-01-01T01:00:00Z\",\"deletionGracePeriodSeconds\":60,"
    "\"labels\":{\"hibernator.dev/workspace\":\"alice-nb\"}},"
    "\"spec\":{\"nodeName\":\"gpu-node-1\"},"
    "\"status\":{\"phase\":\"Running\",\"conditions\":["
    "{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2027-01-01T00:00:12Z\"},"
    "{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":"
    "\"2027-01-01T00:00:03Z\"}],"
    "\"containerStatuses\":[{\"name\":\"notebook\",\"restartCount\":2,"
    "\"state\":{\"running\":{\"startedAt\":\"2027-01-01T00:00:10Z\"}}},"
    "{\"name\":\"sidecar\",\"restartCount\":0,"
    "\"state\":{\"running\":{\"startedAt\":\"2027-01-01T00:00:08Z\"}}}]}}";

static struct workspace_pod *pod_from(const char *json)
{
    cJSON *obj = cJSON_Parse(json);
    assert_non_null(obj);
    struct workspace_pod *p = workspace_pod_decode(obj, NULL);
    cJSON_Delete(obj);
    assert_non_null(p);
    return p;
}

static void test_pod_decode(void **state)
{
    (void)state;
    struct workspace_pod *p = pod_from(pod_unschedulable);
    assert_string_equal(p->ns, "team-a");
    assert_string_equal(p->name, "alice-nb-2");
    assert_string_equal(p->uid, "p-2");
    assert_string_equal(p->workspace, "alice-nb");
    assert_null(p->node_name);
    assert_string_equal(p->phase, "Pending");
    assert_int_equal(p->created_ms, T0);
    assert_int_equal(p->deletion_ms, 0);
    assert_false(p->ready);
    assert_false(p->scheduled);
    assert_int_equal(p->scheduled_ms, 0);
    assert_true(p->unschedulable);
    assert_string_equal(p->unschedulable_message,
                        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 "
                        "nodes are available: 3 No preemption victims found for incoming pod.");
    assert_true(p->restore_from_checkpoint);
    workspace_pod_free(p);

    p = pod_from(pod_scheduled);
    assert_string_equal(p->node_name, "gpu-node-1");
    assert_true(p->scheduled);
    assert_int_equal(p->scheduled_ms, T0 + 3000);
    assert_false(p->ready);
    assert_int_equal(p->ready_ms, 0);
    assert_false(p->unschedulable);
    assert_null(p->unschedulable_message);
    assert_false(p->restore_from_checkpoint);
    workspace_pod_free(p);

    p = pod_from(pod_ready_terminating);
    assert_true(p->ready);
    assert_int_equal(p->ready_ms, T0 + 12000);
    assert_true(p->scheduled);
    assert_int_equal(p->deletion_ms, T0 + 3600000);
    assert_string_equal(p->phase, "Running");
    assert_false(p->restore_from_checkpoint);
    assert_int_equal(p->restart_count, 2);
    assert_int_equal(p->started_ms, T0 + 10000); /* the latest container start */
    workspace_pod_free(p);

    /* whatever arrives, decode never fails but for memory */
    p = pod_from("{}");
    assert_null(p->name);
    workspace_pod_free(p);
    p = pod_from("{\"metadata\":[],\"status\":{\"conditions\":{}}}");
    workspace_pod_free(p);
    workspace_pod_free(NULL);
}

static void test_pod_build_decode(void **state)
{
    (void)state;
    struct workspace_class *c = class_from(gpu_class);
    struct workspace *ws = ws_from(ws_json);
    for (int ckpt = 0; ckpt <= 1; ckpt++) {
        cJSON *pod = workspace_pod_build(ws, c, "alice-nb-4", ckpt);
        struct workspace_pod *p = workspace_pod_decode(pod, NULL);
        assert_string_equal(p->name, "alice-nb-4");
        assert_string_equal(p->workspace, "alice-nb");
        assert_int_equal(p->restore_from_checkpoint, ckpt);
        /* the pod the class builds asks for its accelerator, and it shows */
        assert_true(workspace_pod_requests(p, "nvidia.com/gpu"));
        workspace_pod_free(p);
        cJSON_Delete(pod);
    }
    workspace_free(ws);
    workspace_class_free(c);
}

/* The snapshot group: on the pod as a label (read back by the decoder), none
 * when not given; the value for a pod from files is a valid label value of
 * at most 63 characters, the uid's and the pod generation's. */
#define CK_IMAGE                                                                                   \
    "r.example/ck/team/nb@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

/* A restore from a checkpoint image: the container runs the image, pulled
 * with the class's Secret; GKE's annotation stays empty, the snapshot is
 * named in the pod's own annotation; decoded back, the container's state
 * says the restore. */
static void test_pod_checkpoint_image(void **state)
{
    (void)state;
    struct workspace_class *c = class_from(gpu_class);
    struct workspace *ws = ws_from(ws_json);
    struct pod_build b = {.name = "alice-nb-4",
                          .from_checkpoint = 1,
                          .snapshot = "alice-nb-p3-1",
                          .image = CK_IMAGE,
                          .pull_secret = "checkpoints"};
    cJSON *pod = workspace_pod_build_with(ws, c, &b);
    assert_string_equal(at(pod, "spec.containers.0.image")->valuestring, CK_IMAGE);
    assert_string_equal(at(pod, "spec.imagePullSecrets.0.name")->valuestring, "checkpoints");
    cJSON *ann = at(pod, "metadata.annotations");
    assert_string_equal(cJSON_GetObjectItem(ann, "podsnapshot.gke.io/ps-name")->valuestring, "");
    assert_string_equal(cJSON_GetObjectItem(ann, RESTORED_FROM_ANNOTATION)->valuestring,
                        "alice-nb-p3-1");
    struct workspace_pod *p = workspace_pod_decode(pod, NULL);
    assert_string_equal(p->snapshot, "alice-nb-p3-1");
    assert_false(p->restored);
    assert_false(p->restore_stuck);
    workspace_pod_free(p);

    /* Its container's states, as the kubelet reports them. */
    static const struct {
        const char *state;
        int restored, stuck;
        const char *failure;
    } rows[] = {
        {"{\"running\":{\"startedAt\":\"2027-01-01T00:00:08Z\"}}", 1, 0, NULL},
        {"{\"waiting\":{\"reason\":\"ContainerCreating\"}}", 0, 0, NULL},
        {"{\"waiting\":{\"reason\":\"ErrImagePull\",\"message\":\"not found\"}}", 0, 0, NULL},
        {"{\"waiting\":{\"reason\":\"ImagePullBackOff\",\"message\":\"Back-off pulling\"}}", 0, 1,
         "ImagePullBackOff: Back-off pulling"},
        {"{\"waiting\":{\"reason\":\"CreateContainerError\",\"message\":\"criu failed\"}}", 0, 1,
         "CreateContainerError: criu failed"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        cJSON *copy = cJSON_Duplicate(pod, 1);
        cJSON *status = cJSON_AddObjectToObject(copy, "status");
        char cs[512];
        snprintf(cs, sizeof(cs), "[{\"name\":\"workspace\",\"restartCount\":0,\"state\":%s}]",
                 rows[i].state);
        cJSON_AddItemToObject(status, "containerStatuses", cJSON_Parse(cs));
        p = workspace_pod_decode(copy, NULL);
        assert_non_null(p);
        assert_int_equal(p->restored, rows[i].restored);
        assert_int_equal(p->restore_stuck, rows[i].stuck);
        assert_int_equal(p->restore_failed, rows[i].stuck);
        if (rows[i].failure)
            assert_string_equal(p->restore_failure, rows[i].failure);
        else
            assert_null(p->restore_failure);
        if (rows[i].restored)
            assert_true(p->restored_ms > 0);
        workspace_pod_free(p);
        cJSON_Delete(copy);
    }
    cJSON_Delete(pod);

    /* Without an image the snapshot is GKE's to restore, as before. */
    b.image = NULL;
    pod = workspace_pod_build_with(ws, c, &b);
    cJSON *plain = workspace_pod_build(ws, c, "x", 0);
    assert_string_equal(at(pod, "spec.containers.0.image")->valuestring,
                        at(plain, "spec.containers.0.image")->valuestring);
    cJSON_Delete(plain);
    assert_null(at(pod, "spec.imagePullSecrets"));
    ann = at(pod, "metadata.annotations");
    assert_string_equal(cJSON_GetObjectItem(ann, "podsnapshot.gke.io/ps-name")->valuestring,
                        "alice-nb-p3-1");
    assert_null(cJSON_GetObjectItem(ann, RESTORED_FROM_ANNOTATION));
    cJSON_Delete(pod);
    workspace_class_free(c);
    workspace_free(ws);
}

/* A class whose backend needs nodes of a label (ContainerCheckpoint: the
 * node agent's) pins every pod to them, the first as any restore; others
 * do not. */
static void test_pod_backend_nodes(void **state)
{
    (void)state;
    static const struct {
        const char *snapshot;
        const char *want;
    } rows[] = {
        {",\"snapshot\":{\"backend\":\"ContainerCheckpoint\",\"repository\":\"r.local/c\"}",
         "true"},
        {",\"snapshot\":{\"backend\":\"GKE\",\"storageConfigName\":\"s\"}", NULL},
        {"", NULL},
    };
    struct workspace *ws = ws_from(ws_json);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char json[1024];
        size_t n = strlen(cpu_class);
        assert_true(n + strlen(rows[i].snapshot) < sizeof(json));
        /* cpu_class ends with "}}": the snapshot goes into its spec */
        snprintf(json, sizeof(json), "%.*s%s}}", (int)(n - 2), cpu_class, rows[i].snapshot);
        struct workspace_class *c = class_from(json);
        for (int restore = 0; restore <= 1; restore++) {
            struct pod_build b = {.name = "alice-nb-4", .from_checkpoint = 1};
            if (restore) {
                b.snapshot = "alice-nb-p3-1";
                b.image = rows[i].want ? CK_IMAGE : NULL;
            }
            cJSON *pod = workspace_pod_build_with(ws, c, &b);
            cJSON *v = at(pod, "spec.nodeSelector");
            v = v ? cJSON_GetObjectItemCaseSensitive(v, "hibernator.dev/container-checkpoint")
                  : NULL;
            if (rows[i].want)
                assert_string_equal(cJSON_GetStringValue(v), rows[i].want);
            else
                assert_null(v);
            cJSON_Delete(pod);
        }
        workspace_class_free(c);
    }
    workspace_free(ws);
}

static void test_pod_snapshot_group(void **state)
{
    (void)state;
    struct workspace_class *c = class_from(gpu_class);
    struct workspace *ws = ws_from(ws_json);
    struct pod_build b = {.name = "alice-nb-4", .from_checkpoint = 1, .group = "g-1"};
    cJSON *pod = workspace_pod_build_with(ws, c, &b);
    struct workspace_pod *p = workspace_pod_decode(pod, NULL);
    assert_string_equal(p->group, "g-1");
    workspace_pod_free(p);
    cJSON_Delete(pod);
    pod = workspace_pod_build(ws, c, "alice-nb-4", 1);
    p = workspace_pod_decode(pod, NULL);
    assert_null(p->group);
    workspace_pod_free(p);
    cJSON_Delete(pod);

    char g[SNAPSHOT_GROUP_SIZE];
    free(ws->uid);
    ws->uid = strdup("0f8fad5b-d9cb-469f-a165-70867728950e");
    assert_int_equal(workspace_snapshot_group(ws, 12, g), 0);
    assert_string_equal(g, "0f8fad5b-d9cb-469f-a165-70867728950e-12");
    free(ws->uid);
    ws->uid = strdup("0123456789012345678901234567890123456789012345678901234567890123456789");
    assert_int_equal(workspace_snapshot_group(ws, INT64_MAX, g), 0);
    assert_int_equal(strlen(g), 63);
    assert_non_null(strstr(g, "-9223372036854775807"));
    free(ws->uid);
    ws->uid = NULL;
    assert_int_equal(workspace_snapshot_group(ws, 1, g), -EINVAL);
    workspace_free(ws);
    workspace_class_free(c);
}

/* The extended resources a pod asks for: what tells another workspace's pod
 * that took a released accelerator from any pod on that node. */
static void test_pod_extended_resources(void **state)
{
    (void)state;
    struct workspace_pod *p = pod_from(
        "{\"spec\":{\"containers\":["
        "{\"resources\":{\"limits\":{\"cpu\":\"2\",\"nvidia.com/gpu\":\"1\","
        "\"hugepages-2Mi\":\"1Gi\",\"example.kubernetes.io/x\":\"1\",\"kubernetes.io/y\":\"1\"},"
        "\"requests\":{\"nvidia.com/gpu\":1,\"memory\":\"1Gi\"}}},"
        "{\"resources\":{\"requests\":{\"acme.com/fpga\":\"00\",\"acme.com/nic\":2,"
        "\"vendor.io/a\":\"1\",\"vendor.io/b\":\"1\",\"vendor.io/c\":\"1\"}}},"
        "{\"resources\":{\"limits\":[]}},{\"resources\":7}]}}");
    assert_true(workspace_pod_requests(p, "nvidia.com/gpu"));
    assert_true(workspace_pod_requests(p, "acme.com/nic"));
    /* native resources, the kubernetes.io domain, and none asked for (0) */
    assert_false(workspace_pod_requests(p, "cpu"));
    assert_false(workspace_pod_requests(p, "hugepages-2Mi"));
    assert_false(workspace_pod_requests(p, "example.kubernetes.io/x"));
    assert_false(workspace_pod_requests(p, "kubernetes.io/y"));
    assert_false(workspace_pod_requests(p, "acme.com/fpga"));
    assert_false(workspace_pod_requests(p, NULL));
    /* each once, and no more than the record keeps */
    assert_string_equal(p->extended[0], "nvidia.com/gpu");
    assert_string_equal(p->extended[1], "acme.com/nic");
    assert_string_equal(p->extended[2], "vendor.io/a");
    assert_string_equal(p->extended[3], "vendor.io/b");
    assert_false(workspace_pod_requests(p, "vendor.io/c"));
    workspace_pod_free(p);

    p = pod_from(pod_unschedulable);
    assert_null(p->extended[0]);
    workspace_pod_free(p);
}

/* A member whose key has dots in it (labels, annotations). */
static const char *member_str(cJSON *obj, const char *key)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(v))
        fail_msg("%s: not a string", key);
    return v->valuestring;
}

/* Through Kueue: the class's queue (or the workspace's, when it names one)
 * and priority class as Kueue's labels; decoded back, with the gate Kueue's
 * webhook adds. Without spec.queue, no label. */
static void test_pod_queue(void **state)
{
    (void)state;
    static const char *const queue_class =
        "{\"metadata\":{\"name\":\"cpu\"},\"spec\":{"
        "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],\"default\":\"quay.io/jupyter/base:1\"},"
        "\"home\":{\"size\":\"5Gi\"},"
        "\"queue\":{\"localQueue\":\"gpus\",\"allowedLocalQueues\":[\"night\"],"
        "\"priorityClass\":\"interactive\",\"preWarmPriorityClass\":\"background\"}}}";
    struct workspace_class *c = class_from(queue_class);
    struct workspace *ws = ws_from("{\"metadata\":{\"name\":\"alice-nb\",\"namespace\":\"team-a\","
                                   "\"uid\":\"uid-123\"},\"spec\":{\"className\":\"cpu\"}}");
    struct workspace *night =
        ws_from("{\"metadata\":{\"name\":\"alice-nb\",\"namespace\":\"team-a\","
                "\"uid\":\"uid-123\"},\"spec\":{\"className\":\"cpu\",\"localQueue\":\"night\"}}");
    cJSON *pod = workspace_pod_build(ws, c, "alice-nb-1", 0);
    cJSON *labels = at(pod, "metadata.labels");
    assert_string_equal(member_str(labels, "kueue.x-k8s.io/queue-name"), "gpus");
    assert_string_equal(member_str(labels, "kueue.x-k8s.io/priority-class"), "interactive");
    /* as Kueue's webhook leaves it */
    cJSON *gates = cJSON_AddArrayToObject(at(pod, "spec"), "schedulingGates");
    cJSON *g = cJSON_CreateObject();
    cJSON_AddStringToObject(g, "name", "kueue.x-k8s.io/admission");
    cJSON_AddItemToArray(gates, g);
    struct workspace_pod *p = workspace_pod_decode(pod, NULL);
    assert_string_equal(p->queue, "gpus");
    assert_true(p->queue_gated);
    assert_string_equal(p->priority_class, "interactive");
    workspace_pod_free(p);
    cJSON_Delete(pod);
    /* a pre-warm's pod: the class's pre-warm priority */
    pod = workspace_pod_build_with(ws, c, &(struct pod_build){.name = "alice-nb-1", .prewarm = 1});
    assert_string_equal(member_str(at(pod, "metadata.labels"), "kueue.x-k8s.io/priority-class"),
                        "background");
    p = workspace_pod_decode(pod, NULL);
    assert_string_equal(p->priority_class, "background");
    workspace_pod_free(p);
    cJSON_Delete(pod);
    pod = workspace_pod_build(night, c, "alice-nb-2", 0);
    assert_string_equal(member_str(at(pod, "metadata.labels"), "kueue.x-k8s.io/queue-name"),
                        "night");
    p = workspace_pod_decode(pod, NULL);
    assert_false(p->queue_gated);
    workspace_pod_free(p);
    cJSON_Delete(pod);
    workspace_class_free(c);
    c = class_from(cpu_class);
    pod = workspace_pod_build(ws, c, "alice-nb-3", 0);
    assert_null(
        cJSON_GetObjectItemCaseSensitive(at(pod, "metadata.labels"), "kueue.x-k8s.io/queue-name"));
    cJSON_Delete(pod);
    workspace_free(ws);
    workspace_free(night);
    workspace_class_free(c);
}

/* spec.queue.evictionHold: the workspace container gets a preStop sleep
 * hook of the hold (rounded up to whole seconds), the grace period grows
 * by as much, and the pod decoded back says so. Without a hold: neither. */
static void test_pod_eviction_hold(void **state)
{
    (void)state;
    static const char *const held_class =
        "{\"metadata\":{\"name\":\"cpu\"},\"spec\":{"
        "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],\"default\":\"quay.io/jupyter/base:1\"},"
        "\"home\":{\"size\":\"5Gi\"},\"pause\":{\"gracePeriodSeconds\":20},"
        "\"snapshot\":{\"backend\":\"GKE\",\"storageConfigName\":\"s\"},"
        "\"queue\":{\"localQueue\":\"gpus\",\"evictionHold\":\"90500ms\"}}}";
    struct workspace_class *c = class_from(held_class);
    assert_int_equal(workspace_class_eviction_hold_seconds(c), 91);
    struct workspace *ws = ws_from("{\"metadata\":{\"name\":\"alice-nb\",\"namespace\":\"team-a\","
                                   "\"uid\":\"uid-123\"},\"spec\":{\"className\":\"cpu\"}}");
    cJSON *pod = workspace_pod_build(ws, c, "alice-nb-1", 0);
    const cJSON *sleep = at(pod, "spec.containers.0.lifecycle.preStop.sleep.seconds");
    assert_true(cJSON_IsNumber(sleep));
    assert_int_equal((int)sleep->valuedouble, 91);
    assert_int_equal((int)at(pod, "spec.terminationGracePeriodSeconds")->valuedouble, 111);
    struct workspace_pod *p = workspace_pod_decode(pod, NULL);
    assert_int_equal(p->prestop_sleep_s, 91);
    workspace_pod_free(p);
    cJSON_Delete(pod);
    workspace_class_free(c);
    c = class_from(cpu_class);
    assert_int_equal(workspace_class_eviction_hold_seconds(c), 0);
    pod = workspace_pod_build(ws, c, "alice-nb-2", 0);
    assert_null(cJSON_GetObjectItemCaseSensitive(at(pod, "spec.containers.0"), "lifecycle"));
    p = workspace_pod_decode(pod, NULL);
    assert_int_equal(p->prestop_sleep_s, 0);
    workspace_pod_free(p);
    cJSON_Delete(pod);
    workspace_free(ws);
    workspace_class_free(c);
}

/* A restore is pinned to its snapshot's product; a capacity fallback asks
 * for any product the class allows and prefers the class's own. */
static void test_pod_build_pins_and_fallback(void **state)
{
    (void)state;
    struct workspace_class *c = class_from(
        "{\"metadata\":{\"name\":\"gpu-v100\"},\"spec\":{"
        "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],"
        "\"default\":\"quay.io/jupyter/base-notebook:1\"},"
        "\"accelerator\":{\"resourceName\":\"nvidia.com/gpu\",\"product\":\"Tesla-V100\","
        "\"alternativeProducts\":[\"NVIDIA-L4\",\"NVIDIA-A100\"],"
        "\"nodeSelector\":{\"pool\":\"gpu\",\"nvidia.com/gpu.product\":\"Tesla-V100\"}},"
        "\"home\":{\"size\":\"10Gi\"},"
        "\"resume\":{\"onCapacityTimeout\":\"FallBack\"}}}");
    struct workspace *ws = ws_from(ws_json);

    /* Pinned to the snapshot's product, whatever the class's. */
    struct pod_build b = {
        .name = "alice-nb-2", .from_checkpoint = 1, .snapshot = "snap-1", .product = "NVIDIA-L4"};
    cJSON *pod = workspace_pod_build_with(ws, c, &b);
    assert_non_null(pod);
    cJSON *sel = at(pod, "spec.nodeSelector");
    assert_string_equal(member_str(sel, "nvidia.com/gpu.product"), "NVIDIA-L4");
    assert_string_equal(str_at(sel, "pool"), "gpu");
    assert_null(at(pod, "spec.affinity"));
    assert_string_equal(member_str(at(pod, "metadata.annotations"), "podsnapshot.gke.io/ps-name"),
                        "snap-1");
    assert_null(
        cJSON_GetObjectItem(at(pod, "metadata.annotations"), "hibernator.dev/capacity-fallback"));
    cJSON_Delete(pod);

    /* A restore steered onto a node like its snapshot's: its machine type
     * required, its node pool preferred. */
    b.machine_type = "a2-highgpu-1g";
    b.node_pool = "gpu-pool-a";
    b.gpu_driver = "550.90.07"; /* and under its GPU driver */
    pod = workspace_pod_build_with(ws, c, &b);
    sel = at(pod, "spec.nodeSelector");
    assert_string_equal(member_str(sel, "node.kubernetes.io/instance-type"), "a2-highgpu-1g");
    assert_string_equal(member_str(sel, "nvidia.com/cuda.driver.major"), "550");
    assert_string_equal(member_str(sel, "nvidia.com/cuda.driver.minor"), "90");
    assert_string_equal(member_str(sel, "nvidia.com/cuda.driver.rev"), "07");
    assert_string_equal(member_str(sel, "nvidia.com/gpu.product"), "NVIDIA-L4");
    cJSON *pool =
        at(pod, "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution");
    assert_int_equal(cJSON_GetArraySize(pool), 1);
    assert_string_equal(str_at(pool, "0.preference.matchExpressions.0.key"),
                        "cloud.google.com/gke-nodepool");
    assert_string_equal(str_at(pool, "0.preference.matchExpressions.0.values.0"), "gpu-pool-a");
    assert_null(
        at(pod, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"));
    cJSON_Delete(pod);
    /* Not a restore: no such terms. */
    b.snapshot = NULL;
    pod = workspace_pod_build_with(ws, c, &b);
    assert_null(
        cJSON_GetObjectItem(at(pod, "spec.nodeSelector"), "node.kubernetes.io/instance-type"));
    assert_null(cJSON_GetObjectItem(at(pod, "spec.nodeSelector"), "nvidia.com/cuda.driver.major"));
    assert_null(at(pod, "spec.affinity"));
    cJSON_Delete(pod);

    /* No pin: the class's product. */
    pod = workspace_pod_build(ws, c, "alice-nb-2", 1);
    assert_string_equal(member_str(at(pod, "spec.nodeSelector"), "nvidia.com/gpu.product"),
                        "Tesla-V100");
    cJSON_Delete(pod);

    /* A fallback: required In every allowed product, the class's preferred,
     * no product in the node selector (not even the class's own entry). */
    b = (struct pod_build){.name = "alice-nb-3", .from_checkpoint = 1, .capacity_fallback = 1};
    pod = workspace_pod_build_with(ws, c, &b);
    assert_non_null(pod);
    sel = at(pod, "spec.nodeSelector");
    assert_int_equal(cJSON_GetArraySize(sel), 1);
    assert_string_equal(str_at(sel, "pool"), "gpu");
    cJSON *na = at(pod, "spec.affinity.nodeAffinity");
    cJSON *req = at(na, "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
    assert_int_equal(cJSON_GetArraySize(req), 1);
    assert_string_equal(str_at(req, "0.matchExpressions.0.key"), "nvidia.com/gpu.product");
    assert_string_equal(str_at(req, "0.matchExpressions.0.operator"), "In");
    cJSON *values = at(req, "0.matchExpressions.0.values");
    assert_int_equal(cJSON_GetArraySize(values), 3);
    assert_string_equal(str_at(values, "0"), "Tesla-V100");
    assert_string_equal(str_at(values, "1"), "NVIDIA-L4");
    assert_string_equal(str_at(values, "2"), "NVIDIA-A100");
    cJSON *pref = at(na, "preferredDuringSchedulingIgnoredDuringExecution");
    assert_int_equal(cJSON_GetArraySize(pref), 1);
    assert_int_equal((int)num_at(pref, "0.weight"), 100);
    assert_string_equal(str_at(pref, "0.preference.matchExpressions.0.key"),
                        "nvidia.com/gpu.product");
    assert_string_equal(str_at(pref, "0.preference.matchExpressions.0.operator"), "In");
    assert_int_equal(cJSON_GetArraySize(at(pref, "0.preference.matchExpressions.0.values")), 1);
    assert_string_equal(str_at(pref, "0.preference.matchExpressions.0.values.0"), "Tesla-V100");
    assert_string_equal(
        member_str(at(pod, "metadata.annotations"), "hibernator.dev/capacity-fallback"), "true");
    assert_string_equal(env_value(pod, "HIBERNATOR_CHECKPOINT_PATH"),
                        "/home/jovyan/.hibernator/checkpoint");
    /* No snapshot: the annotation is empty, so GKE restores none. */
    assert_string_equal(member_str(at(pod, "metadata.annotations"), "podsnapshot.gke.io/ps-name"),
                        "");

    /* The decoder reads the annotations back; an empty name is no snapshot. */
    struct workspace_pod *p = workspace_pod_decode(pod, NULL);
    assert_true(p->capacity_fallback);
    assert_null(p->snapshot);
    workspace_pod_free(p);
    cJSON_Delete(pod);
    pod = workspace_pod_build(ws, c, "alice-nb-4", 0);
    p = workspace_pod_decode(pod, NULL);
    assert_false(p->capacity_fallback);
    workspace_pod_free(p);
    cJSON_Delete(pod);
    workspace_free(ws);
    workspace_class_free(c);
}

/* The spec hash leaves the product out (a snapshot on an alternative
 * product matches); the form with the product is another hash. */
static void test_pod_spec_hash(void **state)
{
    (void)state;
    struct workspace_class *c = class_from(gpu_class);
    struct workspace *ws = ws_from(ws_json);
    char a[POD_SPEC_HASH_SIZE], b[POD_SPEC_HASH_SIZE], t4[POD_SPEC_HASH_SIZE],
        l4[POD_SPEC_HASH_SIZE];
    assert_int_equal(workspace_pod_spec_hash(ws, c, a), 0);
    assert_int_equal(strlen(a), 64);
    free(c->product);
    c->product = strdup("NVIDIA-L4");
    assert_int_equal(workspace_pod_spec_hash(ws, c, b), 0);
    assert_string_equal(a, b);
    assert_int_equal(workspace_pod_spec_hash_with_product(ws, c, "Tesla-T4", t4), 0);
    assert_int_equal(workspace_pod_spec_hash_with_product(ws, c, "NVIDIA-L4", l4), 0);
    assert_string_not_equal(t4, l4);
    assert_string_not_equal(t4, a);
    /* Still the image and the rest. */
    free(ws->image);
    ws->image = strdup("quay.io/jupyter/scipy-notebook:2");
    assert_int_equal(workspace_pod_spec_hash(ws, c, b), 0);
    assert_string_not_equal(a, b);
    workspace_free(ws);
    workspace_class_free(c);
}

static void test_pvc_decode(void **state)
{
    (void)state;
    cJSON *obj = cJSON_Parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{"
        "\"name\":\"alice-nb-home\",\"namespace\":\"team-a\",\"uid\":\"c-1\","
        "\"deletionTimestamp\":\"2027-01-01T00:00:00Z\","
        "\"finalizers\":[\"kubernetes.io/pvc-protection\"]},"
        "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"]},\"status\":{\"phase\":\"Bound\"}}");
    struct workspace_pvc *p = workspace_pvc_decode(obj, NULL);
    assert_non_null(p);
    assert_string_equal(p->name, "alice-nb-home");
    assert_string_equal(p->ns, "team-a");
    assert_string_equal(p->phase, "Bound");
    assert_string_equal(p->uid, "c-1");
    assert_int_equal(p->deletion_ms, T0);
    workspace_pvc_free(p);
    cJSON_Delete(obj);

    obj = cJSON_Parse("{\"metadata\":{\"name\":\"x-home\"}}");
    p = workspace_pvc_decode(obj, NULL);
    assert_null(p->phase);
    assert_int_equal(p->deletion_ms, 0);
    workspace_pvc_free(p);
    cJSON_Delete(obj);
    workspace_pvc_free(NULL);
}

/* Why a pod ended, from what the API server put on it; the copy kept after
 * the cache drops it says the same. */
static void test_pod_end(void **state)
{
    (void)state;
    static const struct {
        const char *status; /* the pod's status JSON */
        int node_absent;
        const char *kind, *message;
    } rows[] = {
        {"{\"phase\":\"Running\",\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":"
         "\"True\",\"reason\":\"EvictionByEvictionAPI\",\"message\":\"Eviction API: evicting\","
         "\"lastTransitionTime\":\"2027-01-01T00:00:00Z\"}]}",
         0, "Evicted", "DisruptionTarget EvictionByEvictionAPI: Eviction API: evicting"},
        {"{\"phase\":\"Running\",\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":"
         "\"True\",\"reason\":\"PreemptionByScheduler\"}]}",
         0, "Preempted", "DisruptionTarget PreemptionByScheduler"},
        {"{\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":\"True\",\"reason\":"
         "\"DeletionByTaintManager\"}]}",
         0, "NodeTainted", "DisruptionTarget DeletionByTaintManager"},
        {"{\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":\"True\",\"reason\":"
         "\"DeletionByPodGC\",\"message\":\"PodGC: node no longer exists\"}]}",
         0, "NodeLost", "DisruptionTarget DeletionByPodGC: PodGC: node no longer exists"},
        /* a DisruptionTarget that is False says nothing */
        {"{\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":\"False\",\"reason\":"
         "\"EvictionByEvictionAPI\"}]}",
         0, "Deleted", ""},
        {"{\"phase\":\"Failed\",\"reason\":\"Evicted\",\"message\":\"The node was low on "
         "resource: memory.\"}",
         0, "Evicted",
         "status.reason Evicted: The node was low on resource: memory.; phase Failed"},
        {"{\"phase\":\"Failed\",\"containerStatuses\":[{\"restartCount\":0,\"state\":"
         "{\"terminated\":{\"reason\":\"OOMKilled\",\"exitCode\":137}}}]}",
         0, "OOMKilled", "phase Failed; container terminated: OOMKilled"},
        /* a container OOM-killed and restarted: the pod goes on, only its deletion ends it */
        {"{\"phase\":\"Running\",\"containerStatuses\":[{\"restartCount\":1,\"lastState\":"
         "{\"terminated\":{\"reason\":\"OOMKilled\"}},\"state\":{\"running\":{}}}]}",
         0, "Deleted", "container terminated: OOMKilled"},
        /* Kueue preempted its Workload (as Kueue v0.17.0 wrote it on the
         * local cluster: its quota reclaimed by another team) */
        {"{\"phase\":\"Running\",\"conditions\":[{\"type\":\"TerminationTarget\",\"status\":"
         "\"True\",\"reason\":\"WorkloadEvictedDueToPreempted\",\"message\":\"Preempted to "
         "accommodate a workload (UID: 8a9b, JobUID: cfd2) due to reclamation within the "
         "cohort\"}]}",
         0, "Preempted",
         "TerminationTarget (Kueue) WorkloadEvictedDueToPreempted: Preempted to accommodate a "
         "workload (UID: 8a9b, JobUID: cfd2) due to reclamation within the cohort"},
        {"{\"phase\":\"Running\",\"conditions\":[{\"type\":\"TerminationTarget\",\"status\":"
         "\"True\",\"reason\":\"WorkloadEvictedDueToPodsReadyTimeout\"}]}",
         0, "Evicted", "TerminationTarget (Kueue) WorkloadEvictedDueToPodsReadyTimeout"},
        {"{\"phase\":\"Succeeded\"}", 0, "Stopped", "phase Succeeded"},
        {"{\"phase\":\"Running\"}", 1, "NodeLost", "node gpu-node-1: no longer in the cluster"},
        {"{\"phase\":\"Running\"}", 0, "Deleted", ""},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char json[1024];
        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"nb-1\",\"namespace\":\"team\",\"uid\":"
                 "\"u-1\"},\"spec\":{\"nodeName\":\"gpu-node-1\"},\"status\":%s}",
                 rows[i].status);
        cJSON *obj = cJSON_Parse(json);
        assert_non_null(obj);
        struct workspace_pod *p = workspace_pod_decode(obj, NULL);
        cJSON_Delete(obj);
        assert_non_null(p);
        struct workspace_pod *copy = workspace_pod_copy_end(p);
        assert_non_null(copy);
        struct pod_end e, c;
        workspace_pod_end(p, rows[i].node_absent, &e);
        workspace_pod_end(copy, rows[i].node_absent, &c);
        if (strcmp(e.kind, rows[i].kind) != 0 || strcmp(e.message, rows[i].message) != 0)
            fail_msg("row %zu: %s \"%s\", want %s \"%s\"", i, e.kind, e.message, rows[i].kind,
                     rows[i].message);
        assert_string_equal(c.kind, e.kind);
        assert_string_equal(c.message, e.message);
        assert_string_equal(copy->uid, "u-1");
        assert_string_equal(copy->node_name, "gpu-node-1");
        if (i == 0)
            assert_int_equal(e.at_ms, T0);
        workspace_pod_free(copy);
        workspace_pod_free(p);
    }
}

/* The Jupyter token: the pod gets it from the Secret the probe reads it
 * from, unless the workspace sets JUPYTER_TOKEN itself. */
static void test_pod_token_env(void **state)
{
    (void)state;
    struct workspace_class *c = class_from(
        "{\"metadata\":{\"name\":\"cpu\"},\"spec\":{"
        "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],\"default\":\"quay.io/jupyter/base:1\"},"
        "\"home\":{\"size\":\"5Gi\"},\"activity\":{\"application\":\"Jupyter\","
        "\"tokenSecretRef\":{\"name\":\"{workspace}-jupyter\",\"key\":\"t\"}}}}");
    struct workspace *ws = ws_from("{\"metadata\":{\"name\":\"alice-nb\",\"namespace\":\"team-a\","
                                   "\"uid\":\"uid-123\"},\"spec\":{\"className\":\"cpu\"}}");
    cJSON *pod = workspace_pod_build(ws, c, "alice-nb-1", 0);
    assert_non_null(pod);
    cJSON *e;
    int found = 0;
    cJSON_ArrayForEach(e, at(pod, "spec.containers.0.env"))
    {
        if (strcmp(cJSON_GetObjectItem(e, "name")->valuestring, "JUPYTER_TOKEN") != 0)
            continue;
        found++;
        assert_null(cJSON_GetObjectItem(e, "value"));
        assert_string_equal(str_at(e, "valueFrom.secretKeyRef.name"), "alice-nb-jupyter");
        assert_string_equal(str_at(e, "valueFrom.secretKeyRef.key"), "t");
    }
    assert_int_equal(found, 1);
    cJSON_Delete(pod);
    workspace_free(ws);

    ws = ws_from("{\"metadata\":{\"name\":\"alice-nb\",\"namespace\":\"team-a\",\"uid\":\"u\"},"
                 "\"spec\":{\"className\":\"cpu\","
                 "\"env\":[{\"name\":\"JUPYTER_TOKEN\",\"value\":\"mine\"}]}}");
    pod = workspace_pod_build(ws, c, "alice-nb-1", 0);
    assert_string_equal(env_value(pod, "JUPYTER_TOKEN"), "mine");
    assert_int_equal(cJSON_GetArraySize(at(pod, "spec.containers.0.env")), 2);
    cJSON_Delete(pod);
    workspace_free(ws);
    workspace_class_free(c);
}

/* The class's env comes first; a variable the Workspace sets too is the
 * Workspace's (once, in the Workspace's place); the controller's follow.
 * Neither enters the pod-spec hash (as the Workspace's env never did). */
static void test_pod_class_env(void **state)
{
    (void)state;
    struct workspace_class *c = class_from(
        "{\"metadata\":{\"name\":\"cpu\"},\"spec\":{"
        "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],\"default\":\"quay.io/jupyter/base:1\"},"
        "\"home\":{\"size\":\"5Gi\"},"
        "\"env\":[{\"name\":\"NOTEBOOK_ARGS\",\"value\":\"--KernelManager.transport=ipc\"},"
        "{\"name\":\"B\",\"value\":\"from-class\"},{\"name\":\"JUPYTER_TOKEN\",\"value\":\"c\"}]}"
        "}");
    struct workspace *ws = ws_from(ws_json);
    cJSON *pod = workspace_pod_build(ws, c, "alice-nb-1", 0);
    assert_non_null(pod);
    cJSON *env = at(pod, "spec.containers.0.env");
    /* NOTEBOOK_ARGS, JUPYTER_TOKEN (class); PROJECT, B (workspace);
     * HIBERNATOR_WORKSPACE; no token Secret: the class sets the variable. */
    assert_int_equal(cJSON_GetArraySize(env), 5);
    assert_string_equal(str_at(env, "0.name"), "NOTEBOOK_ARGS");
    assert_string_equal(str_at(env, "0.value"), "--KernelManager.transport=ipc");
    assert_string_equal(str_at(env, "1.name"), "JUPYTER_TOKEN");
    assert_string_equal(str_at(env, "2.name"), "PROJECT");
    assert_string_equal(str_at(env, "3.name"), "B");
    assert_string_equal(str_at(env, "3.value"), "2");
    assert_string_equal(str_at(env, "4.name"), "HIBERNATOR_WORKSPACE");
    int b = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, env) b += strcmp(cJSON_GetObjectItem(e, "name")->valuestring, "B") == 0;
    assert_int_equal(b, 1);
    cJSON_Delete(pod);

    struct workspace_class *plain = class_from(
        "{\"metadata\":{\"name\":\"cpu\"},\"spec\":{"
        "\"images\":{\"allowed\":[\"quay.io/jupyter/*\"],\"default\":\"quay.io/jupyter/base:1\"},"
        "\"home\":{\"size\":\"5Gi\"}}}");
    char with[POD_SPEC_HASH_SIZE], without[POD_SPEC_HASH_SIZE];
    assert_int_equal(workspace_pod_spec_hash(ws, c, with), 0);
    assert_int_equal(workspace_pod_spec_hash(ws, plain, without), 0);
    assert_string_equal(with, without);
    workspace_class_free(plain);
    workspace_free(ws);
    workspace_class_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_build_gpu),
        cmocka_unit_test(test_pod_build_cpu),
        cmocka_unit_test(test_pod_build_largest_quantities),
        cmocka_unit_test(test_pvc_build),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_pod_decode),
        cmocka_unit_test(test_pod_build_decode),
        cmocka_unit_test(test_pod_snapshot_group),
        cmocka_unit_test(test_pod_checkpoint_image),
        cmocka_unit_test(test_pod_backend_nodes),
        cmocka_unit_test(test_pod_extended_resources),
        cmocka_unit_test(test_pvc_decode),
        cmocka_unit_test(test_pod_end),
        cmocka_unit_test(test_pod_token_env),
        cmocka_unit_test(test_pod_class_env),
        cmocka_unit_test(test_pod_build_pins_and_fallback),
        cmocka_unit_test(test_pod_queue),
        cmocka_unit_test(test_pod_eviction_hold),
        cmocka_unit_test(test_pod_spec_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
