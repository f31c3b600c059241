/*
 * workspace: the decoded Workspace: metadata, spec and status.
 *
 * The status struct is both what decide() reads and what it writes; it is
 * encoded back to JSON for the status subresource. Its fields are described
 * once, in the tables of workspace/status_fields.h, which drive its
 * decoding, encoding, copying and clearing.
 *
 * Ownership: a decoded workspace owns all its strings; workspace_free()
 * releases it. workspace_status_copy() makes an independent copy.
 */
#ifndef HIBERNATOR_WORKSPACE_WORKSPACE_H
#define HIBERNATOR_WORKSPACE_WORKSPACE_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Times are Unix milliseconds; 0 means unset. A figure in seconds
 * (snapshot_seconds, seconds, seconds_to_ready) is known exactly when the
 * time it is measured to is set (snapshot_ready_ms, ready_ms): the
 * controller writes the two together, and the decoder reads a figure only
 * beside its time, so 0.0 with its time set is a real 0.0 s. */

enum workspace_state {
    WS_STATE_NONE, /* never reconciled */
    WS_STATE_PENDING,
    WS_STATE_RUNNING,
    WS_STATE_PAUSING,
    WS_STATE_PAUSED,
    WS_STATE_RESUMING,
    WS_STATE_WAITING_FOR_CAPACITY,
    WS_STATE_FAILED,
    WS_STATE_QUEUED,
};

/* "Pending", "Running", ...; "" for WS_STATE_NONE. */
const char *workspace_state_name(enum workspace_state s);

/* The inverse; WS_STATE_NONE for NULL or an unknown name. */
enum workspace_state workspace_state_from_name(const char *name);

enum condition_status {
    COND_UNKNOWN,
    COND_TRUE,
    COND_FALSE,
};

/* metav1.Condition */
struct condition {
    char *type;
    enum condition_status status;
    int64_t observed_generation;
    int64_t last_transition_ms;
    char *reason;
    char *message;
};

struct env_var {
    char *name;
    char *value;
};

/* spec.preWarm (docs/api.md): the days and local time the owner usually
 * starts at, in a time zone. */
struct workspace_prewarm {
    unsigned days;   /* bit d: weekday d (0 = Sunday .. 6 = Saturday); 0: every day */
    int minute;      /* minutes after local midnight, 0..1439 */
    char *time_zone; /* IANA name; "UTC" when not given */
};

struct workspace_pause_timeline {
    int64_t requested_ms;
    int64_t pod_deleted_ms;
    int64_t accelerator_released_ms;
    char *reason;  /* "User" | "IdleTimeout" | NULL */
    char *message; /* for IdleTimeout: the figures that led to it */
    /* The GPU-hours ledger (docs/api.md). */
    int64_t work_ended_ms;     /* idle: the last activity the pause was based on; user: requested */
    int64_t held_since_ms;     /* when the accelerator hold this pause ended began */
    int64_t snapshot_ready_ms; /* the pause's snapshot was Ready */
    double snapshot_seconds;   /* from its request to Ready */
    char *memory;              /* "snapshot" | "files" | "snapshotFailed" | NULL: not yet known */
    char *node_name;           /* where the pod ran */
    char *product;             /* its accelerator's product, NULL: none or unknown */
    int64_t accelerator_taken_ms;
    char *accelerator_taken_by; /* "ns/pod": another workspace's pod that got the accelerator */
    int64_t node_removed_ms;    /* the node left the cluster */
    /* Timeline fields no pass could observe (a crash lost the moment), by
     * their JSON names, comma-separated: "podDeletedAt". NULL: none. */
    char *unobserved;
};

/* The snapshot of the last pause (docs/snapshots.md). */
struct workspace_snapshot {
    char *attempt; /* the backend's handle of the current attempt */
    int64_t attempts;
    char *name; /* the snapshot, once known */
    /* status.snapshot.image: what a restore pod runs (ContainerCheckpoint:
     * the checkpoint image, repository@digest), recorded when Ready; NULL:
     * the backend restores by name. */
    char *image;
    /* status.snapshot.appStartedAt: when the application's process started
     * by its own account (Jupyter's "started"), as the last probe round
     * before the attempt saw it; 0: not known. A restore whose application
     * says another start is a new process: the session did not come back. */
    int64_t app_started_ms;
    /* status.snapshot.appKernels and appKernelCount: the kernels Jupyter
     * listed in that round, each as 8 hex digits of its id's hash
     * (jupyter_kernel_hash()), ascending, comma-separated, at most
     * PROBE_KERNELS_MAX of them, and how many it listed; NULL and 0: none,
     * or not known. A restored session lists them again. */
    char *app_kernels;
    int64_t app_kernel_count;
    char *phase; /* "InProgress" | "Ready" | "Failed" | NULL */
    int64_t requested_ms;
    int64_t ready_ms;
    int64_t failed_ms;         /* when the attempt was found failed or timed out */
    int64_t restore_failed_ms; /* when a restore from it crashed: not used again */
    double seconds;
    char *node_name;
    char *gpu_product;
    char *pod_spec_hash;
    char *message;
    char *home_claim_uid; /* the home claim the pod used: restored only onto it */
    char *class_name;     /* the workspace's class when it was taken */
    /* status.snapshot.node: what GKE matches a restore on, of the source
     * pod's node when the snapshot was asked for (docs/snapshots.md,
     * "Restore compatibility"); NULL: not known. */
    char *node_machine_family; /* label cloud.google.com/machine-family */
    char *node_machine_type;   /* label node.kubernetes.io/instance-type */
    char *node_pool;           /* label cloud.google.com/gke-nodepool */
    char *node_version;        /* status.nodeInfo.kubeletVersion */
    /* GPU Feature Discovery's driver version labels, "major.minor.rev":
     * a restore requires a node of the same (NULL: not labelled). */
    char *node_gpu_driver;
    /* status.snapshot.appCheckpoint: the application asked to write its
     * checkpoint before the attempt named here (docs/snapshots.md). */
    char *checkpoint_attempt;        /* the attempt's handle it was asked for */
    int64_t checkpoint_requested_ms; /* first asked */
    int64_t checkpoint_answered_ms;  /* answered, or given up on at the timeout */
    char *checkpoint_result;         /* "Written" | "Failed" | "Timeout" | NULL: waiting */
    char *checkpoint_message;        /* why it failed, one line */
    char *group;                     /* the source pod's snapshot group: a restore pod carries it */
    /* A pod was restored though nobody asked (docs/snapshots.md): the
     * snapshots of this group (or "*": all) Ready by rejected_ms are
     * deleted, and no pod starts while one remains. */
    char *rejected_group;
    int64_t rejected_ms;
};

/* The claim that holds the workspace's home, and the last one lost
 * (docs/state-machine.md, "A lost home"). */
struct workspace_home {
    char *claim_uid;         /* the claim seen holding home, NULL: none seen yet */
    int64_t since_ms;        /* its creation time */
    char *lost_claim_uid;    /* the last claim seen gone (or replaced), NULL: none */
    int64_t lost_ms;         /* when it was seen gone */
    int64_t acknowledged_ms; /* a person acknowledged the loss (onLoss WaitForAcknowledgement) */
    char *fresh_pod;         /* the first pod created on the new home */
};

/* The last pod that ended without the controller asking. */
struct workspace_interruption {
    int64_t at_ms;
    char *pod;
    char *pod_uid;
    char *node_name;
    char *reason;      /* workspace_pod_end()'s kind: "Evicted", "NodeLost", ... */
    char *message;     /* what the API server said */
    char *replaced_by; /* the pod created in its place */
};

/* What the controller knows about the use of a running workspace. */
struct workspace_activity {
    int64_t last_activity_ms;
    char *last_activity_source; /* "jupyter", "gpu", "annotation", "keepAlive", "start", ... */
    int64_t last_probe_ms;
    char *last_probe_result; /* "Active" | "Idle" | "Failed" */
    char *last_probe_error;
    int64_t idle_since_ms;
    int64_t pause_at_ms; /* set while a pause is announced (Idle=True) */
    int64_t idle_after_seconds;
    int64_t keep_alive_until_ms;     /* the bounded keep-alive */
    int64_t keep_alive_requested_ms; /* the spec value it was computed from */
};

struct workspace_resume_timeline {
    int64_t requested_ms;
    int64_t pod_created_ms;
    int64_t pod_scheduled_ms;
    int64_t ready_ms;
    double seconds_to_ready;
    char *restored_from; /* "FromSnapshot" | "ColdStart" | "FromCheckpoint" | "Fresh" |
                            "FreshHome" | NULL */
    int pre_warmed;      /* the controller resumed it ahead of its owner (spec.preWarm) */
};

/* status.preWarm: resuming ahead of the owner (docs/idle.md, "Ready
 * before you are"). A pre-warm is open from its resume request until it is
 * settled: used (a person's activity after it), unused (paused again with
 * none) or yielded (it gave way, waiting for capacity, to a person's
 * resume). */
struct workspace_prewarm_status {
    int64_t next_ms;       /* the next planned resume; 0: none planned */
    int64_t next_for_ms;   /* the owner's time it is planned for */
    int64_t last_ms;       /* the last pre-warm's resume request */
    int64_t last_for_ms;   /* the owner's time it was for */
    int64_t last_ready_ms; /* its pod was ready */
    int64_t last_used_ms;  /* a person's first activity after it; 0: none (yet) */
    char *last_outcome;    /* "Used" | "Unused" | "Yielded" | NULL: open, or none yet */
    /* A person's last resume, or first use of a pre-warm: skipAfterDays
     * counts from it (the workspace's creation before any). */
    int64_t person_ms;
    int64_t count; /* pre-warms begun */
    int64_t used;
    int64_t unused;
    int64_t yielded;
    int64_t ready_in_time; /* ready before the owner's time */
};

/* status.queue: while the workspace is Queued, where its pod waits in
 * Kueue (docs/kueue.md); absent in every other state. */
struct workspace_queue_status {
    char *name;       /* the LocalQueue */
    int64_t position; /* 1: next; 0: not known (no visibility API) */
    int64_t pending;  /* workloads waiting in that queue; 0: not known */
    int64_t since_ms; /* its Workload's creation, else the pod's */
    char *message;    /* why not admitted: the Workload's QuotaReserved=False message */
};

/* One completed pause and the resume that followed it, as status.history
 * keeps it: the pause's timeline without its message, the resume's without
 * podCreatedAt. */
struct workspace_pause_record {
    struct workspace_pause_timeline pause;
    struct workspace_resume_timeline resume; /* zero until that resume is ready */
};

/* status.accounting.resumesFrom: the resumes that ended (their pod was
 * ready), by lastResume.restoredFrom then. Counted in the pass that records
 * lastResume.readyAt, so exactly once per resume; a first start of a
 * workspace created paused is no resume and is not counted. */
struct workspace_resume_sources {
    int64_t from_snapshot;
    int64_t cold_start;
    int64_t from_checkpoint;
    int64_t fresh;
    int64_t fresh_home;
};

/* status.accounting.pausesKept: the completed pauses, by lastPause.memory,
 * counted in the pass that first sets it. */
struct workspace_pause_memories {
    int64_t snapshot;
    int64_t files;
    int64_t snapshot_failed;
};

/* status.history keeps this many pauses, the newest first. */
#define WORKSPACE_HISTORY_MAX 20

struct workspace_status {
    int64_t observed_generation;
    enum workspace_state state;
    int64_t state_since_ms; /* when state last changed */
    char *message;
    char *pod_name;
    char *pod_uid; /* the uid of the pod pod_name names, once a pass saw it */
    /* The pod the status named that the controller deleted itself (or
     * judged its own delete after a crash): its end is no interruption. */
    char *deleted_pod;
    int64_t pod_generation;
    char *node_name;
    char *home_claim_name;
    char *accelerator_resource;
    int accelerator_count;
    char *accelerator_product; /* the node's product label once known, else the one asked for */
    int accelerator_fallback;  /* the pod is a capacity fallback (any allowed product) */
    struct condition *conditions;
    size_t n_conditions;
    /* The blocks below are never NULL: each points at a block of the
     * status's own or, when absent, at a read-only block of zeros (see
     * workspace_status_init()), so they read the same either way and a
     * status of a cache keeps only what is set. A status is written only
     * after workspace_status_own() (or as workspace_status_copy()'s copy). */
    struct workspace_pause_timeline *last_pause;
    struct workspace_resume_timeline *last_resume;
    int64_t waiting_for_capacity_since_ms;
    struct workspace_activity *activity;
    struct workspace_snapshot *snapshot;
    int64_t pauses;
    int64_t resumes;
    double accelerator_seconds_released;
    double accelerator_seconds_held;   /* count x seconds of every hold that ended */
    int64_t accelerator_held_since_ms; /* a pod of the workspace holds the accelerator */
    /* Counters that outlive the history's 20 records (docs/api.md). */
    struct workspace_resume_sources resumes_from;
    struct workspace_pause_memories pauses_kept;
    struct workspace_pause_record *history; /* newest first, at most WORKSPACE_HISTORY_MAX */
    size_t n_history;
    struct workspace_home *home;
    int64_t interruptions; /* pods that ended without the controller asking */
    struct workspace_interruption *last_interruption;
    struct workspace_prewarm_status *prewarm;
    struct workspace_queue_status *queue;
};

struct workspace {
    char *ns;
    char *name;
    char *uid;
    char *resource_version;
    int64_t generation;
    int64_t created_ms;  /* metadata.creationTimestamp, 0 if absent */
    int64_t deletion_ms; /* metadata.deletionTimestamp, 0 if not deleting */
    int has_finalizer;   /* hibernator.dev/cleanup present */

    char *class_name;
    char *image; /* NULL: class default */
    /* spec.localQueue: the Kueue LocalQueue its pods go to; NULL: the
     * class's spec.queue.localQueue (or none). */
    char *local_queue;
    int paused;
    char *home_size; /* NULL: class default */
    struct env_var *env;
    size_t n_env;
    int64_t keep_alive_until_ms; /* spec.keepAliveUntil, 0 if unset */
    int64_t idle_after_ms;       /* spec.idle.after, 0 if unset */
    /* spec.preWarm: when the owner usually starts; NULL: not asked for.
     * Owned. */
    struct workspace_prewarm *prewarm;

    /* Annotations (metadata). */
    int64_t annotated_activity_ms; /* hibernator.dev/last-activity, 0 if unset or unreadable */
    int64_t auto_paused_ms;        /* hibernator.dev/auto-paused-at */
    char *auto_pause_message;      /* hibernator.dev/auto-pause-reason */
    /* hibernator.dev/auto-pause-cause: "Preempted" or "Evicted" (a static
     * string), NULL: absent or another value. */
    const char *auto_pause_cause;
    char *acknowledged_home_loss; /* hibernator.dev/acknowledge-home-loss */
    int64_t prewarmed_ms;         /* hibernator.dev/pre-warmed-at */
    int64_t prewarm_for_ms;       /* hibernator.dev/pre-warm-for */

    /* The spec cannot be read: what is wrong, naming the field. The spec
     * fields are then unset (but className, when it was readable), and
     * decide() reports it and acts on nothing else. */
    char *spec_error;

    struct workspace_status status;

    /* workspace_decode_lenient() only (strict decoding leaves them unset):
     * what could not be read, one line a field naming it ("spec.paused:
     * must be true or false"), in the order met, at most
     * WORKSPACE_UNREAD_MAX (n_unread_more counts the rest); and whether
     * the controller would not read the object at all (workspace_decode()
     * fails on it: unread[0] says why). */
    char **unread;
    size_t n_unread;
    size_t n_unread_more;
    int unreadable;

    /* Set by workspace_share_strings(): the pool its repeated strings are
     * held in; NULL: it owns all its strings. */
    struct strpool *pool;
};

#define WORKSPACE_UNREAD_MAX 32

#define WORKSPACE_API_VERSION "hibernator.dev/v1alpha1"
#define WORKSPACE_KIND "Workspace"
#define WORKSPACE_FINALIZER "hibernator.dev/cleanup"
#define WORKSPACE_LABEL "hibernator.dev/workspace"
#define MANAGED_BY_LABEL "app.kubernetes.io/managed-by"
#define MANAGED_BY_VALUE "hibernator"
/* A process in the pod (or anyone) sets this to an RFC 3339 time to report
 * activity; a time in the future counts as now. */
#define LAST_ACTIVITY_ANNOTATION "hibernator.dev/last-activity"
/* Written by the controller together with spec.paused=true when it pauses an
 * idle workspace, so the reason survives a crash before the status write. */
#define AUTO_PAUSED_AT_ANNOTATION "hibernator.dev/auto-paused-at"
#define AUTO_PAUSE_REASON_ANNOTATION "hibernator.dev/auto-pause-reason"
/* With them when the pause is for an eviction by Kueue: "Preempted" or
 * "Evicted" (the pause's reason); absent for an idle pause. */
#define AUTO_PAUSE_CAUSE_ANNOTATION "hibernator.dev/auto-pause-cause"
/* cause if it is one AUTO_PAUSE_CAUSE_ANNOTATION may hold (as a static
 * string), else NULL. */
const char *workspace_auto_pause_cause(const char *cause);
/* A person sets this to the uid of a lost home claim (status.home.lostClaimUID)
 * to let the workspace start on a new, empty home. */
#define ACKNOWLEDGE_HOME_LOSS_ANNOTATION "hibernator.dev/acknowledge-home-loss"
/* Written by the controller together with spec.paused=false when it resumes
 * a workspace ahead of its owner (spec.preWarm): when, and the owner's time
 * it is for, so the resume is counted as a pre-warm after a crash too. */
#define PREWARMED_AT_ANNOTATION "hibernator.dev/pre-warmed-at"
#define PREWARM_FOR_ANNOTATION "hibernator.dev/pre-warm-for"

/* spec.preWarm in words: "08:30 Mon,Tue,Wed (Europe/Berlin)", days Monday
 * first, "every day" when none are named. */
#define WORKSPACE_PREWARM_TEXT_SIZE 96
void workspace_prewarm_text(const struct workspace_prewarm *p,
                            char out[WORKSPACE_PREWARM_TEXT_SIZE]);

/* Decodes a Workspace object. Returns 0, -ENOMEM, or -EINVAL with *ret_err
 * naming the field when the object itself cannot be read (not an object, no
 * metadata or name; malloc'd, the caller frees it). A spec that cannot be
 * read is not an error here: the workspace is returned with spec_error set,
 * so it can be reported on the object. The status is read leniently: a
 * field of the wrong type or an unreadable time counts as unset. */
int workspace_decode(const cJSON *obj, struct workspace **ret_ws, char **ret_err);
/* Decodes a Workspace for showing it as it is, the way the controller
 * reads it but keeping what it can: a field that cannot be read is unset
 * and named in ws->unread; the rest of the object is still read. The spec
 * fields that can be read are kept, and spec_error still says what the
 * controller reports; an object without metadata or name is returned with
 * unreadable set. Returns 0, -ENOMEM, or -EINVAL when obj is not a JSON
 * object at all. */
int workspace_decode_lenient(const cJSON *obj, struct workspace **ret_ws);

/* Releases a decoded workspace and everything it owns (its holds on a
 * pool's strings too); accepts NULL. */
void workspace_free(struct workspace *ws);

struct strpool;

/* For a cache of many workspaces: the strings that repeat across them (the
 * namespace, the class name, and the status fields marked shared:
 * conditions' types, reasons and messages, a state's message, node and
 * product names) become holds on pool's copies, so the cache keeps one of
 * each. ws is read as before; pool must outlive it (workspace_free() gives
 * the holds back). Returns 0 or -ENOMEM (some strings are then still its
 * own, which is as correct, only larger). */
int workspace_share_strings(struct workspace *ws, struct strpool *pool);

/* Encodes a status as the JSON of the status subresource's "status" field.
 * Times are RFC 3339 (whole seconds); unset fields (0, NULL, "") and empty
 * sub-objects are omitted, so write it whole (PUT of /status) or with a
 * patch that nulls what disappeared. Conditions come in a fixed order:
 * Valid, Ready, CapacityAvailable, Restored, then the rest by type. Returns a
 * new tree (caller deletes) or NULL when out of memory. */
cJSON *workspace_status_to_json(const struct workspace_status *s);

/* workspace_status_copy() deep-copies src into *dst (which is overwritten,
 * not released: clear it first if it owned anything), every block of the
 * copy its own, so the copy may be written; returns 0 or -ENOMEM (*dst
 * untouched). workspace_status_clear() releases what s owns and leaves it
 * empty (workspace_status_init()); it accepts NULL. */
int workspace_status_copy(const struct workspace_status *src, struct workspace_status *dst);
void workspace_status_clear(struct workspace_status *s);

/* Makes s an empty status, every block absent (the read-only empties).
 * Allocates nothing. */
void workspace_status_init(struct workspace_status *s);

/* Gives s a block of its own for each absent one, so any field may be
 * written. Returns 0 or -ENOMEM (s stays valid, some blocks still absent). */
int workspace_status_own(struct workspace_status *s);

/* "True", "False" or "Unknown". */
const char *workspace_condition_status_name(enum condition_status s);

/* True when two statuses would encode to the same JSON (so times that differ
 * only below a second are equal). Out of memory reads as different. */
int workspace_status_equal(const struct workspace_status *a, const struct workspace_status *b);

/* Releases a timeline's strings and zeroes it. */
void workspace_pause_timeline_clear(struct workspace_pause_timeline *t);

/* Puts a record of s->last_pause (no resume yet) at the front of
 * s->history, dropping the oldest beyond WORKSPACE_HISTORY_MAX. Returns 0 or
 * -ENOMEM (s unchanged). */
int workspace_status_push_history(struct workspace_status *s);

/* Removes s->history[i] (releasing its strings); the later ones move up. */
void workspace_status_drop_record(struct workspace_status *s, size_t i);

/* The record of s->last_pause: history[0] when it is of the same pause
 * (pausedAt in the same second as lastPause.requestedAt), else NULL. */
struct workspace_pause_record *workspace_status_last_record(const struct workspace_status *s);

/* Makes the record of s->last_pause, if there is one, mirror it, and once
 * the resume that followed it is ready (resumes caught up with pauses), that
 * resume too. Returns 0 or -ENOMEM (the record may be half updated; the
 * status is still whole). */
int workspace_status_sync_history(struct workspace_status *s);

/* A condition's or the status's message: one line of at most this many bytes. */
#define WORKSPACE_MESSAGE_MAX 1024

/* Makes s such a message in place: control characters become spaces, and
 * text longer than WORKSPACE_MESSAGE_MAX bytes is cut at a character
 * boundary and ends in "...". */
void workspace_message_one_line(char *s);

/* Finds a condition by type, or NULL. */
const struct condition *workspace_status_condition(const struct workspace_status *s,
                                                   const char *type);

/* Sets a condition the metav1 way: lastTransitionTime changes only when
 * status changes. Returns 0 or -ENOMEM. */
int workspace_status_set_condition(struct workspace_status *s, const char *type,
                                   enum condition_status status, const char *reason,
                                   const char *message, int64_t generation, int64_t now_ms);

/* Removes a condition; returns 1 when it was there, 0 when not. */
int workspace_status_remove_condition(struct workspace_status *s, const char *type);

#endif
