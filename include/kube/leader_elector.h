/*
 * leader_elector: runs leader election on a coordination.k8s.io/v1 Lease on
 * the libuv loop, so that of several replicas exactly one does the
 * controller's work.
 *
 * Each attempt reads the Lease (GET), asks lease_decide() (kube/lease.h)
 * what to do, and creates it (POST) or replaces it (PUT carrying the
 * metadata.resourceVersion that was read, so a 409 Conflict means someone
 * else wrote first: read again at once). The leader renews with a PUT every
 * retry period without reading first; a timer stops its leadership when no
 * renewal succeeded within the renew deadline, even while a request hangs.
 *
 * Callbacks run on the loop:
 * - on_started_leading: this process now holds the Lease.
 * - on_stopped_leading: it no longer does (lost, or released). Stop doing
 *   leader work before returning: another replica may start soon after.
 *   After a loss the elector goes on as a candidate; a program that prefers
 *   to exit (as controller-runtime does) exits here.
 * - on_new_leader: the Lease names a different non-empty holder than the last
 *   one reported (including this process itself).
 *
 * Ownership: the config's strings are copied. The client is borrowed and must
 * outlive the elector. leader_elector_close() frees the elector once the loop
 * has closed its timers; no callback follows it.
 */
#ifndef HIBERNATOR_KUBE_LEADER_ELECTOR_H
#define HIBERNATOR_KUBE_LEADER_ELECTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "kube/client.h"

struct leader_elector_config {
    const char *lease_namespace; /* required */
    const char *lease_name;      /* required */
    const char *identity;        /* required, unique per replica (e.g. pod name) */
    uint64_t lease_duration_ms;  /* 0: 15 s */
    uint64_t renew_deadline_ms;  /* 0: 10 s; must be below the lease duration */
    uint64_t retry_period_ms;    /* 0: 2 s; must be below the renew deadline */

    void (*on_started_leading)(void *data);
    void (*on_stopped_leading)(void *data);
    void (*on_new_leader)(void *data, const char *identity); /* identity valid during the call */
    void *data;
};

/* Called once when a release has finished: status 0 when the Lease was
 * released or there was nothing to release, else a negative errno (the
 * Lease then expires on its own after its duration). */
typedef void (*leader_elector_done_cb)(void *data, int status);

struct leader_elector;

/* Returns 0, -EINVAL for a missing name, namespace or identity or periods out
 * of order, or -ENOMEM. Nothing is sent before leader_elector_start(). */
int leader_elector_new(uv_loop_t *loop, struct kube_client *client,
                       const struct leader_elector_config *cfg,
                       struct leader_elector **ret_elector);

/* Makes the first attempt on the next loop turn. Returns 0, or -EALREADY when
 * started before or released. */
int leader_elector_start(struct leader_elector *e);

/* True between on_started_leading and on_stopped_leading. */
bool leader_elector_is_leader(const struct leader_elector *e);

/* The holder the Lease last named ("" when free or not read yet); valid until
 * control returns to the loop. */
const char *leader_elector_leader(const struct leader_elector *e);

/* Whether the API server answered a read or write of the Lease (found,
 * not found, written, or a conflict) within the last ms milliseconds: a
 * standby that cannot read the Lease could not take over. */
bool leader_elector_answered_within(const struct leader_elector *e, uint64_t ms);

/* For SIGTERM: stops attempting; if this process leads, calls
 * on_stopped_leading, then writes the Lease with an empty holderIdentity and
 * leaseDurationSeconds 1 so a standby takes over at its next attempt. A
 * request in flight is let finish first. done is called once, from the loop,
 * within about the renew deadline. Calling it again, or before start, only
 * reports done. */
void leader_elector_release(struct leader_elector *e, leader_elector_done_cb done, void *data);

/* Cancels what is in flight and frees the elector once its timers have
 * closed. Does not release the Lease and calls no callback. Accepts NULL. */
void leader_elector_close(struct leader_elector *e);

#endif
