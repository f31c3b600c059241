/*
 * node_index: the controller's pods by the node they run on, and the paused
 * workspaces by the node their pod left, so that what happens on one node
 * (a pod scheduled there, the node's labels changing, the node leaving)
 * looks at that node's pods and workspaces only: an event costs the same
 * with a hundred workspaces as with a hundred thousand.
 *
 *   - pods: every cached pod with spec.nodeName, under that node;
 *   - paused workspaces: those whose last pause may still be waiting to
 *     learn something of the node it left (ledger_watched_node(): who took
 *     the accelerator, or that the node left the cluster), under that node.
 *     Whether one still waits now is for the caller to ask (the ledger's
 *     watch ends after a day, with no event to say so).
 *
 * Kept from the informers' handlers: node_index_pod() on every pod add,
 * update and delete, node_index_workspace() on every Workspace add, update
 * and delete, with the cache key ("namespace/name") and the cached object
 * (NULL when deleted or unreadable). A relist tells the handlers what
 * changed, so the index follows it.
 *
 * Ownership: struct node_index is the caller's; it copies the keys and node
 * names it keeps and frees them in node_index_free(). Nothing is kept of
 * the objects passed in.
 */
#ifndef HIBERNATOR_CONTROLLER_NODE_INDEX_H
#define HIBERNATOR_CONTROLLER_NODE_INDEX_H

#include "util/key_groups.h"
#include "util/must_use.h"
#include "workspace/pod.h"
#include "workspace/workspace.h"

struct node_index {
    struct key_groups pods;   /* pod keys by spec.nodeName */
    struct key_groups paused; /* Workspace keys by the node their last pause left */
    /* Workspace keys, paused with a Ready snapshot, by the node version the
     * snapshot was taken on (status.snapshot.node.version): a node taking
     * or leaving that version may make it restorable or not. */
    struct key_groups by_snapshot_version;
};

/* Makes x an empty index; allocates nothing. */
void node_index_init(struct node_index *x);

/* Frees what the index holds; it is empty afterwards. */
void node_index_free(struct node_index *x);

/* The pod cached under key is now p (NULL: deleted). Returns 0, or -ENOMEM
 * with key in no group. */
MUST_USE int node_index_pod(struct node_index *x, const char *key, const struct workspace_pod *p);

/* The Workspace cached under key is now ws (NULL: deleted, or cannot be
 * read). Returns 0, or -ENOMEM with key in no group. */
MUST_USE int node_index_workspace(struct node_index *x, const char *key,
                                  const struct workspace *ws);

/* Calls fn with the key of each pod on node (unspecified order); fn must
 * not change the index. */
void node_index_pods_on(const struct node_index *x, const char *node,
                        void (*fn)(void *data, const char *key), void *data);

/* Calls fn with the key of each workspace paused with a Ready snapshot
 * taken on a node of version (see above); fn must not change the index. */
void node_index_paused_on_version(const struct node_index *x, const char *version,
                                  void (*fn)(void *data, const char *key), void *data);

/* Calls fn with the key of each workspace whose last pause left node and
 * may still be waiting (see above); fn must not change the index. */
void node_index_paused_from(const struct node_index *x, const char *node,
                            void (*fn)(void *data, const char *key), void *data);

/* How many keys node's group holds (0 when it has none), for tests:
 * node_index_pods_count() of pods on node, node_index_paused_count() of
 * paused workspaces whose last pause left it. */
size_t node_index_pods_count(const struct node_index *x, const char *node);
size_t node_index_paused_count(const struct node_index *x, const char *node);

#endif
