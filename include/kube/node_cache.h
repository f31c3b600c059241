/*
 * node_cache: a read-only copy of the cluster's Nodes that keeps, of each
 * node, its name, its kubelet's version and the values of a few labels
 * someone asked for (the accelerator product label of the classes, ...),
 * never the object: a Node
 * carries its images and conditions, which nobody here reads.
 *
 * The cache starts on first use (node_cache_start()), so a cluster without
 * accelerator classes costs nothing. Asking for a label the cache does not
 * keep yet makes a started cache list the nodes again; until that list is
 * in, lookups say the cache does not know.
 *
 * It only lists and watches: get, list and watch on nodes is all it needs.
 *
 * Ownership: the cache borrows the loop and the client (both must outlive
 * it) and copies the label keys. Strings returned by lookups are borrowed
 * from the cache until control returns to the loop.
 */
#ifndef HIBERNATOR_KUBE_NODE_CACHE_H
#define HIBERNATOR_KUBE_NODE_CACHE_H

#include <uv.h>

#include "kube/client.h"

/* Label keys kept at most. */
#define NODE_CACHE_MAX_LABELS 8

struct node_cache;

/* node: a node that appeared, went, or whose kept labels changed, after the
 * first list; NULL once when a list (the first, or one for a new label) is
 * in: any node may have changed. */
typedef void (*node_cache_changed_cb)(void *data, const char *node);

/* A cache on loop reading through client; cb (NULL: none) runs from the
 * loop. Nothing is listed before node_cache_start(). Returns 0 and *ret (the
 * caller's, node_cache_free()) or -ENOMEM. */
int node_cache_new(uv_loop_t *loop, struct kube_client *client, node_cache_changed_cb cb,
                   void *data, struct node_cache **ret);

/* Stops the watch and frees the cache once the loop has closed its handles;
 * no callback follows. Accepts NULL. */
void node_cache_free(struct node_cache *nc);

/* Keeps the value of label key for every node from now on. Returns 0 (also
 * when it is kept already), -ENOMEM, -EINVAL for an empty key, or -E2BIG
 * beyond NODE_CACHE_MAX_LABELS keys. */
int node_cache_keep_label(struct node_cache *nc, const char *key);

/* Starts listing and watching if the cache is not running yet. Returns 0 or
 * a negative errno. */
int node_cache_start(struct node_cache *nc);

/* True once the cache holds a whole list with every kept label. */
int node_cache_synced(const struct node_cache *nc);

enum node_presence {
    NODE_UNKNOWN, /* not started, or the list is not in yet */
    NODE_PRESENT,
    NODE_ABSENT, /* the synced cache has no such node: deleted, or never there */
};

enum node_presence node_cache_lookup(const struct node_cache *nc, const char *name);

/* The value of a kept label on the node; NULL when the node is not known,
 * has no such label, or the label is not kept. */
const char *node_cache_label(const struct node_cache *nc, const char *name, const char *key);

/* The node's kubelet version (status.nodeInfo.kubeletVersion, e.g.
 * "v1.35.3-gke.1234000": GKE's node version); NULL when the node is not
 * known or does not say. */
const char *node_cache_version(const struct node_cache *nc, const char *name);

/* cb (NULL: none) runs from the loop, with the cache's data, when a node
 * of the synced cache appears (before NULL), goes (after NULL) or changes
 * its kubelet version: before and after are the versions (borrowed for the
 * call). */
typedef void (*node_cache_version_cb)(void *data, const char *node, const char *before,
                                      const char *after);
void node_cache_on_version(struct node_cache *nc, node_cache_version_cb cb);

/* Calls fn with the name of every node of the synced cache (nothing before
 * it has synced); fn must not change the cache. */
void node_cache_foreach(const struct node_cache *nc, void (*fn)(void *data, const char *name),
                        void *data);

#endif
