/*
 * queue_positions: where a pod Kueue holds back stands in its LocalQueue,
 * from Kueue's visibility API (visibility.kueue.x-k8s.io/v1beta2,
 * namespaces/<ns>/localqueues/<queue>/pendingworkloads: the pending
 * Workloads in Kueue's order, each owned by its pod, with
 * positionInLocalQueue counted from 0). Asked through the API server's
 * aggregation layer, or of Kueue's visibility server itself where no
 * APIService routes to it (the controller's --kueue-visibility-server).
 *
 * A queue is read when a decision asks for it (queue_positions_want()) and
 * read again every QUEUE_POSITIONS_REFRESH_MS while decisions keep asking
 * (a workspace is Queued); a queue nobody asked for in a minute is
 * forgotten. When a pod's place changes, changed() is called with it.
 *
 * Ownership: the caller owns struct queue_positions; loop and client are
 * borrowed and outlive it.
 */
#ifndef HIBERNATOR_CONTROLLER_QUEUE_POSITIONS_H
#define HIBERNATOR_CONTROLLER_QUEUE_POSITIONS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kube/client.h"
#include "util/must_use.h"

#define QUEUE_POSITIONS_REFRESH_MS 5000
/* The most pending Workloads read of one queue (the API's limit). */
#define QUEUE_POSITIONS_MAX 1000

/* A pod's place changed (or it left the list): ns, its name. */
typedef void (*queue_positions_changed_cb)(void *data, const char *ns, const char *pod_name);

struct queue_positions;

MUST_USE int queue_positions_new(uv_loop_t *loop, struct kube_client *client,
                                 queue_positions_changed_cb changed, void *data,
                                 struct queue_positions **ret);

/* A decision wants the places in LocalQueue queue of ns: read it now if it
 * never was, and keep it fresh. */
void queue_positions_want(struct queue_positions *q, const char *ns, const char *queue);

/* The place of the pod with uid pod_uid in the last answer of its queue:
 * *ret_position from 1, *ret_pending how many wait there. Returns 1, or 0
 * when not known. */
int queue_positions_get(const struct queue_positions *q, const char *pod_uid, int64_t *ret_position,
                        int64_t *ret_pending);

/* One pending Workload of a visibility answer. */
struct queue_position {
    const char *pod_uid, *pod_name; /* its owner */
    int64_t position;               /* from 1 */
};

/* Reads a pendingworkloads answer (a PendingWorkloadsSummary) into out (at
 * most max, pointing into body); *ret_n of them. Returns 0 or -EINVAL (not
 * such an answer). Pure: for tests. */
int queue_positions_parse(const cJSON *body, struct queue_position *out, size_t max, size_t *ret_n);

void queue_positions_free(struct queue_positions *q);

#endif
