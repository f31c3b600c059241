/*
 * controller metrics: the families the controller exports on /metrics
 * (docs/metrics.md lists each with its labels) and the few calls that move
 * them.
 *
 *   - the work queue, under the names client-go's queues use
 *     (workqueue_*{name="workspace"}): an observer on the queue, and the
 *     gauges read at each collection;
 *   - reconciles, under controller-runtime's names
 *     (controller_runtime_reconcile_*{controller="workspace"});
 *   - what the workspaces went through (hibernator_*): counted from a
 *     decision's outcome (workspace/outcome.h) once its status write has
 *     succeeded, so each pause, resume and snapshot counts exactly once;
 *   - hibernator_workspaces{class,state}: counted as the Workspace cache
 *     changes (an add, update or delete the informer reports, relists
 *     included), so nothing walks the cache; the counts are shown at the
 *     next collection after they changed.
 *
 * Every function accepts a NULL struct controller_metrics and then does
 * nothing, so the controller runs the same with metrics off. All run on
 * the event loop; the registry takes care of the HTTP server's thread.
 *
 * Ownership: the registry is borrowed and must outlive the struct.
 */
#ifndef HIBERNATOR_CONTROLLER_METRICS_H
#define HIBERNATOR_CONTROLLER_METRICS_H

#include <stdint.h>

#include "kube/workqueue.h"
#include "metrics/registry.h"
#include "workspace/outcome.h"

/* The name of the controller and of its queue in the labels. */
#define CONTROLLER_NAME "workspace"

struct controller_metrics;
struct workspace;

/* Registers the families in registry; build_info carries version.
 * Returns 0, -ENOMEM, or -EEXIST when they are registered already. */
int controller_metrics_new(struct metrics_registry *registry, const char *version,
                           struct controller_metrics **ret_metrics);

/* Frees the struct (not the registry); accepts NULL. */
void controller_metrics_free(struct controller_metrics *m);

/* Watches q for the work-queue metrics (until the queue is freed). */
void controller_metrics_watch_queue(struct controller_metrics *m, struct workqueue *q);

/* One reconcile ended after seconds: with an error, or asking to be
 * looked at again after a while (requeue_after), or done. */
void controller_metrics_reconciled(struct controller_metrics *m, int error, int requeue_after,
                                   double seconds);

/* A reconcile's own work (reading the caches, deciding, building its
 * requests) took seconds of the loop thread's CPU. */
void controller_metrics_reconcile_cpu(struct controller_metrics *m, double seconds);

/* A status write recording outcome o of workspace ns/... of class
 * class_name (NULL: "") has succeeded. */
void controller_metrics_outcome(struct controller_metrics *m, const char *ns,
                                const char *class_name, const struct workspace_outcome *o);

/* An activity probe round ended: its source ("jupyter", "jupyter+gpu", ...)
 * and result ("Active", "Idle", "Failed"; written in lower case). */
void controller_metrics_probe_round(struct controller_metrics *m, const char *source,
                                    const char *result);

/* The Workspace cache changed: was is the workspace the cache held before
 * (NULL: added, or the object could not be read), now what it holds now
 * (NULL: deleted, or cannot be read). Call it with exactly what the
 * informer hands its handlers, so the counts follow the cache, relists
 * included. Costs a hash lookup or two, whatever the number of
 * workspaces; nothing is kept of was or now. */
void controller_metrics_workspace_changed(struct controller_metrics *m, const struct workspace *was,
                                          const struct workspace *now);

/* The collection: workspaces by class and state, when workspaces_synced
 * (the Workspace cache holds its first list) and they changed since the
 * last collection (a walk over the few classes and states, not over the
 * workspaces), and the queue's gauges at now_ms (the queue's clock; q may
 * be NULL). */
void controller_metrics_collect(struct controller_metrics *m, int workspaces_synced,
                                const struct workqueue *q, uint64_t now_ms);

/* The API client's totals so far: requests it dropped
 * (kube_client_requests_dropped(): Events shed under sustained pressure),
 * as hibernator_client_requests_dropped_total, and its pokes of a stalled
 * connection (kube_client_pokes()), as
 * hibernator_client_connection_pokes_total. */
void controller_metrics_client(struct controller_metrics *m, uint64_t dropped, uint64_t pokes);

/* How many caches controller_metrics_cache_walked() tells apart. */
#define CONTROLLER_METRICS_CACHES 16

/* The objects an informer's walks over its whole cache visited so far
 * (informer_stats().walked) for resource (static: "workspaces", "pods",
 * ...; at most CONTROLLER_METRICS_CACHES of them, others are ignored):
 * added to hibernator_cache_walked_objects_total. */
void controller_metrics_cache_walked(struct controller_metrics *m, const char *resource,
                                     uint64_t total);

/* Whether this replica leads (hibernator_leader). */
void controller_metrics_set_leader(struct controller_metrics *m, int leading);

#endif
