/*
 * decide: the controller's whole judgement, as a pure function.
 *
 * Given a Workspace, its class, what exists of its pods and home claim, and
 * the time, it returns the status the Workspace should have and the few
 * actions that move the world toward it. No I/O, no clock, no globals: the
 * reconciler reads the caches, calls it, executes the actions idempotently
 * and writes the status when it changed. Tested from tables in
 * tests/unit/test_decide.c.
 *
 * Ownership: the input is only read. The output owns its status copy and
 * action strings; release them with decide_output_clear().
 */
#ifndef HIBERNATOR_WORKSPACE_DECIDE_H
#define HIBERNATOR_WORKSPACE_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot/view.h"
#include "workspace/class.h"
#include "workspace/idle.h"
#include "workspace/names.h"
#include "workspace/pod.h"
#include "workspace/workspace.h"

/* What the application of a pod restored from a snapshot said to the
 * class's activity probe since the pod was restored (docs/snapshots.md,
 * "Does the restored session answer?"). The reconciler fills it from the
 * rounds it runs while decide_output.restore_check_wanted asks for them. */
struct restore_check {
    const char *pod;       /* the pod the rounds probed */
    int64_t answered_ms;   /* when the application first answered; 0: not yet */
    int64_t last_round_ms; /* when the latest round started; 0: none yet */
    const char *error;     /* the latest round's failure; NULL when it answered */
    /* When the answering application's process started by its own account
     * (probe_result.app_started_ms of the first answer), 0: it did not say. */
    int64_t app_started_ms;
    /* The kernels that first answer listed (probe_result.kernels and
     * n_kernels; -1: it did not say). */
    const uint32_t *kernels;
    int n_kernels;
};

/* What the node cache knows of a node one of the pods is on. */
struct decide_node {
    const char *name;
    const char *product; /* its value of the class's product label; NULL: not known */
    /* What GKE matches a restore on (docs/snapshots.md, "Restore
     * compatibility"); NULL: not known. */
    const char *machine_family;
    const char *machine_type;
    const char *node_pool;
    const char *version; /* status.nodeInfo.kubeletVersion */
    /* Its GPU driver's version by GPU Feature Discovery's labels
     * (GPU_DRIVER_*_LABEL, workspace/pod.h); NULL: not labelled. */
    const char *driver_major;
    const char *driver_minor;
    const char *driver_rev;
};

/* For the resume of a paused workspace whose snapshot recorded its node's
 * version: the nodes of the synced node cache that carry the snapshot's
 * accelerator product, and how many of them run that version. A snapshot
 * none of them can restore (some carry the product, none the version: the
 * node pool moved on) cannot come back. */
struct decide_restore_nodes {
    size_t with_product;
    size_t matching;  /* of those, on the snapshot's node version */
    const char *seen; /* a version they run, for the message; NULL: none */
};

/* What the controller knows of its request to the application to write
 * its checkpoint before a snapshot (controller/app_checkpoint.h). The
 * answer enters here and is recorded in status.snapshot.appCheckpoint, so a
 * controller that restarts decides on the record, never on memory. */
struct app_checkpoint_seen {
    const char *attempt; /* the snapshot attempt's handle it was asked for */
    int answered;        /* 0: the request is in flight */
    int written;         /* answered with a 2xx: the checkpoint is written */
    int64_t answered_ms;
    const char *message; /* why not, when not written */
};

/* What Kueue says of the Workload of a pod it holds back (docs/kueue.md).
 * Strings borrowed for one decision. */
struct queue_view {
    /* Why it is not admitted: the QuotaReserved=False condition's message
     * ("couldn't assign flavors to pod set main: insufficient unused quota
     * for nvidia.com/gpu in flavor t4, 1 more needed"), NULL: none yet. */
    const char *message;
    /* Its place among the LocalQueue's pending workloads, 1 first, and how
     * many wait there (the visibility API); 0: not known. */
    int64_t position;
    int64_t pending;
    int64_t since_ms; /* the Workload's creation, 0: not known */
};

struct decide_input {
    const struct workspace *ws;
    const struct workspace_class *cls; /* NULL: the class does not exist or is unreadable */
    /* The workspace's pods (by label), any order; when more carry its label
     * than a decision looks at, the pod the status names and live pods are
     * among them (controller/pods_seen.h), so none left out matters here. */
    const struct workspace_pod *const *pods;
    size_t n_pods;
    const struct workspace_pvc *pvc;             /* NULL: no home claim */
    int64_t now_ms;                              /* Unix milliseconds */
    const struct activity_observation *activity; /* latest probe round, NULL: none */
    const struct tz *zone; /* the class's pause-window time zone, NULL: not loaded */
    /* The backend's view of status.snapshot.attempt; NULL: nothing seen. */
    const struct snapshot_view *snapshot;
    /* The backend's view of the attempt workspace_snapshot_next_attempt()
     * names: one a pass may have begun and died before recording (the
     * backend's objects, not the status, say what a pause kept); NULL: none
     * is looked for. */
    const struct snapshot_view *next_attempt;
    /* Every snapshot the backend holds for this workspace, for retention. */
    const struct snapshot_view *snapshots;
    size_t n_snapshots;
    /* The storage config the backend holds those snapshots under (GKE: the
     * workspace's policy's storageConfigName, "" for none); NULL: no
     * policy, or not known yet. */
    const char *snapshot_storage;
    /* The pod that took the accelerator the last pause released
     * (ledger_taker_pick() over the controller's pods); NULL: none seen. */
    const struct workspace_pod *accelerator_taker;
    /* The nodes the pods are on, as far as the node cache knows them (any
     * order; a node not listed is not known): which accelerator a pod got. */
    const struct decide_node *nodes;
    size_t n_nodes;
    /* NULL: not looked at (no accelerator, no recorded version, the node
     * cache has not synced, or the workspace is not paused with a snapshot). */
    const struct decide_restore_nodes *restore_nodes;
    /* Kueue's Workload of the pod the decision keeps, when Kueue holds it
     * back; NULL: none seen. */
    const struct queue_view *queue;
    /* The node the last pause's pod ran on is absent from the synced node
     * cache (ledger_awaits_node_removal() holds): it left the cluster. */
    int pause_node_absent;
    /* The class exists but cannot be read: why, naming its field (cls is
     * then NULL). Every workspace of it is reported invalid and frozen. */
    const char *class_error;
    /* The last pod of the workspace the pod cache dropped, as it was then
     * (workspace_pod_copy_end()); NULL: none kept. Says why a pod the status
     * names ended when no pass saw it leave. */
    const struct workspace_pod *gone_pod;
    /* The node status.nodeName names is absent from the synced node cache. */
    int pod_node_absent;
    /* The restored pod's application, as far as it was asked; NULL: no
     * round yet (the check starts, or the controller did). */
    const struct restore_check *restore_check;
    /* The request to the application to write its checkpoint; NULL: none
     * known to this process (none made, or made before a restart). */
    const struct app_checkpoint_seen *app_checkpoint;
    /* spec.preWarm's time zone; NULL: not loaded, yet or (prewarm_zone_error
     * says why) at all. */
    const struct tz *prewarm_zone;
    const char *prewarm_zone_error;
    /* The class's pre-warms that are starting (resumed ahead of their
     * owners, not ready yet), other than this workspace's; and whether a
     * person's resume (of any class) waits for capacity of the class's
     * accelerator: pre-warms give way to it (docs/idle.md, "Ready before
     * you are"). */
    size_t class_prewarms_starting;
    int person_waiting;
};

enum action_type {
    ACTION_ADD_FINALIZER,    /* name NULL */
    ACTION_CREATE_PVC,       /* name: the claim; build it with workspace_pvc_build() */
    ACTION_CREATE_POD,       /* name, from_checkpoint, snapshot (restore from it, or NULL),
                                product (pin it, NULL: the class's), capacity_fallback */
    ACTION_DELETE_POD,       /* name, grace_seconds (-1: the pod's own) */
    ACTION_DELETE_PVC,       /* name */
    ACTION_RELEASE_PVC,      /* name: drop its owner reference so it outlives the workspace */
    ACTION_REMOVE_FINALIZER, /* name NULL */
    ACTION_EVENT,            /* event_type, reason, message, occasion */
    ACTION_AUTO_PAUSE,       /* time_ms, message: set spec.paused with the auto-pause
                                annotations, in one write guarded by resourceVersion */
    ACTION_SNAPSHOT_BEGIN,   /* name: the attempt's handle; the backend snapshots the pod
                                status.podName names (docs/snapshots.md) */
    ACTION_SNAPSHOT_DELETE,  /* name: a snapshot the backend removes, with what made it */
    ACTION_AUTO_RESUME,      /* time_ms, for_ms, message: set spec.paused false with the
                                pre-warm annotations, in one write guarded by
                                resourceVersion (spec.preWarm) */
    ACTION_RAISE_PRIORITY,   /* name: the pod; reason: the WorkloadPriorityClass its Kueue
                                label (QUEUE_PRIORITY_LABEL) is set to: a pre-warm's pod
                                raised to the class's priority (docs/kueue.md) */
    ACTION_APP_CHECKPOINT,   /* name: the snapshot attempt's handle; time_ms: the deadline.
                                Ask the application in the pod status.podName names to write
                                its checkpoint (the class's checkpoint.request), unless a
                                request for this attempt is already in flight or answered */
};

struct action {
    enum action_type type;
    char *name;
    int from_checkpoint;
    int64_t grace_seconds;
    const char *event_type; /* "Normal" | "Warning" (static) */
    char *reason;
    char *message;
    int64_t time_ms;
    int64_t for_ms; /* AutoResume: the owner's time it is for */
    char *snapshot;
    char *product;
    /* CreatePod of a restore: the snapshot's node's machine type and node
     * pool to steer it by (struct pod_build); NULL: none recorded. */
    char *machine_type;
    char *node_pool;
    char *gpu_driver; /* and its GPU driver version (struct pod_build) */
    /* CreatePod of a restore from a checkpoint image (ContainerCheckpoint):
     * the image (status.snapshot.image); NULL: none. */
    char *image;
    int capacity_fallback;
    int prewarm; /* CreatePod: a pre-warm's pod (struct pod_build) */
    /* CreatePod: the pod's snapshot group (NULL: no label). SnapshotBegin:
     * the source pod's group; NULL: a pod of an earlier version, without
     * one (the policy is then left without groups). */
    char *group;
    /* An Event's transition, from counters and names in the status ("pause-3",
     * "resume-3", a snapshot attempt's handle, "pod-<name>"): the same
     * transition decided again after a crash has the same occasion, so the
     * shell names the Event from it and posts it once. NULL: the Event stands
     * for the object version it was decided on. */
    char *occasion;
};

#define DECIDE_MAX_ACTIONS 16

struct decide_output {
    struct workspace_status status; /* the status to write */
    int status_changed;             /* differs from the input's status */
    struct action actions[DECIDE_MAX_ACTIONS];
    size_t n_actions;
    int64_t requeue_after_ms; /* 0: no timed re-check needed */
    int probe_wanted;         /* Running, ready, and the class has activity sources */
    int probe_now;            /* a pause is due: probe once more before it */
    /* A pod restored from a snapshot waits for its application to answer:
     * ask it (the class's application probe, in place of the activity
     * rounds) and fill decide_input.restore_check. */
    int restore_check_wanted;
};

/* The rules, their states, conditions and events: docs/state-machine.md.
 * Returns 0 or -ENOMEM (-E2BIG would mean more actions than
 * DECIDE_MAX_ACTIONS, which the rules never produce). On failure *out is
 * left cleared. */
int workspace_decide(const struct decide_input *in, struct decide_output *out);

/* How long before the owner's time a pre-warm of a workspace with status st
 * starts (docs/idle.md, "Ready before you are"): the class's preWarm.lead,
 * else twice the last measured time to ready in whole minutes, at least
 * PREWARM_MIN_DEFAULT_LEAD_MS, PREWARM_FIRST_LEAD_MS before any. */
int64_t workspace_prewarm_lead(const struct workspace_class *cls,
                               const struct workspace_status *st);

/* The handle of the snapshot attempt a pass would begin next for ws's pause
 * (the pause in progress, or the one spec.paused asks for and no pass has
 * counted yet; the attempt after the one the status holds for it), so the
 * reconciler can show decide() whether the backend has it already: a pass
 * that began it may have died before its status write (docs/snapshots.md,
 * "After a crash"). Pure. Returns 1 and the handle in out, 0 when no pause
 * is asked for, or -EINVAL. */
int workspace_snapshot_next_attempt(const struct workspace *ws, char out[NAMES_SIZE]);

/* Releases what *out owns (its status and the actions' strings) and zeroes
 * it; accepts NULL and a cleared output. */
void decide_output_clear(struct decide_output *out);

/* "CreatePod", "DeletePod", ...: the action's name in logs (static;
 * "Unknown" for a value out of the enum). */
const char *action_type_name(enum action_type t);

#endif
