/*
 * workspace_class: the decoded WorkspaceClass, the part of it the controller
 * reads (see docs/api.md). Cached by the class informer.
 *
 * Ownership: a decoded class owns all its strings and arrays;
 * workspace_class_free() releases it. tolerations and resources are kept as
 * JSON (cJSON) because they are copied into pods as they are.
 */
#ifndef HIBERNATOR_WORKSPACE_CLASS_H
#define HIBERNATOR_WORKSPACE_CLASS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "workspace/pause_window.h"

/* spec.accelerator.count is at most this (the schema says so too). */
#define CLASS_MAX_ACCELERATOR_COUNT 16

enum capacity_timeout_action {
    CAPACITY_TIMEOUT_WAIT,
    CAPACITY_TIMEOUT_FAIL,
    /* Replace the waiting pod, once, by one from files and the checkpoint
     * that may run on any product the class allows (docs/state-machine.md). */
    CAPACITY_TIMEOUT_FALL_BACK,
};

enum home_on_delete {
    HOME_ON_DELETE_DELETE,
    HOME_ON_DELETE_RETAIN,
};

/* What the controller does when the home claim it recorded is gone
 * (docs/state-machine.md, "A lost home"). */
enum home_on_loss {
    /* Nothing starts on a new, empty home until a person annotates the
     * Workspace with the lost claim's uid (the default). */
    HOME_ON_LOSS_WAIT_FOR_ACKNOWLEDGEMENT,
    HOME_ON_LOSS_RECREATE,           /* a new claim at once */
    HOME_ON_LOSS_RECREATE_ON_RESUME, /* a new claim when the workspace is to run */
};

enum activity_application {
    ACTIVITY_APP_NONE,
    ACTIVITY_APP_JUPYTER,
    ACTIVITY_APP_CODE_SERVER,
};

/* How the controller learns whether a workspace is in use (spec.activity). */
struct activity_config {
    enum activity_application application;
    char *url_template;       /* {podIP} {port} {namespace} {workspace} {pod} */
    char *token_secret_name;  /* NULL: no token; may contain {workspace} */
    char *token_secret_key;   /* default "token" */
    char *prometheus_url;     /* NULL: no GPU metrics */
    char *gpu_query_template; /* {namespace} {pod} {workspace} */
    int64_t interval_ms;
    int64_t timeout_ms;
};

/* When a running workspace is paused automatically (spec.idle). */
struct idle_class_policy {
    int auto_pause;
    int64_t after_ms;
    int64_t min_after_ms; /* bounds of a workspace's spec.idle.after */
    int64_t max_after_ms;
    int64_t min_running_ms;
    int64_t warn_before_ms;
    int64_t max_keep_alive_ms;
    int gpu_threshold_percent;
    char *time_zone;                /* IANA name, default "UTC" */
    struct pause_schedule schedule; /* no windows: any time */
};

/* Resuming a paused workspace ahead of its owner (spec.preWarm;
 * docs/idle.md, "Ready before you are"). Not enabled: a workspace's
 * spec.preWarm is refused, with a condition saying so. */
struct prewarm_class_policy {
    int enabled;
    /* How long before the owner's time the resume starts; 0: twice the
     * workspace's last measured time to ready, at least
     * PREWARM_MIN_DEFAULT_LEAD_MS (PREWARM_FIRST_LEAD_MS before any). */
    int64_t lead_ms;
    int64_t max_concurrent;  /* pre-warms of the class starting at once */
    int64_t skip_after_days; /* none after this many days without a person's use */
    /* A pre-warmed workspace nobody used is not paused for idleness
     * before the owner's time plus this. */
    int64_t grace_ms;
};

#define PREWARM_MIN_DEFAULT_LEAD_MS (5 * 60 * 1000)
#define PREWARM_FIRST_LEAD_MS (15 * 60 * 1000)

enum snapshot_backend_kind {
    SNAPSHOT_BACKEND_NONE, /* files and the application's checkpoint only */
    SNAPSHOT_BACKEND_GKE,  /* GKE Pod Snapshots (podsnapshot.gke.io) */
    /* The kubelet's container checkpoint (CRIU), stored as a checkpoint
     * image in an OCI registry, restored by the runtime (hibernator.dev
     * ContainerSnapshot; docs/snapshots.md) */
    SNAPSHOT_BACKEND_CONTAINER_CHECKPOINT,
};

/* What the workspace side needs to know of a backend, one row per kind
 * (workspace/class.c): a new backend is a row here and a constructor in
 * snapshot/backend.c, not a branch in decide(). */
struct snapshot_backend_traits {
    const char *name; /* as spec.snapshot.backend says it */
    /* The spec.snapshot field it cannot do without ("storageConfigName",
     * "repository"), NULL: none. */
    const char *required_field;
    /* A restore pod runs the snapshot's image (status.snapshot.image, set
     * when Ready); else the backend restores by the snapshot's name. */
    int restores_from_image;
    /* The label (value "true") of the nodes that can take and restore its
     * snapshots: every pod of such a class is pinned to them (a pod
     * elsewhere could be neither snapshotted nor restored). NULL: any node
     * the rest of the class allows. */
    const char *node_label;
};

/* The row of kind; NULL for a kind no row describes. */
const struct snapshot_backend_traits *snapshot_backend_traits(enum snapshot_backend_kind kind);

enum snapshot_on_failure {
    SNAPSHOT_ON_FAILURE_RETRY,                /* keep the pod; try again later */
    SNAPSHOT_ON_FAILURE_PAUSE_WITHOUT_MEMORY, /* delete the pod anyway */
};

/* Pausing with memory (spec.snapshot, docs/snapshots.md). */
struct snapshot_config {
    enum snapshot_backend_kind backend;
    char *storage_config_name; /* GKE: the PodSnapshotStorageConfig */
    /* ContainerCheckpoint: where checkpoint images go, "host[:port]/path"
     * (each workspace's under <repository>/<namespace>/<workspace>), and
     * the Secret (in the workspace's namespace) a restore pod pulls them
     * with; NULL: none. */
    char *repository;
    char *pull_secret_name;
    int64_t timeout_ms;
    enum snapshot_on_failure on_failure;
    int64_t retry_after_ms;
    int keep; /* snapshots kept per workspace */
    int64_t last_access_timeout_ms;
    /* A restored pod's application must answer the activity probe within
     * this after the restore, or the restore counts as failed. */
    int64_t restore_check_timeout_ms;
};

struct label {
    char *key;
    char *value;
};

/* One of spec.env: a variable of the workspace container (docs/api.md). */
struct class_env_var {
    char *name;
    char *value;
};

struct workspace_class {
    char *name;
    char **allowed_images; /* glob patterns */
    size_t n_allowed_images;
    char *default_image;
    int port;

    int has_accelerator;
    char *accelerator_resource; /* e.g. nvidia.com/gpu */
    int accelerator_count;
    char *product_label; /* node label key, e.g. nvidia.com/gpu.product */
    char *product;       /* e.g. Tesla-T4 */
    /* Other products a pod may run on (after a capacity fallback, or
     * restored from a snapshot taken on one of them); never the product. */
    char **alternative_products;
    size_t n_alternative_products;
    struct label *node_selector;
    size_t n_node_selector;

    cJSON *resources;   /* corev1 ResourceRequirements or NULL */
    cJSON *tolerations; /* array or NULL */
    char *runtime_class_name;
    /* spec.env: put into every pod's container before the Workspace's own
     * spec.env (a Workspace variable of the same name wins); names unique,
     * none reserved (HIBERNATOR_*, the checkpoint envVar). */
    struct class_env_var *env;
    size_t n_env;

    int64_t home_size_bytes;
    char *home_size; /* as written, e.g. "10Gi" */
    int64_t home_max_bytes;
    char *home_max_size; /* as written; the size when maxSize is not given */
    char *storage_class_name;
    char *home_mount_path;
    enum home_on_delete home_on_delete;
    enum home_on_loss home_on_loss;

    char *checkpoint_path; /* default <mountPath>/.hibernator/checkpoint */
    char *checkpoint_env;  /* default HIBERNATOR_CHECKPOINT_PATH */
    /* spec.checkpoint.request: how to ask the application to write its
     * checkpoint before a snapshot (docs/snapshots.md, "The application's
     * checkpoint"). url NULL: nothing is asked; what the application saved
     * on its own is what a resume from files gets. */
    struct checkpoint_request {
        char *url_template; /* {podIP} {port} {namespace} {workspace} {pod} */
        char *method;       /* "POST" (default) or "PUT" */
        int64_t timeout_ms; /* the answer's deadline; default 60s */
    } checkpoint_request;

    int64_t pause_grace_seconds;
    int64_t capacity_timeout_ms;
    enum capacity_timeout_action on_capacity_timeout;

    struct activity_config activity;
    struct idle_class_policy idle;
    struct snapshot_config snapshot;
    struct prewarm_class_policy prewarm;
    /* spec.queue: pods go through Kueue (docs/kueue.md); local_queue NULL:
     * they go to the scheduler directly. */
    struct queue_config {
        char *local_queue;    /* the LocalQueue in the workspace's namespace */
        char *priority_class; /* a WorkloadPriorityClass, NULL: Kueue's default */
        /* Other LocalQueues a Workspace may name (spec.localQueue). */
        char **allowed;
        size_t n_allowed;
        /* spec.queue.evictionHold: how long a pod Kueue evicts keeps
         * running (a preStop sleep hook, within a grace period lengthened
         * by as much) so that its snapshot is taken before it stops; 0:
         * none, an eviction stops it at once. Only with a snapshot backend. */
        int64_t eviction_hold_ms;
        /* spec.queue.preWarmPriorityClass: the WorkloadPriorityClass a
         * pre-warm's pod is submitted with (meant to be the lowest, so that
         * a pre-warm preempts nobody), raised to priority_class at its
         * owner's time or once its person uses it; NULL: the pre-warm goes
         * at priority_class. Set only with priority_class. */
        char *prewarm_priority_class;
    } queue;
};

#define MAX_ALLOWED_QUEUES 16
#define MAX_EVICTION_HOLD_MS (30 * 60 * 1000)

/* The seconds of a pod's preStop sleep hook for the class's evictionHold
 * (rounded up), 0: none. */
int64_t workspace_class_eviction_hold_seconds(const struct workspace_class *c);

/* Whether the class lets a workspace's pods go to the LocalQueue name: its
 * own queue or one of spec.queue.allowedLocalQueues. */
int workspace_class_allows_queue(const struct workspace_class *c, const char *name);

/* Decodes a WorkspaceClass object, applying the defaults of docs/api.md
 * (home.onDelete defaults to Delete). Returns 0, -ENOMEM, or -EINVAL with
 * *ret_err naming the field ("spec.port: must be between 1 and 65535",
 * malloc'd, the caller frees it). */
int workspace_class_decode(const cJSON *obj, struct workspace_class **ret_class, char **ret_err);

/* Releases a decoded class and everything it owns; accepts NULL. */
void workspace_class_free(struct workspace_class *c);

/* True when image matches one of the class's allowed patterns. */
int workspace_class_allows_image(const struct workspace_class *c, const char *image);

/* True when the class has an accelerator and product is its product or
 * one of its alternative products. */
int workspace_class_allows_product(const struct workspace_class *c, const char *product);

/* The largest quantity the controller carries: past it the API server
 * lowers a binary-suffixed value ("1234567890123456789012345Gi") to this
 * one, so a class saying more is refused rather than changed. */
#define QUANTITY_MAX INT64_MAX

/* The largest quantity written as a JSON number that arrives exactly
 * (2^53 - 1): the decoder reads numbers as doubles. */
#define QUANTITY_MAX_JSON_NUMBER INT64_C(9007199254740991)

/* Parses a Kubernetes quantity ("10Gi", "500M", "1.5Ti", "1000", "1e3") into
 * bytes, exactly; a fraction of a byte rounds up. Returns 0; -ERANGE for a
 * quantity above QUANTITY_MAX; -EDOM for one of more than 19 significant
 * digits (not read exactly) below it; -EINVAL for anything else, negative
 * values and the suffixes n, u and m included. Nothing is written on
 * failure. */
int quantity_parse_bytes(const char *s, int64_t *ret_bytes);

/* The same for any resource's quantity: the suffixes n, u and m are read
 * too, and the value is rounded up to a whole unit ("500m" is 1). */
int quantity_parse_value(const char *s, int64_t *ret_value);

#endif
