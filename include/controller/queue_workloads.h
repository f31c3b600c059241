/*
 * queue_workloads: Kueue's Workloads of the controller's pods (docs/kueue.md),
 * so that a workspace whose pod Kueue holds back can say why: the Workload's
 * QuotaReserved=False message (the quota that holds it) and since when it
 * waits. Kueue makes one Workload per pod of the plain-Pod integration,
 * labelled kueue.x-k8s.io/job-uid with the pod's uid and owned by the pod.
 *
 * Watched only once started (a class sends pods through Kueue: without Kueue
 * installed there is nothing to watch, and the list would fail).
 *
 * Ownership: the caller owns struct queue_workloads (queue_workloads_free());
 * loop and client are borrowed and must outlive it. Views borrow from the
 * cache until the loop turns.
 */
#ifndef HIBERNATOR_CONTROLLER_QUEUE_WORKLOADS_H
#define HIBERNATOR_CONTROLLER_QUEUE_WORKLOADS_H

#include <uv.h>

#include "kube/client.h"
#include "util/must_use.h"
#include "workspace/decide.h"

extern const struct kube_resource KUBE_RESOURCE_KUEUE_WORKLOADS;

/* The label Kueue puts on a pod's Workload: the pod's uid. */
#define QUEUE_JOB_UID_LABEL "kueue.x-k8s.io/job-uid"

/* A Workload changed: the pod it is of (its owner), in ns. */
typedef void (*queue_workloads_changed_cb)(void *data, const char *ns, const char *pod_name);

struct queue_workloads;

/* ns: the namespace watched, NULL: all. Returns 0 or -ENOMEM. */
MUST_USE int queue_workloads_new(uv_loop_t *loop, struct kube_client *client, const char *ns,
                                 queue_workloads_changed_cb changed, void *data,
                                 struct queue_workloads **ret);

/* Starts the watch; again: nothing. Returns 0 or a negative errno. */
MUST_USE int queue_workloads_start(struct queue_workloads *q);

/* What Kueue says of the Workload of the pod with uid pod_uid, into *ret
 * (strings borrowed). Returns 1, or 0: no such Workload seen. */
int queue_workloads_view(const struct queue_workloads *q, const char *pod_uid,
                         struct queue_view *ret);

/* Accepts NULL. */
void queue_workloads_free(struct queue_workloads *q);

#endif
