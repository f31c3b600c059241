/*
 * snapshot backend: what the reconciler asks of a snapshot backend (GKE Pod
 * Snapshots, ...), as a table of operations each backend implements in its
 * own file (snapshot/gke_backend.h is the GKE one). The reconciler holds one
 * backend per enum snapshot_backend_kind (workspace/class.h) in a table
 * indexed by the kind, made by snapshot_backends_new(), and picks a
 * workspace's backend from its class; what concerns every backend (a
 * deleted workspace, the snapshots a class that changed its backend left
 * behind) goes to each started one through the snapshot_backends_*()
 * helpers below. decide() never sees a backend: only struct snapshot_view
 * (snapshot/view.h) and the bodies built here at decision time.
 *
 * A new backend is a new file that fills a struct snapshot_backend_ops and
 * embeds struct snapshot_backend first in its own state, its constructor's
 * row in backend.c's table, and its kind in workspace/class.h.
 *
 * Ownership: a backend is its creator's until snapshot_backend_free() (the
 * table's until snapshot_backends_free()); it borrows the loop and the
 * client, which must outlive it. Views borrow strings from the backend's
 * caches until the loop runs again. A struct snapshot_op is the caller's
 * from a begin or delete that returned 0 until its callback has run or
 * snapshot_op_cancel() is called; it stays valid after its backend is
 * freed, so it may be cancelled then.
 */
#ifndef HIBERNATOR_SNAPSHOT_BACKEND_H
#define HIBERNATOR_SNAPSHOT_BACKEND_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kube/client.h"
#include "snapshot/view.h"
#include "util/must_use.h"
#include "workspace/class.h"
#include "workspace/pod.h"
#include "workspace/workspace.h"

/* The size of a table of backends indexed by enum snapshot_backend_kind:
 * room for every kind there is and a few more, so a new kind needs no
 * change here (snapshot_backends_new() refuses a constructor for a kind
 * past it). SNAPSHOT_BACKEND_NONE's entry, and a kind's without a
 * backend, stay NULL. */
#define SNAPSHOT_BACKEND_KINDS 8

struct snapshot_backend;

/* key: "namespace/workspace" whose snapshot objects changed. */
typedef void (*snapshot_changed_cb)(void *data, const char *key);
/* A begin or delete is over: status 0, or a negative errno and the
 * backend's (or the API server's) words in error (NULL: none), valid during
 * the call. */
typedef void (*snapshot_done_cb)(void *data, int status, const char *error);
/* One of the backend's caches: the objects whole-cache walks of it visited
 * so far (resource: static, the name hibernator_cache_walked_objects_total
 * shows it under). */
typedef void (*snapshot_walked_cb)(void *data, const char *resource, uint64_t walked);

/* A begin or delete in flight. A backend's own handle embeds it first;
 * ops names the backend's operations (static), so the handle can be
 * cancelled after its backend is gone. */
struct snapshot_op {
    const struct snapshot_backend_ops *ops;
};

/* What every backend implements; every member is set. b is the backend
 * the operation was looked up on. The meaning of each is the one its
 * snapshot_backend_*() wrapper below says. */
struct snapshot_backend_ops {
    /* What the backend is called in the log: "GKE Pod Snapshots". */
    const char *name;
    /* Node labels a restore from the backend's snapshots must match, NULL
     * at the end (NULL: none): the node cache keeps them for the classes
     * of the backend, and their workspaces' passes read them. */
    const char *const *restore_node_labels;
    int (*start)(struct snapshot_backend *b);
    void (*view)(const struct snapshot_backend *b, const char *ns, const char *attempt,
                 struct snapshot_view *ret);
    size_t (*list)(const struct snapshot_backend *b, const char *ns, const char *workspace,
                   struct snapshot_view *out, size_t max);
    int (*storage)(const struct snapshot_backend *b, const char *ns, const char *workspace,
                   const char **ret);
    cJSON *(*begin_bodies)(const struct snapshot_backend *b, const struct workspace *ws,
                           const struct workspace_class *c, const char *attempt,
                           const char *pod_name, const char *pod_group,
                           const struct workspace_pod *pod);
    int (*begin)(struct snapshot_backend *b, const char *ns, const cJSON *bodies,
                 snapshot_done_cb cb, void *data, struct snapshot_op **ret_op);
    int (*delete)(struct snapshot_backend *b, const char *ns, const char *name, snapshot_done_cb cb,
                  void *data, struct snapshot_op **ret_op);
    void (*cancel)(struct snapshot_op *op);
    void (*workspace_deleted)(struct snapshot_backend *b, const char *ns, const char *workspace);
    void (*workspace_live)(struct snapshot_backend *b, const char *ns, const char *workspace);
    void (*walked)(const struct snapshot_backend *b, snapshot_walked_cb cb, void *data);
    void (*free)(struct snapshot_backend *b);
};

/* The part of a backend's state every backend has, first in it. */
struct snapshot_backend {
    const struct snapshot_backend_ops *ops;
    int started;         /* snapshot_backend_start() succeeded once */
    uint64_t started_ns; /* when (uv_hrtime()) */
};

/* What a backend's constructor is given. */
struct snapshot_backend_options {
    uv_loop_t *loop;
    struct kube_client *client; /* borrowed: it must outlive the backend */
    const char *ns;             /* the namespace watched (copied); NULL: all */
    /* Runs from the loop whenever a workspace's snapshot objects change;
     * never after the backend is freed. */
    snapshot_changed_cb changed;
    void *data;
};

/* A backend's constructor: 0 and *ret (the caller's, snapshot_backend_free()),
 * or a negative errno. Nothing is watched until snapshot_backend_start(). */
typedef int (*snapshot_backend_new_fn)(const struct snapshot_backend_options *o,
                                       struct snapshot_backend **ret);

/* ---- one backend ---- */

/* Starts the backend's caches if they are not running yet; the first
 * success marks it started. Returns 0 or a negative errno. */
int snapshot_backend_start(struct snapshot_backend *b);

/* The view of the attempt (the handle the backend was begun with) in ns.
 * Before the backend's caches have synced the view is unknown (decide()
 * waits for it); an attempt asked for but not seen yet is InProgress. */
void snapshot_backend_view(const struct snapshot_backend *b, const char *ns, const char *attempt,
                           struct snapshot_view *ret);

/* The objects an attempt needs, built at decision time (the caches may
 * change before they are sent) for snapshot_backend_begin(): pod_name is
 * the pod to snapshot, pod_group its snapshot group (NULL: none), pod what
 * the pod cache holds of it (its uid and node; NULL: not cached). Caller
 * deletes; NULL when out of memory or when the backend needs what is
 * missing. */
cJSON *snapshot_backend_begin_bodies(const struct snapshot_backend *b, const struct workspace *ws,
                                     const struct workspace_class *c, const char *attempt,
                                     const char *pod_name, const char *pod_group,
                                     const struct workspace_pod *pod);

/* Starts the snapshot that bodies (snapshot_backend_begin_bodies(), only
 * read during the call) describe in ns; a repeated call after a crash
 * counts as done. cb runs once, unless cancelled first.
 * Returns 0 and *ret_op, or a negative errno and no callback follows
 * (-EINVAL: an argument missing or bodies not the backend's; -ENOMEM; or
 * what the API client refuses to start). */
MUST_USE int snapshot_backend_begin(struct snapshot_backend *b, const char *ns, const cJSON *bodies,
                                    snapshot_done_cb cb, void *data, struct snapshot_op **ret_op);

/* Deletes the snapshot named name (a view's name) in ns; one already gone
 * counts as done. cb runs once, unless cancelled first. Returns as
 * snapshot_backend_begin(). */
MUST_USE int snapshot_backend_delete(struct snapshot_backend *b, const char *ns, const char *name,
                                     snapshot_done_cb cb, void *data, struct snapshot_op **ret_op);

/* Cancels a begin or delete that has not called back: no callback follows
 * and op is freed. NULL is ignored. */
void snapshot_op_cancel(struct snapshot_op *op);

/* The node labels a restore from b's snapshots must match, NULL at the end;
 * NULL when none (or b is NULL). */
const char *const *snapshot_backend_node_labels(const struct snapshot_backend *b);

/* What the backend is called in the log ("GKE Pod Snapshots"). */
const char *snapshot_backend_name(const struct snapshot_backend *b);

/* Stops the backend and frees it (some of it once the loop has closed its
 * handles); no changed callback follows. Handles in flight stay the
 * caller's to cancel. NULL is ignored. */
void snapshot_backend_free(struct snapshot_backend *b);

/* ---- the table: one backend per kind ---- */

/* Makes every backend there is into table (indexed by kind; NULL where a
 * kind has none). Returns 0, or a negative errno and table holds nothing
 * (what was made is freed). */
int snapshot_backends_new(const struct snapshot_backend_options *o,
                          struct snapshot_backend *table[SNAPSHOT_BACKEND_KINDS]);

/* Frees every backend of table and empties it. */
void snapshot_backends_free(struct snapshot_backend *table[SNAPSHOT_BACKEND_KINDS]);

/* The backend of kind, NULL: none (SNAPSHOT_BACKEND_NONE, or a kind
 * without one). */
struct snapshot_backend *snapshot_backend_of(struct snapshot_backend *const table[],
                                             enum snapshot_backend_kind kind);

/* The helpers below ask every started backend of table, first (NULL:
 * none) before the others, the others by kind. A backend not started has
 * nothing to say and is not asked. */

/* The view of the attempt from the backend that holds it (seen, not
 * unknown). None does: the first started one's unknown view if any is
 * unknown (decide() waits), else the view that nothing is seen; no started
 * backend: unknown. */
void snapshot_backends_view(struct snapshot_backend *const table[],
                            const struct snapshot_backend *first, const char *ns,
                            const char *attempt, struct snapshot_view *ret);

/* Every snapshot of the workspace the started backends hold, at most max;
 * from[i] (NULL: not wanted) is the backend out[i] came from. Returns how
 * many. */
size_t snapshot_backends_list(struct snapshot_backend *const table[],
                              const struct snapshot_backend *first, const char *ns,
                              const char *workspace, struct snapshot_view *out,
                              struct snapshot_backend **from, size_t max);

/* The storage config the workspace's snapshots are held under, from the
 * first started backend that knows one. Returns 1 and *ret ("" for none
 * named; borrowed until the loop runs again), 0 when no backend holds
 * anything of the workspace, -1 when one that might cannot say yet (or
 * none is started); *ret is NULL unless 1. */
int snapshot_backends_storage(struct snapshot_backend *const table[],
                              const struct snapshot_backend *first, const char *ns,
                              const char *workspace, const char **ret);

/* The Workspace ns/workspace is being deleted (or is gone): each started
 * backend lets its objects of it go (in the order GKE's finalizers need,
 * for GKE). */
void snapshot_backends_workspace_deleted(struct snapshot_backend *const table[], const char *ns,
                                         const char *workspace);

/* The Workspace ns/workspace exists and is not being deleted (one of the
 * name may have been deleted and made again): each started backend keeps
 * what it holds for it. */
void snapshot_backends_workspace_live(struct snapshot_backend *const table[], const char *ns,
                                      const char *workspace);

/* Each backend's caches (started or not: 0 before they start), one cb per
 * cache, from every backend of table. */
void snapshot_backends_walked(struct snapshot_backend *const table[], snapshot_walked_cb cb,
                              void *data);

#endif
