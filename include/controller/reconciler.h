/*
 * reconciler: the shell around decide(). It keeps the caches (Workspaces,
 * WorkspaceClasses, the controller's own pods and claims, and once a class
 * has an accelerator the Nodes' product labels), turns their
 * changes into work-queue keys, and for each key reads the caches, calls
 * workspace_decide(), carries out the actions in order and writes the
 * status when it changed. It never does anything decide() did not ask for.
 *
 * Every action is safe to repeat: creates treat AlreadyExists as done,
 * deletes treat NotFound as done and carry the pod's uid as a precondition,
 * status and finalizer writes carry the resourceVersion they were computed
 * from (a 409 re-queues the key, and the informer brings the newer object).
 * A pass for a key decides only once the Workspace cache shows the
 * controller's last write of it, or 10 s after that write
 * (controller/expectations.h), so a decision never undoes its predecessor's.
 *
 * Ownership: the reconciler borrows the loop and the client (both must
 * outlive it) and owns its informers and queue. reconciler_close() stops
 * everything and frees it once the loop has closed its handles.
 */
#ifndef HIBERNATOR_CONTROLLER_RECONCILER_H
#define HIBERNATOR_CONTROLLER_RECONCILER_H

#include <stdint.h>
#include <uv.h>

#include "controller/metrics.h"
#include "kube/client.h"

/* A pass mostly waits for the API server (a second under load), and the
 * client sends the most urgent of the requests it holds first: enough
 * passes in flight to use the client's default burst (30) at once, so a
 * hundred pauses due together queue their deletes in the client rather
 * than wait for a worker. A pass gives its worker back once only its status
 * write is left. */
#define RECONCILER_DEFAULT_WORKERS 32

struct reconciler_options {
    const char *ns;       /* watch Workspaces in this namespace only; NULL: all */
    const char *identity; /* reportingInstance of Events */
    unsigned workers;     /* reconciles in flight at once; default RECONCILER_DEFAULT_WORKERS */
    /* Crash tests only: the process exits right after an action of this
     * type (action_type_name()) succeeds. NULL in production. */
    const char *failpoint;
    /* The wall clock in Unix ms; NULL: the real one. For tests. */
    int64_t (*now_ms)(void *data);
    void *now_data;
    unsigned probe_concurrency; /* activity probe requests in flight at once; default 64 */
    const char *zoneinfo_dir;   /* time zones of pause windows; NULL: the system's */
    /* Borrowed, outlives the reconciler; NULL: no metrics. */
    struct controller_metrics *metrics;
    /* Where Kueue's visibility API is asked (borrowed, outlives the
     * reconciler); NULL: the reconciler's client (the API server). */
    struct kube_client *visibility_client;
};

struct reconciler_stats {
    uint64_t reconciles;
    uint64_t errors;
    uint64_t status_writes;
    uint64_t actions;
    uint64_t auto_pauses;  /* idle workspaces paused */
    uint64_t auto_resumes; /* workspaces resumed ahead of their owners */
};

struct reconciler;

/* A reconciler on loop talking through client. o is read during the call
 * (strings copied), except metrics and now_data, which are borrowed. Nothing
 * is watched until reconciler_start(). Returns 0 and *ret (the caller's,
 * reconciler_close()), or -ENOMEM or libuv's negative errno for a timer. */
int reconciler_new(uv_loop_t *loop, struct kube_client *client, const struct reconciler_options *o,
                   struct reconciler **ret);

/* Starts the informers; reconciling begins once all of them have synced. */
int reconciler_start(struct reconciler *r);

/* 1 once the Workspace, WorkspaceClass, pod and claim caches have each
 * listed once (it stays 1 through relists), else 0. */
int reconciler_synced(const struct reconciler *r);
/* A copy of the counters since reconciler_new(). */
struct reconciler_stats reconciler_stats(const struct reconciler *r);

/* Brings the gauges up to date: the queue's, and the workspaces by class
 * and state when they changed (the manager calls it about every second;
 * it walks no cache). */
void reconciler_collect_metrics(struct reconciler *r);

/* No callback follows and r is invalid on return; run the loop afterwards
 * so its handles close. Accepts NULL. */
void reconciler_close(struct reconciler *r);

#endif
