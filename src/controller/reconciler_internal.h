/*
 * reconciler_internal: what the reconciler's files share. Not public API
 * (that is include/controller/reconciler.h); only src/controller/reconciler*.c
 * include it. One job per file:
 *
 *   reconciler.c         its life (new, start, close), the work queue, and
 *                        reconcile(): one pass over one key
 *   reconciler_keys.c    the caches' codecs and callbacks, and the indexes
 *                        they keep, that turn watch events into queued keys
 *   reconciler_gather.c  the facts decide() reads, gathered from the caches
 *                        and trackers; decide() itself; what its actions need
 *                        built at decision time
 *   reconciler_job.c     a decision's actions run in order as a job (API
 *                        calls, the snapshot backend's calls, Events, the
 *                        application's checkpoint), actions that fail, and
 *                        the status write
 *
 * A function one file offers the others is named after that file
 * (reconciler_keys_*(), reconciler_gather*(), reconciler_job_*()); the rest
 * stay static.
 *
 * Ownership: the reconciler owns everything it points to except the loop,
 * the client and the metrics (borrowed); a job belongs to the reconciler's
 * list of jobs until it is finished or cancelled; a struct gathered points
 * into the caches and is valid until the loop turns.
 */
#ifndef HIBERNATOR_CONTROLLER_RECONCILER_INTERNAL_H
#define HIBERNATOR_CONTROLLER_RECONCILER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <uv.h>

#include "controller/activity_log.h"
#include "controller/activity_tracker.h"
#include "controller/app_checkpoint.h"
#include "controller/expectations.h"
#include "controller/metrics.h"
#include "controller/node_index.h"
#include "controller/pods_seen.h"
#include "controller/prewarm_turns.h"
#include "controller/queue_positions.h"
#include "controller/queue_workloads.h"
#include "controller/reconciler.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/node_cache.h"
#include "kube/workqueue.h"
#include "snapshot/backend.h"
#include "snapshot/view.h"
#include "util/strmap.h"
#include "util/strpool.h"
#include "workspace/decide.h"
#include "workspace/names.h"
#include "workspace/outcome.h"
#include "workspace/workspace.h"

/* The Workspace resource: what the caches watch and the jobs write. */
extern const struct kube_resource reconciler_workspaces;

/* Snapshots of one workspace looked at per decision; retention keeps 10 at
 * most, so more only means some wait for the next pass. */
#define MAX_SNAPSHOTS_SEEN 32

/* The pod keys ("ns/pod") that carry one workspace's label, by workspace key. */
struct pod_keys {
    char **keys;
    size_t n, cap;
    int cut_logged; /* more than a decision looks at was said in the log */
};

struct reconciler {
    uv_loop_t *loop;
    struct kube_client *client;
    char *ns;
    char *identity;
    unsigned workers;
    char *failpoint; /* action name after which the process dies, for crash tests */
    int64_t (*now_ms)(void *data);
    void *now_data;

    struct informer *ws_inf, *class_inf, *pod_inf, *pvc_inf;
    struct activity_tracker *activity;
    struct activity_log *records; /* what each workspace's use was, for what-if replays */
    /* The snapshot backends by the kind a class names
     * (snapshot_backend_of()); each starts when a class or a workspace
     * first needs it. */
    struct snapshot_backend *snapshots[SNAPSHOT_BACKEND_KINDS];
    struct app_checkpoints *checkpoints; /* asking applications to write their checkpoint */
    struct node_cache *nodes; /* which accelerator a pod got; started with an accelerator class */
    /* Kueue's Workloads of the pods: why one waits; started with a class
     * that has spec.queue. */
    struct queue_workloads *workloads;
    struct queue_positions *positions;     /* their places in the queues */
    struct kube_client *visibility_client; /* borrowed; NULL: client */
    struct workqueue_driver *queue;
    struct strmap pods_by_ws; /* "ns/ws" -> struct pod_keys * */
    /* Pods by node, paused workspaces by the node they left: what a node's
     * or a scheduled pod's event looks at. */
    struct node_index by_node;
    /* Pre-warms starting and persons waiting for capacity, by class. */
    struct prewarm_turns turns;
    struct strmap noticed; /* "ns/ws" -> uint64_t *: when a change first queued it (µs) */
    /* "ns/ws" -> struct action_failure *: the last action the API server
     * refused, until a pass carries out all its actions. */
    struct strmap failures;
    /* "ns/ws" -> struct workspace_pod *: the last pod of the workspace the
     * pod cache dropped, as it was then (workspace_pod_copy_end()); one per
     * workspace, dropped with the workspace. Says why a pod no pass saw
     * leaving ended. */
    struct strmap gone_pods;
    struct controller_metrics *metrics;
    struct expectations own_writes; /* our last Workspace write per key, until the cache shows it */
    /* The strings cached Workspaces repeat (workspace_share_strings()):
     * the cache's entries are freed after reconciler_close(), hence a pool
     * it lets go of rather than frees. */
    struct strpool *strings;
    unsigned in_flight;
    LIST_HEAD(job_list, job) jobs; /* in flight */
    int closing;
    struct reconciler_stats stats;
};

/* One reconcile of one key: decide() once, then its actions in order. */
struct job {
    struct reconciler *r;
    char *key;
    char *ns, *name, *uid;
    char *rv; /* the Workspace's resourceVersion, advanced by our own writes */
    struct decide_output out;
    /* The status as read, written with ActionFailed if an action fails
     * (workspace/action_failure.h); NULL: the pass has no action to fail. */
    struct workspace_status *read;
    int64_t generation;
    cJSON *bodies[DECIDE_MAX_ACTIONS];  /* pods, claims and snapshot begins to create */
    char *pod_uids[DECIDE_MAX_ACTIONS]; /* delete and label-patch preconditions */
    char *urls[DECIDE_MAX_ACTIONS];     /* AppCheckpoint: the request's URL, NULL: see errs */
    char *errs[DECIDE_MAX_ACTIONS];     /* AppCheckpoint: why the URL could not be made */
    /* SnapshotBegin and SnapshotDelete: the backend that carries them out,
     * chosen at decision time (borrowed from the reconciler's table). */
    struct snapshot_backend *backends[DECIDE_MAX_ACTIONS];
    size_t next;
    int finalizer_add;        /* for the finalizer get -> patch step */
    uint64_t noticed_us;      /* when the change that led to this reconcile arrived, 0: unknown */
    struct kube_request *req; /* the call in flight, cancelled on close */
    struct snapshot_op *snap; /* a snapshot being begun or deleted, cancelled on close */
    LIST_ENTRY(job) link;     /* in the reconciler's jobs while linked */
    int linked;
    int released; /* gave its worker back: only the status write is left */

    /* Metrics: the reconcile's time, and what its status write records. */
    uint64_t started_ns; /* uv_hrtime() */
    struct workspace_outcome outcome;
    char *class_name; /* the outcome's class, when it has anything to count */
};

/* What one pass decides on, read from the caches (pointers into them,
 * valid until the loop turns). */
struct gathered {
    const struct workspace *ws;
    const struct workspace_class *cls;
    struct pods_seen pods;
    struct decide_node nodes[PODS_SEEN_MAX];
    size_t n_nodes;
    struct decide_restore_nodes restore_nodes;
    /* The class's snapshot backend, NULL: none (or no class). */
    struct snapshot_backend *backend;
    struct snapshot_view snap_view, snap_list[MAX_SNAPSHOTS_SEEN];
    struct snapshot_backend *snap_from[MAX_SNAPSHOTS_SEEN]; /* the backend of each of snap_list */
    struct snapshot_view next_view; /* of the attempt workspace_snapshot_next_attempt() names */
    char next_attempt[NAMES_SIZE];
    struct queue_view queue; /* the Workload of a pod Kueue holds back */
    struct decide_input in;
    /* > 0: decide nothing now, look again after this long (backends just
     * started for this pass cannot answer yet). */
    int64_t hold_ms;
};

/* ---- reconciler_keys.c ---- */

/* Makes the node cache and the informers (Workspaces, classes, pods,
 * claims) with their codecs and callbacks; on_synced(r) runs whenever one
 * of the informers has listed. Returns 0 or a negative errno (what was
 * made stays in r for reconciler_close()). */
int reconciler_keys_watch(struct reconciler *r, void (*on_synced)(void *data));

/* Queues key now, noting when a change first asked for it. */
void reconciler_keys_queue(struct reconciler *r, const char *key);

/* The changed callback of the trackers and snapshot backends (data: the
 * reconciler): queues key unless the reconciler is closing. */
void reconciler_keys_changed(void *data, const char *key);

/* When the first change that queued key since its last pass arrived (µs,
 * uv_hrtime()), 0: unknown; forgets it. */
uint64_t reconciler_keys_take_notice(struct reconciler *r, const char *key);

/* A key the queue could not take (e < 0) is said in the log, how: "now",
 * "after a failure", ... (-ESHUTDOWN while closing is expected and quiet). */
void reconciler_keys_requeue_result(const char *key, const char *how, int e);

/* The entry of inf cached under key ("ns/name"), NULL: none. */
const struct cache_entry *reconciler_keys_cached(const struct informer *inf, const char *key);

/* ---- reconciler_gather.c ---- */

/* Everything decide() reads about the cached Workspace we (key's), from r's
 * caches and trackers, into g (zeroed by the caller). */
void reconciler_gather(struct reconciler *r, const char *key, const struct cache_entry *we,
                       struct gathered *g);

/* Decides on g into j->out, keeps what the job needs of the Workspace as
 * read, tells the activity tracker what to watch, and builds every
 * action's body now (the cache entries may change before the calls run).
 * Returns 0, or a negative errno and nothing is to be sent. */
int reconciler_gather_decide(struct job *j, const struct gathered *g);

/* ---- reconciler_job.c ---- */

/* A new job for key, linked into r's jobs, holding one of r's workers;
 * NULL (said in the log, key queued again with backoff) out of memory. */
struct job *reconciler_job_new(struct reconciler *r, const char *key);

/* Starts the job's next action; each action's callback runs the one after,
 * and the last writes the status and finishes the job. */
void reconciler_job_run(struct job *j);

/* Ends and frees a job. Error 0: the queue forgets the key's backoff and
 * takes the key again after the decision's delay, if it asked for one
 * (j->out.requeue_after_ms); otherwise the key is queued again with
 * backoff. The queue learns the key is done either way (not while
 * closing). */
void reconciler_job_finish(struct job *j, int error);

/* Closing: the job's call in flight is cancelled (no callback follows) and
 * the job freed, the queue not told. */
void reconciler_job_cancel(struct job *j);

/* The failure remembered for key, reported in its status, is forgotten. */
void reconciler_job_forget_failure(struct reconciler *r, const char *key);

#endif
