/*
 * gke: the GKE Pod Snapshot backend (podsnapshot.gke.io/v1; facts in
 * docs/snapshots.md).
 *
 * Per workspace one PodSnapshotPolicy "<workspace>-snapshots" (manual
 * trigger, selector on the workspace's pod label and the snapshot group
 * label, snapshots grouped by that label, the class's storage config and
 * retention; not owned: it goes after its last PodSnapshot, see
 * gke_policy_fate(), and its finalizer GKE_POLICY_FINALIZER keeps it while
 * a PodSnapshot names it, whoever deletes it); per attempt one
 * PodSnapshotManualTrigger named by the attempt's handle (owned by the
 * Workspace, labelled with it) for the workspace's pod. GKE answers with a
 * PodSnapshot labelled gke-pod-snapshot-triggered-by=<trigger> and names it
 * in the trigger's status.snapshotCreated.name; its Ready and Checkpoint
 * conditions say how it went.
 *
 * The caches (triggers the controller made, PodSnapshots GKE made) start on
 * first use, so a cluster without the CRDs costs nothing until a class asks
 * for the backend.
 *
 * The controller finds a workspace's PodSnapshots through its triggers, so a
 * trigger outlives its PodSnapshot: deleting a snapshot deletes the
 * PodSnapshot only, and its trigger goes when the cache sees the PodSnapshot
 * itself gone (GKE's finalizer may hold it for a while). Triggers found
 * without their PodSnapshot once the caches have synced (the controller was
 * down when it went) and the triggers of a deleted workspace go too; see
 * gke_trigger_fate(). The backend retries these deletes by itself.
 *
 * Ownership: views borrow strings from the caches until the loop runs again.
 */
#ifndef HIBERNATOR_SNAPSHOT_GKE_H
#define HIBERNATOR_SNAPSHOT_GKE_H

#include <stdint.h>
#include <uv.h>

#include "kube/client.h"
#include "snapshot/view.h"
#include "util/must_use.h"
#include "workspace/class.h"
#include "workspace/workspace.h"

#define GKE_SNAPSHOT_GROUP "podsnapshot.gke.io"
#define GKE_TRIGGERED_BY_LABEL "gke-pod-snapshot-triggered-by"
#define GKE_PS_NAME_ANNOTATION "podsnapshot.gke.io/ps-name"

struct gke_snapshots;

/* key: "namespace/workspace" whose snapshot objects changed. */
typedef void (*gke_changed_cb)(void *data, const char *key);

/* The backend on loop, talking through client (borrowed: it must outlive
 * the backend) and watching namespace ns (copied; NULL: all namespaces);
 * cb(data, key) runs from the loop whenever a workspace's snapshot objects
 * change. Nothing is watched until gke_snapshots_start().
 * Returns 0 and *ret (the caller's, gke_snapshots_free()), -ENOMEM, or
 * libuv's negative errno for the timer. */
int gke_snapshots_new(uv_loop_t *loop, struct kube_client *client, const char *ns,
                      gke_changed_cb cb, void *data, struct gke_snapshots **ret);
/* Stops the caches and what the backend retries by itself, and frees g
 * once the loop has closed its timer; no cb follows. Handles of begins and
 * deletes still in flight stay the caller's to cancel. NULL is ignored. */
void gke_snapshots_free(struct gke_snapshots *g);

/* Starts the caches if they are not running yet. Returns 0 or a negative errno. */
int gke_snapshots_start(struct gke_snapshots *g);

/* The view of the attempt (a trigger's name) in ns. Before the caches have
 * synced the view is unknown (decide() waits for it); while the trigger is
 * not seen yet the phase is InProgress (decide() waits, bounded by the
 * class's timeout). */
void gke_snapshots_view(const struct gke_snapshots *g, const char *ns, const char *attempt,
                        struct snapshot_view *ret);

/* Every PodSnapshot of the workspace (made by its triggers), at most max;
 * returns how many. 0 before the caches have synced. */
size_t gke_snapshots_list(const struct gke_snapshots *g, const char *ns, const char *workspace,
                          struct snapshot_view *out, size_t max);

/* The storage config the workspace's snapshots are held under: its policy's
 * spec.storageConfigName, which every PodSnapshot of the workspace names
 * (GKE's finalizer frees a snapshot's files in that config's bucket).
 * Returns 1 and *ret ("" when the policy names none; borrowed from the
 * cache until the loop runs again), 0 when the workspace has no policy, -1
 * before the policy cache has synced. */
int gke_snapshots_storage(const struct gke_snapshots *g, const char *ns, const char *workspace,
                          const char **ret);

/* The objects whole-cache walks of the three caches visited so far
 * (informer_stats().walked; 0 before they start): a sweep once they have
 * synced, and nothing per reconcile or event while the indexes hold.
 * Accepts NULL (all 0). */
struct gke_snapshots_walked {
    uint64_t snapshots, triggers, policies;
};
struct gke_snapshots_walked gke_snapshots_walked(const struct gke_snapshots *g);

typedef void (*gke_done_cb)(void *data, int status, const char *error);

struct gke_delete;
/* Deletes the PodSnapshot (NotFound counts as done); the trigger that made
 * it follows once the cache sees the PodSnapshot gone. cb runs once with 0
 * or a negative errno, unless cancelled first. The arguments are copied
 * before the call returns.
 * Returns 0 and *ret_delete (a handle that stays the caller's until cb has
 * run or gke_delete_cancel() is called), or a negative errno and no
 * callback follows: -EINVAL (an argument missing), -ENOMEM, or what
 * kube_delete() refuses with (include/kube/client.h). */
MUST_USE int gke_snapshots_delete(struct gke_snapshots *g, const char *ns, const char *name,
                                  gke_done_cb cb, void *data, struct gke_delete **ret_delete);
/* Cancels a delete that has not called back: no callback follows, x is
 * freed. NULL is ignored. */
void gke_delete_cancel(struct gke_delete *x);

/* The Workspace ns/workspace is being deleted (or is gone): each of its
 * triggers goes, those with a PodSnapshot once that is gone, the others now.
 * Nothing before the caches have synced. */
void gke_snapshots_workspace_deleted(struct gke_snapshots *g, const char *ns,
                                     const char *workspace);

/* The Workspace ns/workspace exists and is not being deleted (one of the
 * name may have been deleted and made again): its policy stays. */
void gke_snapshots_workspace_live(struct gke_snapshots *g, const char *ns, const char *workspace);

/* On every policy the backend makes (and put on one an earlier version
 * made): the policy is not removed while a PodSnapshot names it, whoever
 * deletes it (the backend, a person, the namespace controller with the
 * namespace); the backend removes the finalizer once the last such
 * PodSnapshot is gone (docs/snapshots.md, "Deletion order (GKE)"). */
#define GKE_POLICY_FINALIZER "hibernator.dev/podsnapshots"

/* What becomes of a workspace's policy. Pure. */
enum gke_policy_fate {
    GKE_POLICY_KEEP,
    GKE_POLICY_DELETE,
};

struct gke_policy_facts {
    int workspace_deleting; /* its Workspace is being deleted (no pod left) or gone */
    int snapshots_left;     /* PodSnapshots (being deleted or not) whose spec.policyName is it */
    int triggers_left;      /* triggers of the workspace (one could still make a PodSnapshot) */
};

/* GKE's finalizer on a PodSnapshot finds the bucket through the policy: a
 * policy deleted first would leave the memory images in the bucket. So the
 * policy has no owner reference and goes only once its workspace is being
 * deleted and no PodSnapshot names it and no trigger of the workspace is
 * left. */
enum gke_policy_fate gke_policy_fate(const struct gke_policy_facts *f);

/* What becomes of one of the controller's triggers. Pure. */
enum gke_trigger_fate {
    GKE_TRIGGER_KEEP,
    GKE_TRIGGER_CHECK,  /* it names a PodSnapshot the cache does not hold: ask the API
                           server, and delete the trigger if the PodSnapshot is gone */
    GKE_TRIGGER_DELETE, /* now */
};

struct gke_trigger_facts {
    int snapshot_deleted;   /* the cache has just seen its PodSnapshot deleted */
    int snapshot_cached;    /* its PodSnapshot is in the cache (being deleted or not) */
    int served;             /* it names the PodSnapshot it made (status.snapshotCreated) */
    int workspace_deleting; /* its Workspace is being deleted or gone */
};

/* A trigger goes after its PodSnapshot, never before: while the PodSnapshot
 * is cached it is kept. One that names a PodSnapshot the cache lacks is
 * checked (the PodSnapshot cache may merely be behind the trigger cache). One
 * that never made a PodSnapshot is kept while its workspace lives (GKE may
 * still serve it, or decide() reads its failure) and deleted with it. */
enum gke_trigger_fate gke_trigger_fate(const struct gke_trigger_facts *f);
/* "Keep", "Check" or "Delete" ("?" for another value); static. */
const char *gke_trigger_fate_name(enum gke_trigger_fate fate);

/* The objects an attempt needs, built at decision time (the caches may
 * change before they are sent): {"policy": ..., "trigger": ...}. pod_group
 * is the source pod's snapshot group; NULL (a pod of an earlier version,
 * without one): the policy is built without groups, as that version made
 * it, and an existing one is left as it is ("keepPolicy": true), or the
 * group's selector would not select the pod. Caller deletes; NULL when out
 * of memory (or for a name no Workspace can have: empty or longer than
 * 253). */
cJSON *gke_snapshot_begin_bodies(const struct workspace *ws, const struct workspace_class *c,
                                 const char *attempt, const char *pod_name, const char *pod_group);

struct gke_begin;
/* Makes sure the workspace's policy exists (one that exists already is
 * patched to the built spec, without owner reference, unless "keepPolicy"),
 * then creates the trigger; AlreadyExists of the trigger counts as done (a
 * repeated call after a crash).
 * cb gets 0 or a negative errno with the API server's words. bodies is only
 * read during the call.
 * Returns 0 and *ret_begin (a handle that stays the caller's until cb has
 * run or gke_begin_cancel() is called), or a negative errno and no callback
 * follows: -EINVAL (an argument missing, or bodies without a named policy
 * or a trigger), -ENOMEM, or what kube_create() refuses with
 * (include/kube/client.h). */
MUST_USE int gke_snapshots_begin(struct gke_snapshots *g, const char *ns, const cJSON *bodies,
                                 gke_done_cb cb, void *data, struct gke_begin **ret_begin);
/* Cancels a begin that has not called back: no callback follows, b is
 * freed. NULL is ignored. */
void gke_begin_cancel(struct gke_begin *b);

#endif
