/*
 * pods_seen: the bounded set of one workspace's pods that a decision looks
 * at, chosen so that what is left out can never mislead decide().
 *
 * The controller makes one pod per workspace at a time; more pods carrying
 * a workspace's label are someone else's doing. A decision looks at no more
 * than PODS_SEEN_MAX of them, picked in this order:
 *   1. the pod the status names (status.podName),
 *   2. live pods (not terminating, not Succeeded or Failed),
 *   3. stopped pods not yet terminating,
 *   4. terminating pods,
 * and within each rank by name. So the pod the status names is always
 * seen, and a live pod is seen whenever one exists: a pod left out never
 * makes decide() create a second pod, record an interruption that did not
 * happen, or give up its finalizer while pods remain. Only the number
 * decide() deletes per pass and counts in messages is bounded.
 *
 * Ownership: the set holds borrowed pointers (into the pod cache); it
 * allocates nothing and needs no freeing.
 */
#ifndef HIBERNATOR_CONTROLLER_PODS_SEEN_H
#define HIBERNATOR_CONTROLLER_PODS_SEEN_H

#include <stddef.h>

#include "workspace/pod.h"

#define PODS_SEEN_MAX 16

struct pods_seen {
    const struct workspace_pod *pods[PODS_SEEN_MAX]; /* the n picked, in no order */
    size_t n;
    size_t n_offered;  /* every pod offered: more than n when some were left out */
    const char *named; /* status.podName (borrowed), NULL: none */
};

/* An empty set for a workspace whose status names pod named (NULL: none). */
void pods_seen_init(struct pods_seen *s, const char *named);

/* Offers one of the workspace's pods (NULL is ignored); it is kept when
 * fewer than PODS_SEEN_MAX are, or in place of the worst-ranked kept pod
 * that ranks below it. */
void pods_seen_offer(struct pods_seen *s, const struct workspace_pod *p);

/* How many offered pods were left out (0: the set holds them all). */
size_t pods_seen_left_out(const struct pods_seen *s);

#endif
