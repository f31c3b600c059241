/*
 * workspace_pod: the pods and the home volume claim of a workspace, as the
 * controller observes them (trimmed) and as it builds them.
 *
 * Ownership: decoded structs own their strings (free functions below);
 * builders return new cJSON trees owned by the caller.
 */
#ifndef HIBERNATOR_WORKSPACE_POD_H
#define HIBERNATOR_WORKSPACE_POD_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "workspace/class.h"
#include "workspace/workspace.h"

/* On pods the controller builds: "true" when the pod was told to start from
 * the application's checkpoint, "false" otherwise. */
#define FROM_CHECKPOINT_ANNOTATION "hibernator.dev/from-checkpoint"
/* The snapshot a pod is to be restored from (GKE's annotation: the backend
 * restores the pod from the named PodSnapshot). Every other workspace pod
 * carries it empty: GKE then restores nothing. */
#define RESTORE_SNAPSHOT_ANNOTATION "podsnapshot.gke.io/ps-name"
/* On every workspace pod: its snapshot group (docs/snapshots.md, "Snapshot
 * groups"). The snapshot backend's policy groups snapshots by it and
 * selects only pods that carry it: a pod is restored by default only from a
 * snapshot of its own group. A pod meant to start from files gets a group no
 * snapshot has (workspace_snapshot_group()); a restore the group of its
 * snapshot. */
#define SNAPSHOT_GROUP_LABEL "hibernator.dev/snapshot-group"
/* On a pod restored from a checkpoint image (the ContainerCheckpoint
 * backend: the runtime restores a container created from it): the snapshot
 * it is restored from. Such a pod says its restore through its container
 * (running: restored; waiting on a pull or create error: failed), not
 * through a condition. */
#define RESTORED_FROM_ANNOTATION "hibernator.dev/restored-from"
/* On a pod started after a capacity timeout under onCapacityTimeout FallBack:
 * it may run on any accelerator product the class allows. */
#define CAPACITY_FALLBACK_ANNOTATION "hibernator.dev/capacity-fallback"
/* The condition a restored pod reports. */
#define POD_RESTORED_CONDITION "PodRestored"
/* The one container of a workspace pod, and its home volume. */
#define WORKSPACE_CONTAINER "workspace"
#define HOME_VOLUME "home"
/* Always set in the container: the workspace's name. */
#define WORKSPACE_ENV "HIBERNATOR_WORKSPACE"
/* Set from the class's Jupyter token Secret (spec.activity.tokenSecretRef). */
#define TOKEN_ENV "JUPYTER_TOKEN"

/* Extended resources a pod's record keeps. */
#define POD_MAX_EXTENDED 4

/* What decide() needs to know about one of the workspace's pods. */
struct workspace_pod {
    char *ns;
    char *name;
    char *uid;
    char *workspace; /* value of the hibernator.dev/workspace label */
    char *node_name; /* spec.nodeName, NULL until scheduled */
    char *pod_ip;    /* status.podIP, NULL until known */
    char *phase;     /* Pending, Running, Succeeded, Failed, Unknown */
    int64_t created_ms;
    int64_t deletion_ms; /* 0 unless terminating */
    /* metadata.deletionGracePeriodSeconds, when deletion_grace_known: the
     * delete was sent that long before deletion_ms. */
    int deletion_grace_known;
    int64_t deletion_grace_s;
    /* The workspace container's preStop sleep hook in seconds (0: none):
     * the kubelet keeps the process running that long into a deletion
     * (the class's spec.queue.evictionHold). */
    int64_t prestop_sleep_s;
    int ready;                   /* condition Ready=True */
    int scheduled;               /* condition PodScheduled=True */
    int64_t scheduled_ms;        /* PodScheduled lastTransitionTime when True */
    int64_t ready_ms;            /* Ready lastTransitionTime when True */
    int unschedulable;           /* PodScheduled=False, reason Unschedulable */
    char *unschedulable_message; /* the scheduler's words */
    int restore_from_checkpoint; /* the pod was built with the checkpoint env */
    char *snapshot;              /* the snapshot it is restored from, NULL: none */
    int restored;                /* condition PodRestored=True */
    int64_t restored_ms;         /* PodRestored lastTransitionTime when True */
    /* Condition PodRestored=False: the backend attempted a restore and says
     * it failed (or is pending); restore_failure is its "<reason>: <message>"
     * (NULL: it gave neither). No PodRestored at all: no restore attempted. */
    int restore_failed;
    char *restore_failure;
    /* Restored from a checkpoint image (RESTORED_FROM_ANNOTATION): its
     * container cannot start from it (the image cannot be pulled, or the
     * runtime cannot create the container from it): it never will. */
    int restore_stuck;
    char *group;       /* label SNAPSHOT_GROUP_LABEL, NULL: none (an older pod) */
    int restart_count; /* the highest of its containers' */
    /* The latest state.running.startedAt of its containers, 0: none running.
     * Later than a snapshot's request: a container (re)started after it, so
     * the process that request was for is gone. */
    int64_t started_ms;
    int crash_looping; /* a container waits in CrashLoopBackOff */
    /* The extended resources (a domain outside kubernetes.io, such as
     * nvidia.com/gpu) its containers ask for, the first POD_MAX_EXTENDED. */
    char *extended[POD_MAX_EXTENDED];
    int capacity_fallback; /* annotated CAPACITY_FALLBACK_ANNOTATION "true" */
    /* Why it ends, when the API server says: the DisruptionTarget condition
     * (True) with its reason ("EvictionByEvictionAPI", "PreemptionByScheduler",
     * "DeletionByTaintManager", "DeletionByPodGC", "TerminationByKubelet") and
     * message, status.reason and status.message ("Evicted", ...), and the
     * reason a container last terminated for ("OOMKilled", "Error"). */
    char *disruption_reason;
    char *disruption_message;
    int64_t disruption_ms; /* the condition's lastTransitionTime */
    char *status_reason;
    char *status_message;
    char *terminated_reason;
    /* Kueue's TerminationTarget condition (True), set before it deletes a
     * pod whose Workload it evicted: reason WorkloadEvictedDueTo<why>
     * ("...Preempted", "...PodsReadyTimeout", ...) and Kueue's message. */
    char *termination_reason;
    char *termination_message;
    /* Kueue (docs/kueue.md): the LocalQueue it was sent to (the label
     * QUEUE_NAME_LABEL), NULL: none; and whether Kueue still holds it back
     * (the scheduling gate QUEUE_ADMISSION_GATE: not admitted yet). */
    char *queue;
    int queue_gated;
    /* The label QUEUE_PRIORITY_LABEL: the WorkloadPriorityClass Kueue
     * gives it, NULL: none. */
    char *priority_class;
};

#define QUEUE_NAME_LABEL "kueue.x-k8s.io/queue-name"
#define QUEUE_PRIORITY_LABEL "kueue.x-k8s.io/priority-class"
#define QUEUE_ADMISSION_GATE "kueue.x-k8s.io/admission"

/* What decide() needs to know about the home claim. */
struct workspace_pvc {
    char *ns;
    char *name;
    char *uid;   /* which claim: one deleted and made again has another */
    char *phase; /* Pending, Bound, Lost */
    int64_t created_ms;
    int64_t deletion_ms;
};

/* Informer codecs (void * = struct workspace_pod * / struct workspace_pvc *):
 * workspace_pod_decode() and workspace_pvc_decode() return a new struct made
 * from obj (only read; data is unused), the caller's to free with
 * workspace_pod_free() / workspace_pvc_free(), which free it and its strings
 * (a decoded claim's strings share its allocation: never free one alone).
 * Decoding is lenient (a missing field is unset); NULL only when out of
 * memory. The free functions accept NULL. */
void *workspace_pod_decode(const cJSON *obj, void *data);
void workspace_pod_free(void *pod);
void *workspace_pvc_decode(const cJSON *obj, void *data);
void workspace_pvc_free(void *pvc);

/* A copy of what workspace_pod_end() and decide() read of a pod that is
 * gone (name, uid, node, phase, times, the restore and fallback marks and
 * why it ended): the reconciler keeps the last one of each workspace after
 * the cache dropped it. NULL when out of memory; free with
 * workspace_pod_free(). */
struct workspace_pod *workspace_pod_copy_end(const struct workspace_pod *p);

/* Why a pod ended without the controller asking (docs/state-machine.md,
 * "Interruptions"): kind is one word of a fixed set — "Evicted",
 * "Preempted", "NodeTainted", "NodeLost", "TerminatedByKubelet",
 * "OOMKilled", "Stopped", "Deleted" — and message what the API server
 * said (the DisruptionTarget condition, status.reason, a container's
 * terminated reason; may be empty). node_absent: the node cache no longer
 * has the pod's node. at_ms: the condition's time when known, else 0. */
#define POD_END_KIND_SIZE 32
#define POD_END_MESSAGE_SIZE 600
struct pod_end {
    char kind[POD_END_KIND_SIZE];
    char message[POD_END_MESSAGE_SIZE];
    int64_t at_ms;
};
/* Fills *ret (the caller's; every field written) with why p ended; p is
 * only read. Cannot fail; a long message is cut. */
void workspace_pod_end(const struct workspace_pod *p, int node_absent, struct pod_end *ret);

/* "Preempted" or "Evicted" when Kueue evicted the pod's Workload (its
 * TerminationTarget condition says WorkloadEvictedDueTo<why>), else NULL.
 * Static strings. */
const char *workspace_pod_queue_eviction(const struct workspace_pod *p);

/* Whether the pod's containers ask for the extended resource. */
int workspace_pod_requests(const struct workspace_pod *p, const char *resource);

/* The home claim's name: "<workspace>-home" (names_home_claim()). Returns
 * malloc'd, or NULL when out of memory (or for a name no Workspace can have:
 * empty or longer than 253). */
char *workspace_home_claim_name(const struct workspace *ws);

/* The pod name for a pod generation: "<workspace>-<n>", cut to 63 characters
 * with a hash when longer (names_pod()). Malloc'd, or NULL as above. */
char *workspace_pod_name(const struct workspace *ws, int64_t pod_generation);

/* Builds the PersistentVolumeClaim for home, owned by the workspace: the
 * workspace's home size or the class default, ReadWriteOnce, the class's
 * storage class. NULL when out of memory or without a class. */
cJSON *workspace_pvc_build(const struct workspace *ws, const struct workspace_class *c);

/* What makes one pod of a workspace differ from another. */
struct pod_build {
    const char *name;
    int from_checkpoint;  /* the checkpoint env var is set */
    const char *snapshot; /* restore from it (the backend's annotation); NULL: none (the
                             annotation is empty) */
    /* The accelerator product the pod is pinned to (a snapshot's); NULL: the
     * class's product. */
    const char *product;
    /* Any product the class allows, the class's product preferred: node
     * affinity instead of the product pin, and the fallback annotation. */
    int capacity_fallback;
    /* Its snapshot group (SNAPSHOT_GROUP_LABEL); NULL: no label. */
    const char *group;
    /* A restore is steered onto a node like its snapshot's (docs/snapshots.md,
     * "Restore compatibility"): required machine type (MACHINE_TYPE_LABEL),
     * preferred node pool (NODE_POOL_LABEL); NULL: no such term. */
    const char *machine_type;
    const char *node_pool;
    /* The GPU driver version "major.minor.rev" its snapshot was taken
     * under: required of the node, by GPU Feature Discovery's labels
     * (GPU_DRIVER_*_LABEL); NULL: no such term. */
    const char *gpu_driver;
    /* A restore from a checkpoint image (ContainerCheckpoint): the image the
     * container runs instead of the workspace's, and the Secret it is
     * pulled with (NULL: none); snapshot is then named in
     * RESTORED_FROM_ANNOTATION, and GKE's annotation stays empty. */
    const char *image;
    const char *pull_secret;
    /* A pre-warm's pod: submitted at the class's preWarmPriorityClass
     * (when it has one) instead of its priorityClass. */
    int prewarm;
};

/* The well-known label of a node's machine type, and GKE's of its node pool
 * and machine family. */
#define MACHINE_TYPE_LABEL "node.kubernetes.io/instance-type"
#define NODE_POOL_LABEL "cloud.google.com/gke-nodepool"
#define MACHINE_FAMILY_LABEL "cloud.google.com/machine-family"

/* NVIDIA GPU Feature Discovery's labels of the node's GPU driver version
 * (NVIDIA/k8s-device-plugin docs/gpu-feature-discovery/README.md): a CUDA
 * checkpoint is restored only under the driver it was taken under. */
#define GPU_DRIVER_MAJOR_LABEL "nvidia.com/cuda.driver.major"
#define GPU_DRIVER_MINOR_LABEL "nvidia.com/cuda.driver.minor"
#define GPU_DRIVER_REV_LABEL "nvidia.com/cuda.driver.rev"

#define SNAPSHOT_GROUP_SIZE 64
/* The snapshot group of a pod of the workspace meant to start from files:
 * "<workspace uid>-<pod generation>", unique per pod generation and per
 * incarnation of the workspace, a valid label value (at most 63
 * characters: a longer uid is cut). Writes into out; returns 0, or -EINVAL
 * without a uid (out untouched). */
int workspace_snapshot_group(const struct workspace *ws, int64_t pod_generation,
                             char out[SNAPSHOT_GROUP_SIZE]);

/* Builds the workspace's pod: image, port, resources, accelerator request and
 * node selector (product label pinned, or for a capacity fallback node
 * affinity: required In the allowed products, preferred the class's),
 * tolerations, runtimeClassName, home volume, env (the class's, then the
 * workspace's, which wins over a class variable of the same name,
 * HIBERNATOR_WORKSPACE, and the checkpoint env var when from_checkpoint),
 * grace period, labels (the snapshot group's too), the from-checkpoint, restore and fallback
 * annotations and the owner reference. NULL when out of memory or without a
 * class. */
cJSON *workspace_pod_build_with(const struct workspace *ws, const struct workspace_class *c,
                                const struct pod_build *b);
/* Shorthands of workspace_pod_build_with() for the class's product, without
 * a snapshot group label or a capacity fallback: workspace_pod_build_restore()
 * restores from snapshot (NULL: none), workspace_pod_build() from none. Same
 * results. */
cJSON *workspace_pod_build_restore(const struct workspace *ws, const struct workspace_class *c,
                                   const char *pod_name, int from_checkpoint, const char *snapshot);
cJSON *workspace_pod_build(const struct workspace *ws, const struct workspace_class *c,
                           const char *pod_name, int from_checkpoint);

/* The name of the workspace's Jupyter token Secret: the class's
 * tokenSecretRef name with {namespace}, {workspace} and {port} filled in. The
 * probe reads the token from it and the pod gets it as JUPYTER_TOKEN, so both
 * use this. Returns 0 with *ret_name (caller frees), -ENOENT when the class
 * names no token (or is not Jupyter), -EINVAL for a bad template, -ENOMEM. */
int workspace_token_secret_name(const struct workspace *ws, const struct workspace_class *c,
                                char **ret_name);

#define POD_SPEC_HASH_SIZE 65
/* A hash (64 hex digits) of what a restored pod must match of the pod the
 * snapshot came from: image, port, resources, runtime class, accelerator
 * resource and count, home mount and claim. Not the accelerator product: a
 * restore is pinned to the snapshot's own product, which the class must
 * allow (checked apart). Writes a NUL-terminated string into out; returns 0
 * or -ENOMEM (out untouched; also for a name no Workspace can have, as
 * workspace_home_claim_name()). c must not be NULL. */
int workspace_pod_spec_hash(const struct workspace *ws, const struct workspace_class *c,
                            char out[POD_SPEC_HASH_SIZE]);

/* The hash as snapshots recorded it while it still covered the product
 * (their status.snapshot.gpuProduct): a snapshot whose hash matches this one
 * matches the pod template too. Returns 0 or -ENOMEM. */
int workspace_pod_spec_hash_with_product(const struct workspace *ws,
                                         const struct workspace_class *c, const char *product,
                                         char out[POD_SPEC_HASH_SIZE]);

#endif
